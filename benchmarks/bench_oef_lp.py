"""Benchmark: OEF LP solve time, ours (sparse, vectorised, HiGHS via scipy) vs the same LPs in cvxpy.

For n in (10, 50, 200, 500) tenants and k = 10 GPU types (ordered synthetic generator of spec §5.2,
``m_j = max(1, n // 2)``), time ``oef-noncoop`` and ``oef-coop`` (cache off) and the same programs
written in cvxpy the way the OEF paper / Gavel write them (Variables, vectorised constraints),
solved with cvxpy's default solver. Both are timed in the same run (median of repetitions, every
solve in a child process with a wall-clock budget); the optima are compared (relative 1e-5).

Usage: ``.venv/bin/python benchmarks/bench_oef_lp.py [--quick] [--budget SECONDS]``.
Writes ``benchmarks/results/oef_lp.json`` and ``benchmarks/results/oef_lp.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"


def ordered_instance(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Spec §5.2 ordered generator: ``w^0 = 1``, step ratios ``U(1, 1.6)`` with each step column
    sorted ascending over users; ``m_j = max(1, n // 2)``."""
    rng = np.random.default_rng(seed)
    steps = np.sort(np.log(rng.uniform(1.0, 1.6, size=(n, k - 1))), axis=0)
    W = np.exp(np.concatenate([np.zeros((n, 1)), np.cumsum(steps, axis=1)], axis=1))
    return W, np.full(k, max(1, n // 2), dtype=int)


def ours(mode: str, W: np.ndarray, m: np.ndarray) -> tuple[float, float]:
    from market.oef import oef_coop, oef_noncoop

    fn = oef_coop if mode == "coop" else oef_noncoop
    t0 = time.perf_counter()
    a = fn(W, m, cache=False)
    return time.perf_counter() - t0, float(a.objective)


def cvxpy_lp(mode: str, W: np.ndarray, m: np.ndarray) -> tuple[float, float, str]:
    """The same LP written in cvxpy (as the paper and Gavel do); time includes building and
    compiling the problem, as each scheduling round would."""
    import cvxpy as cp

    t0 = time.perf_counter()
    n, k = W.shape
    x = cp.Variable((n, k), nonneg=True)
    u = cp.sum(cp.multiply(W, x), axis=1)  # W_l . x_l
    cons = [cp.sum(x, axis=0) <= m]
    if mode == "noncoop":
        # LP (9): all users get equal normalised throughput (9c), as u_l == u_0
        cons.append(u[1:] == u[0])
    else:
        # LP (10) with (10c) = W_l . x_i <= W_l . x_l for all l, i (envy-freeness), vectorised
        E = W @ x.T  # E[l, i] = W_l . x_i
        cons.append(E <= cp.reshape(u, (n, 1), order="F") @ np.ones((1, n)))
    prob = cp.Problem(cp.Maximize(cp.sum(u)), cons)
    prob.solve()
    dt = time.perf_counter() - t0
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"cvxpy status {prob.status}")
    return dt, float(prob.value), str(prob.solver_stats.solver_name)


def _child(q: Any, fn_name: str, mode: str, W: np.ndarray, m: np.ndarray) -> None:
    try:
        q.put(("ok", globals()[fn_name](mode, W, m)))
    except Exception as exc:  # reported as a failed case
        q.put(("error", f"{type(exc).__name__}: {exc}"))


def run_budgeted(fn_name: str, mode: str, W: np.ndarray, m: np.ndarray, budget: float) -> tuple[str, Any]:
    """Run ``fn_name`` in a child process; ("timeout", budget) if it exceeds ``budget`` seconds."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, fn_name, mode, W, m))
    p.start()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < budget:
        if not q.empty():
            out = q.get()
            p.join()
            return out
        if not p.is_alive() and q.empty():
            time.sleep(0.05)
            if q.empty():
                return ("error", f"child exited with code {p.exitcode}")
        time.sleep(0.01)
    p.kill()
    p.join()
    return ("timeout", budget)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition (smoke run)")
    ap.add_argument("--budget", type=float, default=120.0, help="wall-clock budget per cvxpy solve (s)")
    ap.add_argument("--ours-budget", type=float, default=900.0, help="wall-clock budget per solve of ours (s)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--sizes", type=str, default=None, help="comma-separated n values (default 10,50,200,500)")
    ap.add_argument("--modes", type=str, default="noncoop,coop", help="comma-separated subset of noncoop,coop")
    args = ap.parse_args(argv)
    sizes = (10, 50) if args.quick else (10, 50, 200, 500)
    if args.sizes:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    modes = tuple(v for v in args.modes.split(",") if v)
    k = 10
    # Warm up in the parent (imports, first-call overheads of scipy/HiGHS and cvxpy/its solver), so
    # that the forked children time only building and solving.
    Ww, mw = ordered_instance(4, k, seed=0)
    for mode in ("noncoop", "coop"):
        ours(mode, Ww, mw)
        cvxpy_lp(mode, Ww, mw)
    rows: list[dict[str, Any]] = []
    for n in sizes:
        W, m = ordered_instance(n, k, seed=20240 + n)
        reps = 1 if args.quick else (3 if n <= 200 else 1)
        for mode in modes:
            row: dict[str, Any] = {"n": n, "k": k, "mode": mode, "reps": reps}
            ours_t, cvx_t, ours_obj, cvx_obj, solver, notes = [], [], None, None, None, []
            for _ in range(reps):
                st, out = run_budgeted("ours", mode, W, m, args.ours_budget)
                if st == "ok":
                    ours_t.append(out[0])
                    ours_obj = out[1]
                else:
                    notes.append(f"ours {st}: {out}")
                    break
            for _ in range(reps):
                st, out = run_budgeted("cvxpy_lp", mode, W, m, args.budget)
                if st == "ok":
                    cvx_t.append(out[0])
                    cvx_obj, solver = out[1], out[2]
                else:
                    notes.append(
                        f"cvxpy not run to completion: exceeded the {args.budget:.0f} s budget"
                        if st == "timeout"
                        else f"cvxpy {st}: {out}"
                    )
                    break
            row["ours_s"] = statistics.median(ours_t) if ours_t else None
            row["cvxpy_s"] = statistics.median(cvx_t) if len(cvx_t) == reps else None
            row["cvxpy_solver"] = solver
            row["ours_objective"] = ours_obj
            row["cvxpy_objective"] = cvx_obj if row["cvxpy_s"] is not None else None
            if row["ours_s"] and row["cvxpy_s"]:
                row["ratio"] = row["cvxpy_s"] / row["ours_s"]
                row["same_optimum"] = bool(abs(ours_obj - cvx_obj) <= 1e-5 * max(1.0, abs(cvx_obj)))
            else:
                row["ratio"] = None
                row["same_optimum"] = None
            row["status"] = "ok" if row["ratio"] is not None else "not-run"
            row["notes"] = "; ".join(notes)
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {
        "benchmark": "oef_lp",
        "quick": args.quick,
        "generator": "spec §5.2 ordered, numpy default_rng(20240 + n), m_j = max(1, n // 2)",
        "cvxpy_budget_s": args.budget,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_at_end": list(os.getloadavg()),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        import cvxpy
        import scipy

        meta.update(cvxpy=cvxpy.__version__, scipy=scipy.__version__)
    except ImportError:
        pass
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    (args.out / f"oef_lp{suffix}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# OEF LP solve time: ours (scipy/HiGHS, sparse) vs cvxpy (default solver)",
        "",
        f"k = {k}, ordered synthetic generator (spec §5.2), m_j = max(1, n//2); median of `reps` solves, each in a "
        f"forked child process after a warm-up in the parent; times include building the LP (ours: validation + "
        f"sparse matrices + HiGHS dual simplex; cvxpy: problem construction, canonicalisation and solve); "
        f"ratio = cvxpy_s / ours_s; cvxpy budget {args.budget:.0f} s per solve. Machine: {os.cpu_count()} CPUs, "
        f"load average at end {meta['load_average_at_end'][0]:.1f} (shared machine; timings are noisy).",
        "",
        "| n | mode | ours_s | cvxpy_s | ratio | same_optimum | cvxpy solver | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = lambda v, p=4: "—" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))  # noqa: E731
        lines.append(
            f"| {r['n']} | {r['mode']} | {f(r['ours_s'])} | {f(r['cvxpy_s'])} | {f(r['ratio'], 1)} | "
            f"{f(r['same_optimum'])} | {r['cvxpy_solver'] or '—'} | {r['notes'] or ''} |"
        )
    (args.out / f"oef_lp{suffix}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
