"""ServerApp: read the run config, pick the algorithm's Strategy, run the rounds.

The same code serves ``flwr run`` on the simulation engine and a deployed SuperLink. Its main
function runs Flower's legacy ``Server`` loop (``start_grid``) with the Strategy of
:func:`server_fn`, on a :class:`~fedmf_app.federated.prompt_grid.PromptGrid` that collects the
clients' replies within 0.1-0.25 s of their arrival instead of Flower's fixed 3 s. When the SuperLink
stops answering (no call returns within run config ``connect-timeout-s`` seconds, at least
:data:`MIN_LOST_AFTER_S`), the ServerApp marks
``result.json`` ``interrupted`` (the checkpoint of the last finished round resumes it) and exits
with :data:`EXIT_SUPERLINK_LOST`: Flower's own clean-up would wait for the SuperLink forever.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from logging import ERROR, INFO
from pathlib import Path
from typing import Any

from flwr.common import Context
from flwr.common.logger import log
from flwr.server import Grid, ServerApp, ServerAppComponents, ServerConfig, SimpleClientManager
from flwr.server.compat import start_grid

from fedmf_app.federated.checkpoint import load_checkpoint
from fedmf_app.federated.error_lines import route_tracebacks
from fedmf_app.federated.node_count import count_supernodes
from fedmf_app.federated.prompt_grid import PromptGrid, SuperLinkLost
from fedmf_app.federated.results import RunRecorder, default_run_name, load_result
from fedmf_app.federated.saved_state import NOT_IDENTIFYING
from fedmf_app.federated.server import ViewServer
from fedmf_app.options import ConfigError
from fedmf_app.registry import strategy_class, validate_run_config

__all__ = ["EXIT_SUPERLINK_LOST", "TRACEBACKS", "app", "main", "mark_interrupted", "server_fn"]

#: The file in ``out-dir`` that receives the tracebacks of the run's log (which shows one line each).
TRACEBACKS = "tracebacks.log"

#: Exit code of a ServerApp that lost its SuperLink.
EXIT_SUPERLINK_LOST = 3

#: Seconds a call to the SuperLink may take at least before the SuperLink counts as lost.
MIN_LOST_AFTER_S = 10.0


def server_fn(context: Context) -> ServerAppComponents:
    """Build the server for one run.

    Parameters
    ----------
    context : Context
        ``context.run_config`` holds the run config.

    Returns
    -------
    ServerAppComponents

    Raises
    ------
    fedmf_app.options.ConfigError
        On an invalid run config, before any client is contacted.
    """
    try:
        cfg = validate_run_config(context.run_config)
    except ValueError as exc:
        log(ERROR, "invalid run config: %s", exc)
        raise
    if cfg["resume-from"]:
        strategy = _resumed_strategy(cfg)
        recorder = strategy.recorder
    else:
        run_name = cfg["run-name"] or default_run_name(cfg["algorithm"], cfg["seed"])
        recorder = RunRecorder(cfg["out-dir"], run_name, cfg)
        strategy = strategy_class(cfg["algorithm"])(cfg, recorder)
    recorder.run_id = int(context.run_id)
    server = ViewServer(client_manager=SimpleClientManager(), strategy=strategy)
    server.set_max_workers(max(8, cfg["num-clients"]))
    log(
        INFO,
        "fedmf_app: %s, %d rounds, %d clients; results go to %s",
        cfg["algorithm"],
        cfg["num-server-rounds"],
        cfg["num-clients"],
        recorder.run_dir,
    )
    server.rounds_config = ServerConfig(
        num_rounds=strategy.num_rounds - strategy.round_offset, round_timeout=cfg["round-timeout-s"]
    )
    return ServerAppComponents(server=server, config=server.rounds_config)


def _resumed_strategy(cfg: dict[str, Any]) -> Any:
    """The strategy of the run in ``resume-from``, set to continue after its last round.

    Raises
    ------
    fedmf_app.options.ConfigError
        When the run folder is not inside ``out-dir``, has no checkpoint or one this app did not
        write (a tampered file is refused before anything in it is used) or that holds other state
        than this code's strategy keeps (another version wrote it), its run config differs (other
        than the keys a resume may change), or it already finished.
    """
    run_dir = Path(cfg["resume-from"]).expanduser().resolve()
    out_dir = Path(cfg["out-dir"]).expanduser().resolve()
    if run_dir.parent != out_dir:
        raise ConfigError(
            f"run config 'resume-from' = {cfg['resume-from']!r} is not a run folder of run config "
            f"'out-dir' = {cfg['out-dir']!r}: a run resumes only from a folder directly inside its "
            "own out-dir"
        )
    strategy_type = strategy_class(cfg["algorithm"])
    try:
        checkpoint = load_checkpoint(run_dir, strategy_type.checkpoint_types, strategy_type.checkpointed())
        result = load_result(run_dir)
        previous = result["config"]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"run config 'resume-from' = {str(run_dir)!r}: {exc}") from exc
    differing = sorted(k for k in cfg if k not in NOT_IDENTIFYING and cfg[k] != previous.get(k))
    if differing:
        detail = ", ".join(f"{k} = {cfg[k]!r} (the run had {previous.get(k)!r})" for k in differing)
        raise ConfigError(f"run config 'resume-from': the run config differs from the run's: {detail}")
    if result.get("status") == "completed" and int(checkpoint["round"]) < cfg["num-server-rounds"]:
        raise ConfigError(
            f"run config 'resume-from': {run_dir} completed after round {checkpoint['round']} "
            "(its convergence stop); nothing to resume"
        )
    recorder = RunRecorder.resume(run_dir, int(checkpoint["round"]))
    strategy = strategy_type(cfg, recorder)
    strategy.resume_from(checkpoint)
    if strategy.round_offset >= strategy.num_rounds:
        raise ConfigError(
            f"run config 'resume-from': {run_dir} finished all {strategy.num_rounds} rounds; "
            "nothing to resume"
        )
    log(INFO, "resuming %s after round %d of %d", run_dir, strategy.round_offset, strategy.num_rounds)
    return strategy


app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    """Run the job: the components of :func:`server_fn` on a prompt Grid (run config
    ``num-clients = 0`` first resolved: :func:`~fedmf_app.federated.node_count.count_supernodes`).
    Log records that hold a traceback go whole to ``<out-dir>/tracebacks.log`` and show as one line
    (:func:`~fedmf_app.federated.error_lines.route_tracebacks`).

    Parameters
    ----------
    grid : flwr.server.Grid
        Given by Flower (simulation engine or SuperLink).
    context : Context
    """
    route_tracebacks(Path(str(context.run_config.get("out-dir", "results"))).expanduser() / TRACEBACKS)
    try:
        cfg = validate_run_config(context.run_config)
        if cfg["num-clients"] == 0:
            run_config = {**context.run_config, "num-clients": count_supernodes(grid, cfg)}
            context = dataclasses.replace(context, run_config=run_config)
    except Exception as exc:
        log(ERROR, "run stopped before round 1: %s", exc)
        raise
    components = server_fn(context)
    lost_after = max(float(cfg["connect-timeout-s"]), MIN_LOST_AFTER_S)
    prompt = PromptGrid(grid, lost_after=lost_after)
    try:
        start_grid(grid=prompt, server=components.server, config=components.config)
    except SuperLinkLost as exc:
        mark_interrupted(components.server.strategy, exc)
        logging.shutdown()
        os._exit(EXIT_SUPERLINK_LOST)


def mark_interrupted(strategy: Any, exc: SuperLinkLost) -> None:
    """Mark the run interrupted in ``result.json`` and say how to continue it (a run that already
    completed or failed keeps its status).

    Parameters
    ----------
    strategy : fedmf_app.federated.strategy.ViewFederationStrategy
    exc : SuperLinkLost
    """
    if strategy.recorder.data["status"] not in ("pending", "running"):
        log(ERROR, "%s (after the run %s)", exc, strategy.recorder.data["status"])
        return
    rounds = strategy.recorder.data["rounds"]
    last = rounds[-1]["round"] if rounds else 0
    message = (
        f"interrupted after round {last}: {exc}; continue it with python -m fedmf_app.resume "
        f"{strategy.recorder.run_dir}"
    )
    strategy.recorder.interrupt(message)
    log(ERROR, "%s", message)
