"""A synthetic workload (tenants with jobs, drawn by a scenario) replayed on the trace engine with hosts.

The synthetic model (:mod:`agents.model` without a trace) realises an allocation with a rate
formula (OEF spec §2.3: straggler ``min`` over GPU types, cross-host penalty ``kappa``). The trace
engine (:mod:`agents.trace_rounds`, ``docs/trace_simulation.md``) instead leases whole GPUs per
type by Gavel's priorities and, with ``placement`` "auto" | "oef" | "naive", puts every lease on
the cluster's hosts (:class:`market.hosts.HostPlacer`). :func:`trace_config` turns the tenants
and jobs of a synthetic :class:`agents.config.ModelConfig` into a
:class:`agents.config.TraceWorkload` on the same cluster, so the same drawn workload (same
tenants, job types, per-tenant speedups, sizes, work and arrivals) can be run on both engines.

The mapping (units: seconds, slowest-GPU-seconds of work, steps = slowest-GPU-seconds):

* every job is one trace job: ``total_steps = work`` (slowest-GPU-seconds), ``scale`` = its
  workers, ``arrival_s`` = its arrival, ``user`` = its tenant (tenancy ``"user"``: the policy gets
  one row per class (tenant, job type, scale factor), weight ``1 / classes of the tenant``);
* consolidated throughput on ``g`` GPUs of type ``j``: ``g * w_j`` steps/s, ``w`` the tenant's
  TRUE speedups of the job's type (the synthetic model's linear rate: ``g`` slowest GPUs do ``g``
  units per second);
* unconsolidated (the lease spans hosts): ``g * w_j / (1 + kappa)``, the synthetic rate model's
  penalty for one extra host (the trace engine tells one host from several, not two from three,
  so a lease over three hosts is charged as over two: a lower bound on the formula's penalty);
* a job never spans GPU types on the trace engine (Gavel's leases), so it has no straggler
  events by construction: the straggler count stays with the synthetic model.

Not mapped (rejected with an :class:`~market.errors.InputError`): forced tenant leaves
(``leave_at``), tenants with a non-truthful reporting strategy, tenant weights other than 1.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from agents.config import ModelConfig, TraceWorkload
from agents.strategies import Truthful
from market.errors import InputError, check_nonneg
from market.traces import Trace

__all__ = ["trace_config"]


def trace_config(
    config: ModelConfig,
    *,
    placement: str = "auto",
    kappa: float | None = None,
    until_done: bool | None = None,
    reallocation_interval_s: float = 0.0,
) -> ModelConfig:
    """The trace-engine twin of the synthetic ``config`` (module docstring): same cluster, policy,
    rounds and ``migration_cost_s``; ``placement`` on hosts ("auto" | "oef" | "naive");
    ``kappa`` (default ``config.kappa``) the unconsolidated penalty; ``until_done`` (default: the
    synthetic run stops when idle and some job arrives after t = 0) runs until every job is done
    with ``config.rounds`` as the safety cap, else ``config.rounds`` is the horizon;
    ``reallocation_interval_s`` the least time between two re-solves (0: at every change of the job
    set, as the synthetic model re-solves every round)."""
    if config.trace is not None:
        raise InputError("trace_config", "trace", "needs a synthetic configuration (it already has a trace)")
    if placement not in ("auto", "oef", "naive"):
        raise InputError("placement", placement, "must be 'auto', 'oef' or 'naive' (hosts) for a trace twin")
    kap = check_nonneg("kappa", config.kappa if kappa is None else kappa)
    ids: list[str] = []
    jtype: list[str] = []
    scale: list[int] = []
    steps: list[float] = []
    arrival: list[float] = []
    user: list[str] = []
    rows: list[np.ndarray] = []
    for t in config.tenants:
        if t.leave_at is not None:
            raise InputError(f"tenant {t.tenant_id}.leave_at", t.leave_at, "forced leaves are not mapped to a trace")
        if not isinstance(t.strategy, Truthful):
            raise InputError(f"tenant {t.tenant_id}.strategy", type(t.strategy).__name__,
                             "reporting strategies are not mapped to a trace twin")  # fmt: skip
        if t.weight != 1.0:
            raise InputError(f"tenant {t.tenant_id}.weight", t.weight, "must be 1 for a trace twin")
        for j in t.jobs:
            w = np.asarray(t.speedups[j.job_type], dtype=float)
            ids.append(j.job_id)
            # the class key of the trace engine is (tenant, job type, scale): the tenant's own
            # speedups make its job type its own, so the label carries the tenant
            jtype.append(f"{j.job_type}@{t.tenant_id}")
            scale.append(int(j.workers))
            steps.append(float(j.work))
            arrival.append(float(j.arrival))
            user.append(t.tenant_id)
            rows.append(j.workers * w / w[0])
    if not ids:
        raise InputError("tenants", 0, "a trace twin needs at least one job")
    arr = np.asarray(arrival)
    order = np.argsort(arr, kind="stable")
    sc = np.asarray(scale, dtype=np.int64)[order]
    T = np.asarray(rows, dtype=float)[order]
    trace = Trace(
        job_id=np.asarray(ids).astype(str)[order],
        job_type=np.asarray(jtype).astype(str)[order],
        scale=sc,
        total_steps=np.asarray(steps)[order],
        arrival_s=arr[order],
        priority=np.ones(len(ids)),
        user=np.asarray(user).astype(str)[order],
        duration_s=np.asarray(steps)[order] / sc,
        source=f"synthetic tenants ({len(config.tenants)} tenants, {len(ids)} jobs)",
        format="gavel",
    )
    U = np.where(sc[:, None] > 1, T / (1.0 + kap), T)
    if until_done is None:
        until_done = bool(config.stop_when_idle and arr.max() > 0)
    tw = TraceWorkload(
        trace,
        T,
        trace.user.copy(),
        "user",
        reallocation_interval_s=reallocation_interval_s,
        until_done=until_done,
        tenant_rows="none",
        unconsolidated=U,
    )
    return replace(config, tenants=(), placement=placement, trace=tw)
