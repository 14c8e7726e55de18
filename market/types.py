"""Core plain-data types: GPU types, servers, edge sites, tenants and the cluster.

All are frozen dataclasses validated on construction; invalid values raise
:class:`marketsim.market.errors.InputError` naming the field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from marketsim.market.errors import InputError, check_finite, check_int, check_nonneg, check_positive

__all__ = ["GpuType", "GpuServer", "EdgeSite", "JobType", "Tenant", "Cluster"]


@dataclass(frozen=True)
class GpuType:
    """A GPU model. ``rank`` orders types from slowest (0) to fastest; it is the column index of
    every speedup and allocation matrix.

    :param name: the model's name, e.g. ``"V100"``
    :param rank: 0 for the slowest type, k-1 for the fastest
    :raises InputError: an empty name or a negative rank
    """

    name: str
    rank: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("GpuType.name", self.name, "must be a non-empty string")
        check_int(f"GpuType[{self.name}].rank", self.rank, minimum=0)


@dataclass(frozen=True)
class GpuServer:
    """A host with ``count`` GPUs of type index ``gpu_type`` at topology node ``node``.

    ``cpu`` (vCPUs), ``mem_gb`` and ``bandwidth_gbps`` are the host's other capacities (used by the
    auction mechanisms; OEF only reads the GPU count).

    :param host_id: the host's unique id
    :param gpu_type: the index (rank) of its GPU type
    :param count: GPUs on the host, >= 0
    :param node: its node in the cluster's topology graph (``None``: none)
    :param cpu: vCPUs, >= 0
    :param mem_gb: memory in GB, >= 0
    :param bandwidth_gbps: network bandwidth in Gbit/s, >= 0
    :raises InputError: an empty id, a negative count, index or capacity
    """

    host_id: str
    gpu_type: int
    count: int
    node: str | None = None
    cpu: float = 32.0
    mem_gb: float = 256.0
    bandwidth_gbps: float = 100.0

    def __post_init__(self) -> None:
        if not self.host_id:
            raise InputError("GpuServer.host_id", self.host_id, "must be a non-empty string")
        check_int(f"GpuServer[{self.host_id}].gpu_type", self.gpu_type, minimum=0)
        check_int(f"GpuServer[{self.host_id}].count", self.count, minimum=0)
        check_nonneg(f"GpuServer[{self.host_id}].cpu", self.cpu)
        check_nonneg(f"GpuServer[{self.host_id}].mem_gb", self.mem_gb)
        check_nonneg(f"GpuServer[{self.host_id}].bandwidth_gbps", self.bandwidth_gbps)


@dataclass(frozen=True)
class EdgeSite:
    """An edge site: compute capacity per resource type and local data chunks per data set.

    :param site_id: the site's unique id
    :param capacity: resource name -> capacity (units of that resource), each >= 0
    :param data_chunks: data set name -> chunks stored at the site, each an integer >= 0
    :raises InputError: an empty id, a negative capacity or chunk count
    """

    site_id: str
    capacity: Mapping[str, float]
    data_chunks: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.site_id:
            raise InputError("EdgeSite.site_id", self.site_id, "must be a non-empty string")
        for r, v in self.capacity.items():
            check_nonneg(f"EdgeSite[{self.site_id}].capacity[{r}]", v)
        for d, v in self.data_chunks.items():
            check_int(f"EdgeSite[{self.site_id}].data_chunks[{d}]", v, minimum=0)


@dataclass(frozen=True)
class JobType:
    """A kind of job a tenant runs: its true per-GPU-type speedup vector (``speedups[0]`` is the
    slowest type, normalised to 1 by the mechanisms) and the job sizes.

    :param name: the job type's name, unique within its tenant
    :param speedups: throughput on each GPU type, slowest type first, each > 0 (relative units)
    :raises InputError: an empty name or speedup vector, or a speedup that is not finite and > 0
    """

    name: str
    speedups: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.name:
            raise InputError("JobType.name", self.name, "must be a non-empty string")
        if len(self.speedups) == 0:
            raise InputError(f"JobType[{self.name}].speedups", self.speedups, "must not be empty")
        vals = tuple(check_positive(f"JobType[{self.name}].speedups[{j}]", v) for j, v in enumerate(self.speedups))
        object.__setattr__(self, "speedups", vals)


@dataclass(frozen=True)
class Tenant:
    """A tenant: priority ``weight`` > 0 and one or more job types with true speedup vectors.

    :param tenant_id: the tenant's unique id
    :param job_types: its job types (distinct names, the same number of GPU types each)
    :param weight: its priority, > 0 (1 = equal share)
    :raises InputError: an empty id, no job types, duplicate names, unequal lengths or a weight <= 0
    """

    tenant_id: str
    job_types: tuple[JobType, ...]
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.tenant_id:
            raise InputError("Tenant.tenant_id", self.tenant_id, "must be a non-empty string")
        check_positive(f"Tenant[{self.tenant_id}].weight", self.weight)
        if len(self.job_types) == 0:
            raise InputError(f"Tenant[{self.tenant_id}].job_types", self.job_types, "must not be empty")
        names = [jt.name for jt in self.job_types]
        if len(set(names)) != len(names):
            raise InputError(f"Tenant[{self.tenant_id}].job_types", names, "must have distinct names")
        k = {len(jt.speedups) for jt in self.job_types}
        if len(k) != 1:
            raise InputError(f"Tenant[{self.tenant_id}].job_types", names, "must all have the same number of GPU types")


@dataclass(frozen=True)
class Cluster:
    """A GPU cluster: GPU types (sorted by rank), servers, and the networkx topology they sit on.

    ``graph`` nodes carry a ``kind`` attribute (``"server"``, ``"switch"``, ``"site"``); edges carry
    ``bandwidth_gbps`` and ``latency_ms``. ``round_seconds`` is the scheduling round length.

    :param types: the GPU types, sorted by rank 0..k-1
    :param servers: the hosts (distinct ids)
    :param graph: the topology; empty when there is none
    :param round_seconds: the scheduling round length in seconds, > 0
    :raises InputError: no types, unsorted ranks, duplicate host ids, a host of an unknown type or node
    """

    types: tuple[GpuType, ...]
    servers: tuple[GpuServer, ...]
    graph: nx.Graph = field(default_factory=nx.Graph, compare=False)
    round_seconds: float = 300.0

    def __post_init__(self) -> None:
        if len(self.types) == 0:
            raise InputError("Cluster.types", self.types, "must list at least one GPU type")
        ranks = [t.rank for t in self.types]
        if ranks != list(range(len(self.types))):
            raise InputError("Cluster.types", [t.name for t in self.types], "must be sorted by rank 0..k-1")
        ids = [s.host_id for s in self.servers]
        if len(set(ids)) != len(ids):
            raise InputError("Cluster.servers", ids, "must have distinct host ids")
        for s in self.servers:
            if s.gpu_type >= len(self.types):
                raise InputError(f"GpuServer[{s.host_id}].gpu_type", s.gpu_type, f"must be < {len(self.types)} (k)")
            if s.node is not None and self.graph.number_of_nodes() and s.node not in self.graph:
                raise InputError(f"GpuServer[{s.host_id}].node", s.node, "is not a node of the topology")
        check_positive("Cluster.round_seconds", self.round_seconds)

    @property
    def k(self) -> int:
        """Number of GPU types."""
        return len(self.types)

    @property
    def capacity(self) -> np.ndarray:
        """``m``: devices per GPU type, shape (k,), int."""
        m = np.zeros(self.k, dtype=int)
        for s in self.servers:
            m[s.gpu_type] += s.count
        return m

    def type_index(self, name: str) -> int:
        """Column index of the GPU type called ``name``.

        :param name: a GPU type's name
        :returns: its rank (0 = slowest)
        :raises InputError: no type of that name
        """
        for t in self.types:
            if t.name == name:
                return t.rank
        raise InputError("gpu type", name, f"is not one of {[t.name for t in self.types]}")

    @staticmethod
    def from_counts(
        counts: Mapping[str, int] | Sequence[tuple[str, int]],
        gpus_per_host: int = 4,
        round_seconds: float = 300.0,
    ) -> Cluster:
        """A single-rack cluster with ``counts[name]`` GPUs per type (slowest first), packed
        ``gpus_per_host`` to a host on one switch.

        :param counts: GPU type name -> number of GPUs (a mapping or ``(name, count)`` pairs), slowest first
        :param gpus_per_host: GPUs per host, >= 1
        :param round_seconds: the scheduling round length in seconds
        :returns: the cluster (see :func:`single_rack`)
        """
        items = list(counts.items()) if isinstance(counts, Mapping) else list(counts)
        check_int("gpus_per_host", gpus_per_host, minimum=1)
        for name, c in items:
            check_int(f"counts[{name}]", c, minimum=0)
        return single_rack(items, gpus_per_host=gpus_per_host, round_seconds=round_seconds)


MAX_GPUS_PER_TYPE = 10**7
"""Largest GPU count of one type a capacity vector may hold (keeps LPs well scaled and ints exact)."""


def check_capacity_vector(field_name: str, m: object, k: int | None = None) -> np.ndarray:
    """Validate a GPU capacity vector: integers in ``[0, MAX_GPUS_PER_TYPE]`` (length ``k`` when
    given).

    :param field_name: the input's name, shown in errors
    :param m: GPUs per type
    :param k: the required length; ``None``: any
    :returns: ``m`` as an int array of shape (k,)
    :raises InputError: not a vector of length ``k``, or an entry that is not a whole number in range
    """
    arr = np.asarray(m, dtype=float) if not isinstance(m, np.ndarray) else m.astype(float)
    if arr.ndim != 1 or (k is not None and arr.size != k):
        raise InputError(field_name, m, f"must be a vector of length {k if k is not None else 'k'}")
    for j, v in enumerate(arr):
        check_finite(f"{field_name}[{j}]", v)
        if v < 0:
            raise InputError(f"{field_name}[{j}]", v, "must be >= 0 (a negative capacity)")
        if v > MAX_GPUS_PER_TYPE:
            raise InputError(f"{field_name}[{j}]", v, f"must be at most {MAX_GPUS_PER_TYPE:,} GPUs of one type")
        if v != int(v):
            raise InputError(f"{field_name}[{j}]", v, "must be a whole number of GPUs")
    return arr.astype(int)


# -- single-rack topology (here so Cluster.from_counts needs no import of marketsim.market.topology, which
# imports this module; marketsim.market.topology re-exports single_rack) ----------------------------------


def _types(type_names: Sequence[str]) -> tuple[GpuType, ...]:
    if len(type_names) == 0:
        raise InputError("gpu types", list(type_names), "must list at least one GPU type")
    if len(set(type_names)) != len(type_names):
        raise InputError("gpu types", list(type_names), "must be distinct")
    return tuple(GpuType(name, r) for r, name in enumerate(type_names))


def _add_hosts(
    g: nx.Graph,
    switch: str,
    counts: Sequence[tuple[int, int]],
    gpus_per_host: int,
    prefix: str,
    bandwidth_gbps: float,
    latency_ms: float,
) -> list[GpuServer]:
    """Attach hosts for ``(type index, GPU count)`` pairs under ``switch``; ids ``{prefix}h{i}``."""
    servers: list[GpuServer] = []
    h = 0
    for j, count in counts:
        check_int(f"GPU count of type {j}", count, minimum=0)
        left = int(count)
        while left > 0:
            c = min(gpus_per_host, left)
            host = f"{prefix}h{h}"
            g.add_node(host, kind="server", gpu_type=j, gpus=c)
            g.add_edge(switch, host, bandwidth_gbps=bandwidth_gbps, latency_ms=latency_ms)
            servers.append(GpuServer(host, j, c, node=host, bandwidth_gbps=bandwidth_gbps))
            left -= c
            h += 1
    return servers


def single_rack(
    counts: Sequence[tuple[str, int]],
    gpus_per_host: int = 4,
    bandwidth_gbps: float = 100.0,
    latency_ms: float = 0.01,
    round_seconds: float = 300.0,
) -> Cluster:
    """One switch (star topology) with hosts of ``gpus_per_host`` same-type GPUs.

    ``counts`` lists ``(gpu type name, number of GPUs)`` slowest first, e.g. the OEF testbed
    ``[("RTX3070", 8), ("RTX3080", 8), ("RTX3090", 8)]`` gives six 4-GPU hosts h0..h5.

    :param counts: ``(GPU type name, number of GPUs)`` pairs, slowest type first
    :param gpus_per_host: GPUs per host, >= 1 (the last host of a type may hold fewer)
    :param bandwidth_gbps: each host's link to the switch, Gbit/s, > 0
    :param latency_ms: each link's latency in ms, >= 0
    :param round_seconds: the scheduling round length in seconds
    :returns: the cluster
    """
    check_int("gpus_per_host", gpus_per_host, minimum=1)
    check_positive("bandwidth_gbps", bandwidth_gbps)
    check_nonneg("latency_ms", latency_ms)
    types = _types([n for n, _ in counts])
    g = nx.Graph()
    g.add_node("switch", kind="switch")
    servers = _add_hosts(
        g, "switch", [(j, c) for j, (_, c) in enumerate(counts)], gpus_per_host, "", bandwidth_gbps, latency_ms
    )
    return Cluster(types, tuple(servers), g, round_seconds)
