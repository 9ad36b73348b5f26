"""Client data: which view a client holds and how it is loaded.

Views are held samples x features (``n x d``); an algorithm that works on features x samples (paper
A) transposes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedmf_app.common.sparse import issparse
from fedmf_app.data.errors import DataError
from fedmf_app.data.missing_views import fill_missing_rows, missing_view_mask
from fedmf_app.data.multiview import VIEW_FILES, load_multiview, load_single_view
from fedmf_app.data.needs import DataNeeds
from fedmf_app.data.preprocess import prepare_view
from fedmf_app.data.sample_ids import id_origin, read_id_array, sample_id_key
from fedmf_app.data.synthetic import SyntheticSpec, make_synthetic_view
from fedmf_app.data.view_files import names_view_files, view_file_count, view_files

if TYPE_CHECKING:
    import scipy.sparse

__all__ = [
    "ClientView",
    "DataError",
    "DataNeeds",
    "dataset_view_count",
    "load_client_view",
    "partition_from_node_config",
    "synthetic_spec",
    "SYNTHETIC_NUM_CLIENTS",
    "views_to_federate",
]

#: Clients of a synthetic run where no SuperNodes are counted (in process, the hydra runner, the
#: estimators) and run config ``num-clients`` is 0: paper A's m = 10.
SYNTHETIC_NUM_CLIENTS = 10


@dataclass(frozen=True)
class ClientView:
    """One client's view.

    Attributes
    ----------
    features : ndarray or scipy.sparse.csr_matrix, shape (n, d)
        Samples x features, float64; a CSR matrix when the file stores the view sparse, the
        algorithm's family reads sparse views (:attr:`DataNeeds.sparse_views`) and the dense form
        would exceed run config ``sparse-view-min-mb``.
    source : str
        Where the view came from, for messages and logs.
    labels : ndarray, shape (n,), or None
        Ground truth coded ``0..k-1`` when the data has it; used only to score the final
        clustering, never for training.
    ids : ndarray of str, shape (n,), or None
        The samples' IDs when the node's data has an ID column (run or node config
        ``sample-id``), else ``None``.
    rows : ndarray of int64, shape (n,), or None
        After the alignment: the row of each sample in the node's file; ``None`` before it (or
        without IDs), when the rows are the file's.
    """

    features: np.ndarray | scipy.sparse.csr_matrix
    source: str
    labels: np.ndarray | None = None
    ids: np.ndarray | None = None
    rows: np.ndarray | None = None


def partition_from_node_config(node_config: Mapping[str, Any]) -> tuple[int, int | None]:
    """Read ``partition-id`` (and ``num-partitions`` if given) from a node config.

    Parameters
    ----------
    node_config : mapping
        ``context.node_config``.

    Returns
    -------
    partition_id : int
    num_partitions : int or None

    Raises
    ------
    DataError
        When ``partition-id`` is missing or not a nonnegative integer.
    """
    if "partition-id" not in node_config:
        raise DataError(
            "node config has no 'partition-id': start the SuperNode with "
            '--node-config "partition-id=<p> num-partitions=<m>"'
        )
    pid = node_config["partition-id"]
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
        raise DataError(f"node config 'partition-id' = {pid!r} must be an integer >= 0")
    num = node_config.get("num-partitions")
    return pid, (int(num) if num is not None else None)


def synthetic_spec(cfg: Mapping[str, Any], rank: int) -> SyntheticSpec:
    """Synthetic-data parameters from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.
    rank : int
        The rank to plant (:attr:`DataNeeds.synthetic_rank`).

    Returns
    -------
    SyntheticSpec
    """
    return SyntheticSpec(
        num_samples=cfg["num-samples"],
        view_dim=cfg["view-dim"],
        rank=rank,
        heterogeneity=cfg["heterogeneity"],
        seed=cfg["seed"],
    )


def dataset_view_count(dataset: str, views: str = "") -> int | None:
    """Number of views of ``dataset`` (those run config ``views`` keeps) when this machine can read it.

    Parameters
    ----------
    dataset : str
        Run-config ``dataset``.
    views : str
        Run-config ``views`` (empty: all the file's views).

    Returns
    -------
    int or None
        ``None`` for ``"synthetic"`` (any number of views) and for a path this machine does not
        have (in a deployment the data may live only on the SuperNodes); for per-view files
        (:mod:`fedmf_app.data.view_files`) the number of files (a folder's only when this machine
        has it).

    Raises
    ------
    DataError
        When the file exists but cannot be read, or ``views`` names a view it does not have.
    """
    from fedmf_app.data.embedded import EMBEDDED

    if names_view_files(dataset):
        return view_file_count(dataset)
    if dataset == "synthetic" or (dataset not in EMBEDDED and not Path(dataset).expanduser().is_file()):
        return None
    return len(load_multiview(dataset, views).views)


def views_to_federate(cfg: Mapping[str, Any]) -> int:
    """The client count of a run without SuperNodes to count.

    Parameters
    ----------
    cfg : mapping
        Validated run config.

    Returns
    -------
    int
        Run config ``num-clients`` when it is set (> 0); else one client per view of the data set
        (:func:`dataset_view_count`), and :data:`SYNTHETIC_NUM_CLIENTS` for synthetic data.

    Raises
    ------
    DataError
        When ``num-clients`` is 0 and this machine cannot read the data set.
    """
    if cfg["num-clients"] > 0:
        return int(cfg["num-clients"])
    if cfg["dataset"] == "synthetic":
        return SYNTHETIC_NUM_CLIENTS
    count = dataset_view_count(cfg["dataset"], cfg["views"])
    if count is None:
        raise DataError(
            f"run config 'num-clients' = 0 takes one client per view, but this machine cannot read "
            f"run config 'dataset' = {cfg['dataset']!r}: set num-clients"
        )
    return count


def load_client_view(
    cfg: Mapping[str, Any],
    partition_id: int,
    node_config: Mapping[str, Any] | None = None,
    rows: np.ndarray | None = None,
    *,
    needs: DataNeeds,
) -> ClientView:
    """Load the view of client ``partition_id`` (and nothing else).

    Sources, in order: the node config's ``data-file`` (this organisation's own single-view file,
    :func:`~fedmf_app.data.multiview.load_single_view`); run config ``dataset = "synthetic"``
    (view ``partition_id`` of the planted generator, built from ``(seed, partition_id)``);
    ``dataset`` naming per-view files (:mod:`fedmf_app.data.view_files`: a list or a folder,
    each file read as a ``data-file``), of which this client takes file ``partition_id``;
    otherwise ``dataset`` names an embedded data set or a multi-view file, whose view
    ``partition_id`` this client takes (of the views run config ``views`` keeps, in its order).
    With a sample-ID column or key (node config ``sample-id``, else run config ``sample-id``) the
    IDs are read too, and ``rows`` (the alignment's outcome) keeps and orders the file's rows first
    (labels with them, recoded ``0..k-1``), so that everything after sees exactly the aligned
    file. Under ``missing-rate > 0`` an algorithm that needs complete views gets this view's
    missing rows filled (:func:`_fill_missing`). Real views (not synthetic ones) are then prepared
    by :func:`~fedmf_app.data.preprocess.prepare_view` with run config ``negative-values``,
    ``sample-normalisation`` and ``view-normalisation``; a view stored sparse stays sparse for a
    family that reads sparse views when its dense form would exceed run config
    ``sparse-view-min-mb``, and is made dense otherwise.

    Parameters
    ----------
    cfg : mapping
        Validated run config.
    partition_id : int
    node_config : mapping, optional
        ``context.node_config``.
    rows : ndarray of int, shape (n_aligned,), optional
        The file rows to keep, in the aligned order (needs sample IDs).
    needs : DataNeeds
        What the run's family needs (:func:`fedmf_app.registry.data_needs`): the caller
        asks the family and tells the data layer, which imports nothing above it.

    Returns
    -------
    ClientView

    Raises
    ------
    DataError
        When ``partition_id`` has no view, the data set's view count is not ``num-clients``,
        ``views`` names a view the file does not have, the data cannot be read, or the sample
        IDs are missing or malformed (the message names the file, the view or key and the problem).
    """
    m = cfg["num-clients"]
    if partition_id >= m:
        raise DataError(
            f"partition-id {partition_id} has no view: the run has num-clients = {m} "
            f"(partition ids 0..{m - 1})"
        )
    data_file = (node_config or {}).get("data-file")
    key = sample_id_key(cfg, node_config)
    origin = id_origin(node_config, key)
    ids = None
    if data_file:
        features, labels, ids = load_single_view(str(data_file), key, origin)
        source = f"{data_file} (node config data-file)"
    elif cfg["dataset"] == "synthetic":
        if key:
            raise DataError(f"{origin}: synthetic data has no sample IDs (give the node a data-file)")
        view = make_synthetic_view(synthetic_spec(cfg, needs.synthetic_rank), partition_id)
        source = (
            f"synthetic view {partition_id} (seed={cfg['seed']}, h={cfg['heterogeneity']}, "
            f"n={cfg['num-samples']}, d={cfg['view-dim']})"
        )
        features = _fill_missing(view.x.T, cfg, partition_id, source, needs)
        return ClientView(features=features, source=source)
    elif names_view_files(cfg["dataset"]):
        files = view_files(cfg["dataset"])
        if len(files) != m:
            raise DataError(
                f"run config 'dataset' names {len(files)} per-view files but num-clients = {m}: one "
                f"client per file, so set num-clients = {len(files)} (and as many SuperNodes)"
            )
        file = files[partition_id]
        features, labels, ids = load_single_view(str(file), key, origin, VIEW_FILES)
        source = f"{file} (file {partition_id} of run config dataset)"
    else:
        views = cfg["views"]
        data = load_multiview(cfg["dataset"], views)
        if len(data.views) != m:
            kept = f" (those run config views = {views!r} keeps)" if views else ""
            raise DataError(
                f"{data.source} has {len(data.views)} views{kept} but run config num-clients = {m}: "
                f"one client per view, so set num-clients = {len(data.views)} (and as many "
                "SuperNodes)"
            )
        features, labels = data.views[partition_id], data.labels
        source = f"{data.source} view {partition_id}"
        if views:
            source += f" (file view {views.split(',')[partition_id].strip()!r} of run config views)"
        if key:
            if data.source.startswith("embedded:"):
                raise DataError(f"{data.source}: {origin}: the embedded data set has no sample IDs")
            ids = read_id_array(Path(data.source), key, origin)
            if ids.size != data.num_samples:
                raise DataError(
                    f"{data.source}: {origin}: {ids.size} sample IDs for {data.num_samples} samples"
                )
    if rows is not None:
        if ids is None:
            raise DataError(f"{source}: aligned rows given but the data has no sample IDs")
        features, ids = features[rows], ids[rows]
        if labels is not None:
            labels = np.unique(labels[rows], return_inverse=True)[1].astype(np.int64).reshape(-1)
    features = _fill_missing(features, cfg, partition_id, source, needs)
    prepared = prepare_view(
        features, cfg["negative-values"], cfg["view-normalisation"], source, cfg["sample-normalisation"]
    )
    if issparse(prepared) and not _keeps_sparse(prepared.shape, cfg, needs):
        prepared = prepared.toarray()
    return ClientView(features=prepared, source=source, labels=labels, ids=ids, rows=rows)


def _keeps_sparse(shape: tuple[int, int], cfg: Mapping[str, Any], needs: DataNeeds) -> bool:
    """Whether a view stored sparse reaches the client sparse (run config ``sparse-view-min-mb``)."""
    dense_mb = shape[0] * shape[1] * 8 / 2**20
    return needs.sparse_views and dense_mb > cfg["sparse-view-min-mb"]


def _fill_missing(
    features: np.ndarray, cfg: Mapping[str, Any], partition_id: int, source: str, needs: DataNeeds
) -> np.ndarray:
    """The view with its missing rows filled, for algorithms that need complete views.

    Unchanged when ``missing-rate`` is 0 or the algorithm reads the mask itself
    (:attr:`DataNeeds.fill_missing_rows` false); otherwise the rows the run's seeded mask
    marks missing for this view are replaced per ``missing-fill``
    (:func:`fedmf_app.data.missing_views.fill_missing_rows`).

    Parameters
    ----------
    features : ndarray, shape (n, d)
    cfg : mapping
        Validated run config.
    partition_id : int
        The view's index (its column of the mask).
    source : str
        For error messages.
    needs : DataNeeds

    Returns
    -------
    ndarray, shape (n, d)

    Raises
    ------
    DataError
        When the run's mask cannot be built for this data (e.g. fewer than 2 views).
    """
    if cfg["missing-rate"] == 0 or not needs.fill_missing_rows:
        return features
    try:
        observed = missing_view_mask(
            features.shape[0],
            cfg["num-clients"],
            cfg["missing-rate"],
            cfg["seed"],
            cfg["missing-views-dropped"],
        )[:, partition_id]
        return fill_missing_rows(features, observed, cfg["missing-fill"])
    except ValueError as exc:
        raise DataError(f"{source}: cannot apply missing-rate = {cfg['missing-rate']}: {exc}") from exc
