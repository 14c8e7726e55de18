"""Learning headlines over seeds, with honest certificates (issue 19): every figure is a mean with a
95% t interval over ``--seeds`` seeds (default 5), and every epsilon is measured twice: on a grid
(``eps_grid``: the wide 41-point certificate grid over [0.01, 100]; Hedge: the learning grid's CCE
gap) and by the audit's own search at the reported profile or against the empirical play
(``eps_audit`` / ``cce_eps_audit``: ``marketsim audit``'s ``AuditConfig()``, out to the
validator's limits). A run is "certified" only when the audit-measured epsilon is within the
tolerance (1e-3 for continuous best responses, 1% otherwise).

Instances (one per seed ``s``, drawn from ``SeedSequence(s)``; the learning seed is ``s`` too):

* fair share ``2x2``: 2 tenants x 2 GPU types, ``m = [1, 1]``, TRUE rows ``[1, s_i]`` with the
  fast-GPU speedups ``s_i`` drawn U[1.1, 6] (issue #11's W = [[1, 2], [1, 5]] is one such instance).
  Every tenant learns: best responses on the 13-point grid [0.25, 4] (``learn_oef``'s), continuous
  best responses (20 passes, tol 1e-3), optimistic Hedge (eta 10, stop at a 1%-CCE of the grid
  game, at most 3000 rounds).
* fair share ``4x3``: 4 tenants x 3 GPU types, ``m = [2, 2, 2]``, rows ``[1, a, b]`` with ``a <= b``
  drawn U[1.1, 6]: best responses on the 5-point grid [0.25, 4] per dimension and continuous best
  responses (20 passes, tol 1e-3). No Hedge here: its certificate against the empirical play needs
  one mechanism run per distinct profile of the others per report searched.
  The 20-tenant population of ``bench_learning.py`` is too slow for 5 seeds x 5 allocators in
  this budget (one seed took minutes per allocator and rule).
* auctions ``control``: ``learn_control``'s instance (8 bidders, capacity 4, 8 slots, posted
  price 1) drawn per seed: value-scale best responses on the 9-point grid [0.25, 4] under the
  fixed price and pay-your-bid.
* auctions ``eris``: ``learn_auctions``' edge instance drawn per seed, Eris and AntMan only,
  smaller than the shipped one (4 sites, 6 jobs, 8 slots instead of 8 jobs and 10 slots) so that
  5 seeds fit the budget; the same value-scale best responses.

Usage: ``.venv/bin/python benchmarks/bench_learning_certificates.py [--seeds 5] [--rules ...] [--merge]``
(``--merge`` keeps the other runs of the existing results, e.g. to add ``--rules eris``).
Writes ``benchmarks/results/learning_certificates.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.learn import LearningScenario, load_learning, run_learning
from analysis.stats import t_interval
from market.learning.dynamics import default_grid

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FAIR = ("maxmin", "gavel", "gandiva-fair", "oef-coop", "oef-noncoop")
RULES = {
    "best-response": {"rounds": 50, "options": {}},
    "continuous": {"rounds": 20, "options": {"tol": 1e-3}},
    "hedge": {"rounds": 3000, "options": {"eta": 10.0, "optimistic": True, "tol": 0.01}},
}


AUCTIONS = {"control": ("learn_control", None, {}),
            "eris": ("learn_auctions", ("eris", "antman"), {"R": 4, "I": 6, "T": 8})}  # fmt: skip


def instance(seed: int, size: str = "2x2") -> tuple[list[list[float]], list[float]]:
    """The fair-share instance of ``seed`` and ``size``: TRUE speedups (n, k) and GPUs per type."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    if size == "2x2":
        s = np.sort(rng.uniform(1.1, 6.0, 2))
        return [[1.0, float(s[0])], [1.0, float(s[1])]], [1.0, 1.0]
    W = np.c_[np.ones(4), np.sort(rng.uniform(1.1, 6.0, (4, 2)), axis=1)]
    return W.round(6).tolist(), [2.0, 2.0, 2.0]


def fair_scenario(rule: str, seed: int, size: str) -> LearningScenario:
    W, m = instance(seed, size)
    cfg = RULES[rule]
    grid = default_grid(13 if size == "2x2" else 5, 0.25, 4.0)
    return LearningScenario(f"cert_{rule}", "", "fair-share", rule, FAIR, seed, cfg["rounds"], grid, None,
                            {"W": W, "m": m}, dict(cfg["options"]))  # fmt: skip


def _ci(x: pd.Series) -> str:
    vals = x.to_numpy(dtype=float)
    inf = int(np.isinf(vals).sum())
    mean, lo, hi = t_interval(vals)
    if math.isnan(mean):
        return "—" + (f" ({inf} inf)" if inf else "")
    text = f"{mean:.3g} [{lo:.3g}, {hi:.3g}]" if not math.isnan(lo) else f"{mean:.3g}"
    return text + (f" (+{inf} inf)" if inf else "")


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (family, rule, mechanism): seeds, status counts, certified count and t intervals."""
    out = []
    for (fam, size, rule, mech), g in rows.groupby(["family", "size", "rule", "mechanism"], sort=False):
        r = {"instance": size, "rule": rule, "mechanism": mech, "seeds": len(g),
             "status": ", ".join(f"{k} {v}" for k, v in g["status"].value_counts().items()),
             "certified": f"{int((g['certificate'] == 'certified').sum())}/{len(g)}",
             "eps_grid": _ci(g["eps_grid"]), "eps_audit": _ci(g["eps_audit"]), "eps_abs": _ci(g["eps_abs"]),
             "price_of_lying": _ci(g["price_of_lying"]), "seconds": _ci(g["seconds"])}  # fmt: skip
        if "cce_eps_audit" in g and g["cce_eps_audit"].notna().any() or rule == "hedge":
            r["rounds"] = _ci(g["rounds"])
            r["cce_eps_grid"] = _ci(g["max_regret_rel"])
            r["cce_eps_audit"] = _ci(g["cce_eps_audit"])
            r["cce_certified"] = f"{int((g['cce_certificate'] == 'certified').sum())}/{len(g)}"
        if fam == "auction":
            r["revenue"] = f"{_ci(g['truthful_revenue'])} -> {_ci(g['learned_revenue'])}"
        out.append(r)
    return pd.DataFrame(out)


def _md(frame: pd.DataFrame) -> list[str]:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if isinstance(v, float) and math.isnan(v) else str(v) for v in r) + " |"
              for r in frame.itertuples(index=False)]  # fmt: skip
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--merge", action="store_true", help="keep the other runs of an earlier results JSON")
    default = [f"{r}@2x2" for r in RULES] + ["best-response@4x3", "continuous@4x3", "control", "eris"]
    ap.add_argument("--rules", default=",".join(default), help="RULE@SIZE (2x2, 4x3), control or eris")
    args = ap.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for spec in args.rules.split(","):
        rule, _, size = spec.partition("@")
        for seed in range(args.seeds):
            if rule in AUCTIONS:
                size = rule
                name, mechs, params = AUCTIONS[rule]
                base = load_learning(name)
                inst = {**base.instance, "params": {**base.instance.get("params", {}), **params}}
                sc = LearningScenario(base.name, "", base.family, base.rule, mechs or base.mechanisms, seed,
                                      base.rounds, base.grid, base.learners, inst, base.options)  # fmt: skip
            else:
                sc = fair_scenario(rule, seed, size)
            for mech in sc.mechanisms:
                one = LearningScenario(sc.name, "", sc.family, sc.rule, (mech,), seed, sc.rounds, sc.grid,
                                       sc.learners, sc.instance, sc.options)  # fmt: skip
                t = time.perf_counter()
                _, table = run_learning(one)
                row = table.iloc[0].to_dict()
                row.update({"family": sc.family, "size": size, "rule": sc.rule, "seed": seed,
                            "seconds": time.perf_counter() - t})  # fmt: skip
                if sc.family == "fair-share":
                    row["W"] = json.dumps(sc.instance["W"])
                rows.append(row)
                print({k: row.get(k) for k in ("rule", "mechanism", "seed", "status", "eps_grid", "eps_audit",
                                               "certificate", "cce_eps_audit", "price_of_lying", "seconds")},
                      flush=True)  # fmt: skip
    frame = pd.DataFrame(rows)
    old = RESULTS / "learning_certificates.json"
    if args.merge and old.exists():
        prev = pd.DataFrame(json.loads(old.read_text())["runs"])
        done = set(zip(frame["size"], frame["rule"], frame["mechanism"], frame["seed"], strict=True))
        keep = [k not in done for k in zip(prev["size"], prev["rule"], prev["mechanism"], prev["seed"], strict=True)]
        frame = pd.concat([prev[keep], frame], ignore_index=True)
    summary = summarise(frame)
    RESULTS.mkdir(parents=True, exist_ok=True)
    records = frame.drop(columns=[c for c in ("final_factors",) if c in frame]).to_dict("records")
    info = {"platform": platform.platform(), "python": platform.python_version(), "load": load,
            "seeds": args.seeds, "summary": summary.to_dict("records"),
            "runs": [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in records]}
    (RESULTS / "learning_certificates.json").write_text(json.dumps(info, indent=2) + "\n")
    lines = ["# Learning headlines over seeds, with honest certificates", "",
             f"Command: `.venv/bin/python benchmarks/bench_learning_certificates.py --seeds {args.seeds}` "
             f"({info['platform']}, Python {info['python']}; `uptime` at the start: {load}; other jobs shared the "
             "2 cores, so seconds are pessimistic).", "",
             "Mean [95% t interval] over seeds; `inf` counts relative gains over a zero utility. `eps_abs`: the "
             "larger epsilon in TRUE utility units (throughput; auctions: surplus). `eps_grid`: wide "
             "41-point grid certificate (Hedge: `cce_eps_grid`, the learning grid's CCE gap); `eps_audit` / "
             "`cce_eps_audit`: the audit's own search at the reported (final / most-played) profile / against the "
             "empirical play. `certified`: audit-measured epsilon (and the grid one) within the tolerance (1e-3 "
             "continuous, else 1%). `price_of_lying`: truthful / learned total TRUE throughput (auctions: "
             "welfare) at the reported profile. Instances: `2x2` = 2 tenants, W = [[1, s1], [1, s2]], "
             "s ~ U[1.1, 6] sorted, m = [1, 1], 13-point grid; `4x3` = 4 tenants x 3 GPU types, rows [1, a, b], "
             "a <= b ~ U[1.1, 6], m = [2, 2, 2], 5-point grid per dimension; `control` = `learn_control`'s "
             "instance drawn per seed (8 bidders, capacity 4, 8 slots, posted price 1; 9-point grid); `eris` = "
             "`learn_auctions`' instance drawn per seed with 4 sites, 6 jobs, 8 slots (9-point grid).", ""]  # fmt: skip
    lines += _md(summary)
    lines += ["", "Instances (fair share):", ""]
    lines += [f"* {z}, seed {s}: W = {json.dumps(instance(s, z)[0])}" for z in ("2x2", "4x3")
              for s in range(args.seeds)]  # fmt: skip
    (RESULTS / "learning_certificates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
