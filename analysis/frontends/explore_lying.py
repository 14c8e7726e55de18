"""Lie-factor sweep: how much does a tenant gain by inflating its fast-GPU speedups by λ?

Runs a scenario (default ``oef_lying``) with one lying variant per factor λ (tenant t0 reports
``w'^j = λ·w^j`` for every ``j >= 1``), all variants of a replication on the same seed (common
random numbers), and prints the deviator's mean paired gain in TRUE throughput per allocator
(relative, with 95% t intervals). Usage::

    python -m marketsim.analysis.frontends.explore_lying [--scenario oef_lying] [--factors 0.8,1.1,1.3,1.5,2] \\
        [--reps 5] [--workers 1] [--measure act] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from marketsim.agents.strategies import ScaleDims
from marketsim.analysis.engine.run_status import claim, mark_complete, write_atomic
from marketsim.analysis.engine.runner import run_experiment
from marketsim.analysis.engine.stats import gain_summary, paired_gains
from marketsim.analysis.frontends.args import int_arg
from marketsim.analysis.frontends.plots import plot_lying_gain
from marketsim.market.errors import InputError
from marketsim.scenarios.loader import VariantSpec, load_scenario


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; print a policy × λ table; optionally write CSV and a plot to ``--out``."""
    ap = argparse.ArgumentParser(prog="explore_lying", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="oef_lying", help="embedded scenario name or TOML path")
    ap.add_argument("--tenant", default="0", help="deviating tenant (index or id)")
    ap.add_argument("--factors", default="0.8,1.1,1.3,1.5,2.0", help="comma-separated lie factors λ")
    ap.add_argument("--reps", type=int_arg, default=None, help="replications (default: the scenario's)")
    ap.add_argument("--workers", type=int_arg, default=1, help="processes (>1 uses the process executor)")
    ap.add_argument("--measure", choices=["act", "est"], default="act", help="actual or estimated throughput")
    ap.add_argument("--out", default=None, help="directory for lie_sweep.csv and lie_sweep.png")
    args = ap.parse_args(argv)
    try:
        factors = [float(f) for f in args.factors.split(",") if f.strip()]
        if not factors or any(f <= 0 for f in factors):
            raise InputError("--factors", args.factors, "must be positive numbers")
        base = load_scenario(args.scenario)
        tenant: int | str = int(args.tenant) if args.tenant.isdigit() else args.tenant
        k = len(base.cluster.gpu_types)
        variants = tuple(VariantSpec(f"lambda={f:g}", tenant, ScaleDims.fast(f, k)) for f in factors)
        scen = dataclasses.replace(base, variants=variants)
        for v in variants:
            scen.deviator(v.name)
        exp = run_experiment(
            scen,
            replications=args.reps,
            executor="process" if args.workers > 1 else "local",
            workers=args.workers,
            progress=True,
        )
    except (InputError, ValueError) as exc:
        print(f"explore_lying: error: {exc}", file=sys.stderr)
        return 2
    for rid, msg in exp.errors:
        print(f"run {rid} failed: {msg}", file=sys.stderr)
    round_s = scen.cluster.round_seconds  # the length of records without round_s rows
    summary = gain_summary(paired_gains(exp.frame, exp.deviators, args.measure, round_s))
    summary["cell"] = [
        f"{100 * r:+6.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}]"
        for r, lo, hi in zip(summary["rel_gain"], summary["rel_low"], summary["rel_high"], strict=True)
    ]
    table = summary.pivot(index="policy", columns="variant", values="cell")[[v.name for v in variants]]
    print(
        f"\n{scen.name}: deviator {scen.deviator(variants[0].name)}'s {args.measure} throughput while active: "
        f"gain from lying (mean over {exp.replications} paired replications, 95% CI)"
    )
    print(table.to_string())
    if args.out:
        out = Path(args.out)
        meta = {"explore_lying": scen.name, "measure": args.measure}
        try:  # an earlier lie_sweep there is moved aside, never overwritten; meta.json says how this one ended
            with claim(out, meta):
                rows = summary.drop(columns="cell")
                write_atomic(out / "lie_sweep.csv", lambda p: rows.to_csv(p, index=False))  # whole or not at all
                plot_lying_gain(exp.frame, exp.deviators, out / "lie_sweep.png", measure=args.measure,
                                round_seconds=round_s)  # fmt: skip
                if exp.errors:
                    mark_complete(out, failed=len(exp.errors))
        except InputError as exc:  # --out is in use by another live command, or not writable
            print(f"explore_lying: error: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {out / 'lie_sweep.csv'} and {out / 'lie_sweep.png'}")
    return 1 if exp.errors else 0


if __name__ == "__main__":
    sys.exit(main())
