"""Flower plumbing shared by the method families (no math): the base Strategy with its handshake,
the base NumPyClient with its private state (on disk too, with a state folder) and its node policy
(``node_policy``), secure aggregation (``secure_sum_flower``), the checks on every reply
(``replies``), the run's ``result.json`` and the server's checkpoint."""
