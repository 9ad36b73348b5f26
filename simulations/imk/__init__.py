"""Drivers for paper B's method: sweeps' tables, figures and benchmarks."""
