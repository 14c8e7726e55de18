"""CPU and peak memory of the ``philly_full`` scenario, one policy at a time, through ``marketsim run``
(issue #33: each policy over the whole 82,247-job trace <= 10 min CPU and <= 2 GB).

Each policy is one fresh process, ``marketsim run philly_full --policies P --reps 1 --quiet --out
TMP`` (loading the trace, the run to completion, writing Parquet, the plots and the report with its
trace section): its CPU seconds (user + system) and peak RSS come from its own ``os.wait4``, under a
small launcher (``provenance.run_measured``: a process started from this one would report this
one's peak RSS when that is the larger), so they cover the whole command and nothing else. Also
recorded per policy: jobs completed (of 82,247), Gavel rounds, policy re-solves, mean and median
JCT (h), makespan (days) and the share of GPU-seconds backfilled and the utilisation (GPU-seconds
used / available over the run's records), read from the run's own files; the machine's load average
before and after; the commit and the versions. ``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment.

Usage (one command; rewrites ``benchmarks/results/philly_full.md`` and ``philly_full.json``)::

    python benchmarks/bench_philly_full.py [--policies maxmin,gavel,...] [--scenario philly_full]

Policies not run this time keep their previous rows (each row has its own load and commit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
from provenance import package_versions, run_measured  # noqa: E402

from marketsim.analysis.engine.studies import git_commit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CPU_TARGET_S = 600.0
RSS_TARGET_MB = 2048.0


def _marketsim() -> list[str]:
    exe = Path(sys.executable).with_name("marketsim")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "marketsim.analysis.frontends.cli"]


def measure(scenario: str, policy: str, commit: str) -> dict[str, Any]:
    """One ``marketsim run`` of ``scenario`` under ``policy`` in a fresh process (module docstring);
    ``commit``: the code's commit, recorded in the row."""
    import pandas as pd

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    tmp = Path(tempfile.mkdtemp(prefix="bench_philly_full_"))
    try:
        out = tmp / "out"
        cmd = [*_marketsim(), "run", scenario, "--policies", policy, "--reps", "1", "--quiet", "--out", str(out)]
        load0 = os.getloadavg()
        with (tmp / "stdout").open("wb") as fo, (tmp / "stderr").open("wb") as fe:
            got = run_measured(cmd, tmp, env, fo, fe)  # the command's own figures (not this process's peak RSS)
        load1 = os.getloadavg()
        code = int(got["code"])
        row: dict[str, Any] = {
            "policy": policy, "exit": code, "cpu_s": round(got["cpu_s"], 1), "wall_s": round(got["wall_s"], 1),
            "peak_rss_mb": round(got["rss_mb"], 1), "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in load1], "commit": commit,
            "when": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        }  # fmt: skip
        if code != 0:
            row["error"] = (tmp / "stderr").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
            return row
        comp = pd.read_parquet(out / "completions.parquet")
        runs = pd.read_csv(out / "runs.csv")
        res = pd.read_parquet(out / "results.parquet", filters=[("tenant", "=", "")],
                              columns=["measure", "value"])  # fmt: skip
        pivot = {m: g["value"].to_numpy() for m, g in res.groupby("measure")}
        used = float((pivot["utilisation"] * pivot["available_gpus"] * pivot["round_s"]).sum())
        row.update({
            "jobs_completed": int(len(comp)), "tenants": int(comp["tenant"].nunique()),
            "rounds": int(runs["rounds"].iloc[0]), "resolves": int(runs["resolves"].iloc[0]),
            "mean_jct_h": round(float(comp["jct_s"].mean()) / 3600, 3),
            "median_jct_h": round(float(comp["jct_s"].median()) / 3600, 3),
            "makespan_d": round(float(comp["completion_s"].max()) / 86400, 2),
            "backfill_share": round(float(pivot["backfill_gpu_s"].sum()) / used, 4) if used > 0 else None,
            "utilisation": round(used / float((pivot["available_gpus"] * pivot["round_s"]).sum()), 4),
            "report_has_tenant_table": "### Per tenant" in (out / "report.md").read_text(encoding="utf-8"),
        })  # fmt: skip
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def render(data: dict[str, Any]) -> str:
    """The markdown results page."""
    rows = data["rows"]
    out = [
        f"# `{data['scenario']}`: CPU and memory per policy through `marketsim run`",
        "",
        "`python benchmarks/bench_philly_full.py` (one fresh `marketsim run "
        f"{data['scenario']} --policies P --reps 1` process per policy: the trace load, the run to completion, "
        "Parquet, plots and the report). CPU = user + system seconds of the process, peak RSS from its own "
        "`os.wait4` (under a small launcher). "
        f"Target: <= {CPU_TARGET_S:.0f} s CPU and <= {RSS_TARGET_MB:.0f} MB per policy. "
        f"Cluster {data['cluster']}; {data['jobs']:,} jobs.",
        "",
        "Measured on a 2-CPU machine shared with other jobs: the load average (1/5/15 min) is given per row. "
        "CPU seconds are inflated under load (cache and frequency contention), wall seconds much more.",
        "",
        "| policy | CPU s | peak RSS MB | within target | jobs done | tenants | rounds | re-solves | mean JCT h | "
        "median JCT h | makespan d | backfill % | util % | wall s | load before | load after | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("exit", 1) != 0:
            out.append(f"| {r['policy']} | {r['cpu_s']} | {r['peak_rss_mb']} | FAILED (exit {r['exit']}: "
                       f"{' '.join(r.get('error', []))}) |" + " |" * 13)  # fmt: skip
            continue
        ok = r["cpu_s"] <= CPU_TARGET_S and r["peak_rss_mb"] <= RSS_TARGET_MB and r["jobs_completed"] == data["jobs"]
        bf = "—" if r.get("backfill_share") is None else f"{100 * r['backfill_share']:.1f}"
        ut = "—" if r.get("utilisation") is None else f"{100 * r['utilisation']:.1f}"
        out.append(
            f"| {r['policy']} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} | {'yes' if ok else 'NO'} | "
            f"{r['jobs_completed']:,} | {r['tenants']} | {r['rounds']:,} | {r['resolves']:,} | {r['mean_jct_h']:.2f} | "
            f"{r['median_jct_h']:.2f} | {r['makespan_d']:.1f} | {bf} | {ut} | {r['wall_s']:.0f} | "
            f"{'/'.join(f'{x:.1f}' for x in r['load_before'])} | {'/'.join(f'{x:.1f}' for x in r['load_after'])} | "
            f"{r['commit'][:10]}{' (uncommitted changes)' if 'uncommitted' in r['commit'] else ''} |"
        )
    out += ["", f"Versions: {', '.join(f'{k} {v}' for k, v in data['versions'].items())}; {data['machine']}.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="philly_full")
    ap.add_argument("--policies", default=None, help="comma-separated (default: every policy of the scenario)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from marketsim.scenarios.loader import load_scenario

    scen = load_scenario(args.scenario)
    policies = [p.strip() for p in args.policies.split(",")] if args.policies else list(scen.policies)
    tw = scen.trace_workload()
    path = RESULTS / f"{scen.name}.json"
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    rows = {r["policy"]: r for r in old.get("rows", []) if r["policy"] in scen.policies}
    # the tree's state before the first row: the results files rewritten after each policy would
    # otherwise read as uncommitted changes in every later row
    commit = git_commit(ROOT, default="unknown")
    for pol in policies:  # the files are rewritten after each policy: an interrupted run keeps what it measured
        print(f"{pol} ...", file=sys.stderr, flush=True)
        rows[pol] = measure(args.scenario, pol, commit)
        print(json.dumps(rows[pol]), file=sys.stderr, flush=True)
        data = {
            "scenario": scen.name,
            "description": scen.description,
            "jobs": len(tw.trace),
            "cluster": " + ".join(f"{m} {t}" for t, m in zip(scen.cluster.gpu_types, scen.cluster.gpus, strict=True)),
            "cpu_target_s": CPU_TARGET_S,
            "rss_target_mb": RSS_TARGET_MB,
            "versions": package_versions(("numpy", "scipy", "pandas", "mesa", "highspy"), missing="-"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "rows": [rows[p] for p in scen.policies if p in rows],
        }
        RESULTS.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        (RESULTS / f"{scen.name}.md").write_text(render(data), encoding="utf-8")
        print(f"wrote {path} and {path.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
