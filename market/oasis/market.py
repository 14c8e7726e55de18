"""OASiS behind the :class:`~marketsim.market.auction.market.AuctionMarket` adapter (spec oasis.md §5, §3.7, §7 C-O6).

:func:`make_market` builds one instance of the paper's simulation setup from study parameters: a
cluster of ``H`` worker (GPU) hosts and ``K`` PS hosts, ``jobs`` PS training jobs from the §5
generator, and OASiS' price constants U, L **fixed before the auction** from calibration jobs of
the same generator (an independent child stream: the workload's declared distribution, never a
bidder's report), or from the run's true job set with ``constants = "oracle"`` (non-strategic runs
only: misreports are then refused).

Bids are :class:`~marketsim.market.oasis.model.OasisJob` true types. A bidder may misreport (C-O6) its
utility (``value_scale`` × γ1, ``gamma2``, ``gamma3``), workload (``epochs``, ``chunks``,
``minibatches``), speed (``tau``, ``grad_mb``), demands (``worker_demand``, ``ps_demand`` scale
the non-bandwidth entries, ``worker_bw``, ``ps_bw``) and arrival (``arrival_delay`` 0..5 slots,
later only). Its TRUE surplus runs the schedule it received with its true type
(:func:`~marketsim.market.oasis.mechanism.realised_outcome` with reservations enforced): true utility at the
realised true completion (0 if the reservation cannot finish the true work) minus the payment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from marketsim.market import registry
from marketsim.market.auction.base import Decision, OnlineMechanism
from marketsim.market.auction.market import decisions_by_id
from marketsim.market.audit.target import Dimension
from marketsim.market.errors import InputError, check_choice, check_finite, check_int, check_positive
from marketsim.market.oasis.constants import OasisConstants, estimate_constants
from marketsim.market.oasis.generators import oasis_paper_cluster, oasis_paper_jobs
from marketsim.market.oasis.mechanism import realised_outcome
from marketsim.market.oasis.model import OasisCluster, OasisJob, OasisRequest
from marketsim.market.utility import SigmoidUtility

__all__ = ["AUDIT_PARAMS", "DEFAULTS", "MECHANISMS", "OasisMarket", "make_market", "job_class"]

MECHANISMS = ("oasis", "fifo", "drf", "dorm", "rrh")

#: Study parameters of :func:`make_market` and their defaults (spec §5; paper scale).
DEFAULTS: dict[str, Any] = {
    "jobs": 100,  # number of jobs I
    "T": 100,  # slots
    "H": 50,  # worker (GPU) hosts
    "K": 50,  # PS hosts
    "epochs_min": 50,  # E_i ~ U{min..max}
    "epochs_max": 200,
    "chunks_min": 50,  # N_i ~ U{min..max} (also the max number of concurrent workers)
    "chunks_max": 100,
    "minibatches_min": 10,  # M_i ~ U{min..max}
    "minibatches_max": 100,
    "gamma1_min": 1.0,  # priority γ1 ~ U[min, max]
    "gamma1_max": 100.0,
    "gamma3_min": 1.0,  # target elapsed slots γ3 ~ U[min, max]
    "gamma3_max": 15.0,
    "frac_insensitive": 0.10,  # class weights (γ2 = 0, U[0.01, 1], U[4, 6])
    "frac_sensitive": 0.55,
    "frac_critical": 0.35,
    "demand_scale": 1.0,  # multiplies the non-bandwidth worker/PS demands
    "constants": "calibration",  # "calibration" (independent jobs) | "oracle" (the run's true jobs)
    "n_calib": 1000,
    "ul_scale": 1.0,  # multiplies both U and L (Fig. "estimated U and L")
    "u_scale": 1.0,
    "l_scale": 1.0,
    "dorm_time_limit": 10.0,  # seconds per Dorm MILP
}

#: A small instance (6 jobs, 10 slots, 2 + 2 hosts, light workloads) for audits and claims.
AUDIT_PARAMS: dict[str, Any] = {
    "jobs": 6,
    "T": 10,
    "H": 2,
    "K": 2,
    "epochs_min": 10,
    "epochs_max": 30,
    "chunks_min": 4,
    "chunks_max": 8,
    "minibatches_min": 50,
    "minibatches_max": 100,
    "n_calib": 200,
}

_INTS = {"jobs": 1, "T": 1, "H": 1, "K": 1, "n_calib": 1}
_INT_RANGES = ("epochs", "chunks", "minibatches")
_POSITIVE = ("demand_scale", "ul_scale", "u_scale", "l_scale", "dorm_time_limit", "gamma1_min")
_FRACS = ("frac_insensitive", "frac_sensitive", "frac_critical")


def _validate(params: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(params, Mapping):
        raise InputError("params", params, "must be a mapping of study parameters")
    for key in params:
        if key not in DEFAULTS:
            raise InputError(str(key), params[key], f"is not an OASiS market parameter; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    for key, lo in _INTS.items():
        p[key] = check_int(key, p[key], minimum=lo)
    for base in _INT_RANGES:
        lo = check_int(f"{base}_min", p[f"{base}_min"], minimum=1)
        hi = check_int(f"{base}_max", p[f"{base}_max"], minimum=1)
        if hi < lo:
            raise InputError(f"{base}_max", hi, f"must be >= {base}_min = {lo}")
        p[f"{base}_min"], p[f"{base}_max"] = lo, hi
    for key in ("gamma1_min", "gamma1_max", "gamma3_min", "gamma3_max", *_FRACS, *_POSITIVE):
        if isinstance(p[key], bool) or not isinstance(p[key], (int, float, np.integer, np.floating)):
            raise InputError(key, p[key], "must be a number")
        p[key] = check_finite(key, float(p[key]))
    for key in _POSITIVE:
        check_positive(key, p[key])
    for g in ("gamma1", "gamma3"):
        if p[f"{g}_max"] < p[f"{g}_min"]:
            raise InputError(f"{g}_max", p[f"{g}_max"], f"must be >= {g}_min = {p[f'{g}_min']}")
    for key in _FRACS:
        if p[key] < 0:
            raise InputError(key, p[key], "must be >= 0")
    if sum(p[k] for k in _FRACS) <= 0:
        raise InputError("frac_insensitive", p["frac_insensitive"], "class weights must not all be 0")
    check_choice("constants", p["constants"], ("calibration", "oracle"))
    return p


def make_market(params: Mapping[str, Any], rng: np.random.Generator) -> OasisMarket:
    """One OASiS instance from study parameters (keys and defaults: :data:`DEFAULTS`; unknown or
    invalid keys raise :class:`InputError` naming the key). Cluster, jobs and calibration jobs come
    from three child streams of ``rng``.

    :param params: study parameters (:data:`DEFAULTS`); missing keys take their defaults
    :param rng: the only source of randomness of the instance
    :returns: the market instance (bids, resources, mechanisms)
    :raises InputError: an unknown key or an invalid value, naming the key
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy Generator (explicit seeding)")
    p = _validate(params)
    cl_rng, job_rng, cal_rng = rng.spawn(3)
    cluster = oasis_paper_cluster(cl_rng, p["T"], p["H"], p["K"])
    gen = {
        "epochs": (p["epochs_min"], p["epochs_max"]),
        "chunks": (p["chunks_min"], p["chunks_max"]),
        "minibatches": (p["minibatches_min"], p["minibatches_max"]),
        "gamma1": (p["gamma1_min"], p["gamma1_max"]),
        "gamma3": (p["gamma3_min"], p["gamma3_max"]),
        "mix": tuple(p[k] for k in _FRACS),
        "demand_scale": p["demand_scale"],
    }
    jobs = oasis_paper_jobs(job_rng, p["jobs"], p["T"], **gen)
    if p["constants"] == "oracle":
        calib = [j.to_request(cluster) for j in jobs]
    else:
        calib = [j.to_request(cluster) for j in oasis_paper_jobs(cal_rng, p["n_calib"], p["T"], 10**6, **gen)]
    consts = estimate_constants(
        calib,
        cluster,
        p["constants"],
        u_scale=p["ul_scale"] * p["u_scale"],
        l_scale=p["ul_scale"] * p["l_scale"],
    )
    return OasisMarket(cluster, jobs, consts, dorm_time_limit=p["dorm_time_limit"])


def job_class(f: Any) -> str:
    """``"insensitive"`` (γ2 = 0), ``"sensitive"`` (0 < γ2 < 2) or ``"critical"`` (γ2 >= 2): the
    generator's classes are γ2 = 0, U[0.01, 1] and U[4, 6]; other utilities are ``"other"``.

    :param f: a job's utility function
    :returns: the class name
    """
    if not isinstance(f, SigmoidUtility):
        return "other"
    if f.gamma2 == 0:
        return "insensitive"
    return "sensitive" if f.gamma2 < 2.0 else "critical"


class OasisMarket:
    """An OASiS auction instance: ``cluster``, true ``jobs`` (bids), fixed ``constants``.

    :param cluster: the cluster
    :param jobs: the bidders' true types (unique ids)
    :param constants: the price constants, fixed for every run
    :param dorm_time_limit: seconds per Dorm MILP solve (> 0)
    :raises InputError: arguments of the wrong type, duplicate job ids
    """

    paper = "oasis"

    def __init__(
        self,
        cluster: OasisCluster,
        jobs: Sequence[OasisJob],
        constants: OasisConstants,
        *,
        dorm_time_limit: float = 10.0,
    ) -> None:
        if not isinstance(cluster, OasisCluster):
            raise InputError("cluster", cluster, "must be an OasisCluster")
        if not isinstance(constants, OasisConstants):
            raise InputError("constants", constants, "must be OasisConstants")
        jobs = tuple(jobs)
        for j in jobs:
            if not isinstance(j, OasisJob):
                raise InputError("jobs", j, "must be OasisJob true types")
        ids = [int(j.job_id) for j in jobs]
        if len(set(ids)) != len(ids):
            raise InputError("jobs.job_id", ids, "must be unique")
        self.cluster = cluster
        self.T = cluster.T
        self.constants = constants
        self.dorm_time_limit = check_positive("dorm_time_limit", dorm_time_limit)
        self._jobs = jobs
        self._byid = {int(j.job_id): j for j in jobs}
        self._true = {int(j.job_id): j.to_request(cluster) for j in jobs}
        for r in self._true.values():
            r.validate_for(cluster.T, cluster.resources.R)
        self._bw = cluster.resources.index("bw")

    # -- the AuctionMarket protocol ------------------------------------------------------------
    def bids(self) -> tuple[OasisJob, ...]:
        return self._jobs

    def mechanisms(self) -> tuple[str, ...]:
        return MECHANISMS

    def mechanism(self, name: str, rng: np.random.Generator) -> OnlineMechanism:
        """A fresh instance of the registered auction ``name`` on this market.

        :param name: ``oasis`` or a baseline of the market
        :param rng: the baselines' randomness
        :returns: the online mechanism
        """
        check_choice("mechanism", name, MECHANISMS)
        fn = registry.get(name, "auction").fn
        if name == "oasis":
            return fn(self.cluster, self.constants)
        opts = {"time_limit": self.dorm_time_limit} if name == "dorm" else {}
        return fn(self.cluster, rng=rng, **opts)

    def _strategic_ok(self) -> None:
        if self.constants.source == "oracle":
            raise InputError(
                "constants", "oracle", "are computed from the true jobs and forbidden when any bidder may misreport"
            )

    def dimensions(self, bid: OasisJob) -> list[Dimension]:
        """C-O6 misreports of ``bid`` (factors in [1/4, 4] unless noted).

        :param bid: a TRUE bid
        :returns: its misreportable dimensions
        """
        self._strategic_ok()
        f = bid.utility
        dims = [Dimension("value_scale")]
        if isinstance(f, SigmoidUtility):
            dims.append(
                Dimension("gamma2") if f.gamma2 > 0 else Dimension("gamma2", "value", 0.0, 1.0, truth=0.0)
            )  # γ2 = 0 (insensitive): only a positive decay can be claimed
            dims.append(
                Dimension("gamma3")
                if f.gamma3 > 0
                else Dimension("gamma3", "value", f.gamma3 - 5.0, f.gamma3 + 5.0, truth=f.gamma3)
            )
        for name in ("epochs", "chunks", "minibatches"):
            v = int(getattr(bid, name))
            dims.append(Dimension(name, "value", max(1, math.ceil(v / 4)), 4 * v, truth=v, integer=True))
        for name in ("tau", "grad_mb", "worker_demand", "ps_demand", "worker_bw", "ps_bw"):
            dims.append(Dimension(name))
        room = min(5, self.T - 1 - int(bid.arrival))
        dims.append(Dimension("arrival_delay", "value", 0, room, truth=0, integer=True))
        return dims

    def misreport(self, bid: OasisJob, params: Mapping[str, float]) -> OasisJob:
        """``bid`` reported with ``params`` (``{dimension: value}``; missing = truthful). A truthful
        parameter leaves its field untouched, so all-truthful params return ``bid`` itself. A delay
        past the horizon arrives in the last slot.

        :param bid: a TRUE bid
        :param params: dimension name -> value; missing: truthful
        :returns: the report
        :raises InputError: a parameter that is not a dimension of the bid (or out of range)
        """
        dims = {d.name: d for d in self.dimensions(bid)}
        changed: dict[str, float] = {}
        for name, value in params.items():
            if name not in dims:
                raise InputError("dimension", name, f"is not a reportable OASiS dimension; known: {list(dims)}")
            v = check_finite(f"params[{name}]", value)
            if dims[name].integer:
                v = float(round(v))
            if v != dims[name].truth:
                changed[name] = v
        if not changed:
            return bid
        f = bid.utility
        if "value_scale" in changed:
            f = f.scaled(check_positive("params[value_scale]", changed["value_scale"]))
        for g in ("gamma2", "gamma3"):
            if g in changed:
                factor = dims[g].kind == "factor"
                new = getattr(f, g) * changed[g] if factor else changed[g]
                f = replace(f, **{g: float(new)})
        fields: dict[str, Any] = {"utility": f} if f is not bid.utility else {}
        for name in ("epochs", "chunks", "minibatches"):
            if name in changed:
                fields[name] = check_int(f"params[{name}]", changed[name], minimum=1)
        for name in ("tau", "grad_mb"):
            if name in changed:
                fields[name] = getattr(bid, name) * check_positive(f"params[{name}]", changed[name])
        w, s = bid.worker_demand.copy(), bid.ps_demand.copy()
        b, B = bid.worker_bw, bid.ps_bw
        keep = np.ones(w.size, dtype=bool)
        if self._bw is not None:
            keep[self._bw] = False
        if "worker_demand" in changed:
            w[keep] *= check_positive("params[worker_demand]", changed["worker_demand"])
        if "ps_demand" in changed:
            s[keep] *= check_positive("params[ps_demand]", changed["ps_demand"])
        if "worker_bw" in changed:
            b = b * check_positive("params[worker_bw]", changed["worker_bw"])
        if "ps_bw" in changed:
            B = B * check_positive("params[ps_bw]", changed["ps_bw"])
        B = max(B, b)  # a report needs B >= b (else #PS > #workers); the clip is part of the report
        if self._bw is not None:
            w[self._bw], s[self._bw] = b, B
        if {"worker_demand", "ps_demand", "worker_bw", "ps_bw"} & changed.keys():
            fields.update(worker_demand=w, ps_demand=s, worker_bw=b, ps_bw=B)
        if "arrival_delay" in changed:
            delay = check_int("params[arrival_delay]", changed["arrival_delay"], minimum=0)
            fields["arrival"] = min(bid.arrival + delay, self.T - 1)  # a bid cannot arrive after the horizon
        return replace(bid, **fields)

    def true_request(self, job_id: int) -> OasisRequest:
        """The request (W, N, demands, utility) of bidder ``job_id``'s TRUE type.

        :param job_id: the bidder
        :returns: its true request
        """
        return self._true[int(job_id)]

    def _request(self, report: OasisJob) -> OasisRequest:
        jid = int(report.job_id)
        return self._true[jid] if report is self._byid.get(jid) else report.to_request(self.cluster)

    def realised(self, bid: OasisJob, report: OasisJob, decision: Decision | None):
        """Realised outcome (completed?, completion slot, TRUE utility) of ``decision`` for the
        bidder with truth ``bid`` that reported ``report``.

        :param bid: the bidder's true type
        :param report: what it reported
        :param decision: the mechanism's decision, or ``None``
        :returns: the realised outcome
        """
        sched = None if decision is None or not decision.admitted else decision.schedule
        return realised_outcome(self._true[int(bid.job_id)], sched, self._request(report))

    def true_surplus(self, bid: OasisJob, report: OasisJob, decision: Decision | None) -> float:
        """True utility at the realised true completion (0 if the reserved schedule cannot finish
        the TRUE work) minus the payment; 0 for no decision.

        :param bid: the TRUE bid
        :param report: what it reported
        :param decision: the mechanism's decision for it, or ``None``
        :returns: true utility realised minus payment, currency
        """
        if decision is None:
            return 0.0
        return float(self.realised(bid, report, decision).utility - decision.payment)

    def metrics(self, decisions: Sequence[Decision], reports: Sequence[OasisJob]) -> dict[str, float]:
        """Run metrics with TRUE types (§5 "Metrics"): ``welfare`` (Σ true utility realised),
        ``revenue`` (Σ payments), ``utility`` (welfare − revenue), ``admission_rate``,
        ``completion_rate``, ``utilisation`` (reserved fraction of capacity-slots, mean over
        resources), ``utilisation_max`` (that of the most used resource), ``mean_jct`` (true
        elapsed slots of completed jobs), ``lateness_sensitive`` / ``lateness_critical`` (mean
        true elapsed − γ3 of completed jobs of that class) and their standard deviations
        ``lateness_sd_*``, ``unfinished`` (jobs not completed).

        :param decisions: the run's decisions
        :param reports: the reports the mechanism saw
        :returns: metric name -> value (TRUE types)
        :raises InputError: a decision for a job that is not a bidder of the instance
        """
        byid = decisions_by_id(decisions)
        reps = {int(r.job_id): r for r in reports}
        bids = self._byid
        for jid in byid:
            if jid not in bids:
                raise InputError("decisions.job_id", jid, "is not a bidder of this instance")
        cl = self.cluster
        cap = cl.T * (cl.worker_capacity.sum(axis=0) + cl.ps_capacity.sum(axis=0))
        used = np.zeros(cl.resources.R)
        welfare = revenue = 0.0
        admitted = 0
        elapsed: list[float] = []
        late: dict[str, list[float]] = {"sensitive": [], "critical": []}
        for jid, bid in bids.items():
            d = byid.get(jid)
            if d is None:
                continue
            rep = reps.get(jid, bid)
            revenue += float(d.payment)
            if not d.admitted:
                continue
            admitted += 1
            if d.schedule is not None:
                for t in d.schedule.slots:
                    used += d.schedule.total_workers(t) * rep.worker_demand + d.schedule.total_ps(t) * rep.ps_demand
            out = self.realised(bid, rep, d)
            welfare += out.utility
            if out.completed:
                el = float(out.completion - bid.arrival + 1)
                elapsed.append(el)
                cls = job_class(bid.utility)
                if cls in late:
                    late[cls].append(el - bid.utility.gamma3)
        n = len(bids)
        frac = used[cap > 0] / cap[cap > 0]
        out = {
            "welfare": welfare,
            "revenue": revenue,
            "utility": welfare - revenue,
            "admission_rate": admitted / n if n else math.nan,
            "completion_rate": len(elapsed) / n if n else math.nan,
            "utilisation": float(np.mean(frac)) if frac.size else math.nan,
            "utilisation_max": float(np.max(frac)) if frac.size else math.nan,
            "mean_jct": float(np.mean(elapsed)) if elapsed else math.nan,
            "unfinished": float(n - len(elapsed)),
        }
        for cls, v in late.items():
            out[f"lateness_{cls}"] = float(np.mean(v)) if v else math.nan
            out[f"lateness_sd_{cls}"] = float(np.std(v)) if v else math.nan
        return out

    # -- optional extras -----------------------------------------------------------------------
    def agents_info(self) -> list[dict[str, Any]]:
        """Worker GPU hosts (``gpu_server``) and PS hosts (``ps_host``) with capacity per resource."""
        names = self.cluster.resources.names
        out = []
        for kind, prefix, servers in (
            ("gpu_server", "worker", self.cluster.worker_servers),
            ("ps_host", "ps", self.cluster.ps_servers),
        ):
            for srv in servers:
                out.append(
                    {
                        "id": f"{prefix}{srv.server_id}",
                        "kind": kind,
                        "node": srv.node,
                        "capacity": {r: float(c) for r, c in zip(names, srv.capacity, strict=True)},
                    }
                )
        return out
