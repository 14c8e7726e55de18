"""Exact oracles and the offline optimum (spec §3.8), the subroutine-optimality audit (C4) and
the empirical competitive ratio (C5).

* :func:`one_shot_exact` — ONE_SHOT_EXACT: enumerate every move matrix and PS site of one slot.
* :func:`dp_exact` — DP_EXACT: enumerate every composition of D over the slots.
* :func:`per_job_exact` — PER_JOB_EXACT by brute force: every per-site split of the data over the
  slots, each slot solved by :func:`one_shot_exact`.
* :func:`subroutine_check` — compares DPC_T, the DP and SA's mu against the oracles (audit C4).
* :func:`opt_milp` — OPT_MILP / OPT_LP of §2.4 with HiGHS (``scipy.optimize.milp``).
* :func:`competitive_ratio` — OPT / W_Eris on one instance.
* :func:`opt_enumerate` — OPT by enumerating joint schedules (micro cross-check of the MILP).

All for tiny instances (R <= 3, D <= 6, T <= 4 for the brute force).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sps
from scipy.optimize import Bounds, LinearConstraint

from marketsim.market.eris.deploy import JobArrays, deploy_batch, prepare_job, prepare_slot
from marketsim.market.eris.mechanism import ErisAuction, as_sites
from marketsim.market.eris.network import Links, build_links
from marketsim.market.eris.prices import ErisState, SlotView, competitive_constant
from marketsim.market.eris.schedule import dp_table
from marketsim.market.eris.sources import cumulative_sources, source_sequence
from marketsim.market.eris.types import ErisConfig, ErisJob, ErisSites, NetworkSpec
from marketsim.market.errors import InputError, SolveError
from marketsim.market.milp import milp

__all__ = [
    "one_shot_exact",
    "dp_exact",
    "per_job_exact",
    "SubroutineReport",
    "subroutine_check",
    "OptResult",
    "opt_milp",
    "RatioResult",
    "competitive_ratio",
    "opt_enumerate",
]

_EPS = 1e-9


def _splits(n: int, bins: int):
    """All non-negative integer vectors of length ``bins`` with sum <= n."""
    if bins == 0:
        yield ()
        return
    for first in range(n + 1):
        for rest in _splits(n - first, bins - 1):
            yield (first, *rest)


def _compositions(n: int, parts: int):
    """All non-negative integer vectors of length ``parts`` with sum == n."""
    if parts == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in _compositions(n - first, parts - 1):
            yield (first, *rest)


def one_shot_exact(job: JobArrays, view: SlotView, links: Links, M: Sequence[int]) -> float:
    """Minimum one-slot cost over every move matrix h (admissible pairs, sum_r' h^{rr'} <= M^r,
    link budgets), loads within chunk capacity, workers ceil(E L / P) and every PS site."""
    M = [int(x) for x in M]
    R = len(M)
    if sum(M) == 0:
        return 0.0
    K = len(job.w)
    wpos = job.w > 0
    cap = np.floor(view.res_cap[:, wpos] / job.w[wpos] + _EPS).min(axis=1).astype(np.int64)
    chunkcap = (job.P * cap) // job.E
    dests = [[q for q in range(R) if q != r and links.admissible[r, q]] for r in range(R)]
    per_src = [list(_splits(M[r], len(dests[r]))) for r in range(R)]
    u = (view.beta * job.w[None, :]).sum(axis=1)
    psb = (view.beta * job.s[None, :]).sum(axis=1)
    tol_link = _EPS * np.maximum(1.0, links.cap)
    best = math.inf
    for combo in itertools.product(*per_src):
        used = np.zeros(links.L)
        A = np.array(M, dtype=np.int64)
        for r in range(R):
            for q, m in zip(dests[r], combo[r], strict=True):
                if m:
                    A[r] -= m
                    A[q] += m
                    for e in links.paths[r][q]:
                        used[e] += job.theta * m
        if (used > view.res_link + tol_link).any() or (A > chunkcap).any():
            continue
        g = -(-job.E * A // job.P)
        base = float(np.dot(g, u))
        for rh in range(R):
            if any(
                job.w[k] * g[rh] + job.s[k] > view.res_cap[rh, k] + _EPS * max(1.0, view.res_cap[rh, k])
                for k in range(K)
            ):
                continue
            if any(g[r] > 0 and r != rh and not links.admissible[r, rh] for r in range(R)):
                continue
            psi = used.copy()
            for r in range(R):
                if r != rh and g[r] > 0:
                    for e in links.paths[r][rh]:
                        psi[e] += job.lam * g[r]
            if (psi > view.res_link + tol_link).any():
                continue
            cost = float(np.dot(view.alpha, psi)) + base + float(psb[rh])
            best = min(best, cost)
    return best


def dp_exact(c: np.ndarray) -> np.ndarray:
    """Per deadline offset s (slots 0..s), the minimum of sum_t c[t][d_t] over every composition of
    D = c.shape[1] - 1 into s + 1 parts; shape (S,)."""
    S, D1 = c.shape
    D = D1 - 1
    out = np.full(S, np.inf)
    for s in range(S):
        for comp in _compositions(D, s + 1):
            v = 0.0
            for t, d in enumerate(comp):
                v += c[t, d]
            out[s] = min(out[s], v)
    return out


def per_job_exact(bid: ErisJob, state: ErisState, cfg: ErisConfig) -> float:
    """mu* of the per-job problem (7) by brute force over every per-site split of the data over the
    slots a..T (each slot solved by :func:`one_shot_exact`); max(0, best value - cost)."""
    sites, links = state.sites, state.links
    job = prepare_job(bid, sites, cfg)
    a, T = int(bid.arrival), cfg.horizon
    S = T - a + 1
    R = sites.R
    views = {t: state.view(t) for t in range(a, T + 1)}
    memo: dict[tuple[int, tuple[int, ...]], float] = {}
    per_site = [list(_compositions(int(job.data[r]), S)) if job.data[r] > 0 else [(0,) * S] for r in range(R)]
    best = 0.0
    for combo in itertools.product(*per_site):
        total = 0.0
        last = None
        for s in range(S):
            Mt = tuple(int(combo[r][s]) for r in range(R))
            if sum(Mt) == 0:
                continue
            key = (a + s, Mt)
            if key not in memo:
                memo[key] = one_shot_exact(job, views[a + s], links, Mt)
            total += memo[key]
            last = a + s
            if not math.isfinite(total):
                break
        if last is None or not math.isfinite(total):
            continue
        val = float(bid.utility(last - a + cfg.duration_offset)) - total
        best = max(best, val)
    return best


@dataclass(frozen=True)
class SubroutineReport:
    """C4 audit of one bid at one frozen state.

    ``dpc_gaps``: list of (t, d, DPC_T cost, exact cost) for every slot and d = 1..D (A(d) sources);
    ``dpc_mismatch``: entries where the costs differ beyond tolerance or only one is finite;
    ``dp_gap``: max |F[t][D] - DP_EXACT| over deadlines; ``mu``: SA's mu; ``mu_exact``: mu*."""

    dpc_gaps: list[tuple[int, int, float, float]]
    dpc_mismatch: list[tuple[int, int, float, float]]
    dp_gap: float
    mu: float
    mu_exact: float

    @property
    def mu_gap(self) -> float:
        return self.mu_exact - self.mu

    @property
    def dpc_exact(self) -> bool:
        return not self.dpc_mismatch

    @property
    def sa_exact(self) -> bool:
        return abs(self.mu_gap) <= 1e-6 * max(1.0, abs(self.mu_exact))


def subroutine_check(auction: ErisAuction, bid: ErisJob) -> SubroutineReport:
    """Audit C4 (Thm. 4) for ``bid`` at the auction's current prices (does not commit anything):
    (a) DPC_T vs ONE_SHOT_EXACT for every slot and d, (b) the DP vs DP_EXACT on the same c table,
    (c) SA's mu (the mechanism's own choice) vs PER_JOB_EXACT."""
    auction.validate(bid)
    cfg, state, links = auction.cfg, auction.state, auction.links
    job = prepare_job(bid, auction.sites, cfg)
    a, T, D = int(bid.arrival), cfg.horizon, job.D
    cum = cumulative_sources(source_sequence(job.data), auction.sites.R)
    S = T - a + 1
    c = np.full((S, D + 1), np.inf)
    c[:, 0] = 0.0
    gaps, bad = [], []
    for s in range(S):
        t = a + s
        view = state.view(t)
        sp = prepare_slot(job, view, links)
        b = deploy_batch(job, sp, links, cum[1:], cfg.ps_rule, cfg.overflow_moves)
        for d in range(1, D + 1):
            mine = float(b.cost[d - 1]) if d <= sp.dmax else math.inf
            c[s, d] = mine
            ex = one_shot_exact(job, view, links, cum[d])
            gaps.append((t, d, mine, ex))
            if math.isfinite(mine) != math.isfinite(ex) or (
                math.isfinite(mine) and abs(mine - ex) > 1e-7 * max(1.0, abs(ex))
            ):
                bad.append((t, d, mine, ex))
    F, _ = dp_table(c)
    ex_dp = dp_exact(c)
    fin = np.isfinite(F[1:, D]) | np.isfinite(ex_dp)
    both = np.isfinite(F[1:, D]) & np.isfinite(ex_dp)
    dp_gap = 0.0
    if (fin & ~both).any():
        dp_gap = math.inf
    elif both.any():
        dp_gap = float(np.abs(F[1:, D][both] - ex_dp[both]).max())
    menu = auction.build_menu(bid)
    mu, _ = auction.choose(menu, bid.utility, a)
    mu_star = per_job_exact(bid, state, cfg)
    return SubroutineReport(gaps, bad, dp_gap, mu, mu_star)


@dataclass(frozen=True)
class OptResult:
    """OPT_MILP (or OPT_LP if ``relaxed``): ``objective`` (welfare of the best solution found),
    ``bound`` (best dual bound), ``gap`` (relative), HiGHS ``status`` / ``message``, and for each
    job its completion slot (``None`` if not scheduled).

    :param objective: welfare of the best solution found (currency)
    :param bound: best dual bound
    :param gap: relative gap
    :param status: HiGHS model status
    :param message: HiGHS status message
    :param optimal: whether the optimum was proven
    :param relaxed: whether this is the LP relaxation
    :param completion: each job's completion slot, ``None`` if not scheduled
    """

    objective: float
    bound: float
    gap: float
    status: int
    message: str
    optimal: bool
    relaxed: bool
    completion: dict[int, int | None] = field(default_factory=dict)


class _Vars:
    def __init__(self) -> None:
        self.n = 0
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integ: list[int] = []

    def add(self, count: int, lb: float, ub: float, integer: bool) -> np.ndarray:
        idx = np.arange(self.n, self.n + count)
        self.n += count
        self.lb += [lb] * count
        self.ub += [ub] * count
        self.integ += [1 if integer else 0] * count
        return idx


def opt_milp(
    jobs: Sequence[ErisJob],
    sites: ErisSites | np.ndarray,
    network: NetworkSpec | None,
    cfg: ErisConfig,
    *,
    relax: bool = False,
    time_limit: float = 600.0,
    mip_rel_gap: float = 0.0,
) -> OptResult:
    """The offline welfare problem of spec §2.4 (true valuations ``jobs[i].utility``) with HiGHS.

    ``relax=True`` gives OPT_LP (an upper bound). A time-limited incumbent is reported with
    ``optimal=False``; never treat it as the optimum.

    :param jobs: the jobs (true valuations)
    :param sites: the edge sites
    :param network: the network, or ``None``
    :param cfg: the configuration
    :param relax: solve the LP relaxation (an upper bound)
    :param time_limit: seconds for HiGHS
    :param mip_rel_gap: relative MIP gap at which HiGHS stops
    :returns: objective, bound and completions
    """
    sites = as_sites(sites)
    network = network if network is not None else NetworkSpec()
    links = build_links(network, sites, cfg)
    R, K, T, L = sites.R, sites.K, cfg.horizon, links.L
    theta = cfg.theta_mb
    V = _Vars()
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    nrow = 0

    def row(coefs: list[tuple[np.ndarray | int, float]], lb: float, ub: float) -> None:
        nonlocal nrow
        for idx, v in coefs:
            for j in np.atleast_1d(idx):
                rows.append(nrow)
                cols.append(int(j))
                vals.append(v)
        lo.append(lb)
        hi.append(ub)
        nrow += 1

    obj: dict[int, float] = {}
    budget_terms: dict[tuple[int, int], list[tuple[int, float]]] = {}
    cap_terms: dict[tuple[int, int, int], list[tuple[int, float]]] = {}
    pairs = [(r, q) for r in range(R) for q in range(R) if r != q]
    e_vars: dict[int, dict[int, int]] = {}
    vmax = 1.0
    for job in jobs:
        job.check_against(sites, cfg)
        vmax = max(vmax, float(job.utility(0)))
    for job in jobs:
        a = int(job.arrival)
        Dr = job.data_vector(sites)
        D = int(Dr.sum())
        E, P = job.epochs, job.proc_capacity
        G = -(-E * D // P)
        w, s = job.worker_demand, job.ps_demand
        x = int(V.add(1, 0, 1, True)[0])
        slots = list(range(a, T + 1))
        U, H, Gv, Z, Q, Y, Ev = {}, {}, {}, {}, {}, {}, {}
        for t in slots:
            U[t] = V.add(R, 0, float(D), True)
            H[t] = {}
            for r, q in pairs:
                ub = float(Dr[r]) if links.admissible[r, q] else 0.0
                H[t][(r, q)] = int(V.add(1, 0, ub, True)[0])
            Gv[t] = V.add(R, 0, float(G), True)
            Z[t] = V.add(R, 0, 1, True)
            if links.mode == "global":
                Q[t] = V.add(R, 0, float(G), False)
            else:
                Q[t] = {pq: int(V.add(1, 0, float(G), False)[0]) for pq in pairs}
            Y[t] = int(V.add(1, 0, 1, True)[0])
            Ev[t] = int(V.add(1, 0, 1, True)[0])
            obj[Ev[t]] = float(job.utility(t - a + cfg.duration_offset)) / vmax
        e_vars[job.job_id] = Ev
        for r in range(R):  # O1 conservation
            coefs = [(U[t][r], 1.0) for t in slots] + [(H[t][(r, q)], 1.0) for t in slots for q in range(R) if q != r]
            coefs.append((x, -float(Dr[r])))
            row(coefs, 0.0, 0.0)
        for t in slots:
            for q in range(R):  # O2 processing
                coefs = [(U[t][q], float(E))] + [(H[t][(r, q)], float(E)) for r in range(R) if r != q]
                coefs.append((Gv[t][q], -float(P)))
                row(coefs, -np.inf, 0.0)
            row([(Z[t], 1.0), (Y[t], -1.0)], 0.0, 0.0)  # O3
            for r in range(R):  # O4
                row([(Gv[t][r], 1.0), (Y[t], -float(G))], -np.inf, 0.0)
            row([(Y[t], 1.0)] + [(Ev[tt], -1.0) for tt in slots if tt >= t], -np.inf, 0.0)  # O5
            if links.mode == "global":  # O6
                for r in range(R):
                    row([(Gv[t][r], 1.0), (Z[t][r], -float(G)), (Q[t][r], -1.0)], -np.inf, 0.0)
            else:
                for r, rh in pairs:
                    if links.admissible[r, rh]:
                        row([(Gv[t][r], 1.0), (Z[t][rh], float(G)), (Q[t][(r, rh)], -1.0)], -np.inf, float(G))
                    else:
                        row([(Gv[t][r], 1.0), (Z[t][rh], float(G))], -np.inf, float(G))
            for e in range(L):  # O7 terms
                terms = budget_terms.setdefault((t, e), [])
                for r, q in pairs:
                    if e in links.paths[r][q]:
                        terms.append((H[t][(r, q)], theta))
                if links.mode == "global":
                    terms += [(int(j), float(job.param_mb)) for j in Q[t]]
                else:
                    for r, rh in pairs:
                        if e in links.paths[r][rh]:
                            terms.append((Q[t][(r, rh)], float(job.param_mb)))
            for r in range(R):  # O8 terms
                for k in range(K):
                    ct = cap_terms.setdefault((t, r, k), [])
                    if w[k] > 0:
                        ct.append((int(Gv[t][r]), float(w[k])))
                    if s[k] > 0:
                        ct.append((int(Z[t][r]), float(s[k])))
        row([(Ev[t], 1.0) for t in slots] + [(x, -1.0)], 0.0, 0.0)  # O5 b
    for (_, e), terms in budget_terms.items():
        if terms:
            row([(j, v) for j, v in terms], -np.inf, float(links.cap[e]))
    for (_, r, k), terms in cap_terms.items():
        if terms:
            row([(j, v) for j, v in terms], -np.inf, float(sites.capacity[r, k]))
    n = V.n
    if n == 0:
        return OptResult(0.0, 0.0, 0.0, 0, "no jobs", True, relax, {})
    c = np.zeros(n)
    for j, v in obj.items():
        c[j] = -v
    A = sps.coo_matrix((vals, (rows, cols)), shape=(nrow, n)).tocsr()
    integrality = np.zeros(n) if relax else np.array(V.integ, dtype=float)
    res = milp(
        c,
        constraints=LinearConstraint(A, lo, hi),
        integrality=integrality,
        bounds=Bounds(np.array(V.lb), np.array(V.ub)),
        options={"time_limit": float(time_limit), "mip_rel_gap": float(mip_rel_gap), "disp": False},
    )
    if res.x is None:
        raise SolveError("eris OPT_MILP", res.status, res.message)
    objective = -float(res.fun) * vmax
    bound = objective
    if not relax and getattr(res, "mip_dual_bound", None) is not None and np.isfinite(res.mip_dual_bound):
        bound = -float(res.mip_dual_bound) * vmax
    gap = float(getattr(res, "mip_gap", 0.0) or 0.0) if not relax else 0.0
    comp: dict[int, int | None] = {}
    for jid, Ev in e_vars.items():
        done = [t for t, j in Ev.items() if res.x[j] > 0.5]
        comp[jid] = done[0] if done else None
    return OptResult(objective, bound, gap, int(res.status), str(res.message), res.status == 0, relax, comp)


@dataclass(frozen=True)
class RatioResult:
    """Performance ratio OPT / W_Eris (>= 1; inf if W = 0 < OPT) with the CR constant of Thm. 5.

    :param opt: OPT (or its LP bound) with true values
    :param welfare: Eris' welfare with true values
    :param ratio: ``opt / welfare``
    :param bound: the competitive-ratio constant of Thm. 5
    :param opt_status: HiGHS status of OPT
    :param opt_optimal: whether OPT was proven optimal
    :param accepted: jobs Eris accepted
    """

    opt: float
    welfare: float
    ratio: float
    bound: float
    opt_status: int
    opt_optimal: bool
    accepted: int


def competitive_ratio(
    jobs: Sequence[ErisJob],
    sites: ErisSites | np.ndarray,
    network: NetworkSpec | None,
    cfg: ErisConfig,
    *,
    bids: Sequence[ErisJob] | None = None,
    time_limit: float = 600.0,
    relax: bool = False,
) -> RatioResult:
    """Run Eris on ``bids`` (the true ``jobs`` by default), measure welfare with the true values and
    divide OPT (exact MILP, or the LP bound with ``relax=True``) by it.

    :param jobs: the true jobs
    :param sites: the edge sites
    :param network: the network, or ``None``
    :param cfg: the configuration
    :param bids: the reports Eris runs on (default: ``jobs``)
    :param time_limit: seconds for OPT
    :param relax: divide the LP bound instead of the MILP optimum
    :returns: OPT, welfare and their ratio
    :raises InputError: no job
    """
    from marketsim.market.eris.mechanism import run_eris

    if not jobs:
        raise InputError("jobs", jobs, "must not be empty")
    out = run_eris(list(bids) if bids is not None else list(jobs), sites, network, cfg)
    W = out.welfare(jobs)
    opt = opt_milp(jobs, sites, network, cfg, relax=relax, time_limit=time_limit)
    if W <= 0:
        ratio = math.inf if opt.objective > 1e-9 else 1.0
    else:
        ratio = opt.objective / W
    return RatioResult(
        opt.objective, W, ratio, competitive_constant(cfg.gamma_d, cfg.gamma_k), opt.status, opt.optimal, out.accepted
    )


def _slot_options(job: ErisJob, sites: ErisSites, links: Links, cfg: ErisConfig, M: tuple[int, ...]):
    """Every (usage (R,K), link volume (L,)) of one active slot with sources M (moves x PS site)."""
    R = sites.R
    dests = [[q for q in range(R) if q != r and links.admissible[r, q]] for r in range(R)]
    per_src = [list(_splits(M[r], len(dests[r]))) for r in range(R)]
    w, s = np.asarray(job.worker_demand), np.asarray(job.ps_demand)
    out = set()
    for combo in itertools.product(*per_src):
        A = np.array(M, dtype=np.int64)
        vol = np.zeros(links.L)
        for r in range(R):
            for q, m in zip(dests[r], combo[r], strict=True):
                if m:
                    A[r] -= m
                    A[q] += m
                    for e in links.paths[r][q]:
                        vol[e] += cfg.theta_mb * m
        g = -(-job.epochs * A // job.proc_capacity)
        for rh in range(R):
            if any(g[r] > 0 and r != rh and not links.admissible[r, rh] for r in range(R)):
                continue
            v = vol.copy()
            for r in range(R):
                if r != rh and g[r] > 0:
                    for e in links.paths[r][rh]:
                        v[e] += job.param_mb * g[r]
            use = w[None, :] * g[:, None]
            use[rh] += s
            out.add((tuple(use.ravel().tolist()), tuple(v.tolist())))
    return out


def opt_enumerate(
    jobs: Sequence[ErisJob], sites: ErisSites | np.ndarray, network: NetworkSpec | None, cfg: ErisConfig
) -> float:
    """OPT of §2.4 by enumerating every joint schedule (micro instances only: R <= 2, I <= 3, T <= 3,
    D <= 2); the cross-check of :func:`opt_milp`."""
    sites = as_sites(sites)
    network = network if network is not None else NetworkSpec()
    links = build_links(network, sites, cfg)
    R, K, T, L = sites.R, sites.K, cfg.horizon, links.L
    menus = []
    for job in jobs:
        job.check_against(sites, cfg)
        a = int(job.arrival)
        S = T - a + 1
        Dr = job.data_vector(sites)
        per_site = [list(_compositions(int(Dr[r]), S)) if Dr[r] > 0 else [(0,) * S] for r in range(R)]
        scheds: dict[tuple, float] = {}
        for combo in itertools.product(*per_site):
            slots = [tuple(int(combo[r][s]) for r in range(R)) for s in range(S)]
            active = [s for s in range(S) if sum(slots[s])]
            opts = [sorted(_slot_options(job, sites, links, cfg, slots[s])) for s in active]
            value = float(job.utility(a + active[-1] - a + cfg.duration_offset))
            for pick in itertools.product(*opts):
                use = np.zeros((T + 1, R * K))
                vol = np.zeros((T + 1, L))
                for s, (u, v) in zip(active, pick, strict=True):
                    use[a + s] = u
                    vol[a + s] = v
                key = (use.tobytes(), vol.tobytes())
                scheds[key] = max(scheds.get(key, -1.0), value)
        menus.append(
            [
                (v, np.frombuffer(k[0]).reshape(T + 1, R * K), np.frombuffer(k[1]).reshape(T + 1, L))
                for k, v in scheds.items()
            ]
        )
    cap = np.tile(sites.capacity.ravel(), (T + 1, 1)) + 1e-9
    lcap = np.tile(links.cap, (T + 1, 1)) + 1e-9
    best = 0.0

    def dfs(i: int, use: np.ndarray, vol: np.ndarray, val: float) -> None:
        nonlocal best
        if i == len(menus):
            best = max(best, val)
            return
        dfs(i + 1, use, vol, val)
        for v, u, b in menus[i]:
            nu, nv = use + u, vol + b
            if (nu <= cap).all() and (nv <= lcap).all():
                dfs(i + 1, nu, nv, val + v)

    dfs(0, np.zeros((T + 1, R * K)), np.zeros((T + 1, L)), 0.0)
    return best
