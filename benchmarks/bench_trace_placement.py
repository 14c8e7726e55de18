"""Benchmark of host placement on trace runs: what ``placement = "auto"`` costs next to ``"ideal"``.

Instances (the packaged scenarios, run to completion): ``gavel_trace`` (Gavel's 1,301 single-GPU
jobs on 12 + 12 + 12 GPUs, one tenant per job) with ``maxmin`` and ``gavel-max-min-perf``, and
``philly_trace`` (2,007 jobs of 1 to 32 GPUs on 36 + 36 + 36 GPUs, 12 tenants) with ``maxmin``;
hosts of ``gpus_per_host = 4`` (the scenarios' default), one rack. Configurations:

* ``ideal``: no hosts (Gavel's semantics, the trace default);
* ``ideal@REV`` (with ``--base-rev REV``): the same in the code of git revision ``REV`` (e.g. the
  commit before hosts existed), to check that "ideal" did not get slower;
* ``auto``: every lease on hosts (for these non-OEF policies "auto" resolves to first fit,
  "naive"); ``oef``: best fit;
* ``auto+mig60``: ``auto`` with ``migration_cost_s = 60``.

Each (instance, configuration) runs in a fresh subprocess (same imports for all); the
configurations are interleaved and repeated ``--repeats`` times, and the table gives the median
CPU seconds of ``model.run()`` (``time.process_time``) and the ratio to ``ideal`` of the same
repetition round. ``placer s`` is the CPU time inside ``HostPlacer.place`` (the placement step
itself); ``µs/lease`` divides it by the leases placed. Also: mean JCT, migrations, lease seconds
lost to them, and lease-rounds that spanned hosts (``spread``).

Usage: ``python benchmarks/bench_trace_placement.py [--repeats 3] [--base-rev REV]
[--instances scenario:policy,...] [--quick]``;
writes ``benchmarks/results/trace_placement.json`` and ``.md`` with the load average (2 CPUs
shared with other jobs: compare ratios, not absolute seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

INSTANCES = (("gavel_trace", "maxmin"), ("gavel_trace", "gavel-max-min-perf"), ("philly_trace", "maxmin"))
CONFIGS = {  # name -> (placement, migration_cost_s)
    "ideal": ("ideal", 0.0),
    "auto": ("auto", 0.0),
    "oef": ("oef", 0.0),
    "auto+mig60": ("auto", 60.0),
}

CHILD = r"""
import json, sys, time
from dataclasses import replace
from marketsim.scenarios.loader import load_scenario
scenario, policy, placement, mig = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
scen = load_scenario(scenario)
kw = {} if placement == "ideal" else {"placement": placement, "migration_cost_s": mig}
scen = replace(scen, **kw)
placed = {"s": 0.0, "leases": 0}
try:
    from marketsim.market.hosts import HostPlacer
    inner = HostPlacer.place
    def timed(self, jobs, *a, **k):
        t = time.process_time()
        out = inner(self, jobs, *a, **k)
        placed["s"] += time.process_time() - t
        placed["leases"] += int(jobs.size)
        return out
    HostPlacer.place = timed
except ImportError:
    pass
model = scen.build_model(policy, "truthful", scen.seed)
model.progress = False
t0 = time.process_time()
model.run()
cpu = time.process_time() - t0
eng = model.auctioneer.trace
comp = model.completions()
tidy = model.tidy()
spread = float(tidy.loc[tidy["measure"] == "cross_host_jobs", "value"].sum())
print(json.dumps({"cpu_s": cpu, "rounds": int(model.steps), "completed": int(len(comp)),
                  "mean_jct_h": float(comp["jct_s"].mean()) / 3600.0,
                  "migrations": int(getattr(eng, "migrations", 0)),
                  "migration_lost_s": float(getattr(eng, "migration_lost_s", 0.0)),
                  "spread_lease_rounds": spread, "placer_s": placed["s"], "leases": placed["leases"]}))
"""


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f}/{b:.2f}/{c:.2f}"


def _child(tree: Path, scenario: str, policy: str, placement: str, mig: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, scenario, policy, placement, str(mig)],
        cwd=tree, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def _export(rev: str, into: Path) -> Path:
    """The tree of git revision ``rev`` (``git archive``) under ``into``."""
    tar = into / "base.tar"
    subprocess.run(["git", "archive", "-o", str(tar), rev], cwd=ROOT, check=True)
    with tarfile.open(tar) as tf:
        tf.extractall(into / "tree", filter="data")
    return into / "tree"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--base-rev", default=None, help="also run 'ideal' in this git revision")
    ap.add_argument("--instances", default=None,
                    help="comma-separated scenario:policy pairs (default: the three of the docstring)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="gavel_trace with maxmin only, 1 repeat")
    args = ap.parse_args()
    instances = INSTANCES
    if args.instances:
        instances = tuple(tuple(x.split(":", 1)) for x in args.instances.split(","))  # type: ignore[misc]
    if args.quick:
        instances = INSTANCES[:1]
    repeats = 1 if args.quick else args.repeats
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = _load()
    with tempfile.TemporaryDirectory() as tmp:
        configs: dict[str, tuple[Path, str, float]] = {n: (ROOT, p, m) for n, (p, m) in CONFIGS.items()}
        if args.base_rev:
            configs = {f"ideal@{args.base_rev}": (_export(args.base_rev, Path(tmp)), "ideal", 0.0), **configs}
        runs: list[dict] = []
        for rep in range(repeats):
            for scenario, policy in instances:
                for name, (tree, placement, mig) in configs.items():
                    r = _child(tree, scenario, policy, placement, mig)
                    r.update(scenario=scenario, policy=policy, config=name, repeat=rep)
                    runs.append(r)
                    print(f"{scenario} {policy} {name} r{rep}: {r['cpu_s']:.2f} s CPU", flush=True)
            _write(args, instances, configs, runs, rep + 1, started, load0)  # after every repeat round


def _write(args: argparse.Namespace, instances: tuple, configs: dict, runs: list[dict], repeats: int, started: str,
           load0: str) -> None:  # fmt: skip
    """Write the results of the ``repeats`` finished repeat rounds."""
    load1 = _load()
    rows = []
    for scenario, policy in instances:
        base = {r["repeat"]: r["cpu_s"] for r in runs if (r["scenario"], r["policy"], r["config"]) ==
                (scenario, policy, "ideal")}  # fmt: skip
        base_rounds = next(r["rounds"] for r in runs if (r["scenario"], r["policy"], r["config"]) ==
                           (scenario, policy, "ideal"))  # fmt: skip
        for name in configs:
            rs = [r for r in runs if (r["scenario"], r["policy"], r["config"]) == (scenario, policy, name)]
            placer = statistics.median(r["placer_s"] for r in rs)
            leases = rs[0]["leases"]
            rows.append({
                "scenario": scenario, "policy": policy, "config": name,
                "cpu_s": statistics.median(r["cpu_s"] for r in rs),
                "ratio_to_ideal": statistics.median(r["cpu_s"] / base[r["repeat"]] for r in rs),
                "ms_per_round": statistics.median(1e3 * r["cpu_s"] / r["rounds"] for r in rs),
                "round_ratio": statistics.median((r["cpu_s"] / r["rounds"]) / (base[r["repeat"]] / base_rounds)
                                                 for r in rs),  # fmt: skip
                "placer_s": placer, "us_per_lease": 1e6 * placer / leases if leases else 0.0,
                "rounds": rs[0]["rounds"], "completed": rs[0]["completed"], "mean_jct_h": rs[0]["mean_jct_h"],
                "migrations": rs[0]["migrations"], "migration_lost_h": rs[0]["migration_lost_s"] / 3600.0,
                "spread_lease_rounds": rs[0]["spread_lease_rounds"],
            })  # fmt: skip
    meta = {"started": started, "python": platform.python_version(), "machine": platform.machine(),
            "repeats": repeats, "base_rev": args.base_rev, "load_start": load0, "load_end": load1}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "trace_placement.json").write_text(json.dumps({"meta": meta, "rows": rows, "runs": runs}, indent=1))
    cols = ["scenario", "policy", "config", "cpu_s", "ratio_to_ideal", "ms_per_round", "round_ratio", "placer_s",
            "us_per_lease", "rounds", "completed", "mean_jct_h", "migrations", "migration_lost_h",
            "spread_lease_rounds"]  # fmt: skip
    fmt = {"cpu_s": "{:.2f}", "ratio_to_ideal": "{:.3f}", "ms_per_round": "{:.3f}", "round_ratio": "{:.3f}",
           "placer_s": "{:.3f}", "us_per_lease": "{:.1f}", "mean_jct_h": "{:.3f}", "migration_lost_h": "{:.2f}",
           "spread_lease_rounds": "{:.0f}"}  # fmt: skip
    lines = [
        "# Host placement on trace runs: cost of placement = \"auto\" next to \"ideal\"",
        "",
        f"Run: {started}, CPython {meta['python']} {meta['machine']}, {repeats} interleaved repeat(s), each run in a "
        f"fresh subprocess. Load average (1/5/15 min) {load0} at the start, {load1} at the end; 2 CPUs shared "
        "with other jobs, so compare the ratios (same repeat round), not absolute seconds.",
        "Command: `python benchmarks/bench_trace_placement.py"
        + (f" --repeats {args.repeats}" if args.repeats != 3 and not args.quick else "")
        + (f" --base-rev {args.base_rev}" if args.base_rev else "")
        + (f" --instances {args.instances}" if args.instances else "")
        + (" --quick" if args.quick else "") + "`",
        "",
        "cpu_s: median CPU seconds of `model.run()`; ratio_to_ideal: median over repeats of cpu_s / the same "
        "repeat's `ideal`; ms_per_round and round_ratio: the same per simulated round (hosts change the JCTs, "
        "hence the number of rounds: spread jobs run at the unconsolidated throughput); placer_s / us_per_lease: "
        "CPU time inside `HostPlacer.place` (the placement step); "
        "migrations and migration_lost_h over the run; spread_lease_rounds: leases that spanned hosts, summed over "
        "rounds. Hosts of 4 GPUs, one rack; `auto` resolves to first fit (`naive`) for these policies, `oef` is "
        "best fit.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in rows:
        lines.append("| " + " | ".join(fmt.get(c, "{}").format(r[c]) for c in cols) + " |")
    (RESULTS / "trace_placement.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
