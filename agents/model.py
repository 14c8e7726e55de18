"""The Mesa model of a shared GPU cluster run by a fair-share allocator (OEF and baselines).

One Mesa step = one scheduling round of the ONE round engine, :class:`marketsim.agents.trace_rounds.TraceRounds`
(job state in numpy arrays), whatever the workload: a trace (``ModelConfig.trace``) or synthetic
tenants with jobs (``ModelConfig.tenants``), which are a generated trace
(:func:`marketsim.agents.trace_from_tenants.tenants_workload`). The model wires GPU server agents on the
cluster's networkx topology (a Mesa ``Network`` space without layout) and lets the
:class:`Auctioneer` run the engine; the engine calls the agents at its decision points: the tenant
agents (:mod:`marketsim.agents.trace_tenants`) are created when their first job arrives, report through their
strategies at every policy solve, learn, and are removed when they leave; the server agents fail
and heal by their outage schedule (``ModelConfig.failures``) at the start of every round and hold
the round's leases.

A :class:`mesa.DataCollector` records the cluster measures of every round (:data:`CLUSTER_MEASURES`,
:data:`TRACE_MEASURES`, :data:`HOST_MEASURES`, ``busy_gpus:<type>``; every record carries its
length ``round_s``), the tenants' per-round :data:`TENANT_MEASURES` come from the tenants' numpy
blocks, and every finished job adds a ``completions`` row. Rounds start at the end of the previous
one (the clock jumps over idle time) and, with ``trace.until_done``, the run ends when every job has
completed or at the safety cap ``config.rounds`` (reported: :attr:`MarketModel.cap_reached`, a
``RuntimeWarning`` and a ``safety_cap`` event); otherwise ``config.rounds`` is the horizon. A tqdm bar
(jobs completed, simulated days) shows on a terminal (:attr:`MarketModel.progress`).

Randomness: the model's RNG (``rng=...``, a seed, ``SeedSequence`` or ``Generator``) feeds the
strategies (e.g. profiling noise) through :attr:`MarketModel.strategy_rng` and, through child
streams, Gavel's lease shuffle, the order of tied policy rows and Gandiva_fair's lottery.
"""

from __future__ import annotations

import operator
import sys
import warnings
from functools import partial
from typing import Any

import mesa
import numpy as np
import pandas as pd
from mesa.discrete_space import Network

from marketsim.agents.auctioneer import Auctioneer
from marketsim.agents.config import ModelConfig, TraceWorkload
from marketsim.agents.server import GPUServerAgent
from marketsim.agents.tenant import TenantAgent

__all__ = ["MarketModel", "TENANT_MEASURES", "CLUSTER_MEASURES", "TRACE_MEASURES", "HOST_MEASURES"]

#: Per-tenant measures recorded every round (see :class:`marketsim.agents.tenant.TenantAgent`).
TENANT_MEASURES = ("est", "est_reported", "act", "alloc_gpus", "gpus", "runnable_jobs")
#: Cluster measures recorded every round (see :class:`marketsim.agents.auctioneer.RoundStats`).
CLUSTER_MEASURES = (
    "available_gpus",
    "busy_gpus",
    "utilisation",
    "total_est",
    "total_act",
    "active_tenants",
    "active_classes",
    "resolved",
    "cross_type_workers",
    "cross_host_jobs",
    "max_abs_dev",
    "jobs_completed",
)
#: Cluster measures of every record: active jobs, record start and length (s), Gavel rounds merged
#: into the record (:meth:`marketsim.agents.trace_rounds.TraceRounds._fast_forward`; 1 = one round), and the
#: GPU-seconds of the record leased to jobs on a type where the policy gave them no allocation
#: (work-conserving backfill; ``TraceRoundResult.backfill_gpu_seconds``).
TRACE_MEASURES = ("active_jobs", "round_start_s", "round_s", "merged_rounds", "backfill_gpu_s")
#: Cluster measures of every record: leases that restarted their job from its checkpoint
#: (migrations and resumes after a pause) and the lease seconds they lost to ``migration_cost_s``
HOST_MEASURES = ("migrations", "migration_lost_s")
#: the DataCollector's one model reporter, every cluster measure of the round in one float array
#: (:meth:`MarketModel._trace_row`; Mesa deep-copies each reporter's value every step, one array
#: instead of ~20 scalars); :meth:`MarketModel.tidy` gives the same rows as one reporter each
TRACE_RECORD = "trace_round"
COMPLETION_COLUMNS = ["round", "tenant", "job_id", "job_type", "workers", "arrival_s", "completion_s", "jct_s"]


def _stat(model: MarketModel, name: str) -> Any:
    """Model reporter: one field of the auctioneer's last :class:`RoundStats`."""
    return getattr(model.auctioneer.stats, name)


def _tenant_attr(agent: TenantAgent, name: str) -> Any:
    return getattr(agent, name)


def _codes(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """A column of strings as ``(codes, categories)``: a categorical's own, else by factorizing."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(dtype=np.int64), [str(c) for c in col.cat.categories]
    codes, uniq = pd.factorize(col.astype(str))
    return codes.astype(np.int64), [str(c) for c in uniq]


class MarketModel(mesa.Model):
    """A shared GPU cluster under one fair-share ``config.policy``.

    ``config``: :class:`marketsim.agents.config.ModelConfig`; ``rng``: anything Mesa accepts as ``rng``
    (int seed, ``numpy.random.SeedSequence``, ``Generator``). Run with :meth:`run`; read results
    with :meth:`tidy` (long format) or :attr:`datacollector` (which holds only the rounds since
    the last move into compact storage, see :attr:`DRAIN_ROUNDS`). :attr:`workload` is the
    :class:`marketsim.agents.config.TraceWorkload` the engine runs (the config's trace, or its tenants as one).

    The keyword form ``mesa.batch_run`` drives (a scenario name, policy, variant, seed) is the subclass
    :class:`marketsim.scenarios.model.ScenarioModel`.

    :param config: the cluster, tenants or trace, policy and horizon
    :param rng: the model's seed: an int, a ``SeedSequence`` or a ``Generator`` (``None``: fresh entropy)
    """

    def __init__(self, config: ModelConfig, *, rng: Any = None) -> None:
        if isinstance(rng, np.random.SeedSequence):
            rng = np.random.default_rng(rng)
        super().__init__(rng=rng)
        self.config = config
        self.cluster = config.cluster
        self.k = config.cluster.k
        self.round_seconds = float(config.cluster.round_seconds)
        self.gpu_names = tuple(t.name for t in config.cluster.types)
        # strategies draw from their own stream derived from the model RNG
        self.strategy_rng = np.random.default_rng(self.rng.integers(0, 2**63 - 1))
        self.round = 0  # index of the round being / last simulated (0-based)
        self.now = 0.0  # start time of the current round, s
        if config.trace is not None:
            self.workload: TraceWorkload = config.trace
        else:
            from marketsim.agents.trace_from_tenants import tenants_workload

            self.workload = tenants_workload(config)

        graph = config.cluster.graph
        self.space = Network(graph, random=self.random, layout=None) if graph.number_of_nodes() else None
        outages: dict[str, list[tuple[float, float | None]]] = {}
        for f in config.failures:
            outages.setdefault(f.host_id, []).append((float(f.at_s), f.heal_s))
        self.servers: list[GPUServerAgent] = []
        for s in config.cluster.servers:
            cell = self.space[s.node] if (self.space is not None and s.node is not None) else None
            self.servers.append(GPUServerAgent(self, s, cell, outages.get(s.host_id, ())))
        #: the server agents with an outage schedule (called at the start of every round)
        self._failing = [a for a in self.servers if a.outages]
        self._m: np.ndarray | None = None  # healthy GPUs per type (recomputed when a host's health changes)
        self.events: list[dict[str, Any]] = []
        self.auctioneer = Auctioneer(self, config.policy, config.resolved_placement, backfill=config.backfill)
        times = sorted({t for f in config.failures for t in (f.at_s, f.heal_s) if t is not None})
        self.auctioneer.trace.event_times = np.asarray(times, dtype=float)

        self._drained: list[pd.DataFrame] = []  # compact records moved out of the DataCollector
        self._drained_rounds = 0  # rounds moved out of earlier DataCollectors
        self._held_rounds = 0  # rounds the current DataCollector holds
        self._done_completions: list[pd.DataFrame] = []  # completions rows of earlier DataCollectors
        self._done_rows = 0  # their number
        self._sent_completions = 0  # completions rows already passed to the sink
        #: the safety cap ``config.rounds`` ended a run with ``until_done`` before every job completed
        self.cap_reached = False
        #: show the tqdm bar (None: only when stderr is a terminal)
        self.progress: bool | None = None

        self.datacollector = self._new_collector()

    #: also give the DataCollector one model reporter per cluster measure and the tenant agents'
    #: measures as agent-type reporters (what ``mesa.batch_run`` reads; :class:`marketsim.scenarios.model.ScenarioModel`
    #: sets it); :meth:`tidy` reads only the round arrays and the tenants' blocks
    MESA_REPORTERS = False

    def _new_collector(self) -> mesa.DataCollector:
        """A fresh DataCollector: the cluster measures as one array per round (:data:`TRACE_RECORD`,
        :meth:`_trace_row`) and the ``completions`` table (and with :attr:`MESA_REPORTERS` the
        reporters ``mesa.batch_run`` reads)."""
        reporters: dict[str, Any] = {TRACE_RECORD: self._trace_row}
        kw: dict[str, Any] = {}
        if self.MESA_REPORTERS:
            reporters.update({name: partial(_stat, name=name) for name in (*self._trace_measures(), "busy_by_type")})
            kw["agenttype_reporters"] = {
                TenantAgent: {"tenant": "tenant_id", **{m: partial(_tenant_attr, name=m) for m in TENANT_MEASURES}}
            }
        return mesa.DataCollector(model_reporters=reporters, tables={"completions": COMPLETION_COLUMNS}, **kw)

    def _trace_measures(self) -> tuple[str, ...]:
        """The cluster measures of :meth:`_trace_row`, in its order (``busy_gpus:<type>`` last)."""
        return (*CLUSTER_MEASURES, *TRACE_MEASURES, *HOST_MEASURES)

    def _trace_row(self) -> np.ndarray:
        """This round's cluster measures (:meth:`_trace_measures`, then GPUs busy per type) as one
        float array."""
        get = self.__dict__.get("_trace_get")
        if get is None:
            get = self._trace_get = operator.attrgetter(*self._trace_measures())
        st = self.auctioneer.stats
        return np.array((*get(st), *st.busy_by_type), dtype=float)

    # -- helpers used by the agents -----------------------------------------------------------------
    def tenant_list(self) -> list[TenantAgent]:
        """Present tenant agents in order of arrival."""
        return self.auctioneer.tenants.agent_list()

    @property
    def _tenants(self) -> dict[str, TenantAgent]:
        """Present tenant agents by id."""
        return {a.tenant_id: a for a in self.tenant_list()}

    def server_agents(self) -> list[GPUServerAgent]:
        """All GPU server agents."""
        return self.servers

    def healthy_servers(self) -> list[Any]:
        """The :class:`marketsim.market.types.GpuServer` of every healthy host."""
        return [s.server for s in self.servers if s.healthy]

    def m_avail(self) -> np.ndarray:
        """Healthy GPUs per type, shape (k,), int."""
        if self._m is None:
            m = [0] * self.k
            for s in self.servers:
                if s.healthy:
                    m[s.server.gpu_type] += s.server.count
            self._m = np.array(m, dtype=int)
        return self._m

    def host_caps(self, agents: list[GPUServerAgent]) -> np.ndarray:
        """Usable GPUs of the hosts ``agents`` this round (0 for a host that is down).

        :param agents: server agents
        :returns: one GPU count per agent
        """
        return np.array([a.server.count if a.healthy else 0 for a in agents], dtype=np.int64)

    def record_trace_completions(self, jobs: np.ndarray, times: np.ndarray) -> None:
        """Add the jobs ``jobs`` (indices) finished at ``times`` (s) to ``completions``.

        :param jobs: indices of the finished jobs in the workload's trace
        :param times: their completion times, seconds since the start
        """
        tw = self.workload
        tr = tw.trace
        jobs = np.asarray(jobs, dtype=np.int64)
        # the jobs' fields gathered at once (Python scalars, as indexing one job at a time gives them)
        cols = zip(np.asarray(tw.tenants)[jobs].tolist(), np.asarray(tr.job_id)[jobs].tolist(),
                   np.asarray(tr.job_type)[jobs].tolist(), np.asarray(tr.scale)[jobs].tolist(),
                   np.asarray(tr.arrival_s, dtype=float)[jobs].tolist(), np.asarray(times, dtype=float).tolist(),
                   strict=True)  # fmt: skip
        add = self.datacollector.add_table_row
        for tenant, job_id, job_type, workers, arrival, t in cols:
            add(
                "completions",
                {
                    "round": self.round,
                    "tenant": str(tenant),
                    "job_id": str(job_id),
                    "job_type": str(job_type),
                    "workers": int(workers),
                    "arrival_s": arrival,
                    "completion_s": t,
                    "jct_s": t - arrival,
                },
            )

    def _round(self) -> None:
        """The auctioneer's round, then the round's data collection (drained every ``DRAIN_ROUNDS``)."""
        self.auctioneer.step()
        self.datacollector.collect(self)
        self._held_rounds += 1
        if self._held_rounds >= self.DRAIN_ROUNDS:
            self._drain()

    def step(self) -> None:
        """One round: the engine settles its start (arrivals, leaves, idle time), the server agents
        fail or heal at that time, the tenants arrive or leave, the auctioneer runs the round and
        the round is recorded. Ends the run when every job finished (``stop_when_idle`` or
        ``until_done``), at the horizon, or at the safety cap."""
        self.round = self.steps - 1
        eng = self.auctioneer.trace
        self.now = eng.begin_round()
        if self._failing:
            changed = False
            for a in self._failing:
                changed |= a.update(self.now)
            if changed:
                self._m = None
        self.auctioneer.tenants.round_start()
        self._round()
        tw = self.workload
        if eng.finished and (self.config.stop_when_idle or tw.until_done):
            self.running = False
        elif eng.rounds >= self.config.rounds:  # Gavel rounds, merged ones included (TraceRounds.rounds)
            self.running = False
            if tw.until_done:
                self.cap_reached = True
                left = len(tw.trace) - eng.completed - eng.n_gone
                msg = (
                    f"trace run stopped at the safety cap of {self.config.rounds} rounds "
                    f"(t = {eng.now:.0f} s) with {left} job(s) unfinished; raise max_rounds"
                )
                self.events.append({"round": self.round, "tenant": "", "event": "safety_cap", "time_s": eng.now})
                warnings.warn(msg, RuntimeWarning, stacklevel=2)

    def run(self, rounds: int | None = None) -> MarketModel:
        """Step until the horizon (``config.rounds``, or ``rounds`` more steps) or until idle.

        :param rounds: how many more rounds to run; ``None``: up to ``config.rounds``
        :returns: the model itself (so ``MarketModel(cfg).run().tidy()`` chains)
        """
        limit = self.config.rounds if rounds is None else self.steps + rounds
        eng = self.auctioneer.trace
        show = sys.stderr.isatty() if self.progress is None else self.progress
        if not show:
            while self.running and self.steps < limit:
                self.step()
            return self
        from tqdm.auto import tqdm

        with tqdm(total=eng.n, unit="job", desc=self.config.policy, file=sys.stderr, leave=False) as bar:
            while self.running and self.steps < limit:
                self.step()
                done = eng.completed
                if done != bar.n:
                    bar.update(done - bar.n)
                    bar.set_postfix_str(f"t={eng.now / 86400:.2f} d, round {self.steps}", refresh=False)
        return self

    # -- results ------------------------------------------------------------------------------------------
    def completions(self) -> pd.DataFrame:
        """Finished jobs: round, tenant, job_id, job_type, workers, arrival_s, completion_s, jct_s."""
        held = self.datacollector.get_table_dataframe("completions")
        frames = [f for f in (*self._done_completions, held) if len(f)]
        if len(frames) <= 1:
            return frames[0] if frames else held
        return pd.concat(frames, ignore_index=True)

    #: rounds the DataCollector holds before they are moved into compact storage (round int32,
    #: tenant and measure categorical, value float64: about 14 bytes per record instead of Mesa's
    #: Python tuples and dicts); long runs then grow by ~1.2 KB per round instead of ~3.3 KB
    DRAIN_ROUNDS = 256

    #: optional ``sink(frame)``: when set, every drained block of rounds is passed to it in
    #: :meth:`tidy`'s columns and order (with the ``jct_s`` rows of the jobs finished so far), with
    #: ``tenant`` and ``measure`` categorical (categories sorted) instead of strings, and then
    #: forgotten, so a run's memory no longer grows with its rounds; call :meth:`flush` at the end.
    #: :meth:`tidy` then returns only what was not yet sent.
    sink: Any = None

    def flush(self) -> None:
        """Send every record not yet sent to :attr:`sink` (no-op without a sink)."""
        if self.sink is not None and (self._held_rounds or self._unsent_completions()):
            self._drain()

    def _unsent_completions(self) -> int:
        held = len(self.datacollector.get_table_dataframe("completions"))
        return self._done_rows + held - self._sent_completions

    def _drain(self) -> None:
        """Move the rounds the DataCollector holds into compact storage (or to :attr:`sink`) and
        start a fresh DataCollector (Mesa's public API has no way to empty one). The ``completions``
        rows are kept as a frame, so :meth:`completions` (and :meth:`tidy` without a sink) returns
        every finished job."""
        f = self._collected()
        held = self.datacollector.get_table_dataframe("completions")
        before = self._done_rows
        if len(held):
            self._done_completions.append(held)
            self._done_rows += len(held)
        self.datacollector = self._new_collector()
        self._drained_rounds += self._held_rounds
        self._held_rounds = 0
        tenants = getattr(self.auctioneer, "tenants", None)
        if tenants is not None:
            tenants.take_blocks()
        if self.sink is not None:
            # the unsent rows: usually exactly this collector's (sink set from the start)
            sent = self._sent_completions
            comp = held.iloc[sent - before :] if sent >= before else self.completions().iloc[sent:]
            self._sent_completions += len(comp)
            self.sink(self._finish_tidy([f, self._jct_rows(comp)], strings=False))
            return
        if len(f):  # tenant and measure are categorical already (_collected)
            f["round"] = f["round"].astype(np.int32)
            self._drained.append(f[["round", "tenant", "measure", "value"]].reset_index(drop=True))

    def _collected(self) -> pd.DataFrame:
        """Long-format records of the rounds the DataCollector holds (no completions): cluster rows
        (measure-major, ``tenant = ""``) then the tenants' blocks, ``tenant`` and ``measure``
        categorical (one array of codes each: no per-row strings are made here)."""
        if not self._held_rounds:  # all drained (Mesa's empty frames are ill-typed)
            return pd.DataFrame({"round": [], "tenant": [], "measure": [], "value": []})
        rounds: list[np.ndarray] = []
        t_codes: list[np.ndarray] = []
        m_codes: list[np.ndarray] = []
        values: list[np.ndarray] = []
        tenant_cats: dict[str, int] = {}
        measure_cats: dict[str, int] = {}

        def codes(cats: dict[str, int], names: Any) -> np.ndarray:
            return np.array([cats.setdefault(str(n), len(cats)) for n in names], dtype=np.int64)

        rows = self.datacollector.model_vars[TRACE_RECORD]
        if rows:  # the long format (measure-major)
            V = np.vstack(rows)
            names = [*self._trace_measures(), *(f"busy_gpus:{n}" for n in self.gpu_names)]
            nr = V.shape[0]
            rounds.append(np.tile(self._drained_rounds + np.arange(nr), len(names)))
            t_codes.append(np.full(nr * len(names), codes(tenant_cats, [""])[0]))
            m_codes.append(np.repeat(codes(measure_cats, names), nr))
            values.append(V.T.ravel())
        tenants = getattr(self.auctioneer, "tenants", None)
        if tenants is not None and tenants.blocks:
            blocks = tenants.blocks
            r = np.concatenate([np.full(c.size, rd, dtype=np.int64) for rd, c, _ in blocks])
            tc = codes(tenant_cats, tenants.names)[np.concatenate([c for _, c, _ in blocks])]
            M = np.concatenate([v for _, _, v in blocks])
            nm = len(TENANT_MEASURES)
            rounds.append(np.tile(r, nm))
            t_codes.append(np.tile(tc, nm))
            m_codes.append(np.repeat(codes(measure_cats, TENANT_MEASURES), r.size))
            values.append(M.T.ravel())
        if not rounds:
            return pd.DataFrame({"round": [], "tenant": [], "measure": [], "value": []})
        return pd.DataFrame({
            "round": np.concatenate(rounds),
            "tenant": pd.Categorical.from_codes(np.concatenate(t_codes), categories=list(tenant_cats)),
            "measure": pd.Categorical.from_codes(np.concatenate(m_codes), categories=list(measure_cats)),
            "value": np.concatenate(values),
        })  # fmt: skip

    def tidy(self) -> pd.DataFrame:
        """All measures in long format: columns ``round, tenant, measure, value`` (float).

        Cluster measures have ``tenant = ""``; ``busy_gpus:<type>`` gives GPUs busy per type;
        per-tenant measures are :data:`TENANT_MEASURES` of the tenants ``TraceWorkload.tenant_rows``
        selects (every tenant of a synthetic workload); every finished job adds a ``jct_s`` row
        (the round it finished in). Sorted by round, tenant, measure. Includes the rounds already
        moved out of the DataCollector (:attr:`DRAIN_ROUNDS`).
        """
        frames: list[pd.DataFrame] = [*self._drained, self._collected()]
        frames.append(self._jct_rows(self.completions().iloc[self._sent_completions :]))
        return self._finish_tidy(frames)

    @staticmethod
    def _jct_rows(comp: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(
            {"round": comp.get("round", []), "tenant": comp.get("tenant", []), "measure": "jct_s",
             "value": comp.get("jct_s", [])}
        )  # fmt: skip

    @staticmethod
    def _finish_tidy(frames: list[pd.DataFrame], strings: bool = True) -> pd.DataFrame:
        """``frames`` (columns round, tenant, measure, value; tenant and measure categorical or
        strings) as one frame sorted by round, tenant, measure (ties in the given order: a stable
        sort), columns in :meth:`tidy`'s order. The sort runs on integer codes into the union of the
        categories, sorted, so it orders as the strings do. ``strings``: tenant and measure as
        ``str`` columns (:meth:`tidy`'s format); else categorical with those sorted categories (what
        :attr:`sink` gets: the runner writes them to Parquet as strings without making a Python
        string per row)."""
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(
                {"round": pd.Series(dtype=int), "tenant": pd.Series(dtype=str), "measure": pd.Series(dtype=str),
                 "value": pd.Series(dtype=float)}
            )  # fmt: skip
        cols = {}
        for name in ("tenant", "measure"):
            parts = [_codes(f[name]) for f in frames]
            cats = sorted({c for _, cs in parts for c in cs})
            pos = {c: i for i, c in enumerate(cats)}
            cols[name] = (np.concatenate([np.array([pos[c] for c in cs], dtype=np.int64)[k] for k, cs in parts]), cats)
        rnd = np.concatenate([f["round"].to_numpy(dtype=np.int64) for f in frames])
        order = np.lexsort((cols["measure"][0], cols["tenant"][0], rnd))
        out: dict[str, Any] = {"round": rnd[order]}
        for name, (k, cats) in cols.items():
            cat = pd.Categorical.from_codes(k[order], categories=cats)
            out[name] = cat.astype(str) if strings else cat
        out["value"] = np.concatenate([f["value"].to_numpy(dtype=float) for f in frames])[order]
        return pd.DataFrame(out)
