"""One run of any algorithm in this process: its real Strategy and NumPyClients, no Ray, no SuperLink.

The grids of the quality study run thousands of short jobs; Flower's simulation engine adds seconds
of start-up to each. This driver calls the same Strategy and NumPyClient methods, with the same
messages, in the order Flower's legacy server does (handshake, then per round ``configure_fit``,
every client's ``fit``, ``aggregate_fit``, then the federated evaluation), so a run here gives the
numbers of the same run under ``flwr run`` (the tests check this on every family). Usage::

    from simulations.in_process import run_in_process
    strategy = run_in_process({"algorithm": "fmvc-imk", "dataset": "hw", "num-clients": 6}, out_dir)
    strategy.recorder.data["final"]["acc"]
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flwr.common import (
    Code,
    Context,
    EvaluateRes,
    FitRes,
    GetPropertiesRes,
    RecordDict,
    Status,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server import SimpleClientManager
from flwr.server.client_proxy import ClientProxy

from fedmf_app.data import load_client_view
from fedmf_app.federated.results import RunRecorder
from fedmf_app.options.run_config import validate_run_config
from fedmf_app.registry import client_class, strategy_class

__all__ = ["InProcessProxy", "run_in_process"]


class InProcessProxy(ClientProxy):
    """Hands every message of the Strategy to a NumPyClient in this process, as Flower would."""

    def __init__(self, cid: str, client: Any) -> None:
        super().__init__(cid)
        self.client = client
        #: Bytes of every fit reply's arrays, in order (one per round this client worked).
        self.upload_bytes: list[int] = []

    def get_properties(self, ins, timeout, group_id):
        return GetPropertiesRes(status=Status(Code.OK, ""), properties=self.client.get_properties(ins.config))

    def get_parameters(self, ins, timeout, group_id):
        raise NotImplementedError("the strategies initialise the parameters on the server")

    def fit(self, ins, timeout, group_id):
        arrays, num_examples, metrics = self.client.fit(parameters_to_ndarrays(ins.parameters), ins.config)
        parameters = ndarrays_to_parameters(arrays)
        self.upload_bytes.append(sum(len(t) for t in parameters.tensors))
        return FitRes(
            status=Status(Code.OK, ""), parameters=parameters, num_examples=num_examples, metrics=metrics
        )

    def evaluate(self, ins, timeout, group_id):
        loss, num_examples, metrics = self.client.evaluate(parameters_to_ndarrays(ins.parameters), ins.config)
        return EvaluateRes(status=Status(Code.OK, ""), loss=loss, num_examples=num_examples, metrics=metrics)

    def reconnect(self, ins, timeout, group_id):
        raise NotImplementedError


def run_in_process(
    overrides: dict[str, Any],
    out_dir: str | Path,
    run_name: str = "run",
    node_config: Callable[[int], dict[str, Any]] | None = None,
) -> Any:
    """Run one job to the end and return its Strategy (``.recorder.data`` is the ``result.json``).

    Parameters
    ----------
    overrides : dict
        Run-config keys that differ from the defaults (validated as ``flwr run`` validates them).
    out_dir : str or Path
        Where the run folder (``result.json``, plots) is written.
    run_name : str
    node_config : callable, optional
        Partition -> node-config keys added to ``partition-id`` and ``num-partitions`` (e.g. a
        node's ``signing-key``).

    Returns
    -------
    fedmf_app.federated.strategy.ViewFederationStrategy
        After the run: its ``recorder.data`` holds ``config``, ``rounds``, ``final``,
        ``summary`` and ``status``, its attributes the final state (e.g. ``v``), and its
        ``clients`` the :class:`InProcessProxy` of every partition.
    """
    cfg = validate_run_config(overrides)
    strategy = strategy_class(cfg["algorithm"])(cfg, RunRecorder(Path(out_dir), run_name, cfg))
    manager = SimpleClientManager()
    m = cfg["num-clients"]
    for p in range(m):
        context = Context(
            run_id=1,
            node_id=100 + p,
            node_config={"partition-id": p, "num-partitions": m, **(node_config(p) if node_config else {})},
            state=RecordDict(),
            run_config=cfg,
        )
        client = client_class(cfg["algorithm"])(
            context, cfg, p, m, load_client_view(cfg, p, context.node_config)
        )
        manager.register(InProcessProxy(f"node-{p}", client))
    parameters = strategy.initialize_parameters(client_manager=manager)
    for s in range(1, cfg["num-server-rounds"] + 1):
        instructions = strategy.configure_fit(server_round=s, parameters=parameters, client_manager=manager)
        results = [(proxy, proxy.fit(ins, None, s)) for proxy, ins in instructions]
        parameters = strategy.aggregate_fit(server_round=s, results=results, failures=[])[0]
        evaluations = strategy.configure_evaluate(
            server_round=s, parameters=parameters, client_manager=manager
        )
        if evaluations:
            replies = [(proxy, proxy.evaluate(ins, None, s)) for proxy, ins in evaluations]
            strategy.aggregate_evaluate(server_round=s, results=replies, failures=[])
        if strategy.done:  # as fedmf_app.federated.server.ViewServer
            break
    return strategy
