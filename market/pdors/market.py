"""PD-ORS instances behind the generic :class:`~marketsim.market.auction.market.AuctionMarket` adapter
(spec pdors.md §5 evaluation setup; §3.6 consequence model; §2.7 payment = posted cost).

``make_market(params, rng)`` builds one instance: ``machines`` homogeneous machines (72 GPU,
180 vCPU, 576 GB, 180 GB) on a two-level networkx topology (a core switch, ``racks`` rack
switches, machines attached round-robin; bookkeeping only: the paper's locality model is
"co-located on one machine or not", ``locality="two_tier"``), ``jobs`` jobs drawn with the
paper's Section V distributions (``workload="paper"``) or the small one-resource jobs of the
invariant tests (``workload="tiny"``), and price constants fixed BEFORE the auction from
``calib_jobs`` calibration jobs of the same generator on an independent stream (never from any
bidder's report). OASiS' constants (baseline ``oasis-pdors``) come from the same calibration jobs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from marketsim.market.auction.base import Decision, OnlineMechanism, ResourceSpace
from marketsim.market.auction.market import decisions_by_id
from marketsim.market.audit.target import Dimension
from marketsim.market.errors import InputError, check_choice, check_int, check_positive
from marketsim.market.oasis.constants import OasisConstants, estimate_constants
from marketsim.market.pdors.baselines import OasisForPdors, _split_cluster, oasis_request_for
from marketsim.market.pdors.constants import PdorsConstants, estimate_pdors_constants
from marketsim.market.pdors.generators import MACHINE_CAPACITY, RESOURCES, pdors_paper_jobs, pdors_tiny_instance
from marketsim.market.pdors.mechanism import Pdors, PdorsConfig, pdors_realised
from marketsim.market.pdors.model import Machine, PdorsCluster, PdorsJob, is_colocated
from marketsim.market.utility import SigmoidUtility

__all__ = ["PdorsMarket", "make_market", "DEFAULTS", "MECHANISMS", "MIXES"]

MECHANISMS = ("pdors", "pdors-paper", "oasis-pdors", "fifo", "drf", "dorm")
MIXES = {"default": (0.10, 0.55, 0.35), "alternative": (0.30, 0.69, 0.01)}
DEFAULTS: dict[str, Any] = {
    "jobs": 50,  # I
    "T": 20,  # slots (1 h each)
    "machines": 100,  # H
    "racks": 1,  # rack switches of the topology (bookkeeping; locality is per machine)
    "workload": "paper",  # "paper" (Section V draws) | "tiny" (R = 1 invariant-test jobs)
    "mix": "default",  # utility classes (10, 55, 35) % or "alternative" (30, 69, 1) %
    "calib_jobs": 1000,  # calibration jobs for U, L (independent stream)
    "capacity": 8.0,  # per-machine cpu capacity of the tiny workload
    "dorm_time_limit": 10.0,  # s per Dorm MILP (spec §4 [default] 10 s)
    "G": 1.0,  # rounding scale (Fig. 11 sweeps it)
    "dp": "exact",  # pricing DP: "exact" workloads (marketsim.market.pdors.pricing) | "grid" (spec §3.3, understates)
    "dp_units": 200,  # units of the "grid" DP
    "per_slot_solver": "lp_round",  # | "milp_exact"
}


def _int(params: Mapping[str, Any], key: str, minimum: int) -> int:
    return check_int(key, params[key], minimum=minimum)


def _validate(params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise InputError(unknown[0], params[unknown[0]], f"is not a PD-ORS market parameter; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    for key, lo in (("jobs", 1), ("T", 1), ("machines", 2), ("racks", 1), ("calib_jobs", 1), ("dp_units", 1)):
        p[key] = _int(p, key, lo)
    if p["racks"] > p["machines"]:
        raise InputError("racks", p["racks"], f"must be <= machines = {p['machines']}")
    check_choice("workload", p["workload"], ("paper", "tiny"))
    check_choice("mix", p["mix"], tuple(MIXES))
    check_choice("per_slot_solver", p["per_slot_solver"], ("lp_round", "milp_exact"))
    check_choice("dp", p["dp"], ("exact", "grid"))
    p["capacity"] = check_positive("capacity", p["capacity"])
    p["G"] = check_positive("G", p["G"])
    p["dorm_time_limit"] = check_positive("dorm_time_limit", p["dorm_time_limit"])
    return p


def _topology(H: int, racks: int) -> tuple[nx.Graph, list[int]]:
    """A core switch, ``racks`` rack switches, machine ``h`` under rack ``h mod racks``."""
    g = nx.Graph()
    g.add_node("core", kind="switch")
    for k in range(racks):
        g.add_node(f"rack{k}", kind="switch")
        g.add_edge("core", f"rack{k}")
    site = [h % racks for h in range(H)]
    for h in range(H):
        g.add_node(f"m{h}", kind="server")
        g.add_edge(f"rack{site[h]}", f"m{h}")
    return g, site


def _cluster(T: int, capacity: np.ndarray, resources: ResourceSpace, racks: int) -> PdorsCluster:
    g, site = _topology(capacity.shape[0], racks)
    machines = tuple(Machine(h, capacity[h], site=site[h], node=f"m{h}") for h in range(capacity.shape[0]))
    return PdorsCluster(T, resources, machines, topology=g)


@dataclass
class PdorsMarket:
    """One PD-ORS instance: true jobs, cluster, fixed PD-ORS and OASiS constants, algorithm config
    (``pdors`` runs ``config``; ``pdors-paper`` the spec's reproduction profile with the same G, grid
    and per-slot solver: no repair, the job is discarded when 5000 roundings of one option fail).

    :param cluster: the cluster
    :param jobs: the bidders' true types
    :param constants: PD-ORS's price constants
    :param oasis_constants: the constants of the OASiS baseline
    :param config: PD-ORS's algorithm options
    :param params: the parameters the market was built from
    :param paper: the paper key
    """

    cluster: PdorsCluster
    jobs: list[PdorsJob]
    constants: PdorsConstants
    oasis_constants: OasisConstants
    config: PdorsConfig
    params: dict[str, Any]
    paper: str = "pdors"

    def __post_init__(self) -> None:
        self.T = self.cluster.T
        self._true = {j.job_id: j for j in self.jobs}

    # ------------------------------------------------------------------ protocol
    def bids(self) -> Sequence[PdorsJob]:
        return list(self.jobs)

    def mechanisms(self) -> tuple[str, ...]:
        return MECHANISMS

    def mechanism(self, name: str, rng: np.random.Generator) -> OnlineMechanism:
        """``pdors``/``pdors-paper`` take their per-job rounding seed from ``rng``; FIFO/DRF/Dorm draw
        from ``rng``.

        :param name: one of :meth:`mechanisms`
        :param rng: the generator of randomised mechanisms' draws
        :returns: a fresh mechanism on this instance
        """
        check_choice("mechanism", name, MECHANISMS)
        from marketsim.market.oasis.mechanisms import make_baseline
        from marketsim.market.pdors.mechanisms import make_pdors_paper

        if name in ("pdors", "pdors-paper"):
            cfg = replace(self.config, seed=int(rng.integers(0, 2**31 - 1)))
            make = Pdors if name == "pdors" else make_pdors_paper
            return make(self.cluster, self.constants, cfg)
        if name == "oasis-pdors":
            return OasisForPdors(self.cluster, constants=self.oasis_constants)

        opts = {"time_limit": self.params.get("dorm_time_limit", 10.0)} if name == "dorm" else {}
        return make_baseline(name, self.cluster, rng, **opts)

    def dimensions(self, bid: PdorsJob) -> list[Dimension]:
        """Valuation scale/shape, size (E, K), batch F, τ, g, γ, bandwidths, demands, arrival delay.

        :param bid: a TRUE bid
        :returns: its misreportable dimensions
        """
        dims = [Dimension("value_scale", "factor", 0.25, 4.0)]
        u = bid.utility
        if isinstance(u, SigmoidUtility):
            if u.gamma2 > 0:
                dims.append(Dimension("value_decay", "factor", 0.25, 4.0))
            dims.append(Dimension("value_target", "value", u.gamma3 - 5.0, u.gamma3 + 5.0, u.gamma3))
        E, F, g = bid.epochs, bid.global_batch, bid.ratio
        dims += [
            Dimension("epochs", "value", max(1, E // 2), 2 * E, E, integer=True),
            Dimension("samples", "factor", 0.5, 2.0),
            Dimension("global_batch", "value", max(1, F // 2), 2 * F, F, over=-1, integer=True),
            Dimension("tau", "factor", 0.5, 2.0),
            Dimension("grad_mb", "factor", 0.5, 2.0),
            Dimension("ratio", "value", max(1, g - 3), g + 3, g, over=-1, integer=True),
            Dimension("bandwidth", "factor", 0.5, 2.0, over=-1),
            Dimension("worker_demand", "factor", 0.5, 2.0),
            Dimension("ps_demand", "factor", 0.5, 2.0),
            Dimension("arrival_delay", "value", 0, min(5, self.T - 1 - bid.arrival), 0, integer=True),
        ]
        return dims

    def misreport(self, bid: PdorsJob, params: Mapping[str, float]) -> PdorsJob:
        """``bid`` with the named parameters misreported (factors multiply, values replace; truthful
        parameters leave the field untouched, so the all-truthful setting returns an equal job).

        :param bid: a TRUE bid
        :param params: dimension name -> value; missing: truthful
        :returns: the report
        :raises InputError: a parameter that is not a dimension of the bid (or out of range)
        """
        known = {d.name: d for d in self.dimensions(bid)}
        for k in params:
            if k not in known:
                raise InputError("misreport parameter", k, f"is not a dimension of job {bid.job_id}: {sorted(known)}")
        ch: dict[str, Any] = {}

        def moved(name: str) -> float | None:
            if name not in params:
                return None
            v = float(params[name])
            return None if v == known[name].truth else v

        u = bid.utility
        if (v := moved("value_scale")) is not None:
            u = u.scaled(v)
        if isinstance(u, SigmoidUtility):
            if (v := moved("value_decay")) is not None:
                u = replace(u, gamma2=u.gamma2 * v)
            if (v := moved("value_target")) is not None:
                u = replace(u, gamma3=v)
        if u is not bid.utility:
            ch["utility"] = u
        for name, field in (("epochs", "epochs"), ("global_batch", "global_batch"), ("ratio", "ratio")):
            if (v := moved(name)) is not None:
                ch[field] = max(1, int(round(v)))
        if (v := moved("samples")) is not None:
            ch["samples"] = max(1, int(round(bid.samples * v)))
        for name in ("tau", "grad_mb"):
            if (v := moved(name)) is not None:
                ch[name] = getattr(bid, name) * v
        if (v := moved("bandwidth")) is not None:
            ch["bw_internal_gbps"], ch["bw_external_gbps"] = bid.bw_internal_gbps * v, bid.bw_external_gbps * v
        for name in ("worker_demand", "ps_demand"):
            if (v := moved(name)) is not None:
                ch[name] = getattr(bid, name) * v
        if (v := moved("arrival_delay")) is not None:
            ch["arrival"] = bid.arrival + int(round(v))
        return replace(bid, **ch) if ch else bid

    def realised(
        self, bid: PdorsJob, decision: Decision | None, report: PdorsJob | None = None
    ) -> tuple[bool, int | None, float]:
        """TRUE outcome (§3.6) of the slots the decision's schedule gives the job: true speed model,
        completion at the first slot covering the true workload, true utility at the true arrival.

        Decision (the spec is silent on misreported demands): units run in containers of the
        REPORTED per-unit size, so a report below the true per-unit worker or PS demand in any
        resource leaves the units unable to run and the job makes no progress (it still pays).

        :param bid: the bidder's true type
        :param decision: the mechanism's decision, or ``None``
        :param report: what it reported (its per-unit container size), or ``None``
        :returns: ``(completed, completion slot or None, TRUE utility in currency)``
        """
        if decision is None or not decision.admitted or decision.schedule is None:
            return False, None, 0.0
        if report is not None and (
            (report.worker_demand < bid.worker_demand * (1 - 1e-12)).any()
            or (report.ps_demand < bid.ps_demand * (1 - 1e-12)).any()
        ):
            return False, None, 0.0
        return pdors_realised(bid, decision.schedule, self.cluster.slot_hours)

    def true_surplus(self, bid: PdorsJob, report: PdorsJob, decision: Decision | None) -> float:
        """True utility at the realised completion (0 if the reserved/realised slots do not cover
        the true workload or the reported per-unit demands are below the true ones) minus the payment.

        :param bid: the TRUE bid
        :param report: what it reported
        :param decision: the mechanism's decision for it, or ``None``
        :returns: true utility realised minus payment, currency
        """
        _, _, util = self.realised(bid, decision, report)
        pay = 0.0 if decision is None else float(decision.payment)
        return util - pay

    def metrics(self, decisions: Sequence[Decision], reports: Sequence[PdorsJob]) -> dict[str, float]:
        """``welfare`` (true utilities realised), ``revenue``, ``utility``, ``admission_rate``,
        ``completion_rate``, ``utilisation`` (mean over resources of the used share of capacity·T),
        ``mean_jct`` (slots, completed jobs), ``median_time`` (all jobs, unfinished = T, Fig. 9) and
        ``colocated_share`` (co-located share of scheduled job-slots).

        :param decisions: the run's decisions
        :param reports: the reports the mechanism saw
        :returns: metric name -> value (TRUE types)
        """
        by_id = decisions_by_id(decisions)
        n = len(reports)
        welfare = revenue = 0.0
        admitted = completed = 0
        jct: list[float] = []
        times: list[float] = []
        C = self.cluster.capacity
        use = np.zeros(C.shape[1])
        co = slots = 0
        for rep in reports:
            true = self._true.get(int(rep.job_id), rep)
            d = by_id.get(int(rep.job_id))
            done, t_done, util = self.realised(true, d, rep)
            if d is not None:
                revenue += float(d.payment)
                admitted += bool(d.admitted)
                if d.schedule is not None:
                    for t in d.schedule.slots:
                        w, s = d.schedule.workers[t], d.schedule.ps[t]
                        use += w.sum() * rep.worker_demand + s.sum() * rep.ps_demand
                        slots += 1
                        co += int(is_colocated(w, s))
            welfare += util
            if done:
                completed += 1
                jct.append(t_done - true.arrival + 1)
                times.append(t_done - true.arrival + 1)
            else:
                times.append(float(self.T))
        total = C.sum(axis=0) * self.T
        has = total > 0
        return {
            "welfare": welfare,
            "revenue": revenue,
            "utility": welfare - revenue,
            "admission_rate": admitted / n if n else 0.0,
            "completion_rate": completed / n if n else 0.0,
            "utilisation": float(np.mean(use[has] / total[has])) if has.any() else 0.0,
            "mean_jct": float(np.mean(jct)) if jct else math.nan,
            "median_time": float(np.median(times)) if times else math.nan,
            "colocated_share": float(co / slots) if slots else math.nan,
        }

    def agents_info(self) -> list[dict[str, Any]]:
        """The machines as Mesa agents on the topology."""
        names = self.cluster.resources.names
        return [
            {
                "id": f"m{m.machine_id}",
                "kind": "gpu_server",
                "node": m.node,
                "capacity": {r: float(c) for r, c in zip(names, m.capacity, strict=True)},
            }
            for m in self.cluster.machines
        ]


def make_market(params: Mapping[str, Any], rng: np.random.Generator) -> PdorsMarket:
    """Build one PD-ORS instance from study parameters (see :data:`DEFAULTS`; unknown or invalid
    keys raise :class:`InputError` naming the key); all randomness from ``rng`` (two independent
    child streams: the jobs, and the calibration jobs for the price constants).

    :param params: study parameters (:data:`DEFAULTS`); missing keys take their defaults
    :param rng: the only source of randomness of the instance
    :returns: the market instance (bids, resources, mechanisms)
    :raises InputError: an unknown key or an invalid value, naming the key
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy Generator")
    p = _validate(params)
    job_rng, cal_rng = rng.spawn(2)
    T, H, I = p["T"], p["machines"], p["jobs"]
    if p["workload"] == "paper":
        cluster = _cluster(T, np.tile(MACHINE_CAPACITY, (H, 1)), RESOURCES, p["racks"])
        jobs = pdors_paper_jobs(job_rng, I, T, mix=MIXES[p["mix"]])
        calib = pdors_paper_jobs(cal_rng, p["calib_jobs"], T, start_id=10**6, mix=MIXES[p["mix"]])
    else:
        cl0, jobs, _ = pdors_tiny_instance(job_rng, I=I, T=T, H=H, cap=p["capacity"])
        _, calib, _ = pdors_tiny_instance(cal_rng, I=p["calib_jobs"], T=T, H=H, cap=p["capacity"])
        cluster = _cluster(T, cl0.capacity, cl0.resources, p["racks"])
    constants = estimate_pdors_constants(calib, cluster, "calibration")
    requests = [oasis_request_for(j, cluster.slot_hours) for j in calib]
    oasis_constants = estimate_constants(requests, _split_cluster(cluster))
    config = PdorsConfig(G=p["G"], dp=p["dp"], dp_units=p["dp_units"], per_slot_solver=p["per_slot_solver"])
    return PdorsMarket(cluster, jobs, constants, oasis_constants, config, p)
