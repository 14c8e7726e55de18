"""How the packaged ``philly_trace`` scenario's load was chosen (issue #24): the Philly sample on
its 36 + 36 + 36 GPUs at several ``arrival_scale`` values, every policy of the scenario to
completion, one replication (seed ``SeedSequence(7).spawn(1)[0]``).

At its own pace (scale 1) the sample fills 7.7% of the cluster and every policy gives about the
same mean JCT; the packaged scenario uses the scale at which the policies clearly differ while
every job still completes.

Usage: ``python benchmarks/philly_trace_load.py SCALE [SCALE ...]`` appends one JSON line per
(scale, policy) to ``benchmarks/results/philly_trace_load.jsonl`` and rewrites
``philly_trace_load.md`` from all lines there. ``--render`` only rewrites the table.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results"
LINES = RESULTS / "philly_trace_load.jsonl"


def run(scale: float, gpus: tuple[int, ...] = (36, 36, 36)) -> None:
    from marketsim.scenarios.loader import load_scenario

    scen = load_scenario("philly_trace")
    ts = replace(scen.workload.trace, arrival_scale=scale)
    scen = replace(scen, workload=replace(scen.workload, trace=ts), cluster=replace(scen.cluster, gpus=gpus))
    for pol in scen.policies:
        t0 = time.process_time()
        m = scen.build_model(pol, "truthful", np.random.SeedSequence(7).spawn(1)[0])
        m.progress = False
        m.run()
        c = m.completions()
        tidy = m.tidy()
        u = tidy[tidy.measure == "utilisation"].value.to_numpy()
        rs = tidy[tidy.measure == "round_s"].value.to_numpy()
        row = {"scale": scale, "gpus": list(gpus), "policy": pol, "mean_jct_h": c.jct_s.mean() / 3600,
               "p95_h": c.jct_s.quantile(0.95) / 3600, "done": len(c), "util": float((u * rs).sum() / rs.sum()),
               "cpu": time.process_time() - t0, "cap": m.cap_reached}  # fmt: skip
        with LINES.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def render() -> None:
    rows, seen = [], set()
    for x in LINES.read_text(encoding="utf-8").splitlines():
        r = json.loads(x) if x.strip() else None
        if r is not None and (r["scale"], r["policy"]) not in seen:  # a repeated run (same numbers) once
            seen.add((r["scale"], r["policy"]))
            rows.append(r)
    out = ["# Load of the packaged philly_trace scenario", "",
           "`python benchmarks/philly_trace_load.py SCALE ...`: the Philly sample (2,007 jobs) on 36+36+36 GPUs, "
           "tenants = virtual clusters, arrivals multiplied by `arrival_scale`, every policy to completion, one "
           "replication. Offered load = sum(duration x GPUs) / (108 GPUs x span) = 7.7% / scale (durations are V100 "
           "run times). `util` = GPU-seconds used / GPU-seconds of the rounds (idle gaps between jobs excluded). "
           "CPU s on 2 CPUs shared with many other jobs (load average 13-21).", "",
           "| arrival_scale | offered load | policy | done | mean JCT h | p95 JCT h | util | CPU s |",
           "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        out.append(f"| {r['scale']:g} | {0.077 / r['scale']:.0%} | {r['policy']} | {r['done']} | "
                   f"{r['mean_jct_h']:.2f} | {r['p95_h']:.1f} | {r['util']:.3f} | {r['cpu']:.1f} |")  # fmt: skip
    for scale in sorted({r["scale"] for r in rows}):
        m = [r["mean_jct_h"] for r in rows if r["scale"] == scale]
        out.append("")
        out.append(f"scale {scale:g}: {len(m)} policies, mean JCT {min(m):.2f} to {max(m):.2f} h "
                   f"(worst / best = {max(m) / min(m):.2f})")  # fmt: skip
    (RESULTS / "philly_trace_load.md").write_text("\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] != "--render":
        for s in args:
            run(float(s))
    render()
