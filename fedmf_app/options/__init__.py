"""Run-config options: constraint objects, the option and family schema, and the shared keys.

Each method family declares its own keys as the fields of its parameters, a frozen dataclass
(:func:`~fedmf_app.options.schema.option`), named by its ``fedmf_app/methods/<family>/options.py``;
:class:`fedmf_app.options.run_config.RunConfig` joins the keys of the families it is given and
validates a run config (the app's, over its three families, is
:data:`fedmf_app.registry.RUN_CONFIG`). This package imports no family, so a family's options can
import it.
"""

from fedmf_app.options.schema import ConfigError, Family, Option, from_run_config, group, option

__all__ = ["ConfigError", "Family", "Option", "from_run_config", "group", "option"]
