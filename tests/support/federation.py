"""In-process runs for the tests, on the product's federation (:mod:`fedmf_app.in_process`,
the ServerApp's own round loop), and stand-ins for Flower's proxies that answer fixed properties or
carry constructed replies, to test a Strategy on its own."""

import dataclasses

import scipy.sparse as sp
from flwr.common import (
    Code,
    FitRes,
    GetPropertiesRes,
    Status,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server import SimpleClientManager
from flwr.server.client_proxy import ClientProxy

import fedmf_app.in_process as in_process
from fedmf_app.deployment.certificates import make_supernode_keys, pin_lines
from fedmf_app.federated.results import RunRecorder
from fedmf_app.in_process import InProcessFederation, node_context
from fedmf_app.registry import strategy_class, validate_run_config

from support.data import IMK_BASE

__all__ = [
    "FakeProxy",
    "federation",
    "fit_res",
    "handshake_federation",
    "node_context",
    "round_config",
    "run_client_round",
    "run_federation",
    "run_imk",
    "signed_node_configs",
    "views_as_csr",
]


#: What a real client tells in the handshake besides its partition and shape.
HANDSHAKE_DEFAULTS = {"source": "test", "num-classes": 0, "sample-ids": 0, "sparse-counts": 0}


class FakeProxy(ClientProxy):
    """Answers get_properties with fixed properties (the handshake's declared ones, those given
    first); nothing else (the test drives the rounds)."""

    def __init__(self, cid, properties, fail_handshake=None):
        super().__init__(cid)
        self.properties = {**HANDSHAKE_DEFAULTS, **properties}
        self.fail_handshake = fail_handshake

    def get_properties(self, ins, timeout, group_id):
        if self.fail_handshake:
            raise ValueError(self.fail_handshake)
        return GetPropertiesRes(status=Status(Code.OK, ""), properties=self.properties)

    def get_parameters(self, ins, timeout, group_id):
        raise NotImplementedError

    def fit(self, ins, timeout, group_id):
        raise NotImplementedError

    def evaluate(self, ins, timeout, group_id):
        raise NotImplementedError

    def reconnect(self, ins, timeout, group_id):
        raise NotImplementedError


def signed_node_configs(folder, m):
    """Node configs with signed keys: each node's own long-term key, every node's public key and the
    pinned fingerprints (``peer-fingerprints``), written under ``folder``; partition -> node config."""
    pairs = make_supernode_keys(folder, m)
    pins = folder / "pins.txt"
    pins.write_text(pin_lines(pairs))
    return {
        p: {"signing-key": str(pairs[p][0]), "peer-keys": str(folder), "peer-fingerprints": str(pins)}
        for p in range(m)
    }


def fit_res(arrays, metrics):
    """A successful fit reply carrying ``arrays`` and ``metrics``."""
    return FitRes(
        status=Status(Code.OK, ""),
        parameters=ndarrays_to_parameters(arrays),
        num_examples=1,
        metrics=metrics,
    )


def round_config(server_round, **facts):
    """A training round's request config, stating the run's ``facts`` (e.g. ``rank=6, clusters=0``)."""
    return {"stage": "round", "server-round": server_round, **{f"fact-{k}": v for k, v in facts.items()}}


def run_client_round(client, parameters, server_round, **facts):
    """What Flower does with a NumPyClient for one fit message; the reply."""
    config = round_config(server_round, **facts)
    arrays, _, metrics = client.fit(parameters_to_ndarrays(parameters), config)
    return fit_res(arrays, metrics)


def federation(tmp_path, cfg, run_name="run", node_configs=None, **kwargs):
    """The run's :class:`~fedmf_app.in_process.InProcessFederation`, not started.

    ``node_configs[p]`` adds keys to partition p's node config."""
    extra = node_configs or {}
    return InProcessFederation(cfg, tmp_path, run_name, node_config=lambda p: extra.get(p, {}), **kwargs)


def run_federation(tmp_path, cfg, run_name="run", node_configs=None, **kwargs):
    """A whole run in process; returns the Strategy and the broadcasts (round 1's, then one per round)."""
    fed = federation(tmp_path, cfg, run_name, node_configs, **kwargs)
    fed.run()
    return fed.strategy, fed.broadcasts()


def run_imk(tmp_path, **overrides):
    """A whole FMVC-IMK run of :data:`~support.data.IMK_BASE` with ``overrides``; returns the run
    config, the Strategy and the clients (partition order)."""
    fed = federation(tmp_path, validate_run_config({**IMK_BASE, **overrides}))
    fed.run()
    return fed.cfg, fed.strategy, fed.clients


def handshake_federation(tmp_path, cfg, properties):
    """The algorithm's real Strategy and one :class:`FakeProxy` per entry of ``properties`` (node
    ids not in partition order); returns the Strategy and its client manager."""
    strategy = strategy_class(cfg["algorithm"])(cfg, RunRecorder(tmp_path, "run", cfg))
    manager = SimpleClientManager()
    for p, props in enumerate(properties):
        manager.register(FakeProxy(f"node-{10 - p}", props))
    return strategy, manager


def views_as_csr(monkeypatch):
    """Make every in-process client's view a CSR matrix (same values), through ``monkeypatch``."""
    original = in_process.load_client_view

    def as_csr(cfg, p, node_config=None, **kwargs):
        view = original(cfg, p, node_config, **kwargs)
        return dataclasses.replace(view, features=sp.csr_matrix(view.features))

    monkeypatch.setattr(in_process, "load_client_view", as_csr)
