"""Workloads for Astraea: an explicit Philly-format trace loader and workload builder, and a synthetic
generator calibrated to the spec's distributions (§5.1–5.2) when no trace file is given.

Philly format (shared/data/philly_sample.csv): ``timestamp,duration,num_gpus,gpu_time,cluster``.
The sample has no machine list, so the cluster uses the spec's fallback (flagged there as not from the
paper): GPUs per server ∈ {2, 8} with probability 1/2 each, servers split across the selected VCs in
proportion to their job counts in the window (largest remainder, at least one each), 1 PS slot per
server. Job parameters are drawn independently and uniformly from the §5.2 ranges. All randomness
comes from an explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from marketsim.market.astraea.model import Cluster, JobSpec, Server, convex_utility, linear_utility
from marketsim.market.errors import InputError, check_choice, check_int, check_positive

__all__ = [
    "TraceJob",
    "WorkloadInfo",
    "load_philly_csv",
    "sample_servers",
    "draw_job_params",
    "philly_workload",
    "synthetic_workload",
    "PHILLY_COLUMNS",
    "PHILLY_GPU_MIX",
    "PHILLY_VC_COUNTS",
    "PHILLY_JOBS_PER_HOUR",
]

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
_TS = "%Y-%m-%d %H:%M:%S"
# num_gpus distribution of the Philly per-job source (82,247 jobs; README of the shared sample)
PHILLY_GPU_MIX = {1: 76627, 2: 1818, 4: 1870, 8: 1643, 12: 7, 16: 199, 24: 7, 32: 67, 64: 6, 128: 3}
# jobs per VC in the shared 1-in-41 sample, largest first (12 VCs)
PHILLY_VC_COUNTS = (1009, 390, 247, 182, 39, 39, 39, 27, 18, 9, 7, 1)
# mean submission rate of the source: 82,247 jobs between 2017-09-04 10:30 and 2017-12-22 08:02
PHILLY_JOBS_PER_HOUR = 82247 / (
    (datetime(2017, 12, 22, 8, 2, 11) - datetime(2017, 9, 4, 10, 30, 41)).total_seconds() / 3600
)


@dataclass(frozen=True)
class TraceJob:
    """One trace row: submission time, run time (s), GPUs, GPU-seconds and VC id.

    :param submitted: submission time
    :param duration_s: run time, s
    :param num_gpus: GPUs
    :param gpu_time: GPU-seconds
    :param vc: the virtual cluster
    :param row: its CSV row
    """

    submitted: datetime
    duration_s: float
    num_gpus: int
    gpu_time: float
    vc: str
    row: int


@dataclass(frozen=True)
class WorkloadInfo:
    """How a workload was built (report it with results): window start, VCs, bandwidths, flags.

    :param source: ``philly`` or ``synthetic``
    :param window_start: the trace window start, or ``None``
    :param vcs: the VCs used as tenants
    :param bw_worker_mbps: bandwidth per worker, Mbit/s
    :param bw_ps_mbps: bandwidth per PS, Mbit/s
    :param flags: notes on the build
    """

    source: str
    window_start: str | None
    vcs: tuple[str, ...]
    bw_worker_mbps: float
    bw_ps_mbps: float
    flags: tuple[str, ...]


def load_philly_csv(path: str | Path) -> list[TraceJob]:
    """Read a Philly-format CSV; raises :class:`InputError` naming file, row and column on bad data.

    :param path: the CSV
    :returns: the rows
    :raises InputError: a missing file, a bad header or value
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("trace file", str(p), "does not exist")
    out: list[TraceJob] = []
    with p.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or any(c not in reader.fieldnames for c in PHILLY_COLUMNS):
            raise InputError(f"{p.name} header", reader.fieldnames, f"must contain the columns {list(PHILLY_COLUMNS)}")
        for i, rec in enumerate(reader, start=2):  # row 1 is the header

            def field(col: str, rec: dict = rec, i: int = i) -> str:
                v = rec.get(col)
                if v is None or v.strip() == "":
                    raise InputError(f"{p.name} row {i} column {col}", v, "must not be empty")
                return v.strip()

            try:
                ts = datetime.strptime(field("timestamp"), _TS)
            except ValueError:
                raise InputError(f"{p.name} row {i} column timestamp", rec["timestamp"], f"must match {_TS}") from None
            vals = {}
            for col in ("duration", "gpu_time"):
                try:
                    x = float(field(col))
                except ValueError:
                    raise InputError(f"{p.name} row {i} column {col}", rec[col], "must be a number") from None
                if not math.isfinite(x) or x < 0:
                    raise InputError(f"{p.name} row {i} column {col}", rec[col], "must be finite and >= 0")
                vals[col] = x
            try:
                g = float(field("num_gpus"))
            except ValueError:
                raise InputError(f"{p.name} row {i} column num_gpus", rec["num_gpus"], "must be an integer") from None
            if not math.isfinite(g) or g != int(g) or g < 1:
                raise InputError(f"{p.name} row {i} column num_gpus", rec["num_gpus"], "must be an integer >= 1")
            out.append(TraceJob(ts, vals["duration"], int(g), vals["gpu_time"], field("cluster"), i))
    if not out:
        raise InputError("trace file", str(p), "has no data rows")
    return out


def sample_servers(vc_weights: Sequence[float], n_servers: int, rng: np.random.Generator) -> tuple[Server, ...]:
    """S servers split over VCs ∝ ``vc_weights`` (largest remainder, ≥ 1 each); 2 or 8 GPUs (p = 1/2),
    1 PS slot; ``owner`` = VC index (0-based, also the tenant uid)."""
    w = np.asarray(vc_weights, dtype=float)
    U = w.size
    S = check_int("n_servers", n_servers, minimum=1)
    if U == 0:
        raise InputError("vc_weights", list(w), "must name at least one tenant")
    if S < U:
        raise InputError("n_servers", S, f"must be >= the number of tenants ({U})")
    if (w <= 0).any() or not np.isfinite(w).all():
        raise InputError("vc_weights", list(w), "must be finite and > 0")
    x = (S - U) * w / w.sum()
    cnt = np.floor(x).astype(int)
    rem = (S - U) - int(cnt.sum())
    order = np.lexsort((np.arange(U), -(x - cnt)))
    cnt[order[:rem]] += 1
    cnt += 1
    gpus = rng.choice([2, 8], size=S)
    owners = np.repeat(np.arange(U), cnt)
    return tuple(Server(i, int(gpus[i]), 1, int(owners[i])) for i in range(S))


def draw_job_params(rng: np.random.Generator, utility: str = "linear") -> dict:
    """One job's §5.2 parameters (E, D, M, m, G, ε and the utility), independent uniform draws."""
    check_choice("utility", utility, ("linear", "convex"))
    p = dict(
        epochs=int(rng.integers(50, 101)),
        chunks=int(rng.integers(20, 51)),
        minibatches_per_chunk=int(rng.integers(10, 51)),
        m_hours=float(rng.uniform(0.001, 0.05)),
        G_ms=float(rng.uniform(10, 100)),
        eps_MB=float(rng.uniform(30, 575)),
    )
    if utility == "linear":
        p["utility"] = linear_utility(float(rng.uniform(-2.0, -0.1)), float(rng.uniform(100, 1000)))
    else:
        p["utility"] = convex_utility(float(rng.uniform(100, 1000)), float(rng.uniform(1.0, 2.0)))
    return p


def _bandwidths(rng: np.random.Generator) -> tuple[float, float]:
    return float(rng.uniform(100, 5 * 1024)), float(rng.uniform(5, 20) * 1024)


def philly_workload(
    trace: Sequence[TraceJob],
    n_jobs: int,
    n_servers: int,
    n_tenants: int,
    rng: np.random.Generator,
    *,
    window_start: str | None = "2017-10-01 00:00:00",
    utility: str = "linear",
) -> tuple[Cluster, list[JobSpec], WorkloadInfo]:
    """Cluster and jobs from a trace window: the ``n_tenants`` VCs with most jobs from ``window_start``
    on, their first ``n_jobs`` submissions (arrival = hours since the window start, ``gpu_request`` =
    num_gpus), servers by :func:`sample_servers` with VC shares ∝ job counts in the window.

    :param trace: the trace rows
    :param n_jobs: jobs, >= 1
    :param n_servers: servers
    :param n_tenants: tenants (VCs)
    :param rng: the draws
    :param window_start: ``YYYY-MM-DD HH:MM:SS``, or ``None`` for the trace start
    :param utility: ``linear`` or ``convex``
    :returns: ``(cluster, jobs, info)``
    :raises InputError: bad counts, rng or window start
    """
    N = check_int("n_jobs", n_jobs, minimum=1)
    U = check_int("n_tenants", n_tenants, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy.random.Generator")
    rows = sorted(trace, key=lambda r: (r.submitted, r.row))
    if window_start is not None:
        try:
            t0 = datetime.strptime(window_start, _TS)
        except ValueError:
            raise InputError("window_start", window_start, f"must match {_TS}") from None
        rows = [r for r in rows if r.submitted >= t0]
    else:
        t0 = rows[0].submitted if rows else datetime(2017, 1, 1)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.vc] = counts.get(r.vc, 0) + 1
    if len(counts) < U:
        raise InputError("n_tenants", U, f"exceeds the {len(counts)} VCs with jobs in the window")
    vcs = tuple(sorted(counts, key=lambda v: (-counts[v], v))[:U])
    chosen = [r for r in rows if r.vc in vcs][:N]
    if len(chosen) < N:
        raise InputError("n_jobs", N, f"exceeds the {len(chosen)} jobs of the selected VCs in the window")
    wcount = [sum(1 for r in chosen if r.vc == v) or 1 for v in vcs]
    servers = sample_servers(wcount, n_servers, rng)
    bw, bp = _bandwidths(rng)
    cluster = Cluster.from_owners(servers, bw, bp)
    uid = {v: i for i, v in enumerate(vcs)}
    jobs = [
        JobSpec(
            f"p{r.row}",
            uid[r.vc],
            (r.submitted - t0).total_seconds() / 3600.0,
            gpu_request=r.num_gpus,
            **draw_job_params(rng, utility),
        )
        for r in chosen
    ]
    info = WorkloadInfo(
        "philly",
        t0.strftime(_TS),
        vcs,
        bw,
        bp,
        ("servers: synthetic fallback (2/8 GPUs, VC shares by job count)", "job parameters: uniform §5.2 draws"),
    )
    return cluster, jobs, info


def synthetic_workload(
    n_jobs: int,
    n_servers: int,
    n_tenants: int,
    rng: np.random.Generator,
    *,
    utility: str = "linear",
    jobs_per_hour: float = PHILLY_JOBS_PER_HOUR,
) -> tuple[Cluster, list[JobSpec], WorkloadInfo]:
    """A Philly-like workload without a trace file: Poisson arrivals at ``jobs_per_hour`` (default the
    Philly source's mean rate, ≈ 31.5/h), tenant shares following the sample's VC job-count profile
    (geometric tail beyond 12 VCs), GPU requests from the source's num_gpus mix, §5.2 job parameters.

    :param n_jobs: jobs, >= 1
    :param n_servers: servers
    :param n_tenants: tenants
    :param rng: the draws
    :param utility: ``linear`` or ``convex``
    :param jobs_per_hour: Poisson arrival rate, per hour
    :returns: ``(cluster, jobs, info)``
    :raises InputError: bad counts or rng
    """
    N = check_int("n_jobs", n_jobs, minimum=1)
    U = check_int("n_tenants", n_tenants, minimum=1)
    rate = check_positive("jobs_per_hour", jobs_per_hour)
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy.random.Generator")
    prof = list(PHILLY_VC_COUNTS)
    while len(prof) < U:
        prof.append(max(prof[-1] * 0.7, 0.5))
    w = np.array(prof[:U], dtype=float)
    w /= w.sum()
    owners = rng.choice(U, size=N, p=w)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=N))
    g_vals = np.array(list(PHILLY_GPU_MIX))
    g_p = np.array(list(PHILLY_GPU_MIX.values()), dtype=float)
    gpus = rng.choice(g_vals, size=N, p=g_p / g_p.sum())
    counts = np.bincount(owners, minlength=U) + 1
    servers = sample_servers(counts, n_servers, rng)
    bw, bp = _bandwidths(rng)
    cluster = Cluster.from_owners(servers, bw, bp)
    jobs = [
        JobSpec(f"s{i}", int(owners[i]), float(arrivals[i]), gpu_request=int(gpus[i]), **draw_job_params(rng, utility))
        for i in range(N)
    ]
    info = WorkloadInfo(
        "synthetic",
        None,
        tuple(f"vc{u}" for u in range(U)),
        bw,
        bp,
        ("servers: 2/8 GPUs p=1/2", "arrivals: Poisson at the Philly source mean rate", "job parameters: §5.2"),
    )
    return cluster, jobs, info
