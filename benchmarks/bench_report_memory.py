"""Peak memory of ``marketsim run`` on a large generated trace, by phase: the runs, writing
results.parquet, and the report (issues #31 and #33: <= 2 GB).

The scenario is the trace_scale one with 64 tenants: ``generator = "gavel"``, N single-GPU jobs at 30
jobs/hour on 336 + 336 + 336 GPUs, 360 s rounds, 1,920 s re-solve interval, policy ``oef-noncoop``,
tenancy 64, the truthful run and a lying run (tenant 0 reports ``fast``, factor 1.3), seed 0, one
replication. Each row is one fresh process running ``marketsim run SCENARIO.toml --reps 1 --quiet
--out TMP`` with a sampler thread (RSS from ``/proc/self/statm`` every 20 ms) and hooks on
``marketsim.analysis.engine.runner.run_experiment`` and ``write_experiment`` that split it into phases:
``start`` (imports, loading the scenario), ``runs`` (the simulations; records spill to Arrow IPC
parts), ``write`` (the parts merged into results.parquet) and ``report`` (everything after: plots,
the trace section, report.md). Per phase: CPU seconds, the RSS at its start and its sampled peak;
for the whole process: CPU (user + system) and the kernel's peak RSS (``os.wait4``).

Each row also records a digest of what the command wrote, without its timings: report.md without the
wall-clock line, runs.csv without the ``seconds`` column, the figures' bytes (the table's digest), and
meta.json without ``wall_seconds`` and the run-status fields (``started_at``, ``ended_at``, ``pid``,
``command``, ``source``; in the .json). Rows of the same N with equal digests wrote the same numbers.

``--baseline-rev REV`` adds rows for the project at git revision REV (its tree exported with
``git archive`` to a temporary folder and put first on ``PYTHONPATH``), e.g. the commit before the
report read its rows in batches (f83c34d); the hooks work on both.

Usage (one command; rewrites ``benchmarks/results/report_memory.md`` and ``report_memory.json``)::

    python benchmarks/bench_report_memory.py [--jobs 20000,100000] [--baseline-rev REV]

Rows not measured this time are kept (each row has its own load, commit and code revision).
``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from provenance import package_versions

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
RSS_TARGET_MB = 2048.0

SCENARIO = """name = "report_memory_{jobs}"
policies = ["oef-noncoop"]
replications = 1
seed = 0

[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [336, 336, 336]
round_seconds = 360.0
reallocation_interval_s = 1920.0

[workload]
generator = "gavel"
jobs = {jobs}
jobs_per_hour = 30.0
max_rounds = 10000000
tenancy = 64

[[variant]]
name = "lying"
tenant = 0
strategy = "fast"
factor = 1.3
"""

#: the child: ``marketsim run`` with a phase-aware RSS sampler; writes its phases as JSON to argv[1]
CHILD = r"""
import json, os, resource, sys, threading, time
PAGE = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20
state = {"phase": "start", "peak": rss(), "start": 0.0, "cpu": 0.0}
phases = []
lock = threading.Lock()
def sampler():
    while True:
        r = rss()
        with lock:
            state["peak"] = max(state["peak"], r)
        time.sleep(0.02)
threading.Thread(target=sampler, daemon=True).start()
def mark(name):
    r, c = rss(), time.process_time()
    with lock:
        phases.append({"phase": state["phase"], "cpu_s": round(c - state["cpu"], 2),
                       "rss_start_mb": round(state["start"], 1), "peak_mb": round(max(state["peak"], r), 1),
                       "kernel_peak_so_far_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
        state.update(phase=name, peak=r, start=r, cpu=c)
import marketsim.analysis.engine.runner as R
run0, write0 = R.run_experiment, R.write_experiment
def run_experiment(*a, **k):
    mark("runs")
    try:
        return run0(*a, **k)
    finally:
        mark("write")
def write_experiment(*a, **k):
    try:
        return write0(*a, **k)
    finally:
        mark("report")
R.run_experiment, R.write_experiment = run_experiment, write_experiment
from marketsim.analysis.frontends.cli import main
code = main(sys.argv[2:])
mark("end")
with open(sys.argv[1], "w") as fh:
    json.dump({"exit": code, "phases": phases}, fh)
sys.exit(code)
"""


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _commit() -> str:
    """The checkout's commit (marked when tracked files differ from it):
    marketsim.analysis.engine.studies.git_commit."""
    sys.path.insert(0, str(ROOT))
    from marketsim.analysis.engine.studies import git_commit

    return git_commit(ROOT, short=True, default="unknown")


def _digest(out: Path) -> dict[str, str]:
    """sha256 (first 12 hex digits) of what ``marketsim run`` wrote, timings removed (module docstring)."""
    import pandas as pd

    def h(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()[:12]

    report = "\n".join(x for x in (out / "report.md").read_text(encoding="utf-8").splitlines()
                       if "wall-clock time of the runs" not in x)  # fmt: skip
    runs = pd.read_csv(out / "runs.csv", keep_default_na=False).drop(columns=["seconds"])
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    for key in ("wall_seconds", "started_at", "ended_at", "pid", "command", "source"):  # timings, run status
        meta.pop(key, None)
    got = {"report.md": h(report.encode()), "runs.csv": h(runs.to_csv(index=False).encode()),
           "meta.json": h(json.dumps(meta, sort_keys=True).encode())}  # fmt: skip
    for png in sorted(out.glob("*.png")):
        got[png.name] = h(png.read_bytes())
    return got


def measure(jobs: int, code: Path, label: str, tmp: Path) -> dict[str, Any]:
    """One ``marketsim run`` of the N-job scenario with the project at ``code`` (module docstring)."""
    work = tmp / f"run_{jobs}"  # one path for every code: meta.json records the trace's path
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    toml = work / "scenario.toml"
    toml.write_text(SCENARIO.format(jobs=jobs), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code)
    phases_file = work / "phases.json"
    cmd = [sys.executable, "-c", CHILD, str(phases_file), "run", str(toml), "--reps", "1", "--quiet",
           "--out", str(work / "out")]  # fmt: skip
    commit = _commit()  # the code the run starts from
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    with open(work / "stderr", "wb") as err:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    code_ = os.waitstatus_to_exitcode(status)
    row: dict[str, Any] = {
        "jobs": jobs, "code": label, "exit": code_, "cpu_s": round(ru.ru_utime + ru.ru_stime, 1),
        "peak_rss_mb": round(ru.ru_maxrss / 1024, 1), "wall_s": round(wall, 1),
        "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in load1],
        "commit": commit,
    }  # fmt: skip
    if code_ != 0 or not phases_file.is_file():
        row["error"] = (work / "stderr").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
        return row
    row["phases"] = json.loads(phases_file.read_text(encoding="utf-8"))["phases"]
    rep = _phase(row, "report")
    row.update(runs_peak_mb=_phase(row, "runs").get("peak_mb"), write_peak_mb=_phase(row, "write").get("peak_mb"),
               report_start_mb=rep.get("rss_start_mb"), report_peak_mb=rep.get("peak_mb"),
               report_adds_mb=round(rep["peak_mb"] - rep["rss_start_mb"], 1) if rep else None,
               report_cpu_s=rep.get("cpu_s"))  # fmt: skip
    row["digest"] = _digest(work / "out")
    return row


def _phase(row: dict[str, Any], name: str) -> dict[str, Any]:
    return next((p for p in row.get("phases", []) if p["phase"] == name), {})


def render(data: dict[str, Any]) -> str:
    """The markdown of the results file."""
    out = [
        "# Peak memory of `marketsim run` on a large generated trace, by phase",
        "",
        "`python benchmarks/bench_report_memory.py` (module docstring: N single-GPU jobs from Gavel's generator, "
        "64 tenants, oef-noncoop, truthful + lying run, one process per row). Phases: runs (simulations; records "
        "spill to Arrow IPC parts), write (parts merged into results.parquet), report (plots, trace section, "
        "report.md). Phase peaks are sampled every 20 ms; the process peak is the kernel's (`os.wait4`). "
        f"Target: <= {RSS_TARGET_MB:.0f} MB for the whole process. Digest: sha256 of report.md and runs.csv "
        "without timings and of the figures: equal digests for the same N = the same numbers (meta.json's digest, "
        "without timings and run status, is in the .json).",
        "",
        "Measured on a 2-CPU machine shared with other jobs: the load average (1/5/15 min) is given per row; CPU "
        "seconds are inflated under load, memory is not.",
        "",
        "| jobs | code | process peak RSS MB | <= 2 GB | runs peak MB | write peak MB | report: RSS at start MB | "
        "report peak MB | report adds MB | report CPU s | CPU s | digest | load before | load after | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(data["rows"], key=lambda r: (r["jobs"], r["code"] != "current", r["code"])):
        if r.get("exit") != 0 or "phases" not in r:
            out.append(f"| {r['jobs']:,} | {r['code']} | FAILED (exit {r.get('exit')}: {r.get('error')}) |"
                       + " |" * 12)  # fmt: skip
            continue
        rep, runs, write = _phase(r, "report"), _phase(r, "runs"), _phase(r, "write")
        numbers = {k: v for k, v in r["digest"].items() if k != "meta.json"}
        dig = hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()[:10]
        out.append(
            f"| {r['jobs']:,} | {r['code']} | {r['peak_rss_mb']:,.0f} | "
            f"{'yes' if r['peak_rss_mb'] <= RSS_TARGET_MB else 'NO'} | {runs.get('peak_mb', float('nan')):,.0f} | "
            f"{write.get('peak_mb', float('nan')):,.0f} | {rep.get('rss_start_mb', float('nan')):,.0f} | "
            f"{rep.get('peak_mb', float('nan')):,.0f} | "
            f"{rep.get('peak_mb', float('nan')) - rep.get('rss_start_mb', float('nan')):,.0f} | "
            f"{rep.get('cpu_s', float('nan')):.1f} | {r['cpu_s']:.1f} | `{dig}` | "
            f"{'/'.join(f'{x:g}' for x in r['load_before'])} | {'/'.join(f'{x:g}' for x in r['load_after'])} | "
            f"{r['commit']} |"
        )  # fmt: skip
    versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    out += ["", "code: `current` = the tree the command ran from; otherwise the git revision measured "
            "(`--baseline-rev`).", "", f"Versions: {versions}; {data['machine']}.", ""]  # fmt: skip
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="20000,100000", help="comma-separated job counts (default 20000,100000)")
    ap.add_argument("--baseline-rev", default=None, help="also measure this git revision (e.g. f83c34d)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.jobs.split(",") if x.strip()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "report_memory.json"
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"rows": []}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="report_memory_") as t:
        tmp = Path(t)
        codes = [("current", ROOT)]
        if args.baseline_rev:
            tree = tmp / "baseline"
            tree.mkdir()
            archive = subprocess.run(["git", "archive", args.baseline_rev], cwd=ROOT, capture_output=True,
                                     check=True).stdout  # fmt: skip
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            codes.append((_git("rev-parse", "--short=10", args.baseline_rev), tree))
        for jobs in sizes:
            for label, code in codes:
                row = measure(jobs, code, label, tmp)
                print(json.dumps({k: v for k, v in row.items() if k != "phases"}), flush=True)
                rows.append(row)
    done = {(r["jobs"], r["code"]) for r in rows}
    data = {
        "rows": [r for r in old.get("rows", []) if (r["jobs"], r["code"]) not in done] + rows,
        "rss_target_mb": RSS_TARGET_MB,
        "versions": package_versions(("numpy", "pandas", "pyarrow", "scipy", "mesa", "highspy")),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (RESULTS / "report_memory.md").write_text(render(data), encoding="utf-8")
    print((RESULTS / "report_memory.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
