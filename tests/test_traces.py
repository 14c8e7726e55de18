"""Trace-driven simulation: hand-computed JCTs of tiny traces, the trace parsers, the Philly job-type
rule, tenancy, the scenario keys and their errors, the safety cap."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from marketsim.market.errors import InputError
from marketsim.market.profiles import load_throughput_table
from marketsim.market.traces import (
    GAVEL_THROUGHPUTS,
    GAVEL_TRACE,
    PHILLY_SAMPLE,
    assign_philly_job_types,
    data_path,
    load_trace,
    read_gavel_trace,
    read_philly_csv,
    tenant_of_jobs,
)
from marketsim.scenarios.loader import load_scenario

TABLE = """job_type,gpu_type,num_gpus,throughput_steps_per_s
A,k80,1,1.0
A,k80,2,3.0
A,v100,1,2.0
A,v100,2,5.0
"""


def _line(job_type: str, steps: int, arrival: float, scale: int = 1) -> str:
    return "\t".join([job_type, "python x.py", "dir", "--steps", "0", str(steps), str(scale), "1", "-1", str(arrival)])


def _run(tmp_path: Path, jobs: list[tuple[int, float]] | list[tuple[int, float, int]], gpus: int = 1,
         policy: str = "maxmin", interval: float = 0.0, extra: str = "", types: str = '["k80"]',
         counts: str | None = None) -> dict[str, float]:  # fmt: skip
    """Run a Gavel-format trace of ``(steps, arrival[, scale])`` jobs of type A; JCT per job id."""
    (tmp_path / "table.csv").write_text(TABLE)
    (tmp_path / "t.trace").write_text("\n".join(_line("A", j[0], j[1], *j[2:]) for j in jobs) + "\n")
    (tmp_path / "s.toml").write_text(
        f"""
name = "tiny"
policies = ["{policy}"]
replications = 1
{extra}
[cluster]
gpu_types = {types}
gpus = {counts or f"[{gpus}]"}
round_seconds = 360.0
reallocation_interval_s = {interval}
[profiles]
file = "table.csv"
[workload]
trace = "t.trace"
"""
    )
    scen = load_scenario(tmp_path / "s.toml")
    model = scen.build_model(policy, "truthful", 0)
    model.run()
    comp = model.completions()
    return dict(zip(comp["job_id"], comp["jct_s"], strict=True))


def test_two_jobs_one_gpu_hand_computed(tmp_path: Path) -> None:
    """One K80, jobs 0 and 1 of 720 steps at 1 step/s, both at t=0, max-min, re-solve on every change.

    Round 0 (t=0): reset, x = 1/2 each; received time 180 s each of the type's 360 s -> fraction 1/2,
    priority (1/2)/(1/2) = 1 each; tie -> arrival order: job 0 runs 360 s (360 steps left).
    Round 1 (t=360): fractions 540/720 and 180/720 -> priorities 0.67 and 2: job 1 runs (360 left).
    Round 2 (t=720): fractions 1/2 each, tie -> job 0 runs and finishes at 1080 (JCT 1080).
    Round 3 (t=1080): reset, job 1 alone gets x = 1 and finishes at 1440 (JCT 1440).
    """
    jct = _run(tmp_path, [(720, 0.0), (720, 0.0)])
    assert jct == pytest.approx({"0": 1080.0, "1": 1440.0})


def test_mid_round_completion_exact_and_gpu_idles(tmp_path: Path) -> None:
    """Two K80s, jobs of 100, 400 and 400 steps (1 step/s), all at t=0, max-min.

    Round 0 (t=0): x = 2/3 each; equal priorities -> jobs 0 and 1 (arrival order) lease the 2 GPUs.
    Job 0 finishes mid-round at exactly t=100 (JCT 100, not 360); its GPU idles until the round ends
    at 360 (job 1's lease). Job 1 has 40 steps left.
    Round 1 (t=360): reset; jobs 1 and 2 get one GPU each: job 1 finishes at 400 (JCT 400); job 2
    runs 360 s, 40 steps left; the round ends at 720.
    Round 2 (t=720): job 2 finishes at 760 (JCT 760).
    """
    jct = _run(tmp_path, [(100, 0.0), (400, 0.0), (400, 0.0)], gpus=2)
    assert jct == pytest.approx({"0": 100.0, "1": 400.0, "2": 760.0})


def test_round_ends_early_when_every_lease_ends(tmp_path: Path) -> None:
    """One K80, jobs of 100 and 400 steps at t=0. Round 0: job 0 runs and finishes at 100; it was the
    only lease, so the round ends at 100 (as in Gavel, whose round ends at its last micro-task).
    Round 1 (t=100): job 1 alone runs 360 s (40 left); round 2 (t=460): it finishes at 500."""
    jct = _run(tmp_path, [(100, 0.0), (400, 0.0)])
    assert jct == pytest.approx({"0": 100.0, "1": 500.0})


def test_arrival_mid_round_joins_next_round(tmp_path: Path) -> None:
    """One K80; job 0: 720 steps at t=0; job 1: 100 steps arriving at t=100, inside round 0.

    Round 0 [0, 360): job 0 alone. Round 1 (t=360): job 1 joins; reset: x = 1/2 each, fractions
    180/360 each, equal priorities and deficits (job 0 got exactly its share) -> job 0 (arrival
    order) runs and finishes at 720 (JCT 720). Round 2 (t=720): job 1 runs and finishes at 820:
    JCT 820 - 100 = 720 (it waited from its arrival, not from the round start).
    """
    jct = _run(tmp_path, [(720, 0.0), (100, 100.0)])
    assert jct == pytest.approx({"0": 720.0, "1": 720.0})


def test_reallocation_interval_delays_new_job(tmp_path: Path) -> None:
    """Gavel's 1920 s between resets: one K80, job 0 of 3600 steps at 0, job 1 of 100 steps at 10.

    Job 1 joins at t=360 but has no allocation until the first round starting >= 1920 s after the
    t=0 reset, i.e. t=2160 (rounds start at 0, 360, ..., 1800, 2160); job 0 runs alone until then.
    t=2160: reset, x = 1/2 each, equal priorities -> job 0 runs to 2520. t=2520: fractions 540/720
    vs 180/720 -> job 1 runs and finishes at 2620 (JCT 2610); that round ends at 2620. Job 0 has
    1080 steps left and finishes at 2620 + 1080 = 3700 (the GPU never idles: 3600 + 100 s of work).
    With interval 0, job 1 would get its half at t=360 instead.
    """
    jct = _run(tmp_path, [(3600, 0.0), (100, 10.0)], interval=1920.0)
    assert jct == pytest.approx({"0": 3700.0, "1": 2610.0})
    fast = _run(tmp_path, [(3600, 0.0), (100, 10.0)], interval=0.0)
    assert fast["1"] < 1000.0


def test_multi_gpu_job_uses_consolidated_throughput(tmp_path: Path) -> None:
    """A 2-GPU job of 3000 steps on two K80s runs at the table's num_gpus=2 rate, 3 steps/s (not
    2 x 1): it finishes at 1000 s."""
    jct = _run(tmp_path, [(3000, 0.0, 2)], gpus=2)
    assert jct == pytest.approx({"0": 1000.0})


def test_fastest_type_first(tmp_path: Path) -> None:
    """One K80 and one V100, one job of 720 steps: leases go fastest type first, so it runs on the
    V100 at 2 steps/s and finishes at 360 s (on the K80 it would take 720 s)."""
    jct = _run(tmp_path, [(720, 0.0)], types='["k80", "v100"]', counts="[1, 1]")
    assert jct == pytest.approx({"0": 360.0})


def test_safety_cap_is_reported(tmp_path: Path) -> None:
    """A run capped before every job completes says so (warning, flag, event)."""
    (tmp_path / "table.csv").write_text(TABLE)
    (tmp_path / "t.trace").write_text(_line("A", 3600, 0.0) + "\n")
    (tmp_path / "s.toml").write_text(
        'policies = ["maxmin"]\n[cluster]\ngpu_types = ["k80"]\ngpus = [1]\nround_seconds = 360.0\n'
        '[profiles]\nfile = "table.csv"\n[workload]\ntrace = "t.trace"\nmax_rounds = 3\n'
    )
    model = load_scenario(tmp_path / "s.toml").build_model("maxmin", "truthful", 0)
    with pytest.warns(RuntimeWarning, match="safety cap of 3 rounds"):
        model.run()
    # 3 Gavel rounds (merged into fewer model steps where nothing changes: TraceRounds._fast_forward)
    assert model.cap_reached and model.auctioneer.trace.rounds == 3 and model.steps <= 3
    assert model.completions().empty
    assert any(e["event"] == "safety_cap" for e in model.events)


def test_explicit_rounds_is_a_horizon_without_warning(tmp_path: Path) -> None:
    """``rounds`` given: the run stops there silently (a horizon, not the safety cap)."""
    jct = _run(tmp_path, [(3600, 0.0)], extra="rounds = 2")
    assert jct == {}


# -- parsers and rules ----------------------------------------------------------------------------


def test_gavel_trace_sample_parses() -> None:
    tr = read_gavel_trace(data_path(GAVEL_TRACE))
    assert len(tr) == 1301
    assert tr.job_type[0] == "Recommendation (batch size 512)" and tr.total_steps[0] == 158770
    assert tr.arrival_s[2] == pytest.approx(323.100524)
    assert (tr.scale == 1).all() and (np.diff(tr.arrival_s) >= 0).all()


def test_philly_job_types_rule() -> None:
    table = load_throughput_table(data_path(GAVEL_THROUGHPUTS))
    types = ("k80", "p100", "v100")
    raw = read_philly_csv(data_path(PHILLY_SAMPLE))
    assert len(raw) == 2007 and raw.arrival_s[0] == 0.0 and raw.user[0] == "7f04ca"
    a = assign_philly_job_types(raw, table, types, seed=3)
    b = assign_philly_job_types(raw, table, types, seed=3)
    c = assign_philly_job_types(raw, table, types, seed=4)
    assert (a.job_type == b.job_type).all() and (a.job_type != c.job_type).any()
    T = a.throughputs(table, types)
    assert (T > 0).all()  # only types feasible everywhere are drawn
    i = int(np.flatnonzero(raw.scale == 1)[0])
    v100 = table.values[(str(a.job_type[i]), 1)][table.gpu_types.index("v100")]
    assert a.total_steps[i] == pytest.approx(raw.duration_s[i] * v100)
    # 32 GPUs: the 8-GPU row scaled by 4
    j = int(np.flatnonzero(raw.scale == 32)[0])
    assert a.table_scale[j] == 8
    assert T[j] == pytest.approx(table.values[(str(a.job_type[j]), 8)] * 4)


def test_tenancy_rules() -> None:
    tr = load_trace(data_path(PHILLY_SAMPLE), "philly", seed=0)
    assert (tenant_of_jobs(tr, "job") == tr.job_id).all()
    assert len(set(tenant_of_jobs(tr, "user").tolist())) == 12
    t5 = tenant_of_jobs(tr, 5)
    assert t5[7] == f"t{zlib.crc32(b'7') % 5}"
    assert set(t5.tolist()) <= {f"t{i}" for i in range(5)}
    gavel = read_gavel_trace(data_path(GAVEL_TRACE))
    with pytest.raises(InputError, match="tenancy"):
        tenant_of_jobs(gavel, "user")
    with pytest.raises(InputError, match="tenancy"):
        tenant_of_jobs(gavel, 0)
    for bad in (True, 2.0, [2]):  # not cached under a key that equals a good one (True == 1, 2.0 == 2)
        with pytest.raises(InputError, match="tenancy"):
            tenant_of_jobs(tr, bad)


def test_tenants_of_a_trace_are_computed_once_and_handed_out_as_copies(monkeypatch) -> None:
    import marketsim.market.traces as traces

    tr = load_trace(data_path(PHILLY_SAMPLE), "philly", seed=0)
    calls = []
    real = traces._tenant_of_jobs
    monkeypatch.setattr(traces, "_tenant_of_jobs", lambda t, ten: calls.append(ten) or real(t, ten))
    first = tenant_of_jobs(tr, 5)
    want = first.copy()
    first[:] = "x"  # a caller's change does not reach the next caller
    assert (tenant_of_jobs(tr, 5) == want).all() and calls == [5]
    assert (tenant_of_jobs(tr, "user") == real(tr, "user")).all() and calls == [5, "user"]
    head = tr.head(10)  # another trace: its own entry
    assert (tenant_of_jobs(head, 5) == want[:10]).all() and calls == [5, "user", 5]


def test_embedded_trace_scenarios_load() -> None:
    g = load_scenario("gavel_trace")
    p = load_scenario("philly_trace")
    assert g.workload.trace is not None and g.workload.tenants == 1301
    assert p.workload.trace is not None and p.workload.tenants == 12
    assert Path(g.workload.trace.path).is_file() and "market/data" in g.workload.trace.path


@pytest.mark.parametrize(
    ("workload", "match"),
    [
        ('trace = "t.trace"\ntrace_format = "xlsx"', "trace_format"),
        ('trace = "t.trace"\ntenancy = "user"', "tenancy"),
        ('trace = "t.trace"\ntenancy = 0', "tenancy"),
        ('trace = "t.trace"\ntenants = 3', "workload.tenants is not used with a trace"),
        ('trace = "missing.trace"', "does not exist"),
        ('trace = "t.trace"\nmax_rounds = 0', "max_rounds"),
    ],
)
def test_trace_keys_errors(tmp_path: Path, workload: str, match: str) -> None:
    (tmp_path / "table.csv").write_text(TABLE)
    (tmp_path / "t.trace").write_text(_line("A", 10, 0.0) + "\n")
    (tmp_path / "s.toml").write_text(
        f'policies = ["maxmin"]\n[cluster]\ngpu_types = ["k80"]\ngpus = [1]\n[profiles]\nfile = "table.csv"\n'
        f"[workload]\n{workload}\n"
    )
    with pytest.raises(InputError, match=match):
        load_scenario(tmp_path / "s.toml")


def test_trace_job_errors(tmp_path: Path) -> None:
    """Unknown job type, a job too big for any type, bad columns: one clear line each."""
    (tmp_path / "table.csv").write_text(TABLE)
    base = 'policies = ["maxmin"]\n[cluster]\ngpu_types = ["k80"]\ngpus = [1]\n[profiles]\nfile = "table.csv"\n'
    (tmp_path / "s.toml").write_text(base + '[workload]\ntrace = "t.trace"\n')
    (tmp_path / "t.trace").write_text(_line("B", 10, 0.0) + "\n")
    with pytest.raises(InputError, match="'B'"):
        load_scenario(tmp_path / "s.toml")
    (tmp_path / "t.trace").write_text(_line("A", 10, 0.0, 2) + "\n")
    with pytest.raises(InputError, match="can run on no GPU type"):
        load_scenario(tmp_path / "s.toml")
    (tmp_path / "t.trace").write_text(_line("A", 10, 5.0) + "\n" + _line("A", 10, 1.0) + "\n")
    with pytest.raises(InputError, match="must not decrease"):
        load_scenario(tmp_path / "s.toml")
    (tmp_path / "t.trace").write_text("A\t1\t2\n")
    with pytest.raises(InputError, match="10 tab-separated columns"):
        load_scenario(tmp_path / "s.toml")
    (tmp_path / "t.trace").write_text(_line("A", -5, 0.0) + "\n")
    with pytest.raises(InputError, match="total_steps"):
        load_scenario(tmp_path / "s.toml")


def test_infeasible_type_skipped_by_every_policy(tmp_path: Path) -> None:
    """A job that cannot run on one GPU type runs under every registered fair-share policy: the
    type is skipped for it (alone, 10 steps at 1 step/s on the V100: JCT 10 s)."""
    from marketsim.market.registry import get, names

    (tmp_path / "table.csv").write_text(TABLE + "C,k80,1,0.0\nC,v100,1,1.0\n")
    (tmp_path / "t.trace").write_text(_line("C", 10, 0.0) + "\n")
    body = (
        '[cluster]\ngpu_types = ["k80", "v100"]\ngpus = [1, 1]\n[profiles]\nfile = "table.csv"\n'
        '[workload]\ntrace = "t.trace"\n'
    )
    # built-in ones
    for policy in [n for n in names("fair-share") if get(n).fn.__module__.startswith("marketsim.market.")]:
        (tmp_path / "s.toml").write_text(f'policies = ["{policy}"]\n' + body)
        model = load_scenario(tmp_path / "s.toml").build_model(policy, "truthful", 0)
        model.run()
        assert model.completions()["jct_s"].tolist() == pytest.approx([10.0]), policy


def test_trace_run_deterministic_and_tidy(tmp_path: Path) -> None:
    """Same seed, same numbers; the tidy frame holds the cluster and trace measures and one jct_s
    row per finished job."""
    scen = load_scenario("gavel_trace")
    import dataclasses

    ts = dataclasses.replace(scen.workload.trace, max_jobs=300, until_done=False)
    scen = dataclasses.replace(scen, rounds=300, workload=dataclasses.replace(scen.workload, trace=ts))
    runs = []
    for _ in range(2):
        m = scen.build_model("oef-noncoop", "truthful", 5)
        m.run()
        runs.append(m.tidy())
        assert m.auctioneer.trace.rounds == 300 and m.steps <= 300 and not m.cap_reached  # merged rounds count
    assert runs[0].equals(runs[1])
    f = runs[0]
    assert (f["measure"] == "jct_s").sum() == len(m.completions()) > 20
    assert {"active_jobs", "round_s", "utilisation", "busy_gpus:v100"} <= set(f["measure"])
    assert m.now > 0 and m.auctioneer.resolves > 0


def test_cli_runs_a_trace_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``marketsim run file.toml`` on a trace (the packaged Gavel trace's first 40 jobs with 1/50 of
    their steps, run to completion): one jct_s row per job and policy, each >= steps / fastest
    throughput, the report and the JCT CDF plot."""
    import json

    import pandas as pd

    from marketsim.analysis.frontends.cli import main

    trace = tmp_path / "short.trace"
    rows = [line.split("\t") for line in data_path(GAVEL_TRACE).read_text().splitlines()[:40]]
    for r in rows:
        r[5] = str(max(1, int(r[5]) // 50))
    trace.write_text("\n".join("\t".join(r) for r in rows) + "\n")
    (tmp_path / "g.toml").write_text(
        'policies = ["maxmin", "gavel-max-min-perf"]\nreplications = 1\n'
        '[cluster]\ngpu_types = ["k80", "p100", "v100"]\ngpus = [4, 4, 4]\nround_seconds = 360.0\n'
        f'[workload]\ntrace = "{trace.name}"\ntrace_format = "gavel"\ntenancy = "job"\n'
    )
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "g.toml"), "--out", str(out), "--quiet"]) == 0
    for name in ("results.parquet", "completions.parquet", "report.md", "jct_cdf.png", "meta.json"):
        assert (out / name).is_file(), name
    comp = pd.read_parquet(out / "completions.parquet")
    assert len(comp) == 80 and set(comp["policy"]) == {"maxmin", "gavel-max-min-perf"}
    assert set(comp["job_id"]) == {str(i) for i in range(40)}
    assert (comp["jct_s"] - (comp["completion_s"] - comp["arrival_s"])).abs().max() < 1e-9
    df = pd.read_parquet(out / "results.parquet")
    jct = df[df["measure"] == "jct_s"]
    assert len(jct) == 80 and set(jct["tenant"]) == {str(i) for i in range(40)}
    tr = read_gavel_trace(trace)
    table = load_throughput_table(data_path(GAVEL_THROUGHPUTS))
    fastest = tr.throughputs(table, ("k80", "p100", "v100")).max(axis=1)
    floor = dict(zip(tr.job_id.tolist(), (tr.total_steps / fastest).tolist(), strict=True))
    assert all(v >= floor[t] * (1 - 1e-9) for t, v in zip(jct["tenant"], jct["value"], strict=True))
    report = (out / "report.md").read_text()
    assert "until every job completed" in report and "mean_jct_s" in report
    assert json.loads((out / "meta.json").read_text())["trace"]["tenancy"] == "job"


@pytest.mark.parametrize(("tenancy", "expected"), [("user", {"0": 1800.0, "1": 2160.0, "2": 1440.0}),
                                                   ("job", {"0": 1440.0, "1": 1800.0, "2": 2160.0})])  # fmt: skip
def test_user_tenancy_splits_class_share(tmp_path: Path, tenancy: str, expected: dict[str, float]) -> None:
    """Philly format, one K80, user u1 with jobs 0 and 1, user u2 with job 2, all 720 steps at
    1 step/s at t=0 (steps = duration x the K80 throughput), max-min, re-solve on every change.

    tenancy "user": classes (u1: cap 2) and (u2: cap 1) get 1/2 GPU each, so jobs 0 and 1 have time
    fraction 1/4 and job 2 1/2. Round 0: fractions 1/3 each -> priorities .75, .75, 1.5: job 2 runs.
    t=360: fractions 180/900, 180/900, 540/900 -> 1.25, 1.25, .83: job 0. t=720: 540/1260,
    180/1260, 540/1260 -> .58, 1.75, 1.17: job 1. t=1080: 1/3 each -> .75, .75, 1.5: job 2 finishes at
    1440. t=1440: reset, u1's class gets the GPU, 1/2 per job, equal priorities and deficits: job 0
    finishes at 1800; job 1 at 2160.
    tenancy "job": 1/3 each: round robin 0, 1, 2, then job 0 finishes at 1440, job 1 at 1800 and
    job 2 at 2160.
    """
    (tmp_path / "table.csv").write_text(TABLE)
    rows = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    rows += [f"2017-10-01 00:00:00,720.0,1,720.0,{u}" for u in ("u1", "u1", "u2")]
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.toml").write_text(
        'policies = ["maxmin"]\n[cluster]\ngpu_types = ["k80"]\ngpus = [1]\nround_seconds = 360.0\n'
        'reallocation_interval_s = 0.0\n[profiles]\nfile = "table.csv"\n[workload]\ntrace = "p.csv"\n'
        f'trace_format = "philly"\ntenancy = "{tenancy}"\nduration_reference = "k80"\n'
    )
    model = load_scenario(tmp_path / "s.toml").build_model("maxmin", "truthful", 0)
    model.run()
    comp = model.completions()
    assert dict(zip(comp["job_id"], comp["jct_s"], strict=True)) == pytest.approx(expected)
    assert set(comp["job_type"]) == {"A"}
    if tenancy == "user":
        assert dict(zip(comp["job_id"], comp["tenant"], strict=True)) == {"0": "u1", "1": "u1", "2": "u2"}


@pytest.mark.parametrize("policy", ["gavel-max-min-perf", "oef-noncoop"])
def test_lease_invariants_on_a_loaded_cluster(policy: str) -> None:
    """Gavel's trace (first 150 jobs) on 2 + 2 + 2 GPUs, 300 rounds. Every round: leased GPUs per type
    <= capacity, no job leased twice, only on types it can run on; work conservation of the greedy
    pass: an unleased job with an allocation could not fit in the GPUs its types have left."""
    import dataclasses

    scen = load_scenario("gavel_trace")
    ts = dataclasses.replace(scen.workload.trace, max_jobs=150, until_done=False)
    cl = dataclasses.replace(scen.cluster, gpus=(2, 2, 2), reallocation_interval_s=0.0)
    scen = dataclasses.replace(scen, rounds=300, cluster=cl, workload=dataclasses.replace(scen.workload, trace=ts))
    model = scen.build_model(policy, "truthful", 0)
    eng = model.auctioneer.trace
    m = np.array([2, 2, 2])
    queued = 0
    for _ in range(300):
        model.step()
        st = model.auctioneer.stats
        busy = np.array(st.busy_by_type)
        assert (busy <= m).all()
        leased = model.auctioneer.last_trace.leased
        types = model.auctioneer.last_trace.leased_type
        assert len(set(leased.tolist())) == leased.size
        assert (eng.T[leased, types] > 0).all()
        during = np.union1d(eng.active, model.auctioneer.last_trace.finished)
        idle = np.setdiff1d(during, leased)
        left = m - busy
        for j in idle[eng.has_alloc[idle]]:
            queued += 1
            assert not ((eng.T[j] > 0) & (eng.s[j] <= left)).any(), (j, left)
    assert queued > 100  # the cluster was loaded: many jobs waited


def test_trace_round_default_is_gavels(tmp_path: Path) -> None:
    """Without round_seconds a trace scenario uses Gavel's 360 s rounds (synthetic ones keep 300 s)."""
    (tmp_path / "table.csv").write_text(TABLE)
    (tmp_path / "t.trace").write_text(_line("A", 10, 0.0) + "\n")
    (tmp_path / "s.toml").write_text(
        'policies = ["maxmin"]\n[cluster]\ngpu_types = ["k80"]\ngpus = [1]\n[profiles]\nfile = "table.csv"\n'
        '[workload]\ntrace = "t.trace"\n'
    )
    scen = load_scenario(tmp_path / "s.toml")
    assert scen.cluster.round_seconds == 360.0 and scen.cluster.reallocation_interval_s == 1920.0
    assert load_scenario("default").cluster.round_seconds == 300.0


LIE_TABLE = """job_type,gpu_type,num_gpus,throughput_steps_per_s
A,k80,1,1.0
A,v100,1,2.0
B,k80,1,1.0
B,v100,1,2.5
"""


def _lie_model(tmp_path: Path, liars: tuple[str, ...], factor: float = 1.5):
    from dataclasses import replace

    from marketsim.agents.model import MarketModel
    from marketsim.agents.strategies import ScaleDims
    from marketsim.agents.trace_rounds import lying_throughputs

    (tmp_path / "table.csv").write_text(LIE_TABLE)
    (tmp_path / "t.trace").write_text(_line("A", 720, 0.0) + "\n" + _line("B", 900, 0.0) + "\n")
    (tmp_path / "s.toml").write_text("""
name = "lie"
policies = ["gavel-max-sum-throughput"]
replications = 1
[cluster]
gpu_types = ["k80", "v100"]
gpus = [1, 1]
round_seconds = 360.0
[profiles]
file = "table.csv"
[workload]
trace = "t.trace"
""")
    config = load_scenario(tmp_path / "s.toml").instantiate("gavel-max-sum-throughput", "truthful",
                                                          np.random.default_rng(0))  # fmt: skip
    tw = config.trace
    R = lying_throughputs(tw.throughputs, tw.trace.job_type, tw.tenants, liars, ScaleDims.fast(factor, 2))
    model = MarketModel(replace(config, trace=replace(tw, reported=R, liars=liars)), rng=np.random.default_rng(0))
    model.run()
    comp = model.completions()
    return model, dict(zip(comp["job_id"], comp["jct_s"], strict=True))


def test_a_liar_on_a_trace_changes_the_lease_order_hand_computed(tmp_path: Path) -> None:
    """One K80 and one V100, Gavel's max-sum-throughput, tenancy "job", both jobs at t = 0, 360 s
    rounds. Job 0 (type A) runs 1 / 2 steps/s on K80 / V100, 720 steps; job 1 (type B) 1 / 2.5,
    900 steps.

    Truthful: the LP gives the V100 to job 1 (2.5 + 1 = 3.5 > 2 + 1), x = [[1, 0], [0, 1]]. Round 0:
    the V100 (leased first) goes to job 1 (priority 2 vs 0), which finishes at 900 / 2.5 = 360 s;
    job 0 runs on the K80, 360 steps. Round 1 (t = 360): job 0 alone takes the V100 (idle GPUs go
    to any job that fits), 360 / 2 = 180 s: done at 540. JCTs (540, 360).

    Job 0 lies (reports 1.5x its V100 throughput, [1, 3]): the LP sees 3 + 1 = 4 > 3.5 and gives
    it the V100. Round 0: job 0 on the V100 at its TRUE 2 steps/s finishes at 720 / 2 = 360 s;
    job 1 runs 360 steps on the K80. Round 1: job 1 on the V100, 540 / 2.5 = 216 s: done at 576.
    JCTs (360, 576): the liar gains 180 s, the honest job loses 216 s."""
    _, truthful = _lie_model(tmp_path, ())
    assert truthful == pytest.approx({"0": 540.0, "1": 360.0})
    model, lying = _lie_model(tmp_path, ("0",))
    assert lying == pytest.approx({"0": 360.0, "1": 576.0})
    # progress is at the TRUE throughputs: an inflated report does not speed the liar's job up
    assert model.auctioneer.trace.R[0].tolist() == [1.0, 3.0] and model.auctioneer.trace.T[0].tolist() == [1.0, 2.0]
    # the honest job's report is untouched, and a non-liar set changes nothing
    assert _lie_model(tmp_path, ("nobody",))[1] == pytest.approx(truthful)


def test_lying_throughputs_rules_and_errors() -> None:
    from marketsim.agents.config import TraceWorkload
    from marketsim.agents.strategies import ReportVector, ScaleDims
    from marketsim.agents.trace_rounds import lying_throughputs

    T = np.array([[1.0, 2.0, 0.0], [1.0, 3.0, 4.0], [2.0, 2.0, 2.0]])
    jt, ten = np.array(["A", "B", "A"]), np.array(["u0", "u1", "u0"])
    R = lying_throughputs(T, jt, ten, {"u0"}, ScaleDims({2: 2.0, 1: 1.5}))
    assert R.tolist() == [[1.0, 3.0, 0.0], [1.0, 3.0, 4.0], [2.0, 3.0, 4.0]]  # every job of u0; zeros stay 0
    only_b = lying_throughputs(T, jt, ten, {"u0", "u1"}, ScaleDims({1: 2.0}, job_types=frozenset({"B"})))
    assert only_b.tolist() == [[1.0, 2.0, 0.0], [1.0, 6.0, 4.0], [2.0, 2.0, 2.0]]
    with pytest.raises(InputError, match="variant.strategy"):
        lying_throughputs(T, jt, ten, {"u0"}, ReportVector((1.0, 2.0, 3.0)))
    tr = read_gavel_trace(data_path(GAVEL_TRACE)).head(2)
    with pytest.raises(InputError, match=r"reported throughputs\[0, 1\]"):
        TraceWorkload(tr, np.ones((2, 2)), np.array(["0", "1"]), reported=np.array([[1.0, 0.0], [1.0, 1.0]]))
    with pytest.raises(InputError, match="reported throughputs"):
        TraceWorkload(tr, np.ones((2, 2)), np.array(["0", "1"]), reported=np.ones((2, 3)))


def test_generated_gavel_trace_follows_gavels_generator() -> None:
    """Gavel's generator (marketsim.market.traces.generate_gavel_trace): exponential gaps of mean 3600/rate,
    the first job at 0, durations 60*10^U(1.5, 3) s w.p. 0.8 else 60*10^U(3, 4) s on a V100
    (total_steps = duration x the V100 throughput), job types uniform over the types that run on
    every GPU type; same seed, same trace; a different seed, a different one."""
    from marketsim.market.traces import generate_gavel_trace

    table = load_throughput_table(data_path(GAVEL_THROUGHPUTS))
    types = ("k80", "p100", "v100")
    tr = generate_gavel_trace(table, types, 4000, 2.0, seed=5)
    assert len(tr) == 4000 and tr.arrival_s[0] == 0.0 and (np.diff(tr.arrival_s) >= 0).all()
    gaps = np.diff(tr.arrival_s)
    assert abs(gaps.mean() / 1800.0 - 1) < 0.05  # 3 sigma of the mean of 4000 exponentials is 4.7%
    d = tr.duration_s
    assert d.min() >= 60 * 10**1.5 and d.max() <= 60 * 10**4
    assert abs((d < 60 * 10**3).mean() - 0.8) < 0.02  # 3 sigma of a binomial(4000, 0.8) share is 0.019
    v100 = tr.throughputs(table, ["v100"])[:, 0]
    assert tr.total_steps == pytest.approx(d * v100)
    T = tr.throughputs(table, types)
    assert (T > 0).all() and (tr.scale == 1).all() and (tr.priority == 1).all()
    feasible = sorted(jt for jt in table.job_types if (r := table.values.get((jt, 1))) is not None
                      and (r[[table.gpu_types.index(g) for g in types]] > 0).all())  # fmt: skip
    counts = np.array([np.sum(tr.job_type == jt) for jt in feasible])
    assert counts.sum() == 4000 and counts.min() > 0  # every feasible type drawn, nothing else
    again = generate_gavel_trace(table, types, 4000, 2.0, seed=5)
    assert (again.arrival_s == tr.arrival_s).all() and (again.job_type == tr.job_type).all()
    assert not (generate_gavel_trace(table, types, 4000, 2.0, seed=6).job_type == tr.job_type).all()
    for kw, field in (({"jobs": 0}, "jobs"), ({"jobs_per_hour": -1.0}, "jobs_per_hour"),
                      ({"jobs_per_hour": float("nan")}, "jobs_per_hour")):  # fmt: skip
        args = {"jobs": 10, "jobs_per_hour": 1.0, **kw}
        with pytest.raises(InputError, match=field):
            generate_gavel_trace(table, types, args["jobs"], args["jobs_per_hour"], seed=0)


def test_generated_trace_scenario_keys_and_errors(tmp_path: Path) -> None:
    body = """
name = "gen"
policies = ["maxmin", "gavel-max-min-perf"]
replications = 1
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [2, 2, 2]
[workload]
generator = "gavel"
jobs = 8
jobs_per_hour = 4.0
"""
    (tmp_path / "g.toml").write_text(body)
    scen = load_scenario(tmp_path / "g.toml")
    assert scen.workload.tenants == 8 and scen.workload.trace.generator == "gavel"
    model = scen.build_model("gavel-max-min-perf", "truthful", 0)
    model.progress = False
    model.run()
    assert len(model.completions()) == 8 and model.round_seconds == 360.0
    # the replication seed draws the workload: two seeds, two traces
    a, b = (scen.build_model("maxmin", "truthful", s).config.trace.trace.arrival_s for s in (0, 1))
    assert not np.array_equal(a, b)
    for old, new, field in (('generator = "gavel"', 'generator = "alibaba"', "workload.generator"),
                            ("jobs = 8", "jobs = 0", "workload.jobs"),
                            ("jobs_per_hour = 4.0", "jobs_per_hour = -4.0", "workload.jobs_per_hour"),
                            ("jobs_per_hour = 4.0", "", "workload.jobs_per_hour"),
                            ("jobs = 8", "jobs = 8\nmax_jobs = 3", "workload.max_jobs"),
                            ("jobs = 8", 'jobs = 8\ntenancy = "user"', "workload.tenancy")):  # fmt: skip
        (tmp_path / "bad.toml").write_text(body.replace(old, new))
        with pytest.raises(InputError, match=field):
            load_scenario(tmp_path / "bad.toml")
