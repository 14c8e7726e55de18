"""Astraea instances behind the generic :class:`~marketsim.market.auction.market.AuctionMarket` adapter
(spec astraea.md §5 evaluation setup, §7.1 audit conventions).

``make_market(params, rng)`` builds one multi-tenant instance:

* ``workload="paper"``: the paper's evaluation, tenants = Philly virtual clusters. With ``trace`` =
  a Philly-format CSV path the jobs are the first ``jobs`` submissions of the ``tenants`` busiest VCs
  from ``window_start`` on (:func:`marketsim.market.astraea.trace.philly_workload`); without a trace the
  synthetic generator calibrated to §5.1–5.2 (:func:`marketsim.market.astraea.trace.synthetic_workload`).
* ``workload="micro"``: small random instances (2–4 GPU servers, 1–2 PS slots each) for audits.
* ``workload="toy"``: the paper's worked example (§4.2–4.4, spec F5; servers s1, s2 owned by u1 and
  s3, s4 by u2).

θ is frozen BEFORE the auction from the true job population (A9 rule, or given) and every
mechanism sees it. A bid is an :class:`AstraeaBid`: the job's report (a
:class:`~marketsim.market.astraea.model.JobSpec`, arrival in hours) with an int ``job_id`` and the slot at
which it is submitted (``ceil(arrival)``, the first slot boundary after the job exists).

Mechanisms: ``astraea`` (the online driver, decisions at the batch times τ_l = 2^l), and the
batch baselines ``batchsche``, ``exclusive``, ``astraea-gandiva``, ``hived``, which buffer the
reports and simulate at :meth:`~marketsim.market.auction.base.OnlineMechanism.finish` (they are causal slot
simulations, so buffering changes no decision). Consequence model of a misreported job (§7.1): the
job runs on its decided schedule at its TRUE speed; it completes at the first slot whose
cumulative true progress covers its true work, else it is not completed (true utility 0) and still
pays. Tenant revenue g_u (§2.10): Σ over its jobs of (true utility − payment) + its Eq. (2) income.
Units: slots are hours; money is the utilities' unit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from marketsim.market.astraea.accounting import PooledPurchase, alpha_from_revenue, divide_purchases, elapsed, variance
from marketsim.market.astraea.baselines import (
    GANG_SIZES,
    BaselineResult,
    exclusive_partition,
    run_exclusive,
    run_gandiva_fair,
    run_hived,
)
from marketsim.market.astraea.model import (
    AstraeaParams,
    Cluster,
    JobSpec,
    Server,
    convex_utility,
    duration,
    linear_utility,
    throughput,
)
from marketsim.market.astraea.online import AstraeaOnline, resolve_theta
from marketsim.market.astraea.trace import PHILLY_JOBS_PER_HOUR, load_philly_csv, philly_workload, synthetic_workload
from marketsim.market.auction.base import Decision, OnlineMechanism, Schedule
from marketsim.market.auction.market import decisions_by_id
from marketsim.market.audit.target import Dimension
from marketsim.market.errors import InputError, check_choice, check_int, check_nonneg, check_positive

__all__ = [
    "AstraeaBid",
    "AstraeaMarket",
    "make_market",
    "make_bid",
    "micro_workload",
    "micro_jobs",
    "toy_workload",
    "DEFAULTS",
    "MECHANISMS",
    "PHANTOM_PREFIX",
    "PHANTOM_ID_BASE",
    "tenant_reports",
    "phantom_jobs",
]

MECHANISMS = ("astraea", "batchsche", "exclusive", "astraea-gandiva", "hived")
PHANTOM_PREFIX = "phantom:"  # jobs a tenant invents (true value 0), see phantom_jobs
_AUTO_HORIZON = {"paper": 4096, "micro": 64, "toy": 64}
DEFAULTS: dict[str, Any] = {
    "workload": "paper",  # "paper" | "micro" | "toy"
    "trace": "",  # Philly-format CSV ("" = synthetic generator)
    "window_start": "2017-10-01 00:00:00",  # trace window start
    "jobs": 60,  # N
    "servers": 20,  # S
    "tenants": 5,  # U (VCs)
    "utility": "linear",  # "linear" | "convex" (micro also "mixed")
    "jobs_per_hour": PHILLY_JOBS_PER_HOUR,  # synthetic arrival rate
    "lam": 2,  # rounds per batch λ
    "theta": 0.0,  # 0 = A9 rule on the true jobs; > 1 = θ_w = θ_p given (toy: 16)
    "theta_scale": 1.0,  # multiplies θ − 1 (Fig. 11)
    "worker_count_mode": "elastic",  # | "fixed"
    "worker_cap_source": "data_chunks",  # | "trace_gpus"
    "revenue_time_origin": "arrival",  # | "absolute" ("round_start" is meaningless for slot baselines)
    "horizon": 0,  # slots simulated T (0 = auto: paper 4096, micro/toy 64)
    "arrival_span": 9.0,  # micro: arrivals uniform in [0, span) h
    "m_scale": 1.0,  # paper: multiplies every job's m_j (h per mini-batch); NOT from the paper (sensitivity)
    "gang_size": "placeable",  # Gandiva_fair/HiveD gangs: largest placeable ≤ W_j | "cap" (W_j, spec B2/B3)
}


@dataclass(frozen=True)
class AstraeaBid:
    """One job report: ``job_id`` (int, unique), submission slot ``arrival`` = ceil(spec.arrival)
    and the reported :class:`JobSpec` (``spec.owner`` is the tenant).

    :param job_id: the bid (unique)
    :param arrival: submission slot
    :param spec: the reported job
    """

    job_id: int
    arrival: int
    spec: JobSpec

    @property
    def tenant(self) -> int:
        return self.spec.owner

    @property
    def phantom(self) -> bool:
        """A job the tenant invented (no true value)."""
        return self.spec.jid.startswith(PHANTOM_PREFIX)


def make_bid(job_id: int, spec: JobSpec) -> AstraeaBid:
    """The bid of ``spec`` submitted at slot ceil(arrival)."""
    return AstraeaBid(int(job_id), int(math.ceil(spec.arrival - 1e-12)), spec)


# ---------------------------------------------------------------------------------------------
# workloads


def toy_workload() -> tuple[Cluster, list[JobSpec]]:
    """The paper's worked example (spec F5): 4 servers (2 GPUs, 1 PS), u1 owns s1, s2 and u2 s3, s4;
    jobs j11, j12 (u1), j21, j22 (u2) arriving at 3 h with f(x) = 100 − 2x."""
    servers = tuple(Server(i, 2, 1, owner=1 if i < 2 else 2) for i in range(4))
    cluster = Cluster.from_owners(servers, 1.0, 1.0)
    chunks = {"j11": 2, "j12": 3, "j21": 2, "j22": 30}
    jobs = [
        JobSpec(j, int(j[1]), 3.0, 2, d, 1, 1.0, 0.0, 0.0, linear_utility(-2, 100), None, 1.0, 0.5)
        for j, d in chunks.items()
    ]
    return cluster, jobs


def micro_workload(
    n_jobs: int,
    n_servers: int,
    n_tenants: int,
    rng: np.random.Generator,
    utility: str = "mixed",
    arrival_span: float = 9.0,
) -> tuple[Cluster, list[JobSpec]]:
    """A small random instance: ``n_servers`` servers (1–4 GPUs, 1–2 PS slots) dealt to ``n_tenants``
    owners (each owns ≥ 1, contiguous sids; quotas = owned capacity), ``n_jobs`` jobs arriving in
    [0, ``arrival_span``) h with work E·D·M ≤ 30 mini-batches at 0.5–2 per hour per worker and linear
    (f = g + kx, k ∈ [−3, −0.1], g ∈ [5, 100]) or convex (e ∈ [5, 50], κ ∈ [1, 2]) utilities."""
    N = check_int("jobs", n_jobs, minimum=1)
    S = check_int("servers", n_servers, minimum=1)
    U = check_int("tenants", n_tenants, minimum=1)
    if S < U:
        raise InputError("servers", S, f"must be >= tenants ({U}) so every tenant owns a server")
    check_choice("utility", utility, ("linear", "convex", "mixed"))
    span = check_positive("arrival_span", arrival_span)
    extra = np.sort(rng.integers(0, U, size=S - U))
    owners = np.sort(np.concatenate([np.arange(U), extra]))
    servers = tuple(
        Server(i, int(rng.integers(1, 5)), int(rng.integers(1, 3)), owner=int(owners[i]) + 1) for i in range(S)
    )
    cluster = Cluster.from_owners(servers, float(rng.uniform(0.5, 2.0)), float(rng.uniform(0.5, 4.0)))
    return cluster, micro_jobs(N, U, rng, utility, span)


def micro_jobs(
    n_jobs: int,
    n_tenants: int,
    rng: np.random.Generator,
    utility: str = "mixed",
    arrival_span: float = 9.0,
    prefix: str = "m",
) -> list[JobSpec]:
    """``n_jobs`` small random jobs of tenants 1..``n_tenants`` (see :func:`micro_workload`); ids
    ``f"{prefix}{i}"``; utility "mixed" draws linear with probability 0.6."""
    check_choice("utility", utility, ("linear", "convex", "mixed"))
    jobs = []
    for i in range(n_jobs):
        n_c = float(rng.choice([0.5, 1.0, 2.0]))
        lin = utility == "linear" or (utility == "mixed" and rng.random() < 0.6)
        u = (
            linear_utility(-float(rng.uniform(0.1, 3.0)), float(rng.uniform(5, 100)))
            if lin
            else convex_utility(float(rng.uniform(5, 50)), float(rng.uniform(1, 2)))
        )
        jobs.append(
            JobSpec(
                f"{prefix}{i}",
                int(rng.integers(1, n_tenants + 1)),
                float(rng.uniform(0, arrival_span)),
                int(rng.integers(1, 4)),
                int(rng.integers(1, 6)),
                int(rng.integers(1, 3)),
                1.0,
                0.0,
                0.0,
                u,
                n_central_override=n_c,
                n_distributed_override=n_c * float(rng.choice([0.5, 0.8, 1.0])),
            )
        )
    return jobs


# ---------------------------------------------------------------------------------------------
# mechanisms behind the online interface


def _to_decision(d: Decision, job_id: int, extra: Mapping[str, Any]) -> Decision:
    sched = None if d.schedule is None else replace(d.schedule, job_id=job_id)
    return replace(d, job_id=job_id, schedule=sched, log={**d.log, **extra})


class _AstraeaAuction(OnlineMechanism):
    """:class:`AstraeaOnline` on :class:`AstraeaBid` reports (decisions at τ_l, rejections at finish)."""

    name = "astraea"

    def __init__(self, market: AstraeaMarket) -> None:
        super().__init__(market.T)
        self.market = market
        self.inner = AstraeaOnline(market.cluster, market.params)
        self.ids: dict[str, AstraeaBid] = {}

    def step(self, now: int, new_reports: Sequence[AstraeaBid]) -> list[Decision]:  # type: ignore[override]
        reps = self._advance(now, new_reports)
        for r in reps:
            if r.spec.jid in self.ids:
                raise InputError("report.spec.jid", r.spec.jid, "was already submitted")
            self.ids[r.spec.jid] = r
        return [self._tr(d) for d in self.inner.step(now, [r.spec for r in reps])]

    def finish(self) -> list[Decision]:
        return [self._tr(d) for d in self.inner.finish()]

    def _tr(self, d: Decision) -> Decision:
        rep = self.ids[d.log["jid"]]
        extra: dict[str, Any] = {"tenant": rep.tenant}
        if d.admitted:
            o = self.inner.engine.outcomes[d.log["jid"]]
            extra.update(
                t_start=o.t_start,
                d=o.sched.d,
                n_workers=o.sched.n_workers,
                n_ps=o.sched.n_ps,
                centralized=o.sched.centralized,
                window_start=o.window[0],
                gpu_slots=o.sched.n_workers * o.sched.d,
            )
            if o.pass_ == 2:  # what the income-division comparison needs (JSON-ready)
                extra.update(
                    unused_w=o.unused_w.tolist(),
                    unused_p=o.unused_p.tolist(),
                    cost_w=o.slot_cost_w.tolist(),
                    cost_p=o.slot_cost_p.tolist(),
                )
        return _to_decision(d, rep.job_id, extra)


def _schedule(
    job_id: int, S: int, t0: int, t1: int, y: Sequence[tuple[int, int]], z: Sequence[tuple[int, int]], cent: bool
) -> Schedule:
    wy, wz = np.zeros(S, dtype=int), np.zeros(S, dtype=int)
    for s, n in y:
        wy[s] += n
    for s, n in z:
        wz[s] += n
    slots = range(t0, t1 + 1)
    mode = "centralized" if cent else "distributed"
    return Schedule(job_id, t1, {t: wy for t in slots}, {t: wz for t in slots}, {t: mode for t in slots})


class _BatchBaseline(OnlineMechanism):
    """A whole-workload baseline behind the online interface: buffers reports, simulates at finish."""

    def __init__(self, market: AstraeaMarket, name: str) -> None:
        super().__init__(market.T)
        self.market = market
        self.name = name
        self.buf: list[AstraeaBid] = []

    def step(self, now: int, new_reports: Sequence[AstraeaBid]) -> list[Decision]:  # type: ignore[override]
        self.buf.extend(self._advance(now, new_reports))
        return []

    def finish(self) -> list[Decision]:
        m = self.market
        specs = [r.spec for r in self.buf]
        if not specs:
            return []
        if self.name in ("batchsche", "exclusive"):
            by = "quota" if self.name == "exclusive" else "owner"
            out = self._from_exclusive(run_exclusive(m.cluster, specs, m.params, by), by)
        else:
            fn = run_gandiva_fair if self.name == "astraea-gandiva" else run_hived
            out = self._from_slots(fn(m.cluster, specs, m.params, gang_size=m.settings.get("gang_size", "placeable")))
        self.buf = []
        return out

    def _from_exclusive(self, res: BaselineResult, by: str) -> list[Decision]:
        m = self.market
        part = exclusive_partition(m.cluster, by)
        runs: dict[int, Any] = res.extra["runs"]  # type: ignore[assignment]
        S = len(m.cluster.servers)
        out = []
        for r in self.buf:
            run = runs.get(r.tenant)
            o = None if run is None else run.outcomes.get(r.spec.jid)
            if o is None:
                log = {"jid": r.spec.jid, "tenant": r.tenant}
                out.append(Decision(r.job_id, False, None, 0.0, None, 0.0, 0.0, log))
                continue
            sids = part[r.tenant]
            c = o.sched
            sched = _schedule(
                r.job_id,
                S,
                c.t_start,
                c.t_end,
                [(sids[s], n) for s, n in c.y],
                [(sids[s], n) for s, n in c.z],
                c.centralized,
            )
            log = {
                "jid": r.spec.jid,
                "tenant": r.tenant,
                "pass": 1,
                "t_start": c.t_start,
                "d": c.d,
                "n_workers": c.n_workers,
                "centralized": c.centralized,
                "window_start": o.window[0],
                "gpu_slots": c.n_workers * c.d,
            }
            out.append(Decision(r.job_id, True, sched, 0.0, c.t_end, o.mu, res.values[r.spec.jid], log))
        return out

    def _from_slots(self, res: BaselineResult) -> list[Decision]:
        slots: dict[str, int] = res.extra["gpu_slots"]  # type: ignore[assignment]
        out = []
        for r in self.buf:
            jid = r.spec.jid
            c = res.completion[jid]
            gang: dict[str, int] = res.extra["gang"]  # type: ignore[assignment]
            log = {
                "jid": jid,
                "tenant": r.tenant,
                "t_start": res.start[jid],
                "gpu_slots": slots.get(jid, 0),
                "n_workers": gang[jid],
            }
            u = res.values[jid] if c is not None else 0.0
            out.append(Decision(r.job_id, c is not None, None, 0.0, c, u, u, log))
        return out


# ---------------------------------------------------------------------------------------------
# the market


@dataclass
class AstraeaMarket:
    """One Astraea instance: cluster (tenants, quotas, owners), true jobs, frozen θ and parameters.

    :param cluster: servers, tenants and quotas
    :param jobs: the true jobs
    :param params: parameters with θ frozen (``theta_mode="given"``)
    :param settings: the market's build settings (e.g. baseline ``gang_size``)
    :param info: how the workload was built
    :param paper: the paper key
    :raises InputError: θ not frozen, an arrival at or after the horizon
    """

    cluster: Cluster
    jobs: list[JobSpec]
    params: AstraeaParams
    settings: dict[str, Any] = field(default_factory=dict)
    info: Any = None
    paper: str = "astraea"

    def __post_init__(self) -> None:
        if self.params.theta_mode != "given":
            raise InputError("params.theta_mode", self.params.theta_mode, "must be 'given' (θ frozen beforehand)")
        self.T = self.params.horizon_T
        self._bids = [make_bid(i, j) for i, j in enumerate(self.jobs)]
        for b in self._bids:
            if b.arrival >= self.T:
                raise InputError(f"job {b.spec.jid} arrival", b.spec.arrival, f"must be < horizon {self.T}")
        self._true = {b.job_id: b for b in self._bids}
        self._excl_cache: dict[str, dict[int, float]] = {}

    # ------------------------------------------------------------------ tenants (Mesa TenantAgent hooks)
    def tenants(self) -> list[dict[str, Any]]:
        """One dict per tenant: ``tenant`` (uid), ``quota_workers``, ``quota_ps`` (counts)."""
        return [
            {"tenant": t.uid, "quota_workers": t.quota_workers, "quota_ps": t.quota_ps} for t in self.cluster.tenants
        ]

    def tenant_of(self, bid: AstraeaBid) -> int:
        """The tenant owning ``bid``.

        :param bid: a bid
        :returns: its tenant uid
        """
        return int(bid.tenant)

    def tenant_reports(self, tenant: int, params: Mapping[str, float]) -> list[AstraeaBid]:
        """``tenant``'s reports under a tenant-level strategy (:func:`tenant_reports`:
        ``value_scale``, ``size_scale``, ``arrival_delay`` (h), ``hide_workers``, ``withhold``).

        :param tenant: the tenant uid
        :param params: strategy parameter -> value
        :returns: its bids
        :raises InputError: an unknown strategy parameter
        """
        allowed = {"value_scale", "size_scale", "arrival_delay", "hide_workers", "withhold"}
        for k in params:
            if k not in allowed:
                raise InputError("tenant strategy parameter", k, f"must be one of {sorted(allowed)}")
        kw = {k: (int(v) if k in ("hide_workers", "withhold") else float(v)) for k, v in params.items()}
        return tenant_reports(self, int(tenant), **kw)

    # ------------------------------------------------------------------ protocol
    def bids(self) -> Sequence[AstraeaBid]:
        return list(self._bids)

    def mechanisms(self) -> tuple[str, ...]:
        return MECHANISMS

    def mechanism(self, name: str, rng: np.random.Generator) -> OnlineMechanism:
        """A fresh mechanism (none of them is randomised with the default job order; ``rng`` unused).

        :param name: one of :meth:`mechanisms`
        :param rng: the generator of randomised mechanisms' draws
        :returns: a fresh mechanism on this instance
        """
        check_choice("mechanism", name, MECHANISMS)
        if name == "astraea":
            return _AstraeaAuction(self)
        return _BatchBaseline(self, name)

    def dimensions(self, bid: AstraeaBid) -> list[Dimension]:
        """value_scale (utility × factor), size_scale (epochs × factor, reported work), arrival_delay (h).

        :param bid: a TRUE bid
        :returns: its misreportable dimensions
        """
        return [
            Dimension("value_scale", "factor", 0.25, 4.0),
            Dimension("size_scale", "factor", 0.5, 2.0),
            Dimension("arrival_delay", "value", 0, max(0, min(8, self.T - 1 - bid.arrival)), 0, integer=True),
        ]

    def misreport(self, bid: AstraeaBid, params: Mapping[str, float]) -> AstraeaBid:
        """``bid`` with the named parameters misreported; truthful values leave the job unchanged.

        :param bid: a TRUE bid
        :param params: dimension name -> value; missing: truthful
        :returns: the report
        :raises InputError: a parameter that is not a dimension of the bid (or out of range)
        """
        known = {d.name: d for d in self.dimensions(bid)}
        for k in params:
            if k not in known:
                raise InputError("misreport parameter", k, f"is not a dimension of job {bid.job_id}: {sorted(known)}")
        spec = scale_spec(
            bid.spec,
            value=float(params.get("value_scale", 1.0)),
            size=float(params.get("size_scale", 1.0)),
            delay=float(params.get("arrival_delay", 0.0)),
        )
        return bid if spec is bid.spec else make_bid(bid.job_id, spec)

    def true_surplus(self, bid: AstraeaBid, report: AstraeaBid, decision: Decision | None) -> float:
        """Job level: true utility at the true completion on the decided schedule minus the payment
        (the tenant's Eq. (2) income is tenant-level: :meth:`tenant_revenue`).

        :param bid: the TRUE bid
        :param report: what it reported
        :param decision: the mechanism's decision for it, or ``None``
        :returns: true utility realised minus payment, currency
        """
        pay = 0.0 if decision is None else float(decision.payment)
        return self.true_value(bid, report, decision) - pay

    # ------------------------------------------------------------------ true outcomes
    def truth(self, report: AstraeaBid) -> AstraeaBid | None:
        """The true bid behind ``report`` (``None`` for a phantom job).

        :param report: a report
        :returns: the true bid, or ``None``
        """
        if report.phantom:
            return None
        return self._true.get(int(report.job_id), report)

    def true_completion(self, bid: AstraeaBid, report: AstraeaBid, decision: Decision | None) -> int | None:
        """Slot at which the TRUE work is done on the decided schedule (§7.1), ``None`` if never.

        Reserved schedules (Astraea, BatchSche): D_w workers at the true speed of the placement from
        ``t_start`` for at most the reserved ``d`` slots. Slot simulations (Gandiva_fair, HiveD) stop
        a job when its reported work is done: it truly completes iff the reported work at the true /
        reported speed ratio covers the true work, at the simulated completion (an upper bound when
        the report overstates the work).

        :param bid: the true bid
        :param report: the report decided
        :param decision: its decision, or ``None``
        :returns: the slot, or ``None``
        """
        if decision is None or not decision.admitted or decision.completion is None:
            return None
        true, rep = bid.spec, report.spec
        bw = self.cluster.bw_worker_mbps
        log = decision.log
        if "d" in log:
            n_c, n_d = throughput(true, bw)
            need = duration(true.work, n_c if log["centralized"] else n_d, int(log["n_workers"]))
            return int(log["t_start"]) + need - 1 if need <= int(log["d"]) else None
        if rep == true:
            return int(decision.completion)
        ratio = min(a / b for a, b in zip(throughput(true, bw), throughput(rep, bw), strict=True))
        return int(decision.completion) if rep.work * ratio >= true.work * (1 - 1e-12) else None

    def true_value(self, bid: AstraeaBid | None, report: AstraeaBid, decision: Decision | None) -> float:
        """f_j(X_j) with the true utility, true arrival and true completion (0 if not completed; 0 for
        a phantom job, which has no true value).

        :param bid: the true bid, or ``None`` (phantom)
        :param report: the report decided
        :param decision: its decision, or ``None``
        :returns: the value, currency
        """
        if bid is None or bid.phantom:
            return 0.0
        t = self.true_completion(bid, report, decision)
        if t is None:
            return 0.0
        ws = int(decision.log.get("window_start", 0)) if decision is not None else 0
        return float(bid.spec.utility(elapsed(bid.spec, t, ws, self.params.revenue_time_origin)))

    # ------------------------------------------------------------------ tenant accounting
    def tenant_parts(self, decisions: Sequence[Decision], reports: Sequence[AstraeaBid]) -> dict[str, np.ndarray]:
        """Per tenant (cluster order): ``value`` (true utilities of its jobs), ``payments``,
        ``income`` (Eq. 2, self-income included), ``revenue`` g_u = value − payments + income,
        ``jobs``, ``admitted``, ``gpu_slots`` and ``own_slots`` (pass-1 / own-partition GPU-slots).

        :param decisions: the run's decisions
        :param reports: the bids of the run
        :returns: part name -> (U,) array
        """
        U = len(self.cluster.tenants)
        idx = {t.uid: i for i, t in enumerate(self.cluster.tenants)}
        by_id = decisions_by_id(decisions)
        out = {k: np.zeros(U) for k in ("value", "payments", "income", "jobs", "admitted", "gpu_slots", "own_slots")}
        for rep in reports:
            u = idx[rep.tenant]
            d = by_id.get(int(rep.job_id))
            out["jobs"][u] += not rep.phantom
            out["value"][u] += self.true_value(self.truth(rep), rep, d)
            if d is None:
                continue
            out["payments"][u] += float(d.payment)
            out["admitted"][u] += bool(d.admitted) and not rep.phantom
            gs = float(d.log.get("gpu_slots", 0))
            out["gpu_slots"][u] += gs
            if d.log.get("pass", 1) == 1:
                out["own_slots"][u] += gs
            inc = d.log.get("income")
            if inc is not None:
                out["income"] += np.asarray(inc, dtype=float)
        out["revenue"] = out["value"] - out["payments"] + out["income"]
        return out

    def tenant_revenue(self, decisions: Sequence[Decision], reports: Sequence[AstraeaBid]) -> dict[int, float]:
        """``{uid: g_u}`` (TRUE values; see :meth:`tenant_parts`).

        :param decisions: the run's decisions
        :param reports: the bids of the run
        :returns: uid -> g_u, currency
        """
        g = self.tenant_parts(decisions, reports)["revenue"]
        return {t.uid: float(g[i]) for i, t in enumerate(self.cluster.tenants)}

    def exclusive_revenue(self, reports: Sequence[AstraeaBid]) -> dict[int, float]:
        """g_u of every tenant alone on its exclusive quota partition with the same reports (cached).

        :param reports: the bids of the run
        :returns: uid -> g_u alone
        """
        key = repr(sorted(reports, key=lambda r: r.job_id))
        if key not in self._excl_cache:
            mech = self.mechanism("exclusive", np.random.default_rng(0))
            self._excl_cache[key] = self.tenant_revenue(mech.run(list(reports)), reports)
        return self._excl_cache[key]

    def income_division(self, decisions: Sequence[Decision], rule: str) -> np.ndarray:
        """(U,) incomes of the run's pooled purchases divided by ``rule`` ("eq2" as paid, "equal",
        "shapley"; :func:`marketsim.market.astraea.accounting.divide_purchases`, sampled Shapley seeded 0).

        :param decisions: the run's decisions
        :param rule: ``eq2``, ``equal`` or ``shapley``
        :returns: (U,) incomes, currency
        """
        purchases = [
            PooledPurchase(
                float(d.payment),
                np.asarray(d.log["income"], dtype=float),
                np.asarray(d.log["unused_w"], dtype=float),
                np.asarray(d.log["unused_p"], dtype=float),
                np.asarray(d.log["cost_w"], dtype=float),
                np.asarray(d.log["cost_p"], dtype=float),
                int(d.log["n_workers"]),
                int(d.log["n_ps"]),
            )
            for d in decisions
            if d.admitted and d.log.get("pass") == 2 and "unused_w" in d.log
        ]
        rng = np.random.default_rng(0)
        return divide_purchases(purchases, len(self.cluster.tenants), rule, rng=rng)

    def _shares(self) -> tuple[list[int], list[int]]:
        return [t.quota_workers for t in self.cluster.tenants], [t.quota_ps for t in self.cluster.tenants]

    def metrics(self, decisions: Sequence[Decision], reports: Sequence[AstraeaBid]) -> dict[str, float]:
        """``welfare`` (collective revenue R: true utilities realised), ``revenue`` (payments),
        ``utility`` (welfare − payments), ``admission_rate``, ``completion_rate``, ``utilisation``
        (GPU-slots used / (C_W·T)), ``mean_jct`` (h, truly completed jobs), ``makespan`` (max t⁺ −
        min r, completed), ``revenue_per_job`` (R / N, Table 2), ``income`` (Eq. 2 total),
        ``budget_residual`` (Σ incomes − Σ payments), ``alpha_variance`` (population variance of α_u,
        NaN when R ≤ 0), ``si_gap`` (min over tenants of g_u − g_u^exclusive) and ``si_fraction``
        (share of tenants with g_u ≥ g_u^exclusive).

        :param decisions: the run's decisions
        :param reports: the reports the mechanism saw
        :returns: metric name -> value (TRUE types)
        """
        by_id = decisions_by_id(decisions)
        real = [r for r in reports if not r.phantom]
        n = len(real)
        admitted = completed = 0
        jct: list[float] = []
        arr: list[float] = []
        ends: list[int] = []
        for rep in real:
            d = by_id.get(int(rep.job_id))
            admitted += bool(d is not None and d.admitted)
            true = self.truth(rep)
            t = None if true is None else self.true_completion(true, rep, d)
            if t is not None and true is not None:
                completed += 1
                jct.append(t - true.spec.arrival)
                arr.append(true.spec.arrival)
                ends.append(t)
        parts = self.tenant_parts(decisions, reports)
        welfare = float(math.fsum(parts["value"].tolist()))
        pay = float(math.fsum(parts["payments"].tolist()))
        inc = float(math.fsum(parts["income"].tolist()))
        qw, qp = self._shares()
        a, ok = alpha_from_revenue(parts["revenue"], qw, qp)
        excl = self.exclusive_revenue(reports)
        gap = np.array([parts["revenue"][i] - excl[t.uid] for i, t in enumerate(self.cluster.tenants)])
        tol = 1e-9 * np.maximum(1.0, np.abs(parts["revenue"]))
        return {
            "welfare": welfare,
            "revenue": pay,
            "utility": welfare - pay,
            "admission_rate": admitted / n if n else 0.0,
            "completion_rate": completed / n if n else 0.0,
            "utilisation": float(parts["gpu_slots"].sum()) / (self.cluster.total_workers * self.T),
            "mean_jct": float(np.mean(jct)) if jct else math.nan,
            "makespan": float(max(ends) - min(arr)) if ends else math.nan,
            "revenue_per_job": welfare / n if n else math.nan,
            "income": inc,
            "budget_residual": inc - pay,
            "alpha_variance": variance(a) if ok else math.nan,
            "si_gap": float(gap.min()),
            "si_fraction": float(np.mean(gap >= -tol)),
        }

    def tenant_rows(self, decisions: Sequence[Decision], reports: Sequence[AstraeaBid]) -> list[dict[str, Any]]:
        """One row per tenant: quota ``share``, ``jobs``, ``admitted``, ``value`` (true utilities),
        ``payments``, ``income`` (Eq. 2 as paid; ``income_equal`` / ``income_shapley``: the same
        payments divided equally / by the Shapley value of the sharing coalition), ``revenue`` g_u,
        fairness ratio ``alpha`` (NaN when R ≤ 0),
        ``si_gap`` (g_u − g_u on its exclusive partition) and ``own_quota_utilisation`` (GPU-slots of
        its own-quota jobs — Astraea pass 1, BatchSche/exclusive all — over q_w^u·T; for the slot
        baselines all its GPU-slots, which may exceed its quota).

        :param decisions: the run's decisions
        :param reports: the bids of the run
        :returns: one dict per tenant
        """
        parts = self.tenant_parts(decisions, reports)
        qw, qp = self._shares()
        a, _ = alpha_from_revenue(parts["revenue"], qw, qp)
        share = (np.array(qw) / sum(qw) + np.array(qp) / sum(qp)) / 2
        excl = self.exclusive_revenue(reports)
        alt = {rule: self.income_division(decisions, rule) for rule in ("equal", "shapley")}
        rows = []
        for i, t in enumerate(self.cluster.tenants):
            rows.append(
                {
                    "tenant": t.uid,
                    "share": float(share[i]),
                    "jobs": int(parts["jobs"][i]),
                    "admitted": int(parts["admitted"][i]),
                    "value": float(parts["value"][i]),
                    "payments": float(parts["payments"][i]),
                    "income": float(parts["income"][i]),
                    "income_equal": float(alt["equal"][i]),
                    "income_shapley": float(alt["shapley"][i]),
                    "revenue": float(parts["revenue"][i]),
                    "alpha": float(a[i]),
                    "si_gap": float(parts["revenue"][i] - excl[t.uid]),
                    "own_quota_utilisation": float(parts["own_slots"][i] / (qw[i] * self.T)) if qw[i] else math.nan,
                }
            )
        return rows

    def agents_info(self) -> list[dict[str, Any]]:
        """The servers as Mesa agents (no network graph: Astraea's topology is a star, spec §2.2)."""
        return [
            {
                "id": f"s{s.sid}",
                "kind": "gpu_server",
                "node": None,
                "owner": s.owner,
                "capacity": {"gpu": float(s.n_workers), "ps": float(s.n_ps)},
            }
            for s in self.cluster.servers
        ]


def scale_spec(spec: JobSpec, *, value: float = 1.0, size: float = 1.0, delay: float = 0.0) -> JobSpec:
    """``spec`` with its utility × ``value``, epochs × ``size`` (rounded, ≥ 1) and arrival + ``delay``
    hours; returns ``spec`` itself when nothing changes."""
    ch: dict[str, Any] = {}
    if check_positive("value_scale", value) != 1.0:
        ch["utility"] = spec.utility.scaled(value)
    if check_positive("size_scale", size) != 1.0:
        e = max(1, int(round(spec.epochs * size)))
        if e != spec.epochs:
            ch["epochs"] = e
    if check_nonneg("arrival_delay", delay) > 0:
        ch["arrival"] = spec.arrival + float(delay)
    return spec.with_(**ch) if ch else spec


# ------------------------------------------------------------------ tenant-level strategies (spec §7.1)
#: job ids of phantom jobs start here (a tenant's real jobs are numbered from 0)
PHANTOM_ID_BASE = 10**7


def _tenant(market: AstraeaMarket, tenant: int) -> Any:
    for t in market.cluster.tenants:
        if t.uid == tenant:
            return t
    raise InputError("tenant", tenant, f"is not a tenant uid {list(market.cluster.uids)}")


def phantom_jobs(market: AstraeaMarket, tenant: int, workers: int) -> list[AstraeaBid]:
    """Phantom jobs hiding ``workers`` of ``tenant``'s quota: for every batch l the engine can run,
    λ jobs of ``workers`` workers submitted at the batch start 2^(l−1) (0 for l = 1) whose work fills
    exactly one round (τ_l slots at 1 mini-batch per worker-hour) and whose reported utility is
    large enough to be admitted at any posted price. True value 0."""
    k = check_int("hide_workers", workers, minimum=0)
    if k == 0:
        return []
    p = market.params
    L = 0
    while p.lam * 2 ** (L + 2) <= p.horizon_T:
        L += 1
    big = 2.0 * (max(p.theta_w or 1.0, p.theta_p or 1.0)) * (k + 1) * 2 ** (L + 1) + 1.0
    out = []
    for l in range(1, L + 1):
        for i in range(p.lam):
            spec = JobSpec(
                f"{PHANTOM_PREFIX}{tenant}:{l}:{i}",
                tenant,
                0.0 if l == 1 else float(2 ** (l - 1)),
                2**l,
                k,
                1,
                1.0,
                0.0,
                0.0,
                linear_utility(-1e-6, big),
                k,
                1.0,
                1.0,
            )
            out.append(make_bid(PHANTOM_ID_BASE + 1000 * len(out) + tenant % 1000, spec))
    return out


def tenant_reports(
    market: AstraeaMarket,
    tenant: int,
    *,
    value_scale: float = 1.0,
    size_scale: float = 1.0,
    arrival_delay: float = 0.0,
    hide_workers: int | str = 0,
    withhold: int | str = 0,
) -> list[AstraeaBid]:
    """``tenant``'s reports under a tenant-level strategy, a pure transform of its true bids: every
    job's utility scaled by ``value_scale``, its size (epochs) by ``size_scale``, its submission delayed
    by ``arrival_delay`` hours, ``hide_workers`` workers of its quota hidden behind phantom jobs
    (:func:`phantom_jobs`), and its ``withhold`` largest jobs (true work) never submitted; ``"half"`` for
    ``hide_workers`` / ``withhold`` means half its worker quota / half its jobs (rounded down).
    All-default arguments return its true bids. :mod:`marketsim.market.astraea.audit` audits these strategies."""
    t = _tenant(market, tenant)
    mine = [b for b in market.bids() if b.tenant == tenant]
    hide = t.quota_workers // 2 if hide_workers == "half" else int(hide_workers)
    if not 0 <= hide <= t.quota_workers:
        raise InputError("hide_workers", hide_workers, f"must lie in [0, {t.quota_workers}] (the tenant's quota)")
    drop = len(mine) // 2 if withhold == "half" else int(withhold)
    if not 0 <= drop <= len(mine):
        raise InputError("withhold", withhold, f"must lie in [0, {len(mine)}] (the tenant's jobs)")
    by_size = sorted(mine, key=lambda b: (-b.spec.work, b.job_id))
    dropped = {b.job_id for b in by_size[:drop]}
    out = []
    for b in mine:
        if b.job_id in dropped:
            continue
        spec = scale_spec(b.spec, value=value_scale, size=size_scale, delay=arrival_delay)
        out.append(b if spec is b.spec else make_bid(b.job_id, spec))
    return phantom_jobs(market, tenant, hide) + out


def _validate(params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        known = sorted(DEFAULTS)
        raise InputError(unknown[0], params[unknown[0]], f"is not an Astraea market parameter; known: {known}")
    p = {**DEFAULTS, **params}
    check_choice("workload", p["workload"], ("paper", "micro", "toy"))
    for key in ("jobs", "servers", "tenants", "lam"):
        p[key] = check_int(key, p[key], minimum=1)
    p["horizon"] = check_int("horizon", p["horizon"], minimum=0)
    check_choice("utility", p["utility"], ("linear", "convex", "mixed"))
    if p["utility"] == "mixed" and p["workload"] == "paper":
        raise InputError("utility", "mixed", "is only available for workload='micro'")
    if not isinstance(p["trace"], str):
        raise InputError("trace", p["trace"], "must be a path string ('' = synthetic)")
    if not isinstance(p["window_start"], str):
        raise InputError("window_start", p["window_start"], "must be a 'YYYY-MM-DD HH:MM:SS' string")
    p["jobs_per_hour"] = check_positive("jobs_per_hour", p["jobs_per_hour"])
    p["arrival_span"] = check_positive("arrival_span", p["arrival_span"])
    p["m_scale"] = check_positive("m_scale", p["m_scale"])
    if p["m_scale"] != 1.0 and p["workload"] != "paper":
        raise InputError("m_scale", p["m_scale"], "is only available for workload='paper'")
    p["theta"] = check_nonneg("theta", p["theta"])
    if 0 < p["theta"] <= 1:
        raise InputError("theta", p["theta"], "must be 0 (rule) or > 1 (given)")
    p["theta_scale"] = check_positive("theta_scale", p["theta_scale"])
    check_choice("worker_count_mode", p["worker_count_mode"], ("elastic", "fixed"))
    check_choice("worker_cap_source", p["worker_cap_source"], ("data_chunks", "trace_gpus"))
    check_choice("revenue_time_origin", p["revenue_time_origin"], ("arrival", "absolute"))
    check_choice("gang_size", p["gang_size"], GANG_SIZES)
    return p


def make_market(params: Mapping[str, Any], rng: np.random.Generator) -> AstraeaMarket:
    """Build one Astraea instance from study parameters (see :data:`DEFAULTS`; unknown or invalid
    keys raise :class:`InputError` naming the key); all randomness from ``rng``.

    :param params: study parameters (:data:`DEFAULTS`); missing keys take their defaults
    :param rng: the only source of randomness of the instance
    :returns: the market instance (bids, resources, mechanisms)
    :raises InputError: an unknown key or an invalid value, naming the key
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy Generator")
    p = _validate(params)
    info: Any = None
    if p["workload"] == "toy":
        cluster, jobs = toy_workload()
    elif p["workload"] == "micro":
        cluster, jobs = micro_workload(p["jobs"], p["servers"], p["tenants"], rng, p["utility"], p["arrival_span"])
    elif p["trace"]:
        trace = load_philly_csv(p["trace"])
        cluster, jobs, info = philly_workload(
            trace, p["jobs"], p["servers"], p["tenants"], rng, window_start=p["window_start"], utility=p["utility"]
        )
    else:
        cluster, jobs, info = synthetic_workload(
            p["jobs"], p["servers"], p["tenants"], rng, utility=p["utility"], jobs_per_hour=p["jobs_per_hour"]
        )
    if p["m_scale"] != 1.0:
        jobs = [j.with_(m_hours=j.m_hours * p["m_scale"]) for j in jobs]
    horizon = p["horizon"] or _AUTO_HORIZON[p["workload"]]
    theta = p["theta"] or (16.0 if p["workload"] == "toy" else 0.0)
    base = AstraeaParams(
        lam=p["lam"],
        theta_scale=p["theta_scale"],
        worker_count_mode=p["worker_count_mode"],
        worker_cap_source=p["worker_cap_source"],
        revenue_time_origin=p["revenue_time_origin"],
        horizon_T=horizon,
        **({"theta_mode": "given", "theta_w": theta, "theta_p": theta} if theta else {}),
    )
    tw, tp = resolve_theta(cluster, jobs, base)  # frozen from the TRUE jobs, before any report
    params_ = base.with_(theta_mode="given", theta_w=tw, theta_p=tp)
    return AstraeaMarket(cluster, list(jobs), params_, p, info)
