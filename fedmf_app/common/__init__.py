"""Math shared by the method families (no Flower import): seeded random streams, k-means and the
clustering scores, kNN graphs, the maths of the one secure sum (fixed point and pairwise masks,
``secure_sum_math``) and signed key-agreement keys (``key_signing``)."""
