"""Eris behind the :class:`~marketsim.market.auction.market.AuctionMarket` adapter (spec §5): one instance of
the edge-site auction (sites, network, price constants, true jobs) for the generic Mesa model,
the audit (:class:`~marketsim.market.audit.online.OnlineAuctionTarget`) and the reproduction studies.

``make_market(params, rng)`` builds the simulator scenario of §5.3 (``scenario="testbed"``: §5.2)
in either bandwidth mode (``mode="global"``, the paper's per-slot budget B; ``mode="topology"``,
the framework's per-link extension on the §5.4 Watts-Strogatz graph). Jobs and graph come from two
child generators of ``rng``, so the two modes of one seed share the same workload.

Slots: Eris numbers slots ``1..T``; the generic runner steps slots ``0..T`` (``market.T = T + 1``)
and slot 0 never holds an arrival. A bidder's TRUE surplus follows the consequence model of spec
§7 C3 (:func:`~marketsim.market.eris.mechanism.realised_value`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from marketsim.market.auction.base import Decision, OnlineMechanism
from marketsim.market.audit.target import Dimension
from marketsim.market.eris.baselines import AntManMechanism, LiquidMechanism, TiresiasMechanism
from marketsim.market.eris.mechanism import ErisAuction, ErisDecision, realised_value
from marketsim.market.eris.types import RESOURCES, ErisConfig, ErisJob, ErisSites, NetworkSpec
from marketsim.market.eris.workload import generate_jobs, watts_strogatz_sites
from marketsim.market.errors import InputError, check_choice, check_finite, check_int, check_positive
from marketsim.market.utility import SigmoidUtility, TabularUtility, Utility

__all__ = ["ErisMarket", "make_market", "PARAMS", "MECHANISMS", "ScaledUtility"]

MECHANISMS: tuple[str, ...] = ("eris", "tiresias", "antman", "liquid")

# scenario presets (spec §5.2 testbed, §5.3 simulator); every other key defaults as below
_PRESETS: dict[str, dict[str, Any]] = {
    "simulator": {"R": 50, "I": 100, "T": 150, "capacity": (4.0, 24.0, 32.0), "arrival_window": None},
    "testbed": {"R": 9, "I": 10, "T": 50, "capacity": (1.0, 12.0, 16.0), "arrival_window": 40},
}

#: accepted study keys and their meaning (units)
PARAMS: dict[str, str] = {
    "scenario": "'simulator' (spec §5.3, default) or 'testbed' (§5.2): preset of R, I, T, capacity, arrival_window",
    "R": "number of edge sites",
    "I": "number of jobs",
    "T": "horizon (slots of 20 min)",
    "gamma": "price base of every resource and of transmission (gamma_d = gamma_k, Fig. 11)",
    "gamma_d": "transmission price base (overrides gamma)",
    "gamma_k": "resource price base (overrides gamma)",
    "mode": "'global' (paper: one per-slot budget B) or 'topology' (per-link budgets on a graph)",
    "budget_mb": "B, MB per slot (global mode)",
    "theta_mb": "chunk size, MB",
    "capacity": "per-site capacity [gpu, cpu cores, ram GB]",
    "arrival_window": "arrivals U{1..arrival_window} (default T)",
    "data_sites": "[lo, hi]: each job's data sits on U{lo..min(R, hi)} sites",
    "calib_workers": "workers of the P calibration (P = ceil(E D / (workers S0)))",
    "calib_slots": "[lo, hi] of S0 in the P calibration (slots)",
    "ps_gpu_choices": "PS GPU demand choices (D26)",
    "repair_sources": "exact per-site sources (D5)",
    "overflow_moves": "D21 extension: move excess chunks even when Omega >= 0",
    "ps_rule": "'max_workers' (paper) or 'min_cost' (D23)",
    "ws_k": "topology mode: Watts-Strogatz degree",
    "ws_p": "topology mode: Watts-Strogatz rewiring probability",
    "latency_ms": "topology mode: [lo, hi] of the per-link latency (ms)",
    "bandwidth_mbps": "topology mode: per-link bandwidth choices (Mbit/s)",
    "max_path_latency_ms": "topology mode: pairs farther apart cannot exchange data (None = no filter)",
    "global_budget_mb": "topology mode: additionally enforce a global per-slot budget (MB)",
    "antman_rule": "AntMan RG rule: 'tau_threshold' (default) or 'bernoulli' (draws from the run's rng)",
    "antman_tau": "AntMan RG threshold on tau",
    "liquid_lambda": "Liquid's network/plan weight lambda_L in [0, 1]",
    "baseline_slots": "S_ref of the baselines' worker estimate n_i = ceil(E D / (P S_ref)) (spec §4.0: 8; "
    "1 = as many workers as finish the job in one slot, the JCT-minimising size)",
}


@dataclasses.dataclass(frozen=True)
class ScaledUtility:
    """``factor * base(d)``: a value-scale misreport of an arbitrary utility function.

    :param base: the utility of the duration (slots)
    :param factor: the scale
    """

    base: Utility
    factor: float

    def __call__(self, d: float | np.ndarray) -> float | np.ndarray:
        return self.factor * self.base(d)


def _scaled(u: Utility, f: float) -> Utility:
    if isinstance(u, SigmoidUtility):
        return u.scaled(f)
    if isinstance(u, TabularUtility):
        return TabularUtility(tuple(f * v for v in u.values))
    return ScaledUtility(u, f)


class ErisMarket:
    """One Eris instance: ``sites``, ``network``, ``config`` and the true ``jobs``; see the module doc.

    :param sites: the edge sites
    :param network: the network
    :param config: the configuration
    :param jobs: the bidders' true types (unique ids)
    :param baseline_options: keyword arguments of the baselines
    :raises InputError: duplicate job ids, a job that does not fit the market, a bad network
    """

    paper = "eris"

    def __init__(
        self,
        sites: ErisSites,
        network: NetworkSpec,
        config: ErisConfig,
        jobs: Sequence[ErisJob],
        *,
        baseline_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.sites = sites
        self.network = network
        self.config = config
        self.jobs = tuple(jobs)
        self.T = config.horizon + 1  # generic slots 0..T (Eris slots 1..T; slot 0 never has an arrival)
        ids = [j.job_id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise InputError("jobs.job_id", ids, "must be unique")
        for j in self.jobs:
            j.check_against(sites, config)
        self._by_id = {j.job_id: j for j in self.jobs}
        self.baseline_options = dict(baseline_options or {})
        ErisAuction(sites, network, config)  # validates the network (connected topology, links) now

    # --- the AuctionMarket protocol -----------------------------------------------------------
    def bids(self) -> Sequence[ErisJob]:
        return self.jobs

    def mechanisms(self) -> tuple[str, ...]:
        return MECHANISMS

    def mechanism(self, name: str, rng: np.random.Generator) -> OnlineMechanism:
        """A fresh ``eris`` auction or baseline on this instance (AntMan's Bernoulli rule draws from ``rng``).

        :param name: one of :meth:`mechanisms`
        :param rng: the generator of randomised mechanisms' draws
        :returns: a fresh mechanism on this instance
        """
        check_choice("mechanism", name, MECHANISMS)
        args = (self.sites, self.network, self.config)
        opt = self.baseline_options
        if name == "eris":
            return ErisAuction(*args)
        size = {"target_slots": opt.get("baseline_slots", 8)}
        if name == "tiresias":
            return TiresiasMechanism(*args, **size)
        if name == "antman":
            rule, tau = opt.get("antman_rule", "tau_threshold"), opt.get("antman_tau", 1.5)
            return AntManMechanism(*args, rg_rule=rule, tau_threshold=tau, rng=rng, **size)
        return LiquidMechanism(*args, lambda_L=opt.get("liquid_lambda", 0.5), **size)

    def dimensions(self, bid: ErisJob) -> list[Dimension]:
        """Reportable parameters (spec §7 C3): utility scale (and the sigmoid's decay constant), data
        size (factor on every D^r), epochs, worker and PS demand (factors), arrival delay (later only).

        :param bid: a TRUE bid
        :returns: its misreportable dimensions
        """
        E = int(bid.epochs)
        dims = [Dimension("value_scale", "factor", 0.1, 10.0)]
        if isinstance(bid.utility, SigmoidUtility) and bid.utility.gamma2 > 0:
            dims.append(Dimension("decay", "factor", 1.0 / 3.0, 2.0))
        dims += [
            Dimension("data_scale", "factor", 0.5, 2.0),
            Dimension("epochs", "value", max(1, E - 10), E + 10, E, integer=True),
            Dimension("worker_scale", "factor", 0.5, 2.0),
        ]
        if (np.asarray(bid.ps_demand) > 0).any():
            dims.append(Dimension("ps_scale", "factor", 0.5, 2.0))
        late = min(5, self.config.horizon - int(bid.arrival))
        if late > 0:
            dims.append(Dimension("arrival_delay", "value", 0, late, 0, integer=True))
        return dims

    def misreport(self, bid: ErisJob, params: Mapping[str, float]) -> ErisJob:
        """``bid`` reported with ``params``; truthful values keep the field's object unchanged. A delayed
        arrival is capped at the horizon T (no report after the last slot).

        :param bid: a TRUE bid
        :param params: dimension name -> value; missing: truthful
        :returns: the report
        :raises InputError: a parameter that is not a dimension of the bid (or out of range)
        """
        known = {d.name: d for d in self.dimensions(bid)}
        for k in params:
            if k not in known:
                raise InputError("misreport parameter", k, f"is not a dimension of job {bid.job_id}: {sorted(known)}")
        p = {k: float(v) for k, v in params.items() if float(v) != known[k].truth}
        if not p:
            return bid
        u = bid.utility
        if "decay" in p:
            u = dataclasses.replace(u, gamma2=u.gamma2 / p["decay"])
        if "value_scale" in p:
            u = _scaled(u, p["value_scale"])
        data = dict(bid.data)
        if "data_scale" in p:
            data = {k: max(0, round(v * p["data_scale"])) for k, v in bid.data.items()}
            if sum(data.values()) == 0:
                data[max(bid.data, key=lambda k: bid.data[k])] = 1
        return dataclasses.replace(
            bid,
            utility=u,
            data=data,
            arrival=min(int(bid.arrival) + int(round(p.get("arrival_delay", 0))), self.config.horizon),
            epochs=int(round(p.get("epochs", bid.epochs))),
            worker_demand=np.asarray(bid.worker_demand) * p.get("worker_scale", 1.0),
            ps_demand=np.asarray(bid.ps_demand) * p.get("ps_scale", 1.0),
        )

    def true_surplus(self, bid: ErisJob, report: ErisJob, decision: Decision | None) -> float:
        """Realised TRUE value (consequence model, value from the true arrival) minus the payment.

        :param bid: the TRUE bid
        :param report: what it reported
        :param decision: the mechanism's decision for it, or ``None``
        :returns: true utility realised minus payment, currency
        :raises InputError: a decision that is not one of this market's
        """
        if decision is None or not decision.admitted:
            return 0.0
        if not isinstance(decision, ErisDecision):
            raise InputError("decision", type(decision).__name__, "must be an ErisDecision of this market")
        return realised_value(decision, bid, report, self.config) - float(decision.payment)

    def metrics(self, decisions: Sequence[Decision], reports: Sequence[ErisJob]) -> dict[str, float]:
        """TRUE welfare (realised values of admitted jobs), revenue, utility, admission rate, mean
        utilisation of the resource-slots (all executed slot plans, per type then averaged),
        mean JCT ``c - a_true + 1`` (slots, admitted), and moved data / link volume (MB, all plans).

        :param decisions: the run's decisions
        :param reports: the reports the mechanism saw
        :returns: metric name -> value (TRUE types)
        """
        rep = {int(r.job_id): r for r in reports}
        cfg = self.config
        welfare = revenue = 0.0
        admitted = 0
        jct: list[float] = []
        used = np.zeros(self.sites.K)
        moved = volume = 0.0
        for d in decisions:
            truth = self._by_id[int(d.job_id)]
            plan = getattr(d, "plan", None)
            if plan is not None:
                for p in plan.slots:
                    used += np.asarray(p.usage).sum(axis=0)
                    moved += cfg.theta_mb * sum(p.moves.values())
                    volume += float(np.sum(p.link_volume))
            if not d.admitted:
                continue
            admitted += 1
            welfare += realised_value(d, truth, rep.get(int(d.job_id), truth), cfg)
            revenue += float(d.payment)
            jct.append(float(d.completion - truth.arrival + 1))
        cap = self.sites.capacity.sum(axis=0) * cfg.horizon
        util = used[cap > 0] / cap[cap > 0]
        n = max(len(reports), 1)
        out = {
            "welfare": welfare,
            "revenue": revenue,
            "utility": welfare - revenue,
            "admission_rate": admitted / n,
            "accepted": float(admitted),
            "utilisation": float(util.mean()) if util.size else 0.0,
            "mean_jct": float(np.mean(jct)) if jct else float("nan"),
            "data_moved_mb": moved,
            "link_volume_mb": volume,
        }
        for k, name in enumerate(self.sites.resources):
            if cap[k] > 0:
                out[f"utilisation_{name}"] = float(used[k] / cap[k])
        return out

    # --- optional extras ----------------------------------------------------------------------
    @property
    def graph(self) -> Any:
        """The topology (networkx graph on the site ids) in topology mode, else ``None``."""
        return self.network.graph if self.network.mode == "topology" else None

    def agents_info(self) -> list[dict[str, Any]]:
        """The edge sites (kind ``edge_site``) with their graph node (topology mode) and capacities."""
        topo = self.graph is not None
        return [
            {
                "id": f"site-{sid}",
                "kind": "edge_site",
                "node": sid if topo else None,
                "capacity": {k: float(c) for k, c in zip(self.sites.resources, self.sites.capacity[r], strict=True)},
            }
            for r, sid in enumerate(self.sites.ids)
        ]


# --- the study builder ------------------------------------------------------------------------
def _pair(key: str, v: Any, cast: type, minimum: float) -> tuple:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise InputError(key, v, "must be a pair [lo, hi]")
    lo, hi = (check_int(key, x) if cast is int else check_finite(key, x) for x in v)
    if lo < minimum or hi < lo:
        raise InputError(key, v, f"must satisfy {minimum} <= lo <= hi")
    return lo, hi


def _gamma(key: str, v: Any) -> float:
    g = check_finite(key, v)
    if g <= 1:
        raise InputError(key, v, "must be > 1 (price base)")
    return g


def _prob(key: str, v: Any) -> float:
    x = check_finite(key, v)
    if not 0 <= x <= 1:
        raise InputError(key, v, "must be in [0, 1]")
    return x


def _bool(key: str, v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise InputError(key, v, "must be true or false")
    return bool(v)


def make_market(params: Mapping[str, Any], rng: np.random.Generator) -> ErisMarket:
    """Build one Eris instance from study parameters (keys: :data:`PARAMS`; unknown or invalid keys
    raise :class:`InputError` naming the key and value). All randomness comes from ``rng``.

    :param params: study parameters (:data:`PARAMS`); missing keys take their defaults
    :param rng: the only source of randomness of the instance
    :returns: the market instance (bids, resources, mechanisms)
    :raises InputError: an unknown key or an invalid value, naming the key
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy.random.Generator")
    if not isinstance(params, Mapping):
        raise InputError("params", params, "must be a mapping of study keys")
    for k in params:
        if k not in PARAMS:
            raise InputError(k, params[k], f"is not an Eris study key; known: {sorted(PARAMS)}")
    scen = check_choice("scenario", params.get("scenario", "simulator"), tuple(_PRESETS))
    q = {**_PRESETS[scen], **{k: v for k, v in params.items() if k != "scenario"}}
    R = check_int("R", q["R"], minimum=1)
    I = check_int("I", q["I"], minimum=1)
    T = check_int("T", q["T"], minimum=1)
    gamma = _gamma("gamma", q.get("gamma", 1000.0))
    gamma_d = _gamma("gamma_d", q.get("gamma_d", gamma))
    gamma_k = _gamma("gamma_k", q.get("gamma_k", gamma))
    mode = check_choice("mode", q.get("mode", "global"), ("global", "topology"))
    cap = q["capacity"]
    if not isinstance(cap, (list, tuple)) or len(cap) != len(RESOURCES):
        raise InputError("capacity", cap, f"must list {len(RESOURCES)} numbers {list(RESOURCES)}")
    cap = [check_finite("capacity", c) for c in cap]
    if min(cap) < 0:
        raise InputError("capacity", q["capacity"], "every per-site capacity must be >= 0")
    window = q.get("arrival_window")
    window = T if window is None else check_int("arrival_window", window, minimum=1)
    if window > T:
        raise InputError("arrival_window", window, f"must be <= T = {T}")
    data_sites = _pair("data_sites", q.get("data_sites", (2, 6)), int, 1)
    calib_slots = _pair("calib_slots", q.get("calib_slots", (6, 12)), int, 1)
    calib_workers = check_int("calib_workers", q.get("calib_workers", 4), minimum=1)
    psg = q.get("ps_gpu_choices", (0,))
    if not isinstance(psg, (list, tuple)) or not psg:
        raise InputError("ps_gpu_choices", psg, "must be a non-empty list of integers >= 0")
    psg = tuple(check_int("ps_gpu_choices", x, minimum=0) for x in psg)
    cfg = ErisConfig(
        horizon=T,
        gamma_d=gamma_d,
        gamma_k=gamma_k,
        theta_mb=check_positive("theta_mb", q.get("theta_mb", 2.0)),
        repair_sources=_bool("repair_sources", q.get("repair_sources", True)),
        overflow_moves=_bool("overflow_moves", q.get("overflow_moves", False)),
        ps_rule=check_choice("ps_rule", q.get("ps_rule", "max_workers"), ("max_workers", "min_cost")),
    )
    sites = ErisSites(tuple(range(1, R + 1)), np.tile(np.array(cap, float), (R, 1)), RESOURCES)
    budget = check_positive("budget_mb", q.get("budget_mb", 20480.0))
    jobs_rng, net_rng = rng.spawn(2)
    if mode == "topology":
        bw = q.get("bandwidth_mbps", (10.0, 20.0, 50.0))
        if not isinstance(bw, (list, tuple)) or not bw:
            raise InputError("bandwidth_mbps", bw, "must be a non-empty list of positive numbers")
        graph = watts_strogatz_sites(
            R,
            net_rng,
            k=check_int("ws_k", q.get("ws_k", 4), minimum=2),
            p=_prob("ws_p", q.get("ws_p", 0.1)),
            latency_ms=_pair("latency_ms", q.get("latency_ms", (2.0, 20.0)), float, 0.0),
            bandwidth_mbps=tuple(check_positive("bandwidth_mbps", b) for b in bw),
        )
        mpl = q.get("max_path_latency_ms")
        gb = q.get("global_budget_mb")
        network = NetworkSpec(
            mode="topology",
            budget_mb=budget,
            graph=graph,
            max_path_latency_ms=None if mpl is None else check_positive("max_path_latency_ms", mpl),
            global_budget_mb=None if gb is None else check_positive("global_budget_mb", gb),
        )
    else:
        for k in ("ws_k", "ws_p", "latency_ms", "bandwidth_mbps", "max_path_latency_ms", "global_budget_mb"):
            if k in params:
                raise InputError(k, params[k], "applies only to mode = 'topology'")
        network = NetworkSpec(budget_mb=budget)
    jobs = generate_jobs(
        I,
        R,
        window,
        jobs_rng,
        data_sites=data_sites,
        calib_workers=calib_workers,
        calib_slots=calib_slots,
        ps_gpu_choices=psg,
    )
    opts = {}
    if "antman_rule" in q:
        opts["antman_rule"] = check_choice("antman_rule", q["antman_rule"], ("tau_threshold", "bernoulli"))
    if "antman_tau" in q:
        opts["antman_tau"] = check_finite("antman_tau", q["antman_tau"])
    if "liquid_lambda" in q:
        opts["liquid_lambda"] = _prob("liquid_lambda", q["liquid_lambda"])
    if "baseline_slots" in q:
        opts["baseline_slots"] = check_int("baseline_slots", q["baseline_slots"], minimum=1)
    return ErisMarket(sites, network, cfg, jobs, baseline_options=opts)
