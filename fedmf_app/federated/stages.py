"""The stages every family's protocol shares, and the one way to build a family's protocol (no Flower).

Before a family's own stages, every run has the handshake (and, when the clients' data has sample IDs,
the three stages of the sample-ID alignment, after which the handshake is asked once more); after the
last round, the end of run, which only a run with a sample-ID alignment makes (the ground truth comes
with a family's set-up or round-1 replies instead). When the run sends masked sums, the key
agreement costs no message of its own: each client's handshake reply carries its key for the run,
and the peers' keys ride with the first request after the handshake
(:attr:`~fedmf_app.federated.protocol.Stage.rides`). Each is answered at most as often as declared per
run, a resumed run included (it agrees fresh keys and aligns again).
:func:`family_protocol` puts a family's stages, facts and caps between them, so that a family declares
its protocol in one place (its ``protocol.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fedmf_app.federated.protocol import Cap, Fact, Part, Protocol, Sizes, Stage

__all__ = [
    "CLUSTERS",
    "FIRST_ROUND_TRUTH",
    "HANDSHAKE_PARTS",
    "MAX_CLUSTERS",
    "PROCESS_MEMORY",
    "family_protocol",
    "shared_stages",
]

#: What a client tells in the handshake (every family; a family may add parts).
HANDSHAKE_PARTS: tuple[Part, ...] = (
    Part("partition-id", kinds="i", learns="its partition id"),
    Part("num-samples", kinds="i", learns="the number of samples n"),
    Part("num-features", kinds="i", learns="its number of features d_p"),
    Part(
        "source",
        kinds="s",
        learns=(
            "the view's source: the data set's name and view, or the name of the node's data file (no folder)"
        ),
    ),
    Part("num-classes", kinds="i", learns="the number of ground-truth classes (0: none)"),
    Part("sample-ids", kinds="i", learns="how many sample IDs its data has (0: none)"),
    Part("sparse-counts", kinds="i", learns="whether the view looks like counts (1) or not (0)"),
    Part(
        "num-partitions", kinds="i", optional=True, learns="the number of partitions its node config declares"
    ),
)


#: The ground truth in a family's round-1 reply (fedsonmf, fmvc-iai; fmvc-imk's set-up carries it
#: as an array): the run is scored without the end-of-run exchange, which would ask for the same
#: labels again.
FIRST_ROUND_TRUTH = Part(
    "labels",
    kinds="b",
    optional=True,
    learns=(
        "in round 1 only: its ground-truth labels (n x int64), if it has any, only to score the "
        "clustering (each round's clustering is scored after the last round)"
    ),
)

#: The peak memory of the process that answered (in a deployment each message is a new process).
PROCESS_MEMORY = Part("peak_rss_mb", learns="the peak memory of its process")


def _hops(cfg: Mapping[str, Any]) -> int:
    return int(cfg["num-clients"]) - 1


def shared_stages(
    masks: Callable[[Mapping[str, Any]], bool], handshake_extra: tuple[Part, ...] = ()
) -> tuple[tuple[Stage, ...], tuple[Stage, ...]]:
    """The shared stages before a family's own, and the one after them.

    Parameters
    ----------
    masks : callable
        ``cfg -> bool``: whether the run sends masked sums (and so agrees keys).
    handshake_extra : tuple of Part
        What the family's handshake adds.

    Returns
    -------
    before : tuple of Stage
        Handshake (with the client's key when the run masks), alignment, the peers' keys.
    after : tuple of Stage
        The end of run.
    """

    def with_keys(sizes: Sizes) -> bool:
        return masks(sizes.cfg)

    key_parts = (
        Part(
            "secagg-public-key",
            kinds="b",
            present=with_keys,
            learns=(
                "when the run sends masked sums: its X25519 public key for this run (the same key both times)"
            ),
        ),
        Part(
            "secagg-signature",
            kinds="b",
            optional=True,
            present=with_keys,
            learns="when the run sends masked sums: its signature of that key",
        ),
    )
    before = (
        Stage(
            "handshake",
            "get_properties",
            times=2,
            reply=HANDSHAKE_PARTS + handshake_extra + key_parts,
            doc="before round 1 (once more after a sample-ID alignment)",
        ),
        Stage(
            "psi-blind",
            "get_properties",
            reply=(
                Part(
                    "psi-points",
                    kinds="b",
                    learns=(
                        "its sample IDs hashed and blinded by its secret scalar (32 bytes each): "
                        "their number only"
                    ),
                ),
                Part("psi-signature", kinds="b", optional=True, learns="a signature of the points"),
            ),
            doc="sample-ID alignment, when the data has sample IDs ([alignment.md](alignment.md))",
        ),
        Stage(
            "psi-relay",
            "get_properties",
            times=_hops,
            times_text="m - 1 times per run (once per hop)",
            request_config=("psi-origin", "psi-hop", "psi-points", "psi-signature"),
            reply=(
                Part("psi-points", kinds="b", learns="another party's points, blinded once more"),
                Part("psi-signature", kinds="b", optional=True, learns="a signature of the points"),
            ),
            doc="sample-ID alignment: blind another party's points at one hop",
        ),
        Stage(
            "psi-keep",
            "get_properties",
            request_config=("psi-positions",),
            reply=(Part("psi-kept", kinds="i", learns="the number of common samples it kept"),),
            doc="sample-ID alignment: keep the common samples",
        ),
        Stage(
            "peers",
            "any",
            when=masks,
            rides=True,
            request_config=("secagg-context", "secagg-public-key-*", "secagg-signature-*"),
            doc=(
                "key agreement, when the run sends masked sums: every client's key and a fresh context, "
                "with the first request after the handshake (answered before that request's stage)"
            ),
        ),
    )
    after = (
        Stage(
            "evaluate",
            "evaluate",
            request_config=(),
            request=(
                Part(
                    "final labels",
                    shape=lambda s: (s.n,),
                    shape_text="n",
                    kinds="i",
                    optional=True,
                    learns="after a sample-ID alignment: the final cluster of every common sample",
                ),
            ),
            reply=(
                Part("partition-id", kinds="i", learns="its partition id"),
                Part(
                    "labels",
                    kinds="b",
                    learns=(
                        "its ground-truth labels (n x int64), if it has any, only to score the "
                        "final clustering"
                    ),
                ),
                PROCESS_MEMORY,
            ),
            doc=(
                "end of run, after the last round, only after a sample-ID alignment (to send the final "
                "labels back; otherwise the ground truth came during the run)"
            ),
        ),
    )
    return before, after


def family_protocol(
    family: str,
    stages: tuple[Stage, ...],
    facts: tuple[Fact, ...] = (),
    caps: tuple[Cap, ...] = (),
    masks: Callable[[Mapping[str, Any]], bool] = lambda cfg: bool(cfg["secure-aggregation"]),
    handshake_extra: tuple[Part, ...] = (),
    notes: str = "",
) -> Protocol:
    """A family's whole protocol: the shared stages around its own.

    Parameters
    ----------
    family : str
    stages : tuple of Stage
        The family's own stages, in the order a run meets them.
    facts, caps : tuple
        See :class:`~fedmf_app.federated.protocol.Protocol`.
    masks : callable
        ``cfg -> bool``: whether the run sends masked sums.
    handshake_extra : tuple of Part
        What the family adds to the handshake.
    notes : str

    Returns
    -------
    Protocol
    """
    before, after = shared_stages(masks, handshake_extra)
    return Protocol(family, before + stages + after, facts, caps, masks, notes)


def _clusters_problem(
    cfg: Mapping[str, Any], own: Mapping[str, int], facts: Mapping[str, int], caps: Mapping[str, int]
) -> str | None:
    k = int(facts["clusters"])
    if k < 0:
        return "a number of clusters cannot be negative"
    if int(cfg["num-clusters"]) > 0 and k != int(cfg["num-clusters"]):
        return f"the run config says num-clusters = {cfg['num-clusters']}"
    if int(cfg["num-clusters"]) == 0 and own["classes"] and k != own["classes"]:
        return (
            f"the run config leaves num-clusters to the ground truth, which has {own['classes']} classes here"
        )
    if "max-clusters" in caps and k > caps["max-clusters"]:
        return f"above the node's cap 'max-clusters' = {caps['max-clusters']}"
    return None


#: The number of clusters K (0: unknown), a fact of every family's run.
CLUSTERS = Fact(
    "clusters",
    "the number of clusters K (0: unknown): run config num-clusters, else the clients' ground-truth "
    "class count; a client with ground truth checks it against its own",
    _clusters_problem,
)

#: The node's cap on K.
MAX_CLUSTERS = Cap(
    "max-clusters",
    "the largest number of clusters the node accepts; default: its ground truth's class count (no cap "
    "on a node without ground truth)",
    lambda cfg, own, facts: own["classes"] or None,
)
