"""PD-ORS (Yu et al., TNSE'22) as a posted-price online auction (spec pdors.md §3).

On arrival: DP over slots on exact workloads (:mod:`marketsim.market.pdors.pricing`; the spec's workload grid
of ``Q`` units, which understates progress, is ``dp="grid"``), each slot's options a co-located
placement and an LP + randomized-rounding split placement per worker count; admit iff
``λ = u(elapsed) - posted cost > 0``; pay the posted cost (framework addition); reserve and raise
the prices. Randomness: one ``Generator(PCG64(SeedSequence([seed, job_id])))`` per job.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from marketsim.market.auction.base import Decision, PostedPriceMechanism, Schedule
from marketsim.market.auction.prices import PriceLedger
from marketsim.market.auction.schedule import best_completion, dp_forward, reconstruct
from marketsim.market.errors import InputError, check_choice, check_int, check_nonneg, check_positive
from marketsim.market.pdors.constants import PdorsConstants
from marketsim.market.pdors.model import EPS, PdorsCluster, PdorsJob, gbps_to_mb_per_slot, is_colocated
from marketsim.market.pdors.theta import Candidate, DiscardJob, SlotProblem, SplitLP, colocated_costs, split_candidate

__all__ = ["PdorsConfig", "Pdors", "PdorsSearch", "pdors_search", "pdors_realised", "job_rng", "dp_grid"]


@dataclass(frozen=True)
class PdorsConfig:
    """Algorithm options (spec §3); ``PdorsConfig.paper()`` is the reproduction profile.

    ``dp="exact"`` (default) prices on exact workloads (:mod:`marketsim.market.pdors.pricing`: per-slot
    options by worker count, a DP over exact progress; never understates what a schedule
    completes). ``dp="grid"`` is the spec's §3.3 grid of ``dp_units`` units, kept to reproduce
    its artefact: each slot's progress is rounded down to whole units, so a job that fits exactly
    can be credited less than its workload (``dp_units`` is used only with ``dp="grid"``).

    :param G_mode: ``fixed`` G, or G from eq. (29) (``thm3``) / (30) (``thm4``)
    :param G: the rounding's scale with ``G_mode="fixed"``, > 0
    :param delta: failure probability of thm3/thm4, in (0, 1]
    :param S: minimum rounding draws per call, >= 1
    :param max_attempts: most rounding draws per call, >= S
    :param repair: ``never``, ``on_failure`` or ``always`` repair an infeasible rounding (framework addition)
    :param on_rounding_failure: ``infeasible_option`` (skip the option) or ``discard_job``
    :param per_slot_solver: ``lp_round`` (LP and randomised rounding) or ``milp_exact``
    :param dp: ``exact`` (exact workloads) or ``grid`` (the spec's §3.3 grid)
    :param dp_units: grid units with ``dp="grid"``
    :param locality: ``two_tier`` (internal vs external rate)
    :param admit_tol: admit when the payoff exceeds this relative tolerance
    :param seed: base seed of the per-job rounding streams
    :raises InputError: a value out of its range
    """

    G_mode: Literal["fixed", "thm3", "thm4"] = "fixed"
    G: float = 1.0
    delta: float = 0.1
    S: int = 10
    max_attempts: int = 5000
    repair: Literal["never", "on_failure", "always"] = "on_failure"
    on_rounding_failure: Literal["infeasible_option", "discard_job"] = "infeasible_option"
    per_slot_solver: Literal["lp_round", "milp_exact"] = "lp_round"
    dp: Literal["exact", "grid"] = "exact"
    dp_units: int = 200
    locality: Literal["two_tier"] = "two_tier"
    admit_tol: float = 1e-9
    seed: int = 0

    def __post_init__(self) -> None:
        check_choice("G_mode", self.G_mode, ("fixed", "thm3", "thm4"))
        check_positive("G", self.G)
        d = check_positive("delta", self.delta)
        if d > 1:
            raise InputError("delta", d, "must be in (0, 1]")
        check_int("S", self.S, minimum=1)
        check_int("max_attempts", self.max_attempts, minimum=self.S)
        check_choice("repair", self.repair, ("never", "on_failure", "always"))
        check_choice("on_rounding_failure", self.on_rounding_failure, ("infeasible_option", "discard_job"))
        check_choice("per_slot_solver", self.per_slot_solver, ("lp_round", "milp_exact"))
        check_choice("dp", self.dp, ("exact", "grid"))
        check_int("dp_units", self.dp_units, minimum=1)
        check_choice("locality", self.locality, ("two_tier",))
        check_nonneg("admit_tol", self.admit_tol)
        check_int("seed", self.seed, minimum=0)

    @staticmethod
    def paper(**overrides: Any) -> PdorsConfig:
        """The reproduction profile: no repair, discard the job after ``max_attempts`` failed roundings, G = 1.

        :param overrides: fields to change
        :returns: the configuration
        """
        base = dict(repair="never", on_rounding_failure="discard_job", max_attempts=5000, G_mode="fixed", G=1.0)
        base.update(overrides)
        return PdorsConfig(**base)


def job_rng(seed: int, job_id: int) -> np.random.Generator:
    """The job's own stream (common random numbers across other bidders' reports)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), int(job_id)])))


def dp_grid(job: PdorsJob, dp_units: int, slot_hours: float = 1.0) -> tuple[int, float, int]:
    """``(Q, q, u_max)``: ``Q = max(dp_units, 4⌈V c_i/F⌉)`` units of ``q = V/Q`` samples, at most
    ``u_max = min(Q, ⌊F/(q c_i)⌋)`` units per slot."""
    ci = job.c_int(slot_hours)
    Q = max(dp_units, 4 * int(math.ceil(job.V * ci / job.global_batch - EPS)))
    q = job.V / Q
    u_max = Q if ci <= 0 else min(Q, int(math.floor(job.global_batch / (q * ci) + EPS)))
    return Q, q, u_max


@dataclass
class PdorsSearch:
    """Result of one job's search: payoff ``lam``, schedule (None if none), posted cost, stats."""

    lam: float
    schedule: Schedule | None
    cost: float
    theta_Q: np.ndarray
    stats: dict = field(default_factory=dict)


def _slot_problem(job: PdorsJob, ledger: PriceLedger, t: int) -> SlotProblem:
    p = ledger.prices()[t]
    return SlotProblem(
        (p * job.worker_demand).sum(axis=1),
        (p * job.ps_demand).sum(axis=1),
        ledger.residual()[t],
        np.asarray(p),
        job.worker_demand,
        job.ps_demand,
        job.global_batch,
        job.ratio,
    )


def slot_thetas(
    job: PdorsJob,
    sp: SlotProblem,
    lp: SplitLP,
    q: float,
    u_max: int,
    ci: float,
    ce: float,
    config: PdorsConfig,
    rng: np.random.Generator,
    stats: dict,
) -> tuple[np.ndarray, list[Candidate | None]]:
    """θ_t[u] for u = 0..u_max and the chosen placement per u (vectorised co-located step)."""
    us = np.arange(1, u_max + 1)
    D = np.ceil(us * q * ci - EPS).astype(np.int64)
    Sps = np.ceil(D / job.ratio - EPS).astype(np.int64)
    hcol, ccol = colocated_costs(sp, D, Sps)
    theta = np.full(u_max + 1, math.inf)
    theta[0] = 0.0
    chosen: list[Candidate | None] = [None] * (u_max + 1)
    H = sp.pw.size
    for i, u in enumerate(us):
        best = None
        if hcol[i] >= 0:
            w = np.zeros(H, dtype=np.int64)
            s = np.zeros(H, dtype=np.int64)
            w[hcol[i]], s[hcol[i]] = D[i], Sps[i]
            best = Candidate(float(ccol[i]), "colocated", w, s)
        W1 = u * q * ce
        if math.ceil(W1 - EPS) <= job.global_batch:
            sc = split_candidate(sp, lp, W1, best.cost if best else math.inf, config, rng, stats)
            if sc is not None and (best is None or sc.cost < best.cost):
                best = sc
        if best is not None:
            theta[u] = best.cost
            chosen[u] = best
    return theta, chosen


def _slot_lp(job: PdorsJob, ledger: PriceLedger, slot: int, lps: dict[bytes, SplitLP]) -> tuple[Any, bytes, float]:
    """Slot ``slot``'s pricing problem, its state key (prices and residual capacities) and the
    seconds spent building its split LP, which ``lps`` shares between slots of equal state."""
    sp = _slot_problem(job, ledger, slot)
    key = sp.prices.tobytes() + sp.resid.tobytes()
    if key in lps:
        return sp, key, 0.0
    t_lp = time.perf_counter()
    lps[key] = SplitLP(sp)
    return sp, key, time.perf_counter() - t_lp


def pdors_search(
    job: PdorsJob, ledger: PriceLedger, config: PdorsConfig, slot_hours: float = 1.0, rng=None, reference=False
) -> PdorsSearch:
    """BEST_SCHEDULE (Algorithm 2) with the DP of Algorithm 3 (no state change)."""
    rng = job_rng(config.seed, job.job_id) if rng is None else rng
    a, T = job.arrival, ledger.T
    stats: dict[str, Any] = {}
    if job.min_duration(slot_hours) > T - a:
        return PdorsSearch(0.0, None, 0.0, np.full(T - a, math.inf), {"reason": "d_i > T - a_i"})
    ci, ce = job.c_int(slot_hours), job.c_ext(slot_hours)
    if config.dp == "exact":
        return _search_exact(job, ledger, config, slot_hours, rng, reference, stats)
    Q, q, u_max = dp_grid(job, config.dp_units, slot_hours)
    nT = T - a
    costs = np.empty((nT, u_max + 1))
    chosen = []
    lps: dict[bytes, SplitLP] = {}
    lp_build = 0.0
    if reference:
        from marketsim.market.pdors.reference import slot_thetas_reference as thetas_fn
    else:
        thetas_fn = slot_thetas
    for j in range(nT):
        sp, key, built = _slot_lp(job, ledger, a + j, lps)
        lp_build += built
        th, ch = thetas_fn(job, sp, lps[key], q, u_max, ci, ce, config, rng, stats)
        costs[j] = th
        chosen.append(ch)
    stats["lp_solves"] = sum(lp.solves for lp in lps.values())
    stats["lp_seconds"] = lp_build + sum(lp.seconds for lp in lps.values())  # build + solves (HiGHS)
    stats["Q"], stats["u_max"] = Q, u_max
    if reference:
        from marketsim.market.pdors.reference import dp_forward_reference

        theta, arg = dp_forward_reference(costs, Q)
    else:
        theta, arg = dp_forward(costs, Q)
    util = np.asarray(job.utility(np.arange(1, nT + 1, dtype=float)), dtype=float)
    lam, jbest = best_completion(util, theta[:, Q])
    if jbest is None:
        return PdorsSearch(0.0, None, 0.0, theta[:, Q], stats)
    units = reconstruct(arg, jbest, Q)
    stats["credited_progress"] = float(sum(units) * q)  # what the grid credits (samples); <= the true progress
    workers, ps, modes = {}, {}, {}
    cost = 0.0
    for j, u in enumerate(units):
        if u == 0:
            continue
        c = chosen[j][u]
        workers[a + j], ps[a + j], modes[a + j] = c.w, c.s, c.mode
        cost += c.cost
    assert max(workers) == a + jbest, "completion slot must be the last slot with workers"
    return PdorsSearch(lam, Schedule(job.job_id, a + jbest, workers, ps, modes, work_unit=q), cost, theta[:, Q], stats)


def _search_exact(
    job: PdorsJob, ledger: PriceLedger, config: PdorsConfig, slot_hours: float, rng, reference: bool, stats: dict
) -> PdorsSearch:
    """BEST_SCHEDULE with the exact-workload DP (:mod:`marketsim.market.pdors.pricing`)."""
    from marketsim.market.pdors import pricing

    a, T = job.arrival, ledger.T
    ci, ce = job.c_int(slot_hours), job.c_ext(slot_hours)
    nT = T - a
    lps: dict[bytes, SplitLP] = {}
    lp_build = 0.0
    if reference:
        from marketsim.market.pdors.reference import exact_dp_reference as dp_fn
        from marketsim.market.pdors.reference import slot_options_reference as options_fn
    else:
        dp_fn, options_fn = pricing.exact_dp, pricing.slot_options
    util = np.asarray(job.utility(np.arange(1, nT + 1, dtype=float)), dtype=float)
    cap = float(util.max()) if util.size else 0.0  # no schedule costing this much has a positive payoff
    opts = []
    by_state: dict[bytes, Any] = {}  # THETA is a function of the slot's state: equal states share one option set
    for j in range(nT):
        sp, key, built = _slot_lp(job, ledger, a + j, lps)
        lp_build += built
        if key not in by_state:
            by_state[key] = options_fn(job, sp, lps[key], ci, ce, config, rng, stats, cap)
        opts.append(by_state[key])
    stats["lp_solves"] = sum(lp.solves for lp in lps.values())
    stats["lp_seconds"] = lp_build + sum(lp.seconds for lp in lps.values())
    stats["options_max"] = max((o.cost.size for o in opts), default=0)
    res = dp_fn(opts, float(job.V), ci, ce, cap)
    stats["dp_states_max"] = res.states_max
    lam, jbest = best_completion(util, res.theta)
    if jbest is None:
        return PdorsSearch(0.0, None, 0.0, res.theta, stats)
    stats["credited_progress"] = float(res.credited[jbest])  # = the schedule's planned progress (pricing.py)
    workers, ps, modes = {}, {}, {}
    cost = 0.0
    for j, k in enumerate(res.reconstruct(jbest)):
        if k < 0:
            continue
        c = opts[j].cands[k]
        workers[a + j], ps[a + j], modes[a + j] = c.w, c.s, c.mode
        cost += c.cost
    assert max(workers) == a + jbest, "completion slot must be the last slot with workers"
    return PdorsSearch(lam, Schedule(job.job_id, a + jbest, workers, ps, modes, work_unit=0.0), cost, res.theta, stats)


def pdors_realised(
    true: PdorsJob, schedule: Schedule | None, slot_hours: float = 1.0
) -> tuple[bool, int | None, float]:
    """Realised outcome (§3.6): per slot, Fact 1 decides the rate; per-sample time from (1) with the
    true τ, g, F, rates and the actual Σw/Σs; completes when the true ``V`` is reached.

    :param true: the job's true type
    :param schedule: its schedule, or ``None``
    :param slot_hours: hours per slot
    :returns: ``(completed, completion slot or None, TRUE utility in currency)``
    """
    if schedule is None:
        return False, None, 0.0
    done = 0.0
    for t in schedule.slots:
        w, s = schedule.workers[t], schedule.ps[t]
        nw, ns = int(w.sum()), int(s.sum())
        if nw == 0:
            continue
        if ns == 0:
            continue  # no parameter server: no progress
        gbps = true.bw_internal_gbps if is_colocated(w, s) else true.bw_external_gbps
        c = true.tau + 2.0 * true.grad_mb * nw / (ns * gbps_to_mb_per_slot(gbps, slot_hours) * true.global_batch)
        done += nw / c if c > 0 else math.inf
        if done >= true.V * (1 - 1e-9) - EPS:
            return True, t, float(true.utility(t - true.arrival + 1))
    return False, None, 0.0


class Pdors(PostedPriceMechanism):
    """The PD-ORS online auctioneer on a :class:`PdorsCluster` with fixed :class:`PdorsConstants`.

    :param cluster: the servers and the horizon ``T``
    :param constants: the price constants
    :param config: the search and rounding settings; ``None``: :class:`PdorsConfig` defaults
    :param search: ``"vectorised"`` or ``"reference"`` (same decisions; benchmark only)
    :raises InputError: constants of the wrong type or an unknown search
    """

    name = "pdors"

    def __init__(
        self,
        cluster: PdorsCluster,
        constants: PdorsConstants,
        config: PdorsConfig | None = None,
        *,
        search: str = "vectorised",
    ) -> None:
        super().__init__(cluster.T)
        if not isinstance(constants, PdorsConstants):
            raise InputError("constants", constants, "must be PdorsConstants")
        self.cluster = cluster
        self.constants = constants
        self.config = config or PdorsConfig()
        if search not in ("vectorised", "reference"):
            raise InputError("search", search, "must be 'vectorised' or 'reference'")
        self.search = search
        self.ledger = PriceLedger(cluster.capacity, cluster.T, constants.log_L, constants.log_U)
        self.primal: list[float] = [0.0]
        self.dual: list[float] = [self.ledger.total_value()]
        self._lam_sum = 0.0
        self.jobs: dict[int, PdorsJob] = {}

    def best_schedule(self, job: PdorsJob) -> PdorsSearch:
        """Best schedule of ``job`` at the current prices (no state change).

        :param job: the reported job
        :returns: the search's schedule, payoff and cost
        """
        return pdors_search(
            job, self.ledger, self.config, self.cluster.slot_hours, reference=self.search == "reference"
        )

    def decide(self, report: PdorsJob) -> Decision:
        """Admit ``report`` with its best schedule when the payoff is positive, and update the prices.

        :param report: the bidder's reported job
        :returns: the decision with schedule and payment
        :raises InputError: a report of the wrong type, a job id decided before
        """
        t0 = time.perf_counter()
        if not isinstance(report, PdorsJob):
            raise InputError("report", report, "must be a PdorsJob")
        report.validate_for(self.cluster)
        if report.job_id in self.jobs:
            raise InputError("job_id", report.job_id, "was already decided")
        self.jobs[report.job_id] = report
        try:
            res = self.best_schedule(report)
        except DiscardJob:
            res = PdorsSearch(0.0, None, 0.0, np.zeros(0), {"discarded": True})
        sched = res.schedule
        log = dict(res.stats)
        if sched is not None:
            u_hat = float(report.utility(sched.completion - report.arrival + 1))
        if sched is not None and res.lam > self.config.admit_tol * max(1.0, u_hat):
            for t in sched.slots:
                use = np.outer(sched.workers[t], report.worker_demand) + np.outer(sched.ps[t], report.ps_demand)
                self.ledger.reserve(t, use)
            self._lam_sum += res.lam
            self.primal.append(self.primal[-1] + u_hat)
            dec = Decision(report.job_id, True, sched, res.cost, sched.completion, res.lam, u_hat, log)
        else:
            self.primal.append(self.primal[-1])
            dec = Decision(report.job_id, False, None, 0.0, None, 0.0, 0.0, log)
        self.dual.append(self._lam_sum + self.ledger.total_value())
        log["seconds"] = time.perf_counter() - t0
        return dec
