"""Benchmark: Gavel parity and solver choice by size.

1. Raw vs normalised max-sum throughput: on random raw throughput tables (3 GPU types, positive
   entries, job scales differing by up to 6x), the framework's ``max-throughput`` (OEF LP (4): rows
   normalised by the slowest type, caps 1) against Gavel's ``gavel-max-sum-throughput``; reported:
   the raw total throughput ratio (min / median / max).
2. Solver by size: ``gavel`` (max-min, caps 1) at n = 64 ... 4096 jobs on 3 GPU types, timed with
   HiGHS dual simplex, interior point and ``auto`` (median of repeated solves, all in one run, cache
   off); the optimum ``s*`` must agree (relative 1e-6).

Usage: ``.venv/bin/python benchmarks/bench_gavel.py [--quick]``. Writes
``benchmarks/results/gavel.json`` and ``benchmarks/results/gavel.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.market import registry  # noqa: E402
from marketsim.market.oef import lp  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def parity(instances: int, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    raw = registry.get("gavel-max-sum-throughput", "fair-share").fn
    norm = registry.get("max-throughput", "fair-share").fn
    ratios = []
    for _ in range(instances):
        n = int(rng.integers(4, 40))
        T = rng.uniform(0.2, 10.0, (n, 3)) * rng.uniform(0.5, 3.0, (n, 1))
        m = rng.integers(1, max(2, n // 3), 3)
        a = raw(T, m)
        b = norm(T, m, caps=np.ones(n))
        ratios.append(float((T * b.X).sum() / (T * a.X).sum()))
    r = np.array(ratios)
    return {"instances": instances, "min": float(r.min()), "median": float(np.median(r)), "max": float(r.max())}


def timing(sizes: list[int], reps: int, seed: int = 1) -> list[dict[str, float]]:
    fn = registry.get("gavel", "fair-share").fn
    rows = []
    for n in sizes:
        rng = np.random.default_rng(seed + n)
        W = np.c_[np.ones(n), rng.uniform(1.0, 4.0, n), rng.uniform(1.0, 8.0, n)]
        m = np.full(3, max(1, n // 4))
        row = {"jobs": n, "nonzeros": None}
        s_ref = None
        for solver in ("highs-ds", "highs-ipm", "auto"):
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                a = fn(W, m, caps=np.ones(n), solver=solver, cache=False)
                ts.append(time.perf_counter() - t0)
            row[solver] = statistics.median(ts)
            s = a.info["s_star"]
            s_ref = s if s_ref is None else s_ref
            if abs(s - s_ref) > 1e-6 * max(1.0, abs(s_ref)):
                raise SystemExit(f"n={n}: {solver} s* {s} differs from {s_ref}")
            row["nonzeros"] = a.info["lp_sizes"].get("nonzeros") if isinstance(a.info.get("lp_sizes"), dict) else None
        row["auto_picks"] = lp.choose_solver("auto", int(row["nonzeros"] or 0)) if row["nonzeros"] else "?"
        row["ipm_speedup"] = row["highs-ds"] / row["highs-ipm"]
        rows.append(row)
        print(row, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sizes = [64, 256, 1024] if args.quick else [64, 256, 1024, 2048, 4096]
    par = parity(20 if args.quick else 200)
    tim = timing(sizes, 3 if args.quick else 5)
    out = {"machine": platform.platform(), "python": sys.version.split()[0], "parity": par, "timing": tim,
           "auto_ipm_nonzeros": lp.AUTO_IPM_NONZEROS}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "gavel.json").write_text(json.dumps(out, indent=2))
    lines = [
        "# Gavel parity and solver choice",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_gavel.py{' --quick' if args.quick else ''}` "
        f"({out['machine']}, Python {out['python']}; one run, shared machine).",
        "",
        "## Raw vs normalised max-sum throughput",
        "",
        f"On {par['instances']} random raw throughput tables (3 types), the raw total throughput of "
        "`max-throughput` (OEF LP (4), rows normalised by the slowest type, caps 1) divided by Gavel's "
        f"`gavel-max-sum-throughput`: min {par['min']:.3f}, median {par['median']:.3f}, max {par['max']:.3f}.",
        "",
        "## `gavel` (max-min, caps 1): seconds per solve (median), 3 GPU types",
        "",
        "| jobs | LP non-zeros | dual simplex | interior point | auto | auto picks | simplex / IPM |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in tim:
        cells = [r["jobs"], r["nonzeros"], f"{r['highs-ds']:.3f}", f"{r['highs-ipm']:.3f}", f"{r['auto']:.3f}",
                 r["auto_picks"], f"{r['ipm_speedup']:.2f}x"]  # fmt: skip
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", f"`auto` switches to interior point at {lp.AUTO_IPM_NONZEROS} constraint non-zeros "
              "(`marketsim.market.oef.lp.AUTO_IPM_NONZEROS`).", ""]  # fmt: skip
    (RESULTS / "gavel.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
