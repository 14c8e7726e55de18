"""Re-run some panels of a study and keep the others from a committed results.parquet.

For a study whose committed panels are unchanged (same TOML, same seeds, same code paths) and a
machine too busy to re-run all of it: the listed ``--panels`` are run (the process executor,
``--workers``), a sample of the kept panels' cells is re-run first and must reproduce the committed
rows exactly (every numeric column but ``seconds``; else the script stops, exit 1), and the merged
frame is written by ``marketsim.analysis.frontends.study_report.write_study`` as ``marketsim run`` writes it. Prints the
wall and CPU seconds (this process and its workers) of the re-run and the machine's load average.

    python benchmarks/rerun_study_panels.py oef --panels 10 11 12 \\
        --keep benchmarks/results/oef/results.parquet --out /tmp/oef_out --workers 2
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marketsim.analysis.engine.runner import make_executor  # noqa: E402
from marketsim.analysis.engine.studies import (  # noqa: E402
    _SORT,
    StudyResult,
    cell_cost,
    execute_cell,
    load_study,
    plan_cells,
)
from marketsim.analysis.frontends.study_report import write_study  # noqa: E402


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _same(new: pd.DataFrame, old: pd.DataFrame) -> bool:
    key = ["variant", "mechanism", "realisation"]
    cols = [c for c in new.columns if c in old.columns and c != "seconds"
            and pd.api.types.is_numeric_dtype(new[c]) and pd.api.types.is_numeric_dtype(old[c])]  # fmt: skip
    a = new.sort_values(key)[cols].to_numpy(float)
    b = old.sort_values(key)[cols].to_numpy(float)
    return a.shape == b.shape and np.array_equal(np.nan_to_num(a, nan=-7.0), np.nan_to_num(b, nan=-7.0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study")
    ap.add_argument("--panels", type=int, nargs="+", required=True)
    ap.add_argument("--keep", type=Path, required=True, help="committed results.parquet for the other panels")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--verify", type=int, default=1, help="cells re-run per kept panel (must match exactly)")
    args = ap.parse_args()
    study = load_study(args.study)
    cells = plan_cells(study)
    old = pd.read_parquet(args.keep)
    old = old[~old["panel"].isin(args.panels)]
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), _cpu()
    for pi in sorted(set(old["panel"])):
        for c in [c for c in cells if c.panel == pi][: args.verify]:
            res = execute_cell(c)
            o = old[(old["panel"] == pi) & (old["replication"] == c.rep) & (old["x"] == float(c.x))]
            if res.error or not _same(pd.DataFrame(res.rows), o):
                print(f"{c.run_id}: the re-run differs from {args.keep}; re-run the whole study", file=sys.stderr)
                return 1
            print(f"verified {c.run_id}: identical to the committed rows", flush=True)
    tv, cv = time.perf_counter() - t0, _cpu() - c0
    todo = [c for c in cells if c.panel in args.panels]
    todo.sort(key=lambda c: -cell_cost(c))  # longest first, as run_study
    ex = make_executor("process", args.workers)
    t1, c1 = time.perf_counter(), _cpu()
    rows, errors = [], []
    for i, res in enumerate(ex.map(execute_cell, todo), 1):
        rows.extend(res.rows)
        if res.error:
            errors.append((res.run_id, res.error))
        if i % 10 == 0:
            print(f"{i}/{len(todo)} cells, {time.perf_counter() - t1:.0f} s", flush=True)
    wall, cpu = time.perf_counter() - t1, _cpu() - c1
    frame = pd.concat([old, pd.DataFrame(rows)], ignore_index=True)
    frame = frame.sort_values(_SORT, kind="stable").reset_index(drop=True)
    res = StudyResult(study, frame, pd.DataFrame(), sorted(errors), study.replications, study.seed, "process", wall)
    write_study(res, args.out)
    by_panel = pd.DataFrame(rows).groupby("panel")["seconds"].sum().round(1).to_dict()
    print(f"verify: {tv:.1f} s wall, {cv:.1f} s CPU; panels {args.panels}: {len(todo)} cells, {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU (this process and its workers); run seconds per panel {by_panel}; "
          f"load average before {load0}, after {os.getloadavg()}; errors {len(errors)}")  # fmt: skip
    return 0 if not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
