"""Stand-ins for Flower's client proxies: drive a Strategy without Ray or a SuperLink."""

from flwr.common import (
    Code,
    Context,
    FitRes,
    GetPropertiesRes,
    RecordDict,
    Status,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server.client_proxy import ClientProxy


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


def client_context(cfg, partition_id, num_partitions):
    return Context(
        run_id=1,
        node_id=100 + partition_id,
        node_config={"partition-id": partition_id, "num-partitions": num_partitions},
        state=RecordDict(),
        run_config=cfg,
    )


def run_client_round(client, parameters, server_round):
    """What Flower does with a NumPyClient for one fit message."""
    ins_params = parameters_to_ndarrays(parameters)
    arrays, num_examples, metrics = client.fit(ins_params, {"server-round": server_round})
    return fit_res(arrays, metrics)
