"""Time per learned Bayesian equilibrium on 2 cores, and how close each learned equilibrium is.

Every shipped case of issue #34 item 7 is learned from truthful bidding with the default ES
settings (:func:`marketsim.market.learning.bayesian.learn_bid_functions`: 400 rounds, population 32, batch
16384, ``shape = "auto"``: family, degree, sigma and lr per case by
:func:`marketsim.market.learning.bayesian.auto_settings`), one task per (configuration, seed), seeds 0..4, on a pool of
``--workers`` processes (default 2). Each process runs single-threaded BLAS
(``OPENBLAS_NUM_THREADS=1``): the learner's matrix products are small, and on a loaded 2-core machine
threaded BLAS made it about 3x slower in ad hoc runs.

Per configuration: L2 distance to the BNE (prior-weighted, above the screening value; the largest
over bidder classes) and revenue / BNE revenue − 1, as mean and 95% t interval over the seeds;
seconds per learned equilibrium inside its process (mean), ES rounds per second; and the time to
compute the BNE reference (quadrature, or the asymmetric shooting solver). The whole batch's wall
time divided by the number of tasks is the throughput figure "time per learned equilibrium on
``--workers`` cores".

Every run also keeps its learned function: the Bernstein coefficients (``coef``) and b(v) at 101
equally spaced values on ``[low, high]`` (``bids``). The full run writes them, seed-averaged, to
``benchmarks/results/bayesian_price_of_lying.csv`` (the columns of ``marketsim learn``'s
``price_of_lying.csv``: ``coef`` and ``bids`` as JSON lists, a list per class with bidder classes)
and draws ``docs/bayesian_bids.png`` (learned b(v), seed mean and range, against the BNE) from the
same runs.

Usage: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_bayesian.py [--workers 2] [--seeds 5]``.
Writes ``benchmarks/results/bayesian.json``, ``.md``, ``bayesian_price_of_lying.csv`` and
``docs/bayesian_bids.png`` (with ``--only``: ``bayesian_<tag>.*`` and ``docs/bayesian_bids_<tag>.png``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from provenance import package_versions  # noqa: E402

from marketsim.analysis.engine.stats import t_interval  # noqa: E402
from marketsim.analysis.engine.studies import git_commit  # noqa: E402
from marketsim.market.learning.bayesian import (  # noqa: E402
    expected_revenue,
    exploitability,
    learn_bid_functions,
    resolve_settings,
)
from marketsim.market.learning.bne import bne_reference  # noqa: E402
from marketsim.market.learning.distributions import make_distribution  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"
#: points of the ``bids`` column: b(v) at this many equally spaced values on [low, high]
BID_POINTS = 101
U2 = [{"distribution": "uniform", "high": 1}, {"distribution": "uniform", "high": 2}]
BETA = {"distribution": "beta", "a": 2, "b": 5}
LOGNORMAL = {"distribution": "lognorm", "s": 0.5, "high": 3}
#: label -> (mechanism, n or class sizes, values, options, what the BNE is[, ES settings]); no ES
#: settings = the default family (``shape = "auto"``: :func:`marketsim.market.learning.bayesian.auto_settings`)
CONFIGS: dict[str, tuple] = {
    "first price, U[0,1], n=2": ("first-price", 2, None, {}, "v/2"),
    "first price, U[0,1], n=3": ("first-price", 3, None, {}, "2v/3"),
    "first price, U[0,1], n=4": ("first-price", 4, None, {}, "3v/4"),
    "first price, U[0,1], n=5": ("first-price", 5, None, {}, "4v/5"),
    "first price, F(v)=v^2, n=2": ("first-price", 2, {"distribution": "power", "a": 2}, {}, "2v/3"),
    "first price, Beta(2,5), n=2": ("first-price", 2, BETA, {}, "quadrature"),
    "first price, lognormal(s=0.5) on [0,3], n=2": ("first-price", 2, LOGNORMAL, {}, "quadrature"),
    "all-pay, U[0,1], n=2": ("all-pay", 2, None, {}, "v^2/2"),
    "all-pay, U[0,1], n=3": ("all-pay", 3, None, {}, "2v^3/3"),
    "all-pay, U[0,1], n=4": ("all-pay", 4, None, {}, "3v^4/4"),
    "all-pay, U[0,1], n=5": ("all-pay", 5, None, {}, "4v^5/5"),
    "first price, U[0,1], n=2, reserve 0.3": ("first-price", 2, None, {"reserve": 0.3}, "(v^2+0.09)/(2v), v>=0.3"),
    "first price, U[0,1] vs U[0,2]": ("first-price", [1, 1], U2, {}, "numerical (shooting)"),
}


def _dists(n, values) -> tuple[list, list[int]]:
    if isinstance(n, list):
        return [make_distribution(v) for v in values], list(n)
    return [make_distribution(values)], [n]


def one(label: str, seed: int) -> dict:
    """Learn one configuration with one seed; its distance to the BNE and its timing."""
    mech, n, values, opts, _, *es = CONFIGS[label]
    dists, counts = _dists(n, values)
    t0 = time.perf_counter()
    res = learn_bid_functions(mech, n, values=values, seed=seed, options=opts, **(es[0] if es else {}))
    learn_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    ref = bne_reference(mech, dists, counts, opts)
    bne_s = time.perf_counter() - t1
    l2 = max(b.l2_distance(f, d) for b, f, d in zip(res.bids, ref.bids, dists, strict=True))
    rev = expected_revenue(mech, list(res.bids), counts, values=dists, seed=seed, options=opts)
    t2 = time.perf_counter()
    expl = exploitability(mech, list(res.bids), counts, values=dists, options=opts).value
    expl_s = time.perf_counter() - t2
    # the grid's own error: the exact BNE's exploitability with the same grids (once per configuration)
    floor = exploitability(mech, list(ref.bids), counts, values=dists, options=opts).value if seed == 0 else None
    coef = [b.coef.tolist() for b in res.bids]
    bids = [b(np.linspace(d.low, d.high, BID_POINTS)).tolist() for b, d in zip(res.bids, dists, strict=True)]
    return {"coef": coef, "bids": bids,
            "exploitability": expl, "exploitability_seconds": expl_s, "bne_exploitability": floor,
            "config": label, "seed": seed, "learn_seconds": learn_s, "bne_seconds": bne_s,
            "rounds_per_second": 400 / learn_s, "l2_to_bne": l2, "revenue": rev, "bne_revenue": ref.revenue,
            "revenue_gap": rev / ref.revenue - 1.0}  # fmt: skip


def family(label: str) -> str:
    """The bid-function family and ES step settings of a configuration, e.g.
    ``monotone, degree 4, sigma 0.005, lr 1`` (:func:`marketsim.market.learning.bayesian.resolve_settings`)."""
    mech, n, *_rest = CONFIGS[label]
    es = CONFIGS[label][5] if len(CONFIGS[label]) > 5 else {}
    st = resolve_settings(mech, sum(n) if isinstance(n, list) else n, **es)
    return f"{st['shape']}, degree {st['degree']}, sigma {st['sigma']:g}, lr {st['lr']:g}"


def price_of_lying_table(configs: dict[str, tuple], rows: list[dict]) -> pd.DataFrame:
    """One row per configuration in the columns of ``marketsim learn``'s ``price_of_lying.csv``:
    means and 95% t intervals over seeds, ``coef`` (seed-mean Bernstein coefficients) and ``bids``
    (seed-mean learned b(v) at 101 equally spaced values on [low, high]) as JSON lists, a list per
    class with bidder classes; ``coef_seeds`` / ``bids_seeds`` keep every seed's."""
    out = []
    for label, (mech, n, values, opts, _bne, *_es) in configs.items():
        rs = sorted((r for r in rows if r["config"] == label), key=lambda r: r["seed"])
        dists, counts = _dists(n, values)
        row: dict = {"config": label, "mechanism": mech, "n": int(sum(counts)), "family": family(label),
                     "values": "; ".join(f"{c} x {d.describe()}" if isinstance(n, list) else d.describe()
                                         for d, c in zip(dists, counts, strict=True)),
                     "options": json.dumps(opts), "seeds": len(rs)}  # fmt: skip
        for name in ("l2_to_bne", "exploitability", "revenue", "revenue_gap"):
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = t_interval(np.asarray([r[name] for r in rs]))
        row["bne_exploitability"] = next(r["bne_exploitability"] for r in rs if r["seed"] == 0)
        row["bne_revenue"] = rs[0]["bne_revenue"]
        for key, digits in (("coef", 4), ("bids", 6)):
            mean = [np.mean([r[key][c] for r in rs], axis=0).round(digits).tolist() for c in range(len(dists))]
            row[key] = json.dumps(mean if isinstance(n, list) else mean[0])
            row[f"{key}_seeds"] = json.dumps([[np.round(x, digits).tolist() for x in r[key]] for r in rs])
        out.append(row)
    return pd.DataFrame(out)


#: panels of the figure: title -> configurations drawn in it
PANELS = {
    "first price, U[0,1]": [f"first price, U[0,1], n={n}" for n in (2, 3, 4, 5)],
    "all-pay, U[0,1]": [f"all-pay, U[0,1], n={n}" for n in (2, 3, 4, 5)],
    "first price: F(v)=v^2, Beta(2,5), reserve 0.3, U[0,1] vs U[0,2]": [
        "first price, F(v)=v^2, n=2",
        "first price, Beta(2,5), n=2",
        "first price, U[0,1], n=2, reserve 0.3",
        "first price, U[0,1] vs U[0,2]",
    ],
    "first price: lognormal(s=0.5) on [0,3]": ["first price, lognormal(s=0.5) on [0,3], n=2"],
}


def plot_bids(table: pd.DataFrame, path: Path) -> None:
    """Learned b(v) (seed mean, band = range over seeds, from the table's ``bids_seeds``) against the
    BNE (dashed, same colour), one panel per group of :data:`PANELS` present in ``table``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from marketsim.analysis.frontends.learn_bayesian import PALETTE

    by_label = table.set_index("config")
    panels = {t: [c for c in cs if c in by_label.index] for t, cs in PANELS.items()}
    panels = {t: cs for t, cs in panels.items() if cs} or {"": list(by_label.index)}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 4.0), squeeze=False)
    for ax, (title, labels) in zip(axes[0], panels.items(), strict=True):
        i, top = 0, 0.0
        for label in labels:
            mech, n, values, opts, _bne, *_es = CONFIGS[label]
            dists, counts = _dists(n, values)
            ref = bne_reference(mech, dists, counts, opts)
            seeds = np.asarray(json.loads(by_label.loc[label, "bids_seeds"]))  # seed x class x point
            short = label.replace("first price, ", "").replace("all-pay, ", "").replace("U[0,1], ", "")
            for c, d in enumerate(dists):
                colour = PALETTE[i % len(PALETTE)]
                i += 1
                v = np.linspace(d.low, d.high, BID_POINTS)
                name = short if len(dists) == 1 else f"{short}: class {c}, [{d.low:g}, {d.high:g}]"
                ax.plot(v, seeds[:, c].mean(axis=0), color=colour, lw=1.8, label=f"{name} learned")
                ax.fill_between(v, seeds[:, c].min(axis=0), seeds[:, c].max(axis=0), color=colour, alpha=0.18, lw=0)
                if ref.bids[c] is not None:
                    ax.plot(v, ref.bids[c](v), color=colour, lw=1.2, ls="--", label=f"{name} BNE")
                top = max(top, d.high)
        ax.plot([0, top], [0, top], color="grey", lw=0.6, ls=":", label="truthful")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("value v")
        ax.legend(fontsize=6)
    axes[0, 0].set_ylabel("bid b(v)")
    fig.suptitle("learned b(v) (solid; band = range over seeds) vs BNE (dashed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ci(xs: list[float], pct: bool = False) -> str:
    m, lo, hi = t_interval(np.asarray(xs))
    if pct:
        return f"{m:+.2%} [{lo:+.2%}, {hi:+.2%}]"
    return f"{m:.4f} [{lo:.4f}, {hi:.4f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--only",
        default="",
        help="run only configurations whose label contains this text; "
        "results then go to bayesian_<tag>.md/.json (the full run's files stay)",
    )
    ap.add_argument("--tag", default="subset")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="reuse the runs a stopped invocation with the same --only/--tag left in "
        "benchmarks/results/<stem>.partial.jsonl (every run is appended there as it finishes; the file is "
        "removed when the batch completes); without it that file is discarded",
    )
    args = ap.parse_args()
    configs = {k: v for k, v in CONFIGS.items() if args.only in k}
    stem = "bayesian" if not args.only else f"bayesian_{args.tag}"
    load_before = os.getloadavg()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    tasks = [(label, s) for label in configs for s in range(args.seeds)]
    RESULTS.mkdir(parents=True, exist_ok=True)
    partial = RESULTS / f"{stem}.partial.jsonl"
    done: dict[tuple[str, int], dict] = {}
    if args.resume and partial.exists():
        for line in partial.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:  # the last line of a stopped invocation may be cut short
                continue
            if (r["config"], r["seed"]) in tasks:
                done[(r["config"], r["seed"])] = r
    else:
        partial.unlink(missing_ok=True)
    # last configuration first: the slow and hard cases (asymmetric, reserve, all-pay) finish early
    # in a stopped-and-resumed run; every task is seeded, so the order changes no number
    todo = [t for t in reversed(tasks) if t not in done]
    t0 = time.perf_counter()
    fresh = []
    with ProcessPoolExecutor(args.workers) as pool, partial.open("a", encoding="utf-8") as log:
        for fut in as_completed([pool.submit(one, *t) for t in todo]):
            fresh.append(fut.result())
            log.write(json.dumps(fresh[-1]) + "\n")
            log.flush()
    wall = time.perf_counter() - t0
    order = {t: i for i, t in enumerate(tasks)}
    rows = sorted([*done.values(), *fresh], key=lambda r: order[(r["config"], r["seed"])])
    partial.unlink()
    summary = []
    for label, (mech, _n, _values, _opts, bne, *_es) in configs.items():
        rs = [r for r in rows if r["config"] == label]
        summary.append({"config": label, "mechanism": mech, "bne": bne, "family": family(label), "seeds": len(rs),
                        "l2_to_bne": [r["l2_to_bne"] for r in rs], "revenue_gap": [r["revenue_gap"] for r in rs],
                        "exploitability": [r["exploitability"] for r in rs],
                        "bne_exploitability": next(r["bne_exploitability"] for r in rs if r["seed"] == 0),
                        "exploitability_seconds_mean": float(np.mean([r["exploitability_seconds"] for r in rs])),
                        "bne_revenue": rs[0]["bne_revenue"],
                        "learn_seconds_mean": float(np.mean([r["learn_seconds"] for r in rs])),
                        "rounds_per_second_mean": float(np.mean([r["rounds_per_second"] for r in rs])),
                        "bne_seconds": float(np.mean([r["bne_seconds"] for r in rs]))})  # fmt: skip
    per_run = wall / len(todo) if todo else float("nan")
    versions = package_versions(("numpy", "scipy", "pandas"))
    out = {"commit": git_commit(ROOT, default="unknown"), "versions": versions,
           "workers": args.workers, "seeds": args.seeds, "tasks": len(tasks), "resumed_tasks": len(done),
           "wall_seconds": wall, "seconds_per_equilibrium_on_workers": per_run, "uptime_before": uptime,
           "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "python": platform.python_version(),
           "machine": platform.machine(), "summary": summary, "runs": rows}  # fmt: skip
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    table = price_of_lying_table(configs, rows)
    table.to_csv(RESULTS / f"{stem}_price_of_lying.csv", index=False)
    plot_bids(table, DOCS / ("bayesian_bids.png" if not args.only else f"bayesian_bids_{args.tag}.png"))
    cmd = f" --only '{args.only}' --tag {args.tag}" if args.only else ""
    lines = [
        "# Bayesian auctions: time per learned equilibrium and distance to the BNE",
        "",
        f"`benchmarks/bench_bayesian.py{cmd}`: {len(configs)} configurations x {args.seeds} seeds "
        f"= {len(tasks)} ES runs "
        f"(400 rounds, population 32, batch 16384, from truthful bidding; the default family per row, "
        f'`shape = "auto"` (`marketsim.market.learning.bayesian.auto_settings`): Bernstein polynomial with '
        f'coefficients '
        f"projected onto non-negative non-decreasing "
        f"ones) on {args.workers} processes, single-threaded BLAS per process. Learned functions (`coef`, and "
        f"`bids` = b(v) at {BID_POINTS} equally spaced values on [low, high]): `{stem}_price_of_lying.csv`; "
        f"figure: `docs/{'bayesian_bids' if not args.only else 'bayesian_bids_' + args.tag}.png`.",
        "",
        f"**Time per learned equilibrium on {args.workers} cores: {per_run:.1f} s** "
        f"(batch wall time {wall:.0f} s / {len(todo)} runs"
        + (f"; {len(done)} runs reused from a stopped invocation with --resume" if done else "")
        + ").",
        "",
        f"Commit `{out['commit']}`; {', '.join(f'{k} {v}' for k, v in versions.items())}; {platform.machine()}. "
        f"Machine load: before `{uptime}`; load average after {tuple(round(x, 2) for x in os.getloadavg())} "
        "(seconds rise with the load of the 2 cores).",
        "",
        "Mean and 95% t interval over seeds. `l2_to_bne`: root-mean-square distance of the learned bid to the "
        "BNE bid under the value distribution, over values at or above the screening value (largest over bidder "
        "classes); `revenue_gap`: Monte Carlo revenue of the learned bids / BNE revenue − 1; `exploitability`: "
        "a best response's utility gain against the learned profile as a fraction of the bidder's utility under it "
        "(largest over classes; `marketsim.market.learning.bayesian.exploitability`: exact law of the opponents' top "
        "bid over "
        "4096 value quantiles, 401-bid grid plus 4 local refinements per own value, 201 own values); `BNE "
        "exploitability`: the same measure on the exact BNE, i.e. the grids' own error (not a learning error).",
        "",
        "| configuration | family | BNE b(v) | BNE revenue | l2_to_bne | revenue_gap | exploitability | "
        "BNE exploitability | s per run (in its process) | rounds/s | BNE solve s | exploitability s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(f"| {s['config']} | {s['family']} | {s['bne']} | {s['bne_revenue']:.4f} | {_ci(s['l2_to_bne'])} | "
                     f"{_ci(s['revenue_gap'], pct=True)} | {_ci(s['exploitability'], pct=True)} | "
                     f"{s['bne_exploitability']:.2%} | {s['learn_seconds_mean']:.1f} | "
                     f"{s['rounds_per_second_mean']:.0f} | {s['bne_seconds']:.3f} | "
                     f"{s['exploitability_seconds_mean']:.1f} |")  # fmt: skip
    lines.append("")
    (RESULTS / f"{stem}.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
