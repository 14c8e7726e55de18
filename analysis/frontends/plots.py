"""Matplotlib figures (PNG) of a runner experiment.

* :func:`plot_throughput`: per-tenant throughput over time, one panel per policy (mean over
  replications) — the shape of OEF Fig. 4; tenants differ by colour and line style.
* :func:`plot_lying_gain`: the deviator's paired gain from lying per allocator, with 95% t
  confidence intervals over replications.

Figures are drawn on :class:`matplotlib.figure.Figure` objects and written by the Agg canvas (no pyplot,
no GUI backend, no global figure registry) and without seaborn: a ``marketsim run`` that writes one plot
should not pay for importing seaborn and scipy.stats (about a second of CPU). Every function returns the
written path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis.engine.stats import gain_summary, paired_gains

__all__ = ["plot_throughput", "plot_lying_gain", "plot_jct_cdf", "tenant_styles", "MEASURE_LABELS", "MEASURE_NAMES"]

MEASURE_LABELS = {
    "act": "actual throughput (slowest-GPU equiv.)",
    "est": "estimated throughput (slowest-GPU equiv.)",
}


#: Full names of the measures in titles (the tidy data's short names are not words).
MEASURE_NAMES = {"act": "actual", "est": "estimated"}

#: Line colours: ten hues that stay apart from each other (matplotlib's tab10); past ten tenants
#: the colours repeat with the next line style, so every tenant has its own (colour, style) pair.
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
TENANT_COLORS: tuple[tuple[float, float, float], ...] = tuple(to_rgb(c) for c in _TAB10)
#: Bar colours of the lying variants (seaborn's "deep" palette, as hex: the figures look as before).
VARIANT_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974",
                  "#64b5cd")  # fmt: skip
TENANT_STYLES = ("-", "--", ":", "-.")
LEGEND_MAX = 60


def tenant_styles(tenants: Sequence[str]) -> dict[str, tuple[tuple[float, float, float], str]]:
    """``tenant -> (colour, line style)``: colour ``i % 10`` of :data:`TENANT_COLORS`, style
    ``i // 10`` of :data:`TENANT_STYLES` (cycled past 40 tenants)."""
    n = len(TENANT_COLORS)
    return {t: (TENANT_COLORS[i % n], TENANT_STYLES[(i // n) % len(TENANT_STYLES)]) for i, t in enumerate(tenants)}


def _figure(**kwargs: object) -> Figure:
    """A figure with an Agg canvas (PNG output without pyplot)."""
    fig = Figure(**kwargs)  # type: ignore[arg-type]
    FigureCanvasAgg(fig)
    return fig


def _despine(ax: Axes) -> None:
    """Hide the top and right spines (what ``seaborn.despine`` does)."""
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def plot_throughput(
    frame: pd.DataFrame,
    path: str | Path,
    measure: str = "act",
    variant: str = "truthful",
    round_seconds: float | None = None,
) -> Path:
    """Line plot of every tenant's ``measure`` per round (mean over replications), one panel per
    policy (shared axes, one axis label each for the whole figure), for ``variant``. Tenants are told
    apart by colour and line style (:func:`tenant_styles`); the legend sits outside the panels.
    ``round_seconds`` puts minutes on the x axis."""
    sub = frame[(frame["measure"] == measure) & (frame["variant"] == variant) & (frame["tenant"] != "")]
    if sub.empty:
        raise ValueError(f"no '{measure}' rows for variant '{variant}' to plot")
    data = sub.groupby(["policy", "tenant", "round"], as_index=False)["value"].mean()
    x = data["round"].to_numpy(dtype=float) * (float(round_seconds) / 60.0 if round_seconds else 1.0)
    data = data.assign(x=x, tenant=data["tenant"].astype(object), policy=data["policy"].astype(object))
    policies = sorted(data["policy"].unique())
    tenants = sorted(data["tenant"].unique())
    styles = tenant_styles(tenants)
    ncols = min(3, len(policies))
    nrows = -(-len(policies) // ncols)
    legend = len(tenants) <= LEGEND_MAX
    legend_cols = -(-len(tenants) // (15 * nrows))  # about 15 legend entries fit beside one row of panels
    fig = _figure(
        figsize=(3.9 * ncols + (1.0 + 0.8 * legend_cols if legend else 0.0), 2.9 * nrows + 0.6), layout="constrained"
    )
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    for ax, policy in zip(axes.flat, policies, strict=False):
        rows = data[data["policy"] == policy]
        for tenant, line in rows.groupby("tenant", sort=True):
            color, style = styles[tenant]
            ax.plot(line["x"], line["value"], color=color, linestyle=style, linewidth=1.4, label=tenant)
        ax.set_title(policy, fontsize=10)
        ax.grid(True, color="0.9", linewidth=0.6)
        _despine(ax)
    for ax in list(axes.flat)[len(policies) :]:
        ax.set_visible(False)
    name = MEASURE_NAMES.get(measure, measure)
    fig.supxlabel("time (min)" if round_seconds else "round", fontsize=10)
    fig.supylabel(MEASURE_LABELS.get(measure, measure).replace("equiv.", "equivalents"), fontsize=10)
    n_reps = int(sub["replication"].nunique()) if "replication" in sub else 1
    fig.suptitle(f"Per-tenant {name} throughput, {variant} reports (mean over {n_reps} replication(s))")
    if legend:
        handles = [Line2D([], [], color=c, linestyle=st, linewidth=1.6) for c, st in (styles[t] for t in tenants)]
        fig.legend(handles, tenants, title="tenant", loc="outside right upper", ncols=legend_cols, frameon=False)
    out = Path(path)
    fig.savefig(out, dpi=110)
    return out


def plot_jct_cdf(frame: pd.DataFrame, path: str | Path, variant: str = "truthful") -> Path:
    """Empirical CDF of the job completion times (``jct_s`` rows, in hours, log axis), one line per
    policy, all replications pooled, for ``variant`` (the plot of trace-driven runs)."""
    sub = frame[(frame["measure"] == "jct_s") & (frame["variant"] == variant)]
    if sub.empty:
        raise ValueError(f"no 'jct_s' rows for variant '{variant}' to plot")
    policy = sub["policy"].astype(object).to_numpy()
    jct_h = sub["value"].to_numpy(dtype=float) / 3600.0
    fig = _figure(figsize=(6.0, 4.0))
    ax = fig.subplots()
    for i, name in enumerate(sorted(set(policy))):
        x = np.sort(jct_h[policy == name])  # the empirical CDF: a step up by 1/n at each JCT
        y = np.arange(1, x.size + 1) / x.size
        ax.step(np.r_[x[0], x], np.r_[0.0, y], where="post", color=TENANT_COLORS[i % len(TENANT_COLORS)], label=name)
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.0)
    ax.legend(title="policy")
    _despine(ax)
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"JCT distribution ({variant})")
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
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
    fig = _figure(figsize=(width_in, 3.8))
    ax = fig.subplots()
    width = 0.8 / len(variants)
    palette = [VARIANT_COLORS[i % len(VARIANT_COLORS)] for i in range(len(variants))]
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
    _despine(ax)
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    return out
