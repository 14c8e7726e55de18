"""Which misreport does the auditor find profitable for the largest Philly VC under oef-noncoop?
(issue #33: the lying-VC variant ``scenarios/philly_full_lying.toml`` plays the one chosen here.)

How the misreport is picked:

1. **Snapshots.** ``philly_full`` under ``oef-noncoop`` (replication 0 of the scenario seed,
   truthful) is run round by round; at days ``--days`` (default 25, 35, ..., 95) the engine's
   active jobs ``A`` are kept: exactly the jobs a re-solve at that moment would see.
2. **Audit per snapshot.** The deviator is the largest VC by jobs (``6214e9``: 41,226 of the 82,247
   jobs). A lie is a per-GPU-type factor on the VC's reported throughput rows (``p100``, ``v100``;
   the K80 column is the anchor, as the fair-share audit targets normalise by column 0), applied
   to all its jobs: exactly what a trace variant with ``strategy = "scale"`` plays
   (:class:`marketsim.agents.strategies.ScaleDims`). For a lie, the engine's own per-round program is solved
   (:meth:`marketsim.agents.trace_rounds.TraceRounds._solve` on ``A``: one row per (tenant, job type, GPU
   count) class, the VC's rows at the reported throughputs, the others truthful) and the VC's TRUE
   utility is its estimated throughput, ``sum_j x_j . T_j / unit_j`` over its active jobs (the
   engine's ``est``, slowest-GPU equivalents). :func:`marketsim.market.audit.search.audit` searches the two
   factors in [0.25, 4] (grid, joint Latin-hypercube samples, Nelder-Mead refinement; default
   :class:`~marketsim.market.audit.search.AuditConfig`).
3. **One lie for the whole trace.** Every snapshot's witness (best lie) is scored on every
   snapshot; the chosen misreport is the witness with the largest mean relative gain over the
   snapshots, rounded to 3 significant digits and scored again.

4. **Play it** (``--play``). ``scenarios/philly_full_lying.toml`` (its factors must be the chosen
   ones, else this stops) runs through ``marketsim run`` in one fresh process: every replication,
   truthful and lying, at full scale. The VC's TRUE experience, truthful against lying, paired by
   replication (common random numbers), with 95% t intervals over the seeds, as ``marketsim run``'s
   own "Gain from lying" table computes it (:func:`marketsim.analysis.engine.stats.paired_gains` and
   :func:`~marketsim.analysis.engine.stats.gain_summary`): its throughput while active (time integral of
   ``act`` or ``est`` over the records in which it has a job, divided by that time) and the mean JCT
   of its jobs. The command's CPU seconds and peak RSS come from ``os.wait4``.

Usage (one command; rewrites ``benchmarks/results/philly_full_lie.json`` and ``.md``)::

    python benchmarks/philly_full_lie.py --play [--workers 2] [--days 25,35,...] [--tenant 6214e9]

``--play-only`` keeps the committed audit (steps 1-3) and runs step 4 again. Load average, commit
and CPU seconds are written with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT))
from marketsim.analysis.engine.studies import git_commit  # noqa: E402
from marketsim.market.audit.search import AuditConfig, audit  # noqa: E402
from marketsim.market.audit.target import BaseTarget, Dimension  # noqa: E402

DAY = 86400.0


@dataclass
class VCTarget(BaseTarget):
    """One snapshot: the engine ``eng`` (its per-round program), active jobs ``A``, GPUs ``m``, and
    the deviating VC's jobs ``dev`` (bool over ``A``). Dimensions: factors on the VC's reported
    throughput columns ``names[1:]``; utility: the VC's TRUE estimated throughput."""

    eng: Any = None
    A: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    m: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dev: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    names: tuple[str, ...] = ()
    vc: str = ""

    def agents(self) -> list[str]:
        return [self.vc]

    def dimensions(self, agent: Any) -> list[Dimension]:
        return [Dimension(n, "factor", 0.25, 4.0) for n in self.names[1:]]

    def report(self, agent: Any, params: dict[str, float]) -> tuple[float, ...]:
        return (1.0, *(float(params.get(n, 1.0)) for n in self.names[1:]))

    def outcome(self, agent: Any, report: tuple[float, ...]) -> np.ndarray:
        R = self.eng.T[self.A].copy()
        R[self.dev] *= np.asarray(report)[None, :]
        return self.eng._solve(self.A, self.m, reported=R)

    def utility(self, agent: Any, outcome: np.ndarray) -> float:
        Aj = self.A[self.dev]
        return float(((outcome[self.dev] * self.eng.T[Aj]).sum(axis=1) / self.eng.unit[Aj]).sum())


def snapshots(days: list[float], policy: str, tenant: str) -> tuple[Any, list[dict[str, Any]]]:
    """Run ``philly_full`` under ``policy`` (replication 0, truthful) and keep the active jobs at ``days``."""
    from marketsim.scenarios.loader import load_scenario

    scen = load_scenario("philly_full")
    child = np.random.SeedSequence(scen.seed).spawn(1)[0]
    model = scen.build_model(policy, "truthful", child)
    model.progress = False
    eng = model.auctioneer.trace
    names = model.config.trace.tenants
    out = []
    for d in sorted(days):
        while eng.now < d * DAY and not eng.finished:
            model.step()
        A = eng.active.copy()
        out.append({"day": eng.now / DAY, "A": A, "dev": np.asarray(names)[A] == tenant})
    return (model, eng), out


def _wait4(cmd: list[str], cwd: Path) -> tuple[int, float, float, float]:
    """Run ``cmd`` in a fresh process: (exit code, CPU s user + system, peak RSS MB, wall s)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    with (cwd / "stdout").open("wb") as fo, (cwd / "stderr").open("wb") as fe:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=fo, stderr=fe)
        _, status, ru = os.wait4(p.pid, 0)
    return (os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024,
            time.perf_counter() - t0)  # fmt: skip


def play(
    chosen: dict[str, Any] | None, tenant: str, workers: int, scenario: str = "philly_full_lying"
) -> dict[str, Any]:
    """Step 4 (module docstring): ``marketsim run SCENARIO`` and the VC's paired gains (``scenario``: a
    name or a TOML path; a reduced copy makes a quick trial)."""
    import shutil
    import tempfile

    import pandas as pd

    from marketsim.analysis.engine.runner import load_report_frame
    from marketsim.analysis.engine.stats import gain_summary, paired_gains
    from marketsim.scenarios.loader import load_scenario

    scen = load_scenario(scenario)
    (var,) = [v for v in scen.variants if v.name != "truthful"]
    played = {scen.cluster.gpu_types[i]: f for i, f in var.strategy.factors.items()}
    if chosen is None or played != chosen["params"] or var.tenant != tenant:
        raise SystemExit(f"{scenario} plays {var.tenant} {played}, the audit chose {tenant} "
                         f"{None if chosen is None else chosen['params']}: make them agree first")  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="philly_full_lie_"))
    try:
        exe = Path(sys.executable).with_name("marketsim")
        head = [str(exe)] if exe.is_file() else [sys.executable, "-m", "marketsim.analysis.frontends.cli"]
        target = str(Path(scenario).resolve()) if scenario.endswith(".toml") else scenario
        cmd = [*head, "run", target, "--quiet", "--out", str(tmp / "out"), "--workers", str(workers)]
        load0 = os.getloadavg()
        code, cpu, rss, wall = _wait4(cmd, tmp)
        load1 = os.getloadavg()
        if code != 0:
            err = (tmp / "stderr").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
            raise SystemExit(f"marketsim run {scenario} failed (exit {code}): {err}")
        meta = json.loads((tmp / "out" / "meta.json").read_text(encoding="utf-8"))
        devs = dict(meta["deviators"])
        frame = load_report_frame(tmp / "out" / "results.parquet", devs)
        round_s = meta.get("round_seconds")
        comp = pd.read_parquet(tmp / "out" / "completions.parquet")
        summary, pairs = {}, None
        for measure in ("act", "est"):
            pg = paired_gains(frame, devs, measure, round_s)
            g = gain_summary(pg)
            summary[measure] = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
                                for r in g.to_dict("records")]  # fmt: skip
            if measure == "act":
                pairs = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
                         for r in pg.to_dict("records")]  # fmt: skip
        done = comp.groupby(["variant", "replication"]).size()
        return {
            "scenario": scen.name, "policy": list(scen.policies), "replications": scen.replications,
            "seed": scen.seed, "variant": var.name, "tenant": var.tenant, "factors": played,
            "jobs_completed": {f"{v}/{r}": int(n) for (v, r), n in done.items()},
            "gain": summary, "pairs_act": pairs, "cpu_s": round(cpu, 1), "peak_rss_mb": round(rss, 1),
            "wall_s": round(wall, 1), "workers": workers, "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in load1], "commit": git_commit(ROOT, default="unknown"),
        }  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _play_md(pl: dict[str, Any]) -> list[str]:
    """The markdown of step 4."""
    md = ["", f"## Played at full scale: `marketsim run {pl['scenario']}`", "",
          f"{pl['tenant']} reports {pl['factors']} (K80 x1) under {', '.join(pl['policy'])}; {pl['replications']} "
          f"replications (seed {pl['seed']}), each a truthful and a lying run on the same job-type draw. Throughput "
          "while active = the integral of the VC's throughput (slowest-GPU equivalents) over the records in which it "
          "has a job, divided by that time; JCT: mean over its jobs; change % = mean paired difference / mean "
          "truthful value, with the 95% t interval over the seeds.", "",
          "| measure | n | truthful | lying | change % | 95% CI % | seeds it rose | JCT truthful h | JCT lying h | "
          "JCT change % | JCT 95% CI % | seeds it fell |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for measure, rows in pl["gain"].items():
        for g in rows:
            md.append(
                f"| {measure} | {g['n']} | {g['truthful']:.2f} | {g['lying']:.2f} | {100 * g['rel_gain']:+.2f} | "
                f"[{100 * g['rel_low']:+.2f}, {100 * g['rel_high']:+.2f}] | {g['p_gain']:.2f} | "
                f"{g['jct_truthful_s'] / 3600:.2f} | {g['jct_lying_s'] / 3600:.2f} | {100 * g['jct_rel']:+.2f} | "
                f"[{100 * g['jct_rel_low']:+.2f}, {100 * g['jct_rel_high']:+.2f}] | {g['p_jct_gain']:.2f} |"
            )
    md += ["", "Per replication (act): " + "; ".join(
        f"rep {p['replication']}: throughput {p['truthful']:.2f} -> {p['lying']:.2f}, JCT "
        f"{p['jct_truthful_s'] / 3600:.2f} -> {p['jct_lying_s'] / 3600:.2f} h" for p in pl["pairs_act"]),
        "", f"Jobs completed per run: {pl['jobs_completed']}.", "",
        f"CPU: {pl['cpu_s']} s for the whole command ({pl['workers']} worker(s)), peak RSS {pl['peak_rss_mb']:.0f} MB, "
        f"wall {pl['wall_s']} s; load average {pl['load_before']} before, {pl['load_after']} after; commit "
        f"{pl['commit'][:10]}.", ""]  # fmt: skip
    return md


def _audit(days: list[float], tenant: str, policy: str) -> dict[str, Any]:
    """Steps 1-3 (module docstring): the snapshots, the audit per snapshot and the chosen lie."""
    t0 = time.process_time()
    load0 = os.getloadavg()
    (model, eng), snaps = snapshots(days, policy, tenant)
    t_run = time.process_time() - t0
    m = np.asarray(model.m_avail(), dtype=np.int64)
    names = tuple(model.gpu_names)
    targets, rows = [], []
    for s in snaps:
        if not s["dev"].any():
            continue
        tg = VCTarget(eng=eng, A=s["A"], m=m, dev=s["dev"], names=names, vc=tenant)
        res = audit(tg, tenant, config=AuditConfig(), rng=0)
        targets.append(tg)
        rows.append({"day": round(s["day"], 2), "active_jobs": int(s["A"].size), "vc_jobs": int(s["dev"].sum()),
                     "truthful_est": res.truthful_utility, "best_rel_gain": res.relative_gain,
                     "witness": res.witness, "family": res.witness_family, "at_limit": res.at_limit,
                     "evaluations": res.evaluations})  # fmt: skip
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    cands = [r["witness"] for r in rows if isinstance(r["witness"], dict)]

    def score(params: dict[str, float]) -> list[float]:
        out = []
        for tg in targets:
            truth = tg.evaluate(tenant, tg.report(tenant, {}))
            lie = tg.evaluate(tenant, tg.report(tenant, params))
            out.append(lie / truth - 1.0 if truth > 0 else float("nan"))
        return out

    scored = [{"params": c, "rel_gains": score(c)} for c in cands]
    for c in scored:
        c["mean_rel_gain"] = float(np.nanmean(c["rel_gains"]))
    best = max(scored, key=lambda c: c["mean_rel_gain"]) if scored else None
    chosen = None
    if best is not None and best["mean_rel_gain"] > 0:
        p = {k: float(f"{v:.3g}") for k, v in best["params"].items()}
        g = score(p)
        chosen = {"params": p, "rel_gains": g, "mean_rel_gain": float(np.nanmean(g)),
                  "min_rel_gain": float(np.nanmin(g))}  # fmt: skip
    return {"tenant": tenant, "policy": policy, "gpu_types": list(names), "gpus": m.tolist(),
            "snapshots": rows, "candidates": scored, "chosen": chosen, "cpu_s_run": round(t_run, 1),
            "cpu_s_total": round(time.process_time() - t0, 1), "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "commit": git_commit(ROOT, default="unknown")}  # fmt: skip


def render(data: dict[str, Any]) -> str:
    """The markdown results page of :func:`_audit` (and :func:`play` when it ran)."""
    tenant, policy, rows, scored, chosen = (data[k] for k in ("tenant", "policy", "snapshots", "candidates", "chosen"))
    md = [
        f"# The lying VC's misreport: {tenant} under {policy} on philly_full",
        "",
        "`python benchmarks/philly_full_lie.py --play` (method in its docstring): at each snapshot of a truthful run, "
        "the auditor's best per-GPU-type factors on the VC's reported rows (K80 the anchor) and the VC's relative gain "
        "in TRUE estimated throughput at that snapshot.",
        "",
        "| day | active jobs | VC jobs | truthful est | best rel. gain % | witness | family | at limit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        w = r["witness"] if not isinstance(r["witness"], dict) else ", ".join(f"{k} x{v:.3g}" for k, v in
                                                                                r["witness"].items())  # fmt: skip
        md.append(f"| {r['day']:.1f} | {r['active_jobs']:,} | {r['vc_jobs']:,} | {r['truthful_est']:.1f} | "
                  f"{100 * (r['best_rel_gain'] or 0):.2f} | {w} | {r['family']} | {r['at_limit']} |")  # fmt: skip
    md += ["", "Each witness scored on every snapshot (mean relative gain):", ""]
    for c in scored:
        md.append(f"- {c['params']}: mean {100 * c['mean_rel_gain']:+.2f}% "
                  f"(per snapshot: {', '.join(f'{100 * x:+.1f}' for x in c['rel_gains'])})")  # fmt: skip
    if chosen:
        md += ["", f"**Chosen**: {chosen['params']} (mean {100 * chosen['mean_rel_gain']:+.2f}%, smallest "
               f"{100 * chosen['min_rel_gain']:+.2f}% over the snapshots)"]  # fmt: skip
    else:
        md += ["", "**No profitable lie found.**"]
    md += ["", f"CPU: {data['cpu_s_run']} s for the truthful run to the last snapshot, {data['cpu_s_total']} s in "
           f"all; load average {data['load_before']} before, {data['load_after']} after; commit "
           f"{data['commit'][:10]}."]  # fmt: skip
    if data.get("played"):
        md += _play_md(data["played"])
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", default="25,35,45,55,65,75,85,95")
    ap.add_argument("--tenant", default="6214e9")
    ap.add_argument("--policy", default="oef-noncoop")
    ap.add_argument("--play", action="store_true", help="also run scenarios/philly_full_lying.toml (step 4)")
    ap.add_argument("--play-only", action="store_true", help="keep the committed audit, run step 4 only")
    ap.add_argument("--workers", type=int, default=1, help="worker processes of step 4's marketsim run")
    ap.add_argument("--scenario", default="philly_full_lying", help="step 4's scenario (name or TOML path)")
    ap.add_argument("--out", default=str(RESULTS), help="directory of the results files")
    args = ap.parse_args(argv)
    out = Path(args.out)
    path = out / "philly_full_lie.json"
    if args.play_only:
        data = json.loads((RESULTS / "philly_full_lie.json").read_text(encoding="utf-8"))
        if data["tenant"] != args.tenant:
            raise SystemExit(f"{path} audits {data['tenant']}, not {args.tenant}")
    else:
        data = _audit([float(x) for x in args.days.split(",")], args.tenant, args.policy)
        data.pop("played", None)
    if args.play or args.play_only:
        data["played"] = play(data["chosen"], args.tenant, args.workers, args.scenario)
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=float) + "\n", encoding="utf-8")
    md = render(data)
    (out / "philly_full_lie.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
