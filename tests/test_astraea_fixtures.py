"""Astraea spec fixtures F1–F13 (shared/spec/astraea.md §6): prices, batches, durations,
throughput, the toy example under both readings, θ rule, Theorem-1 calculators, Eq. (2) and α."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from marketsim.market.astraea import (
    AstraeaParams,
    Cluster,
    JobSpec,
    Server,
    Tenant,
    alpha,
    check_feasible,
    collective_revenue,
    linear_utility,
    realised_utility,
    run_astraea,
    tenant_revenue,
)
from marketsim.market.astraea.model import batch_index, batch_window, duration, need_ps, round_window, throughput
from marketsim.market.astraea.pricing import gap_bound, price, price_table, ratio_bound, theoretical_lambda, theta_rule
from marketsim.market.astraea.round import RoundState, RunContext, best_schedule, mincostc, mincostd
from marketsim.market.income import gain_as_you_contribute
from marketsim.market.registry import get

approx = lambda x: pytest.approx(x, rel=1e-9, abs=1e-9)  # noqa: E731

TOY_D = {"j11": 2, "j12": 3, "j21": 2, "j22": 30}


def toy_cluster() -> Cluster:
    return Cluster(tuple(Server(i, 2, 1) for i in range(4)), (Tenant(1, 4, 2), Tenant(2, 4, 2)), 1.0, 1.0)


def toy_jobs(order: tuple[str, ...] = ("j11", "j12", "j21", "j22")) -> list[JobSpec]:
    return [
        JobSpec(
            j,
            int(j[1]),
            3.0,
            2,
            TOY_D[j],
            1,
            1.0,
            0.0,
            0.0,
            linear_utility(-2, 100),
            n_central_override=1.0,
            n_distributed_override=0.5,
        )
        for j in order
    ]


def toy_params(mode: str = "fixed", T: int = 16, **kw: object) -> AstraeaParams:
    return AstraeaParams(theta_mode="given", theta_w=16, theta_p=16, worker_count_mode=mode, horizon_T=T, **kw)


# F1 ---------------------------------------------------------------------------------------------
def test_f1_prices() -> None:
    t = price_table(8, 16)
    assert [t[h] for h in (0, 1, 2, 3, 4, 8)] == [
        approx(0),
        approx(math.sqrt(2) - 1),
        approx(1),
        approx(2 * math.sqrt(2) - 1),
        approx(3),
        approx(15),
    ]
    assert price(1, 4, 16) == approx(1) and price(2, 4, 16) == approx(3) and price(4, 4, 16) == approx(15)
    assert np.all(np.diff(price_table(37, 5.5)) > 0)


# F2 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("r", "l", "window"),
    [(0.3, 1, (4, 8)), (1.5, 1, (4, 8)), (2, 2, (8, 16)), (3, 2, (8, 16)), (3.99, 2, (8, 16)), (4, 3, (16, 32))]
    + [(40, 6, (128, 256))],
)
def test_f2_batches(r: float, l: int, window: tuple[int, int]) -> None:
    assert batch_index(r) == l
    assert 2**l > r
    assert batch_window(2, l) == window


def test_f2_rounds() -> None:
    assert round_window(2, 2, 1) == (8, 12) and round_window(2, 2, 2) == (12, 16)


# F3 / F4 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("work", "n", "dw", "d"),
    [(4, 0.5, 1, 8), (4, 0.5, 2, 4), (4, 1, 2, 2), (4, 1, 1, 4), (6, 0.5, 3, 4), (6, 1, 2, 3), (60, 1, 2, 30)],
)
def test_f3_durations(work: int, n: float, dw: int, d: int) -> None:
    assert duration(work, n, dw) == d


def test_f4_throughput_real_units() -> None:
    j = JobSpec("x", 1, 0.0, 60, 24, 20, 0.02, 50.0, 200.0, linear_utility(-1, 100))
    n_c, n_d = throughput(j, 1024.0)
    assert 2 * 200 * 8 / 1024 == approx(3.125)
    assert n_d == pytest.approx(47.8882607, rel=1e-8)
    assert n_c == pytest.approx(49.9653019, rel=1e-8)
    assert j.work == 28800
    assert (duration(j.work, n_c, 8), duration(j.work, n_d, 8)) == (73, 76)
    assert (duration(j.work, n_c, 24), duration(j.work, n_d, 24)) == (25, 26)
    assert [need_ps(r, 1024.0, 10240.0) for r in (1, 10, 16, 50)] == [1, 1, 2, 5]


# F6 ---------------------------------------------------------------------------------------------
def _ctx(mode: str = "fixed") -> RunContext:
    return RunContext(toy_cluster(), toy_params(mode), 16.0, 16.0)


def test_f6_mincost_on_empty_round() -> None:
    ctx = _ctx("elastic")
    j11 = ctx.job_info(toy_jobs()[0])
    st = RoundState(ctx, 8, 4)
    assert mincostd(j11, st, 0, 0, 1) is None  # D_w = 1: d = 8 > window
    d = mincostd(j11, st, 0, 1, 1)
    assert d is not None and (d.t_start, d.t_end, d.d) == (9, 12, 4)
    assert d.z == ((0, 1),) and d.y == ((0, 1), (1, 1))
    assert (d.cost_w + d.cost_p, d.ideal_value) == (0, 92)
    c = mincostc(j11, st, 0, 1, 1)
    assert c is not None and (c.t_start, c.t_end, c.y, c.cost_w + c.cost_p, c.ideal_value) == (9, 10, ((0, 2),), 0, 96)
    best = best_schedule(j11, st, 1)
    assert best is not None and best.centralized and (best.t_start, best.t_end, best.value) == (9, 10, 96)
    st.commit(best, j11.uidx, 1)
    ew, ep = st.eta()
    assert list(ew) == [approx(1), approx(1), 0, 0] and list(ep) == [approx(1), approx(1), 0, 0]


# F7 ---------------------------------------------------------------------------------------------
def test_f7_hypothetical_distributed_state() -> None:
    ctx = _ctx("fixed")
    infos = {j.jid: ctx.job_info(j) for j in toy_jobs()}
    st = RoundState(ctx, 8, 4)
    j11d = mincostd(infos["j11"], st, 0, 0, 1)
    assert j11d is not None
    st.commit(j11d, infos["j11"].uidx, 1)
    ew, ep = st.eta()
    assert np.allclose(ew, 1) and np.allclose(ep, 1)
    c = mincostd(infos["j21"], st, 0, 0, 1)
    assert c is not None
    assert c.cost_w + c.cost_p == approx(12) and c.ideal_value == 92 and c.value == approx(80)
    assert c.z == ((1, 1),) and c.y == ((0, 1), (1, 1))  # PS on s2 + 1 worker, 1 worker on s1
    st.commit(c, infos["j21"].uidx, 1)
    unused_w = ctx.q_w[:, None] - st.used_w[0]
    unused_p = ctx.q_p[:, None] - st.used_p[0]
    assert list(unused_w.sum(0)) == [4] * 4 and list(unused_p.sum(0)) == [2] * 4


# F8 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_f8_toy_fixed_reproduces_paper(impl: str) -> None:
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed", search_impl=impl))
    o = r.outcomes
    assert set(o) == {"j11", "j21", "j12"} and r.unscheduled == ["j22"]
    j11, j21, j12 = o["j11"], o["j21"], o["j12"]
    assert (j11.pass_, j11.t_start, j11.t_end, j11.sched.y, j11.sched.z, j11.mu, j11.payment) == (
        1,
        9,
        10,
        ((0, 2),),
        ((0, 1),),
        96,
        0,
    )
    assert (j21.pass_, j21.t_start, j21.t_end, j21.sched.y, j21.posted_cost, j21.mu, j21.payment) == (
        1,
        11,
        12,
        ((1, 2),),
        0,
        92,
        0,
    )
    assert (j12.pass_, j12.t_start, j12.t_end, j12.sched.n_workers, j12.sched.centralized) == (2, 9, 12, 3, False)
    assert j12.sched.y == ((2, 2), (3, 1)) and j12.sched.z == ((2, 1),)
    assert list(j12.slot_cost_w) == [approx(3)] * 4 and list(j12.slot_cost_p) == [approx(1)] * 4
    assert (j12.sched.cost_w, j12.sched.cost_p, j12.payment, j12.ideal_value, j12.mu) == tuple(
        approx(v) for v in (12, 4, 16, 92, 76)
    )
    # snapshot after pass 1
    rd = r.rounds[0]
    assert rd.admitted_pass1 == ("j11", "j21") and rd.admitted_pass2 == ("j12",)
    assert list(rd.a_w) == [6] * 4 and list(rd.a_p) == [3] * 4
    assert j12.unused_w.tolist() == [[2, 2, 4, 4], [4, 4, 2, 2]]
    assert j12.unused_p.tolist() == [[1, 1, 2, 2], [2, 2, 1, 1]]
    # incomes: 8 each (worker 6 + PS 2), u1's as self-income
    assert j12.income.tolist() == [approx(8), approx(8)]
    w = gain_as_you_contribute(j12.unused_w, j12.slot_cost_w)
    p = gain_as_you_contribute(j12.unused_p, j12.slot_cost_p)
    assert w.tolist() == [approx(6), approx(6)] and p.tolist() == [approx(2), approx(2)]
    # exact per-slot incomes with fractions: 4/3 and 8/3
    rho = [Fraction(int(j12.unused_w[1, t]), 6) * 3 + Fraction(int(j12.unused_p[1, t]), 3) * 1 for t in range(4)]
    assert rho == [Fraction(8, 3), Fraction(8, 3), Fraction(4, 3), Fraction(4, 3)] and sum(rho) == 8
    # revenue, arrival clock
    assert [realised_utility(r, j) for j in ("j11", "j21", "j12")] == [86, 82, 82]
    assert collective_revenue(r) == approx(250)
    g = [t.total for t in tenant_revenue(r)]
    assert g == [approx(160), approx(90)]
    a, var, ok = alpha(r)
    assert ok and a.tolist() == [approx(1.28), approx(0.72)] and var == approx(0.0784)
    assert check_feasible(r) == []
    # j22 (30 workers > C_W = 8) can never be admitted: dropped up front as never admissible
    assert all("j22" not in rd.admitted_pass1 + rd.admitted_pass2 for rd in r.rounds)


def test_f8_reading_table_and_variants() -> None:
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed", self_income_in_g=False))
    g = [t.total for t in tenant_revenue(r)]
    assert g == [approx(152), approx(90)] and sum(g) == approx(242)
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed", revenue_time_origin="round_start"))
    assert collective_revenue(r) == approx(280)
    assert [t.total for t in tenant_revenue(r)] == [approx(180), approx(100)]
    assert alpha(r)[0].tolist() == [approx(1.2857142857142858), approx(0.7142857142857143)]
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed", pass2_charge="beyond_quota"))
    j12 = r.outcomes["j12"]
    assert j12.payment == approx(2) and j12.income.tolist() == [0, approx(2)]
    # worker term alone is the §4.2 figure 6
    full = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed")).outcomes["j12"]
    assert gain_as_you_contribute(full.unused_w, full.slot_cost_w)[1] == approx(6)


@pytest.mark.parametrize("rule", ["lowest_index", "best_fit"])
def test_f8_server_choice_variants(rule: str) -> None:
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed", centralized_choice=rule))
    o = r.outcomes
    assert o["j21"].sched.y == ((0, 2),) and o["j21"].t_start == 11
    assert o["j12"].sched.y == ((1, 2), (2, 1)) and o["j12"].sched.z == ((1, 1),)
    assert collective_revenue(r) == approx(250) and o["j12"].income.tolist() == [approx(8), approx(8)]


# F9 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_f9_toy_elastic(impl: str) -> None:
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("elastic", search_impl=impl))
    o = r.outcomes
    assert {j: (x.pass_, x.sched.y, x.t_start, x.t_end) for j, x in o.items()} == {
        "j11": (1, ((0, 2),), 9, 10),
        "j12": (1, ((1, 2),), 10, 12),
        "j21": (1, ((2, 2),), 11, 12),
    }
    assert [o[j].posted_cost for j in ("j11", "j12", "j21")] == [0, approx(3), approx(6)]
    assert [o[j].mu for j in ("j11", "j12", "j21")] == [96, approx(89), approx(86)]
    assert all(x.payment == 0 for x in o.values()) and r.incomes().tolist() == [0, 0]
    assert r.unscheduled == ["j22"]
    assert collective_revenue(r) == approx(250)
    assert [t.total for t in tenant_revenue(r)] == [approx(168), approx(82)]
    assert alpha(r)[0].tolist() == [approx(1.344), approx(0.656)]


def test_f9_toy_elastic_other_order() -> None:
    jobs = toy_jobs(("j11", "j21", "j12", "j22"))
    # the order rule is (arrival, owner, jid), so force the paper's alternative order by arrival
    jobs = [j.with_(arrival=3.0 + 0.1 * i) for i, j in enumerate(jobs)]
    r = run_astraea(toy_cluster(), jobs, toy_params("elastic"))
    o = r.outcomes
    assert (o["j11"].sched.y, o["j11"].t_start, o["j11"].mu) == (((0, 2),), 9, 96)
    assert (o["j21"].sched.y, o["j21"].t_start, o["j21"].mu) == (((1, 2),), 11, 92)
    j12 = o["j12"]
    assert (j12.pass_, j12.sched.y, j12.t_start, j12.t_end, j12.posted_cost, j12.mu) == (
        1,
        ((2, 2),),
        9,
        11,
        approx(9),
        approx(85),
    )
    # realised values with the original arrival r = 3
    assert [2 * 3 - 2 * x.t_end + 100 for x in (o["j11"], o["j21"], j12)] == [86, 82, 84]


def test_f9_j21_alternative_cost() -> None:
    ctx = _ctx("elastic")
    infos = {j.jid: ctx.job_info(j) for j in toy_jobs()}
    st = RoundState(ctx, 8, 4)
    for jid in ("j11", "j12"):
        c = best_schedule(infos[jid], st, 1)
        assert c is not None
        st.commit(c, infos[jid].uidx, 1)
    alt = mincostc(infos["j21"], st, 0, 1, 1)
    assert alt is not None and alt.cost_w + alt.cost_p == approx(12) and alt.value == approx(84)


# F10 --------------------------------------------------------------------------------------------
def test_f10_toy_elastic_long_horizon() -> None:
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("elastic", T=128))
    j22 = r.outcomes["j22"]
    assert (j22.batch, j22.round, j22.window) == (5, 1, (64, 96))
    assert (j22.pass_, j22.sched.y, j22.t_start, j22.t_end, j22.sched.d, j22.posted_cost, j22.mu) == (
        1,
        ((0, 2),),
        65,
        94,
        30,
        0,
        40,
    )
    assert realised_utility(r, "j22") == -82
    r = run_astraea(toy_cluster(), toy_jobs(), toy_params("fixed", T=256))
    assert "j22" in r.unscheduled and "j22" not in r.outcomes


# F11 / F12 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["fixed", "elastic"])
def test_f11_theta_rule(mode: str) -> None:
    tw, tp = theta_rule(toy_cluster(), toy_jobs(), AstraeaParams(worker_count_mode=mode))
    assert (tw, tp) == (approx(25), approx(49))


def test_f12_theorem1_calculators() -> None:
    assert gap_bound(4, 2, 2, -2, -2) == approx(144)
    assert ratio_bound(2, 3, 1, 2, 100, 1000) == approx(0.078125)
    assert theoretical_lambda(16, 16, 100) == 49
    assert theoretical_lambda(16, 16, 100, base=2) == 72


# F13 --------------------------------------------------------------------------------------------
def test_f13_eq2_generic() -> None:
    w = gain_as_you_contribute([2, 0, 6], [10])
    p = gain_as_you_contribute([1, 1, 0], [4])
    assert (w + p).tolist() == [approx(4.5), approx(2), approx(7.5)] and math.fsum(w + p) == 14


def test_f13_alpha_generic() -> None:
    from marketsim.market.astraea.accounting import alpha_from_revenue

    a, ok = alpha_from_revenue([150, 50], [6, 2], [3, 1])
    assert ok and a.tolist() == [approx(1), approx(1)]
    a, ok = alpha_from_revenue([-1, 0.5], [6, 2], [3, 1])
    assert not ok and np.isnan(a).all()


def test_registered_and_overrides() -> None:
    info = get("astraea", "auction")
    assert info.paper == "astraea" and info.claims_truthful
    r = info.fn(toy_cluster(), toy_jobs(), toy_params("fixed"), revenue_time_origin="round_start")
    assert collective_revenue(r) == approx(280)


# F14 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("mode", "T", "opt"), [("elastic", 16, 286), ("fixed", 16, 284)])
def test_f14_offline_optimum_and_ratio(mode: str, T: int, opt: float) -> None:
    from marketsim.market.astraea.offline import opt_exact

    o = opt_exact(toy_cluster(), toy_jobs(), toy_params(mode), T)
    assert o.value == approx(opt)
    assert set(o.chosen) == {"j11", "j12", "j21"} and all(c[0] == 4 for c in o.chosen.values())
    if mode == "fixed":
        assert o.chosen["j12"] == (4, 7, 3, False)  # distributed, d = 4, worth 92
    alg = collective_revenue(run_astraea(toy_cluster(), toy_jobs(), toy_params(mode, T=T)))
    assert alg / o.value == pytest.approx({"fixed": 0.8802817, "elastic": 0.8741259}[mode], abs=1e-7)


@pytest.mark.slow
def test_f14_offline_optimum_long_horizon() -> None:
    from marketsim.market.astraea.offline import opt_exact

    o = opt_exact(toy_cluster(), toy_jobs(), toy_params("elastic"), 33)
    assert o.value == approx(326) and o.chosen["j22"][:2] == (4, 33)
