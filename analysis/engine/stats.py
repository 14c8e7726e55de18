"""Statistics on the runner's tidy frame: paired lying gains with t confidence intervals and
per-policy summaries. Throughputs are in slowest-GPU equivalents (work-seconds per second)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from market.errors import InputError

__all__ = ["t_interval", "paired_gains", "gain_summary", "policy_summary"]

TRUTHFUL = "truthful"


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


def paired_gains(frame: pd.DataFrame, deviators: Mapping[str, str], measure: str = "act") -> pd.DataFrame:
    """The deviator's TRUE throughput, truthful vs lying, paired by (policy, replication).

    For each lying variant ``v`` with deviator ``d``: the mean over rounds of ``d``'s ``measure``
    (rounds where ``d`` is absent count as 0) in the truthful run and in the ``v`` run of the same
    policy and replication (common random numbers). Columns: policy, variant, deviator,
    replication, truthful, lying, diff (lying − truthful), rel_gain (lying / truthful − 1).
    """
    if frame.empty:
        return pd.DataFrame(columns=["policy", "variant", "deviator", "replication", "truthful", "lying", "diff"])
    rounds = (
        frame[frame["measure"] == "available_gpus"].groupby(["policy", "variant", "replication"])["round"].nunique()
    )
    rows = []
    for variant, dev in deviators.items():
        sub = frame[(frame["tenant"] == dev) & (frame["measure"] == measure)]
        if sub.empty and not (frame["variant"] == variant).any():
            raise InputError("variant", variant, "has no rows in the results")
        totals = sub.groupby(["policy", "variant", "replication"])["value"].sum()
        for (policy, rep), n_truth in rounds.xs(TRUTHFUL, level="variant").items():
            key_l = (policy, variant, rep)
            if key_l not in rounds.index:
                continue
            truth = float(totals.get((policy, TRUTHFUL, rep), 0.0)) / n_truth
            lie = float(totals.get(key_l, 0.0)) / rounds[key_l]
            rows.append(
                {
                    "policy": policy,
                    "variant": variant,
                    "deviator": dev,
                    "replication": int(rep),
                    "truthful": truth,
                    "lying": lie,
                    "diff": lie - truth,
                    "rel_gain": lie / truth - 1.0 if truth > 0 else float("nan"),
                }
            )
    out = pd.DataFrame(
        rows, columns=["policy", "variant", "deviator", "replication", "truthful", "lying", "diff", "rel_gain"]
    )
    return out.sort_values(["policy", "variant", "replication"], kind="mergesort").reset_index(drop=True)


def gain_summary(pairs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per (policy, variant): n pairs, mean truthful / lying throughput, mean paired difference
    ``diff`` with its t interval, the relative gain ``rel_gain = mean diff / mean truthful`` (ratio
    estimator; its interval is the diff interval over the same denominator), and ``p_gain``, the
    share of replications in which lying paid (diff > 1e-9)."""
    rows = []
    for (policy, variant), g in pairs.groupby(["policy", "variant"], sort=True):
        d, dlo, dhi = t_interval(g["diff"].to_numpy(), level)
        base = float(g["truthful"].mean())
        r, rlo, rhi = (d / base, dlo / base, dhi / base) if base > 0 else (float("nan"),) * 3
        rows.append(
            {
                "policy": policy,
                "variant": variant,
                "n": len(g),
                "truthful": float(g["truthful"].mean()),
                "lying": float(g["lying"].mean()),
                "diff": d,
                "diff_low": dlo,
                "diff_high": dhi,
                "rel_gain": r,
                "rel_low": rlo,
                "rel_high": rhi,
                "p_gain": float((g["diff"] > 1e-9).mean()),
            }
        )
    return pd.DataFrame(rows)


def policy_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, variant), means over replications of: total estimated and actual throughput
    per round, utilisation, jobs completed per run, mean JCT (s), cross-type (straggler) worker
    rounds per run and policy re-solves per run; trace runs with hosts add ``migrations`` (leases
    that changed hosts) and ``migration_lost_s`` (lease seconds lost to them) per run."""
    if frame.empty:
        return pd.DataFrame()
    keys = ["policy", "variant", "replication"]
    cl = frame[frame["tenant"] == ""]
    per_run = cl.pivot_table(index=keys, columns="measure", values="value", aggfunc="mean")
    sums = cl.pivot_table(index=keys, columns="measure", values="value", aggfunc="sum")
    out = pd.DataFrame(index=per_run.index)
    out["total_est"] = per_run.get("total_est")
    out["total_act"] = per_run.get("total_act")
    out["utilisation"] = per_run.get("utilisation")
    out["jobs_completed"] = sums.get("jobs_completed")
    out["straggler_worker_rounds"] = sums.get("cross_type_workers")
    out["resolves"] = sums.get("resolved")
    jct = frame[frame["measure"] == "jct_s"].groupby(keys)["value"].mean()
    out["mean_jct_s"] = jct.reindex(out.index)
    for name in ("migrations", "migration_lost_s"):  # trace runs with hosts only
        if name in sums.columns:
            out[name] = sums[name]
    return out.groupby(level=["policy", "variant"]).mean().reset_index()
