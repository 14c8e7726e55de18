"""The trace section of the run report on tiny traces whose schedule is computed by hand: time-
weighted shares against equal and max-min fair entitlements, finish-time fairness, the tail share,
the backfill share (the engine's ``backfill_gpu_s``), the makespan; and the time-integral helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.analysis.engine.runner import run_experiment, write_experiment
from marketsim.analysis.frontends.trace_report import (
    binned_integral,
    finish_time_fairness,
    load_records,
    max_min_shares,
    plot_utilisation,
    policy_table,
    render_trace_section,
    run_traces,
    size_table,
    tenant_table,
)
from marketsim.scenarios.loader import load_scenario

TABLE = """job_type,gpu_type,num_gpus,throughput_steps_per_s
A,k80,1,1.0
A,v100,1,2.0
B,k80,1,0.5
B,v100,1,4.0
"""


def _runs(tmp_path: Path, csv: str, policy: str, types: str, gpus: str, tenancy: str = "user"):
    (tmp_path / "table.csv").write_text(TABLE)
    (tmp_path / "t.csv").write_text(csv)
    (tmp_path / "s.toml").write_text(
        f"""
name = "tiny"
policies = ["{policy}"]
replications = 1
[cluster]
gpu_types = {types}
gpus = {gpus}
round_seconds = 360.0
[profiles]
file = "table.csv"
[workload]
trace = "t.csv"
trace_format = "csv"
tenancy = "{tenancy}"
"""
    )
    exp = run_experiment(load_scenario(tmp_path / "s.toml"), progress=False)
    paths = write_experiment(exp, tmp_path / "out")
    recs = load_records(paths["results"])
    return exp, run_traces(exp, recs, exp.completions)


def test_two_tenants_on_one_gpu_hand_computed(tmp_path: Path) -> None:
    """u's job (720 steps) and v's (360 steps) arrive at 0 on one K80 (1 step/s) under max-min (0.5
    each): u runs [0, 360), v [360, 720) and finishes, u [720, 1080). Shares: u 2/3, v 1/3 of the
    1,080 GPU-seconds; equal and fair: 1/2 each in the first two rounds, u alone in the third."""
    csv = "job_id,arrival_s,num_gpus,total_steps,job_type,tenant\nju,0,1,720,A,u\njv,0,1,360,A,v\n"
    _, runs = _runs(tmp_path, csv, "maxmin", '["k80"]', "[1]")
    (run,) = runs
    jct = dict(zip(run.comp["job_id"], run.comp["jct_s"], strict=True))
    assert jct == {"ju": 1080.0, "jv": 720.0}
    tt = tenant_table(runs).set_index("tenant")
    assert tt.loc["u", "share %"] == pytest.approx(200 / 3) and tt.loc["v", "share %"] == pytest.approx(100 / 3)
    assert tt.loc["u", "equal %"] == pytest.approx(200 / 3) and tt.loc["v", "equal %"] == pytest.approx(100 / 3)
    assert tt.loc["u", "fair %"] == pytest.approx(200 / 3) and tt.loc["v", "share / fair"] == pytest.approx(1.0)
    assert tt.loc["u", "leased GPU-h"] == pytest.approx(720 / 3600)
    # rho: v is contended by N=2 tenants x 1 job over its life: x_iso = 1/2, T_id = 360 / 0.5 = 720, rho = 1;
    # u: c = 2 on [0, 720), 1 on [720, 1080): mean 5/3, x_iso = 0.6, T_id = 720 / 0.6 = 1200, rho = 0.9
    rho = dict(zip(run.comp["job_id"], finish_time_fairness(run), strict=True))
    assert rho["jv"] == pytest.approx(1.0) and rho["ju"] == pytest.approx(0.9)
    pt = policy_table(runs).iloc[0]
    assert pt["top-1% share of JCT %"] == pytest.approx(100 * 1080 / 1800)  # one job of two
    assert pt["makespan d"] == pytest.approx(1080 / 86400)
    assert "job ju (u, 1 GPU(s)" in pt["makespan set by"]
    assert pt["backfill %"] == 0.0
    assert pt["utilisation %"] == pytest.approx(100.0)
    text = render_trace_section(runs, {})
    assert "#### maxmin (truthful)" in text and "| u | 1 |" in text
    assert size_table(runs)["jobs"].tolist() == [2]
    assert plot_utilisation(runs, tmp_path / "u.png").is_file()


def test_the_section_computes_each_runs_finish_time_fairness_once(tmp_path: Path, monkeypatch) -> None:
    """rho (isolated times: the tenants' active matrix over every record) is computed once per run
    for the per-policy and the per-tenant tables, read-only, and equal to a fresh computation."""
    import marketsim.analysis.frontends.trace_report as tr

    csv = "job_id,arrival_s,num_gpus,total_steps,job_type,tenant\nju,0,1,720,A,u\njv,0,1,360,A,v\n"
    _, runs = _runs(tmp_path, csv, "maxmin", '["k80"]', "[1]")
    calls, real = [], tr.isolated_times
    monkeypatch.setattr(tr, "isolated_times", lambda run: calls.append(run) or real(run))
    text = render_trace_section(runs, {})
    assert "#### maxmin (truthful)" in text and len(calls) == len(runs) == 1
    (run,) = runs
    assert not run.rho.flags.writeable
    assert np.array_equal(run.rho, run.comp["jct_s"].to_numpy(float) / real(run))


def test_the_active_matrix_is_computed_once_per_run_and_follows_its_records(tmp_path: Path, monkeypatch) -> None:
    """The tenants' active matrix serves the fairness and the tenant tables from one computation,
    read-only; a run given other completions gets a fresh one (the cached matrix is not reused)."""
    import marketsim.analysis.frontends.trace_report as tr

    csv = "job_id,arrival_s,num_gpus,total_steps,job_type,tenant\nju,0,1,720,A,u\njv,0,1,360,A,v\n"
    _, runs = _runs(tmp_path, csv, "maxmin", '["k80"]', "[1]")
    calls, real = [], tr._active_matrix
    monkeypatch.setattr(tr, "_active_matrix", lambda run: calls.append(run) or real(run))
    render_trace_section(runs, {})
    (run,) = runs
    assert len(calls) == 1
    names, jobs, gpus = tr.active_matrix(run)
    assert len(calls) == 1 and not jobs.flags.writeable and not gpus.flags.writeable
    assert names == ["u", "v"] and jobs[0].tolist() == [1.0, 1.0]  # both jobs active in the first record
    run.comp = run.comp[run.comp["job_id"] == "ju"].reset_index(drop=True)  # v's job gone
    names2, jobs2, _ = tr.active_matrix(run)
    assert len(calls) == 2 and names2 == ["u"] and jobs2[0].tolist() == [1.0]


def test_backfill_share_hand_computed(tmp_path: Path) -> None:
    """Max-sum-throughput on 1 K80 + 1 V100: B (V100 4 steps/s) gets the V100, A (K80 1) the K80.
    B's 3,600 steps end at 900 s; from 1,080 s A runs alone on the idle V100, where the policy gave
    it nothing, until the next re-solve at 2,160 s (1,920 s after the first): 1,080 backfilled
    GPU-seconds. A: 1,080 steps on the K80, 2,160 on the V100 by 2,160 s, the last 3,960 at 2 steps/s:
    done at 4,140 s. Used: 2 x 720 + 540 + 3,060 = 5,040 GPU-seconds."""
    csv = "job_id,arrival_s,num_gpus,total_steps,job_type,tenant\na,0,1,7200,A,a\nb,0,1,3600,B,b\n"
    _, runs = _runs(tmp_path, csv, "gavel-max-sum-throughput", '["k80", "v100"]', "[1, 1]", tenancy="job")
    (run,) = runs
    jct = dict(zip(run.comp["job_id"], run.comp["jct_s"], strict=True))
    assert jct == {"a": 4140.0, "b": 900.0}
    assert run.rec["backfill_gpu_s"].sum() == pytest.approx(1080.0)
    assert policy_table(runs).iloc[0]["backfill %"] == pytest.approx(100 * 1080 / 5040)
    assert tenant_table(runs).empty  # tenancy "job": no per-tenant table
    # rho with tenancy "job" (Gavel's count: the active jobs). b: 2 jobs over its life, x_iso = (1/2, 1/2),
    # tput 0.5 * 0.5 + 0.5 * 4 = 2.25, T_id = 1600, rho = 900 / 1600. a: 2 jobs on [0, 1080), 1 on [1080, 4140):
    # mean 5220 / 4140; x = (1, 1) / 1.2609 sums to 1.59 > 1, so scaled to (1/2, 1/2) (Gavel's IsolatedPolicy):
    # tput 1.5, T_id = 4800, rho = 4140 / 4800
    rho = dict(zip(run.comp["job_id"], finish_time_fairness(run), strict=True))
    assert rho["b"] == pytest.approx(900 / 1600) and rho["a"] == pytest.approx(4140 / 4800)


def test_binned_integral_splits_records_across_bins() -> None:
    starts = np.array([0.0, 10.0, 40.0])
    lengths = np.array([10.0, 20.0, 5.0])  # an idle gap [30, 40)
    values = np.array([1.0, 2.0, 4.0])
    got = binned_integral(starts, lengths, values, np.array([0.0, 15.0, 35.0, 50.0]))
    assert got.tolist() == pytest.approx([10 + 2 * 5, 2 * 15, 4 * 5])


def test_max_min_shares_water_fill() -> None:
    D = np.array([[1.0, 5.0, 10.0], [1.0, 5.0, 10.0], [1.0, 1.0, 1.0], [0.0, 3.0, 3.0]])
    G = np.array([9.0, 20.0, 3.0, 4.0])
    got = max_min_shares(D, G)
    np.testing.assert_allclose(got, [[1, 4, 4], [1, 5, 10], [1, 1, 1], [0, 2, 2]])
