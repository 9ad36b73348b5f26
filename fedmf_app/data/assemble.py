"""Check and orient views and labels as read from a file or an embedded data set (no file access).

:func:`assemble_views` takes the raw views (each ``N x d`` or ``d x N``, dense or sparse) and the
raw labels exactly as a reader found them (:mod:`fedmf_app.data.readers`, the embedded data sets
of :mod:`fedmf_app.data.embedded`) and returns a :class:`MultiViewData`: float64, samples x
features, read-only, labels coded ``0..k-1``. Problems raise :class:`~fedmf_app.data.DataError`
naming the source and the view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedmf_app.common.sparse import issparse
from fedmf_app.data.errors import DataError

if TYPE_CHECKING:
    import scipy.sparse

__all__ = ["MultiViewData", "assemble_views"]


@dataclass(frozen=True)
class MultiViewData:
    """A multi-view data set (views are read-only arrays).

    Attributes
    ----------
    views : list of ndarray or scipy.sparse.csr_matrix, each shape (n, d_v)
        Samples x features, float64; a view stored sparse in the file stays a CSR matrix.
    labels : ndarray, shape (n,), or None
        Ground truth coded ``0..k-1`` (int64); ``None`` when the file has none.
    name : str
        Short name, e.g. ``"hw"`` or the file stem.
    source : str
        The path, or ``"embedded:<name>"``.
    view_names : tuple of str
        The views' own names in the file (one per view), or empty when the file does not name
        them (a cell array).
    transposed : tuple of bool
        Per view, whether the file stored it features x samples (``d x N``) and it was turned;
        empty when not recorded.
    """

    views: list[np.ndarray]
    labels: np.ndarray | None
    name: str
    source: str
    view_names: tuple[str, ...] = ()
    transposed: tuple[bool, ...] = ()

    @property
    def num_samples(self) -> int:
        """``n``."""
        return int(self.views[0].shape[0])

    @property
    def num_classes(self) -> int | None:
        """Number of ground-truth classes (``None`` without labels)."""
        return None if self.labels is None else int(self.labels.max()) + 1


def assemble_views(
    raw_views: list[tuple[str, Any]],
    raw_labels: tuple[str, Any] | None,
    name: str,
    source: str,
    orient: bool = True,
    view_names: tuple[str, ...] = (),
) -> MultiViewData:
    """Check and normalise views and labels as read from a file.

    Parameters
    ----------
    raw_views : list of (str, array or sparse matrix)
        Each view with a description of where it was found (for messages), as stored.
    raw_labels : (str, array or list of arrays) or None
        The label key and its contents (a list: a cell of copies).
    name, source : str
        See :class:`MultiViewData`.
    orient : bool
        Decide each view's orientation against the labels (``False``: rows are samples).
    view_names : tuple of str
        The views' own names, one per view, or empty (see :class:`MultiViewData`).

    Returns
    -------
    MultiViewData

    Raises
    ------
    DataError
        On empty views, NaN/inf values, sample counts that do not match, or malformed labels.
    """
    if not raw_views:
        raise DataError(f"{source}: holds no views")
    labels = None if raw_labels is None else _label_vector(raw_labels, source)
    shapes = [_shape(where, v, source) for where, v in raw_views]
    n = _sample_count(shapes, labels, raw_labels, [w for w, _ in raw_views], source, orient)
    views = []
    for (where, raw), shape in zip(raw_views, shapes):
        x = _sparse_view(where, raw, shape[0] == n, source) if issparse(raw) else None
        if x is None:
            dense = np.asarray(raw)
            if dense.dtype.kind not in "biuf":
                raise DataError(f"{source}: {where} has non-numeric type {dense.dtype}")
            x = dense.astype(np.float64) if shape[0] == n else dense.T.astype(np.float64)
            _check_finite(where, x, source)
            x = np.ascontiguousarray(x)
            x.setflags(write=False)
        if x.shape[1] == 0:
            raise DataError(f"{source}: {where} is empty (no features)")
        views.append(x)
    if labels is not None:
        labels = np.unique(labels, return_inverse=True)[1].astype(np.int64).reshape(-1)
        labels.setflags(write=False)
    return MultiViewData(
        views=views,
        labels=labels,
        name=name,
        source=source,
        view_names=view_names,
        transposed=tuple(shape[0] != n for shape in shapes),
    )


def _sparse_view(where: str, raw: Any, rows_are_samples: bool, source: str) -> scipy.sparse.csr_matrix:
    """A view stored sparse, kept sparse: float64 CSR, samples x features, read-only values."""
    import scipy.sparse

    if raw.dtype.kind not in "biuf":
        raise DataError(f"{source}: {where} has non-numeric type {raw.dtype}")
    x = scipy.sparse.csr_matrix(raw if rows_are_samples else raw.T, dtype=np.float64)
    x.sum_duplicates()
    x.sort_indices()
    bad = ~np.isfinite(x.data)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        i = int(np.searchsorted(x.indptr, first, side="right") - 1)
        raise DataError(
            f"{source}: {where} has {int(bad.sum())} NaN/inf value(s), the first "
            f"at sample {i}, feature {int(x.indices[first])}"
        )
    for part in (x.data, x.indices, x.indptr):
        part.setflags(write=False)
    return x


def _check_finite(where: str, x: np.ndarray, source: str) -> None:
    """Refuse NaN/inf, naming the first one."""
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataError(
            f"{source}: {where} has {int(bad.sum())} NaN/inf value(s), the first at sample {i}, feature {j}"
        )


def _shape(where: str, raw: Any, source: str) -> tuple[int, int]:
    shape = raw.shape if issparse(raw) else np.shape(raw)
    if len(shape) != 2:
        raise DataError(f"{source}: {where} must be a 2-D matrix, got shape {tuple(shape)}")
    if 0 in shape:
        raise DataError(f"{source}: {where} is empty (shape {shape[0]}x{shape[1]})")
    return int(shape[0]), int(shape[1])


def _label_vector(raw_labels: tuple[str, Any], source: str) -> np.ndarray:
    key, value = raw_labels
    if isinstance(value, list):
        vectors = [_label_vector((key, v), source) for v in value]
        if not vectors:
            raise DataError(f"{source}: label cell '{key}' is empty")
        if any(v.shape != vectors[0].shape or np.any(v != vectors[0]) for v in vectors[1:]):
            raise DataError(
                f"{source}: label cell '{key}' holds {len(vectors)} label vectors "
                "that differ; expected identical copies"
            )
        return vectors[0]
    if issparse(value):
        value = value.toarray()
    labels = np.asarray(value)
    if labels.ndim not in (1, 2) or (labels.ndim == 2 and min(labels.shape) != 1):
        raise DataError(
            f"{source}: labels '{key}' must be a vector (N x 1 or 1 x N), got shape {labels.shape}"
        )
    labels = labels.reshape(-1)
    if labels.size == 0:
        raise DataError(f"{source}: labels '{key}' are empty")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise DataError(f"{source}: labels '{key}' hold NaN/inf values")
    if labels.dtype.kind not in "biufUS":
        raise DataError(f"{source}: labels '{key}' have unsupported type {labels.dtype}")
    return labels


def _sample_count(
    shapes: list[tuple[int, int]],
    labels: np.ndarray | None,
    raw_labels: tuple[str, Any] | None,
    wheres: list[str],
    source: str,
    orient: bool,
) -> int:
    """``n``: the label length, or the sample count the views share; checks every view."""
    if not orient:
        n = shapes[0][0]
    elif labels is not None:
        n = labels.size
    else:
        common = set(shapes[0]).intersection(*map(set, shapes[1:]))
        rows = {s[0] for s in shapes}
        if len(rows) == 1:
            n = rows.pop()
        elif len(common) == 1:
            n = common.pop()
        else:
            detail = ", ".join(f"{w}: {a}x{b}" for w, (a, b) in zip(wheres, shapes))
            raise DataError(
                f"{source}: the views do not share one sample count and there are no "
                f"labels to tell samples from features ({detail})"
            )
    for where, (a, b) in zip(wheres, shapes):
        if n not in (a, b) or (not orient and a != n):
            against = (
                f"the {n} labels under '{raw_labels[0]}'"
                if labels is not None and orient
                else f"the {n} samples of the first view"
            )
            raise DataError(f"{source}: {where} is {a}x{b}: its sample count does not match {against}")
    return n
