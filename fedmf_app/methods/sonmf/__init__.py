"""Paper A: federated sparse orthogonal NMF with variable splitting and drift correction, its adapted
baselines (FedMAvg, FedMGS, FedVRA-U) and its ablations. See README.md in this folder."""
