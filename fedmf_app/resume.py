"""``python -m fedmf_app.resume RUN_FOLDER``: continue an interrupted run from its last finished round.

A run whose ServerApp or SuperLink died keeps, in its run folder, ``result.json`` (the rounds it
finished, and its run id) and ``checkpoint.npz`` (the server's state after the last of them); its
clients keep their state in their state folder (node config ``state-dir``), which must be set in
the original run. The saved state belongs to the run that wrote it: a node lets a new run continue
it only when its own node config names that run (``resume-run-id``), and only from the round after
the last one it answered (:mod:`fedmf_app.federated.saved_state`). This command runs the app again
with the run's own run config plus ``resume-from = RUN_FOLDER`` and gives the nodes
``resume-run-id`` = the run id in ``result.json``: the ServerApp restores its state, the clients
read theirs, and the run continues with round ``s + 1``, ending with the numbers an uninterrupted
run of the same seed gives (the tests check it).

* default: on Flower's simulation engine (a private SuperLink, ``num-clients`` simulated
  SuperNodes), whose nodes get ``--state-dir`` (the folder the original run's simulated nodes had,
  through :data:`~fedmf_app.client_app.NODE_CONFIG_ENV`);
* ``--deployment --workdir W``: on the local loopback federation of
  :mod:`fedmf_app.deployment.federation`, restarted on the same working folder ``W`` (so every
  SuperNode finds its state) with the same data file per SuperNode (``--data-file`` of the original
  command, kept in ``W``);
* on your own federation: restart each SuperNode with its ``state-dir`` and
  ``resume-run-id=<run id>``, then ``flwr run . <federation> --run-config "<the run's config>
  resume-from='RUN_FOLDER'"``.

The exit code is 0 only if the run then completed (``flwr run`` alone exits 0 either way).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from logging import ERROR, INFO
from pathlib import Path
from typing import Any

from flwr.common.logger import log

from fedmf_app.federated.checkpoint import load_checkpoint
from fedmf_app.federated.results import load_result, run_status
from fedmf_app.registry import strategy_class

__all__ = ["main", "resume_run_config"]


def resume_run_config(run_dir: str | Path) -> dict[str, Any]:
    """The run config that continues the run in ``run_dir``.

    Parameters
    ----------
    run_dir : str or Path

    Returns
    -------
    dict
        The run's own run config with ``resume-from`` set to the folder and ``out-dir`` to the
        folder holding it (a run resumes only from a folder of its own out-dir).

    Raises
    ------
    FileNotFoundError, ValueError
        When the folder has no ``result.json``, or no checkpoint that this code's strategy can
        resume.
    """
    folder = Path(run_dir).expanduser().resolve()
    config = dict(load_result(folder)["config"])
    strategy = strategy_class(config["algorithm"])
    # fails early, naming the file, when there is none, or not ours, or another version's
    load_checkpoint(folder, strategy.checkpoint_types, strategy.checkpointed())
    config["resume-from"] = str(folder)
    config["out-dir"] = str(folder.parent)
    return config


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code (0: the run completed)."""
    parser = argparse.ArgumentParser(prog="python -m fedmf_app.resume", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="the interrupted run's folder (holds result.json, checkpoint.npz)")
    parser.add_argument("--app-dir", default=".", help="the app folder (default: .)")
    parser.add_argument("--deployment", action="store_true", help="on the local loopback federation")
    parser.add_argument(
        "--workdir", default=None, help="with --deployment: the original federation's --workdir"
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        help="simulation: the state folder the original run's simulated nodes had",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before the run is stopped")
    args = parser.parse_args(argv)
    try:
        run_config = resume_run_config(args.run_dir)
    except (OSError, ValueError, KeyError) as exc:
        log(ERROR, "cannot resume %s: %s", args.run_dir, exc)
        return 2
    result = load_result(args.run_dir)
    if result["status"] == "completed":
        log(INFO, "%s already completed; nothing to resume", args.run_dir)
        return 0
    run_id = result.get("run_id")
    m = int(run_config["num-clients"])
    if args.deployment:
        from fedmf_app.deployment.federation import LocalFederation

        if args.workdir is None:
            log(
                ERROR,
                "--deployment needs --workdir: the original federation's folder (the SuperNodes' state)",
            )
            return 2
        from fedmf_app.deployment.federation import saved_data_files

        files = saved_data_files(args.workdir)
        with LocalFederation(
            args.workdir, m, args.app_dir, data_files=files, resume_run_id=run_id
        ) as federation:
            outcome = federation.run(run_config, timeout=args.timeout, echo=sys.stdout)
        log(INFO, "logs: %s", args.workdir)
        if outcome.error:
            log(ERROR, "%s", outcome.error)
    else:
        from fedmf_app.client_app import NODE_CONFIG_ENV
        from fedmf_app.deployment.superlink import LocalSuperLink, format_config

        nodes: dict[str, Any] = {} if run_id is None else {"resume-run-id": str(run_id)}
        if args.state_dir:
            nodes["state-dir"] = str(Path(args.state_dir).expanduser().resolve())
        env = {NODE_CONFIG_ENV: format_config(nodes)}
        with (
            tempfile.TemporaryDirectory(prefix="fedmf-resume-") as home,
            LocalSuperLink(home, extra_env=env) as link,
        ):
            link.run(args.app_dir, run_config, num_supernodes=m, timeout=args.timeout, echo=sys.stdout)
    code, line = run_status(args.run_dir)
    log(INFO if code == 0 else ERROR, "%s", line)
    return code


if __name__ == "__main__":
    sys.exit(main())
