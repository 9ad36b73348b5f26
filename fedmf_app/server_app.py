"""ServerApp: read the run config, pick the algorithm's Strategy, run the rounds.

The same code serves ``flwr run`` on the simulation engine and a deployed SuperLink.
"""

from __future__ import annotations

from logging import ERROR, INFO

from flwr.common import Context
from flwr.common.logger import log
from flwr.server import Server, ServerApp, ServerAppComponents, ServerConfig, SimpleClientManager

from fedmf_app.federated.results import RunRecorder, default_run_name
from fedmf_app.options.run_config import validate_run_config
from fedmf_app.registry import strategy_class

__all__ = ["app", "server_fn"]


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
    run_name = cfg["run-name"] or default_run_name(cfg["algorithm"], cfg["seed"])
    recorder = RunRecorder(cfg["out-dir"], run_name, cfg)
    strategy = strategy_class(cfg["algorithm"])(cfg, recorder)
    server = Server(client_manager=SimpleClientManager(), strategy=strategy)
    server.set_max_workers(max(8, cfg["num-clients"]))
    log(
        INFO,
        "fedmf_app: %s, %d rounds, %d clients; results go to %s",
        cfg["algorithm"],
        cfg["num-server-rounds"],
        cfg["num-clients"],
        recorder.run_dir,
    )
    return ServerAppComponents(
        server=server,
        config=ServerConfig(num_rounds=cfg["num-server-rounds"], round_timeout=cfg["round-timeout-s"]),
    )


app = ServerApp(server_fn=server_fn)
