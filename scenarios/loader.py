"""Declarative scenarios: TOML files -> validated :class:`Scenario` -> model configs.

A scenario names the cluster, where speedups come from (a throughput table file, else a seeded
synthetic generator), the workload distributions, the allocators to compare, and "variants"
(the implicit ``truthful`` one plus lying ones, each a deviating tenant with a strategy). It is
plain data (picklable); :meth:`Scenario.instantiate` turns it into a
:class:`marketsim.agents.config.ModelConfig` with an explicit ``numpy.random.Generator``, and
:meth:`Scenario.build_model` does that for one seed with common random numbers: the workload
stream is the same for every policy and variant of a seed.

Validation: unknown keys, wrong types and unknown mechanism names raise
:class:`marketsim.market.errors.InputError` naming the key (e.g. ``scenario default: workload.tenants``).

Schema (all keys optional unless marked)::

    name, description, policies = [registry names], rounds, replications, seed,
    placement = "auto"|"oef"|"naive"|"ideal" ("ideal", the default with a trace: no hosts),
    realisation = "own"|"gavel-lease"|"oef-rounding"|"gandiva-lottery" (default: "oef-rounding"
    for a synthetic workload, "gavel-lease" with a trace), kappa (spread penalty per extra host when
    no unconsolidated table applies; an error where it would do nothing), kappa_rack (extra penalty
    per extra rack), migration_cost_s (dead time of every lease that restarts a job), backfill,
    stop_when_idle
    [[failure]] host (required: a host id), at_s (required), heal_s: a host goes down and comes back
    [cluster]   gpu_types = [..] (required), gpus = [..] (required), gpus_per_host, racks,
                round_seconds (300; 360 = Gavel's with a trace), reallocation_interval_s (least
                time between policy re-solves: 0 by default, Gavel's 1920 s with a trace),
                lease_order = "fastest"|"shuffle" (trace runs:
                the GPU-type order of each round's leases; "shuffle" = Gavel's per-round shuffle).
                With a trace the types are put slowest first by the throughput table
                (marketsim.market.traces.order_by_speed), whatever their listed order
    [profiles]  file (throughput CSV; relative to the scenario file), unconsolidated_file (trace
                runs with hosts: throughputs of jobs spread over hosts; default: Gavel's packaged
                table when `file` is not given, else none), num_gpus, reference,
                generator = "assumed"|"ordered", step = [lo, hi], job_types = [..], jitter
    [workload]  tenants (required), job_types_per_tenant, job_type_choice = "random"|"cycle",
                jobs_per_tenant, jobs_poisson, workers = [..], workers_probs = [..],
                duration_median_s, duration_sigma, duration_cap_s, backlogged,
                duration_rule = "lognormal"|"gavel",
                arrival_window_s, weights = [..]
                -- or a trace workload (docs/trace_simulation.md): trace = "PATH" (relative to
                the scenario file), trace_format = "gavel"|"philly"|"csv", tenancy = "job"|"user"|N,
                max_jobs (first N jobs), duration_reference (Philly: GPU type whose throughput
                turns a duration into steps, "v100"), max_rounds (safety cap when `rounds` is
                omitted: the run then ends when every job has completed; default 200000),
                tenant_measures = "agents"|"all"|"none" (whose per-tenant per-round rows:
                "agents" = every tenant, or with tenancy "job" the variants' tenants).
                The throughput table is [profiles] file (default: the packaged Gavel table).
                [[variant]] tables apply (tenant: index in order of first arrival, or name).
                -- or a generated trace (same engine): generator = "gavel", jobs, jobs_per_hour
                (marketsim.market.traces.generate_gavel_trace; seeded per replication), tenancy,
                duration_reference (the GPU type durations are run times on, "v100"), max_rounds,
                tenant_measures
    [[tenant]]  index (required), job_types, weight, arrival_s, leave_s, jobs,
                add_type = {job_type, at_s, jobs} (a second job type added on the fly, OEF §6.2.3)
    [[variant]] name (required), tenant (required: index or id), strategy =
                "truthful"|"scale"|"fast"|"report"|"noise"|"hedge", factors = {gpu type = f}, factor,
                vector = [..], e, job_types = [..]; hedge (a learning tenant): points, low, high, eta
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.agents.config import (
    DEFAULT_KAPPA_RACK,
    GAVEL_REALLOCATION_S,
    PLACEMENTS,
    REALISATION_CHOICES,
    TENANT_ROWS,
    JobConfig,
    ModelConfig,
    ServerFailure,
    TenantConfig,
    TraceWorkload,
)
from marketsim.agents.strategies import HedgeLearner, MultiplicativeNoise, ReportVector, ScaleDims, Strategy, Truthful
from marketsim.market.errors import InputError, check_name, slug
from marketsim.market.profiles import (
    OEF_ASSUMED_SPEEDUPS,
    feasible,
    jittered_profile,
    load_throughput_table,
    ordered_random_speedups,
    speedup_vectors,
)
from marketsim.market.registry import names as mechanism_names
from marketsim.market.topology import multi_rack_tree, single_rack
from marketsim.market.traces import (
    GAVEL_THROUGHPUTS,
    GAVEL_THROUGHPUTS_UNCONSOLIDATED,
    MAX_TRACE_JOBS,
    MAX_TRACE_SECONDS,
    TRACE_FORMATS,
    Trace,
    data_path,
    load_trace,
    order_by_speed,
    tenant_of_jobs,
    unconsolidated_throughputs,
)
from marketsim.market.types import Cluster
from marketsim.scenarios.catalog import embedded, embedded_file

__all__ = [
    "Scenario",
    "ClusterSpec",
    "ProfileSpec",
    "WorkloadSpec",
    "TenantOverride",
    "VariantSpec",
    "TraceSpec",
    "load_scenario",
    "parse_scenario",
    "scenario_names",
    "TRUTHFUL",
]

TRUTHFUL = "truthful"
ALL_POLICIES = ("oef-noncoop", "oef-coop", "gavel", "gandiva-fair", "maxmin", "max-throughput")

#: Size limits of a scenario, checked while parsing so a huge one fails at once (exit 2) instead of
#: after minutes of building or a MemoryError: tenants, expected jobs (tenants x jobs_per_tenant)
#: and GPUs of the cluster. README "The command line" documents them.
MAX_TENANTS = 100_000
MAX_JOBS = 1_000_000
MAX_GPUS = 1_000_000
#: Sanity limits on time and run length, checked while parsing (exit 2 naming the key): a round
#: lasts 1 s to 1 day (``cluster.round_seconds``; Gavel uses 360 s), and a run has at most 10^7
#: rounds (``rounds`` and ``workload.max_rounds``; 10^7 rounds of 360 s are 114 years). Trace limits
#: (jobs, arrival times, total_steps): :data:`marketsim.market.traces.MAX_TRACE_JOBS` and its neighbours.
MIN_ROUND_SECONDS = 1.0
MAX_ROUND_SECONDS = 86_400.0
MAX_ROUNDS = 10_000_000
#: range of a lying variant's report factors (``factors``, ``factor``, ``vector``, hedge ``low`` / ``high``):
#: beyond it a report is no longer a misreport of a speedup but a float overflow (1e308) or underflow
FACTOR_RANGE = (1e-6, 1e6)
#: most report vectors a hedge tenant learns over (``points``; the learn command's grid limit)
MAX_HEDGE_POINTS = 10_000

# ---------------------------------------------------------------------------------------------------
# typed getters that name the offending key


class _Table:
    """A TOML table being read: typed getters and a final unknown-key check."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise InputError(where, data, "must be a table")
        self.data = data
        self.where = where
        self.seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.where}.{name}"

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: Any = None, required: bool = False) -> Any:
        self.seen.add(name)
        if name not in self.data:
            if required:
                raise InputError(self.key(name), None, "is required")
            return default
        return self.data[name]

    def string(self, name: str, default: str | None = None, required: bool = False) -> str | None:
        v = self.raw(name, default, required)
        if v is not None and not isinstance(v, str):
            raise InputError(self.key(name), v, "must be a string")
        return v

    def boolean(self, name: str, default: bool) -> bool:
        v = self.raw(name, default)
        if not isinstance(v, bool):
            raise InputError(self.key(name), v, "must be true or false")
        return v

    def integer(self, name: str, default: int | None = None, minimum: int | None = None, required: bool = False) -> Any:
        v = self.raw(name, default, required)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(self.key(name), v, "must be an integer")
        if minimum is not None and v < minimum:
            raise InputError(self.key(name), v, f"must be >= {minimum}")
        return v

    def number(
        self, name: str, default: float | None = None, minimum: float | None = None, positive: bool = False
    ) -> Any:
        v = self.raw(name, default)
        if v is None:
            return None
        return _number(self.key(name), v, minimum, positive)

    def array(self, name: str, default: Any = None, required: bool = False) -> list[Any] | None:
        v = self.raw(name, default, required)
        if v is not None and not isinstance(v, list):
            raise InputError(self.key(name), v, "must be an array")
        return v

    def table(self, name: str) -> _Table:
        v = self.raw(name, {})
        return _Table(v, self.key(name))

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            raise InputError(
                self.key(unknown[0]), self.data[unknown[0]], f"is not a known key; known: {sorted(self.seen)}"
            )


def _number(key: str, v: Any, minimum: float | None = None, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(key, v, "must be a number")
    x = float(v)
    if not math.isfinite(x):
        raise InputError(key, v, "must be finite")
    if positive and x <= 0:
        raise InputError(key, v, "must be > 0")
    if minimum is not None and x < minimum:
        raise InputError(key, v, f"must be >= {minimum}")
    return x


def _numbers(key: str, values: list[Any], minimum: float | None = None, positive: bool = False) -> tuple[float, ...]:
    return tuple(_number(f"{key}[{i}]", v, minimum, positive) for i, v in enumerate(values))


def _ints(key: str, values: list[Any], minimum: int) -> tuple[int, ...]:
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{key}[{i}]", v, "must be an integer")
        if v < minimum:
            raise InputError(f"{key}[{i}]", v, f"must be >= {minimum}")
        out.append(v)
    return tuple(out)


def _strings(key: str, values: list[Any]) -> tuple[str, ...]:
    if not values:
        raise InputError(key, values, "must not be empty (list at least one name)")
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v:
            raise InputError(f"{key}[{i}]", v, "must be a non-empty string")
    return tuple(values)


# ---------------------------------------------------------------------------------------------------
# the scenario data


@dataclass(frozen=True)
class ClusterSpec:
    """GPU types (slowest first) with ``gpus`` devices each, ``gpus_per_host`` per host, spread
    over ``racks`` racks (1 = single switch, else a two-level tree), rounds of ``round_seconds``."""

    gpu_types: tuple[str, ...]
    gpus: tuple[int, ...]
    gpus_per_host: int = 4
    racks: int = 1
    round_seconds: float = 300.0
    reallocation_interval_s: float = GAVEL_REALLOCATION_S
    lease_order: str = "fastest"

    def build(self) -> Cluster:
        """The :class:`marketsim.market.types.Cluster` (topology from :mod:`marketsim.market.topology`)."""
        counts = list(zip(self.gpu_types, self.gpus, strict=True))
        if self.racks == 1:
            return single_rack(counts, self.gpus_per_host, round_seconds=self.round_seconds)
        # deal each type's hosts round-robin over the racks
        per_rack = [dict.fromkeys(self.gpu_types, 0) for _ in range(self.racks)]
        for name, total in counts:
            for h in range(-(-total // self.gpus_per_host)):
                per_rack[h % self.racks][name] += min(self.gpus_per_host, total - h * self.gpus_per_host)
        racks = [[(n, c) for n, c in r.items() if c > 0] for r in per_rack]
        return multi_rack_tree(
            [r for r in racks if r], self.gpu_types, self.gpus_per_host, round_seconds=self.round_seconds
        )


@dataclass(frozen=True)
class ProfileSpec:
    """Where true speedups come from: ``file`` (a throughput CSV, absolute path after loading)
    with ``num_gpus`` rows normalised by ``reference``; else ``generator`` "assumed" (OEF §5.2
    table, needs 3 GPU types) or "ordered" (random ``w^{j+1} = w^j·U(step)`` base vectors, one per
    name in ``job_types``). ``jitter``: per-tenant multiplicative jitter (spec §5.2).
    ``unconsolidated_file``: trace runs with hosts, the throughputs of jobs whose GPUs span hosts
    (:func:`marketsim.market.traces.unconsolidated_throughputs`)."""

    file: str | None = None
    unconsolidated_file: str | None = None
    num_gpus: int = 1
    reference: str = "slowest"
    generator: str = "assumed"
    step: tuple[float, float] = (1.0, 1.6)
    job_types: tuple[str, ...] | None = None
    jitter: float = 0.03


@dataclass(frozen=True)
class WorkloadSpec:
    """Tenants and jobs (spec §5.2 defaults). ``jobs_per_tenant`` jobs each (``max(1,
    Poisson(jobs_per_tenant))`` if ``jobs_poisson``); workers drawn from ``workers`` with
    ``workers_probs``; duration on ``workers`` slowest GPUs ~ LogNormal(ln(median), sigma) capped;
    ``work = duration · workers``. ``backlogged``: work large enough to outlast the horizon
    (duration at least twice the horizon times the tenant's largest speedup).
    Tenants arrive at 0, or uniformly at random in ``[0, arrival_window_s]``; all of a tenant's
    jobs are submitted on arrival. ``weights``: per-tenant priorities (default 1).
    ``duration_rule = "gavel"`` replaces the lognormal by Gavel's generator: with probability 0.8
    ``10^U(1.5, 3)`` minutes, else ``10^U(3, 4)`` minutes, read as the run time on the job type's
    fastest GPU type (Gavel's V100 convention), so the duration on the slowest type is that times
    the job's largest speedup (no cap)."""

    tenants: int
    job_types_per_tenant: int = 1
    job_type_choice: str = "random"
    jobs_per_tenant: float = 6
    jobs_poisson: bool = False
    workers: tuple[int, ...] = (1, 2, 4, 8)
    workers_probs: tuple[float, ...] = (0.6, 0.2, 0.15, 0.05)
    duration_median_s: float = 1800.0
    duration_sigma: float = 1.0
    duration_cap_s: float = 86400.0
    backlogged: bool = False
    duration_rule: str = "lognormal"  # "gavel": Gavel's generator, run time on the fastest type (below)
    arrival_window_s: float = 0.0
    weights: tuple[float, ...] | None = None
    trace: TraceSpec | None = None


@dataclass(frozen=True)
class TraceSpec:
    """A trace workload (module docstring; ``docs/trace_simulation.md``): ``path`` (absolute),
    ``format`` "gavel" | "philly", ``tenancy`` "job" | "user" | N, ``max_jobs`` (first jobs only,
    None = all), ``duration_reference`` (Philly), ``until_done`` (``rounds`` omitted: run until
    every job has completed, at most ``max_rounds`` rounds); ``generator = "gavel"``: no file, the
    trace is :func:`marketsim.market.traces.generate_gavel_trace` of ``jobs`` jobs at ``jobs_per_hour``.
    ``arrival_scale`` (file traces): every arrival time is multiplied by it (0.25 = the same jobs
    arriving 4x as fast, so 4x the load; durations and work are unchanged)."""

    path: str
    format: str = "gavel"
    tenancy: str | int = "job"
    max_jobs: int | None = None
    duration_reference: str = "v100"
    until_done: bool = True
    max_rounds: int = 200_000
    generator: str | None = None  # "gavel": generated in memory (no path), below
    jobs: int = 0
    jobs_per_hour: float = 0.0
    tenant_rows: str = "agents"  # [workload] tenant_measures
    arrival_scale: float = 1.0


@dataclass(frozen=True)
class TenantOverride:
    """Fixes some properties of tenant ``index`` (job types, weight, arrival, forced leave, jobs)."""

    index: int
    job_types: tuple[str, ...] | None = None
    weight: float | None = None
    arrival_s: float | None = None
    leave_s: float | None = None
    jobs: int | None = None
    #: a second job type the tenant adds on the fly (OEF §6.2.3, spec S4): (job type, time s, jobs)
    add_type: tuple[str, float, int] | None = None


@dataclass(frozen=True)
class VariantSpec:
    """A lying variant: tenant ``tenant`` (index or id) reports with ``strategy``."""

    name: str
    tenant: int | str
    strategy: Strategy


@dataclass(frozen=True)
class Scenario:
    """A validated scenario (see the module docstring for the TOML schema)."""

    name: str
    cluster: ClusterSpec
    workload: WorkloadSpec
    profiles: ProfileSpec = field(default_factory=ProfileSpec)
    description: str = ""
    policies: tuple[str, ...] = ALL_POLICIES
    rounds: int = 24
    replications: int = 3
    seed: int = 0
    placement: str | None = None  # None: "ideal" with a trace workload, else "auto"
    kappa: float | None = None  # None: marketsim.agents.config.DEFAULT_KAPPA where a penalty applies
    migration_cost_s: float = 0.0
    backfill: bool = True
    realisation: str | None = None  # None: "oef-rounding" (synthetic), "gavel-lease" (trace)
    kappa_rack: float = DEFAULT_KAPPA_RACK
    failures: tuple[ServerFailure, ...] = ()
    stop_when_idle: bool = True
    tenants: tuple[TenantOverride, ...] = ()
    variants: tuple[VariantSpec, ...] = ()
    source: str = ""

    @property
    def variant_names(self) -> tuple[str, ...]:
        """``truthful`` followed by the lying variants."""
        return (TRUTHFUL, *(v.name for v in self.variants))

    def with_policies(self, policies: Sequence[str], field: str = "--policies") -> Scenario:
        """This scenario comparing ``policies`` instead of its own list: any registered fair-share
        mechanism (a plugin's too), validated as the ``policies`` key is (unknown or repeated names
        raise :class:`InputError` naming ``field``; with a trace, every job must be runnable under
        every policy). Its workload, seeds and variants are unchanged (common random numbers)."""
        pols = tuple(policies)
        if not pols:
            raise InputError(field, list(pols), f"names no policy; choose from {mechanism_names('fair-share')}")
        known = mechanism_names("fair-share")
        for p in pols:
            if p not in known:
                raise InputError(field, p, f"is not a registered fair-share policy; known: {known}")
        if len(set(pols)) != len(pols):
            raise InputError(field, list(pols), "must not repeat a policy")
        new = replace(self, policies=pols)
        if self.workload.trace is not None:
            tw, built = new.trace_workload(), self.cluster.build()
            for p in pols:
                if p not in self.policies:
                    ModelConfig(built, (), policy=p, rounds=1, trace=tw, placement=self.placement or "ideal",
                                kappa=self.kappa, realisation=self.realisation)  # fmt: skip
        return new

    def tenant_ids(self, seed: int | None = None) -> list[str]:
        """Tenant ids ``t0, t1, ...`` zero-padded so they sort numerically; of a trace scenario:
        its tenants' names in order of their first job (``seed``: the trace's, default the
        scenario seed; :func:`marketsim.agents.trace_tenants.tenant_order`)."""
        ts = self.workload.trace
        if ts is not None:
            from marketsim.agents.trace_tenants import tenant_order

            types = self.cluster.gpu_types
            table_path = self.profiles.file or str(data_path(GAVEL_THROUGHPUTS))
            tr = _trace_of(ts, table_path, types, self.seed if seed is None else int(seed))
            return tenant_order(tenant_of_jobs(tr, ts.tenancy))
        n = self.workload.tenants
        width = len(str(n - 1))
        return [f"t{i:0{width}d}" for i in range(n)]

    def deviator(self, variant: str, seed: int | None = None) -> str | None:
        """Id of the lying tenant of ``variant`` (None for ``truthful``); ``seed``: a trace
        scenario's trace seed (:meth:`tenant_ids`)."""
        if variant == TRUTHFUL:
            return None
        for v in self.variants:
            if v.name == variant:
                return self._tenant_id(v.tenant, f"scenario {self.name}: variant {v.name}.tenant", seed)
        raise InputError("variant", variant, f"is not one of {list(self.variant_names)}")

    def _tenant_id(self, ref: int | str, key: str, seed: int | None = None) -> str:
        ids = self.tenant_ids(seed)
        if isinstance(ref, int):
            if not 0 <= ref < len(ids):
                raise InputError(key, ref, f"must be a tenant index in 0..{len(ids) - 1}")
            return ids[ref]
        if ref not in ids:
            raise InputError(key, ref, f"is not a tenant id ({ids[0]}..{ids[-1]})")
        return ref

    def base_profiles(self) -> dict[str, np.ndarray]:
        """Base speedup vector per job type name (before per-tenant jitter), in cluster type order.

        With ``profiles.file``: the throughput table's vectors (feasible ones only, restricted to
        ``profiles.job_types`` if given). Otherwise the "assumed" OEF table, or for "ordered" one
        seeded random vector per job type name (seed: the scenario seed, so all runs share them).
        """
        p = self.profiles
        types = self.cluster.gpu_types
        if p.file is not None:
            table = _cached_table(p.file)
            missing = [g for g in types if g not in table.gpu_types]
            if missing:
                raise InputError(
                    f"scenario {self.name}: cluster.gpu_types",
                    list(types),
                    f"names {missing} absent from {p.file} (has {list(table.gpu_types)})",
                )
            cols = [table.gpu_types.index(g) for g in types]
            vecs = speedup_vectors(table, p.num_gpus, p.reference, p.job_types)
            vecs = {jt: v[cols] for jt, v in vecs.items()}
            ok = feasible(vecs)
            if p.job_types is not None and len(ok) != len(vecs):
                bad = sorted(set(vecs) - set(ok))
                raise InputError(f"scenario {self.name}: profiles.job_types", bad, "cannot run on every GPU type (0)")
            if not ok:
                raise InputError(
                    f"scenario {self.name}: profiles.file", p.file, "has no job type runnable on every type"
                )
            return ok
        if p.generator == "assumed":
            names = p.job_types or tuple(OEF_ASSUMED_SPEEDUPS)
            return {n: np.array(OEF_ASSUMED_SPEEDUPS[n], dtype=float) for n in names}
        names = p.job_types or tuple(f"job{i}" for i in range(6))
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(0xB5,)))
        W = ordered_random_speedups(len(names), len(types), rng, p.step, ordered=False)
        return {n: W[i] for i, n in enumerate(names)}

    # -- building models ---------------------------------------------------------------------------
    def trace_workload(self, seed: int | None = None) -> TraceWorkload:
        """The :class:`marketsim.agents.config.TraceWorkload` of a trace scenario; ``seed`` drives the Philly
        job-type draw (default: the scenario seed). Raises if the scenario has no trace."""
        ts = self.workload.trace
        if ts is None:
            raise InputError(f"scenario {self.name}: workload.trace", None, "is not set (not a trace scenario)")
        types = self.cluster.gpu_types
        table_path = self.profiles.file or str(data_path(GAVEL_THROUGHPUTS))
        tr = _trace_of(ts, table_path, types, self.seed if seed is None else int(seed))
        T = tr.throughputs(_cached_table(table_path), types)
        U = None
        if self.placement not in (None, "ideal"):
            upath = self.profiles.unconsolidated_file
            if upath is None and self.profiles.file is None:
                upath = str(data_path(GAVEL_THROUGHPUTS_UNCONSOLIDATED))
            utable = _cached_table(upath, allow_missing=True) if upath is not None else None
            U = unconsolidated_throughputs(tr, T, utable, types)
        return TraceWorkload(
            tr,
            T,
            tenant_of_jobs(tr, ts.tenancy),
            ts.tenancy,
            reallocation_interval_s=self.cluster.reallocation_interval_s,
            until_done=ts.until_done,
            lease_order=self.cluster.lease_order,
            tenant_rows=ts.tenant_rows,
            unconsolidated=U,
        )

    def instantiate(self, policy: str, variant: str, rng: np.random.Generator) -> ModelConfig:
        """The :class:`ModelConfig` of ``policy`` and ``variant``; every random draw (job types,
        jitter, jobs, arrivals) comes from ``rng`` in a fixed order that does not depend on the
        policy or the variant (common random numbers). A trace scenario draws only the seed of
        the Philly job-type assignment from ``rng`` (Gavel traces are deterministic)."""
        if policy not in self.policies:
            raise InputError("policy", policy, f"is not one of the scenario's policies {list(self.policies)}")
        ts = self.workload.trace
        if ts is not None:
            seed = int(rng.integers(0, 2**63 - 1))
            tw = self.trace_workload(seed)
            # every variant's tenant is an agent in every run (truthful ones too: their rows pair up)
            strategies: dict[str, Strategy] = {}
            for v in self.variants:
                dev = self.deviator(v.name, seed)
                assert dev is not None
                strategies.setdefault(dev, Truthful())
            liar = self.deviator(variant, seed)
            if liar is not None:
                strategies[liar] = next(v.strategy for v in self.variants if v.name == variant)
                tw = replace(tw, strategies=strategies, liars=(liar,))
            elif strategies:
                tw = replace(tw, strategies=strategies)
            return ModelConfig(
                self.cluster.build(),
                (),
                policy=policy,
                rounds=self.rounds if not ts.until_done else ts.max_rounds,
                placement=self.placement,
                kappa=self.kappa,
                kappa_rack=self.kappa_rack,
                migration_cost_s=self.migration_cost_s,
                stop_when_idle=self.stop_when_idle,
                trace=tw,
                realisation=self.realisation,
                failures=self.failures,
                backfill=self.backfill,
            )
        deviator = self.deviator(variant)
        strategy = next((v.strategy for v in self.variants if v.name == variant), None)
        cluster = self.cluster.build()
        base = self.base_profiles()
        pool = list(base)
        wl = self.workload
        ids = self.tenant_ids()
        overrides = {o.index: o for o in self.tenants}
        horizon = self.rounds * self.cluster.round_seconds
        G = int(sum(self.cluster.gpus))
        probs = np.asarray(wl.workers_probs, dtype=float)
        probs = probs / probs.sum()
        arrivals = np.sort(rng.uniform(0.0, wl.arrival_window_s, size=wl.tenants)) if wl.arrival_window_s > 0 else None
        tenants: list[TenantConfig] = []
        for i, tid in enumerate(ids):
            o = overrides.get(i)
            # job types: always draw, so overrides do not shift the other tenants' draws
            if wl.job_type_choice == "cycle":
                drawn = [pool[(i * wl.job_types_per_tenant + q) % len(pool)] for q in range(wl.job_types_per_tenant)]
            else:
                pick = rng.choice(len(pool), size=min(wl.job_types_per_tenant, len(pool)), replace=False)
                drawn = [pool[int(q)] for q in pick]
            types = list(o.job_types) if o is not None and o.job_types is not None else drawn
            speedups = {}
            for jt in types:
                if jt not in base:
                    raise InputError(f"scenario {self.name}: tenant[{i}].job_types", jt, f"is not one of {pool}")
                speedups[jt] = tuple(float(x) for x in jittered_profile(base[jt], rng, self.profiles.jitter))
            n_jobs = int(max(1, rng.poisson(wl.jobs_per_tenant))) if wl.jobs_poisson else int(round(wl.jobs_per_tenant))
            if o is not None and o.jobs is not None:
                n_jobs = o.jobs
            workers = np.asarray(wl.workers)[rng.choice(len(wl.workers), size=n_jobs, p=probs)]
            durations = np.minimum(
                rng.lognormal(math.log(wl.duration_median_s), wl.duration_sigma, size=n_jobs), wl.duration_cap_s
            )
            jt_idx = rng.integers(0, len(types), size=n_jobs)
            if wl.duration_rule == "gavel":  # extra draws only under this rule: other scenarios keep their stream
                short = rng.random(n_jobs) < 0.8
                exps = np.where(short, rng.uniform(1.5, 3.0, n_jobs), rng.uniform(3.0, 4.0, n_jobs))
                fastest = np.array([max(speedups[types[int(t)]]) / speedups[types[int(t)]][0] for t in jt_idx])
                durations = 60.0 * 10.0**exps * fastest  # minutes on the fastest type -> s on the slowest
            arrival = float(arrivals[i]) if arrivals is not None else 0.0
            if o is not None and o.arrival_s is not None:
                arrival = o.arrival_s
            jobs = []
            for q in range(n_jobs):
                w = int(min(workers[q], G))
                dur = float(durations[q])
                if wl.backlogged:  # cannot finish within the horizon even on its fastest GPU type
                    dur = max(dur, 2.0 * horizon * max(max(v) / v[0] for v in speedups.values()))
                jobs.append(JobConfig(f"{tid}-j{q}", types[int(jt_idx[q])], w, dur * w, arrival))
            weight = wl.weights[i] if wl.weights is not None else 1.0
            if o is not None and o.weight is not None:
                weight = o.weight
            if o is not None and o.add_type is not None:  # extra draws only here: other scenarios keep their stream
                at, (jt2, at_s, n2) = len(jobs), o.add_type
                if jt2 not in base:
                    raise InputError(f"scenario {self.name}: tenant[{i}].add_type.job_type", jt2,
                                     f"is not one of {pool}")  # fmt: skip
                if jt2 not in speedups:
                    speedups[jt2] = tuple(float(x) for x in jittered_profile(base[jt2], rng, self.profiles.jitter))
                w2 = np.asarray(wl.workers)[rng.choice(len(wl.workers), size=n2, p=probs)]
                d2 = np.minimum(rng.lognormal(math.log(wl.duration_median_s), wl.duration_sigma, size=n2),
                                wl.duration_cap_s)  # fmt: skip
                for q in range(n2):
                    w = int(min(w2[q], G))
                    dur = float(d2[q])
                    if wl.backlogged:
                        dur = max(dur, 2.0 * horizon * max(max(v) / v[0] for v in speedups.values()))
                    jobs.append(JobConfig(f"{tid}-j{at + q}", jt2, w, dur * w, float(at_s)))
            leave = o.leave_s if o is not None else None
            tenants.append(
                TenantConfig(
                    tid,
                    speedups,
                    tuple(jobs),
                    weight=weight,
                    arrival=arrival,
                    leave_at=leave,
                    strategy=strategy if (deviator == tid and strategy is not None) else Truthful(),
                )
            )
        return ModelConfig(
            cluster,
            tuple(tenants),
            policy=policy,
            rounds=self.rounds,
            placement=self.placement,
            kappa=self.kappa,
            kappa_rack=self.kappa_rack,
            migration_cost_s=self.migration_cost_s,
            backfill=self.backfill,
            stop_when_idle=self.stop_when_idle,
            realisation=self.realisation,
            reallocation_interval_s=self.cluster.reallocation_interval_s,
            failures=self.failures,
        )

    def build_model(self, policy: str, variant: str, seed: np.random.SeedSequence | int) -> Any:
        """A :class:`marketsim.agents.model.MarketModel` for one replication seed.

        ``seed`` is split into a workload stream and a model stream (``spawn(2)`` of a fresh copy),
        so the workload is identical for every policy and variant of the same seed.
        """
        from marketsim.agents.model import MarketModel

        config, rng = self.model_inputs(policy, variant, seed)
        return MarketModel(config, rng=rng)

    def model_inputs(
        self, policy: str, variant: str, seed: np.random.SeedSequence | int
    ) -> tuple[ModelConfig, np.random.Generator]:
        """The config and model RNG :meth:`build_model` gives a :class:`marketsim.agents.model.MarketModel`."""
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        fresh = np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key, pool_size=ss.pool_size)
        work_ss, model_ss = fresh.spawn(2)
        config = self.instantiate(policy, variant, np.random.default_rng(work_ss))
        return config, np.random.default_rng(model_ss)


@lru_cache(maxsize=16)
def _cached_table(path: str, allow_missing: bool = False) -> Any:
    return load_throughput_table(path, allow_missing=allow_missing)


def _trace_of(ts: TraceSpec, table_path: str, types: tuple[str, ...], seed: int) -> Trace:
    """The trace of ``ts``: read from its file, or generated (``ts.generator``) with ``seed``."""
    if ts.generator is not None:
        return _cached_generated(table_path, types, ts.jobs, ts.jobs_per_hour, seed, ts.duration_reference)
    tr = _cached_trace(ts.path, ts.format, table_path, types, seed, ts.duration_reference, ts.max_jobs)
    return tr if ts.arrival_scale == 1.0 else replace(tr, arrival_s=tr.arrival_s * ts.arrival_scale)


@lru_cache(maxsize=32)
def _cached_generated(table: str, types: tuple[str, ...], jobs: int, rate: float, seed: int, reference: str) -> Trace:
    from marketsim.market.traces import generate_gavel_trace

    return generate_gavel_trace(_cached_table(table), types, jobs, rate, seed, reference)


def _cached_trace(
    path: str, fmt: str, table: str, types: tuple[str, ...], seed: int, reference: str, max_jobs: int | None
) -> Trace:
    """The trace, cached on its arguments and the trace file's size and modification time."""
    try:
        st = Path(path).stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)  # load_trace raises the clear error
    return _cached_trace_at(path, stamp, fmt, table, types, seed, reference, max_jobs)


@lru_cache(maxsize=16)
def _cached_trace_at(
    path: str, stamp: tuple[int, int], fmt: str, table: str, types: tuple[str, ...], seed: int, reference: str,
    max_jobs: int | None,
) -> Trace:  # fmt: skip
    tr = load_trace(path, fmt, _cached_table(table), types, seed, reference)
    return tr if max_jobs is None else tr.head(max_jobs)


# ---------------------------------------------------------------------------------------------------
# parsing


def _factor(key: str, v: Any) -> float:
    """A report factor > 0 within :data:`FACTOR_RANGE`."""
    f = _number(key, v, positive=True)
    lo, hi = FACTOR_RANGE
    if not lo <= f <= hi:
        raise InputError(key, v, f"must be between {lo:g} and {hi:g} (size limit)")
    return f


def _strategy(t: _Table, gpu_types: Sequence[str]) -> Strategy:
    kind = t.string("strategy", required=True)
    job_types = t.array("job_types")
    jts = _strings(t.key("job_types"), job_types) if job_types is not None else None
    k = len(gpu_types)
    if kind == "truthful":
        return Truthful()
    if kind == "scale":
        factors = t.raw("factors", required=True)
        if not isinstance(factors, dict) or not factors:
            raise InputError(t.key("factors"), factors, "must be a non-empty table {gpu type = factor}")
        idx: dict[int, float] = {}
        for name, f in factors.items():
            if name not in gpu_types:
                raise InputError(f"{t.key('factors')}.{name}", f, f"names no GPU type of the cluster {list(gpu_types)}")
            idx[gpu_types.index(name)] = _factor(f"{t.key('factors')}.{name}", f)
        return ScaleDims(idx, job_types=jts)
    if kind == "fast":
        f = t.number("factor", positive=True)
        if f is None:
            return _need(t, "factor")
        return ScaleDims.fast(_factor(t.key("factor"), f), k, job_types=jts)
    if kind == "report":
        vec = t.array("vector", required=True)
        v = tuple(_factor(f"{t.key('vector')}[{i}]", x) for i, x in enumerate(vec or []))
        if len(v) != k:
            raise InputError(t.key("vector"), vec, f"must have one entry per GPU type ({k})")
        return ReportVector(v, job_types=jts)
    if kind == "noise":
        e = t.number("e", minimum=0.0)
        if e is None:
            return _need(t, "e")
        if e >= 1:
            raise InputError(t.key("e"), e, "must be < 1")
        return MultiplicativeNoise(e, job_types=jts)
    if kind == "hedge":
        kw: dict[str, Any] = {}
        for key, pos in (("points", False), ("low", True), ("high", True), ("eta", True)):
            raw = t.raw(key)
            if raw is None:
                continue
            if key == "points" and isinstance(raw, int) and not isinstance(raw, bool):
                kw[key] = raw
            elif key in ("low", "high"):
                kw[key] = _factor(t.key(key), raw)
            else:
                kw[key] = _number(t.key(key), raw, positive=pos)
        if "points" in kw and not isinstance(kw["points"], int):
            raise InputError(t.key("points"), kw["points"], "must be an integer >= 2")
        if "points" in kw and kw["points"] > MAX_HEDGE_POINTS:
            raise InputError(t.key("points"), kw["points"], f"must be at most {MAX_HEDGE_POINTS:,} (size limit)")
        return HedgeLearner(**kw)
    raise InputError(
        t.key("strategy"), kind, "must be one of ['truthful', 'scale', 'fast', 'report', 'noise', 'hedge']"
    )


def _racks(c: _Table, gpus: Sequence[int]) -> int:
    """``[cluster] racks``: at least 1 and at most the cluster's hosts (a rack holds at least one host)."""
    gph = c.integer("gpus_per_host", 4, minimum=1)
    hosts = sum(-(-g // gph) for g in gpus)
    racks = c.integer("racks", 1, minimum=1)
    if racks > hosts:
        raise InputError(c.key("racks"), racks, f"must be at most the cluster's {hosts:,} hosts")
    return racks


def _choice(t: _Table, name: str, default: str, allowed: tuple[str, ...]) -> str:
    v = t.string(name, default)
    if v not in allowed:
        raise InputError(t.key(name), v, f"must be one of {list(allowed)}")
    return str(v)


def _lease_order(c: _Table, is_trace: bool) -> str:
    from marketsim.agents.trace_rounds import LEASE_ORDERS

    if c.has("lease_order") and not is_trace:
        raise InputError(c.key("lease_order"), c.raw("lease_order"), "applies to trace workloads only")
    return _choice(c, "lease_order", "fastest", LEASE_ORDERS)


def _need(t: _Table, name: str) -> Any:
    raise InputError(t.key(name), None, "is required by this strategy")


def parse_scenario(data: Mapping[str, Any], name: str, base_dir: Path | None = None, source: str = "") -> Scenario:
    """Validate a parsed TOML document. ``base_dir`` resolves a relative ``profiles.file``."""
    top = _Table(dict(data), f"scenario {name}")
    name = check_name(top.key("name"), top.string("name", slug(name)) or slug(name))
    top.where = f"scenario {name}"
    description = top.string("description", "") or ""
    pol = top.array("policies", list(ALL_POLICIES)) or []
    policies = _strings(top.key("policies"), pol)
    if not policies:
        raise InputError(top.key("policies"), pol, "must name at least one mechanism")
    known = mechanism_names("fair-share")
    for i, p in enumerate(policies):
        if p not in known:
            raise InputError(
                f"{top.key('policies')}[{i}]", p, f"is not a registered fair-share mechanism; known: {known}"
            )
    if len(set(policies)) != len(policies):
        raise InputError(top.key("policies"), pol, "must not repeat a mechanism")
    rounds_given = top.has("rounds")
    rounds = top.integer("rounds", 24, minimum=1)
    if rounds > MAX_ROUNDS:
        raise InputError(top.key("rounds"), rounds, f"must be at most {MAX_ROUNDS:,} (size limit)")
    replications = top.integer("replications", 3, minimum=1)
    seed = top.integer("seed", 0, minimum=0)
    raw_wl = top.data.get("workload")
    is_trace = isinstance(raw_wl, dict) and ("trace" in raw_wl or "generator" in raw_wl)
    placement = top.string("placement", "ideal" if is_trace else "auto")
    if placement not in PLACEMENTS:
        raise InputError(top.key("placement"), placement, f"must be one of {list(PLACEMENTS)}")
    kappa = top.number("kappa", minimum=0.0)
    if kappa is not None and placement == "ideal":
        raise InputError(top.key("kappa"), kappa, "does nothing with placement = 'ideal' (no hosts, no lease spans "
                         "hosts); remove it or set placement = 'auto', 'oef' or 'naive'")  # fmt: skip
    kappa_rack = top.number("kappa_rack", DEFAULT_KAPPA_RACK, minimum=0.0)
    migration = top.number("migration_cost_s", 0.0, minimum=0.0)
    backfill = top.boolean("backfill", True)
    realisation = top.string("realisation")
    if realisation is not None and realisation not in REALISATION_CHOICES:
        raise InputError(top.key("realisation"), realisation, f"must be one of {list(REALISATION_CHOICES)}")
    stop_when_idle = top.boolean("stop_when_idle", True)

    c = top.table("cluster")
    gpu_types = _strings(c.key("gpu_types"), c.array("gpu_types", required=True) or [])
    if not gpu_types or len(set(gpu_types)) != len(gpu_types):
        raise InputError(c.key("gpu_types"), list(gpu_types), "must list distinct GPU type names, slowest first")
    gpus = _ints(c.key("gpus"), c.array("gpus", required=True) or [], minimum=0)
    if len(gpus) != len(gpu_types):
        raise InputError(c.key("gpus"), list(gpus), f"must have one count per GPU type ({len(gpu_types)})")
    if sum(gpus) == 0:
        raise InputError(c.key("gpus"), list(gpus), "must hold at least one GPU")
    if sum(gpus) > MAX_GPUS:
        raise InputError(c.key("gpus"), list(gpus), f"must hold at most {MAX_GPUS:,} GPUs in all (size limit)")
    cluster = ClusterSpec(
        gpu_types,
        gpus,
        gpus_per_host=c.integer("gpus_per_host", 4, minimum=1),
        racks=_racks(c, gpus),
        round_seconds=_round_seconds(c, 360.0 if is_trace else 300.0),
        reallocation_interval_s=c.number(
            "reallocation_interval_s", GAVEL_REALLOCATION_S if is_trace else 0.0, minimum=0.0
        ),  # fmt: skip
        lease_order=_lease_order(c, is_trace),
    )
    c.done()

    p = top.table("profiles")
    files: dict[str, str | None] = {}
    for key in ("file", "unconsolidated_file"):
        given = p.string(key)
        if given is not None:
            path = Path(given).expanduser()
            if not path.is_absolute():
                path = (base_dir or Path.cwd()) / path
            path = path.resolve()
            if not path.is_file():
                raise InputError(p.key(key), given, f"does not exist (resolved to {path})")
            given = str(path)
        files[key] = given
    file = files["file"]
    if files["unconsolidated_file"] is not None:
        if not is_trace:
            raise InputError(p.key("unconsolidated_file"), files["unconsolidated_file"], "is for trace workloads only")
        _cached_table(files["unconsolidated_file"], allow_missing=True)  # validate it now
    generator = p.string("generator", "assumed")
    if generator not in ("assumed", "ordered"):
        raise InputError(p.key("generator"), generator, "must be 'assumed' or 'ordered'")
    step = _numbers(p.key("step"), p.array("step", [1.0, 1.6]) or [], positive=True)
    if len(step) != 2 or step[1] < step[0]:
        raise InputError(p.key("step"), list(step), "must be [low, high] with 0 < low <= high")
    jts = p.array("job_types")
    profiles = ProfileSpec(
        file=file,
        unconsolidated_file=files["unconsolidated_file"],
        num_gpus=p.integer("num_gpus", 1, minimum=1),
        reference=p.string("reference", "slowest") or "slowest",
        generator=generator,
        step=(step[0], step[1]),
        job_types=_strings(p.key("job_types"), jts) if jts is not None else None,
        jitter=p.number("jitter", 0.03, minimum=0.0),
    )
    if profiles.jitter >= 1:
        raise InputError(p.key("jitter"), profiles.jitter, "must be < 1")
    if file is None and generator == "assumed" and not is_trace:
        if len(gpu_types) != 3:
            raise InputError(
                p.key("generator"),
                generator,
                f"'assumed' is the 3-type OEF table; the cluster has {len(gpu_types)} types",
            )
        for j in profiles.job_types or ():
            if j not in OEF_ASSUMED_SPEEDUPS:
                raise InputError(
                    p.key("job_types"), j, f"is not a model of the assumed table {list(OEF_ASSUMED_SPEEDUPS)}"
                )
    p.done()

    w = top.table("workload")
    if is_trace:  # GPU types slowest first by the table, never by list position (the lease order uses it)
        order = order_by_speed(_cached_table(file or str(data_path(GAVEL_THROUGHPUTS))), gpu_types)
        if order != tuple(gpu_types):
            gpus = tuple(gpus[gpu_types.index(g)] for g in order)
            gpu_types = order
            cluster = replace(cluster, gpu_types=gpu_types, gpus=gpus)
        workload = _trace_workload(w, base_dir, cluster, profiles, rounds_given, seed)
    else:
        for key in ("trace_format", "tenancy", "max_jobs", "duration_reference", "max_rounds", "jobs_per_hour"):
            if key in w.data:  # a trace key without `trace` (or `generator`): say what is missing
                raise InputError(w.key(key), w.data[key], "needs workload.trace (a trace file) or workload.generator")
        workload = _synthetic_workload(w)
    n_tenants = workload.tenants
    w.done()
    if is_trace:
        if top.has("tenant"):
            raise InputError(top.key("tenant"), top.data["tenant"], "is not supported with a trace workload")

    overrides: list[TenantOverride] = []
    for i, raw in enumerate(top.array("tenant", []) or []):
        t = _Table(raw, f"scenario {name}: tenant[{i}]")
        idx = t.integer("index", required=True, minimum=0)
        if idx >= n_tenants:
            raise InputError(t.key("index"), idx, f"must be < workload.tenants ({n_tenants})")
        jt = t.array("job_types")
        add = None
        if t.has("add_type"):
            a = t.table("add_type")
            if not isinstance(a.data, dict):
                raise InputError(t.key("add_type"), a.data, "must be a table {job_type, at_s, jobs}")
            a.raw("at_s", required=True)
            add = (a.string("job_type", required=True) or "", float(a.number("at_s", minimum=0.0)),
                   int(a.integer("jobs", required=True, minimum=1)))  # fmt: skip
            a.done()
            if add[2] > MAX_JOBS:
                raise InputError(t.key("add_type.jobs"), add[2], f"must be at most {MAX_JOBS:,} (size limit)")
        overrides.append(
            TenantOverride(
                idx,
                job_types=_strings(t.key("job_types"), jt) if jt is not None else None,
                weight=t.number("weight", positive=True),
                arrival_s=t.number("arrival_s", minimum=0.0),
                leave_s=t.number("leave_s", minimum=0.0),
                jobs=t.integer("jobs", minimum=1),
                add_type=add,
            )
        )
        if (overrides[-1].jobs or 0) > MAX_JOBS:
            raise InputError(t.key("jobs"), overrides[-1].jobs, f"must be at most {MAX_JOBS:,} (size limit)")
        t.done()
    if len({o.index for o in overrides}) != len(overrides):
        raise InputError(top.key("tenant"), [o.index for o in overrides], "must not repeat a tenant index")

    variants: list[VariantSpec] = []
    for i, raw in enumerate(top.array("variant", []) or []):
        t = _Table(raw, f"scenario {name}: variant[{i}]")
        vname = t.string("name", required=True) or ""
        if not vname or vname == TRUTHFUL:
            raise InputError(t.key("name"), vname, f"must be a non-empty name other than '{TRUTHFUL}'")
        ref = t.raw("tenant", required=True)
        if isinstance(ref, bool) or not isinstance(ref, (int, str)):
            raise InputError(t.key("tenant"), ref, "must be a tenant index or id")
        variants.append(VariantSpec(vname, ref, _strategy(t, gpu_types)))
        t.done()
    if len({v.name for v in variants}) != len(variants):
        raise InputError(top.key("variant"), [v.name for v in variants], "must have distinct names")
    failures: list[ServerFailure] = []
    raw_f = top.array("failure", []) or []
    hosts = {srv.host_id for srv in cluster.build().servers} if raw_f else set()
    for i, raw in enumerate(raw_f):
        t = _Table(raw, f"scenario {name}: failure[{i}]")
        host = t.string("host", required=True) or ""
        if host not in hosts:
            raise InputError(t.key("host"), host, f"is not a host of the cluster ({', '.join(sorted(hosts)[:6])}, ...)")
        at = t.number("at_s", t.raw("at_s", required=True), minimum=0.0)
        heal = t.number("heal_s", minimum=0.0)
        if heal is not None and heal <= at:
            raise InputError(t.key("heal_s"), heal, f"must be after at_s = {at}")
        failures.append(ServerFailure(host, float(at), None if heal is None else float(heal)))
        t.done()
    top.done()

    scen = Scenario(
        name=name,
        cluster=cluster,
        workload=workload,
        profiles=profiles,
        description=description,
        policies=policies,
        rounds=rounds,
        replications=replications,
        seed=seed,
        placement=placement,
        kappa=kappa,
        kappa_rack=kappa_rack,
        migration_cost_s=migration,
        backfill=backfill,
        realisation=realisation,
        failures=tuple(failures),
        stop_when_idle=stop_when_idle,
        tenants=tuple(overrides),
        variants=tuple(variants),
        source=source,
    )
    if is_trace:
        tw = scen.trace_workload()
        built = cluster.build()
        for p in policies:  # every job must be runnable under every policy, every key must do something
            ModelConfig(built, (), policy=p, rounds=1, trace=tw, placement=placement, kappa=kappa,
                        realisation=realisation)  # fmt: skip
        for v in variants:
            scen.deviator(v.name)  # validates the tenant reference against the trace's tenants
        return scen
    for v in variants:
        scen.deviator(v.name)  # validates the tenant reference
    base = scen.base_profiles()  # validates profile sources and job-type names
    for o in overrides:
        for jt in (*(o.job_types or ()), *((o.add_type[0],) if o.add_type else ())):
            if jt not in base:
                raise InputError(
                    f"scenario {name}: tenant index {o.index} job_types", jt, f"is not one of {list(base)}"
                )
    return scen


_TRACE_KEYS = ("trace", "trace_format", "tenancy", "max_jobs", "duration_reference", "max_rounds", "tenant_measures",
               "arrival_scale")  # fmt: skip
_GENERATOR_KEYS = ("generator", "jobs", "jobs_per_hour", "tenancy", "duration_reference", "max_rounds",
                   "tenant_measures")  # fmt: skip


def _trace_workload(
    w: _Table, base_dir: Path | None, cluster: ClusterSpec, profiles: ProfileSpec, rounds_given: bool, seed: int
) -> WorkloadSpec:
    """The ``[workload]`` table of a trace scenario (module docstring)."""
    if "generator" in w.data:
        return _generated_workload(w, rounds_given)
    _only_keys(w, _TRACE_KEYS, "a trace workload")
    raw = w.string("trace", required=True) or ""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    path = path.resolve()
    if not path.is_file():
        raise InputError(w.key("trace"), raw, f"does not exist (resolved to {path})")
    fmt = w.string("trace_format", "gavel")
    if fmt not in TRACE_FORMATS:
        raise InputError(w.key("trace_format"), fmt, f"must be one of {list(TRACE_FORMATS)}")
    tenancy = _tenancy(w, None if fmt in ("philly", "csv") else f"needs a trace with users; the {fmt} format has none")
    spec = TraceSpec(
        str(path),
        fmt or "gavel",
        tenancy,
        max_jobs=_max_jobs(w),
        duration_reference=w.string("duration_reference", "v100") or "v100",
        until_done=not rounds_given,
        max_rounds=_max_rounds(w),
        tenant_rows=_choice(w, "tenant_measures", "agents", TENANT_ROWS),
        arrival_scale=float(w.number("arrival_scale", 1.0, positive=True)),
    )
    table_path = profiles.file or str(data_path(GAVEL_THROUGHPUTS))
    tr = _cached_trace(spec.path, spec.format, table_path, cluster.gpu_types, seed, spec.duration_reference,
                       spec.max_jobs)  # fmt: skip
    if float(tr.arrival_s[-1]) * spec.arrival_scale > MAX_TRACE_SECONDS:
        why = f"puts the last arrival at {float(tr.arrival_s[-1]) * spec.arrival_scale:.3g} s; at most " \
              f"{MAX_TRACE_SECONDS:.0e} s (size limit)"  # fmt: skip
        raise InputError(w.key("arrival_scale"), spec.arrival_scale, why)
    n_tenants = tenancy if isinstance(tenancy, int) else len(set(tenant_of_jobs(tr, tenancy).tolist()))
    return WorkloadSpec(tenants=n_tenants, trace=spec)


def _round_seconds(c: _Table, default: float) -> float:
    """``[cluster] round_seconds`` within [:data:`MIN_ROUND_SECONDS`, :data:`MAX_ROUND_SECONDS`]."""
    v = float(c.number("round_seconds", default, positive=True))
    if not MIN_ROUND_SECONDS <= v <= MAX_ROUND_SECONDS:
        why = f"must be between {MIN_ROUND_SECONDS:g} and {MAX_ROUND_SECONDS:,.0f} s (size limit)"
        raise InputError(c.key("round_seconds"), v, why)
    return v


def _max_rounds(w: _Table) -> int:
    """``[workload] max_rounds`` (the safety cap of a trace run), 1 to :data:`MAX_ROUNDS`."""
    v = int(w.integer("max_rounds", 200_000, minimum=1))
    if v > MAX_ROUNDS:
        raise InputError(w.key("max_rounds"), v, f"must be at most {MAX_ROUNDS:,} (size limit)")
    return v


def _max_jobs(w: _Table) -> int | None:
    v = w.integer("max_jobs", minimum=1)
    if v is not None and v > MAX_TRACE_JOBS:
        raise InputError(w.key("max_jobs"), v, f"must be at most {MAX_TRACE_JOBS:,} (size limit)")
    return v


def _generated_jobs(w: _Table) -> int:
    """``[workload] jobs`` of a generated trace, 1 to :data:`marketsim.market.traces.MAX_TRACE_JOBS`, checked
    before the trace is drawn."""
    v = int(w.integer("jobs", required=True, minimum=1))
    if v > MAX_TRACE_JOBS:
        raise InputError(w.key("jobs"), v, f"must be at most {MAX_TRACE_JOBS:,} (size limit)")
    return v


def _only_keys(w: _Table, keys: tuple[str, ...], what: str) -> None:
    """Reject a ``[workload]`` key that ``what`` does not use, naming it and the keys it does."""
    other = sorted(set(w.data) - set(keys))
    if other:
        raise InputError(w.key(other[0]), w.data[other[0]], f"is not used with {what}; its keys: {list(keys)}")


def _tenancy(w: _Table, no_users: str | None) -> str | int:
    """``[workload] tenancy``: ``"job"``, ``"user"`` or an integer >= 1; ``no_users`` is the error
    for ``"user"`` when the jobs carry no users (``None``: they do)."""
    tenancy = w.raw("tenancy", "job")
    if isinstance(tenancy, bool) or not (tenancy in ("job", "user") or (isinstance(tenancy, int) and tenancy >= 1)):
        raise InputError(w.key("tenancy"), tenancy, "must be 'job', 'user' or an integer >= 1")
    if tenancy == "user" and no_users is not None:
        raise InputError(w.key("tenancy"), tenancy, no_users)
    return tenancy


def _generated_workload(w: _Table, rounds_given: bool) -> WorkloadSpec:
    """A ``[workload]`` with ``generator = "gavel"``: a generated trace (module docstring)."""
    _only_keys(w, _GENERATOR_KEYS, "a generated trace")
    gen = w.string("generator", required=True)
    if gen != "gavel":
        raise InputError(w.key("generator"), gen, "must be 'gavel' (Gavel's job generator)")
    tenancy = _tenancy(w, "needs a trace with users; generated jobs have none")
    spec = TraceSpec(
        "",
        "gavel",
        tenancy,
        duration_reference=w.string("duration_reference", "v100") or "v100",
        until_done=not rounds_given,
        max_rounds=_max_rounds(w),
        generator="gavel",
        tenant_rows=_choice(w, "tenant_measures", "agents", TENANT_ROWS),
        jobs=_generated_jobs(w),
        jobs_per_hour=float(w.number("jobs_per_hour", w.raw("jobs_per_hour", required=True), positive=True)),
    )
    # the generated trace has exactly `jobs` jobs (parse_scenario builds it once to validate it)
    n_tenants = tenancy if isinstance(tenancy, int) else spec.jobs
    return WorkloadSpec(tenants=n_tenants, trace=spec)


def _synthetic_workload(w: _Table) -> WorkloadSpec:
    """The ``[workload]`` table of a synthetic scenario (module docstring)."""
    wprobs = _numbers(w.key("workers_probs"), w.array("workers_probs", [0.6, 0.2, 0.15, 0.05]) or [], minimum=0.0)
    wvals = _ints(w.key("workers"), w.array("workers", [1, 2, 4, 8]) or [], minimum=1)
    if not wvals or len(wvals) != len(wprobs) or sum(wprobs) <= 0:
        raise InputError(
            w.key("workers_probs"), list(wprobs), f"must give one weight >= 0 per workers value {list(wvals)}"
        )
    n_tenants = w.integer("tenants", required=True, minimum=1)
    if n_tenants > MAX_TENANTS:
        raise InputError(w.key("tenants"), n_tenants, f"must be at most {MAX_TENANTS:,} (size limit)")
    weights = w.array("weights")
    choice = w.string("job_type_choice", "random")
    if choice not in ("random", "cycle"):
        raise InputError(w.key("job_type_choice"), choice, "must be 'random' or 'cycle'")
    workload = WorkloadSpec(
        tenants=n_tenants,
        job_types_per_tenant=w.integer("job_types_per_tenant", 1, minimum=1),
        job_type_choice=choice,
        jobs_per_tenant=w.number("jobs_per_tenant", 6, minimum=1.0),
        jobs_poisson=w.boolean("jobs_poisson", False),
        workers=wvals,
        workers_probs=wprobs,
        duration_median_s=w.number("duration_median_s", 1800.0, positive=True),
        duration_sigma=w.number("duration_sigma", 1.0, minimum=0.0),
        duration_cap_s=w.number("duration_cap_s", 86400.0, positive=True),
        backlogged=w.boolean("backlogged", False),
        duration_rule=_choice(w, "duration_rule", "lognormal", ("lognormal", "gavel")),
        arrival_window_s=w.number("arrival_window_s", 0.0, minimum=0.0),
        weights=_numbers(w.key("weights"), weights, positive=True) if weights is not None else None,
    )
    if n_tenants * workload.jobs_per_tenant > MAX_JOBS:
        raise InputError(w.key("jobs_per_tenant"), workload.jobs_per_tenant,
                         f"gives {n_tenants:,} tenants x {workload.jobs_per_tenant:g} jobs; at most {MAX_JOBS:,} "
                         "jobs in all (size limit)")  # fmt: skip
    if workload.weights is not None and len(workload.weights) != n_tenants:
        raise InputError(w.key("weights"), weights, f"must have one weight per tenant ({n_tenants})")
    return workload


def scenario_names() -> list[str]:
    """Names of the scenarios shipped with the package (``scenarios/*.toml``)."""
    return sorted(embedded())


def load_scenario(name_or_path: str | Path) -> Scenario:
    """Load an embedded scenario by name (see :func:`scenario_names`) or a TOML file by path."""
    text_path = str(name_or_path)
    shipped = embedded_file(text_path)
    if "/" not in text_path and not text_path.endswith(".toml") and shipped is not None:
        with resources.as_file(shipped) as real:
            return _load_file(Path(real), text_path)
    path = Path(text_path).expanduser()
    if path.suffix != ".toml" and not path.exists():
        raise InputError("scenario", text_path, f"is neither an embedded scenario {scenario_names()} nor a file")
    if path.is_dir():
        raise InputError("scenario", text_path, "is a directory, not a scenario TOML file")
    if not path.is_file():
        raise InputError("scenario", text_path, "does not exist")
    return _load_file(path, path.stem)


def _load_file(path: Path, default_name: str) -> Scenario:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"scenario file {path}", "", f"is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"scenario file {path}", "", "is not UTF-8 text") from None
    return parse_scenario(data, default_name, base_dir=path.parent, source=str(path))
