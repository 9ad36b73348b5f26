"""Paper B: FMVC-IMK, integrated matrix factorisation and k-means with a graph regulariser whose
Laplacians reach the server only as a masked sum. See README.md in this folder."""
