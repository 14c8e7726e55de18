"""DPC_T: the one-shot deployment of one slot (spec §3.3, paper Alg. 3 with fixes D2-D8, D20-D23).

Two implementations of the same algorithm:

* :func:`deploy_batch` — vectorised over many source vectors ``M`` (rows) at once (numpy);
  pairs that can neither move data nor change a later decision are skipped (exact pruning).
* :func:`deploy_reference` — a straightforward pure-Python transcription (loops), used as the
  benchmark reference and as a cross-check in tests.

Sums over sites and links are evaluated sequentially in index order in both, so the two agree to
the last bit. Site indices here are 0-based rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from marketsim.market.eris.network import Links
from marketsim.market.eris.prices import SlotView
from marketsim.market.eris.types import ErisConfig, ErisJob, ErisSites, SlotPlan

__all__ = [
    "JobArrays",
    "SlotPrep",
    "DeployBatch",
    "prepare_job",
    "prepare_slot",
    "deploy_batch",
    "deploy_reference",
    "plan_from_batch",
]

_EPS = 1e-9


@dataclass(frozen=True)
class JobArrays:
    """Numeric view of a bid: E, P (ints), w, s (K,), lam (MB), theta (MB), data (R,) chunks."""

    E: int
    P: int
    w: np.ndarray
    s: np.ndarray
    lam: float
    theta: float
    data: np.ndarray

    @property
    def D(self) -> int:
        return int(self.data.sum())


def prepare_job(job: ErisJob, sites: ErisSites, cfg: ErisConfig) -> JobArrays:
    return JobArrays(
        job.epochs,
        job.proc_capacity,
        np.asarray(job.worker_demand, float),
        np.asarray(job.ps_demand, float),
        float(job.param_mb),
        float(cfg.theta_mb),
        job.data_vector(sites),
    )


@dataclass(frozen=True)
class SlotPrep:
    """Per (job, slot) quantities: worker caps, chunk caps, unit worker price ``u[r] = sum_k w^k beta``,
    PS price ``psb[r]``, path prices ``pi[r, r']``, and the Omega < 0 pairs sorted by (Omega, r, r')."""

    view: SlotView
    cap: np.ndarray
    chunkcap: np.ndarray
    u: np.ndarray
    psb: np.ndarray
    pi: np.ndarray
    pairs: np.ndarray
    omega: np.ndarray
    omega_full: np.ndarray | None = None

    @property
    def dmax(self) -> int:
        return int(self.chunkcap.sum())


def _seqsum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Sequential (left-to-right) sum, bit-identical to a Python loop."""
    if x.shape[axis] == 0:
        return np.sum(x, axis=axis)
    return np.take(np.cumsum(x, axis=axis), -1, axis=axis)


def prepare_slot(job: JobArrays, view: SlotView, links: Links, prune: bool = True) -> SlotPrep:
    """Lines 2-3 and the pair sort of DPC_T (once per job and slot)."""
    R = view.beta.shape[0]
    wpos = job.w > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.floor(view.res_cap[:, wpos] / job.w[wpos] + _EPS)
    cap = per.min(axis=1).astype(np.int64)
    chunkcap = (job.P * cap) // job.E
    u = _seqsum(view.beta * job.w[None, :], axis=1)
    psb = _seqsum(view.beta * job.s[None, :], axis=1)
    if links.mode == "global":
        pi = np.full((R, R), view.alpha[0])
        np.fill_diagonal(pi, 0.0)
    else:
        pi = _seqsum(links.inc * view.alpha[None, None, :], axis=2)
    omega = job.theta * pi - (job.E / job.P) * (u[:, None] - u[None, :])
    mask = (omega < 0) & links.admissible
    np.fill_diagonal(mask, False)
    if prune:  # pairs with no data at either end never move a chunk nor change a later decision
        has = job.data > 0
        mask &= has[:, None] | has[None, :]
    rr, qq = np.nonzero(mask)
    om = omega[rr, qq]
    order = np.lexsort((qq, rr, om))
    pairs = np.stack([rr[order], qq[order]], axis=1) if len(order) else np.zeros((0, 2), dtype=np.int64)
    return SlotPrep(view, cap, chunkcap, u, psb, pi, pairs, om[order], omega)


@dataclass(frozen=True)
class DeployBatch:
    """Results for n source vectors: ``cost`` (n,) (inf if infeasible), ``ps`` (n,) row or -1,
    ``load``/``workers`` (n, R), ``moves`` (n, npairs) chunks per sorted pair, ``psi`` (n, L) MB."""

    M: np.ndarray
    cost: np.ndarray
    ps: np.ndarray
    load: np.ndarray
    workers: np.ndarray
    moves: np.ndarray
    pairs: np.ndarray
    psi: np.ndarray
    extra: dict[int, dict[tuple[int, int], int]] | None = None


def _overflow(
    A: list[int], out: list[int], M: list[int], used: list[float], chunkcap, omega, links: Links, res_link, theta: float
) -> dict[tuple[int, int], int]:
    """OVERFLOW (D21): move excess chunks out of over-capacity sites even when Omega >= 0; sources by
    (-excess, r), destinations by (Omega(r, r'), r'); only chunks originally at r move (no relay)."""
    R = len(A)
    moved: dict[tuple[int, int], int] = {}
    over = sorted((-(A[r] - int(chunkcap[r])), r) for r in range(R) if A[r] > chunkcap[r])
    for _, r in over:
        for q in sorted((q for q in range(R) if q != r and links.admissible[r, q]), key=lambda q: (omega[r][q], q)):
            bud = min(math.floor((float(res_link[e]) - used[e]) / theta + _EPS) for e in links.paths[r][q])
            m = min(A[r] - int(chunkcap[r]), int(chunkcap[q]) - A[q], bud, M[r] - out[r])
            if m > 0:
                moved[(r, q)] = moved.get((r, q), 0) + m
                out[r] += m
                A[r] -= m
                A[q] += m
                for e in links.paths[r][q]:
                    used[e] += theta * m
    return moved


def deploy_batch(
    job: JobArrays,
    sp: SlotPrep,
    links: Links,
    M: np.ndarray,
    ps_rule: str = "max_workers",
    overflow_moves: bool = False,
) -> DeployBatch:
    """DPC_T for every row of ``M`` (n, R) at the frozen slot ``sp``."""
    M = np.asarray(M, dtype=np.int64)
    n, R = M.shape
    L = links.L
    view = sp.view
    theta = job.theta
    A = M.copy()
    out = np.zeros_like(M)
    used = np.zeros((n, L))
    full = np.zeros((n, R), dtype=bool)
    npairs = len(sp.pairs)
    moves = np.zeros((n, npairs), dtype=np.int64)
    chunkcap = sp.chunkcap
    is_global = links.mode == "global"
    res0 = float(view.res_link[0])
    has_src = M.any(axis=0)  # sites that hold chunks in some row (only they can later lose load)
    live = has_src.copy()  # sources with chunks still at home in some row
    pr, pq = sp.pairs[:, 0], sp.pairs[:, 1]
    # a pair whose source holds no chunk in any row never moves one; its only effect is the 'full'
    # bookkeeping of line 9 for a destination holding data. A changes only on moves, so the marks of a
    # run of such pairs between two candidate pairs are applied at once (trailing marks are never read).
    cand = np.flatnonzero(has_src[pr]).tolist()
    mark = has_src[pq]
    prev = 0
    for p in cand:
        if p > prev:
            Q = np.unique(pq[prev:p][mark[prev:p]])
            if len(Q):
                full[:, Q] |= A[:, Q] >= chunkcap[Q]
        prev = p + 1
        r, q = int(pr[p]), int(pq[p])
        Aq = A[:, q]
        if not live[r]:
            if has_src[q]:
                full[:, q] |= Aq >= chunkcap[q]
            continue
        blocked = full[:, q] | (Aq >= chunkcap[q])
        full[:, q] = blocked
        if blocked.all():
            continue
        src = M[:, r] - out[:, r]
        room = chunkcap[q] - Aq
        if is_global:
            bud = np.floor((res0 - used[:, 0]) / theta + _EPS)
        else:
            path = list(links.paths[r][q])
            bud = np.floor((view.res_link[path][None, :] - used[:, path]) / theta + _EPS).min(axis=1)
        m = np.minimum(np.minimum(src, room), bud).astype(np.int64)
        m[blocked | (m < 0)] = 0
        if not m.any():
            continue
        moves[:, p] = m
        out[:, r] += m
        A[:, r] -= m
        A[:, q] += m
        if is_global:
            used[:, 0] += theta * m
        else:
            for e in links.paths[r][q]:
                used[:, e] += theta * m
        live[r] = bool((M[:, r] - out[:, r]).any())
    extra: dict[int, dict[tuple[int, int], int]] = {}
    if overflow_moves:  # D21, row by row (an extension for sensitivity studies)
        om_list = sp.omega_full.tolist()
        for i in np.flatnonzero((A > chunkcap[None, :]).any(axis=1)):
            Ai, oi, ui = A[i].tolist(), out[i].tolist(), used[i].tolist()
            mv = _overflow(Ai, oi, M[i].tolist(), ui, chunkcap, om_list, links, view.res_link, theta)
            if mv:
                extra[int(i)] = mv
                A[i], out[i], used[i] = Ai, oi, ui
    feas = (A <= chunkcap[None, :]).all(axis=1)
    g = -(-job.E * A // job.P)
    cost = np.full(n, np.inf)
    ps = np.full(n, -1, dtype=np.int64)
    psi_sel = np.zeros((n, L))
    fi = np.flatnonzero(feas & (M.sum(axis=1) > 0))  # PS search only for load-feasible, non-idle rows
    if len(fi):
        gf, usedf, m_ = g[fi], used[fi], len(fi)
        # PS capacity (line 18): the float test w^k g + s^k <= res + tol, tabulated once per worker count
        lim = view.res_cap + _EPS * np.maximum(1.0, view.res_cap)
        gv = np.arange(int(gf.max()) + 1, dtype=np.int64)
        table = (job.w[None, None, :] * gv[None, :, None] + job.s[None, None, :] <= lim[:, None, :]).all(axis=2)
        ok = table[np.arange(R)[None, :], gf]
        if not links.admissible.all():
            bad = (~links.admissible).astype(np.int64)
            np.fill_diagonal(bad, 0)
            ok &= ((gf > 0).astype(np.int64) @ bad) == 0
        tol_link = _EPS * np.maximum(1.0, links.cap)
        if is_global:
            remote = gf.sum(axis=1)[:, None] - gf  # (m, R^) workers not at the PS site
            psi = usedf[:, 0][:, None] + job.lam * remote
            ok &= psi <= view.res_link[0] + tol_link[0]
        else:
            remote = np.einsum("nr,rqe->nqe", gf, links.inc.astype(np.int64))
            psi = usedf[:, None, :] + job.lam * remote  # (m, R^, L)
            ok &= (psi <= view.res_link[None, None, :] + tol_link[None, None, :]).all(axis=2)
        # first valid candidate in the order (-g, psb, r) [max_workers] or (key, r) [min_cost], without sorting
        cand = ok
        if ps_rule == "max_workers":
            gm = np.where(cand, gf, -1)
            cand = cand & (gf == gm.max(axis=1, keepdims=True))
            key = np.broadcast_to(sp.psb, (m_, R))
        else:
            key = job.lam * _seqsum(gf[:, :, None] * sp.pi[None, :, :], axis=1) + sp.psb[None, :]
        km = np.where(cand, key, np.inf)
        cand = cand & (key == km.min(axis=1, keepdims=True))
        has = cand.any(axis=1)
        hi = np.flatnonzero(has)
        if len(hi):
            rh = np.argmax(cand[hi], axis=1)
            rows = fi[hi]
            sel = psi[hi, rh]  # (k,) global or (k, L)
            if is_global:
                link_cost = view.alpha[0] * sel
                psi_sel[rows, 0] = sel
            else:
                link_cost = _seqsum(sel * view.alpha[None, :], axis=1)
                psi_sel[rows] = sel
            worker_cost = _seqsum(gf[hi] * sp.u[None, :], axis=1)
            cost[rows] = link_cost + worker_cost + sp.psb[rh]
            ps[rows] = rh
    cost[M.sum(axis=1) == 0] = 0.0  # idle slot: no PS, no cost (D4)
    return DeployBatch(M, cost, ps, A, g, moves, sp.pairs, psi_sel, extra)


def plan_from_batch(b: DeployBatch, i: int, t: int, job: JobArrays) -> SlotPlan:
    """The SlotPlan of row ``i`` of a feasible batch result."""
    R = b.M.shape[1]
    moves = {(int(b.pairs[p, 0]), int(b.pairs[p, 1])): int(b.moves[i, p]) for p in np.nonzero(b.moves[i])[0]}
    for k, m in (b.extra or {}).get(i, {}).items():
        moves[k] = moves.get(k, 0) + m
    moves = dict(sorted(moves.items()))
    usage = job.w[None, :] * b.workers[i][:, None]
    ps = int(b.ps[i])
    if ps >= 0:
        usage[ps] += job.s
    g = b.workers[i].copy()
    del R
    return SlotPlan(t, b.M[i].copy(), moves, b.load[i].copy(), g, ps, b.psi[i].copy(), usage, float(b.cost[i]))


def deploy_reference(
    job: JobArrays,
    view: SlotView,
    links: Links,
    M: list[int],
    ps_rule: str = "max_workers",
    overflow_moves: bool = False,
) -> tuple[float, SlotPlan | None]:
    """DPC_T for one source vector, transcribed literally with Python loops (no pruning)."""
    R = len(M)
    L = links.L
    t = view.t
    d = sum(M)
    if d == 0:
        return 0.0, SlotPlan(
            t,
            np.array(M),
            {},
            np.array(M),
            np.zeros(R, dtype=np.int64),
            -1,
            np.zeros(L),
            np.zeros(view.beta.shape),
            0.0,
        )
    K = len(job.w)
    cap = []
    for r in range(R):
        c = None
        for k in range(K):
            if job.w[k] > 0:
                v = math.floor(float(view.res_cap[r, k]) / float(job.w[k]) + _EPS)
                c = v if c is None else min(c, v)
        cap.append(int(c))
    chunkcap = [(job.P * cap[r]) // job.E for r in range(R)]
    u = []
    psb = []
    for r in range(R):
        a = 0.0
        b = 0.0
        for k in range(K):
            a += float(view.beta[r, k]) * float(job.w[k])
            b += float(view.beta[r, k]) * float(job.s[k])
        u.append(a)
        psb.append(b)
    pi = [[0.0] * R for _ in range(R)]
    for r in range(R):
        for q in range(R):
            if r != q:
                acc = 0.0
                for e in sorted(links.paths[r][q]):
                    acc += float(view.alpha[e])
                pi[r][q] = acc
    ratio = job.E / job.P
    pairs = []
    omega = [[0.0] * R for _ in range(R)]
    for r in range(R):
        for q in range(R):
            omega[r][q] = job.theta * pi[r][q] - ratio * (u[r] - u[q])
            if r != q and links.admissible[r, q]:
                om = omega[r][q]
                if om < 0:
                    pairs.append((om, r, q))
    pairs.sort()
    A = list(M)
    out = [0] * R
    used = [0.0] * L
    h: dict[tuple[int, int], int] = {}
    full: set[int] = set()
    for _, r, q in pairs:
        if q in full:
            continue
        src = M[r] - out[r]
        room = chunkcap[q] - A[q]
        if room <= 0:
            full.add(q)
            continue
        bud = min(math.floor((float(view.res_link[e]) - used[e]) / job.theta + _EPS) for e in links.paths[r][q])
        m = min(src, room, bud)
        if m <= 0:
            continue
        h[(r, q)] = h.get((r, q), 0) + m
        out[r] += m
        A[r] -= m
        A[q] += m
        for e in links.paths[r][q]:
            used[e] += job.theta * m
    if overflow_moves:
        for k, m in _overflow(A, out, list(M), used, chunkcap, omega, links, view.res_link, job.theta).items():
            h[k] = h.get(k, 0) + m
    for r in range(R):
        if A[r] > chunkcap[r]:
            return math.inf, None
    g = [-(-job.E * A[r] // job.P) for r in range(R)]
    if ps_rule == "max_workers":
        cand = sorted(range(R), key=lambda r: (-g[r], psb[r], r))
    else:

        def key(rh: int) -> tuple[float, int]:
            acc = 0.0
            for r in range(R):
                acc += g[r] * pi[r][rh]
            return (job.lam * acc + psb[rh], rh)

        cand = sorted(range(R), key=key)
    for rh in cand:
        ok = True
        for k in range(K):
            lim = float(view.res_cap[rh, k])
            if job.w[k] * g[rh] + job.s[k] > lim + _EPS * max(1.0, lim):
                ok = False
                break
        if not ok:
            continue
        if any(g[r] > 0 and r != rh and not links.admissible[r, rh] for r in range(R)):
            continue
        psi = list(used)
        for e in range(L):
            remote = 0
            for r in range(R):
                if r != rh and g[r] > 0 and e in links.paths[r][rh]:
                    remote += g[r]
            psi[e] = used[e] + job.lam * remote
        if any(psi[e] > float(view.res_link[e]) + _EPS * max(1.0, float(links.cap[e])) for e in range(L)):
            continue
        link_cost = 0.0
        for e in range(L):
            link_cost += float(view.alpha[e]) * psi[e]
        worker_cost = 0.0
        for r in range(R):
            worker_cost += g[r] * u[r]
        cost = link_cost + worker_cost + psb[rh]
        usage = np.zeros(view.beta.shape)
        for r in range(R):
            for k in range(K):
                usage[r, k] = job.w[k] * g[r] + (job.s[k] if r == rh else 0.0)
        plan = SlotPlan(
            t,
            np.array(M),
            {k: v for k, v in sorted(h.items())},
            np.array(A),
            np.array(g),
            rh,
            np.array(psi),
            usage,
            cost,
        )
        return cost, plan
    return math.inf, None
