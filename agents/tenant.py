"""Tenant agents: a tenant of the cluster with its reporting strategy, called by the round engine.

A :class:`TenantAgent` owns some jobs of the workload (indices into the round engine's arrays,
:mod:`marketsim.agents.trace_rounds`) and a reporting strategy. It is created when its first job arrives and
removed (``agent.remove()``) when it leaves: a forced leave, or all its jobs are done. The engine
calls it at its decision points (:mod:`marketsim.agents.trace_tenants`): at every policy solve a lying tenant
REPORTS (:meth:`TenantAgent.report_rows`: its strategy maps each job's true speedup vector to the
reported one); a learning tenant SAMPLES its report for the round from its Hedge weights
(:meth:`TenantAgent.sample`) and LEARNS from the TRUE throughput every report of its grid would have
earned (:meth:`TenantAgent.learn`). Everything it experiences (progress, measured throughput) uses
the true throughputs; its per-round measures are the engine's vectorised bookkeeping, written onto
it after every round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mesa
import numpy as np

from marketsim.agents.strategies import MultiplicativeNoise, ScaleDims, Strategy

if TYPE_CHECKING:
    from marketsim.agents.config import TenantConfig
    from marketsim.agents.model import MarketModel

__all__ = ["TenantAgent", "report_factors", "ALL_JOBS"]

#: a learning tenant's Hedge key: one weight vector for all its jobs
ALL_JOBS = "*"


def report_factors(strategy: Strategy, job_type: str, row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-type factors (k,) turning a job's TRUE throughput row (k,) into its reported row: the
    report of the job's true speedup vector (the row over its first entry > 0) divided by that
    vector; 1 where the job cannot run (throughput 0, which the report keeps). Per-dimension
    strategies (:class:`ScaleDims`, :class:`MultiplicativeNoise`) give exactly ``report(ones)``.

    :param strategy: the reporting strategy
    :param job_type: the job's type
    :param row: (k,) TRUE throughputs
    :param rng: the strategy's draws
    :returns: (k,) factors
    """
    T = np.asarray(row, dtype=float)
    k = T.size
    if isinstance(strategy, (ScaleDims, MultiplicativeNoise)):
        return np.asarray(strategy.report(job_type, np.ones(k), rng), dtype=float)
    pos = T > 0
    w = np.ones(k)
    w[pos] = T[pos] / T[int(np.flatnonzero(pos)[0])]
    q = np.asarray(strategy.report(job_type, w, rng), dtype=float) / w
    q[~pos] = 1.0
    return q


class TenantAgent(mesa.Agent):
    """A tenant (module docstring). ``code``: its index among the workload's tenants; ``jobs``:
    its job indices (arrival order); ``strategy``: its reporting strategy; ``weight``: its priority
    ``π``; ``config``: its :class:`marketsim.agents.config.TenantConfig` for a synthetic workload (None on a
    trace). Per-round measures (slowest-GPU equivalents, set after every round it has an active
    job, else 0): ``est`` = true value of its jobs' time fractions, ``est_reported`` = the same at
    its reports, ``act`` = work done per second of the round, ``alloc_gpus`` = fractional GPUs,
    ``gpus`` = whole GPUs leased, ``runnable_jobs`` = its active jobs. ``report_calls`` counts the
    solves at which its strategy was consulted.

    :param model: the model it belongs to
    :param tenant_id: its name
    :param code: its index among the workload's tenants
    :param jobs: its job indices, arrival order
    :param strategy: its reporting strategy
    :param weight: its priority π, > 0
    :param config: its tenant config (synthetic workloads), or ``None``
    """

    def __init__(
        self,
        model: MarketModel,
        tenant_id: str,
        code: int,
        jobs: np.ndarray,
        strategy: Strategy,
        weight: float = 1.0,
        config: TenantConfig | None = None,
    ) -> None:
        super().__init__(model)
        self.tenant_id = tenant_id
        self.code = int(code)
        self.job_index = np.asarray(jobs, dtype=np.int64)
        self.strategy = strategy
        self.weight = float(weight)
        self.config = config
        #: TRUE speedup vector per job type (normalised to ``w[0] = 1``; synthetic workloads only)
        self.true_speedups: dict[str, np.ndarray] = {}
        if config is not None:
            self.true_speedups = {jt: np.asarray(w, dtype=float) / w[0] for jt, w in config.speedups.items()}
        self.learning = bool(strategy.tags.get("learning", False))
        self._weights: dict[str, np.ndarray] = {}
        self._played: dict[str, int] = {}
        self._noise: dict[str, np.ndarray] = {}  # a random misreport is drawn once per job type
        self.learning_log: list[dict[str, Any]] = []
        self.report_calls = 0
        self.est = self.est_reported = self.act = self.alloc_gpus = 0.0
        self.gpus = self.runnable_jobs = 0

    @property
    def truthful(self) -> bool:
        """Whether its strategy is tagged truthful."""
        return bool(self.strategy.tags.get("truthful", False))

    def learning_grid(self) -> np.ndarray:
        """A learning tenant's factor vectors (S, k − 1)."""
        return self.strategy.grid(self.model.k)  # type: ignore[attr-defined]

    # -- decisions --------------------------------------------------------------------------------
    def report_rows(self, T: np.ndarray, job_types: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """The rows (n, k) the policy sees for the tenant's active jobs with TRUE throughput rows
        ``T`` (n, k), job type names and GPU counts: the strategy consulted at this solve
        (module docstring). Per-dimension strategies act per job type, others per (job type, GPU
        count); a learner plays the factors it sampled for the round (truth before its first
        feedback).

        :param T: (n, k) TRUE throughputs of its active jobs
        :param job_types: (n,) their job types
        :param scale: (n,) their GPU counts
        :returns: (n, k) reported rows
        """
        self.report_calls += 1
        R = np.array(T, dtype=float)
        if self.learning:
            R[:, 1:] *= self.played_factors()[None, :]
            return R
        rng = self.model.strategy_rng  # type: ignore[attr-defined]
        jt = np.asarray(job_types).astype(str)
        per_dim = isinstance(self.strategy, (ScaleDims, MultiplicativeNoise))
        keys = jt if per_dim else np.char.add(jt, np.char.mod("|%d", np.asarray(scale)))
        _, firsts, inv = np.unique(keys, return_index=True, return_inverse=True)
        inv = inv.ravel()
        for c in np.argsort(firsts, kind="stable").tolist():  # job types / classes in order of first job
            rows = inv == c
            i0 = int(firsts[c])
            name = str(jt[i0])
            if isinstance(self.strategy, MultiplicativeNoise):  # profiling error: one draw per job type
                q = self._noise.get(name)
                if q is None:
                    q = self._noise[name] = report_factors(self.strategy, name, T[i0], rng)
            else:
                q = report_factors(self.strategy, name, T[i0], rng)
            R[rows] = T[rows] * q[None, :]
        return R

    def report(self, job_type: str) -> np.ndarray:
        """The speedup vector it reports for ``job_type`` (synthetic tenants: of its TRUE vector).

        :param job_type: the job type
        :returns: (k,) reported speedups
        """
        w = self.true_speedups[job_type]
        return self.report_rows(w[None, :], np.array([job_type]), np.array([1]))[0]

    def played_factors(self) -> np.ndarray:
        """A learning tenant's factors (k − 1,) for the current round (ones = the truth)."""
        s = self._played.get(ALL_JOBS)
        return np.ones(self.model.k - 1) if s is None else self.learning_grid()[s]  # type: ignore[attr-defined]

    def sample(self) -> bool:
        """A learning tenant samples the report it plays from its weights (none before its first
        feedback: the truth); returns True if it changed."""
        w = self._weights.get(ALL_JOBS)
        if w is None:
            return False
        before = self._played.get(ALL_JOBS)
        self._played[ALL_JOBS] = int(self.model.strategy_rng.choice(w.size, p=w))  # type: ignore[attr-defined]
        return self._played[ALL_JOBS] != before

    def learn(self, job_type: str, utilities: np.ndarray) -> None:
        """Hedge update of ``job_type``'s weights (:data:`ALL_JOBS` on the round engine) with every
        strategy's TRUE counterfactual throughput ``utilities`` (S,) of the round just solved:
        ``w_s <- w_s · exp(eta · (u_s − max u) / max |u|)``.

        :param job_type: the Hedge key (:data:`ALL_JOBS` on the round engine)
        :param utilities: (S,) each strategy's TRUE counterfactual throughput
        """
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

    def learning_weights(self, job_type: str = ALL_JOBS) -> np.ndarray | None:
        """The current Hedge weights (None before its first feedback).

        :param job_type: the Hedge key
        :returns: (S,) weights, or ``None``
        """
        w = self._weights.get(job_type)
        return None if w is None else w.copy()

    def finished(self) -> bool:
        """All its jobs have completed."""
        eng = self.model.auctioneer.trace  # type: ignore[attr-defined]
        return bool(np.isfinite(eng.done_at[self.job_index]).all())


#: the name trace runs used for the same agent
TraceTenantAgent = TenantAgent
