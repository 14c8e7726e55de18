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

Usage: ``.venv/bin/python benchmarks/bench_learning_certificates.py [--seeds 5] [--rules ...]
[--import-log LOG:SPEC,...]``; results are rewritten after every spec, so an interrupted run keeps
what it measured, and ``--import-log`` takes rows from an earlier run's stdout.
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

from marketsim.analysis.engine.stats import t_interval
from marketsim.analysis.frontends.learn import LearningScenario, load_learning, run_learning
from marketsim.market.learning.dynamics import default_grid

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
    for (fam, size, rule, mech), g0 in rows.groupby(["family", "size", "rule", "mechanism"], sort=False):
        g = g0.reindex(columns=sorted(set(g0.columns) | {"eps_abs", "rounds", "max_regret_rel", "cce_eps_audit",
                                                            "cce_certificate", "truthful_revenue",
                                                            "learned_revenue"}))  # fmt: skip
        r = {"instance": size, "rule": rule, "mechanism": mech, "seeds": len(g),
             "status": ", ".join(f"{k} {v}" for k, v in g["status"].value_counts().items()),
             "certified": f"{int((g['certificate'] == 'certified').sum())}/{len(g)}",
             "eps_grid": _ci(g["eps_grid"]), "eps_audit": _ci(g["eps_audit"]), "eps_abs": _ci(g["eps_abs"]),
             "price_of_lying": _ci(g["price_of_lying"]), "seconds": _ci(g["seconds"])}  # fmt: skip
        if rule == "hedge":
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
    default = [f"{r}@2x2" for r in RULES] + ["best-response@4x3", "continuous@4x3", "control", "eris"]
    ap.add_argument("--rules", default=",".join(default), help="RULE@SIZE (2x2, 4x3), control or eris")
    ap.add_argument("--name", default="learning_certificates", help="results file stem in benchmarks/results")
    ap.add_argument("--import-log", default=None,
                    help="stdout log of an earlier run with the default --rules order: its rows (re-read at every "
                         "write) fill what this run and --import-json lack; they lack eps_abs and the extras")
    ap.add_argument("--import-json", default=None, help="results JSON of an earlier run: its complete rows")
    args = ap.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows: list[dict] = []
    for spec in [s for s in args.rules.split(",") if s]:
        rule, _, size = spec.partition("@")
        for seed in range(args.seeds):
            sc = _scenario(rule, size, seed)
            for mech in sc.mechanisms:
                one = LearningScenario(sc.name, "", sc.family, sc.rule, (mech,), seed, sc.rounds, sc.grid,
                                       sc.learners, sc.instance, sc.options)  # fmt: skip
                t = time.perf_counter()
                _, table = run_learning(one)
                row = table.iloc[0].to_dict()
                row.update({"family": sc.family, "size": size or rule, "rule": sc.rule, "seed": seed,
                            "seconds": time.perf_counter() - t})  # fmt: skip
                if sc.family == "fair-share":
                    row["W"] = json.dumps(sc.instance["W"])
                rows.append(row)
                print({k: row.get(k) for k in ("rule", "mechanism", "seed", "status", "eps_grid", "eps_audit",
                                               "certificate", "cce_eps_audit", "price_of_lying", "seconds")},
                      flush=True)  # fmt: skip
        _write(pd.DataFrame(rows), args, load)  # after every spec: an interrupted run keeps what it measured
    if not args.rules:
        _write(pd.DataFrame(rows), args, load)


def _scenario(rule: str, size: str, seed: int) -> LearningScenario:
    if rule in AUCTIONS:
        name, mechs, params = AUCTIONS[rule]
        base = load_learning(name)
        inst = {**base.instance, "params": {**base.instance.get("params", {}), **params}}
        return LearningScenario(base.name, "", base.family, base.rule, mechs or base.mechanisms, seed,
                                base.rounds, base.grid, base.learners, inst, base.options)  # fmt: skip
    return fair_scenario(rule, seed, size)


def _import_log(path: str, seeds: int) -> list[dict]:
    """Rows from an earlier run's stdout (one dict per line, default spec order)."""
    import ast

    order = [f"{r}@2x2" for r in RULES] + ["best-response@4x3", "continuous@4x3", "control", "eris"]
    blocks = [(s, seeds * len(_scenario(s.partition("@")[0], s.partition("@")[2], 0).mechanisms)) for s in order]
    lines = [ln for ln in Path(path).read_text().splitlines() if ln.startswith("{")]
    out, pos = [], 0
    for spec, count in blocks:
        for ln in lines[pos : pos + count]:
            if ln:
                r = ast.literal_eval(ln.replace("nan", "None").replace("inf", "1e999"))
                r = {k: (math.nan if v is None else v) for k, v in r.items()}
                rule, _, size = spec.partition("@")
                fam = "auction" if rule in AUCTIONS else "fair-share"
                r.update({"family": fam, "size": size or rule, "eps_abs": math.nan, "imported": True})
                if fam == "fair-share":
                    r["W"] = json.dumps(instance(int(r["seed"]), size)[0])
                out.append(r)
        pos += count
    return out


def _write(frame: pd.DataFrame, args: argparse.Namespace, load: str) -> None:
    parts = [frame]
    if args.import_json:
        earlier = json.loads(Path(args.import_json).read_text())
        parts.append(pd.DataFrame(earlier["runs"]))
        if not len(frame):
            load = earlier.get("load", load)  # every row is the earlier run's
    if args.import_log:
        parts.append(pd.DataFrame(_import_log(args.import_log, args.seeds)))
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True)
    frame = frame.drop_duplicates(subset=["size", "rule", "mechanism", "seed"], keep="first")
    order = {s: i for i, s in enumerate(["2x2", "4x3", "control", "eris"])}
    frame = frame.sort_values(["size", "rule"], key=lambda c: c.map(order) if c.name == "size" else c.map(
        {r: i for i, r in enumerate([*RULES, "best-response"])}), kind="stable")
    summary = summarise(frame)
    RESULTS.mkdir(parents=True, exist_ok=True)
    records = frame.drop(columns=[c for c in ("final_factors",) if c in frame]).to_dict("records")
    info = {"platform": platform.platform(), "python": platform.python_version(), "load": load,
            "seeds": args.seeds, "summary": summary.to_dict("records"),
            "runs": [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in records]}
    (RESULTS / f"{args.name}.json").write_text(json.dumps(info, indent=2) + "\n")
    imported = sorted({f"{r['rule']}@{r['size']}" for r in records if r.get("imported") is True})
    lines = ["# Learning headlines over seeds, with honest certificates", "",
             f"Command: `.venv/bin/python benchmarks/bench_learning_certificates.py --seeds {args.seeds} "
             f"--rules {args.rules or '\'\''}"
             + (f" --import-json {Path(args.import_json).name}" if args.import_json else "")
             + (f" --import-log {Path(args.import_log).name}" if args.import_log else "") + "`"
             + (f"; the rows of `{Path(args.import_json).name}` were measured by an earlier run of this script "
                "(`uptime` below is from its start)" if args.import_json else "")
             + (f"; {', '.join(imported)} taken from the stdout log of an earlier run of the default --rules, "
                "whose lines carry every column shown except `eps_abs`" if imported else "")
             + f" ({info['platform']}, Python {info['python']}; `uptime` at the start: {load}; other jobs shared "
             "the 2 cores, so seconds are pessimistic).", "",
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
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
