"""The claims ledger's verdicts as committed files: the entries docs/findings.md and docs/papers/*.md cite.

For each paper (default: every paper with registered claims) runs ``marketsim claims --paper P`` at
the default size and seed (the same ``marketsim.market.audit.claims.run_claims`` call) and writes
``benchmarks/results/claims/<paper>.json``: one record per claim with the fields that do not depend
on the machine (claim id, statement, verdict, effect size, instances, violations, seed, size) and,
under ``"run"``, the machine's load average, the CPU seconds, the commit and the wall time (under
load: not an idle-machine figure). A finding in the docs carries a marker
``<!-- verdict: ledger:<paper>/<claim> = <verdict> -->`` that ``tests/test_docs_verdicts.py``
compares with these files. One command rewrites every file:

    python benchmarks/claims_ledger.py            # all papers (a few minutes on 2 cores)
    python benchmarks/claims_ledger.py --paper oef
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "results" / "claims"
#: the machine-independent fields of a ledger record
FIELDS = ("claim_id", "statement", "verdict", "label", "kind", "effect_size", "effect", "n_instances", "violations",
          "seed", "size", "reason")  # fmt: skip


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def write_ledger(paper: str, *, size: str = "small", seed: int = 0, out: Path = OUT) -> Path:
    """Run the ledger of ``paper`` and write ``out/<paper>.json`` (see the module docstring)."""
    from marketsim.market.audit.claims import run_claims, to_records

    load0, cpu0, t0 = os.getloadavg(), _cpu(), time.perf_counter()
    records = to_records(run_claims(paper, size=size, seed=seed))
    wall, cpu, load1 = time.perf_counter() - t0, _cpu() - cpu0, os.getloadavg()
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                                timeout=10).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit = ""
    doc = {
        "paper": paper,
        "command": f"marketsim claims --paper {paper} --size {size} --seed {seed} --json",
        "claims": [{k: r.get(k) for k in FIELDS} for r in records],
        "run": {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_avg_start": [round(v, 2) for v in load0],
                "load_avg_end": [round(v, 2) for v in load1], "loaded": max(load0[0], load1[0]) > (os.cpu_count() or 1),
                "commit": commit, "python": platform.python_version()},  # fmt: skip
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{paper}.json"
    path.write_text(json.dumps(doc, indent=1, default=float) + "\n", encoding="utf-8")
    return path


def main() -> int:
    from marketsim.market.audit.claims import papers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", action="append", help="a paper key (repeatable); default: every paper")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    for paper in args.paper or papers():
        if paper not in papers():
            print(f"--paper {paper}: no registered claims; known: {papers()}", file=sys.stderr)
            return 2
        path = write_ledger(paper, out=args.out)
        doc = json.loads(path.read_text(encoding="utf-8"))
        tally: dict[str, int] = {}
        for c in doc["claims"]:
            tally[c["verdict"]] = tally.get(c["verdict"], 0) + 1
        print(f"{paper}: {tally} in {doc['run']['wall_s']} s (load {doc['run']['load_avg_start'][0]}) -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
