"""Math shared by the method families (no Flower import): seeded random streams, k-means and the
clustering scores, kNN graphs, the masked secure sum, secure aggregation's fixed point and
masks (``secure_agg``) and signed key-agreement keys (``key_signing``)."""
