"""Re-render a study's verdicts from its committed cells: report.md, headlines*.csv/json, lead.csv.

When the verdict RULES change (analysis/engine/headlines.py) or a study's ``[[headline]]`` tables do,
but not its cells (same panels, seeds and code paths), the committed ``results.parquet`` still holds
every number; this rewrites what is derived from it, exactly as ``marketsim run`` writes it
(``marketsim.analysis.frontends.study_report.write_study``), and keeps ``results.parquet`` and ``meta.json``
byte for byte. The report's first line says it was re-rendered and from which run.

    python benchmarks/render_study.py oef benchmarks/results/oef
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marketsim.analysis.engine.studies import StudyResult, load_study  # noqa: E402
from marketsim.analysis.frontends.study_report import write_study  # noqa: E402

#: the derived files this script rewrites (results.parquet and meta.json are the inputs and stay as they are)
DERIVED = ("report.md", "headlines.csv", "headlines_sensitivity.csv", "headlines_cells.csv", "headlines_summary.json",
           "lead.csv")  # fmt: skip


def render(name: str, folder: Path) -> list[Path]:
    """Rewrite the derived files of study ``name`` in ``folder`` from its results.parquet and meta.json."""
    frame = pd.read_parquet(folder / "results.parquet")
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    study = load_study(name)
    if meta.get("study") != study.name:
        raise SystemExit(f"{folder}/meta.json is study {meta.get('study')!r}, not {study.name!r}")
    res = StudyResult(study, frame, pd.DataFrame(), [], int(meta["replications"]), int(meta["seed"]),
                      str(meta["executor"]), float(meta["seconds"]), meta.get("machine", {}))  # fmt: skip
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_study(res, tmp)
        names = {p.name for p in paths.values()}
        for f in DERIVED:
            target = folder / f
            if f in names:
                text = (Path(tmp) / f).read_text(encoding="utf-8")
                if f == "report.md":
                    text = (f"<!-- re-rendered by `python benchmarks/render_study.py {name} {folder}` from the "
                            "committed results.parquet and meta.json (the cells of the run meta.json describes); "
                            "figures omitted. -->\n" + text)  # fmt: skip
                target.write_text(text, encoding="utf-8")
                written.append(target)
            elif target.exists():
                target.unlink()
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study")
    ap.add_argument("folder", type=Path)
    args = ap.parse_args()
    for p in render(args.study, args.folder):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
