"""Tenant agents and their jobs.

A :class:`TenantAgent` holds its TRUE speedup vector per job type, its jobs and a reporting
strategy. It reports (possibly lying) vectors to the auctioneer; everything it experiences
(job progress, measured throughput) uses the true vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
        #: learning tenants (strategy tagged ``learning``): per job type the Hedge weights, the
        #: strategy played this round and a log of (round, job type, played factors, TRUE utility)
        self.learning = bool(self.strategy.tags.get("learning", False))
        self._weights: dict[str, np.ndarray] = {}
        self._played: dict[str, int] = {}
        self.learning_log: list[dict[str, Any]] = []
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

    def learning_grid(self) -> np.ndarray:
        """A learning tenant's factor vectors (S, k − 1)."""
        return self.strategy.grid(self.model.k)  # type: ignore[attr-defined]

    def report(self, job_type: str) -> np.ndarray:
        """The reported speedup vector of ``job_type`` (drawn once, then cached); a learning tenant
        reports the factor vector it sampled for this round (truth before its first round)."""
        if self.learning:
            w = np.array(self.true_speedups[job_type], dtype=float)
            s = self._played.get(job_type)
            if s is not None:
                w[1:] *= self.learning_grid()[s]
            return w
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

    def learn(self, job_type: str, utilities: np.ndarray) -> None:
        """Hedge update of ``job_type``'s weights with every strategy's TRUE counterfactual
        throughput ``utilities`` (S,) of the round just solved (see :class:`HedgeLearner`)."""
        u = np.asarray(utilities, dtype=float)
        w = self._weights.setdefault(job_type, np.full(u.size, 1.0 / u.size))
        scale = float(np.abs(u).max()) or 1.0
        w = w * np.exp(self.strategy.eta * (u - u.max()) / scale)  # type: ignore[attr-defined]
        self._weights[job_type] = w / w.sum()
        s = self._played.get(job_type)
        truth = int(np.flatnonzero(np.all(self.learning_grid() == 1.0, axis=1))[0])
        s = truth if s is None else s
        self.learning_log.append(
            {"round": self.model.round, "job_type": job_type, "played": s, "utility": float(u[s]),
             "best": int(np.argmax(u)), "factors": self.learning_grid()[s].tolist()}
        )  # fmt: skip

    def learning_weights(self, job_type: str) -> np.ndarray | None:
        """The current Hedge weights of ``job_type`` (None before its first round)."""
        w = self._weights.get(job_type)
        return None if w is None else w.copy()

    def begin_round(self) -> None:
        """Reset the per-round measures; a learning tenant samples this round's reports."""
        if self.learning:
            for jt, w in self._weights.items():
                self._played[jt] = int(self.model.strategy_rng.choice(w.size, p=w))
        self.est = 0.0
        self.est_reported = 0.0
        self.act = 0.0
        self.alloc_gpus = 0.0
        self.gpus = 0
        self.runnable_jobs = len(self.runnable(self.model.now))
