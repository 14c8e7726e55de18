"""Incentive-property assertions for users' tests (and this repository's own).

Each ``assert_*`` runs a registered mechanism (or a callable with the fair-share signature) on
instances and raises :class:`IncentiveViolation` (an ``AssertionError``) naming the mechanism, the
instance, the agent and the witness when the property fails; it returns the per-instance figures
when it holds. Use them in plain pytest, or with the hypothesis strategies of
:mod:`marketsim.market.testing.strategies` so a failure is shrunk to a small witness::

    from hypothesis import given
    from marketsim.market.testing import assert_strategyproof
    from marketsim.market.testing.strategies import fair_share_instances

    @given(fair_share_instances(tenants=(2, 3), gpu_types=(2, 3)))
    def test_my_rule_is_strategyproof(instance):
        assert_strategyproof("my-rule", [instance])

Instances: :class:`~marketsim.market.audit.instances.FairShareInstance` (TRUE speedups ``W`` (n, k), GPUs ``m`` (k,),
optional ``weights`` / ``caps``) for fair-share allocators, :class:`AuctionInstance` (an
:class:`~marketsim.market.auction.market.AuctionMarket` and the mechanism seed) for online auctions; a
``(W, m)`` tuple or a mapping with those keys is accepted for fair share.

The pytest plugin :mod:`marketsim.market.pytest_plugin` (entry point ``pytest11``) adds the
``--marketsim-budget`` option and the ``incentive`` fixture.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from marketsim.market.audit.instances import FairShareInstance
from marketsim.market.audit.search import AuditConfig, AuditResult, audit
from marketsim.market.errors import InputError, check_choice

__all__ = [
    "FairShareInstance",
    "AuctionInstance",
    "IncentiveViolation",
    "BUDGETS",
    "assert_strategyproof",
    "assert_individually_rational",
    "assert_envy_free",
    "assert_sharing_incentive",
    "assert_budget_balanced",
    "assert_no_counterexample",
    "auction_instance",
]

#: search budgets of :func:`assert_strategyproof` (``"fast"`` for property-based tests)
BUDGETS: dict[str, AuditConfig] = {
    "fast": AuditConfig(n_grid=6, n_zoom=2, n_tail=2, edge_steps=6, n_joint=12, refine_starts=1, refine_maxfev=30),
    "default": AuditConfig(),
    "thorough": AuditConfig(
        n_grid=20, n_zoom=4, n_tail=6, edge_steps=24, n_joint=96, refine_starts=3, refine_maxfev=120
    ),  # fmt: skip
}
_DIRECTIONS = {"any": None, "up": ("UP_*",), "down": ("DOWN_*",)}


@dataclass(frozen=True)
class AuctionInstance:
    """An online-auction instance: ``market`` (an :class:`~marketsim.market.auction.market.AuctionMarket`),
    the mechanism ``seed`` (fixes randomised mechanisms' draws) and a ``label`` for messages.

    :param market: the bids and the mechanism adapter
    :param seed: the mechanism's seed
    :param label: the instance's name in failure messages (``""``: the paper and the bid count)
    """

    market: Any
    seed: int = 0
    label: str = ""

    def describe(self) -> str:
        """The label, or the paper and the number of bids."""
        return self.label or f"{getattr(self.market, 'paper', 'auction')} instance with {len(self.market.bids())} bids"


@dataclass
class IncentiveViolation(AssertionError):
    """A property failed: ``prop`` of ``mechanism`` on ``instance`` for ``agent``, with ``witness``
    (JSON-ready: the misreport and the gain, the envied agent, the shortfall ...).

    :param prop: the property, e.g. ``"strategy-proof"``
    :param mechanism: the mechanism's name
    :param instance: the instance it failed on
    :param agent: the tenant row or bidder that gains, envies or loses
    :param witness: the figures that show it
    """

    prop: str
    mechanism: str
    instance: Any
    agent: Any
    witness: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        desc = self.instance.describe() if hasattr(self.instance, "describe") else repr(self.instance)
        detail = ", ".join(f"{k}={_fmt(v)}" for k, v in self.witness.items())
        return f"{self.mechanism} is not {self.prop}: agent {self.agent!r} on {desc}: {detail}"


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _family(mechanism: Any) -> tuple[str, str]:
    """``(name, family)`` of a registered name or a fair-share callable."""
    if callable(mechanism):
        return getattr(mechanism, "__name__", "fair-share"), "fair-share"
    if not isinstance(mechanism, str):
        raise InputError("mechanism", mechanism, "must be a registered mechanism name or a fair-share callable")
    from marketsim.market import registry

    return mechanism, registry.get(mechanism).family


def _require(mechanism: Any, family: str, why: str) -> str:
    """The mechanism's name; :class:`InputError` unless it belongs to ``family``."""
    name, fam = _family(mechanism)
    if fam != family:
        raise InputError("mechanism", name, f"is a {fam} mechanism; {why}")
    return name


def _fair_instances(instances: Any) -> list[FairShareInstance]:
    items = [instances] if isinstance(instances, FairShareInstance | Mapping) else list(instances)
    if not items:
        raise InputError("instances", instances, "must hold at least one instance")
    out = []
    for it in items:
        if isinstance(it, FairShareInstance):
            out.append(it)
        elif isinstance(it, Mapping):
            out.append(FairShareInstance(**dict(it)))
        elif isinstance(it, tuple | list) and len(it) == 2:
            out.append(FairShareInstance(*it))
        else:
            raise InputError("instances[]", it, "must be a FairShareInstance, a (W, m) tuple or a mapping with W and m")
    return out


def _auction_instances(instances: Any) -> list[AuctionInstance]:
    items = [instances] if isinstance(instances, AuctionInstance) else list(instances)
    if not items:
        raise InputError("instances", instances, "must hold at least one instance")
    for it in items:
        if not isinstance(it, AuctionInstance):
            raise InputError("instances[]", it,
                             "must be an AuctionInstance (see marketsim.market.testing.auction_instance)")
    return items


def _config(budget: str | AuditConfig, direction: str) -> AuditConfig:
    check_choice("direction", direction, tuple(_DIRECTIONS))
    if isinstance(budget, AuditConfig):
        cfg = budget
    else:
        check_choice("budget", budget, tuple(BUDGETS))
        cfg = BUDGETS[budget]
    fams = _DIRECTIONS[direction]
    if fams is None:
        return cfg
    return replace(cfg, families=fams, probes=False)


def assert_strategyproof(
    mechanism: str | Callable[..., Any],
    instances: Any,
    *,
    dims: Iterable[str] | None = None,
    direction: str = "any",
    budget: str | AuditConfig = "fast",
    rel_tol: float = 1e-7,
    agents: Sequence[Any] | None = None,
    seed: int = 0,
) -> list[AuditResult]:
    """No agent gains by misreporting (others truthful), on every instance.

    The audit (:func:`marketsim.market.audit.search.audit`) searches each agent's reportable ``dims``
    (fair share: speedup columns ``"1"``, ``"2"``, ... and, only when named, the weight
    ``"weight"`` (a factor on the tenant's weight, 1 when the instance has none); auctions: the
    market's fields such as ``value_scale``; ``None`` = every speedup column / field) in
    ``direction`` (``"up"`` over-reports only, as OEF's Theorem 5.4 states it, ``"down"`` or
    ``"any"``) with ``budget`` (a name of :data:`BUDGETS` or an :class:`AuditConfig`). A gain above
    ``rel_tol × max(1, |truthful utility|)`` (TRUE utility units: normalised throughput, or
    currency) raises :class:`IncentiveViolation` with the lie,
    both utilities and the gain. Returns every :class:`AuditResult` when none violates.

    :param mechanism: a registered name (fair share or auction), or a callable with the fair-share signature
    :param instances: fair-share instances (:class:`FairShareInstance`, ``(W, m)`` or a mapping) or
        :class:`AuctionInstance` objects
    :param dims: the reportable dimensions to search; ``None``: every speedup column / market field
    :param direction: ``"any"``, ``"up"`` or ``"down"``
    :param budget: a name of :data:`BUDGETS` or an :class:`AuditConfig`
    :param rel_tol: the tolerated gain, relative to ``max(1, |truthful utility|)``
    :param agents: the agents to audit; ``None``: every agent
    :param seed: the search's seed
    :returns: one :class:`AuditResult` per (instance, agent)
    :raises IncentiveViolation: an agent gains by a misreport
    """
    __tracebackhide__ = True  # pytest: show the violation, not this library's source
    name, family = _family(mechanism)
    cfg = _config(budget, direction)
    cfg = replace(cfg, rel_tol=float(rel_tol))
    dims = None if dims is None else list(dims)
    results: list[AuditResult] = []
    if family == "fair-share":
        from marketsim.market.audit.fairshare import FairShareTarget

        weight = dims is not None and "weight" in dims  # the weight is a dimension only when asked for
        targets = [(inst, FairShareTarget(mechanism, W=inst.W, m=inst.m, weights=inst.weights, caps=inst.caps,
                                          n_arbitrary=0 if direction != "any" else 4,
                                          copy_others=direction == "any", weight_claims=weight))
                   for inst in _fair_instances(instances)]  # fmt: skip
    else:
        from marketsim.market.audit.online import OnlineAuctionTarget

        targets = [(inst, OnlineAuctionTarget(inst.market, name, seed=inst.seed))
                   for inst in _auction_instances(instances)]  # fmt: skip
    for inst, target in targets:
        for a in target.agents() if agents is None else agents:
            res = audit(target, a, config=cfg, rng=seed, dimensions=dims)
            results.append(res)
            if res.violated:
                lie: dict[str, Any] = {}
                if family == "fair-share":  # the reported row itself (factors or a copied / random row)
                    lie["reported_row"] = [round(float(v), 9) for v in res.witness_report[0]]
                raise IncentiveViolation(
                    "strategy-proof",
                    name,
                    inst,
                    a,
                    {
                        "misreport": res.witness if isinstance(res.witness, dict) else str(res.witness),
                        **lie,
                        "family": res.witness_family,
                        "truthful_utility": float(res.truthful_utility),
                        "lying_utility": float(res.truthful_utility + res.best_gain),
                        "gain": float(res.best_gain),
                        "relative_gain": float(res.relative_gain) if np.isfinite(res.relative_gain) else None,
                        "at_limit": bool(res.at_limit),
                    },
                )
    return results


def _fair_allocation(mechanism: Any, inst: FairShareInstance) -> tuple[np.ndarray, np.ndarray]:
    from marketsim.market.audit.fairshare import resolve_fair_share

    _, fn = resolve_fair_share(mechanism)
    Wt = inst.W / inst.W[:, :1]
    X = np.asarray(fn(Wt, inst.m, weights=inst.weights, caps=inst.caps).X, dtype=float)
    return Wt, X


def _tol(scale: float, tol: float) -> float:
    return tol * max(1.0, abs(scale))


def assert_envy_free(mechanism: str | Callable[..., Any], instances: Any, *, tol: float = 1e-7) -> list[float]:
    """Fair share, truthful reports: no tenant prefers another's (weight-scaled) bundle under its
    TRUE speedups by more than ``tol × max(1, its throughput)`` (normalised throughput units).
    Returns the max envy per instance.

    :param mechanism: a registered fair-share name, or a callable with the fair-share signature
    :param instances: fair-share instances: :class:`FairShareInstance` objects, ``(W, m)`` tuples or mappings
    :param tol: the tolerated envy, relative to ``max(1, own throughput)``
    :returns: the largest envy per instance (>= 0)
    :raises IncentiveViolation: a tenant envies another
    """
    __tracebackhide__ = True  # pytest: show the violation, not this library's source
    name = _require(mechanism, "fair-share", "envy-freeness is a fair-share property")
    from marketsim.market.oef.properties import envy, envy_matrix

    out = []
    for inst in _fair_instances(instances):
        Wt, X = _fair_allocation(mechanism, inst)
        e = np.asarray(envy(Wt, X, inst.weights), dtype=float)
        own = np.einsum("lj,lj->l", Wt, X)
        for l in range(e.size):
            if e[l] > _tol(own[l], tol):
                w = np.ones(e.size) if inst.weights is None else inst.weights
                i = int(np.argmax(envy_matrix(Wt, X)[l] / w))
                raise IncentiveViolation("envy-free", name, inst, l, {"envies": i, "envy": float(e[l]),
                                         "own": float(own[l]), "allocation": X.round(6).tolist()})  # fmt: skip
        out.append(float(max(0.0, e.max(initial=0.0))))
    return out


def assert_sharing_incentive(mechanism: str | Callable[..., Any], instances: Any, *, tol: float = 1e-7) -> list[float]:
    """Fair share, truthful reports: every tenant gets at least the TRUE throughput of its
    (weighted) equal split of every GPU type, ``(pi_l / sum pi) W_l . m``, up to
    ``tol × max(1, threshold)``. Returns the max shortfall per instance.

    :param mechanism: a registered fair-share name, or a callable with the fair-share signature
    :param instances: fair-share instances: :class:`FairShareInstance` objects, ``(W, m)`` tuples or mappings
    :param tol: the tolerated shortfall, relative to ``max(1, threshold)``
    :returns: the largest shortfall per instance (>= 0)
    :raises IncentiveViolation: a tenant gets less than its equal split
    """
    __tracebackhide__ = True  # pytest: show the violation, not this library's source
    name = _require(mechanism, "fair-share", "sharing incentive is a fair-share property")
    from marketsim.market.oef.properties import si_threshold

    out = []
    for inst in _fair_instances(instances):
        Wt, X = _fair_allocation(mechanism, inst)
        thr = np.asarray(si_threshold(Wt, inst.m, inst.weights), dtype=float)
        got = np.einsum("lj,lj->l", Wt, X)
        gap = thr - got
        l = int(np.argmax(gap))
        if gap[l] > _tol(thr[l], tol):
            raise IncentiveViolation("sharing-incentive", name, inst, l, {"throughput": float(got[l]),
                                     "equal_split": float(thr[l]), "shortfall": float(gap[l])})  # fmt: skip
        out.append(float(max(0.0, gap.max())))
    return out


def _auction_run(name: str, inst: AuctionInstance) -> list[Any]:
    from marketsim.market.auction.market import run_market

    return run_market(inst.market, name, None, inst.seed)


def assert_individually_rational(mechanism: str, instances: Any, *, tol: float = 1e-9) -> list[float]:
    """Online auctions, truthful bids: every bidder's TRUE surplus (value earned minus payment,
    currency) is at least ``-tol × max(1, its payment)``. Fair-share allocators have no payments
    (their participation guarantee is :func:`assert_sharing_incentive`). Returns the worst surplus
    per instance.

    :param mechanism: a registered auction mechanism's name
    :param instances: :class:`AuctionInstance` objects (e.g. from :func:`auction_instance`)
    :param tol: the tolerated loss, relative to ``max(1, payment)``
    :returns: the worst bidder surplus per instance, currency
    :raises IncentiveViolation: a truthful bidder loses
    """
    __tracebackhide__ = True  # pytest: show the violation, not this library's source
    name = _require(mechanism, "auction", "fair-share allocators have no payments: use assert_sharing_incentive")
    from marketsim.market.auction.market import decisions_by_id

    out = []
    for inst in _auction_instances(instances):
        decs = decisions_by_id(_auction_run(name, inst))
        worst = math.inf
        for bid in inst.market.bids():
            d = decs.get(int(bid.job_id))
            s = float(inst.market.true_surplus(bid, bid, d))
            pay = 0.0 if d is None else float(d.payment)
            if s < -_tol(pay, tol):
                raise IncentiveViolation("individually rational", name, inst, int(bid.job_id),
                                         {"surplus": s, "payment": pay,
                                          "admitted": bool(d is not None and d.admitted)})  # fmt: skip
            worst = min(worst, s)
        out.append(worst if math.isfinite(worst) else 0.0)
    return out


def assert_budget_balanced(mechanism: str, instances: Any, *, mode: str = "weak", tol: float = 1e-9) -> list[float]:
    """Online auctions, truthful bids: payments collected versus incomes paid out to agents
    (each decision's ``log["income"]``, e.g. Astraea's Eq. (2) division). ``mode="weak"``: no
    deficit, ``sum incomes <= sum payments``; ``mode="exact"``: equal. Tolerance
    ``tol × max(1, sum payments)`` (currency). Returns the residual ``sum payments - sum incomes``
    per instance.

    :param mechanism: a registered auction mechanism's name
    :param instances: :class:`AuctionInstance` objects (e.g. from :func:`auction_instance`)
    :param mode: ``"weak"`` or ``"exact"``
    :param tol: the tolerated residual, relative to ``max(1, sum payments)``
    :returns: ``sum payments - sum incomes`` per instance, currency
    :raises IncentiveViolation: a deficit (or, exact, any residual)
    """
    __tracebackhide__ = True  # pytest: show the violation, not this library's source
    check_choice("mode", mode, ("weak", "exact"))
    name = _require(mechanism, "auction", "fair-share allocators have no payments to balance")
    out = []
    for inst in _auction_instances(instances):
        decs = _auction_run(name, inst)
        pay = math.fsum(float(d.payment) for d in decs)
        inc = math.fsum(float(np.sum(d.log["income"])) for d in decs if d.log.get("income") is not None)
        residual = pay - inc
        bad = residual < -_tol(pay, tol) if mode == "weak" else abs(residual) > _tol(pay, tol)
        if bad:
            raise IncentiveViolation(f"budget balanced ({mode})", name, inst, "auctioneer",
                                     {"payments": pay, "incomes": inc, "residual": residual})  # fmt: skip
        out.append(residual)
    return out


def auction_instance(study: str, seed: int = 0, **overrides: Any) -> AuctionInstance:
    """The ``[audit]`` instance of embedded study ``study`` (e.g. ``"oasis"``, ``"eris"``,
    ``"control_auction"``) drawn with ``seed``, with parameter ``overrides``.

    :param study: an embedded study's name
    :param seed: the seed of the instance's draw and of the mechanism
    :param overrides: market parameters replacing the study's ``[audit]`` ones
    :returns: the instance
    """
    from marketsim.market.studies import audit_params, build_market

    paper, params = audit_params(study)
    market = build_market(paper, {**params, **overrides}, np.random.default_rng(seed))
    return AuctionInstance(market, seed=seed, label=f"[audit] instance of {study} (seed {seed})")


def assert_no_counterexample(
    mechanism: str | Callable[..., Any] | None = None,
    *,
    space: Any = None,
    tenants: int | tuple[int, int] = (2, 4),
    gpu_types: int | tuple[int, int] = (2, 3),
    m_max: int = 4,
    direction: str = "any",
    evals: int = 60,
    seconds: float | None = None,
    seed: int = 0,
    optimiser: str = "de",
) -> Any:
    """Hunt for a property violation (:func:`marketsim.market.audit.hunt.hunt`) within a budget and fail
    with the shrunk witness.

    Fair-share ``mechanism`` (a registered name or a callable with the fair-share signature):
    the hunt (differential evolution by default) searches instances of ``tenants`` x
    ``gpu_types`` (ints or inclusive ranges; speedup steps in [1, 1.6], ``1..m_max`` GPUs per
    type) for a misreport of row 0 in ``direction``
    (``"up"``: inflation, OEF's scope; ``"down"``; ``"any"``) that gains more than the audit's
    tolerance. Or pass any :class:`marketsim.market.audit.hunt.HuntSpace` as ``space`` (auctions, your own
    properties). Budget: ``evals`` evaluations (deterministic per ``seed``); ``seconds`` only caps them.
    Raises :class:`IncentiveViolation` with the witness of the shrunk instance (fewer agents and
    types, rounder numbers); returns the :class:`~marketsim.market.audit.hunt.HuntResult` when nothing
    was found.

    :param mechanism: a fair-share mechanism (name or callable); ``None`` with ``space``
    :param space: a :class:`~marketsim.market.audit.hunt.HuntSpace` to search instead of the fair-share one
    :param tenants: tenants per instance, an int or an inclusive range
    :param gpu_types: GPU types per instance, an int or an inclusive range
    :param m_max: the most GPUs of one type
    :param direction: ``"any"``, ``"up"`` or ``"down"``
    :param evals: the evaluation budget
    :param seconds: a wall-time cap in seconds; ``None``: none
    :param seed: the hunt's seed
    :param optimiser: the hunt's optimiser (``"de"``: differential evolution)
    :returns: the hunt's result when nothing was found
    :raises InputError: neither a mechanism nor a space, or an unknown direction
    :raises IncentiveViolation: a violation was found
    """
    __tracebackhide__ = True
    from marketsim.market.audit.hunt import hunt
    from marketsim.market.audit.hunt_spaces import MisreportSpace

    if space is None:
        if mechanism is None:
            raise InputError("mechanism", None, "give a fair-share mechanism or a hunt space")
        name = _require(mechanism, "fair-share", "pass an auction's HuntSpace as space=")
        scope = {"any": "all", "up": "up", "down": "down"}.get(direction)
        if scope is None:
            raise InputError("direction", direction, f"must be one of {sorted(_DIRECTIONS)}")
        rng_n = (tenants, tenants) if isinstance(tenants, int) else tuple(tenants)
        rng_k = (gpu_types, gpu_types) if isinstance(gpu_types, int) else tuple(gpu_types)
        space = MisreportSpace(f"testing:{name}:{direction}", n=rng_n, k=rng_k, m_max=m_max, mechanism=mechanism,
                               scope=scope)  # fmt: skip
    else:
        name = str(getattr(space, "name", "space")) if mechanism is None else _family(mechanism)[0]
    res = hunt(space, evals=evals, seconds=seconds, seed=seed, optimiser=optimiser, baseline=False)
    if res.violated:
        w = dict(res.witness or {})
        inst = res.best_instance
        agent = w.pop("deviator", w.get("job_id"))
        keep = ("family", "params", "report", "truthful_utility", "lie_utility", "gain", "relative_gain",
                "lie", "truthful_surplus", "property", "value", "tol")  # fmt: skip
        raise IncentiveViolation(
            "free of counterexamples (hunt)",
            name,
            inst,
            agent,
            {"found_after_evaluations": res.evaluations, **{k: w[k] for k in keep if k in w}},
        )
    return res
