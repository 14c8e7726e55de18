"""NaN-aware equality (issue #31 item 7): two loads of a config whose members are NaN compare equal
by value, whatever the identity of their NaN objects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.market.testing.equality import same


@dataclass(frozen=True)
class _H:
    text: str
    paper: float
    x: tuple[float, ...] = ()


def test_same_compares_nan_members_by_value_not_identity() -> None:
    a, b = float("nan"), float("nan")
    assert a is not b
    assert (_H("t", a),) != (_H("t", b),)  # what tuple / dataclass equality does: identity, then ==
    assert same((_H("t", a),), (_H("t", b),))
    assert same({"k": [1.0, a]}, {"k": [1.0, b]}) and same(np.array([1.0, a]), np.array([1.0, b]))
    assert not same(_H("t", a), _H("t", 1.0)) and not same(_H("t", 1.0, (a,)), _H("t", 1.0, (2.0,)))
    assert not same([1.0], (1.0,)) and not same({"k": 1.0}, {"j": 1.0}) and not same(np.zeros(2), np.zeros(3))
