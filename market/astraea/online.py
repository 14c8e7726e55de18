"""The Astraea online driver (Alg. 1, spec A5–A7): batches at τ_l = 2^l, λ rounds per batch, pass 1
on each tenant's own quota for free, pass 2 on the pooled leftover at posted prices, Eq. (2) incomes.

``run_astraea(cluster, jobs, params)`` runs a whole workload in one call; :class:`AstraeaOnline`
exposes the same engine through the shared ``step(now, new_reports) -> list[Decision]`` interface of
``marketsim.market.auction``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.astraea.model import (
    AstraeaParams,
    Cluster,
    JobSpec,
    batch_index,
    round_window,
    worker_cap,
)
from marketsim.market.astraea.pricing import theta_rule
from marketsim.market.astraea.round import Candidate, JobInfo, RoundState, RunContext, _prices, best_schedule
from marketsim.market.auction.base import Decision, OnlineMechanism, Schedule
from marketsim.market.errors import InputError
from marketsim.market.income import balance, gain_as_you_contribute
from marketsim.market.registry import register

__all__ = ["JobOutcome", "RoundLog", "AstraeaResult", "AstraeaEngine", "AstraeaOnline", "run_astraea", "astraea"]


@dataclass(frozen=True)
class JobOutcome:
    """An admitted job: its schedule, posted cost, payment and the incomes it generated.

    ``slot_cost_w`` / ``slot_cost_p`` (d,) are c_jw(t), c_jp(t) (currency) over the job's slots;
    ``unused_w`` / ``unused_p`` (U, d) the frozen post-pass-1 unused quota (pass-2 jobs only);
    ``income`` (U,) what each tenant receives from this job (zeros for pass-1 jobs).

    :param jid: the job
    :param owner: its tenant uid
    :param uidx: its tenant's index
    :param batch: the batch
    :param round: the round
    :param pass_: 1 (own quota) or 2 (pooled)
    :param window: the round's slot window
    :param sched: the chosen schedule
    :param mu: its payoff, currency
    :param payment: what it paid, currency
    :param slot_cost_w: (d,) worker cost per slot
    :param slot_cost_p: (d,) PS cost per slot
    :param unused_w: (U, d) unused worker quota (pass 2), or ``None``
    :param unused_p: (U, d) unused PS quota, or ``None``
    :param income: (U,) what each tenant receives from it
    """

    jid: str
    owner: int
    uidx: int
    batch: int
    round: int
    pass_: int
    window: tuple[int, int]
    sched: Candidate
    mu: float
    payment: float
    slot_cost_w: np.ndarray
    slot_cost_p: np.ndarray
    unused_w: np.ndarray | None
    unused_p: np.ndarray | None
    income: np.ndarray

    @property
    def t_start(self) -> int:
        return self.sched.t_start

    @property
    def t_end(self) -> int:
        return self.sched.t_end

    @property
    def posted_cost(self) -> float:
        return self.sched.cost_w + self.sched.cost_p

    @property
    def ideal_value(self) -> float:
        return self.sched.ideal_value


@dataclass(frozen=True)
class RoundLog:
    """Per-round log (spec §8.5): window, pending ids, admissions per pass, pool snapshot, incomes.

    :param batch: the batch
    :param round: the round
    :param window: its slot window
    :param pending: jids pending
    :param admitted_pass1: jids admitted in pass 1
    :param admitted_pass2: jids admitted in pass 2
    :param a_w: unused worker pool per slot
    :param a_p: unused PS pool per slot
    :param income: (U,) incomes of the round
    """

    batch: int
    round: int
    window: tuple[int, int]
    pending: tuple[str, ...]
    admitted_pass1: tuple[str, ...]
    admitted_pass2: tuple[str, ...]
    a_w: np.ndarray
    a_p: np.ndarray
    income: np.ndarray


@dataclass
class AstraeaResult:
    """Outcome of a run: admitted jobs, unscheduled jobs, per-round logs and the frozen θ.

    :param cluster: servers, tenants and quotas
    :param jobs: every job
    :param params: the parameters
    :param theta_w: the worker price base used
    :param theta_p: the PS price base used
    :param outcomes: jid -> admitted job's outcome
    :param unscheduled: jids never admitted
    :param rounds: per-round logs
    :param batches_used: batches run
    :param search_seconds: time in BEST_SCHEDULE, s
    :param search_calls: BEST_SCHEDULE calls
    """

    cluster: Cluster
    jobs: tuple[JobSpec, ...]
    params: AstraeaParams
    theta_w: float
    theta_p: float
    outcomes: dict[str, JobOutcome] = field(default_factory=dict)
    unscheduled: list[str] = field(default_factory=list)
    rounds: list[RoundLog] = field(default_factory=list)
    batches_used: int = 0
    search_seconds: float = 0.0
    search_calls: int = 0

    @property
    def job_by_id(self) -> dict[str, JobSpec]:
        return {j.jid: j for j in self.jobs}

    def payments(self) -> np.ndarray:
        """(U,) total payments per tenant (currency)."""
        out = np.zeros(len(self.cluster.tenants))
        for o in self.outcomes.values():
            out[o.uidx] += o.payment
        return out

    def incomes(self) -> np.ndarray:
        """(U,) total Eq. (2) income per tenant, self-income included (currency)."""
        out = np.zeros(len(self.cluster.tenants))
        for o in self.outcomes.values():
            out += o.income
        return out

    def to_dataframe(self) -> Any:
        """One row per job (admitted or not): schedule, F, posted cost, μ, payment, realised utility."""
        import pandas as pd

        from marketsim.market.astraea.accounting import realised_utility

        rows = []
        for j in self.jobs:
            o = self.outcomes.get(j.jid)
            row: dict[str, Any] = {"jid": j.jid, "owner": j.owner, "arrival": j.arrival, "admitted": o is not None}
            if o is not None:
                row.update(
                    batch=o.batch,
                    round=o.round,
                    pass_=o.pass_,
                    t_start=o.t_start,
                    t_end=o.t_end,
                    n_workers=o.sched.n_workers,
                    n_ps=o.sched.n_ps,
                    centralized=o.sched.centralized,
                    ideal_value=o.ideal_value,
                    posted_cost=o.posted_cost,
                    mu=o.mu,
                    payment=o.payment,
                    realised_utility=realised_utility(self, j.jid),
                )
            rows.append(row)
        return pd.DataFrame(rows)


def _validate_jobs(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams) -> tuple[JobSpec, ...]:
    jobs = tuple(jobs)
    ids = [j.jid for j in jobs]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise InputError("JobSpec.jid", dup, "must be unique")
    uids = set(cluster.uids)
    for j in jobs:
        if not isinstance(j, JobSpec):
            raise InputError("jobs", j, "must be JobSpec instances")
        if j.owner not in uids:
            raise InputError(f"JobSpec[{j.jid}].owner", j.owner, f"is not a tenant uid {sorted(uids)}")
        worker_cap(j, params.worker_cap_source)
    return jobs


class AstraeaEngine:
    """Stateful batch engine shared by :func:`run_astraea` and :class:`AstraeaOnline`."""

    def __init__(
        self,
        cluster: Cluster,
        params: AstraeaParams,
        theta_w: float,
        theta_p: float,
        search: Callable[[JobInfo, RoundState, int], Candidate | None] | None = None,
    ) -> None:
        self.ctx = RunContext(cluster, params, theta_w, theta_p)
        self.search = search or best_schedule
        self.params = params
        lam, T = params.lam, params.horizon_T
        self.L_max = 0
        while lam * 2 ** (self.L_max + 2) <= T:
            self.L_max += 1
        self.pending: list[JobInfo] = []
        self.rng = np.random.default_rng(params.seed)
        self.outcomes: dict[str, JobOutcome] = {}
        self.rounds: list[RoundLog] = []
        self.dropped: list[str] = []
        self.search_seconds = 0.0
        self.search_calls = 0
        self.batches_used = 0

    def add(self, jobs: Sequence[JobSpec]) -> None:
        for j in jobs:
            self.pending.append(self.ctx.job_info(j))

    def _admissible(self, info: JobInfo) -> bool:
        """False if the job can never be admitted in any remaining batch (pure speed-up)."""
        d = np.concatenate([info.d_cent[info.cent_ok], info.d_dist[info.dist_ok]])
        d = d[d <= 2**self.L_max]  # the longest round of the remaining batches
        if d.size == 0:
            return False
        return float(np.max(info.job.utility(d.astype(float)))) > self.params.tol_admit

    def _order(self, infos: list[JobInfo]) -> list[JobInfo]:
        if self.params.job_order == "random":
            perm = self.rng.permutation(len(infos))
            return [infos[i] for i in perm]
        return sorted(infos, key=lambda x: (x.job.arrival, x.job.owner, x.job.jid))

    def run_batch(self, l: int) -> list[JobOutcome]:
        """Run batch ``l`` (λ rounds) on the pending jobs; returns the newly admitted outcomes."""
        keep = []
        for info in self.pending:
            if self._admissible(info):
                keep.append(info)
            else:
                self.dropped.append(info.jid)
        self.pending = keep
        new: list[JobOutcome] = []
        if not self.pending:
            return new
        self.batches_used = l
        for i in range(1, self.params.lam + 1):
            new.extend(self._run_round(l, i))
        return new

    def _search(self, info: JobInfo, st: RoundState, pass_: int) -> Candidate | None:
        t0 = time.perf_counter()
        c = self.search(info, st, pass_)
        self.search_seconds += time.perf_counter() - t0
        self.search_calls += 1
        return c

    def _run_round(self, l: int, i: int) -> list[JobOutcome]:
        ctx, p = self.ctx, self.params
        w0, w1 = round_window(p.lam, l, i)
        tau = w1 - w0
        st = RoundState(ctx, w0, tau)
        order = self._order(self.pending)
        pend_ids = tuple(x.jid for x in order)
        adm: list[JobOutcome] = []
        adm1: list[tuple[JobInfo, Candidate, np.ndarray, np.ndarray]] = []
        for info in order:
            c = self._search(info, st, 1)
            if c is not None:
                _, _, ew, ep = _prices(st, 1)
                adm1.append((info, c, ew, ep))
                st.commit(c, info.uidx, 1)
        U = ctx.U
        for info, c, ew, ep in adm1:
            cw, cp = _slot_costs(c, ew, ep, p)
            adm.append(
                JobOutcome(
                    info.jid,
                    info.job.owner,
                    info.uidx,
                    l,
                    i,
                    1,
                    (w0, w1),
                    c,
                    c.value,
                    0.0,
                    cw,
                    cp,
                    None,
                    None,
                    np.zeros(U),
                )
            )
        done = {x.jid for x, *_ in adm1}
        unused_w = ctx.q_w[:, None] - st.used_w[0]
        unused_p = ctx.q_p[:, None] - st.used_p[0]
        a_w, a_p = unused_w.sum(axis=0), unused_p.sum(axis=0)
        adm2_ids: list[str] = []
        if p.enable_pass2:
            for info in order:
                if info.jid in done:
                    continue
                c = self._search(info, st, 2)
                if c is None:
                    continue
                _, _, ew, ep = _prices(st, 2)
                cw, cp = _slot_costs(c, ew, ep, p)
                sl = slice(c.k, c.k + c.d)
                uw, up = unused_w[:, sl].astype(float), unused_p[:, sl].astype(float)
                payment, income = _charge(info.uidx, c, cw, cp, uw, up, p.pass2_charge)
                st.commit(c, info.uidx, 2)
                adm.append(
                    JobOutcome(
                        info.jid,
                        info.job.owner,
                        info.uidx,
                        l,
                        i,
                        2,
                        (w0, w1),
                        c,
                        c.value,
                        payment,
                        cw,
                        cp,
                        uw,
                        up,
                        income,
                    )
                )
                adm2_ids.append(info.jid)
                done.add(info.jid)
        round_income = np.zeros(U)
        for o in adm:
            round_income += o.income
            self.outcomes[o.jid] = o
        self.rounds.append(
            RoundLog(l, i, (w0, w1), pend_ids, tuple(x.jid for x, *_ in adm1), tuple(adm2_ids), a_w, a_p, round_income)
        )
        self.pending = [x for x in self.pending if x.jid not in done]
        return adm

    def unscheduled(self) -> list[str]:
        return list(self.dropped) + [x.jid for x in self.pending]


def _slot_costs(c: Candidate, ew: np.ndarray, ep: np.ndarray, p: AstraeaParams) -> tuple[np.ndarray, np.ndarray]:
    """Per-slot posted costs c_jw(t) = η_w(t)·D_w, c_jp(t) = η_p(t)·P over the job's slots."""
    sl = slice(c.k, c.k + c.d)
    if c.centralized and p.mincostc_pricing == "start_slot":
        return np.full(c.d, ew[c.k] * c.n_workers), np.full(c.d, ep[c.k] * c.n_ps)
    return ew[sl] * c.n_workers, ep[sl] * c.n_ps


def _charge(
    uidx: int, c: Candidate, cw: np.ndarray, cp: np.ndarray, uw: np.ndarray, up: np.ndarray, rule: str
) -> tuple[float, np.ndarray]:
    """(payment, incomes (U,)) of a pass-2 job under ``pass2_charge``."""
    if rule == "full_eq2":
        payment = c.cost_w + c.cost_p
        inc = gain_as_you_contribute(uw, cw, exact_balance=False) + gain_as_you_contribute(up, cp, exact_balance=False)
        return payment, balance(inc, payment, (uw.sum(axis=1) + up.sum(axis=1)) > 0)
    # beyond_quota: pay only for units beyond the payer's own frozen unused quota, to the others
    ex_w = np.maximum(0.0, c.n_workers - uw[uidx]) * (cw / c.n_workers)
    ex_p = np.maximum(0.0, c.n_ps - up[uidx]) * (cp / c.n_ps)
    ow, op = uw.copy(), up.copy()
    ow[uidx] = 0.0
    op[uidx] = 0.0
    payment = float(ex_w.sum() + ex_p.sum())
    inc = gain_as_you_contribute(ow, ex_w, exact_balance=False) + gain_as_you_contribute(op, ex_p, exact_balance=False)
    contributors = (ow.sum(axis=1) + op.sum(axis=1)) > 0
    return payment, balance(inc, payment, contributors if contributors.any() else None)


def resolve_theta(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams) -> tuple[float, float]:
    """(θ_w, θ_p): given, or the A9 rule on ``jobs`` (then frozen for the run).

    :param cluster: the cluster
    :param jobs: the workload's job reports
    :param params: the mechanism's parameters (``theta_mode``)
    :returns: ``(theta_w, theta_p)``
    """
    if params.theta_mode == "given":
        return float(params.theta_w), float(params.theta_p)  # type: ignore[arg-type]
    return theta_rule(cluster, jobs, params)


def run_astraea(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    params: AstraeaParams | None = None,
    *,
    search: Callable[[JobInfo, RoundState, int], Candidate | None] | None = None,
) -> AstraeaResult:
    """Run Astraea on a whole workload (Alg. 1). Jobs are reports; θ is given or from the A9 rule.

    ``search`` replaces BEST_SCHEDULE (instrumentation, e.g. the benchmark's cross-check).

    :param cluster: the cluster
    :param jobs: the job reports
    :param params: the mechanism's parameters; ``None``: :class:`AstraeaParams` defaults
    :param search: a replacement of BEST_SCHEDULE; ``None``: the mechanism's own
    :returns: the run's outcomes, round logs and unscheduled jobs
    :raises InputError: not an Astraea cluster, or invalid jobs
    """
    params = params or AstraeaParams()
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", cluster, "must be a marketsim.market.astraea.Cluster")
    jobs = _validate_jobs(cluster, jobs, params)
    theta_w, theta_p = resolve_theta(cluster, jobs, params)
    eng = AstraeaEngine(cluster, params, theta_w, theta_p, search)
    by_batch: dict[int, list[JobSpec]] = {}
    for j in jobs:
        by_batch.setdefault(batch_index(j.arrival), []).append(j)
    last = max(by_batch) if by_batch else 0
    for l in range(1, eng.L_max + 1):
        eng.add(by_batch.get(l, []))
        if not eng.pending and l >= last:
            break
        eng.run_batch(l)
    late = [j.jid for l, js in by_batch.items() if l > eng.L_max for j in js]
    return AstraeaResult(
        cluster,
        jobs,
        params,
        theta_w,
        theta_p,
        dict(eng.outcomes),
        eng.unscheduled() + late,
        list(eng.rounds),
        eng.batches_used,
        eng.search_seconds,
        eng.search_calls,
    )


@register(
    "astraea",
    "auction",
    "Astraea: multi-tenant batch posted-price scheduling with own-quota pass, pooled pass and Eq. (2) incomes",
    paper="astraea",
    claims_truthful=True,
)
def astraea(
    cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams | None = None, **overrides: Any
) -> AstraeaResult:
    """Registered entry point: ``astraea(cluster, jobs, params, **param_overrides) -> AstraeaResult``.

    :param cluster: the cluster
    :param jobs: the job reports
    :param params: the mechanism's parameters; ``None``: defaults
    :param overrides: parameter fields to replace (``AstraeaParams.with_``)
    :returns: the run's result (:func:`run_astraea`)
    """
    params = params or AstraeaParams()
    if overrides:
        params = params.with_(**overrides)
    return run_astraea(cluster, jobs, params)


class AstraeaOnline(OnlineMechanism):
    """Astraea behind the shared online interface: ``step(now, new_reports)`` buffers reports
    (JobSpecs with arrival ≤ now) and, when ``now`` = τ_l = 2^l, decides batch l; decisions of
    admitted jobs are returned then, rejections at :meth:`finish`. ``Decision.job_id`` is the
    report's submission index; ``Decision.log["jid"]`` its JobSpec id. θ must be fixed beforehand
    (``theta_mode="given"`` or ``theta_w``/``theta_p`` arguments).

    :param cluster: the cluster
    :param params: the mechanism's parameters (horizon ``T``); ``None``: defaults
    :param theta_w: the worker price threshold θ_w; ``None``: from ``params`` (``theta_mode="given"``)
    :param theta_p: the PS price threshold θ_p; ``None``: from ``params``
    :raises InputError: θ neither given nor fixed in ``params``
    """

    name = "astraea"

    def __init__(
        self,
        cluster: Cluster,
        params: AstraeaParams | None = None,
        theta_w: float | None = None,
        theta_p: float | None = None,
    ) -> None:
        params = params or AstraeaParams()
        super().__init__(params.horizon_T)
        if theta_w is None or theta_p is None:
            if params.theta_mode != "given":
                raise InputError("theta_w/theta_p", (theta_w, theta_p), "must be fixed before the auction (give them)")
            theta_w, theta_p = float(params.theta_w), float(params.theta_p)  # type: ignore[arg-type]
        self.cluster = cluster
        self.engine = AstraeaEngine(cluster, params, theta_w, theta_p)
        self.index: dict[str, int] = {}
        self.jobs: dict[str, JobSpec] = {}

    def step(self, now: int, new_reports: Sequence[JobSpec]) -> list[Decision]:  # type: ignore[override]
        """Submit the jobs arriving at slot ``now`` and run the batches that end by it.

        :param now: the slot, never earlier than the last step
        :param new_reports: the jobs submitted in slot ``now``
        :returns: the decisions made
        :raises InputError: a step back in time, a job submitted twice
        """
        from marketsim.market.errors import check_int

        now = check_int("now", now, minimum=0)
        if now < self.now:
            raise InputError("now", now, f"must not go back in time (last step was {self.now})")
        self.now = now
        reps = _validate_jobs(self.cluster, list(new_reports), self.engine.params)
        for r in reps:
            if r.jid in self.index or r.jid in {x.jid for x in reps if x is not r}:
                raise InputError("report.jid", r.jid, "was already submitted")
            if r.arrival > now:
                raise InputError(f"report[{r.jid}].arrival", r.arrival, f"must be <= now = {now}")
            self.index[r.jid] = len(self.index)
            self.jobs[r.jid] = r
        if now >= 2 and now & (now - 1) == 0 and (now.bit_length() - 1) <= self.engine.L_max:
            l = now.bit_length() - 1
            self.engine.add([r for r in reps if batch_index(r.arrival) <= l])
            out = [self._decision(o) for o in self.engine.run_batch(l)]
            self.engine.add([r for r in reps if batch_index(r.arrival) > l])
            return out
        self.engine.add(reps)
        return []

    def finish(self) -> list[Decision]:
        out = []
        for jid in self.engine.unscheduled():
            out.append(Decision(self.index[jid], False, None, 0.0, None, 0.0, 0.0, {"jid": jid}))
        self.engine.pending = []
        self.engine.dropped = []
        return out

    def run(self, reports: Sequence[JobSpec]) -> list[Decision]:  # type: ignore[override]
        reps = sorted(reports, key=lambda r: r.arrival)
        out: list[Decision] = []
        nxt = 0
        t = 0
        while t <= self.engine.params.horizon_T and (nxt < len(reps) or self.engine.pending):
            batch = []
            while nxt < len(reps) and reps[nxt].arrival <= t:
                batch.append(reps[nxt])
                nxt += 1
            out.extend(self.step(t, batch))
            t += 1
            if t > 2 ** (self.engine.L_max + 1):
                break
        out.extend(self.finish())
        return sorted(out, key=lambda d: d.job_id)

    def _decision(self, o: JobOutcome) -> Decision:
        S = len(self.cluster.servers)
        y = np.zeros(S, dtype=int)
        z = np.zeros(S, dtype=int)
        for s, n in o.sched.y:
            y[s] += n
        for s, n in o.sched.z:
            z[s] += n
        slots = range(o.t_start, o.t_end + 1)
        mode = "centralized" if o.sched.centralized else "distributed"
        sched = Schedule(
            self.index[o.jid], o.t_end, {t: y for t in slots}, {t: z for t in slots}, {t: mode for t in slots}
        )
        job = self.jobs[o.jid]
        from marketsim.market.astraea.accounting import realised_value

        u = realised_value(job, o, self.engine.params)
        return Decision(
            self.index[o.jid],
            True,
            sched,
            o.payment,
            o.t_end,
            o.mu,
            u,
            {"jid": o.jid, "pass": o.pass_, "batch": o.batch, "round": o.round, "income": o.income.tolist()},
        )
