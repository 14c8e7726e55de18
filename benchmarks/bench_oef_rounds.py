"""oef-noncoop's per-round solve in the trace engine, this tree against a baseline commit (issue #31).

1. **Capture**: ``marketsim run`` of the generated Gavel-style trace of ``bench_trace_scale.py``
   (``scale_scenario(--jobs, 30 jobs/hour, "oef-noncoop", 64 tenants)``, truthful run and tenant 0
   lying) with this tree, recording every call the engine makes to the registered ``oef-noncoop``
   (``TraceRounds._solve``, class mode: one row per (tenant, job type, speedup vector) class).
2. **Replay**: fresh processes replay all captured calls, exactly as the engine made them, with the
   baseline tree (``git archive --baseline``) and with this tree, alternating, ``--reps`` times each;
   CPU seconds (``time.process_time``) per call, median over the reps, and their ratio.
3. **Check**: every call's allocation under this tree against the baseline's: the same ``X``
   (``rtol = atol = 1e-9`` of the largest entry), or, where LP (9) has several optimal vertices (rows
   with the same speedups are interchangeable), the same objective and per-row throughputs
   ``W_l . x_l`` within ``1e-9`` relative and feasible (``X >= 0``, capacities); anything else fails
   the benchmark. Also: this tree's reps give bitwise-identical ``X`` (determinism).
4. **Whole run** (``--run-jobs``, default 20,000; 0 skips): ``marketsim run`` CPU (user + sys of the
   whole process, ``os.wait4``) of the same scenario at that size with both trees, and each variant's
   completed jobs and mean JCT (a different optimal vertex moves jobs between GPU types, so JCTs may
   differ a little).

Usage (one command rewrites the results files)::

    .venv/bin/python benchmarks/bench_oef_rounds.py [--jobs 5000] [--reps 3] [--run-jobs 20000] [--baseline f83c34d]

Writes ``benchmarks/results/oef_rounds.json`` and ``oef_rounds.md`` with the machine's load average
around each step, the commits and package versions (CPU seconds rise with the load: 2 CPUs shared).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_trace_scale import (  # noqa: E402
    PACKAGES,
    _child,
    _load,
    _versions,
    clean_env,
    marketsim_cmd,
    scale_scenario,
)

from marketsim.analysis.engine.studies import git_commit  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BASELINE = "f83c34d"  # main before the distinct-rows solve (market/oef/mechanisms.py _noncoop)
RATE = 30.0
TENANTS = 64

_CAPTURE = """
import pickle, sys
from marketsim.market import registry
from marketsim.analysis.frontends.cli import main
info = registry.get("oef-noncoop")
calls = []
fn = info.fn
def record(T, m, **kw):
    calls.append((T.copy(), m.copy(), {k: (v.copy() if hasattr(v, "copy") else v) for k, v in kw.items()}))
    return fn(T, m, **kw)
object.__setattr__(info, "fn", record)
code = main(["run", sys.argv[1], "--reps", "1", "--out", sys.argv[2], "--quiet"])
pickle.dump(calls, open(sys.argv[3], "wb"))
sys.exit(code or 0)
"""

_REPLAY = """
import pickle, sys, time
from marketsim.market import registry
fn = registry.get("oef-noncoop").fn
calls = pickle.load(open(sys.argv[1], "rb"))
fn(*calls[0][:2], **{**calls[0][2], "cache": False})  # imports and first HiGHS instance outside the timing
t0 = time.process_time()
out = [fn(T, m, **kw) for T, m, kw in calls]
cpu = time.process_time() - t0
pickle.dump({"cpu_s": cpu, "X": [a.X for a in out], "objective": [a.objective for a in out]}, open(sys.argv[2], "wb"))
"""


def extract(commit: str, dest: Path) -> str:
    """``git archive`` of ``commit``'s packages into ``dest``; the full commit hash."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", commit], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    tar = dest.with_suffix(".tar")
    with open(tar, "wb") as f:
        subprocess.run(["git", "-C", str(ROOT), "archive", full, *PACKAGES], stdout=f, check=True)
    dest.mkdir()
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    tar.unlink()
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(dest / p) for p in PACKAGES)],
                   env=clean_env(), check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return full


def tree_env(tree: Path) -> dict[str, str]:
    return clean_env(PYTHONPATH=str(tree))


def compare(calls: list[Any], new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """Step 3: per call, the same X, or a different optimum (objective and throughputs within 1e-9)."""
    same = other = 0
    worst = 0.0
    for (T, m, _), X, X0, obj, obj0 in zip(calls, new["X"], old["X"], new["objective"], old["objective"], strict=True):
        if np.allclose(X, X0, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(X0).max(initial=0.0)))):
            same += 1
            continue
        Wn = T / T[:, :1]
        u, u0 = (Wn * X).sum(axis=1), (Wn * X0).sum(axis=1)
        rel = max(abs(obj - obj0) / max(abs(obj0), 1e-300),
                  float(np.max(np.abs(u - u0) / np.maximum(np.abs(u0), 1e-300))))  # fmt: skip
        feasible = bool(X.min(initial=0.0) >= -1e-12 and np.all(X.sum(axis=0) <= m * (1 + 1e-9) + 1e-9))
        if rel > 1e-9 or not feasible:
            raise AssertionError(f"call with {T.shape[0]} rows: relative gap {rel:.3g}, feasible {feasible}")
        worst = max(worst, rel)
        other += 1
    return {"calls": len(calls), "same_X": same, "other_optimum": other, "worst_relative_gap": worst}


def engine_run(tree: Path, jobs: int, tmp: Path, tag: str) -> dict[str, Any]:
    """Step 4: ``marketsim run`` of the scenario with ``jobs`` jobs under ``tree``."""
    import pyarrow.parquet as pq

    scen = tmp / f"run_{jobs}.toml"
    scen.write_text(scale_scenario(jobs, RATE, "oef-noncoop", TENANTS))
    out = tmp / f"out_{tag}"
    load0 = _load()
    got = _child([*marketsim_cmd(), "run", str(scen), "--reps", "1", "--out", str(out), "--quiet"], cwd=tmp,
                 env=tree_env(tree))  # fmt: skip
    got.pop("stdout")
    comp = pq.read_table(out / "completions.parquet", columns=["variant", "jct_s"]).to_pandas()
    by = comp.groupby("variant", observed=True)["jct_s"]
    got.update({"completed": {str(k): int(v) for k, v in by.size().items()},
                "mean_jct_h": {str(k): float(v) / 3600 for k, v in by.mean().items()},
                "load_start": load0, "load_end": _load()})  # fmt: skip
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000, help="jobs of the captured scenario (default 5000)")
    ap.add_argument("--reps", type=int, default=3, help="replays per tree (default 3)")
    ap.add_argument("--run-jobs", type=int, default=20000, help="jobs of the whole-run comparison (0: skip)")
    ap.add_argument("--baseline", default=BASELINE, help=f"baseline commit (default {BASELINE})")
    args = ap.parse_args()
    load_start = _load()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        base_tree = tmp / "baseline"
        base_commit = extract(args.baseline, base_tree)
        subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(ROOT / p) for p in PACKAGES)],
                       env=clean_env(), check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        scen = tmp / "capture.toml"
        scen.write_text(scale_scenario(args.jobs, RATE, "oef-noncoop", TENANTS))
        calls_file = tmp / "calls.pkl"
        cap = _child([sys.executable, "-c", _CAPTURE, str(scen), str(tmp / "cap_out"), str(calls_file)], cwd=tmp,
                     env=tree_env(ROOT))  # fmt: skip
        with open(calls_file, "rb") as f:
            calls = pickle.load(f)
        rows = np.array([T.shape[0] for T, _, _ in calls])
        distinct = np.array([np.unique(T / T[:, :1], axis=0).shape[0] for T, _, _ in calls])
        cpu: dict[str, list[float]] = {"baseline": [], "this": []}
        outs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
        replay_loads = []
        for rep in range(args.reps):
            for name, tree in (("baseline", base_tree), ("this", ROOT)):
                res = tmp / f"replay_{name}_{rep}.pkl"
                replay_loads.append(_load())
                _child([sys.executable, "-c", _REPLAY, str(calls_file), str(res)], cwd=tmp, env=tree_env(tree))
                with open(res, "rb") as f:
                    got = pickle.load(f)
                cpu[name].append(got["cpu_s"])
                outs[name].append(got)
        check = compare(calls, outs["this"][0], outs["baseline"][0])
        deterministic = all(np.array_equal(a, b) for o in outs["this"][1:] for a, b in zip(o["X"], outs["this"][0]["X"],
                                                                                          strict=True))  # fmt: skip
        if not deterministic:
            raise AssertionError("this tree's replays differ")
        per_call = {k: statistics.median(v) / len(calls) * 1e3 for k, v in cpu.items()}
        replay = {"calls": len(calls), "class_rows_mean": float(rows.mean()), "class_rows_max": int(rows.max()),
                  "distinct_rows_mean": float(distinct.mean()), "distinct_rows_max": int(distinct.max()),
                  "cpu_s": cpu, "cpu_ms_per_call_median": per_call,
                  "ratio_baseline_over_this": per_call["baseline"] / per_call["this"], "loads": replay_loads,
                  "capture_cpu_s": cap["cpu_s"], "check": check, "deterministic_reps": deterministic}  # fmt: skip
        runs: dict[str, Any] = {}
        if args.run_jobs:
            for name, tree in (("baseline", base_tree), ("this", ROOT)):
                runs[name] = engine_run(tree, args.run_jobs, tmp, name)
            runs["cpu_ratio_baseline_over_this"] = runs["baseline"]["cpu_s"] / runs["this"]["cpu_s"]
    data = {
        "benchmark": "bench_oef_rounds.py",
        "command": "python benchmarks/bench_oef_rounds.py " + " ".join(sys.argv[1:]),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "this_commit": git_commit(ROOT, default="unknown"),
        "baseline_commit": base_commit,
        "scenario": {"generator": "gavel", "jobs_per_hour": RATE, "tenancy": TENANTS, "gpus": [336, 336, 336],
                     "variants": ["truthful", "lying (tenant 0, fast, 1.3)"], "capture_jobs": args.jobs,
                     "run_jobs": args.run_jobs},  # fmt: skip
        "replay": replay,
        "whole_run": runs,
        "load_start": load_start,
        "load_end": _load(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "versions": _versions(sys.executable, ("numpy", "scipy", "highspy", "pandas", "mesa")),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "oef_rounds.json").write_text(json.dumps(data, indent=2) + "\n")
    (RESULTS / "oef_rounds.md").write_text(render(data))
    print(render(data))
    return 0


def render(d: dict[str, Any]) -> str:
    r = d["replay"]
    c = r["check"]
    lines = [
        "# oef-noncoop per-round solve: this tree against a baseline (benchmarks/bench_oef_rounds.py)",
        "",
        f"Command: `{d['command']}`; {d['when']}; this commit {d['this_commit']}, baseline "
        f"{d['baseline_commit']}; load average (1/5/15 min) {d['load_start']} at the start, {d['load_end']} at "
        f"the end on {d['cpus']} CPUs (shared: CPU seconds rise with the load); "
        f"{d['versions']}.",
        "",
        f"Scenario: generated Gavel-style trace, {d['scenario']['jobs_per_hour']:g} jobs/hour, "
        f"{d['scenario']['tenancy']} tenants, 336 + 336 + 336 GPUs, truthful and tenant 0 lying (`fast`, 1.3).",
        "",
        f"## Replay of the engine's {r['calls']} calls ({d['scenario']['capture_jobs']} jobs, both runs)",
        "",
        f"Class rows per call: mean {r['class_rows_mean']:.0f}, max {r['class_rows_max']}; distinct speedup "
        f"vectors per call: mean {r['distinct_rows_mean']:.1f}, max {r['distinct_rows_max']}.",
        "",
        "| tree | CPU ms per call (median of reps) | CPU s per rep |",
        "|---|---|---|",
    ]
    for name in ("baseline", "this"):
        reps = ", ".join(f"{v:.2f}" for v in r["cpu_s"][name])
        lines.append(f"| {name} | {r['cpu_ms_per_call_median'][name]:.2f} | {reps} |")
    lines += [
        "",
        f"Ratio baseline / this: **{r['ratio_baseline_over_this']:.2f}x** (loads before each replay: "
        f"{', '.join(r['loads'])}).",
        "",
        f"Check: {c['same_X']} of {c['calls']} calls give the same X; {c['other_optimum']} another optimum of LP (9) "
        f"(objective and per-row throughputs within {max(c['worst_relative_gap'], 0.0):.1e} relative, feasible); "
        f"this tree's replays bitwise identical: {r['deterministic_reps']}.",
    ]
    w = d["whole_run"]
    if w:
        lines += [
            "",
            f"## Whole `marketsim run`, {d['scenario']['run_jobs']} jobs (truthful + lying)",
            "",
            "| tree | CPU s | wall s | peak RSS MB | completed | mean JCT h | load start -> end |",
            "|---|---|---|---|---|---|---|",
        ]
        for name in ("baseline", "this"):
            g = w[name]
            comp = ", ".join(f"{k} {v}" for k, v in g["completed"].items())
            jct = ", ".join(f"{k} {v:.4f}" for k, v in g["mean_jct_h"].items())
            lines.append(f"| {name} | {g['cpu_s']:.1f} | {g['wall_s']:.1f} | {g['rss_mb']:.0f} | {comp} | {jct} | "
                         f"{g['load_start']} -> {g['load_end']} |")  # fmt: skip
        lines += ["", f"CPU ratio baseline / this: **{w['cpu_ratio_baseline_over_this']:.2f}x**."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
