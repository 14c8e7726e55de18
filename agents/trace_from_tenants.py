"""A synthetic workload (tenants with jobs, drawn by a scenario) as the trace the round engine runs.

There is one round engine (:mod:`marketsim.agents.trace_rounds`, ``docs/trace_simulation.md``): a synthetic
workload is a generated trace. :func:`tenants_workload` writes the tenants and jobs of a synthetic
:class:`marketsim.agents.config.ModelConfig` as a :class:`marketsim.agents.config.TraceWorkload`, and
:class:`marketsim.agents.model.MarketModel` runs a config with tenants exactly as it runs that trace (same
records and completions; ``tests/test_one_engine.py`` checks it against a trace written by hand).
The mapping (units: seconds, slowest-GPU-seconds of work, steps = slowest-GPU-seconds):

* every job is one trace job, in order of arrival (ties: tenant order, then job order):
  ``total_steps = work``, ``scale`` = its workers, ``arrival_s`` = its arrival, ``priority`` 1,
  ``user`` = its tenant, its job type as it is (the policy's classes are (tenant, job type,
  speedup vector), so a job type is a class of its tenant); tenancy ``"user"``: the policy gets one
  row per class, weight ``π_u / classes of the tenant``;
* consolidated throughput on ``g`` GPUs of type ``j``: ``g · w_j`` steps/s, ``w`` the tenant's
  TRUE speedups of the job's type normalised to ``w_0 = 1`` (one slowest GPU does one unit per
  second); no unconsolidated table: a lease over several hosts runs at ``ModelConfig.kappa``'s
  penalty ``1 / (1 + κ (hosts − 1))``;
* each tenant's strategy (every tenant is an agent), weight ``π`` (``tenant_weights``) and forced
  leave time (``leave_at``) go with it;
* ``reallocation_interval_s``: ``ModelConfig.reallocation_interval_s`` (default 0: the policy is
  re-solved at every change of its inputs), ``until_done = False`` (``rounds`` is the horizon; the
  run ends earlier once every job is done when ``stop_when_idle``).

:func:`trace_config` returns a config with that trace in place of the tenants (for a study panel
that names a placement).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.agents.config import ModelConfig, TraceWorkload
from marketsim.market.errors import InputError
from marketsim.market.traces import Trace

__all__ = ["tenants_workload", "trace_config"]


def tenants_workload(config: ModelConfig) -> TraceWorkload:
    """The :class:`TraceWorkload` of a synthetic ``config``'s tenants and jobs (module docstring)."""
    if config.trace is not None:
        raise InputError("tenants_workload", "trace", "needs a synthetic configuration (it already has a trace)")
    ids: list[str] = []
    jtype: list[str] = []
    scale: list[int] = []
    steps: list[float] = []
    arrival: list[float] = []
    user: list[str] = []
    rows: list[np.ndarray] = []
    for t in config.tenants:
        for j in t.jobs:
            w = np.asarray(t.speedups[j.job_type], dtype=float)
            ids.append(j.job_id)
            jtype.append(j.job_type)
            scale.append(int(j.workers))
            steps.append(float(j.work))
            arrival.append(float(j.arrival))
            user.append(t.tenant_id)
            rows.append(j.workers * w / w[0])
    arr = np.asarray(arrival, dtype=float)
    order = np.argsort(arr, kind="stable")
    sc = np.asarray(scale, dtype=np.int64)[order]
    k = config.cluster.k
    T = np.asarray(rows, dtype=float).reshape(len(ids), k)[order]
    work = np.asarray(steps, dtype=float)[order]
    trace = Trace(
        job_id=np.asarray(ids, dtype=str)[order],
        job_type=np.asarray(jtype, dtype=str)[order],
        scale=sc,
        total_steps=work,
        arrival_s=arr[order],
        priority=np.ones(len(ids)),
        user=np.asarray(user, dtype=str)[order],
        duration_s=work / np.maximum(sc, 1),
        source=f"synthetic tenants ({len(config.tenants)} tenants, {len(ids)} jobs)",
        format="gavel",
    )
    return TraceWorkload(
        trace,
        T,
        trace.user.copy(),
        "user",
        reallocation_interval_s=0.0 if config.reallocation_interval_s is None else config.reallocation_interval_s,
        until_done=False,
        strategies={t.tenant_id: t.strategy for t in config.tenants if t.jobs},
        tenant_rows="agents",
        tenant_weights={t.tenant_id: t.weight for t in config.tenants if t.jobs and t.weight != 1.0},
        leave_at={t.tenant_id: t.leave_at for t in config.tenants if t.jobs and t.leave_at is not None},
    )


def trace_config(config: ModelConfig, *, placement: str | None = None) -> ModelConfig:
    """``config`` with its tenants written as a trace (:func:`tenants_workload`): the same run
    (same records and completions); ``placement`` replaces the config's if given."""
    tw = tenants_workload(config)
    kw: dict[str, object] = {} if placement is None else {"placement": placement}
    if placement == "ideal":
        kw["kappa"] = None
    if placement != "ideal" and config.resolved_placement != "ideal":
        kw["kappa"] = config.resolved_kappa  # the synthetic default (a trace's is 0)
    return replace(config, tenants=(), trace=tw, reallocation_interval_s=None,
                   realisation=config.resolved_realisation, **kw)  # fmt: skip
