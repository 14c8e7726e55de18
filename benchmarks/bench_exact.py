"""Exact best responses (marketsim.market.audit.exact): certified share, gap and CPU time per policy, size and
formulation.

One command rewrites benchmarks/results/exact.json and exact.md:

    PYTHONDONTWRITEBYTECODE= .venv/bin/python benchmarks/bench_exact.py

(options: ``--instances 3 --node-limit 5000 --time-limit 300 --jobs 2``; the defaults are what the
committed file was made with; ``--jobs`` runs cells in parallel processes, CPU seconds are per call).
For every supported policy (maxmin needs no solve), every size n x k in {2,3,4} x {2,3}
and ``--instances`` seeded random instances (speedup rows sorted, entries in [1, 6], capacities 1..3),
it solves deviator 0's exact best response with the strong-duality and the KKT formulation. The
budget per SCIP solve is ``--node-limit`` branch-and-bound nodes (the same work under any machine load,
so the certified share does not depend on the load); ``--time-limit`` wall seconds is only a safety cap
(a cell where it stopped a solve says so in ``time_limited``). Per cell: how many results are certified
(gap <= 1e-6), the median and largest gap (relative-gain units), the median and largest CPU seconds of
the whole call (process time: SCIP's solves plus the re-evaluation of reports through the registered
mechanism), SCIP's share, nodes and evaluations. Wall seconds and the machine load (os.getloadavg at
the start and end of every cell) are recorded beside them: CPU seconds are the robust figure under load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "results"
POLICIES = ("oef-noncoop", "oef-coop", "gavel", "gavel-max-min-perf", "si-constrained", "max-throughput")
SIZES = [(n, k) for n in (2, 3, 4) for k in (2, 3)]
FORMS = ("strong-duality", "kkt")


def _instance(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    W = np.ones((n, k))
    W[:, 1:] = np.sort(np.round(rng.uniform(1.0, 6.0, (n, k - 1)), 3), axis=1)
    return W, rng.integers(1, 4, k)


def _cell(policy: str, n: int, k: int, form: str, insts: list, args: argparse.Namespace) -> dict:
    """Deviator 0 on every instance of one (policy, size, formulation) cell."""
    from marketsim.market.audit.exact import best_response

    load0 = os.getloadavg()[0]
    per = []
    for W, m in insts:
        t0 = time.perf_counter()
        r = best_response(policy, W, m, 0, formulation=form, time_limit=args.time_limit, node_limit=args.node_limit,
                          closure=False)  # fmt: skip
        d = r.to_dict()  # non-finite figures as None
        per.append({"W": W.tolist(), "m": m.tolist(), "certified": bool(r.certified), "gap": float(r.gap),
                    "relative_gain": d["relative_gain"], "upper_bound": d["upper_bound"], "status": r.status,
                    "method": r.method, "cpu_s": r.cpu_seconds, "solver_cpu_s": r.solver_cpu_seconds,
                    "wall_s": time.perf_counter() - t0, "nodes": r.nodes, "evaluations": r.evaluations})  # fmt: skip
    gaps = [p["gap"] for p in per]
    cert = sum(p["certified"] for p in per)
    return {
        "policy": policy, "n": n, "k": k, "formulation": form, "instances": len(per), "certified": cert,
        "certified_share": cert / len(per), "median_gap": float(np.median(gaps)), "max_gap": float(np.max(gaps)),
        "median_cpu_s": float(np.median([p["cpu_s"] for p in per])), "max_cpu_s": max(p["cpu_s"] for p in per),
        "median_solver_cpu_s": float(np.median([p["solver_cpu_s"] for p in per])),
        "median_wall_s": float(np.median([p["wall_s"] for p in per])),
        "median_nodes": float(np.median([p["nodes"] for p in per])),
        "median_evaluations": float(np.median([p["evaluations"] for p in per])),
        "time_limited": sum(p["status"] == "timelimit" for p in per),
        "node_limited": sum(p["status"] == "nodelimit" for p in per),
        "load_start": load0, "load_end": os.getloadavg()[0], "per_instance": per,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--node-limit", type=int, default=5_000)
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated subset (a partial run)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (cells run in parallel; CPU is per call)")
    args = ap.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    load0 = os.getloadavg()
    cells = []
    for policy in policies:
        for n, k in SIZES:
            rng = np.random.default_rng([n, k, 7])
            insts = [_instance(rng, n, k) for _ in range(args.instances)]
            cells += [(policy, n, k, form, insts, args) for form in FORMS]
    rows: list[dict] = []
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:  # cells are independent; CPU per process
        for row in pool.imap(_cell_star, cells):
            rows.append(row)
            print(f"{row['policy']:20s} {row['n']}x{row['k']} {row['formulation']:15s} certified {row['certified']}/"
                  f"{row['instances']}  median CPU {row['median_cpu_s']:6.2f}s  max gap {row['max_gap']:.2g}  load "
                  f"{row['load_end']:.1f}", flush=True)  # fmt: skip
            _write(args, rows, load0, complete=False)  # after every cell: an interrupted run leaves its rows
    _write(args, rows, load0, complete=policies == list(POLICIES))


def _cell_star(a: tuple) -> dict:
    return _cell(*a)


def _write(args: argparse.Namespace, rows: list[dict], load0: tuple[float, ...], complete: bool) -> None:
    import pyscipopt

    load1 = os.getloadavg()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip()  # fmt: skip
    except OSError:
        commit = ""
    cmd = (f"python benchmarks/bench_exact.py --instances {args.instances} --node-limit {args.node_limit} "
           f"--time-limit {args.time_limit:g} --jobs {args.jobs}")  # fmt: skip
    loads = [r["load_start"] for r in rows] + [r["load_end"] for r in rows]
    all_ = [p for r in rows for p in r["per_instance"]]
    summary = {
        "calls": len(all_),
        "certified": sum(p["certified"] for p in all_),
        "certified_share": sum(p["certified"] for p in all_) / max(len(all_), 1),
        "certified_share_without_oef_coop": (
            sum(p["certified"] for r in rows if r["policy"] != "oef-coop" for p in r["per_instance"])
            / max(sum(r["instances"] for r in rows if r["policy"] != "oef-coop"), 1)
        ),
        "oef_coop_certified_share": (
            sum(r["certified"] for r in rows if r["policy"] == "oef-coop")
            / max(sum(r["instances"] for r in rows if r["policy"] == "oef-coop"), 1)
        ),
        "time_limited": sum(r["time_limited"] for r in rows),
        "node_limited": sum(r["node_limited"] for r in rows),
        "max_median_cpu_s_without_oef_coop": max(
            (r["median_cpu_s"] for r in rows if r["policy"] != "oef-coop"), default=0.0
        ),
        "total_cpu_s": sum(p["cpu_s"] for p in all_),
    }
    meta = {"command": cmd, "commit": commit, "python": platform.python_version(),
            "pyscipopt": pyscipopt.__version__, "scip": str(pyscipopt.Model().version()),
            "loadavg_start": load0, "loadavg_end": load1, "load_min": min(loads, default=load0[0]),
            "load_max": max(loads, default=load1[0]), "cpus": os.cpu_count(),
            "under_load": max(loads, default=load1[0]) > 1.0, "complete": complete}  # fmt: skip
    OUT.mkdir(exist_ok=True)
    (OUT / "exact.json").write_text(json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1) + "\n")
    lines = [
        "# Exact best responses: certified share, gap and CPU time (deviator 0)", "",
        f"`{cmd}` at commit {commit}; pyscipopt {meta['pyscipopt']} (SCIP {meta['scip']}); load average "
        f"{meta['load_min']:.1f} to {meta['load_max']:.1f} on {meta['cpus']} CPUs"
        + (" (**measured under load**: wall and CPU times are inflated; the certified shares are not, the budget "
           "being nodes)" if meta["under_load"] else "") + ".", "",
        *(["**Incomplete run**: only the cells below were measured.", ""] if not complete else []),
        f"Certified: {summary['certified']}/{summary['calls']} calls; without oef-coop "
        f"{summary['certified_share_without_oef_coop']:.0%}; oef-coop {summary['oef_coop_certified_share']:.0%}. "
        f"Stopped by the node limit: {summary['node_limited']}; by the wall-clock cap: {summary['time_limited']}.", "",
        "| policy | n x k | formulation | certified | median gap | max gap | median CPU s | max CPU s | "
        "SCIP CPU s | median nodes | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['policy']} | {r['n']}x{r['k']} | {r['formulation']} | {r['certified']}/{r['instances']} | "
                     f"{r['median_gap']:.2g} | {r['max_gap']:.2g} | {r['median_cpu_s']:.2f} | {r['max_cpu_s']:.2f} | "
                     f"{r['median_solver_cpu_s']:.2f} | {r['median_nodes']:.0f} | {r['load_end']:.1f} |")  # fmt: skip
    (OUT / "exact.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'exact.json'} and {OUT / 'exact.md'}")


if __name__ == "__main__":
    main()
