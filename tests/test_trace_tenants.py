"""Tenants on a trace (agents/trace_tenants.py; issue #24 "One simulator"): trace scenarios take
[[variant]] strategies, the tenants' reports reach the policy while progress uses the truth, a
learning (hedge) tenant learns from its own outcomes, and results.parquet gets the synthetic
runs' per-tenant per-round rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from testkit import tenant4_trace

from marketsim.market.errors import InputError
from marketsim.market.traces import GAVEL_TRACE, data_path
from marketsim.scenarios.loader import load_scenario


def _tenant4_text() -> str:
    return tenant4_trace(data_path(GAVEL_TRACE), ("gavel-max-min-perf", "oef-noncoop"), 16)


def _tenant4(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "tenant4.toml"
    path.write_text(_tenant4_text() + extra)
    return path


def test_tenancy_4_with_a_scale_liar_writes_every_tenants_rows(tmp_path: Path) -> None:
    """Must show (issue #24): a trace scenario with tenancy = 4 and a [[variant]] liar runs; its
    results.parquet has `act` rows of all 4 tenants; the liar's est_reported differs from its est
    (by exactly its V100 share: the report doubles the V100 throughput), the honest tenants'
    do not. The tenants' rows add up to the cluster's total_est / total_act / busy_gpus."""
    from marketsim.analysis.engine.runner import run_experiment, write_experiment

    out = tmp_path / "out"
    write_experiment(run_experiment(load_scenario(_tenant4(tmp_path)), progress=False), out)
    f = pd.read_parquet(out / "results.parquet")
    assert not pd.read_csv(out / "runs.csv")["error"].notna().any()
    for (policy, variant), g in f.groupby(["policy", "variant"]):
        ten = g[g["tenant"] != ""]
        assert sorted(ten.loc[ten["measure"] == "act", "tenant"].unique()) == ["t0", "t1", "t2", "t3"], policy
        wide = ten.pivot_table(index=["round", "tenant"], columns="measure", values="value")
        cl = g[g["tenant"] == ""].pivot_table(index="round", columns="measure", values="value")
        sums = wide.groupby(level="round").sum()
        for mine, total in (("est", "total_est"), ("act", "total_act"), ("gpus", "busy_gpus")):
            np.testing.assert_allclose(sums[mine], cl.loc[sums.index, total], rtol=1e-9, atol=1e-9)
        liar = wide.xs("t2", level="tenant")
        honest = wide.drop(index="t2", level="tenant")
        np.testing.assert_allclose(honest["est_reported"], honest["est"], rtol=1e-12)
        if variant == "liar":
            assert (liar["est_reported"] >= liar["est"] - 1e-12).all()
            assert (liar["est_reported"] > liar["est"] + 1e-9).any(), policy
        else:
            np.testing.assert_allclose(liar["est_reported"], liar["est"], rtol=1e-12)
    comp = pd.read_parquet(out / "completions.parquet")  # per-job rows stay there
    assert len(comp) == 16 * 2 * 2 and set(comp["tenant"]) == {"t0", "t1", "t2", "t3"}


def test_the_liars_report_is_its_true_row_scaled(tmp_path: Path) -> None:
    """The policy sees the liar's jobs' throughputs with the V100 column doubled (the synthetic
    ScaleDims rule on the speedup vector, applied to the raw row), every other job's truth; the
    engine's true rows are untouched; a tenant given by index is the i-th by first arrival."""
    scen = load_scenario(_tenant4(tmp_path))
    ids = scen.tenant_ids()
    assert sorted(ids) == ["t0", "t1", "t2", "t3"] and scen.deviator("liar") == "t2"
    model = scen.build_model("oef-noncoop", "liar", 0)
    tt = model.auctioneer.tenants
    eng = model.auctioneer.trace
    lie = model.config.trace.tenants == "t2"
    np.testing.assert_array_equal(tt.R, eng.T)  # nothing reported before the first solve
    model.step()  # the liar reports at the first solve (its agent is consulted at every solve)
    here = set(model.config.trace.tenants[eng.active])
    assert [a.tenant_id for a in tt.agents.values()] == [t for t in ids if t in here]
    model.run()  # every job is active at some solve
    assert 0 < lie.sum() < lie.size
    np.testing.assert_array_equal(tt.R[lie], eng.T[lie] * np.array([1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(tt.R[~lie], eng.T[~lie])
    assert eng.reporter is tt and tt.is_agent.all()  # every tenant an agent (created when its first job arrives)
    idx = _tenant4(tmp_path).read_text().replace('tenant = "t2"', f"tenant = {ids.index('t2')}")
    (tmp_path / "i.toml").write_text(idx)
    assert load_scenario(tmp_path / "i.toml").deviator("liar") == "t2"


LIE_TABLE = "job_type,gpu_type,num_gpus,throughput_steps_per_s\nA,k80,1,1.0\nA,v100,1,2.0\nB,k80,1,1.0\nB,v100,1,2.5\n"


def _line(job_type: str, steps: int, arrival: float) -> str:
    return "\t".join([job_type, "python x.py", "dir", "--steps", "0", str(steps), "1", "1", "-1", str(arrival)])


def _lie_scenario(tmp_path: Path, variant: str) -> Path:
    (tmp_path / "table.csv").write_text(LIE_TABLE)
    (tmp_path / "t.trace").write_text(_line("A", 720, 0.0) + "\n" + _line("B", 900, 0.0) + "\n")
    path = tmp_path / "s.toml"
    path.write_text(f"""
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
tenant_measures = "all"
[[variant]]
name = "liar"
tenant = 0
{variant}
""")
    return path


def _jcts(model) -> dict[str, float]:  # noqa: ANN001
    comp = model.completions()
    return dict(zip(comp["job_id"], comp["jct_s"], strict=True))


@pytest.mark.parametrize(
    "variant", ['strategy = "fast"\nfactor = 1.5', 'strategy = "report"\nvector = [1.0, 3.0]',
                'strategy = "scale"\nfactors = { v100 = 1.5 }']
)  # fmt: skip
def test_outcomes_from_reports_experience_from_truth_by_hand(tmp_path: Path, variant: str) -> None:
    """The hand case of tests/test_traces.py (test_a_liar_on_a_trace_changes_the_lease_order_
    hand_computed), now with the liar a [[variant]] of a trace scenario. One K80 and one V100,
    Gavel's max-sum-throughput; job 0 (A: 1 / 2 steps/s, 720 steps) reports V100 = 3 (x 1.5; the
    "report" vector [1, 3] is the same lie), job 1 (B: 1 / 2.5, 900 steps) is honest.

    Truthful JCTs (540, 360). Lying: the LP sees 3 + 1 > 2.5 + 1 and gives job 0 the V100; it runs
    at its TRUE 2 steps/s: done at 360 s; job 1 does 360 steps on the K80, then 540 / 2.5 = 216 s
    on the V100: JCTs (360, 576). Fed the truth the policy would give (540, 360); progress at the
    reported 3 steps/s would end job 0 at 240 s. Round 0's measures: job 0 est = 2 (x = 1 on the
    V100, valued at the truth, in K80 units), est_reported = 3, act = 720 / 360 = 2; job 1 est =
    est_reported = act = 1; round 1: job 1 act = 540 steps / 216 s = 2.5."""
    scen = load_scenario(_lie_scenario(tmp_path, variant))
    truthful = scen.build_model("gavel-max-sum-throughput", "truthful", 0).run()
    assert _jcts(truthful) == pytest.approx({"0": 540.0, "1": 360.0})
    model = scen.build_model("gavel-max-sum-throughput", "liar", 0).run()
    assert _jcts(model) == pytest.approx({"0": 360.0, "1": 576.0})
    f = model.tidy()
    w = f[f["tenant"] != ""].pivot_table(index=["round", "tenant"], columns="measure", values="value")
    assert w.loc[(0, "0"), ["est", "est_reported", "act", "gpus", "alloc_gpus"]].tolist() == pytest.approx(
        [2.0, 3.0, 2.0, 1.0, 1.0])  # fmt: skip
    assert w.loc[(0, "1"), ["est", "est_reported", "act"]].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert w.loc[(1, "1"), "act"] == pytest.approx(2.5)
    assert (1, "0") not in w.index  # a tenant whose jobs are all done has no rows
    agent = model.auctioneer.tenants.departed["0"]  # its job done, the liar's agent left the model
    assert agent.model is model and agent not in model.agents and agent.report_calls >= 1
    assert [(e["tenant"], e["event"]) for e in model.events] == [("0", "arrive"), ("0", "exit")]
    # by default (tenant_measures = "agents") tenancy "job" records the rows of the variants'
    # tenants only, in the truthful run too (the pair of the "Gain from lying" table)
    path = _lie_scenario(tmp_path, variant)
    path.write_text(path.read_text().replace('tenant_measures = "all"\n', ""))
    scen = load_scenario(path)
    for v in ("truthful", "liar"):
        g = scen.build_model("gavel-max-sum-throughput", v, 0).run().tidy()
        assert set(g.loc[(g["tenant"] != "") & (g["measure"] != "jct_s"), "tenant"]) == {"0"}


HEDGE = """
name = "hedge_trace"
policies = ["oef-noncoop"]
replications = 1
seed = 2
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [2, 2, 2]
reallocation_interval_s = 0.0
round_seconds = 1800.0
[workload]
trace = "{trace}"
tenancy = 3
max_jobs = 12
[[variant]]
name = "hedge"
tenant = 0
strategy = "hedge"
points = 3
eta = 2.0
"""


def test_a_hedge_tenant_learns_on_a_trace_and_changes_its_report(tmp_path: Path) -> None:
    """A learning tenant on a trace: after every policy solve it hears the TRUE estimated
    throughput each factor vector of its grid would have got (a re-solve per vector), updates its
    Hedge weights and samples the next solve's report from them. Its report (est_reported / est)
    then changes over rounds; before the first feedback it reports the truth. Without the feedback
    step it would report the truth forever."""
    path = tmp_path / "h.toml"
    path.write_text(HEDGE.format(trace=data_path(GAVEL_TRACE)))
    scen = load_scenario(path)
    model = scen.build_model("oef-noncoop", "hedge", 0)
    model.progress = False
    model.run()
    tt = model.auctioneer.tenants
    (agent,) = [a for a in tt.every_agent() if a.learning]  # it left the model once its jobs were done
    assert agent.tenant_id == scen.deviator("hedge") and not tt.learners
    log = agent.learning_log
    assert len(log) >= 5 and {e["job_type"] for e in log} == {"*"}
    assert log[0]["factors"] == [1.0, 1.0]  # the first solve is played truthfully
    assert len({tuple(e["factors"]) for e in log}) > 1  # it changes its report
    w = agent.learning_weights("*")
    assert w is not None and w.size == 9 and w.sum() == pytest.approx(1.0) and w.max() > 1.5 / 9
    f = model.tidy()
    mine = f[f["tenant"] == agent.tenant_id].pivot_table(index="round", columns="measure", values="value")
    ratio = (mine["est_reported"] / mine["est"])[mine["est"] > 0]
    assert ratio.round(9).nunique() > 1
    # the same seed gives the same learning path
    again = scen.build_model("oef-noncoop", "hedge", 0)
    again.progress = False
    again.run()
    (twin,) = [a for a in again.auctioneer.tenants.every_agent() if a.learning]
    assert [e["played"] for e in twin.learning_log] == [e["played"] for e in log]


def test_trace_tenant_rows_can_be_switched_off_and_bad_variants_are_named(tmp_path: Path) -> None:
    """`tenant_measures = "none"` drops the per-tenant rows (JCTs unchanged); a variant naming no
    tenant of the trace is an input error naming the key."""
    on = load_scenario(_tenant4(tmp_path)).build_model("gavel-max-min-perf", "liar", 0).run()
    path = tmp_path / "off.toml"
    path.write_text(_tenant4(tmp_path).read_text().replace("max_jobs = 16", 'max_jobs = 16\ntenant_measures = "none"'))
    off = load_scenario(path).build_model("gavel-max-min-perf", "liar", 0).run()
    rows = off.tidy()
    assert set(rows.loc[rows["tenant"] != "", "measure"]) == {"jct_s"}
    assert "act" in set(on.tidy()["measure"])
    pd.testing.assert_frame_equal(on.completions(), off.completions())
    bad = tmp_path / "bad.toml"
    bad.write_text(_tenant4(tmp_path).read_text().replace('tenant = "t2"', "tenant = 7"))
    with pytest.raises(InputError, match=r"variant liar.tenant"):
        load_scenario(bad)


def test_noise_is_drawn_once_per_tenant_and_job_type(tmp_path: Path) -> None:
    """`noise` on a trace: each (tenant, job type) gets one factor vector 1 + U(-e, e) on the
    types j >= 1 (type 0 stays the reference), shared by all its jobs of that type; different
    job types get different draws; the same seed, the same draws."""
    path = tmp_path / "n.toml"
    path.write_text(_tenant4(tmp_path).read_text().replace('strategy = "scale"\nfactors = { v100 = 2.0 }',
                                                           'strategy = "noise"\ne = 0.3'))  # fmt: skip
    scen = load_scenario(path)
    model = scen.build_model("oef-noncoop", "liar", 0)
    model.run()  # the liar's reports are made at the solves while its jobs are active
    tt, eng = model.auctioneer.tenants, model.auctioneer.trace
    lie = np.flatnonzero(model.config.trace.tenants == "t2")
    q = tt.R[lie] / eng.T[lie]
    assert (q[:, 0] == 1.0).all() and (np.abs(q[:, 1:] - 1.0) <= 0.3).all()
    jt = tt.job_types[lie]
    per_type = {t: q[jt == t] for t in set(jt.tolist())}
    assert len(per_type) >= 2
    for rows in per_type.values():
        np.testing.assert_allclose(rows, rows[0][None, :].repeat(len(rows), axis=0), rtol=1e-12)
    firsts = np.array([rows[0] for rows in per_type.values()])
    assert len({tuple(r.round(12)) for r in firsts}) == len(per_type)
    others = np.setdiff1d(np.arange(eng.n), lie)
    np.testing.assert_array_equal(tt.R[others], eng.T[others])
    np.testing.assert_array_equal(scen.build_model("oef-noncoop", "liar", 0).run().auctioneer.tenants.R, tt.R)


def test_tenants_liar_hosts_and_shuffle_together(tmp_path: Path) -> None:
    """The three trace features merged in one run: tenancy 4 with a scale liar, every lease placed on
    hosts of 2 GPUs with a migration cost, and Gavel's per-round type shuffle. Every job completes,
    the servers' held GPUs never exceed a host, the same seed gives the same JCTs, and the liar's
    est_reported differs from its est while the honest tenants' do not."""
    extra_cluster = 'gpus_per_host = 2\nlease_order = "shuffle"\n'
    text = _tenant4_text().replace("[cluster]\n", "[cluster]\n" + extra_cluster)
    text = 'placement = "auto"\nmigration_cost_s = 20.0\n' + text
    path = tmp_path / "all.toml"
    path.write_text(text)
    sc = load_scenario(path)
    runs = []
    for _ in range(2):
        m = sc.build_model("oef-noncoop", "liar", 3).run()
        assert all(sum(a.assigned.values()) <= a.server.count for a in m.servers)
        runs.append(m)
    a, b = (r.completions().sort_values("job_id")["jct_s"].to_numpy() for r in runs)
    assert len(a) == 16 and np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)
    eng = runs[0].auctioneer.trace
    assert runs[0].config.placement == "auto" and eng.migrations > 0
    assert eng.migration_lost_s == pytest.approx(20.0 * eng.migrations)  # shuffled types move jobs every round
    tidy = runs[0].tidy()
    ten = tidy[tidy["tenant"] != ""].pivot_table(index=["round", "tenant"], columns="measure", values="value")
    liar = ten.xs("t2", level="tenant")
    assert (liar["est_reported"] > liar["est"] + 1e-9).any()
    honest = ten.drop(index="t2", level="tenant")
    np.testing.assert_allclose(honest["est_reported"], honest["est"], rtol=1e-12)


def test_merged_rounds_keep_the_tenants_work_and_stay_off_when_rounds_differ(tmp_path: Path) -> None:
    """Merged rounds (TraceRounds._fast_forward) record one step for many rounds: a tenant's `act`
    of that step must be its rate over all of them, so act x round_s summed per tenant equals the
    round-by-round run's, and the JCTs are identical. With Gavel's shuffled lease order or hosts,
    every round can differ, so nothing is merged."""
    sc = load_scenario(_tenant4(tmp_path))
    work, jcts = [], []
    for skip in (True, False):
        m = sc.build_model("gavel-max-min-perf", "truthful", 3)
        m.auctioneer.trace.skip_rounds = skip
        m.run()
        t = m.tidy()
        merged = t.loc[t["measure"] == "merged_rounds", "value"]
        assert (merged.max() > 1) == skip
        act = t[(t["measure"] == "act") & (t["tenant"] != "")]
        length = t[t["measure"] == "round_s"].set_index("round")["value"]
        w = (act["value"].to_numpy() * length.reindex(act["round"]).to_numpy())
        work.append(pd.Series(w).groupby(act["tenant"].to_numpy()).sum())
        jcts.append(m.completions().sort_values("job_id")["jct_s"].to_numpy())
    pd.testing.assert_series_equal(work[0], work[1], rtol=1e-9)
    np.testing.assert_array_equal(jcts[0], jcts[1])
    for extra, cluster in (("", 'lease_order = "shuffle"\n'), ('placement = "auto"\n', "gpus_per_host = 3\n")):
        text = _tenant4_text().replace("[cluster]\n", "[cluster]\n" + cluster)
        (tmp_path / "x.toml").write_text(extra + text)
        m = load_scenario(tmp_path / "x.toml").build_model("gavel-max-min-perf", "truthful", 3).run()
        t = m.tidy()
        assert (t.loc[t["measure"] == "merged_rounds", "value"] == 1).all(), cluster


def test_the_tenant_agents_hold_each_rounds_measures(tmp_path: Path) -> None:
    """After every round each present tenant agent holds its own row of the round's measures (the
    block results.parquet gets), zeros without an active job; a round that repeats the last one's
    measures leaves the agents as they are (TraceTenants.record skips the write), which must still
    leave them equal to the round's row."""
    sc = load_scenario(_tenant4(tmp_path))
    m = sc.build_model("oef-noncoop", "liar", 3)
    m.DRAIN_ROUNDS = 10**9  # keep every block here
    tt = m.auctioneer.tenants
    names = ("est", "est_reported", "act", "alloc_gpus", "gpus", "runnable_jobs")
    checked = repeats = 0
    last = None
    while m.running:
        m.step()
        blocks = tt.blocks
        if not blocks or blocks[-1][0] != m.round or not tt.agents:
            continue
        _, codes, M = blocks[-1]
        repeats += last is not None and np.array_equal(last, M)
        last = M
        for a in tt.agents.values():
            pos = np.flatnonzero(codes == a.code)
            want = M[pos[0]] if pos.size else np.zeros(len(names))
            assert [getattr(a, n) for n in names] == pytest.approx(want.tolist(), rel=1e-12, abs=0.0), m.round
            checked += 1
    assert checked > 50 and repeats > 0
