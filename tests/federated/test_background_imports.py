"""The modules a run needs once its clients have answered load on a thread during the handshake:
the ServerApp's own imports leave them out, every strategy names them, and the thread loads them."""

import importlib.util
import json
import subprocess
import sys

import pytest

from fedmf_app.registry import ALGORITHM_NAMES, strategy_class

HEAVY = ["matplotlib", "sklearn", "scipy.optimize"]


def test_the_server_app_and_every_strategy_import_without_scikit_learn_or_matplotlib():
    # about 2 s of CPU that would delay a deployed ServerApp's first message
    probe = (
        "import json, sys; import fedmf_app.server_app; from fedmf_app.registry import ALGORITHM_NAMES, "
        "strategy_class; [strategy_class(a) for a in ALGORITHM_NAMES]; "
        f"print(json.dumps(sorted(set(sys.modules) & set({HEAVY!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
def test_every_strategy_names_modules_that_exist_with_its_figures_and_the_scores(algorithm):
    strategy = strategy_class(algorithm)
    family = strategy.__module__.rsplit(".", 1)[0]
    assert {"sklearn.metrics", "scipy.optimize", f"{family}.plots"} <= set(strategy.later_imports)
    assert all(importlib.util.find_spec(name) is not None for name in strategy.later_imports)


def test_the_thread_imports_the_modules_and_leaves_a_missing_one_to_its_user():
    probe = (
        "import sys; from fedmf_app.federated.background_imports import import_in_background; "
        "t = import_in_background(['colorsys', 'no_such_module_here', 'wave']); t.join(); "
        "print(t.daemon, 'colorsys' in sys.modules, 'wave' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"]
