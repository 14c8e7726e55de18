"""The report phase of ``marketsim run`` keeps its memory bounded (issues #31/#33): it scans
results.parquet in record batches, a trace run's report frame holds only the rows its tables use,
and the trace section holds one run's records at a time; the numbers are those of the full frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from marketsim.analysis.engine import runner
from marketsim.analysis.engine.runner import COLUMNS, load_report_frame, run_experiment, scan_results, write_experiment
from marketsim.analysis.engine.stats import REPORT_CLUSTER_MEASURES, paired_gains, policy_summary
from marketsim.analysis.frontends import trace_report
from marketsim.analysis.frontends.trace_report import iter_run_records, load_records, run_traces, tenant_table
from marketsim.scenarios.loader import load_scenario

SCENARIO = """
name = "mem"
policies = ["maxmin"]
replications = 2
seed = 3
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [3, 3, 3]
round_seconds = 360.0
reallocation_interval_s = 1920.0
[workload]
generator = "gavel"
jobs = 24
jobs_per_hour = 20.0
tenancy = 6
[[variant]]
name = "lying"
tenant = 0
strategy = "fast"
factor = 1.3
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, Path]]:
    """A small generated trace with 6 tenants and a liar, run and written as ``marketsim run`` does
    (records spilled to parts, merged into results.parquet)."""
    tmp = tmp_path_factory.mktemp("mem")
    (tmp / "s.toml").write_text(SCENARIO, encoding="utf-8")
    exp = run_experiment(load_scenario(tmp / "s.toml"), progress=False, spill_dir=tmp / "parts")
    return exp, write_experiment(exp, tmp / "out")


def test_trace_report_frame_holds_only_the_rows_the_report_uses(written) -> None:
    """For a trace run the report frame is the cluster rows of REPORT_CLUSTER_MEASURES, the JCTs and
    the deviator's act/est/runnable_jobs: no other tenant's records (most of the file) and no other
    cluster measure; the summary and the paired gains are exactly those of the full results."""
    exp, paths = written
    full = pd.read_parquet(paths["results"])
    devs = exp.deviators
    (dev,) = set(devs.values())
    red = load_report_frame(paths["results"], devs, trace=True)
    cl = red[red["tenant"] == ""]
    assert set(cl["measure"]) == set(REPORT_CLUSTER_MEASURES) & set(full.loc[full["tenant"] == "", "measure"])
    ten = red[(red["tenant"] != "") & (red["measure"] != "jct_s")]
    assert set(ten["tenant"]) == {dev} and set(ten["measure"]) == {"act", "est", "runnable_jobs"}
    assert (red["measure"] == "jct_s").sum() == (full["measure"] == "jct_s").sum() > 0
    n_tenants = full.loc[full["tenant"] != "", "tenant"].nunique()
    assert n_tenants == 6 and len(red) < len(full) / 3
    assert list(red.columns) == COLUMNS and red["tenant"].dtype == full["tenant"].dtype
    rs = exp.scenario.cluster.round_seconds
    pd.testing.assert_frame_equal(policy_summary(red, rs), policy_summary(full, rs), check_exact=True)
    for m in ("act", "est"):
        pd.testing.assert_frame_equal(paired_gains(red, devs, m, rs), paired_gains(full, devs, m, rs), check_exact=True)
    # without ``trace`` (synthetic workloads, whose plot shows every tenant): every tenant's act as before
    wide = load_report_frame(paths["results"], devs)
    assert set(wide.loc[wide["measure"] == "act", "tenant"]) == set(full.loc[full["measure"] == "act", "tenant"])
    # runs stopped by the round cap are left out at the read
    rid = exp.runs["run_id"].iloc[0]
    assert rid in set(red["run_id"]) and rid not in set(load_report_frame(paths["results"], devs, trace=True,
                                                                          exclude_runs={rid})["run_id"])  # fmt: skip


def test_scan_results_matches_a_filtered_read_batch_by_batch(written) -> None:
    """scan_results yields what a filtered read_table gives, in file order, never more than batch_rows rows
    at a time, with the string columns dictionary-encoded."""
    _, paths = written
    flt = [[("tenant", "=", "")], [("measure", "in", ["act"]), ("tenant", "in", ["t1", "t3"])]]
    cols = ["run_id", "round", "tenant", "measure", "value"]
    pieces = list(scan_results(paths["results"], flt, cols, batch_rows=500))
    assert len(pieces) > 2 and all(p.num_rows <= 500 for p in pieces)
    assert pa.types.is_dictionary(pieces[0].schema.field("tenant").type)
    got = runner.decoded_frame(pieces, pq.read_schema(paths["results"]))
    want = pq.read_table(paths["results"], filters=flt).to_pandas()[cols]
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_report_never_reads_the_results_file_whole(written, tmp_path: Path, monkeypatch) -> None:
    """The report phase (report_experiment, what ``marketsim run`` calls) reads results.parquet only
    through batch scans: a whole or filtered ``read_table`` (which reads many row groups ahead and,
    unfiltered, every tenant's records) or ``load_records`` (every run at once) fails the report."""
    from marketsim.analysis.frontends.report import report_experiment

    exp, paths = written

    def refuse(*_a, **_k):
        raise AssertionError("the report read results.parquet whole")

    monkeypatch.setattr(pq, "read_table", refuse)
    monkeypatch.setattr(pd, "read_parquet", refuse)
    monkeypatch.setattr(trace_report, "load_records", refuse)
    plots, report, _ = report_experiment(exp, paths["results"], tmp_path)
    text = report.read_text(encoding="utf-8")
    assert "## Gain from lying" in text and "### Per tenant" in text
    assert {p.name for p in plots} == {"jct_cdf.png", "utilisation.png"}


def test_trace_section_reads_one_run_at_a_time(written, monkeypatch) -> None:
    """iter_run_records yields each run's rows as soon as the scan has passed it: when a run is yielded,
    the rows pulled from the scan are that run's and those before it plus at most one batch, never the
    whole file. The per-run path and the all-at-once frame give the same section numbers."""
    exp, paths = written
    pulled = [0]
    real = runner.scan_results

    def counting(*a, **k):
        for t in real(*a, **{**k, "batch_rows": 256}):
            pulled[0] += t.num_rows
            yield t

    monkeypatch.setattr(runner, "scan_results", counting)
    every = load_records(paths["results"])
    total = pulled[0]
    sizes = every.groupby("run_id", sort=False).size()
    assert len(sizes) == 4 and total == len(every)
    pulled[0] = 0
    seen = []
    for rid, rows in iter_run_records(paths["results"]):
        seen.append(rid)
        upto = int(sizes.loc[:rid].sum())
        assert upto <= pulled[0] <= upto + 256 < total or rid == sizes.index[-1]
        assert len(rows) == sizes[rid] and list(rows.columns) == ["round", "tenant", "measure", "value"]
    assert seen == list(sizes.index)
    by_path = run_traces(exp, paths["results"], exp.completions)
    by_frame = run_traces(exp, every, exp.completions)
    assert len(by_path) == len(by_frame) == 4
    for a, b in zip(by_path, by_frame, strict=True):
        pd.testing.assert_frame_equal(a.rec, b.rec, check_exact=True)
        assert a.leased == b.leased and len(a.leased) == every.loc[every["tenant"] != "", "tenant"].nunique() > 2
    pd.testing.assert_frame_equal(tenant_table(by_path[:2]), tenant_table(by_frame[:2]), check_exact=True)


def test_leased_gpu_seconds_are_the_time_integral_of_the_gpus_records(written) -> None:
    """RunTrace.leased[u] = sum over records of u's gpus x the record's round_s (hand check from the raw rows)."""
    exp, paths = written
    full = pd.read_parquet(paths["results"])
    run = run_traces(exp, paths["results"], exp.completions)[0]
    rid = f"mem/{run.policy}/{run.variant}/r{run.replication}"
    rows = full[full["run_id"] == rid]
    length = rows[(rows["tenant"] == "") & (rows["measure"] == "round_s")].set_index("round")["value"]
    g = rows[(rows["tenant"] != "") & (rows["measure"] == "gpus")]
    want = (g["value"].to_numpy() * length.reindex(g["round"]).to_numpy())
    per = pd.Series(want).groupby(g["tenant"].to_numpy()).sum()
    assert run.leased.keys() == set(per.index)
    for u, v in per.items():
        assert run.leased[u] == pytest.approx(v, rel=1e-12)
    assert sum(run.leased.values()) > 0 and np.isfinite(list(run.leased.values())).all()
