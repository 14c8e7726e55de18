"""Baselines of the Eris evaluation (spec §4): Tiresias, AntMan and Liquid, adapted as the paper
describes, on the same bids, sites, network and price functions as Eris (D13).

Each baseline is slot-driven and keeps its own ledger; a job running in slot t pays that slot's
cost at the prices just before its own usage is committed. A job that does not finish by T has
value 0 and pays nothing; with ``drop_negative_payoff`` jobs with value < payment are dropped
from welfare, counts and profit (their resource use stays). Registered as ``tiresias``,
``antman`` and ``liquid`` (family ``"auction"``); each is also an :class:`OnlineMechanism`
(:class:`TiresiasMechanism`, :class:`AntManMechanism`, :class:`LiquidMechanism`) fed slot by slot.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from marketsim.market.auction.base import OnlineMechanism
from marketsim.market.eris.mechanism import ErisDecision, _auction_schedule, setup_market
from marketsim.market.eris.network import Links
from marketsim.market.eris.prices import ErisState
from marketsim.market.eris.sources import cumulative_sources, slot_sources, source_sequence
from marketsim.market.eris.types import ErisConfig, ErisJob, ErisSchedule, ErisSites, NetworkSpec, SlotPlan
from marketsim.market.errors import InputError, check_choice, check_finite, check_int
from marketsim.market.registry import register
from marketsim.market.types import EdgeSite
from marketsim.market.utility import SigmoidUtility

__all__ = [
    "BaselineOutcome",
    "BaselineMechanism",
    "TiresiasMechanism",
    "AntManMechanism",
    "LiquidMechanism",
    "execute_slot",
    "tiresias",
    "antman",
    "liquid",
    "worker_count",
]

_EPS = 1e-9


@dataclass
class _Job:
    bid: ErisJob
    data: np.ndarray
    cum: np.ndarray
    D: int
    n: int
    done: int = 0
    attained: int = 0
    payment: float = 0.0
    completion: int | None = None
    plans: list[SlotPlan] = field(default_factory=list)
    config: np.ndarray | None = None
    cls: str = "OP"
    wait: int = 0
    started: bool = False

    @property
    def finished(self) -> bool:
        return self.done >= self.D


@dataclass(frozen=True)
class BaselineOutcome:
    """Per-job decisions (``admitted`` = accepted in the D13 sense), welfare and profit.

    :param name: the baseline
    :param decisions: one decision per job
    :param state: the final price and usage state
    """

    name: str
    decisions: tuple[ErisDecision, ...]
    state: ErisState = field(compare=False)

    @property
    def welfare(self) -> float:
        return float(sum(d.utility for d in self.decisions if d.admitted))

    @property
    def revenue(self) -> float:
        return float(sum(d.payment for d in self.decisions if d.admitted))

    @property
    def accepted(self) -> int:
        return sum(d.admitted for d in self.decisions)


def _worker_caps(w: np.ndarray, res: np.ndarray) -> np.ndarray:
    wpos = w > 0
    return np.maximum(np.floor(res[:, wpos] / w[wpos] + _EPS).min(axis=1), 0).astype(np.int64)


def worker_count(bid: ErisJob, sites: ErisSites, target_slots: int = 8) -> int:
    """``n_i = clip(ceil(E D / (P S_ref)), 1, N_i)`` with ``N_i`` the nominal worker room of all sites."""
    N = int(_worker_caps(np.asarray(bid.worker_demand), sites.capacity).sum())
    n = -(-bid.epochs * bid.total_chunks // (bid.proc_capacity * target_slots))
    return max(1, min(n, N)) if N > 0 else 0


def execute_slot(
    job: _Job, g: np.ndarray, t: int, state: ErisState, cfg: ErisConfig, commit: bool = True
) -> tuple[float, SlotPlan | None]:
    """EXECUTE_SLOT of spec §4.0: greedy even redistribution of this slot's sources onto the
    fixed workers ``g`` (R,), PS placement, capacity check, cost at current prices; commits."""
    b = job.bid
    links: Links = state.links
    view = state.view(t)
    E, P, theta, lam = b.epochs, b.proc_capacity, cfg.theta_mb, b.param_mb
    w, s = np.asarray(b.worker_demand), np.asarray(b.ps_demand)
    R = len(g)
    room = (P * g) // E
    Ltot = min(job.D - job.done, int(room.sum()))
    if Ltot <= 0:
        return math.inf, None
    M = slot_sources(job.cum, job.done, Ltot)
    local = np.minimum(M, room)
    excess = M - local
    spare = room - local
    load = local.copy()
    used = np.zeros(links.L)
    moves: dict[tuple[int, int], int] = {}
    pi = np.array([[float(sum(view.alpha[e] for e in links.paths[r][q])) for q in range(R)] for r in range(R)])
    while excess.sum() > 0:
        r = int(np.argmax(excess))
        cands = [q for q in range(R) if q != r and links.admissible[r, q]]
        if not cands:
            return math.inf, None
        q = min(cands, key=lambda q: (-spare[q], pi[r, q], q))
        bud = min(math.floor((view.res_link[e] - used[e]) / theta + _EPS) for e in links.paths[r][q])
        m = int(min(excess[r], spare[q], bud))
        if m <= 0:
            return math.inf, None
        moves[(r, q)] = moves.get((r, q), 0) + m
        excess[r] -= m
        spare[q] -= m
        load[q] += m
        for e in links.paths[r][q]:
            used[e] += theta * m
    psb = (view.beta * s[None, :]).sum(axis=1)
    tol_link = _EPS * np.maximum(1.0, links.cap)
    chosen = -1
    psi = used
    for rh in sorted(range(R), key=lambda r: (-g[r], psb[r], r)):
        if ((w * g[rh] + s) > view.res_cap[rh] + _EPS * np.maximum(1.0, view.res_cap[rh])).any():
            continue
        if any(g[r] > 0 and r != rh and not links.admissible[r, rh] for r in range(R)):
            continue
        p = used.copy()
        for r in range(R):
            if r != rh and g[r] > 0:
                for e in links.paths[r][rh]:
                    p[e] += lam * g[r]
        if (p > view.res_link + tol_link).any():
            continue
        chosen, psi = rh, p
        break
    if chosen < 0:
        return math.inf, None
    usage = w[None, :] * g[:, None]
    usage[chosen] += s
    if (usage > view.res_cap + _EPS * np.maximum(1.0, view.res_cap)).any():
        return math.inf, None
    cost = float(np.dot(view.alpha, psi)) + float((usage * view.beta).sum())
    plan = SlotPlan(t, M.copy(), moves, load, g.copy(), chosen, psi, usage, cost)
    if commit:
        state.commit(t, psi, usage)
        job.done += Ltot
        job.payment += cost
        job.plans.append(plan)
        if job.finished:
            job.completion = t
    return cost, plan


class BaselineMechanism(OnlineMechanism):
    """Slot-by-slot driver shared by the baselines (an :class:`OnlineMechanism`, slots 1..T).

    ``step(now, reports)`` adds the jobs arriving in slot ``now`` and runs the baseline's slot
    ``now``; a job's decision is final, and returned, in the slot it completes (D13 accounting);
    :meth:`finish` flushes the jobs that never completed (value 0, payment 0). The baselines use
    only jobs that have arrived, so the batch functions (:func:`tiresias`, ...) are this run.

    :param sites: the edge sites (an :class:`ErisSites`, :class:`~marketsim.market.types.EdgeSite` objects or a capacity
    array)
    :param network: the network between sites; ``None``: :class:`NetworkSpec` defaults
    :param config: the auction's constants and horizon; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    :param target_slots: the slots a baseline aims to finish a job in (its worker count), >= 1
    :param drop_negative_payoff: reject a job whose reported payoff at its configuration is negative
    """

    name = "baseline"

    def __init__(
        self,
        sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
        network: NetworkSpec | None = None,
        config: ErisConfig | None = None,
        *,
        horizon: int | None = None,
        target_slots: int = 8,
        drop_negative_payoff: bool = True,
    ) -> None:
        setup_market(self, sites, network, config, horizon)
        self.target_slots = check_int("target_slots", target_slots, minimum=1)
        self.drop_negative = bool(drop_negative_payoff)
        self.jobs: list[_Job] = []
        self._emitted: set[int] = set()

    def _admit(self, b: ErisJob) -> _Job:
        if not isinstance(b, ErisJob):
            raise InputError("bid", type(b).__name__, "must be an ErisBid/ErisJob")
        if any(j.bid.job_id == b.job_id for j in self.jobs):
            raise InputError("bids.job_id", b.job_id, "must be unique")
        b.check_against(self.sites, self.cfg)
        data = b.data_vector(self.sites)
        j = _Job(
            b,
            data,
            cumulative_sources(source_sequence(data), self.sites.R),
            int(data.sum()),
            worker_count(b, self.sites, self.target_slots),
        )
        self.jobs.append(j)
        return j

    def step(self, now: int, new_reports: Sequence[ErisJob]) -> list[ErisDecision]:
        """Add the jobs arriving in slot ``now`` and run the baseline's slot ``now``.

        :param now: the slot, 1..T
        :param new_reports: the reports arriving in slot ``now``
        :returns: the decisions of the jobs that completed in this slot
        :raises InputError: a slot < 1 with arrivals, a bad or duplicate bid
        """
        if int(now) < 1 and len(new_reports):
            raise InputError("now", now, "must be >= 1 (Eris slots are 1..T)")
        new = [self._admit(b) for b in self._advance(now, new_reports)]  # type: ignore[arg-type]
        if now < 1:
            return []
        self._slot(int(now), new)
        done = [j for j in self.jobs if j.completion == now and j.bid.job_id not in self._emitted]
        return [self._emit(j) for j in sorted(done, key=lambda j: j.bid.job_id)]

    def finish(self) -> list[ErisDecision]:
        left = [j for j in self.jobs if j.bid.job_id not in self._emitted]
        return [self._emit(j) for j in sorted(left, key=lambda j: j.bid.job_id)]

    def _emit(self, j: _Job) -> ErisDecision:
        self._emitted.add(j.bid.job_id)
        return self._decision(j)

    @abstractmethod
    def _slot(self, t: int, new: list[_Job]) -> None:
        """The baseline's policy for one slot (every subclass implements it)."""

    def _decision(self, j: _Job) -> ErisDecision:
        b, cfg = j.bid, self.cfg
        log = {"class": j.cls}
        if j.completion is None:  # never finished: value 0, pays nothing (its partial use stays)
            part = ErisSchedule(tuple(j.plans), j.plans[-1].t, 0.0) if j.plans else None
            return ErisDecision(b.job_id, False, None, 0.0, None, 0.0, 0.0, log, plan=part)
        value = float(b.utility(j.completion - b.arrival + cfg.duration_offset))
        pay = j.payment
        acc = not (self.drop_negative and value - pay < 0)
        plan = ErisSchedule(tuple(j.plans), j.completion, pay)
        return ErisDecision(
            b.job_id,
            acc,
            _auction_schedule(b.job_id, plan, self.sites.R),
            pay if acc else 0.0,
            j.completion,
            value - pay,
            value if acc else 0.0,
            log,
            mu=value - pay,
            deadline=None,
            menu_size=0,
            plan=plan,
        )

    def outcome(self) -> BaselineOutcome:
        """Decisions of every job seen so far (job-id order), welfare and profit."""
        decs = tuple(self._decision(j) for j in sorted(self.jobs, key=lambda j: j.bid.job_id))
        return BaselineOutcome(self.name, decs, self.state)


def _place(n: int, w: np.ndarray, caps: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Up to ``n`` workers on sites by ascending unit price (ties id), each up to ``caps``."""
    g = np.zeros(len(caps), dtype=np.int64)
    left = n
    for r in np.lexsort((np.arange(len(caps)), unit)):
        take = int(min(left, caps[r]))
        g[r] = take
        left -= take
        if left == 0:
            break
    return g


def _unit(state: ErisState, t: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = state.view(t)
    return (v.beta * w[None, :]).sum(axis=1), _worker_caps(w, v.res_cap)


class TiresiasMechanism(BaselineMechanism):
    """TIRESIAS of spec §4.1: every slot, active jobs by (key, a, id) get ``min(n_i, needed)`` workers
    on the cheapest sites (gang: all or none), key = n_i (D - done) or attained worker-slots.

    :param args: :class:`BaselineMechanism`'s arguments
    :param priority: ``remaining_service`` or ``attained_service`` (the order jobs are served in)
    :param kw: :class:`BaselineMechanism`'s keyword arguments
    """

    name = "tiresias"

    def __init__(self, *args, priority: str = "remaining_service", **kw) -> None:
        self.priority = check_choice("priority", priority, ("remaining_service", "attained_service"))
        super().__init__(*args, **kw)

    def _slot(self, t: int, new: list[_Job]) -> None:
        state, cfg = self.state, self.cfg
        active = [j for j in self.jobs if j.bid.arrival <= t and not j.finished]
        key = (lambda j: j.n * (j.D - j.done)) if self.priority == "remaining_service" else (lambda j: j.attained)
        for j in sorted(active, key=lambda j: (key(j), j.bid.arrival, j.bid.job_id)):
            b = j.bid
            n = min(j.n, -(-b.epochs * (j.D - j.done) // b.proc_capacity))
            unit, caps = _unit(state, t, np.asarray(b.worker_demand))
            g = _place(n, b.worker_demand, caps, unit)
            if n <= 0 or g.sum() < n:
                continue
            cost, _ = execute_slot(j, g, t, state, cfg)
            if math.isfinite(cost):
                j.attained += n


@register(
    "tiresias",
    "auction",
    "Tiresias (NSDI'19) adapted for Eris: preemptive, least remaining service first",
    paper="eris",
)
def tiresias(
    bids: Sequence[ErisJob],
    sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
    network: NetworkSpec | None = None,
    config: ErisConfig | None = None,
    *,
    horizon: int | None = None,
    priority: str = "remaining_service",
    target_slots: int = 8,
    drop_negative_payoff: bool = True,
) -> BaselineOutcome:
    """Run :class:`TiresiasMechanism` over ``bids`` (slots 1..T).

    :param bids: the reports (or true types), arrivals in slots 1..T
    :param sites: the edge sites (an :class:`ErisSites`, :class:`~marketsim.market.types.EdgeSite` objects or a capacity
    array)
    :param network: the network between sites; ``None``: :class:`NetworkSpec` defaults
    :param config: the auction's constants and horizon; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    :param priority: see :class:`TiresiasMechanism`
    :param target_slots: the slots a baseline aims to finish a job in (its worker count), >= 1
    :param drop_negative_payoff: reject a job whose reported payoff at its configuration is negative
    :returns: the decisions, welfare and revenue
    """
    m = TiresiasMechanism(
        sites,
        network,
        config,
        horizon=horizon,
        priority=priority,
        target_slots=target_slots,
        drop_negative_payoff=drop_negative_payoff,
    )
    m.run(bids)
    return m.outcome()


def _tau(bid: ErisJob) -> float:
    u = bid.utility
    if isinstance(u, SigmoidUtility):
        return float(u.gamma1) / 3000.0
    return float(u(0)) / 1500.0


def _fixed_config(j: _Job, state: ErisState, t: int) -> np.ndarray:
    w = np.asarray(j.bid.worker_demand)
    unit, caps = _unit(state, t, w)
    g = _place(j.n, w, caps, unit)
    if g.sum() < j.n:
        nominal = _worker_caps(w, state.sites.capacity)
        left = j.n - int(g.sum())
        for r in np.lexsort((np.arange(len(unit)), unit)):
            take = int(min(left, nominal[r] - g[r]))
            if take > 0:
                g[r] += take
                left -= take
            if left == 0:
                break
    return g


class AntManMechanism(BaselineMechanism):
    """ANTMAN of spec §4.2: RG jobs (reported tau >= threshold, or Bernoulli with ``rng``) run a fixed
    configuration chosen at arrival; after ``max_wait`` slots of waiting they become OP; OP jobs
    use whatever capacity is left each slot.

    :param args: :class:`BaselineMechanism`'s arguments
    :param rg_rule: ``tau_threshold`` or ``bernoulli``: which jobs are RG (resource-guaranteed)
    :param tau_threshold: reported tau at or above which a job is RG
    :param rg_prob: probability of RG with ``bernoulli``
    :param max_wait: slots an RG job waits before it becomes OP, >= 1
    :param rng: the Bernoulli draws (required with ``bernoulli``)
    :param kw: :class:`BaselineMechanism`'s keyword arguments
    :raises InputError: ``bernoulli`` without ``rng``, a bad rule or wait
    """

    name = "antman"

    def __init__(
        self,
        *args,
        rg_rule: str = "tau_threshold",
        tau_threshold: float = 1.5,
        rg_prob: float = 0.5,
        max_wait: int = 3,
        rng: np.random.Generator | None = None,
        **kw,
    ) -> None:
        self.rg_rule = check_choice("rg_rule", rg_rule, ("tau_threshold", "bernoulli"))
        self.tau_threshold = check_finite("tau_threshold", tau_threshold)
        self.rg_prob = float(rg_prob)
        self.max_wait = check_int("max_wait", max_wait, minimum=1)
        if rg_rule == "bernoulli" and rng is None:
            raise InputError("rng", None, "an explicit np.random.Generator is required for rg_rule='bernoulli'")
        self.rng = rng
        super().__init__(*args, **kw)

    def _slot(self, t: int, new: list[_Job]) -> None:
        state, cfg = self.state, self.cfg
        for j in new:
            if self.rg_rule == "tau_threshold":
                rg = _tau(j.bid) >= self.tau_threshold
            else:
                rg = bool(self.rng.random() < self.rg_prob)
            j.cls = "RG" if rg else "OP"
        arrived = [j for j in self.jobs if j.bid.arrival <= t and not j.finished]
        for j in [j for j in arrived if j.cls == "RG" and j.started]:
            execute_slot(j, j.config, t, state, cfg)
        # configurations at the arrival slot's prices AFTER the running guaranteed jobs hold their
        # resources: chosen before them, every slot looks empty and all configurations pile on the
        # lowest-id sites
        for j in new:
            j.config = _fixed_config(j, state, t)
        for j in [j for j in arrived if j.cls == "RG" and not j.started]:
            if math.isfinite(execute_slot(j, j.config, t, state, cfg)[0]):
                j.started = True
            else:
                j.wait += 1
                if j.wait >= self.max_wait:
                    j.cls = "OP"
        for j in [j for j in arrived if j.cls == "OP" and not j.finished]:
            b = j.bid
            n = min(j.n, -(-b.epochs * (j.D - j.done) // b.proc_capacity))
            unit, caps = _unit(state, t, np.asarray(b.worker_demand))
            g = _place(n, b.worker_demand, caps, unit)
            if g.sum() < 1:
                continue
            execute_slot(j, g, t, state, cfg)


@register(
    "antman", "auction", "AntMan (OSDI'20) adapted for Eris: resource-guarantee and opportunistic classes", paper="eris"
)
def antman(
    bids: Sequence[ErisJob],
    sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
    network: NetworkSpec | None = None,
    config: ErisConfig | None = None,
    *,
    horizon: int | None = None,
    rg_rule: str = "tau_threshold",
    tau_threshold: float = 1.5,
    rg_prob: float = 0.5,
    max_wait: int = 3,
    rng: np.random.Generator | None = None,
    target_slots: int = 8,
    drop_negative_payoff: bool = True,
) -> BaselineOutcome:
    """Run :class:`AntManMechanism` over ``bids`` (slots 1..T).

    :param bids: the reports (or true types), arrivals in slots 1..T
    :param sites: the edge sites (an :class:`ErisSites`, :class:`~marketsim.market.types.EdgeSite` objects or a capacity
    array)
    :param network: the network between sites; ``None``: :class:`NetworkSpec` defaults
    :param config: the auction's constants and horizon; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    :param rg_rule: see :class:`AntManMechanism`
    :param tau_threshold: see :class:`AntManMechanism`
    :param rg_prob: see :class:`AntManMechanism`
    :param max_wait: see :class:`AntManMechanism`
    :param rng: see :class:`AntManMechanism`
    :param target_slots: the slots a baseline aims to finish a job in (its worker count), >= 1
    :param drop_negative_payoff: reject a job whose reported payoff at its configuration is negative
    :returns: the decisions, welfare and revenue
    """
    m = AntManMechanism(
        sites,
        network,
        config,
        horizon=horizon,
        rg_rule=rg_rule,
        tau_threshold=tau_threshold,
        rg_prob=rg_prob,
        max_wait=max_wait,
        rng=rng,
        target_slots=target_slots,
        drop_negative_payoff=drop_negative_payoff,
    )
    m.run(bids)
    return m.outcome()


def _even_split(n: int, caps: np.ndarray) -> np.ndarray | None:
    """Largest-remainder even split of n over len(caps) sites, water-filled under ``caps``."""
    m = len(caps)
    if caps.sum() < n:
        return None
    g = np.zeros(m, dtype=np.int64)
    left = n
    while left > 0:
        open_ = [i for i in range(m) if g[i] < caps[i]]
        base, rem = divmod(left, len(open_))
        for k, i in enumerate(open_):
            add = min(base + (1 if k < rem else 0), caps[i] - g[i])
            g[i] += add
            left -= add
    return g


class LiquidMechanism(BaselineMechanism):
    """LIQUID of spec §4.3: at arrival pick m (sites used) minimising
    ``lambda_L V(m)/B + (1 - lambda_L) Pi(m)/(n max u)``; then run FIFO, non-preemptively.

    :param args: :class:`BaselineMechanism`'s arguments
    :param lambda_L: weight of the transfer volume against the price, in [0, 1]
    :param kw: :class:`BaselineMechanism`'s keyword arguments
    :raises InputError: ``lambda_L`` outside [0, 1]
    """

    name = "liquid"

    def __init__(self, *args, lambda_L: float = 0.5, **kw) -> None:
        lam_L = check_finite("lambda_L", lambda_L)
        if not 0 <= lam_L <= 1:
            raise InputError("lambda_L", lambda_L, "must be in [0, 1]")
        self.lambda_L = lam_L
        super().__init__(*args, **kw)
        links = self.links
        self._B = float(self.network.budget_mb) if links.mode == "global" else float(np.mean(links.cap))

    def _slot(self, t: int, new: list[_Job]) -> None:
        state, cfg, sites, links, lam_L = self.state, self.cfg, self.sites, self.links, self.lambda_L
        # running jobs hold their resources first, so the arrival-time prices and residual caps that
        # choose a new job's configuration see them (otherwise every slot looks empty at this point
        # and every configuration lands on the lowest-id sites)
        for j in sorted(
            (j for j in self.jobs if j.started and not j.finished), key=lambda j: (j.bid.arrival, j.bid.job_id)
        ):
            execute_slot(j, j.config, t, state, cfg)
        for j in new:
            w = np.asarray(j.bid.worker_demand)
            unit, caps = _unit(state, t, w)
            nominal = _worker_caps(w, sites.capacity)
            order = np.lexsort((np.arange(sites.R), unit))
            best = None
            for m in range(1, min(sites.R, j.n) + 1):
                sel = order[:m]
                cap_sel = caps[sel] if caps[sel].sum() >= j.n else nominal[sel]
                split = _even_split(j.n, cap_sel)
                if split is None:
                    continue
                g = np.zeros(sites.R, dtype=np.int64)
                g[sel] = split
                X = _dry_moves(j, g, links)
                V = j.bid.param_mb * (j.n - int(g.max())) + cfg.theta_mb * X
                Pi = float(np.dot(g, unit))
                score = lam_L * V / self._B + (1 - lam_L) * Pi / max(1e-12, j.n * float(unit.max()))
                if best is None or score < best[0]:
                    best = (score, g)
            j.config = best[1] if best is not None else _fixed_config(j, state, t)
        queue = [j for j in self.jobs if j.bid.arrival <= t and not j.finished and not j.started]
        for j in sorted(queue, key=lambda j: (j.bid.arrival, j.bid.job_id)):
            if math.isfinite(execute_slot(j, j.config, t, state, cfg)[0]):
                j.started = True


@register(
    "liquid", "auction", "Liquid (TPDS'22) adapted for Eris: network-aware fixed configuration, FIFO", paper="eris"
)
def liquid(
    bids: Sequence[ErisJob],
    sites: ErisSites | Sequence[EdgeSite] | np.ndarray,
    network: NetworkSpec | None = None,
    config: ErisConfig | None = None,
    *,
    horizon: int | None = None,
    lambda_L: float = 0.5,
    target_slots: int = 8,
    drop_negative_payoff: bool = True,
) -> BaselineOutcome:
    """Run :class:`LiquidMechanism` over ``bids`` (slots 1..T).

    :param bids: the reports (or true types), arrivals in slots 1..T
    :param sites: the edge sites (an :class:`ErisSites`, :class:`~marketsim.market.types.EdgeSite` objects or a capacity
    array)
    :param network: the network between sites; ``None``: :class:`NetworkSpec` defaults
    :param config: the auction's constants and horizon; ``None``: ``ErisConfig(horizon=horizon)``
    :param horizon: T, used when ``config`` is ``None``
    :param lambda_L: see :class:`LiquidMechanism`
    :param target_slots: the slots a baseline aims to finish a job in (its worker count), >= 1
    :param drop_negative_payoff: reject a job whose reported payoff at its configuration is negative
    :returns: the decisions, welfare and revenue
    """
    m = LiquidMechanism(
        sites,
        network,
        config,
        horizon=horizon,
        lambda_L=lambda_L,
        target_slots=target_slots,
        drop_negative_payoff=drop_negative_payoff,
    )
    m.run(bids)
    return m.outcome()


def _dry_moves(j: _Job, g: np.ndarray, links: Links) -> float:
    """Chunks EXECUTE_SLOT would move in the job's first slot (no budgets); hop-weighted in topology mode."""
    b = j.bid
    room = (b.proc_capacity * g) // b.epochs
    Ltot = min(j.D, int(room.sum()))
    M = slot_sources(j.cum, 0, Ltot)
    local = np.minimum(M, room)
    excess = M - local
    spare = room - local
    X = 0.0
    while excess.sum() > 0:
        r = int(np.argmax(excess))
        q = min((q for q in range(len(g)) if q != r), key=lambda q: (-spare[q], q))
        m = int(min(excess[r], spare[q]))
        if m <= 0:
            break
        excess[r] -= m
        spare[q] -= m
        X += m * (links.hops[r, q] if links.mode == "topology" else 1)
    return X
