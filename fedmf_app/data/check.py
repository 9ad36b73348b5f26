"""``python -m fedmf_app.data check FILE...``: what the app would read from data files, before a run.

The arguments are taken as run config ``dataset`` takes them (:mod:`fedmf_app.data.view_files`):
several files, one ``.csv``/``.npy`` file or a folder are per-view files, each read as a node's
``data-file`` is (one view, optional labels and sample IDs); one ``.mat``/``.npz`` file (or an
embedded name) is a multi-view data set. For every view it prints where it was found, its shape,
its orientation in the file, how sparse it is, its labels and how each client would prepare it
(run config ``negative-values``, ``sample-normalisation``, ``view-normalisation``); for per-view
files it then checks them together (one sample count, unless sample IDs align them; labels that
agree). A file that would fail gets one line, ``ERROR <file>: <cause>``, and the command exits
with 1; it exits with 0 when every file would load.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from fedmf_app.data.assemble import MultiViewData
from fedmf_app.data.errors import DataError
from fedmf_app.data.multiview import VIEW_FILES, load_multiview, read_view_file
from fedmf_app.data.preprocess import (
    NEGATIVE_VALUES,
    SAMPLE_NORMALISATIONS,
    VIEW_NORMALISATIONS,
    is_sparse_nonnegative,
    prepare_view,
)
from fedmf_app.data.view_files import names_view_files, view_files

__all__ = ["Preparation", "Report", "check_dataset", "describe_view", "main"]


@dataclass(frozen=True)
class Preparation:
    """How each client prepares its view (the run-config keys of the same names).

    Attributes
    ----------
    negative_values : str
        One of :data:`~fedmf_app.data.preprocess.NEGATIVE_VALUES`.
    sample_normalisation : str
        One of :data:`~fedmf_app.data.preprocess.SAMPLE_NORMALISATIONS`.
    view_normalisation : str
        One of :data:`~fedmf_app.data.preprocess.VIEW_NORMALISATIONS`.
    """

    negative_values: str = "min-max"
    sample_normalisation: str = "auto"
    view_normalisation: str = "frobenius"


@dataclass
class Report:
    """What :func:`check_dataset` found.

    Attributes
    ----------
    lines : list of str
        One line per file or view read, then the per-view files checked together.
    errors : list of str
        One line per problem that would stop a run (``<file>: <cause>``).
    """

    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every file would load."""
        return not self.errors


def describe_view(x: np.ndarray | sp.spmatrix, transposed: bool, prep: Preparation, where: str) -> str:
    """One view in words: shape, orientation, sparsity, range and preparation.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (n, d)
        As the loader returns it (samples x features).
    transposed : bool
        Whether the file stored it features x samples.
    prep : Preparation
    where : str
        The view's source, for the preparation's messages.

    Returns
    -------
    str

    Raises
    ------
    DataError
        When the preparation would refuse the view (negative values with ``negative-values =
        "error"``, an all-zero view).
    """
    n, d = x.shape
    nonzeros = x.nnz if sp.issparse(x) else int(np.count_nonzero(x))
    zeros = 100.0 * (1.0 - nonzeros / (n * d))
    stored = "stored sparse" if sp.issparse(x) else "dense"
    values = x.data if sp.issparse(x) else np.asarray(x)
    low = min(float(values.min()), 0.0) if sp.issparse(x) and nonzeros < n * d else float(values.min())
    orientation = "stored features x samples, turned" if transposed else "rows are samples"
    prepare_view(x, prep.negative_values, prep.view_normalisation, where, prep.sample_normalisation)
    steps = []
    if low < 0:
        steps.append(f"negative values (minimum {low:.4g}) made nonnegative ({prep.negative_values})")
    if prep.sample_normalisation == "l2" or (
        prep.sample_normalisation == "auto" and low >= 0 and is_sparse_nonnegative(x)
    ):
        steps.append("rows scaled to unit l2 norm")
    if prep.view_normalisation == "frobenius":
        steps.append("view divided by its Frobenius norm")
    return (
        f"{n} samples x {d} features ({orientation}), {stored}, {zeros:.1f} % zeros, "
        f"values {low:.4g} to {float(values.max()):.4g}; prepared: {', '.join(steps) or 'as is'}"
    )


def _labels(data: MultiViewData) -> str:
    if data.labels is None:
        return "no labels"
    counts = np.bincount(data.labels)
    return f"labels: {counts.size} classes, {counts.min()} to {counts.max()} samples each"


def check_dataset(
    dataset: str, sample_id: str = "", views: str = "", prep: Preparation = Preparation()
) -> Report:
    """Read ``dataset`` as a run would and describe it.

    Parameters
    ----------
    dataset : str
        As run config ``dataset`` (per-view files, a multi-view file or an embedded name).
    sample_id : str
        Run config ``sample-id`` (per-view files: the ID column or key of every file).
    views : str
        Run config ``views`` (a multi-view file only).
    prep : Preparation

    Returns
    -------
    Report
    """
    report = Report()
    if not names_view_files(dataset):
        try:
            data = load_multiview(dataset, views)
            head = f"{data.source}: {len(data.views)} views (client p takes view p); {_labels(data)}"
            report.lines.append(head)
            for i, x in enumerate(data.views):
                name = f" '{data.view_names[i]}'" if data.view_names else ""
                turned = bool(data.transposed and data.transposed[i])
                where = f"{data.source} view {i}"
                report.lines.append(f"  view {i}{name}: {describe_view(x, turned, prep, where)}")
        except DataError as exc:
            report.errors.append(str(exc))
        return report
    try:
        files = view_files(dataset)
    except DataError as exc:
        report.errors.append(str(exc))
        return report
    origin = f"--sample-id {sample_id!r}"
    read: list[tuple[str, MultiViewData, np.ndarray | None]] = []
    for p, file in enumerate(files):
        try:
            data, ids = read_view_file(str(file), sample_id, origin, VIEW_FILES)
            text = describe_view(data.views[0], bool(data.transposed and data.transposed[0]), prep, str(file))
        except DataError as exc:
            report.errors.append(str(exc))
            continue
        id_text = f"; {ids.size} sample IDs" if ids is not None else ""
        report.lines.append(f"{file} (client {p}): {text}; {_labels(data)}{id_text}")
        read.append((str(file), data, ids))
    if len(read) == len(files) > 1:
        _check_together(read, report)
    return report


def _check_together(read: list[tuple[str, MultiViewData, np.ndarray | None]], report: Report) -> None:
    """Per-view files of one run: one sample count (or IDs to align them), labels that agree."""
    counts = [data.num_samples for _, data, _ in read]
    if all(ids is not None for _, _, ids in read):
        common = set(read[0][2]).intersection(*(set(ids) for _, _, ids in read[1:]))
        report.lines.append(
            f"together: {len(read)} files, one per client; {len(common)} sample IDs held by every file "
            "(the alignment keeps those)"
        )
        if not common:
            report.errors.append("the files share no sample ID: the alignment would keep no sample")
        return
    if len(set(counts)) > 1:
        detail = ", ".join(f"{file}: {n}" for (file, _, _), n in zip(read, counts))
        report.errors.append(
            f"the files hold different numbers of samples ({detail}); row i of every file must be the "
            "same sample, or give every file an ID column (--sample-id, run config 'sample-id')"
        )
        return
    labelled = [(file, data.labels) for file, data, _ in read if data.labels is not None]
    agree = all(np.array_equal(labelled[0][1], labels) for _, labels in labelled[1:])
    note = "" if agree else "; the files' labels differ (a run scores against the first file's)"
    report.lines.append(
        f"together: {len(read)} files, one per client (num-clients = {len(read)}), {counts[0]} samples "
        f"each; {len(labelled)} with labels{note}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedmf_app.data check FILE...``; returns the exit code (0: every file loads).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: the command line's).
    """
    parser = argparse.ArgumentParser(
        prog="python -m fedmf_app.data",
        description="Show what the app would read from data files, and whether a run could use them.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check",
        help="describe data files as run config 'dataset' (or a node's data-file) would read them",
        description="Several files, one .csv/.npy file or a folder are per-view files (client p takes "
        "the p-th, each read as a node's data-file); one .mat/.npz file or an embedded name is a "
        "multi-view data set.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="data files, a folder, or an embedded name")
    check.add_argument("--sample-id", default="", help="the ID column or key (run config sample-id)")
    check.add_argument("--views", default="", help="views of a multi-view file (run config views)")
    check.add_argument("--negative-values", choices=NEGATIVE_VALUES, default="min-max")
    check.add_argument("--sample-normalisation", choices=SAMPLE_NORMALISATIONS, default="auto")
    check.add_argument("--view-normalisation", choices=VIEW_NORMALISATIONS, default="frobenius")
    args = parser.parse_args(argv)
    prep = Preparation(args.negative_values, args.sample_normalisation, args.view_normalisation)
    report = check_dataset(",".join(args.files), args.sample_id, args.views, prep)
    for line in report.lines:
        sys.stdout.write(line + "\n")
    for error in report.errors:
        sys.stdout.write(f"ERROR {error}\n")
    return 0 if report.ok else 1
