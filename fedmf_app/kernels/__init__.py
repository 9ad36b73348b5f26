"""Math kernels: pure numpy, no Flower import. Arrays in, arrays out."""
