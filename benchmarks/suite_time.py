"""How long the README's test command takes: runs it (or reads the output of a run) and writes
``benchmarks/results/test_suite.json`` (tests passed / failed / skipped / xfailed, seconds pytest
reports, the machine's load and the commit), which README.md reads its figures from.

    python benchmarks/suite_time.py                 # run the default suite (-n 2), record it
    python benchmarks/suite_time.py --slow          # the slow suite (-m slow), recorded beside it
    python benchmarks/suite_time.py --log FILE      # record a finished run's pytest output instead
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from marketsim.analysis.engine.studies import git_commit  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "test_suite.json"
COMMAND = [sys.executable, "-m", "pytest", "-W", "error::FutureWarning", "-n", "2", "-q", "-p", "no:cacheprovider"]


def parse(text: str) -> dict[str, float | int]:
    """The counts and seconds of pytest's last summary line (``1916 passed, 3 xfailed in 519.2s``)."""
    summary = re.compile(r"\d+ (passed|failed).* in [\d.]+s\b")
    lines = [ln for ln in text.splitlines() if summary.search(ln)]
    if not lines:
        raise SystemExit("no pytest summary line ('N passed ... in S s') in the output")
    last = lines[-1]
    kinds = r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)"
    out: dict[str, float | int] = {k: int(n) for n, k in re.findall(kinds, last)}
    out["seconds"] = float(re.search(r"in ([\d.]+)s", last).group(1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slow", action="store_true", help="the slow suite (-m slow) instead of the default one")
    ap.add_argument("--log", type=Path, help="read this pytest output instead of running the suite")
    a = ap.parse_args()
    key = "slow" if a.slow else "default"
    load0 = os.getloadavg()
    if a.log:  # the load of that run is not known here: recorded as None, never as today's load
        text, how = a.log.read_text(encoding="utf-8", errors="replace"), f"parsed from {a.log.name}"
        load0 = None
    else:
        cmd = COMMAND + (["-m", "slow"] if a.slow else [])
        t0 = time.time()
        text = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True).stdout
        how = f"run by this script ({time.time() - t0:.0f} s wall)"
    rec = {**parse(text), "command": "pytest -W error::FutureWarning -n 2" + (" -m slow" if a.slow else ""),
           "how": how, "load_before": None if load0 is None else [round(x, 2) for x in load0],
           "load_after": None if load0 is None else [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
           "commit": git_commit(ROOT, default="unknown"), "date": time.strftime("%Y-%m-%d", time.gmtime())}  # fmt: skip
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    data[key] = rec
    OUT.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(rec, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
