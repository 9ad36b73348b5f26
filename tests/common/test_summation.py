"""Adding arrays up in order: np.sum over their stack, to the last bit, without the stack."""

import numpy as np
import pytest

from fedmf_app.common.summation import add_up, add_up_scalars


@pytest.mark.parametrize("m", [1, 2, 3, 7, 8, 9, 17])
def test_the_sum_is_np_sums_over_the_stack_bit_for_bit(m):
    rng = np.random.default_rng(m)
    arrays = [rng.standard_normal((31, 5)) * 10.0 ** rng.integers(-4, 5) for _ in range(m)]
    total = add_up(arrays)
    assert np.array_equal(total, np.sum(np.stack(arrays), axis=0))
    assert np.array_equal(total / m, np.mean(arrays, axis=0))
    assert not any(np.shares_memory(total, a) for a in arrays)  # a new array, inputs untouched
    values = [float(rng.standard_normal()) * 10.0 ** rng.integers(-4, 5) for _ in range(m)]
    assert add_up_scalars(values) / m == float(np.mean(values))  # also with eight or more (pairwise)


def test_mixed_dtypes_sum_in_their_common_dtype():
    total = add_up([np.ones(3, np.float32), np.full(3, 2.0)])
    assert total.dtype == np.float64 and np.array_equal(total, [3.0, 3.0, 3.0])
