"""Tenant agents and their jobs.

A :class:`TenantAgent` holds its TRUE speedup vector per job type, its jobs and a reporting
strategy. It reports (possibly lying) vectors to the auctioneer; everything it experiences
(job progress, measured throughput) uses the true vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import mesa
import numpy as np

from agents.config import JobConfig, TenantConfig

if TYPE_CHECKING:
    from agents.model import MarketModel

__all__ = ["JobState", "TenantAgent"]


@dataclass
class JobState:
    """Mutable run state of one job. ``remaining`` is work left in slowest-GPU-seconds;
    ``last_ran_end`` the time (s) the job last stopped running (its arrival before it first runs);
    ``hosts`` the host ids of its last placement; ``completed_at`` seconds, or None."""

    spec: JobConfig
    tenant_id: str
    remaining: float
    last_ran_end: float
    hosts: tuple[str, ...] = ()
    completed_at: float | None = None
    rounds_run: int = 0

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self.spec.job_id

    @property
    def done(self) -> bool:
        """True once all work is done."""
        return self.completed_at is not None

    def runnable(self, now: float) -> bool:
        """Arrived by ``now`` (s) and not finished."""
        return self.spec.arrival <= now and not self.done


class TenantAgent(mesa.Agent):
    """A tenant of the shared cluster (created when it arrives, removed when it leaves).

    Per-round measures (set by the auctioneer, read by the DataCollector), in slowest-GPU
    equivalents: ``est`` = true value of its fractional allocation ``Σ_c W_true_c · X_c``,
    ``est_reported`` = the same under its reports (what the mechanism believes), ``act`` =
    measured work done per second this round, ``alloc_gpus`` = fractional GPUs allocated,
    ``gpus`` = whole GPUs its running jobs hold.
    """

    def __init__(self, model: MarketModel, config: TenantConfig, true_speedups: dict[str, np.ndarray]) -> None:
        super().__init__(model)
        self.config = config
        self.tenant_id = config.tenant_id
        self.weight = float(config.weight)
        self.strategy = config.strategy
        self.true_speedups = {jt: np.array(w, dtype=float) for jt, w in true_speedups.items()}
        self.jobs: dict[str, JobState] = {
            j.job_id: JobState(j, config.tenant_id, float(j.work), float(j.arrival)) for j in config.jobs
        }
        self._reports: dict[str, np.ndarray] = {}
        self.est = 0.0
        self.est_reported = 0.0
        self.act = 0.0
        self.alloc_gpus = 0.0
        self.gpus = 0
        self.runnable_jobs = 0

    @property
    def truthful(self) -> bool:
        """Whether its strategy is tagged truthful."""
        return bool(self.strategy.tags.get("truthful", False))

    def report(self, job_type: str) -> np.ndarray:
        """The reported speedup vector of ``job_type`` (drawn once, then cached)."""
        rep = self._reports.get(job_type)
        if rep is None:
            rep = np.asarray(self.strategy.report(job_type, self.true_speedups[job_type], self.model.strategy_rng))
            rep = rep.astype(float)
            self._reports[job_type] = rep
        return rep

    def runnable(self, now: float) -> list[JobState]:
        """Jobs arrived by ``now`` and unfinished, in job-id order of the config."""
        return [j for j in self.jobs.values() if j.runnable(now)]

    def active_job_types(self, now: float) -> list[str]:
        """Job types with at least one runnable job, in the config's job-type order."""
        have = {j.spec.job_type for j in self.runnable(now)}
        return [jt for jt in self.config.speedups if jt in have]

    def finished(self) -> bool:
        """All its jobs are done (a tenant with no jobs is finished at once)."""
        return all(j.done for j in self.jobs.values())

    def begin_round(self) -> None:
        """Reset the per-round measures."""
        self.est = 0.0
        self.est_reported = 0.0
        self.act = 0.0
        self.alloc_gpus = 0.0
        self.gpus = 0
        self.runnable_jobs = len(self.runnable(self.model.now))
