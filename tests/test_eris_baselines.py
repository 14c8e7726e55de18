"""Eris baselines (spec §4): fixture F14, registry names, feasibility and accounting."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market import registry
from marketsim.market.eris import ErisAuction, ErisConfig, ErisJob, ErisSites, run_eris
from marketsim.market.eris.baselines import antman, liquid, tiresias, worker_count
from marketsim.market.eris.diagnostics import check_feasibility
from marketsim.market.eris.workload import eris_simulator, eris_testbed, eris_topology, generate_jobs
from marketsim.market.utility import SigmoidUtility

F = SigmoidUtility(3000.0, 1 / 3, 0.0)


def _f14():
    sites = ErisSites((1,), np.array([[1.0]]), ("gpu",))
    cfg = ErisConfig(horizon=6)
    j1 = ErisJob(1, 1, F, {1: 4}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    j2 = ErisJob(2, 1, F, {1: 1}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    return sites, cfg, [j1, j2]


@pytest.mark.parametrize(
    "priority, W, comp",
    [
        ("remaining_service", 2125.825582, {1: 5, 2: 1}),
        ("attained_service", 1878.114963, {1: 5, 2: 2}),
    ],
)
def test_f14_tiresias(priority, W, comp):
    sites, cfg, jobs = _f14()
    assert worker_count(jobs[0], sites) == 1 and worker_count(jobs[1], sites) == 1
    out = tiresias(jobs, sites, None, cfg, priority=priority)
    assert out.welfare == pytest.approx(W, rel=1e-6)
    assert {d.job_id: d.completion for d in out.decisions} == comp
    assert all(d.payment == 0.0 for d in out.decisions)
    if priority == "attained_service":
        assert [p.t for p in out.decisions[0].plan.slots] == [1, 3, 4, 5]


def test_registered_names():
    names = registry.names("auction")
    for n in ("eris", "tiresias", "antman", "liquid"):
        assert n in names
        assert registry.get(n).paper == "eris"
    assert registry.get("eris").claims_truthful
    sites, cfg, jobs = _f14()
    out = registry.get("eris").fn(jobs, sites, None, cfg)
    assert out.accepted == 2


@pytest.mark.parametrize("mode", ["global", "topology"])
@pytest.mark.parametrize("fn", [tiresias, antman, liquid])
def test_baselines_feasible_and_accounted(fn, mode):
    rng = np.random.default_rng(7)
    inst = (eris_simulator if mode == "global" else eris_topology)(rng, R=8, I=12, T=30)
    out = fn(list(inst.jobs), inst.sites, inst.network, inst.config)
    auc = ErisAuction(inst.sites, inst.network, inst.config)  # only for links/config in the checker
    viol = check_feasibility(auc, list(inst.jobs), out.decisions)
    assert all(v <= 1e-9 for v in viol.values()), viol
    for d in out.decisions:
        assert d.payment >= 0
        if d.admitted:
            assert d.utility - d.payment >= -1e-9  # negative-payoff jobs dropped (D13)
    assert out.welfare >= 0 and out.revenue >= 0
    # per-slot ledger never exceeds capacity
    assert (out.state.eta[:, :, 1:] <= inst.sites.capacity[:, :, None] + 1e-9).all()


def test_eris_vs_baselines_on_testbed_runs():
    rng = np.random.default_rng(3)
    inst = eris_testbed(rng)
    e = run_eris(list(inst.jobs), inst.sites, inst.network, inst.config)
    for fn in (tiresias, antman, liquid):
        out = fn(list(inst.jobs), inst.sites, inst.network, inst.config)
        assert np.isfinite(out.welfare)
    assert e.welfare(inst.jobs) > 0


def test_antman_bernoulli_needs_rng():
    sites, cfg, jobs = _f14()
    with pytest.raises(ValueError, match="rng"):
        antman(jobs, sites, None, cfg, rg_rule="bernoulli")
    a = antman(jobs, sites, None, cfg, rg_rule="bernoulli", rng=np.random.default_rng(1))
    b = antman(jobs, sites, None, cfg, rg_rule="bernoulli", rng=np.random.default_rng(1))
    assert a.welfare == b.welfare


def test_generator_is_seeded_and_shaped():
    a = generate_jobs(20, 10, 30, np.random.default_rng(5))
    b = generate_jobs(20, 10, 30, np.random.default_rng(5))
    assert [(j.arrival, j.data, j.epochs, j.proc_capacity) for j in a] == [
        (j.arrival, j.data, j.epochs, j.proc_capacity) for j in b
    ]
    assert [j.job_id for j in a] == list(range(1, 21))
    assert all(a[i].arrival <= a[i + 1].arrival for i in range(19))
    for j in a:
        assert j.total_chunks in (27, 115, 150) and 20 <= j.epochs <= 30 and 2 <= len(j.data) <= 6
        assert all(v >= 1 for v in j.data.values()) and j.ps_demand[0] == 0
    inst = eris_simulator(np.random.default_rng(0))
    assert inst.sites.R == 50 and len(inst.jobs) == 100 and inst.config.horizon == 150
    assert inst.network.mode == "global" and inst.network.budget_mb == 20480.0


def test_sweeps_cover_the_resolved_ranges():
    from marketsim.market.eris.workload import SWEEP_GAMMA, SWEEP_I, SWEEP_R, sweep

    rng = np.random.default_rng(0)
    assert [(x, i.sites.R) for x, i in sweep("R", rng)] == [(R, R) for R in SWEEP_R]
    assert [(x, len(i.jobs)) for x, i in sweep("I", rng)] == [(I, I) for I in SWEEP_I]
    assert [(x, i.config.gamma_d, i.config.gamma_k) for x, i in sweep("gamma", rng)] == [(g, g, g) for g in SWEEP_GAMMA]
    with pytest.raises(ValueError, match="sweep kind"):
        sweep("T", rng)


@pytest.mark.parametrize("fn", [antman, liquid])
def test_arrival_configuration_sees_the_running_jobs(fn):
    """AntMan and Liquid fix a job's workers at its arrival by the prices and free room of that slot.
    Two sites of 1 GPU: job 1 (arrives in slot 1, 4 chunks on site 1, one worker) holds site 1 for
    slots 1-4; job 2 arrives in slot 2 with its chunk on site 1. The free site is site 2, so job 2
    runs there in slot 2 (its chunk moved) and completes in slot 2. Choosing the configuration before
    job 1 has claimed slot 2 sees an empty cluster, puts job 2 on site 1 and delays it to slot 5."""
    sites = ErisSites((1, 2), np.array([[1.0], [1.0]]), ("gpu",))
    cfg = ErisConfig(horizon=8)
    rg = SigmoidUtility(4500.0, 1 / 3, 0.0)  # tau = 1.5: AntMan's resource-guarantee class
    j1 = ErisJob(1, 1, rg, {1: 4}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    j2 = ErisJob(2, 2, rg, {1: 1}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    out = fn([j1, j2], sites, None, cfg)
    comp = {d.job_id: d.completion for d in out.decisions}
    assert comp == {1: 4, 2: 2}
    (slot,) = out.decisions[1].plan.slots
    assert slot.t == 2 and np.asarray(slot.usage)[:, 0].tolist() == [0.0, 1.0]
