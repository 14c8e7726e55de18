"""Benchmark of trace-driven runs: every fair-share policy on the Philly sample to completion.

1. **Philly** (the embedded ``philly_trace`` scenario: 2,007 jobs on 36 K80 + 36 P100 + 36 V100,
   tenants = Philly virtual clusters, 360 s rounds, Gavel's 1920 s re-solve interval), each of
   maxmin, gavel, gavel-max-min-perf, gavel-max-sum-throughput, oef-noncoop, oef-coop and
   gandiva-fair run to completion in one process (the target: <= 2 minutes each on 2 cores).
   Reports wall seconds, rounds, rounds/s, policy solves and their seconds, the round loop's own
   time per round (wall minus solves, i.e. the vectorised round mechanics plus Mesa's step and
   DataCollector), and the mean JCT.
2. **Solve time vs active jobs**: the per-solve policy seconds binned by the number of active jobs,
   from section 1 and from Gavel's own trace (``gavel_trace``: 1,301 jobs on 12+12+12 GPUs, one
   tenant per job, so up to hundreds of rows per solve).
3. **Profile** of the round loop: cProfile of one more ``maxmin`` Philly run (the cheapest policy,
   so the loop dominates), the functions with the most own time.

Usage: ``python benchmarks/bench_trace.py [--policies a,b] [--gavel-policies a,b] [--no-gavel]``;
writes ``benchmarks/results/trace.json`` and ``trace.md`` with the machine's load average (other
jobs share the 2 CPUs, so absolute seconds are pessimistic).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marketsim.scenarios.loader import load_scenario  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PHILLY_POLICIES = ("maxmin", "gavel", "gavel-max-min-perf", "gavel-max-sum-throughput", "oef-noncoop", "oef-coop",
                   "gandiva-fair")  # fmt: skip
GAVEL_POLICIES = ("maxmin", "gavel-max-min-perf", "oef-noncoop", "oef-coop")
BINS = (0, 5, 10, 20, 50, 100, 200, 500, 10**9)


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f}/{b:.2f}/{c:.2f}"


def _run(scenario: str, policy: str, seed: int) -> dict:
    scen = load_scenario(scenario)
    model = scen.build_model(policy, "truthful", seed)
    model.progress = False
    load0 = _load()
    t0 = time.perf_counter()
    model.run()
    wall = time.perf_counter() - t0
    eng = model.auctioneer.trace
    comp = model.completions()
    solve = eng.solve_seconds
    rounds = int(eng.rounds)  # Gavel rounds (model steps merge rounds in which nothing changes)
    return {
        "scenario": scenario,
        "policy": policy,
        "jobs": int(eng.n),
        "completed": int(len(comp)),
        "cap_reached": bool(model.cap_reached),
        "wall_s": wall,
        "rounds": rounds,
        "rounds_per_s": rounds / wall,
        "solves": int(eng.solves),
        "solve_s": solve,
        "loop_ms_per_round": 1e3 * (wall - solve) / rounds,
        "simulated_days": float(eng.now) / 86400.0,
        "mean_jct_h": float(comp["jct_s"].mean()) / 3600.0,
        "solve_log": eng.solve_log,
        "load_start": load0,
        "load_end": _load(),
    }


def _bins(log: list[tuple[int, float]]) -> list[dict]:
    if not log:
        return []
    n = np.array([a for a, _ in log])
    s = np.array([b for _, b in log])
    out = []
    for lo, hi in zip(BINS[:-1], BINS[1:], strict=True):
        sel = (n > lo) & (n <= hi)
        if sel.any():
            out.append({"active_jobs": f"{lo + 1}-{hi}" if hi < 10**9 else f">{lo}", "solves": int(sel.sum()),
                        "mean_ms": 1e3 * float(s[sel].mean()), "max_ms": 1e3 * float(s[sel].max())})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default=",".join(PHILLY_POLICIES))
    ap.add_argument("--gavel-policies", default=",".join(GAVEL_POLICIES))
    ap.add_argument("--no-gavel", action="store_true")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    runs = []
    for p in [x for x in args.policies.split(",") if x]:
        r = _run("philly_trace", p, args.seed)
        print(f"philly {p}: {r['wall_s']:.1f} s, {r['rounds']} rounds, {r['solves']} solves {r['solve_s']:.1f} s, "
              f"load {r['load_start']} -> {r['load_end']}", flush=True)  # fmt: skip
        runs.append(r)
    if not args.no_gavel:
        for p in [x for x in args.gavel_policies.split(",") if x]:
            r = _run("gavel_trace", p, args.seed)
            print(f"gavel {p}: {r['wall_s']:.1f} s, {r['rounds']} rounds, {r['solves']} solves {r['solve_s']:.1f} s",
                  flush=True)  # fmt: skip
            runs.append(r)
    prof_text = ""
    if not args.no_profile:
        scen = load_scenario("philly_trace")
        model = scen.build_model("maxmin", "truthful", args.seed)
        model.progress = False
        prof = cProfile.Profile()
        prof.enable()
        model.run()
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime").print_stats(12)
        prof_text = buf.getvalue().strip()
        print("profiled", flush=True)
    meta = {"started": started, "python": f"{platform.python_implementation()} {platform.python_version()}",
            "machine": platform.machine(), "cpus": os.cpu_count(), "seed": args.seed}  # fmt: skip
    for r in runs:
        r["solve_bins"] = _bins(r.pop("solve_log"))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "trace.json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=2) + "\n")
    lines = [
        "# Trace-driven runs benchmark",
        "",
        f"Run: {started}, {meta['python']} {meta['machine']}, seed {args.seed}. Load average (1/5/15 min) at the "
        "start and end of each run below; 2 CPUs shared with other agents' jobs, so absolute seconds are "
        "pessimistic. Target: each policy runs the Philly sample to completion in <= 120 s.",
        "",
        "`loop ms/round` = (wall - policy solves) / rounds: the vectorised round mechanics plus Mesa's step and "
        "DataCollector.",
        "",
        "| trace | policy | jobs done | wall s | <= 120 s | rounds | rounds/s | solves | solve s | loop ms/round "
        "| simulated days | mean JCT h | load start -> end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['scenario']} | {r['policy']} | {r['completed']}/{r['jobs']} | {r['wall_s']:.1f} | "
            f"{'yes' if r['wall_s'] <= 120 else 'NO'} | {r['rounds']} | {r['rounds_per_s']:.0f} | {r['solves']} | "
            f"{r['solve_s']:.1f} | {r['loop_ms_per_round']:.2f} | {r['simulated_days']:.1f} | {r['mean_jct_h']:.2f} | "
            f"{r['load_start']} -> {r['load_end']} |"
        )
    lines += ["", "## Policy solve time vs active jobs (ms per solve)", ""]
    lines += ["| trace | policy | active jobs | solves | mean ms | max ms |", "|---|---|---|---|---|---|"]
    for r in runs:
        for b in r["solve_bins"]:
            lines.append(f"| {r['scenario']} | {r['policy']} | {b['active_jobs']} | {b['solves']} | "
                         f"{b['mean_ms']:.2f} | {b['max_ms']:.2f} |")  # fmt: skip
    if prof_text:
        lines += ["", "## Profile of the round loop (maxmin, Philly, cProfile; own time first)", "",
                  "cProfile's overhead inflates the per-call cost of small functions; read it for shares.", "",
                  "```", prof_text, "```"]  # fmt: skip
    (RESULTS / "trace.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'trace.md'}")


if __name__ == "__main__":
    main()
