"""One round of Astraea: state, MINCOSTC / MINCOSTD (Alg. 5 / 4), BEST_SCHEDULE (Alg. 3 inner loop)
and the sequential commit of A_maxIrev.

Inside a round the window is slots w0+1 .. w0+τ (offset k = 0..τ−1 is slot w0+1+k). Every round
starts with an empty cluster (spec §2.1). Two searches give identical decisions:

* :func:`best_schedule_reference`: the straightforward loop over start offsets and worker counts,
  calling the scalar :func:`mincostc` / :func:`mincostd` (Alg. 3 as written);
* :func:`best_schedule_fast`: the same search vectorised over start offsets and servers with a
  sparse table of window minima, pruning by ``f(d)`` and skipping dominated worker counts.

Selection rule (both): among all feasible (start, D_w) tuples, with the centralized schedule
preferred when its value is ≥ the distributed one, let M be the largest value; if M ≤ tol_admit
the job is rejected, else the earliest tuple in (start, D_w) order with value ≥ M − 1e-12 wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from marketsim.market.astraea.model import (
    AstraeaParams,
    Cluster,
    JobSpec,
    allowed_workers,
    duration,
    need_ps,
    throughput,
)
from marketsim.market.errors import InputError

__all__ = ["RunContext", "JobInfo", "RoundState", "Candidate", "mincostc", "mincostd", "best_schedule"]

TIE = 1e-12


@dataclass
class JobInfo:
    """Per-job precomputation: speeds, worker counts and durations (index i ↔ workers[i])."""

    job: JobSpec
    uidx: int
    workers: np.ndarray  # allowed D_w, ascending
    d_cent: np.ndarray
    d_dist: np.ndarray
    n_cent: float
    n_dist: float
    cent_ok: np.ndarray  # structurally possible on some server (ignores load): D_w ≤ C_sw, C_sp ≥ 1
    dist_ok: np.ndarray  # some PS server can host need(remote) PSs and D_w ≤ C_W

    @property
    def jid(self) -> str:
        return self.job.jid


@dataclass
class RunContext:
    """Cluster arrays and parameters shared by every round of a run."""

    cluster: Cluster
    params: AstraeaParams
    theta_w: float
    theta_p: float
    cap_w: np.ndarray = field(init=False)  # (S,)
    cap_p: np.ndarray = field(init=False)
    q_w: np.ndarray = field(init=False)  # (U,)
    q_p: np.ndarray = field(init=False)
    eta_w_table: np.ndarray = field(init=False)
    eta_p_table: np.ndarray = field(init=False)
    need_table: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        from marketsim.market.astraea.pricing import price_table

        c = self.cluster
        self.cap_w = np.array([s.n_workers for s in c.servers], dtype=np.int64)
        self.cap_p = np.array([s.n_ps for s in c.servers], dtype=np.int64)
        self.q_w = np.array([t.quota_workers for t in c.tenants], dtype=np.int64)
        self.q_p = np.array([t.quota_ps for t in c.tenants], dtype=np.int64)
        self.CW = int(self.cap_w.sum())
        self.CP = int(self.cap_p.sum())
        self.eta_w_table = price_table(self.CW, self.theta_w)
        self.eta_p_table = price_table(self.CP, self.theta_p)
        self._need_cache: dict[int, np.ndarray] = {}
        self.need_table = self.needs(64)

    @property
    def S(self) -> int:
        return len(self.cluster.servers)

    @property
    def U(self) -> int:
        return len(self.cluster.tenants)

    def needs(self, upto: int) -> np.ndarray:
        """need(R) for R = 0..upto (int array)."""
        c = self.cluster
        if upto >= len(getattr(self, "need_table", ())):
            self.need_table = np.array(
                [need_ps(r, c.bw_worker_mbps, c.bw_ps_mbps) for r in range(max(upto, 1) + 1)], dtype=np.int64
            )
        return self.need_table

    def job_info(self, job: JobSpec) -> JobInfo:
        n_c, n_d = throughput(job, self.cluster.bw_worker_mbps)
        ws = np.array(allowed_workers(job, self.params), dtype=np.int64)
        if ws.size == 0 or ws[0] < 1:
            raise InputError(f"JobSpec[{job.jid}] worker cap", int(ws[0]) if ws.size else 0, "must be >= 1")
        self.needs(int(ws[-1]))
        dc = np.array([duration(job.work, n_c, int(w)) for w in ws], dtype=np.int64)
        dd = np.array([duration(job.work, n_d, int(w)) for w in ws], dtype=np.int64)
        need = self.needs(int(ws[-1]))
        cent_ok = np.array([bool(((self.cap_w >= w) & (self.cap_p >= 1)).any()) for w in ws])
        dist_ok = np.array(
            [w <= self.CW and bool((need[w - np.minimum(w - 1, self.cap_w)] <= self.cap_p).any()) for w in ws]
        )
        return JobInfo(job, self.cluster.tenant_index(job.owner), ws, dc, dd, n_c, n_d, cent_ok, dist_ok)


class _SparseMin:
    """Sparse table of range minima over the last axis: window min over [k, k+d) for all k in O(1)."""

    def __init__(self, a: np.ndarray) -> None:
        self.levels = [a]
        n = a.shape[-1]
        j = 1
        while (1 << j) <= n:
            prev = self.levels[-1]
            half = 1 << (j - 1)
            self.levels.append(np.minimum(prev[..., : n - (1 << j) + 1], prev[..., half : half + n - (1 << j) + 1]))
            j += 1

    def window(self, d: int) -> np.ndarray:
        """Minima of all windows of length d (last axis length n − d + 1)."""
        j = d.bit_length() - 1
        lv = self.levels[j]
        n_out = self.levels[0].shape[-1] - d + 1
        return np.minimum(lv[..., :n_out], lv[..., d - (1 << j) : d - (1 << j) + n_out])


@dataclass(frozen=True)
class Candidate:
    """One schedule ι of a job in a round (k = start offset in the window)."""

    k: int
    t_start: int
    t_end: int
    d: int
    n_workers: int
    n_ps: int
    centralized: bool
    y: tuple[tuple[int, int], ...]  # (server, workers)
    z: tuple[tuple[int, int], ...]  # (server, PSs)
    ideal_value: float  # F_j(ι)
    cost_w: float
    cost_p: float

    @property
    def value(self) -> float:
        """F − posted cost (the μ of Eq. 7 before the max with 0)."""
        return self.ideal_value - self.cost_w - self.cost_p


class RoundState:
    """Reservations of one round window: per-server loads and per-tenant pass-1 / pass-2 use."""

    def __init__(self, ctx: RunContext, w0: int, tau: int) -> None:
        self.ctx = ctx
        self.w0 = w0
        self.tau = tau
        S, U = ctx.S, ctx.U
        self.h_w = np.zeros((S, tau), dtype=np.int64)
        self.h_p = np.zeros((S, tau), dtype=np.int64)
        self.used_w = np.zeros((2, U, tau), dtype=np.int64)  # [pass-1, pass-2]
        self.used_p = np.zeros((2, U, tau), dtype=np.int64)
        self.load_w = np.zeros(tau, dtype=np.int64)
        self.load_p = np.zeros(tau, dtype=np.int64)
        self.version = 0
        self._cache: dict[object, object] = {}

    # -- prices and limits ------------------------------------------------------------------
    def eta(self) -> tuple[np.ndarray, np.ndarray]:
        """Posted unit prices η_w(t), η_p(t) over the window at the current loads."""
        return self.ctx.eta_w_table[self.load_w], self.ctx.eta_p_table[self.load_p]

    def avail(self, pass_: int, uidx: int) -> tuple[np.ndarray, np.ndarray]:
        """Wavail(t), Pavail(t): own unused quota (pass 1) or the live pool (pass 2)."""
        if pass_ == 1:
            return self.ctx.q_w[uidx] - self.used_w[0, uidx], self.ctx.q_p[uidx] - self.used_p[0, uidx]
        return self.ctx.CW - self.load_w, self.ctx.CP - self.load_p

    def free(self) -> tuple[np.ndarray, np.ndarray]:
        return self.ctx.cap_w[:, None] - self.h_w, self.ctx.cap_p[:, None] - self.h_p

    def _cached(self, key: object, build):  # noqa: ANN001, ANN202
        full = (self.version, key)
        hit = self._cache.get(full)
        if hit is None:
            if len(self._cache) > 64:
                self._cache.clear()
            hit = build()
            self._cache[full] = hit
        return hit

    # -- commit -------------------------------------------------------------------------------
    def commit(self, cand: Candidate, uidx: int, pass_: int) -> None:
        a, b = cand.k, cand.k + cand.d
        for s, n in cand.y:
            self.h_w[s, a:b] += n
        for s, n in cand.z:
            self.h_p[s, a:b] += n
        self.load_w[a:b] += cand.n_workers
        self.load_p[a:b] += cand.n_ps
        self.used_w[pass_ - 1, uidx, a:b] += cand.n_workers
        self.used_p[pass_ - 1, uidx, a:b] += cand.n_ps
        self.version += 1
        self._cache.clear()


# ---------------------------------------------------------------------------------------------
# scalar MINCOSTC / MINCOSTD


def _value(
    info: JobInfo, st: RoundState, k: int, d: int, n_w: int, n_p: int, cent: bool, prices: tuple, origin: float
) -> tuple[float, float, float]:
    """(F, cost_w, cost_p) of a schedule at offset k with duration d."""
    pw, pp, eta_w, eta_p = prices
    t_end = st.w0 + k + d
    F = float(info.job.utility(float(t_end - origin)))
    if cent and st.ctx.params.mincostc_pricing == "start_slot":
        cw = n_w * (d * eta_w[k])
        cp = n_p * (d * eta_p[k])
    else:
        cw = n_w * (pw[k + d] - pw[k])
        cp = n_p * (pp[k + d] - pp[k])
    return F, float(cw), float(cp)


def _prices(st: RoundState, pass_: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if pass_ == 1 and st.ctx.params.pass1_pricing == "zero":
            ew = np.zeros(st.tau)
            ep = np.zeros(st.tau)
        else:
            ew, ep = st.eta()
        return np.concatenate(([0.0], np.cumsum(ew))), np.concatenate(([0.0], np.cumsum(ep))), ew, ep

    return st._cached(("prices", pass_), build)


def _origin(info: JobInfo, st: RoundState) -> float:
    return float(st.w0) if st.ctx.params.admission_time_origin == "round_start" else float(info.job.arrival)


def _choose_server(st: RoundState, H: np.ndarray, FW: np.ndarray) -> int:
    rule = st.ctx.params.centralized_choice
    idx = np.flatnonzero(H)
    if rule == "least_loaded_round":
        load = st.h_w.sum(axis=1)[idx]
        return int(idx[np.argmin(load)])
    if rule == "best_fit":
        return int(idx[np.argmin(FW[idx])])
    return int(idx[0])


def mincostc(info: JobInfo, st: RoundState, k: int, wi: int, pass_: int) -> Candidate | None:
    """MINCOSTC (A2): centralized schedule of ``workers[wi]`` workers starting at offset ``k``."""
    dw = int(info.workers[wi])
    d = int(info.d_cent[wi])
    if k + d > st.tau:
        return None
    wav, pav = st.avail(pass_, info.uidx)
    if wav[k : k + d].min() < dw or pav[k : k + d].min() < 1:
        return None
    FW = (st.ctx.cap_w[:, None] - st.h_w[:, k : k + d]).min(axis=1)
    FP = (st.ctx.cap_p[:, None] - st.h_p[:, k : k + d]).min(axis=1)
    H = (FW >= dw) & (FP >= 1)
    if not H.any():
        return None
    s = _choose_server(st, H, FW)
    F, cw, cp = _value(info, st, k, d, dw, 1, True, _prices(st, pass_), _origin(info, st))
    t0 = st.w0 + k + 1
    return Candidate(k, t0, t0 + d - 1, d, dw, 1, True, ((s, dw),), ((s, 1),), F, cw, cp)


def mincostd(info: JobInfo, st: RoundState, k: int, wi: int, pass_: int) -> Candidate | None:
    """MINCOSTD (A3): distributed schedule of ``workers[wi]`` workers starting at offset ``k``."""
    dw = int(info.workers[wi])
    d = int(info.d_dist[wi])
    if k + d > st.tau:
        return None
    wav, pav = st.avail(pass_, info.uidx)
    if wav[k : k + d].min() < dw:
        return None
    FW = (st.ctx.cap_w[:, None] - st.h_w[:, k : k + d]).min(axis=1)
    FP = (st.ctx.cap_p[:, None] - st.h_p[:, k : k + d]).min(axis=1)
    PA = int(pav[k : k + d].min())
    dsw = np.minimum(dw - 1, FW)
    need = st.ctx.needs(dw)[dw - dsw]
    S = st.ctx.S
    Q = [s for s in sorted(range(S), key=lambda s: (int(need[s]), s)) if need[s] <= FP[s] and need[s] <= PA]
    order = sorted(range(S), key=lambda s: (int(FW[s]), s))
    for s1 in Q:
        rem = dw - int(dsw[s1])
        y: dict[int, int] = {s1: int(dsw[s1])} if dsw[s1] > 0 else {}
        for s in order:
            if s == s1 or rem == 0:
                continue
            take = min(int(FW[s]), rem)
            if take > 0:
                y[s] = y.get(s, 0) + take
                rem -= take
        if rem == 0:
            P = int(need[s1])
            F, cw, cp = _value(info, st, k, d, dw, P, False, _prices(st, pass_), _origin(info, st))
            t0 = st.w0 + k + 1
            return Candidate(k, t0, t0 + d - 1, d, dw, P, False, tuple(sorted(y.items())), ((s1, P),), F, cw, cp)
        if not st.ctx.params.mincostd_retry:
            break
    return None


def _pick(cands: dict[tuple[int, int], Candidate], tol: float) -> Candidate | None:
    """The selection rule of the module docstring over {(k, wi): combined candidate}."""
    if not cands:
        return None
    M = max(c.value for c in cands.values())
    if not M > tol:
        return None
    for key in sorted(cands):
        c = cands[key]
        if c.value >= M - TIE and c.value > tol:
            return c
    return None  # pragma: no cover


def best_schedule_reference(info: JobInfo, st: RoundState, pass_: int) -> Candidate | None:
    """BEST_SCHEDULE by the plain loop: every start offset, every D_w, both placements."""
    cands: dict[tuple[int, int], Candidate] = {}
    for k in range(st.tau):
        for wi in range(len(info.workers)):
            c = mincostc(info, st, k, wi, pass_)
            dd = mincostd(info, st, k, wi, pass_)
            if c is None and dd is None:
                continue
            if c is None or (dd is not None and c.value < dd.value):
                cands[(k, wi)] = dd  # type: ignore[assignment]
            else:
                cands[(k, wi)] = c
    return _pick(cands, st.ctx.params.tol_admit)


# ---------------------------------------------------------------------------------------------
# vectorised search


@dataclass
class _ServerGroups:
    """Servers with identical free-worker and free-PS rows over the window, merged: every quantity of
    the search depends on a server only through its rows (and its sid for the no-retry tie-break)."""

    sw: _SparseMin  # (G, τ) free workers
    sp: _SparseMin  # (G, τ) free PS slots
    mult: np.ndarray  # (G,) servers per group
    minsid: np.ndarray  # (G,) smallest sid in the group


def _tables(st: RoundState, pass_: int, uidx: int) -> tuple[_ServerGroups, _SparseMin, _SparseMin]:
    def build_servers() -> _ServerGroups:
        fw, fp = st.free()
        both = np.concatenate([fw, fp], axis=1)
        S = fw.shape[0]
        first: dict[bytes, int] = {}
        inv = np.empty(S, dtype=np.int64)
        for k in range(S):  # group identical rows, groups numbered by their smallest sid
            inv[k] = first.setdefault(both[k].tobytes(), len(first))
        reps = np.array(list({g: k for k, g in reversed(list(enumerate(inv)))}.values()))
        order = np.argsort([inv[r] for r in reps])
        minsid = reps[order].astype(np.int64)
        uniq = both[minsid]
        mult = np.bincount(inv, minlength=len(first)).astype(np.int64)
        return _ServerGroups(_SparseMin(uniq[:, : st.tau]), _SparseMin(uniq[:, st.tau :]), mult, minsid)

    def build_avail() -> tuple[_SparseMin, _SparseMin]:
        wav, pav = st.avail(pass_, uidx)
        return _SparseMin(wav), _SparseMin(pav)

    groups = st._cached("servers", build_servers)
    aw, ap = st._cached(("avail", pass_, uidx if pass_ == 1 else -1), build_avail)
    return groups, aw, ap


def best_schedule_fast(info: JobInfo, st: RoundState, pass_: int) -> Candidate | None:
    """BEST_SCHEDULE vectorised over start offsets and servers (same decisions as the reference)."""
    params = st.ctx.params
    tau = st.tau
    nW = len(info.workers)
    f = info.job.utility
    # prune: the best value of (D_w, placement) is at most f(d) (x >= d under both clocks)
    fmax_c = np.where(info.cent_ok, np.asarray(f(info.d_cent.astype(float)), dtype=float), -np.inf)
    fmax_d = np.where(info.dist_ok, np.asarray(f(info.d_dist.astype(float)), dtype=float), -np.inf)
    tol = params.tol_admit
    if max(fmax_c.max(), fmax_d.max()) <= tol or min(info.d_cent.min(), info.d_dist.min()) > tau:
        return None
    groups, aw, ap = _tables(st, pass_, info.uidx)
    sw, sp, mult = groups.sw, groups.sp, groups.mult[:, None]
    pw, pp, eta_w, eta_p = _prices(st, pass_)
    origin = _origin(info, st)
    start_slot = params.mincostc_pricing == "start_slot"
    S = st.ctx.S
    sid = groups.minsid[:, None]
    V = np.full((nW, tau), -np.inf)
    Z = np.zeros((nW, tau), dtype=bool)  # True = centralized
    best = -np.inf
    fcache: dict[int, np.ndarray] = {}

    def fvals(d: int) -> np.ndarray:
        v = fcache.get(d)
        if v is None:
            t_end = st.w0 + np.arange(tau - d + 1) + d
            v = np.asarray(f((t_end - origin).astype(float)), dtype=float)
            fcache[d] = v
        return v

    # visit worker counts by decreasing upper bound f(d), so the pruning bites early
    for wi in np.argsort(-np.maximum(fmax_c, fmax_d), kind="stable"):
        wi = int(wi)
        dw = int(info.workers[wi])
        dc, dd = int(info.d_cent[wi]), int(info.d_dist[wi])
        if wi > 0 and dc == info.d_cent[wi - 1] and dd == info.d_dist[wi - 1]:
            continue  # dominated by wi-1 at every start (exact, see spec §8.3)
        # centralized
        vc = None
        if dc <= tau and fmax_c[wi] >= best - TIE and fmax_c[wi] > tol:
            ok = (aw.window(dc) >= dw) & (ap.window(dc) >= 1)
            FW = sw.window(dc)
            FP = sp.window(dc)
            ok &= ((FW >= dw) & (FP >= 1)).any(axis=0)
            if ok.any():
                K = tau - dc + 1
                if start_slot:
                    vc = fvals(dc) - dw * (dc * eta_w[:K]) - 1 * (dc * eta_p[:K])
                else:
                    vc = fvals(dc) - dw * (pw[dc:] - pw[:K]) - 1 * (pp[dc:] - pp[:K])
                vc = np.where(ok, vc, -np.inf)
        # distributed
        vd = None
        if dd <= tau and fmax_d[wi] >= best - TIE and fmax_d[wi] > tol:
            ok = aw.window(dd) >= dw
            if ok.any():
                FW = sw.window(dd)
                FP = sp.window(dd)
                PA = ap.window(dd)
                dsw = np.minimum(dw - 1, FW)
                need = st.ctx.needs(dw)[dw - dsw]
                Q = (need <= FP) & (need <= PA[None, :])
                fill = (mult * FW).sum(axis=0)[None, :] - FW + dsw >= dw
                if params.mincostd_retry:
                    P = np.where(Q & fill, need, np.iinfo(np.int64).max).min(axis=0)
                    okd = ok & (P < np.iinfo(np.int64).max)
                else:
                    key = np.where(Q, need * S + sid, np.iinfo(np.int64).max)
                    first = key.argmin(axis=0)
                    cols = np.arange(FW.shape[1])
                    okd = ok & Q[first, cols] & fill[first, cols]
                    P = need[first, cols]
                if okd.any():
                    K = tau - dd + 1
                    vd = fvals(dd) - dw * (pw[dd:] - pw[:K]) - np.where(okd, P, 0) * (pp[dd:] - pp[:K])
                    vd = np.where(okd, vd, -np.inf)
        if vc is not None:
            V[wi, : vc.size] = vc
            Z[wi, : vc.size] = np.isfinite(vc)
        if vd is not None:
            row = V[wi, : vd.size]
            better = vd > row  # centralized wins ties
            row[better] = vd[better]
            Z[wi, : vd.size][better] = False
        m = V[wi].max()
        if m > best:
            best = m
    if not best > tol:
        return None
    mask = V >= best - TIE
    k = int(np.flatnonzero(mask.any(axis=0))[0])
    wi = int(np.flatnonzero(mask[:, k])[0])
    cand = mincostc(info, st, k, wi, pass_) if Z[wi, k] else mincostd(info, st, k, wi, pass_)
    if cand is None or cand.value != V[wi, k]:  # pragma: no cover - guards the equivalence
        raise AssertionError(f"fast search disagrees with MINCOST for {info.jid} at k={k}, D_w={info.workers[wi]}")
    return cand


def best_schedule(info: JobInfo, st: RoundState, pass_: int) -> Candidate | None:
    """BEST_SCHEDULE with the implementation chosen by ``params.search_impl``."""
    if st.ctx.params.search_impl == "reference":
        return best_schedule_reference(info, st, pass_)
    return best_schedule_fast(info, st, pass_)
