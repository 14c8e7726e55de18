"""Bayesian sealed-bid auctions in ``marketsim learn`` (``family = "bayesian"``, ``rule = "es"``).

The ``[learning.instance]`` table of a Bayesian learning TOML::

    n = [2, 3, 4, 5]                       # bidders (one task per n), i.i.d. values ...
    values = { distribution = "uniform", low = 0, high = 1 }   # ... from this distribution
    # or bidder classes (asymmetric; replaces n and values):
    # classes = [{ values = { distribution = "uniform", high = 1 }, count = 1 },
    #            { values = { distribution = "uniform", high = 2 }, count = 1 }]
    options = { reserve = 0.3, price = 0.4 }   # each mechanism takes the options it knows
    seeds = 5                              # replications, seeded seed, seed + 1, ...
    exploitability = { quadrature = 4096, value_points = 201, bid_points = 401, refine = 4 }  # the defaults

``[learning] options`` holds the ES settings (``population``, ``sigma``, ``lr``, ``batch``,
``degree``, ``shape`` = ``"auto"`` (default: family, degree, sigma and lr per mechanism and number
of bidders, :func:`marketsim.market.learning.bayesian.auto_settings`), ``"free"`` or ``"monotone"``;
:func:`marketsim.market.learning.bayesian.learn_bid_functions`); the table's ``family`` column says which
were used. Every unknown key, mechanism or
distribution is an :class:`~marketsim.market.errors.InputError` naming the field (exit 2 from the CLI).

A table row per (mechanism, n): with several seeds, ``l2_to_bne``, ``revenue``, ``revenue_gap``
(revenue / BNE revenue − 1) and ``factor`` are means over seeds with 95% t intervals in
``*_lo`` / ``*_hi``; ``bne_revenue`` is the computed reference (:mod:`marketsim.market.learning.bne`);
``coef`` the seed-mean Bernstein coefficients (a list per class with classes); ``bids`` the
seed-mean learned b(v) at 101 equally spaced values on ``[low, high]`` (a JSON list; a list per
class with classes), checkable without the family's code; ``exploitability`` (mean and interval
over seeds) the best-response gain against the learned profile as a fraction of the bidder's
utility under it (:func:`marketsim.market.learning.bayesian.exploitability`; the largest over classes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marketsim.analysis.engine.run_status import write_atomic
from marketsim.market.errors import InputError, check_int, check_positive
from marketsim.market.learning.distributions import ValueDistribution, make_distribution

__all__ = ["BayesianSpec", "bayesian_row", "parse_bayesian", "plot_bids", "report_table"]

INSTANCE_KEYS = ("n", "values", "classes", "options", "seeds", "exploitability")
#: grid settings of :func:`marketsim.market.learning.bayesian.exploitability` a file may set (smaller = faster, coarser)
EXPLOIT_KEYS = ("quadrature", "value_points", "bid_points", "refine")
ES_OPTIONS = ("population", "sigma", "lr", "batch", "degree", "shape")
#: Okabe–Ito colour-blind-safe palette (black last: it is the BNE colour in single-line plots).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


@dataclass(frozen=True)
class BayesianSpec:
    """A validated Bayesian instance: ``ns`` (one task per entry), the value distribution(s) and,
    for bidder classes, their ``counts``; per-mechanism options, replications and ES settings."""

    ns: tuple[int, ...]
    values: tuple[ValueDistribution, ...]
    counts: tuple[int, ...] | None
    options: Mapping[str, Any]
    seeds: int
    es: Mapping[str, Any] = field(default_factory=dict)
    exploit: Mapping[str, int] = field(default_factory=dict)

    def classes(self, n: int) -> tuple[list[ValueDistribution], list[int]]:
        """Distributions and class sizes for a task with ``n`` bidders."""
        if self.counts is None:
            return [self.values[0]], [n]
        return list(self.values), list(self.counts)


def mechanism_options(spec: BayesianSpec, mechanism: str) -> dict[str, Any]:
    """The instance options that ``mechanism``'s payment rule accepts."""
    from marketsim.market.learning.payments import PAYMENT_RULES

    return {k: v for k, v in spec.options.items() if k in PAYMENT_RULES[mechanism].options}


def parse_bayesian(sc: Any) -> BayesianSpec:
    """Validate the Bayesian parts of a learning scenario (module docstring)."""
    from marketsim.market.learning.payments import PAYMENT_RULES, check_options

    inst = sc.instance
    extra = sorted(set(inst) - set(INSTANCE_KEYS))
    if extra:
        raise InputError(f"learning.instance.{extra[0]}", inst[extra[0]],
                         f"is not a key of a bayesian instance; known: {list(INSTANCE_KEYS)}")  # fmt: skip
    for m in sc.mechanisms:
        if m not in PAYMENT_RULES:
            raise InputError("learning.mechanisms", m, f"must be payment rules of {sorted(PAYMENT_RULES)}")
    opts = inst.get("options", {})
    if not isinstance(opts, Mapping):
        raise InputError("learning.instance.options", opts, "must be a table like {reserve = 0.3}")
    accepted = {k for m in sc.mechanisms for k in PAYMENT_RULES[m].options}
    for key, val in opts.items():
        if key not in accepted:
            raise InputError(f"learning.instance.options.{key}", val,
                             f"is not an option of {list(sc.mechanisms)}; known: {sorted(accepted)}")  # fmt: skip
    for m in sc.mechanisms:
        check_options(m, {k: v for k, v in opts.items() if k in PAYMENT_RULES[m].options}, "learning.instance.options")
    seeds = check_int("learning.instance.seeds", inst.get("seeds", 1), minimum=1)
    if "classes" in inst:
        for key in ("n", "values"):
            if key in inst:
                raise InputError(f"learning.instance.{key}", inst[key],
                                 "cannot be given with classes (each class has its values and count)")  # fmt: skip
        cl = inst["classes"]
        if not isinstance(cl, list) or not cl or not all(isinstance(c, Mapping) for c in cl):
            raise InputError("learning.instance.classes", cl, "must be a non-empty list of tables {values, count}")
        dists, counts = [], []
        for i, c in enumerate(cl):
            bad = sorted(set(c) - {"values", "count"})
            if bad:
                raise InputError(f"learning.instance.classes[{i}].{bad[0]}", c[bad[0]],
                                 "is not a key of a class; known: ['count', 'values']")  # fmt: skip
            dists.append(make_distribution(c.get("values"), f"learning.instance.classes[{i}].values"))
            counts.append(check_int(f"learning.instance.classes[{i}].count", c.get("count", 1), minimum=1))
        if sum(counts) < 2:
            raise InputError("learning.instance.classes", counts, "must hold at least 2 bidders in total")
        ns: tuple[int, ...] = (sum(counts),)
        values, cnts = tuple(dists), tuple(counts)
    else:
        raw = inst.get("n", [2, 3, 4, 5])
        ns = tuple(check_int("learning.instance.n", n, minimum=2) for n in (raw if isinstance(raw, list) else [raw]))
        if not ns:
            raise InputError("learning.instance.n", raw, "must list at least one number of bidders")
        values, cnts = (make_distribution(inst.get("values"), "learning.instance.values"),), None
    _check_reserve_and_lows(sc.mechanisms, values, cnts, ns, opts)
    es: dict[str, Any] = {}
    for key, val in sc.options.items():
        if key not in ES_OPTIONS:
            raise InputError(f"learning.options.{key}", val, f"is not an ES option; known: {list(ES_OPTIONS)}")
        if key == "shape":
            from marketsim.market.learning.bayesian import SHAPES

            if val not in SHAPES:
                raise InputError("learning.options.shape", val, f"must be one of {list(SHAPES)}")
            es[key] = val
            continue
        es[key] = (check_int(f"learning.options.{key}", val, minimum=1) if key in ("population", "batch", "degree")
                   else check_positive(f"learning.options.{key}", val))  # fmt: skip
    if es.get("population", 2) % 2:
        raise InputError("learning.options.population", es["population"], "must be even (antithetic pairs)")
    ex = inst.get("exploitability", {})
    if not isinstance(ex, Mapping):
        raise InputError("learning.instance.exploitability", ex, "must be a table like {quadrature = 1024}")
    exploit: dict[str, int] = {}
    for key, val in ex.items():
        if key not in EXPLOIT_KEYS:
            raise InputError(
                f"learning.instance.exploitability.{key}", val, f"is not a key; known: {list(EXPLOIT_KEYS)}"
            )
        exploit[key] = check_int(f"learning.instance.exploitability.{key}", val,
                                 minimum={"refine": 0, "bid_points": 3}.get(key, 2))  # fmt: skip
    return BayesianSpec(ns, values, cnts, dict(opts), seeds, es, exploit)


def _check_reserve_and_lows(
    mechanisms: Any,
    values: tuple[ValueDistribution, ...],
    counts: tuple[int, ...] | None,
    ns: tuple[int, ...],
    opts: Mapping[str, Any],
) -> None:
    """Up front, before any learning: a reserve that excludes every value (for a rule with a
    screening value: the lowest participating type is at or above the highest value), and, for
    first price with bidder classes, different lows below the reserve (the asymmetric BNE needs a
    common lower bound)."""
    from marketsim.market.learning.payments import PAYMENT_RULES

    r = float(opts.get("reserve", 0.0))
    highest = max(d.high for d in values)
    if r >= highest:
        raise InputError("learning.instance.options.reserve", r, f"is at or above every value (highest {highest:g})")
    for m in mechanisms:
        rule = PAYMENT_RULES[m]
        if counts is None and rule.screening is not None:
            d = values[0]
            for n in ns:
                vstar = float(rule.screening(r, lambda x, n=n, d=d: d.cdf(x) ** (n - 1), d.low))
                if vstar >= d.high:
                    raise InputError("learning.instance.options.reserve", r,
                                     f"excludes every value in [{d.low:g}, {d.high:g}] for {m}, n = {n}")  # fmt: skip
        if counts is not None and m == "first-price":
            lows = [d.low for d in values]
            if r < max(lows) and not np.allclose(lows, lows[0]):
                raise InputError("learning.instance.classes.values.low", lows,
                                 "must be equal across classes for first price (or reserve >= their max)")  # fmt: skip
            top = min(d.high for d in values)
            if max(r, max(lows)) >= top:
                raise InputError("learning.instance.options.reserve", r,
                                 f"must be below every class's highest value {top:g}")  # fmt: skip


def reference(spec: BayesianSpec, mechanism: str, n: int) -> Any:
    """The BNE reference of a task (:func:`marketsim.market.learning.bne.bne_reference`), or ``None``."""
    from marketsim.market.learning.bne import bne_reference

    dists, counts = spec.classes(n)
    return bne_reference(mechanism, dists, counts, mechanism_options(spec, mechanism))


def _ci(x: list[float]) -> tuple[float, float, float]:
    from marketsim.analysis.engine.stats import t_interval

    return t_interval(np.asarray(x, dtype=float))


def bayesian_row(
    sc: Any, mechanism: str, n: int, progress: Callable[[int, int], None] | None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Learn ``mechanism`` with ``n`` bidders for every seed; the trajectories and one table row."""
    from marketsim.market.learning.bayesian import BidFunction, expected_revenue, exploitability, learn_bid_functions

    spec = parse_bayesian(sc)
    dists, counts = spec.classes(n)
    opts = mechanism_options(spec, mechanism)
    ref = reference(spec, mechanism, n)
    trajs, l2s, l2_cls, revs, factors, coefs, expl, curves = [], [], [], [], [], [], [], []
    settings: dict[str, Any] = {}
    total = spec.seeds * sc.rounds
    for k in range(spec.seeds):
        seed = sc.seed + k
        prog = None if progress is None else (lambda i, _n, k=k: progress(k * sc.rounds + i, total))
        res = learn_bid_functions(mechanism, counts if spec.counts is not None else n,
                                  values=dists if spec.counts is not None else dists[0], rounds=sc.rounds, seed=seed,
                                  options=opts, progress=prog, **spec.es)  # fmt: skip
        trajs.append(res.history.assign(seed=seed))
        settings = res.settings
        revs.append(expected_revenue(mechanism, list(res.bids), counts, values=dists, seed=seed, options=opts))
        factors.append(float(np.mean([b.factor(d) for b, d in zip(res.bids, dists, strict=True)])))
        coefs.append([b.coef for b in res.bids])
        curves.append([b(np.linspace(d.low, d.high, 101)) for b, d in zip(res.bids, dists, strict=True)])
        expl.append(exploitability(mechanism, list(res.bids), counts, values=dists, options=opts, **spec.exploit).value)
        if ref is not None and all(f is not None for f in ref.bids):
            per = [b.l2_distance(f, d) for b, f, d in zip(res.bids, ref.bids, dists, strict=True)]
            l2_cls.append(per)
            l2s.append(max(per))
    truthful = [BidFunction.truthful(len(coefs[0][0]) - 1, d.low, d.high) for d in dists]
    row: dict[str, Any] = {"mechanism": mechanism, "n": n,
                           "values": "; ".join(f"{c} x {d.describe()}" if spec.counts else d.describe()
                                               for d, c in zip(dists, counts, strict=True)),
                           "seeds": spec.seeds,
                           "family": f"{settings['shape']}, degree {settings['degree']}, sigma {settings['sigma']:g}, "
                                     f"lr {settings['lr']:g}"}  # fmt: skip
    for name, xs in (("factor", factors), ("l2_to_bne", l2s), ("exploitability", expl), ("revenue", revs)):
        mean, lo, hi = _ci(xs) if xs else (float("nan"),) * 3
        row[name], row[f"{name}_lo"], row[f"{name}_hi"] = mean, lo, hi
    row["bne_revenue"] = float("nan") if ref is None else ref.revenue
    gaps = [r / ref.revenue - 1.0 for r in revs] if ref is not None and ref.revenue > 0 else []
    mean, lo, hi = _ci(gaps) if gaps else (float("nan"),) * 3
    row["revenue_gap"], row["revenue_gap_lo"], row["revenue_gap_hi"] = mean, lo, hi
    row["truthful_revenue"] = expected_revenue(mechanism, truthful, counts, values=dists, options=opts)
    mean_coef = [np.mean([c[i] for c in coefs], axis=0).round(4).tolist() for i in range(len(dists))]
    row["coef"] = mean_coef[0] if spec.counts is None else mean_coef
    row["coef_seeds"] = [[c.round(4).tolist() for c in cs] for cs in coefs]
    mean_bids = [np.mean([c[i] for c in curves], axis=0).round(6).tolist() for i in range(len(dists))]
    row["bids"] = json.dumps(mean_bids[0] if spec.counts is None else mean_bids)
    if spec.counts is not None and l2_cls:
        row["l2_by_class"] = np.mean(l2_cls, axis=0).round(5).tolist()
    traj = pd.concat(trajs, ignore_index=True).assign(mechanism=mechanism, n=n)
    return traj, row


def report_table(table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The report's columns (mean and [95% CI] when several seeds) and its explanation."""
    out = pd.DataFrame({"mechanism": table["mechanism"], "n": table["n"]})
    for col in ("values", "seeds", "family"):
        if col in table.columns:
            out[col] = table[col]

    def fmt(name: str, digits: int = 4) -> list[str]:
        cells = []
        for _, r in table.iterrows():
            m = r.get(name, float("nan"))
            lo, hi = r.get(f"{name}_lo", float("nan")), r.get(f"{name}_hi", float("nan"))
            if m is None or pd.isna(m):
                cells.append("–")
            elif pd.isna(lo):
                cells.append(f"{m:.{digits}g}")
            else:
                cells.append(f"{m:.{digits}g} [{lo:.{digits}g}, {hi:.{digits}g}]")
        return cells

    for name in ("factor", "l2_to_bne", "exploitability", "revenue"):
        if name in table.columns:
            out[name] = fmt(name)
    if "bne_revenue" in table.columns:
        out["bne_revenue"] = [("–" if pd.isna(x) else f"{x:.4g}") for x in table["bne_revenue"]]
    if "revenue_gap" in table.columns:
        out["revenue_gap"] = fmt("revenue_gap", 3)
    if "truthful_revenue" in table.columns:
        out["truthful_revenue"] = table["truthful_revenue"]
    for col in ("status", "error"):
        if col in table.columns:
            out[col] = table[col].fillna("")
    expl = ("ES self-play from truthful bidding, ties broken uniformly at random. With several seeds each cell is "
            "the mean over seeds with its 95% t interval in brackets. `factor` = E[b(V)] / E[V]; `l2_to_bne` = "
            "root-mean-square distance of the learned bid to the BNE bid under the value distribution, over values "
            "at or above the BNE's screening value (largest over bidder classes); `exploitability` = what a "
            "best response to the learned profile gains, as a fraction of the bidder's utility under the learned "
            "profile (largest over bidder classes; exact law of the opponents' top bid over 4096 value quantiles, "
            "best bid per value over a 401-bid grid plus 4 local refinements, 201 own values; grid error <= 0.3% "
            "measured on exact BNEs up to all-pay n = 5); `bne_revenue` is computed by "
            "quadrature (symmetric) or from the numerical asymmetric first-price BNE; `revenue_gap` = revenue / "
            "bne_revenue − 1. A posted price has no unique BNE bid (`–`). `bids.png`: learned b(v) (solid, band: "
            "range over seeds) against the BNE (dashed).")  # fmt: skip
    return out, expl


def plot_bids(sc: Any, table: pd.DataFrame, path: Path) -> None:
    """Learned bid functions (seed mean, range over seeds) against the BNE, one panel per mechanism."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from marketsim.market.learning.bayesian import BidFunction

    spec = parse_bayesian(sc)
    ok = table[table.get("status", pd.Series(index=table.index, dtype=object)).ne("error")] if len(table) else table
    mechs = list(dict.fromkeys(ok["mechanism"])) if len(ok) else []
    fig, axes = plt.subplots(1, max(len(mechs), 1), figsize=(4.2 * max(len(mechs), 1), 3.8), squeeze=False)
    for ax, mech in zip(axes[0], mechs, strict=False):
        lines = 0
        for _, r in ok[ok["mechanism"] == mech].iterrows():
            n = int(r["n"])
            dists, counts = spec.classes(n)
            ref = reference(spec, mech, n)
            for c, d in enumerate(dists):
                colour = PALETTE[lines % len(PALETTE)]
                lines += 1
                label = f"n={n}" if spec.counts is None else f"class {c} ({d.describe()})"
                v = np.linspace(d.low, d.high, 201)
                curves = np.array([BidFunction(np.asarray(cs[c]), d.low, d.high)(v) for cs in r["coef_seeds"]])
                ax.plot(v, curves.mean(axis=0), color=colour, lw=1.8, label=f"{label} learned")
                if len(curves) > 1:
                    ax.fill_between(v, curves.min(axis=0), curves.max(axis=0), color=colour, alpha=0.18, lw=0)
                if ref is not None and ref.bids[c] is not None:
                    ax.plot(v, ref.bids[c](v), color=colour, lw=1.2, ls="--", label=f"{label} BNE")
        ax.plot([0, max(d.high for d in spec.values)], [0, max(d.high for d in spec.values)], color="grey", lw=0.6,
                ls=":", label="truthful")  # fmt: skip
        ax.set_title(mech, fontsize=9)
        ax.set_xlabel("value v")
        ax.legend(fontsize=6)
    axes[0, 0].set_ylabel("bid b(v)")
    fig.suptitle(f"{sc.name}: learned bids vs BNE")
    fig.tight_layout()
    write_atomic(path, lambda p: fig.savefig(p, dpi=110))
    plt.close(fig)


def plot_convergence(traj: pd.DataFrame, axes: Any) -> None:
    """Seed-mean report factor and utility per round, one line per (mechanism, n, class)."""
    keys = ["mechanism", "n"] + (["class"] if "class" in traj.columns else [])
    i = 0
    for key, g in traj.groupby(keys):
        mean = g.groupby("round")[["factor", "utility"]].mean()
        label = f"{key[0]}, n={key[1]}" + (f", class {key[2]}" if len(key) > 2 and traj["class"].max() > 0 else "")
        colour = PALETTE[i % len(PALETTE)]
        ls = ("-", "--", ":", "-.")[(i // len(PALETTE)) % 4]
        i += 1
        axes[0].plot(mean.index, mean["factor"], color=colour, ls=ls, label=label)
        axes[1].plot(mean.index, mean["utility"].rolling(20, min_periods=1).mean(), color=colour, ls=ls, label=label)
