"""The Mesa model of an online (or batch) auction: bidders arrive slot by slot and report to an
auctioneer that runs any registered online mechanism of an :class:`~marketsim.market.auction.market.AuctionMarket`.

One Mesa step = one time slot. In slot ``t`` every :class:`BidderAgent` whose *report* arrives in
``t`` submits it (its :class:`BidStrategy` maps the true bid to the report through the market's
own ``misreport``); the :class:`AuctioneerAgent` calls ``mechanism.step(t, reports)`` and routes
each :class:`~marketsim.market.auction.base.Decision` back to its bidder, which values it with its TRUE type
(``market.true_surplus``). After the last slot the auctioneer flushes ``mechanism.finish()``.
Resources the market lists in ``agents_info()`` (GPU servers, PS hosts, edge sites) become
:class:`ResourceAgent`s fixed on their topology node when the market has a ``graph``.

Markets with tenants (Astraea) may also provide ``tenants()`` (one dict per tenant with its
``tenant`` id and quotas), ``tenant_of(bid)`` and ``tenant_reports(tenant, params)`` (a tenant's
reports under a tenant-level strategy: scaled values or sizes, delays, phantom jobs that hide idle
quota, withheld jobs). Each tenant is then a :class:`TenantAgent` owning its bidders; a tenant
strategy (``tenant_strategies``) replaces the reports of all its jobs: a withheld job never
reports, a phantom job becomes a bidder whose true value is 0. ``tenant_rows`` (if the market has
it) gives each tenant's revenue including its income after the run.

A :class:`mesa.DataCollector` records per slot: bids submitted, admitted so far, revenue and true
welfare so far. :meth:`AuctionModel.summary` gives the market's metrics of the whole run plus the
surplus of deviating and truthful bidders; :meth:`AuctionModel.bidder_frame` one row per bidder.

Randomness: the model's ``rng`` (Mesa ``rng=``) seeds the mechanism's own generator (randomised
baselines, PD-ORS rounding), so the same seed replays the same run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mesa
import numpy as np
import pandas as pd
from mesa.discrete_space import FixedAgent, Network

from marketsim.market.auction.base import Decision, Report
from marketsim.market.auction.market import AuctionMarket
from marketsim.market.errors import InputError

__all__ = [
    "BidStrategy",
    "BidderAgent",
    "TenantAgent",
    "ResourceAgent",
    "AuctioneerAgent",
    "AuctionModel",
    "TRUTHFUL_BID",
]


@dataclass(frozen=True)
class BidStrategy:
    """A bidder's reporting strategy: ``params`` are the market's misreport parameters
    (``{dimension name: value}``, e.g. ``{"value_scale": 2.0}`` or ``{"arrival_delay": 3}``);
    empty means truthful. ``tags`` follow DESIGN "Truth vs report".

    :param params: misreport parameters by dimension name; empty: truthful
    :param name: the strategy's label in results
    """

    params: Mapping[str, float] = field(default_factory=dict)
    name: str = "truthful"

    @property
    def truthful(self) -> bool:
        return not self.params

    @property
    def tags(self) -> dict[str, Any]:
        return {"truthful": self.truthful, "misreports": set(self.params)}

    def report(self, market: AuctionMarket, bid: Report) -> Report:
        """The report this strategy submits for the true ``bid``.

        :param market: the market (it applies the misreport)
        :param bid: the TRUE bid
        :returns: ``bid`` itself when truthful, else ``market.misreport(bid, params)``
        """
        return bid if self.truthful else market.misreport(bid, dict(self.params))


TRUTHFUL_BID = BidStrategy()


class BidderAgent(mesa.Agent):
    """One job owner: a true bid, a strategy, and what the mechanism decided for it."""

    def __init__(
        self, model: AuctionModel, bid: Report, strategy: BidStrategy, report: Report | None | str = "strategy"
    ) -> None:
        """``report``: ``"strategy"`` (default) applies ``strategy``; a report object or ``None``
        (withheld: the bidder never reports) is set by its tenant's strategy.

        :param model: the auction model
        :param bid: the TRUE bid
        :param strategy: the bidder's strategy
        :param report: ``"strategy"``, a report, or ``None`` (withheld)
        :raises InputError: a report that changes the job id or arrives before the true arrival
        """
        super().__init__(model)
        self.bid = bid
        self.job_id = int(bid.job_id)
        self.strategy = strategy
        self.report = strategy.report(model.market, bid) if isinstance(report, str) else report
        self.decision: Decision | None = None
        self.surplus = 0.0
        if self.report is None:
            return
        if int(self.report.job_id) != self.job_id:
            raise InputError(f"bidder[{self.job_id}] report.job_id", self.report.job_id, "must keep the bid's job id")
        if int(self.report.arrival) < int(bid.arrival):
            raise InputError(
                f"bidder[{self.job_id}] report.arrival", self.report.arrival, f"must be >= true arrival {bid.arrival}"
            )

    @property
    def admitted(self) -> bool:
        return self.decision is not None and self.decision.admitted

    @property
    def payment(self) -> float:
        return 0.0 if self.decision is None else float(self.decision.payment)

    def receive(self, decision: Decision) -> None:
        """Take the mechanism's decision and value it with the TRUE type.

        :param decision: the mechanism's decision for this bidder
        """
        self.decision = decision
        self.surplus = float(self.model.market.true_surplus(self.bid, self.report, decision))


class TenantAgent(mesa.Agent):
    """A tenant (``info`` from ``market.tenants()``) owning ``bidders``; ``revenue`` etc. are filled
    from ``market.tenant_rows`` when the run ends (its true value minus payments plus income).

    :param model: the auction model
    :param info: the tenant's entry of ``market.tenants()`` (key ``"tenant"``: its id)
    :param strategy: the tenant's strategy (applied to all its jobs)
    """

    def __init__(self, model: AuctionModel, info: Mapping[str, Any], strategy: BidStrategy) -> None:
        super().__init__(model)
        self.tenant = int(info["tenant"])
        self.info = dict(info)
        self.strategy = strategy
        self.bidders: list[BidderAgent] = []
        self.row: dict[str, Any] = {}

    @property
    def revenue(self) -> float:
        """Tenant revenue g_u after the run (NaN before, or without ``tenant_rows``)."""
        return float(self.row.get("revenue", float("nan")))


class ResourceAgent(FixedAgent):
    """A GPU server, PS host or edge site of the market (``info`` from ``market.agents_info()``),
    fixed on its topology node (``cell`` is ``None`` without a topology).

    :param model: the auction model
    :param info: the resource's entry (``id``, ``kind``, ``capacity``, ``node``)
    :param cell: its cell of the model's network space, or ``None``
    """

    def __init__(self, model: AuctionModel, info: Mapping[str, Any], cell: Any) -> None:
        super().__init__(model)
        self.resource_id = str(info["id"])
        self.kind = str(info.get("kind", "resource"))
        self.capacity = dict(info.get("capacity", {}))
        self.node = info.get("node")
        if cell is not None:
            self.cell = cell


class AuctioneerAgent(mesa.Agent):
    """Runs ``mechanism`` slot by slot on the bidders' reports.

    :param model: the auction model (its market builds the mechanism with the model's mechanism RNG)
    :param mechanism: a mechanism name of the market
    """

    def __init__(self, model: AuctionModel, mechanism: str) -> None:
        super().__init__(model)
        self.name = mechanism
        self.mechanism = model.market.mechanism(mechanism, model.mechanism_rng)
        self.decisions: list[Decision] = []
        self.revenue = 0.0
        self.admitted = 0
        self.welfare = 0.0  # true utility realised by decided bidders so far

    def _route(self, decisions: list[Decision]) -> None:
        for d in decisions:
            bidder = self.model.bidders.get(int(d.job_id))
            if bidder is None:
                raise InputError("decision.job_id", d.job_id, f"is not a bidder of this run ({self.name})")
            if bidder.decision is not None:
                raise InputError("decision.job_id", d.job_id, f"decided twice by {self.name}")
            bidder.receive(d)
            self.decisions.append(d)
            self.revenue += float(d.payment)
            self.admitted += int(bidder.admitted)
            self.welfare += bidder.surplus + bidder.payment

    def run_slot(self, t: int, reports: list[Report]) -> None:
        """Decide slot ``t``.

        :param t: the slot
        :param reports: the reports arriving in slot ``t``
        """
        self._route(self.mechanism.step(t, reports))

    def close(self) -> None:
        """Flush what is still pending at the end of the horizon."""
        self._route(self.mechanism.finish())


class AuctionModel(mesa.Model):
    """``market`` run under ``mechanism`` with per-bidder strategies (default truthful).

    ``strategies``: ``{job_id: BidStrategy}``; ``rng``: anything Mesa accepts (int seed,
    ``SeedSequence``, ``Generator``). Run with :meth:`run`.

    :param market: the instance (bids, resources, mechanisms)
    :param mechanism: one of ``market.mechanisms()``
    :param strategies: job id -> the bidder's strategy; missing: truthful
    :param tenant_strategies: tenant id -> a strategy applied to all its jobs (markets with tenants)
    :param rng: the model's seed
    :raises InputError: an unknown mechanism, job id or tenant, conflicting strategies, or a report
        arriving outside the horizon
    """

    def __init__(
        self,
        market: AuctionMarket,
        mechanism: str,
        strategies: Mapping[int, BidStrategy] | None = None,
        *,
        tenant_strategies: Mapping[int, BidStrategy] | None = None,
        rng: Any = None,
    ) -> None:
        if isinstance(rng, np.random.SeedSequence):
            rng = np.random.default_rng(rng)
        super().__init__(rng=rng)
        self.market = market
        if mechanism not in market.mechanisms():
            raise InputError("mechanism", mechanism, f"must be one of {list(market.mechanisms())} for {market.paper}")
        self.T = int(market.T)
        #: the mechanism's own seed (a replay with ``run_market(..., seed=mechanism_seed)`` decides alike)
        self.mechanism_seed = int(self.rng.integers(0, 2**63 - 1))
        self.mechanism_rng = np.random.default_rng(self.mechanism_seed)
        strategies = dict(strategies or {})
        bids = list(market.bids())
        ids = {int(b.job_id) for b in bids}
        unknown = sorted(set(map(int, strategies)) - ids)
        if unknown:
            raise InputError("strategies", unknown, f"are not job ids of the instance (first ids {sorted(ids)[:5]})")
        self.bidders: dict[int, BidderAgent] = {
            int(b.job_id): BidderAgent(self, b, strategies.get(int(b.job_id), TRUTHFUL_BID)) for b in bids
        }
        self.tenants: dict[int, TenantAgent] = {}
        if tenant_strategies or hasattr(market, "tenants"):
            self._add_tenants(dict(tenant_strategies or {}))
        for b in self.bidders.values():
            if b.report is not None and not 0 <= int(b.report.arrival) < self.T:
                raise InputError(f"bidder[{b.job_id}] report.arrival", b.report.arrival, f"must be in [0, {self.T})")
        graph = getattr(market, "graph", None)
        self.space = Network(graph, random=self.random, layout=None) if graph is not None and len(graph) else None
        self.resources = [
            ResourceAgent(self, info, self.space[info["node"]] if self.space is not None and "node" in info else None)
            for info in (market.agents_info() if hasattr(market, "agents_info") else ())
        ]
        self.auctioneer = AuctioneerAgent(self, mechanism)
        self._by_slot: dict[int, list[BidderAgent]] = {}
        reporting = [b for b in self.bidders.values() if b.report is not None]
        for b in sorted(reporting, key=lambda a: (int(a.report.arrival), a.job_id)):
            self._by_slot.setdefault(int(b.report.arrival), []).append(b)
        self.slot = -1
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "slot": "slot",
                "submitted": lambda m: len(m._by_slot.get(m.slot, ())),
                "admitted": lambda m: m.auctioneer.admitted,
                "revenue": lambda m: m.auctioneer.revenue,
                "welfare": lambda m: m.auctioneer.welfare,
            }
        )

    def _add_tenants(self, tenant_strategies: dict[int, BidStrategy]) -> None:
        market = self.market
        for hook in ("tenants", "tenant_of", "tenant_reports"):
            if not hasattr(market, hook):
                raise InputError("tenant_strategies", sorted(tenant_strategies), f"{market.paper} has no tenants")
        infos = {int(t["tenant"]): t for t in market.tenants()}
        unknown = sorted(set(map(int, tenant_strategies)) - set(infos))
        if unknown:
            raise InputError("tenant_strategies", unknown, f"are not tenants of the instance {sorted(infos)}")
        for uid, info in infos.items():
            self.tenants[uid] = TenantAgent(self, info, tenant_strategies.get(uid, TRUTHFUL_BID))
        for b in self.bidders.values():
            self.tenants[int(market.tenant_of(b.bid))].bidders.append(b)
        for uid, strat in tenant_strategies.items():
            if strat.truthful:
                continue
            tenant = self.tenants[int(uid)]
            reports = {int(r.job_id): r for r in market.tenant_reports(int(uid), dict(strat.params))}
            for b in tenant.bidders:
                if not b.strategy.truthful:
                    raise InputError(
                        f"strategies[{b.job_id}]", b.strategy.name, f"conflicts with tenant {uid}'s strategy"
                    )
                b.strategy = strat
                b.report = reports.pop(b.job_id, None)  # None: withheld
            for jid, rep in sorted(reports.items()):  # jobs the tenant invents (true value 0)
                if jid in self.bidders:
                    raise InputError(f"tenant {uid} report.job_id", jid, "belongs to another tenant's job")
                phantom = BidderAgent(self, rep, strat, report=rep)
                self.bidders[jid] = phantom
                tenant.bidders.append(phantom)

    def step(self) -> None:
        """One slot: arriving bidders report, the auctioneer decides; the last slot also flushes."""
        self.slot += 1
        reports = [b.report for b in self._by_slot.get(self.slot, ())]
        self.auctioneer.run_slot(self.slot, reports)
        if self.slot == self.T - 1:
            self.auctioneer.close()
            self.running = False
            if self.tenants and hasattr(self.market, "tenant_rows"):
                reports = [b.report for b in self.bidders.values() if b.report is not None]
                for row in self.market.tenant_rows(self.auctioneer.decisions, reports):
                    self.tenants[int(row["tenant"])].row = dict(row)
        self.datacollector.collect(self)

    def run(self) -> AuctionModel:
        """Run every slot of the horizon."""
        while self.running and self.slot < self.T - 1:
            self.step()
        return self

    # -- results ---------------------------------------------------------------------------------
    def summary(self) -> dict[str, float]:
        """The market's metrics of the run (TRUE types) plus ``liar_surplus`` / ``truthful_surplus``
        (sum of true surplus of deviating / truthful bidders) and ``liars``.

        :returns: metric name -> value (currency, counts)
        :raises InputError: the run has not finished its horizon
        """
        if self.slot < self.T - 1:
            raise InputError("AuctionModel", self.slot, "has not finished its horizon: call run() first")
        reports = [b.report for b in self.bidders.values() if b.report is not None]
        out = {k: float(v) for k, v in self.market.metrics(self.auctioneer.decisions, reports).items()}
        liars = [b for b in self.bidders.values() if not b.strategy.truthful]
        lying_tenants = [t for t in self.tenants.values() if not t.strategy.truthful]
        out["lying_tenants"] = float(len(lying_tenants))
        out["lying_tenant_revenue"] = float(sum(t.revenue for t in lying_tenants))
        out["liars"] = float(len(liars))
        out["liar_surplus"] = float(sum(b.surplus for b in liars))
        out["truthful_surplus"] = float(sum(b.surplus for b in self.bidders.values() if b.strategy.truthful))
        return out

    def bidder_frame(self) -> pd.DataFrame:
        """One row per bidder: job id, strategy, admitted, payment, completion, true surplus."""
        rows = [
            {
                "job_id": b.job_id,
                "strategy": b.strategy.name,
                "arrival": int(b.bid.arrival),
                "reported_arrival": None if b.report is None else int(b.report.arrival),
                "admitted": b.admitted,
                "payment": b.payment,
                "completion": None if b.decision is None else b.decision.completion,
                "surplus": b.surplus,
            }
            for b in sorted(self.bidders.values(), key=lambda a: a.job_id)
        ]
        return pd.DataFrame(rows)
