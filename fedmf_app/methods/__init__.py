"""The method families, one folder each: ``sonmf`` (paper A: federated sparse orthogonal NMF with
its adapted baselines and ablations), ``imk`` (paper B: FMVC-IMK) and ``iai`` (paper C: FMVC-IAI).

Each folder holds its math (no Flower import), its Strategy (``strategy.py``) and NumPyClient
(``client.py``), its run-config options (``options.py``), its in-process reference federation
(``reference.py``) and a README saying what is where.
"""
