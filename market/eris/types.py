"""Plain-data types of the Eris edge auction (spec ``eris.md`` §2.2).

Units: slots are integers ``1..T``; data in chunks of ``theta_mb`` MB; traffic in MB per slot;
resources in native units (``gpu`` devices, ``cpu`` cores, ``ram`` GB); money in the units of
the utility functions.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx
import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_choice, check_finite, check_int, check_nonneg
from marketsim.market.types import EdgeSite
from marketsim.market.utility import Utility, check_non_increasing

__all__ = [
    "RESOURCES",
    "ErisSites",
    "NetworkSpec",
    "ErisConfig",
    "ErisJob",
    "ErisBid",
    "UDLJob",
    "SlotPlan",
    "ErisSchedule",
    "MenuEntry",
]

RESOURCES: tuple[str, ...] = ("gpu", "cpu", "ram")


@dataclass(frozen=True)
class ErisSites:
    """Edge sites: ``ids`` (node ids of the topology, any hashable) and per-slot ``capacity``
    ``C[r, k]`` (shape (R, K), finite, >= 0) for the resource types ``resources``.

    :param ids: the site ids (topology nodes)
    :param capacity: (R, K) per-slot capacities, >= 0
    :param resources: the K resource types
    """

    ids: tuple[Hashable, ...]
    capacity: np.ndarray
    resources: tuple[str, ...] = RESOURCES

    def __post_init__(self) -> None:
        ids = tuple(self.ids)
        if len(ids) == 0:
            raise InputError("ErisSites.ids", ids, "must list at least one site (R >= 1)")
        if len(set(ids)) != len(ids):
            raise InputError("ErisSites.ids", ids, "must not contain duplicate site ids")
        if len(self.resources) == 0:
            raise InputError("ErisSites.resources", self.resources, "must name at least one resource type (K >= 1)")
        cap = as_float_array("ErisSites.capacity", self.capacity, ndim=2, shape=(len(ids), len(self.resources)))
        neg = np.argwhere(cap < 0)
        if neg.size:
            r, k = (int(v) for v in neg[0])
            raise InputError(f"ErisSites.capacity[site {ids[r]!r}, {self.resources[k]}]", cap[r, k], "must be >= 0")
        cap.setflags(write=False)
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "capacity", cap)
        object.__setattr__(self, "resources", tuple(self.resources))

    @property
    def R(self) -> int:
        return len(self.ids)

    @property
    def K(self) -> int:
        return len(self.resources)

    def index(self, site_id: Hashable) -> int:
        """0-based row of ``site_id``; :class:`InputError` if unknown.

        :param site_id: the site
        :returns: its row
        :raises InputError: an unknown site
        """
        try:
            return self.ids.index(site_id)
        except ValueError:
            raise InputError("site id", site_id, f"is not a known site (known: {list(self.ids)[:10]}...)") from None

    @staticmethod
    def from_capacity(capacity: Sequence[Sequence[float]] | np.ndarray, resources: Sequence[str] | None = None):
        """Sites ``1..R`` (1-based integer ids, as in the spec) from an (R, K) capacity table.

        :param capacity: (R, K) capacities
        :param resources: the K resource names (default :data:`RESOURCES`)
        :returns: the sites
        :raises InputError: a table that is not (R, K)
        """
        cap = np.asarray(capacity, dtype=float)
        if cap.ndim != 2:
            raise InputError("capacity", capacity, "must be an (R, K) table")
        res = tuple(resources) if resources is not None else RESOURCES[: cap.shape[1]]
        if len(res) != cap.shape[1]:
            res = tuple(f"res{k}" for k in range(cap.shape[1]))
        return ErisSites(tuple(range(1, cap.shape[0] + 1)), cap, res)

    @staticmethod
    def from_edge_sites(sites: Sequence[EdgeSite], resources: Sequence[str] = RESOURCES) -> ErisSites:
        """From core :class:`marketsim.market.types.EdgeSite` objects (missing resource names count as 0).

        :param sites: the edge sites
        :param resources: the resource names
        :returns: the sites
        """
        cap = [[float(s.capacity.get(k, 0.0)) for k in resources] for s in sites]
        return ErisSites(
            tuple(s.site_id for s in sites), np.array(cap, dtype=float).reshape(len(sites), -1), tuple(resources)
        )


@dataclass(frozen=True)
class NetworkSpec:
    """Network model. ``mode="global"``: one per-slot volume budget ``budget_mb`` (MB) shared by all
    transfers and remote worker<->PS traffic. ``mode="topology"``: ``graph`` (nodes == site ids,
    connected), edges with ``capacity_mb`` (MB/slot) or ``bandwidth_mbps`` (Mbit/s, converted with
    ``slot_minutes``) and ``latency_ms``; traffic follows static shortest paths (``route_weight``).

    :param mode: ``global`` or ``topology``
    :param budget_mb: per-slot volume budget B, MB (global mode)
    :param graph: the topology (nodes = site ids), required in topology mode
    :param route_weight: ``latency_ms`` or ``hops``
    :param slot_minutes: minutes per slot (converts Mbit/s to MB per slot)
    :param max_path_latency_ms: longest path latency allowed, or ``None``
    :param global_budget_mb: an extra global budget in topology mode, or ``None``
    """

    mode: Literal["global", "topology"] = "global"
    budget_mb: float = 20480.0
    graph: nx.Graph | None = field(default=None, compare=False)
    route_weight: Literal["latency_ms", "hops"] = "latency_ms"
    slot_minutes: float = 20.0
    max_path_latency_ms: float | None = None
    global_budget_mb: float | None = None

    def __post_init__(self) -> None:
        check_choice("NetworkSpec.mode", self.mode, ("global", "topology"))
        check_choice("NetworkSpec.route_weight", self.route_weight, ("latency_ms", "hops"))
        if check_finite("NetworkSpec.budget_mb", self.budget_mb) <= 0:
            raise InputError("NetworkSpec.budget_mb", self.budget_mb, "must be > 0 (B, MB per slot)")
        if check_finite("NetworkSpec.slot_minutes", self.slot_minutes) <= 0:
            raise InputError("NetworkSpec.slot_minutes", self.slot_minutes, "must be > 0")
        if self.max_path_latency_ms is not None:
            check_nonneg("NetworkSpec.max_path_latency_ms", self.max_path_latency_ms)
        if (
            self.global_budget_mb is not None
            and check_finite("NetworkSpec.global_budget_mb", self.global_budget_mb) <= 0
        ):
            raise InputError("NetworkSpec.global_budget_mb", self.global_budget_mb, "must be > 0")
        if self.mode == "topology" and self.graph is None:
            raise InputError("NetworkSpec.graph", None, "is required in topology mode")


@dataclass(frozen=True)
class ErisConfig:
    """Mechanism parameters: horizon ``T`` (slots), price bases ``gamma_d`` (transmission) and
    ``gamma_k`` (per resource type, scalar or tuple), chunk size ``theta_mb`` (MB), options D5/D21/D23/D10/D17.

    :param horizon: T, slots, >= 1
    :param gamma_d: transmission price base, > 1
    :param gamma_k: resource price base(s), > 1 (scalar or one per type)
    :param theta_mb: chunk size, MB, > 0
    :param repair_sources: exact per-site data conservation (D5)
    :param overflow_moves: move chunks out of over-capacity sites (D21)
    :param ps_rule: ``max_workers`` or ``min_cost`` PS placement (D23)
    :param duration_offset: added to ``c - a`` (D10), >= 0
    :param accept_tol: accept iff the payoff exceeds it (D17)
    """

    horizon: int
    gamma_d: float = 1000.0
    gamma_k: float | tuple[float, ...] = 1000.0
    theta_mb: float = 2.0
    repair_sources: bool = True
    overflow_moves: bool = False
    ps_rule: Literal["max_workers", "min_cost"] = "max_workers"
    duration_offset: int = 0
    accept_tol: float = 1e-9

    def __post_init__(self) -> None:
        check_int("ErisConfig.horizon", self.horizon, minimum=1)
        gd = check_finite("ErisConfig.gamma_d", self.gamma_d)
        if gd <= 1:
            raise InputError("ErisConfig.gamma_d", self.gamma_d, "must be > 1")
        gks = self.gamma_k if isinstance(self.gamma_k, tuple) else (self.gamma_k,)
        for j, g in enumerate(gks):
            if check_finite(f"ErisConfig.gamma_k[{j}]", g) <= 1:
                raise InputError(f"ErisConfig.gamma_k[{j}]", g, "must be > 1")
        if min((gd, *gks)) < 2:
            warnings.warn("Eris assumes gamma - 1 >= 1 (gamma >= 2); got a smaller gamma", UserWarning, stacklevel=3)
        if check_finite("ErisConfig.theta_mb", self.theta_mb) <= 0:
            raise InputError("ErisConfig.theta_mb", self.theta_mb, "must be > 0 (MB per chunk)")
        check_choice("ErisConfig.ps_rule", self.ps_rule, ("max_workers", "min_cost"))
        check_int("ErisConfig.duration_offset", self.duration_offset, minimum=0)
        check_nonneg("ErisConfig.accept_tol", self.accept_tol)

    def gamma_vector(self, K: int) -> np.ndarray:
        """gamma_k as a (K,) array.

        :param K: resource types
        :returns: (K,) price bases
        :raises InputError: a tuple of another length
        """
        if isinstance(self.gamma_k, tuple):
            if len(self.gamma_k) != K:
                raise InputError("ErisConfig.gamma_k", self.gamma_k, f"must have {K} entries (one per resource)")
            return np.array(self.gamma_k, dtype=float)
        return np.full(K, float(self.gamma_k))


@dataclass(frozen=True)
class ErisJob:
    """A UDL job: the true type (:data:`UDLJob`) or a report (:data:`ErisBid`, eq. (1) plus the
    operator-measured ``proc_capacity`` P [chunk-epochs per worker per slot] and ``param_mb``
    lambda [MB per remote worker per slot]). ``data`` maps site id -> chunks stored there;
    ``worker_demand`` / ``ps_demand`` are (K,) per worker / per PS; ``utility`` maps the duration
    ``c - a + offset`` (slots) to value.

    :param job_id: the job
    :param arrival: arrival slot, >= 1
    :param utility: value of the duration (slots), currency
    :param data: site id -> chunks stored there
    :param epochs: epochs E, >= 1
    :param worker_demand: (K,) per worker
    :param ps_demand: (K,) per PS
    :param proc_capacity: P, chunk-epochs per worker per slot
    :param param_mb: lambda, MB per remote worker per slot
    :param model_name: a label
    """

    job_id: int
    arrival: int
    utility: Utility
    data: Mapping[Hashable, int]
    epochs: int
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    proc_capacity: int
    param_mb: float
    model_name: str = ""

    def __post_init__(self) -> None:
        name = f"ErisJob(job_id={self.job_id})"
        check_int(f"{name}.job_id", self.job_id)
        check_int(f"{name}.arrival", self.arrival, minimum=1)
        check_int(f"{name}.epochs", self.epochs, minimum=1)
        if (
            not isinstance(self.proc_capacity, (int, np.integer))
            or isinstance(self.proc_capacity, bool)
            or self.proc_capacity < 1
        ):
            raise InputError(
                f"{name}.proc_capacity",
                self.proc_capacity,
                "must be a positive integer (chunk-epochs per worker per slot)",
            )
        check_nonneg(f"{name}.param_mb", self.param_mb)
        data = dict(self.data)
        for site, v in data.items():
            check_int(f"{name}.data[{site!r}]", v, minimum=0)
        if sum(int(v) for v in data.values()) <= 0:
            raise InputError(f"{name}.data", data, "must hold at least one chunk in total")
        w = as_float_array(f"{name}.worker_demand", self.worker_demand, ndim=1, nonneg=True)
        s = as_float_array(f"{name}.ps_demand", self.ps_demand, ndim=1, nonneg=True)
        if not (w > 0).any():
            raise InputError(f"{name}.worker_demand", w, "must have at least one positive entry")
        if s.shape != w.shape:
            raise InputError(f"{name}.ps_demand", s, f"must have the same shape as worker_demand {w.shape}")
        w.setflags(write=False)
        s.setflags(write=False)
        object.__setattr__(self, "worker_demand", w)
        object.__setattr__(self, "ps_demand", s)
        object.__setattr__(self, "data", {k: int(v) for k, v in data.items()})
        object.__setattr__(self, "epochs", int(self.epochs))
        object.__setattr__(self, "proc_capacity", int(self.proc_capacity))
        object.__setattr__(self, "param_mb", float(self.param_mb))

    @property
    def total_chunks(self) -> int:
        return int(sum(self.data.values()))

    def check_against(self, sites: ErisSites, cfg: ErisConfig) -> None:
        """Validate against the market: known sites, K, arrival <= T, utility finite, >= 0 and
        non-increasing on durations ``0..T-1+offset``.

        :param sites: the market's sites
        :param cfg: its configuration
        :raises InputError: an unknown site, demands of the wrong length, a late arrival, a bad utility
        """
        name = f"ErisJob(job_id={self.job_id})"
        for site in self.data:
            if site not in sites.ids:
                raise InputError(f"{name}.data", site, "names a site that is not in the market/topology")
        if self.worker_demand.shape != (sites.K,):
            raise InputError(f"{name}.worker_demand", self.worker_demand, f"must have shape ({sites.K},)")
        if self.arrival > cfg.horizon:
            raise InputError(f"{name}.arrival", self.arrival, f"must be <= T = {cfg.horizon}")
        durs = np.arange(cfg.horizon + cfg.duration_offset, dtype=float)
        vals = np.asarray(self.utility(durs), dtype=float)
        if not np.isfinite(vals).all() or (vals < 0).any():
            bad = int(np.argmax(~np.isfinite(vals) | (vals < 0)))
            raise InputError(f"{name}.utility({bad})", vals[bad], "must be finite and >= 0")
        check_non_increasing(f"{name}.utility", vals)

    def data_vector(self, sites: ErisSites) -> np.ndarray:
        """D^r as an (R,) int array in site order.

        :param sites: the sites
        :returns: chunks per site
        """
        out = np.zeros(sites.R, dtype=np.int64)
        for site, v in self.data.items():
            out[sites.index(site)] += v
        return out


ErisBid = ErisJob
UDLJob = ErisJob


@dataclass(frozen=True)
class SlotPlan:
    """One active slot of a schedule (0-based site rows; ``moves`` maps (r, r') rows -> chunks;
    ``link_volume`` (L,) MB per link; ``usage`` (R, K) resources; ``cost`` at frozen prices).

    :param t: the slot
    :param sources: (R,) chunks taken from each site
    :param moves: (r, r') -> chunks moved
    :param load: (R,) chunks processed at each site (sources after moves)
    :param workers: (R,) workers per site
    :param ps_site: the PS's site row
    :param link_volume: (L,) MB per link
    :param usage: (R, K) resources used
    :param cost: its cost at frozen prices, currency
    """

    t: int
    sources: np.ndarray
    moves: Mapping[tuple[int, int], int]
    load: np.ndarray
    workers: np.ndarray
    ps_site: int
    link_volume: np.ndarray
    usage: np.ndarray
    cost: float


@dataclass(frozen=True)
class ErisSchedule:
    """Active slots (ascending ``t``), the completion slot and the total cost.

    :param slots: the active slots
    :param completion: the completion slot
    :param cost: the total cost, currency
    """

    slots: tuple[SlotPlan, ...]
    completion: int
    cost: float

    def chunks(self) -> int:
        return int(sum(int(p.sources.sum()) for p in self.slots))

    def signature(self) -> tuple:
        """Hashable exact description (slots, sources, moves, workers, PS) for equality checks."""
        return tuple(
            (
                p.t,
                tuple(int(x) for x in p.sources),
                tuple(sorted(p.moves.items())),
                tuple(int(x) for x in p.workers),
                p.ps_site,
            )
            for p in self.slots
        )


@dataclass(frozen=True)
class MenuEntry:
    """One candidate deadline and its cheapest schedule.

    :param deadline: the deadline slot
    :param schedule: its cheapest schedule
    """

    deadline: int
    schedule: ErisSchedule
