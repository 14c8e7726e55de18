"""The example plugin's own tests, written with marketsim's pytest plugin (the `incentive` fixture)
and hypothesis strategies, the way an external package would test its mechanism."""

import numpy as np
import pytest
from hypothesis import given, settings

from marketsim.market.registry import get
from marketsim.market.testing.strategies import fair_share_instances


def test_hand_allocation():
    # W = [[1, 2], [1, 5]], one GPU per type: type 0 split 1:1, type 1 split 2:5
    X = get("proportional-share").fn([[1, 2], [1, 5]], [1, 1]).X
    assert np.allclose(X, [[0.5, 2 / 7], [0.5, 5 / 7]])


def test_inflating_pays(incentive):
    # tenant 0 reports 2x on the fast GPU: its share grows from 2/7 to 4/9 (hand computation)
    with pytest.raises(incentive.IncentiveViolation) as err:
        incentive.assert_strategyproof("proportional-share", [([[1, 2], [1, 5]], [1, 1])], agents=[0])
    assert err.value.witness["gain"] > 2 * (4 / 9 - 2 / 7) - 1e-9


@settings(max_examples=25, deadline=None, database=None)
@given(fair_share_instances(tenants=(1, 4), gpu_types=(1, 3)))
def test_work_conserving(instance):
    X = get("proportional-share").fn(instance.W, instance.m).X
    assert np.allclose(X.sum(axis=0), instance.m)


@settings(max_examples=25, deadline=None, database=None)
@given(fair_share_instances(tenants=(2, 4), gpu_types=(2, 3)))
def test_not_envy_free_but_the_witness_is_real(incentive, instance):
    # proportional share is NOT envy-free in general; when the assertion fails, its witness must
    # be a genuine envy: the envier values the other bundle more than its own, under TRUE speedups
    try:
        incentive.assert_envy_free("proportional-share", [instance])
    except incentive.IncentiveViolation as e:
        W = instance.W / instance.W[:, :1]
        X = get("proportional-share").fn(instance.W, instance.m).X
        l, i = int(e.agent), e.witness["envies"]
        assert W[l] @ X[i] - W[l] @ X[l] == pytest.approx(e.witness["envy"], rel=1e-6)
