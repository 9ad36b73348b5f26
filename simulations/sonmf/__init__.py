"""Drivers for paper A's method: sweeps' tables, figures and benchmarks."""
