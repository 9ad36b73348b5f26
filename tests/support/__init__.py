"""Test helpers (not tests): small data (:mod:`support.data`), in-process runs and stand-ins for
Flower's proxies (:mod:`support.federation`), and the harness for runs through Flower
(:mod:`support.flower`)."""
