"""The server's checkpoint: what a run needs to continue after its last finished round.

After every round the base strategy writes ``<run folder>/checkpoint.pkl`` (atomically): the
round, the broadcast of the next round and the method's server state (the attributes its
strategy lists in ``checkpoint_attrs``). The clients keep their own state in their state folder
(:func:`fedmf_app.federated.client.state_file`). ``python -m fedmf_app.resume`` continues from
both. The file is a pickle: read it only from run folders you wrote.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CHECKPOINT_FILE", "load_checkpoint", "write_checkpoint"]

CHECKPOINT_FILE = "checkpoint.pkl"


def write_checkpoint(
    run_dir: Path, server_round: int, broadcast: list[np.ndarray], state: dict[str, Any]
) -> None:
    """Write the checkpoint after ``server_round``.

    Parameters
    ----------
    run_dir : Path
    server_round : int
    broadcast : list of ndarray
        Sent to the clients in round ``server_round + 1``.
    state : dict
        The strategy's attributes.
    """
    path = Path(run_dir) / CHECKPOINT_FILE
    tmp = path.with_suffix(".pkl.tmp")
    with tmp.open("wb") as f:
        pickle.dump({"round": server_round, "broadcast": broadcast, "state": state}, f)
    os.replace(tmp, path)


def load_checkpoint(run_dir: str | Path) -> dict[str, Any]:
    """The checkpoint of a run folder.

    Returns
    -------
    dict
        ``round``, ``broadcast``, ``state``.

    Raises
    ------
    FileNotFoundError
        Naming the file.
    """
    path = Path(run_dir) / CHECKPOINT_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no checkpoint (the run finished no round, or is not a run folder)")
    with path.open("rb") as f:
        return pickle.load(f)
