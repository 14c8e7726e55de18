"""What solving identical jobs once buys ``gavel-max-min-perf`` on the packaged Gavel trace.

Runs the packaged 1,301-job trace (12+12+12 GPUs) twice, each in a fresh process: with the trace
engine's default (identical jobs solved once, ``marketsim.agents.trace_rounds.NATIVE_OPTIONS``) and with the
per-job program. Records whole-process CPU, mean JCT and, over the policy's solves, the share of
active jobs that are distinct (same throughputs, scale factor, weight). Writes
benchmarks/results/trace_aggregate.md. ``python benchmarks/bench_trace_aggregate.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "trace_aggregate.md"


def child(aggregate: bool) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import marketsim.agents.trace_rounds as tr
    from marketsim.scenarios.loader import load_scenario

    if not aggregate:
        tr.NATIVE_OPTIONS = {}
    scen = load_scenario("gavel_trace")
    model = scen.build_model("gavel-max-min-perf", "truthful", scen.seed)
    model.progress = False
    eng = model.auctioneer.trace
    fn, shares = eng.mechanism.fn, []

    def counting(T, m, **kw):
        key = np.column_stack([T, kw["scale_factors"], kw["weights"]])
        shares.append(len(np.unique(key, axis=0)) / len(key))
        return fn(T, m, **kw)

    eng.mechanism = dataclasses.replace(eng.mechanism, fn=counting)  # a frozen registry entry
    model.run()
    jct = model.completions()["jct_s"].to_numpy()
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"aggregate": aggregate, "cpu_s": r.ru_utime + r.ru_stime, "mean_jct_s": float(jct.mean()),
                      "jobs": int(jct.size), "solves": len(shares), "distinct_min": float(min(shares)),
                      "distinct_mean": float(np.mean(shares)), "distinct_max": float(max(shares))}))  # fmt: skip


def main() -> None:
    load0 = os.getloadavg()
    rows = []
    for agg in (True, False, True, False):
        out = subprocess.run([sys.executable, __file__, "--child", "1" if agg else "0"], capture_output=True,
                             text=True, check=True, cwd=ROOT).stdout  # fmt: skip
        rows.append(json.loads(out.strip().splitlines()[-1]))
    load1 = os.getloadavg()
    lines = ["# Trace engine: identical jobs solved once (`gavel-max-min-perf`, packaged Gavel trace)", "",
             f"`python benchmarks/bench_trace_aggregate.py`; load average {load0[0]:.2f} -> {load1[0]:.2f}; "
             "each row a fresh process (whole-process CPU), alternating.", "",
             "| identical jobs solved once | CPU s | mean JCT s | jobs | solves | distinct share of active jobs "
             "(min / mean / max over solves) |", "|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {'yes (default)' if r['aggregate'] else 'no (per-job program)'} | {r['cpu_s']:.2f} | "
                     f"{r['mean_jct_s']:.1f} | {r['jobs']} | {r['solves']} | {r['distinct_min']:.2f} / "
                     f"{r['distinct_mean']:.2f} / {r['distinct_max']:.2f} |")  # fmt: skip
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2] == "1")
    else:
        main()
