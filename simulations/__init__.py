"""Drivers: sweeps, benchmarks and figures built on the Flower app (not shipped logic)."""
