"""Incentive-audit front end: instance builders for ``marketsim audit``, regret and gain-curve
plots, and a Markdown report with the claims ledger.

``marketsim audit`` turns command-line inputs into an audit target through a registry of
*instance builders* keyed by mechanism family (:data:`INSTANCE_BUILDERS`): the fair-share builder
wraps the registered allocator in :class:`marketsim.market.audit.FairShareTarget` and measures envy-freeness,
sharing incentive, Pareto efficiency and capacity on the truthful allocation. An auction family is
added by registering a builder returning an :class:`AuditCase` (target + truthful property
violations) with :func:`register_instance_builder`.

Plots (seaborn, Agg backend): :func:`plot_regret` (distribution of the best gain per mechanism
over seeded random instances, :func:`regret_frame`) and :func:`plot_gain_curves` (gain vs
misreport factor per dimension, :func:`gain_curve_frame`). :func:`write_audit_report` writes both
and the claims ledger (:func:`marketsim.market.audit.to_markdown`) into ``report.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marketsim.analysis.engine.run_status import guard, write_atomic
from marketsim.market.audit import (
    AuditConfig,
    AuditResult,
    FairShareTarget,
    audit_all,
    evaluate_misreport,
    fair_share_report,
)
from marketsim.market.audit.claims import Claim, hunt_cell, to_markdown
from marketsim.market.audit.instances import random_instance
from marketsim.market.errors import InputError, check_int

__all__ = [
    "AuditRequest",
    "AuditCase",
    "INSTANCE_BUILDERS",
    "register_instance_builder",
    "build_case",
    "audit_case",
    "agent_summary",
    "format_relative_gain",
    "attach_exact",
    "exact_rows",
    "regret_frame",
    "gain_curve_frame",
    "plot_regret",
    "plot_gain_curves",
    "claims_table",
    "write_audit_report",
]


@dataclass(frozen=True)
class AuditRequest:
    """What the user asked to audit: a registered ``mechanism``, reported-type inputs (``speedups``
    rows per agent, ``capacity`` per resource, optional ``weights``) and the search ``seed``."""

    mechanism: str
    speedups: np.ndarray
    capacity: np.ndarray
    weights: np.ndarray | None = None
    seed: int = 0


@dataclass
class AuditCase:
    """An audit target and the truthful outcome's property violations (property -> max violation)."""

    target: Any
    violations: dict[str, float] = field(default_factory=dict)
    instance: dict[str, Any] = field(default_factory=dict)


InstanceBuilder = Callable[[AuditRequest], AuditCase]
#: Instance builders by mechanism family (``marketsim.market.registry`` family names).
INSTANCE_BUILDERS: dict[str, InstanceBuilder] = {}


def register_instance_builder(family: str) -> Callable[[InstanceBuilder], InstanceBuilder]:
    """Decorator registering the builder of audit cases for mechanisms of ``family``."""

    def deco(fn: InstanceBuilder) -> InstanceBuilder:
        INSTANCE_BUILDERS[family] = fn
        return fn

    return deco


@register_instance_builder("fair-share")
def _fair_share_case(req: AuditRequest) -> AuditCase:
    target = FairShareTarget(req.mechanism, req.speedups, req.capacity, weights=req.weights)
    X = np.asarray(target.truthful().X, dtype=float)
    figs = fair_share_report(target.Wt, X, target.ma, req.weights)
    violations = {
        "envy_freeness": figs["envy"],
        "sharing_incentive": figs["si"],
        "pareto_efficiency": figs["pe"],
        "capacity": figs["capacity"],
    }
    instance = {
        "speedups": req.speedups.tolist(),
        "normalised_speedups": target.Wt.tolist(),
        "capacity": req.capacity.tolist(),
        "weights": None if req.weights is None else req.weights.tolist(),
        "allocation": X.tolist(),
    }
    return AuditCase(target, violations, instance)


def build_case(req: AuditRequest) -> AuditCase:
    """The audit case of ``req.mechanism`` via its family's registered builder."""
    from marketsim.market.registry import get, names

    known = sorted(set(names("fair-share")) | set(names("auction")))
    try:
        info = get(req.mechanism)
    except InputError:
        raise InputError("--mechanism", req.mechanism, f"is not a registered mechanism; known: {known}") from None
    builder = INSTANCE_BUILDERS.get(info.family)
    if builder is None:
        supported = sorted(n for fam in INSTANCE_BUILDERS for n in names(fam))
        raise InputError(
            "--mechanism", req.mechanism, f"({info.family}) has no audit instance builder yet; auditable: {supported}"
        )
    return builder(req)


def audit_case(case: AuditCase, seed: int = 0, config: AuditConfig | None = None) -> dict[str, Any]:
    """Audit every agent of ``case`` (others truthful) and return the JSON-ready summary: per agent
    ``agent, truthful_utility, best_gain, relative_gain, witness`` (+ family and report of the best
    lie), and ``violations`` including ``strategyproofness`` (the largest best gain)."""
    results: list[AuditResult] = audit_all(case.target, config=config, rng=check_int("--seed", seed, minimum=0))
    agents = [agent_summary(r) for r in results]
    violations = {"strategyproofness": max((r.best_gain for r in results), default=0.0), **case.violations}
    return {
        "mechanism": getattr(case.target, "name", ""),
        "seed": seed,
        "instance": case.instance,
        "agents": agents,
        "violations": violations,
        "evaluations": int(sum(r.evaluations for r in results)),
        "points": int(sum(r.points for r in results)),
    }


#: the note attached to an audit row whose relative gain is undefined (null in JSON)
ZERO_TRUTHFUL_NOTE = "truthful utility is 0: the relative gain is undefined (null); best_gain is the absolute gain"
#: the note attached to an audit row whose best lie sits at a dimension's hard limit
AT_LIMIT_NOTE = (
    "the best lie sits at a dimension's hard limit (by default its search bound): the gain may keep growing "
    "at or past that limit, so best_gain is a lower bound on the supremum, not a maximum attained inside"
)


def agent_summary(r: AuditResult) -> dict[str, Any]:
    """JSON-ready summary of one agent's audit, the same fields for every family (fair-share and
    auction): ``agent, truthful_utility, best_gain, relative_gain, witness, witness_family,
    witness_report, at_limit, violated`` and ``notes`` (a list of sentences, empty when nothing needs
    saying). ``relative_gain`` is ``None`` when the truthful utility is 0 (a gain from nothing is
    not a ratio); ``at_limit`` (see :class:`marketsim.market.audit.AuditResult`) adds :data:`AT_LIMIT_NOTE`."""
    rel = r.relative_gain if np.isfinite(r.relative_gain) else None
    notes = []
    if rel is None:
        notes.append(ZERO_TRUTHFUL_NOTE)
    if r.at_limit:
        notes.append(AT_LIMIT_NOTE)
    return {
        "agent": _json(r.agent),
        "truthful_utility": r.truthful_utility,
        "best_gain": r.best_gain,
        "relative_gain": rel,
        "witness": _json(r.witness),
        "witness_family": r.witness_family,
        "witness_report": _json(r.witness_report),
        "at_limit": bool(r.at_limit),
        "violated": bool(r.violated),
        "notes": notes,
    }


def attach_exact(out: dict[str, Any], mechanism: str, W: np.ndarray, m: np.ndarray, weights: np.ndarray | None,
                 **kwargs: Any) -> dict[str, Any]:  # fmt: skip
    """Add to every agent of an :func:`audit_case` summary an ``exact`` object: the exact best response
    (:func:`marketsim.market.audit.exact.best_response`, default box) as JSON (``relative_gain``, ``upper_bound``,
    ``gap``, ``certified``, ``report``, ``box``, ``at_lower``/``at_upper``/``on_edge``, ``closure_bound``,
    ``method``, ``status``, ``seconds``, ``notes``). ``kwargs`` go to ``best_response``."""
    from marketsim.market.audit.exact import best_response

    for a in out["agents"]:
        res = best_response(mechanism, W, m, int(a["agent"]), weights=weights, **kwargs).to_dict()
        for key in ("policy", "agent", "truthful_utility"):
            res.pop(key)
        a["exact"] = res
    return out


def exact_rows(agents: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Text table (header first) of the agents' ``exact`` objects beside the search's relative gain."""
    head = ["agent", "search", "exact", "upper bound", "gap", "certified", "report", "edge"]
    rows = [head]
    for a in agents:
        e = a["exact"]
        edge = "lower" if any(e["at_lower"]) else "upper" if any(e["at_upper"]) else "-"
        if e.get("closure_bound") is not None:
            edge += f" (sup <= {_pct4(e['closure_bound'])} as it goes to 0)"
        gap = "n/a" if e["gap"] is None else f"{e['gap']:.1e}"
        rep = "[" + ", ".join(f"{v:.6g}" for v in e["report"]) + "]"
        rows.append([str(a["agent"]), format_relative_gain(a["relative_gain"]), _pct4(e["relative_gain"]),
                     _pct4(e["upper_bound"]), gap, "yes" if e["certified"] else "no", rep, edge])  # fmt: skip
    return rows


def _pct4(rel: float | None) -> str:
    return "n/a (truthful 0)" if rel is None or not np.isfinite(rel) else f"{100 * rel:+.4f}%"


def format_relative_gain(rel: float | None) -> str:
    """Text form of a relative gain: ``+12.34%``, or ``n/a (truthful 0)`` when it is undefined."""
    return "n/a (truthful 0)" if rel is None or not np.isfinite(rel) else f"{100 * rel:+.2f}%"


def _json(x: Any) -> Any:
    from marketsim.market.audit.search import jsonable

    return jsonable(x)


# ---------------------------------------------------------------------------------------------------
# data for plots


def regret_frame(
    mechanisms: Sequence[str],
    n_instances: int = 20,
    seed: int = 0,
    *,
    size: str = "small",
    config: AuditConfig | None = None,
) -> pd.DataFrame:
    """Best gain (regret) of every agent on ``n_instances`` random fair-share instances per
    mechanism; instance ``i`` is the same for every mechanism (seed ``(seed, i)``). Columns:
    mechanism, instance, n, k, agent, truthful_utility, best_gain, relative_gain."""
    from marketsim.market.audit.instances import SIZES

    check_int("n_instances", n_instances, minimum=1)
    if size not in SIZES:
        raise InputError("size", size, f"must be one of {sorted(SIZES)}")
    preset = SIZES[size]
    cfg = config or AuditConfig(n_grid=6, n_joint=12, refine_starts=1, refine_maxfev=30, probes=False)
    rows = []
    for i in range(n_instances):
        inst = random_instance(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))), **preset)  # type: ignore[arg-type]
        for mech in mechanisms:
            target = FairShareTarget(mech, inst.W, inst.m)
            for r in audit_all(
                target, config=cfg, rng=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, 1)))
            ):
                rows.append(
                    {
                        "mechanism": mech,
                        "instance": i,
                        "n": inst.W.shape[0],
                        "k": inst.W.shape[1],
                        "agent": int(r.agent),
                        "truthful_utility": r.truthful_utility,
                        "best_gain": r.best_gain,
                        "relative_gain": r.relative_gain if np.isfinite(r.relative_gain) else np.nan,
                    }
                )
    return pd.DataFrame(rows)


def gain_curve_frame(
    mechanism: str,
    speedups: Any,
    capacity: Any,
    agent: int | None = 0,
    factors: Iterable[float] | None = None,
    weights: Any = None,
) -> pd.DataFrame:
    """Gain of ``agent`` (``None``: every agent) from scaling ONE speedup dimension by each factor
    (others truthful), per dimension: columns mechanism, agent, dimension, factor, gain,
    relative_gain, utility."""
    target = FairShareTarget(mechanism, speedups, capacity, weights=weights)
    fs = np.geomspace(0.25, 4.0, 25) if factors is None else np.asarray(list(factors), dtype=float)
    return target_gain_curves(target, None if agent is None else [agent], factors=fs)


def target_gain_curves(
    target: Any, agents: Sequence[Any] | None = None, *, factors: Iterable[float] | None = None, points: int = 25
) -> pd.DataFrame:
    """Gain of each agent (default: all) of any audit target from misreporting ONE factor-kind
    dimension at a time, others truthful: ``factors`` (default: ``points`` geometric values over the
    dimension's own range, plus the truth). Value-kind dimensions (arrival delays, counts) are not
    curves of a factor and are left out. Columns as :func:`gain_curve_frame`."""
    check_int("points", points, minimum=2)
    rows = []
    for a in target.agents() if agents is None else agents:
        for d in target.dimensions(a):
            if d.kind != "factor":
                continue
            grid = np.geomspace(d.lower, d.upper, points) if factors is None else np.asarray(list(factors), float)
            for f in np.unique(np.r_[grid, d.truth]) if factors is None else grid:
                gain, u = evaluate_misreport(target, a, {d.name: float(f)})
                base = u - gain
                rows.append(
                    {
                        "mechanism": target.name,
                        "agent": a if isinstance(a, str) else int(a),
                        "dimension": d.name,
                        "factor": float(f),
                        "gain": gain,
                        "relative_gain": gain / abs(base) if base != 0 else np.nan,
                        "utility": u,
                    }
                )
    return pd.DataFrame(rows)


def auction_regret_frame(
    study: Any,
    mechanism: str,
    n_instances: int = 5,
    seed: int = 0,
    overrides: dict[str, Any] | None = None,
    config: AuditConfig | None = None,
) -> pd.DataFrame:
    """Best gain (regret) of every bidder under the online auction ``mechanism`` on ``n_instances``
    seeded ``[audit]`` instances of ``study`` (instance ``i`` from ``SeedSequence(seed, (i,))``).
    Columns as :func:`regret_frame` (``n`` = bidders, ``k`` = 0)."""
    from marketsim.analysis.engine.studies import build_market
    from marketsim.market.audit.online import OnlineAuctionTarget

    check_int("n_instances", n_instances, minimum=1)
    cfg = config or AuditConfig(n_grid=6, n_joint=12, refine_starts=1, refine_maxfev=30, probes=False)
    params = {**study.audit_params(), **(overrides or {})}
    rows = []
    for i in range(n_instances):
        market = build_market(study.paper, params, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))))
        target = OnlineAuctionTarget(market, mechanism, seed=seed)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, 1)))
        for r in audit_all(target, config=cfg, rng=rng):
            rows.append(
                {
                    "mechanism": mechanism,
                    "instance": i,
                    "n": len(target.agents()),
                    "k": 0,
                    "agent": int(r.agent),
                    "truthful_utility": r.truthful_utility,
                    "best_gain": r.best_gain,
                    "relative_gain": r.relative_gain if np.isfinite(r.relative_gain) else np.nan,
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------
# plots and report


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_regret(frame: pd.DataFrame, path: str | Path, absolute: bool = False) -> Path:
    """Strip plot of the per-agent best gain per mechanism, with the max marked (:func:`regret_frame`):
    relative to the truthful utility, or ``absolute`` (utility units; for auctions, where a
    truthful surplus of 0 leaves the relative gain undefined)."""
    import seaborn as sns

    plt = _plt()
    path = Path(path)
    fig, ax = plt.subplots(figsize=(1.4 * max(3, frame["mechanism"].nunique()) + 2, 4))
    data = frame.assign(pct=frame["best_gain"] if absolute else 100 * frame["relative_gain"].fillna(0.0))
    order = list(dict.fromkeys(data["mechanism"]))
    sns.stripplot(
        data=data, x="mechanism", y="pct", order=order, ax=ax, size=3, jitter=0.25, color="#1f4e79", alpha=0.5
    )
    ax.set_xlim(-0.6, len(order) - 0.4)
    worst = data.groupby("mechanism")["pct"].max().reindex(order)
    ax.scatter(range(len(order)), worst.to_numpy(), marker="_", s=600, color="#c0392b", label="max", zorder=3)
    ax.legend(loc="upper right", frameon=False)
    ax.set_ylabel("best gain from lying" + (" (utility units)" if absolute else " (% of truthful utility)"))
    ax.set_xlabel("")
    n = frame["instance"].nunique()
    ax.set_title(f"Regret over {n} random instances (per agent)")
    fig.tight_layout()
    write_atomic(path, lambda p: fig.savefig(p, dpi=120))
    plt.close(fig)
    return path


def plot_gain_curves(frame: pd.DataFrame, path: str | Path, max_panels: int = 8, absolute: bool = False) -> Path:
    """Gain (% of truthful utility, or ``absolute`` in utility units) vs misreport factor, one panel
    per (mechanism, agent) (at most ``max_panels``), one line per dimension (log x axis)."""
    import seaborn as sns
    from matplotlib.ticker import NullFormatter

    plt = _plt()
    path = Path(path)
    panels = list(dict.fromkeys(zip(frame["mechanism"], frame["agent"], strict=True)))[:max_panels]
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False, sharey=True)
    for ax, (mech, agent) in zip(axes.flat, panels, strict=False):
        sub = frame[(frame["mechanism"] == mech) & (frame["agent"] == agent)]
        sub = sub.assign(pct=sub["gain"] if absolute else 100 * sub["relative_gain"])
        sns.lineplot(data=sub, x="factor", y="pct", hue="dimension", marker="o", ax=ax)
        ax.set_xscale("log")
        ticks = [t for t in (0.25, 0.5, 1.0, 2.0, 4.0) if sub["factor"].min() <= t <= sub["factor"].max()]
        ax.set_xticks(ticks, labels=[f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axvline(1.0, color="grey", lw=0.8, ls=":")
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_title(f"{mech}, agent {agent}")
        ax.set_xlabel("reported / true value of the dimension")
        ax.set_ylabel("gain (utility units)" if absolute else "gain (% of truthful utility)")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    write_atomic(path, lambda p: fig.savefig(p, dpi=120))
    plt.close(fig)
    return path


def claims_table(results: Iterable[Claim], width: int = 70) -> list[list[str]]:
    """Rows ``[claim id, statement, verdict (with the oracle that re-checked its witness), effect size,
    witness]`` (texts cut to ``width``), plus
    the hunt (:func:`marketsim.market.audit.claims.hunt_cell`) for hunted claims."""

    def cut(s: str) -> str:
        s = " ".join(s.split())
        return s if len(s) <= width else s[: width - 3] + "..."

    rows = []
    for c in results:
        eff = f"{c.effect_size:.4g}" + (f" ({c.effect})" if c.effect else "")
        wit = json.dumps(_json(c.witness), separators=(",", ":")) if c.witness is not None else "-"
        verdict = c.label + (f" ({c.oracle['label']})" if getattr(c, "oracle", None) else "")
        row = [c.claim_id, cut(c.statement), verdict, cut(eff), cut(wit)]
        if getattr(c, "hunt", None) is not None:
            row.append(hunt_cell(c.hunt))
        rows.append(row)
    return rows


def _markdown(frame: pd.DataFrame) -> str:
    cells = [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    sep = "|" + "---|" * len(frame.columns)
    return "\n".join([head, sep, *("| " + " | ".join(r) + " |" for r in cells)]) + "\n"


def write_audit_report(
    out_dir: str | Path,
    claims: Sequence[Claim] = (),
    regret: pd.DataFrame | None = None,
    curves: pd.DataFrame | None = None,
    absolute: bool = False,
) -> Path:
    """Write ``regret.png`` / ``gain_curves.png`` (when given data), their CSVs and ``report.md``
    with the claims ledger table into ``out_dir``; returns the report path. ``absolute`` plots gains
    in utility units instead of % of the truthful utility (auctions)."""
    out = Path(out_dir)
    guard(out, "--report")  # an earlier report there is moved aside, never overwritten
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# Incentive audit report", ""]
    if regret is not None and not regret.empty:
        write_atomic(out / "regret.csv", lambda p: regret.to_csv(p, index=False))  # whole or not at all
        plot_regret(regret, out / "regret.png", absolute=absolute)
        agg = regret.groupby("mechanism").agg(
            instances=("instance", "nunique"),
            max_gain=("best_gain", "max"),
            max_rel_gain=("relative_gain", "max"),
            share_violated=("best_gain", lambda g: float((g > 1e-7).mean())),
        )
        lines += ["## Regret over random instances", "", "![regret](regret.png)", "", _markdown(agg.reset_index()), ""]
    if curves is not None and not curves.empty:
        write_atomic(out / "gain_curves.csv", lambda p: curves.to_csv(p, index=False))
        plot_gain_curves(curves, out / "gain_curves.png", absolute=absolute)
        lines += ["## Gain vs misreport factor", "", "![gain curves](gain_curves.png)", ""]
    if claims:
        lines += ["## Claims ledger", "", to_markdown(claims)]
    path = out / "report.md"
    return write_atomic(path, lambda p: p.write_text("\n".join(lines) + "\n", encoding="utf-8"))
