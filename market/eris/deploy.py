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

from market.eris.network import Links
from market.eris.prices import SlotView
from market.eris.types import ErisConfig, ErisJob, ErisSites, SlotPlan

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
    return SlotPrep(view, cap, chunkcap, u, psb, pi, pairs, om[order])


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


def deploy_batch(
    job: JobArrays, sp: SlotPrep, links: Links, M: np.ndarray, ps_rule: str = "max_workers"
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
    for p in range(npairs):
        r, q = int(sp.pairs[p, 0]), int(sp.pairs[p, 1])
        fr = full[:, q]
        room = chunkcap[q] - A[:, q]
        nowfull = ~fr & (room <= 0)
        full[:, q] |= nowfull
        active = ~fr & ~nowfull
        src = M[:, r] - out[:, r]
        path = links.paths[r][q]
        bud = np.floor((view.res_link[list(path)][None, :] - used[:, list(path)]) / theta + _EPS).min(axis=1)
        m = np.minimum(np.minimum(src, room), bud).astype(np.int64)
        m = np.where(active & (m > 0), m, 0)
        if not m.any():
            continue
        moves[:, p] = m
        out[:, r] += m
        A[:, r] -= m
        A[:, q] += m
        for e in path:
            used[:, e] += theta * m
    feas = (A <= chunkcap[None, :]).all(axis=1)
    g = -(-job.E * A // job.P)
    tol_cap = _EPS * np.maximum(1.0, view.res_cap)
    need = job.w[None, None, :] * g[:, :, None] + job.s[None, None, :]
    ps_ok = (need <= view.res_cap[None, :, :] + tol_cap[None, :, :]).all(axis=2)
    if not links.admissible.all():
        bad = (~links.admissible).astype(np.int64)
        np.fill_diagonal(bad, 0)
        ps_ok &= ((g > 0).astype(np.int64) @ bad) == 0
    tol_link = _EPS * np.maximum(1.0, links.cap)
    if links.mode == "global":
        remote = g.sum(axis=1)[:, None] - g  # (n, R^) workers not at the PS site
        psi = used[:, 0][:, None] + job.lam * remote  # (n, R^)
        ps_ok &= psi <= view.res_link[0] + tol_link[0]
        link_cost = view.alpha[0] * psi
    else:
        remote = np.einsum("nr,rqe->nqe", g, links.inc.astype(np.int64))
        psi = used[:, None, :] + job.lam * remote  # (n, R^, L)
        ps_ok &= (psi <= view.res_link[None, None, :] + tol_link[None, None, :]).all(axis=2)
        link_cost = _seqsum(psi * view.alpha[None, None, :], axis=2)
    worker_cost = _seqsum(g * sp.u[None, :], axis=1)
    cost_mat = link_cost + worker_cost[:, None] + sp.psb[None, :]
    ps_ok &= feas[:, None]
    ridx = np.broadcast_to(np.arange(R), (n, R))
    if ps_rule == "max_workers":
        order = np.lexsort((ridx, np.broadcast_to(sp.psb, (n, R)), -g), axis=-1)
    else:
        key = job.lam * _seqsum(g[:, :, None] * sp.pi[None, :, :], axis=1) + sp.psb[None, :]
        order = np.lexsort((ridx, key), axis=-1)
    ok_sorted = np.take_along_axis(ps_ok, order, axis=1)
    has = ok_sorted.any(axis=1)
    first = np.argmax(ok_sorted, axis=1)
    ps = np.where(has, order[np.arange(n), first], -1)
    psc = np.where(has, ps, 0)
    cost = np.where(has, cost_mat[np.arange(n), psc], np.inf)
    if links.mode == "global":
        psi_sel = psi[np.arange(n), psc][:, None]
    else:
        psi_sel = psi[np.arange(n), psc, :]
    zero = M.sum(axis=1) == 0  # idle slot: no PS, no cost (D4)
    cost = np.where(zero, 0.0, cost)
    ps = np.where(zero, -1, ps)
    return DeployBatch(M, cost, ps, A, g, moves, sp.pairs, psi_sel)


def plan_from_batch(b: DeployBatch, i: int, t: int, job: JobArrays) -> SlotPlan:
    """The SlotPlan of row ``i`` of a feasible batch result."""
    R = b.M.shape[1]
    moves = {(int(b.pairs[p, 0]), int(b.pairs[p, 1])): int(b.moves[i, p]) for p in np.nonzero(b.moves[i])[0]}
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
    sites: ErisSites | None = None,
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
    for r in range(R):
        for q in range(R):
            if r != q and links.admissible[r, q]:
                om = job.theta * pi[r][q] - ratio * (u[r] - u[q])
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
