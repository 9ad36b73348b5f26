"""The server's checkpoint: what a run needs to continue after its last finished round.

After every round the base strategy writes ``<run folder>/checkpoint.npz`` (atomically): the
round, the broadcast of the next round and the method's server state (the attributes its
strategy lists in ``checkpoint_attrs``). The clients keep their own state in their state folder
(:func:`fedmf_app.federated.client.state_file`). ``python -m fedmf_app.resume`` continues from
both.

The file holds data only, never code: numpy arrays (read with ``allow_pickle=False``) and one JSON
document (member :data:`TREE`) describing how they fit together: numbers, strings, lists, tuples,
dicts, scipy CSR matrices and instances of the few classes the method names
(``checkpoint_types``: their fields are set, no constructor or other code of the file's choosing
runs). A file that holds anything else, or names another class, is refused with a message.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["CHECKPOINT_FILE", "CheckpointError", "load_checkpoint", "write_checkpoint"]

CHECKPOINT_FILE = "checkpoint.npz"

#: The archive member holding the JSON document.
TREE = "__tree__"


class CheckpointError(ValueError):
    """A checkpoint file that is not one this app wrote (or was altered): the message says what."""


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class _Encoder:
    """Turns a state into a JSON tree plus named arrays."""

    def __init__(self, types: Iterable[type]) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.types = tuple(types)

    def array(self, value: np.ndarray) -> dict[str, str]:
        if value.dtype.kind not in "biufc":
            raise TypeError(f"cannot checkpoint an array of dtype {value.dtype}")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = value
        return {"array": name}

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, np.ndarray):
            return self.array(value)
        if isinstance(value, np.generic):
            return {"scalar": value.dtype.str, "value": value.item()}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [self.encode(v) for v in value]}
        if isinstance(value, dict):
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if sp.issparse(value):
            csr = sp.csr_matrix(value)
            return {
                "csr": [self.array(csr.data), self.array(csr.indices), self.array(csr.indptr)],
                "shape": list(csr.shape),
            }
        if type(value) not in self.types:
            raise TypeError(f"cannot checkpoint a {_type_name(type(value))} (not in checkpoint_types)")
        if dataclasses.is_dataclass(value):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        else:
            fields = dict(vars(value))
        return {"object": _type_name(type(value)), "fields": self.encode(fields)}


class _Decoder:
    """The inverse of :class:`_Encoder`, building only the allowed types."""

    def __init__(self, arrays: Any, types: Iterable[type]) -> None:
        self.arrays = arrays
        self.types = {_type_name(t): t for t in types}

    def array(self, node: Any) -> np.ndarray:
        if not isinstance(node, dict) or set(node) != {"array"} or node["array"] not in self.arrays:
            raise CheckpointError(f"an array reference {node!r} names no array of the file")
        return self.arrays[node["array"]]

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise CheckpointError(f"unexpected JSON value {node!r}")
        kind = next(iter(node), None)
        if kind == "array":
            return self.array(node)
        if kind == "scalar":
            dtype = np.dtype(str(node["scalar"]))
            if dtype.kind not in "biufc":
                raise CheckpointError(f"a scalar of dtype {dtype} is not allowed")
            return dtype.type(node["value"])
        if kind == "tuple":
            return tuple(self.decode(v) for v in node["tuple"])
        if kind == "dict":
            return {self.decode(k): self.decode(v) for k, v in node["dict"]}
        if kind == "csr":
            data, indices, indptr = (self.array(a) for a in node["csr"])
            return sp.csr_matrix((data, indices, indptr), shape=tuple(int(s) for s in node["shape"]))
        if kind == "object":
            cls = self.types.get(str(node["object"]))
            if cls is None:
                allowed = ", ".join(sorted(self.types)) or "none"
                raise CheckpointError(f"the file names class {node['object']!r}; allowed: {allowed}")
            fields = self.decode(node["fields"])
            if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
                raise CheckpointError(f"the fields of {node['object']!r} are not a mapping of names")
            obj = cls.__new__(cls)
            obj.__dict__.update(fields)  # data only: no constructor runs
            return obj
        raise CheckpointError(f"unexpected JSON object with keys {sorted(node)}")


def write_checkpoint(
    run_dir: Path,
    server_round: int,
    broadcast: list[np.ndarray],
    state: dict[str, Any],
    types: Iterable[type] = (),
) -> None:
    """Write the checkpoint after ``server_round``.

    Parameters
    ----------
    run_dir : Path
    server_round : int
    broadcast : list of ndarray
        Sent to the clients in round ``server_round + 1``.
    state : dict
        The strategy's attributes: numbers, strings, arrays, lists, tuples, dicts, scipy sparse
        matrices and objects of ``types``.
    types : iterable of type
        The classes whose instances the state may hold (the strategy's ``checkpoint_types``).

    Raises
    ------
    TypeError
        When the state holds anything else.
    """
    encoder = _Encoder(types)
    tree = {
        "round": int(server_round),
        "broadcast": encoder.encode(list(broadcast)),
        "state": encoder.encode(state),
    }
    document = np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **{TREE: document}, **encoder.arrays)
    path = Path(run_dir) / CHECKPOINT_FILE
    tmp = path.with_suffix(".npz.tmp")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, path)


def _read_tree(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no checkpoint (the run finished no round, or is not a run folder)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        tree = json.loads(arrays.pop(TREE).tobytes().decode())
    except (ValueError, KeyError, OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(
            f"{path} is not a checkpoint of this app (arrays and a JSON document, no pickle): {exc}"
        ) from exc
    if (
        not isinstance(tree, dict)
        or set(tree) != {"round", "broadcast", "state"}
        or not isinstance(tree["round"], int)
    ):
        raise CheckpointError(f"{path}: the JSON document does not describe a checkpoint")
    return tree, arrays


def load_checkpoint(
    run_dir: str | Path, types: Iterable[type] = (), attrs: Iterable[str] | None = None
) -> dict[str, Any]:
    """The checkpoint of a run folder.

    Parameters
    ----------
    run_dir : str or Path
    types : iterable of type
        The classes the state may hold instances of (the strategy's ``checkpoint_types``).
    attrs : iterable of str, optional
        The attributes the state must hold, no more and no fewer (the strategy's
        :meth:`~fedmf_app.federated.strategy.ViewFederationStrategy.checkpointed`): a checkpoint
        that another version of the strategy wrote is refused, naming what it lacks.

    Returns
    -------
    dict
        ``round``, ``broadcast``, ``state``.

    Raises
    ------
    FileNotFoundError
        Naming the file.
    CheckpointError
        When the file is not a checkpoint of this app, names a class outside ``types``, or does
        not hold ``attrs``.
    """
    path = Path(run_dir) / CHECKPOINT_FILE
    tree, arrays = _read_tree(path)
    decoder = _Decoder(arrays, types)
    try:
        broadcast = decoder.decode(tree["broadcast"])
        state = decoder.decode(tree["state"])
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: malformed checkpoint: {exc}") from exc
    if not isinstance(broadcast, list) or not isinstance(state, dict):
        raise CheckpointError(f"{path}: malformed checkpoint (broadcast or state)")
    if attrs is not None and set(state) != set(attrs):
        lacks, extra = sorted(set(attrs) - set(state)), sorted(set(state) - set(attrs))
        raise CheckpointError(
            f"{path}: the checkpoint lacks {lacks} and holds {extra} that this code's strategy "
            "does not keep: another version of the app wrote it, and this one cannot resume it"
        )
    return {"round": tree["round"], "broadcast": broadcast, "state": state}
