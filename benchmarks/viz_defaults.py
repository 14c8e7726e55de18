"""What the live page's default lies do (the figures docs/viz.md quotes), written to a results file.

The fair-share page's default (``default`` under ``oef-noncoop``, tenant 0 inflating its fast-GPU
speedups 2x, seed 0) and the auction page's default (``control_auction`` under ``fixed-price``, job 2
doubling its value, seed 0), stepped exactly as the page steps them (``marketsim.analysis.frontends.viz``
models, no browser): per round the liar's estimated throughput lying and truthful and their paired
difference; for the auction, whether the liar is admitted lying and truthfully, what it pays, its
true value and its paired gain per slot. Deterministic; a few seconds of CPU.

Usage: ``python benchmarks/viz_defaults.py [--steps 4]``; writes ``benchmarks/results/viz_defaults.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from marketsim.analysis.engine.studies import git_commit  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "viz_defaults.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=4, help="fair-share rounds to step (default 4, as docs/viz.md shows)")
    a = ap.parse_args()
    from marketsim.analysis.frontends import viz

    t0 = time.process_time()
    m = viz.PageModel()
    for _ in range(a.steps):
        m.step()
    fair = {
        "scenario": m.scenario_name,
        "mechanism": m.mechanism,
        "liar": m.liar_index,
        "lie_factor": m.lie_factor,
        "seed": m.seed,
        "rounds": [
            {"round": i + 1, "est": h["est"], "twin_est": h["twin_est"], "gain": h["gain"]}
            for i, h in enumerate(m.history)
        ],
    }
    au = viz.AuctionPageModel()
    while au.running:
        au.step()
    liar = au.bidders[au.liar_id]
    twin = au.twin.bidders[au.liar_id]
    auction = {
        "study": au.study_name,
        "mechanism": au.mechanism_name,
        "liar": au.liar_id,
        "lie_factor": au.lie_factor,
        "admitted": bool(liar.decision is not None and liar.decision.admitted),
        "admitted_truthful": bool(twin.decision is not None and twin.decision.admitted),
        "payment": float(liar.payment),
        "true_value": au.true_value(au.liar_id),
        "slots": len(au.history),
        "gains": [h["gain"] for h in au.history],
    }
    out = {
        "command": "python benchmarks/viz_defaults.py" + (f" --steps {a.steps}" if a.steps != 4 else ""),
        "commit": git_commit(ROOT, default="unknown"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load_average": list(os.getloadavg()),
        "cpu_s": time.process_time() - t0,
        "fair_share": fair,
        "auction": auction,
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
