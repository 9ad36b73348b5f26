"""One run of any algorithm in this process: its real Strategy and NumPyClients, no Ray, no SuperLink.

The round loop is the ServerApp's own (:class:`~fedmf_app.federated.server.ViewServer`: Flower's
legacy ``Server`` with the handshake, ``fit_round`` and ``evaluate_round``); only the transport
differs. Each node's messages go to its NumPyClient through :class:`InProcessProxy`, which passes
them through the same record conversion as Flower's message layer (``FitIns`` and ``FitRes`` to a
``RecordDict`` and back, the client wrapped by ``NumPyClient.to_client``), so a reply that Flower
would refuse is refused here too, and a run here gives the numbers of the same run under ``flwr
run``. Clients run one after another (``max_workers = 1``, and one shared lock for the messages
a Strategy sends at once): a client's seeded torch RNG and its thread limits are process-wide, and
Flower runs every client in a process of its own.

Tests, studies and benchmarks drive runs through this module::

    from fedmf_app.in_process import run_in_process
    strategy = run_in_process({"algorithm": "fmvc-imk", "dataset": "hw", "num-clients": 6}, out_dir)
    strategy.recorder.data["final"]["acc"]
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from flwr.common import (
    Context,
    DisconnectRes,
    EvaluateRes,
    FitRes,
    GetPropertiesRes,
    RecordDict,
    parameters_to_ndarrays,
)
from flwr.compat.common.recorddict_compat import (
    evaluateins_to_recorddict,
    evaluateres_to_recorddict,
    fitins_to_recorddict,
    fitres_to_recorddict,
    getpropertiesins_to_recorddict,
    getpropertiesres_to_recorddict,
    recorddict_to_evaluateins,
    recorddict_to_evaluateres,
    recorddict_to_fitins,
    recorddict_to_fitres,
    recorddict_to_getpropertiesins,
    recorddict_to_getpropertiesres,
)
from flwr.server import SimpleClientManager
from flwr.server.client_proxy import ClientProxy

from fedmf_app.data import load_client_view, views_to_federate
from fedmf_app.federated.results import RunRecorder
from fedmf_app.federated.server import ViewServer
from fedmf_app.registry import client_class, data_needs, strategy_class, validate_run_config

__all__ = ["InProcessFederation", "InProcessProxy", "node_context", "run_in_process"]


def node_context(
    cfg: dict[str, Any],
    partition_id: int,
    num_partitions: int,
    node_config: dict[str, Any] | None = None,
    run_id: int = 1,
) -> Context:
    """A fresh SuperNode context: ``partition-id``, ``num-partitions`` and ``node_config``'s keys.

    Parameters
    ----------
    cfg : dict
        The run config.
    partition_id, num_partitions : int
    node_config : dict, optional
        Further node-config keys (``data-file``, ``signing-key``, ``state-dir``, ...).
    run_id : int
        The run's id (a new run of the same nodes has another).

    Returns
    -------
    flwr.common.Context
        Node id ``100 + partition_id``, empty state.
    """
    return Context(
        run_id=run_id,
        node_id=100 + partition_id,
        node_config={"partition-id": partition_id, "num-partitions": num_partitions, **(node_config or {})},
        state=RecordDict(),
        run_config=cfg,
    )


class InProcessProxy(ClientProxy):
    """Hands every message of the Strategy to a NumPyClient in this process, as Flower would.

    Parameters
    ----------
    cid : str
        The node's id as the server sees it.
    client : fedmf_app.federated.client.ViewClient

    Attributes
    ----------
    received : list of list of ndarray
        The arrays of every fit message, in order (one per round this client worked).
    upload_bytes : list of int
        Bytes of every fit reply's arrays, in order.
    turn : threading.RLock
        Held while the client handles a message; :class:`InProcessFederation` gives all its proxies
        one, so that its clients handle messages one at a time even where the Strategy sends them
        at once (fmvc-imk's set-up): a client limits the process's thread pools while it computes
        (:mod:`fedmf_app.common.threads`), and two at once would undo each other's limits.
    """

    def __init__(self, cid: str, client: Any) -> None:
        super().__init__(cid)
        self.client = client
        self.received: list[list[np.ndarray]] = []
        self.upload_bytes: list[int] = []
        self.turn = threading.RLock()

    def get_properties(self, ins, timeout, group_id) -> GetPropertiesRes:
        ins = recorddict_to_getpropertiesins(getpropertiesins_to_recorddict(ins))
        with self.turn:
            res = self.client.to_client().get_properties(ins)
        return recorddict_to_getpropertiesres(getpropertiesres_to_recorddict(res))

    def get_parameters(self, ins, timeout, group_id):
        raise NotImplementedError("the strategies initialise the parameters on the server")

    def fit(self, ins, timeout, group_id) -> FitRes:
        ins = recorddict_to_fitins(fitins_to_recorddict(ins, keep_input=True), keep_input=True)
        self.received.append(parameters_to_ndarrays(ins.parameters))
        with self.turn:
            res = self.client.to_client().fit(ins)
        res = recorddict_to_fitres(fitres_to_recorddict(res, keep_input=True), keep_input=True)
        self.upload_bytes.append(sum(len(t) for t in res.parameters.tensors))
        return res

    def evaluate(self, ins, timeout, group_id) -> EvaluateRes:
        ins = recorddict_to_evaluateins(evaluateins_to_recorddict(ins, keep_input=True), keep_input=True)
        with self.turn:
            res = self.client.to_client().evaluate(ins)
        return recorddict_to_evaluateres(evaluateres_to_recorddict(res))

    def reconnect(self, ins, timeout, group_id) -> DisconnectRes:
        return DisconnectRes(reason="")


class InProcessFederation:
    """A run's real Strategy, one real NumPyClient per partition and the ServerApp's round loop.

    Parameters
    ----------
    overrides : dict
        Run-config keys that differ from the defaults (validated as ``flwr run`` validates them;
        ``num-clients`` 0, the default, is the data set's view count:
        :func:`~fedmf_app.data.views_to_federate`).
    out_dir : str or Path
        Where the run folder (``result.json``, plots) is written.
    run_name : str
    node_config : callable, optional
        Partition -> node-config keys added to ``partition-id`` and ``num-partitions`` (e.g. a
        node's ``signing-key`` or ``data-file``).
    proxy_class : type or dict, optional
        :class:`InProcessProxy` or a subclass (one that records or alters messages) for every
        partition, or a dict partition -> such a class (the others get :class:`InProcessProxy`).
    strategy : Strategy, optional
        Drive this Strategy (e.g. one that resumes a run) instead of a new one.
    run_id : int
        The run's id on every node.

    Attributes
    ----------
    cfg : dict
        The validated run config.
    strategy : fedmf_app.federated.strategy.ViewFederationStrategy
    server : ViewServer
    proxies : list of InProcessProxy
        In partition order; registered with the client manager in reverse order, so that the
        Strategy must order its clients itself, as with real SuperNodes.
    """

    def __init__(
        self,
        overrides: dict[str, Any],
        out_dir: str | Path,
        run_name: str = "run",
        node_config: Callable[[int], dict[str, Any]] | None = None,
        proxy_class: type[InProcessProxy] | dict[int, type[InProcessProxy]] = InProcessProxy,
        strategy: Any = None,
        run_id: int = 1,
    ) -> None:
        cfg = validate_run_config(overrides)
        if cfg["num-clients"] == 0:
            cfg = validate_run_config({**overrides, "num-clients": views_to_federate(cfg)})
        self.cfg = cfg
        self.strategy = strategy or strategy_class(cfg["algorithm"])(
            cfg, RunRecorder(Path(out_dir), run_name, cfg)
        )
        self.strategy.recorder.run_id = run_id
        manager = SimpleClientManager()
        m = cfg["num-clients"]
        self.proxies: list[InProcessProxy] = []
        for p in range(m):
            context = node_context(cfg, p, m, node_config(p) if node_config else None, run_id)
            client = client_class(cfg["algorithm"])(
                context, cfg, p, m, load_client_view(cfg, p, context.node_config, needs=data_needs(cfg))
            )
            chosen = proxy_class.get(p, InProcessProxy) if isinstance(proxy_class, dict) else proxy_class
            self.proxies.append(chosen(f"node-{p}", client))
        turn = threading.RLock()
        for proxy in self.proxies:
            proxy.turn = turn
        for proxy in reversed(self.proxies):
            manager.register(proxy)
        self.server = ViewServer(client_manager=manager, strategy=self.strategy)
        self.server.set_max_workers(1)

    @property
    def clients(self) -> list[Any]:
        """The NumPyClients, in partition order."""
        return [proxy.client for proxy in self.proxies]

    @property
    def broadcast(self) -> list[np.ndarray]:
        """The server's latest broadcast (before round 1: the round-1 broadcast)."""
        return parameters_to_ndarrays(self.server.parameters)

    def start(self) -> list[np.ndarray]:
        """Handshake (and alignment, key agreement); returns the round-1 broadcast."""
        self.server.initialize(timeout=None)
        return self.broadcast

    def round(self, server_round: int) -> list[np.ndarray]:
        """Run Flower's round ``server_round`` (fit, then evaluate); returns the next broadcast."""
        self.server.run_round(server_round, timeout=None)
        return self.broadcast

    def run(self) -> Any:
        """Run the rounds left to the end (or to the convergence stop); returns the Strategy."""
        self.server.fit(self.strategy.num_rounds - self.strategy.round_offset, timeout=None)
        return self.strategy

    def broadcasts(self) -> list[list[np.ndarray]]:
        """Every broadcast of the run so far: round 1's, then the one after each finished round."""
        return [*self.proxies[0].received, self.broadcast]


def run_in_process(
    overrides: dict[str, Any],
    out_dir: str | Path,
    run_name: str = "run",
    node_config: Callable[[int], dict[str, Any]] | None = None,
    proxy_class: type[InProcessProxy] | dict[int, type[InProcessProxy]] = InProcessProxy,
) -> Any:
    """Run one job to the end and return its Strategy (``.recorder.data`` is the ``result.json``).

    Parameters
    ----------
    overrides, out_dir, run_name, node_config, proxy_class
        As :class:`InProcessFederation`.

    Returns
    -------
    fedmf_app.federated.strategy.ViewFederationStrategy
        After the run: its ``recorder.data`` holds ``config``, ``rounds``, ``final``,
        ``summary`` and ``status``, its attributes the final state (e.g. ``v``), and its
        ``clients`` the :class:`InProcessProxy` of every partition, in partition order.
    """
    return InProcessFederation(overrides, out_dir, run_name, node_config, proxy_class).run()
