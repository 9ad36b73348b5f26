"""The blinding and intersection of fedmf_app.common.psi: commutative, on the curve, exact."""

import numpy as np
import pytest

from fedmf_app.common.psi import (
    POINT_BYTES,
    Blinder,
    aligned_order,
    blind_own_ids,
    common_positions,
    hash_to_point,
    pack,
    unpack,
)

P = 2**255 - 19


def _on_curve(point):
    u = int.from_bytes(point, "little")
    return u < P and pow((u**3 + 486662 * u * u + u) % P, (P - 1) // 2, P) == 1


def test_hashed_ids_lie_on_the_curve_not_its_twist_and_differ():
    points = [hash_to_point(f"id-{i}") for i in range(300)]
    assert all(len(x) == POINT_BYTES and _on_curve(x) for x in points)
    assert len(set(points)) == 300 and hash_to_point("id-7") == points[7]


def test_blinding_commutes_and_a_fully_blinded_point_depends_only_on_the_id():
    a, b, c = Blinder(), Blinder(), Blinder()
    x = [hash_to_point(str(i)) for i in range(20)]
    assert a.blind(b.blind(c.blind(x))) == c.blind(a.blind(b.blind(x))) == b.blind(c.blind(a.blind(x)))
    assert Blinder(a.secret).blind(x) == a.blind(x)
    assert not set(a.blind(x)) & set(x) and not set(a.blind(x)) & set(b.blind(x))
    assert all(_on_curve(y) for y in a.blind(x))  # stays on the curve: its prime-order subgroup


def test_the_intersection_of_blinded_sets_is_the_intersection_of_the_ids():
    rng = np.random.default_rng(0)
    universe = [f"s{i}" for i in range(200)]
    sets = [[universe[i] for i in rng.choice(200, size=120, replace=False)] for _ in range(3)]
    blinders = [Blinder() for _ in range(3)]
    full, orders = [], []
    for p, ids in enumerate(sets):
        points, order = blind_own_ids(ids, blinders[p])
        assert points == sorted(points) and sorted(order.tolist()) == list(range(120))
        for q in (1, 2):
            points = unpack(pack(blinders[(p + q) % 3].blind(points)))
        full.append(points)
        orders.append(order)
    positions = common_positions(full)
    expected = set(sets[0]) & set(sets[1]) & set(sets[2])
    for p in range(3):
        assert {sets[p][i] for i in orders[p][positions[p]]} == expected
        assert len(positions[p]) == len(expected)
    with pytest.raises(ValueError, match="repeat"):
        common_positions([full[0] + full[0][:1], full[1]])


def test_the_common_order_is_numeric_for_integer_ids_and_textual_otherwise():
    assert aligned_order(["10", "9", "-3", "100"]).tolist() == [2, 1, 0, 3]
    assert aligned_order(["b10", "b9", "a"]).tolist() == [2, 0, 1]
    assert aligned_order(["007", "7", "6"]).tolist() == [2, 0, 1]
