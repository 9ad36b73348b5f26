"""Edge-wise kernels of the graph autoencoder as sparse products, torch.

A graph attention layer and the structure decoder evaluate one number per edge ``(i, j)``: an
attention weight ``α_ij`` or a logit ``<a_i, b_j>``. Message passing by gathers and scatters
(PyG's ``GATConv``, ``h[pairs[0]] * h[pairs[1]]``) materialises an ``E x width`` tensor per
operation and another one in the backward pass. Here every such operation is one of two sparse
products on the CSR pattern of the edges (rows = targets ``i``, columns = sources ``j``):

* SpMM ``Y = A(w) X``, ``Y_i = Σ_j w_ij X_j``, with the backward pass ``∂X = A(w)ᵀ ∂Y`` and
  ``∂w_ij = <∂Y_i, X_j>``;
* SDDMM ``v_ij = <A_i, B_j>`` on the pattern only (``torch.sparse.sampled_addmm``), with
  ``∂A = A(∂v) B`` and ``∂B = A(∂v)ᵀ A``.

So the memory of a layer is ``O(E x heads + n x width)``, not ``O(E x heads x width)``, and the
results are those of the gather/scatter form up to the order of floating-point sums.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch.nn import functional as F

__all__ = ["EdgePattern", "edge_dot", "edge_softmax", "edge_spmm", "gat_layer"]


def _csr(rows: torch.Tensor, cols: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stable sort of the edges by row: (order, crow_indices, col_indices)."""
    order = torch.argsort(rows, stable=True)
    crow = torch.zeros(n + 1, dtype=torch.int64, device=rows.device)
    crow[1:] = torch.cumsum(torch.bincount(rows, minlength=n), 0)
    return order, crow, cols.index_select(0, order)


@dataclass(frozen=True)
class EdgePattern:
    """The CSR pattern of ``E`` directed edges over ``n`` nodes and of its transpose.

    Build it with :meth:`from_pairs`; edge tensors of a kernel are in its (row-sorted) order.

    Attributes
    ----------
    n : int
    rows, cols : Tensor of int64, shape (E,)
        Target and source of every edge, sorted by row.
    crow : Tensor of int64, shape (n + 1,)
    crow_t, cols_t : Tensor of int64
        CSR of the transpose (rows = sources).
    perm_t : Tensor of int64, shape (E,)
        Position, in this pattern's order, of every edge of the transpose.
    """

    n: int
    rows: torch.Tensor
    cols: torch.Tensor
    crow: torch.Tensor
    crow_t: torch.Tensor
    cols_t: torch.Tensor
    perm_t: torch.Tensor

    @classmethod
    def from_pairs(cls, pairs: torch.Tensor, n: int) -> tuple[EdgePattern, torch.Tensor]:
        """Pattern of ``pairs[0] <- pairs[1]`` (row ``pairs[0]``, column ``pairs[1]``).

        Parameters
        ----------
        pairs : Tensor of int64, shape (2, E)
        n : int

        Returns
        -------
        pattern : EdgePattern
        order : Tensor of int64, shape (E,)
            ``pairs[:, order]`` is the pattern's edge order.
        """
        order, crow, cols = _csr(pairs[0], pairs[1], n)
        rows = pairs[0].index_select(0, order)
        perm_t, crow_t, cols_t = _csr(cols, rows, n)
        return cls(n, rows, cols, crow, crow_t, cols_t, perm_t), order

    def matrix(self, values: torch.Tensor) -> torch.Tensor:
        """Sparse CSR ``(n, n)`` matrix with the given edge values."""
        with warnings.catch_warnings():  # torch flags CSR support as beta
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(self.crow, self.cols, values, (self.n, self.n))

    def matrix_t(self, values: torch.Tensor) -> torch.Tensor:
        """Sparse CSR transpose ``A(values)ᵀ``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(
                self.crow_t, self.cols_t, values.index_select(0, self.perm_t), (self.n, self.n)
            )

    def sampled_dot(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``<a_i, b_j>`` on every edge, shape (E,) (no autograd)."""
        pattern = self.matrix(torch.zeros(self.rows.shape[0], dtype=a.dtype, device=a.device))
        return torch.sparse.sampled_addmm(pattern, a, b.T, beta=0.0).values()


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, x, pattern):  # noqa: D102 (torch.autograd.Function protocol)
        ctx.pattern = pattern
        ctx.save_for_backward(values, x)
        return pattern.matrix(values) @ x

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        values, x = ctx.saved_tensors
        pattern: EdgePattern = ctx.pattern
        grad = grad.contiguous()
        d_values = pattern.sampled_dot(grad, x) if ctx.needs_input_grad[0] else None
        d_x = pattern.matrix_t(values) @ grad if ctx.needs_input_grad[1] else None
        return d_values, d_x, None


class _SDDMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, pattern):  # noqa: D102
        ctx.pattern = pattern
        ctx.save_for_backward(a, b)
        return pattern.sampled_dot(a, b)

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        a, b = ctx.saved_tensors
        pattern: EdgePattern = ctx.pattern
        d_a = pattern.matrix(grad) @ b if ctx.needs_input_grad[0] else None
        d_b = pattern.matrix_t(grad) @ a if ctx.needs_input_grad[1] else None
        return d_a, d_b, None


def edge_spmm(values: torch.Tensor, x: torch.Tensor, pattern: EdgePattern) -> torch.Tensor:
    """``Y_i = Σ_j w_ij X_j`` over the pattern's edges, differentiable in ``values`` and ``x``.

    Parameters
    ----------
    values : Tensor, shape (E,)
        Edge weights in the pattern's order.
    x : Tensor, shape (n, C)
    pattern : EdgePattern

    Returns
    -------
    Tensor, shape (n, C)
    """
    return _SpMM.apply(values, x.contiguous(), pattern)


def edge_dot(a: torch.Tensor, b: torch.Tensor, pattern: EdgePattern) -> torch.Tensor:
    """``<a_i, b_j>`` on the pattern's edges, differentiable in ``a`` and ``b``.

    Parameters
    ----------
    a, b : Tensor, shape (n, C)
    pattern : EdgePattern

    Returns
    -------
    Tensor, shape (E,)
        In the pattern's order.
    """
    return _SDDMM.apply(a.contiguous(), b.contiguous(), pattern)


def edge_softmax(logits: torch.Tensor, rows: torch.Tensor, n: int) -> torch.Tensor:
    """Softmax of edge values over the edges of each row, every column apart.

    ``out_ij = exp(v_ij - max_j v_ij) / (Σ_j exp(v_ij - max_j v_ij) + 1e-16)``, the maximum taken
    without gradient: the arithmetic of torch-geometric's ``utils.softmax`` with an ``index``, so
    the two give the same numbers.

    Parameters
    ----------
    logits : Tensor, shape (E, h)
    rows : Tensor of int64, shape (E,)
        The row of every edge.
    n : int
        Number of rows.

    Returns
    -------
    Tensor, shape (E, h)
    """
    index = rows.unsqueeze(-1).expand_as(logits)
    size = (n, logits.shape[1])
    peak = logits.new_zeros(size).scatter_reduce_(0, index, logits.detach(), "amax", include_self=False)
    out = (logits - peak.index_select(0, rows)).exp()
    total = logits.new_zeros(size).scatter_add_(0, index, out) + 1e-16
    return out / total.index_select(0, rows)


def gat_layer(conv: torch.nn.Module, x: torch.Tensor, pattern: EdgePattern) -> torch.Tensor:
    """The forward pass of a graph attention layer (PyG's ``GATConv``) with sparse products.

    Computes, per head ``h``, ``e_ij = LeakyReLU(<a_src, W x_j> + <a_dst, W x_i>)``,
    ``α_ij = softmax_j(e_ij)`` over the incoming edges of ``i`` and ``Σ_j α_ij W x_j``, then
    concatenates (or averages) the heads and adds the bias: ``GATConv.forward`` without dropout,
    edge features or residual, on a pattern that already holds the self loops.

    Parameters
    ----------
    conv : GraphAttention or torch_geometric.nn.GATConv
        The layer's parameters: ``lin``, ``att_src``, ``att_dst``, ``bias`` and ``heads``,
        ``out_channels``, ``concat``, ``negative_slope`` (a ``GATConv`` with ``dropout = 0``, no
        ``edge_dim``, no residual, one shared linear map).
    x : Tensor, shape (n, d)
    pattern : EdgePattern
        Rows = targets; includes the self loops ``(i, i)``.

    Returns
    -------
    Tensor, shape (n, heads x out_channels) (concat) or (n, out_channels)
    """
    heads, width = conv.heads, conv.out_channels
    xw = conv.lin(x).view(-1, heads, width)
    score_src = (xw * conv.att_src).sum(dim=-1)
    score_dst = (xw * conv.att_dst).sum(dim=-1)
    logits = F.leaky_relu(score_src[pattern.cols] + score_dst[pattern.rows], conv.negative_slope)
    alpha = edge_softmax(logits, pattern.rows, pattern.n)
    out = torch.stack([edge_spmm(alpha[:, h], xw[:, h], pattern) for h in range(heads)], dim=1)
    out = out.reshape(-1, heads * width) if conv.concat else out.mean(dim=1)
    return out if conv.bias is None else out + conv.bias
