"""Drivers for paper C's method: sweeps' tables, figures and benchmarks."""
