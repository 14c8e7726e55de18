"""Rows of docs/gavel_comparison.md against Gavel's stored per-job JCTs (``tests/data``).

Recomputes our side of every comparison whose Gavel outputs the repository stores (Gavel's trace on
4+4+4 GPUs and on 4 V100s, 300 jobs on 12+12+12, its three multi-GPU traces on 8+8+8) and writes
``benchmarks/results/gavel_parity_rows.json`` and ``.md``: per comparison the mean JCTs, their
ratio, the median / 90th-percentile / largest per-job ``|ln(ours / Gavel)|``, the JCTs equal to
Gavel's printed precision (1e-3 s), whether every job completed, and, for the policies Gavel runs
with its per-round GPU-type shuffle, the spread of the per-seed means on both sides. Gavel's side
is read, never re-run (``tests/data/gavel_sim_jcts.README.md`` and ``gavel_multigpu.README.md``
say how it was produced). One command, about a minute of CPU::

    python benchmarks/gavel_parity_rows.py
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.analysis.engine.studies import git_commit  # noqa: E402
from tests import test_gavel_sim_compare as single  # noqa: E402
from tests import test_gavel_sim_multigpu as multi  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "gavel_parity_rows"
SEEDS = tuple(range(5))


def _compare(ours: list[pd.Series], gavel: list[pd.Series]) -> dict[str, float | int | bool]:
    """Figures of ours against Gavel: runs paired in order (one side may be a single run, repeated).

    ``ratio``: mean of our per-run mean JCTs over the mean of Gavel's; the per-job ``|ln ratio|``
    statistics pool every pair's jobs; ``identical``: jobs within 1e-3 s in the first pair."""
    n = max(len(ours), len(gavel))
    ours_runs = ours * n if len(ours) == 1 else ours
    gavel_runs = gavel * n if len(gavel) == 1 else gavel
    lr, complete = [], True
    for o, g in zip(ours_runs, gavel_runs, strict=True):
        complete &= o.index.tolist() == g.index.tolist()
        lr.append(np.abs(np.log(o.reindex(g.index).to_numpy() / g.to_numpy())))
    lr_all = np.concatenate(lr)
    o_means = [float(o.mean()) for o in ours]
    g_means = [float(g.mean()) for g in gavel]
    first = ours_runs[0].reindex(gavel_runs[0].index).to_numpy()
    row: dict[str, float | int | bool] = {
        "n": len(gavel[0]),
        "gavel_mean_s": float(np.mean(g_means)),
        "ours_mean_s": float(np.mean(o_means)),
        "ratio": float(np.mean(o_means) / np.mean(g_means)),
        "median_abs_log": float(np.median(lr_all)),
        "p90_abs_log": float(np.quantile(lr_all, 0.9)),
        "max_abs_log": float(lr_all.max()),
        "identical": int(np.sum(np.abs(first - gavel_runs[0].to_numpy()) <= 1e-3)),
        "all_completed": bool(complete),
        "ours_runs": len(ours),
        "gavel_runs": len(gavel),
    }
    if len(g_means) > 1:
        row["gavel_seed_sd_rel"] = float(np.std(g_means, ddof=1) / np.mean(g_means))
    if len(o_means) > 1:
        row["ours_seed_sd_rel"] = float(np.std(o_means, ddof=1) / np.mean(o_means))
    return row


def _gavel_col(name: str, col: str) -> pd.Series:
    g = pd.read_csv(single.DATA / name, index_col="job_id").sort_index()
    return g[col]


def _ours_single_seeded(policy: str, n: int, gpus: tuple[int, int, int], lease_order: str, seed: int) -> pd.Series:
    """JCTs of the first ``n`` jobs of Gavel's trace on ``gpus`` = (V100, P100, K80), replication seed ``seed``."""
    import dataclasses

    from marketsim.scenarios.loader import load_scenario

    v100, p100, k80 = gpus
    types = [(t, c) for t, c in (("k80", k80), ("p100", p100), ("v100", v100)) if c > 0]
    scen = load_scenario("gavel_trace")
    cl = dataclasses.replace(
        scen.cluster, gpu_types=tuple(t for t, _ in types), gpus=tuple(c for _, c in types), lease_order=lease_order
    )
    wl = dataclasses.replace(scen.workload, trace=dataclasses.replace(scen.workload.trace, max_jobs=n))
    scen = dataclasses.replace(scen, policies=(policy,), cluster=cl, workload=wl)
    model = scen.build_model(policy, "truthful", seed)
    model.run()
    c = model.completions()
    return pd.Series(c["jct_s"].to_numpy(), index=c["job_id"].astype(int)).sort_index()


def rows() -> list[dict]:
    """Every comparison with stored Gavel JCTs, in the order of docs/gavel_comparison.md."""
    out: list[dict] = []

    def add(section: str, trace: str, cluster: str, gavel_policy: str, policy: str, lease_order: str,
            ours: list[pd.Series], gavel: list[pd.Series]) -> None:  # fmt: skip
        out.append({"section": section, "trace": trace, "cluster": cluster, "gavel_policy": gavel_policy,
                    "policy": policy, "lease_order": lease_order, **_compare(ours, gavel)})  # fmt: skip

    # Gavel's trace, first 200 jobs on 4 V100 + 4 P100 + 4 K80 (Gavel seed 0 stored)
    gavel_policies = ("max_min_fairness_perf", "max_sum_throughput_perf", "max_min_fairness")
    g = {p: single._gavel(f"gavel_sim_jcts_{p}_200.csv") for p in gavel_policies}
    pairs = (
        ("max_min_fairness_perf", "gavel-max-min-perf"),
        ("max_min_fairness_perf", "gavel"),
        ("max_sum_throughput_perf", "gavel-max-sum-throughput"),
        ("max_min_fairness", "maxmin"),
    )
    for gp, pol in pairs:
        add("gavel_trace", "gavel_trace", "4:4:4", gp, pol, "fastest", [single._ours(pol, 200, 4, 4, 4)], [g[gp]])
    add(
        "gavel_trace",
        "gavel_trace",
        "4:4:4",
        "max_min_fairness",
        "maxmin",
        "shuffle",
        [_ours_single_seeded("maxmin", 200, (4, 4, 4), "shuffle", s) for s in SEEDS],
        [g["max_min_fairness"]],
    )
    # 300 jobs on Gavel's own 12 + 12 + 12 cluster (Gavel seeds 0-4 stored)
    g300 = [_gavel_col("gavel_sim_jcts_max_min_fairness_300_121212.csv", f"seed{s}") for s in SEEDS]
    for order, seeds in (("fastest", (0,)), ("shuffle", SEEDS)):
        ours = [_ours_single_seeded("maxmin", 300, (12, 12, 12), order, s) for s in seeds]
        add("gavel_trace", "gavel_trace", "12:12:12", "max_min_fairness", "maxmin", order, ours, g300)
    # 100 jobs on 4 V100s against Gavel patched to our documented semantics (HiGHS), per-job program
    import marketsim.agents.trace_rounds as tr

    saved = tr.NATIVE_OPTIONS, tr.TIE_BREAK
    tr.NATIVE_OPTIONS, tr.TIE_BREAK = {}, False
    try:
        aligned = single._ours("gavel-max-min-perf", 100, 4, 0, 0)
    finally:
        tr.NATIVE_OPTIONS, tr.TIE_BREAK = saved
    add(
        "aligned",
        "gavel_trace",
        "4:0:0",
        "max_min_fairness_perf (aligned, HiGHS)",
        "gavel-max-min-perf",
        "fastest",
        [aligned],
        [single._gavel("gavel_sim_jcts_max_min_fairness_perf_100_aligned.csv")],
    )
    # Gavel's three multi-GPU traces on 8 + 8 + 8
    for gp, pol in pairs[0], pairs[2]:
        for trace in multi.TRACES:
            add("multigpu", trace, "8:8:8", gp, pol, "fastest", [multi._ours(trace, pol)], [multi._gavel(trace)[gp]])
    for gp, pol in (("max_min_fairness", "maxmin"), ("isolated", "gavel-isolated")):
        for order in ("shuffle", "fastest"):
            for trace in multi.TRACES:
                gs = [multi._gavel(trace)[f"{gp}_seed{s}"] for s in SEEDS]
                ours = [multi._ours(trace, pol, order, s) for s in (SEEDS if order == "shuffle" else (0,))]
                add("multigpu", trace, "8:8:8", gp, pol, order, ours, gs)
    for trace in multi.TRACES:
        add(
            "multigpu",
            trace,
            "8:8:8",
            "fifo_perf",
            "gavel-fifo",
            "fastest",
            [multi._ours(trace, "gavel-fifo")],
            [multi._gavel(trace)["fifo_perf"]],
        )
    return out


def _md(rows_: list[dict], meta: dict) -> str:
    columns = [
        "section", "trace", "cluster (V:P:K)", "Gavel policy", "ours", "lease order", "N", "Gavel mean JCT (s)",
        "ours (s)", "ratio", "median \\|log ratio\\|", "90th pct", "max", "identical", "all done",
        "runs ours / Gavel", "seed-mean sd Gavel / ours",
    ]  # fmt: skip
    head = "| " + " | ".join(columns) + " |"
    lines = [
        "# Our round engine against Gavel's stored per-job JCTs",
        "",
        f"`{meta['command']}`; commit `{meta['commit']}`; {meta['python']}; load average "
        f"{'/'.join(f'{x:.2f}' for x in meta['load_start'])} -> {'/'.join(f'{x:.2f}' for x in meta['load_end'])}; "
        f"{meta['cpu_s']:.1f} s CPU. Gavel's JCTs are read from `tests/data/` (not re-run). Ratio = our mean JCT / "
        "Gavel's (means of the per-seed means where several seeds ran); the per-job |ln(ours / Gavel)| pools "
        "every seed pair (a single run is paired with each of Gavel's seeds); identical = jobs within 1e-3 s "
        "in the first pair.",
        "",
        head,
        "|" + "---|" * len(columns),
    ]
    for r in rows_:
        sd = (f"{r['gavel_seed_sd_rel']:.2%}" if "gavel_seed_sd_rel" in r else "—") + " / " + \
             (f"{r['ours_seed_sd_rel']:.2%}" if "ours_seed_sd_rel" in r else "—")  # fmt: skip
        lines.append(
            f"| {r['section']} | {r['trace']} | {r['cluster']} | `{r['gavel_policy']}` | `{r['policy']}` | "
            f"{r['lease_order']} | {r['n']} | {r['gavel_mean_s']:,.0f} | {r['ours_mean_s']:,.0f} | {r['ratio']:.4f} | "
            f"{r['median_abs_log']:.3f} | {r['p90_abs_log']:.3f} | {r['max_abs_log']:.2f} | {r['identical']} | "
            f"{'yes' if r['all_completed'] else 'no'} | {r['ours_runs']} / {r['gavel_runs']} | {sd} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    load_start = list(os.getloadavg())
    cpu0 = time.process_time()
    rows_ = rows()
    meta = {
        "command": "python benchmarks/gavel_parity_rows.py",
        "commit": git_commit(ROOT),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "load_start": load_start,
        "load_end": list(os.getloadavg()),
        "cpu_s": time.process_time() - cpu0,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    OUT.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows_}, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(_md(rows_, meta))
    print(OUT.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
