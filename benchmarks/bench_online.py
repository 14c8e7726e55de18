"""Benchmark of the online posted-price auctions (OASiS, PD-ORS) and of the offline MILP.

1. Per-job decision time of ``oasis`` and ``pdors`` at the papers' simulation scale (OASiS: T = 100,
   H = K = 50; PD-ORS: T = 20, H = 100), vectorised search vs the straightforward pure-Python
   reference of the same search, run in lockstep in one process on the same job sequence; the
   decisions (admission, schedule, payment) must be identical (asserted).
2. The largest instance the exact offline MILP (HiGHS) solves to optimality within 60 s, growing
   the number of jobs until it fails.

Usage: ``python benchmarks/bench_online.py [--quick] [--seed 0] [--only oasis pdors milp]``; writes
``benchmarks/results/online.json`` and ``online.md`` (``--quick`` writes ``online_quick.*``). With
``--only`` the other sections are kept from the existing results file (each section records its
own run time and the machine's load average).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marketsim.market.oasis import Oasis  # noqa: E402
from marketsim.market.oasis.generators import oasis_paper_instance, oasis_tiny_instance  # noqa: E402
from marketsim.market.oasis.offline import oasis_offline_optimum  # noqa: E402
from marketsim.market.pdors import Pdors, PdorsConfig  # noqa: E402
from marketsim.market.pdors.generators import pdors_paper_instance, pdors_tiny_instance  # noqa: E402
from marketsim.market.pdors.offline import pdors_offline_optimum  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _same(a, b) -> bool:
    if a.admitted != b.admitted or a.completion != b.completion:
        return False
    if (a.schedule is None) != (b.schedule is None):
        return False
    if a.schedule is not None and not a.schedule.same_as(b.schedule):
        return False
    return abs(a.payment - b.payment) <= 1e-9 * max(1.0, abs(a.payment))


def _stats(x: list[float]) -> dict:
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return {"n": 0}
    return {
        "n": int(a.size),
        "mean_s": float(a.mean()),
        "median_s": float(np.median(a)),
        "p90_s": float(np.percentile(a, 90)),
        "max_s": float(a.max()),
        "total_s": float(a.sum()),
    }


def lockstep(make, jobs, n_ref: int, searched) -> dict:
    """Feed the same jobs (arrival, id order) to a vectorised and a reference mechanism."""
    vec, ref = make("vectorised"), make("reference")
    jobs = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    t_vec, t_ref, t_vec_all = [], [], []
    lp_vec, lp_ref = [], []
    n_same = 0
    for i, j in enumerate(jobs):
        t0 = time.perf_counter()
        dv = vec.decide(j)
        tv = time.perf_counter() - t0
        t_vec_all.append(tv)
        if i < n_ref:
            t0 = time.perf_counter()
            dr = ref.decide(j)
            tr = time.perf_counter() - t0
            assert _same(dv, dr), f"job {j.job_id}: vectorised and reference decisions differ"
            n_same += 1
            if searched(j):
                t_vec.append(tv)
                t_ref.append(tr)
                lp_vec.append(float(dv.log.get("lp_seconds", 0.0)))
                lp_ref.append(float(dr.log.get("lp_seconds", 0.0)))
    ratio = float(np.sum(t_ref) / np.sum(t_vec)) if t_vec else float("nan")
    per_job = [r / v for r, v in zip(t_ref, t_vec, strict=True)]
    out_lp = {}
    if any(lp_vec):
        out_lp = {
            "lp_seconds_vectorised": float(np.sum(lp_vec)),
            "lp_seconds_reference": float(np.sum(lp_ref)),
            "lp_share_vectorised": float(np.sum(lp_vec) / np.sum(t_vec)),
            "speedup_excluding_lp": float((np.sum(t_ref) - np.sum(lp_ref)) / (np.sum(t_vec) - np.sum(lp_vec))),
        }
    return {
        **out_lp,
        "jobs": len(jobs),
        "admitted": int(sum(d.admitted for d in _decisions(vec))),
        "vectorised_all_jobs": _stats(t_vec_all),
        "compared_jobs": n_same,
        "identical_decisions": n_same,
        "compared_searched_jobs": len(t_vec),
        "vectorised": _stats(t_vec),
        "reference": _stats(t_ref),
        "speedup_total_time": ratio,
        "speedup_per_job_median": float(np.median(per_job)) if per_job else float("nan"),
        "speedup_per_job_min": float(np.min(per_job)) if per_job else float("nan"),
    }


def _decisions(mech):
    return getattr(mech, "decisions", None) or []


def bench_oasis(quick: bool, seed: int) -> dict:
    T, H, I, n_ref = (40, 10, 30, 6) if quick else (100, 50, 100, 20)
    cl, reqs, consts = oasis_paper_instance(np.random.default_rng(seed), n_jobs=I, T=T, H=H, K=H)
    out = lockstep(lambda s: Oasis(cl, consts, search=s), reqs, n_ref, lambda r: True)
    out.update(
        {
            "T": T,
            "H": H,
            "K": H,
            "R": cl.resources.R,
            "W_median": float(np.median([r.work_units for r in reqs])),
            "N_median": float(np.median([r.max_workers for r in reqs])),
        }
    )
    return out


class _PdorsDecisions(Pdors):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.decisions = []

    def decide(self, report):
        d = super().decide(report)
        self.decisions.append(d)
        return d


def bench_pdors(quick: bool, seed: int) -> dict:
    T, H, I = (10, 20, 15) if quick else (20, 100, 50)
    cl, jobs, consts = pdors_paper_instance(np.random.default_rng(seed), n_jobs=I, T=T, H=H)
    cfg = PdorsConfig(seed=seed)
    out = lockstep(
        lambda s: _PdorsDecisions(cl, consts, cfg, search=s),
        jobs,
        I,
        lambda j: j.min_duration(cl.slot_hours) <= T - j.arrival,
    )
    out.update(
        {
            "T": T,
            "H": H,
            "R": cl.resources.R,
            "dp_units": cfg.dp_units,
            "note": "The reference loops the co-located scan, the randomized rounding (one draw at a "
            "time, Step 13) and the DP; the split LP (warm-started HiGHS, one instance per slot state) is "
            "shared, its time is reported separately. Jobs with d_i > T - a_i are rejected before any "
            "search and excluded from the speed-up.",
        }
    )
    return out


def milp_growth(kind: str, limit: float, sizes: list[tuple[int, int, int]], seed: int) -> dict:
    """Solve growing (I, T, H) instances of the tiny generators until one is not solved to optimality."""
    rows = []
    largest = None
    for I, T, H in sizes:
        if kind == "oasis":
            cl, reqs, _ = oasis_tiny_instance(
                np.random.default_rng(seed), I=I, T=T, H=H, arrival_hi=max(1, (3 * T) // 4)
            )
            res = oasis_offline_optimum(cl, reqs, time_limit=limit)
            desc = {"I": I, "T": T, "H": H, "K": H}
        else:
            cl, reqs, _ = pdors_tiny_instance(np.random.default_rng(seed), I=I, T=T, H=H, cap=8.0)
            res = pdors_offline_optimum(cl, reqs, time_limit=limit)
            desc = {"I": I, "T": T, "H": H}
        row = {
            **desc,
            "optimal": res.optimal,
            "seconds": res.seconds,
            "welfare": res.welfare,
            "bound": res.bound,
            "n_vars": res.n_vars,
            "n_rows": res.n_rows,
            "status": res.status,
        }
        rows.append(row)
        print(f"  {kind} MILP I={I}: optimal={res.optimal} {res.seconds:.1f}s vars={res.n_vars}", flush=True)
        if not res.optimal:
            break
        largest = row
    return {
        "time_limit_s": limit,
        "largest_solved": largest,
        "steps": rows,
        "failed_at": rows[-1] if rows and not rows[-1]["optimal"] else None,
    }


def _load(v) -> str:
    return "/".join(f"{x:.2f}" for x in v)


def to_md(res: dict) -> str:
    o, p = res["oasis"], res["pdors"]
    lines = [
        "# Online auctions benchmark",
        "",
        f"Run: {res['when']} UTC, {res['platform']}, quick={res['quick']}, seed={res['seed']}.",
        "",
        "## Per-job decision time, vectorised vs pure-Python reference (same run, identical decisions asserted)",
        "",
        "| mechanism | scale | jobs compared | vectorised mean s | reference mean s | speed-up (total time) |"
        " per-job median | per-job min |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r, scale in (
        ("oasis", o, f"T={o['T']}, H=K={o['H']}, R={o['R']}"),
        ("pdors", p, f"T={p['T']}, H={p['H']}, R={p['R']}"),
    ):
        lines.append(
            f"| {name} | {scale} | {r['compared_searched_jobs']} | {r['vectorised'].get('mean_s', 0):.4f} | "
            f"{r['reference'].get('mean_s', 0):.4f} | {r['speedup_total_time']:.1f}x | "
            f"{r['speedup_per_job_median']:.1f}x | {r['speedup_per_job_min']:.1f}x |"
        )
    for name, r in (("oasis", o), ("pdors", p)):
        if "section_when" in r:
            lines.append(
                f"{name}: measured {r['section_when']} UTC in {r['section_seconds']:.0f} s; load average "
                f"(1/5/15 min) {_load(r['loadavg_start'])} at start, {_load(r['loadavg_end'])} at end "
                f"({res.get('cpus', '?')} CPUs shared with other agents' jobs)."
            )
        else:
            lines.append(f"{name}: measured in the earlier run (no load average recorded).")
    if "lp_seconds_vectorised" in p:
        lines.append(
            f"PD-ORS split LP (HiGHS, shared by both searches): {p['lp_seconds_vectorised']:.2f} s of the "
            f"vectorised {p['vectorised']['total_s']:.2f} s ({100 * p['lp_share_vectorised']:.0f}%), "
            f"{p['lp_seconds_reference']:.2f} s of the reference {p['reference']['total_s']:.2f} s; speed-up "
            f"excluding the LP time: {p['speedup_excluding_lp']:.1f}x."
        )
    lines += [
        "",
        f"OASiS vectorised over all {o['jobs']} jobs: mean {o['vectorised_all_jobs']['mean_s']:.4f} s, "
        f"max {o['vectorised_all_jobs']['max_s']:.4f} s per job; {o['admitted']} admitted.",
        f"PD-ORS vectorised over all {p['jobs']} jobs: mean {p['vectorised_all_jobs']['mean_s']:.4f} s, "
        f"max {p['vectorised_all_jobs']['max_s']:.4f} s per job; {p['admitted']} admitted. {p['note']}",
        "",
        "## Offline MILP (HiGHS): largest instance solved to optimality within the time limit",
        "",
    ]
    for k in ("oasis_milp", "pdors_milp"):
        m = res[k]
        if "section_when" in m:
            lines.append(f"Measured {m['section_when']} UTC, load average {_load(m['loadavg_start'])} at start.")
            lines.append("")
        lines.append(
            f"**{k}** (limit {m['time_limit_s']} s): largest solved = {m['largest_solved']}; "
            f"failed at = {m['failed_at']}"
        )
        lines.append("")
        lines.append("| I | T | H | optimal | seconds | variables | rows |")
        lines.append("|---|---|---|---|---|---|---|")
        for s in m["steps"]:
            lines.append(
                f"| {s['I']} | {s['T']} | {s['H']} | {s['optimal']} | {s['seconds']:.2f} | {s['n_vars']} | "
                f"{s['n_rows']} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def _section(name: str, fn) -> dict:
    load0 = os.getloadavg()
    t0 = time.time()
    out = fn()
    out["section_when"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0))
    out["section_seconds"] = time.time() - t0
    out["loadavg_start"] = list(load0)
    out["loadavg_end"] = list(os.getloadavg())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--only", nargs="+", choices=["oasis", "pdors", "milp"], default=None, help="run only these sections"
    )
    args = ap.parse_args(argv)
    q = args.quick
    only = set(args.only or ["oasis", "pdors", "milp"])
    stem = "online_quick" if q else "online"
    old = RESULTS / f"{stem}.json"
    res = json.loads(old.read_text()) if args.only and old.exists() else {}
    res.update(
        {
            "when": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "quick": q,
            "seed": args.seed,
            "platform": f"{platform.python_implementation()} {platform.python_version()} {platform.machine()}",
            "cpus": os.cpu_count(),
        }
    )
    if "oasis" in only:
        print("OASiS ...", flush=True)
        res["oasis"] = _section("oasis", lambda: bench_oasis(q, args.seed))
    if "pdors" in only:
        print("PD-ORS ...", flush=True)
        res["pdors"] = _section("pdors", lambda: bench_pdors(q, args.seed))
    limit = 5.0 if q else 60.0
    o_sizes = (
        [(4, 8, 2), (8, 8, 2)]
        if q
        else [
            (8, 8, 2),
            (32, 8, 2),
            (64, 8, 2),
            (64, 12, 3),
            (96, 16, 4),
            (128, 20, 5),
            (160, 30, 6),
            (200, 40, 8),
            (256, 50, 10),
        ]
    )
    p_sizes = (
        [(3, 10, 3), (5, 10, 3)]
        if q
        else [
            (5, 10, 3),
            (8, 10, 3),
            (10, 10, 3),
            (12, 10, 3),
            (16, 10, 3),
            (20, 10, 3),
            (24, 10, 3),
            (32, 10, 3),
            (48, 12, 4),
        ]
    )
    if "milp" in only:
        print("MILP growth ...", flush=True)
        res["oasis_milp"] = _section("oasis_milp", lambda: milp_growth("oasis", limit, o_sizes, args.seed))
        res["pdors_milp"] = _section("pdors_milp", lambda: milp_growth("pdors", limit, p_sizes, args.seed))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(res, indent=2, default=float))
    (RESULTS / f"{stem}.md").write_text(to_md(res))
    print(to_md(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
