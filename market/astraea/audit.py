"""Tenant-level strategies in Astraea and their audit (spec §7.1, claims 13–14).

A tenant u controls the reports of all its jobs. Its strategies are pure transforms of its true
bids (:func:`marketsim.market.astraea.market.tenant_reports`, beside the market's ``tenant_reports`` hook that
Mesa's tenant agents call): scale every job's utility (``value_scale``), misreport every job's
size (``size_scale``, epochs × factor), delay every submission (``arrival_delay`` hours), hide idle
quota (``hide_workers``: phantom jobs of that many workers filling a whole round of every batch,
submitted first in the batch, so the quota they take is used "for free" in pass 1 instead of being
shared; their true value is 0 and any pass-2 cost they incur is paid), or withhold jobs
(``withhold``: that many of its jobs, largest true work first, are never submitted). Leaving the
coalition is a structural probe (``LEAVE``): the tenant runs alone on its exclusive partition.

:class:`AstraeaTenantTarget` audits them with :mod:`marketsim.market.audit.search`; the deviator's utility is
its TRUE total g_u: its jobs' true values (§7.1 consequence model, phantoms 0) minus its payments
plus its Eq. (2) income. Everyone else reports truthfully; θ, λ and the cluster stay fixed.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.astraea.market import AstraeaBid, AstraeaMarket, tenant_reports
from marketsim.market.auction.market import run_market
from marketsim.market.audit.target import BaseTarget, Dimension, Probe
from marketsim.market.errors import InputError

__all__ = [
    "AstraeaTenantTarget",
    "strategy_gains",
    "STRATEGIES",
    "DEMAND_DIMENSIONS",
]

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


@dataclass
class AstraeaTenantTarget(BaseTarget):
    """Audit target: agent = tenant uid, report = its tuple of bids (or ``"LEAVE"``), utility = its
    TRUE g_u under ``mechanism`` with everyone else truthful (``seed`` fixes any random draws).

    :param market: the instance
    :param mechanism: one of the market's mechanisms
    :param tenants: the audited tenant uids (default: all)
    :param seed: fixes the mechanisms' random draws
    :param max_delay: largest arrival delay a tenant may report, hours
    :param name: the target's name
    :param cache_size: outcomes kept in the target's cache
    :raises InputError: an unknown mechanism or tenant
    """

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
        """The tenant-level strategy dimensions of ``agent``.

        :param agent: a tenant uid
        :returns: value and size scales, arrival delay, hidden workers, withheld jobs
        :raises InputError: an unknown tenant
        """
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
        """All reports: the deviator's ``report`` and everyone else's true bids.

        :param agent: the deviating tenant
        :param report: its bids
        :returns: every bid
        """
        return [b for b in self.market.bids() if b.tenant != agent] + list(report)

    def outcome(self, agent: Hashable, report: Any) -> Any:
        """The run with ``agent`` reporting ``report`` and everyone else truthful.

        :param agent: the deviating tenant
        :param report: its bids or ``"LEAVE"``
        :returns: the decisions and reports
        :raises InputError: a report that is neither bids nor ``"LEAVE"``
        """
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
        """Every tenant's TRUE g when ``agent`` submits ``report`` (effect on the others).

        :param agent: the deviating tenant
        :param report: its bids or ``"LEAVE"``
        :returns: uid -> TRUE g_u
        """
        prof = self.profile(agent, report)
        return self.market.tenant_revenue(run_market(self.market, self.mechanism, prof, self.seed), prof)

    def in_scope(self, family: str) -> bool:
        """Theorem 4 covers lies about demands (job parameters, phantom demand); withholding jobs
        and leaving the coalition are framework extensions.

        :param family: the audit family
        :returns: whether Theorem 4 covers it
        """
        return "withhold" not in family and family != "LEAVE"


def strategy_gains(target: AstraeaTenantTarget, tenant: int) -> dict[str, dict[str, float]]:
    """TRUE g of ``tenant`` under every named strategy in :data:`STRATEGIES` and ``LEAVE``: ``{name:
    {"g": g_u, "gain": g_u − g_u(truthful)}}``.

    :param target: the audit target
    :param tenant: the tenant uid
    :returns: strategy -> ``{"g", "gain"}``
    """
    u0 = target.evaluate(tenant, target.report(tenant, {}))
    out: dict[str, dict[str, float]] = {}
    for name, kw in STRATEGIES.items():
        rep = tuple(tenant_reports(target.market, tenant, **kw))
        g = target.evaluate(tenant, rep)
        out[name] = {"g": g, "gain": g - u0}
    g = target.evaluate(tenant, "LEAVE")
    out["leave_coalition"] = {"g": g, "gain": g - u0}
    return out
