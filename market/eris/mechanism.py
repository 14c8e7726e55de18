"""ERIS — the online posted-price auction (spec §3.6, paper Alg. 1) and the realised outcome.

Usage::

    auction = ErisAuction(sites, NetworkSpec(), ErisConfig(horizon=T))
    decisions = auction.run(bids)          # or auction.step(now, bids_arriving_now) slot by slot
    outcome = run_eris(bids, sites, NetworkSpec(), ErisConfig(horizon=T))   # registered as "eris"

Slots are ``1..T``. Jobs of one slot are processed in (arrival, job_id) order; each sees the
prices left by all earlier jobs; the accepted schedule is committed and prices rise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from marketsim.market.auction.base import Decision, OnlineMechanism, Schedule
from marketsim.market.eris.deploy import prepare_job
from marketsim.market.eris.network import Links, build_links
from marketsim.market.eris.prices import ErisState, SlotView
from marketsim.market.eris.schedule import MenuStats, build_menu, choose
from marketsim.market.eris.types import ErisConfig, ErisJob, ErisSchedule, ErisSites, MenuEntry, NetworkSpec
from marketsim.market.errors import InputError
from marketsim.market.registry import register
from marketsim.market.types import EdgeSite
from marketsim.market.utility import Utility

__all__ = ["ErisDecision", "ErisAuction", "ErisOutcome", "run_eris", "as_sites", "realised_value", "realised_utility"]


@dataclass(frozen=True)
class ErisDecision(Decision):
    """:class:`marketsim.market.auction.base.Decision` plus Eris' fields: ``mu`` (reported payoff), the
    chosen ``deadline``, ``menu_size`` and the full ``plan`` (an :class:`ErisSchedule`).

    :param job_id: the report's job
    :param admitted: whether it was accepted
    :param schedule: its reserved schedule, or ``None``
    :param payment: what it is charged, currency
    :param completion: the completion slot, or ``None``
    :param payoff: the reported surplus, currency
    :param utility: the reported utility earned, currency
    :param log: mechanism details
    :param mu: the reported payoff of the chosen entry
    :param deadline: the chosen deadline, or ``None``
    :param menu_size: entries of the menu
    :param plan: the full schedule, or ``None``
    """

    mu: float = 0.0
    deadline: int | None = None
    menu_size: int = 0
    plan: ErisSchedule | None = field(default=None, compare=False)

    @property
    def accepted(self) -> bool:
        return self.admitted


def as_sites(sites: ErisSites | Sequence[EdgeSite] | np.ndarray) -> ErisSites:
    """Accept :class:`ErisSites`, core :class:`EdgeSite` objects or an (R, K) capacity table."""
    if isinstance(sites, ErisSites):
        return sites
    if isinstance(sites, np.ndarray) or (isinstance(sites, Sequence) and sites and not isinstance(sites[0], EdgeSite)):
        return ErisSites.from_capacity(sites)
    return ErisSites.from_edge_sites(list(sites))


def _auction_schedule(job_id: int, plan: ErisSchedule, R: int) -> Schedule:
    workers = {p.t: np.asarray(p.workers, dtype=np.int64).copy() for p in plan.slots}
    ps = {}
    for p in plan.slots:
        z = np.zeros(R, dtype=np.int64)
        if p.ps_site >= 0:
            z[p.ps_site] = 1
        ps[p.t] = z
    return Schedule(job_id, plan.completion, workers, ps)


def setup_market(
    mech: OnlineMechanism,
    sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
    network: NetworkSpec | None,
    config: ErisConfig | None,
    horizon: int | None,
) -> None:
    """Common constructor of Eris and its baselines: ``cfg``, ``sites``, ``network``, ``links`` and
    a zero ``state`` on ``mech``; base slots ``0..T`` (slot 0 unused).

    :param mech: the mechanism being built
    :param sites: the edge sites
    :param network: the network; ``None``: defaults
    :param config: the constants; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    :raises InputError: neither ``config`` nor ``horizon``
    """
    if config is None:
        if horizon is None:
            raise InputError("config", None, "ErisConfig (or horizon=T) is required")
        config = ErisConfig(horizon=horizon)
    mech.cfg = config
    mech.sites = as_sites(sites)
    mech.network = network if network is not None else NetworkSpec()
    mech.links = build_links(mech.network, mech.sites, config)
    mech.state = ErisState(mech.sites, mech.links, config)
    OnlineMechanism.__init__(mech, config.horizon + 1)


class ErisAuction(OnlineMechanism):
    """Eris' auctioneer: ``step(now, bids) -> list[ErisDecision]`` (slots 1..T).

    :param sites: the edge sites (an :class:`ErisSites`, :class:`~marketsim.market.types.EdgeSite` objects or a capacity
    array)
    :param network: the network between sites; ``None``: :class:`NetworkSpec` defaults
    :param config: the auction's constants and horizon; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    """

    name = "eris"

    def __init__(
        self,
        sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
        network: NetworkSpec | None = None,
        config: ErisConfig | None = None,
        *,
        horizon: int | None = None,
    ) -> None:
        setup_market(self, sites, network, config, horizon)
        self.cfg: ErisConfig
        self.links: Links
        self.state: ErisState
        self.decisions: list[ErisDecision] = []
        self.stats: list[MenuStats] = []
        self.dual_history: list[float] = []
        self.primal_history: list[float] = []
        self._primal = 0.0
        self._mu_sum = 0.0
        self._duals = np.zeros(self.cfg.horizon + 1)  # per-slot price part of Lambda (0 at zero usage)

    # --- public audit helpers (same code path as step) ---
    def validate(self, bid: ErisJob) -> None:
        """Check ``bid`` is an Eris report that fits this market.

        :param bid: the report
        :raises InputError: a report of another type or one that does not fit the sites or horizon
        """
        if not isinstance(bid, ErisJob):
            raise InputError("bid", type(bid).__name__, "must be an ErisBid/ErisJob")
        bid.check_against(self.sites, self.cfg)

    def build_menu(self, bid: ErisJob, stats: MenuStats | None = None) -> list[MenuEntry]:
        """BUILD_MENU at the current prices (does not read the utility).

        :param bid: the report
        :param stats: counters to fill, or ``None``
        :returns: one entry per candidate deadline
        """
        self.validate(bid)
        return build_menu(prepare_job(bid, self.sites, self.cfg), int(bid.arrival), self.state, self.cfg, stats)

    def choose(self, menu: list[MenuEntry], utility: Utility, arrival: int) -> tuple[float, MenuEntry | None]:
        """The menu entry with the largest reported payoff (and that payoff).

        :param menu: the menu
        :param utility: the reported utility
        :param arrival: the arrival slot
        :returns: ``(mu, entry)``; ``entry`` is ``None`` when nothing pays
        """
        return choose(menu, utility, arrival, self.cfg)

    def prices(self, t: int) -> SlotView:
        """The frozen prices and residual capacities of slot ``t``.

        :param t: the slot
        :returns: the slot's view
        """
        return self.state.view(t)

    def snapshot(self) -> ErisAuction:
        import copy

        return copy.deepcopy(self)

    def _slot_dual(self, t: int) -> float:
        v = self.state.view(t)
        return float(np.dot(self.links.cap, v.alpha)) + float((self.sites.capacity * v.beta).sum())

    def dual_value(self) -> float:
        """Lambda of eq. (4): sum mu + sum_t sum_e B_e alpha_e(t) + sum_t sum_{r,k} C beta (t = 1..T)."""
        return self._mu_sum + float(self._duals.sum())

    # --- the mechanism ---
    def step(self, now: int, new_reports: Sequence[ErisJob]) -> list[ErisDecision]:
        """Decide the reports arriving in slot ``now`` (in job-id order).

        :param now: the slot, 1..T
        :param new_reports: the reports arriving in slot ``now``
        :returns: their decisions
        :raises InputError: a slot < 1 with arrivals
        """
        if int(now) < 1 and len(new_reports):
            raise InputError("now", now, "must be >= 1 (Eris slots are 1..T)")
        bids = self._advance(now, new_reports)
        return [self.decide(b) for b in bids]  # type: ignore[arg-type]

    def decide(self, bid: ErisJob) -> ErisDecision:
        """Admit or reject one bid at the current prices and commit its schedule.

        :param bid: the report
        :returns: the decision
        """
        stats = MenuStats()
        menu = self.build_menu(bid, stats)
        mu, entry = choose(menu, bid.utility, int(bid.arrival), self.cfg)
        self.stats.append(stats)
        if entry is None:
            dec = ErisDecision(
                bid.job_id,
                False,
                None,
                0.0,
                None,
                0.0,
                0.0,
                {"dpc_calls": stats.dpc_calls},
                mu=0.0,
                deadline=None,
                menu_size=len(menu),
                plan=None,
            )
        else:
            plan = entry.schedule
            for p in plan.slots:
                self.state.commit(p.t, p.link_volume, p.usage)
                self._duals[p.t] = self._slot_dual(p.t)
            dur = plan.completion - int(bid.arrival) + self.cfg.duration_offset
            value = float(bid.utility(dur))
            dec = ErisDecision(
                bid.job_id,
                True,
                _auction_schedule(bid.job_id, plan, self.sites.R),
                plan.cost,
                plan.completion,
                mu,
                value,
                {"dpc_calls": stats.dpc_calls},
                mu=mu,
                deadline=entry.deadline,
                menu_size=len(menu),
                plan=plan,
            )
            self._primal += value
            self._mu_sum += mu
        self.primal_history.append(self._primal)
        self.dual_history.append(self.dual_value())
        self.decisions.append(dec)
        return dec

    def run(self, reports: Iterable[ErisJob]) -> list[ErisDecision]:  # type: ignore[override]
        """Feed ``reports`` by arrival slot (1..T); decisions in job-id order.

        :param reports: the reports, arrivals in slots 1..T
        :returns: the decisions
        """
        return super().run(reports)  # type: ignore[return-value]


@dataclass(frozen=True)
class ErisOutcome:
    """Result of a full run: decisions (job-id order), reported welfare, revenue, final state.

    :param decisions: the decisions in job-id order
    :param auction: the auction after the run
    """

    decisions: tuple[ErisDecision, ...]
    auction: ErisAuction = field(compare=False)

    @property
    def revenue(self) -> float:
        return float(sum(d.payment for d in self.decisions))

    @property
    def accepted(self) -> int:
        return sum(d.admitted for d in self.decisions)

    def welfare(self, true_jobs: Sequence[ErisJob] | None = None) -> float:
        """Social welfare (Def. 2) with the true valuations (reported ones when ``true_jobs`` is None).

        :param true_jobs: the true types, or ``None`` for the reported ones
        :returns: the welfare (currency)
        """
        if true_jobs is None:
            return float(sum(d.utility for d in self.decisions if d.admitted))
        by_id = {j.job_id: j for j in true_jobs}
        off = self.auction.cfg.duration_offset
        return float(
            sum(
                float(by_id[d.job_id].utility(d.completion - by_id[d.job_id].arrival + off))
                for d in self.decisions
                if d.admitted
            )
        )


@register(
    "eris",
    "auction",
    "Eris: online posted-price auction for unbiased distributed learning at the edge",
    paper="eris",
    claims_truthful=True,
)
def run_eris(
    bids: Sequence[ErisJob],
    sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
    network: NetworkSpec | None = None,
    config: ErisConfig | None = None,
    *,
    horizon: int | None = None,
) -> ErisOutcome:
    """Replay ``bids`` through a fresh :class:`ErisAuction` (grouped by arrival, (a, id) order).

    :param bids: the reports (or true types), arrivals in slots 1..T
    :param sites: the edge sites (an :class:`ErisSites`, :class:`~marketsim.market.types.EdgeSite` objects or a capacity
    array)
    :param network: the network between sites; ``None``: :class:`NetworkSpec` defaults
    :param config: the auction's constants and horizon; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    :returns: the decisions and the auction
    """
    auc = ErisAuction(sites, network, config, horizon=horizon)
    decs = auc.run(bids)
    return ErisOutcome(tuple(decs), auc)


def realised_value(
    decision: ErisDecision, true_job: ErisJob, bid: ErisJob, cfg: ErisConfig, partial_value: str = "none"
) -> float:
    """True value of a (mis)report's outcome under the consequence model of spec §7 C3 (D16).

    Realised iff every reported D^r >= true D^r, reported E >= true E and, in every active slot
    and site, ``kappa P g >= E_true L`` with ``kappa = min(1, w_rep/w_true, s_rep/s_true)``;
    otherwise 0 (``partial_value="proportional"`` scales by the fraction of chunk-epochs done).
    Completion is the scheduled one; value is measured from the true arrival.

    :param decision: the decision
    :param true_job: the true type
    :param bid: the report
    :param cfg: the configuration
    :param partial_value: ``none`` (0 unless realised) or ``proportional``
    :returns: the true value, currency
    """
    if not decision.admitted or decision.plan is None:
        return 0.0
    dur = decision.completion - true_job.arrival + cfg.duration_offset
    full = float(true_job.utility(dur))
    w_t, w_r = np.asarray(true_job.worker_demand), np.asarray(bid.worker_demand)
    s_t, s_r = np.asarray(true_job.ps_demand), np.asarray(bid.ps_demand)
    kappa = 1.0
    if (w_t > 0).any():
        kappa = min(kappa, float((w_r[w_t > 0] / w_t[w_t > 0]).min()))
    if (s_t > 0).any():
        kappa = min(kappa, float((s_r[s_t > 0] / s_t[s_t > 0]).min()))
    P = true_job.proc_capacity
    E_t = true_job.epochs
    ok_data = all(bid.data.get(k, 0) >= v for k, v in true_job.data.items()) and bid.epochs >= E_t
    ok_proc = all(bool((kappa * P * p.workers + 1e-9 >= E_t * p.load).all()) for p in decision.plan.slots)
    if ok_data and ok_proc:
        return full
    if partial_value == "proportional":
        need = E_t * true_job.total_chunks
        done = 0.0
        for p in decision.plan.slots:
            done += float(np.minimum(kappa * P * p.workers, E_t * p.load).sum())
        frac = min(1.0, done / need) * (
            min(1.0, sum(min(bid.data.get(k, 0), v) for k, v in true_job.data.items()) / true_job.total_chunks)
        )
        return full * frac
    return 0.0


def realised_utility(
    decision: ErisDecision,
    true_job: ErisJob,
    bid: ErisJob | None = None,
    cfg: ErisConfig | None = None,
    partial_value: str = "none",
) -> float:
    """``u_i = realised value - payment`` (0 if rejected) — the quantity a deviation must not raise.

    :param decision: the decision
    :param true_job: the true type
    :param bid: the report (default: the true type)
    :param cfg: the configuration (default: ``ErisConfig(horizon=...)``)
    :param partial_value: ``none`` or ``proportional``
    :returns: realised value − payment, currency
    """
    if not decision.admitted:
        return 0.0
    cfg = cfg if cfg is not None else ErisConfig(horizon=max(decision.completion or 1, 1))
    return (
        realised_value(decision, true_job, bid if bid is not None else true_job, cfg, partial_value) - decision.payment
    )
