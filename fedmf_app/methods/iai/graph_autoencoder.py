"""Client networks of paper C: autoencoder, GAT graph autoencoder with
attribute and structure decoders, and the DEC clustering layer. torch / torch-geometric.

Random streams: every function that draws takes an integer ``seed`` and runs inside its own forked
torch RNG (and, for PyG's negative sampling, which draws from Python's ``random``, a saved and
restored ``random`` state), so no global random state leaks in or out.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.nn import GATConv
from torch_geometric.utils import add_self_loops, negative_sampling

from fedmf_app.methods.iai.params import GAEParams

__all__ = [
    "GraphAutoencoder",
    "GAELosses",
    "autoencoder",
    "encode",
    "pretrain_autoencoder",
    "seeded",
    "soft_assignment",
    "train_gae",
]


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's CPU RNG and Python's ``random`` seeded, then restore both.

    Parameters
    ----------
    seed : int
    """
    state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(state)


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
    x: np.ndarray,
    hidden: tuple[int, ...],
    embed_dim: int,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
) -> nn.ModuleDict:
    """Train the autoencoder with MSE reconstruction on the observed rows (Adam, mini-batches).

    Parameters
    ----------
    x : ndarray, shape (n_m, d)
        Observed rows only.
    hidden, embed_dim
        See :func:`autoencoder`.
    epochs : int
    lr : float
    batch_size : int
    seed : int

    Returns
    -------
    torch.nn.ModuleDict
        The trained autoencoder, in eval mode (frozen by the caller: it is not trained again).
    """
    data = torch.as_tensor(x, dtype=torch.float32)
    with seeded(seed):
        model = autoencoder(x.shape[1], hidden, embed_dim)
        optimiser = torch.optim.Adam(model.parameters(), lr=lr)
        for _ in range(epochs):
            for batch in torch.randperm(data.shape[0]).split(batch_size):
                xb = data[batch]
                loss = F.mse_loss(model["decoder"](model["encoder"](xb)), xb)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
    return model.eval()


def encode(model: nn.ModuleDict, x: np.ndarray) -> np.ndarray:
    """Codes Z of rows ``x`` under a trained autoencoder.

    Parameters
    ----------
    model : torch.nn.ModuleDict
    x : ndarray, shape (n, d)

    Returns
    -------
    ndarray of float64, shape (n, d_z)
    """
    with torch.no_grad():
        return model["encoder"](torch.as_tensor(x, dtype=torch.float32)).double().numpy()


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


class GraphAutoencoder(nn.Module):
    """GAT encoder H = GAT(Ẑ, A_g + I) with attribute and structure decoders and DEC centroids.

    Encoder: ``GATConv(d_z, hidden, heads)`` -> ELU -> ``GATConv(hidden·heads,
    d_h, 1)`` (linear output), both with self loops (the ``+ I``). Attribute decoder
    ``MLP_f: d_h -> decoder_hidden -> d_z``; structure logits ``<H_s,i, H_s,j>`` with
    ``H_s = MLP_s(H)`` or ``H``, so that Â = σ(H_s H_sᵀ) is evaluated on chosen pairs only.

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
        self.conv1 = GATConv(in_dim, params.hidden, heads=params.heads)
        self.conv2 = GATConv(params.hidden * params.heads, params.out_dim, heads=1)
        self.attribute_decoder = _mlp([params.out_dim, params.decoder_hidden, in_dim])
        self.structure_head = (
            _mlp([params.out_dim, params.decoder_hidden, params.out_dim])
            if params.structure_head == "mlp"
            else nn.Identity()
        )
        self.centroids = nn.Parameter(torch.zeros(num_clusters, params.out_dim))

    def forward(self, z: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Embedding H, shape (n, d_h)."""
        return self.conv2(F.elu(self.conv1(z, edge_index)), edge_index)

    def edge_logits(self, h: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
        """Logits of Â on the given (2, e) index pairs."""
        hs = self.structure_head(h)
        return (hs[pairs[0]] * hs[pairs[1]]).sum(dim=1)


@dataclass(frozen=True)
class GAELosses:
    """Losses of the last training epoch (0.0 for a disabled term)."""

    attribute: float
    structure: float
    clustering: float


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

    L_rec = MSE(Ẑ, MLP_f(H)) + BCE on the edges of A_g + I (positives) and on
    ``negative_ratio × #edges`` non-edges drawn uniformly by
    :func:`torch_geometric.utils.negative_sampling` each epoch (the positive and the negative
    means are added: the sampled counterpart of GAE's positive reweighting, never an n x n loss).
    KL(P || Q) is the mean over samples of Σ_j p_ij log(p_ij / q_ij), Q from the centroids.

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
        Negative sampling stream.
    device : str
        ``cpu`` or ``cuda``.

    Returns
    -------
    GAELosses
    """
    n = z.shape[0]
    x = torch.as_tensor(z, dtype=torch.float32, device=device)
    edges = torch.as_tensor(edge_index, dtype=torch.long)
    positives = add_self_loops(edges, num_nodes=n)[0]
    edges, positives = edges.to(device), positives.to(device)
    p = None if target is None else torch.as_tensor(target, dtype=torch.float32, device=device)
    optimiser = torch.optim.Adam(model.parameters(), lr=params.lr)
    model.train()
    zero = torch.zeros((), device=device)
    attribute = structure = clustering = zero
    with seeded(seed):
        for _ in range(params.epochs):
            h = model(x, edges)
            attribute = F.mse_loss(model.attribute_decoder(h), x) if params.attribute_loss else zero
            if params.structure_loss:
                negatives = negative_sampling(
                    positives.cpu(),
                    num_nodes=n,
                    num_neg_samples=int(params.negative_ratio * positives.shape[1]),
                ).to(device)
                pos = model.edge_logits(h, positives)
                neg = model.edge_logits(h, negatives)
                structure = F.binary_cross_entropy_with_logits(
                    pos, torch.ones_like(pos)
                ) + F.binary_cross_entropy_with_logits(neg, torch.zeros_like(neg))
            if p is not None and params.alpha > 0:
                q = soft_assignment(h, model.centroids)
                clustering = (
                    (p * (torch.log(p.clamp_min(1e-12)) - torch.log(q.clamp_min(1e-12)))).sum(dim=1).mean()
                )
            loss = attribute + structure + params.alpha * clustering
            if not loss.requires_grad:  # every term disabled: nothing to train
                break
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    return GAELosses(float(attribute.detach()), float(structure.detach()), float(clustering.detach()))
