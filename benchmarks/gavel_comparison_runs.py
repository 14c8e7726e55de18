"""Every Gavel run docs/gavel_comparison.md cites that ``tests/data`` does not store, re-run with
Gavel's own simulator, and every comparison of that page built on them (issue #31 item 6).

Gavel's side: ``scripts/drivers/simulate_scheduler_with_trace.py`` of the user's Gavel checkout
(environment: ``bash benchmarks/gavel_env.sh GAVEL``), unmodified or with documented differences
switched to our semantics or another LP solver by ``benchmarks/gavel_variant.py`` (run under
Gavel's Python; it patches a temporary copy, never the checkout). Inputs: the first N jobs of
``market/data/gavel_trace_seed1.trace`` and ``tests/data/gavel_generated_multigpu_100.trace``;
flags ``--throughputs_file simulation_throughputs.json --time_per_iteration 360 --seed S -c SPEC
[--solver X]``. Per-job JCTs (s, as Gavel prints them) go to
``benchmarks/results/gavel_comparison/<input>_<V-P-K>.csv`` (one column per run), with Gavel's
printed mean JCT, utilisation and CPU seconds in ``runs.json`` there. Runs already stored in
``tests/data`` (``gavel_sim_jcts.README.md``, ``gavel_multigpu.README.md``) are read, not re-run;
runs already in the CSVs are kept unless ``--rerun`` (so an interrupted command resumes).

Our side (``agents/trace_rounds.py`` through the helpers of ``benchmarks/gavel_parity_rows.py``)
is re-run every time. Writes ``benchmarks/results/gavel_comparison.json`` and ``.md``: per
comparison the ratio of mean JCTs (B / A), median / 90th-percentile / largest per-job
``|ln(JCT_B / JCT_A)|``, JCTs equal to 1e-3 s, and the 10-90% JCT quantile ratios.

One command (Gavel runs one at a time, about 25 min of CPU for all of them)::

    python benchmarks/gavel_comparison_runs.py --gavel-dir GAVEL/scheduler --gavel-python .gavel/venv/bin/python \\
        [--rerun] [--only KEY,...] [--skip-gavel]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace_scale import ROOT, TRACE, _child, _load, compile_gavel, gavel_info  # noqa: E402
from gavel_parity_rows import _compare, _ours_single_seeded, multi, single  # noqa: E402

from marketsim.analysis.engine.studies import git_commit  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
OUT_DIR = RESULTS / "gavel_comparison"
OUT = RESULTS / "gavel_comparison"
VARIANT = Path(__file__).resolve().parent / "gavel_variant.py"
ALL = "steps,reset0,unalloc,idlereset,idlegap,noshuffle"
ALL_NO_SHUFFLE_SWITCH = "steps,reset0,unalloc,idlereset,idlegap"
MMF, MMFP, MST = "max_min_fairness", "max_min_fairness_perf", "max_sum_throughput_perf"
#: input name -> (trace file, number of jobs)
INPUTS = {
    "first100": (TRACE, 100),
    "first200": (TRACE, 200),
    "first300": (TRACE, 300),
    "generated_multigpu": (ROOT / "tests" / "data" / "gavel_generated_multigpu_100.trace", 100),
}
#: trace files described on the page but only run by benchmarks/gavel_parity_rows.py
OTHER_TRACES = {
    "minimize_makespan": (ROOT / "tests" / "data" / "gavel_physical_minimize_makespan.trace", 100),
    "max_min_fairness": (ROOT / "tests" / "data" / "gavel_physical_max_min_fairness.trace", 96),
}


def key(policy: str, solver: str = "ECOS", seed: int = 0, switches: str = "") -> str:
    """Column name of one Gavel run: ``policy.solver.sSEED.switches`` (``unmodified`` without switches)."""
    return f"{policy}.{solver}.s{seed}.{switches.replace(',', '+') or 'unmodified'}"


#: (input, cluster V:P:K, policy, solver, seed, switches), in the order they run (cheapest claims first)
RUNS: list[tuple[str, str, str, str, int, str]] = [
    # one GPU type: the one-V100-type rows and the attribution table (100 jobs, 4 V100s, HiGHS)
    ("first100", "4:0:0", MMFP, "ECOS", 0, ""),
    ("first100", "4:0:0", MST, "ECOS", 0, ""),
    ("first100", "4:0:0", MMFP, "HIGHS", 0, ""),
    ("first100", "4:0:0", MMFP, "HIGHS", 0, "steps"),
    ("first100", "4:0:0", MMFP, "HIGHS", 0, "reset0"),
    ("first100", "4:0:0", MMFP, "HIGHS", 0, "unalloc,idlereset,idlegap"),
    ("first100", "4:0:0", MMFP, "HIGHS", 0, "steps,reset0,noshuffle"),
    ("first200", "4:0:0", MMFP, "ECOS", 0, ""),
    ("first100", "12:0:0", MMFP, "ECOS", 0, ""),
    ("first100", "12:0:0", MMFP, "HIGHS", 0, ALL),
    # Gavel against itself on 4:4:4: LP solver swapped, shuffle seeds
    ("first200", "4:4:4", MMFP, "HIGHS", 0, ""),
    ("first200", "4:4:4", MMFP, "SCS", 0, ""),
    ("first200", "4:4:4", MST, "HIGHS", 0, ""),
    ("first200", "4:4:4", MST, "SCS", 0, ""),
    *[("first200", "4:4:4", MMF, "ECOS", s, "") for s in (1, 2, 3, 4)],
    # the shuffle and the other differences on 4:4:4
    ("first200", "4:4:4", MMF, "ECOS", 0, "noshuffle"),
    ("first200", "4:4:4", MMF, "ECOS", 0, ALL_NO_SHUFFLE_SWITCH),
    ("first200", "4:4:4", MMFP, "HIGHS", 0, ALL),
    ("first200", "4:4:4", MST, "HIGHS", 0, ALL),
    # Gavel's own 12 + 12 + 12 cluster, 300 jobs
    ("first300", "12:12:12", MMFP, "ECOS", 0, ""),
    ("first300", "12:12:12", MST, "ECOS", 0, ""),
    ("first300", "12:12:12", MMF, "ECOS", 0, "noshuffle"),
    ("first300", "12:12:12", MMF, "ECOS", 0, ALL),
    ("first300", "12:12:12", MMF, "ECOS", 0, "reset0,unalloc,idlereset,idlegap,noshuffle"),
    ("first300", "12:12:12", MMF, "ECOS", 0, "steps,unalloc,idlereset,idlegap,noshuffle"),
    ("first300", "12:12:12", MMF, "ECOS", 0, "steps,reset0,noshuffle"),
    # a multi-GPU trace on 8 + 8 + 8: Gavel with SCS against its default ECOS
    ("generated_multigpu", "8:8:8", MMFP, "SCS", 0, ""),
    ("generated_multigpu", "8:8:8", MST, "SCS", 0, ""),
]

#: Gavel runs stored in tests/data: (input, cluster, key) -> (file, column)
STORED: dict[tuple[str, str, str], tuple[str, str]] = {
    ("first200", "4:4:4", key(MMFP)): ("gavel_sim_jcts_max_min_fairness_perf_200.csv", "jct_s"),
    ("first200", "4:4:4", key(MST)): ("gavel_sim_jcts_max_sum_throughput_perf_200.csv", "jct_s"),
    ("first200", "4:4:4", key(MMF)): ("gavel_sim_jcts_max_min_fairness_200.csv", "jct_s"),
    ("first100", "4:0:0", key(MMFP, "HIGHS", 0, ALL)): (
        "gavel_sim_jcts_max_min_fairness_perf_100_aligned.csv",
        "jct_s",
    ),
    **{("first300", "12:12:12", key(MMF, seed=s)): ("gavel_sim_jcts_max_min_fairness_300_121212.csv", f"seed{s}")
       for s in range(5)},  # fmt: skip
    ("generated_multigpu", "8:8:8", key(MMFP)): ("gavel_sim_jcts_888_generated_multigpu.csv", MMFP),
    ("generated_multigpu", "8:8:8", key(MST)): ("gavel_sim_jcts_888_generated_multigpu.csv", MST),
}
JOB = re.compile(r"^Job (\d+)(?: \(high priority\))?: ([0-9.]+)$", re.M)
AVG = re.compile(r"^Average job completion time: ([0-9.]+) seconds", re.M)
UTIL = re.compile(r"^Cluster utilization: ([0-9.]+)", re.M)


def _csv(inp: str, cluster: str) -> Path:
    return OUT_DIR / f"{inp}_{cluster.replace(':', '-')}.csv"


def gavel_jcts(inp: str, cluster: str, k: str) -> pd.Series:
    """Gavel's per-job JCTs (s) of run ``k`` on ``inp`` / ``cluster``: tests/data if stored there, else our CSVs."""
    if (inp, cluster, k) in STORED:
        fname, col = STORED[(inp, cluster, k)]
        g = pd.read_csv(single.DATA / fname, index_col="job_id").sort_index()
        return g[col]
    path = _csv(inp, cluster)
    if not path.exists():
        raise KeyError(f"no Gavel run {k} on {inp} {cluster}: run benchmarks/gavel_comparison_runs.py with Gavel")
    df = pd.read_csv(path, index_col="job_id").sort_index()
    if k not in df:
        raise KeyError(f"no Gavel run {k} in {path.name}: run benchmarks/gavel_comparison_runs.py with Gavel")
    return df[k]


def run_gavel(run: tuple[str, str, str, str, int, str], gdir: Path, gpy: str, tmp: Path) -> dict[str, Any]:
    """One Gavel process; its per-job JCTs, printed mean and utilisation, CPU seconds, load."""
    inp, cluster, policy, solver, seed, switches = run
    src, n = INPUTS[inp]
    trace = tmp / f"{inp}.trace"
    trace.write_text("".join(src.read_text().splitlines(keepends=True)[:n]))
    flags = ["-t", str(trace), "-p", policy, "--throughputs_file", "simulation_throughputs.json", "-c", cluster,
             "--seed", str(seed), "--time_per_iteration", "360", "--solver", solver]  # fmt: skip
    load = _load()
    if switches or solver == "HIGHS":
        got = _child([gpy, str(VARIANT), "--gavel-dir", str(gdir), "--switches", switches, "--", *flags], cwd=gdir)
    else:
        got = _child([gpy, "scripts/drivers/simulate_scheduler_with_trace.py", *flags], cwd=gdir)
    text = got.pop("stdout")
    jobs = {int(a): float(b) for a, b in JOB.findall(text)}
    if len(jobs) != n or AVG.search(text) is None:
        raise RuntimeError(f"Gavel run {run} printed {len(jobs)} of {n} JCTs: {text[-400:]}")
    u = UTIL.search(text)
    return {"input": inp, "cluster": cluster, "key": key(policy, solver, seed, switches), "jcts": jobs,
            "mean_jct_s": float(AVG.search(text).group(1)), "utilization": float(u.group(1)) if u else None,
            "cpu_s": round(got["cpu_s"], 2), "wall_s": round(got["wall_s"], 1), "load_before": load,
            "load_after": _load()}  # fmt: skip


def store(res: dict[str, Any]) -> None:
    """Add one run's JCTs as a column of its CSV (3 decimals, as Gavel prints) and its summary to runs.json."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = _csv(res["input"], res["cluster"])
    df = pd.read_csv(path, index_col="job_id") if path.exists() else pd.DataFrame(index=pd.Index([], name="job_id"))
    col = pd.Series(res["jcts"], name=res["key"])
    col.index.name = "job_id"
    df = df.drop(columns=[res["key"]], errors="ignore").join(col, how="outer") if len(df.columns) else col.to_frame()
    df.sort_index().to_csv(path, float_format="%.3f")
    runs_path = OUT_DIR / "runs.json"
    runs = json.loads(runs_path.read_text()) if runs_path.exists() else {"runs": []}
    rid = (res["input"], res["cluster"], res["key"])
    runs["runs"] = [r for r in runs["runs"] if (r["input"], r["cluster"], r["key"]) != rid]
    runs["runs"].append({k: v for k, v in res.items() if k != "jcts"})
    runs_path.write_text(json.dumps(runs, indent=1) + "\n")


def have(inp: str, cluster: str, k: str) -> bool:
    try:
        gavel_jcts(inp, cluster, k)
    except KeyError:
        return False
    return True


# -- comparisons ------------------------------------------------------------------------------------
def _pair(a: pd.Series, b: pd.Series) -> dict[str, Any]:
    """B against A on the same jobs: ``_compare`` (ratio = mean B / mean A, per-job |ln B/A|) plus the
    10-90% quantile ratios of B / A."""
    row = _compare([b], [a])
    q = np.quantile(b.to_numpy(), [0.1, 0.25, 0.5, 0.75, 0.9]) / np.quantile(a.to_numpy(), [0.1, 0.25, 0.5, 0.75, 0.9])
    row["q_ratio_min"], row["q_ratio_max"] = float(q.min()), float(q.max())
    row["same_jobs"] = row.pop("all_completed")
    for k in ("ours_runs", "gavel_runs", "ours_mean_s", "gavel_mean_s"):
        row.pop(k)
    row["mean_a_s"], row["mean_b_s"] = float(a.mean()), float(b.mean())
    return row


def _ours(policy: str, inp: str, cluster: str, lease_order: str = "fastest", seed: int = 0, per_job: bool = False):
    """Our JCTs (s) on ``inp`` / ``cluster``; ``per_job``: the per-job LP, tied rows in row order (the exact check)."""
    import marketsim.agents.trace_rounds as tr

    saved = tr.NATIVE_OPTIONS, tr.TIE_BREAK
    if per_job:
        tr.NATIVE_OPTIONS, tr.TIE_BREAK = {}, False
    try:
        if inp == "generated_multigpu":
            return multi._ours(inp, policy, lease_order, seed)
        v, p, k = (int(x) for x in cluster.split(":"))
        return _ours_single_seeded(policy, INPUTS[inp][1], (v, p, k), lease_order, seed)
    finally:
        tr.NATIVE_OPTIONS, tr.TIE_BREAK = saved


def comparisons(missing: list[str]) -> list[dict[str, Any]]:
    """Every comparison of docs/gavel_comparison.md built on the runs above; a comparison whose Gavel
    run is not stored is left out and named in ``missing``."""
    out: list[dict[str, Any]] = []

    def add(cid: str, inp: str, cluster: str, a: str, b: str, sa: Any, sb: Any, **extra: Any) -> None:
        if callable(sa):  # a Gavel run that may not be stored yet
            try:
                sa = sa()
            except KeyError as exc:
                missing.append(f"{cid}: {exc.args[0]}")
                print(f"skipped {cid}: {exc.args[0]}", file=sys.stderr)
                return
        if callable(sb):
            try:
                sb = sb()
            except KeyError as exc:
                missing.append(f"{cid}: {exc.args[0]}")
                print(f"skipped {cid}: {exc.args[0]}", file=sys.stderr)
                return
        out.append({"id": cid, "section": cid.split(":")[0], "input": inp, "n": len(sa), "cluster": cluster,
                    "a": a, "b": b, **extra, **_pair(sa, sb)})  # fmt: skip

    def G(inp: str, cluster: str, k: str) -> Any:  # noqa: N802 - read lazily, so a missing run skips its row
        return lambda: gavel_jcts(inp, cluster, k)

    ours_cache: dict[tuple, pd.Series] = {}
    ours_jcts: dict[tuple[str, str], dict[str, pd.Series]] = {}

    def ours(*args: Any, **kw: Any) -> pd.Series:
        k = (*args, *sorted(kw.items()))
        if k not in ours_cache:
            ours_cache[k] = _ours(*args, **kw)
            policy, inp, cluster = args[:3]
            col = ".".join([policy, kw.get("lease_order", "fastest"), f"s{kw.get('seed', 0)}"]
                           + (["per_job"] if kw.get("per_job") else []))  # fmt: skip
            ours_jcts.setdefault((inp, cluster), {})[col] = ours_cache[k]
        return ours_cache[k]

    # ours against unmodified Gavel where only the (not stored before) Gavel run is new
    for inp, cl, gp, pol in (
        ("first300", "12:12:12", MMFP, "gavel-max-min-perf"),
        ("first300", "12:12:12", MST, "gavel-max-sum-throughput"),
        ("first100", "4:0:0", MMFP, "gavel-max-min-perf"),
        ("first200", "4:0:0", MMFP, "gavel-max-min-perf"),
        ("first100", "4:0:0", MST, "gavel-max-sum-throughput"),
        ("first100", "12:0:0", MMFP, "gavel-max-min-perf"),
    ):
        add(f"ours:{pol}:{inp}:{cl}", inp, cl, f"Gavel {key(gp)}", f"ours {pol}", G(inp, cl, key(gp)),
            ours(pol, inp, cl), gavel_policy=gp, policy=pol)  # fmt: skip
    # maxmin (fixed order) against each of Gavel's max_min_fairness seeds 0-4 on 4:4:4
    for s in range(5):
        add(f"maxminseeds:{s}", "first200", "4:4:4", f"Gavel {key(MMF, seed=s)}", "ours maxmin",
            G("first200", "4:4:4", key(MMF, seed=s)), ours("maxmin", "first200", "4:4:4"))  # fmt: skip
    # Gavel against itself
    for inp, cl, gp, solver in (
        ("first200", "4:4:4", MMFP, "HIGHS"),
        ("first200", "4:4:4", MMFP, "SCS"),
        ("first200", "4:4:4", MST, "HIGHS"),
        ("first200", "4:4:4", MST, "SCS"),
        ("generated_multigpu", "8:8:8", MMFP, "SCS"),
        ("generated_multigpu", "8:8:8", MST, "SCS"),
    ):
        add(f"self:{gp}:{solver}:{inp}", inp, cl, f"Gavel {key(gp)}", f"Gavel {key(gp, solver)}",
            G(inp, cl, key(gp)), G(inp, cl, key(gp, solver)), run_a=f"{gp}, ECOS",
            run_b=f"same, {'HiGHS' if solver == 'HIGHS' else solver}")  # fmt: skip
    for s in (1, 2, 3, 4):
        add(f"self:{MMF}:seed{s}:first200", "first200", "4:4:4", f"Gavel {key(MMF)}", f"Gavel {key(MMF, seed=s)}",
            G("first200", "4:4:4", key(MMF)), G("first200", "4:4:4", key(MMF, seed=s)), run_a=f"{MMF}, seed 0",
            run_b=f"seed {s}")  # fmt: skip
    # attribution, 100 jobs on 4 V100s, HiGHS in Gavel; ours the per-job program (the exact check's mode)
    o100 = ours("gavel-max-min-perf", "first100", "4:0:0", per_job=True)
    labels = {
        "": "unmodified (HiGHS)",
        "steps": "only continuous steps per lease",
        "reset0": 'only "reset interval counted from the first reset"',
        "unalloc,idlereset,idlegap": "only unallocated jobs skipped / idle resets / idle-gap time",
        "steps,reset0,noshuffle": "all but unallocated jobs / idle resets / idle-gap time",
        ALL: "all switched",
    }
    for sw, label in labels.items():
        add(f"attr:{sw or 'unmodified'}", "first100", "4:0:0", f"Gavel {key(MMFP, 'HIGHS', 0, sw)}",
            "ours gavel-max-min-perf (per-job LP)", G("first100", "4:0:0", key(MMFP, "HIGHS", 0, sw)), o100,
            label=label)  # fmt: skip
    # 12 V100s: aligned Gavel (HiGHS) against ours, per-job program
    o12 = ours("gavel-max-min-perf", "first100", "12:0:0", per_job=True)
    add("attr12:all", "first100", "12:0:0", f"Gavel {key(MMFP, 'HIGHS', 0, ALL)}",
        "ours gavel-max-min-perf (per-job LP)", G("first100", "12:0:0", key(MMFP, "HIGHS", 0, ALL)), o12)  # fmt: skip
    add("attr12:unmodified", "first100", "12:0:0", f"Gavel {key(MMFP)}", "ours gavel-max-min-perf (per-job LP)",
        G("first100", "12:0:0", key(MMFP)), o12)  # fmt: skip
    # the shuffle on 4:4:4 (ours maxmin, fixed fastest-first order)
    om = ours("maxmin", "first200", "4:4:4")
    for sw in ("noshuffle", ALL_NO_SHUFFLE_SWITCH):
        add(f"shuffle444:{sw}", "first200", "4:4:4", f"Gavel {key(MMF, 'ECOS', 0, sw)}", "ours maxmin",
            G("first200", "4:4:4", key(MMF, "ECOS", 0, sw)), om)  # fmt: skip
    # every difference switched, HiGHS on both sides, 4:4:4 (ours: the per-job program)
    for gp, pol in ((MMFP, "gavel-max-min-perf"), (MST, "gavel-max-sum-throughput")):
        add(f"aligned444:{pol}", "first200", "4:4:4", f"Gavel {key(gp, 'HIGHS', 0, ALL)}", f"ours {pol} (per-job LP)",
            G("first200", "4:4:4", key(gp, "HIGHS", 0, ALL)), ours(pol, "first200", "4:4:4", per_job=True))  # fmt: skip
    # the agnostic pair on 12:12:12, 300 jobs: Gavel variants (ECOS, seed 0) against ours maxmin (fixed order)
    om300 = ours("maxmin", "first300", "12:12:12")
    for sw in ("", "noshuffle", ALL, "reset0,unalloc,idlereset,idlegap,noshuffle",
               "steps,unalloc,idlereset,idlegap,noshuffle", "steps,reset0,noshuffle"):  # fmt: skip
        add(f"shuffle121212:{sw or 'unmodified'}", "first300", "12:12:12", f"Gavel {key(MMF, 'ECOS', 0, sw)}",
            "ours maxmin", G("first300", "12:12:12", key(MMF, "ECOS", 0, sw)), om300)  # fmt: skip
    # the per-job program (no aggregation of identical jobs, tied rows in row order) against the default
    # engine, on the gavel-max-min-perf rows of gavel_parity_rows.json
    add("perjob:gavel_trace", "first200", "4:4:4", f"Gavel {key(MMFP)}", "ours gavel-max-min-perf (per-job LP)",
        G("first200", "4:4:4", key(MMFP)), ours("gavel-max-min-perf", "first200", "4:4:4", per_job=True),
        trace="gavel_trace")  # fmt: skip
    for inp, cl in (("first100", "4:0:0"), ("first200", "4:0:0"), ("first100", "12:0:0"), ("first300", "12:12:12")):
        add(f"perjob:{inp}:{cl}", inp, cl, f"Gavel {key(MMFP)}", "ours gavel-max-min-perf (per-job LP)",
            G(inp, cl, key(MMFP)), ours("gavel-max-min-perf", inp, cl, per_job=True), trace="gavel_trace")  # fmt: skip
    for trace in multi.TRACES:
        add(f"perjob:{trace}", trace, "8:8:8",
            f"Gavel {key(MMFP)} (tests/data)", "ours gavel-max-min-perf (per-job LP)", multi._gavel(trace)[MMFP],
            _perjob_multi(trace), trace=trace)  # fmt: skip
    # our engine with other round semantics against unmodified Gavel (what the per-job test bound catches)
    for name, kw in (("interval0", {"reallocation_interval_s": 0.0}), ("round300", {"round_seconds": 300.0}),
                     ("round720", {"round_seconds": 720.0})):  # fmt: skip
        add(f"semantics:{name}", "first200", "4:4:4", f"Gavel {key(MMFP)}", f"ours gavel-max-min-perf, {kw}",
            G("first200", "4:4:4", key(MMFP)), single._ours("gavel-max-min-perf", 200, 4, 4, 4, **kw))  # fmt: skip
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for (inp, cluster), cols in ours_jcts.items():
        df = pd.DataFrame(cols).sort_index()
        df.index.name = "job_id"
        df.to_csv(OUT_DIR / f"ours_{inp}_{cluster.replace(':', '-')}.csv", float_format="%.3f")
    return out


def _perjob_multi(trace: str) -> pd.Series:
    import marketsim.agents.trace_rounds as tr

    saved = tr.NATIVE_OPTIONS, tr.TIE_BREAK
    tr.NATIVE_OPTIONS, tr.TIE_BREAK = {}, False
    try:
        return multi._ours(trace, "gavel-max-min-perf")
    finally:
        tr.NATIVE_OPTIONS, tr.TIE_BREAK = saved


def inputs() -> dict[str, Any]:
    """Facts of the inputs: last arrival (h) of each input."""
    res = {}
    for name, (path, n) in {**INPUTS, **OTHER_TRACES}.items():
        arr = [float(line.split("\t")[-1]) for line in path.read_text().splitlines()[:n] if line.strip()]
        res[name] = {"jobs": n, "last_arrival_h": max(arr) / 3600}
    return res


def render(out: dict[str, Any]) -> str:
    m = out["meta"]
    L = ["# Gavel's simulator against itself and against ours: the runs of docs/gavel_comparison.md", "",
         f"`{m['command']}`; commit `{m['commit']}`; Gavel `{m['gavel']['commit']}` ({m['gavel']['versions']}); "
         f"ours {m['python']}; load {m['load_start']} -> {m['load_end']}. Gavel's JCTs: "
         "`benchmarks/results/gavel_comparison/*.csv` (how they were made: its README.md) and `tests/data`. "
         "Ratio = mean JCT of B / A; |log| = per-job |ln(JCT_B / JCT_A)|; identical = JCTs within 1e-3 s; "
         "quantiles = 10/25/50/75/90% JCT quantiles of B / A (range). Switches: `benchmarks/gavel_variant.py`.", "",
         "| id | N, cluster | A | B | ratio | median \\|log\\| | 90th pct | max | identical | quantiles B / A |",
         "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in out["rows"]:
        L.append(f"| {r['id']} | {r['n']}, {r['cluster']} | {r['a']} | {r['b']} | {r['ratio']:.4f} | "
                 f"{r['median_abs_log']:.4f} | {r['p90_abs_log']:.3f} | {r['max_abs_log']:.2f} | "
                 f"{r['identical']} / {r['n']} | {r['q_ratio_min']:.2f}-{r['q_ratio_max']:.2f} |")  # fmt: skip
    L += ["", "## Gavel runs", "", "| input | cluster | run | mean JCT printed (s) | utilisation | CPU s | load |",
          "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in out["gavel_runs"]:
        L.append(f"| {r['input']} | {r['cluster']} | {r['key']} | {r['mean_jct_s']:,.3f} | {r['utilization']} | "
                 f"{r['cpu_s']} | {r['load_before']} -> {r['load_after']} |")  # fmt: skip
    return "\n".join(L) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel-dir", default=os.environ.get("GAVEL_DIR"))
    ap.add_argument("--gavel-python", default=os.environ.get("GAVEL_PYTHON"))
    ap.add_argument("--rerun", action="store_true", help="re-run Gavel runs already stored in our CSVs")
    ap.add_argument("--only", default="", help="comma-separated indices of RUNS to run (default: all)")
    ap.add_argument("--skip-gavel", action="store_true", help="only recompute the comparisons from the stored runs")
    args = ap.parse_args()
    load_start = _load()
    cpu0 = time.process_time()
    gdir = Path(args.gavel_dir) if args.gavel_dir else None
    if not args.skip_gavel:
        if gdir is None or not args.gavel_python:
            ap.error("--gavel-dir and --gavel-python (or GAVEL_DIR / GAVEL_PYTHON) are required unless --skip-gavel")
        compile_gavel(gdir, args.gavel_python)
        only = {int(i) for i in args.only.split(",") if i}
        with tempfile.TemporaryDirectory() as tmp:
            for i, run in enumerate(RUNS):
                inp, cl, pol, solver, seed, sw = run
                if (only and i not in only) or (not args.rerun and have(inp, cl, key(pol, solver, seed, sw))):
                    continue
                res = run_gavel(run, gdir, args.gavel_python, Path(tmp))
                store(res)
                print(f"[{i}] {inp} {cl} {res['key']}: mean {res['mean_jct_s']:.3f} s, {res['cpu_s']} s CPU",
                      flush=True)  # fmt: skip
    runs_path = OUT_DIR / "runs.json"
    gavel_runs = json.loads(runs_path.read_text())["runs"] if runs_path.exists() else []
    order = {(r[0], r[1], key(r[2], r[3], r[4], r[5])): i for i, r in enumerate(RUNS)}
    gavel_runs.sort(key=lambda r: order.get((r["input"], r["cluster"], r["key"]), 999))
    missing: list[str] = []
    rows = comparisons(missing)
    meta = {
        "command": "python benchmarks/gavel_comparison_runs.py --gavel-dir GAVEL/scheduler --gavel-python "
        ".gavel/venv/bin/python",
        "commit": git_commit(ROOT, default="unknown"),
        "gavel": gavel_info(gdir, args.gavel_python) if gdir and args.gavel_python else {"commit": "see runs.json",
                                                                                         "versions": "not re-run"},
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "load_start": load_start,
        "load_end": _load(),
        "ours_cpu_s": round(time.process_time() - cpu0, 1),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }  # fmt: skip
    out = {"meta": meta, "inputs": inputs(), "rows": rows, "gavel_runs": gavel_runs, "missing": missing}
    OUT.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(render(out))
    print(OUT.with_suffix(".md").read_text())
    if missing:
        print(f"{len(missing)} comparison(s) left out, their Gavel runs are not stored: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
