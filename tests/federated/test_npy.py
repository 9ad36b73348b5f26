"""Arrays travel as the same ``.npy`` bytes Flower's own conversions write, built with one copy."""

import numpy as np
import pytest
from flwr.common import Array, ndarrays_to_parameters, parameters_to_ndarrays

from fedmf_app.federated.npy import array_record, npy_bytes, to_parameters

RNG = np.random.default_rng(0)
BASE = RNG.standard_normal((7, 11))
CASES = {
    "C": BASE,
    "Fortran": np.asfortranarray(BASE),
    "strided": BASE[:, ::2],
    "transposed": BASE.T,
    "3-d Fortran": np.asfortranarray(RNG.standard_normal((3, 4, 5))),
    "0-d": np.array(2.5),
    "int64": np.arange(5),
    "int32 3-d": RNG.integers(0, 9, (4, 5, 6)).astype(np.int32),
    "bool": np.ones(3, dtype=bool),
    "empty": np.zeros((0, 3)),
    "empty uint64": np.array([], dtype=np.uint64),
    "wide": RNG.standard_normal((15, 20000)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_bytes_are_flowers_and_read_back_exactly(name):
    a = CASES[name]
    assert npy_bytes(a) == Array(a).data == ndarrays_to_parameters([a]).tensors[0]
    got, flowers = array_record({"x": a})["x"], Array(a)
    assert (got.dtype, got.shape, got.stype) == (flowers.dtype, flowers.shape, flowers.stype)
    back = got.numpy()
    assert back.dtype == a.dtype and np.array_equal(back, a)
    assert back.flags.f_contiguous == flowers.numpy().flags.f_contiguous  # the same layout
    (decoded,) = parameters_to_ndarrays(to_parameters([a]))
    assert decoded.dtype == a.dtype and np.array_equal(decoded, a)


def test_object_arrays_are_refused():
    with pytest.raises(ValueError, match="object"):
        npy_bytes(np.array([{}, None], dtype=object))
