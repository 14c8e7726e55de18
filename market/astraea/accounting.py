"""Accounting and metrics: realised utilities, tenant revenue g_u (§2.10), collective revenue R,
fairness ratio α_u and its variance, budget balance, sharing-incentive gap, makespan, utilisation,
and the feasibility checker (A11).

The generic metrics (``alpha_from_revenue``, ``makespan``, ``utilisation_series``,
``sharing_incentive_gap``, ``budget_residual``) are pure functions of arrays so the baselines use
them too. Units: currency for revenue, hours (slots) for time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from marketsim.market.astraea.model import AstraeaParams, Cluster, JobSpec, allowed_workers, duration, throughput
from marketsim.market.errors import InputError, as_float_array

__all__ = [
    "TenantRevenue",
    "Violation",
    "elapsed",
    "realised_value",
    "true_completion",
    "realised_utility",
    "tenant_revenue",
    "collective_revenue",
    "alpha",
    "alpha_from_revenue",
    "quota_shares",
    "variance",
    "budget_residual",
    "sharing_incentive_gap",
    "makespan",
    "utilisation_series",
    "check_feasible",
    "astraea_makespan",
    "astraea_utilisation",
    "divide_incomes",
    "divide_purchases",
    "PooledPurchase",
]


def elapsed(job: JobSpec, t_end: int, window_start: int, origin: str) -> float:
    """Realised elapsed hours X_j under the revenue clock ``origin`` (§2.5)."""
    if origin == "arrival":
        return float(t_end - job.arrival)
    if origin == "round_start":
        return float(t_end - window_start)
    return float(t_end)


def true_completion(true_job: JobSpec, outcome: object, bw_worker_mbps: float) -> int | None:
    """Completion slot of the reserved schedule under the true job (§7.1), ``None`` if the reservation
    ends before the true work is done."""
    sched = outcome.sched  # type: ignore[attr-defined]
    n_c, n_d = throughput(true_job, bw_worker_mbps)
    n = n_c if sched.centralized else n_d
    need = duration(true_job.work, n, sched.n_workers)
    return sched.t_start + need - 1 if need <= sched.d else None


def realised_value(job: JobSpec, outcome: object, params: AstraeaParams) -> float:
    """f_j(X_j) of an admitted job at its scheduled completion (reported type)."""
    o = outcome
    return float(job.utility(elapsed(job, o.t_end, o.window[0], params.revenue_time_origin)))  # type: ignore[attr-defined]


def _value_true(result: object, jid: str, truth: Mapping[str, JobSpec] | None) -> float:
    o = result.outcomes.get(jid)  # type: ignore[attr-defined]
    if o is None:
        return 0.0
    params = result.params  # type: ignore[attr-defined]
    if truth is None or jid not in truth:
        return realised_value(result.job_by_id[jid], o, params)  # type: ignore[attr-defined]
    tj = truth[jid]
    t_end = true_completion(tj, o, result.cluster.bw_worker_mbps)  # type: ignore[attr-defined]
    if t_end is None:
        return 0.0
    return float(tj.utility(elapsed(tj, t_end, o.window[0], params.revenue_time_origin)))


def realised_utility(result: object, jid: str, truth: Mapping[str, JobSpec] | None = None) -> float:
    """Realised utility of job ``jid`` (0 if not admitted or, with ``truth``, not truly completed).

    :param result: an Astraea run (:class:`~marketsim.market.astraea.online.AstraeaResult`)
    :param jid: the job
    :param truth: jid -> true :class:`JobSpec` (values from the true types), or ``None`` for the reported ones
    :returns: its utility, currency
    """
    return _value_true(result, jid, truth)


@dataclass(frozen=True)
class TenantRevenue:
    """g_u split into its parts (§2.10), currency.

    :param uid: the tenant
    :param own: value of its pass-1 jobs (free), currency
    :param income_from_others: Eq. (2) income from other tenants' pass-2 jobs
    :param self_income: Eq. (2) income from its own pass-2 jobs
    :param shared_net: its pass-2 jobs' utility minus payments
    :param total: g_u
    """

    uid: int
    own: float  # (i) pass-1 jobs, free
    income_from_others: float  # (ii) Eq. (2) income from other tenants' pass-2 jobs
    self_income: float  # (ii) Eq. (2) income from the tenant's own pass-2 jobs
    shared_net: float  # (iii) pass-2 jobs' utility minus payments
    total: float


def tenant_revenue(
    result: object, truth: Mapping[str, JobSpec] | None = None, self_income: bool | None = None
) -> list[TenantRevenue]:
    """g_u for every tenant (cluster order). ``truth`` maps jid → true JobSpec (§7.1 execution).

    :param result: an Astraea run (:class:`~marketsim.market.astraea.online.AstraeaResult`)
    :param truth: jid -> true :class:`JobSpec` (values from the true types), or ``None`` for the reported ones
    :param self_income: count self-income in g (default: the run's ``self_income_in_g``)
    :returns: one :class:`TenantRevenue` per tenant
    """
    cl: Cluster = result.cluster  # type: ignore[attr-defined]
    params: AstraeaParams = result.params  # type: ignore[attr-defined]
    inc_self = params.self_income_in_g if self_income is None else self_income
    U = len(cl.tenants)
    own = np.zeros(U)
    other = np.zeros(U)
    selfi = np.zeros(U)
    net = np.zeros(U)
    for o in result.outcomes.values():  # type: ignore[attr-defined]
        v = _value_true(result, o.jid, truth)
        if o.pass_ == 1:
            own[o.uidx] += v
        else:
            net[o.uidx] += v - o.payment
            selfi[o.uidx] += o.income[o.uidx]
            other += o.income
            other[o.uidx] -= o.income[o.uidx]
    out = []
    for i, t in enumerate(cl.tenants):
        total = own[i] + other[i] + net[i] + (selfi[i] if inc_self else 0.0)
        out.append(TenantRevenue(t.uid, float(own[i]), float(other[i]), float(selfi[i]), float(net[i]), float(total)))
    return out


def collective_revenue(result: object, truth: Mapping[str, JobSpec] | None = None) -> float:
    """R = Σ over completed jobs of f_j(X_j) (negative values counted as they are).

    :param result: an Astraea run (:class:`~marketsim.market.astraea.online.AstraeaResult`)
    :param truth: jid -> true :class:`JobSpec` (values from the true types), or ``None`` for the reported ones
    :returns: R, currency
    """
    return math.fsum(_value_true(result, jid, truth) for jid in result.outcomes)  # type: ignore[attr-defined]


def quota_shares(q_w: Sequence[float], q_p: Sequence[float]) -> np.ndarray:
    """share_u = (q_w^u/Σq_w + q_p^u/Σq_p)/2."""
    qw = as_float_array("q_w", q_w, ndim=1, nonneg=True)
    qp = as_float_array("q_p", q_p, ndim=1, nonneg=True)
    if qw.size == 0 or qw.shape != qp.shape:
        raise InputError("q_w/q_p", (q_w, q_p), "must be non-empty vectors of equal length")
    if qw.sum() <= 0 or qp.sum() <= 0:
        raise InputError("q_w/q_p", (q_w, q_p), "must have positive totals")
    return (qw / qw.sum() + qp / qp.sum()) / 2.0


def alpha_from_revenue(g: Sequence[float], q_w: Sequence[float], q_p: Sequence[float]) -> tuple[np.ndarray, bool]:
    """(α_u = (g_u/R)/share_u, defined). If R = Σg ≤ 0, α is all NaN and ``defined`` is False."""
    ga = as_float_array("g", g, ndim=1)
    share = quota_shares(q_w, q_p)
    if ga.shape != share.shape:
        raise InputError("g", g, f"must have one entry per tenant ({share.size})")
    R = math.fsum(ga.tolist())
    if R <= 0:
        return np.full(ga.shape, np.nan), False
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (ga / R) / share
    return a, True


def variance(values: Sequence[float]) -> float:
    """Population variance (ddof = 0); NaN if any value is NaN."""
    v = np.asarray(values, dtype=float)
    return float(np.var(v)) if v.size else float("nan")


def alpha(result: object, truth: Mapping[str, JobSpec] | None = None) -> tuple[np.ndarray, float, bool]:
    """(α per tenant, population variance of α, defined flag) for an Astraea result.

    :param result: an Astraea run (:class:`~marketsim.market.astraea.online.AstraeaResult`)
    :param truth: jid -> true :class:`JobSpec` (values from the true types), or ``None`` for the reported ones
    :returns: ``(alpha per tenant, population variance, defined)``
    """
    cl: Cluster = result.cluster  # type: ignore[attr-defined]
    g = [r.total for r in tenant_revenue(result, truth)]
    a, ok = alpha_from_revenue(g, [t.quota_workers for t in cl.tenants], [t.quota_ps for t in cl.tenants])
    return a, variance(a), ok


def budget_residual(payments: Sequence[float], incomes: Sequence[float]) -> float:
    """Σ incomes − Σ payments (0 for a budget-balanced division)."""
    return math.fsum(np.asarray(incomes, dtype=float).tolist()) - math.fsum(np.asarray(payments, dtype=float).tolist())


def sharing_incentive_gap(g_shared: Sequence[float], g_exclusive: Sequence[float]) -> np.ndarray:
    """g_u(shared) − g_u(exclusive partition) per tenant; ≥ 0 everywhere means batch sharing incentive holds."""
    a = as_float_array("g_shared", g_shared, ndim=1)
    b = as_float_array("g_exclusive", g_exclusive, ndim=1)
    if a.shape != b.shape:
        raise InputError("g_exclusive", g_exclusive, f"must have {a.size} entries like g_shared")
    return a - b


def makespan(arrivals: Sequence[float], completions: Sequence[float | None]) -> tuple[float, int]:
    """(max t⁺ − min r over completed jobs, number not completed); NaN makespan if none completed."""
    arr = np.asarray(arrivals, dtype=float)
    done = [(a, c) for a, c in zip(arr, completions, strict=True) if c is not None]
    missing = len(arr) - len(done)
    if not done:
        return float("nan"), missing
    return float(max(c for _, c in done) - min(a for a, _ in done)), missing


def utilisation_series(intervals: Sequence[tuple[int, int, int]], total_workers: int, horizon: int) -> np.ndarray:
    """GPU utilisation per slot 1..horizon: Σ workers of jobs running at t / C_W.

    ``intervals`` are (t_start, t_end, workers) with inclusive slots."""
    if total_workers <= 0:
        raise InputError("total_workers", total_workers, "must be > 0")
    diff = np.zeros(horizon + 2)
    for a, b, w in intervals:
        if a < 1 or b < a:
            raise InputError("interval", (a, b, w), "must have 1 <= t_start <= t_end")
        if a > horizon:
            continue
        diff[a] += w
        diff[min(b, horizon) + 1] -= w
    return np.cumsum(diff)[1 : horizon + 1] / total_workers


def astraea_utilisation(result: object, horizon: int | None = None) -> np.ndarray:
    """Utilisation series of an Astraea result (slots 1..horizon, default the last completion)."""
    outs = list(result.outcomes.values())  # type: ignore[attr-defined]
    h = horizon if horizon is not None else max((o.t_end for o in outs), default=1)
    return utilisation_series(
        [(o.t_start, o.t_end, o.sched.n_workers) for o in outs],
        result.cluster.total_workers,  # type: ignore[attr-defined]
        h,
    )


def astraea_makespan(result: object) -> tuple[float, int]:
    jobs = result.jobs  # type: ignore[attr-defined]
    comp = [result.outcomes[j.jid].t_end if j.jid in result.outcomes else None for j in jobs]  # type: ignore[attr-defined]
    return makespan([j.arrival for j in jobs], comp)


@dataclass(frozen=True)
class Violation:
    """A broken constraint: ``rule`` (spec §2.6 row / A11 item), job id (or ``""``) and detail.

    :param rule: the broken rule (spec §2.6 row or A11 item)
    :param jid: the job, or ``""``
    :param detail: what is wrong
    """

    rule: str
    jid: str
    detail: str


def check_feasible(result: object) -> list[Violation]:
    """A11: every row of §2.6 on the final schedule, plus round windows and budget balance.

    :param result: an Astraea run (:class:`~marketsim.market.astraea.online.AstraeaResult`)
    :returns: the violations (empty when feasible)
    """
    cl: Cluster = result.cluster  # type: ignore[attr-defined]
    params: AstraeaParams = result.params  # type: ignore[attr-defined]
    jobs = result.job_by_id  # type: ignore[attr-defined]
    outs = list(result.outcomes.values())  # type: ignore[attr-defined]
    V: list[Violation] = []
    S = len(cl.servers)
    cap_w = np.array([s.n_workers for s in cl.servers])
    cap_p = np.array([s.n_ps for s in cl.servers])
    if set(result.outcomes) & set(result.unscheduled):  # type: ignore[attr-defined]
        V.append(Violation("admitted-once", "", "a job is both admitted and unscheduled"))
    T = max((o.t_end for o in outs), default=0) + 1
    use_w = np.zeros((S, T), dtype=np.int64)
    use_p = np.zeros((S, T), dtype=np.int64)
    U = len(cl.tenants)
    pass1_w = np.zeros((U, T), dtype=np.int64)
    pass1_p = np.zeros((U, T), dtype=np.int64)
    for o in outs:
        j = jobs[o.jid]
        c = o.sched
        a, b = c.t_start, c.t_end
        if b - a + 1 != c.d:
            V.append(Violation("3f", o.jid, f"slots {a}..{b} do not match d={c.d}"))
        w0, w1 = o.window
        if a < w0 + 1 or b > w1:
            V.append(Violation("round-window", o.jid, f"slots {a}..{b} outside ({w0}, {w1}]"))
        if a < math.ceil(j.arrival) + 1:
            V.append(Violation("3l", o.jid, f"starts at {a} before arrival {j.arrival} + 1"))
        ys = dict(c.y)
        zs = dict(c.z)
        if sum(ys.values()) != c.n_workers or any(v <= 0 for v in ys.values()):
            V.append(Violation("3e", o.jid, f"y {ys} does not sum to D_w={c.n_workers}"))
        if c.n_workers not in allowed_workers(j, params):
            V.append(Violation("3e", o.jid, f"D_w={c.n_workers} not allowed"))
        if sum(zs.values()) != c.n_ps or c.n_ps < 1 or len(zs) != 1:
            V.append(Violation("3g", o.jid, f"z {zs} invalid (P={c.n_ps}, all PSs on one server)"))
        servers = set(ys) | set(zs)
        if c.centralized != (len(servers) == 1):
            V.append(Violation("3j", o.jid, f"centralized={c.centralized} but servers {sorted(servers)}"))
        for s_ps, p in zs.items():
            remote = sum(v for s, v in ys.items() if s != s_ps)
            if remote * cl.bw_worker_mbps > p * cl.bw_ps_mbps * (1 + 1e-12):
                V.append(Violation("3i", o.jid, f"{remote} remote workers exceed {p} PSs' bandwidth"))
        n_c, n_d = throughput(j, cl.bw_worker_mbps)
        n = n_c if c.centralized else n_d
        if c.n_workers * c.d * n < j.work * (1 - 1e-9):
            V.append(Violation("3k", o.jid, f"D_w·d·n = {c.n_workers * c.d * n} < work {j.work}"))
        for s, v in ys.items():
            use_w[s, a : b + 1] += v
        for s, v in zs.items():
            use_p[s, a : b + 1] += v
        if o.pass_ == 1:
            pass1_w[o.uidx, a : b + 1] += c.n_workers
            pass1_p[o.uidx, a : b + 1] += c.n_ps
            if o.payment != 0:
                V.append(Violation("own-quota-free", o.jid, f"pass-1 job pays {o.payment}"))
        else:
            tot = math.fsum(o.income.tolist())
            if abs(tot - o.payment) > 1e-9 * max(1.0, abs(o.payment)):
                V.append(Violation("budget-balance", o.jid, f"incomes {tot} != payment {o.payment}"))
            if o.payment < -1e-12:
                V.append(Violation("payment>=0", o.jid, f"payment {o.payment}"))
    over_w = np.argwhere(use_w > cap_w[:, None])
    if over_w.size:
        s, t = over_w[0]
        V.append(Violation("3c", "", f"server {s} slot {t}: {use_w[s, t]} workers > {cap_w[s]}"))
    over_p = np.argwhere(use_p > cap_p[:, None])
    if over_p.size:
        s, t = over_p[0]
        V.append(Violation("3d", "", f"server {s} slot {t}: {use_p[s, t]} PSs > {cap_p[s]}"))
    q_w = np.array([t.quota_workers for t in cl.tenants])[:, None]
    q_p = np.array([t.quota_ps for t in cl.tenants])[:, None]
    if (pass1_w > q_w).any() or (pass1_p > q_p).any():
        V.append(Violation("3a/3b", "", "pass-1 use exceeds the owner's quota"))
    return V


@dataclass(frozen=True)
class PooledPurchase:
    """One pass-2 job's purchase from the pool: ``payment``, the Eq. (2) ``income`` (U,) paid out,
    frozen unused quota ``unused_w`` / ``unused_p`` (U, d), per-slot costs ``cost_w`` / ``cost_p``
    (d,) and the units bought per slot (``n_workers``, ``n_ps``)."""

    payment: float
    income: np.ndarray
    unused_w: np.ndarray
    unused_p: np.ndarray
    cost_w: np.ndarray
    cost_p: np.ndarray
    n_workers: int
    n_ps: int


def divide_purchases(
    purchases: Sequence[PooledPurchase],
    n_tenants: int,
    rule: str = "eq2",
    *,
    rng: np.random.Generator | None = None,
    n_samples: int = 2000,
) -> np.ndarray:
    """(U,) incomes from pooled purchases re-divided by ``rule``: ``"eq2"`` gain-as-you-contribute
    (what the mechanism paid out), ``"equal"`` each payment split equally among all tenants,
    ``"shapley"`` the Shapley value of each purchase's sharing-coalition game (per resource type,
    demand D_w or P per slot at the posted unit price, frozen unused quota; exact for ≤ 12 tenants,
    else sampled with ``rng``). Every rule is budget balanced: the incomes sum to the payments."""
    from marketsim.market.income import balance, equal_split, shapley_sharing

    if rule not in ("eq2", "equal", "shapley"):
        raise InputError("rule", rule, "must be one of ['eq2', 'equal', 'shapley']")
    out = np.zeros(n_tenants)
    for o in purchases:
        if rule == "eq2":
            out += o.income
        elif rule == "equal":
            out += equal_split(o.payment, n_tenants)
        else:
            inc = np.zeros(n_tenants)
            for unused, cost, units in ((o.unused_w, o.cost_w, o.n_workers), (o.unused_p, o.cost_p, o.n_ps)):
                demand = np.full(cost.shape, float(units))
                inc += shapley_sharing(unused, demand, cost / units, n_samples=n_samples, rng=rng)
            out += balance(inc, o.payment, (o.unused_w.sum(axis=1) + o.unused_p.sum(axis=1)) > 0)
    return out


def divide_incomes(
    result: object,
    rule: str = "eq2",
    *,
    rng: np.random.Generator | None = None,
    n_samples: int = 2000,
) -> np.ndarray:
    """(U,) incomes of every tenant from an Astraea run's pass-2 payments, re-divided by ``rule``
    (:func:`divide_purchases`). Only the ``full_eq2`` charge is supported for the alternative rules."""
    params: AstraeaParams = result.params  # type: ignore[attr-defined]
    if rule in ("equal", "shapley") and params.pass2_charge != "full_eq2":
        raise InputError("pass2_charge", params.pass2_charge, f"must be 'full_eq2' for rule {rule!r}")
    purchases = [
        PooledPurchase(
            o.payment, o.income, o.unused_w, o.unused_p, o.slot_cost_w, o.slot_cost_p, o.sched.n_workers, o.sched.n_ps
        )
        for o in result.outcomes.values()  # type: ignore[attr-defined]
        if o.pass_ == 2
    ]
    return divide_purchases(purchases, len(result.cluster.tenants), rule, rng=rng, n_samples=n_samples)  # type: ignore[attr-defined]
