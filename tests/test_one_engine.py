"""One round engine for every workload (issue #31): a synthetic scenario and the same workload written
as a trace give identical records; the Mesa agents act at the engine's decision points; ties between
identical reports are a seeded draw, not row order; forced leaves, host failures and healing, racks,
restarts (migration cost), tenant weights and the class realisations are the engine's."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import marketsim.agents.trace_rounds as tr_mod
from marketsim.agents.config import ModelConfig, ServerFailure, TraceWorkload
from marketsim.agents.model import MarketModel
from marketsim.agents.server import GPUServerAgent
from marketsim.agents.strategies import ReportVector, ScaleDims
from marketsim.agents.tenant import TenantAgent
from marketsim.market.errors import InputError
from marketsim.market.topology import single_rack
from marketsim.market.traces import GAVEL_TRACE, Trace, data_path
from marketsim.scenarios.loader import load_scenario, parse_scenario

SYNTHETIC = """
name = "one_engine"
policies = ["oef-noncoop", "gavel", "gandiva-fair", "gavel-max-min-perf"]
rounds = 30
seed = 5
placement = "auto"
realisation = "own"
migration_cost_s = 30.0
[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]
gpus_per_host = 2
racks = 2
[workload]
tenants = 5
jobs_per_tenant = 4
arrival_window_s = 3000.0
weights = [1.0, 2.0, 1.0, 1.0, 0.5]
[[tenant]]
index = 1
leave_s = 4000.0
[[tenant]]
index = 3
job_types = ["LSTM", "VGG"]
[[variant]]
name = "liar"
tenant = 2
strategy = "fast"
factor = 1.4
"""


def _written_as_a_trace(config: ModelConfig) -> ModelConfig:
    """The synthetic config's workload written out by hand as a Trace (jobs by arrival, ties in
    tenant then job order; steps = work; throughput of g GPUs = g x the tenant's true speedups),
    its tenants as the trace's users with their strategies, weights and leaves, and every setting
    the synthetic config resolves written explicitly."""
    jobs = [(j.arrival, ti, qi, t, j) for ti, t in enumerate(config.tenants) for qi, j in enumerate(t.jobs)]
    jobs.sort(key=lambda r: (r[0], r[1], r[2]))
    rows = [np.asarray(t.speedups[j.job_type], dtype=float) / t.speedups[j.job_type][0] * j.workers
            for _, _, _, t, j in jobs]  # fmt: skip
    trace = Trace(
        job_id=np.array([j.job_id for *_, j in jobs]),
        job_type=np.array([j.job_type for *_, j in jobs]),
        scale=np.array([j.workers for *_, j in jobs]),
        total_steps=np.array([j.work for *_, j in jobs]),
        arrival_s=np.array([j.arrival for *_, j in jobs]),
        priority=np.ones(len(jobs)),
        user=np.array([t.tenant_id for *_, t, _ in jobs]),
        duration_s=np.zeros(len(jobs)),
    )
    tw = TraceWorkload(
        trace,
        np.array(rows),
        trace.user.copy(),
        "user",
        reallocation_interval_s=0.0,
        until_done=False,
        strategies={t.tenant_id: t.strategy for t in config.tenants},
        tenant_weights={t.tenant_id: t.weight for t in config.tenants},
        leave_at={t.tenant_id: t.leave_at for t in config.tenants if t.leave_at is not None},
    )
    return ModelConfig(config.cluster, (), policy=config.policy, rounds=config.rounds, placement="auto",
                       kappa=0.1, migration_cost_s=config.migration_cost_s, trace=tw,
                       realisation=config.resolved_realisation)  # fmt: skip


@pytest.mark.parametrize("policy", ["oef-noncoop", "gavel", "gandiva-fair", "gavel-max-min-perf"])
@pytest.mark.parametrize("variant", ["truthful", "liar"])
def test_a_synthetic_scenario_equals_its_workload_written_as_a_trace(policy: str, variant: str) -> None:
    """Must show (issue #31): the synthetic run and the run of its workload written as a trace give
    identical per-round records and completions (OEF's rounding, Gavel's lease, Gandiva_fair's
    lottery; hosts in two racks, restarts charged, a forced leave, tenant weights, a tenant with two
    job types, a liar)."""
    scen = parse_scenario(tomllib.loads(SYNTHETIC), "one_engine")
    config, rng = scen.model_inputs(policy, variant, 11)
    _, rng2 = scen.model_inputs(policy, variant, 11)
    assert config.trace is None and len(config.tenants) == 5
    twin = _written_as_a_trace(config)
    a = MarketModel(config, rng=rng).run()
    b = MarketModel(twin, rng=rng2).run()
    ta, tb = a.tidy(), b.tidy()
    assert len(ta) > 500 and set(ta["tenant"]) == set(tb["tenant"]) and len(a.completions()) > 5
    pd.testing.assert_frame_equal(ta, tb)
    pd.testing.assert_frame_equal(a.completions(), b.completions())
    assert a.events == b.events and any(e["event"] == "leave" for e in a.events)
    if a.auctioneer.realisation == "oef-rounding":  # the straggler panel's measure is there too
        assert ta.loc[ta["measure"] == "cross_type_workers", "value"].sum() > 0


# -------------------------------------------------------------------------------------------------
# agents that act


class CountingScale:
    """A ScaleDims lie that counts how often it is consulted."""

    def __init__(self, factors: dict[int, float]) -> None:
        self.inner = ScaleDims(factors)
        self.tags = self.inner.tags
        self.calls = 0

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.calls += 1
        return self.inner.report(job_type, true_w, rng)


TENANT4 = """
name = "tenant4"
policies = ["oef-noncoop"]
replications = 1
seed = 1
placement = "auto"
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [3, 3, 3]
gpus_per_host = 2
round_seconds = 1800.0
[workload]
trace = "{trace}"
tenancy = 4
max_jobs = 16
[[variant]]
name = "liar"
tenant = "t2"
strategy = "scale"
factors = {{ v100 = 2.0 }}
"""


def test_agents_are_called_at_the_engines_decision_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Must show (issue #31): 16 trace jobs, 4 tenants, hosts, a liar. The liar's strategy is
    consulted at every policy solve at which it has an active job (and only then); the server
    agents hold every round's leases (a Mesa call per host and round); every tenant's agent arrives
    with its first job and is removed when its last job is done."""
    path = tmp_path / "t4.toml"
    path.write_text(TENANT4.format(trace=data_path(GAVEL_TRACE)))
    scen = load_scenario(path)
    config, rng = scen.model_inputs("oef-noncoop", "liar", 0)
    liar = CountingScale({2: 2.0})
    config = replace(config, trace=replace(config.trace, strategies={**config.trace.strategies, "t2": liar}))
    holds: list[str] = []
    inner_hold = GPUServerAgent.hold

    def hold(self: GPUServerAgent, leases: dict) -> None:
        holds.append(self.host_id)
        inner_hold(self, leases)

    monkeypatch.setattr(GPUServerAgent, "hold", hold)
    model = MarketModel(config, rng=rng)
    eng = model.auctioneer.trace
    tt = model.auctioneer.tenants
    solves_with_liar = []
    inner_solve = eng._reset_and_solve

    def solve(m: np.ndarray) -> None:
        solves_with_liar.append(bool((model.workload.tenants[eng.active] == "t2").any()))
        inner_solve(m)

    eng._reset_and_solve = solve  # type: ignore[method-assign]
    model.progress = False
    steps = 0
    while model.running:
        model.step()
        steps += 1
        assert len(set(holds)) <= len(model.servers)
    assert len(model.completions()) == 16 and eng.solves == len(solves_with_liar) > 3
    agent = tt.departed["t2"]
    assert agent.report_calls == sum(solves_with_liar) > 2  # consulted at every solve it was active in
    assert liar.calls >= agent.report_calls  # once per job type of its active jobs at each of them
    assert len(holds) >= steps  # the server agents hold the leases every round
    assert sorted(tt.departed) == ["t0", "t1", "t2", "t3"] and not tt.agents  # every finished tenant left
    assert TenantAgent not in model.agents_by_type or len(model.agents_by_type[TenantAgent]) == 0
    assert all(a not in model.agents for a in tt.departed.values())
    events = [(e["tenant"], e["event"]) for e in model.events]
    assert sorted(events) == sorted([(t, "arrive") for t in tt.departed] + [(t, "exit") for t in tt.departed])
    f = model.tidy()
    mine = f[(f["tenant"] == "t2") & f["measure"].isin(["est", "est_reported"])]
    w = mine.pivot_table(index="round", columns="measure", values="value")
    assert (w["est_reported"] > w["est"] + 1e-9).any()  # its reports reached the policy


def test_without_agents_the_fast_path_makes_no_agent_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gavel's trace with one tenant per job and no variant: no tenant agent exists, no strategy is
    consulted, and rounds are merged where nothing changes (the fast path)."""
    scen = load_scenario("gavel_trace")
    wl = replace(scen.workload, trace=replace(scen.workload.trace, max_jobs=60))
    scen = replace(scen, workload=wl)
    model = scen.build_model("gavel-max-min-perf", "truthful", 0)
    model.progress = False
    model.run()
    assert model.auctioneer.trace.reporter is None and not model.auctioneer.tenants.agents
    assert not model.auctioneer.tenants.departed and len(model.completions()) == 60
    t = model.tidy()
    assert t.loc[t["measure"] == "merged_rounds", "value"].max() > 1


# -------------------------------------------------------------------------------------------------
# ties between identical reports


def _two_tenant_trace(order: str, lie: bool) -> ModelConfig:
    """Tenants a (1 / 2 steps/s on K80 / V100) and b (1 / 5); b copies a's speedups when lying.
    One K80 and one V100; ``order`` puts a's or b's job first in the trace (both arrive at 0)."""
    rows = {"a": [1.0, 2.0], "b": [1.0, 5.0]}
    names = list(order)
    trace = Trace(job_id=np.array(names), job_type=np.array(["m"] * 2), scale=np.array([1, 1]),
                  total_steps=np.array([7200.0, 7200.0]), arrival_s=np.zeros(2), priority=np.ones(2),
                  user=np.array(names), duration_s=np.zeros(2))  # fmt: skip
    strategies = {"b": ReportVector((1.0, 2.0))} if lie else {}
    tw = TraceWorkload(trace, np.array([rows[n] for n in names]), trace.user.copy(), "user",
                       reallocation_interval_s=0.0, strategies=strategies)  # fmt: skip
    cluster = single_rack([("k80", 1), ("v100", 1)], round_seconds=360.0)
    return ModelConfig(cluster, (), policy="oef-noncoop", rounds=1000, trace=tw)


def _b_jct(order: str, lie: bool, seed: int) -> float:
    m = MarketModel(_two_tenant_trace(order, lie), rng=seed).run()
    c = m.completions().set_index("job_id")
    return float(c.loc["b", "jct_s"])


def test_identical_reports_are_tied_by_a_seeded_draw_not_by_trace_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tenant b copies tenant a's speedups, so the policy sees two identical rows: non-cooperative
    OEF's LP then gives one of them the slow GPU, and in row order that was the first row, so b's
    gain from the lie depended on whose job came first in the trace. Now which identical row gets
    which output row is a seeded draw by the rows' names: for every seed the gain is the same in
    both trace orders, and over seeds both outcomes occur. With the draw switched off (row order)
    the two orders give different gains: the test can fail."""
    gains = {}
    for seed in range(12):
        per_order = []
        for order in ("ab", "ba"):
            truth = _b_jct(order, False, seed)
            per_order.append(truth / _b_jct(order, True, seed) - 1.0)
        assert per_order[0] == pytest.approx(per_order[1], rel=1e-12, abs=1e-12), seed
        gains[seed] = per_order[0]
    assert len({round(g, 6) for g in gains.values()}) == 2  # the draw matters: two outcomes over seeds
    monkeypatch.setattr(tr_mod, "TIE_BREAK", False)
    by_order = [_b_jct(o, False, 0) / _b_jct(o, True, 0) - 1.0 for o in ("ab", "ba")]
    assert abs(by_order[0] - by_order[1]) > 0.05  # row order decides without the draw


# -------------------------------------------------------------------------------------------------
# tests with teeth: each pins one engine step by hand (issue #31 item 5)


def _trace_config(rows: list[list[float]], steps: list[float], users: list[str], cluster, policy: str,
                  **kw: object) -> ModelConfig:  # fmt: skip
    n = len(rows)
    names = [str(i) for i in range(n)]
    trace = Trace(job_id=np.array(names), job_type=np.array(["m"] * n), scale=np.ones(n, dtype=int),
                  total_steps=np.array(steps, dtype=float), arrival_s=np.zeros(n), priority=np.ones(n),
                  user=np.array(users), duration_s=np.zeros(n))  # fmt: skip
    tenancy = "job" if users == names else "user"
    twkw = {k: kw.pop(k) for k in ("reallocation_interval_s", "tenant_weights") if k in kw}
    tw = TraceWorkload(trace, np.array(rows, dtype=float), np.array(users), tenancy, **twkw)
    return ModelConfig(cluster, (), policy=policy, rounds=1000, trace=tw, **kw)


def test_gavel_max_min_perf_solves_identical_jobs_once_with_equal_fractions() -> None:
    """(a) The engine passes ``aggregate = True`` to gavel-max-min-perf (NATIVE_OPTIONS): every solve
    of a trace with repeated job types is solved on its distinct rows, and identical jobs get
    identical time fractions."""
    scen = load_scenario("gavel_trace")
    wl = replace(scen.workload, trace=replace(scen.workload.trace, max_jobs=120))
    model = replace(scen, workload=wl).build_model("gavel-max-min-perf", "truthful", 0)
    eng = model.auctioneer.trace
    seen: list[tuple[object, object, int]] = []
    fn = eng.mechanism.fn

    def spy(T, m, **kw):  # noqa: ANN001, ANN003
        a = fn(T, m, **kw)
        seen.append((kw.get("aggregate"), a.info.get("aggregated_classes"), len(T)))
        x = np.asarray(a.info["time_fractions"])
        _, inv = np.unique(np.column_stack([T, kw["scale_factors"], kw["weights"]]), axis=0, return_inverse=True)
        for g in np.unique(inv):  # identical jobs, identical time fractions
            np.testing.assert_allclose(x[inv.ravel() == g], x[inv.ravel() == g][:1].repeat((inv == g).sum(), 0),
                                       atol=1e-12)  # fmt: skip
        return a

    eng.mechanism = replace(eng.mechanism, fn=spy)
    model.progress = False
    model.run()
    assert seen and all(agg is True for agg, _, _ in seen)
    assert any(c is not None and c < n for _, c, n in seen)  # identical jobs were solved once


def test_native_policies_split_a_tenants_weight_over_its_jobs_by_hand() -> None:
    """(b) Gavel's max-min perf, tenants by user: tenant a has one job, tenant b three identical ones
    (1 step/s each), on 2 GPUs of one type. Each tenant weighs 1, split over its jobs: a's job 1,
    b's jobs 1/3 each. Max-min of normalised throughput over weight: x_a = 3 x_b with x_a + 3 x_b = 2
    gives x_a = 1 and x_b = 1/3 (unsplit weights would give 1/2 each)."""
    cfg = _trace_config([[1.0]] * 4, [1e6] * 4, ["a", "b", "b", "b"], single_rack([("k80", 2)]),
                        "gavel-max-min-perf")  # fmt: skip
    model = MarketModel(cfg, rng=0)
    model.step()
    np.testing.assert_allclose(model.auctioneer.trace.alloc[:, 0], [1.0, 1 / 3, 1 / 3, 1 / 3], atol=1e-7)
    # tenant weights multiply: b weighing 3 puts its jobs level with a's
    model = MarketModel(replace(cfg, trace=replace(cfg.trace, tenant_weights={"b": 3.0})), rng=0)
    model.step()
    np.testing.assert_allclose(model.auctioneer.trace.alloc[:, 0], [0.5] * 4, atol=1e-7)


def test_a_restart_costs_dead_time_also_in_the_round_a_job_finishes_by_hand() -> None:
    """(c) and the one migration semantics: a lease that restarts its job (it ran before and does
    not continue the previous round's lease) makes no progress for migration_cost_s. Two jobs of
    500 steps at 1 step/s share one GPU (max-min, Gavel's lease, no hosts, 360 s rounds, cost
    60 s). Round 0: job 0 runs 360 s (140 left; a first start costs nothing). Round 1: job 1 (the
    less served) runs 360 s. Round 2 at 720 s: job 0 resumes after a pause: 60 s dead, then 140 s:
    done at 920 s. Round 3 at 920 s: job 1 resumes: done at 920 + 60 + 140 = 1,120 s. (Resumes for
    free, the old trace rule, would give 860 and 1,000 s; no dead time in a finishing round 860 and
    1,060 s.)"""
    cfg = _trace_config([[1.0], [1.0]], [500.0, 500.0], ["0", "1"], single_rack([("k80", 1)], round_seconds=360.0),
                        "maxmin", migration_cost_s=60.0, reallocation_interval_s=0.0)  # fmt: skip
    model = MarketModel(cfg, rng=0).run()
    c = model.completions().set_index("job_id")["jct_s"]
    assert c.to_dict() == pytest.approx({"0": 920.0, "1": 1120.0})
    t = model.tidy()
    assert t.loc[t["measure"] == "migrations", "value"].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert t.loc[t["measure"] == "migration_lost_s", "value"].sum() == pytest.approx(120.0)


def test_time_on_a_gpu_type_a_job_cannot_use_is_never_allocated() -> None:
    """(d) Job 0 cannot run on the K80 (throughput 0): a speedup-based policy sees a stand-in there
    and may give it K80 time; the engine drops it: its time fraction on the K80 stays 0 at every
    solve, while job 1 keeps K80 time."""
    cfg = _trace_config([[0.0, 2.0], [1.0, 1.5]], [4000.0, 4000.0], ["0", "1"],
                        single_rack([("k80", 1), ("v100", 1)], round_seconds=360.0), "maxmin")  # fmt: skip
    model = MarketModel(cfg, rng=0)
    eng = model.auctioneer.trace
    fn = eng.mechanism.fn
    raw: list[np.ndarray] = []

    def spy(T, m, **kw):  # noqa: ANN001, ANN003
        a = fn(T, m, **kw)
        raw.append(np.asarray(a.X))
        return a

    eng.mechanism = replace(eng.mechanism, fn=spy)
    while model.running:
        model.step()
        assert eng.alloc[0, 0] == 0.0 and eng.alloc_est[0, 0] == 0.0
    assert raw[0][0, 0] > 0.1  # max-min gave job 0 K80 time it cannot use
    assert eng.alloc[1, 0] > 0 and len(model.completions()) == 2


RACKS = """
name = "racks"
policies = ["oef-noncoop"]
rounds = 100
placement = "oef"
kappa = 0.1
kappa_rack = {kr}
[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [0, 0, 4]
gpus_per_host = 1
racks = {racks}
[workload]
tenants = 1
jobs_per_tenant = 1
workers = [4]
workers_probs = [1.0]
[[tenant]]
index = 0
job_types = ["VGG"]
"""


@pytest.mark.parametrize(("racks", "kr", "den"), [(2, 0.1, 1.4), (1, 0.1, 1.3), (2, 0.0, 1.3)])
def test_racks_charge_a_lease_that_spans_them_by_hand(tmp_path: Path, racks: int, kr: float, den: float) -> None:
    """(e) One 4-GPU job alone on four 1-GPU hosts of one type: it spans 4 hosts (kappa 0.1 each
    beyond the first) and, with the hosts dealt over 2 racks, 2 racks (kappa_rack 0.1): it runs at
    4 w / (1 + 3 x 0.1 + 0.1) = 4 w / 1.4; in one rack (or kappa_rack = 0) at 4 w / 1.3."""
    (tmp_path / "r.toml").write_text(RACKS.format(racks=racks, kr=kr))
    model = load_scenario(tmp_path / "r.toml").build_model("oef-noncoop", "truthful", 0)
    model.run()
    job = model.config.tenants[0].jobs[0]
    w = model.config.tenants[0].speedups["VGG"]
    rate = 4 * w[2] / w[0] / den
    assert model.completions()["jct_s"].tolist() == pytest.approx([job.work / rate], rel=1e-9)
    racks_seen = {a.server.node: a for a in model.servers}
    assert len(racks_seen) == 4


def test_oef_placement_keeps_a_spread_lease_inside_one_rack() -> None:
    """Best fit spreads a lease that fits no single host inside a rack that can hold it, where first
    fit (the baselines' placement) follows host order across racks. Free GPUs of one type: rack 0
    hosts (1, 2), rack 1 hosts (2, 2); a 4-GPU lease fits no host: best fit puts it on rack 1's two
    hosts (1 rack), first fit on hosts 0, 1, 2 (2 racks)."""
    from marketsim.market.hosts import HostPlacer

    pl = HostPlacer(np.zeros(4, dtype=int), np.array([1, 2, 2, 2]), "oef", 3, host_rack=np.array([0, 0, 1, 1]))
    out = pl.place(np.array([0]), np.array([0]), np.array([4]))
    hosts = out.part_host[out.part_lease == 0].tolist()
    assert sorted(hosts) == [2, 3] and out.n_racks.tolist() == [1]  # rack 1 (4 free) holds it whole
    naive = HostPlacer(np.zeros(4, dtype=int), np.array([1, 2, 2, 2]), "naive", 3, host_rack=np.array([0, 0, 1, 1]))
    out = naive.place(np.array([0]), np.array([0]), np.array([4]))
    assert sorted(out.part_host.tolist()) == [0, 1, 2] and out.n_racks.tolist() == [2]


# -------------------------------------------------------------------------------------------------
# server agents fail and heal


def test_a_host_fails_and_heals_and_its_job_moves_by_hand() -> None:
    """One 1-GPU job of 1,000 steps at 1 step/s, two 1-GPU hosts (best fit: it starts on h0), 360 s
    rounds, restarts cost 60 s. h0 fails at 360 s: at the next round the server agent goes down,
    the GPU count drops to 1, the job moves to h1 (a restart: 60 s dead) and runs 300 s; h0 heals
    at 720 s. JCT = 360 + 360 + 340 = 1,060 s (without the cost 1,000 s)."""
    cluster = single_rack([("k80", 2)], gpus_per_host=1, round_seconds=360.0)
    cfg = _trace_config([[1.0]], [1000.0], ["0"], cluster, "maxmin", placement="oef", migration_cost_s=60.0,
                        failures=(ServerFailure("h0", 360.0, 720.0),))  # fmt: skip
    model = MarketModel(cfg, rng=0)
    m_seen, held = [], []
    while model.running:
        model.step()
        m_seen.append(int(model.m_avail().sum()))
        held.append({a.host_id: dict(a.assigned) for a in model.servers})
    assert model.completions()["jct_s"].tolist() == pytest.approx([1060.0])
    assert m_seen == [2, 1, 2]
    assert held[0]["h0"] == {"0": 1} and held[1] == {"h0": {}, "h1": {"0": 1}}
    h0 = next(a for a in model.servers if a.host_id == "h0")
    assert h0.log == [(360.0, "fail"), (720.0, "heal")]
    with pytest.raises(InputError, match="failure host"):
        replace(cfg, failures=(ServerFailure("h9", 1.0),))
    with pytest.raises(InputError, match="heal_s"):
        ServerFailure("h0", 10.0, 5.0)


def test_failure_tables_in_a_scenario(tmp_path: Path) -> None:
    base = 'name = "f"\nrounds = 4\n[cluster]\ngpu_types = ["RTX3070", "RTX3080", "RTX3090"]\ngpus = [4, 4, 4]\n' \
           "[workload]\ntenants = 2\n"  # fmt: skip
    (tmp_path / "f.toml").write_text(base + '[[failure]]\nhost = "h1"\nat_s = 300.0\nheal_s = 900.0\n')
    scen = load_scenario(tmp_path / "f.toml")
    assert scen.failures == (ServerFailure("h1", 300.0, 900.0),)
    m = scen.build_model("oef-noncoop", "truthful", 0).run()
    assert [e for a in m.servers for e in a.log] == [(300.0, "fail"), (900.0, "heal")]
    (tmp_path / "g.toml").write_text(base + '[[failure]]\nhost = "h77"\nat_s = 300.0\n')
    with pytest.raises(InputError, match=r"failure\[0\]\.host"):
        load_scenario(tmp_path / "g.toml")
