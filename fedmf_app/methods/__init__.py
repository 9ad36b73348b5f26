"""The method families, one folder each: ``sonmf`` (paper A: federated sparse orthogonal NMF with
its adapted baselines and ablations), ``imk`` (paper B: FMVC-IMK) and ``iai`` (paper C: FMVC-IAI).

Every folder holds the same files (the contract, written down in ``docs/families.md`` and checked
by ``tests/methods/test_contract.py``): its run-config family and keys (``options.py``,
``params.py``), its protocol (``protocol.py``), its Strategy and NumPyClient per algorithm
(``strategy.py``: ``STRATEGIES``, ``client.py``: ``CLIENTS``), its plots, its in-process reference
federation (``reference.py``), a README saying what is where, and its maths (no Flower import).
:data:`FAMILY_NAMES` is the one list of them; :mod:`fedmf_app.registry` reads it.
"""

__all__ = ["FAMILY_NAMES"]

#: The families' folders, in the order of the key table; the first family's first algorithm is the
#: default ``algorithm``.
FAMILY_NAMES: tuple[str, ...] = ("sonmf", "imk", "iai")
