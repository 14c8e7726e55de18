"""Rows of docs/gavel_comparison.md for ``gavel-max-min-perf`` against Gavel's stored per-job JCTs.

Recomputes ours on the stored Gavel inputs (tests/data: Gavel's trace on 4+4+4 and on 4 V100s,
its three multi-GPU traces on 8+8+8) and prints one markdown row per comparison: mean JCTs, their
ratio, and the median / 90th-percentile per-job |ln(ours / Gavel)|. Needs the repository's tests/
(the stored JCTs); ``python benchmarks/gavel_parity_rows.py``. Takes about a minute.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import test_gavel_sim_compare as single  # noqa: E402
from tests import test_gavel_sim_multigpu as multi  # noqa: E402


def _row(label: str, ours: pd.Series, g: pd.Series) -> str:
    assert ours.index.tolist() == g.index.tolist()
    lr = np.abs(np.log(ours.to_numpy() / g.to_numpy()))
    return (f"| {label} | {len(g)} | {g.mean():,.0f} | {ours.mean():,.0f} | {ours.mean() / g.mean():.3f} | "
            f"{np.median(lr):.3f} | {np.quantile(lr, 0.9):.2g} |")  # fmt: skip


def main() -> None:
    print("| comparison | N | Gavel mean JCT (s) | ours (s) | ratio | median |log ratio| | 90th pct |")
    print("|---|---|---|---|---|---|---|")
    g200 = single._gavel("gavel_sim_jcts_max_min_fairness_perf_200.csv")
    print(_row("Gavel trace, 4:4:4", single._ours("gavel-max-min-perf", 200, 4, 4, 4), g200))
    for trace in multi.TRACES:
        g = multi._gavel(trace)["max_min_fairness_perf"]
        print(_row(f"{trace}, 8:8:8", multi._ours(trace, "gavel-max-min-perf"), g))


if __name__ == "__main__":
    main()
