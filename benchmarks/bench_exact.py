"""Exact best responses (market.audit.exact): time per instance size and policy, both formulations.

One command rewrites benchmarks/results/exact.json and exact.md:

    PYTHONDONTWRITEBYTECODE= .venv/bin/python benchmarks/bench_exact.py [--instances 3] [--time-limit 20]

For every supported policy (maxmin needs no solve), every size n x k in {2,3,4} x {2,3} and
``--instances`` seeded random instances (speedup rows sorted, entries in [1, 6], capacities 1..3), it
solves deviator 0's exact best response with the strong-duality and the KKT formulation and records
the median wall and CPU seconds of the whole call (SCIP solves plus the re-evaluation of the report
through the registered mechanism), SCIP's part, and how many results were certified (gap <= 1e-6).
The machine load (os.getloadavg) is written beside the figures: timings under load are marked so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "results"
POLICIES = ("oef-noncoop", "oef-coop", "gavel", "gavel-max-min-perf", "si-constrained", "max-throughput")
SIZES = [(n, k) for n in (2, 3, 4) for k in (2, 3)]


def _instance(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    W = np.ones((n, k))
    W[:, 1:] = np.sort(np.round(rng.uniform(1.0, 6.0, (n, k - 1)), 3), axis=1)
    return W, rng.integers(1, 4, k)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=20.0)
    args = ap.parse_args()
    from market.audit.exact import best_response

    load0 = os.getloadavg()
    rows = []
    for policy in POLICIES:
        for n, k in SIZES:
            rng = np.random.default_rng([n, k, 7])
            insts = [_instance(rng, n, k) for _ in range(args.instances)]
            for form in ("strong-duality", "kkt"):
                wall, cpu, certified, statuses = [], [], 0, []
                for W, m in insts:
                    t0, c0 = time.perf_counter(), time.process_time()
                    r = best_response(policy, W, m, 0, formulation=form, time_limit=args.time_limit, closure=False)
                    wall.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
                    certified += bool(r.certified)
                    statuses.append(r.status)
                rows.append({"policy": policy, "n": n, "k": k, "formulation": form, "instances": len(insts),
                             "median_wall_s": float(np.median(wall)), "median_cpu_s": float(np.median(cpu)),
                             "max_wall_s": float(np.max(wall)), "certified": certified,
                             "time_limited": statuses.count("timelimit")})  # fmt: skip
                print(f"{policy:20s} {n}x{k} {form:15s} median {np.median(wall):6.2f}s  certified "
                      f"{certified}/{len(insts)}", flush=True)  # fmt: skip
            _write(args, rows, load0, complete=False)  # after every cell: an interrupted run leaves its rows
    _write(args, rows, load0, complete=True)


def _write(args: argparse.Namespace, rows: list[dict], load0: tuple[float, ...], complete: bool) -> None:
    import pyscipopt

    load1 = os.getloadavg()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip()  # fmt: skip
    except OSError:
        commit = ""
    meta = {"command": "python benchmarks/bench_exact.py " + f"--instances {args.instances} --time-limit "
            f"{args.time_limit}", "commit": commit, "python": platform.python_version(),
            "pyscipopt": pyscipopt.__version__, "scip": str(pyscipopt.Model().version()),
            "loadavg_start": load0, "loadavg_end": load1, "cpus": os.cpu_count(),
            "under_load": max(load0[0], load1[0]) > 1.0, "complete": complete}  # fmt: skip
    OUT.mkdir(exist_ok=True)
    (OUT / "exact.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = ["# Exact best responses: median seconds per call (deviator 0)", "",
             f"`{meta['command']}` at commit {commit}; pyscipopt {meta['pyscipopt']} (SCIP {meta['scip']}); load "
             f"average {load0[0]:.1f} -> {load1[0]:.1f} on {meta['cpus']} CPUs"
             + (" (**measured under load**: wall times are inflated)" if meta["under_load"] else "") + ".", "",
             *(["**Incomplete run** (interrupted): only the cells below were measured.", ""] if not complete else []),
             "| policy | n x k | strong-duality median s (CPU) | certified | kkt median s (CPU) | certified |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for policy in POLICIES:
        for n, k in SIZES:
            got = [r for r in rows if r["policy"] == policy and (r["n"], r["k"]) == (n, k)]
            if len(got) < 2:
                continue
            sd, kk = (next(r for r in got if r["formulation"] == f) for f in ("strong-duality", "kkt"))
            cell = [f"{r['median_wall_s']:.2f} ({r['median_cpu_s']:.2f}) | {r['certified']}/{r['instances']}"
                    for r in (sd, kk)]  # fmt: skip
            lines.append(f"| {policy} | {n}x{k} | {cell[0]} | {cell[1]} |")
    (OUT / "exact.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'exact.json'} and {OUT / 'exact.md'}")


if __name__ == "__main__":
    main()
