"""Best-response / Hedge / EXP3 dynamics on fair-share games (issue #11).

Hand numbers: non-cooperative OEF on W = [[1,2],[1,5]], m = [1,1] equalises normalised
throughput: X = [[1, 4/7], [0, 3/7]], each tenant 15/7, total 30/7.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError
from marketsim.market.learning.dynamics import (
    FairShareGame,
    best_response_dynamics,
    cce_epsilon,
    certify,
    default_grid,
    exp3,
    hedge,
    price_of_lying,
    pure_equilibrium_search,
)

W2 = [[1, 2], [1, 5]]


def equal_split(W, m, *, weights=None, caps=None, **_):
    """A report-independent allocator: truthful is trivially an equilibrium."""
    W = np.asarray(W, dtype=float)
    X = np.tile(np.asarray(m, dtype=float) / W.shape[0], (W.shape[0], 1))
    return Allocation(X=X, policy="equal", objective=0.0)


def test_truthful_oef_noncoop_matches_the_hand_numbers() -> None:
    g = FairShareGame(W=W2, m=[1, 1])
    assert np.allclose(g.allocation(g.truthful_profile()), [[1, 4 / 7], [0, 3 / 7]])
    assert np.allclose(g.utilities(g.truthful_profile()), [15 / 7, 15 / 7])
    pol = price_of_lying(g, g.truthful_profile())
    assert pol["truthful_total"] == pytest.approx(30 / 7) and pol["price_of_lying"] == pytest.approx(1.0)


def test_best_response_leaves_truth_on_oef_noncoop_and_every_move_is_a_strict_improvement() -> None:
    g = FairShareGame(W=W2, m=[1, 1])
    res = best_response_dynamics(g)
    assert res.status in ("cycle", "converged")
    assert not np.array_equal(res.profile, g.truthful_profile()) or res.status == "cycle"
    # re-check independently: replay the trajectory; each recorded switch is a best response
    p = g.truthful_profile()
    for row in res.trajectory.iloc[1:].itertuples():
        u = g.deviations(p, row.agent)
        assert u[row.strategy] == pytest.approx(u.max())
        p[row.agent] = row.strategy
    if res.status == "cycle":
        assert res.period >= 2 and len(res.cycle) == res.period
        assert tuple(int(x) for x in res.profile) == res.cycle[0]


def test_best_response_stays_truthful_when_reports_do_not_matter() -> None:
    g = FairShareGame(mechanism=equal_split, W=W2, m=[1, 1])
    res = best_response_dynamics(g)
    assert res.status == "converged" and np.array_equal(res.profile, g.truthful_profile())
    assert certify(g, res.profile)["eps_abs"] == 0.0


def test_certificate_finds_the_known_profitable_lie_at_truth() -> None:
    g = FairShareGame(W=W2, m=[1, 1])
    cert = certify(g, g.truthful_profile())
    # tenant 1 reporting its fast GPU at half speed: X = [[1, 1/3], [0, 2/3]] -> 10/3 vs 15/7 by hand
    assert cert["eps_abs"] >= 10 / 3 - 15 / 7 - 1e-9
    u = g.utilities(g.truthful_profile())[cert["agent"]]
    assert cert["eps_rel"] == pytest.approx(cert["eps_abs"] / u)


def _cce_gap(g: FairShareGame, dist: dict) -> dict[int, float]:
    """Independent CCE gap from the empirical distribution (not from the learner's accumulators)."""
    out = {}
    for i in g.learner_ids:
        dev = np.zeros(g.S)
        played = 0.0
        for prof, w in dist.items():
            dev += w * g.deviations(prof, i)
            played += w * g.utilities(prof)[i]
        out[i] = float(dev.max() - played)
    return out


def test_hedge_regret_is_within_the_hedge_bound_and_equals_the_cce_gap() -> None:
    g = FairShareGame(W=W2, m=[1, 1])
    T = 400
    eta = float(np.sqrt(8 * np.log(g.S) / T))
    res = hedge(g, rounds=T, eta=eta, seed=3)
    scale = np.asarray(g.Wt) @ np.asarray(g.ma)
    for i, r in res.regret.items():
        assert r <= scale[i] * np.sqrt(np.log(g.S) / (2 * T)) + 1e-9
    gap = _cce_gap(g, res.distribution)
    for i in g.learner_ids:
        assert gap[i] == pytest.approx(res.regret[i], abs=1e-9)
    assert sum(res.distribution.values()) == pytest.approx(1.0)


def test_exp3_learns_from_bandit_feedback() -> None:
    """Power check: EXP3's average regret must fall well below that of uniform random play."""
    g = FairShareGame(W=W2, m=[1, 1])
    res = exp3(g, rounds=1500, seed=1)
    uniform = exp3(g, rounds=1500, seed=1, gamma=1.0)  # gamma = 1: always uniform, learns nothing
    for i in g.learner_ids:
        assert res.regret[i] < 0.6 * uniform.regret[i]


def test_no_regret_dynamics_are_deterministic_in_the_seed() -> None:
    g = FairShareGame(W=W2, m=[1, 1])
    a, b = hedge(g, rounds=50, seed=9), hedge(g, rounds=50, seed=9)
    assert a.trajectory.equals(b.trajectory)
    assert not a.trajectory.equals(hedge(g, rounds=50, seed=10).trajectory)


def test_only_declared_learners_move() -> None:
    g = FairShareGame(W=W2, m=[1, 1], learners=[1])
    res = best_response_dynamics(g)
    assert res.profile[0] == g.truth_index
    assert set(res.trajectory["agent"].iloc[1:]) == {1}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"W": [[1, 2]], "m": [1, 1], "grid": [0.5, 2.0]}, "grid"), ({"W": [[1], [1]], "m": [1]}, "W"),
     ({"W": W2, "m": [1, 1], "learners": [5]}, "learners"), ({"W": W2, "m": [1, 1], "mechanism": "nope"}, "mechanism"),
     ({"W": [[1, float("nan")]], "m": [1, 1]}, "W[0, 1]")],
)  # fmt: skip
def test_bad_input_names_the_field(kwargs, field) -> None:
    with pytest.raises(InputError) as err:
        FairShareGame(**kwargs)
    assert err.value.field == field


def test_default_grid_contains_truth() -> None:
    g = default_grid(8, 0.1, 10)
    assert np.any(g == 1.0) and g.min() == pytest.approx(0.1) and g.max() == pytest.approx(10)
    with pytest.raises(InputError):
        default_grid(5, 2.0, 4.0)


def _eris_market():
    from marketsim.market.eris.market import make_market

    return make_market({"R": 4, "I": 8, "T": 10}, np.random.default_rng(0))


def test_auction_game_truthful_mechanism_stays_at_truth() -> None:
    """Eris' posted prices are bid-independent: best responses keep truth and the wide-grid
    certificate finds no gain (it would if the game mis-scored a misreport)."""
    from marketsim.market.learning.dynamics import AuctionGame

    g = AuctionGame(market=_eris_market(), mechanism="eris", grid=default_grid(5, 0.25, 4.0))
    res = best_response_dynamics(g, max_passes=3)
    assert res.status == "converged" and np.array_equal(res.profile, g.truthful_profile())
    assert certify(g, res.profile, points=9)["eps_abs"] <= 1e-9
    pol = price_of_lying(g, res.profile)
    assert pol["price_of_lying"] == pytest.approx(1.0) and pol["truthful_welfare"] > 0


def test_auction_game_finds_that_antman_bidders_inflate_into_the_guaranteed_class() -> None:
    """AntMan puts a job in its resource-guarantee class when the REPORTED tau (sigmoid scale / 3000)
    is >= 1.5. On this instance no job completes under truth; bidder 0 (tau 1.42) doubles its value,
    becomes guaranteed and completes: best responses leave truth by inflating (never shading), and
    welfare rises (a finding, measured on this fixed instance)."""
    from marketsim.market.learning.dynamics import AuctionGame

    market = _eris_market()
    g = AuctionGame(market=market, mechanism="antman", grid=default_grid(5, 0.25, 4.0))
    assert certify(g, g.truthful_profile(), points=9)["eps_abs"] > 0
    res = best_response_dynamics(g, max_passes=3)
    f = g.strategies[res.profile].ravel()
    assert not np.array_equal(res.profile, g.truthful_profile())
    assert (f >= 1).all() and (f > 1).any()
    liar = int(np.argmax(f))
    tau = market.bids()[liar].utility.gamma1 / 3000.0
    assert tau < 1.5 <= tau * f[liar]
    pol = price_of_lying(g, res.profile)
    assert pol["learned_welfare"] > pol["truthful_welfare"]
    assert pol[f"gain_{liar}"] > 0


def test_auction_game_rejects_a_grid_outside_the_validator() -> None:
    from marketsim.market.learning.dynamics import AuctionGame

    with pytest.raises(InputError) as err:
        AuctionGame(market=_eris_market(), mechanism="eris", grid=[0.01, 1.0, 100.0])
    assert err.value.field == "grid"
    with pytest.raises(InputError) as err:
        AuctionGame(market=_eris_market(), mechanism="eris", dimension="nope")
    assert err.value.field == "dimension"


def test_best_responses_with_negative_utilities_converge_to_a_grid_equilibrium() -> None:
    """Astraea's jobs can have negative TRUE surplus (pass-2 payments above value). A relative
    switching threshold that scales a negative utility used to call a learner's own strategy
    "better" and report a period-1 cycle; now the run converges and the final profile is a pure
    equilibrium of the grid (nobody gains by more than the tolerance)."""
    from marketsim.analysis.engine.studies import build_market
    from marketsim.market.learning.dynamics import AuctionGame

    m = build_market("astraea", {"workload": "micro", "jobs": 6, "servers": 4, "tenants": 2, "horizon": 64},
                     np.random.default_rng(0))  # fmt: skip
    g = AuctionGame(market=m, mechanism="astraea", grid=default_grid(9, 0.25, 4.0), seed=0)
    res = best_response_dynamics(g, max_passes=5)
    assert res.status == "converged"
    u = g.utilities(res.profile)
    assert (u < 0).any()  # the case that mattered
    for i in g.learner_ids:
        assert g.deviations(res.profile, i).max() <= u[i] + 1e-9 * max(1.0, abs(u[i]))


def _certify_off_grid(g: FairShareGame, factors: tuple[float, float]) -> dict:
    """``certify`` (its own, finer deviation grid) at a profile of off-grid factors."""
    big = g.with_grid(np.union1d(default_grid(), factors))
    profile = [int(np.flatnonzero(np.isclose(big.grid_values, f, rtol=0, atol=1e-12))[0]) for f in factors]
    return certify(big, profile)


def test_non_cooperative_oef_has_no_pure_approximate_equilibrium_on_the_issue_instance() -> None:
    """Issue #11's W = [[1,2],[1,5]]: every visited pure profile leaves some tenant a gain of at
    least ~19% (measured 18.75% here, 20% at full resolution in benchmarks/results/equilibrium_gap.md);
    the best profile's gain is re-found by certify's own deviation grid."""
    g = FairShareGame(mechanism="oef-noncoop", W=W2, m=[1, 1])
    r = pure_equilibrium_search(g, low=0.01, high=100, points=9, deviations=41, zooms=2)
    assert 0.15 < r.eps < 0.25 and r.surface.shape == (9, 9) and r.surface.min() >= r.levels[0]["eps"]
    assert [lv["eps"] for lv in r.levels] == sorted((lv["eps"] for lv in r.levels), reverse=True)
    assert _certify_off_grid(g, r.factors)["eps_rel"] > 0.15  # another deviation grid: 18.6%
    assert not r.certificate.certified and r.certificate.eps_rel >= r.eps - 1e-9  # the audit finds at least as much


def test_the_same_search_finds_a_grid_equilibrium_of_cooperative_oef_that_the_audit_rejects() -> None:
    """On its own deviations the search finds an exact equilibrium of cooperative OEF (certify's
    grid agrees), but the audit's search at that profile finds a report off both grids that gains
    ~0.6% (1.7% at the full-resolution profile of benchmarks/results/equilibrium_gap.md): not
    certified at 1e-3, and the gain is re-measured here with the allocator."""
    g = FairShareGame(mechanism="oef-coop", W=W2, m=[1, 1])
    r = pure_equilibrium_search(g, low=0.01, high=100, points=9, deviations=41, zooms=2, tol=1e-3)
    assert r.eps <= 1e-9 and r.eps_abs <= 1e-9
    assert _certify_off_grid(g, r.factors)["eps_rel"] <= 1e-6
    c = r.certificate
    assert c is not None and not c.certified and c.eps_rel > 1e-3
    F = np.array(r.factors, dtype=float).reshape(2, 1)
    X = F.copy()
    X[c.agent, 0] = c.to_report[0]
    assert g._evaluate(X)[c.agent] / g._evaluate(F)[c.agent] - 1.0 == pytest.approx(c.eps_rel, rel=1e-9)


def test_equilibrium_search_input_errors_name_the_field() -> None:
    with pytest.raises(InputError, match="two learners"):
        pure_equilibrium_search(FairShareGame(W=[[1, 2], [1, 3], [1, 4]], m=[1, 1]))
    with pytest.raises(InputError, match="one reportable dimension"):
        pure_equilibrium_search(FairShareGame(W=[[1, 2, 3], [1, 3, 4]], m=[1, 1, 1]))
    with pytest.raises(InputError) as err:
        pure_equilibrium_search(FairShareGame(W=W2, m=[1, 1]), low=10, high=1)
    assert err.value.field == "high"


def test_hedge_with_a_tolerance_stops_at_the_first_certified_round() -> None:
    """``tol`` stops at the first round whose empirical play is a tol-CCE (re-derived here from the
    joint distribution); one round fewer, same seed, is not yet one."""
    g = FairShareGame(W=[[1, 2], [1, 3], [1, 5]], m=[1, 1])
    res = hedge(g, rounds=1000, eta=10.0, optimistic=True, seed=3, tol=0.01)
    assert res.status == "grid-cce" and 1 < res.rounds < 1000
    gap = _cce_gap(g, res.distribution)
    mean_u = res.trajectory.groupby("agent")["utility"].mean()
    for i in g.learner_ids:
        assert res.regret[i] == pytest.approx(gap[i], abs=1e-9)
        assert res.regret_rel[i] == pytest.approx(max(gap[i], 0.0) / mean_u[i], rel=1e-9)
        assert res.regret_rel[i] <= 0.01
    before = hedge(g, rounds=res.rounds - 1, eta=10.0, optimistic=True, seed=3)
    assert before.status == "finished" and max(before.regret_rel.values()) > 0.01
    assert before.trajectory.equals(res.trajectory.iloc[: len(before.trajectory)])


def test_optimistic_hedge_is_a_different_rule_and_time_limits_stop_early() -> None:
    g = FairShareGame(W=W2, m=[1, 1])
    plain, opt = hedge(g, rounds=60, eta=10.0, seed=1), hedge(g, rounds=60, eta=10.0, seed=1, optimistic=True)
    assert not plain.trajectory.equals(opt.trajectory)
    cut = hedge(g, rounds=10_000, seed=1, time_limit=1e-9)
    assert cut.status == "time-limit" and cut.rounds == 1 and cut.seconds > 0
    for field, value in (("tol", 0.0), ("time_limit", -1.0)):
        with pytest.raises(InputError) as err:
            hedge(g, rounds=5, **{field: value})
        assert err.value.field == field


def test_hedge_counterfactuals_on_a_process_pool_give_the_same_play() -> None:
    """``executor``: the counterfactual rows come from worker processes (the game pickled without its
    cache); trajectory, regrets and stopping round equal the in-process run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    g = FairShareGame(W=[[1, 2], [1, 3], [1, 5]], m=[1, 1])
    here = hedge(g, rounds=300, eta=10.0, optimistic=True, seed=3, tol=0.01)
    g2 = FairShareGame(W=[[1, 2], [1, 3], [1, 5]], m=[1, 1])
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        there = hedge(g2, rounds=300, eta=10.0, optimistic=True, seed=3, tol=0.01, executor=pool)
    pd.testing.assert_frame_equal(here.trajectory, there.trajectory)
    assert here.regret == there.regret and here.rounds == there.rounds and here.status == there.status
    assert g2.evaluations >= g.evaluations  # workers' runs are counted too


def test_cce_epsilon_on_the_own_grid_is_the_relative_regret_and_a_wider_grid_only_adds() -> None:
    g = FairShareGame(W=[[1, 2], [1, 3], [1, 5]], m=[1, 1], grid=default_grid(5, 0.25, 4.0))
    res = hedge(g, rounds=150, eta=10.0, optimistic=True, seed=2)
    own = cce_epsilon(g, res.distribution, grid=g.grid_values)
    wide = cce_epsilon(g, res.distribution, grid=default_grid(9, 0.01, 100.0))
    for i in g.learner_ids:
        assert own[i] == pytest.approx(res.regret_rel[i], rel=1e-9, abs=1e-12)
        assert wide[i] >= own[i] - 1e-12
    assert max(wide.values()) > max(own.values())  # shading below 0.25 pays against this play
    # max-min ignores reports: no report gains, on any grid
    mm = FairShareGame(mechanism="maxmin", W=[[1, 2], [1, 3], [1, 5]], m=[1, 1])
    assert max(cce_epsilon(mm, hedge(mm, rounds=20).distribution, grid=default_grid(9, 0.01, 100.0)).values()) == 0
    with pytest.raises(InputError, match="distribution"):
        cce_epsilon(g, {}, grid=g.grid_values)
