"""Stand-ins for Flower's client proxies: drive a Strategy without Ray or a SuperLink."""

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
from flwr.server.client_proxy import ClientProxy

from simulations.in_process import InProcessProxy


class FakeProxy(ClientProxy):
    """Answers get_properties with fixed properties; fit is driven by the test."""

    def __init__(self, cid, properties, fail_handshake=None):
        super().__init__(cid)
        self.properties = properties
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


def fit_res(arrays, metrics):
    return FitRes(
        status=Status(Code.OK, ""),
        parameters=ndarrays_to_parameters(arrays),
        num_examples=1,
        metrics=metrics,
    )


def client_context(cfg, partition_id, num_partitions, node_config=None):
    return Context(
        run_id=1,
        node_id=100 + partition_id,
        node_config={"partition-id": partition_id, "num-partitions": num_partitions, **(node_config or {})},
        state=RecordDict(),
        run_config=cfg,
    )


def run_client_round(client, parameters, server_round):
    """What Flower does with a NumPyClient for one fit message."""
    ins_params = parameters_to_ndarrays(parameters)
    arrays, num_examples, metrics = client.fit(ins_params, {"server-round": server_round})
    return fit_res(arrays, metrics)


def build_federation(tmp_path, cfg, properties=None, run_name="run", node_configs=None):
    """The algorithm's real Strategy and one real client per view, joined by FakeProxies.

    Node ids are not in partition order (the strategy must sort them). ``node_configs[p]`` adds
    keys to partition p's node config. Returns the strategy, the client manager and a dict
    node id -> client.
    """
    from flwr.server import SimpleClientManager

    from fedmf_app.data import load_client_view
    from fedmf_app.federated.results import RunRecorder
    from fedmf_app.registry import client_class, strategy_class

    strategy = strategy_class(cfg["algorithm"])(cfg, RunRecorder(tmp_path, run_name, cfg))
    manager = SimpleClientManager()
    clients = {}
    m = cfg["num-clients"]
    for p in range(m):
        extra = (node_configs or {}).get(p)
        context = client_context(cfg, p, m, extra)
        client = client_class(cfg["algorithm"])(
            context, cfg, p, m, load_client_view(cfg, p, context.node_config)
        )
        if properties is None and cfg.get("secure-aggregation"):  # the key stages need the client
            proxy = ClientProxyToNumPy(f"node-{10 - p}", client)
        else:
            props = client.get_properties({}) if properties is None else properties[p]
            proxy = FakeProxy(f"node-{10 - p}", props)
        manager.register(proxy)
        clients[proxy.cid] = client
    return strategy, manager, clients


def run_evaluate_round(strategy, manager, clients, parameters, server_round):
    """Flower's federated evaluation after a round: configure, evaluate every client, aggregate."""
    instructions = strategy.configure_evaluate(
        server_round=server_round, parameters=parameters, client_manager=manager
    )
    if not instructions:
        return
    results = []
    for proxy, ins in instructions:
        loss, num_examples, metrics = clients[proxy.cid].evaluate(
            parameters_to_ndarrays(ins.parameters), ins.config
        )
        results.append(
            (
                proxy,
                EvaluateRes(
                    status=Status(Code.OK, ""), loss=loss, num_examples=num_examples, metrics=metrics
                ),
            )
        )
    strategy.aggregate_evaluate(server_round=server_round, results=results, failures=[])


def run_round(strategy, manager, clients, parameters, server_round):
    """One round as Flower's legacy Server drives it: configure, fit every client, aggregate,
    then the federated evaluation."""
    instructions = strategy.configure_fit(
        server_round=server_round, parameters=parameters, client_manager=manager
    )
    results = [
        (proxy, run_client_round(clients[proxy.cid], ins.parameters, server_round))
        for proxy, ins in instructions
    ]
    parameters = strategy.aggregate_fit(server_round=server_round, results=results, failures=[])[0]
    run_evaluate_round(strategy, manager, clients, parameters, server_round)
    return parameters


def run_federation(tmp_path, cfg, run_name="run", node_configs=None):
    """A whole run in process (no Ray); returns the strategy and the broadcasts of every round."""
    strategy, manager, clients = build_federation(tmp_path, cfg, run_name=run_name, node_configs=node_configs)
    parameters = strategy.initialize_parameters(client_manager=manager)
    broadcasts = [parameters_to_ndarrays(parameters)]
    for s in range(1, cfg["num-server-rounds"] + 1):
        parameters = run_round(strategy, manager, clients, parameters, s)
        broadcasts.append(parameters_to_ndarrays(parameters))
        if strategy.done:  # as fedmf_app.federated.server.ViewServer
            break
    return strategy, broadcasts


#: A proxy that hands every message to a real NumPyClient, as Flower would (the in-process driver's).
ClientProxyToNumPy = InProcessProxy
