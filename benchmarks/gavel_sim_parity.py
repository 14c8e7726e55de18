"""`marketsim gavel-sim` against Gavel's own simulator, the same command line on both (issue #33 item 2).

For each (trace, cluster, Gavel policy) case, runs Gavel's unmodified
``scripts/drivers/simulate_scheduler_with_trace.py`` (environment: ``benchmarks/gavel_env.sh``) and
``marketsim gavel-sim`` with identical flags (``-t TRACE -p POLICY --throughputs_file
simulation_throughputs.json -c SPEC --seed 0 --time_per_iteration 360``), each a fresh process, and
records the ``Average job completion time`` line each prints, their ratio, the ``Cluster utilization``
lines and each process's CPU seconds. Target: every ratio within 5% (0.95-1.05).

Cases: Gavel's packaged trace (``market/data/gavel_trace_seed1.trace``, 1,301 jobs) on Gavel's 12:12:12
cluster, and its first 200 jobs on 4:4:4 (a loaded cluster), for ``max_min_fairness_perf``,
``max_sum_throughput_perf`` and ``max_min_fairness`` (seed 0 on both sides: this policy's per-round
GPU-type shuffle uses each simulator's own generator, so one seed of each is compared).

Usage::

    bash benchmarks/gavel_env.sh /path/to/gavel        # once: Gavel's pinned environment in ./.gavel
    python benchmarks/gavel_sim_parity.py --gavel-dir /path/to/gavel/scheduler --gavel-python .gavel/venv/bin/python
        [--cases full,first200] [--policies max_min_fairness_perf,...]

Writes ``benchmarks/results/gavel_sim_parity.md`` and ``.json`` (with the machine load, the commits and
versions). Rows of cases not run this time are kept from the previous file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace_scale import ROOT, TRACE, _child, _load, gavel_info, marketsim_cmd, ours_env  # noqa: E402

from marketsim.analysis.engine.studies import git_commit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
POLICIES = ("max_min_fairness_perf", "max_sum_throughput_perf", "max_min_fairness")
CASES = {"full": (None, "12:12:12"), "first200": (200, "4:4:4")}
AVG = re.compile(r"^Average job completion time: ([0-9.]+) seconds", re.M)
UTIL = re.compile(r"^Cluster utilization: ([0-9.]+)", re.M)


def _parse(text: str, who: str) -> dict[str, float]:
    m = AVG.search(text)
    if m is None:
        raise RuntimeError(f"{who} printed no average JCT: {text[-400:]}")
    u = UTIL.search(text)
    return {"mean_jct_s": float(m.group(1)), "utilization": float(u.group(1)) if u else float("nan")}


def run_case(case: str, policy: str, gdir: Path, gpy: str, tmp: Path) -> dict[str, Any]:
    n, spec = CASES[case]
    trace = TRACE
    if n is not None:
        trace = tmp / f"first{n}.trace"
        trace.write_text("".join(TRACE.read_text().splitlines(keepends=True)[:n]))
    flags = ["-t", str(trace), "-p", policy, "--throughputs_file", "simulation_throughputs.json", "-c", spec,
             "--seed", "0", "--time_per_iteration", "360"]  # fmt: skip
    row: dict[str, Any] = {"case": case, "jobs": n or 1301, "cluster": spec, "policy": policy, "load_before": _load()}
    g = _child([gpy, "scripts/drivers/simulate_scheduler_with_trace.py", *flags], cwd=gdir)
    row["gavel"] = {**_parse(g.pop("stdout"), "Gavel"), **g}
    o = _child([*marketsim_cmd(), "gavel-sim", *flags], cwd=gdir, env=ours_env())
    row["ours"] = {**_parse(o.pop("stdout"), "marketsim gavel-sim"), **o}
    row["ratio"] = row["ours"]["mean_jct_s"] / row["gavel"]["mean_jct_s"]
    row["load_after"] = _load()
    return row


def render(out: dict[str, Any]) -> str:
    L = ["# `marketsim gavel-sim` against Gavel's simulator", "",
         f"Last run: {out['run']} UTC; marketsim commit `{out['commit']}`; Gavel `{out['gavel']['commit']}` "
         f"({out['gavel']['versions']}). Command: `python benchmarks/gavel_sim_parity.py --gavel-dir GAVEL/scheduler "
         "--gavel-python .gavel/venv/bin/python` (environment: `bash benchmarks/gavel_env.sh GAVEL`).", "",
         "Both sides get the same flags: `-t TRACE -p POLICY --throughputs_file simulation_throughputs.json -c SPEC "
         "--seed 0 --time_per_iteration 360`, run from Gavel's `scheduler/` folder, each a fresh process. "
         "Mean JCT = the `Average job completion time` line each prints; ratio = ours / Gavel's (target 0.95-1.05). "
         "CPU = user + system of the whole process (interpreter start, imports, simulation). 2 CPUs shared with "
         "other jobs: CPU seconds are inflated by the load shown.", "",
         "| trace | jobs | cluster (V:P:K) | Gavel policy | Gavel mean JCT s | gavel-sim mean JCT s | ratio | "
         "within 5% | Gavel util. | ours util. | Gavel CPU s | gavel-sim CPU s | load before -> after |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in out["rows"]:
        ok = "yes" if abs(r["ratio"] - 1) <= 0.05 else "**no**"
        L.append(f"| {r['case']} | {r['jobs']:,} | {r['cluster']} | `{r['policy']}` | "
                 f"{r['gavel']['mean_jct_s']:,.1f} | "
                 f"{r['ours']['mean_jct_s']:,.1f} | {r['ratio']:.4f} | {ok} | {r['gavel']['utilization']:.3f} | "
                 f"{r['ours']['utilization']:.3f} | {r['gavel']['cpu_s']:.1f} | {r['ours']['cpu_s']:.1f} | "
                 f"{r['load_before']} -> {r['load_after']} |")  # fmt: skip
    worst = max(abs(r["ratio"] - 1) for r in out["rows"])
    L += ["", f"Largest |ratio - 1|: {100 * worst:.2f}% (target <= 5%: {'met' if worst <= 0.05 else 'NOT met'}).",
          "", "`Cluster utilization` is Gavel's definition (busy GPU-seconds over GPUs x simulated time); ours counts "
          "leased GPU-seconds, Gavel the seconds its whole steps take, so the two differ slightly.", ""]  # fmt: skip
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel-dir", default=os.environ.get("GAVEL_DIR"), required=os.environ.get("GAVEL_DIR") is None)
    ap.add_argument("--gavel-python", default=os.environ.get("GAVEL_PYTHON"),
                    required=os.environ.get("GAVEL_PYTHON") is None)  # fmt: skip
    ap.add_argument("--cases", default="full,first200")
    ap.add_argument("--policies", default=",".join(POLICIES))
    args = ap.parse_args()
    gdir, gpy = Path(args.gavel_dir), str(args.gavel_python)
    prev = RESULTS / "gavel_sim_parity.json"
    old = json.loads(prev.read_text()) if prev.exists() else {"rows": []}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in [c for c in args.cases.split(",") if c]:
            for pol in [p for p in args.policies.split(",") if p]:
                row = run_case(case, pol, gdir, gpy, Path(tmp))
                rows.append(row)
                print(json.dumps(row), flush=True)
    have = {(r["case"], r["policy"]) for r in rows}
    rows = [r for r in old["rows"] if (r["case"], r["policy"]) not in have] + rows
    rows.sort(
        key=lambda r: (list(CASES).index(r["case"]), POLICIES.index(r["policy"]) if r["policy"] in POLICIES else 9)
    )
    out = {"run": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "commit": git_commit(ROOT, default="unknown"),
           "gavel": gavel_info(gdir, gpy), "rows": rows}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    prev.write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / "gavel_sim_parity.md").write_text(render(out))
    print((RESULTS / "gavel_sim_parity.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
