"""The auctioneer (cluster manager) agent: runs the round engine each Mesa step.

Every run, synthetic or trace, goes through the same round engine
(:class:`marketsim.agents.trace_rounds.TraceRounds`, job state in numpy arrays; a synthetic workload is a
generated trace, :func:`marketsim.agents.trace_from_tenants.tenants_workload`) under the reports of the
tenants (:class:`marketsim.agents.trace_tenants.TraceTenants`, which calls the tenant agents at the engine's
decision points): see those modules and ``docs/trace_simulation.md``. With a placement other than
"ideal" the engine puts the leases on the server agents' hosts (:class:`marketsim.market.hosts.HostPlacer`)
and the server agents hold them (:meth:`GPUServerAgent.hold`) until the next round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mesa
import numpy as np

from marketsim.agents.trace_rounds import TraceRoundResult, TraceRounds
from marketsim.market.allocation import Allocation
from marketsim.market.hosts import HostPlacer
from marketsim.market.oef.placer import _host_key
from marketsim.market.oef.realise import make_realiser
from marketsim.market.registry import get

if TYPE_CHECKING:
    from marketsim.agents.config import TraceWorkload
    from marketsim.agents.model import MarketModel
    from marketsim.agents.trace_tenants import TraceTenants

__all__ = ["Auctioneer", "RoundStats"]


@dataclass
class RoundStats:
    """Cluster-level measures of one record (one round, or merged rounds: ``merged_rounds``). GPU
    counts are devices; throughputs are in slowest-GPU equivalents (work-seconds per second, rates
    over the record's ``round_s``); times in seconds.

    :param available_gpus: GPUs of healthy hosts
    :param busy_gpus: GPUs leased
    :param busy_by_type: GPUs leased per type
    :param utilisation: GPU-seconds used / (GPUs × round length)
    :param total_est: the allocation's value at TRUE throughputs, slowest-GPU equivalents
    :param total_act: work done per second of the record, slowest-GPU equivalents
    :param active_tenants: tenants with an active job
    :param active_classes: the policy's rows
    :param resolved: 1 when the policy was re-solved
    :param cross_type_workers: workers of leases over several GPU types
    :param cross_host_jobs: jobs spread over several hosts
    :param max_abs_dev: the largest rounding deviation of OEF's rounder, GPUs
    :param jobs_completed: jobs completed in the record
    :param active_jobs: jobs active
    :param round_start_s: the record's start, s
    :param round_s: the record's length, s
    :param migrations: jobs restarted on other GPUs
    :param migration_lost_s: lease seconds lost to those restarts
    :param merged_rounds: Gavel rounds the record covers
    :param backfill_gpu_s: GPU-seconds leased by backfilling
    """

    available_gpus: int = 0
    busy_gpus: int = 0
    busy_by_type: tuple[int, ...] = ()
    utilisation: float = 0.0
    total_est: float = 0.0
    total_act: float = 0.0
    active_tenants: int = 0
    active_classes: int = 0
    resolved: int = 0
    cross_type_workers: int = 0
    cross_host_jobs: int = 0
    max_abs_dev: float = 0.0
    jobs_completed: int = 0
    active_jobs: int = 0
    round_start_s: float = 0.0
    round_s: float = 0.0
    migrations: int = 0
    migration_lost_s: float = 0.0
    merged_rounds: int = 1  # Gavel rounds this record covers (TraceRounds merges rounds where nothing changes)
    backfill_gpu_s: float = 0.0  # GPU-seconds leased where the policy gave the job no allocation (TraceRoundResult)


def host_racks(model: MarketModel, agents: list[Any]) -> np.ndarray:
    """Rack index of each host (the switch its topology node hangs off, numbered in host order).

    :param model: the model (its cluster graph)
    :param agents: the host agents, in host order
    :returns: (hosts,) rack indices
    """
    g = model.cluster.graph
    racks: dict[str, int] = {}
    out = []
    for a in agents:
        node = a.server.node
        sw = ""
        if node is not None and node in g:
            sw = next((v for v in sorted(g.neighbors(node), key=str) if g.nodes[v].get("kind") == "switch"), "")
        out.append(racks.setdefault(sw, len(racks)))
    return np.asarray(out, dtype=np.int64)


class Auctioneer(mesa.Agent):
    """Cluster manager: holds the round engine (:attr:`trace`), the tenants (:attr:`tenants`) and
    the hosts' agents, and runs one engine round per Mesa step.

    :param model: the model it belongs to (its config and workload)
    :param policy: the registered fair-share policy solved each round
    :param placement: how leases are placed on hosts (the model config's placement)
    :param backfill: the rounder hands GPUs its rounding left idle to other classes (work-conserving)
    """

    def __init__(self, model: MarketModel, policy: str, placement: str, backfill: bool = True) -> None:
        super().__init__(model)
        self.policy = policy
        self.mechanism = get(policy, "fair-share")
        self.placement = placement
        self.stats = RoundStats()
        #: what the last round did (:class:`marketsim.agents.trace_rounds.TraceRoundResult`)
        self.last_trace: TraceRoundResult | None = None
        config = model.config
        tw: TraceWorkload = model.workload
        tr = tw.trace
        type_names, type_code = np.unique(tr.job_type, return_inverse=True)
        tenant_names, tenant_code = np.unique(np.asarray(tw.tenants).astype(str), return_inverse=True)
        tenant_code = tenant_code.ravel()
        weights = None
        if tw.tenant_weights:
            weights = np.array([tw.tenant_weights.get(str(n), 1.0) for n in tenant_names], dtype=float)
        leave = None
        if tw.leave_at:
            leave = np.array([tw.leave_at.get(str(n), np.inf) for n in tenant_names], dtype=float)
        # child streams of the model's RNG, in a fixed order (the shuffle's first, as before there were others)
        lease_rng = model.rng.spawn(1)[0] if tw.lease_order == "shuffle" else None
        tie_rng = model.rng.spawn(1)[0]
        realisation = config.resolved_realisation
        self.realisation = realisation
        lot = model.rng.spawn(1)[0] if realisation == "gandiva-lottery" else None
        #: the class realiser (None: Gavel's per-job lease)
        self.rounder = make_realiser(realisation, backfill=backfill, rng=lot)
        rule = placement if placement in ("oef", "naive") else ("oef" if policy.startswith("oef") else "naive")
        #: the round engine (the name is historical: every run is a trace run now)
        self.trace = TraceRounds(
            throughputs=tw.throughputs,
            scale=tr.scale,
            total_steps=tr.total_steps,
            arrival_s=tr.arrival_s,
            priority=tr.priority,
            tenant_code=tenant_code,
            job_type_code=type_code.ravel(),
            policy=policy,
            mechanism=self.mechanism,
            round_seconds=model.round_seconds,
            reallocation_interval_s=tw.reallocation_interval_s,
            per_job=tw.tenancy == "job",
            reported=tw.reported,
            lease_order=tw.lease_order,
            lease_rng=lease_rng,
            tenant_weight=weights,
            tenant_leave_s=leave,
            realisation=realisation,
            realiser=self.rounder,
            assign_rule=rule,
            kappa=config.resolved_kappa,
            kappa_rack=config.kappa_rack,
            tie_rng=tie_rng,
            job_names=tr.job_id,
            tenant_names=tenant_names,
            job_type_names=type_names,
            **self._hosts(model, placement, len(tr)),
        )
        self.engine = self.trace
        self.trace.max_rounds = int(config.rounds)  # merged rounds count towards the horizon / cap
        from marketsim.agents.trace_tenants import TraceTenants

        configs = {t.tenant_id: t for t in config.tenants}
        #: the tenants (reports, decisions, per-tenant measures; :mod:`marketsim.agents.trace_tenants`)
        self.tenants: TraceTenants = TraceTenants(model, self.trace, tw, rows=tw.tenant_rows, configs=configs)
        if self.tenants.strategic:
            self.trace.reporter = self.tenants

    def _hosts(self, model: MarketModel, placement: str, n_jobs: int) -> dict[str, Any]:
        """The host arguments of the engine: none with placement "ideal"; otherwise a
        :class:`marketsim.market.hosts.HostPlacer` over the server agents (natural order of host ids, their
        racks from the topology), the unconsolidated throughputs and the migration cost."""
        #: with hosts: the server agents in the placer's host order
        self.host_agents: list[Any] = []
        self._held: set[int] = set()  # host indices holding leases in the last round
        out: dict[str, Any] = {"migration_cost_s": model.config.migration_cost_s}
        if placement == "ideal":
            return out
        self.host_agents = sorted(model.servers, key=lambda a: _host_key(a.host_id))
        self._job_ids: list[str] = np.asarray(model.workload.trace.job_id).astype(str).tolist()
        types = np.array([a.server.gpu_type for a in self.host_agents], dtype=np.int64)
        caps = np.array([a.server.count for a in self.host_agents], dtype=np.int64)
        racks = host_racks(model, self.host_agents)
        out["placer"] = HostPlacer(types, caps, placement, n_jobs, host_rack=racks)
        out["unconsolidated"] = model.workload.unconsolidated
        return out

    # -- what the policy decided (for the live page and the study's envy metrics) ---------------------
    @property
    def resolves(self) -> int:
        """Policy solves so far."""
        return int(self.trace.solves)

    @property
    def solve_seconds(self) -> float:
        """Wall-clock seconds spent in the policy (kept out of the tidy data)."""
        return float(self.trace.solve_seconds)

    @property
    def classes(self) -> list[tuple[str, str]]:
        """(tenant, job type) of each row of the last solve."""
        A, row, X = self.trace.solved_rows()
        if not A.size:
            return []
        first = np.full(X.shape[0], -1, dtype=np.int64)
        first[row[::-1]] = A[::-1]
        tw = self.model.workload
        names = np.asarray(tw.tenants).astype(str)
        jt = np.asarray(tw.trace.job_type).astype(str)
        return [(str(names[j]), str(jt[j])) for j in first.tolist()]

    @property
    def allocation(self) -> Allocation | None:
        """The last solve's devices per row (:attr:`classes`) and GPU type (None before the first)."""
        A, _row, X = self.trace.solved_rows()
        if not A.size:
            return None
        return Allocation(X, self.policy, float("nan"))

    # -- the round ------------------------------------------------------------------------------------
    def _hold_leases(self, res: TraceRoundResult) -> None:
        """The server agents hold this round's leases (:meth:`GPUServerAgent.hold`)."""
        agents = self.host_agents
        pl = res.placement
        held: dict[int, dict[str, int]] = {}
        if pl is not None:
            ids = self._job_ids
            jobs = res.leased[pl.part_lease].tolist()
            for j, h, g in zip(jobs, pl.part_host.tolist(), pl.part_gpus.tolist(), strict=True):
                held.setdefault(h, {})[ids[j]] = held.get(h, {}).get(ids[j], 0) + g
        for h in self._held - set(held):
            agents[h].hold({})
        for h, leases in held.items():
            agents[h].hold(leases)
        self._held = set(held)

    def step(self) -> None:
        """One engine round on the healthy GPUs; records its measures and completions."""
        model = self.model
        eng = self.trace
        m = model.m_avail()
        if eng.placer is not None:
            eng.host_cap = model.host_caps(self.host_agents)
        res = eng.step(m)
        self.last_trace = res
        if eng.placer is not None:
            self._hold_leases(res)
        model.now = res.now
        st = self.stats = RoundStats()
        st.available_gpus = int(m.sum())
        st.busy_by_type = tuple(res.busy_by_type.tolist())
        st.busy_gpus = int(res.busy_by_type.sum())
        st.utilisation = res.used_gpu_seconds / (st.available_gpus * res.length_s) if res.length_s > 0 else 0.0
        st.total_est = res.total_est
        st.total_act = res.total_act
        st.active_tenants = res.active_tenants
        st.active_classes = res.active_rows
        st.active_jobs = res.active_jobs
        st.resolved = int(res.resolved)
        st.jobs_completed = int(res.finished.size)
        st.round_start_s = res.now
        st.round_s = res.length_s
        st.cross_host_jobs = res.cross_host_jobs
        st.cross_type_workers = res.cross_type_workers
        st.max_abs_dev = res.max_abs_dev
        st.migrations = res.migrations
        st.migration_lost_s = res.migration_lost_s
        st.merged_rounds = res.merged
        st.backfill_gpu_s = res.backfill_gpu_seconds
        self.tenants.record(res)
        if res.finished.size:
            model.record_trace_completions(res.finished, res.finished_at)
        self.tenants.round_end(res)
