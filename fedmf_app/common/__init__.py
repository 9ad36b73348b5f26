"""Math shared by the method families (no Flower import): seeded random streams, k-means and the
clustering scores, kNN graphs, and the masked secure sum."""
