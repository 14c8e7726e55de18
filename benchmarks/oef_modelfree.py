"""OEF's estimated-throughput gain over Gavel and Gandiva_fair, without simulated hardware.

Estimated throughput ``Σ_l w_l · x_l`` (slowest-GPU equivalents; the paper's "estimated") depends
only on the speedup matrix ``W`` and the GPU counts ``m``: no rate model, placement or round loop.
Two analyses, both seeded and both calling the registered policies (``marketsim.market.registry``, no caps:
every tenant can use any number of GPUs, as backlogged tenants can):

1. **Upper bound** (``--part bound``): for each OEF mode (cooperative, non-cooperative), each
   baseline (Gavel, Gandiva_fair), each cluster size n in ``--sizes`` (tenants) and each cap on the
   fastest type's speedup (``--caps``: 2.15 = the paper's largest measured speedup, Fig. 1(a); 30 =
   hardware far more heterogeneous than the paper's), maximise ``est(OEF) / est(baseline)`` over
   speedup matrices on the paper's three GPU types (8 + 8 + 8 GPUs, RTX 3070/3080/3090), speedups
   monotone in the type (``1 <= w^1 <= w^2 <= cap``). A matrix is parametrised by 3 speedup vectors
   (``w^2 = exp(u)``, ``w^1 = exp(u t)``, ``u in [0, log cap]``, ``t in [0, 1]``) and the shares of the
   n tenants holding each (largest-remainder rounding): 9 parameters, so the search is the same
   size at every n. ``scipy.optimize.differential_evolution`` (seeded, ``--restarts`` seeds per
   setting, polish off) searches it; the best witness matrix (the 3 vectors and their counts) is
   recorded. A derivative-free search gives a lower bound on the true supremum, not a proof.
2. **Gavel's measured job types** (``--part gavel``): ``--clusters`` random clusters, n ~ U{4..50}
   tenants, ``m_j ~ U{4..12}`` K80/P100/V100 GPUs, each tenant one of Gavel's 26 single-GPU job types
   that run on all three (``market/data/gavel_throughputs.csv``), uniformly, speedups over the K80.
   Ratios of estimated throughput: mean (95% t-interval), 90th percentile, max, and the witness.

Usage: ``python benchmarks/oef_modelfree.py [--part bound,gavel] [--quick]``. Writes
``benchmarks/results/oef_modelfree.json`` and ``.md`` (the load average is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.analysis.engine.stats import t_interval  # noqa: E402
from marketsim.market.registry import get  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
MODES = ("oef-coop", "oef-noncoop")
BASELINES = ("gavel", "gandiva-fair")
M_PAPER = np.array([8.0, 8.0, 8.0])
GROUPS = 3


def est(policy: str, W: np.ndarray, m: np.ndarray) -> float:
    """Estimated throughput ``Σ_l w_l · x_l`` of ``policy`` on ``W`` (n x k), ``m`` (k,), no caps."""
    X = np.asarray(get(policy, "fair-share").fn(W, m).X, dtype=float)
    return float(np.einsum("lj,lj->", W, X))


def decode(theta: np.ndarray, n: int, cap: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W (n x 3), the 3 group vectors, the group counts) of parameters ``theta`` (module docstring)."""
    u = theta[:GROUPS] * np.log(cap)
    t = theta[GROUPS : 2 * GROUPS]
    vecs = np.stack([np.ones(GROUPS), np.exp(u * t), np.exp(u)], axis=1)
    share = theta[2 * GROUPS :] + 1e-9
    raw = share / share.sum() * n
    counts = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - counts), kind="stable")[: n - counts.sum()]:
        counts[i] += 1
    return np.repeat(vecs, counts, axis=0), vecs, counts


def bound(mode: str, base: str, n: int, cap: float, seed: int, maxiter: int, popsize: int) -> dict[str, Any]:
    """Largest est(mode) / est(base) found for n tenants and speedup cap ``cap`` (one DE run)."""
    from scipy.optimize import differential_evolution

    evals = 0

    def neg_gain(theta: np.ndarray) -> float:
        nonlocal evals
        evals += 1
        W, _, _ = decode(theta, n, cap)
        return -est(mode, W, M_PAPER) / est(base, W, M_PAPER)

    t0 = time.perf_counter()
    res = differential_evolution(neg_gain, [(0.0, 1.0)] * (3 * GROUPS), seed=seed, maxiter=maxiter,
                                 popsize=popsize, polish=False, tol=1e-6)  # fmt: skip
    _, vecs, counts = decode(res.x, n, cap)
    keep = counts > 0
    return {"mode": mode, "baseline": base, "n": n, "cap": cap, "seed": seed, "gain": -float(res.fun),
            "vectors": vecs[keep].round(4).tolist(), "counts": counts[keep].tolist(), "evals": evals,
            "seconds": round(time.perf_counter() - t0, 2)}  # fmt: skip


def gavel_types() -> tuple[list[str], np.ndarray]:
    """Gavel's single-GPU job types that run on K80, P100 and V100, and their speedups over the K80."""
    from marketsim.market.profiles import feasible, load_throughput_table, speedup_vectors

    table = load_throughput_table(ROOT / "market" / "data" / "gavel_throughputs.csv", ["k80", "p100", "v100"])
    vecs = feasible(speedup_vectors(table, 1, "k80"))
    names = sorted(vecs)
    return names, np.array([vecs[k] for k in names], dtype=float)


def gavel_clusters(clusters: int, seed: int) -> dict[str, Any]:
    """The random-cluster comparison on Gavel's measured job types (module docstring, part 2)."""
    names, V = gavel_types()
    rng = np.random.default_rng(seed)
    ratios: dict[str, list[float]] = {f"{m}/{b}": [] for m in MODES for b in (*BASELINES, "maxmin")}
    witness: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for c in range(clusters):
        n = int(rng.integers(4, 51))
        m = rng.integers(4, 13, size=3).astype(float)
        pick = rng.integers(0, len(names), size=n)
        W = V[pick]
        e = {p: est(p, W, m) for p in (*MODES, *BASELINES, "maxmin")}
        for key in ratios:
            a, b = key.split("/")
            r = e[a] / e[b]
            ratios[key].append(r)
            if r >= max(ratios[key]):
                witness[key] = {"cluster": c, "n": n, "m": m.tolist(),
                                "job_types": sorted({names[i] for i in pick}), "ratio": r}  # fmt: skip
    out: dict[str, Any] = {"clusters": clusters, "seed": seed, "job_types": len(names),
                           "seconds": round(time.perf_counter() - t0, 1), "ratios": {}}  # fmt: skip
    for key, vals in ratios.items():
        v = np.array(vals)
        mean, lo, hi = t_interval(v)
        out["ratios"][key] = {"mean": mean, "low": lo, "high": hi, "p10": float(np.percentile(v, 10)),
                              "p90": float(np.percentile(v, 90)), "min": float(v.min()), "max": float(v.max()),
                              "share_above_1": float((v > 1 + 1e-9).mean()), "witness": witness[key]}  # fmt: skip
    return out


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.1f}%"


def markdown(data: dict[str, Any]) -> str:
    """The results page."""
    lines = ["# OEF's estimated-throughput gain, model-free (`benchmarks/oef_modelfree.py`)", "",
             f"Command: `{data['command']}`. Load average at start / end: {data['load_start']} / "
             f"{data['load_end']} (a 2-core machine shared with other jobs). Estimated throughput = Σ w·x of "
             "the policy's allocation on the true speedups (slowest-GPU equivalents): no rate model, placement or "
             "simulated hardware.", ""]  # fmt: skip
    if "bound" in data:
        b = data["bound"]
        lines += ["## Upper bound over speedup matrices (paper's cluster: 8 + 8 + 8 GPUs of three types)", "",
                  f"Differential evolution (scipy, seeded {b['seeds']}, maxiter {b['maxiter']}, "
                  f"popsize {b['popsize']}, "
                  f"9 parameters: 3 monotone speedup vectors and the tenants' shares of them); the best of "
                  f"{len(b['seeds'])} restart(s) per setting. A search finds a lower bound on the supremum.", "",
                  "| OEF mode | baseline | cap on the fastest speedup | n = "
                  + " | n = ".join(str(n) for n in b["sizes"])
                  + " | best witness (vectors x counts) |",
                  "|---|---|---|" + "---|" * len(b["sizes"]) + "---|"]  # fmt: skip
        for mode in MODES:
            for base in BASELINES:
                for cap in b["caps"]:
                    rows = [r for r in b["runs"] if r["mode"] == mode and r["baseline"] == base and r["cap"] == cap]
                    if not rows:
                        continue
                    best = {n: max((r for r in rows if r["n"] == n), key=lambda r: r["gain"]) for n in b["sizes"]}
                    top = max(best.values(), key=lambda r: r["gain"])
                    wit = ", ".join(f"{v} x{c}" for v, c in zip(top["vectors"], top["counts"], strict=True))
                    lines.append(f"| {mode} | {base} | {cap:g} | "
                                 + " | ".join(_pct(best[n]["gain"]) for n in b["sizes"])
                                 + f" | n = {top['n']}: {wit} |")  # fmt: skip
        lines += [""]
    if "gavel" in data:
        g = data["gavel"]
        lines += [f"## Gavel's measured job types: {g['clusters']} random clusters", "",
                  f"n ~ U{{4..50}} tenants, m_j ~ U{{4..12}} K80 / P100 / V100 GPUs, each tenant one of Gavel's "
                  f"{g['job_types']} single-GPU job types uniformly (speedups over the K80; seed {g['seed']}). "
                  "Ratio of estimated throughputs per cluster:", "",
                  "| ratio | mean (95% t-CI) | 10th pct | 90th pct | min | max | share > 1 | max at |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for key, r in g["ratios"].items():
            w = r["witness"]
            lines.append(f"| {key} | {_pct(r['mean'])} [{_pct(r['low'])}, {_pct(r['high'])}] | {_pct(r['p10'])} | "
                         f"{_pct(r['p90'])} | {_pct(r['min'])} | {_pct(r['max'])} | {r['share_above_1']:.0%} | "
                         f"cluster {w['cluster']}: n = {w['n']}, m = {w['m']}, types {', '.join(w['job_types'])} |")
        lines += [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="bound,gavel")
    ap.add_argument("--sizes", default="4,20,50")
    ap.add_argument("--caps", default="2.15,30")
    ap.add_argument("--restarts", type=int, default=2)
    ap.add_argument("--maxiter", type=int, default=12)
    ap.add_argument("--popsize", type=int, default=8)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--baselines", default=",".join(BASELINES))
    ap.add_argument("--clusters", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--quick", action="store_true", help="sizes 4,20, 1 restart, 60 clusters")
    ap.add_argument("--out", default=str(RESULTS / "oef_modelfree"))
    a = ap.parse_args(argv)
    if a.quick:
        a.sizes, a.restarts, a.clusters, a.maxiter = "4,20", 1, 60, 6
    parts = a.part.split(",")
    data: dict[str, Any] = {"command": "python benchmarks/oef_modelfree.py " + " ".join(argv or sys.argv[1:]),
                            "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg())}  # fmt: skip
    if "gavel" in parts:
        data["gavel"] = gavel_clusters(a.clusters, a.seed)
        print(f"gavel part: {data['gavel']['seconds']} s", flush=True)
    if "bound" in parts:
        sizes = [int(s) for s in a.sizes.split(",")]
        caps = [float(c) for c in a.caps.split(",")]
        seeds = [a.seed + i for i in range(a.restarts)]
        runs = []
        for mode in a.modes.split(","):
            for base in a.baselines.split(","):
                for cap in caps:
                    for n in sizes:
                        for s in seeds:
                            runs.append(bound(mode, base, n, cap, s, a.maxiter, a.popsize))
                            r = runs[-1]
                            print(f"{mode}/{base} cap {cap} n {n} seed {s}: {_pct(r['gain'])} ({r['seconds']} s)",
                                  flush=True)  # fmt: skip
        data["bound"] = {"sizes": sizes, "caps": caps, "seeds": seeds, "maxiter": a.maxiter, "popsize": a.popsize,
                         "runs": runs}  # fmt: skip
    data["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(data), encoding="utf-8")
    print(out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
