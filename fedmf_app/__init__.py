"""fedmf_app: federated matrix factorisation and multi-view clustering on Flower."""

__version__ = "0.1.0"
