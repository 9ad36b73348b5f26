"""fedmf_app: federated matrix factorisation and multi-view clustering on Flower.

What is where:

* ``server_app.py``, ``client_app.py``: the Flower apps; they validate the run config, pick the
  algorithm's Strategy or NumPyClient from ``registry.py`` and load this node's view;
* ``methods/``: one folder per method family (``sonmf``: paper A; ``imk``: paper B; ``iai``:
  paper C), each with its math, options, Flower adapters and in-process reference;
* ``options/``: the run-config schema (constraints, families, shared keys, validation);
* ``federated/``: the Flower plumbing every family shares (base Strategy, handshake, base client,
  secure aggregation's key agreement and masked messages, ``result.json``, the checkpoint);
* ``common/``: the math every family shares (seeds, k-means and scores, kNN graphs, secure sum,
  secure aggregation's fixed point and masks, signed keys, the centralised reference points);
* ``resume.py``: ``python -m fedmf_app.resume``, continuing an interrupted run;
* ``data/``: loading and preparing views, the synthetic generator, missing-view masks;
* ``deployment/``: a SuperLink and SuperNodes on this machine, certificates and keys.
"""

__version__ = "0.1.0"
