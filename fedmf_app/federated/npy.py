"""Arrays as Flower carries them (``.npy`` bytes), built with one copy (no math here).

Flower's ``Array(ndarray)`` and ``ndarrays_to_parameters`` write ``np.save``'s format into a
growing ``BytesIO``; for an ``r x n`` array at large ``n`` each growth step is a new allocation
whose pages the kernel must map, which took 10-15 ms per 12 MB array here against about 1 ms for
one copy into a buffer of the final size. :func:`npy_bytes` gives the same bytes as ``np.save``
(header and data, C or Fortran order as ``np.save`` chooses) with that one copy.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
from flwr.common import Array, ArrayRecord, Parameters

__all__ = ["array_record", "npy_bytes", "to_parameters"]


def npy_bytes(array: np.ndarray) -> bytes:
    """``np.save(buffer, array, allow_pickle=False)``'s bytes, built with one copy of the data.

    Parameters
    ----------
    array : ndarray
        Numeric (no object dtype).

    Returns
    -------
    bytes
    """
    array = np.asanyarray(array)
    header = np.lib.format.header_data_from_array_1_0(array)
    if array.dtype.hasobject:
        raise ValueError("npy_bytes: object arrays are not allowed")
    buffer = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buffer, header)
    except ValueError:  # a header too long for format 1.0: let numpy choose
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        return buffer.getvalue()
    if header["fortran_order"]:
        data = array.T  # C-contiguous, its bytes in the array's Fortran order
    else:
        data = np.ascontiguousarray(array)
    return b"".join((buffer.getvalue(), memoryview(data.reshape(-1).view(np.uint8))))


def to_parameters(arrays: Sequence[np.ndarray]) -> Parameters:
    """``ndarrays_to_parameters(arrays)``, each array serialised by :func:`npy_bytes`."""
    return Parameters(tensors=[npy_bytes(a) for a in arrays], tensor_type="numpy.ndarray")


def array_record(arrays: Mapping[str, np.ndarray]) -> ArrayRecord:
    """``ArrayRecord({k: Array(v)})`` with each array serialised by :func:`npy_bytes`."""
    return ArrayRecord({key: _array(np.asanyarray(a)) for key, a in arrays.items()})


def _array(a: np.ndarray) -> Array:
    """``Array(a)``, its data serialised by :func:`npy_bytes`."""
    return Array(dtype=str(a.dtype), shape=tuple(a.shape), stype="numpy.ndarray", data=npy_bytes(a))
