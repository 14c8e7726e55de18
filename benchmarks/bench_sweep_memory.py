"""Peak memory of sweep consolidation: streaming (ours) vs holding every measurement.

Runs ``sweep_lie_factor`` with ``rounds`` scaled up (more rows per run), then, each in a fresh
process, (a) ``marketsim.analysis.engine.sweep.consolidate`` (streams parts into ``results.parquet``) and (b) loading
all measurements into one DataFrame (what consolidation did before: a floor for it, as it also
concatenated and sorted a copy). Peak RSS from ``resource.getrusage`` of each child.

Usage: ``.venv/bin/python benchmarks/bench_sweep_memory.py [--rounds 8,80]``. Writes
``benchmarks/results/sweep_memory.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

CHILD = """
import resource, sys
from pathlib import Path
out = Path(sys.argv[2])
if sys.argv[1] == "consolidate":
    from marketsim.analysis.engine.sweep import consolidate
    consolidate(out)
else:
    import pandas as pd
    frame = pd.read_parquet(out / "results.parquet")
    frame = frame.sort_values(list(frame.columns[:3]), kind="mergesort")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_mb(mode: str, out: Path) -> float:
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(out)], cwd=ROOT, capture_output=True, text=True,
                         check=True)  # fmt: skip
    return int(res.stdout.strip().splitlines()[-1]) / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", default="8,80")
    args = ap.parse_args()
    rows = []
    text = (ROOT / "scenarios" / "sweep_lie_factor.toml").read_text()
    for r in [int(x) for x in args.rounds.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = Path(tmp) / "s.toml"
            cfg.write_text(text.replace("rounds = [8]", f"rounds = [{r}]"))
            out = Path(tmp) / "out"
            subprocess.run([sys.executable, "-m", "marketsim.analysis.frontends.cli", "sweep", str(cfg), "--executor",
                            "process",
                            "--workers", "2", "--out", str(out), "--quiet"], cwd=ROOT, check=True,
                           capture_output=True)  # fmt: skip
            import pyarrow.parquet as pq

            n = pq.read_metadata(out / "results.parquet").num_rows
            row = {"rounds": r, "rows": n, "consolidate_mb": peak_mb("consolidate", out),
                   "load_all_mb": peak_mb("load", out)}  # fmt: skip
            rows.append(row)
            print(row, flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"machine": platform.platform(), "python": sys.version.split()[0], "rows": rows}
    (RESULTS / "sweep_memory.json").write_text(json.dumps(out, indent=2))
    lines = ["# Sweep consolidation memory", "",
             f"Command: `.venv/bin/python benchmarks/bench_sweep_memory.py --rounds {args.rounds}` "
             f"({out['machine']}, Python {out['python']}). Peak RSS of a fresh process (includes ~250 MB of "
             "imports: numpy, pandas, pyarrow, scipy, Mesa).", "",
             "| rounds per run | measurement rows | consolidate (streaming) MB | load all rows MB |",
             "|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['rounds']} | {r['rows']:,} | {r['consolidate_mb']:.0f} | {r['load_all_mb']:.0f} |")
    (RESULTS / "sweep_memory.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
