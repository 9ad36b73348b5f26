import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from support.flower import assert_all_stopped, descendants  # noqa: E402


@pytest.fixture(scope="session")
def superlink(tmp_path_factory):
    """One SuperLink on the simulation engine for every ``flwr run`` of the test session (started
    when a test first asks for it); afterwards none of its processes is left."""
    from fedmf_app.deployment.superlink import LocalSuperLink

    with LocalSuperLink(tmp_path_factory.mktemp("flwr-home")) as link:
        yield link
        procs = descendants(link.process)
    assert_all_stopped(procs)
