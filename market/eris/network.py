"""Links and routing for both bandwidth modes (spec §3.7, D1, D24).

``Links`` holds per-link per-slot capacity ``cap[e]`` (MB), price base ``gamma[e]``, the pair
incidence ``inc[r, r', e]`` (link e lies on the path r -> r'), the admissibility matrix and the
path latencies. Global mode has one link ``"B"`` on every pair path.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from marketsim.market.eris.types import ErisConfig, ErisSites, NetworkSpec
from marketsim.market.errors import InputError, check_finite

__all__ = ["Links", "build_links"]


@dataclass(frozen=True)
class Links:
    """Routing tables. ``paths[r][r']`` is the list of link indices of path r -> r' (rows are
    0-based site rows); ``admissible[r, r']`` says whether r and r' may exchange data/parameters."""

    names: tuple[str, ...]
    cap: np.ndarray
    gamma: np.ndarray
    inc: np.ndarray
    paths: tuple[tuple[tuple[int, ...], ...], ...]
    admissible: np.ndarray
    latency: np.ndarray
    hops: np.ndarray
    mode: str

    @property
    def L(self) -> int:
        return len(self.names)


def _edge_capacity(spec: NetworkSpec, u: object, v: object, data: dict) -> float:
    if "capacity_mb" in data and data["capacity_mb"] is not None:
        c = check_finite(f"graph edge ({u!r}, {v!r}).capacity_mb", data["capacity_mb"])
    elif "bandwidth_mbps" in data and data["bandwidth_mbps"] is not None:
        c = check_finite(f"graph edge ({u!r}, {v!r}).bandwidth_mbps", data["bandwidth_mbps"])
        c = c * 60.0 * spec.slot_minutes / 8.0
    elif "bandwidth_gbps" in data and data["bandwidth_gbps"] is not None:
        c = check_finite(f"graph edge ({u!r}, {v!r}).bandwidth_gbps", data["bandwidth_gbps"])
        c = c * 1000.0 * 60.0 * spec.slot_minutes / 8.0
    else:
        raise InputError(f"graph edge ({u!r}, {v!r})", data, "needs capacity_mb, bandwidth_mbps or bandwidth_gbps")
    if c <= 0:
        raise InputError(f"graph edge ({u!r}, {v!r}) capacity", c, "must be > 0 (MB per slot)")
    return c


def build_links(spec: NetworkSpec, sites: ErisSites, cfg: ErisConfig) -> Links:
    """BUILD_LINKS of spec §3.7 (validates the topology)."""
    R = sites.R
    if spec.mode == "global":
        inc = np.ones((R, R, 1), dtype=bool)
        inc[np.arange(R), np.arange(R), 0] = False
        paths = tuple(tuple(((0,) if r != q else ()) for q in range(R)) for r in range(R))
        adm = np.ones((R, R), dtype=bool)
        return Links(
            ("B",),
            np.array([float(spec.budget_mb)]),
            np.array([float(cfg.gamma_d)]),
            inc,
            paths,
            adm,
            np.zeros((R, R)),
            (~np.eye(R, dtype=bool)).astype(int),
            "global",
        )
    g0 = spec.graph
    if not isinstance(g0, nx.Graph) or g0.is_directed():
        raise InputError("NetworkSpec.graph", g0, "must be an undirected networkx Graph")
    nodes = set(g0.nodes)
    if nodes != set(sites.ids):
        extra = sorted(map(repr, nodes - set(sites.ids)))[:5]
        missing = sorted(map(repr, set(sites.ids) - nodes))[:5]
        raise InputError(
            "NetworkSpec.graph nodes", {"not sites": extra, "sites not in graph": missing}, "must equal the site ids"
        )
    if R > 1 and not nx.is_connected(g0):
        raise InputError(
            "NetworkSpec.graph",
            f"{nx.number_connected_components(g0)} components",
            "must be connected (data and parameters must be able to move between sites)",
        )
    row = {sid: i for i, sid in enumerate(sites.ids)}
    g = nx.Graph()
    g.add_nodes_from(range(R))
    names: list[str] = []
    caps: list[float] = []
    gam: list[float] = []
    edges = sorted((min(row[u], row[v]), max(row[u], row[v]), u, v, d) for u, v, d in g0.edges(data=True))
    for a, b, u, v, d in edges:
        lat = check_finite(f"graph edge ({u!r}, {v!r}).latency_ms", d.get("latency_ms", 0.0))
        if lat < 0:
            raise InputError(f"graph edge ({u!r}, {v!r}).latency_ms", lat, "must be >= 0")
        gm = check_finite(f"graph edge ({u!r}, {v!r}).gamma", d.get("gamma", cfg.gamma_d))
        if gm <= 1:
            raise InputError(f"graph edge ({u!r}, {v!r}).gamma", gm, "must be > 1")
        names.append(f"{sites.ids[a]}-{sites.ids[b]}")
        caps.append(_edge_capacity(spec, u, v, d))
        gam.append(gm)
        g.add_edge(a, b, latency_ms=lat, hops=1.0, idx=len(names) - 1)
    if spec.global_budget_mb is not None:
        names.append("B")
        caps.append(float(spec.global_budget_mb))
        gam.append(float(cfg.gamma_d))
    L = len(names)
    inc = np.zeros((R, R, L), dtype=bool)
    lat_m = np.zeros((R, R))
    hops = np.zeros((R, R), dtype=int)
    paths = [[() for _ in range(R)] for _ in range(R)]
    weight = spec.route_weight
    for r in range(R):
        _, sp = nx.single_source_dijkstra(g, r, weight=weight)
        for q in range(r + 1, R):
            nodes_path = sp[q]
            idx = [g.edges[nodes_path[i], nodes_path[i + 1]]["idx"] for i in range(len(nodes_path) - 1)]
            if spec.global_budget_mb is not None:
                idx.append(L - 1)
            lat = sum(g.edges[nodes_path[i], nodes_path[i + 1]]["latency_ms"] for i in range(len(nodes_path) - 1))
            paths[r][q] = tuple(idx)
            paths[q][r] = tuple(idx)
            inc[r, q, idx] = True
            inc[q, r, idx] = True
            lat_m[r, q] = lat_m[q, r] = lat
            hops[r, q] = hops[q, r] = len(nodes_path) - 1
    adm = np.ones((R, R), dtype=bool)
    if spec.max_path_latency_ms is not None:
        adm = lat_m <= spec.max_path_latency_ms + 1e-12
    return Links(
        tuple(names), np.array(caps), np.array(gam), inc, tuple(tuple(p) for p in paths), adm, lat_m, hops, "topology"
    )
