"""Astraea's baselines (spec §4): BatchSche (B1), the exclusive partitions used by the sharing-incentive
audit, Gandiva_fair as the spec models it for this setting (B2) and HiveD (B3).

All share the cluster, jobs and Eq. (1) work model; none has payments, so g_u = Σ_{j of u} f_j(X_j).
Registered names: ``batchsche``, ``exclusive``, ``astraea-gandiva`` (``gandiva-fair`` is the OEF
fair-share allocator) and ``hived``. Units: slots are hours.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from marketsim.market.astraea.accounting import elapsed, realised_value
from marketsim.market.astraea.model import (
    AstraeaParams,
    Cluster,
    JobSpec,
    Server,
    Tenant,
    need_ps,
    throughput,
    worker_cap,
)
from marketsim.market.astraea.online import _validate_jobs, resolve_theta, run_astraea
from marketsim.market.errors import InputError, check_choice, check_nonneg
from marketsim.market.registry import register

__all__ = [
    "BaselineResult",
    "exclusive_partition",
    "run_exclusive",
    "run_batchsche",
    "run_gandiva_fair",
    "run_hived",
    "waterfill",
]


@dataclass
class BaselineResult:
    """Outcome of a baseline: completion slot per job (``None`` = not completed), first running slot,
    realised values, per-tenant revenue g (U,) and GPUs in use per slot (index t−1); the slot
    simulations put each job's GPU-slots used in ``extra["gpu_slots"]`` (jid → int).

    :param name: the baseline
    :param cluster: servers, tenants and quotas
    :param jobs: the jobs
    :param completion: jid -> completion slot, ``None`` if not completed
    :param start: jid -> first running slot
    :param values: jid -> realised value, currency
    :param g: (U,) revenue per tenant
    :param gpu_usage: GPUs in use per slot (index t−1)
    :param theta_w: the worker price base, if any
    :param theta_p: the PS price base, if any
    :param extra: baseline details (``gpu_slots``: jid -> GPU-slots used)
    """

    name: str
    cluster: Cluster
    jobs: tuple[JobSpec, ...]
    completion: dict[str, int | None]
    start: dict[str, int | None]
    values: dict[str, float]
    g: np.ndarray
    gpu_usage: np.ndarray
    theta_w: float | None = None
    theta_p: float | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def revenue(self) -> float:
        """Collective revenue R = Σ over completed jobs of f_j(X_j)."""
        return math.fsum(self.values.values())

    def utilisation(self) -> np.ndarray:
        return self.gpu_usage / self.cluster.total_workers


def _values(
    jobs: Sequence[JobSpec], completion: dict[str, int | None], origin: str
) -> tuple[dict[str, float], dict[int, float]]:
    if origin == "round_start":
        raise InputError(
            "revenue_time_origin", origin, "has no meaning for slot-based baselines (use arrival/absolute)"
        )
    vals: dict[str, float] = {}
    per: dict[int, float] = {}
    for j in jobs:
        c = completion.get(j.jid)
        v = 0.0 if c is None else float(j.utility(elapsed(j, c, 0, origin)))
        vals[j.jid] = v
        per[j.owner] = per.get(j.owner, 0.0) + v
    return vals, per


# ---------------------------------------------------------------------------------------------
# B1 BatchSche and exclusive partitions


def exclusive_partition(cluster: Cluster, by: str = "owner") -> dict[int, tuple[int, ...]]:
    """Server ids of each tenant's exclusive partition.

    ``by="owner"``: the servers it owns (variant a). ``by="quota"``: servers in sid order to tenants in
    uid order, each taking servers until its worker and PS totals equal its quota exactly (variant b);
    raises if no exact split exists that way."""
    check_choice("by", by, ("owner", "quota"))
    if by == "owner":
        if any(s.owner is None for s in cluster.servers):
            raise InputError("Server.owner", None, "must be set on every server for the owner partition")
        return {t.uid: tuple(s.sid for s in cluster.servers if s.owner == t.uid) for t in cluster.tenants}
    out: dict[int, tuple[int, ...]] = {}
    it = 0
    servers = cluster.servers
    for t in sorted(cluster.tenants, key=lambda x: x.uid):
        got: list[int] = []
        w = p = 0
        while (w, p) != (t.quota_workers, t.quota_ps):
            if it >= len(servers) or w > t.quota_workers or p > t.quota_ps:
                raise InputError(
                    f"Tenant[{t.uid}] quota", (t.quota_workers, t.quota_ps), "has no exact server split in sid order"
                )
            s = servers[it]
            it += 1
            got.append(s.sid)
            w += s.n_workers
            p += s.n_ps
        out[t.uid] = tuple(got)
    return out


def _sub_cluster(cluster: Cluster, sids: Sequence[int], uid: int) -> Cluster:
    servers = tuple(Server(i, cluster.servers[s].n_workers, cluster.servers[s].n_ps, uid) for i, s in enumerate(sids))
    return Cluster(
        servers,
        (Tenant(uid, sum(x.n_workers for x in servers), sum(x.n_ps for x in servers)),),
        cluster.bw_worker_mbps,
        cluster.bw_ps_mbps,
    )


def run_exclusive(
    cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None, by: str = "owner"
) -> BaselineResult:
    """Each tenant alone on its partition, running the Astraea core with pass 2 disabled and the same
    λ, θ (frozen from the full job population unless given), worker mode and job order (B1).

    :param cluster: servers, tenants and quotas
    :param jobs: the jobs
    :param params: Astraea's parameters (λ, θ, worker mode; default :class:`AstraeaParams`)
    :param by: ``owner`` (the servers each tenant owns) or ``quota`` (servers split to match the quotas)
    :returns: the outcome
    """
    params = params or AstraeaParams()
    jobs = _validate_jobs(cluster, jobs, params)
    theta_w, theta_p = resolve_theta(cluster, jobs, params)
    sub_params = params.with_(theta_mode="given", theta_w=theta_w, theta_p=theta_p, enable_pass2=False)
    part = exclusive_partition(cluster, by)
    completion: dict[str, int | None] = {j.jid: None for j in jobs}
    start: dict[str, int | None] = {j.jid: None for j in jobs}
    values: dict[str, float] = {j.jid: 0.0 for j in jobs}
    intervals: list[tuple[int, int, int]] = []
    results = {}
    for t in cluster.tenants:
        mine = [j for j in jobs if j.owner == t.uid]
        sids = part[t.uid]
        if not mine:
            continue
        if not sids or sum(cluster.servers[s].n_workers for s in sids) == 0:
            continue  # no private capacity: nothing runs
        sub = _sub_cluster(cluster, sids, t.uid)
        if sub.total_ps == 0:
            continue
        res = run_astraea(sub, mine, sub_params)
        results[t.uid] = res
        for o in res.outcomes.values():
            completion[o.jid] = o.t_end
            start[o.jid] = o.t_start
            values[o.jid] = realised_value(res.job_by_id[o.jid], o, params)
            intervals.append((o.t_start, o.t_end, o.sched.n_workers))
    g = np.array([math.fsum(values[j.jid] for j in jobs if j.owner == t.uid) for t in cluster.tenants])
    horizon = max((b for _, b, _ in intervals), default=0)
    usage = np.zeros(horizon)
    for a, b, w in intervals:
        usage[a - 1 : b] += w
    name = "batchsche" if by == "owner" else "exclusive"
    return BaselineResult(name, cluster, jobs, completion, start, values, g, usage, theta_w, theta_p, {"runs": results})


def run_batchsche(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None) -> BaselineResult:
    """BatchSche (B1): the Astraea core per tenant on the servers it owns, no sharing, no payments.

    :param cluster: servers, tenants and quotas
    :param jobs: the jobs
    :param params: Astraea's parameters (λ, θ, worker mode; default :class:`AstraeaParams`)
    :returns: the outcome
    """
    return run_exclusive(cluster, jobs, params, by="owner")


# ---------------------------------------------------------------------------------------------
# shared slot-simulation helpers


def waterfill(capacity: float, weights: Sequence[float], demands: Sequence[float]) -> np.ndarray:
    """Weighted max-min shares: repeatedly split what is left by weight among unsaturated users,
    saturating users whose remaining demand fits (spec B2 WATERFILL)."""
    w = np.asarray(weights, dtype=float)
    d = np.asarray(demands, dtype=float)
    if w.shape != d.shape or (w < 0).any() or (d < 0).any():
        raise InputError("weights/demands", (list(w), list(d)), "must be equal-length non-negative vectors")
    a = np.zeros_like(d)
    active = (d > 0) & (w > 0)
    left = float(capacity)
    while active.any():
        s = np.zeros_like(d)
        s[active] = left * w[active] / w[active].sum()
        sat = active & (d - a <= s + 1e-12)
        if not sat.any():
            a[active] += s[active]
            break
        left -= float((d[sat] - a[sat]).sum())
        a[sat] = d[sat]
        active &= ~sat
    return a


def _largest_remainder(x: np.ndarray, total: int) -> np.ndarray:
    base = np.floor(x + 1e-9).astype(int)
    rem = int(total - base.sum())
    if rem > 0:
        order = np.lexsort((np.arange(x.size), -(x - base)))
        base[order[:rem]] += 1
    return base


@dataclass
class _SimJob:
    job: JobSpec
    uidx: int
    g: int
    n_cent: float
    n_dist: float
    progress: float = 0.0
    attained: int = 0
    placement: tuple[dict[int, int], int, int] | None = None  # (y, ps server, P)
    done: int | None = None
    started: int | None = None


def _sim_jobs(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams) -> list[_SimJob]:
    out = []
    for j in jobs:
        n_c, n_d = throughput(j, cluster.bw_worker_mbps)
        out.append(_SimJob(j, cluster.tenant_index(j.owner), worker_cap(j, params.worker_cap_source), n_c, n_d))
    return out


GANG_SIZES = ("placeable", "cap")


def _size_gangs(sims: list[_SimJob], gang_size: str, fits: Callable[[_SimJob], bool]) -> None:
    """Fix each job's gang size g_j in place. ``"cap"``: g_j = W_j (spec B2/B3 as written).
    ``"placeable"``: the largest g ≤ W_j that the scheduler's own placement routine can place on an
    EMPTY cluster (``fits`` probes a copy of the job with that g), i.e. the job is submitted at a size
    its scheduler can host. With one PS per server (the paper's set-up) constraint (3i) caps remote
    workers at about b_p / b_w per PS, so gangs of W_j = D_j ∈ [20, 50] workers are often unplaceable:
    under ``"cap"`` such jobs never run. A job whose every size fails keeps g_j = W_j (never runs)."""
    check_choice("gang_size", gang_size, GANG_SIZES)
    if gang_size == "cap":
        return
    cache: dict[tuple[int, int], int] = {}
    for s in sims:
        key = (s.uidx, s.g)
        if key not in cache:
            cache[key] = next((g for g in range(s.g, 0, -1) if fits(replace(s, g=g, placement=None))), s.g)
        s.g = cache[key]


def _finish(
    name: str, cluster: Cluster, jobs: tuple[JobSpec, ...], sims: list[_SimJob], usage: list[int], origin: str
) -> BaselineResult:
    completion = {s.job.jid: s.done for s in sims}
    start = {s.job.jid: s.started for s in sims}
    values, per = _values(jobs, completion, origin)
    g = np.array([per.get(t.uid, 0.0) for t in cluster.tenants])
    extra: dict[str, object] = {
        "gpu_slots": {s.job.jid: int(s.attained) for s in sims},
        "gang": {s.job.jid: int(s.g) for s in sims},
    }
    return BaselineResult(name, cluster, jobs, completion, start, values, g, np.array(usage, dtype=float), extra=extra)


def _advance(sj: _SimJob, t: int, factor: float = 1.0) -> None:
    y, ps, _ = sj.placement  # type: ignore[misc]
    central = len(y) == 1 and ps in y
    sj.progress += sj.g * (sj.n_cent if central else sj.n_dist) * factor
    sj.attained += sj.g
    if sj.started is None:
        sj.started = t
    if sj.progress >= sj.job.work * (1 - 1e-12):
        sj.done = t


# ---------------------------------------------------------------------------------------------
# B2 Gandiva_fair (slot model)


def run_gandiva_fair(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    params: AstraeaParams | None = None,
    migration_penalty: float = 0.0,
    placement: str = "first_fit",
    gang_size: str = "placeable",
) -> BaselineResult:
    """Gandiva_fair as spec B2 models it: weighted max-min GPU shares by quota, free work-conserving
    redistribution, gang time slicing at slot boundaries, affinity-oblivious placement. ``gang_size``
    (:func:`_size_gangs`): ``"placeable"`` (default) or ``"cap"`` (g_j = W_j, the spec's literal
    reading).

    :param cluster: servers, tenants and quotas
    :param jobs: the jobs
    :param params: Astraea's parameters (λ, θ, worker mode; default :class:`AstraeaParams`)
    :param migration_penalty: fraction of a slot lost to a migration, < 1
    :param placement: ``first_fit`` or ``spread``
    :param gang_size: ``placeable`` (the largest gang the tenant can host) or ``cap`` (g_j = W_j)
    :returns: the outcome
    :raises InputError: a penalty >= 1
    """
    params = params or AstraeaParams()
    jobs = _validate_jobs(cluster, jobs, params)
    pen = check_nonneg("migration_penalty", migration_penalty)
    if pen >= 1:
        raise InputError("migration_penalty", pen, "must be < 1")
    check_choice("placement", placement, ("first_fit", "spread"))
    sims = _sim_jobs(cluster, jobs, params)
    CW = cluster.total_workers
    cap_w = np.array([s.n_workers for s in cluster.servers])
    cap_p = np.array([s.n_ps for s in cluster.servers])
    q_w = np.array([t.quota_workers for t in cluster.tenants], dtype=float)
    U = len(cluster.tenants)
    bw, bp = cluster.bw_worker_mbps, cluster.bw_ps_mbps
    _size_gangs(sims, gang_size, lambda d: _place_first_fit(d, cap_w.copy(), cap_p.copy(), bw, bp, placement, set()))
    runnable = [s for s in sims if s.g <= CW]
    usage: list[int] = []
    prev_running: list[_SimJob] = []
    for t in range(1, params.horizon_T + 1):
        if all(s.done is not None for s in runnable):
            break
        A = [s for s in runnable if s.done is None and s.job.arrival <= t - 1]
        dem = np.zeros(U)
        for s in A:
            dem[s.uidx] += s.g
        share = waterfill(CW, q_w, dem)
        ent = _largest_remainder(share, int(min(CW, round(share.sum()))))
        free_w = cap_w.copy()
        free_p = cap_p.copy()
        used = np.zeros(U, dtype=int)
        sel: list[_SimJob] = []
        keep_ok = {id(s) for s in A}
        for s in sorted(
            (s for s in prev_running if id(s) in keep_ok),
            key=lambda s: (s.uidx, s.attained, s.job.arrival, s.job.jid),
        ):
            if used[s.uidx] + s.g <= ent[s.uidx] and _reuse(s, free_w, free_p):
                sel.append(s)
                used[s.uidx] += s.g
        moved: set[int] = set()
        chosen = {id(s) for s in sel}
        for u in range(U):
            for s in sorted((s for s in A if s.uidx == u and id(s) not in chosen), key=_fair_key):
                if used[u] + s.g <= ent[u] and _place_first_fit(s, free_w, free_p, bw, bp, placement, moved):
                    sel.append(s)
                    chosen.add(id(s))
                    used[u] += s.g
        for s in sorted(
            (s for s in A if id(s) not in chosen),
            key=lambda s: (used[s.uidx] / q_w[s.uidx] if q_w[s.uidx] > 0 else math.inf, *_fair_key(s)),
        ):
            if _place_first_fit(s, free_w, free_p, bw, bp, placement, moved):
                sel.append(s)
                chosen.add(id(s))
                used[s.uidx] += s.g
        for s in sel:
            _advance(s, t, (1 - pen) if id(s) in moved else 1.0)
        usage.append(int(cap_w.sum() - free_w.sum()))
        prev_running = [s for s in sel if s.done is None]
        if not sel and all(s.done is not None or s.job.arrival <= t - 1 for s in runnable):
            break  # nothing can run and nothing new arrives: the state never changes again
    name = "astraea-gandiva"
    return _finish(name, cluster, jobs, sims, usage, params.revenue_time_origin)


def _fair_key(s: _SimJob) -> tuple[int, float, str]:
    return (s.attained, s.job.arrival, s.job.jid)


def _reuse(s: _SimJob, free_w: np.ndarray, free_p: np.ndarray) -> bool:
    if s.placement is None:
        return False
    y, ps, P = s.placement
    if all(free_w[k] >= v for k, v in y.items()) and free_p[ps] >= P:
        for k, v in y.items():
            free_w[k] -= v
        free_p[ps] -= P
        return True
    return False


def _place_first_fit(
    s: _SimJob, free_w: np.ndarray, free_p: np.ndarray, bw: float, bp: float, mode: str, moved: set[int]
) -> bool:
    """Reuse the previous placement if it is all free; otherwise first-fit (or spread) GPUs in sid order
    and the first PS server whose free PSs cover the remote workers (3i). ``placement`` keeps the last
    placement of a suspended job, so a resume elsewhere is a migration (``moved``)."""
    old = s.placement
    if _reuse(s, free_w, free_p):
        return True
    if free_w.sum() < s.g:
        return False
    y: dict[int, int] = {}
    rem = s.g
    order = range(len(free_w)) if mode == "first_fit" else np.argsort(-free_w, kind="stable")
    for k in order:
        k = int(k)
        if rem == 0:
            break
        take = min(int(free_w[k]), rem)
        if take > 0:
            y[k] = take
            rem -= take
    if rem > 0:
        return False
    for k in range(len(free_p)):
        need = 1 if (len(y) == 1 and k in y) else max(1, need_ps(s.g - y.get(k, 0), bw, bp))
        if free_p[k] >= need:
            for kk, v in y.items():
                free_w[kk] -= v
            free_p[k] -= need
            s.placement = (y, k, need)
            if old is not None and old != s.placement:
                moved.add(id(s))
            return True
    return False


# ---------------------------------------------------------------------------------------------
# B3 HiveD (slot model)


def run_hived(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    params: AstraeaParams | None = None,
    backfill: bool = True,
    gang_size: str = "placeable",
) -> BaselineResult:
    """HiveD as spec B3 models it: per-tenant virtual clusters of node cells bound dynamically to free
    physical servers of the same GPU count, non-preemptive FIFO queues with backfilling, affinity-first
    placement. (The ``opportunistic`` variant is not implemented.) ``gang_size``
    (:func:`_size_gangs`): ``"placeable"`` (default: the largest gang ≤ W_j the tenant's empty virtual
    cluster can host) or ``"cap"`` (g_j = W_j).

    :param cluster: servers, tenants and quotas
    :param jobs: the jobs
    :param params: Astraea's parameters (λ, θ, worker mode; default :class:`AstraeaParams`)
    :param backfill: let later jobs backfill the queue
    :param gang_size: ``placeable`` (the largest gang the tenant can host) or ``cap`` (g_j = W_j)
    :returns: the outcome
    :raises InputError: a server without an owner
    """
    params = params or AstraeaParams()
    jobs = _validate_jobs(cluster, jobs, params)
    if any(s.owner is None for s in cluster.servers):
        raise InputError("Server.owner", None, "must be set on every server for HiveD's virtual clusters")
    sims = _sim_jobs(cluster, jobs, params)
    S = len(cluster.servers)
    cap_w = np.array([s.n_workers for s in cluster.servers])
    cap_p = np.array([s.n_ps for s in cluster.servers])
    uidx = {t.uid: i for i, t in enumerate(cluster.tenants)}
    U = len(cluster.tenants)
    types = sorted({int(c) for c in cap_w})
    Q = np.zeros((U, len(types)), dtype=int)
    tix = np.array([types.index(int(c)) for c in cap_w])
    for s in cluster.servers:
        Q[uidx[s.owner], tix[s.sid]] += 1  # type: ignore[index]
    bound = np.full(S, -1)
    free_w = cap_w.copy()
    free_p = cap_p.copy()
    bw, bp = cluster.bw_worker_mbps, cluster.bw_ps_mbps
    _size_gangs(
        sims,
        gang_size,
        lambda d: _place_affinity(d, d.uidx, np.full(S, -1), tix, Q, cap_w.copy(), cap_p.copy(), bw, bp),
    )
    vc_gpus = [int(cap_w[[k for k in range(S) if uidx[cluster.servers[k].owner] == u]].sum()) for u in range(U)]
    queues = [
        sorted((s for s in sims if s.uidx == u and s.g <= vc_gpus[u]), key=lambda s: (s.job.arrival, s.job.jid))
        for u in range(U)
    ]
    running: list[_SimJob] = []
    usage: list[int] = []
    for t in range(1, params.horizon_T + 1):
        if not running and all(not q for q in queues):
            break
        busy = free_w < cap_w
        bound[~busy & (free_p == cap_p)] = -1
        started = 0
        for u in range(U):
            still = []
            blocked = False
            for s in queues[u]:
                if s.job.arrival > t - 1 or blocked:
                    still.append(s)
                    continue
                if _place_affinity(s, u, bound, tix, Q, free_w, free_p, bw, bp):
                    running.append(s)
                    started += 1
                else:
                    still.append(s)
                    if not backfill:
                        blocked = True
            queues[u] = still
        if not running and not started and all(s.job.arrival <= t - 1 for q in queues for s in q):
            break  # every queued job failed on an empty cluster: none can ever start
        usage.append(int(cap_w.sum() - free_w.sum()))
        for s in running:
            _advance(s, t)
        for s in [s for s in running if s.done is not None]:
            y, ps, P = s.placement  # type: ignore[misc]
            for k, v in y.items():
                free_w[k] += v
            free_p[ps] += P
        running = [s for s in running if s.done is None]
    return _finish("hived", cluster, jobs, sims, usage, params.revenue_time_origin)


def _place_affinity(
    s: _SimJob,
    u: int,
    bound: np.ndarray,
    tix: np.ndarray,
    Q: np.ndarray,
    free_w: np.ndarray,
    free_p: np.ndarray,
    bw: float,
    bp: float,
) -> bool:
    S = len(bound)
    held = np.bincount(tix[bound == u], minlength=Q.shape[1])
    mine = [k for k in range(S) if bound[k] == u]
    bindable = [k for k in range(S) if bound[k] == -1 and held[tix[k]] < Q[u, tix[k]]]
    g = s.g
    # centralized: bound first, then best fit (fewest free workers), ties sid
    cands = [(0, int(free_w[k]), k) for k in mine if free_w[k] >= g and free_p[k] >= 1]
    cands += [(1, int(free_w[k]), k) for k in bindable if free_w[k] >= g and free_p[k] >= 1]
    if cands:
        _, _, k = min(cands)
        y = {k: g}
        ps, P = k, 1
    else:
        order = sorted(mine, key=lambda k: (-free_w[k], k)) + sorted(bindable, key=lambda k: (-free_w[k], k))
        y = {}
        rem = g
        newly = np.zeros_like(held)
        for k in order:
            if rem == 0:
                break
            if free_w[k] <= 0:
                continue
            if bound[k] == -1:
                if held[tix[k]] + newly[tix[k]] >= Q[u, tix[k]]:
                    continue
                newly[tix[k]] += 1
            take = min(int(free_w[k]), rem)
            y[k] = take
            rem -= take
        if rem > 0:
            return False
        ps = max(y, key=lambda k: (y[k], -k))
        P = max(1, need_ps(g - y[ps], bw, bp))
        if len(y) == 1:
            P = 1
        if P > free_p[ps]:
            return False
    for k, v in y.items():
        free_w[k] -= v
        bound[k] = u
    free_p[ps] -= P
    bound[ps] = u
    s.placement = (y, ps, P)
    return True


# ---------------------------------------------------------------------------------------------
# registry


@register("batchsche", "auction", "BatchSche (Astraea baseline B1): Astraea core per tenant on its own servers")
def batchsche(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None) -> BaselineResult:
    return run_batchsche(cluster, jobs, params)


@register(
    "exclusive",
    "auction",
    "Exclusive partitions (Astraea sharing-incentive reference): each tenant alone on its quota",
    paper="astraea",
)
def exclusive(
    cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None, by: str = "quota"
) -> BaselineResult:
    return run_exclusive(cluster, jobs, params, by=by)


@register(
    "astraea-gandiva",
    "auction",
    "Gandiva_fair as modelled for Astraea's setting (B2): quota-weighted max-min GPU shares, gang time slicing",
    paper="astraea",
)
def astraea_gandiva(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None, **kw: object):
    return run_gandiva_fair(cluster, jobs, params, **kw)  # type: ignore[arg-type]


@register("hived", "auction", "HiveD as modelled for Astraea (B3): dynamically bound virtual clusters", paper="astraea")
def hived(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None, **kw: object):
    return run_hived(cluster, jobs, params, **kw)  # type: ignore[arg-type]
