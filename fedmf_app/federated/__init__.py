"""Flower plumbing shared by the method families (no math): the base Strategy with its handshake,
the base NumPyClient with its private state, and the run's ``result.json``."""
