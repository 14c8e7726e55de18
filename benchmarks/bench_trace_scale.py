"""Speed and scale of trace runs (issue #24): whole-process CPU against Gavel's own simulator, a
generated 100,000-job trace, and the CPU of ``marketsim --help``.

1. **Against Gavel** (only when a Gavel checkout and its Python are given): the packaged 1,301-job
   Gavel trace (``gavel_trace``: 12 + 12 + 12 GPUs, 360 s rounds, Gavel's 1,920 s re-solve
   interval) under ``gavel-max-min-perf``, and Gavel's unmodified simulator
   (``scripts/drivers/simulate_scheduler_with_trace.py -p max_min_fairness_perf -c 12:12:12
   --seed 0 --time_per_iteration 360``, its default ECOS solver) on the same file, alternated
   back to back (ours, Gavel, ours, Gavel, ...) in one run. Each side is one fresh process; its CPU
   (user + system, ``os.wait4``) includes interpreter start and imports. Ours is a driver doing what
   Gavel's driver does (load, simulate, print the mean JCT: ``benchmarks/bench_trace_scale.py
   --driver``); the full ``marketsim run`` (which also writes Parquet, a plot and a report) is
   listed too. Without Gavel, ours is measured alone and the file says so. ``oef-noncoop`` (no
   Gavel counterpart) is listed beside it.
2. **Scale**: Gavel-style generated traces (``generator = "gavel"``: Poisson arrivals, single-GPU
   jobs, Gavel's durations) of 1,000, 10,000 and 100,000 jobs on 336 + 336 + 336 = 1,008 GPUs at
   ``--rate`` jobs per hour (default 30: about 70% of what the cluster can serve when every type
   takes random jobs, 42 jobs/h; the active-job count stays flat over the run, so the queue is
   stable), each policy to completion in its own process: CPU and wall seconds, peak RSS. Rows of
   sizes or policies not run this time are kept from the previous file (each row has its loads).
3. ``marketsim --help``: CPU of the whole process (median of 5).

Usage::

    python benchmarks/bench_trace_scale.py [--gavel-dir DIR --gavel-python PY] [--repeats 3]
        [--sizes 1000,10000,100000] [--policies gavel-max-min-perf,maxmin] [--rate 30] [--skip-scale]

``--gavel-dir`` is Gavel's ``scheduler/`` folder (with its gRPC stubs built), ``--gavel-python``
the Python of a venv holding Gavel's dependencies (``tests/data/gavel_sim_jcts.README.md`` lists
them); the environment variables ``GAVEL_DIR`` and ``GAVEL_PYTHON`` do the same. Writes
``benchmarks/results/trace_scale.md`` and ``trace_scale.json`` with the machine's load average
(2 CPUs shared with other jobs: wall seconds are pessimistic, CPU seconds less so).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
TRACE = ROOT / "market" / "data" / "gavel_trace_seed1.trace"
GPUS_SCALE = 336


def _commit() -> str:
    """This tree's git commit (with ``+uncommitted changes`` when the work tree differs from it)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" +uncommitted changes" if dirty else "")


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f}/{b:.2f}/{c:.2f}"


def _child(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` to completion; its stdout, CPU seconds (user + sys), wall seconds, peak RSS (MB)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[:4]}... exited {p.returncode}: {text[-500:]}")
    return {"stdout": text, "cpu_s": ru.ru_utime + ru.ru_stime, "wall_s": wall, "rss_mb": ru.ru_maxrss / 1024}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# -- the driver (what Gavel's driver does: load, simulate, print the mean JCT) ------------------------
def driver(spec: str) -> None:
    """``--driver JSON``: run one trace simulation and print one JSON line (mean JCT, rounds, ...)."""
    import numpy as np

    from scenarios.loader import load_scenario, parse_scenario

    a = json.loads(spec)
    if a.get("scenario"):
        scen = load_scenario(a["scenario"])
    else:
        gpus = int(a["gpus"])
        scen = parse_scenario(
            {"name": "generated", "policies": [a["policy"]], "replications": 1,
             "cluster": {"gpu_types": ["k80", "p100", "v100"], "gpus": [gpus, gpus, gpus]},
             "workload": {"generator": "gavel", "jobs": int(a["jobs"]), "jobs_per_hour": float(a["rate"]),
                          "max_rounds": 10_000_000}},
            "generated",
        )  # fmt: skip
    model = scen.build_model(a["policy"], "truthful", int(a.get("seed", scen.seed)))
    model.progress = False
    eng = model.auctioneer.trace
    active: list[int] = []
    step = eng.step

    def counting(m: Any) -> Any:
        res = step(m)
        active.append(res.active_jobs)
        return res

    eng.step = counting
    model.run()
    jct = model.completions()["jct_s"].to_numpy()
    act = np.asarray(active, dtype=float)
    tenths = [float(x.mean()) for x in np.array_split(act, 10)] if act.size >= 10 else []
    print(json.dumps({
        "jobs": int(eng.n), "completed": int(jct.size), "mean_jct_s": float(jct.mean()), "rounds": int(eng.rounds),
        "steps": int(model.steps), "solves": int(eng.solves), "cap_reached": bool(model.cap_reached),
        "simulated_days": float(eng.now) / 86400.0, "active_jobs_mean": float(act.mean()) if act.size else 0.0,
        "active_jobs_max": int(act.max()) if act.size else 0, "active_jobs_by_tenth": tenths,
    }))  # fmt: skip


def ours(spec: dict[str, Any]) -> dict[str, Any]:
    got = _child([sys.executable, str(Path(__file__).resolve()), "--driver", json.dumps(spec)], env=_env())
    got.update(json.loads(got.pop("stdout").strip().splitlines()[-1]))
    return got


def ours_cli(policy: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "analysis.frontends.cli", "run", "gavel_trace", "--policies", policy, "--out", tmp,
               "--quiet"]  # fmt: skip
        got = _child(cmd, cwd=ROOT, env=_env())
    got.pop("stdout")
    return got


def gavel(gdir: Path, gpy: str) -> dict[str, Any]:
    cmd = [gpy, "scripts/drivers/simulate_scheduler_with_trace.py", "-t", str(TRACE), "-p", "max_min_fairness_perf",
           "--throughputs_file", "simulation_throughputs.json", "-c", "12:12:12", "--seed", "0",
           "--time_per_iteration", "360"]  # fmt: skip
    got = _child(cmd, cwd=gdir)
    m = re.search(r"Average job completion time: ([0-9.]+) seconds", got.pop("stdout"))
    if m is None:
        raise RuntimeError("Gavel printed no average JCT")
    got["mean_jct_s"] = float(m.group(1))
    return got


def gavel_info(gdir: Path, gpy: str) -> dict[str, Any]:
    """What Gavel run: folder, commit (git or GAVEL_COMMIT), its Python and solver package versions."""
    commit = os.environ.get("GAVEL_COMMIT", "")
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", str(gdir), "rev-parse", "HEAD"], capture_output=True, text=True,
                                    check=True).stdout.strip()  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown (not a git checkout; set GAVEL_COMMIT)"
    code = ("import sys, importlib.metadata as m; print(sys.version.split()[0], *[f'{p} {m.version(p)}' "
            "for p in ('cvxpy', 'ecos', 'numpy', 'scipy')], sep='; ')")  # fmt: skip
    try:
        versions = subprocess.run([gpy, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        versions = f"unknown ({exc})"
    return {"dir": str(gdir), "python": gpy, "commit": commit, "versions": versions}


def help_cpu(n: int = 5) -> list[float]:
    cmd = [sys.executable, "-m", "analysis.frontends.cli", "--help"]
    return [_child(cmd, cwd=ROOT, env=_env())["cpu_s"] for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--driver", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--gavel-dir", default=os.environ.get("GAVEL_DIR"), help="Gavel's scheduler/ folder")
    ap.add_argument("--gavel-python", default=os.environ.get("GAVEL_PYTHON"), help="Python with Gavel's dependencies")
    ap.add_argument("--repeats", type=int, default=3, help="back-to-back pairs (ours, Gavel)")
    ap.add_argument("--sizes", default="1000,10000,100000", help="generated trace sizes (jobs)")
    ap.add_argument("--policies", default="gavel-max-min-perf,maxmin", help="policies of the scale runs")
    ap.add_argument("--rate", type=float, default=30.0, help="arrivals per hour of the generated traces")
    ap.add_argument("--skip-scale", action="store_true", help="only the Gavel comparison and --help")
    ap.add_argument("--skip-gavel", action="store_true", help="only the scale runs and --help")
    args = ap.parse_args()
    if args.driver is not None:
        driver(args.driver)
        return 0
    RESULTS.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {
        "run": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "python": f"{platform.python_implementation()} {platform.python_version()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "commit": _commit(),
        "load_start": _load(),
    }
    prev = RESULTS / "trace_scale.json"

    # 1. against Gavel
    if not args.skip_gavel:
        have = bool(args.gavel_dir and args.gavel_python)
        cmp: dict[str, Any] = {"gavel_given": have, "pairs": [], "oef_noncoop": [], "cli": []}
        if have:
            cmp["gavel"] = gavel_info(Path(args.gavel_dir), str(args.gavel_python))
        for i in range(args.repeats):
            pair: dict[str, Any] = {"load_before": _load()}
            pair["ours"] = ours({"scenario": "gavel_trace", "policy": "gavel-max-min-perf"})
            if have:
                pair["gavel"] = gavel(Path(args.gavel_dir), str(args.gavel_python))
                pair["cpu_ratio"] = pair["gavel"]["cpu_s"] / pair["ours"]["cpu_s"]
                pair["jct_rel_diff"] = pair["ours"]["mean_jct_s"] / pair["gavel"]["mean_jct_s"] - 1.0
            pair["load_after"] = _load()
            cmp["pairs"].append(pair)
            print(f"pair {i}: {json.dumps({k: v for k, v in pair.items()}, default=str)[:400]}", flush=True)
        cmp["cli"].append(ours_cli("gavel-max-min-perf"))
        cmp["oef_noncoop"].append(ours({"scenario": "gavel_trace", "policy": "oef-noncoop"}))
        cmp["load"] = f"{out['load_start']} -> {_load()}"
        cmp["commit"] = out["commit"]
        out["gavel"] = cmp

    # 2. scale
    if not args.skip_scale:
        rows = []
        for size in [int(s) for s in args.sizes.split(",") if s]:
            for pol in [p for p in args.policies.split(",") if p]:
                load0 = _load()
                got = ours({"jobs": size, "rate": args.rate, "policy": pol, "gpus": GPUS_SCALE, "seed": 0})
                got.update({"size": size, "policy": pol, "rate": args.rate, "load_start": load0, "load_end": _load()})
                rows.append(got)
                print(json.dumps({k: v for k, v in got.items() if k != "active_jobs_by_tenth"}), flush=True)
                (RESULTS / "trace_scale.partial.json").write_text(json.dumps(rows, indent=1) + "\n")
        out["scale"] = rows
        (RESULTS / "trace_scale.partial.json").unlink(missing_ok=True)

    # 3. --help
    cpus = help_cpu()
    out["help_cpu_s"] = cpus
    out["load_end"] = _load()
    old = json.loads(prev.read_text()) if prev.exists() else {}  # read now: a skipped part keeps its last run
    if "scale" in out and old.get("scale"):  # keep earlier rows of other sizes / policies, measured then
        have = {(r["size"], r["policy"]) for r in out["scale"]}
        out["scale"] = sorted([r for r in old["scale"] if (r["size"], r["policy"]) not in have] + out["scale"],
                              key=lambda r: (r["size"], r["policy"]))  # fmt: skip
    for key in ("gavel", "scale"):
        if key not in out:
            out[key] = old.get(key)
            out[f"{key}_run"] = old.get(f"{key}_run", old.get("run"))
        else:
            out[f"{key}_run"] = out["run"]
    (RESULTS / "trace_scale.json").write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / "trace_scale.md").write_text(render(out))
    print((RESULTS / "trace_scale.md").read_text())
    return 0


def render(out: dict[str, Any]) -> str:
    L = ["# Trace runs: speed against Gavel's simulator, 100k-job scale, CLI start-up", "",
         f"Run: {out['run']}, {out['python']}, {out['cpus']} CPUs shared with other jobs; load average (1/5/15 min) "
         f"{out['load_start']} at the start, {out['load_end']} at the end. Command: "
         "`python benchmarks/bench_trace_scale.py --gavel-dir GAVEL/scheduler --gavel-python GAVEL_VENV/bin/python`.",
         ""]  # fmt: skip
    g = out.get("gavel")
    L += ["## 1. Packaged Gavel trace (1,301 jobs, 12+12+12 GPUs), whole-process CPU", "",
          f"Measured {out.get('gavel_run')} at marketsim commit `{(g or {}).get('commit', 'not recorded')}`; load "
          f"{(g or {}).get('load', '')}. Only this section: `--skip-scale` (it also re-measures section 3, "
          "a few seconds).", ""]  # fmt: skip
    if not g:
        L += ["(not measured in this run)", ""]
    else:
        if g.get("gavel_given"):
            gi = g["gavel"]
            L += [f"Gavel: `{gi['dir']}` at commit `{gi['commit']}`, unmodified; its Python: {gi['versions']}. "
                  "Command: `simulate_scheduler_with_trace.py -p max_min_fairness_perf -c 12:12:12 --seed 0 "
                  "--time_per_iteration 360` (default solver ECOS; its log goes to /dev/null). Pairs run back to "
                  "back, ours first.", ""]  # fmt: skip
            L += ["| pair | ours CPU s | Gavel CPU s | Gavel / ours | ours mean JCT s | Gavel mean JCT s | JCT diff | "
                  "load before -> after |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
            for i, p in enumerate(g["pairs"]):
                L.append(f"| {i} | {p['ours']['cpu_s']:.2f} | {p['gavel']['cpu_s']:.2f} | **{p['cpu_ratio']:.1f}x** | "
                         f"{p['ours']['mean_jct_s']:.1f} | {p['gavel']['mean_jct_s']:.1f} | "
                         f"{100 * p['jct_rel_diff']:+.2f}% | {p['load_before']} -> {p['load_after']} |")  # fmt: skip
            ratios = [p["cpu_ratio"] for p in g["pairs"]]
            diffs = [abs(p["jct_rel_diff"]) for p in g["pairs"]]
            med = statistics.median(ratios)
            verdict = "**met**" if med >= 10 and max(diffs) <= 0.01 else "**not met**"
            L += ["", f"Median CPU ratio Gavel / ours: **{med:.1f}x** (min {min(ratios):.1f}x, "
                  f"max {max(ratios):.1f}x); target >= 10x with mean JCT within 1%: {verdict} (rule: median "
                  "ratio >= 10 and every pair's |JCT diff| <= 1%).", ""]  # fmt: skip
        else:
            L += ["**Gavel was not measured in this run** (no `--gavel-dir` / `--gavel-python`): ours alone.", "",
                  "| run | ours CPU s | ours mean JCT s |", "|---|---|---|"]  # fmt: skip
            for i, p in enumerate(g["pairs"]):
                L.append(f"| {i} | {p['ours']['cpu_s']:.2f} | {p['ours']['mean_jct_s']:.1f} |")
            L.append("")
        o = g["pairs"][0]["ours"]
        L += [f"Ours: {o['rounds']:,} Gavel rounds in {o['steps']:,} model steps (rounds in which nothing could "
              f"change merged), {o['solves']} policy solves, peak RSS {o['rss_mb']:.0f} MB.", ""]  # fmt: skip
        for c in g.get("cli", []):
            L += [f"The full `marketsim run gavel_trace --policies gavel-max-min-perf` (also writes results.parquet, "
                  f"completions.parquet, a JCT CDF plot and report.md): {c['cpu_s']:.2f} s CPU, "
                  f"{c['wall_s']:.1f} s wall.", ""]  # fmt: skip
        for c in g.get("oef_noncoop", []):
            L += [f"`oef-noncoop` on the same trace (no Gavel counterpart): {c['cpu_s']:.2f} s CPU, mean JCT "
                  f"{c['mean_jct_s']:.1f} s, {c['solves']} solves, {c['rounds']:,} rounds in {c['steps']:,} steps.", ""]
    rows = out.get("scale") or []
    L += ["## 2. Generated Gavel-style traces on 336+336+336 = 1,008 GPUs", "", f"Measured {out.get('scale_run')}.", ""]
    if rows:
        L += [f"Arrivals: Poisson, {rows[0]['rate']:g} jobs/hour (about 70% of the 42 jobs/h the cluster serves when "
              "every type takes random jobs: mean run time 60,142 s on V100, 69,707 s on P100, 266,699 s on K80); "
              "one tenant per job, 360 s rounds, 1,920 s re-solve interval, seed 0. Each run is a fresh process; "
              "CPU = user + system of the whole process, peak RSS from the kernel. `active jobs by tenth`: the mean "
              "number of active jobs in each tenth of the run's rounds (flat = a stable queue; the last tenths "
              "drain).", "",
              "| jobs | policy | done | CPU s | wall s | <= 15 min | peak RSS MB | <= 2 GB | rounds | steps | solves | "
              "mean JCT h | active jobs mean (max) | active jobs by tenth | load start -> end |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in rows:
            tenths = ", ".join(f"{x:.0f}" for x in r.get("active_jobs_by_tenth", []))
            L.append(f"| {r['size']:,} | {r['policy']} | {r['completed']:,} | {r['cpu_s']:.1f} | {r['wall_s']:.1f} | "
                     f"{'yes' if max(r['cpu_s'], r['wall_s']) <= 900 else 'no'} | {r['rss_mb']:.0f} | "
                     f"{'yes' if r['rss_mb'] <= 2048 else 'no'} | {r['rounds']:,} | {r['steps']:,} | {r['solves']:,} | "
                     f"{r['mean_jct_s'] / 3600:.2f} | {r['active_jobs_mean']:.0f} ({r['active_jobs_max']}) | "
                     f"{tenths} | "
                     f"{r['load_start']} -> {r['load_end']} |")  # fmt: skip
        L.append("")
        missing = [n for n in (1000, 10000, 100000) if n not in {r["size"] for r in rows}]
        if missing:
            L += [f"**Not measured in this run: {', '.join(f'{n:,}' for n in missing)} jobs** (run "
                  f"`--sizes {','.join(str(n) for n in missing)}`).", ""]  # fmt: skip
    else:
        L += ["(not measured in this run)", ""]
    h = out["help_cpu_s"]
    L += ["## 3. `marketsim --help`", "",
          f"Whole-process CPU (user + system) of `python -m analysis.frontends.cli --help`, 5 runs: median "
          f"**{statistics.median(h):.3f} s** (min {min(h):.3f}, max {max(h):.3f}); target <= 0.3 s. The command "
          "imports only numpy and the parser; Mesa, pandas, scipy and networkx load when a subcommand needs them "
          "(`tests/test_cli.py::test_help_imports_no_heavy_module`).", ""]  # fmt: skip
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
