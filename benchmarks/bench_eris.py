"""Benchmark: Eris per-job decision time at R = 50, T = 150 (spec §5.3 simulator scenario).

Runs the whole job sequence with the vectorised BUILD_MENU (numpy), timing every decision, and for
a sample of jobs also runs the straightforward pure-Python reference of the same search
(``build_menu_reference``: literal DPC_T loops for every slot and d, loop DP) at the same frozen
state, asserting identical menus (deadlines, schedules, costs) and decisions. Reports the
per-job times and their ratio, measured in one run.

    .venv/bin/python benchmarks/bench_eris.py            # full: 6 reference jobs
    .venv/bin/python benchmarks/bench_eris.py --quick    # smoke: 1 small reference job, no files

Writes benchmarks/results/eris.json and eris.md (full mode only).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.market.eris import ErisAuction  # noqa: E402
from marketsim.market.eris.deploy import prepare_job  # noqa: E402
from marketsim.market.eris.schedule import build_menu, build_menu_reference, choose  # noqa: E402
from marketsim.market.eris.workload import eris_simulator  # noqa: E402


def _same(m1, m2) -> bool:
    return (
        [e.deadline for e in m1] == [e.deadline for e in m2]
        and [e.schedule.signature() for e in m1] == [e.schedule.signature() for e in m2]
        and [e.schedule.cost for e in m1] == [e.schedule.cost for e in m2]
    )


def run(quick: bool, seed: int = 2024) -> dict:
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    inst = eris_simulator(np.random.default_rng(seed))
    cfg = inst.config
    auc = ErisAuction(inst.sites, inst.network, cfg)
    jobs = list(inst.jobs)
    if quick:  # one small reference job (D = 27, late arrival) keeps the smoke run short
        cands = [i for i, j in enumerate(jobs) if j.total_chunks == 27 and j.arrival > 100]
        sample = {cands[len(cands) // 2]} if cands else {len(jobs) - 1}
    else:
        sample = set(np.linspace(5, len(jobs) - 5, 6).astype(int).tolist())
    fast_ms: list[float] = []
    cpu_ms: list[float] = []
    ref_rows = []
    for i, j in enumerate(jobs):
        if i in sample:
            jb = prepare_job(j, inst.sites, cfg)
            t0 = time.perf_counter()
            m_fast = build_menu(jb, j.arrival, auc.state, cfg)
            mu_f, e_f = choose(m_fast, j.utility, j.arrival, cfg)
            t1 = time.perf_counter()
            m_ref = build_menu_reference(jb, j.arrival, auc.state, cfg)
            mu_r, e_r = choose(m_ref, j.utility, j.arrival, cfg)
            t2 = time.perf_counter()
            same = _same(m_fast, m_ref) and mu_f == mu_r and (e_f is None) == (e_r is None)
            same = same and (e_f is None or (e_f.deadline == e_r.deadline and e_f.schedule.cost == e_r.schedule.cost))
            if not same:
                raise AssertionError(f"job {j.job_id}: vectorised and reference decisions differ")
            ref_rows.append(
                {
                    "job_id": j.job_id,
                    "arrival": j.arrival,
                    "chunks": j.total_chunks,
                    "slots": cfg.horizon - j.arrival + 1,
                    "menu_size": len(m_fast),
                    "accepted": e_f is not None,
                    "vectorised_ms": (t1 - t0) * 1e3,
                    "reference_ms": (t2 - t1) * 1e3,
                    "identical": same,
                }
            )
        c0 = time.process_time()
        t0 = time.perf_counter()
        auc.step(j.arrival, [j])
        fast_ms.append((time.perf_counter() - t0) * 1e3)
        cpu_ms.append((time.process_time() - c0) * 1e3)
    fast = np.array(fast_ms)
    vec_s = np.array([r["vectorised_ms"] for r in ref_rows])
    ref_s = np.array([r["reference_ms"] for r in ref_rows])
    return {
        "benchmark": "eris per-job decision time, vectorised vs pure-Python reference",
        "scenario": {"R": inst.sites.R, "I": len(jobs), "T": cfg.horizon, "mode": "global", "seed": seed},
        "quick": quick,
        "all_jobs": {
            "decision_ms_mean": float(fast.mean()),
            "decision_ms_median": float(np.median(fast)),
            "decision_ms_p95": float(np.percentile(fast, 95)),
            "decision_ms_max": float(fast.max()),
            "decision_cpu_ms_mean": float(np.mean(cpu_ms)),
            "accepted": int(sum(d.admitted for d in auc.decisions)),
            "dpc_calls_mean": float(np.mean([s.dpc_calls for s in auc.stats])),
            "repair_calls_mean": float(np.mean([s.repair_calls for s in auc.stats])),
        },
        "reference_sample": ref_rows,
        "ratio_reference_over_vectorised": float(ref_s.sum() / vec_s.sum()),
        "ratio_per_job_min": float((ref_s / vec_s).min()),
        "identical_decisions": bool(all(r["identical"] for r in ref_rows)),
        "targets": {"ratio_ge": 20, "ms_per_job_le": 10},
        "platform": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average_1min_start_end": [load0, os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")],
        },
    }


def to_markdown(res: dict) -> str:
    a = res["all_jobs"]
    lines = [
        "# Eris benchmark: per-job decision time",
        "",
        f"Scenario: simulator (spec §5.3), R = {res['scenario']['R']}, I = {res['scenario']['I']}, "
        f"T = {res['scenario']['T']}, global mode, seed {res['scenario']['seed']}. One run.",
        "",
        "| all jobs (vectorised, full step incl. commit) | value |",
        "|---|---|",
        f"| mean ms / job | {a['decision_ms_mean']:.2f} |",
        f"| median ms / job | {a['decision_ms_median']:.2f} |",
        f"| p95 ms / job | {a['decision_ms_p95']:.2f} |",
        f"| max ms / job | {a['decision_ms_max']:.2f} |",
        f"| mean CPU ms / job (process time) | {a['decision_cpu_ms_mean']:.2f} |",
        f"| accepted | {a['accepted']} / {res['scenario']['I']} |",
        "",
        "Reference sample (same frozen state; menus and decisions asserted identical):",
        "",
        "| job | arrival | chunks | slots | menu | accepted | vectorised ms | reference ms | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["reference_sample"]:
        lines.append(
            f"| {r['job_id']} | {r['arrival']} | {r['chunks']} | {r['slots']} | {r['menu_size']} | {r['accepted']} | "
            f"{r['vectorised_ms']:.2f} | {r['reference_ms']:.0f} | {r['reference_ms'] / r['vectorised_ms']:.0f}x |"
        )
    ok_ratio = res["ratio_reference_over_vectorised"] >= res["targets"]["ratio_ge"]
    ok_ms = a["decision_ms_mean"] <= res["targets"]["ms_per_job_le"]
    lines += [
        "",
        f"Ratio (total reference time / total vectorised time over the sample): "
        f"**{res['ratio_reference_over_vectorised']:.0f}x** (target >= 20x: {'met' if ok_ratio else 'NOT met'}); "
        f"smallest per-job ratio {res['ratio_per_job_min']:.0f}x.",
        f"Mean decision time {a['decision_ms_mean']:.2f} ms / job (target <= 10 ms: {'met' if ok_ms else 'NOT met'}).",
        f"Identical decisions: {res['identical_decisions']}.",
        "",
        "Platform: Python {python}, numpy {numpy}, {machine}, {cpus} CPUs; 1-min load average at start/end "
        "{load_average_1min_start_end[0]:.1f}/{load_average_1min_start_end[1]:.1f} (shared machine: other agents "
        "were running; wall times include their interference, CPU time less so).".format(**res["platform"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke mode: one small reference job, no result files")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args(argv)
    res = run(args.quick, args.seed)
    md = to_markdown(res)
    print(md)
    if not args.quick:
        out = ROOT / "benchmarks" / "results"
        out.mkdir(parents=True, exist_ok=True)
        (out / "eris.json").write_text(json.dumps(res, indent=2) + "\n")
        (out / "eris.md").write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
