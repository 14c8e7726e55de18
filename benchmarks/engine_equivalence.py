"""Bit-for-bit equivalence of the round engine's results across two commits (an engine speed-up must
not change what is simulated).

For every policy of a few traces (default: the first 4,000 jobs of ``philly_full`` and the packaged
``gavel_trace``), builds the run's model exactly as ``marketsim run`` does (replication 0, the
scenario's first variant), runs it to completion and keeps the completions (job, finish time, JCT,
...) and the tidy records (:meth:`marketsim.agents.model.MarketModel.tidy`). ``--save DIR`` writes them as
Parquet files; ``--compare DIR`` runs again and checks every frame equal to the saved one exactly
(``check_exact``: same rows, same floats), printing one line per run and exiting 1 on a difference.
Also prints each run's CPU seconds, Gavel rounds, Mesa steps and solves.

Usage (before / after a change, e.g. the main checkout and a work tree)::

    python benchmarks/engine_equivalence.py --save /tmp/eq_before      # on the old commit
    python benchmarks/engine_equivalence.py --compare /tmp/eq_before   # on the new one

``--prefix N`` changes the philly_full prefix, ``--policies a,b`` and ``--scenarios x,y`` restrict.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _scenario(name: str, prefix: int, tmp: Path):  # noqa: ANN202 - marketsim.scenarios.model.Scenario
    from marketsim.scenarios.loader import load_scenario

    if name != "philly_full" or prefix <= 0:
        return load_scenario(name)
    text = (ROOT / "scenarios" / "philly_full.toml").read_text(encoding="utf-8")
    trace = (ROOT / "market" / "data" / "philly_full.csv.gz").resolve()
    text = text.replace('trace = "../market/data/philly_full.csv.gz"', f'trace = "{trace}"\nmax_jobs = {prefix}')
    text = text.replace('name = "philly_full"', f'name = "philly_full_{prefix}"')
    path = tmp / f"philly_full_{prefix}.toml"
    path.write_text(text, encoding="utf-8")
    return load_scenario(str(path))


def run_one(scen, policy: str, variant: int = 0):  # noqa: ANN001, ANN201
    """(completions, tidy, stats) of one run of ``policy`` (replication 0, its ``variant``-th variant)."""
    from marketsim.analysis.engine.runner import plan_runs

    spec = [s for s in plan_runs(scen, 1, 0) if s.policy == policy][variant]
    assert spec.variant == scen.variant_names[variant]
    model = spec.scenario.build_model(spec.policy, spec.variant, spec.seed_sequence())
    t0 = time.process_time()
    model.run()
    cpu = time.process_time() - t0
    eng = model.auctioneer.trace
    stats = {"cpu_s": cpu, "rounds": eng.rounds, "steps": model.steps, "solves": eng.solves,
             "solve_s": eng.solve_seconds}  # fmt: skip
    comp = model.completions().reset_index(drop=True)
    return comp, model.tidy(), stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", type=Path)
    g.add_argument("--compare", type=Path)
    ap.add_argument("--scenarios", default="philly_full,gavel_trace")
    ap.add_argument("--prefix", type=int, default=4000, help="philly_full: first N jobs (0 = all)")
    ap.add_argument("--policies", default=None)
    ap.add_argument("--all-variants", action="store_true", help="every variant (truthful, lying...), not the first")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import pandas as pd

    bad = 0
    with tempfile.TemporaryDirectory() as td:
        for name in args.scenarios.split(","):
            scen = _scenario(name.strip(), args.prefix, Path(td))
            pols = [p.strip() for p in args.policies.split(",")] if args.policies else list(scen.policies)
            for pol in pols:
                if pol not in scen.policies:
                    continue
                for vi in range(len(scen.variant_names) if args.all_variants else 1):
                    comp, tidy, st = run_one(scen, pol, vi)
                    tag = f"{scen.name}__{pol}" + (f"__{scen.variant_names[vi]}" if vi else "")
                    stats = " ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in st.items())
                    if args.save is not None:
                        args.save.mkdir(parents=True, exist_ok=True)
                        comp.to_parquet(args.save / f"{tag}__completions.parquet")
                        tidy.to_parquet(args.save / f"{tag}__tidy.parquet")
                        print(f"{tag}: saved {len(comp)} completions, {len(tidy)} records; {stats}", flush=True)
                        continue
                    verdict = []
                    for what, new in (("completions", comp), ("tidy", tidy)):
                        old = pd.read_parquet(args.compare / f"{tag}__{what}.parquet")
                        try:
                            pd.testing.assert_frame_equal(new.reset_index(drop=True), old.reset_index(drop=True),
                                                          check_exact=True, check_dtype=False)  # fmt: skip
                            verdict.append(f"{what} identical ({len(new)})")
                        except AssertionError as e:
                            bad += 1
                            verdict.append(f"{what} DIFFER: {str(e).splitlines()[0:3]}")
                    print(f"{tag}: {'; '.join(verdict)}; {stats}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
