"""The handshake before round 1: exactly the expected SuperNodes, each telling its properties.

Nothing is written before it passes: a run that fails here leaves no run folder.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from flwr.common import Code, GetPropertiesIns, Scalar
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy

from fedmf_app.data import dataset_view_count
from fedmf_app.federated.error_lines import cause_of
from fedmf_app.federated.prompt_grid import SuperLinkLost
from fedmf_app.federated.timeouts import node_failure

__all__ = [
    "FederationError",
    "ask",
    "ask_all",
    "exchange",
    "check_view_count",
    "collect_properties",
    "properties",
    "resolve_num_clusters",
]


#: A node's reply to one message (``GetPropertiesRes``, ``FitRes``, ...).
Reply = TypeVar("Reply")


class FederationError(RuntimeError):
    """The federation cannot run or continue (wrong clients, failed or missing replies)."""


def check_view_count(dataset: str, expected: int, views: str = "") -> None:
    """Before contacting anyone: the data set's view count must be the client count.

    Parameters
    ----------
    dataset : str
        Run config ``dataset``; not checked when this machine cannot read it.
    expected : int
        Clients of the run.
    views : str
        Run config ``views``: the views the run keeps (empty: all).

    Raises
    ------
    FederationError
    fedmf_app.data.DataError
        When ``views`` names a view the file does not have.
    """
    count = dataset_view_count(dataset, views)
    if count is not None and count != expected:
        kept = f" (those run config views = {views!r} keeps)" if views else ""
        raise FederationError(
            f"data set {dataset!r} has {count} views{kept} but the run needs "
            f"{expected} clients (run config 'num-clients'): one client per view, so set "
            f"num-clients = {count}"
        )


def resolve_num_clusters(num_clusters: int, info: list[dict[str, Scalar]]) -> int | None:
    """Run config ``num-clusters``, else the clients' number of ground-truth classes.

    Parameters
    ----------
    num_clusters : int
        Run config ``num-clusters`` (0: from the ground truth).
    info : list of dict
        The clients' properties.

    Returns
    -------
    int or None
        ``None`` when neither is known.

    Raises
    ------
    FederationError
        When the clients disagree on the number of classes.
    """
    if num_clusters > 0:
        return num_clusters
    classes = {int(i.get("num-classes", 0)) for i in info} - {0}
    if len(classes) > 1:
        detail = ", ".join(f"partition {i['partition-id']}: {i.get('num-classes', 0)}" for i in info)
        raise FederationError(f"the clients' ground truth has different numbers of classes ({detail})")
    return classes.pop() if classes else None


def collect_properties(
    client_manager: ClientManager, expected: int, timeout: float, reply_timeout: float
) -> tuple[list[ClientProxy], list[dict[str, Scalar]]]:
    """Wait for the clients, ask each for its properties, order them by partition id.

    Parameters
    ----------
    client_manager : ClientManager
    expected : int
        SuperNodes the run needs.
    timeout : float
        Seconds to wait for them to connect (run config ``connect-timeout-s``).
    reply_timeout : float
        Seconds each may take to answer (run config ``round-timeout-s``).

    Returns
    -------
    proxies : list of ClientProxy
    info : list of dict
        Both in partition order.

    Raises
    ------
    FederationError
        On a wrong number of nodes, partition ids that are not 0..m-1 exactly once, or a node
        started for another number of partitions.
    """
    deadline = time.monotonic() + timeout
    available = client_manager.num_available()
    while available < expected and time.monotonic() < deadline:
        time.sleep(0.5)
        available = client_manager.num_available()
    if available != expected:
        raise FederationError(
            f"the run needs exactly {expected} SuperNodes (run config 'num-clients' or the "
            f"number of views) but {available} are connected after {timeout:.0f} s; in "
            f'simulation pass --federation-config "num-supernodes={expected}"'
        )
    proxies = list(client_manager.all().values())
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(proxies)) as pool:
        # The first message to a node also pays for starting its ClientApp (a Ray actor in
        # simulation), which can take longer than connecting on a busy machine: give the
        # handshake replies as long as a round's.
        futures = {pool.submit(properties, proxy, reply_timeout): proxy for proxy in proxies}
        answers = [(futures[f], f.result()) for f in concurrent.futures.as_completed(futures)]
    answers.sort(key=lambda pair: int(pair[1]["partition-id"]))
    ids = [int(info["partition-id"]) for _, info in answers]
    if ids != list(range(expected)):
        raise FederationError(
            f"the SuperNodes' partition ids are {ids}; the run needs each of 0..{expected - 1} "
            "exactly once (node config 'partition-id')"
        )
    for _, info in answers:
        declared = info.get("num-partitions", -1)
        if int(declared) not in (-1, expected):
            raise FederationError(
                f"partition {info['partition-id']} was started with num-partitions={declared} "
                f"but the run has {expected} clients"
            )
    return [p for p, _ in answers], [info for _, info in answers]


def properties(proxy: ClientProxy, timeout: float) -> dict[str, Scalar]:
    """One node's handshake reply.

    Parameters
    ----------
    proxy : ClientProxy
    timeout : float

    Returns
    -------
    dict

    Raises
    ------
    FederationError
        Naming the node and carrying its own error message.
    """
    return ask(proxy, {"stage": "handshake"}, timeout, f"SuperNode {proxy.cid} failed the handshake")


def ask(proxy: ClientProxy, config: dict[str, Scalar], timeout: float, failed: str) -> dict[str, Scalar]:
    """One node's ``get_properties`` reply to ``config``.

    Parameters
    ----------
    proxy : ClientProxy
    config : dict
    timeout : float
        The message's time to live (run config ``round-timeout-s``).
    failed : str
        Start of the error message, e.g. ``"SuperNode 7 failed the handshake"``.

    Returns
    -------
    dict

    Raises
    ------
    FederationError
        ``failed``, then the node's own error message (after a timeout, first the sentence of
        :func:`~fedmf_app.federated.timeouts.node_failure` naming ``round-timeout-s``).
    """
    send = partial(proxy.get_properties, GetPropertiesIns(config=config), timeout=timeout, group_id=0)
    return dict(exchange(send, failed, timeout).properties)


def exchange(send: Callable[[], Reply], failed: str, timeout: float) -> Reply:
    """One message to one node and its reply, which must carry status ``OK``.

    Parameters
    ----------
    send : callable
        Sends the message through the node's proxy and returns its reply (anything with a
        ``status``, e.g. ``GetPropertiesRes`` or ``FitRes``).
    failed : str
        Start of the error message, e.g. ``"SuperNode 7 failed the setup"``.
    timeout : float
        The message's time to live (run config ``round-timeout-s``).

    Returns
    -------
    The reply.

    Raises
    ------
    FederationError
        ``failed``, then the node's own error message (after a timeout, first the sentence of
        :func:`~fedmf_app.federated.timeouts.node_failure` naming ``round-timeout-s``).
    """
    try:
        res = send()
    except SuperLinkLost:
        raise  # not the node's failure: the ServerApp marks the run interrupted
    except Exception as exc:  # Flower's proxy raises with the node's or the SuperLink's reason
        raise FederationError(node_failure(failed, str(exc), timeout)) from exc
    if res.status.code != Code.OK:
        raise FederationError(f"{failed}: {cause_of(res.status.message)}")
    return res


def ask_all(
    proxies: list[ClientProxy], config_of: Callable[[int], dict[str, Scalar]], timeout: float, what: str
) -> list[dict[str, Scalar]]:
    """Every node's reply to its own ``get_properties`` message, asked in parallel.

    Parameters
    ----------
    proxies : list of ClientProxy
        In partition order.
    config_of : callable
        Partition -> the message for it.
    timeout : float
    what : str
        The stage, for messages (``"secure-aggregation key agreement"``).

    Returns
    -------
    list of dict
        In partition order.

    Raises
    ------
    FederationError
        ``SuperNode <id> (partition <p>) failed the <what>: <its message>``.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(proxies)) as pool:
        futures = [
            pool.submit(
                ask, proxy, config_of(p), timeout, f"SuperNode {proxy.cid} (partition {p}) failed the {what}"
            )
            for p, proxy in enumerate(proxies)
        ]
        return [f.result() for f in futures]
