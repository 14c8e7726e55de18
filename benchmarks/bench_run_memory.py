"""Memory of one long run: the model's per-round records with compact storage (ours) vs Mesa's
DataCollector holding every round (what the model did before).

Builds the default scenario with jobs that never finish (so every round records all tenants) and,
in a fresh process per (mode, rounds), runs one ``maxmin`` model for ``rounds`` rounds and calls
``tidy()``. Reports the traced Python allocations held after the last round (the run's records)
and at the peak of ``tidy()``, per round, from ``tracemalloc``; the slope between the two round
counts is the growth per round. Mode ``spill`` passes the drained blocks to a sink (what
``marketsim run`` does: they go to Parquet files), ``compact`` keeps them in compact frames
(:attr:`marketsim.agents.model.MarketModel.DRAIN_ROUNDS` = 256, the Python API), ``collector`` keeps every
round in Mesa's DataCollector (the model before this change). The tidy peak of ``spill`` is the
flush of the last block only.

Usage: ``.venv/bin/python benchmarks/bench_run_memory.py [--rounds 500,2000]``. Writes
``benchmarks/results/run_memory.json`` and ``.md``.
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
import json, sys, tracemalloc
from marketsim.scenarios.loader import load_scenario
from marketsim.analysis.engine.runner import plan_runs
sc = load_scenario(sys.argv[1])
spec = plan_runs(sc, 1, 0, ["maxmin"], None)[0]
model = sc.build_model(spec.policy, spec.variant, spec.seed_sequence())
if sys.argv[2] == "collector":
    model.DRAIN_ROUNDS = 10**9
rows = [0]
if sys.argv[2] == "spill":  # what `marketsim run` does: records leave the process as they are drained
    model.sink = lambda chunk: rows.__setitem__(0, rows[0] + len(chunk))
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
model.run(rounds=int(sys.argv[3]))
held = tracemalloc.get_traced_memory()[0] - base
tracemalloc.reset_peak()
if model.sink is not None:
    model.flush()
frame = model.tidy()
peak = tracemalloc.get_traced_memory()[1] - base
print(json.dumps({"held": held, "peak": peak, "rows": len(frame) + rows[0], "rounds": int(model.steps)}))
"""


def measure(cfg: Path, mode: str, rounds: int) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(cfg), mode, str(rounds)], cwd=ROOT, capture_output=True,
                         text=True, check=True)  # fmt: skip
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", default="500,2000")
    args = ap.parse_args()
    r1, r2 = (int(x) for x in args.rounds.split(","))
    text = (ROOT / "scenarios" / "default.toml").read_text()
    text = text.replace("rounds = 24", f"rounds = {r2}")
    text = text.replace("duration_median_s = 1800.0", "duration_median_s = 1e12")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "long.toml"
        cfg.write_text(text.replace('name = "default"', 'name = "long"'))
        for mode in ("spill", "compact", "collector"):
            a, b = measure(cfg, mode, r1), measure(cfg, mode, r2)
            rows.append(
                {
                    "mode": mode,
                    "rounds": [a["rounds"], b["rounds"]],
                    "rows": [a["rows"], b["rows"]],
                    "held_mb": [a["held"] / 1e6, b["held"] / 1e6],
                    "tidy_peak_mb": [a["peak"] / 1e6, b["peak"] / 1e6],
                    "held_kb_per_round": (b["held"] - a["held"]) / 1e3 / (b["rounds"] - a["rounds"]),
                    "tidy_peak_kb_per_round": (b["peak"] - a["peak"]) / 1e3 / (b["rounds"] - a["rounds"]),
                }
            )
    ratio = rows[2]["held_kb_per_round"] / rows[1]["held_kb_per_round"]
    info = {"platform": platform.platform(), "python": platform.python_version(), "rows": rows,
            "held_ratio_collector_over_compact": ratio}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "run_memory.json").write_text(json.dumps(info, indent=2) + "\n")
    lines = [
        "# Memory of one long run: per-round records",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_run_memory.py --rounds {r1},{r2}` ({info['platform']}, "
        f"Python {info['python']}). Default scenario, jobs that never finish (12 tenants record every round), "
        "policy `maxmin`, one run per cell in a fresh process; traced Python allocations (tracemalloc).",
        "",
        "| storage | rounds | tidy rows | records held (MB) | tidy() peak (MB) | held per round (KB) "
        "| tidy peak per round (KB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['mode']} | {r['rounds'][0]} / {r['rounds'][1]} | {r['rows'][0]} / {r['rows'][1]} | "
            f"{r['held_mb'][0]:.2f} / {r['held_mb'][1]:.2f} | "
            f"{r['tidy_peak_mb'][0]:.2f} / {r['tidy_peak_mb'][1]:.2f} | "
            f"{r['held_kb_per_round']:.2f} | {r['tidy_peak_kb_per_round']:.2f} |"
        )
    sp = rows[0]["held_mb"]
    lines += ["", f"Records held per round: Mesa's DataCollector / compact storage = **{ratio:.2f}x**. With the sink "
              f"(`marketsim run`) the records held do not grow with rounds: {sp[0]:.2f} MB after {r1} rounds, "
              f"{sp[1]:.2f} MB after {r2} (at most one block of 256 rounds).", ""]  # fmt: skip
    (RESULTS / "run_memory.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
