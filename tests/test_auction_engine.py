"""Shared engine: ledger, price function, greedy/DP vs brute force, registry, baselines."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.market import registry
from marketsim.market.auction import PriceLedger, dp_forward, exp_price, greedy_cost_vector, reconstruct
from marketsim.market.auction.offline import competitive_ratio
from marketsim.market.errors import InputError


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_dp_matches_brute_force(nT, W, seed):
    rng = np.random.default_rng(seed)
    N = int(rng.integers(1, 4))
    costs = np.cumsum(np.concatenate([np.zeros((nT, 1)), rng.uniform(0, 3, (nT, N))], axis=1), axis=1)
    costs[rng.random((nT, N + 1)) < 0.15] = np.inf
    costs[:, 0] = 0
    theta, arg = dp_forward(costs, W)
    for j in range(nT):
        best = np.inf
        for ns in itertools.product(range(N + 1), repeat=j + 1):
            if sum(ns) >= W:
                best = min(best, sum(costs[k, n] for k, n in enumerate(ns)))
        assert theta[j, W] == pytest.approx(best, abs=1e-9) or (np.isinf(best) and np.isinf(theta[j, W]))
        if np.isfinite(best):
            units = reconstruct(arg, j, W)
            assert sum(units) >= W
            assert sum(costs[k, n] for k, n in enumerate(units)) == pytest.approx(best, abs=1e-9)


def test_greedy_cost_vector_ties_by_id():
    cost, order = greedy_cost_vector(np.array([2.0, 1.0, 1.0]), np.array([1, 1, 1]), 4)
    assert order.tolist() == [1, 2, 0]
    np.testing.assert_allclose(cost[:4], [0, 1, 2, 4])
    assert np.isinf(cost[4])


def test_ledger_and_price_errors():
    with pytest.raises(InputError, match="U"):
        exp_price(1, 2, 2.0, 1.0)
    with pytest.raises(InputError, match="capacity"):
        PriceLedger(np.zeros((0, 1)), 3, 0.0, 1.0)
    with pytest.raises(InputError, match="capacity"):
        PriceLedger([[-1.0]], 3, 0.0, 1.0)
    with pytest.raises(InputError, match="T"):
        PriceLedger([[1.0]], 0, 0.0, 1.0)
    with pytest.raises(InputError, match="U"):
        PriceLedger([[1.0]], 2, 1.0, 0.0)
    led = PriceLedger([[2.0]], 2, 0.0, np.log(16))
    with pytest.raises(InputError, match="exceeds capacity"):
        led.reserve(0, np.array([[3.0]]))
    led.reserve(0, np.array([[1.0]]))
    assert led.prices()[0, 0, 0] == pytest.approx(4.0)
    assert led.prices()[1, 0, 0] == pytest.approx(1.0)


def test_competitive_ratio_helper():
    assert competitive_ratio(3.0, 2.0) == 1.5
    assert competitive_ratio(0.0, 0.0) == 1.0
    assert competitive_ratio(1.0, 0.0) == np.inf
    with pytest.raises(InputError, match="online_welfare"):
        competitive_ratio(1.0, float("nan"))


def test_registry_names():
    names = registry.names("auction")
    for n in ("oasis", "pdors", "oasis-pdors", "fifo", "drf", "dorm", "rrh"):
        assert n in names
        assert registry.get(n).family == "auction"


@pytest.mark.parametrize("name", ["fifo", "drf", "dorm", "rrh"])
@pytest.mark.parametrize("seed", [0, 1])
def test_baselines_oasis_instances(name, seed):
    from marketsim.market.oasis.generators import oasis_tiny_instance

    cl, reqs, _ = oasis_tiny_instance(np.random.default_rng(seed), H=2)
    mech = registry.get(name).fn(cl, rng=np.random.default_rng(5))
    decs = mech.run(reqs)
    assert sorted(d.job_id for d in decs) == [r.job_id for r in reqs]
    byid = {r.job_id: r for r in reqs}
    use = np.zeros((cl.T, cl.H + cl.K, 1))
    for d in decs:
        assert d.payment == 0 and d.utility >= 0
        if d.schedule is not None:
            q = byid[d.job_id]
            for t in d.schedule.slots:
                use[t] += np.outer(d.schedule.workers[t], q.worker_demand) + np.outer(d.schedule.ps[t], q.ps_demand)
        if d.completion is not None:
            q = byid[d.job_id]
            done = sum(
                min(d.schedule.total_workers(t), q.ps_den * d.schedule.total_ps(t) / q.ps_num) for t in d.schedule.slots
            )
            assert done >= q.work_units - 1e-9
    cap = np.vstack([cl.worker_capacity, cl.ps_capacity])
    assert (use <= cap[None] + 1e-9).all()


@pytest.mark.parametrize("name", ["fifo", "drf", "dorm", "oasis-pdors"])
def test_baselines_pdors_instances(name):
    from marketsim.market.pdors import pdors_realised
    from marketsim.market.pdors.generators import pdors_tiny_instance

    cl, jobs, _ = pdors_tiny_instance(np.random.default_rng(2), I=5, T=5, H=3, cap=8.0)
    fn = registry.get(name).fn
    mech = fn(cl, calib=jobs) if name == "oasis-pdors" else fn(cl, rng=np.random.default_rng(1))
    decs = mech.run(jobs)
    byid = {j.job_id: j for j in jobs}
    use = np.zeros((cl.T, cl.H, 1))
    for d in decs:
        if d.schedule is not None:
            j = byid[d.job_id]
            for t in d.schedule.slots:
                use[t] += np.outer(d.schedule.workers[t], j.worker_demand) + np.outer(d.schedule.ps[t], j.ps_demand)
            if d.completion is not None:
                assert pdors_realised(j, d.schedule)[0]
    assert (use <= cl.capacity[None] + 1e-9).all()


def test_baseline_bad_inputs():
    from marketsim.market.oasis.generators import oasis_tiny_instance
    from marketsim.market.oasis.mechanisms import make_baseline

    cl, _, _ = oasis_tiny_instance(np.random.default_rng(0))
    with pytest.raises(InputError, match="baseline"):
        make_baseline("lifo", cl)
    with pytest.raises(InputError, match="cluster"):
        make_baseline("fifo", object())
    with pytest.raises(InputError, match="rng"):
        make_baseline("fifo", cl, rng=42)
