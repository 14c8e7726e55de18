"""Eris topology mode (per-link capacity along shortest paths) and incentive probes."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketsim.market.eris import ErisAuction, ErisConfig, ErisJob, ErisSites, NetworkSpec, realised_utility, run_eris
from marketsim.market.eris.diagnostics import check_feasibility
from marketsim.market.eris.workload import eris_topology, generate_jobs
from marketsim.market.topology import random_geometric_edge
from marketsim.market.utility import SigmoidUtility, TabularUtility


def test_topology_mode_on_core_edge_graph():
    rng = np.random.default_rng(11)
    G, edge_sites = random_geometric_edge(
        8, rng, capacity={"gpu": 2.0, "cpu": 12.0, "ram": 16.0}, bandwidth_range_gbps=(0.001, 0.003)
    )
    sites = ErisSites.from_edge_sites(edge_sites)
    jobs = generate_jobs(10, 8, 20, rng, site_ids=sites.ids)
    net = NetworkSpec(mode="topology", graph=G)
    cfg = ErisConfig(horizon=30)
    out = run_eris(jobs, sites, net, cfg)
    auc = out.auction
    assert auc.links.L == G.number_of_edges()
    viol = check_feasibility(auc, jobs)
    assert all(v <= 1e-9 for v in viol.values()), viol
    assert (auc.state.rho[:, 1:] <= auc.links.cap[:, None] * (1 + 1e-9)).all()
    assert out.accepted >= 1


def test_topology_scenario_runs_and_respects_links():
    inst = eris_topology(np.random.default_rng(4), R=12, I=15, T=40)
    out = run_eris(list(inst.jobs), inst.sites, inst.network, inst.config)
    viol = check_feasibility(out.auction, list(inst.jobs))
    assert all(v <= 1e-9 for v in viol.values()), viol
    # bandwidth_mbps * 60 * 20 / 8 MB per slot
    caps = sorted(set(np.round(out.auction.links.cap, 6)))
    assert set(caps) <= {1500.0, 3000.0, 7500.0}


def test_latency_filter_blocks_far_pairs():
    G = nx.path_graph([1, 2, 3])
    for u, v in G.edges:
        G.edges[u, v].update(capacity_mb=1000.0, latency_ms=10.0)
    sites = ErisSites((1, 2, 3), np.array([[0.0], [0.0], [4.0]]), ("gpu",))
    j = ErisJob(1, 1, SigmoidUtility(3000.0, 1 / 3, 0), {1: 2}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    far = ErisAuction(sites, NetworkSpec(mode="topology", graph=G, max_path_latency_ms=15.0), ErisConfig(horizon=2))
    assert not far.step(1, [j])[0].admitted  # site 1 -> 3 is 20 ms away: not admissible
    near = ErisAuction(sites, NetworkSpec(mode="topology", graph=G), ErisConfig(horizon=2))
    d = near.step(1, [j])[0]
    assert d.admitted and d.plan.slots[0].moves == {(0, 2): 2}
    np.testing.assert_allclose(d.plan.slots[0].link_volume, [4.0, 4.0])  # both links of the path


def test_global_budget_in_topology_mode():
    G = nx.path_graph([1, 2])
    G.edges[1, 2].update(capacity_mb=1000.0)
    sites = ErisSites((1, 2), np.array([[0.0], [4.0]]), ("gpu",))
    j = ErisJob(1, 1, SigmoidUtility(3000.0, 1 / 3, 0), {1: 3}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    auc = ErisAuction(sites, NetworkSpec(mode="topology", graph=G, global_budget_mb=4.0), ErisConfig(horizon=2))
    d = auc.step(1, [j])[0]
    assert d.admitted and d.completion == 2  # 2 MB per chunk, global B = 4 MB per slot: 2 + 1 chunks
    assert auc.links.names == ("1-2", "B")


def _probe_setup(seed: int):
    rng = np.random.default_rng(seed)
    R = 3
    sites = ErisSites((1, 2, 3), rng.integers(1, 5, (R, 2)).astype(float), ("gpu", "cpu"))
    jobs = []
    for i in range(4):
        D = rng.integers(0, 3, R)
        D[0] += 1
        jobs.append(
            ErisJob(
                i + 1,
                1,
                SigmoidUtility(3000 * rng.uniform(0.2, 2), 1 / 3, 0),
                {r + 1: int(D[r]) for r in range(R)},
                int(rng.integers(1, 3)),
                np.array([1.0, 1.0]),
                np.array([0.0, 1.0]),
                int(rng.integers(1, 3)),
                float(rng.choice([0.0, 5.0])),
            )
        )
    return sites, jobs


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.1, 2.0, 4.0]), st.integers(0, 3))
def test_utility_misreport_never_helps(seed, factor, who):
    """C3(a) at frozen prices: the menu ignores f, so a scaled or step-shaped f cannot raise u_i."""
    sites, jobs = _probe_setup(seed)
    cfg = ErisConfig(horizon=4)
    auc = ErisAuction(sites, NetworkSpec(budget_mb=30.0), cfg)
    for j in jobs[:who]:
        auc.step(1, [j])
    true = jobs[who]
    snap = auc.snapshot()
    u_true = realised_utility(auc.step(1, [true])[0], true, true, cfg)
    vals = np.asarray(true.utility(np.arange(4)), float)
    lies = [
        TabularUtility(tuple(vals * factor)) if factor > 0 else TabularUtility((0.0,) * 4),
        TabularUtility((float(vals[0]) * max(factor, 0.1),) + (0.0,) * 3),
    ]
    for f_lie in lies:
        lie = ErisJob(
            true.job_id,
            1,
            f_lie,
            true.data,
            true.epochs,
            true.worker_demand,
            true.ps_demand,
            true.proc_capacity,
            true.param_mb,
        )
        s = snap.snapshot()
        d = s.step(1, [lie])[0]
        assert realised_utility(d, true, lie, cfg) <= u_true + 1e-9


def test_consequence_model_for_size_misreports():
    sites = ErisSites((1,), np.array([[4.0]]), ("gpu",))
    cfg = ErisConfig(horizon=3)
    f = SigmoidUtility(3000.0, 1 / 3, 0)
    true = ErisJob(1, 1, f, {1: 4}, 2, np.array([1.0]), np.array([0.0]), 2, 0.0)
    under_d = ErisJob(1, 1, f, {1: 3}, 2, np.array([1.0]), np.array([0.0]), 2, 0.0)
    under_e = ErisJob(1, 1, f, {1: 4}, 1, np.array([1.0]), np.array([0.0]), 2, 0.0)
    over = ErisJob(1, 1, f, {1: 5}, 3, np.array([1.0]), np.array([0.0]), 2, 0.0)
    for lie, realised in ((under_d, False), (under_e, False), (over, True)):
        d = ErisAuction(sites, NetworkSpec(), cfg).step(1, [lie])[0]
        assert d.admitted
        u = realised_utility(d, true, lie, cfg)
        if realised:
            assert u == pytest.approx(float(f(d.completion - 1)) - d.payment)
        else:
            assert u == pytest.approx(-d.payment)
    half_w = ErisJob(1, 1, f, {1: 4}, 2, np.array([0.5]), np.array([0.0]), 2, 0.0)
    d = ErisAuction(sites, NetworkSpec(), cfg).step(1, [half_w])[0]
    assert realised_utility(d, true, half_w, cfg) == pytest.approx(-d.payment)  # kappa = 0.5: too slow
