"""Topology builders: networkx graphs of servers, switches and edge sites.

Node attribute ``kind`` is ``"server"``, ``"switch"`` or ``"site"``; server nodes also carry
``gpu_type`` (index) and ``gpus`` (count). Edge attributes: ``bandwidth_gbps`` and ``latency_ms``.
Randomised builders take an explicit ``numpy.random.Generator`` (never the global RNG).
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from marketsim.market.errors import InputError, check_int, check_positive
from marketsim.market.types import Cluster, EdgeSite, GpuServer, _add_hosts, _types, single_rack

__all__ = ["single_rack", "multi_rack_tree", "random_geometric_edge", "shortest_path_latency"]


def multi_rack_tree(
    racks: Sequence[Sequence[tuple[str, int]]],
    type_names: Sequence[str],
    gpus_per_host: int = 4,
    rack_bandwidth_gbps: float = 100.0,
    core_bandwidth_gbps: float = 40.0,
    rack_latency_ms: float = 0.01,
    core_latency_ms: float = 0.1,
    round_seconds: float = 300.0,
) -> Cluster:
    """A two-level tree: a core switch, one top-of-rack switch per rack, hosts under each ToR.

    ``racks[r]`` lists ``(gpu type name, number of GPUs)`` in rack ``r``; ``type_names`` fixes the
    column order (slowest first). Host ids are ``r{rack}h{i}``.

    :param racks: per rack, ``(GPU type name, number of GPUs)`` pairs
    :param type_names: the GPU type names, slowest first (the column order)
    :param gpus_per_host: GPUs per host, >= 1
    :param rack_bandwidth_gbps: each host's link to its top-of-rack switch, Gbit/s, > 0
    :param core_bandwidth_gbps: each top-of-rack switch's link to the core, Gbit/s, > 0
    :param rack_latency_ms: host link latency, ms
    :param core_latency_ms: rack-to-core latency, ms
    :param round_seconds: the scheduling round length in seconds
    :returns: the cluster
    :raises InputError: no rack, a non-positive bandwidth or an unknown GPU type name
    """
    if len(racks) == 0:
        raise InputError("racks", list(racks), "must contain at least one rack")
    check_positive("core_bandwidth_gbps", core_bandwidth_gbps)
    check_positive("rack_bandwidth_gbps", rack_bandwidth_gbps)
    types = _types(list(type_names))
    index = {t.name: t.rank for t in types}
    g = nx.Graph()
    g.add_node("core", kind="switch")
    servers: list[GpuServer] = []
    for r, rack in enumerate(racks):
        tor = f"tor{r}"
        g.add_node(tor, kind="switch")
        g.add_edge("core", tor, bandwidth_gbps=core_bandwidth_gbps, latency_ms=core_latency_ms)
        for name, _ in rack:
            if name not in index:
                raise InputError(f"racks[{r}] gpu type", name, f"is not one of {list(type_names)}")
        servers += _add_hosts(
            g, tor, [(index[name], c) for name, c in rack], gpus_per_host, f"r{r}", rack_bandwidth_gbps, rack_latency_ms
        )
    return Cluster(types, tuple(servers), g, round_seconds)


def random_geometric_edge(
    n_sites: int,
    rng: np.random.Generator,
    radius: float = 0.35,
    capacity: dict[str, float] | None = None,
    bandwidth_range_gbps: tuple[float, float] = (1.0, 10.0),
    latency_per_unit_ms: float = 20.0,
) -> tuple[nx.Graph, tuple[EdgeSite, ...]]:
    """A connected random geometric graph of ``n_sites`` edge sites in the unit square.

    Edges join sites closer than ``radius``; if the graph is disconnected, each component is
    joined to its nearest neighbour component (so data can always move). Edge ``latency_ms`` is
    proportional to distance; ``bandwidth_gbps`` is drawn uniformly from ``bandwidth_range_gbps``.
    All randomness comes from ``rng``. Returns the graph (nodes ``s0..``) and the sites.

    :param n_sites: the number of sites, >= 1
    :param rng: the random generator
    :param radius: the connection radius in the unit square, > 0
    :param capacity: each site's capacity by resource; ``None``: ``{"gpu": 4, "cpu": 32}``
    :param bandwidth_range_gbps: ``(low, high)`` of the uniform edge bandwidth, Gbit/s
    :param latency_per_unit_ms: edge latency per unit of distance, ms
    :returns: ``(graph, sites)``
    :raises InputError: a bad count, radius or bandwidth range
    """
    check_int("n_sites", n_sites, minimum=1)
    check_positive("radius", radius)
    lo, hi = bandwidth_range_gbps
    check_positive("bandwidth_range_gbps[0]", lo)
    if hi < lo:
        raise InputError("bandwidth_range_gbps", bandwidth_range_gbps, "must be (low, high) with low <= high")
    cap = dict(capacity) if capacity is not None else {"gpu": 4.0, "cpu": 32.0}
    pos = rng.random((n_sites, 2))
    names = [f"s{i}" for i in range(n_sites)]
    g = nx.Graph()
    for i, name in enumerate(names):
        g.add_node(name, kind="site", pos=(float(pos[i, 0]), float(pos[i, 1])))
    d = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
    ii, jj = np.nonzero(np.triu(d < radius, k=1))
    for i, j in zip(ii.tolist(), jj.tolist(), strict=True):
        g.add_edge(
            names[i],
            names[j],
            latency_ms=float(d[i, j] * latency_per_unit_ms),
            bandwidth_gbps=float(rng.uniform(lo, hi)),
        )
    comps = [sorted(c) for c in nx.connected_components(g)]
    comps.sort(key=lambda c: names.index(c[0]))
    while len(comps) > 1:
        a = [names.index(x) for x in comps[0]]
        b = [names.index(x) for c in comps[1:] for x in c]
        sub = d[np.ix_(a, b)]
        i, j = np.unravel_index(int(np.argmin(sub)), sub.shape)
        u, v = a[i], b[j]
        g.add_edge(
            names[u],
            names[v],
            latency_ms=float(d[u, v] * latency_per_unit_ms),
            bandwidth_gbps=float(rng.uniform(lo, hi)),
        )
        comps = [sorted(c) for c in nx.connected_components(g)]
        comps.sort(key=lambda c: names.index(c[0]))
    sites = tuple(EdgeSite(name, cap) for name in names)
    return g, sites


def shortest_path_latency(g: nx.Graph, a: str, b: str) -> float:
    """Latency in ms of the lowest-latency path between nodes ``a`` and ``b``.

    :param g: the topology (edges carry ``latency_ms``)
    :param a: a node of ``g``
    :param b: a node of ``g``
    :returns: the path's total latency, ms
    :raises InputError: a node not in ``g``, or no path
    """
    for node in (a, b):
        if node not in g:
            raise InputError("node", node, "is not in the topology")
    try:
        return float(nx.shortest_path_length(g, a, b, weight="latency_ms"))
    except nx.NetworkXNoPath:
        raise InputError("topology", f"{a} -> {b}", "has no path between these nodes (disconnected)") from None
