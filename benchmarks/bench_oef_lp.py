"""Benchmark: OEF LP solve time, ours (marketsim.market.oef: staircase certificate / highspy) vs the same LPs in cvxpy.

For n in (10, 50, 200, 500) tenants and k = 10 GPU types (ordered synthetic generator of spec §5.2,
``m_j = max(1, n // 2)``), time ``oef-noncoop`` and ``oef-coop`` (cache off) and the same programs
written in cvxpy the way the OEF paper / Gavel write them (Variables, vectorised constraints; the
coop program with all n(n-1) envy-freeness rows), solved with cvxpy's default solver. Both are
timed in the same run: every solve runs in a forked child process with a wall-clock budget, after
a warm-up in the parent and an untimed solve of a different small instance in the child (so the
timed solve is a steady-state one, as in a long-running scheduler, not one dominated by the
copy-on-write page faults of a fresh fork); the median over repetitions is reported (15 repetitions for solves
under 0.5 s, whose wall time is dominated by scheduler noise on a shared machine, else 3, or 1
at n = 500), with the child's CPU time beside the wall time. The optima are compared (relative
1e-5; cvxpy's default solver is an interior-point method). A second instance family,
"unordered" (log step ratios U(log 0.8, log 1.6), not sorted over users, so paper Lemma 3.1's
staircase is not optimal), shows the general case.

Usage: ``.venv/bin/python benchmarks/bench_oef_lp.py [--quick] [--budget SECONDS] [--sizes 10,200]
[--modes noncoop,coop] [--families ordered,unordered]``.
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


def unordered_instance(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``w^0 = 1``, step ratios ``U(0.8, 1.6)`` independent per user and type (not sorted, some
    steps below 1); ``m_j = max(1, n // 2)``."""
    rng = np.random.default_rng(seed)
    steps = np.log(rng.uniform(0.8, 1.6, size=(n, k - 1)))
    W = np.exp(np.concatenate([np.zeros((n, 1)), np.cumsum(steps, axis=1)], axis=1))
    return W, np.full(k, max(1, n // 2), dtype=int)


FAMILIES = {"ordered": ordered_instance, "unordered": unordered_instance}


def ours(mode: str, W: np.ndarray, m: np.ndarray) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, objective and solve path of the registered mechanism."""
    from marketsim.market.oef import oef_coop, oef_noncoop

    fn = oef_coop if mode == "coop" else oef_noncoop
    t0, c0 = time.perf_counter(), time.process_time()
    a = fn(W, m, cache=False)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    path = a.info.get("noncoop_path") or a.info.get("ef_rows") or "?"
    return dt, dc, float(a.objective), str(path)


def cvxpy_lp(mode: str, W: np.ndarray, m: np.ndarray) -> tuple[float, float, float, str]:
    """The same LP written in cvxpy (as the paper and Gavel do); time includes building and
    compiling the problem, as each scheduling round would. Wall s, CPU s, objective, solver."""
    import cvxpy as cp

    t0, c0 = time.perf_counter(), time.process_time()
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
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"cvxpy status {prob.status}")
    return dt, dc, float(prob.value), str(prob.solver_stats.solver_name)


def _child(q: Any, fn_name: str, mode: str, W: np.ndarray, m: np.ndarray, warm: Any) -> None:
    try:
        if warm is not None:  # untimed: touch the code paths once in this process (copy-on-write pages)
            globals()[fn_name](mode, *warm)
        q.put(("ok", globals()[fn_name](mode, W, m)))
    except Exception as exc:  # reported as a failed case
        q.put(("error", f"{type(exc).__name__}: {exc}"))


def run_budgeted(
    fn_name: str, mode: str, W: np.ndarray, m: np.ndarray, budget: float, warm: Any = None
) -> tuple[str, Any]:
    """Run ``fn_name`` in a child process, after an untimed solve of the ``warm`` instance there;
    ("timeout", budget) if it exceeds ``budget`` seconds in all."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, fn_name, mode, W, m, warm))
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


def _measure(
    fn_name: str, mode: str, W: np.ndarray, m: np.ndarray, reps: int, budget: float, warm: Any, short_reps: int = 15
) -> dict[str, Any]:
    """Up to ``reps`` budgeted solves (``short_reps`` when the first takes under 0.5 s); medians."""
    wall, cpu, obj, tag, note = [], [], None, None, ""
    target = reps
    while len(wall) < target:
        st, out = run_budgeted(fn_name, mode, W, m, budget, warm)
        if st != "ok":
            note = f"exceeded the {budget:.0f} s budget" if st == "timeout" else f"{st}: {out}"
            break
        wall.append(out[0])
        cpu.append(out[1])
        obj, tag = out[2], out[3]
        if len(wall) == 1 and out[0] < 0.5 and short_reps > target:
            target = short_reps
    done = bool(wall) and not note
    return {
        "wall_s": statistics.median(wall) if done else None,
        "cpu_s": statistics.median(cpu) if done else None,
        "reps": len(wall),
        "objective": obj if done else None,
        "tag": tag,
        "note": note,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition (smoke run)")
    ap.add_argument("--budget", type=float, default=120.0, help="wall-clock budget per cvxpy solve (s)")
    ap.add_argument("--ours-budget", type=float, default=900.0, help="wall-clock budget per solve of ours (s)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--sizes", type=str, default=None, help="comma-separated n values (default 10,50,200,500)")
    ap.add_argument("--modes", type=str, default="noncoop,coop", help="comma-separated subset of noncoop,coop")
    ap.add_argument(
        "--families", type=str, default="ordered,unordered", help="instance families (unordered: n <= 200 only)"
    )
    args = ap.parse_args(argv)
    sizes = (10, 50) if args.quick else (10, 50, 200, 500)
    if args.sizes:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    modes = tuple(v for v in args.modes.split(",") if v)
    families = tuple(v for v in args.families.split(",") if v)
    k = 10
    load_start = list(os.getloadavg())
    # Warm up in the parent (imports, first-call overheads of HiGHS and cvxpy/its solver), so
    # that the forked children time only building and solving.
    Ww, mw = ordered_instance(4, k, seed=0)
    for mode in ("noncoop", "coop"):
        ours(mode, Ww, mw)
        cvxpy_lp(mode, Ww, mw)
    rows: list[dict[str, Any]] = []
    for family in families:
        for n in sizes:
            if family != "ordered" and n > 200:
                continue
            W, m = FAMILIES[family](n, k, seed=20240 + n)
            warm = FAMILIES[family](min(n, 20), k, seed=1)  # a different, small instance of the family
            reps = 1 if args.quick else (3 if n <= 200 else 1)
            for mode in modes:
                short = 1 if args.quick else 15
                a = _measure("ours", mode, W, m, reps, args.ours_budget, warm, short)
                b = _measure("cvxpy_lp", mode, W, m, reps, args.budget, warm, short)
                row: dict[str, Any] = {"family": family, "n": n, "k": k, "mode": mode}
                row.update({f"ours_{key}": val for key, val in a.items() if key not in ("tag", "note")})
                row.update({f"cvxpy_{key}": val for key, val in b.items() if key not in ("tag", "note")})
                row["ours_path"], row["cvxpy_solver"] = a["tag"], b["tag"]
                ok = a["wall_s"] is not None and b["wall_s"] is not None
                row["ratio"] = b["wall_s"] / a["wall_s"] if ok else None
                row["cpu_ratio"] = b["cpu_s"] / a["cpu_s"] if ok and a["cpu_s"] > 0 else None
                row["rel_objective_diff"] = (
                    abs(a["objective"] - b["objective"]) / max(1.0, abs(b["objective"])) if ok else None
                )
                row["same_optimum"] = bool(row["rel_objective_diff"] <= 1e-5) if ok else None
                row["status"] = "ok" if ok else "not-run"
                notes = [f"ours {a['note']}" if a["note"] else "", f"cvxpy {b['note']}" if b["note"] else ""]
                row["notes"] = "; ".join(v for v in notes if v)
                rows.append(row)
                print(json.dumps(row), flush=True)
    meta = {
        "benchmark": "oef_lp",
        "quick": args.quick,
        "generator": {
            "ordered": "spec §5.2 ordered, numpy default_rng(20240 + n), m_j = max(1, n // 2)",
            "unordered": "step ratios U(0.8, 1.6) unsorted, default_rng(20240 + n), m_j = max(1, n // 2)",
        },
        "cvxpy_budget_s": args.budget,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load_start,
        "load_average_at_end": list(os.getloadavg()),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        import cvxpy
        import highspy
        import scipy

        meta.update(cvxpy=cvxpy.__version__, scipy=scipy.__version__, highspy=highspy.Highs().version())
    except (ImportError, AttributeError):
        pass
    target = {}
    for mode in modes:
        hit = [r for r in rows if r["family"] == "ordered" and r["n"] == 200 and r["mode"] == mode]
        if hit:
            r = hit[0]
            ok = r["ratio"] is not None and r["cpu_ratio"] is not None and bool(r["same_optimum"])
            target[mode] = bool(ok and min(r["ratio"], r["cpu_ratio"]) >= 10.0)
    meta["target_10x_at_n200_ordered_met"] = target
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    (args.out / f"oef_lp{suffix}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    ls, le = meta["load_average_at_start"], meta["load_average_at_end"]
    lines = [
        "# OEF LP solve time: ours (marketsim.market.oef) vs the same LPs in cvxpy (default solver)",
        "",
        f"k = {k}; m_j = max(1, n//2). Times include validation and building the program (ours: the staircase "
        "vertex with its LP-duality certificate for LP (9), else HiGHS primal simplex via highspy from its basis; "
        "LP (10) by lazy envy-freeness rows in one warm-started highspy model; cvxpy: problem construction, "
        "canonicalisation of the full LP with all n(n-1) EF rows, and solve). Each solve runs in a forked child "
        "after a warm-up in the parent and an untimed solve of a different small instance (n <= 20) of the same "
        "family in the child (steady state, not fork page faults); medians over `reps` (15 for solves under "
        "0.5 s, else 3, or 1 at n = 500). "
        f"ratio = cvxpy wall / ours wall; cpu_ratio = the same for the children's CPU time. cvxpy budget "
        f"{args.budget:.0f} s per solve. Machine: {os.cpu_count()} CPUs shared with other agents' jobs, load "
        f"average (1/5/15 min) at start {ls[0]:.1f}/{ls[1]:.1f}/{ls[2]:.1f}, at end {le[0]:.1f}/{le[1]:.1f}/"
        f"{le[2]:.1f}: wall times are noisy, both sides are measured in the same run.",
        "",
        "Target (issue 2): both ratio and cpu_ratio >= 10 at n = 200 on the ordered family, same optimum: "
        + (", ".join(f"{mode} {'met' if ok else 'NOT met'}" for mode, ok in target.items()) or "not measured")
        + ".",
        "",
        "| family | n | mode | ours_s | cvxpy_s | ratio | cpu_ratio | reps (ours/cvxpy) | same_optimum "
        "| rel. obj. diff | ours path | cvxpy solver | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = lambda v, p=4: "—" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))  # noqa: E731
        diff = "—" if r["rel_objective_diff"] is None else f"{r['rel_objective_diff']:.1e}"
        lines.append(
            f"| {r['family']} | {r['n']} | {r['mode']} | {f(r['ours_wall_s'])} | {f(r['cvxpy_wall_s'])} | "
            f"{f(r['ratio'], 1)} | {f(r['cpu_ratio'], 1)} | {r['ours_reps']}/{r['cvxpy_reps']} | "
            f"{f(r['same_optimum'])} | {diff} | "
            f"{r['ours_path'] or '—'} | {r['cvxpy_solver'] or '—'} | {r['notes'] or ''} |"
        )
    (args.out / f"oef_lp{suffix}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
