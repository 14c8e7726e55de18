"""OASiS (Bao et al., INFOCOM'18) as a posted-price online auction (spec oasis.md §3).

On arrival a request gets its utility-maximising schedule against the current exponential prices
(cheapest-first placement per slot, DP over slots, every completion slot), is admitted iff the
payoff ``μ = f(elapsed) - posted cost`` is > 0, pays the posted cost (framework addition),
reserves the whole schedule and raises the prices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.market.auction.base import Decision, PostedPriceMechanism, Schedule
from marketsim.market.auction.prices import PriceLedger
from marketsim.market.auction.schedule import (
    best_completion,
    dp_forward,
    greedy_cost_vector,
    greedy_placement,
    reconstruct,
)
from marketsim.market.errors import InputError, check_int, check_nonneg
from marketsim.market.oasis.constants import OasisConstants
from marketsim.market.oasis.model import EPS, OasisCluster, OasisJob, OasisRequest, SearchResult, ceil_tol

__all__ = ["Oasis", "SearchResult", "oasis_search", "slot_cost_vector", "realised_outcome", "RealisedOutcome"]


def slot_cost_vector(
    req: OasisRequest, wprice: np.ndarray, wcap: np.ndarray, pprice: np.ndarray, pcap: np.ndarray, N: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COST_t (§3.2): ``cost[n]`` for ``n = 0..N`` workers plus their ``n_ps(n)`` PSs, cheapest first.

    ``wprice``/``wcap`` (H,) per-worker price and room per worker host; ``pprice``/``pcap`` (K,)
    likewise for PSs. Returns ``(cost, worker_order, ps_order)``.
    """
    N = req.max_workers if N is None else N
    wcost, worder = greedy_cost_vector(wprice, wcap, N)
    nps = req.n_ps(np.arange(N + 1))
    pcost, porder = greedy_cost_vector(pprice, pcap, int(nps[-1]))
    cost = wcost + pcost[nps]
    cost[nps > np.arange(N + 1)] = np.inf
    return cost, worder, porder


def oasis_search(req: OasisRequest, wl: PriceLedger, pl: PriceLedger, max_units: int = 4000) -> SearchResult:
    """BEST_SCHEDULE (§3.4): DP over slots ``a..T-1`` shared by every completion slot (vectorised)."""
    a, T = req.arrival, wl.T
    sl = slice(a, T)
    wprice = wl.unit_prices(req.worker_demand, sl)
    wcap = wl.unit_capacity(req.worker_demand, sl)
    pprice = pl.unit_prices(req.ps_demand, sl)
    pcap = pl.unit_capacity(req.ps_demand, sl)
    W, N = req.work_units, req.max_workers
    q = 1 if W <= max_units else ceil_tol(W / max_units)
    Wq = ceil_tol(W / q)
    ks = np.arange(N // q + 1) * q
    nT = T - a
    costs = np.empty((nT, ks.size))
    orders = []
    for j in range(nT):
        c, wo, po = slot_cost_vector(req, wprice[j], wcap[j], pprice[j], pcap[j])
        costs[j] = c[ks]
        orders.append((wo, po))
    theta, arg = dp_forward(costs, Wq)
    util = np.asarray(req.utility(np.arange(1, nT + 1, dtype=float)), dtype=float)
    mu, jbest = best_completion(util, theta[:, Wq])
    if jbest is None:
        return SearchResult(0.0, None, 0.0, theta[:, Wq], q)
    units = reconstruct(arg, jbest, Wq)
    workers, ps = {}, {}
    cost = 0.0
    for j, k in enumerate(units):
        if k == 0:
            continue
        n = int(ks[k])
        wo, po = orders[j]
        y = greedy_placement(wo, wcap[j], n)
        z = greedy_placement(po, pcap[j], int(req.n_ps(n)))
        workers[a + j], ps[a + j] = y, z
        cost += float(wprice[j] @ y + pprice[j] @ z)
    assert max(workers) == a + jbest, "completion slot must be the last slot with workers"
    sched = Schedule(req.job_id, a + jbest, workers, ps, work_unit=q)
    return SearchResult(mu, sched, cost, theta[:, Wq], q)


@dataclass(frozen=True)
class RealisedOutcome:
    """What a job's reserved schedule realises with its true type.

    :param completed: whether it finished within the reservation
    :param completion: its completion slot, or ``None``
    :param utility: its TRUE utility (currency)
    """
    completed: bool
    completion: int | None
    utility: float


def _fit_ratio(true_demand: np.ndarray, reported_demand: np.ndarray) -> float:
    """How many true units fit in one reserved unit: ``min_r rep^r / true^r`` over ``true^r > 0``."""
    need = true_demand > 0
    return float(np.min(reported_demand[need] / true_demand[need])) if need.any() else 1.0


def realised_outcome(
    true: OasisRequest, schedule: Schedule | None, reported: OasisRequest | None = None
) -> RealisedOutcome:
    """REALISED (§3.7): run the reserved schedule with the true type; a PS-bandwidth shortfall
    slows a slot; no extension beyond the reservation; elapsed time from the true arrival.

    Workers beyond the true chunk count ``N`` idle (constraint (3)). With ``reported`` (the request
    the schedule was reserved for), reservations are enforced per server (framework decision, the
    spec is silent on misreported demands): ``y_h`` workers reserved at the reported per-worker
    demand host ``min(y_h, floor(y_h · min_r w_rep^r / w_true^r))`` true workers; PSs likewise.

    :param true: the job's true request
    :param schedule: its reserved schedule, or ``None``
    :param reported: the request the schedule was reserved for
    :returns: completion and TRUE utility
    """
    if schedule is None:
        return RealisedOutcome(False, None, 0.0)
    wr = 1.0 if reported is None else _fit_ratio(true.worker_demand, reported.worker_demand)
    pr = 1.0 if reported is None else _fit_ratio(true.ps_demand, reported.ps_demand)
    cum = 0.0
    for t in schedule.slots:
        y = schedule.workers[t]
        z = schedule.ps.get(t, np.zeros(0, dtype=np.int64))
        if wr < 1.0:
            y = np.minimum(y, np.floor(y * wr + EPS))
        if pr < 1.0:
            z = np.minimum(z, np.floor(z * pr + EPS))
        n, m = min(int(y.sum()), true.max_workers), int(z.sum())
        if n == 0:
            continue
        cum += n * min(1.0, true.ps_den * m / (true.ps_num * n))
        if cum >= true.work_units - EPS:
            return RealisedOutcome(True, t, float(true.utility(t - true.arrival + 1)))
    return RealisedOutcome(False, None, 0.0)


class Oasis(PostedPriceMechanism):
    """The OASiS online auctioneer over an :class:`OasisCluster` with fixed :class:`OasisConstants`.

    ``decide(report)`` accepts an :class:`OasisRequest` or an :class:`OasisJob` (converted with
    ``to_request``). ``search`` selects the vectorised search or the pure-Python reference (same
    decisions; benchmark only). Dual bookkeeping (§3.10) in ``primal`` / ``dual`` after each job.

    :param cluster: the worker and PS pools and the horizon ``T``
    :param constants: the price constants (L, U per resource)
    :param admit_tol: the payoff a job needs above 0 to be admitted, >= 0
    :param max_units: the most work units of the schedule search (coarser units above), >= 1
    :param search: ``"vectorised"`` or ``"reference"``
    :raises InputError: constants of the wrong type or length, or a bad option
    """

    name = "oasis"

    def __init__(
        self,
        cluster: OasisCluster,
        constants: OasisConstants,
        *,
        admit_tol: float = 1e-9,
        max_units: int = 4000,
        search: str = "vectorised",
    ) -> None:
        super().__init__(cluster.T)
        if not isinstance(constants, OasisConstants):
            raise InputError("constants", constants, "must be OasisConstants")
        R = cluster.resources.R
        for name, v in (("log_U1", constants.log_U1), ("log_U2", constants.log_U2)):
            if v.size not in (1, R):
                raise InputError(f"constants.{name}", v.tolist(), f"must have 1 or R = {R} entries")
        self.cluster = cluster
        self.constants = constants
        self.admit_tol = check_nonneg("admit_tol", admit_tol)
        self.max_units = check_int("max_units", max_units, minimum=1)
        if search not in ("vectorised", "reference"):
            raise InputError("search", search, "must be 'vectorised' or 'reference'")
        self.search = search
        self.workers = PriceLedger(cluster.worker_capacity, cluster.T, constants.log_L1, constants.log_U1)
        self.ps = PriceLedger(cluster.ps_capacity, cluster.T, constants.log_L2, constants.log_U2)
        self.primal: list[float] = [0.0]
        self.dual: list[float] = [self._price_dual()]
        self._mu_sum = 0.0
        self.decisions: list[Decision] = []
        self.requests: dict[int, OasisRequest] = {}

    def _price_dual(self) -> float:
        return self.workers.total_value() + self.ps.total_value()

    def request_of(self, report: OasisRequest | OasisJob) -> OasisRequest:
        """The request of ``report`` (an :class:`OasisJob` is converted on this cluster).

        :param report: a request or a job
        :returns: the request
        :raises InputError: a report of another type
        """
        req = report.to_request(self.cluster) if isinstance(report, OasisJob) else report
        if not isinstance(req, OasisRequest):
            raise InputError("report", report, "must be an OasisRequest or OasisJob")
        req.validate_for(self.cluster.T, self.cluster.resources.R)
        return req

    def best_schedule(self, req: OasisRequest) -> SearchResult:
        """Best schedule at the current prices (no state change).

        :param req: the request
        :returns: its payoff, schedule and cost
        """
        if self.search == "reference":
            from marketsim.market.oasis.reference import oasis_search_reference

            return oasis_search_reference(req, self.workers, self.ps, self.max_units)
        return oasis_search(req, self.workers, self.ps, self.max_units)

    def decide(self, report: OasisRequest | OasisJob) -> Decision:
        """Admit ``report`` with its best schedule when the payoff is positive, and update the prices.

        :param report: the bidder's request or job (converted on this cluster)
        :returns: the decision with schedule and payment
        :raises InputError: a job id decided before, a report of the wrong type
        """
        t0 = time.perf_counter()
        req = self.request_of(report)
        if req.job_id in self.requests:
            raise InputError("job_id", req.job_id, "was already decided")
        res = self.best_schedule(req)
        log: dict[str, Any] = {"work_unit": res.work_unit}
        sched = res.schedule
        if sched is not None:
            f_hat = float(req.utility(sched.completion - req.arrival + 1))
        if sched is not None and res.mu > self.admit_tol * max(1.0, f_hat):
            for t in sched.slots:
                self.workers.reserve(t, np.outer(sched.workers[t], req.worker_demand))
                self.ps.reserve(t, np.outer(sched.ps[t], req.ps_demand))
            self._mu_sum += res.mu
            dec = Decision(req.job_id, True, sched, res.cost, sched.completion, res.mu, f_hat, log)
            self.primal.append(self.primal[-1] + f_hat)
        else:
            dec = Decision(req.job_id, False, None, 0.0, None, 0.0, 0.0, log)
            self.primal.append(self.primal[-1])
        self.dual.append(self._mu_sum + self._price_dual())
        log["seconds"] = time.perf_counter() - t0
        self.requests[req.job_id] = req
        self.decisions.append(dec)
        return dec

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the (T, H, R) worker and (T, K, R) PS usage."""
        return self.workers.usage.copy(), self.ps.usage.copy()


def make_oasis(cluster: OasisCluster, constants: OasisConstants, **options: Any) -> Oasis:
    """Registry factory: ``make_oasis(cluster, constants, **options).run(requests)``.

    :param cluster: the cluster
    :param constants: the price constants
    :param options: :class:`Oasis` options
    :returns: the mechanism
    """
    return Oasis(cluster, constants, **options)
