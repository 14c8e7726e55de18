"""ES equilibrium learning in Bayesian sealed-bid auctions (issues #11, #19).

Known equilibria (i.i.d. values unless said otherwise; Krishna, *Auction Theory*, ch. 2–4):

* first price, U[0,1], n bidders: b(v) = (n-1)/n v, revenue (n-1)/(n+1);
* first price, F(v) = v^2, n = 2: b(v) = v - int_0^v x^2 dx / v^2 = 2v/3, revenue 2 E[b(V)] = 8/15;
* all-pay, U[0,1], n = 2: b(v) = int_0^v x dx = v^2/2, revenue 1/3;
* first price, U[0,1], n = 2, reserve r: b(v) = v - int_r^v x dx / v = (v^2 + r^2) / (2v) for v >= r,
  revenue (1 - r^3)/3 + r^2 (1 - r) (= 0.38733 at r = 0.3);
* second price: truthful under every distribution;
* asymmetric first price, U[0,1] vs U[0,2] (see the solver test for the closed form).

The learner starts truthful and sees only simulated TRUE utilities. The multi-seed checks are the
issue's "must show" (mean over 5 seeds, L2 <= 0.02, revenue within 2%) and are slow; one fast
configuration of each kind stays in the default suite.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import numpy as np
import pytest

from marketsim.analysis.engine.stats import t_interval
from marketsim.market.audit.controls import first_price, posted_price, second_price
from marketsim.market.errors import InputError
from marketsim.market.learning import (
    BidFunction,
    batch_utilities,
    bne_first_price,
    expected_revenue,
    learn_bid_function,
)
from marketsim.market.learning.bayesian import exploitability, learn_bid_functions
from marketsim.market.learning.bne import asymmetric_first_price_bne, bne_reference, symmetric_bne
from marketsim.market.learning.distributions import make_distribution, uniform
from marketsim.market.learning.payments import PAYMENT_RULES, win_share

V = np.linspace(0.0, 1.0, 101)


# --- representation and utilities -------------------------------------------------------------


def test_bernstein_truthful_start_is_the_identity_on_the_value_range() -> None:
    v = np.linspace(0.5, 3, 31)
    assert np.allclose(BidFunction.truthful(5, 0.5, 3.0)(v), v)
    assert BidFunction.truthful(4).factor() == pytest.approx(1.0)
    # coef are the Bernstein coefficients on (v - low) / (high - low): a constant bid is a constant vector
    assert np.allclose(BidFunction(np.full(5, 0.7), 0.5, 3.0)(v), 0.7)


@pytest.mark.parametrize(
    ("name", "fn", "opts"),
    [("first-price", first_price, {}), ("second-price", second_price, {"reserve": 0.3}),
     ("first-price", first_price, {"reserve": 0.3}), ("posted-price", posted_price, {"price": 0.4})],
)  # fmt: skip
def test_batch_utilities_match_the_control_auctions(name, fn, opts) -> None:
    rng = np.random.default_rng(3)
    vals = rng.random((400, 3))
    bids = vals * rng.uniform(0.5, 1.5, vals.shape)  # continuous: no ties
    got = batch_utilities(name, bids[:, 0], bids[:, 1:], vals[:, 0], opts)
    want = []
    for b, v in zip(bids, vals, strict=True):
        out = fn(b, **opts)
        want.append(v[0] * out.won[0] - out.payments[0])
    assert np.allclose(got, want)


@pytest.mark.parametrize("mechanism", ["first-price", "second-price", "all-pay"])
def test_ties_are_broken_uniformly_at_random(mechanism: str) -> None:
    """Bidder 0 tied at the top with k opponents wins w.p. 1/(k+1): compare the rule's utility with
    the mean over random orderings of a lowest-index tie rule (an independent simulation)."""
    bids = np.array([0.5, 0.5, 0.5, 0.2])  # bidder 0 tied with two opponents
    value = 0.9
    got = float(batch_utilities(mechanism, bids[:1], bids[None, 1:], [value])[0])
    rng = np.random.default_rng(0)
    wins = []
    for _ in range(6000):
        order = rng.permutation(4)
        w = order[np.argmax(bids[order])]  # first of the tied in a random order
        wins.append(w == 0)
    p = np.mean(wins)
    assert p == pytest.approx(1 / 3, abs=0.02)
    pay = {"first-price": 0.5, "second-price": 0.5, "all-pay": None}[mechanism]
    want = value / 3 - 0.5 if pay is None else (value - pay) / 3
    assert got == pytest.approx(want)
    # a zero bid tied with a zero opponent: half the value in all-pay, not all of it (issue #19)
    assert float(batch_utilities("all-pay", [0.0], [[0.0]], [0.8])[0]) == pytest.approx(0.4)
    assert np.allclose(win_share(np.array([0.3, 0.5, 0.7]), np.array([0.5] * 3), np.array([1.0] * 3)), [0, 0.5, 1])


def test_all_pay_and_reserves_pay_what_the_rule_says() -> None:
    u = batch_utilities("all-pay", [0.3, 0.6, 0.2], [[0.4], [0.4], [0.1]], [1.0, 1.0, 1.0], {"reserve": 0.25})
    assert np.allclose(u, [-0.3, 0.4, 0.0])  # loser pays; winner pays; below the reserve: out, pays nothing
    rev = PAYMENT_RULES["all-pay"].revenue(np.array([[0.3, 0.6, 0.2]]), {"reserve": 0.25})
    assert rev[0] == pytest.approx(0.9)
    rev = PAYMENT_RULES["posted-price"].revenue(np.array([[0.3, 0.6, 0.5]]), {"price": 0.4, "reserve": 0.55})
    assert rev[0] == pytest.approx(0.55)


# --- value distributions ----------------------------------------------------------------------


def test_distributions_from_tables() -> None:
    u = make_distribution({"distribution": "uniform", "low": 1, "high": 3})
    assert u.cdf(2.5) == pytest.approx(0.75) and u.ppf(0.25) == pytest.approx(1.5)
    p = make_distribution({"distribution": "power", "a": 2})
    assert p.cdf(0.5) == pytest.approx(0.25) and p.ppf(0.25) == pytest.approx(0.5)
    assert p.mean() == pytest.approx(2 / 3, abs=1e-4)
    from scipy import stats

    e = make_distribution({"distribution": "expon", "scale": 0.5, "high": 1.0})  # truncated to [0, 1]
    mass = stats.expon(scale=0.5).cdf(1.0)
    for x in (0.1, 0.4, 0.9):
        assert e.cdf(x) == pytest.approx(stats.expon(scale=0.5).cdf(x) / mass)
        assert e.ppf(e.cdf(x)) == pytest.approx(x, abs=1e-3)  # tabulated inverse
    b = make_distribution({"distribution": "beta", "a": 2, "b": 5})
    assert (b.low, b.high) == (0.0, 1.0)
    draws = b.sample(np.random.default_rng(0), 200_000)
    assert draws.mean() == pytest.approx(2 / 7, abs=3e-3)


@pytest.mark.parametrize(
    ("spec", "field"),
    [({"distribution": "nope"}, "values.distribution"), ({"distribution": "uniform", "hi": 2}, "values.hi"),
     ({"distribution": "uniform", "low": 2, "high": 1}, "values.high"),
     ({"distribution": "uniform", "low": -1}, "values.low"),
     ({"distribution": "power"}, "values.a"), ({"distribution": "power", "a": -1}, "values.a"),
     ({"distribution": "power", "a": 2, "high": 3}, "values.high"),
     ({"distribution": "beta", "a": 2}, "values.b"), ({"distribution": "beta", "a": -2, "b": 1}, "values"),
     ({"distribution": "expon"}, "values.high"), ({"distribution": "norm", "scale": 0}, "values.scale"),
     ({"distribution": "poisson", "mu": 2}, "values.distribution"),
     ({"distribution": "expon", "loc": 5, "high": 1}, "values.high"),
     ({"distribution": "norm", "loc": 50, "high": 1}, "values"), ("uniform", "values")],
)  # fmt: skip
def test_bad_distributions_name_the_field(spec, field: str) -> None:
    with pytest.raises(InputError) as err:
        make_distribution(spec)
    assert err.value.field == field


# --- BNE references ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_symmetric_first_price_bne_by_quadrature_uniform(n: int) -> None:
    ref = symmetric_bne("first-price", uniform(), n)
    assert np.allclose(ref.bids[0](V), (n - 1) / n * V, atol=1e-9)
    assert ref.revenue == pytest.approx((n - 1) / (n + 1), abs=1e-6)


def test_symmetric_bne_closed_forms() -> None:
    power2 = make_distribution({"distribution": "power", "a": 2})
    ref = symmetric_bne("first-price", power2, 2)
    assert np.allclose(ref.bids[0](V), 2 * V / 3, atol=1e-9) and ref.revenue == pytest.approx(8 / 15, abs=1e-6)
    ref = symmetric_bne("all-pay", uniform(), 2)
    assert np.allclose(ref.bids[0](V), V**2 / 2, atol=1e-7) and ref.revenue == pytest.approx(1 / 3, abs=1e-6)
    r = 0.3
    ref = symmetric_bne("first-price", uniform(), 2, {"reserve": r})
    above = V[V >= r]
    assert np.allclose(ref.bids[0](above), (above**2 + r**2) / (2 * above), atol=1e-9)
    assert np.isnan(ref.bids[0](np.array([0.1]))).all() and ref.screening == (r,)
    assert ref.revenue == pytest.approx((1 - r**3) / 3 + r**2 * (1 - r), abs=1e-6)  # 0.38733, not 1/3
    # all-pay with a reserve screens at v* G(v*) = r: v* = sqrt(r) for two U[0,1] bidders
    assert symmetric_bne("all-pay", uniform(), 2, {"reserve": 0.09}).screening[0] == pytest.approx(0.3)


@pytest.mark.parametrize(
    "spec", [{"distribution": "beta", "a": 2, "b": 5}, {"distribution": "power", "a": 0.5},
             {"distribution": "uniform", "low": 1, "high": 2}],
)  # fmt: skip
def test_revenue_equivalence_and_monte_carlo_agree_with_the_quadrature(spec) -> None:
    """First price, second price and all-pay have equal BNE revenue; the quadrature equals a Monte
    Carlo of the equilibrium bids (a wrong m(v), G or screening breaks one of them)."""
    d = make_distribution(spec)
    revs = {m: symmetric_bne(m, d, 3, {"reserve": d.low + 0.1 * (d.high - d.low)}) for m in
            ("first-price", "second-price", "all-pay")}  # fmt: skip
    base = revs["second-price"].revenue
    assert revs["first-price"].revenue == pytest.approx(base, rel=1e-4)
    rng = np.random.default_rng(1)
    vals = d.sample(rng, (400_000, 3))
    for m, ref in revs.items():
        bids = np.nan_to_num(ref.bids[0](vals), nan=0.0)  # types below screening do not take part
        mc = PAYMENT_RULES[m].revenue(bids, {"reserve": d.low + 0.1 * (d.high - d.low)}).mean()
        assert mc == pytest.approx(ref.revenue, rel=5e-3), m


def test_asymmetric_solver_matches_the_closed_form_for_uniform_0_1_vs_0_2() -> None:
    """Two bidders, V1 ~ U[0, w1], V2 ~ U[0, w2] (Krishna, Auction Theory, sec. 4.3). The first-order
    conditions for the inverse bids phi_i(b) are phi_2'(b) / phi_2(b) = 1 / (phi_1(b) - b) and
    phi_1'(b) / phi_1(b) = 1 / (phi_2(b) - b) (uniform: F_i = phi / w_i). Try phi_i = 2b / (1 + k_i b^2):
    phi_i - b = b (1 - k_i b^2) / (1 + k_i b^2) and phi_i' / phi_i = (1 - k_i b^2) / (b (1 + k_i b^2)),
    so the two conditions hold iff k_2 = -k_1. The boundary phi_i(b_bar) = w_i gives
    k_i = 2 / (w_i b_bar) - 1 / b_bar^2 and, adding both, b_bar = w1 w2 / (w1 + w2), k_1 = 1/w1^2 - 1/w2^2.
    With w1 = 1, w2 = 2: b_bar = 2/3, k_1 = 3/4, and inverting phi_i(b) = v,
    b_1(v) = 4 (1 - sqrt(1 - 3v^2/4)) / (3v), b_2(v) = 4 (sqrt(1 + 3v^2/4) - 1) / (3v)."""
    ref = asymmetric_first_price_bne([uniform(0, 1), uniform(0, 2)], [1, 1])
    assert ref.top_bid == pytest.approx(2 / 3, abs=1e-7)
    v1, v2 = np.linspace(0.01, 1, 100), np.linspace(0.01, 2, 100)
    b1 = 4 * (1 - np.sqrt(1 - 0.75 * v1**2)) / (3 * v1)
    b2 = 4 * (np.sqrt(1 + 0.75 * v2**2) - 1) / (3 * v2)
    assert np.allclose(ref.bids[0](v1), b1, atol=1e-6) and np.allclose(ref.bids[1](v2), b2, atol=1e-6)
    # revenue: Monte Carlo of the closed-form bids
    rng = np.random.default_rng(2)
    x1, x2 = rng.random(1_000_000), 2 * rng.random(1_000_000)
    mc = np.maximum(4 * (1 - np.sqrt(1 - 0.75 * x1**2)) / (3 * x1), 4 * (np.sqrt(1 + 0.75 * x2**2) - 1) / (3 * x2))
    assert ref.revenue == pytest.approx(mc.mean(), rel=2e-3)
    # the weak bidder bids more aggressively at equal values (Krishna, Prop. 4.4)
    assert (ref.bids[0](v1) > ref.bids[1](v1)).all()


def test_asymmetric_solver_reduces_to_the_symmetric_bne() -> None:
    a = asymmetric_first_price_bne([uniform(), uniform()], [1, 2])
    s = symmetric_bne("first-price", uniform(), 3)
    # shooting leaves its largest error at the singular bottom end (b -> 0): 1e-5 at v = 0.01
    assert np.allclose(a.bids[0](V[1:]), s.bids[0](V[1:]), atol=1e-5)
    assert np.allclose(a.bids[1](V[1:]), s.bids[0](V[1:]), atol=1e-5)
    assert a.revenue == pytest.approx(0.5, abs=1e-5)
    r = asymmetric_first_price_bne([uniform(), uniform()], [1, 1], reserve=0.3)
    assert r.revenue == pytest.approx(0.38733, abs=1e-4)


def test_bne_reference_input_errors() -> None:
    with pytest.raises(InputError) as err:
        symmetric_bne("first-price", uniform(), 2, {"reserve": 1.5})
    assert err.value.field == "options.reserve"
    with pytest.raises(InputError) as err:
        symmetric_bne("first-price", uniform(), 2, {"reserv": 0.3})
    assert err.value.field == "options.reserv"
    with pytest.raises(InputError) as err:
        asymmetric_first_price_bne([uniform(0, 1), uniform(0.5, 2)], [1, 1])
    assert err.value.field == "classes.values.low"
    assert bne_reference("all-pay", [uniform(), uniform(0, 2)], [1, 1]) is None  # not computed, not faked


# --- learning: fast single configurations --------------------------------------------------------


def _gap(mech, res, ref, opts=None) -> tuple[float, float]:
    l2 = max(b.l2_distance(f, d) for b, f, d in zip(res.bids, ref.bids, res.values, strict=True))
    rev = expected_revenue(mech, list(res.bids), list(res.counts), values=list(res.values), options=opts)
    return l2, rev / ref.revenue - 1.0


def test_first_price_learner_reaches_the_bne_n2() -> None:
    res = learn_bid_function("first-price", 2, seed=0)
    assert res.bid.l2_distance(bne_first_price(2)) <= 0.02
    assert expected_revenue("first-price", res.bid, 2) == pytest.approx(1 / 3, rel=0.02)
    # it really moved: the truthful start is 1/2 * E[v] away
    assert BidFunction.truthful().l2_distance(bne_first_price(2)) > 0.25
    # the history is recorded after each step: round 0 is one step (lr 1 by default) from truthful
    assert res.history["factor"].iloc[0] > 0.9 and res.history["factor"].iloc[-1] < 0.6


@pytest.mark.slow  # about 15-25 s: CI's slow step (the default suite's 10-minute budget)
def test_all_pay_learner_does_not_collapse_with_random_ties() -> None:
    """Issue #19: with ties to the learner the all-pay learner collapsed (L2 0.18, revenue 0.054).
    The free family it was written for (tie handling does not depend on the family); the default
    family's all-pay n = 2 rows, revenue above the BNE's, are in benchmarks/results/bayesian.md."""
    res = learn_bid_function("all-pay", 2, seed=0, shape="free")
    ref = symmetric_bne("all-pay", uniform(), 2)
    l2, gap = _gap("all-pay", res, ref)
    assert l2 <= 0.02 and abs(gap) <= 0.05


@pytest.mark.parametrize(
    "values",
    [None, {"distribution": "uniform", "low": 0.5, "high": 2.0}, {"distribution": "power", "a": 0.5},
     {"distribution": "power", "a": 3}, {"distribution": "beta", "a": 2, "b": 5},
     {"distribution": "lognorm", "s": 0.5, "high": 3.0}],
)  # fmt: skip
def test_second_price_stays_truthful_under_every_distribution(values) -> None:
    res = learn_bid_function("second-price", 3, values=values, seed=2, rounds=200, batch=1 << 13)
    d = make_distribution(values)
    assert res.bid.l2_distance(lambda v: v, d) <= 0.02 * (d.high - d.low)
    assert res.bid.factor(d) == pytest.approx(1.0, abs=0.02)


def test_second_price_stays_truthful_with_asymmetric_classes() -> None:
    res = learn_bid_functions("second-price", [1, 2], values=[None, {"distribution": "uniform", "high": 2}],
                              seed=3, rounds=200, batch=1 << 13)  # fmt: skip
    for b in res.bids:
        assert b.l2_distance(lambda v: v) <= 0.02 * b.high


def test_posted_price_keeps_learners_truthful() -> None:
    res = learn_bid_function("posted-price", 3, seed=2, options={"price": 0.4}, rounds=300)
    assert res.bid.factor() == pytest.approx(1.0, abs=0.02)


@pytest.mark.slow  # about 15-25 s: CI's slow step (the default suite's 10-minute budget)
def test_a_manipulable_start_is_corrected_in_second_price() -> None:
    """Power: start at 60% shading; in second price the learner must climb back towards truth."""
    start = BidFunction(0.6 * BidFunction.truthful().coef)
    res = learn_bid_function("second-price", 3, seed=4, init=start)
    assert res.bid.factor() > 0.9


def test_learning_is_deterministic_in_the_seed() -> None:
    a = learn_bid_function("first-price", 2, seed=5, rounds=40)
    b = learn_bid_function("first-price", 2, seed=5, rounds=40)
    c = learn_bid_function("first-price", 2, seed=6, rounds=40)
    assert np.array_equal(a.bid.coef, b.bid.coef)
    assert not np.array_equal(a.bid.coef, c.bid.coef)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"mechanism": "dutch", "n": 2}, "mechanism"), ({"mechanism": "first-price", "n": 1}, "n"),
     ({"mechanism": "posted-price", "n": 2}, "options.price"),
     ({"mechanism": "first-price", "n": 2, "options": {"reserv": 0.3}}, "options.reserv"),
     ({"mechanism": "first-price", "n": 2, "options": {"reserve": -1}}, "options.reserve"),
     ({"mechanism": "first-price", "n": 2, "population": 3}, "population"),
     ({"mechanism": "first-price", "n": 2, "values": {"distribution": "power", "a": 0}}, "values.a"),
     ({"mechanism": "first-price", "n": 2, "sigma": float("nan")}, "sigma")],
)  # fmt: skip
def test_bad_input_names_the_field(kwargs, field) -> None:
    with pytest.raises(InputError) as err:
        learn_bid_function(**kwargs)
    assert err.value.field == field


# --- learning: the known equilibria, mean over 5 seeds (slow) -----------------------------

SEEDS = range(5)


def _seed_gap(mech: str, n, values, opts, seed: int) -> tuple[float, float]:
    res = learn_bid_functions(mech, n, values=values, seed=seed, options=opts)
    ref = bne_reference(mech, list(res.values), list(res.counts), opts)
    return _gap(mech, res, ref, opts)


def _five_seeds(mech: str, n, values=None, opts=None) -> tuple[np.ndarray, np.ndarray]:
    """L2 distances and revenue gaps of the seeds in ``SEEDS``, learned on two spawn processes (one BLAS
    thread each; every seed is its own deterministic run, so the numbers equal a serial loop's)."""
    ctx = multiprocessing.get_context("spawn")
    old = {k: os.environ.get(k) for k in _ONE_THREAD}
    os.environ.update(_ONE_THREAD)  # read by the spawned workers at start-up
    try:
        with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
            pairs = list(pool.map(partial(_seed_gap, mech, n, values, opts), SEEDS))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


_ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _report(label: str, l2s: np.ndarray, gaps: np.ndarray) -> str:
    m, lo, hi = t_interval(l2s)
    g, glo, ghi = t_interval(gaps)
    return f"{label}: L2 {m:.4f} [{lo:.4f}, {hi:.4f}], revenue gap {g:+.2%} [{glo:+.2%}, {ghi:+.2%}]"


#: Measured findings of the default settings (benchmarks/results/bayesian.md, docs/bayesian.md): the
#: revenue gap of these cases is outside 2%, and the test checks that it still is (a fix must update the docs).
REVENUE_FINDINGS = {
    "ap-u-2": "all-pay n=2 under the default monotone family overshoots the BNE revenue while L2 and "
    "exploitability meet their bounds (figures: benchmarks/results/bayesian.md)",
}
LOGNORMAL = {"distribution": "lognorm", "s": 0.5, "high": 3}
_heavy = pytest.mark.heavy  # CI's slow step skips these (covered by benchmarks/bench_bayesian.py); run with -m heavy


@pytest.mark.slow
@pytest.mark.parametrize(
    ("label", "mech", "n", "values", "opts"),
    [("fp-u-2", "first-price", 2, None, None),
     pytest.param("fp-u-3", "first-price", 3, None, None, marks=_heavy),
     pytest.param("fp-u-4", "first-price", 4, None, None, marks=_heavy),
     pytest.param("fp-u-5", "first-price", 5, None, None, marks=_heavy),
     pytest.param("fp-v2-2", "first-price", 2, {"distribution": "power", "a": 2}, None, marks=_heavy),
     pytest.param("fp-logn-2", "first-price", 2, LOGNORMAL, None, marks=_heavy),
     ("ap-u-2", "all-pay", 2, None, None),
     pytest.param("fp-u-2-r0.3", "first-price", 2, None, {"reserve": 0.3}, marks=_heavy),
     pytest.param("fp-asym-u1-u2", "first-price", [1, 1],
                  [{"distribution": "uniform", "high": 1}, {"distribution": "uniform", "high": 2}], None,
                  marks=_heavy)],
)  # fmt: skip
def test_known_equilibria_mean_over_five_seeds(label, mech, n, values, opts) -> None:
    l2s, gaps = _five_seeds(mech, n, values, opts)
    print(_report(label, l2s, gaps))
    assert l2s.mean() <= 0.02, _report(label, l2s, gaps)
    if label in REVENUE_FINDINGS:
        note = "the documented finding no longer holds, update the docs"
        assert abs(gaps.mean()) > 0.02, f"{note}: {_report(label, l2s, gaps)}"
    else:
        assert abs(gaps.mean()) <= 0.02, _report(label, l2s, gaps)


@pytest.mark.slow
def test_lognormal_values_converge_with_share_scaled_credit() -> None:
    """Issue #34: first price, lognormal(s=0.5) values on [0, 3], seed 0, default settings. Each coefficient's
    credit is divided by its share of the auctions (``_coefficient_shares``); with that step removed this test
    fails (its message gives L2 and exploitability), the tail coefficients starved of auctions."""
    d = make_distribution(LOGNORMAL)
    res = learn_bid_functions("first-price", 2, values=d, seed=0)
    ref = bne_reference("first-price", [d], [2])
    l2 = res.bid.l2_distance(ref.bids[0], d)
    ex = exploitability("first-price", res.bid, 2, values=d).value
    assert l2 <= 0.02 and ex <= 0.01, (l2, ex)


# --- the learn command ----------------------------------------------------------------------------

_HEAD = 'kind = "learning"\n[learning]\nfamily = "bayesian"\nrule = "es"\n'


@pytest.mark.parametrize(
    ("body", "needle"),
    [('mechanisms = ["first-price"]\n[learning.instance]\ndistribution = "power"\n',
      "learning.instance.distribution"),
     ('mechanisms = ["first-price"]\n[learning.instance]\noptions = {reserv = 0.3}\n',
      "learning.instance.options.reserv"),
     ('mechanisms = ["first-price"]\n[learning.instance]\noptions = {reserve = -0.3}\n',
      "learning.instance.options.reserve"),
     ('mechanisms = ["first-price"]\n[learning.instance]\noptions = {price = 0.3}\n',
      "learning.instance.options.price"),
     ('mechanisms = ["posted-price"]\n', "learning.instance.options.price"),
     ('mechanisms = ["all-pay-auction"]\n', "learning.mechanisms"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nvalues = {distribution = "nope"}\n',
      "learning.instance.values.distribution"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nvalues = {distribution = "power", a = -1}\n',
      "learning.instance.values.a"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nvalues = {distribution = "uniform", hgih = 2}\n',
      "learning.instance.values.hgih"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nvalues = {distribution = "gamma", a = 2}\n',
      "learning.instance.values.high"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nseeds = 0\n', "learning.instance.seeds"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nn = [1]\n', "learning.instance.n"),
     ('mechanisms = ["first-price"]\noptions = {eta = 2}\n', "learning.options.eta"),
     ('mechanisms = ["first-price"]\noptions = {population = 7}\n', "learning.options.population"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nn = 2\nclasses = [{count = 2}]\n', "learning.instance.n"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nclasses = [{count = 1, cnt = 2}, {count = 1}]\n',
      "learning.instance.classes[0].cnt"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nclasses = [{count = 1}]\n', "learning.instance.classes"),
     ('mechanisms = ["first-price"]\n[learning.instance]\nclasses = [{values = {distribution = "power"}}]\n',
      "learning.instance.classes[0].values.a")],
)  # fmt: skip
def test_bad_bayesian_learning_files_exit_2_naming_the_field(tmp_path, capsys, body: str, needle: str) -> None:
    from marketsim.analysis.frontends.cli import main

    toml = tmp_path / "bad.toml"
    toml.write_text(_HEAD + body)
    assert main(["learn", str(toml), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_learn_command_reports_seed_means_with_intervals_and_plots_bids(tmp_path) -> None:
    import pandas as pd

    from marketsim.analysis.frontends.cli import main

    toml = tmp_path / "b.toml"
    toml.write_text(_HEAD + 'mechanisms = ["all-pay", "first-price"]\nrounds = 20\noptions = {batch = 2048}\n'
                    '[learning.instance]\n'
                    'exploitability = {quadrature = 512, value_points = 51}\n'
                    'n = [2]\nseeds = 3\noptions = {reserve = 0.1}\n'
                    'values = {distribution = "power", a = 2}\n')  # fmt: skip
    assert main(["learn", str(toml), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    table = pd.read_csv(tmp_path / "o" / "price_of_lying.csv").set_index("mechanism")
    d = make_distribution({"distribution": "power", "a": 2})
    for mech in ("all-pay", "first-price"):
        row = table.loc[mech]
        assert row["seeds"] == 3 and row["l2_to_bne_lo"] <= row["l2_to_bne"] <= row["l2_to_bne_hi"]
        assert row["bne_revenue"] == pytest.approx(symmetric_bne(mech, d, 2, {"reserve": 0.1}).revenue)
    traj = pd.read_parquet(tmp_path / "o" / "trajectories.parquet")
    assert sorted(traj["seed"].unique()) == [0, 1, 2]
    assert (tmp_path / "o" / "bids.png").stat().st_size > 0
    assert "] |" in (tmp_path / "o" / "report.md").read_text()  # "mean [lo, hi]" cells


def test_learn_command_with_bidder_classes(tmp_path) -> None:
    import pandas as pd

    from marketsim.analysis.frontends.cli import main

    toml = tmp_path / "a.toml"
    toml.write_text(_HEAD + 'mechanisms = ["first-price", "all-pay"]\nrounds = 10\noptions = {batch = 1024}\n'
                    '[learning.instance]\n'
                    'exploitability = {quadrature = 512, value_points = 51}\n'
                    'classes = [{values = {distribution = "uniform", high = 1}, count = 1},\n'
                    '  {values = {distribution = "uniform", high = 2}, count = 1}]\n')  # fmt: skip
    assert main(["learn", str(toml), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    table = pd.read_csv(tmp_path / "o" / "price_of_lying.csv").set_index("mechanism")
    fp = table.loc["first-price"]
    assert fp["n"] == 2 and fp["bne_revenue"] == pytest.approx(0.459, abs=1e-3) and "l2_by_class" in table.columns
    assert pd.isna(table.loc["all-pay", "l2_to_bne"])  # no asymmetric all-pay BNE is computed: none is claimed


def test_bayesian_learning_is_identical_with_two_processes(tmp_path) -> None:
    import pandas as pd

    from marketsim.analysis.frontends.cli import main

    toml = tmp_path / "p.toml"
    toml.write_text(_HEAD + 'mechanisms = ["first-price"]\nrounds = 8\noptions = {batch = 512}\n'
                    "[learning.instance]\n"
                    "exploitability = {quadrature = 512, value_points = 51}\nn = [2, 3]\nseeds = 2\n")  # fmt: skip
    for d, extra in {"a": [], "p": ["--workers", "2"]}.items():
        assert main(["learn", str(toml), "--out", str(tmp_path / d), "--quiet", *extra]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a" / "trajectories.parquet"),
                                  pd.read_parquet(tmp_path / "p" / "trajectories.parquet"))  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a" / "price_of_lying.csv"),
                                  pd.read_csv(tmp_path / "p" / "price_of_lying.csv"))  # fmt: skip


def test_a_failing_bayesian_task_keeps_the_others_and_the_report(tmp_path, monkeypatch) -> None:
    import marketsim.analysis.frontends.learn as L
    import marketsim.analysis.frontends.learn_bayesian as LB

    toml = tmp_path / "f.toml"
    toml.write_text(_HEAD + 'mechanisms = ["first-price", "all-pay"]\nrounds = 4\noptions = {batch = 256}\n'
                    "[learning.instance]\n"
                    "exploitability = {quadrature = 512, value_points = 51}\nn = [2]\n")  # fmt: skip
    sc = L.load_learning(str(toml))
    real = LB.bayesian_row

    def flaky(sc_, mech, n, progress):
        if mech == "all-pay":
            raise RuntimeError("quadrature exploded")
        return real(sc_, mech, n, progress)

    monkeypatch.setattr(LB, "bayesian_row", flaky)
    traj, table = L.run_learning(sc)
    row = table.set_index("mechanism").loc["all-pay"]
    assert row["status"] == "error" and "quadrature exploded" in row["error"]
    paths = L.write_learning(sc, traj, table, tmp_path / "o")
    assert "quadrature exploded" in (tmp_path / "o" / "report.md").read_text()
    assert (tmp_path / "o" / "bids.png") in paths and (tmp_path / "o" / "bids.png").stat().st_size > 0


def test_posted_price_reference_by_hand() -> None:
    """Posted price p: every value above p buys, revenue sum_c n_c p (1 - F_c(p)); one class goes
    through symmetric_bne, several through bne_reference (the same helper)."""
    one = symmetric_bne("posted-price", uniform(0.0, 1.0), 3, {"price": 0.4})
    assert one is not None and one.revenue == pytest.approx(3 * 0.4 * 0.6)
    assert one.screening == (0.4,)
    two = bne_reference("posted-price", [uniform(0.0, 1.0), uniform(0.0, 2.0)], [2, 1], {"price": 0.5})
    assert two is not None and two.revenue == pytest.approx(2 * 0.5 * 0.5 + 1 * 0.5 * 0.75)
    reserve = symmetric_bne("posted-price", uniform(0.0, 1.0), 2, {"price": 0.2, "reserve": 0.5})
    assert reserve is not None and reserve.revenue == pytest.approx(2 * 0.5 * 0.5)  # p = max(price, reserve)
