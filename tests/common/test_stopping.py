"""The stop rules: relative changes of a history (plateau), or measured changes (settled), against a
tolerance, with a patience."""

import math

import numpy as np

from fedmf_app.common.stopping import plateau, relative_changes, settled


def test_a_geometric_decrease_stops_once_its_steps_fall_below_the_tolerance():
    # F_t = 1 + 0.5^t: relative change about 0.5^t / (1 + 0.5^(t-1)), falling below 1e-3 at t = 11
    values = [1 + 0.5**t for t in range(30)]
    first = next(t for t in range(1, 30) if plateau(values[: t + 1], 1e-3, 3))
    changes = np.abs(np.diff(values)) / np.abs(values[:-1])
    below = changes <= 1e-3
    # the first round where three consecutive changes are below the tolerance
    expected = next(t for t in range(3, 30) if below[t - 3 : t].all())
    assert first == expected


def test_one_flat_round_between_moving_ones_does_not_stop():
    values = [10.0, 5.0, 5.0, 2.0, 1.0]
    assert plateau(values[:3], 1e-3, 1)  # one flat change suffices at patience 1
    assert not any(plateau(values[: t + 1], 1e-3, 2) for t in range(len(values)))


def test_too_short_a_history_or_a_non_positive_tolerance_never_stops():
    assert not plateau([1.0, 1.0, 1.0], 1e-3, 3)
    assert plateau([1.0, 1.0, 1.0, 1.0], 1e-3, 3)
    assert not plateau([1.0, 1.0, 1.0, 1.0], 0.0, 3)


def test_non_finite_values_never_stop():
    assert plateau([math.nan, 1.0, 1.0, 1.0], 1e-3, 2)  # the NaN is outside the last 3 values
    assert not plateau([math.nan, 1.0, 1.0, 1.0], 1e-3, 3)
    assert not plateau([1.0, 1.0, math.inf, math.inf], 1e-3, 2)
    assert not plateau([math.nan] * 5, 1e-3, 3)


def test_relative_changes_are_against_the_round_before():
    assert relative_changes([2.0, 1.0, 1.5, 1.5]).tolist() == [0.5, 0.5, 0.0]
    assert relative_changes([0.0, 1.0])[0] > 1e300  # a zero value divides by the smallest float


def test_settled_needs_the_last_patience_changes_all_within_the_tolerance():
    changes = [None, 0.02, 0.002, 0.001, 0.0, 0.0]
    stops = [t for t in range(1, len(changes) + 1) if settled(changes[:t], 2e-3, 3)]
    assert stops == [5, 6]  # the first window of three changes <= 2e-3 ends with the fifth value
    assert [t for t in range(1, 7) if settled(changes[:t], 1e-3, 3)] == [6]
    assert settled([0.5], 0.5, 1) and not settled([0.5 + 1e-12], 0.5, 1)


def test_settled_never_counts_a_round_without_a_change_or_a_non_positive_tolerance():
    assert not settled([0.0, None, 0.0], 1e-3, 2)  # the None is inside the last two
    assert settled([None, 0.0, 0.0], 1e-3, 2)
    assert not settled([0.0, 0.0, 0.0], 0.0, 3)
    assert not settled([0.0, 0.0], 1e-3, 3)  # fewer changes than the patience
    assert not settled([0.0, math.nan, 0.0], 1e-3, 3)
