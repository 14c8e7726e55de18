"""Verdict markers in the docs, against the committed tables (the verdict twin of benchmarks/figures.py).

A finding in docs/ links to the row or ledger entry that decides it with a marker whose text states the
verdict (syntax and the check: tests/test_docs_verdicts.py):

    [oef:6.2.2-u4-gain = direction only](../benchmarks/results/oef/headlines.csv)
    [eris:welfare-tiresias@p8x1 = not reproduced](../benchmarks/results/eris/headlines_sensitivity.csv)
    [ledger:oef/C1 = holds](../benchmarks/results/claims/oef.json)

After re-running a study or the ledger, ``--check`` lists every marker whose verdict (or ", fragile") the
committed file no longer gives; ``--write`` rewrites them and prints each change: READ THE SENTENCE AROUND
EACH ONE, the prose may state the old verdict in words.

    python benchmarks/docs_verdicts.py --check
    python benchmarks/docs_verdicts.py --write
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "tests"))

from test_docs_verdicts import MARKER, PAGES  # noqa: E402  (one definition of the syntax and the pages)


@cache
def _table(study: str, name: str) -> pd.DataFrame:
    t = pd.read_csv(RESULTS / study / name, keep_default_na=False, na_values=[""])
    if "fragile" in t:
        t["fragile"] = t["fragile"].fillna("").astype(str)
    return t


@cache
def _ledger(paper: str) -> dict[str, str]:
    doc = json.loads((RESULTS / "claims" / f"{paper}.json").read_text(encoding="utf-8"))
    return {c["claim_id"]: c["verdict"] for c in doc["claims"]}


def current(m: re.Match[str]) -> str | None:
    """The verdict text (with ", fragile" where it applies) the committed file gives for marker ``m``."""
    if m["ledger"]:
        return _ledger(m["src"]).get(m["id"])
    if m["panel"] is not None:
        s = _table(m["src"], "headlines_sensitivity.csv")
        row = s[(s["id"] == m["id"]) & (s["panel"] == int(m["panel"])) & (s["x"].astype(float) == float(m["x"]))]
        return None if len(row) != 1 else str(row["verdict"].iloc[0])
    t = _table(m["src"], "headlines.csv").set_index("id")
    if m["id"] not in t.index:
        return None
    r = t.loc[m["id"]]
    return str(r["verdict"]) + (", fragile" if r["fragile"] else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    args = ap.parse_args()
    stale = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        out, last = [], 0
        for m in MARKER.finditer(text):
            want = current(m)
            shown = m["verdict"] + (m["fragile"] or "")
            rel = page.relative_to(ROOT)
            line = text.count("\n", 0, m.start()) + 1
            if want is None:
                print(f"{rel}:{line}: {m.group(0)}: no such row or claim", file=sys.stderr)
                stale += 1
                continue
            if want != shown:
                stale += 1
                print(f"{rel}:{line}: {m['src']}:{m['id']}: shows {shown!r}, the file gives {want!r}")
                out += [text[last : m.start("verdict")], want]
                last = m.end("fragile") if m["fragile"] else m.end("verdict")
        if args.write and out:
            page.write_text("".join(out) + text[last:], encoding="utf-8")
    if args.check:
        return 1 if stale else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
