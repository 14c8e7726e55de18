"""Instance generators of the Eris evaluation (spec §5): the Table-II job generator, the testbed
(R = 9, I = 10, T = 50), the simulator (R = 50, I = 100, T = 150) and its sweeps over R, I and
gamma, and the topology-mode scenario. All randomness comes from an explicit Generator."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from marketsim.market.eris.types import RESOURCES, ErisConfig, ErisJob, ErisSites, NetworkSpec
from marketsim.market.errors import InputError, check_int
from marketsim.market.utility import SigmoidUtility

__all__ = [
    "TABLE_II",
    "generate_jobs",
    "ErisInstance",
    "eris_testbed",
    "eris_simulator",
    "eris_topology",
    "watts_strogatz_sites",
    "SWEEP_R",
    "SWEEP_I",
    "SWEEP_GAMMA",
    "sweep",
]

# (model, dataset, chunks D_i, tensor MB = lambda_i)
TABLE_II: tuple[tuple[str, str, int, float], ...] = (
    ("ResNet-50", "CIFAR10", 27, 97.4),
    ("ResNet-101", "CIFAR10", 27, 169.9),
    ("GoogLeNet", "Caltech101", 115, 25.9),
    ("LeNet", "Caltech101", 115, 283.0),
    ("AlexNet", "Tiny-ImageNet", 150, 237.9),
    ("Inception-BN", "Tiny-ImageNet", 150, 42.9),
)
SWEEP_R = (10, 25, 50, 100, 200)
SWEEP_I = (50, 100, 150, 200, 300)
SWEEP_GAMMA = (2.0, 10.0, 100.0, 1000.0, 10000.0)


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy.random.Generator (no global RNG)")
    return rng


def generate_jobs(
    I: int,
    R: int,
    arrival_window: int,
    rng: np.random.Generator,
    *,
    data_sites: tuple[int, int] = (2, 6),
    calib_workers: int = 4,
    calib_slots: tuple[int, int] = (6, 12),
    ps_gpu_choices: tuple[int, ...] = (0,),
    site_ids: tuple | None = None,
) -> list[ErisJob]:
    """GENERATE_JOBS of spec §5.1 (draw order as listed there); job ids 1..I sorted by (a, draw)."""
    check_int("I", I, minimum=0)
    check_int("R", R, minimum=1)
    check_int("arrival_window", arrival_window, minimum=1)
    rng = _check_rng(rng)
    ids = site_ids if site_ids is not None else tuple(range(1, R + 1))
    if len(ids) != R:
        raise InputError("site_ids", site_ids, f"must have R = {R} entries")
    drawn = []
    for idx in range(I):
        model, dataset, D, lam = TABLE_II[int(rng.integers(len(TABLE_II)))]
        E = int(rng.integers(20, 31))
        w = np.array([rng.integers(0, 2), rng.integers(1, 4), rng.integers(2, 7)], float)
        s = np.array([rng.choice(ps_gpu_choices), rng.integers(1, 4), rng.integers(2, 7)], float)
        tau = float(rng.uniform(1.0, 2.0))
        a = int(rng.integers(1, arrival_window + 1))
        lo, hi = data_sites
        n_src = int(rng.integers(min(lo, R), min(R, hi) + 1))
        where = rng.choice(R, size=n_src, replace=False)
        cuts = np.sort(rng.choice(np.arange(1, D), size=n_src - 1, replace=False)) if n_src > 1 else np.array([], int)
        parts = np.diff(np.concatenate(([0], cuts, [D])))
        S0 = int(rng.integers(calib_slots[0], calib_slots[1] + 1))
        P = -(-E * D // (calib_workers * S0))
        data = {ids[int(r)]: int(p) for r, p in zip(where, parts, strict=True)}
        drawn.append(
            (a, idx, SigmoidUtility(3000.0 * tau, 1.0 / 3.0, 0.0), data, E, w, s, P, lam, f"{model}/{dataset}")
        )
    drawn.sort(key=lambda x: (x[0], x[1]))
    return [
        ErisJob(i + 1, a, u, data, E, w, s, P, lam, name)
        for i, (a, _, u, data, E, w, s, P, lam, name) in enumerate(drawn)
    ]


@dataclass(frozen=True)
class ErisInstance:
    """A ready-to-run instance: sites, network, config and the (true) jobs."""

    sites: ErisSites
    network: NetworkSpec
    config: ErisConfig
    jobs: tuple[ErisJob, ...]


def _sites(R: int, cap: tuple[float, float, float]) -> ErisSites:
    return ErisSites(tuple(range(1, R + 1)), np.tile(np.array(cap, float), (R, 1)), RESOURCES)


def eris_testbed(rng: np.random.Generator, *, I: int = 10, gamma: float = 1000.0) -> ErisInstance:
    """§5.2: R = 9 sites of (1 GPU, 12 cores, 16 GB), T = 50, I = 10 jobs arriving in 1..40, global mode."""
    jobs = generate_jobs(I, 9, 40, rng)
    return ErisInstance(
        _sites(9, (1, 12, 16)),
        NetworkSpec(budget_mb=20480.0),
        ErisConfig(horizon=50, gamma_d=gamma, gamma_k=gamma),
        tuple(jobs),
    )


def eris_simulator(
    rng: np.random.Generator, *, R: int = 50, I: int = 100, T: int = 150, gamma: float = 1000.0
) -> ErisInstance:
    """§5.3: per site (4 GPU, 24 cores, 32 GB), B = 20480 MB, arrivals U{1..T}, global mode."""
    jobs = generate_jobs(I, R, T, rng)
    return ErisInstance(
        _sites(R, (4, 24, 32)),
        NetworkSpec(budget_mb=20480.0),
        ErisConfig(horizon=T, gamma_d=gamma, gamma_k=gamma),
        tuple(jobs),
    )


def watts_strogatz_sites(
    R: int,
    rng: np.random.Generator,
    *,
    k: int = 4,
    p: float = 0.1,
    latency_ms: tuple[float, float] = (2.0, 20.0),
    bandwidth_mbps: tuple[float, ...] = (10.0, 20.0, 50.0),
) -> nx.Graph:
    """§5.4 topology on sites ``1..R``: connected Watts-Strogatz(R, k, p), each edge (sorted order)
    with ``latency_ms`` ~ U[lo, hi] and ``bandwidth_mbps`` drawn uniformly from the choices."""
    _check_rng(rng)
    check_int("R", R, minimum=1)
    G0 = (
        nx.connected_watts_strogatz_graph(R, k=min(k, R - 1) if R > 2 else 1, p=p, seed=rng)
        if R > 1
        else nx.empty_graph(1)
    )
    G = nx.relabel_nodes(G0, {i: i + 1 for i in range(R)})
    for u, v in sorted(G.edges):
        G.edges[u, v]["latency_ms"] = float(rng.uniform(*latency_ms))
        G.edges[u, v]["bandwidth_mbps"] = float(rng.choice(list(bandwidth_mbps)))
    return G


def eris_topology(
    rng: np.random.Generator, *, R: int = 50, I: int = 100, T: int = 150, gamma: float = 1000.0
) -> ErisInstance:
    """§5.4: connected Watts-Strogatz(R, 4, 0.1) graph, latency U[2, 20] ms, bandwidth U{10, 20, 50} Mbit/s."""
    G = watts_strogatz_sites(R, rng)
    jobs = generate_jobs(I, R, T, rng)
    return ErisInstance(
        _sites(R, (4, 24, 32)),
        NetworkSpec(mode="topology", graph=G),
        ErisConfig(horizon=T, gamma_d=gamma, gamma_k=gamma),
        tuple(jobs),
    )


def sweep(kind: str, rng: np.random.Generator) -> list[tuple[float, ErisInstance]]:
    """One instance per sweep point of Fig. 8 (``"R"``), Fig. 9 (``"I"``) or Fig. 11 (``"gamma"``)."""
    if kind == "R":
        return [(R, eris_simulator(rng, R=R)) for R in SWEEP_R]
    if kind == "I":
        return [(I, eris_simulator(rng, I=I)) for I in SWEEP_I]
    if kind == "gamma":
        return [(g, eris_simulator(rng, gamma=g)) for g in SWEEP_GAMMA]
    raise InputError("sweep kind", kind, "must be one of ['R', 'I', 'gamma']")
