"""Data sets shipped with the package, so that a fresh offline machine can run a real-data job.

Flower ships an app to its SuperNodes as a FAB that holds only ``*.py *.toml *.md *.yaml *.json``
files (and at most 10 MB), so each data set is one compact ``<name>.json`` beside this module:
metadata (title, licence, attribution, views) and ``payload``, the base64 text of a compressed
``.npz`` archive (``numpy.savez_compressed``: each array deflated on its own) with arrays ``X_0,
X_1, ...`` (samples x features, stored in the smallest exact integer type or float32) and ``y``.
Deflate rather than LZMA: the file is read by every ClientApp process of a deployed run (one per
message), and the six HW views inflate in about 10 ms where LZMA took about 100 ms, for a file
about 10 % larger. It is found with :mod:`importlib.resources`, so
it reads the same from a FAB, a source checkout or an installed wheel.

=======  ==========================================================  ==========================
name     what                                                        licence
=======  ==========================================================  ==========================
``hw``   UCI Multiple Features (handwritten digits), 2000 samples,   CC BY 4.0 (Duin, UCI
         6 views (fac 216, fou 76, kar 64, mor 6, pix 240, zer 47),  Machine Learning
         10 classes                                                  Repository)
=======  ==========================================================  ==========================
"""

from __future__ import annotations

import base64
import io
import json
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from fedmf_app.data.assemble import MultiViewData, assemble_views
from fedmf_app.data.errors import DataError

__all__ = ["EMBEDDED", "embedded_metadata", "encode_payload", "load_embedded"]

#: Embedded data set name -> its JSON file beside this module.
EMBEDDED: dict[str, str] = {"hw": "hw.json"}


def encode_payload(arrays: dict[str, np.ndarray]) -> str:
    """The ``payload`` text of an embedded data set.

    Parameters
    ----------
    arrays : dict of ndarray
        ``X_0, X_1, ...`` (samples x features) and ``y``.

    Returns
    -------
    str
        Base64 of the compressed ``.npz`` archive.
    """
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return base64.b64encode(buffer.getvalue()).decode()


def _read_json(name: str) -> dict[str, Any]:
    if name not in EMBEDDED:
        raise DataError(f"no embedded data set {name!r} (embedded: {', '.join(sorted(EMBEDDED))})")
    try:
        text = resources.files(__package__).joinpath(EMBEDDED[name]).read_text()
    except (FileNotFoundError, OSError) as exc:
        raise DataError(
            f"embedded:{name}: the package file {EMBEDDED[name]} is missing ({exc}); reinstall the app"
        ) from exc
    return json.loads(text)


def embedded_metadata(name: str) -> dict[str, Any]:
    """Title, licence, attribution and views of an embedded data set (without its payload).

    Parameters
    ----------
    name : str

    Returns
    -------
    dict
    """
    return {k: v for k, v in _read_json(name).items() if k != "payload"}


@lru_cache(maxsize=2)
def load_embedded(name: str) -> MultiViewData:
    """Decode an embedded data set.

    Parameters
    ----------
    name : str
        A key of :data:`EMBEDDED`.

    Returns
    -------
    fedmf_app.data.assemble.MultiViewData
        ``source`` is ``"embedded:<name>"``.
    """
    meta = _read_json(name)
    with np.load(io.BytesIO(base64.b64decode(meta["payload"])), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    views = [(f"view {i} ({v['name']})", arrays[f"X_{i}"]) for i, v in enumerate(meta["views"])]
    names = tuple(v["name"] for v in meta["views"])
    return assemble_views(views, ("y", arrays["y"]), name, f"embedded:{name}", view_names=names)
