"""Statistics on the runner's tidy frame: time integrals over records of unequal length, per-job
figures, paired lying gains with t confidence intervals and per-policy summaries.

**Records.** A run's tidy frame has one *record* per simulated round: the cluster rows
(``tenant == ""``) of one ``round`` index. Records differ in length: on the trace engine one record
covers ``round_s`` seconds (a round cut short when every leased job finished, or up to hundreds of
Gavel rounds merged into one record, ``merged_rounds``); runs whose records carry no ``round_s``
(fixed-length rounds) have records of the configured ``round_seconds``. :func:`record_lengths` is
the one place that decides a record's length (``round_s`` when present, else ``round_seconds``), and
every per-run figure here is either

* a **time integral** over the run's records, ``sum(value x length)``: GPU-seconds, work in
  slowest-GPU-equivalent seconds; a rate is an integral divided by the seconds it covers
  (``total_act`` = work done per simulated second over the run), never a plain mean over records; or
* a **per-job** figure over the jobs that finished (``jct_s`` rows): mean, median, 95th percentile.

Throughputs are in slowest-GPU equivalents (work-seconds per second). The simulated time a run
covers is the time its records cover: the trace engine jumps over idle gaps in which no job is
active (no record), so those gaps count neither as available nor as used GPU time.

Public helpers (also used by :mod:`marketsim.analysis.engine.fairshare_study`, :mod:`marketsim.analysis.engine.sweep`
and the trace reports): :func:`record_lengths`, :func:`cluster_integrals`,
:func:`throughput_while_active`, :func:`jct_summary`, :func:`paired_gains`, :func:`gain_summary`,
:func:`policy_summary`, :func:`t_interval`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from marketsim.market.errors import InputError, check_positive

__all__ = [
    "RUN_KEYS",
    "REPORT_CLUSTER_MEASURES",
    "ACTIVE_DEFINITION",
    "t_interval",
    "record_lengths",
    "cluster_integrals",
    "throughput_while_active",
    "jct_summary",
    "paired_gains",
    "gain_summary",
    "policy_summary",
]

TRUTHFUL = "truthful"
#: the columns that name one run in a runner frame
RUN_KEYS: tuple[str, ...] = ("policy", "variant", "replication")
#: what "active" means for a tenant (the captions of the reports quote it)
ACTIVE_DEFINITION = (
    "a tenant is active in a record when at least one of its jobs has arrived and not completed at the "
    "record's start (runnable_jobs > 0); its active time is the summed length of those records"
)
#: the cluster measures (``tenant == ""`` rows) that :func:`policy_summary` and :func:`paired_gains` read
#: (record lengths, the time integrals, the counts): a trace run's report reads only these from its results
#: (:func:`marketsim.analysis.engine.runner.load_report_frame`)
REPORT_CLUSTER_MEASURES: tuple[str, ...] = (
    "available_gpus", "round_s", "utilisation", "total_est", "total_act", "jobs_completed", "resolved",
    "cross_type_workers", "migrations", "migration_lost_s",
)  # fmt: skip
#: a paired difference counts as "lying paid" beyond this (throughput, slowest-GPU equivalents)
PAID_TOL = 1e-9
#: a mean JCT counts as shorter (lying paid) beyond this many seconds
JCT_TOL_S = 1e-6


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: Student-t confidence interval of the mean (NaN bounds if n < 2)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan"), float("nan")
    from scipy import stats  # lazy: sweep and study workers import this module but never call it

    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half


# -- records and their lengths -------------------------------------------------------------------------
def _rows(frame: pd.DataFrame, measures: Collection[str], cluster: bool, cols: Sequence[str]) -> pd.DataFrame:
    """The ``cols`` of the rows of ``measures``: cluster rows (``tenant == ""``) or tenant rows. Only the
    needed columns are taken (a results frame has millions of rows of Arrow strings)."""
    is_cluster = (frame["tenant"] == "").to_numpy(dtype=bool)
    mask = (is_cluster if cluster else ~is_cluster) & frame["measure"].isin(list(measures)).to_numpy(dtype=bool)
    return frame.loc[mask, list(cols)]


def _wide(frame: pd.DataFrame, measures: Collection[str], keys: Sequence[str], tenant: bool = False) -> pd.DataFrame:
    """The rows of ``measures`` (cluster rows, or tenant rows with ``tenant=True``) as one column per
    measure, indexed by ``(*keys, round)`` (``(*keys, round, tenant)`` for tenant rows)."""
    idx = [*keys, "round", *(["tenant"] if tenant else [])]
    sub = _rows(frame, measures, not tenant, [*idx, "measure", "value"])
    if sub.empty:
        return pd.DataFrame(index=pd.MultiIndex.from_arrays([[] for _ in idx], names=idx))
    sub = sub.astype({"measure": str, **({"tenant": str} if tenant else {})})
    return sub.pivot_table(index=idx, columns="measure", values="value", aggfunc="sum", observed=True)


def record_lengths(
    frame: pd.DataFrame, round_seconds: float | None = None, keys: Sequence[str] = RUN_KEYS
) -> pd.Series:
    """Seconds of simulated time each record covers, indexed by ``(*keys, round)`` (one entry per
    record: a round with an ``available_gpus`` cluster row). The length is the record's ``round_s``
    row where it has one (trace engine) and ``round_seconds`` otherwise (fixed-length rounds): one
    rule for both kinds of run. Raises :class:`InputError` when a record has no ``round_s`` and
    ``round_seconds`` is not given."""
    w = _wide(frame, ("available_gpus", "round_s"), keys)
    if "available_gpus" not in w.columns:
        return pd.Series(dtype=float, index=w.index, name="seconds")
    w = w[w["available_gpus"].notna()]
    length = w["round_s"] if "round_s" in w.columns else pd.Series(np.nan, index=w.index)
    missing = length.isna()
    if missing.any():
        if round_seconds is None:
            why = f"is needed: {int(missing.sum())} record(s) have no round_s row (fixed-length rounds)"
            raise InputError("round_seconds", None, why)
        length = length.fillna(check_positive("round_seconds", float(round_seconds)))
    return length.astype(float).rename("seconds")


def cluster_integrals(
    frame: pd.DataFrame, round_seconds: float | None = None, keys: Sequence[str] = RUN_KEYS
) -> pd.DataFrame:
    """Per run (index ``keys``; one row when ``keys`` is empty), time integrals over its records:

    * ``seconds``: simulated time the records cover (s);
    * ``gpu_seconds_available`` = ``sum(available_gpus x length)`` and ``gpu_seconds_used`` =
      ``sum(utilisation x available_gpus x length)`` (GPU-s; a record's ``utilisation`` is the
      GPU-seconds its jobs ran over its available GPU-seconds, so a job finishing inside a record
      uses its GPUs only until it finishes); ``utilisation`` = used / available;
    * ``work_est`` / ``work_act`` = ``sum(total_est x length)`` / ``sum(total_act x length)``
      (slowest-GPU-equivalent seconds) and ``total_est`` / ``total_act`` = work / ``seconds``
      (slowest-GPU equivalents: work per simulated second over the run).

    Lengths: :func:`record_lengths`."""
    length = record_lengths(frame, round_seconds, keys)
    w = _wide(frame, ("available_gpus", "utilisation", "total_est", "total_act"), keys).reindex(length.index)
    col = {m: (w[m] if m in w.columns else pd.Series(np.nan, index=w.index)).astype(float) for m in
           ("available_gpus", "utilisation", "total_est", "total_act")}  # fmt: skip
    parts = pd.DataFrame(
        {
            "seconds": length,
            "gpu_seconds_available": col["available_gpus"] * length,
            "gpu_seconds_used": (col["utilisation"] * col["available_gpus"] * length).fillna(0.0),
            "work_est": (col["total_est"] * length).fillna(0.0),
            "work_act": (col["total_act"] * length).fillna(0.0),
        }
    )
    out = parts.groupby(level=list(keys), sort=True).sum() if keys else parts.sum().to_frame().T
    out["utilisation"] = _ratio(out["gpu_seconds_used"], out["gpu_seconds_available"])
    for m in ("est", "act"):
        out[f"total_{m}"] = _ratio(out[f"work_{m}"], out["seconds"])
    return out


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    """``num / den`` where ``den > 0``, NaN elsewhere."""
    return (num / den.where(den > 0)).astype(float)


def throughput_while_active(
    frame: pd.DataFrame,
    tenants: Collection[str] | None = None,
    measures: Sequence[str] = ("act",),
    round_seconds: float | None = None,
    keys: Sequence[str] = RUN_KEYS,
    as_one: str | None = None,
) -> pd.DataFrame:
    """Each tenant's time-weighted throughput while active, per run: one row per ``(*keys, tenant)``
    with ``active_s`` (s; :data:`ACTIVE_DEFINITION`), ``work_<m>`` = ``sum(m x length)`` over its
    active records (slowest-GPU-equivalent seconds) and ``<m>`` = ``work_<m> / active_s`` for every
    measure ``m`` of ``measures`` (tenant measures: ``act``, ``est``, ...). A tenant never active in a
    run has no row. ``tenants`` restricts the tenants; ``as_one`` names a group: the tenants are then
    summed into one tenant of that name (active while ANY of them is). Needs the tenants'
    ``runnable_jobs`` rows (raises :class:`InputError` naming the tenant otherwise)."""
    cols = [*keys, "tenant", "active_s", *(f"work_{m}" for m in measures), *measures]
    idx = [*keys, "round", "tenant"]
    sub = _rows(frame, (*measures, "runnable_jobs"), False, [*idx, "measure", "value"])
    if tenants is not None:
        sub = sub[sub["tenant"].isin([str(t) for t in tenants])]
    if sub.empty:
        return pd.DataFrame(columns=cols)
    sub = sub.astype({"measure": str, "tenant": str})
    if as_one is not None:
        sub = sub.assign(tenant=as_one)
    w = sub.pivot_table(index=idx, columns="measure", values="value", aggfunc="sum", observed=True)
    if "runnable_jobs" not in w.columns or w["runnable_jobs"].isna().any():
        who = w.index.get_level_values("tenant")[w.get("runnable_jobs", pd.Series(np.nan, index=w.index)).isna()][0]
        raise InputError("frame", f"tenant {who}", "has per-round rows but no runnable_jobs rows (needed for 'active')")
    length = record_lengths(frame, round_seconds, keys)
    L = length.reindex(w.index.droplevel("tenant")).to_numpy()
    if np.isnan(L).any():
        raise InputError("frame", "tenant rows", "have rounds without a cluster record (available_gpus)")
    active = w["runnable_jobs"].to_numpy() > 0
    data = {"active_s": np.where(active, L, 0.0)}
    for m in measures:
        v = w[m].to_numpy(dtype=float) if m in w.columns else np.zeros(len(w))
        data[f"work_{m}"] = np.where(active, np.nan_to_num(v) * L, 0.0)
    parts = pd.DataFrame(data, index=w.index)
    out = parts.groupby(level=[*keys, "tenant"], sort=True).sum()
    out = out[out["active_s"] > 0]
    for m in measures:
        out[m] = out[f"work_{m}"] / out["active_s"]
    return out.reset_index()[cols]


def jct_summary(
    frame: pd.DataFrame, keys: Sequence[str] = RUN_KEYS, by_tenant: bool = False,
    tenants: Collection[str] | None = None, as_one: str | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Per-job figures of the jobs that finished (``jct_s`` rows), per run (and per tenant with
    ``by_tenant``; ``tenants`` restricts them, ``as_one`` pools them under one name): ``jobs``
    (finished jobs), ``mean_jct_s``, ``median_jct_s``, ``p95_jct_s`` (s; the 95th percentile with
    linear interpolation). Jobs unfinished at the end of a run have no ``jct_s`` row and no part in
    these figures."""
    sub = frame[frame["measure"] == "jct_s"]
    if tenants is not None:
        sub = sub[sub["tenant"].isin([str(t) for t in tenants])]
    if as_one is not None:
        sub = sub.assign(tenant=as_one)
        by_tenant = True
    by = [*keys, *(["tenant"] if by_tenant else [])]
    cols = ["jobs", "mean_jct_s", "median_jct_s", "p95_jct_s"]
    if sub.empty:
        return pd.DataFrame(columns=[*by, *cols])
    sub = sub.assign(tenant=sub["tenant"].astype(str)) if by_tenant else sub
    if not by:
        v = sub["value"].to_numpy(dtype=float)
        return pd.DataFrame([[v.size, v.mean(), np.median(v), np.percentile(v, 95)]], columns=cols)
    g = sub.groupby(by, sort=True, observed=True)["value"]
    out = pd.DataFrame(
        {"jobs": g.size(), "mean_jct_s": g.mean(), "median_jct_s": g.median(), "p95_jct_s": g.quantile(0.95)}
    )
    return out.reset_index()


# -- lying gains ---------------------------------------------------------------------------------------
_PAIR_COLUMNS = [
    "policy", "variant", "deviator", "replication", "truthful", "lying", "diff", "rel_gain",
    "active_s_truthful", "active_s_lying", "jct_truthful_s", "jct_lying_s", "jct_diff_s", "jct_rel",
    "jobs_truthful", "jobs_lying",
]  # fmt: skip


def paired_gains(
    frame: pd.DataFrame, deviators: Mapping[str, str], measure: str = "act", round_seconds: float | None = None
) -> pd.DataFrame:
    """The deviator's experience, truthful vs lying, paired by (policy, replication) (common random
    numbers: the same seed drives both runs).

    For each lying variant ``v`` with deviator ``d`` and each truthful run with a ``v`` twin:

    * ``truthful`` / ``lying``: ``d``'s TRUE ``measure`` throughput while active
      (:func:`throughput_while_active`: the integral of ``measure`` over its active records divided by
      its active time, slowest-GPU equivalents); ``diff`` = lying − truthful; ``rel_gain`` =
      lying / truthful − 1; ``active_s_*``: its active time (s);
    * ``jct_truthful_s`` / ``jct_lying_s``: the mean JCT (s) of ``d``'s jobs that finished,
      ``jct_diff_s`` = lying − truthful (< 0: lying made its jobs finish sooner), ``jct_rel`` =
      lying / truthful − 1; ``jobs_*``: how many of its jobs finished.

    Record lengths: :func:`record_lengths` (``round_seconds`` for runs without ``round_s`` rows)."""
    if frame.empty:
        return pd.DataFrame(columns=_PAIR_COLUMNS)
    devs = sorted(set(deviators.values()))
    for variant in deviators:
        if not (frame["variant"] == variant).any() and not (frame["tenant"] == deviators[variant]).any():
            raise InputError("variant", variant, "has no rows in the results")
    keys = list(RUN_KEYS)
    runs = _rows(frame, ("available_gpus",), True, keys).drop_duplicates()
    runs = set(runs.itertuples(index=False, name=None))
    thr = throughput_while_active(frame, devs, (measure,), round_seconds, keys).set_index([*keys, "tenant"])
    jct = jct_summary(frame, keys, by_tenant=True, tenants=devs)
    jct = jct.set_index([*keys, "tenant"]) if not jct.empty else jct

    def look(table: pd.DataFrame, key: tuple, col: str, default: float = float("nan")) -> float:
        return float(table.at[key, col]) if (not table.empty and key in table.index) else default

    rows = []
    for variant, dev in deviators.items():
        for policy, var, rep in sorted(r for r in runs if r[1] == TRUTHFUL):
            if (policy, variant, rep) not in runs:
                continue
            kt, kl = (policy, var, rep, dev), (policy, variant, rep, dev)
            t, lie = look(thr, kt, measure), look(thr, kl, measure)
            jt, jl = look(jct, kt, "mean_jct_s"), look(jct, kl, "mean_jct_s")
            rows.append(
                {
                    "policy": policy,
                    "variant": variant,
                    "deviator": dev,
                    "replication": int(rep),
                    "truthful": t,
                    "lying": lie,
                    "diff": lie - t,
                    "rel_gain": lie / t - 1.0 if t > 0 else float("nan"),
                    "active_s_truthful": look(thr, kt, "active_s", 0.0),
                    "active_s_lying": look(thr, kl, "active_s", 0.0),
                    "jct_truthful_s": jt,
                    "jct_lying_s": jl,
                    "jct_diff_s": jl - jt,
                    "jct_rel": jl / jt - 1.0 if jt > 0 else float("nan"),
                    "jobs_truthful": int(look(jct, kt, "jobs", 0.0)),
                    "jobs_lying": int(look(jct, kl, "jobs", 0.0)),
                }
            )
    out = pd.DataFrame(rows, columns=_PAIR_COLUMNS)
    return out.sort_values(["policy", "variant", "replication"], kind="mergesort").reset_index(drop=True)


def _ratio_interval(diff: np.ndarray, base: np.ndarray, level: float) -> tuple[float, ...]:
    """``(mean diff, low, high, rel, rel_low, rel_high)``: the t interval of the paired differences and
    the ratio estimator ``mean diff / mean base`` (its interval: the diff interval over the same base)."""
    ok = np.isfinite(diff) & np.isfinite(base)
    d, lo, hi = t_interval(diff[ok], level)
    b = float(base[ok].mean()) if ok.any() else float("nan")
    if b > 0:
        return d, lo, hi, d / b, lo / b, hi / b
    return d, lo, hi, float("nan"), float("nan"), float("nan")


def gain_summary(pairs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per (policy, variant) of :func:`paired_gains` (seeds where the figure is defined):

    * throughput while active: ``n`` pairs, mean ``truthful`` / ``lying``, mean paired ``diff`` with its
      t interval (``diff_low``, ``diff_high``), ``rel_gain = mean diff / mean truthful`` (ratio
      estimator; ``rel_low``/``rel_high``: the diff interval over the same denominator) and ``p_gain``,
      the share of seeds in which lying raised it (diff > 1e-9);
    * mean JCT of the deviator's finished jobs (s): ``jct_n`` pairs, ``jct_truthful_s``,
      ``jct_lying_s``, ``jct_diff_s`` with ``jct_low_s``/``jct_high_s``, ``jct_rel`` (+ ``jct_rel_low``,
      ``jct_rel_high``) and ``p_jct_gain``, the share of seeds in which lying shortened it.

    A lie that pays raises the throughput (``rel_gain`` > 0) and shortens the JCT (``jct_rel`` < 0)."""
    rows = []
    for (policy, variant), g in pairs.groupby(["policy", "variant"], sort=True):
        t, lie = g["truthful"].to_numpy(dtype=float), g["lying"].to_numpy(dtype=float)
        ok = np.isfinite(t) & np.isfinite(lie)
        d, dlo, dhi, r, rlo, rhi = _ratio_interval(lie - t, t, level)
        jt, jl = g["jct_truthful_s"].to_numpy(dtype=float), g["jct_lying_s"].to_numpy(dtype=float)
        jok = np.isfinite(jt) & np.isfinite(jl)
        jd, jlo, jhi, jr, jrlo, jrhi = _ratio_interval(jl - jt, jt, level)
        rows.append(
            {
                "policy": policy,
                "variant": variant,
                "n": int(ok.sum()),
                "truthful": float(t[ok].mean()) if ok.any() else float("nan"),
                "lying": float(lie[ok].mean()) if ok.any() else float("nan"),
                "diff": d,
                "diff_low": dlo,
                "diff_high": dhi,
                "rel_gain": r,
                "rel_low": rlo,
                "rel_high": rhi,
                "p_gain": float(((lie - t)[ok] > PAID_TOL).mean()) if ok.any() else float("nan"),
                "jct_n": int(jok.sum()),
                "jct_truthful_s": float(jt[jok].mean()) if jok.any() else float("nan"),
                "jct_lying_s": float(jl[jok].mean()) if jok.any() else float("nan"),
                "jct_diff_s": jd,
                "jct_low_s": jlo,
                "jct_high_s": jhi,
                "jct_rel": jr,
                "jct_rel_low": jrlo,
                "jct_rel_high": jrhi,
                "p_jct_gain": float(((jl - jt)[jok] < -JCT_TOL_S).mean()) if jok.any() else float("nan"),
            }
        )
    return pd.DataFrame(rows)


# -- per-policy summary --------------------------------------------------------------------------------
def policy_summary(frame: pd.DataFrame, round_seconds: float | None = None) -> pd.DataFrame:
    """Per (policy, variant), means over replications of per-run figures:

    * time integrals (:func:`cluster_integrals`): ``total_est`` / ``total_act`` (work per simulated
      second over the run, slowest-GPU equivalents), ``utilisation`` (GPU-seconds used / GPU-seconds
      available), ``straggler_gpu_s`` (GPU-seconds of workers of cross-GPU-type jobs:
      ``sum(cross_type_workers x length)``);
    * counts per run: ``jobs_completed``, ``resolves`` (policy re-solves); trace runs with hosts add
      ``migrations`` (leases that changed hosts) and ``migration_lost_s`` (lease seconds they lost);
    * per job (:func:`jct_summary`, the jobs that finished): ``mean_jct_s``, ``median_jct_s``,
      ``p95_jct_s`` (s).

    ``round_seconds``: the length of records without ``round_s`` rows (:func:`record_lengths`)."""
    if frame.empty:
        return pd.DataFrame()
    keys = list(RUN_KEYS)
    integ = cluster_integrals(frame, round_seconds, keys)
    out = integ[["total_est", "total_act", "utilisation"]].copy()
    counted = ("jobs_completed", "resolved", "cross_type_workers", "migrations", "migration_lost_s")
    cl = _rows(frame, counted, True, [*keys, "measure", "value"]).astype({"measure": str})
    if cl.empty:
        sums = pd.DataFrame(index=out.index)
    else:
        sums = cl.pivot_table(index=keys, columns="measure", values="value", aggfunc="sum", observed=True)
        sums = sums.reindex(out.index)
    out["jobs_completed"] = sums.get("jobs_completed")
    if "cross_type_workers" in sums.columns:
        length = record_lengths(frame, round_seconds, keys)
        ctw = _wide(frame, ("cross_type_workers",), keys).reindex(length.index)
        out["straggler_gpu_s"] = (ctw["cross_type_workers"].fillna(0.0) * length).groupby(level=keys).sum()
    out["resolves"] = sums.get("resolved")
    jct = jct_summary(frame, keys)
    jct = jct.set_index(keys) if not jct.empty else pd.DataFrame(columns=["mean_jct_s", "median_jct_s", "p95_jct_s"])
    for c in ("mean_jct_s", "median_jct_s", "p95_jct_s"):
        out[c] = jct[c].reindex(out.index).astype(float) if c in jct else np.nan
    for name in ("migrations", "migration_lost_s"):  # trace runs with hosts only
        if name in sums.columns:
            out[name] = sums[name]
    return out.groupby(level=["policy", "variant"]).mean().reset_index()
