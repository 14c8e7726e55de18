"""Income division (market/income.py): Eq. (2), equal split, Shapley exact and sampled; budget balance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_astraea_fixtures import toy_cluster, toy_jobs, toy_params
from test_astraea_invariants import micro_instance, micro_params

from marketsim.market.astraea import run_astraea
from marketsim.market.astraea.accounting import divide_incomes
from marketsim.market.errors import InputError
from marketsim.market.income import (
    balance,
    capacity_game_values,
    equal_split,
    gain_as_you_contribute,
    shapley_exact,
    shapley_sampled,
    shapley_sharing,
)


def _tol(x: float) -> float:
    return 1e-9 * max(1.0, abs(x))


def test_gain_as_you_contribute_hand_computed() -> None:
    # 2 slots, 3 tenants: slot 1 unused (1, 3, 0) cost 8 -> (2, 6, 0); slot 2 unused (2, 2, 4) cost 4 -> (1, 1, 2)
    inc = gain_as_you_contribute([[1, 2], [3, 2], [0, 4]], [8, 4])
    assert inc.tolist() == [pytest.approx(3), pytest.approx(7), pytest.approx(2)]
    assert math.fsum(inc) == 12
    # a tenant with zero unused quota receives nothing
    assert gain_as_you_contribute([0, 5], [3])[0] == 0


@st.composite
def _division_case(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    U = draw(st.integers(1, 8))
    T = draw(st.integers(1, 12))
    unused = np.array(draw(st.lists(st.integers(0, 40), min_size=U * T, max_size=U * T))).reshape(U, T)
    unused[draw(st.integers(0, U - 1)), :] += 1  # a(t) > 0
    cost = np.array(draw(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=T, max_size=T)))
    return unused, cost


@settings(max_examples=150, deadline=None)
@given(_division_case())
def test_eq2_budget_balance(case: tuple[np.ndarray, np.ndarray]) -> None:
    unused, cost = case
    inc = gain_as_you_contribute(unused, cost)
    total = math.fsum(cost.tolist())
    assert abs(math.fsum(inc.tolist()) - total) <= _tol(total)
    assert (inc >= -_tol(total)).all()
    # proportionality per slot (claim 10): ρ^u(t)/c(t) = unused^u(t)/a(t)
    for t in range(unused.shape[1]):
        one = gain_as_you_contribute(unused[:, t], [cost[t]], exact_balance=False)
        assert np.allclose(one, unused[:, t] / unused[:, t].sum() * cost[t], rtol=1e-12, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1e6, allow_nan=False), st.integers(1, 20), st.data())
def test_equal_split_budget_balance(payment: float, n: int, data: st.DataObject) -> None:
    members = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    members[data.draw(st.integers(0, n - 1))] = True
    out = equal_split(payment, n, members)
    assert abs(math.fsum(out.tolist()) - payment) <= _tol(payment)
    assert (out[~members] == 0).all()


@settings(max_examples=60, deadline=None)
@given(_division_case())
def test_shapley_exact_budget_balance_and_symmetry(case: tuple[np.ndarray, np.ndarray]) -> None:
    unused, cost = case
    demand = np.minimum(unused.sum(axis=0), 3).astype(float)
    price = cost / np.maximum(demand, 1)
    phi = shapley_sharing(unused, demand, price, method="exact")
    total = math.fsum((price * demand).tolist())
    assert abs(math.fsum(phi.tolist()) - total) <= _tol(total)
    assert (phi >= -_tol(total)).all()
    # null player: no unused quota at all -> nothing
    for u in np.flatnonzero(unused.sum(axis=1) == 0):
        assert abs(phi[u]) <= _tol(total)


def test_shapley_exact_known_game() -> None:
    # glove-like game: demand 2 in one slot; tenant A has 2 units, B and C 1 each, price 1
    phi = shapley_sharing([[2], [1], [1]], [2], [1], method="exact")
    # v: A=2, B=1, C=1, AB=2, AC=2, BC=2, ABC=2 -> φ_A = 2/3·... computed by enumeration
    expect = shapley_exact(
        lambda m: capacity_game_values(m, np.array([[2.0], [1.0], [1.0]]), np.array([2.0]), np.ones(1)), 3
    )
    assert phi.tolist() == pytest.approx(expect.tolist())
    assert phi.tolist() == pytest.approx([1.0, 0.5, 0.5])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shapley_sampled_agrees_with_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    U, T = 6, 5
    unused = rng.integers(0, 6, size=(U, T)).astype(float)
    unused[0] += 1
    demand = np.minimum(unused.sum(axis=0), rng.integers(1, 10, size=T)).astype(float)
    price = rng.uniform(0.5, 3.0, size=T)

    def game(m: np.ndarray) -> np.ndarray:
        return capacity_game_values(m, unused, demand, price)

    exact = shapley_exact(game, U)
    est = shapley_sampled(game, U, 4000, np.random.default_rng(seed + 100))
    assert abs(est.values.sum() - exact.sum()) <= 1e-9 * max(1, exact.sum())  # balanced by construction
    z = np.abs(est.values - exact) / np.maximum(est.std_error, 1e-12)
    assert (z <= 4.5).all(), (est.values, exact, est.std_error)
    # the same seed gives the same estimate
    again = shapley_sampled(game, U, 4000, np.random.default_rng(seed + 100))
    assert np.array_equal(again.values, est.values)


def test_shapley_sampled_many_tenants_balanced() -> None:
    rng = np.random.default_rng(7)
    unused = rng.integers(0, 4, size=(20, 6)).astype(float) + 1
    demand = np.full(6, 5.0)
    price = np.full(6, 2.0)
    phi = shapley_sharing(unused, demand, price, method="auto", n_samples=300, rng=np.random.default_rng(1))
    assert abs(math.fsum(phi.tolist()) - 60.0) <= 1e-9 * 60


def test_balance_exact_residual() -> None:
    shares = np.array([0.1, 0.2, 0.3])
    out = balance(shares, 0.6)
    assert math.fsum(out.tolist()) == 0.6


def test_income_bad_inputs() -> None:
    with pytest.raises(InputError, match="unused"):
        gain_as_you_contribute([[-1, 2]], [1, 1])
    with pytest.raises(InputError, match="a\\(t\\) = 0"):
        gain_as_you_contribute([[0], [0]], [5])
    with pytest.raises(InputError, match="cost"):
        gain_as_you_contribute([[1, 2]], [1, float("nan")])
    with pytest.raises(InputError, match="cost"):
        gain_as_you_contribute([[1, 2]], [1, 2, 3])
    with pytest.raises(InputError, match="unused"):
        gain_as_you_contribute(np.zeros((0, 3)), [1, 2, 3])
    with pytest.raises(InputError, match="payment"):
        equal_split(-1.0, 3)
    with pytest.raises(InputError, match="n_tenants"):
        equal_split(1.0, 0)
    with pytest.raises(InputError, match="members"):
        equal_split(1.0, 2, [False, False])
    with pytest.raises(InputError, match="rng"):
        shapley_sharing(np.ones((14, 2)), [1, 1], [1, 1], method="sampled")
    with pytest.raises(InputError, match="n_players"):
        shapley_exact(lambda m: m.sum(1), 13)
    with pytest.raises(InputError, match="demand"):
        shapley_sharing([[1], [1]], [5], [1])
    with pytest.raises(InputError, match="method"):
        shapley_sharing([[1], [1]], [1], [1], method="magic")


# division of an Astraea run's payments -----------------------------------------------------------
def test_divide_incomes_on_toy() -> None:
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed"))
    # symmetric snapshots: worker games (2,4)/(4,2) with demand 3 give (1,2)/(2,1) per slot; PS games 1/2 each
    for rule in ("eq2", "equal", "shapley"):
        assert divide_incomes(r, rule).tolist() == [pytest.approx(8), pytest.approx(8)]
    with pytest.raises(InputError, match="rule"):
        divide_incomes(r, "nash")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_divide_incomes_budget_balance_random_runs(seed: int) -> None:
    cl, jobs = micro_instance(seed)
    r = run_astraea(cl, jobs, micro_params(seed, pass2_charge="full_eq2"))
    pay = math.fsum(r.payments().tolist())
    for rule in ("eq2", "equal", "shapley"):
        inc = divide_incomes(r, rule)
        assert abs(math.fsum(inc.tolist()) - pay) <= _tol(pay)
        assert (inc >= -_tol(pay)).all()


def test_balance_residual_never_goes_to_ineligible_tenants() -> None:
    out = equal_split(5e-324, 3, [False, True, False])  # the share underflows to 0: residual to the member
    assert out.tolist() == [0.0, 5e-324, 0.0]
    assert gain_as_you_contribute([[0], [0]], [0]).tolist() == [0.0, 0.0]
    with pytest.raises(InputError, match="eligible"):
        balance(np.ones(2), 3.0, [False, False])


def test_shapley_hand_computed_two_and_three_tenants() -> None:
    # 2 tenants, unused (4, 1), demand 2 at price 1: v(1) = 2, v(2) = 1, v(12) = 2 -> φ = (1.5, 0.5);
    # Eq. (2) pays by unused share (1.6, 0.4), equal split (1, 1)
    assert shapley_sharing([[4], [1]], [2], [1]).tolist() == [pytest.approx(1.5), pytest.approx(0.5)]
    assert gain_as_you_contribute([[4], [1]], [2]).tolist() == [pytest.approx(1.6), pytest.approx(0.4)]
    assert equal_split(2.0, 2).tolist() == [1.0, 1.0]
    # 3 tenants, unused (2, 2, 1), demand 3: every pair covers it -> φ = (7/6, 7/6, 2/3)
    phi = shapley_sharing([[2], [2], [1]], [3], [1], method="exact")
    assert phi.tolist() == [pytest.approx(7 / 6), pytest.approx(7 / 6), pytest.approx(2 / 3)]
    # efficiency: Σφ = v(N) = the payment
    assert math.fsum(phi.tolist()) == pytest.approx(3.0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_shapley_symmetry_of_identical_contributors(seed: int) -> None:
    rng = np.random.default_rng(seed)
    U, T = 5, 4
    unused = rng.integers(0, 5, size=(U, T)).astype(float)
    unused[3] = unused[1]  # tenants 1 and 3 contribute identically in every slot
    unused[0] += 1
    demand = np.minimum(unused.sum(axis=0), 4.0)
    price = rng.uniform(0.5, 2.0, size=T)
    phi = shapley_sharing(unused, demand, price, method="exact")
    assert phi[1] == pytest.approx(phi[3], rel=1e-12, abs=1e-12)
    est = shapley_sharing(unused, demand, price, method="sampled", n_samples=3000, rng=np.random.default_rng(seed))
    assert math.fsum(est.tolist()) == pytest.approx(math.fsum((price * demand).tolist()), rel=1e-12)


def test_market_income_division_comparison() -> None:
    from marketsim.market.astraea.market import make_market
    from marketsim.market.auction.market import run_market

    m = make_market({"workload": "toy", "horizon": 16, "worker_count_mode": "fixed"}, np.random.default_rng(0))
    decs = run_market(m, "astraea")
    for rule in ("eq2", "equal", "shapley"):
        assert m.income_division(decs, rule).tolist() == [pytest.approx(8), pytest.approx(8)]
    rows = m.tenant_rows(decs, m.bids())
    assert [r["income_shapley"] for r in rows] == [pytest.approx(8), pytest.approx(8)]
    for seed in range(4):
        mm = make_market({"workload": "micro", "jobs": 7, "servers": 4, "tenants": 3}, np.random.default_rng(seed))
        d = run_market(mm, "astraea")
        pay = math.fsum(x.payment for x in d)
        for rule in ("eq2", "equal", "shapley"):
            assert math.fsum(mm.income_division(d, rule).tolist()) == pytest.approx(pay, abs=1e-9)
