"""Matplotlib figures (PNG) of a runner experiment.

* :func:`plot_throughput`: per-tenant throughput over simulated time (each record a step as wide
  as the seconds it covers), one panel per policy (mean over replications at equal time) — the
  shape of OEF Fig. 4; tenants differ by colour and line style.
* :func:`plot_lying_gain`: the deviator's paired gain from lying per allocator (its throughput
  while active and its mean JCT), with 95% t confidence intervals over replications.

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
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from marketsim.analysis.engine.run_status import write_atomic
from marketsim.analysis.engine.stats import gain_summary, paired_gains

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


def _tick_text(v: float, _pos: object = None) -> str:
    """A log axis's tick label as plain text: ``0.01``, ``1``, ``1,000`` (no mathtext)."""
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def _log_axis(ax: Axes, which: str) -> None:
    """Put ``ax``'s ``which`` axis (``"x"`` or ``"y"``) on a log scale with decade ticks labelled
    in plain text and no minor ticks. Matplotlib's default log labels are mathtext (``10^{5}``),
    whose parser is built on first use, and its minor ticks are artists drawn one by one: a large
    share of a figure's CPU in a ``marketsim run``, for nothing a reader of a JCT or job-count axis
    needs."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(LogLocator(base=10.0))
    axis.set_major_formatter(FuncFormatter(_tick_text))
    axis.set_minor_locator(NullLocator())


def _despine(ax: Axes) -> None:
    """Hide the top and right spines (what ``seaborn.despine`` does)."""
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def _record_times(frame: pd.DataFrame, round_seconds: float | None) -> pd.DataFrame:
    """Start (s) of every record, one row per (policy, variant, replication, round): its
    ``round_start_s`` row where it has one (trace engine), else ``round x round_seconds`` (fixed
    rounds; ``round`` itself when ``round_seconds`` is None)."""
    keys = ["policy", "variant", "replication", "round"]
    cl = frame[(frame["tenant"] == "") & frame["measure"].isin(["available_gpus", "round_start_s"])]
    if cl.empty:
        return pd.DataFrame(columns=[*keys, "start"])
    w = cl.pivot_table(index=keys, columns="measure", values="value", aggfunc="first", observed=True)
    step = float(round_seconds) if round_seconds else 1.0
    fixed = w.index.get_level_values("round").to_numpy(dtype=float) * step
    start = w["round_start_s"].to_numpy(dtype=float) if "round_start_s" in w.columns else np.full(len(w), np.nan)
    return pd.DataFrame({"start": np.where(np.isnan(start), fixed, start)}, index=w.index).reset_index()


def plot_throughput(
    frame: pd.DataFrame,
    path: str | Path,
    measure: str = "act",
    variant: str = "truthful",
    round_seconds: float | None = None,
) -> Path:
    """Step plot of every tenant's ``measure`` over simulated time, one panel per policy (shared axes,
    one axis label each for the whole figure), for ``variant``. Each record is a step from its start
    (``round_start_s`` on the trace engine, else ``round x round_seconds``) to the next record's, so a
    record that merges many rounds is as wide as the time it covers; the mean over replications is
    taken at the same simulated time (each replication's step function evaluated at the union of the
    record starts; a tenant without a row at that time counts 0), not at the same record index.
    Tenants are told apart by colour and line style (:func:`tenant_styles`); the legend sits outside the
    panels. ``round_seconds`` (or ``round_start_s`` rows) puts minutes on the x axis."""
    sub = frame[(frame["measure"] == measure) & (frame["variant"] == variant) & (frame["tenant"] != "")]
    if sub.empty:
        raise ValueError(f"no '{measure}' rows for variant '{variant}' to plot")
    keys = ["policy", "variant", "replication", "round"]
    times = _record_times(frame[frame["variant"] == variant], round_seconds)
    step = float(round_seconds) if round_seconds else 1.0
    own = sub[keys].drop_duplicates()  # rounds of tenant rows without a cluster record: fixed rounds
    own = own.assign(start=own["round"].to_numpy(dtype=float) * step)
    times = pd.concat([times, own], ignore_index=True).drop_duplicates(keys, keep="first")
    timed = bool(round_seconds) or bool((frame["measure"] == "round_start_s").any())
    sub = sub.merge(times, on=keys, how="left")
    parts = []
    for policy, g in sub.groupby("policy", sort=True, observed=True):
        tp = times[times["policy"] == policy]
        grid = np.unique(tp["start"].to_numpy(dtype=float))
        reps = sorted(tp["replication"].unique().tolist())
        for tenant, gt in g.groupby("tenant", sort=True, observed=True):
            total = np.zeros(grid.size)
            for rep in reps:
                starts = np.sort(tp.loc[tp["replication"] == rep, "start"].to_numpy(dtype=float))
                rows = gt[gt["replication"] == rep]
                vals = pd.Series(rows["value"].to_numpy(dtype=float), index=rows["start"].to_numpy(dtype=float))
                vals = vals.groupby(level=0).sum().reindex(starts, fill_value=0.0).to_numpy()
                pos = np.searchsorted(starts, grid, side="right") - 1  # the record of this replication at t
                total += np.where(pos >= 0, vals[np.clip(pos, 0, None)], 0.0) if starts.size else 0.0
            parts.append(pd.DataFrame({"policy": policy, "tenant": str(tenant), "x": grid, "value": total / len(reps)}))
    data = pd.concat(parts, ignore_index=True)
    data["x"] = data["x"] / (60.0 if timed else 1.0)
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
            ax.step(line["x"], line["value"], where="post", color=color, linestyle=style, linewidth=1.4, label=tenant)
        ax.set_title(policy, fontsize=10)
        ax.grid(True, color="0.9", linewidth=0.6)
        _despine(ax)
    for ax in list(axes.flat)[len(policies) :]:
        ax.set_visible(False)
    name = MEASURE_NAMES.get(measure, measure)
    fig.supxlabel("time (min)" if timed else "round", fontsize=10)
    fig.supylabel(MEASURE_LABELS.get(measure, measure).replace("equiv.", "equivalents"), fontsize=10)
    n_reps = int(sub["replication"].nunique()) if "replication" in sub else 1
    fig.suptitle(f"Per-tenant {name} throughput, {variant} reports (mean over {n_reps} replication(s) at equal time)")
    if legend:
        handles = [Line2D([], [], color=c, linestyle=st, linewidth=1.6) for c, st in (styles[t] for t in tenants)]
        fig.legend(handles, tenants, title="tenant", loc="outside right upper", ncols=legend_cols, frameon=False)
    out = Path(path)
    write_atomic(out, lambda p: fig.savefig(p, dpi=110))
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
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.13, top=0.92)  # fixed margins: no second draw to fit
    ax = fig.subplots()
    for i, name in enumerate(sorted(set(policy))):
        x = np.sort(jct_h[policy == name])  # the empirical CDF: a step up by 1/n at each JCT
        y = np.arange(1, x.size + 1) / x.size
        ax.step(np.r_[x[0], x], np.r_[0.0, y], where="post", color=TENANT_COLORS[i % len(TENANT_COLORS)], label=name)
    _log_axis(ax, "x")
    ax.set_ylim(0.0, 1.0)
    ax.legend(title="policy")
    _despine(ax)
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"JCT distribution ({variant})")
    out = Path(path)
    write_atomic(out, lambda p: fig.savefig(p, dpi=110))
    return out


def plot_lying_gain(
    frame: pd.DataFrame,
    deviators: Mapping[str, str],
    path: str | Path,
    measure: str = "act",
    relative: bool = True,
    round_seconds: float | None = None,
) -> Path:
    """Bar chart of the deviator's mean paired gain per allocator and lying variant, with 95% t
    intervals over replications (:func:`marketsim.analysis.engine.stats.gain_summary`): its TRUE ``measure``
    throughput while active (the time integral over its active records divided by its active time),
    ``relative`` = mean(lying − truthful) / mean(truthful) in %, else the mean difference in
    slowest-GPU equivalents; and, when its jobs finished, a second panel with the change of its mean
    JCT (%, or hours without ``relative``; below 0 = lying made its jobs finish sooner).
    ``round_seconds``: the length of records without ``round_s`` rows."""
    summary = gain_summary(paired_gains(frame, deviators, measure, round_seconds))
    if summary.empty:
        raise ValueError("no paired truthful/lying runs to plot")
    panels = [("rel_gain", "rel_low", "rel_high", 100.0, "throughput while active: change (%)") if relative else
              ("diff", "diff_low", "diff_high", 1.0, "throughput while active: change")]  # fmt: skip
    if summary["jct_n"].gt(0).any():
        panels.append(("jct_rel", "jct_rel_low", "jct_rel_high", 100.0, "mean JCT: change (%)") if relative else
                      ("jct_diff_s", "jct_low_s", "jct_high_s", 1 / 3600.0, "mean JCT: change (h)"))  # fmt: skip
    summary = summary.sort_values(["variant", panels[0][0]], kind="mergesort").reset_index(drop=True)
    variants = list(dict.fromkeys(summary["variant"]))
    policies = list(dict.fromkeys(summary["policy"]))
    width_in = min(16.0, 2.0 + 1.2 * len(policies) * (1.0 + 0.3 * (len(variants) - 1)))
    fig = _figure(figsize=(width_in * len(panels), 3.8))
    axes = fig.subplots(1, len(panels), squeeze=False)
    width = 0.8 / len(variants)
    palette = [VARIANT_COLORS[i % len(VARIANT_COLORS)] for i in range(len(variants))]
    for ax, (col, lo, hi, scale, label) in zip(axes.flat, panels, strict=True):
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
        ax.set_ylabel(label)
        if len(variants) > 1 and ax is axes.flat[0]:
            ax.legend()
        _despine(ax)
    n = int(summary["n"].max())
    fig.suptitle(f"Deviator's true {measure} throughput while active and mean JCT, lying vs truthful "
                 f"(paired by seed, mean and 95% CI, n={n})")  # fmt: skip
    out = Path(path)
    write_atomic(out, lambda p: fig.savefig(p, dpi=110, bbox_inches="tight"))
    return out
