"""The tables of docs/oef_reproduction.md's Gavel-style panel, from a ``gavel_jct`` run.

Usage: ``.venv/bin/marketsim run gavel_jct --workers 2 --out DIR`` then
``.venv/bin/python benchmarks/gavel_jct_tables.py DIR`` (writes ``benchmarks/results/gavel_jct_tables.md``
and copies the run's ``report.md`` to ``benchmarks/results/gavel_jct_study.md``).

* Mean JCT (hours) per policy and arrival rate, 95% t interval over the seeds (panel 0, truthful).
* Paired ratio of mean JCT to Gavel's (and non-cooperative OEF's to Gandiva_fair's) at 2 jobs per
  hour, 95% percentile bootstrap over the seeds (10,000 resamples of the workloads, seed 0).
* Lying at scale (panel 1): the liars' and the honest jobs' mean JCT lying over truthful on the same
  workloads, paired ratio of means (bootstrap as above) and paired difference in hours (t interval).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ["maxmin", "gavel", "gavel-max-min-perf", "gavel-max-sum-throughput", "oef-noncoop", "oef-coop",
            "gandiva-fair"]  # fmt: skip


def t_interval(v: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% t interval."""
    v = np.asarray(v, dtype=float)
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def ratio_of_means(a: np.ndarray, b: np.ndarray, resamples: int = 10_000) -> tuple[float, float, float]:
    """mean(a) / mean(b) for paired samples, with a 95% percentile bootstrap over the pairs."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    idx = np.random.default_rng(0).integers(0, a.size, (resamples, a.size))
    boot = a[idx].mean(axis=1) / b[idx].mean(axis=1)
    return float(a.mean() / b.mean()), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def tables(df: pd.DataFrame) -> str:
    """The three tables as markdown."""
    p0 = df[(df.panel == 0) & (df.variant == "truthful")]

    def jct(x: float, policy: str) -> np.ndarray:
        return p0[(p0.x == x) & (p0.mechanism == policy)].sort_values("replication").mean_jct_h.to_numpy()

    out = ["## Mean JCT (h), 95% t interval over the seeds", "", "| jobs / hour | " + " | ".join(POLICIES) + " |",
           "|---" * (len(POLICIES) + 1) + "|"]  # fmt: skip
    for x in sorted(p0.x.unique()):
        cells = ["{:.1f} [{:.1f}, {:.1f}]".format(*t_interval(jct(x, p))) for p in POLICIES]
        out.append(f"| {x:g} | " + " | ".join(cells) + " |")
    out += ["", "## Paired ratios of mean JCT at 2 jobs per hour (95% bootstrap)", ""]
    for p in POLICIES:
        out.append("* {} / gavel: {:.3f}x [{:.3f}, {:.3f}]".format(p, *ratio_of_means(jct(2.0, p), jct(2.0, "gavel"))))
    out.append("* oef-noncoop / gandiva-fair: {:.3f}x [{:.3f}, {:.3f}]".format(
        *ratio_of_means(jct(2.0, "oef-noncoop"), jct(2.0, "gandiva-fair"))))  # fmt: skip
    for x in sorted(p0.x.unique()):
        r = jct(x, "oef-coop").mean() / jct(x, "gavel").mean()
        out.append(f"* oef-coop / gavel at {x:g} jobs per hour: {r:.4f}")
    p1 = df[(df.panel == 1) & (df.variant != "truthful")]
    out += ["", "## Lying at scale: lying over truthful, paired", "", "| policy | liars | honest jobs |",
            "|---|---|---|"]  # fmt: skip
    for p in POLICIES:
        d = p1[p1.mechanism == p].sort_values("replication")
        cells = []
        for who in ("liar", "honest"):
            a, b = d[f"{who}_jct_h"].to_numpy(), d[f"{who}_jct_h_truthful"].to_numpy()
            r, (m, lo, hi) = ratio_of_means(a, b), t_interval(a - b)
            cells.append(f"{r[0]:.3f}x [{r[1]:.3f}, {r[2]:.3f}] ({m:+.2f} h [{lo:.2f}, {hi:.2f}])")
        out.append(f"| {p} | {cells[0]} | {cells[1]} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not (Path(args[0]) / "results.parquet").is_file():
        print("usage: gavel_jct_tables.py DIR  (DIR from `marketsim run gavel_jct --out DIR`)", file=sys.stderr)
        return 2
    run = Path(args[0])
    text = f"<!-- `python benchmarks/gavel_jct_tables.py {run}` on a `marketsim run gavel_jct` output -->\n\n"
    text += "# gavel_jct: the tables of docs/oef_reproduction.md\n\n" + tables(pd.read_parquet(run / "results.parquet"))
    results = ROOT / "benchmarks" / "results"
    (results / "gavel_jct_tables.md").write_text(text)
    head = "<!-- `marketsim run gavel_jct --workers 2 --out DIR`, from DIR/report.md; the PNGs stay in DIR -->\n\n"
    (results / "gavel_jct_study.md").write_text(head + (run / "report.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
