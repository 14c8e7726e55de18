"""Sweeps: planning and seeds, executor equivalence (local / process / Dask), failure rows,
kill-and-resume, paired differences, config validation."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from testkit import resumable_sweep

from marketsim.analysis.engine.sweep import (
    EXECUTION_COLUMNS,
    RUN_COLUMNS,
    SweepResult,
    completed_run_ids,
    load_sweep,
    paired_differences,
    paired_summary,
    parse_sweep,
    plan_sweep,
    run_sweep,
)
from marketsim.analysis.frontends.cli import main
from marketsim.market.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

TINY = """
name = "tiny"
scenarios = ["oef_lying"]
policies = ["oef-noncoop", "gavel"]
replications = 2
seed = 5
chunk_size = 2
[grid]
"workload.tenants" = [3]
rounds = [4]
[[strategy]]
name = "inflate"
kind = "fast"
tenant = 0
factor = [1.5, 1e5]   # 1e5 pushes reports past max_speedup: fails at run time only
"""

RESUMABLE = resumable_sweep(replications=4, factors=(1.3, 2.0))


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / f"{name}.toml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def tiny_cfg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("cfg"), "tiny", TINY)


@pytest.fixture(scope="module")
def local_run(tiny_cfg: Path, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    return run_sweep(load_sweep(tiny_cfg), tmp_path_factory.mktemp("local"), executor="local", progress=False)


def _deterministic(res: SweepResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    results = pq.read_table(res.out / "results.parquet").to_pandas()
    runs = pq.read_table(res.out / "runs.parquet").to_pandas().drop(columns=EXECUTION_COLUMNS)
    return results, runs


def test_plan_ids_are_stable_and_seeds_are_shared_per_replication(tiny_cfg: Path) -> None:
    cfg = load_sweep(tiny_cfg)
    plan = plan_sweep(cfg)
    assert [r.run_id for r in plan] == [r.run_id for r in plan_sweep(load_sweep(tiny_cfg))]
    assert len({r.run_id for r in plan}) == len(plan) == 2 * 2 * 3  # reps x policies x variants
    children = np.random.SeedSequence(5).spawn(2)
    for r in plan:  # one child per replication, reused by every policy and variant (CRN)
        assert r.entropy == children[r.replication].entropy
        assert r.spawn_key == tuple(children[r.replication].spawn_key) == (r.replication,)
    assert {r.variant for r in plan} == {"truthful", "inflate[factor=1.5]", "inflate[factor=100000]"}
    assert {r.deviator for r in plan if r.variant != "truthful"} == {"t0"}
    other_seed = parse_sweep({**_toml(TINY), "seed": 6}, "tiny")
    assert not {r.run_id for r in plan} & {r.run_id for r in plan_sweep(other_seed)}


def _toml(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)


def test_failing_run_becomes_a_failure_row_and_the_others_complete(local_run: SweepResult) -> None:
    runs, fails = local_run.runs, local_run.failures
    assert len(runs) == 12 and len(fails) == 4
    assert set(fails["variant"]) == {"inflate[factor=100000]"}
    assert set(fails["error_type"]) == {"InputError"}
    assert fails["error_message"].str.contains("max_speedup").all()
    ok_ids = set(runs.loc[runs["status"] == "ok", "run_id"])
    assert set(local_run.results["run_id"]) == ok_ids and len(ok_ids) == 8
    assert set(local_run.pairs["variant"]) == {"inflate[factor=1.5]"}
    on_disk = pq.read_table(local_run.out / "failures.parquet").to_pandas()
    assert list(on_disk.columns) == RUN_COLUMNS and len(on_disk) == 4


@pytest.mark.parametrize("executor", ["process", "dask"])
def test_process_and_dask_executors_give_identical_parquet(
    executor: str, local_run: SweepResult, tiny_cfg: Path, tmp_path: Path
) -> None:
    if executor == "dask":
        pytest.importorskip("dask.distributed")
    res = run_sweep(load_sweep(tiny_cfg), tmp_path / executor, executor=executor, workers=2, progress=False)
    ref_results, ref_runs = _deterministic(local_run)
    results, runs = _deterministic(res)
    pd.testing.assert_frame_equal(results, ref_results)
    pd.testing.assert_frame_equal(runs, ref_runs)
    assert res.executor == executor and len(list((tmp_path / executor / "parts").glob("part-*.parquet"))) == 6


_STOP_BEFORE_FOURTH_CHUNK = """
import sys, time
from pathlib import Path
import marketsim.analysis.engine.sweep as sweep
from marketsim.analysis.frontends.cli import main

marker, real, calls = Path(sys.argv[1]), sweep.execute_chunk, []

def execute_chunk(chunk):
    calls.append(chunk)
    if len(calls) == 4:  # three chunks are done (and written before this one is asked for)
        marker.write_text("3 chunks done")
        while True:
            time.sleep(3600)
    return real(chunk)

sweep.execute_chunk = execute_chunk
sys.exit(main(sys.argv[2:]))
"""


def test_kill_and_resume_loses_nothing_and_recomputes_nothing(stop_at_marker, tmp_path: Path) -> None:
    cfg_path = _write(tmp_path, "resumable", RESUMABLE)
    out = tmp_path / "out"
    marker = tmp_path / "three-chunks-done"
    # the child stops before its fourth chunk and says so: SIGKILL then finds exactly three parts on disk,
    # whatever the machine's load (no fixed wait, no race with the end of the sweep)
    cmd = [sys.executable, "-c", _STOP_BEFORE_FOURTH_CHUNK, str(marker), "sweep", str(cfg_path), "--out", str(out),
           "--chunk-size", "1", "--quiet"]  # fmt: skip
    parts = out / "parts"
    assert stop_at_marker(cmd, marker, signal.SIGKILL, cwd=ROOT, bound_s=600) == -signal.SIGKILL
    plan = plan_sweep(load_sweep(cfg_path))
    before = completed_run_ids(out)
    assert len(list(parts.glob("part-*.parquet"))) == 3 and 3 <= len(before) < len(plan)
    first_parts = {p.name: pq.read_schema(p).metadata for p in parts.glob("part-*.parquet")}
    killed = json.loads((out / "sweep.json").read_text())
    assert killed["status"] == "running" and killed["complete"] is False  # a SIGKILLed sweep reads incomplete

    res = run_sweep(load_sweep(cfg_path), out, resume=True, progress=False)
    assert res.skipped == len(before) and res.ran == len(plan) - len(before)
    # every run exactly once, across the consolidated table and across all part files
    assert sorted(res.runs["run_id"]) == sorted(r.run_id for r in plan)
    all_records = [
        rec
        for p in sorted(parts.glob("part-*.parquet"))
        for rec in json.loads(pq.read_schema(p).metadata[b"marketsim.sweep.runs"])
    ]
    assert len(all_records) == len(plan) and len({r["run_id"] for r in all_records}) == len(plan)
    # runs finished before the kill kept their first-session record (part, timestamps): not recomputed
    old = res.runs[res.runs["run_id"].isin(before)]
    assert (old["session"] == 1).all() and old["part"].isin(first_parts).all()
    assert (res.runs.loc[~res.runs["run_id"].isin(before), "session"] == 2).all()
    for name, meta in first_parts.items():
        assert pq.read_schema(parts / name).metadata == meta
    manifest = json.loads((out / "sweep.json").read_text())
    assert [s["session"] for s in manifest["sessions"]] == [1, 2]
    assert manifest["sessions"][0]["ended"] == "killed"  # the resume found it killed (no live process held it)
    assert manifest["sessions"][1]["skipped"] == len(before)
    assert manifest["status"] == "complete" and manifest["complete"] is True
    # and the data equal an uninterrupted sweep
    fresh = run_sweep(load_sweep(cfg_path), tmp_path / "fresh", progress=False)
    pd.testing.assert_frame_equal(res.results, fresh.results)
    pd.testing.assert_frame_equal(res.runs[RUN_COLUMNS], fresh.runs[RUN_COLUMNS])
    pd.testing.assert_frame_equal(res.summary, fresh.summary)


def test_resume_refuses_a_different_sweep_and_fresh_runs_refuse_existing_parts(
    local_run: SweepResult, tiny_cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = parse_sweep({**_toml(TINY), "seed": 99}, "tiny")
    with pytest.raises(InputError, match="different sweep"):
        run_sweep(other, local_run.out, resume=True, progress=False)
    assert main(["sweep", str(tiny_cfg), "--out", str(local_run.out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0]
    # resuming a complete sweep runs nothing and reproduces the same tables
    again = run_sweep(load_sweep(tiny_cfg), local_run.out, resume=True, progress=False)
    assert again.ran == 0 and again.skipped == 12
    pd.testing.assert_frame_equal(again.results, local_run.results)


def test_retry_failed_reruns_only_failures(local_run: SweepResult, tiny_cfg: Path, tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(local_run.out, out)
    res = run_sweep(load_sweep(tiny_cfg), out, resume=True, retry_failed=True, progress=False)
    assert res.ran == 4 and len(res.runs) == 12 and len(res.failures) == 4
    last = res.runs["session"].max()
    assert (res.runs.loc[res.runs["status"] != "ok", "session"] == last).all()
    assert (res.runs.loc[res.runs["status"] == "ok", "session"] < last).all()
    pd.testing.assert_frame_equal(res.results, local_run.results)


def test_paired_differences_by_hand() -> None:
    """Records of unequal length (``round_s``, else the run's ``round_seconds``): the liar's figure is
    its throughput while active (integral over its active records / that time), others and total
    are work per second of the run, and the liar's mean JCT is paired too."""
    rows = []

    def run(rid: str, variant: str, act: dict[str, list[float]], lengths: list[float | None], jct: float) -> None:
        for t, length in enumerate(lengths):
            rows.append((rid, "s", "base", "p", variant, 0, t, "", "available_gpus", 4.0))
            if length is not None:
                rows.append((rid, "s", "base", "p", variant, 0, t, "", "round_s", length))
            for tenant, vals in act.items():
                rows.append((rid, "s", "base", "p", variant, 0, t, tenant, "act", vals[t]))
                rows.append((rid, "s", "base", "p", variant, 0, t, tenant, "runnable_jobs", float(vals[t] > 0)))
        rows.append((rid, "s", "base", "p", variant, 0, len(lengths) - 1, "t0", "jct_s", jct))

    # truthful: fixed rounds of 100 s (round_seconds); t1 is active in both rounds, t0 in both
    run("T", "truthful", {"t0": [1.0, 3.0], "t1": [2.0, 2.0]}, [None, None], 500.0)
    # lying: a 100 s record and a 300 s record; t0 works 4/s in both, t1 only in the first
    run("L", "lie", {"t0": [4.0, 4.0], "t1": [1.0, 0.0]}, [100.0, 300.0], 400.0)
    cols = ["run_id", "scenario", "cell", "policy", "variant", "replication", "round", "tenant", "measure", "value"]
    results = pd.DataFrame(rows, columns=cols)
    keys = ["run_id", "variant", "strategy", "param", "param_value", "deviator"]
    runs = pd.DataFrame(
        [
            dict(zip(keys, ("T", "truthful", "truthful", "", np.nan, ""), strict=True)),
            dict(zip(keys, ("L", "lie", "lie", "factor", 2.0, "t0"), strict=True)),
        ]
    ).assign(scenario="s", cell="base", policy="p", replication=0, status="ok", round_seconds=100.0)
    pairs = paired_differences(results, runs)
    assert len(pairs) == 1
    p = pairs.iloc[0]
    assert (p["liar_truthful"], p["liar_lying"], p["liar_diff"]) == (2.0, 4.0, 2.0)
    # others: t1 did 400 work-s in 200 s truthful, 100 work-s in 400 s lying
    assert (p["others_truthful"], p["others_lying"], p["others_diff"]) == (2.0, 0.25, -1.75)
    # total: (400 + 400) / 200 truthful, (1600 + 100) / 400 lying (a mean over records would say 4.5)
    assert (p["total_truthful"], p["total_lying"], p["total_diff"]) == (4.0, 4.25, 0.25)
    assert (p["liar_jct_truthful"], p["liar_jct_lying"], p["liar_jct_diff"]) == (500.0, 400.0, -100.0)
    summary = paired_summary(pd.concat([pairs, pairs.assign(replication=1, liar_diff=4.0, liar_jct_diff=50.0)]))
    s = summary.iloc[0]
    assert s["n"] == 2 and s["liar_diff"] == 3.0 and s["liar_rel_gain"] == 1.5 and s["p_gain"] == 1.0
    assert s["liar_low"] < 3.0 < s["liar_high"]
    assert s["liar_jct_diff"] == -25.0 and s["p_jct_gain"] == 0.5
    with pytest.raises(InputError, match="round_seconds"):  # a fixed-round run without its round length
        paired_differences(results, runs.drop(columns="round_seconds"))


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"bogus": 1}, "bogus"),
        ({"replications": 0}, "replications"),
        ({"grid": {"seed": [1, 2]}}, "cannot be swept"),
        ({"strategy": [{"name": "x", "kind": "teleport", "tenant": 0}]}, "kind"),
        ({"strategy": [{"name": "x", "kind": "noise", "tenant": 0, "e": [1.5]}]}, r"\[0, 1\)"),
        ({"strategy": [{"name": "x", "kind": "fast", "tenant": 0}]}, "factor"),
        ({"scenarios": []}, "scenarios"),
    ],
)
def test_config_validation(patch: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        parse_sweep({**_toml(TINY), **patch}, "tiny")


def test_plan_time_errors_name_the_cell() -> None:
    bad = parse_sweep({**_toml(TINY), "grid": {"workload.tenants": [0]}}, "tiny")
    with pytest.raises(InputError, match="cell workload.tenants=0"):
        plan_sweep(bad)
    dev = parse_sweep({**_toml(TINY), "strategy": [{"name": "x", "kind": "fast", "tenant": 9, "factor": 2}]}, "t")
    with pytest.raises(InputError, match="tenant"):
        plan_sweep(dev)


def test_cli_sweep_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _write(tmp_path, "tiny", TINY)
    for argv, needle in [
        (["sweep", str(tmp_path / "missing.toml")], "neither a file"),
        (["sweep", str(cfg), "--address", "tcp://127.0.0.1:1"], "--address"),
        (["sweep", str(cfg), "--workers", "0"], "--workers"),
        (["sweep", str(cfg), "--executor", "slurm"], "invalid choice"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err


def test_missing_dask_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from marketsim.analysis.engine.executors_dask import DaskExecutor, import_distributed

    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(InputError, match=r"pip install 'marketsim-cluster\[dask\]'"):
        import_distributed()
    with pytest.raises(InputError, match="marketsim"):
        list(DaskExecutor().map(len, [[1]]))


def test_embedded_sweep_plans() -> None:
    cfg = load_sweep("sweep_lie_factor")
    plan = plan_sweep(cfg)
    assert len(plan) == cfg.replications * 2 * 3 * 6  # reps x tenants cells x policies x (1 + 3 + 2) variants


def test_run_points_sweep_configs_to_the_sweep_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "sweep_lie_factor", "--quiet"]) == 2
    assert "marketsim sweep sweep_lie_factor" in capsys.readouterr().err


def test_consolidation_streams_one_part_at_a_time(local_run: SweepResult, tmp_path: Path, monkeypatch) -> None:
    """Consolidating again with a tiny row-group budget and a 2-part cache gives the same results,
    written in several row groups, never holding more than 2 part files at once."""
    import shutil

    import marketsim.analysis.engine.sweep as sw

    out = tmp_path / "copy"
    shutil.copytree(local_run.out / "parts", out / "parts")
    loads: list[str] = []
    real = sw.pq.read_table

    def counting(path, *a, **k):
        loads.append(Path(path).name)
        return real(path, *a, **k)

    monkeypatch.setattr(sw.pq, "read_table", counting)
    monkeypatch.setattr(sw, "STREAM_ROWS", 500)
    monkeypatch.setattr(sw, "PART_CACHE", 2)
    again = sw.consolidate(out)
    parts = sorted(p.name for p in (out / "parts").glob("part-*.parquet"))
    assert len(parts) > 2 and set(loads) == set(parts)  # every part read, through a small cache
    assert sw.STREAM_STATS["max_cached"] <= 2 and sw.STREAM_STATS["loads"] == len(loads)
    assert pq.ParquetFile(out / "results.parquet").num_row_groups > 1
    pd.testing.assert_frame_equal(again.results, local_run.results)
    pd.testing.assert_frame_equal(again.summary, local_run.summary)
