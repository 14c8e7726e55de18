"""Astraea invariants on random micro instances (hypothesis): feasibility (A11), capacity, work done by
completion, payments ≥ 0, own quota free, budget balance, Σg = R, truthful winners' utility ≥ 0,
fast search == reference search; and bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.market.astraea import (
    AstraeaParams,
    Cluster,
    JobSpec,
    Server,
    Tenant,
    check_feasible,
    collective_revenue,
    convex_utility,
    linear_utility,
    run_astraea,
    tenant_revenue,
)
from marketsim.market.astraea.accounting import true_completion
from marketsim.market.astraea.market import micro_jobs
from marketsim.market.errors import InputError
from marketsim.market.utility import LinearUtility


def micro_instance(seed: int) -> tuple[Cluster, list[JobSpec]]:
    """A random small cluster (2–4 servers, 1–3 tenants) and 1–7 jobs."""
    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 5))
    servers = tuple(Server(i, int(rng.integers(1, 5)), int(rng.integers(1, 3))) for i in range(S))
    U = int(rng.integers(1, 4))
    cw = sum(s.n_workers for s in servers)
    cp = sum(s.n_ps for s in servers)

    def split(total: int) -> list[int]:
        cuts = np.sort(rng.integers(0, total + 1, size=U - 1))
        return list(np.diff(np.concatenate(([0], cuts, [total]))).astype(int))

    qw, qp = split(cw), split(cp)
    tenants = tuple(Tenant(u + 1, int(qw[u]), int(qp[u])) for u in range(U))
    cl = Cluster(servers, tenants, float(rng.uniform(0.5, 2.0)), float(rng.uniform(0.5, 4.0)))
    return cl, micro_jobs(int(rng.integers(1, 8)), U, rng, prefix="j")


def micro_params(iseed: int, **kw: object) -> AstraeaParams:
    rng = np.random.default_rng(iseed + 1)
    base = dict(
        worker_count_mode=str(rng.choice(["elastic", "fixed"])),
        horizon_T=int(rng.choice([16, 32, 64])),
        lam=int(rng.choice([1, 2, 3])),
        pass2_charge=str(rng.choice(["full_eq2", "full_eq2", "beyond_quota"])),
        centralized_choice=str(rng.choice(["least_loaded_round", "best_fit", "lowest_index"])),
        mincostd_retry=bool(rng.random() < 0.8),
        admission_time_origin=str(rng.choice(["round_start", "arrival"])),
    )
    if rng.random() < 0.5:
        base.update(theta_mode="given", theta_w=float(rng.uniform(1.5, 40)), theta_p=float(rng.uniform(1.5, 40)))
    base.update(kw)
    return AstraeaParams(**base)  # type: ignore[arg-type]


SEEDS = st.integers(0, 2**31 - 1)


@settings(max_examples=60, deadline=None)
@given(SEEDS)
def test_invariants_random_instances(seed: int) -> None:
    cl, jobs = micro_instance(seed)
    params = micro_params(seed)
    r = run_astraea(cl, jobs, params)
    assert check_feasible(r) == []  # capacities, quotas in pass 1, 3e-3l, windows, budget balance
    by = {j.jid: j for j in jobs}
    assert set(r.outcomes) | set(r.unscheduled) == set(by) and not set(r.outcomes) & set(r.unscheduled)
    total_pay = 0.0
    for o in r.outcomes.values():
        # admitted jobs complete their work by the completion time
        assert true_completion(by[o.jid], o, cl.bw_worker_mbps) is not None
        assert o.payment >= 0
        total_pay += o.payment
        if o.pass_ == 1:
            assert o.payment == 0 and not o.income.any()  # own quota is free
        # admission control and IR on the ideal clock (claims 8, 16): F − posted cost = μ > 0 ≥ ...
        assert o.mu > params.tol_admit and o.ideal_value - o.posted_cost == pytest.approx(o.mu, abs=1e-9)
        assert o.ideal_value - o.payment >= -1e-9  # truthful winner's (ideal) utility ≥ 0
        if o.pass_ == 2 and params.pass2_charge == "beyond_quota":
            uw, up = o.unused_w[o.uidx], o.unused_p[o.uidx]
            if (uw >= o.sched.n_workers).all() and (up >= o.sched.n_ps).all():
                assert o.payment == 0  # fully inside its own (unused) quota: pays nothing
            assert o.income[o.uidx] == 0
        if o.pass_ == 2 and params.pass2_charge == "full_eq2":
            # net transfer of the payer = payment − self-income ∈ [0, payment]
            net = o.payment - o.income[o.uidx]
            assert -1e-9 <= net <= o.payment + 1e-9
    inc = r.incomes()
    assert abs(math.fsum(inc.tolist()) - total_pay) <= 1e-9 * max(1.0, total_pay)
    g = [t.total for t in tenant_revenue(r)]
    R = collective_revenue(r)
    assert abs(math.fsum(g) - R) <= 1e-9 * max(1.0, abs(R))


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_fast_search_equals_reference(seed: int) -> None:
    cl, jobs = micro_instance(seed)
    params = micro_params(seed, mincostc_pricing=str(np.random.default_rng(seed).choice(["per_slot", "start_slot"])))
    a = run_astraea(cl, jobs, params)
    b = run_astraea(cl, jobs, params.with_(search_impl="reference"))
    assert a.unscheduled == b.unscheduled
    assert set(a.outcomes) == set(b.outcomes)
    for jid, o in a.outcomes.items():
        p = b.outcomes[jid]
        assert (o.sched, o.pass_, o.batch, o.round, o.payment) == (p.sched, p.pass_, p.batch, p.round, p.payment)
        assert np.array_equal(o.income, p.income)


def test_random_job_order_is_seeded() -> None:
    cl, jobs = micro_instance(3)
    p = micro_params(3, job_order="random", seed=11)
    a, b = run_astraea(cl, jobs, p), run_astraea(cl, jobs, p)
    assert {k: v.sched for k, v in a.outcomes.items()} == {k: v.sched for k, v in b.outcomes.items()}
    assert check_feasible(a) == []


def test_pass1_zero_pricing_and_no_pass2() -> None:
    cl, jobs = micro_instance(5)
    r = run_astraea(cl, jobs, micro_params(5, pass1_pricing="zero", enable_pass2=False))
    assert all(o.pass_ == 1 for o in r.outcomes.values()) and check_feasible(r) == []


# bad inputs --------------------------------------------------------------------------------------
def _job(**kw: object) -> JobSpec:
    base = dict(
        jid="a",
        owner=1,
        arrival=0.0,
        epochs=1,
        chunks=2,
        minibatches_per_chunk=1,
        m_hours=1.0,
        G_ms=0.0,
        eps_MB=0.0,
        utility=linear_utility(-1, 10),
    )
    base.update(kw)
    return JobSpec(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"epochs": 0}, "epochs"),
        ({"chunks": -1}, "chunks"),
        ({"minibatches_per_chunk": 1.5}, "minibatches_per_chunk"),
        ({"m_hours": 0.0}, "m_hours"),
        ({"m_hours": float("nan")}, "m_hours"),
        ({"G_ms": -1.0}, "G_ms"),
        ({"eps_MB": -0.1}, "eps_MB"),
        ({"arrival": -1.0}, "arrival"),
        ({"arrival": float("inf")}, "arrival"),
        ({"utility": LinearUtility(0.0, 10.0, floor_at_zero=False)}, "utility.k"),
        ({"utility": LinearUtility(-1.0, 10.0)}, "floor_at_zero"),
        ({"utility": "fast"}, "utility"),
        ({"jid": ""}, "jid"),
        ({"gpu_request": -2}, "gpu_request"),
        ({"n_central_override": 0.0}, "n_central_override"),
    ],
)
def test_bad_job_inputs(kw: dict, field: str) -> None:
    with pytest.raises(InputError, match=field):
        _job(**kw)


def test_bad_utility_constructors() -> None:
    with pytest.raises(InputError, match="k"):
        linear_utility(0.0, 5)
    with pytest.raises(InputError, match="g"):
        linear_utility(-1.0, 0.0)
    with pytest.raises(InputError, match="e"):
        convex_utility(0.0, 1.0)
    with pytest.raises(InputError, match="kappa"):
        convex_utility(1.0, -1.0)


def test_bad_cluster_inputs() -> None:
    s = (Server(0, 2, 1), Server(1, 2, 1))
    with pytest.raises(InputError, match="n_workers"):
        Server(0, -1, 1)
    with pytest.raises(InputError, match="quota_ps"):
        Tenant(1, 2, -1)
    with pytest.raises(InputError, match="quota_workers.*must equal the cluster's 4 workers"):
        Cluster(s, (Tenant(1, 3, 2),))
    with pytest.raises(InputError, match="quota_ps"):
        Cluster(s, (Tenant(1, 4, 1),))
    with pytest.raises(InputError, match="tenants"):
        Cluster(s, ())
    with pytest.raises(InputError, match="uid"):
        Cluster(s, (Tenant(1, 2, 1), Tenant(1, 2, 1)))
    with pytest.raises(InputError, match="bw_worker_mbps"):
        Cluster(s, (Tenant(1, 4, 2),), bw_worker_mbps=0.0)
    with pytest.raises(InputError, match="bw_ps_mbps"):
        Cluster(s, (Tenant(1, 4, 2),), bw_ps_mbps=float("nan"))
    with pytest.raises(InputError, match="total_workers"):
        Cluster((Server(0, 0, 1),), (Tenant(1, 0, 1),))
    with pytest.raises(InputError, match="owner"):
        Cluster((Server(0, 2, 1, owner=9),), (Tenant(1, 2, 1),))


def test_bad_run_inputs() -> None:
    cl = Cluster((Server(0, 2, 1),), (Tenant(1, 2, 1),))
    with pytest.raises(InputError, match="jid"):
        run_astraea(cl, [_job(), _job()])
    with pytest.raises(InputError, match="owner"):
        run_astraea(cl, [_job(owner=3)])
    with pytest.raises(InputError, match="gpu_request"):
        run_astraea(cl, [_job()], AstraeaParams(worker_cap_source="trace_gpus"))
    for kw, field in [
        ({"lam": 0}, "lam"),
        ({"theta_mode": "given", "theta_w": 1.0, "theta_p": 2.0}, "theta_w"),
        ({"theta_mode": "given", "theta_w": 2.0}, "theta_p"),
        ({"theta_scale": 0.0}, "theta_scale"),
        ({"horizon_T": 3}, "horizon_T"),
        ({"worker_count_mode": "flexible"}, "worker_count_mode"),
        ({"job_order": "lifo"}, "job_order"),
        ({"tol_admit": -1.0}, "tol_admit"),
    ]:
        with pytest.raises(InputError, match=field):
            AstraeaParams(**kw)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="cluster"):
        run_astraea("cluster", [_job()])  # type: ignore[arg-type]


def test_empty_workload() -> None:
    cl = Cluster((Server(0, 2, 1),), (Tenant(1, 2, 1),))
    r = run_astraea(cl, [])
    assert r.outcomes == {} and r.unscheduled == [] and collective_revenue(r) == 0
