"""Seaborn figures (PNG) of a runner experiment.

* :func:`plot_throughput`: per-tenant throughput over time, one panel per policy (mean over
  replications) — the shape of OEF Fig. 4.
* :func:`plot_lying_gain`: the deviator's paired gain from lying per allocator, with 95% t
  confidence intervals over replications.

Uses the non-interactive Agg backend; every function returns the written path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from analysis.stats import gain_summary, paired_gains  # noqa: E402

__all__ = ["plot_throughput", "plot_lying_gain", "plot_jct_cdf", "MEASURE_LABELS"]

MEASURE_LABELS = {
    "act": "actual throughput (slowest-GPU equiv.)",
    "est": "estimated throughput (slowest-GPU equiv.)",
}


def plot_throughput(
    frame: pd.DataFrame,
    path: str | Path,
    measure: str = "act",
    variant: str = "truthful",
    round_seconds: float | None = None,
) -> Path:
    """Line plot of every tenant's ``measure`` per round (mean over replications), one panel per
    policy, for ``variant``. ``round_seconds`` puts minutes on the x axis."""
    sub = frame[(frame["measure"] == measure) & (frame["variant"] == variant) & (frame["tenant"] != "")]
    if sub.empty:
        raise ValueError(f"no '{measure}' rows for variant '{variant}' to plot")
    data = sub.groupby(["policy", "tenant", "round"], as_index=False)["value"].mean()
    xcol = "round"
    if round_seconds:
        data["minute"] = data["round"] * float(round_seconds) / 60.0
        xcol = "minute"
    data["tenant"] = data["tenant"].astype(object)
    data["policy"] = data["policy"].astype(object)
    policies = sorted(data["policy"].unique())
    g = sns.relplot(
        data=data,
        x=xcol,
        y="value",
        hue="tenant",
        col="policy",
        col_order=policies,
        col_wrap=min(3, len(policies)),
        kind="line",
        errorbar=None,
        height=3.0,
        aspect=1.3,
        legend=len(data["tenant"].unique()) <= 20,
    )
    g.set_axis_labels("time (min)" if round_seconds else "round", MEASURE_LABELS.get(measure, measure))
    g.set_titles("{col_name}")
    g.figure.suptitle(f"Per-tenant {measure} throughput ({variant})", y=1.02)
    out = Path(path)
    g.figure.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(g.figure)
    return out


def plot_jct_cdf(frame: pd.DataFrame, path: str | Path, variant: str = "truthful") -> Path:
    """Empirical CDF of the job completion times (``jct_s`` rows, in hours, log axis), one line per
    policy, all replications pooled, for ``variant`` (the plot of trace-driven runs)."""
    sub = frame[(frame["measure"] == "jct_s") & (frame["variant"] == variant)]
    if sub.empty:
        raise ValueError(f"no 'jct_s' rows for variant '{variant}' to plot")
    data = pd.DataFrame({"policy": sub["policy"].astype(object), "jct_h": sub["value"].to_numpy() / 3600.0})
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    sns.ecdfplot(data=data, x="jct_h", hue="policy", hue_order=sorted(data["policy"].unique()), log_scale=True, ax=ax)
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"JCT distribution ({variant})")
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def plot_lying_gain(
    frame: pd.DataFrame,
    deviators: Mapping[str, str],
    path: str | Path,
    measure: str = "act",
    relative: bool = True,
) -> Path:
    """Bar chart of the deviator's mean paired gain per allocator and lying variant, with 95% t
    intervals over replications: ``relative`` = mean(lying − truthful) / mean(truthful) in %,
    else the mean difference in slowest-GPU equivalents."""
    summary = gain_summary(paired_gains(frame, deviators, measure))
    if summary.empty:
        raise ValueError("no paired truthful/lying runs to plot")
    col, lo, hi = ("rel_gain", "rel_low", "rel_high") if relative else ("diff", "diff_low", "diff_high")
    scale = 100.0 if relative else 1.0
    summary = summary.sort_values(["variant", col], kind="mergesort").reset_index(drop=True)
    variants = list(dict.fromkeys(summary["variant"]))
    policies = list(dict.fromkeys(summary["policy"]))
    width_in = min(16.0, 2.0 + 1.2 * len(policies) * (1.0 + 0.3 * (len(variants) - 1)))
    fig, ax = plt.subplots(figsize=(width_in, 3.8))
    width = 0.8 / len(variants)
    palette = sns.color_palette("deep", len(variants))
    for vi, v in enumerate(variants):
        s = summary[summary["variant"] == v].set_index("policy").reindex(policies)
        x = np.arange(len(policies)) + (vi - (len(variants) - 1) / 2) * width
        y = s[col].to_numpy(dtype=float) * scale
        err = np.vstack([y - s[lo].to_numpy(dtype=float) * scale, s[hi].to_numpy(dtype=float) * scale - y])
        ax.bar(x, y, width=width * 0.9, color=palette[vi], label=f"{v} ({deviators[v]})")
        ax.errorbar(x, y, yerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=3, linewidth=1)
        for xi, yi in zip(x, y, strict=True):
            if np.isfinite(yi) and len(variants) <= 2:  # labels would collide with more bars
                ax.annotate(
                    f"{yi:+.1f}",
                    (xi, yi),
                    textcoords="offset points",
                    xytext=(0, 3 if yi >= 0 else -10),
                    ha="center",
                    fontsize=8,
                )
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(policies)))
    ax.set_xticklabels(policies, rotation=20, ha="right")
    ax.set_ylabel(("gain from lying (%)" if relative else "gain from lying") + f" — {measure}")
    n = int(summary["n"].max())
    ax.set_title(f"Deviator's true {measure} throughput, lying vs truthful (mean, 95% CI, n={n})")
    if len(variants) > 1:
        ax.legend()
    sns.despine(fig=fig)
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
