"""Tenant-level strategies in Astraea and their audit (spec §7.1, claims 13–14).

A tenant u controls the reports of all its jobs. Its strategies are pure transforms of its true
bids (:func:`tenant_reports`): scale every job's utility (``value_scale``), misreport every job's
size (``size_scale``, epochs × factor), delay every submission (``arrival_delay`` hours), hide idle
quota (``hide_workers``: phantom jobs of that many workers filling a whole round of every batch,
submitted first in the batch, so the quota they take is used "for free" in pass 1 instead of being
shared; their true value is 0 and any pass-2 cost they incur is paid), or withhold jobs
(``withhold``: that many of its jobs, largest true work first, are never submitted). Leaving the
coalition is a structural probe (``LEAVE``): the tenant runs alone on its exclusive partition.

:class:`AstraeaTenantTarget` audits them with :mod:`market.audit.search`; the deviator's utility is
its TRUE total g_u: its jobs' true values (§7.1 consequence model, phantoms 0) minus its payments
plus its Eq. (2) income. Everyone else reports truthfully; θ, λ and the cluster stay fixed.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market.astraea.market import PHANTOM_PREFIX, AstraeaBid, AstraeaMarket, make_bid, scale_spec
from market.astraea.model import JobSpec, linear_utility
from market.auction.market import run_market
from market.audit.target import BaseTarget, Dimension, Probe
from market.errors import InputError, check_int

__all__ = [
    "AstraeaTenantTarget",
    "tenant_reports",
    "phantom_jobs",
    "strategy_gains",
    "STRATEGIES",
    "DEMAND_DIMENSIONS",
    "PHANTOM_ID_BASE",
]

PHANTOM_ID_BASE = 10**7
DEMAND_DIMENSIONS = ("value_scale", "size_scale", "arrival_delay", "hide_workers")
# named tenant strategies (truthful first); values are tenant_reports keyword arguments, with
# "half" = half the tenant's quota (hide) or half its jobs (withhold)
STRATEGIES: dict[str, dict[str, Any]] = {
    "truthful": {},
    "inflate_values": {"value_scale": 2.0},
    "deflate_values": {"value_scale": 0.5},
    "oversize_jobs": {"size_scale": 1.5},
    "undersize_jobs": {"size_scale": 0.75},
    "delay_jobs": {"arrival_delay": 2},
    "hide_idle_quota": {"hide_workers": "half"},
    "withhold_jobs": {"withhold": "half"},
}


def _tenant(market: AstraeaMarket, tenant: int) -> Any:
    for t in market.cluster.tenants:
        if t.uid == tenant:
            return t
    raise InputError("tenant", tenant, f"is not a tenant uid {list(market.cluster.uids)}")


def phantom_jobs(market: AstraeaMarket, tenant: int, workers: int) -> list[AstraeaBid]:
    """Phantom jobs hiding ``workers`` of ``tenant``'s quota: for every batch l the engine can run,
    λ jobs of ``workers`` workers submitted at the batch start 2^(l−1) (0 for l = 1) whose work fills
    exactly one round (τ_l slots at 1 mini-batch per worker-hour) and whose reported utility is
    large enough to be admitted at any posted price. True value 0."""
    k = check_int("hide_workers", workers, minimum=0)
    if k == 0:
        return []
    p = market.params
    L = 0
    while p.lam * 2 ** (L + 2) <= p.horizon_T:
        L += 1
    big = 2.0 * (max(p.theta_w or 1.0, p.theta_p or 1.0)) * (k + 1) * 2 ** (L + 1) + 1.0
    out = []
    for l in range(1, L + 1):
        for i in range(p.lam):
            spec = JobSpec(
                f"{PHANTOM_PREFIX}{tenant}:{l}:{i}",
                tenant,
                0.0 if l == 1 else float(2 ** (l - 1)),
                2**l,
                k,
                1,
                1.0,
                0.0,
                0.0,
                linear_utility(-1e-6, big),
                k,
                1.0,
                1.0,
            )
            out.append(make_bid(PHANTOM_ID_BASE + 1000 * len(out) + tenant % 1000, spec))
    return out


def tenant_reports(
    market: AstraeaMarket,
    tenant: int,
    *,
    value_scale: float = 1.0,
    size_scale: float = 1.0,
    arrival_delay: float = 0.0,
    hide_workers: int | str = 0,
    withhold: int | str = 0,
) -> list[AstraeaBid]:
    """``tenant``'s reports under a strategy (see the module docstring); ``"half"`` for
    ``hide_workers`` / ``withhold`` means half its worker quota / half its jobs (rounded down).
    All-default arguments return its true bids."""
    t = _tenant(market, tenant)
    mine = [b for b in market.bids() if b.tenant == tenant]
    hide = t.quota_workers // 2 if hide_workers == "half" else int(hide_workers)
    if not 0 <= hide <= t.quota_workers:
        raise InputError("hide_workers", hide_workers, f"must lie in [0, {t.quota_workers}] (the tenant's quota)")
    drop = len(mine) // 2 if withhold == "half" else int(withhold)
    if not 0 <= drop <= len(mine):
        raise InputError("withhold", withhold, f"must lie in [0, {len(mine)}] (the tenant's jobs)")
    by_size = sorted(mine, key=lambda b: (-b.spec.work, b.job_id))
    dropped = {b.job_id for b in by_size[:drop]}
    out = []
    for b in mine:
        if b.job_id in dropped:
            continue
        spec = scale_spec(b.spec, value=value_scale, size=size_scale, delay=arrival_delay)
        out.append(b if spec is b.spec else make_bid(b.job_id, spec))
    return phantom_jobs(market, tenant, hide) + out


@dataclass
class AstraeaTenantTarget(BaseTarget):
    """Audit target: agent = tenant uid, report = its tuple of bids (or ``"LEAVE"``), utility = its
    TRUE g_u under ``mechanism`` with everyone else truthful (``seed`` fixes any random draws)."""

    market: AstraeaMarket
    mechanism: str = "astraea"
    tenants: Sequence[int] | None = None
    seed: int = 0
    max_delay: int = 4
    _dims: dict[int, list[Dimension]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in self.market.mechanisms():
            raise InputError("mechanism", self.mechanism, f"must be one of {list(self.market.mechanisms())}")
        uids = list(self.market.cluster.uids)
        if self.tenants is not None:
            bad = [u for u in self.tenants if u not in uids]
            if bad:
                raise InputError("tenants", bad, f"are not tenant uids {uids}")
        for t in self.market.cluster.tenants:
            n = sum(1 for b in self.market.bids() if b.tenant == t.uid)
            self._dims[t.uid] = [
                Dimension("value_scale", "factor", 0.25, 4.0),
                Dimension("size_scale", "factor", 0.5, 2.0),
                Dimension("arrival_delay", "value", 0, self.max_delay, 0, integer=True),
                Dimension("hide_workers", "value", 0, t.quota_workers, 0, integer=True),
                Dimension("withhold", "value", 0, n, 0, integer=True),
            ]
        if self.name == "target":
            self.name = f"{self.mechanism}[tenants]@astraea"

    def agents(self) -> Sequence[Hashable]:
        return list(self.market.cluster.uids) if self.tenants is None else list(self.tenants)

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        if agent not in self._dims:
            raise InputError("agent", agent, f"is not a tenant uid {list(self._dims)}")
        return self._dims[agent]  # type: ignore[index]

    def report(self, agent: Hashable, params: Mapping[str, float]) -> tuple[AstraeaBid, ...]:
        kw = {k: (int(round(v)) if k in ("hide_workers", "withhold") else float(v)) for k, v in params.items()}
        return tuple(tenant_reports(self.market, int(agent), **kw))  # type: ignore[arg-type]

    def report_key(self, agent: Hashable, report: Any) -> Hashable:
        return (agent, repr(report))

    def probes(self, agent: Hashable, rng: np.random.Generator) -> Sequence[Probe]:
        return [Probe("LEAVE", "leave the coalition (alone on its exclusive partition)", "LEAVE")]

    def profile(self, agent: Hashable, report: Sequence[AstraeaBid]) -> list[AstraeaBid]:
        """All reports: the deviator's ``report`` and everyone else's true bids."""
        return [b for b in self.market.bids() if b.tenant != agent] + list(report)

    def outcome(self, agent: Hashable, report: Any) -> Any:
        if isinstance(report, str):
            if report != "LEAVE":
                raise InputError("report", report, "must be a tuple of bids or 'LEAVE'")
            return ("LEAVE", self.market.exclusive_revenue(self.market.bids())[int(agent)])  # type: ignore[index]
        prof = self.profile(agent, report)
        return prof, run_market(self.market, self.mechanism, prof, self.seed)

    def utility(self, agent: Hashable, outcome: Any) -> float:
        prof, res = outcome
        if isinstance(prof, str):
            return float(res)
        return float(self.market.tenant_revenue(res, prof)[int(agent)])  # type: ignore[index]

    def all_revenues(self, agent: Hashable, report: Any) -> dict[int, float]:
        """Every tenant's TRUE g when ``agent`` submits ``report`` (effect on the others)."""
        prof = self.profile(agent, report)
        return self.market.tenant_revenue(run_market(self.market, self.mechanism, prof, self.seed), prof)

    def in_scope(self, family: str) -> bool:
        """Theorem 4 covers lies about demands (job parameters, phantom demand); withholding jobs
        and leaving the coalition are framework extensions."""
        return "withhold" not in family and family != "LEAVE"


def strategy_gains(target: AstraeaTenantTarget, tenant: int) -> dict[str, dict[str, float]]:
    """TRUE g of ``tenant`` under every named strategy in :data:`STRATEGIES` and ``LEAVE``: ``{name:
    {"g": g_u, "gain": g_u − g_u(truthful)}}``."""
    u0 = target.evaluate(tenant, target.report(tenant, {}))
    out: dict[str, dict[str, float]] = {}
    for name, kw in STRATEGIES.items():
        rep = tuple(tenant_reports(target.market, tenant, **kw))
        g = target.evaluate(tenant, rep)
        out[name] = {"g": g, "gain": g - u0}
    g = target.evaluate(tenant, "LEAVE")
    out["leave_coalition"] = {"g": g, "gain": g - u0}
    return out
