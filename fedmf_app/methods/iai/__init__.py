"""Paper C: FMVC-IAI, autoencoders, feature-propagation imputation of missing views, a GAT graph
autoencoder and anchor graphs fused on the server. See README.md in this folder."""
