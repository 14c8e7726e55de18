"""The trace section of a run's report: per-tenant fairness, JCT by job size, tails, backfill,
makespan and utilisation over time, in hours and days (``marketsim run`` on a trace scenario).

Every figure is a per-job figure (JCT, finish-time fairness) or a time integral of the per-round
records (``round_s`` long each, rounds merged by the engine included), never a mean over records:

* **Share** of tenant ``u``: ``sum_r gpus_u,r * round_s_r / sum_r available_r * round_s_r`` (GPUs
  leased to its jobs, the whole run). **Entitlement**: the same time integral of ``1 / N_r`` over
  the rounds in which ``u`` has an active job (``N_r`` tenants have one): an equal share of the
  cluster among the tenants present. ``share / entitled`` below 1: the tenant got less than an
  equal share while present (by the policy or because it asked for less).
* **Finish-time fairness** ``rho = JCT / T_id`` (Themis, NSDI'20: ``T_shared / T_independent``;
  Gavel's ``finish_time_fairness`` policy, ``scheduler/policies/finish_time_fairness.py``:
  ``(t_since_start + remaining / tput(x)) / (cumulative isolated time + remaining / tput_iso)``,
  which at a job's completion is ``JCT / T_id``). ``T_id`` is the job's run time on its isolated
  share, as Gavel's ``IsolatedPolicy`` computes it: time fractions ``x_t = m_t / (c * scale)`` on
  each GPU type ``t`` (``m_t`` GPUs), scaled down to sum to at most 1, ``tput_iso = sum_t T_t x_t``
  at the job's TRUE throughputs, ``T_id = total_steps / tput_iso``. ``c`` is the contention: in
  Gavel the number of active jobs (every job a tenant); here, by the tenancy, ``N(t) * n_u(t)``
  (the job's 1/N of the cluster among the tenants present, split over its tenant's ``n_u`` active
  jobs; tenancy ``"job"``: the active jobs, Gavel's own count). Gavel re-evaluates ``c`` at every
  allocation and weights each interval by the steps the job did in it; we take ``c`` as its time
  average over the job's life (arrival to completion), because per-job progress is not recorded:
  the two agree when the contention is constant over the job's life.
* **Tail**: share of the total JCT held by the top 1% of jobs (by JCT).
* **Backfill**: ``sum backfill_gpu_s / sum used GPU-s``: GPU-seconds leased to jobs on a type where
  the policy gave them no time fraction (the engine's work-conserving leases of priority-0 jobs;
  ``marketsim.agents.trace_rounds.TraceRoundResult.backfill_gpu_seconds``).
* **Makespan**: the last completion (days from the first arrival), with the job that set it and
  its own lower bound (arrival + its run time alone on its fastest GPU type).
* **Utilisation over time** (figure ``utilisation.png``): GPU-seconds used per day over the
  cluster's GPU-seconds of that day, and the time-averaged number of active jobs per day.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "CLUSTER_RECORDS",
    "TENANT_RECORDS",
    "SIZE_BUCKETS",
    "RunTrace",
    "RECORD_COLUMNS",
    "load_records",
    "iter_run_records",
    "run_traces",
    "active_matrix",
    "max_min_shares",
    "isolated_times",
    "finish_time_fairness",
    "tenant_table",
    "policy_table",
    "size_table",
    "binned_integral",
    "plot_utilisation",
    "render_trace_section",
    "trace_section",
    "check_lines",
]

#: cluster measures of the records the section reads
CLUSTER_RECORDS = ("round_start_s", "round_s", "utilisation", "available_gpus", "backfill_gpu_s", "active_jobs")
#: per-tenant measures of the records the section reads (the GPUs leased to the tenant's jobs)
TENANT_RECORDS = ("gpus",)
#: job-size buckets (GPUs per job): label, smallest, largest
SIZE_BUCKETS = (("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-8", 5, 8), ("9-16", 9, 16), ("17-32", 17, 32),
                ("33+", 33, 1 << 30))  # fmt: skip
HOUR = 3600.0
DAY = 86400.0


@dataclass
class RunTrace:
    """One run's inputs to the section: its ``policy``, ``variant``, ``replication``; ``rec`` the
    cluster records (one row per record, :data:`CLUSTER_RECORDS` columns, indexed and sorted by
    round); ``leased`` the GPU-seconds leased to each tenant's jobs over the run (``sum_r gpus_u,r x
    round_s_r``, from the per-tenant ``gpus`` records); ``comp`` the completions (job_id, tenant,
    workers, arrival_s, completion_s, jct_s, plus ``idx``: the job's index in the trace); ``steps``
    (N,), ``T`` (N, k) TRUE throughputs and ``tenants`` (N,) of the trace's jobs; ``m`` (k,) GPUs per
    type; ``tenancy``."""

    policy: str
    variant: str
    replication: int
    rec: pd.DataFrame
    leased: dict[str, float]
    comp: pd.DataFrame
    steps: np.ndarray
    T: np.ndarray
    tenants: np.ndarray
    m: np.ndarray
    tenancy: str | int
    #: :func:`finish_time_fairness` of the run once computed (read-only: both tables use it)
    rho: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: :func:`active_matrix` of the run once computed, with the ``rec`` and ``comp`` it came from
    act: tuple | None = field(default=None, repr=False, compare=False)


# -- loading ----------------------------------------------------------------------------------------
#: columns of the rows the section reads
RECORD_COLUMNS = ["run_id", "round", "tenant", "measure", "value"]
_RECORD_FILTERS: list[list[tuple[str, str, Any]]] = [
    [("tenant", "=", ""), ("measure", "in", list(CLUSTER_RECORDS))],
    [("tenant", "!=", ""), ("measure", "in", list(TENANT_RECORDS))],
]


def load_records(results: str | Path) -> pd.DataFrame:
    """The rows of ``results.parquet`` the section needs (:data:`RECORD_COLUMNS`; the other measures
    stay on disk): cluster rows of :data:`CLUSTER_RECORDS` and the per-tenant :data:`TENANT_RECORDS`,
    every run at once (small results; :func:`run_traces` given the path reads one run at a time)."""
    import pyarrow.parquet as pq

    from marketsim.analysis.engine.runner import decoded_frame, scan_results

    rows = scan_results(results, _RECORD_FILTERS, RECORD_COLUMNS)
    return decoded_frame(rows, pq.read_schema(results), RECORD_COLUMNS)


def iter_run_records(results: str | Path) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(run_id, rows)`` per run of ``results.parquet``, in file order, one run's rows in memory at a
    time: ``round, tenant, measure, value`` of the rows :func:`load_records` reads, ``tenant`` and
    ``measure`` categorical. A results file holds each run's rows together (runs are written one
    after the other); a run whose rows come back after another run's raises ``ValueError``."""
    from marketsim.analysis.engine.runner import scan_results

    done: set[str] = set()
    current: str | None = None
    pieces: list[Any] = []

    def finish() -> tuple[str, pd.DataFrame]:
        import pyarrow as pa

        table = pa.concat_tables(pieces).select(RECORD_COLUMNS[1:])
        pieces.clear()
        done.add(str(current))
        return str(current), table.to_pandas()

    for t in scan_results(results, _RECORD_FILTERS, RECORD_COLUMNS):
        ids = t.column("run_id").combine_chunks()
        codes = ids.indices.to_numpy(zero_copy_only=False)
        names = ids.dictionary.to_pylist()
        cuts = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), len(codes)]
        for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
            rid = names[codes[lo]]
            if rid != current:
                if current is not None:
                    yield finish()
                if rid in done:
                    raise ValueError(f"{results}: the rows of run {rid} are not together")
                current = rid
            pieces.append(t.slice(lo, hi - lo))
    if current is not None:
        yield finish()


def _run_records(recs: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """``(rec, leased)`` of :class:`RunTrace` from one run's rows (``round, tenant, measure, value``;
    ``tenant`` and ``measure`` strings or categorical), the tenant rows in (round, tenant) order."""
    tenant = pd.Categorical(recs["tenant"])
    empty = tenant.categories.get_indexer([""])[0]
    is_cl = tenant.codes == empty if empty >= 0 else np.zeros(len(recs), dtype=bool)
    cl_rows = recs.loc[is_cl, ["round", "measure", "value"]]
    cl_rows = cl_rows.assign(measure=cl_rows["measure"].astype(str))
    cl = cl_rows.pivot_table(index="round", columns="measure", values="value", observed=True).sort_index()
    ten = ~is_cl & (recs["measure"] == "gpus").to_numpy(dtype=bool)
    leased: dict[str, float] = {}
    if ten.any():
        lengths = cl["round_s"].to_numpy(float)
        pos = pd.Index(cl.index).get_indexer(recs["round"].to_numpy()[ten])
        g_s = recs["value"].to_numpy(float)[ten] * lengths[pos]
        sums = pd.Series(g_s).groupby(tenant.codes[ten]).sum()  # each tenant's rows in round order
        leased = {str(tenant.categories[c]): v for c, v in sums.items()}
    return cl, leased


def run_traces(exp: Any, records: str | Path | pd.DataFrame, completions: pd.DataFrame) -> list[RunTrace]:
    """One :class:`RunTrace` per complete run of ``exp`` (an :class:`marketsim.analysis.engine.runner.Experiment`
    of a trace scenario), in (policy, variant, replication) order. ``records``: the path of the
    results file (read one run at a time: :func:`iter_run_records`) or :func:`load_records`' rows.
    Each replication's trace (its seeded job types, steps and throughputs) is rebuilt from the
    scenario and the run's seed."""
    from marketsim.analysis.engine.runner import plan_runs

    scen = exp.scenario
    bad = {r["run_id"] for r in exp.incomplete}
    ok = exp.runs[(exp.runs["error"].astype(str) == "") & ~exp.runs["run_id"].isin(bad)]
    wanted = set(ok["run_id"].astype(str))
    if isinstance(records, pd.DataFrame):
        groups: Iterator[tuple[Any, pd.DataFrame]] = iter(records.groupby("run_id", sort=False, observed=True))
    else:
        groups = iter_run_records(records)
    per_run = {str(rid): _run_records(g) for rid, g in groups if str(rid) in wanted}
    specs = {s.run_id: s for s in plan_runs(scen, exp.replications, exp.seed)}
    comp_by_run = dict(tuple(completions.groupby("run_id", sort=False)))
    out: list[RunTrace] = []
    cache: dict[tuple, Any] = {}
    for r in ok.sort_values(["policy", "variant", "replication"], kind="mergesort").itertuples(index=False):
        spec = specs[r.run_id]
        key = (spec.entropy, spec.spawn_key)
        if key not in cache:  # the trace of a replication is the same under every policy and variant
            cfg, _ = scen.model_inputs(spec.policy, "truthful", spec.seed_sequence())
            tw = cfg.trace
            cache[key] = (tw, {j: i for i, j in enumerate(tw.trace.job_id.tolist())})
        tw, index = cache[key]
        cl, leased = per_run.pop(r.run_id, None) or _run_records(pd.DataFrame(columns=RECORD_COLUMNS[1:]))
        comp = comp_by_run.get(r.run_id, completions.iloc[:0]).copy()
        comp["idx"] = comp["job_id"].astype(str).map(index).astype(np.int64)
        out.append(RunTrace(
            r.policy, r.variant, int(r.replication), cl, leased, comp.reset_index(drop=True),
            np.asarray(tw.trace.total_steps, dtype=float), np.asarray(tw.throughputs, dtype=float),
            np.asarray(tw.tenants).astype(str), np.asarray(scen.cluster.gpus, dtype=float), tw.tenancy,
        ))  # fmt: skip
    return out


# -- time integrals ---------------------------------------------------------------------------------
def _cumulative(starts: np.ndarray, lengths: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knots ``(t, F)`` of ``F(t) = integral_0^t v``, ``v`` piecewise constant: ``values[i]`` on
    ``[starts[i], starts[i] + lengths[i])`` and 0 between records (the clock's idle jumps). ``F`` is
    linear between the knots, so ``np.interp(x, t, F)`` is exact."""
    ends = starts + lengths
    area = np.asarray(values, dtype=float) * lengths
    before = np.concatenate([[0.0], np.cumsum(area)[:-1]])
    t = np.empty(2 * starts.size)
    F = np.empty(2 * starts.size)
    t[0::2], t[1::2] = starts, ends
    F[0::2], F[1::2] = before, before + area
    return t, F


def binned_integral(starts: np.ndarray, lengths: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Integral of the piecewise-constant signal (``values[i]`` on ``[starts[i], starts[i] +
    lengths[i])``, 0 elsewhere) over each bin ``[edges[b], edges[b + 1])``: exact, a record spanning
    several bins split between them."""
    if starts.size == 0:
        return np.zeros(max(edges.size - 1, 0))
    t, F = _cumulative(np.asarray(starts, float), np.asarray(lengths, float), np.asarray(values, float))
    return np.diff(np.interp(edges, t, F, left=0.0, right=float(F[-1])))


def _lengths(rec: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return rec["round_start_s"].to_numpy(float), rec["round_s"].to_numpy(float)


def _used_gpu_s(rec: pd.DataFrame) -> np.ndarray:
    """GPU-seconds used per record (``utilisation x available x round_s``: finished jobs' idle tails excluded)."""
    return rec["utilisation"].to_numpy(float) * rec["available_gpus"].to_numpy(float) * rec["round_s"].to_numpy(float)


# -- who is present: active jobs and GPU demand per tenant, from the completions ---------------------
#: most tenants for which the per-record (records x tenants) matrices are built
MAX_TENANT_MATRIX = 1024


def active_matrix(run: RunTrace) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """``(tenants, jobs, gpus)``: per record (rows, at its start ``t``) and tenant (columns), the
    tenant's active jobs and the GPUs they need (a job is active from its arrival until its
    completion: ``arrival <= t < completion``; a merged record has no arrival or completion inside).
    None when the tenancy is "job" or there are more than :data:`MAX_TENANT_MATRIX` tenants.
    Computed once per run (the arrays read-only: the fairness and tenant tables both use them)."""
    memo = run.act
    if memo is not None and memo[0] is run.rec and memo[1] is run.comp:
        return memo[2]
    out = _active_matrix(run)
    if out is not None:
        out[1].flags.writeable = out[2].flags.writeable = False
    run.act = (run.rec, run.comp, out)
    return out


def _active_matrix(run: RunTrace) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    if run.tenancy == "job":
        return None
    names = sorted(run.comp["tenant"].astype(str).unique().tolist())
    if len(names) > MAX_TENANT_MATRIX:
        return None
    t = run.rec["round_start_s"].to_numpy(float)
    jobs = np.zeros((t.size, len(names)))
    gpus = np.zeros((t.size, len(names)))
    for i, (_, g) in enumerate(run.comp.groupby(run.comp["tenant"].astype(str), sort=True)):
        a = np.sort(g["arrival_s"].to_numpy(float))
        c = np.sort(g["completion_s"].to_numpy(float))
        jobs[:, i] = np.searchsorted(a, t, side="right") - np.searchsorted(c, t, side="right")
        wa = g.sort_values("arrival_s", kind="mergesort")["workers"].to_numpy(float)
        wc = g.sort_values("completion_s", kind="mergesort")["workers"].to_numpy(float)
        ca, cc = np.concatenate([[0.0], np.cumsum(wa)]), np.concatenate([[0.0], np.cumsum(wc)])
        gpus[:, i] = ca[np.searchsorted(a, t, side="right")] - cc[np.searchsorted(c, t, side="right")]
    return names, jobs, gpus


def max_min_shares(demand: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair GPUs (water-filling) per row: ``min(demand, L)`` with the level ``L`` at which
    they sum to ``capacity`` (every demand met when they fit). ``demand`` (R, U) >= 0, ``capacity`` (R,)."""
    D = np.asarray(demand, dtype=float)
    G = np.asarray(capacity, dtype=float)
    R, U = D.shape
    if U == 0:
        return D.copy()
    S = np.sort(D, axis=1)
    below = np.concatenate([np.zeros((R, 1)), np.cumsum(S, axis=1)[:, :-1]], axis=1)
    # giving every demand >= S[:, k] exactly S[:, k] uses below[k] + (U - k) * S[:, k] GPUs
    used = below + (U - np.arange(U))[None, :] * S
    k = (used < G[:, None]).sum(axis=1)  # demands fully met: the k smallest
    kk = np.minimum(k, U - 1)
    level = np.where(k >= U, np.inf, (G - below[np.arange(R), kk]) / np.maximum(U - kk, 1))
    return np.minimum(D, level[:, None])


# -- finish-time fairness -------------------------------------------------------------------------
def _contention(run: RunTrace) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tenant, the knots of the time integral of its jobs' contention ``c`` (module docstring):
    ``N(t) * n_u(t)`` with ``N`` the tenants with an active job and ``n_u`` the tenant's active jobs
    (:func:`active_matrix`), or the active jobs with tenancy "job" or too many tenants (key "")."""
    starts, lengths = _lengths(run.rec)
    act = active_matrix(run)
    if act is None:
        return {"": _cumulative(starts, lengths, run.rec["active_jobs"].to_numpy(float))}
    names, jobs, _ = act
    N = (jobs > 0).sum(axis=1).astype(float)
    return {u: _cumulative(starts, lengths, N * jobs[:, i]) for i, u in enumerate(names)}


def isolated_times(run: RunTrace) -> np.ndarray:
    """``T_id`` (s) of every completed job of ``run`` (``run.comp`` order): its run time on its
    isolated share at its time-averaged contention (module docstring)."""
    comp = run.comp
    knots = _contention(run)
    a = comp["arrival_s"].to_numpy(float)
    f = comp["completion_s"].to_numpy(float)
    cbar = np.ones(len(comp))
    keys = np.full(len(comp), "") if "" in knots else comp["tenant"].astype(str).to_numpy()
    for u in np.unique(keys).tolist():
        sel = keys == u
        t, F = knots[u]
        span = np.maximum(f[sel] - a[sel], 1e-12)
        cbar[sel] = (np.interp(f[sel], t, F) - np.interp(a[sel], t, F)) / span
    cbar = np.maximum(cbar, 1.0)  # never less contended than alone (e.g. before its first round)
    idx = comp["idx"].to_numpy()
    s = comp["workers"].to_numpy(float)
    x = run.m[None, :] / (cbar[:, None] * s[:, None])
    tot = x.sum(axis=1)
    x = np.where(tot[:, None] > 1.0, x / tot[:, None], x)
    tput = (run.T[idx] * x).sum(axis=1)
    return run.steps[idx] / tput


def finish_time_fairness(run: RunTrace) -> np.ndarray:
    """``rho = JCT / T_id`` of every completed job of ``run`` (``run.comp`` order; computed once per run)."""
    if run.rho is None or run.rho.size != len(run.comp):
        rho = run.comp["jct_s"].to_numpy(float) / isolated_times(run)
        rho.flags.writeable = False
        run.rho = rho
    return run.rho


# -- tables -----------------------------------------------------------------------------------------
def _q(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x, q)) if x.size else float("nan")


def tenant_table(runs: Sequence[RunTrace]) -> pd.DataFrame:
    """Per-tenant rows of one (policy, variant) over its replications: jobs (per run), demand and
    leased GPU-hours (per run), mean / median / p95 JCT (h, jobs pooled over replications), and,
    as % of the cluster's GPU-seconds of the run (means over replications): its time-weighted
    ``share`` of the leased GPUs, its ``equal`` entitlement (``1 / N`` of the GPUs while it has an
    active job, ``N`` tenants having one) and its ``fair`` entitlement (the max-min fair GPUs of the
    tenants' demands: the equal share capped at what its active jobs need, the rest shared out by
    water-filling), ``share / fair``; finish-time fairness rho (median, p95, max over the pooled
    jobs). Tenants by jobs, largest first. Empty with tenancy "job" (every job a tenant)."""
    rows: dict[str, dict[str, list]] = {}
    for run in runs:
        act = active_matrix(run)
        if act is None:
            return pd.DataFrame()
        names, jobs, gpus = act
        starts, lengths = _lengths(run.rec)
        G = run.rec["available_gpus"].to_numpy(float)
        cap = float((G * lengths).sum())
        N = (jobs > 0).sum(axis=1)
        equal = np.where(jobs > 0, G[:, None] / np.maximum(N, 1)[:, None], 0.0)
        fair = max_min_shares(gpus, G)
        eq_s = dict(zip(names, (equal * lengths[:, None]).sum(axis=0).tolist(), strict=True))
        fair_s = dict(zip(names, (fair * lengths[:, None]).sum(axis=0).tolist(), strict=True))
        leased = run.leased
        rho = finish_time_fairness(run)
        comp = run.comp.assign(rho=rho)
        for u, g in comp.groupby(comp["tenant"].astype(str), sort=False):
            d = rows.setdefault(str(u), {k: [] for k in ("jobs", "demand", "leased", "jct", "share", "eq", "fair",
                                                         "rho")})  # fmt: skip
            idx = g["idx"].to_numpy()
            d["jobs"].append(len(g))
            d["demand"].append(float((g["workers"].to_numpy(float) * run.steps[idx] / run.T[idx].max(axis=1)).sum()))
            d["leased"].append(leased.get(u, float("nan")))
            d["jct"].append(g["jct_s"].to_numpy(float))
            d["share"].append(leased.get(u, float("nan")) / cap)
            d["eq"].append(eq_s.get(u, 0.0) / cap)
            d["fair"].append(fair_s.get(u, 0.0) / cap)
            d["rho"].append(g["rho"].to_numpy(float))
    out = []
    for u, d in rows.items():
        jct = np.concatenate(d["jct"]) / HOUR
        rho = np.concatenate(d["rho"])
        share, fair = float(np.mean(d["share"])), float(np.mean(d["fair"]))
        out.append({
            "tenant": u, "jobs": float(np.mean(d["jobs"])), "demand GPU-h": float(np.mean(d["demand"])) / HOUR,
            "leased GPU-h": float(np.mean(d["leased"])) / HOUR, "mean JCT h": float(jct.mean()),
            "median JCT h": _q(jct, 0.5), "p95 JCT h": _q(jct, 0.95), "share %": 100 * share,
            "equal %": 100 * float(np.mean(d["eq"])), "fair %": 100 * fair,
            "share / fair": share / fair if fair > 0 else float("nan"),
            "rho median": _q(rho, 0.5), "rho p95": _q(rho, 0.95), "rho max": float(rho.max()),
        })  # fmt: skip
    df = pd.DataFrame(out)
    if df.empty:
        return df
    return df.sort_values(["jobs", "tenant"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def _tail_share(jct: np.ndarray, top: float = 0.01) -> float:
    """Share of the total JCT held by the top ``top`` fraction of jobs (at least one job)."""
    if jct.size == 0 or jct.sum() <= 0:
        return float("nan")
    k = max(1, math.ceil(top * jct.size))
    return float(np.sort(jct)[-k:].sum() / jct.sum())


def _run_figures(run: RunTrace) -> dict[str, Any]:
    """The per-run figures of :func:`policy_table` (JCT in s, times in s)."""
    jct = run.comp["jct_s"].to_numpy(float)
    starts, lengths = _lengths(run.rec)
    used = _used_gpu_s(run.rec)
    cap = float((run.rec["available_gpus"].to_numpy(float) * lengths).sum())
    bf = run.rec["backfill_gpu_s"].to_numpy(float) if "backfill_gpu_s" in run.rec else np.full(len(run.rec), np.nan)
    last = int(np.argmax(run.comp["completion_s"].to_numpy(float)))
    row = run.comp.iloc[last]
    j = int(row["idx"])
    alone = float(run.steps[j] / run.T[j].max())
    rho = finish_time_fairness(run)
    return {
        "jobs": len(jct), "mean": float(jct.mean()), "median": _q(jct, 0.5), "p95": _q(jct, 0.95),
        "p99": _q(jct, 0.99), "top1": _tail_share(jct), "backfill": float(bf.sum() / used.sum()) if used.sum() else
        float("nan"), "util": float(used.sum() / cap) if cap else float("nan"),
        "makespan": float(row["completion_s"]),
        "last_job": str(row["job_id"]), "last_tenant": str(row["tenant"]), "last_gpus": int(row["workers"]),
        "last_arrival": float(row["arrival_s"]), "last_alone": alone, "last_jct": float(row["jct_s"]),
        "rho_max": float(rho.max()), "rho_median": _q(rho, 0.5), "rho_gt1": float((rho > 1.0).mean()),
    }  # fmt: skip


def policy_table(runs: Sequence[RunTrace]) -> pd.DataFrame:
    """Per (policy, variant), means over replications: jobs, mean / median / p95 / p99 JCT (h),
    top-1% share of total JCT (%), backfill share of used GPU-seconds (%), utilisation over the
    rounds (%), makespan (days), median and max rho, share of jobs with rho > 1 (%); the job that
    set the makespan (of replication 0) as text."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run.policy, run.variant), []).append(_run_figures(run))
    out = []
    for (pol, var), figs in groups.items():
        mean = {k: float(np.mean([f[k] for f in figs])) for k in figs[0] if not isinstance(figs[0][k], str)}
        f0 = figs[0]
        out.append({
            "policy": pol, "variant": var, "runs": len(figs), "jobs": mean["jobs"], "mean JCT h": mean["mean"] / HOUR,
            "median JCT h": mean["median"] / HOUR, "p95 JCT h": mean["p95"] / HOUR, "p99 JCT h": mean["p99"] / HOUR,
            "top-1% share of JCT %": 100 * mean["top1"], "backfill %": 100 * mean["backfill"],
            "utilisation %": 100 * mean["util"], "makespan d": mean["makespan"] / DAY,
            "rho median": mean["rho_median"], "rho max": mean["rho_max"], "rho > 1 %": 100 * mean["rho_gt1"],
            "makespan set by": (
                f"job {f0['last_job']} ({f0['last_tenant']}, {f0['last_gpus']} GPU(s), arrived day "
                f"{f0['last_arrival'] / DAY:.1f}, {f0['last_alone'] / DAY:.1f} d alone on its fastest type, "
                f"JCT {f0['last_jct'] / DAY:.1f} d)"
            ),
        })  # fmt: skip
    return pd.DataFrame(out)


def size_table(runs: Sequence[RunTrace]) -> pd.DataFrame:
    """JCT (h) by job size bucket (:data:`SIZE_BUCKETS`) per (policy, variant), jobs pooled over
    replications: jobs per run, mean, median, p95."""
    rows = []
    groups: dict[tuple[str, str], list[RunTrace]] = {}
    for run in runs:
        groups.setdefault((run.policy, run.variant), []).append(run)
    for (pol, var), rs in groups.items():
        g = np.concatenate([r.comp["workers"].to_numpy() for r in rs])
        jct = np.concatenate([r.comp["jct_s"].to_numpy(float) for r in rs]) / HOUR
        for label, lo, hi in SIZE_BUCKETS:
            sel = (g >= lo) & (g <= hi)
            if not sel.any():
                continue
            x = jct[sel]
            rows.append({"policy": pol, "variant": var, "GPUs": label, "jobs": sel.sum() / len(rs),
                         "mean JCT h": float(x.mean()), "median JCT h": _q(x, 0.5),
                         "p95 JCT h": _q(x, 0.95)})  # fmt: skip
    return pd.DataFrame(rows)


# -- figure -----------------------------------------------------------------------------------------
def plot_utilisation(runs: Sequence[RunTrace], path: str | Path, variant: str = "truthful") -> Path:
    """Daily utilisation (GPU-seconds used / the cluster's GPU-seconds of the day) and the daily
    time-averaged number of active jobs, one line per policy (mean over replications)."""
    from marketsim.analysis.engine.run_status import write_atomic
    from marketsim.analysis.frontends.plots import _figure, _log_axis

    sel = [r for r in runs if r.variant == variant] or list(runs)
    end = max(float((r.rec["round_start_s"] + r.rec["round_s"]).max()) for r in sel)
    edges = np.arange(0.0, end + DAY, DAY)
    days = edges[:-1] / DAY
    fig = _figure(figsize=(8.0, 6.0))
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.08, top=0.95, hspace=0.1)  # fixed: no second draw to fit
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for pol in sorted({r.policy for r in sel}):
        rs = [r for r in sel if r.policy == pol]
        u = np.mean([binned_integral(*_lengths(r.rec), _used_gpu_s(r.rec) / np.maximum(r.rec["round_s"].to_numpy(
            float), 1e-300), edges) / (r.m.sum() * DAY) for r in rs], axis=0)  # fmt: skip
        a = np.mean([binned_integral(*_lengths(r.rec), r.rec["active_jobs"].to_numpy(float), edges) / DAY for r in rs],
                    axis=0)  # fmt: skip
        ax1.plot(days, 100 * u, label=pol, lw=1.0)
        ax2.plot(days, np.maximum(a, 1e-3), label=pol, lw=1.0)
    ax1.set_ylabel("GPU utilisation per day (%)")
    ax1.set_ylim(0, 105)
    ax2.set_ylabel("active jobs (daily time average)")
    _log_axis(ax2, "y")
    ax2.set_xlabel("day since the first arrival")
    ax1.legend(fontsize=7, ncol=2)
    ax1.set_title(f"Utilisation over time ({variant})")
    out = Path(path)
    write_atomic(out, lambda p: fig.savefig(p, dpi=110))  # whole or not at all
    return out


# -- the section ----------------------------------------------------------------------------------
def _md(df: pd.DataFrame, digits: int = 2) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            if math.isnan(v):
                return "—"
            if abs(v) >= 1000 or v.is_integer():
                return f"{v:,.0f}"
            return f"{v:.{digits}f}"
        return str(v)

    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def _differences(pol: pd.DataFrame, span_d: float) -> list[str]:
    """The "where the policies differ and why" bullets, from the truthful rows of :func:`policy_table`."""
    t = pol[pol["variant"] == "truthful"]
    if t.empty:
        return []
    out = []
    best, worst = t.loc[t["mean JCT h"].idxmin()], t.loc[t["mean JCT h"].idxmax()]
    med_lo, med_hi = t["median JCT h"].min(), t["median JCT h"].max()
    out.append(
        f"Mean JCT: {best['mean JCT h']:.2f} h ({best['policy']}) to {worst['mean JCT h']:.2f} h ({worst['policy']}), "
        f"{worst['mean JCT h'] / best['mean JCT h']:.2f}x; median JCT: {med_lo:.2f} to {med_hi:.2f} h "
        f"({(med_hi / med_lo - 1) * 100 if med_lo > 0 else float('nan'):.0f}% apart)."
    )
    out.append(
        f"The tail decides the mean: the top 1% of jobs hold {t['top-1% share of JCT %'].min():.0f}-"
        f"{t['top-1% share of JCT %'].max():.0f}% of the total JCT (p99 JCT {t['p99 JCT h'].min():.1f}-"
        f"{t['p99 JCT h'].max():.1f} h against a median of at most {med_hi:.2f} h), so policies that differ only in "
        "which long or multi-GPU jobs wait differ in the mean much more than in the median."
    )
    if t["backfill %"].notna().any():
        b = t.sort_values("backfill %", ascending=False)
        parts = ", ".join(f"{r['policy']} {r['backfill %']:.0f}%" for _, r in b.iterrows())
        out.append(
            "Backfill: share of the used GPU-seconds leased to jobs on a GPU type where the policy gave them no "
            f"time fraction (work-conserving leases of idle GPUs): {parts}. Where it is large, the realised "
            "schedule is shaped as much by the lease order as by the policy's allocation."
        )
    m_lo, m_hi = t["makespan d"].min(), t["makespan d"].max()
    last = t.loc[t["makespan d"].idxmax()]
    out.append(
        f"Makespan (mean over replications): {m_lo:.1f} to {m_hi:.1f} days against an arrival span of {span_d:.1f} "
        f"days; under {last['policy']}, replication 0's last job to finish is {last['makespan set by']}."
    )
    return out


def render_trace_section(
    runs: Sequence[RunTrace],
    deviators: Mapping[str, str],
    profile_lines: Sequence[str] = (),
    figure: Path | None = None,
) -> str:
    """The markdown of the trace section (module docstring). ``deviators`` (lying variant -> tenant)
    is accepted for the caller's convenience; the liar's JCT and time-weighted throughput, truthful
    against lying, are the report's "Gain from lying" section
    (:func:`marketsim.analysis.frontends.report.gain_tables`)."""
    if not runs:
        return ""
    pol = policy_table(runs)
    span_d = max(float(r.comp["arrival_s"].max() - r.comp["arrival_s"].min()) for r in runs) / DAY
    out = ["## Trace: per-policy, per-size and per-tenant figures (JCT in hours, spans in days)", ""]
    if profile_lines:
        out += ["Workload (replication 0's job types; `marketsim run --check` prints the same):", ""]
        out += [f"- {x}" for x in profile_lines] + [""]
    out += ["### Where the policies differ, and why", ""]
    out += [f"- {x}" for x in _differences(pol, span_d)] + [""]
    out += [
        "### Per policy (means over replications)",
        "",
        "top-1% share: share of the total JCT held by the 1% of jobs with the longest JCT; backfill: share of the "
        "used GPU-seconds leased to jobs on a type where the policy gave them no time fraction; utilisation: used "
        "GPU-seconds over the cluster's GPU-seconds of the rounds; rho: finish-time fairness JCT / T_id (below).",
        "",
        _md(pol.drop(columns=["makespan set by"])),
        "",
        *[f"- {r['policy']} ({r['variant']}): makespan {r['makespan d']:.1f} d (mean over replications); "
          f"replication 0's last job to finish: {r['makespan set by']}" for _, r in pol.iterrows()],  # fmt: skip
        "",
        "### JCT by job size (GPUs per job; jobs pooled over replications)",
        "",
        _md(size_table(runs)),
        "",
        "### Per tenant",
        "",
        "jobs and GPU-hours per run (demand: on each job's fastest GPU type; leased: GPUs held by the tenant's jobs x "
        "round length); JCT over its jobs; share: its leased GPU-seconds over the cluster's GPU-seconds of the run; "
        "equal: 1/N of the GPUs while it has an active job (N tenants have one), integrated over the run; fair: the "
        "max-min fair GPUs of the tenants' demands (the equal share capped at what its active jobs need, the rest "
        "water-filled to the others), integrated likewise; share / fair below 1: it got less than its fair share; "
        "rho = JCT / T_id, T_id the job's run time on its isolated 1/N share (N = tenants present x its "
        "tenant's active jobs, time-averaged over its life; Gavel's IsolatedPolicy time fractions; Themis' "
        "T_shared / T_independent); rho > 1: the job finished later than on its isolated share.",
        "",
    ]
    groups: dict[tuple[str, str], list[RunTrace]] = {}
    for r in runs:
        groups.setdefault((r.policy, r.variant), []).append(r)
    for (p, v), rs in groups.items():
        tt = tenant_table(rs)
        if not tt.empty:
            out += [f"#### {p} ({v})", "", _md(tt), ""]
    if figure is not None:
        out += [f"![{figure.stem}]({figure.name})", ""]
    return "\n".join(out)


def trace_section(exp: Any, results: str | Path, completions: pd.DataFrame | None, out_dir: str | Path) -> str:
    """The trace section of ``exp``'s report (``""`` when it has no complete trace run), writing
    ``utilisation.png`` into ``out_dir``."""
    scen = exp.scenario
    if scen.workload.trace is None or completions is None or completions.empty:
        return ""
    runs = run_traces(exp, results, completions)  # one run's records in memory at a time
    if not runs:
        return ""
    fig = plot_utilisation(runs, Path(out_dir) / "utilisation.png")
    from marketsim.market.traces import trace_profile

    cfg, _ = scen.model_inputs(runs[0].policy, "truthful", _seed_of(exp, runs[0].replication))
    tw = cfg.trace
    prof = trace_profile(tw.trace, tw.throughputs, scen.cluster.gpus, scen.cluster.gpu_types, tw.tenants)
    del fig  # listed with the report's other figures
    return render_trace_section(runs, exp.deviators, prof.lines())


def _seed_of(exp: Any, replication: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(exp.seed).spawn(exp.replications)[replication]


def check_lines(scenario: Any, seed: int | None = None, policies: Sequence[str] | None = None) -> list[str]:
    """What ``marketsim run SCENARIO --check`` prints: the scenario is valid (it was loaded, so its
    trace was read and every check passed), and, for a trace scenario, the workload of its first
    replication (:class:`marketsim.market.traces.TraceProfile`: jobs, span, tenants, job sizes, demand,
    offered load); ``seed`` and ``policies`` as ``marketsim run`` takes them."""
    from marketsim.analysis.engine.runner import plan_runs
    from marketsim.market.traces import trace_profile

    spec = plan_runs(scenario, 1, seed, policies, ["truthful"])[0]
    cfg, _ = scenario.model_inputs(spec.policy, "truthful", spec.seed_sequence())  # builds and checks the model input
    pols = ", ".join(policies or scenario.policies)
    ts = scenario.workload.trace
    if ts is None:
        cl = " + ".join(f"{m} {t}" for t, m in zip(scenario.cluster.gpu_types, scenario.cluster.gpus, strict=True))
        return [
            f"{scenario.name}: valid (not a trace scenario): {scenario.workload.tenants} tenants, {scenario.rounds} "
            f"rounds of {scenario.cluster.round_seconds:g} s on {cl}",
            f"policies: {pols}",
            "--check: nothing was run",
        ]
    tw = cfg.trace
    where = "generated by Gavel's generator" if ts.generator else f"{Path(ts.path).name} ({ts.format} format)"
    drawn = ts.format == "philly" or (ts.format == "csv" and not _has_column(ts.path, "job_type"))
    head = [
        f"{scenario.name}: valid; trace {where}, tenancy {ts.tenancy}"
        + (f", arrivals x {ts.arrival_scale:g}" if ts.arrival_scale != 1.0 else "")
        + (f", first {ts.max_jobs:,} jobs" if ts.max_jobs else ""),
        f"job types: drawn per replication (experiment seed {int(spec.entropy)}; replication 0 shown)"
        if drawn and not ts.generator else "job types: from the trace",
    ]
    prof = trace_profile(tw.trace, tw.throughputs, scenario.cluster.gpus, scenario.cluster.gpu_types, tw.tenants)
    return [*head, *prof.lines(per_job=ts.tenancy == "job"), f"policies: {pols}", "--check: nothing was run"]


def _has_column(path: str, name: str) -> bool:
    """The CSV trace at ``path`` (plain or gzip) names column ``name`` in its header."""
    import csv

    from marketsim.market.traces import open_text

    with open_text(Path(path)) as fh:
        header = next(csv.reader(fh), [])
    return name in [h.strip() for h in header]
