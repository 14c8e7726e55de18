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
   (:class:`agents.strategies.ScaleDims`). For a lie, the engine's own per-round program is solved
   (:meth:`agents.trace_rounds.TraceRounds._solve` on ``A``: one row per (tenant, job type, GPU
   count) class, the VC's rows at the reported throughputs, the others truthful) and the VC's TRUE
   utility is its estimated throughput, ``sum_j x_j . T_j / unit_j`` over its active jobs (the
   engine's ``est``, slowest-GPU equivalents). :func:`market.audit.search.audit` searches the two
   factors in [0.25, 4] (grid, joint Latin-hypercube samples, Nelder-Mead refinement; default
   :class:`~market.audit.search.AuditConfig`).
3. **One lie for the whole trace.** Every snapshot's witness (best lie) is scored on every
   snapshot; the chosen misreport is the witness with the largest mean relative gain over the
   snapshots, rounded to 3 significant digits and scored again.

Usage: ``python benchmarks/philly_full_lie.py [--days 25,35,...] [--tenant 6214e9]``; writes
``benchmarks/results/philly_full_lie.json`` and ``.md`` (load average, commit, seconds).
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

from market.audit.search import AuditConfig, audit  # noqa: E402
from market.audit.target import BaseTarget, Dimension  # noqa: E402

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
    from scenarios.loader import load_scenario

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


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", default="25,35,45,55,65,75,85,95")
    ap.add_argument("--tenant", default="6214e9")
    ap.add_argument("--policy", default="oef-noncoop")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    load0 = os.getloadavg()
    (model, eng), snaps = snapshots([float(x) for x in args.days.split(",")], args.policy, args.tenant)
    t_run = time.process_time() - t0
    m = np.asarray(model.m_avail(), dtype=np.int64)
    names = tuple(model.gpu_names)
    targets, rows = [], []
    for s in snaps:
        if not s["dev"].any():
            continue
        tg = VCTarget(eng=eng, A=s["A"], m=m, dev=s["dev"], names=names, vc=args.tenant)
        res = audit(tg, args.tenant, config=AuditConfig(), rng=0)
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
            truth = tg.evaluate(args.tenant, tg.report(args.tenant, {}))
            lie = tg.evaluate(args.tenant, tg.report(args.tenant, params))
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
    data = {"tenant": args.tenant, "policy": args.policy, "gpu_types": list(names), "gpus": m.tolist(),
            "snapshots": rows, "candidates": scored, "chosen": chosen, "cpu_s_run": round(t_run, 1),
            "cpu_s_total": round(time.process_time() - t0, 1), "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()], "commit": _commit()}  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "philly_full_lie.json").write_text(json.dumps(data, indent=1, default=float) + "\n", encoding="utf-8")
    md = [
        f"# The lying VC's misreport: {args.tenant} under {args.policy} on philly_full",
        "",
        "`python benchmarks/philly_full_lie.py` (method in its docstring): at each snapshot of a truthful run, the "
        "auditor's best per-GPU-type factors on the VC's reported rows (K80 the anchor) and the VC's relative gain "
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
           f"{data['commit'][:10]}.", ""]  # fmt: skip
    (RESULTS / "philly_full_lie.md").write_text("\n".join(md), encoding="utf-8")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
