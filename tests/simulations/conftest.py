"""Importing the hydra entry point registers the app's run-config defaults (node `app_run_config`)."""

import simulations.run  # noqa: F401
