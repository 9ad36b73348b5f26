"""FMVC-IAI test helpers: a small, fast run config."""

SMALL = {
    "algorithm": "fmvc-iai",
    "num-clients": 3,
    "num-samples": 120,
    "view-dim": 12,
    "num-clusters": 3,
    "missing-rate": 0.5,
    "iai.knn": 5,
    "iai.anchors": 30,
    "iai.anchor-neighbours": 4,
    "iai.ae-hidden": "16",
    "iai.embed-dim": 8,
    "iai.ae-epochs": 3,
    "iai.gat-hidden": 8,
    "iai.gat-heads": 2,
    "iai.embedding-dim": 8,
    "iai.decoder-hidden": 16,
    "iai.epochs": 3,
    "num-server-rounds": 4,
    "seed": 2,
}
