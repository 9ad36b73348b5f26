"""Run-config options: constraint objects, the option and family schema, and the shared keys.

Each method family declares its own keys in ``fedmf_app/methods/<family>/options.py`` with these
objects; :mod:`fedmf_app.options.run_config` joins them into the app's run config and validates
it. This package imports no family, so a family's options can import it.
"""

from fedmf_app.options.schema import ConfigError, Family, Option

__all__ = ["ConfigError", "Family", "Option"]
