"""Baselines of the Eris evaluation (spec §4): Tiresias, AntMan and Liquid, adapted as the paper
describes, on the same bids, sites, network and price functions as Eris (D13).

Each baseline is slot-driven and keeps its own ledger; a job running in slot t pays that slot's
cost at the prices just before its own usage is committed. A job that does not finish by T has
value 0 and pays nothing; with ``drop_negative_payoff`` jobs with value < payment are dropped
from welfare, counts and profit (their resource use stays). Registered as ``tiresias``,
``antman`` and ``liquid`` (family ``"auction"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from market.eris.mechanism import ErisDecision, _auction_schedule, as_sites
from market.eris.network import Links, build_links
from market.eris.prices import ErisState
from market.eris.sources import cumulative_sources, slot_sources, source_sequence
from market.eris.types import ErisConfig, ErisJob, ErisSchedule, ErisSites, NetworkSpec, SlotPlan
from market.errors import InputError, check_choice, check_finite, check_int
from market.registry import register
from market.types import EdgeSite
from market.utility import SigmoidUtility

__all__ = ["BaselineOutcome", "execute_slot", "tiresias", "antman", "liquid", "worker_count"]

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
    """Per-job decisions (``admitted`` = accepted in the D13 sense), welfare and profit."""

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


def _setup(bids: Sequence[ErisJob], sites, network, config, horizon, target_slots):
    if config is None:
        if horizon is None:
            raise InputError("config", None, "ErisConfig (or horizon=T) is required")
        config = ErisConfig(horizon=horizon)
    sites = as_sites(sites)
    network = network if network is not None else NetworkSpec()
    links = build_links(network, sites, config)
    state = ErisState(sites, links, config)
    check_int("target_slots", target_slots, minimum=1)
    ids = [b.job_id for b in bids]
    if len(set(ids)) != len(ids):
        raise InputError("bids.job_id", ids, "must be unique")
    jobs = []
    for b in sorted(bids, key=lambda b: (b.arrival, b.job_id)):
        b.check_against(sites, config)
        data = b.data_vector(sites)
        jobs.append(
            _Job(
                b,
                data,
                cumulative_sources(source_sequence(data), sites.R),
                int(data.sum()),
                worker_count(b, sites, target_slots),
            )
        )
    return sites, network, config, state, jobs


def _outcome(name: str, jobs: list[_Job], state: ErisState, cfg: ErisConfig, drop_negative: bool) -> BaselineOutcome:
    decs = []
    for j in sorted(jobs, key=lambda j: j.bid.job_id):
        b = j.bid
        if j.completion is not None:
            value = float(b.utility(j.completion - b.arrival + cfg.duration_offset))
            pay = j.payment
            acc = not (drop_negative and value - pay < 0)
            plan = ErisSchedule(tuple(j.plans), j.completion, pay)
            decs.append(
                ErisDecision(
                    b.job_id,
                    acc,
                    _auction_schedule(b.job_id, plan, state.sites.R),
                    pay if acc else 0.0,
                    j.completion,
                    value - pay,
                    value if acc else 0.0,
                    {"class": j.cls},
                    mu=value - pay,
                    deadline=None,
                    menu_size=0,
                    plan=plan,
                )
            )
        else:
            decs.append(ErisDecision(b.job_id, False, None, 0.0, None, 0.0, 0.0, {"class": j.cls}))
    return BaselineOutcome(name, tuple(decs), state)


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
    """TIRESIAS of spec §4.1: every slot, active jobs by (key, a, id) get ``min(n_i, needed)`` workers
    on the cheapest sites (gang: all or none), key = n_i (D - done) or attained worker-slots."""
    check_choice("priority", priority, ("remaining_service", "attained_service"))
    sites, network, cfg, state, jobs = _setup(bids, sites, network, config, horizon, target_slots)
    for t in range(1, cfg.horizon + 1):
        active = [j for j in jobs if j.bid.arrival <= t and not j.finished]
        key = (lambda j: j.n * (j.D - j.done)) if priority == "remaining_service" else (lambda j: j.attained)
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
    return _outcome("tiresias", jobs, state, cfg, drop_negative_payoff)


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
    """ANTMAN of spec §4.2: RG jobs (reported tau >= threshold, or Bernoulli with ``rng``) run a fixed
    configuration chosen at arrival; after ``max_wait`` slots of waiting they become OP; OP jobs
    use whatever capacity is left each slot."""
    check_choice("rg_rule", rg_rule, ("tau_threshold", "bernoulli"))
    check_finite("tau_threshold", tau_threshold)
    check_int("max_wait", max_wait, minimum=1)
    if rg_rule == "bernoulli" and rng is None:
        raise InputError("rng", None, "an explicit np.random.Generator is required for rg_rule='bernoulli'")
    sites, network, cfg, state, jobs = _setup(bids, sites, network, config, horizon, target_slots)
    for t in range(1, cfg.horizon + 1):
        for j in (j for j in jobs if j.bid.arrival == t):
            rg = _tau(j.bid) >= tau_threshold if rg_rule == "tau_threshold" else bool(rng.random() < rg_prob)
            j.cls = "RG" if rg else "OP"
            j.config = _fixed_config(j, state, t)
        arrived = [j for j in jobs if j.bid.arrival <= t and not j.finished]
        for j in [j for j in arrived if j.cls == "RG" and j.started]:
            execute_slot(j, j.config, t, state, cfg)
        for j in [j for j in arrived if j.cls == "RG" and not j.started]:
            if math.isfinite(execute_slot(j, j.config, t, state, cfg)[0]):
                j.started = True
            else:
                j.wait += 1
                if j.wait >= max_wait:
                    j.cls = "OP"
        for j in [j for j in arrived if j.cls == "OP" and not j.finished]:
            b = j.bid
            n = min(j.n, -(-b.epochs * (j.D - j.done) // b.proc_capacity))
            unit, caps = _unit(state, t, np.asarray(b.worker_demand))
            g = _place(n, b.worker_demand, caps, unit)
            if g.sum() < 1:
                continue
            execute_slot(j, g, t, state, cfg)
    return _outcome("antman", jobs, state, cfg, drop_negative_payoff)


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
    """LIQUID of spec §4.3: at arrival pick m (sites used) minimising
    ``lambda_L V(m)/B + (1 - lambda_L) Pi(m)/(n max u)``; then run FIFO, non-preemptively."""
    lam_L = check_finite("lambda_L", lambda_L)
    if not 0 <= lam_L <= 1:
        raise InputError("lambda_L", lambda_L, "must be in [0, 1]")
    sites, network, cfg, state, jobs = _setup(bids, sites, network, config, horizon, target_slots)
    links = state.links
    B = float(network.budget_mb) if links.mode == "global" else float(np.mean(links.cap))
    for t in range(1, cfg.horizon + 1):
        for j in (j for j in jobs if j.bid.arrival == t):
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
                score = lam_L * V / B + (1 - lam_L) * Pi / max(1e-12, j.n * float(unit.max()))
                if best is None or score < best[0]:
                    best = (score, g)
            j.config = best[1] if best is not None else _fixed_config(j, state, t)
        queue = [j for j in jobs if j.bid.arrival <= t and not j.finished]
        for j in sorted(queue, key=lambda j: (not j.started, j.bid.arrival, j.bid.job_id)):
            if math.isfinite(execute_slot(j, j.config, t, state, cfg)[0]):
                j.started = True
    return _outcome("liquid", jobs, state, cfg, drop_negative_payoff)


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
