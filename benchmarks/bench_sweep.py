"""Benchmark: sweep executors.

1. Speed-up of the process pool with 2 workers vs 1 on the ``default`` scenario (all six
   allocators, truthful, ``--reps`` replications; target >= 1.7x).
2. Dask ``LocalCluster`` (2 worker processes) overhead vs the process pool (2 workers) on runs of
   about 1 s each (``default`` with backlogged tenants and 400 rounds; target <= 10 %).

Each configuration is a complete :func:`marketsim.analysis.engine.sweep.run_sweep` into a fresh directory (pool or
cluster start-up, runs, part files, consolidation), timed once, wall clock. The speed-up sweep
uses the default chunking (runs per task and part file); the Dask comparison uses chunk size 1 so
both executors schedule the same 24 tasks. The consolidated results are checked to be identical across
executors. The machine has 2 cores and is shared, so the 1-minute load average is recorded.

    .venv/bin/python benchmarks/bench_sweep.py [--reps 3] [--long-runs 16] [--quick]

Writes benchmarks/results/sweep.json and sweep.md (not with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.analysis.engine.sweep import RUN_COLUMNS, parse_sweep, plan_sweep, run_sweep  # noqa: E402

SPEEDUP_TARGET = 1.7
OVERHEAD_TARGET = 0.10


def _timed(
    config, executor: str, workers: int, tmp: Path, chunk_size: int | None = None, tag: str = ""
) -> tuple[float, object]:
    out = tmp / f"{config.name}-{executor}-{workers}{tag}"
    t0 = time.perf_counter()
    res = run_sweep(config, out, executor=executor, workers=workers, chunk_size=chunk_size, progress=False)
    return time.perf_counter() - t0, res


def _span(res) -> float:
    """Seconds from the first run's start to the last run's end (executor start-up excluded)."""
    start = pd.to_datetime(res.runs["started_at"]).min()
    end = pd.to_datetime(res.runs["finished_at"]).max()
    return float((end - start).total_seconds())


def _alternate(repeat: int, a, b) -> tuple[list[tuple[float, object]], list[tuple[float, object]]]:
    """``repeat`` timings of ``a(tag)`` and ``b(tag)``, alternating which goes first (order effects
    cancel): two lists of ``(seconds, result)``."""
    ra, rb = [], []
    for i in range(repeat):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        x, y = first(f"-{i}"), second(f"-{i}")
        (ra, rb)[0 if first is a else 1].append(x)
        (ra, rb)[1 if first is a else 0].append(y)
    return ra, rb


def _median(xs: list[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=float)))


def _speedup(cfg, repeat: int, tmp: Path) -> dict:
    """Median whole-sweep seconds with 1 and 2 process workers (alternating) and their ratio."""
    one, two = _alternate(
        repeat,
        lambda tag: _timed(cfg, "process", 1, tmp, tag=tag),
        lambda tag: _timed(cfg, "process", 2, tmp, tag=tag),
    )
    for (_, ra), (_, rb) in zip(one, two, strict=True):
        pd.testing.assert_frame_equal(ra.results, rb.results)
    t1, t2 = _median([t for t, _ in one]), _median([t for t, _ in two])
    r1 = one[0][1]
    run_s = float(r1.runs["seconds"].sum())
    return {
        "scenario": "default (6 allocators, truthful)",
        "runs": len(plan_sweep(cfg)),
        "parts_1_worker": len(list((tmp / f"{cfg.name}-process-1-0" / "parts").glob("part-*.parquet"))),
        "parts_2_workers": len(list((tmp / f"{cfg.name}-process-2-0" / "parts").glob("part-*.parquet"))),
        "repeat": repeat,
        "samples_1_worker_s": [round(t, 2) for t, _ in one],
        "samples_2_workers_s": [round(t, 2) for t, _ in two],
        "mean_run_seconds_1_worker": round(run_s / len(r1.runs), 3),
        "process_1_worker_s": round(t1, 2),
        "process_2_workers_s": round(t2, 2),
        "speedup": round(t1 / t2, 3),
        "run_span_1_worker_s": round(_median([_span(r) for _, r in one]), 2),
        "run_span_2_workers_s": round(_median([_span(r) for _, r in two]), 2),
        "speedup_excluding_startup": round(
            _median([_span(r) for _, r in one]) / _median([_span(r) for _, r in two]), 3
        ),
        "target": SPEEDUP_TARGET,
        "meets_target": bool(t1 / t2 >= SPEEDUP_TARGET),
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }


def run(reps: int, long_runs: int, rounds_long: int, repeat: int = 3, reps_large: int = 0) -> dict:
    """Run both comparisons; return the JSON-ready results."""
    load0 = os.getloadavg()[0]
    base = {"scenarios": ["default"], "seed": 2024}
    speed_cfg = parse_sweep({**base, "name": "speedup", "replications": reps}, "speedup")
    reps_long = max(1, long_runs // 6)
    long_cfg = parse_sweep(
        {
            **base,
            "name": "overhead",
            "replications": reps_long,
            "grid": {"rounds": [rounds_long], "workload.backlogged": [True]},
        },
        "overhead",
    )
    out: dict = {"benchmark": "sweep executors", "machine": {}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out["speedup"] = _speedup(speed_cfg, repeat, tmp)
        if reps_large:
            large_cfg = parse_sweep({**base, "name": "speedup_large", "replications": reps_large}, "speedup_large")
            out["speedup_large"] = _speedup(large_cfg, repeat, tmp)
        proc, dask = _alternate(
            repeat,
            lambda tag: _timed(long_cfg, "process", 2, tmp, chunk_size=1, tag=tag),
            lambda tag: _timed(long_cfg, "dask", 2, tmp, chunk_size=1, tag=tag),
        )
        for (_, rp), (_, rd) in zip(proc, dask, strict=True):
            pd.testing.assert_frame_equal(rp.results, rd.results)
            pd.testing.assert_frame_equal(rp.runs[RUN_COLUMNS], rd.runs[RUN_COLUMNS])
        tp, td = _median([t for t, _ in proc]), _median([t for t, _ in dask])
        rp = proc[0][1]
        overhead = td / tp - 1.0
        out["dask_overhead"] = {
            "scenario": f"default, backlogged tenants, {rounds_long} rounds (6 allocators, truthful)",
            "runs": len(plan_sweep(long_cfg)),
            "mean_run_seconds": round(float(rp.runs["seconds"].mean()), 3),
            "process_2_workers_s": round(tp, 2),
            "dask_localcluster_2_workers_s": round(td, 2),
            "overhead": round(overhead, 4),
            "repeat": repeat,
            "samples_process_s": [round(t, 2) for t, _ in proc],
            "samples_dask_s": [round(t, 2) for t, _ in dask],
            "run_span_process_s": round(_median([_span(r) for _, r in proc]), 2),
            "run_span_dask_s": round(_median([_span(r) for _, r in dask]), 2),
            "overhead_excluding_startup": round(
                _median([_span(r) for _, r in dask]) / _median([_span(r) for _, r in proc]) - 1.0, 4
            ),
            "target": OVERHEAD_TARGET,
            "meets_target": bool(overhead <= OVERHEAD_TARGET),
            "identical_results": True,
            "load_avg_1min": round(os.getloadavg()[0], 2),
        }
    out["machine"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_avg_1min_start": round(load0, 2),
        "load_avg_1min_end": round(os.getloadavg()[0], 2),
    }
    return out


def markdown(res: dict) -> str:
    """The results as a short Markdown page."""
    s, o, m = res["speedup"], res["dask_overhead"], res["machine"]
    return "\n".join(
        [
            "# Sweep executors",
            "",
            "Each figure is the median of "
            f"{s.get('repeat', 1)} complete `run_sweep` calls per configuration (executor start-up, runs, "
            "Parquet parts, consolidation), wall clock, the configurations alternating (order effects cancel); "
            "default chunking for the speed-up, chunk size 1 for the Dask comparison.",
            "",
            "## Process pool: 2 workers vs 1",
            "",
            f"{s['scenario']}, {s['runs']} runs of {s['mean_run_seconds_1_worker']} s on average "
            f"({s['parts_1_worker']} / {s['parts_2_workers']} part files).",
            "",
            "| workers | seconds |",
            "|---|---|",
            f"| 1 | {s['process_1_worker_s']} (samples {s.get('samples_1_worker_s', '-')}) |",
            f"| 2 | {s['process_2_workers_s']} (samples {s.get('samples_2_workers_s', '-')}) |",
            "",
            f"Speed-up **{s['speedup']}x** (target >= {s['target']}x: "
            f"**{'met' if s['meets_target'] else 'NOT met'}**; load average {s['load_avg_1min']}). "
            f"From the first run's start to the last run's end (pool start-up excluded): "
            f"{s['run_span_1_worker_s']} s vs {s['run_span_2_workers_s']} s, {s['speedup_excluding_startup']}x.",
            "",
            *(
                [
                    "Note: more than 2x on 2 cores means the 1-worker sweep was slowed by other jobs on this "
                    "shared machine (compare the mean run seconds); treat the figure as noisy.",
                    "",
                ]
                if s["speedup"] > 2.0
                else []
            ),
            *(
                [
                    f"Larger sweep ({res['speedup_large']['runs']} runs of the same scenario, "
                    f"{res['speedup_large']['repeat']} alternating samples each): 1 worker "
                    f"{res['speedup_large']['process_1_worker_s']} s (samples "
                    f"{res['speedup_large']['samples_1_worker_s']}), 2 workers "
                    f"{res['speedup_large']['process_2_workers_s']} s (samples "
                    f"{res['speedup_large']['samples_2_workers_s']}): speed-up "
                    f"**{res['speedup_large']['speedup']}x** (target: "
                    f"**{'met' if res['speedup_large']['meets_target'] else 'NOT met'}**). A sweep's fixed cost "
                    "(total minus run span: worker start-up, consolidation; "
                    f"{res['speedup']['process_1_worker_s'] - res['speedup']['run_span_1_worker_s']:.1f} s with 1 "
                    f"worker above) weighs less as the sweep grows.",
                    "",
                ]
                if "speedup_large" in res
                else []
            ),
            "## Dask LocalCluster vs process pool (2 workers each)",
            "",
            f"{o['scenario']}, {o['runs']} runs of {o['mean_run_seconds']} s on average; identical results.",
            "",
            "| executor | seconds |",
            "|---|---|",
            f"| process pool | {o['process_2_workers_s']} (samples {o.get('samples_process_s', '-')}) |",
            f"| Dask LocalCluster | {o['dask_localcluster_2_workers_s']} (samples {o.get('samples_dask_s', '-')}) |",
            "",
            f"Overhead **{100 * o['overhead']:+.1f}%** (target <= {100 * o['target']:.0f}%: "
            f"**{'met' if o['meets_target'] else 'NOT met'}**; load average {o['load_avg_1min']}). "
            f"Start-up excluded (first run start to last run end): {o['run_span_process_s']} s vs "
            f"{o['run_span_dask_s']} s, {100 * o['overhead_excluding_startup']:+.1f}%.",
            "",
            f"Machine: {m['cpus']} CPUs, Python {m['python']}, 1-min load average {m['load_avg_1min_start']} -> "
            f"{m['load_avg_1min_end']} (a virtual machine; nothing else of ours was running).",
            "",
        ]
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20, help="replications of the speed-up sweep (6 runs each)")
    ap.add_argument("--long-runs", type=int, default=24, help="runs of ~1 s for the Dask overhead sweep")
    ap.add_argument("--rounds-long", type=int, default=600, help="rounds per run in the overhead sweep (~1 s runs)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating repetitions of each timing (medians)")
    ap.add_argument("--reps-large", type=int, default=60, help="replications of the larger speed-up sweep (0: skip)")
    ap.add_argument("--quick", action="store_true", help="tiny smoke run; print only")
    ap.add_argument("--markdown-only", action="store_true", help="rewrite sweep.md from sweep.json")
    args = ap.parse_args()
    if args.markdown_only:
        out = ROOT / "benchmarks" / "results"
        (out / "sweep.md").write_text(markdown(json.loads((out / "sweep.json").read_text())), encoding="utf-8")
        return 0
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    res = (
        run(1, 6, 8, 1)
        if args.quick
        else run(args.reps, args.long_runs, args.rounds_long, args.repeat, args.reps_large)
    )
    print(json.dumps(res, indent=2))
    if not args.quick:
        out = ROOT / "benchmarks" / "results"
        out.mkdir(parents=True, exist_ok=True)
        (out / "sweep.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
        (out / "sweep.md").write_text(markdown(res), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
