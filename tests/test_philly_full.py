"""The embedded full Philly trace: the packaged file, the ``philly_full`` scenarios, and the same
numbers from a sweep on every executor (a reduced trace: the first 150 jobs)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.market.traces import data_path, read_philly_csv
from marketsim.scenarios.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def test_packaged_full_trace_is_the_source_file() -> None:
    raw = gzip.decompress(data_path("philly_full.csv.gz").read_bytes())
    blob = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()  # git's object id of the source CSV
    assert blob == "6f73f02fb0c3eca7ea40f7031ce45a715463900e"
    assert data_path("philly_full.README.md").read_text(encoding="utf-8").count("CC BY 4.0") >= 1


def test_full_trace_facts() -> None:
    tr = read_philly_csv(data_path("philly_full.csv.gz"))
    assert len(tr) == 82_247
    assert len(set(tr.user.tolist())) == 15
    assert int((tr.scale == 1).sum()) == 76_627 and int(tr.scale.max()) == 128
    assert tr.arrival_s[-1] / 86400 == pytest.approx(108.897, abs=1e-3)
    users, counts = np.unique(np.asarray(tr.user), return_counts=True)
    assert (users[counts.argmax()], counts.max()) == ("6214e9", 41_226)  # the largest VC: the liar below


def test_lying_scenario_plays_the_audited_misreport_of_the_largest_vc() -> None:
    """scenarios/philly_full_lying.toml plays what benchmarks/philly_full_lie.py chose (its committed
    results), as the VC it audited, under the audited policy."""
    chosen = json.loads((ROOT / "benchmarks" / "results" / "philly_full_lie.json").read_text(encoding="utf-8"))
    s = load_scenario("philly_full_lying")
    (v,) = s.variants
    assert v.tenant == chosen["tenant"] == "6214e9" and list(s.policies) == [chosen["policy"]]
    assert {s.cluster.gpu_types[i]: f for i, f in v.strategy.factors.items()} == chosen["chosen"]["params"]
    assert chosen["chosen"]["mean_rel_gain"] > 0


def test_philly_full_scenario_has_the_15_vcs_as_tenants_and_the_docs_show_its_check() -> None:
    """The scenario's tenants are the 15 VCs; docs/traces.md shows `marketsim run philly_full
    --check`: every line is what it prints today (lines the page shortens with ", ...)" or ", ..."
    match up to the ellipsis)."""
    from marketsim.analysis.frontends.trace_report import check_lines

    s = load_scenario("philly_full")
    assert len(s.tenant_ids()) == 15 and s.workload.trace.tenancy == "user"
    assert s.tenant_ids()[0] == "7f04ca"  # the tenant of the first job (2017-09-04)
    tw = s.trace_workload()
    assert len(tw.trace) == 82_247
    assert (tw.trace.scale <= max(s.cluster.gpus)).all()
    text = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
    block = text.split("$ marketsim run philly_full --check\n", 1)[1].split("```", 1)[0].strip().splitlines()
    got = check_lines(s)
    assert len(block) == len(got)
    for shown, line in zip(block, got, strict=True):
        for cut in (", ...)", ", ..."):
            if shown.endswith(cut):
                shown, line = shown[: -len(cut)], line[: len(shown) - len(cut)]
                break
        assert shown == line


SWEEP = """
name = "pf_small"
scenarios = ["philly_full"]
policies = ["gavel-max-min-perf", "oef-noncoop"]
replications = 2
seed = 11
[grid]
"workload.max_jobs" = [150]
"cluster.gpus" = [[64, 64, 64]]
"cluster.round_seconds" = [3600.0]
"""


@pytest.mark.slow
def test_philly_full_sweep_same_numbers_on_every_executor(tmp_path: Path) -> None:
    """``marketsim sweep`` of philly_full (first 150 jobs, 64 GPUs per type, 1-hour rounds:
    about 900 rounds instead of 9,000 at 360 s, 1.5 s a run) on the local, process and
    Dask executors: identical results.parquet."""
    pytest.importorskip("distributed")
    from marketsim.analysis.engine.sweep import load_sweep, run_sweep

    (tmp_path / "sw.toml").write_text(SWEEP)
    cfg = load_sweep(tmp_path / "sw.toml")
    frames = {}
    for ex in ("local", "process", "dask"):
        res = run_sweep(cfg, tmp_path / ex, executor=ex, workers=2, progress=False)
        assert (res.runs["status"] == "ok").all(), res.runs
        frames[ex] = pd.read_parquet(tmp_path / ex / "results.parquet")
    assert len(frames["local"]) > 0 and set(frames["local"]["measure"]) >= {"jct_s", "act", "backfill_gpu_s"}
    pd.testing.assert_frame_equal(frames["local"], frames["process"])
    pd.testing.assert_frame_equal(frames["local"], frames["dask"])
