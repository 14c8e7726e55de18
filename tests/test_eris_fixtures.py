"""Eris fixtures F1-F13 of shared/spec/eris.md §6 (F14 is in test_eris_baselines.py)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from marketsim.market.eris import (
    CR_CONSTANT,
    ErisAuction,
    ErisConfig,
    ErisJob,
    ErisSites,
    NetworkSpec,
    price,
    realised_utility,
)
from marketsim.market.eris.deploy import deploy_batch, deploy_reference, plan_from_batch, prepare_job, prepare_slot
from marketsim.market.eris.exact import competitive_ratio, one_shot_exact, opt_milp
from marketsim.market.eris.network import build_links
from marketsim.market.eris.prices import SlotView
from marketsim.market.eris.sources import cumulative_sources, slot_sources, source_sequence
from marketsim.market.utility import SigmoidUtility

REL = 1e-6
ABS = 5e-7  # the spec prints 6 decimals


def f(tau: float) -> SigmoidUtility:
    return SigmoidUtility(3000.0 * tau, 1.0 / 3.0, 0.0)


def job(i: int, data: dict, E: int, P: int, w, s, lam: float, tau: float = 1.0, a: int = 1) -> ErisJob:
    return ErisJob(i, a, f(tau), data, E, np.array(w, float), np.array(s, float), P, lam)


def test_f1_price_function():
    x = np.array([0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    want = [0, 0.412538, 0.995262, 4.623413, 30.622777, 176.827941, 500.187234, 999]
    got = price(x, 1.0, 1000.0)
    np.testing.assert_allclose(got, want, rtol=REL, atol=ABS)
    grid = price(np.linspace(0, 1, 101), 1.0, 1000.0)
    assert (np.diff(grid) > 0).all() and (np.diff(grid, 2) > 0).all()
    assert price(0.0, 0.0, 1000.0) == pytest.approx(999.0)  # D25


def test_f2_utility():
    d = np.array([0, 1, 2, 3, 4, 6, 9, 12, 20])
    want = [1500, 1252.289381, 1017.730894, 806.824264, 625.825582, 357.608766, 142.277620, 53.958630, 3.813049]
    np.testing.assert_allclose(f(1.0)(d), want, rtol=REL, atol=ABS)
    np.testing.assert_allclose(f(1.7)(d), 1.7 * np.array(want), rtol=REL, atol=ABS)


def test_f3_cr_constant():
    assert CR_CONSTANT == pytest.approx(39.863137, rel=REL, abs=ABS)


def test_f4_source_sequence():
    seq = source_sequence([3, 1, 2])
    assert (seq + 1).tolist() == [1, 3, 1, 2, 3, 1]
    cum = cumulative_sources(seq, 3)
    assert cum[4].tolist() == [2, 1, 1]
    assert slot_sources(cum, 2, 3).tolist() == [1, 1, 1]
    assert (source_sequence([2, 2]) + 1).tolist() == [1, 2, 1, 2]


def _both(jb, view, links, M):
    """DPC_T by the reference and by the batch; asserts they agree and returns (cost, plan)."""
    cost, plan = deploy_reference(jb, view, links, list(M))
    sp = prepare_slot(jb, view, links)
    b = deploy_batch(jb, sp, links, np.array([M]))
    assert (math.isinf(cost) and math.isinf(b.cost[0])) or b.cost[0] == cost
    if plan is not None:
        bp = plan_from_batch(b, 0, view.t, jb)
        assert bp.ps_site == plan.ps_site and bp.moves == plan.moves and (bp.workers == plan.workers).all()
    ex = one_shot_exact(jb, view, links, M)
    assert ex <= cost + 1e-9
    return cost, plan


def _global_setup(R, K, budget):
    sites = ErisSites(tuple(range(1, R + 1)), np.full((R, K), 100.0), ("gpu", "cpu")[:K])
    cfg = ErisConfig(horizon=1)
    return sites, cfg, build_links(NetworkSpec(budget_mb=budget), sites, cfg)


def test_f5_one_move_global():
    sites, cfg, links = _global_setup(2, 1, 1000)
    jb = prepare_job(job(1, {1: 3, 2: 1}, 5, 5, [1], [0], 4.0), sites, cfg)
    view = SlotView(1, np.array([0.5]), np.array([100.0]), np.array([[10.0], [1.0]]), np.array([[4.0], [2.0]]))
    sp = prepare_slot(jb, view, links, prune=False)
    assert sp.chunkcap.tolist() == [4, 2]
    om = dict(zip(map(tuple, sp.pairs.tolist()), sp.omega.tolist(), strict=True))
    assert om == {(0, 1): pytest.approx(-8.0)}
    cost, plan = _both(jb, view, links, [3, 1])
    assert cost == pytest.approx(27.0, rel=REL, abs=ABS)
    assert plan.moves == {(0, 1): 1} and plan.load.tolist() == [2, 2] and plan.workers.tolist() == [2, 2]
    assert plan.ps_site == 0 and plan.link_volume[0] == pytest.approx(10.0)


def test_f6_budget_infeasible():
    sites, cfg, links = _global_setup(2, 1, 1000)
    jb = prepare_job(job(1, {1: 3, 2: 1}, 5, 5, [1], [0], 4.0), sites, cfg)
    view = SlotView(1, np.array([0.5]), np.array([9.0]), np.array([[10.0], [1.0]]), np.array([[4.0], [2.0]]))
    cost, plan = _both(jb, view, links, [3, 1])
    assert math.isinf(cost) and plan is None


def test_f7_ps_fallback():
    sites, cfg, links = _global_setup(2, 2, 1000)
    jb = prepare_job(job(1, {1: 2, 2: 1}, 1, 1, [1, 1], [0, 2], 5.0), sites, cfg)
    view = SlotView(1, np.array([0.0]), np.array([1000.0]), np.zeros((2, 2)), np.array([[4.0, 2.0], [4.0, 8.0]]))
    cost, plan = _both(jb, view, links, [2, 1])
    assert plan.moves == {} and plan.workers.tolist() == [2, 1] and plan.ps_site == 1
    assert plan.link_volume[0] == pytest.approx(10.0) and cost == 0.0


@pytest.mark.parametrize(
    "res23, want, moves, g, ps, psi",
    [
        (100.0, 5.0, {(0, 2): 2}, [0, 0, 2], 2, [4.0, 4.0]),
        (3.0, 23.75, {(0, 2): 1, (0, 1): 1}, [0, 1, 1], 1, [4.0, 3.0]),
    ],
)
def test_f8_topology_path(res23, want, moves, g, ps, psi):
    G = nx.Graph()
    G.add_edge(1, 2, capacity_mb=100.0, latency_ms=1.0)
    G.add_edge(2, 3, capacity_mb=100.0, latency_ms=1.0)
    sites = ErisSites((1, 2, 3), np.full((3, 1), 4.0), ("gpu",))
    cfg = ErisConfig(horizon=1)
    links = build_links(NetworkSpec(mode="topology", graph=G), sites, cfg)
    assert links.names == ("1-2", "2-3")
    jb = prepare_job(job(1, {1: 2}, 1, 1, [1], [0], 1.0), sites, cfg)
    view = SlotView(
        1, np.array([0.5, 0.25]), np.array([100.0, res23]), np.array([[50.0], [20.0], [1.0]]), np.full((3, 1), 4.0)
    )
    sp = prepare_slot(jb, view, links, prune=False)
    om = dict(zip(map(tuple, sp.pairs.tolist()), sp.omega.tolist(), strict=True))
    assert (
        om[(0, 2)] == pytest.approx(-47.5) and om[(0, 1)] == pytest.approx(-29) and om[(1, 2)] == pytest.approx(-18.5)
    )
    cost, plan = _both(jb, view, links, [2, 0, 0])
    assert cost == pytest.approx(want, rel=REL, abs=ABS)
    assert plan.moves == moves and plan.workers.tolist() == g and plan.ps_site == ps
    np.testing.assert_allclose(plan.link_volume, psi)


def test_f9_dp_split():
    sites = ErisSites((1,), np.array([[2.0]]), ("gpu",))
    cfg = ErisConfig(horizon=3)
    auc = ErisAuction(sites, NetworkSpec(), cfg)
    auc.state.commit(1, np.zeros(1), np.array([[1.0]]))
    assert auc.prices(1).beta[0, 0] == pytest.approx(30.622777, rel=REL, abs=ABS)
    b = job(1, {1: 3}, 1, 1, [1], [0], 0.0)
    menu = auc.build_menu(b)
    assert [(e.deadline, e.schedule.completion) for e in menu] == [(2, 2), (3, 3)]
    assert menu[0].schedule.cost == pytest.approx(30.622777, rel=REL, abs=ABS) and menu[1].schedule.cost == 0.0
    assert [(p.t, int(p.sources.sum())) for p in menu[0].schedule.slots] == [(1, 1), (2, 2)]
    assert [(p.t, int(p.sources.sum())) for p in menu[1].schedule.slots] == [(2, 2), (3, 1)]
    d = auc.step(1, [b])[0]
    assert d.admitted and d.deadline == 2
    assert d.mu == pytest.approx(1221.666604, rel=REL, abs=ABS) and d.payment == pytest.approx(
        30.622777, rel=REL, abs=ABS
    )


def _f10(tau2: float = 1.0):
    sites = ErisSites((1, 2), np.array([[4.0, 24.0], [4.0, 24.0]]), ("gpu", "cpu"))
    cfg = ErisConfig(horizon=3)
    auc = ErisAuction(sites, NetworkSpec(budget_mb=1000.0), cfg)
    j1 = job(1, {1: 2, 2: 2}, 2, 2, [1, 1], [0, 2], 10.0)
    j2 = job(2, {1: 2, 2: 2}, 2, 2, [1, 1], [0, 2], 10.0, tau=tau2)
    return sites, cfg, auc, j1, j2


def test_f10_two_jobs_global():
    sites, cfg, auc, j1, j2 = _f10()
    menu1 = auc.build_menu(j1)
    assert [e.schedule.completion for e in menu1] == [1, 1, 1]
    d1 = auc.step(1, [j1])[0]
    assert d1.admitted and d1.mu == pytest.approx(1500.0) and d1.payment == 0.0
    p = d1.plan.slots[0]
    assert p.workers.tolist() == [2, 2] and p.ps_site == 0 and p.moves == {} and p.link_volume[0] == 20.0
    v = auc.prices(1)
    assert v.alpha[0] == pytest.approx(0.148154, rel=REL, abs=ABS)
    np.testing.assert_allclose(v.beta, [[30.622777, 2.162278], [30.622777, 0.778279]], rtol=REL, atol=ABS)
    np.testing.assert_allclose(v.res_cap, [[2, 20], [2, 22]])
    assert (auc.state.eta[:, :, 2:] == 0).all()
    menu2 = auc.build_menu(j2)
    assert [(e.deadline, e.schedule.completion) for e in menu2] == [(1, 1), (2, 2), (3, 2)]
    assert menu2[0].schedule.cost == pytest.approx(132.891852, rel=REL, abs=ABS)
    s1 = menu2[0].schedule.slots[0]
    assert s1.moves == {} and s1.workers.tolist() == [2, 2] and s1.ps_site == 1 and s1.link_volume[0] == 20.0
    d2 = auc.step(1, [j2])[0]
    assert d2.admitted and d2.deadline == 1
    assert d2.mu == pytest.approx(1367.108148, rel=REL, abs=ABS) and d2.payment == pytest.approx(
        132.891852, rel=REL, abs=ABS
    )
    v = auc.prices(1)
    assert v.alpha[0] == pytest.approx(0.318257, rel=REL, abs=ABS)
    np.testing.assert_allclose(v.beta, [[999, 4.623413], [999, 4.623413]], rtol=REL, atol=ABS)
    assert d1.utility + d2.utility == pytest.approx(3000.0)
    assert d1.payment + d2.payment == pytest.approx(132.891852, rel=REL, abs=ABS)
    assert d1.mu + d2.mu == pytest.approx(2867.108148, rel=REL, abs=ABS)
    dl = np.diff([0.0, *auc.dual_history])
    np.testing.assert_allclose(dl, [1963.709204, 9435.579519], rtol=REL, atol=ABS)
    np.testing.assert_allclose(np.diff([0.0, *auc.primal_history]), [1500, 1500])
    opt = opt_milp([j1, j2], sites, NetworkSpec(budget_mb=1000.0), cfg)
    assert opt.optimal and opt.objective == pytest.approx(3000.0, rel=REL, abs=ABS)


def test_f10_ratio_is_one():
    sites, cfg, _, j1, j2 = _f10()
    r = competitive_ratio([j1, j2], sites, NetworkSpec(budget_mb=1000.0), cfg)
    assert r.ratio == pytest.approx(1.0, rel=REL, abs=ABS)


def test_f11_utility_misreport():
    sites, cfg, auc, j1, j2 = _f10()
    auc.step(1, [j1])
    lie = job(2, {1: 2, 2: 2}, 2, 2, [1, 1], [0, 2], 10.0, tau=0.1)
    menu_true = auc.build_menu(j2)
    menu_lie = auc.build_menu(lie)
    assert [e.schedule.signature() for e in menu_true] == [e.schedule.signature() for e in menu_lie]
    pay = [float(lie.utility(e.schedule.completion - 1)) - e.schedule.cost for e in menu_lie[:2]]
    np.testing.assert_allclose(pay, [17.108148, 125.228938], rtol=REL, atol=ABS)
    snap = auc.snapshot()
    d_lie = auc.step(1, [lie])[0]
    assert d_lie.deadline == 2 and d_lie.payment == 0.0
    assert realised_utility(d_lie, j2, lie, cfg) == pytest.approx(1252.289381, rel=REL, abs=ABS)
    d_true = snap.step(1, [j2])[0]
    assert realised_utility(d_true, j2, j2, cfg) == pytest.approx(1367.108148, rel=REL, abs=ABS)


@pytest.mark.parametrize("tau, ok, mu, pay", [(0.1, False, 0.0, 0.0), (0.2, True, 123.172059, 176.827941)])
def test_f12_rejection_and_ir(tau, ok, mu, pay):
    sites = ErisSites((1,), np.array([[4.0]]), ("gpu",))
    cfg = ErisConfig(horizon=1)
    auc = ErisAuction(sites, NetworkSpec(), cfg)
    auc.state.commit(1, np.zeros(1), np.array([[3.0]]))
    assert auc.prices(1).beta[0, 0] == pytest.approx(176.827941, rel=REL, abs=ABS)
    d = auc.step(1, [job(1, {1: 1}, 1, 1, [1], [0], 0.0, tau=tau)])[0]
    assert d.admitted == ok
    assert d.mu == pytest.approx(mu, rel=REL, abs=1e-9) and d.payment == pytest.approx(pay, rel=REL, abs=1e-9)
    beta = auc.prices(1).beta[0, 0]
    assert beta == pytest.approx(999.0 if ok else 176.827941, rel=REL, abs=ABS)
    if ok:
        assert d.payment <= f(tau)(0)


def test_f13_opt_and_ratio():
    sites = ErisSites((1,), np.array([[1.0]]), ("gpu",))
    cfg = ErisConfig(horizon=2)
    A = job(1, {1: 1}, 1, 1, [1], [0], 0.0, tau=2.0)
    B = job(2, {1: 1}, 1, 1, [1], [0], 0.0, tau=1.0)
    opt = opt_milp([A, B], sites, None, cfg)
    lp = opt_milp([A, B], sites, None, cfg, relax=True)
    assert opt.objective == pytest.approx(4252.289381, rel=REL, abs=ABS) and lp.objective == pytest.approx(
        4252.289381, rel=REL, abs=ABS
    )
    r = competitive_ratio([A, B], sites, None, cfg)
    assert r.welfare == pytest.approx(4252.289381, rel=REL, abs=ABS) and r.ratio == pytest.approx(1.0)
    A2 = job(2, {1: 1}, 1, 1, [1], [0], 0.0, tau=2.0)
    B2 = job(1, {1: 1}, 1, 1, [1], [0], 0.0, tau=1.0)
    r2 = competitive_ratio([B2, A2], sites, None, cfg)
    assert r2.welfare == pytest.approx(4004.578761, rel=REL, abs=ABS) and r2.ratio == pytest.approx(
        1.061857, rel=REL, abs=ABS
    )


def test_f10_diagnostics():
    from marketsim.market.eris.diagnostics import check_feasibility, normalisation, small_job

    sites, cfg, auc, j1, j2 = _f10()
    d1, d2 = auc.step(1, [j1, j2])
    assert all(v == 0.0 for v in check_feasibility(auc, [j1, j2]).values())
    nz = normalisation(d2.utility, d2.plan, cfg, 2)
    assert nz.nu_d == pytest.approx(75.0) and nz.nu_k == pytest.approx(150.0)
    sd, sk = small_job(d2.plan, sites, auc.links.cap, cfg)
    assert sd == pytest.approx(0.199316, rel=REL, abs=ABS) and sk == pytest.approx(4.982892, rel=REL, abs=ABS)
