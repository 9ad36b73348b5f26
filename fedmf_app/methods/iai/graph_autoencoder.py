"""Client networks of paper C: autoencoder, GAT graph autoencoder with
attribute and structure decoders, and the DEC clustering layer. torch / torch-geometric.

The attention layers hold the parameters of torch-geometric's ``GATConv`` and run its forward pass
as sparse products (:mod:`~fedmf_app.methods.iai.edge_kernels`); torch-geometric itself is
imported only to draw subgraphs of a large graph (:func:`_sampled_subgraphs`). Importing it costs
about 2 s of CPU, which a deployed client would otherwise pay in the fresh process that runs each
of its rounds.

Random streams: every function that draws takes an integer ``seed`` and runs inside its own forked
torch RNG (the structure loss's non-edges from a numpy Generator of that seed), so no global
random state leaks in or out.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fedmf_app.methods.iai.adam import Adam
from fedmf_app.methods.iai.edge_kernels import EdgePattern, edge_dot, gat_layer
from fedmf_app.methods.iai.params import GAEParams
from fedmf_app.methods.iai.view_scaling import ScaledRows

__all__ = [
    "GraphAttention",
    "GraphAutoencoder",
    "GAELosses",
    "autoencoder",
    "encode",
    "pretrain_autoencoder",
    "seeded",
    "soft_assignment",
    "train_gae",
    "BITMAP_MAX_PAIRS",
    "PairSet",
    "edge_keys",
    "uniform_non_edges",
]


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's CPU RNG seeded, then restore it.

    Parameters
    ----------
    seed : int
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _mlp(dims: list[int]) -> nn.Sequential:
    """Linear layers with ReLU between them (none after the last), Xavier-initialised."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims, dims[1:])):
        linear = nn.Linear(a, b)
        nn.init.xavier_uniform_(linear.weight)
        nn.init.zeros_(linear.bias)
        layers.append(linear)
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def autoencoder(in_dim: int, hidden: tuple[int, ...], embed_dim: int) -> nn.ModuleDict:
    """Per-client autoencoder ``d -> hidden... -> d_z`` with a mirrored decoder.

    Parameters
    ----------
    in_dim : int
        Feature dimension d_m.
    hidden : tuple of int
        Hidden widths ([A] (256, 128)).
    embed_dim : int
        d_z ([A] 64).

    Returns
    -------
    torch.nn.ModuleDict
        ``encoder`` and ``decoder``; ReLU, Xavier initialisation, linear code and output.
    """
    dims = [in_dim, *hidden, embed_dim]
    return nn.ModuleDict({"encoder": _mlp(dims), "decoder": _mlp(dims[::-1])})


def pretrain_autoencoder(
    x: np.ndarray | ScaledRows,
    hidden: tuple[int, ...],
    embed_dim: int,
    epochs: int,
    max_steps: int,
    lr: float,
    batch_size: int,
    seed: int,
) -> nn.ModuleDict:
    """Train the autoencoder with MSE reconstruction on the observed rows (Adam, mini-batches), for
    ``epochs`` passes or ``max_steps`` steps, whichever ends first.

    Parameters
    ----------
    x : ndarray or ScaledRows, shape (n_m, d)
        Observed rows only; a :class:`~fedmf_app.methods.iai.view_scaling.ScaledRows` (a sparse
        view) is densified one mini-batch at a time.
    hidden, embed_dim
        See :func:`autoencoder`.
    epochs : int
    max_steps : int
        The most Adam steps (one per mini-batch); the last epoch may stop part-way.
    lr : float
    batch_size : int
    seed : int

    Returns
    -------
    torch.nn.ModuleDict
        The trained autoencoder, in eval mode (frozen by the caller: it is not trained again).
    """
    dense = isinstance(x, np.ndarray)
    data = torch.as_tensor(x, dtype=torch.float32) if dense else None
    with seeded(seed):
        model = autoencoder(x.shape[1], hidden, embed_dim)
        optimiser = Adam(model.parameters(), lr=lr)
        batches = (b for _ in range(epochs) for b in torch.randperm(x.shape[0]).split(batch_size))
        for batch in itertools.islice(batches, max_steps):
            xb = data[batch] if dense else torch.as_tensor(x[batch.numpy()], dtype=torch.float32)
            loss = F.mse_loss(model["decoder"](model["encoder"](xb)), xb)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return model.eval()


def encode(model: nn.ModuleDict, x: np.ndarray | ScaledRows) -> np.ndarray:
    """Codes Z of rows ``x`` under a trained autoencoder.

    Parameters
    ----------
    model : torch.nn.ModuleDict
    x : ndarray or ScaledRows, shape (n, d)
        A :class:`~fedmf_app.methods.iai.view_scaling.ScaledRows` is encoded a block of rows at
        a time.

    Returns
    -------
    ndarray of float64, shape (n, d_z)
    """
    with torch.no_grad():
        if isinstance(x, np.ndarray):
            return model["encoder"](torch.as_tensor(x, dtype=torch.float32)).double().numpy()
        encoder = model["encoder"]
        codes = [encoder(torch.as_tensor(x[b], dtype=torch.float32)).double().numpy() for b in x.blocks()]
        return np.concatenate(codes)


def soft_assignment(h: torch.Tensor, centroids: torch.Tensor) -> torch.Tensor:
    """DEC soft assignment: q_ij ∝ (1 + ||h_i - u_j||²)⁻¹, rows sum to one.

    Parameters
    ----------
    h : Tensor, shape (n, d_h)
    centroids : Tensor, shape (K, d_h)

    Returns
    -------
    Tensor, shape (n, K)
    """
    kernel = 1.0 / (1.0 + torch.cdist(h, centroids).pow(2))
    return kernel / kernel.sum(dim=1, keepdim=True)


def _glorot(parameter: torch.Tensor) -> None:
    """Uniform on ``±sqrt(6 / (fan_in + fan_out))`` over the last two dimensions, in place."""
    bound = math.sqrt(6.0 / (parameter.size(-2) + parameter.size(-1)))
    with torch.no_grad():
        parameter.uniform_(-bound, bound)


def with_self_loops(edges: torch.Tensor, n: int) -> torch.Tensor:
    """The edges followed by the self loops ``(i, i)`` of every node (torch-geometric's order).

    Parameters
    ----------
    edges : Tensor of int64, shape (2, e)
    n : int

    Returns
    -------
    Tensor of int64, shape (2, e + n)
    """
    loops = torch.arange(n, dtype=edges.dtype, device=edges.device)
    return torch.cat([edges, loops.repeat(2, 1)], dim=1)


class GraphAttention(nn.Module):
    """The parameters of torch-geometric's ``GATConv(in_dim, width, heads)`` (``dropout = 0``, no
    edge features, no residual): the shared map ``lin`` (no bias), the attention vectors
    ``att_src`` and ``att_dst`` of shape (1, heads, width) and the output ``bias``.

    Built from the same random draws as ``GATConv``, so the same seed gives the same weights, and
    with the same parameter names. The forward pass is
    :func:`~fedmf_app.methods.iai.edge_kernels.gat_layer`.

    Parameters
    ----------
    in_dim : int
    width : int
        Output channels per head.
    heads : int
    negative_slope : float
        Of the LeakyReLU on the attention logits (``GATConv``'s 0.2).
    """

    concat = True

    def __init__(self, in_dim: int, width: int, heads: int = 1, negative_slope: float = 0.2) -> None:
        super().__init__()
        self.heads, self.out_channels, self.negative_slope = heads, width, negative_slope
        # nn.Linear's own initial draw stands where GATConv's Linear draws once when it is built;
        # GATConv then draws the weight again, as here
        self.lin = nn.Linear(in_dim, heads * width, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, width))
        self.att_dst = nn.Parameter(torch.empty(1, heads, width))
        self.bias = nn.Parameter(torch.zeros(heads * width))
        for parameter in (self.lin.weight, self.att_src, self.att_dst):
            _glorot(parameter)

    def forward(self, x: torch.Tensor, graph: EdgePattern) -> torch.Tensor:
        """Output, shape (n, heads x width), on a pattern that holds the self loops."""
        return gat_layer(self, x, graph)


class GraphAutoencoder(nn.Module):
    """GAT encoder H = GAT(Ẑ, A_g + I) with attribute and structure decoders and DEC centroids.

    Encoder: ``GAT(d_z, hidden, heads)`` -> ELU -> ``GAT(hidden·heads, d_h, 1)`` (linear
    output), both with self loops (the ``+ I``; :class:`GraphAttention`). Attribute decoder
    ``MLP_f: d_h -> decoder_hidden -> d_z``; structure logits ``<H_s,i, H_s,j>`` with
    ``H_s = MLP_s(H)`` or ``H``, so that Â = σ(H_s H_sᵀ) is evaluated on chosen pairs only.
    The edge-wise work runs as sparse products (:mod:`~fedmf_app.methods.iai.edge_kernels`).

    Parameters
    ----------
    in_dim : int
        d_z.
    num_clusters : int
        K (rows of the centroid matrix U).
    params : GAEParams
    """

    def __init__(self, in_dim: int, num_clusters: int, params: GAEParams) -> None:
        super().__init__()
        self.conv1 = GraphAttention(in_dim, params.hidden, heads=params.heads)
        self.conv2 = GraphAttention(params.hidden * params.heads, params.out_dim, heads=1)
        self.attribute_decoder = _mlp([params.out_dim, params.decoder_hidden, in_dim])
        self.structure_head = _mlp([params.out_dim, params.decoder_hidden, params.out_dim])
        self.centroids = nn.Parameter(torch.zeros(num_clusters, params.out_dim))

    def graph(self, edge_index: torch.Tensor, n: int) -> EdgePattern:
        """The encoder's graph argument: the pattern of A_g + I.

        Parameters
        ----------
        edge_index : Tensor of int64, shape (2, e)
            Both directions of every edge of A_g, no self loops.
        n : int
        """
        return EdgePattern.from_pairs(with_self_loops(edge_index, n), n)[0]

    def forward(self, z: torch.Tensor, graph: EdgePattern) -> torch.Tensor:
        """Embedding H, shape (n, d_h), on the output of :meth:`graph`."""
        return self.conv2(F.elu(self.conv1(z, graph)), graph)

    def edge_logits(self, h: torch.Tensor, pairs: EdgePattern) -> torch.Tensor:
        """Logits of Â on a pattern's edges, in its order."""
        hs = self.structure_head(h)
        return edge_dot(hs, hs, pairs)


def edge_keys(edges: np.ndarray, n: int) -> np.ndarray:
    """Sorted unique keys ``i · n + j`` of the pairs ``(i, j)`` (those of a :class:`PairSet`).

    Parameters
    ----------
    edges : ndarray of int, shape (2, E)
    n : int

    Returns
    -------
    ndarray of int64
    """
    keys = np.sort(edges[0].astype(np.int64) * n + edges[1])
    # np.unique's result, by a sort and one comparison (numpy 2.4's np.unique hashes first and
    # takes 20 times as long on millions of keys)
    return keys[_first_of_runs(keys)]


def _first_of_runs(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted array starts, shape of ``values``, bool."""
    return np.concatenate([[True], values[1:] != values[:-1]]) if values.size else np.zeros(0, dtype=bool)


#: Graphs of at most this many possible pairs ``n · n`` (23,170 nodes) keep a bitmap of every pair
#: (``n² / 8`` bytes, 50 MB at 20,000 nodes) to test drawn pairs against; larger ones search their
#: sorted edge keys.
BITMAP_MAX_PAIRS = 2**29


@dataclass(frozen=True)
class PairSet:
    """The pairs ``(i, j)`` of a graph on ``n`` nodes, for membership tests of drawn pairs.

    Attributes
    ----------
    keys : ndarray of int64
        :func:`edge_keys` of the pairs.
    n : int
    bits : ndarray of uint8, shape (ceil(n² / 8),), or None
        Bit ``k`` set for every key ``k`` (little-endian within a byte); ``None`` above
        :data:`BITMAP_MAX_PAIRS` possible pairs.
    """

    keys: np.ndarray
    n: int
    bits: np.ndarray | None = None

    @classmethod
    def of(cls, edges: np.ndarray, n: int, bitmap_max_pairs: int = BITMAP_MAX_PAIRS) -> PairSet:
        """The pair set of ``edges``.

        Parameters
        ----------
        edges : ndarray of int, shape (2, E)
        n : int
        bitmap_max_pairs : int
            The most possible pairs ``n · n`` for which a bitmap is kept.

        Returns
        -------
        PairSet
        """
        keys = edge_keys(edges, n)
        if n * n > bitmap_max_pairs:
            return cls(keys, n)
        bits = np.zeros((n * n + 7) // 8, dtype=np.uint8)
        if keys.size:
            byte = keys >> 3
            starts = np.flatnonzero(_first_of_runs(byte))
            bits[byte[starts]] = np.bitwise_or.reduceat(np.left_shift(1, keys & 7).astype(np.uint8), starts)
        return cls(keys, n, bits)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Which of ``keys`` (int64 ``i · n + j``) are pairs of the set, shape of ``keys``, bool."""
        if self.bits is not None:
            return ((self.bits[keys >> 3] >> (keys & 7).astype(np.uint8)) & 1).astype(bool)
        return _sorted_member(keys, self.keys)


def uniform_non_edges(forbidden: PairSet, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` ordered pairs drawn uniformly, with replacement, from the non-edges of a graph.

    Rejection sampling: draw ``(i, j)`` uniformly from ``n x n`` and keep the pairs that are not
    edges (the edges should include the self loops, so ``i != j``); repeat for the rejected ones.
    Every non-edge has probability ``1 / #non-edges`` per draw, so the mean of a function over the
    sample is an unbiased estimate of its mean over all non-edges.

    Parameters
    ----------
    forbidden : PairSet
        The edges, on ``forbidden.n`` nodes.
    count : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (2, count)

    Raises
    ------
    ValueError
        When the graph has no non-edge.
    """
    n = forbidden.n
    if forbidden.keys.size >= n * n:
        raise ValueError(f"a graph on {n} nodes with every pair an edge has no non-edge to sample")
    out = np.empty(0, dtype=np.int64)
    while out.size < count:
        keys = rng.integers(0, n * n, size=count - out.size, dtype=np.int64)
        out = np.concatenate([out, keys[~forbidden.contains(keys)]])
    return np.vstack([out // n, out % n])


def _sorted_member(keys: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``np.isin(keys, table)`` for a sorted ``table``, shape of ``keys``, bool.

    The keys are searched in increasing order: numpy's binary search then starts from the
    previous key's position, which for random keys into a large table costs half the time of
    searching them in their own order, the sort included.
    """
    order = np.argsort(keys, kind="stable")
    pos = np.minimum(np.searchsorted(table, keys[order]), table.size - 1)
    member = np.empty(keys.size, dtype=bool)
    member[order] = table[pos] == keys[order]
    return member


@dataclass(frozen=True)
class GAELosses:
    """Losses of the last training epoch (0.0 for a disabled term)."""

    attribute: float
    structure: float
    clustering: float


@dataclass(frozen=True)
class _TrainingGraph:
    """What one epoch trains on: the whole graph A_g + I, or a sampled subgraph of it.

    Attributes
    ----------
    x : Tensor, shape (n, d_z)
        Imputed features of its nodes.
    target : Tensor, shape (n, K), or None
        Their rows of P.
    graph : EdgePattern
        The encoder's pattern (edges and self loops).
    positives : EdgePattern
        The scored positive pairs (the same edges).
    forbidden : PairSet
        The positives (no non-edge is drawn among them).
    num_negatives : int
        Non-edges drawn per epoch.
    """

    x: torch.Tensor
    target: torch.Tensor | None
    graph: EdgePattern
    positives: EdgePattern
    forbidden: PairSet
    num_negatives: int

    @classmethod
    def build(
        cls,
        model: GraphAutoencoder,
        x: torch.Tensor,
        edges: torch.Tensor,
        target: torch.Tensor | None,
        params: GAEParams,
    ) -> _TrainingGraph:
        """The training graph of nodes ``x`` joined by ``edges``.

        Parameters
        ----------
        model : GraphAutoencoder
        x : Tensor, shape (n, d_z)
        edges : Tensor of int64, shape (2, e)
            Both directions of every edge, no self loops, on the CPU.
        target : Tensor, shape (n, K), or None
        params : GAEParams

        Returns
        -------
        _TrainingGraph
        """
        n, device = x.shape[0], x.device
        positives = with_self_loops(edges, n)
        return cls(
            x=x,
            target=target,
            graph=model.graph(edges.to(device), n),
            positives=EdgePattern.from_pairs(positives.to(device), n)[0],
            forbidden=PairSet.of(positives.numpy(), n),
            num_negatives=int(params.negative_ratio * positives.shape[1]),
        )


def _sampled_subgraphs(
    edges: torch.Tensor, n: int, nodes: int, seed: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Subgraphs induced by at most ``nodes`` samples drawn at random, one per call to ``next``.

    Each is the first part of a fresh random split of the ``n`` nodes into ``ceil(n / nodes)``
    parts of ``ceil(n / parts)`` nodes by torch-geometric's
    :class:`~torch_geometric.loader.RandomNodeLoader` (a seeded generator), so every draw is a
    uniform sample of the nodes without replacement (20,000 of 100,000 at the defaults).

    Parameters
    ----------
    edges : Tensor of int64, shape (2, e)
        Both directions of every edge, no self loops.
    n : int
    nodes : int
        Most nodes of a subgraph.
    seed : int

    Yields
    ------
    node_ids : Tensor of int64, shape (n_s,)
        The subgraph's nodes, in global indices.
    edge_index : Tensor of int64, shape (2, e_s)
        Its edges, in local indices (``node_ids[edge_index]`` are edges of ``edges``).
    """
    from torch_geometric.data import Data  # here only: see the module's docstring
    from torch_geometric.loader import RandomNodeLoader

    data = Data(edge_index=edges, num_nodes=n, node_ids=torch.arange(n))
    generator = torch.Generator().manual_seed(seed)
    loader = RandomNodeLoader(data, num_parts=math.ceil(n / nodes), shuffle=True, generator=generator)
    while True:
        part = next(iter(loader))
        yield part.node_ids, part.edge_index


def train_gae(
    model: GraphAutoencoder,
    z: np.ndarray,
    edge_index: np.ndarray,
    target: np.ndarray | None,
    params: GAEParams,
    seed: int,
    device: str = "cpu",
) -> GAELosses:
    """Train the graph autoencoder with L = L_rec + α KL(P || Q).

    L_rec = MSE(Ẑ, MLP_f(H)) (divided by the mean squared deviation of Ẑ with
    ``params.attribute_scale = "variance"``) + BCE on the edges of A_g + I (positives) and on
    ``negative_ratio × #edges`` non-edges drawn uniformly each epoch (the positive and the negative
    means are added: the sampled counterpart of GAE's positive reweighting, never an n x n loss),
    by :func:`uniform_non_edges`.
    KL(P || Q) is the mean over samples of Σ_j p_ij log(p_ij / q_ij), Q from the centroids.

    Up to ``params.subgraph_nodes`` samples every epoch is one step on the whole graph; above it,
    one step on the subgraph induced by at most that many samples drawn at random
    (:func:`_sampled_subgraphs`; the losses above on its nodes, its edges and non-edges drawn
    among its nodes), so that an epoch's cost stops growing with ``n``.

    Parameters
    ----------
    model : GraphAutoencoder
        Trained in place (its centroids set by the caller).
    z : ndarray, shape (n, d_z)
        Imputed features Ẑ.
    edge_index : ndarray of int, shape (2, e)
        Both directions of every edge of A_g, no self loops.
    target : ndarray, shape (n, K), or None
        The server's P; ``None`` (round 1) trains without the clustering loss.
    params : GAEParams
    seed : int
        Seeds torch's stream, the numpy Generator of the negative sampling and the subgraphs' draws.
    device : str
        ``cpu`` or ``cuda``.

    Returns
    -------
    GAELosses
    """
    n = z.shape[0]
    x = torch.as_tensor(z, dtype=torch.float32, device=device)
    edges = torch.as_tensor(edge_index, dtype=torch.long)
    p = None if target is None else torch.as_tensor(target, dtype=torch.float32, device=device)
    sampled = n > params.subgraph_nodes
    whole = None if sampled else _TrainingGraph.build(model, x, edges, p, params)
    subgraphs = _sampled_subgraphs(edges, n, params.subgraph_nodes, seed) if sampled else None
    rng = np.random.default_rng(seed)
    optimiser = Adam(model.parameters(), lr=params.lr)
    attribute_scale = 1.0
    if params.attribute_scale == "variance":
        attribute_scale = max(float(((x - x.mean(dim=0)) ** 2).mean()), 1e-12)
    model.train()
    zero = torch.zeros((), device=device)
    attribute = structure = clustering = zero
    epochs = params.warmup_epochs if p is None and params.warmup_epochs > 0 else params.epochs
    with seeded(seed):
        for _ in range(epochs):
            g = whole
            if subgraphs is not None:
                ids, sub_edges = next(subgraphs)
                g = _TrainingGraph.build(
                    model, x[ids.to(device)], sub_edges, None if p is None else p[ids.to(device)], params
                )
            h = model(g.x, g.graph)
            if params.attribute_loss:
                attribute = F.mse_loss(model.attribute_decoder(h), g.x) / attribute_scale
            if params.structure_loss:
                m = g.x.shape[0]
                negatives = torch.as_tensor(uniform_non_edges(g.forbidden, g.num_negatives, rng))
                negatives = EdgePattern.from_pairs(negatives.to(device), m)[0]
                pos = model.edge_logits(h, g.positives)
                neg = model.edge_logits(h, negatives)
                structure = F.binary_cross_entropy_with_logits(
                    pos, torch.ones_like(pos)
                ) + F.binary_cross_entropy_with_logits(neg, torch.zeros_like(neg))
            if g.target is not None and params.alpha > 0:
                q = soft_assignment(h, model.centroids)
                t = g.target
                clustering = (
                    (t * (torch.log(t.clamp_min(1e-12)) - torch.log(q.clamp_min(1e-12)))).sum(dim=1).mean()
                )
            loss = attribute + structure + params.alpha * clustering
            if not loss.requires_grad:  # every term disabled: nothing to train
                break
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    return GAELosses(float(attribute.detach()), float(structure.detach()), float(clustering.detach()))
