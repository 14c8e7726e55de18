"""Writing a study's outputs (a front end of :mod:`marketsim.analysis.engine.studies`): ``results.parquet``,
``meta.json``, one PNG per panel, ``headlines.csv`` (+ ``headlines_sensitivity.csv``,
``headlines_cells.csv`` with every cell behind each headline, ``headlines_summary.json`` with the
verdict counts the docs quote, ``lead.csv``) and ``report.md`` with the verdict table. The engine
computes; this module renders."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from marketsim.analysis.engine.cells import TRUTHFUL
from marketsim.analysis.engine.headlines import (
    HEADLINE_VERDICTS,
    MAX_EFFECT,
    MIN_EFFECT,
    headline_cells,
    headline_counts,
    headline_markdown,
)
from marketsim.analysis.engine.run_status import guard, write_atomic, write_meta
from marketsim.analysis.engine.studies import (
    Lead,
    Study,
    StudyResult,
    fmt_value,
    lead_table,
    paired_differences,
    study_headlines,
)

__all__ = ["write_study", "write_headlines", "counts_sentence", "RULE"]

#: the verdict rule in one paragraph (the report's and the docs' wording; the code is the authority)
RULE = (
    "verdict rule in `analysis/engine/headlines.py`: *reproduced* = the paper's number inside our 95% interval or "
    "within the stated tolerance (for a ratio: its effect within 25% on a log scale), and for a ratio our interval "
    "on the paper's side of 1; *by construction* = would be reproduced, but the mechanism guarantees it (a check "
    "of the implementation, not counted as reproduced); *direction only* = the interval on the paper's side of 1 "
    f"and {MIN_EFFECT:.0%}-{MAX_EFFECT:.0%} of the paper's effect on a log scale; *stronger than the paper* = the "
    f"same, beyond {MAX_EFFECT:.0%}; *not reproduced* = everything else. Ratios are ratios of means over the paired "
    "cells (same workloads) with a seeded 95% percentile bootstrap; shares use Wilson intervals; levels t-intervals. "
    "A verdict that one sensitivity row or panel value changes is marked *fragile*"
)


def counts_sentence(counts: dict) -> str:
    """``N headlines: a reproduced, b by construction, ...`` (+ fragile and alternative readings)."""
    v = counts["verdicts"]
    frag = counts.get("fragile", {})
    parts = []
    for name in HEADLINE_VERDICTS:
        k = len(frag.get(name, []))
        parts.append(f"{v[name]} {name}" + (f" ({k} fragile)" if k else ""))
    text = f"{counts['headlines']} counted headline(s): " + ", ".join(parts)
    if counts["sensitivity_rows"]:
        text += f" (+{counts['sensitivity_rows']} sensitivity rows, not counted)"
    alts = counts.get("alternatives", [])
    if alts:
        w = counts["with_alternatives"]
        text += (f". With the paper's other reading where it contradicts itself ({len(alts)} alternative rows), "
                 f"{w['changed']} verdict(s) change: "
                 + ", ".join(f"{w['verdicts'][n]} {n}" for n in HEADLINE_VERDICTS))
    return text


def _lead_markdown(table: pd.DataFrame, lead: Lead) -> list[str]:
    """The lead comparison as a table: one row per (panel, x, mechanism), one column per baseline."""
    lines = [f"| panel | x | mechanism | {' | '.join(f'/ {b}' for b in lead.baselines)} |",
             "|---|---|---|" + "---|" * len(lead.baselines)]  # fmt: skip
    for (pi, x, m), g in table.groupby(["panel", "x", "mechanism"], sort=False):
        cells = []
        for b in lead.baselines:
            r = g[g["baseline"] == b]
            if r.empty:
                cells.append("—")
                continue
            r0 = r.iloc[0]
            ci = f"[{fmt_value(r0['low'])}, {fmt_value(r0['high'])}]"
            cells.append(f"{fmt_value(r0['ratio'])}x {ci} (n={int(r0['n'])})")
        lines.append(f"| {pi} ({g['label'].iloc[0]}) | {fmt_value(x)} | {m} | " + " | ".join(cells) + " |")
    return lines


def _plot_panel(frame: pd.DataFrame, study: Study, pi: int, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    panel = study.panels[pi]
    sub = frame[(frame["panel"] == pi) & (frame["variant"] == TRUTHFUL)]
    metrics = [m for m in study.metrics if m in sub.columns]
    ncol = min(3, len(metrics))
    nrow = math.ceil(len(metrics) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    for ax, metric in zip(axes.ravel(), metrics, strict=False):
        sns.lineplot(
            data=sub,
            x="x",
            y=metric,
            hue="mechanism",
            hue_order=list(study.mechanisms),
            marker="o",
            errorbar=("se", 1.96),  # normal 95% interval: a bootstrap per point is minutes on 20 seeds
            ax=ax,
            legend=ax is axes.ravel()[0],
        )
        ax.set_xlabel(panel.x)
        ax.set_ylabel(metric)
    for ax in axes.ravel()[len(metrics) :]:
        ax.set_visible(False)
    title = panel.label or f"{study.name}: metrics vs {panel.x}"
    fixed = ", ".join(f"{k}={v}" for k, v in panel.fixed.items())
    fig.suptitle(f"{title}{f' ({fixed})' if fixed else ''}", y=1.0)
    fig.tight_layout()
    write_atomic(path, lambda p: fig.savefig(p, dpi=110, bbox_inches="tight"))  # whole or not at all
    plt.close(fig)
    return path


def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt_value(r[c]) for c in cols) + " |" for _, r in df.iterrows()]
    return "\n".join(lines)


def _summary_table(frame: pd.DataFrame, pi: int, metric: str) -> pd.DataFrame:
    """Mean ``metric`` per swept value (rows) and mechanism (columns), truthful variant, panel ``pi``."""
    sub = frame[(frame["panel"] == pi) & (frame["variant"] == TRUTHFUL)]
    if sub.empty:
        return pd.DataFrame()
    return sub.groupby(["x", "mechanism"], sort=True)[metric].mean().unstack("mechanism").reset_index()


def _machine_text(m: dict) -> str:
    """``; load average a at the start, b at the end (...), c CPU s, commit x`` (empty without a record)."""
    if not m or "load_avg_start" not in m:
        return ""
    loaded = " (a loaded machine: the wall time is not an idle-machine figure)" if m.get("loaded") else ""
    return (f"; 1-min load average {m['load_avg_start'][0]} at the start, {m['load_avg_end'][0]} at the end on "
            f"{m.get('cores', '?')} cores{loaded}; {m.get('cpu_s', float('nan')):.0f} CPU s (this process and its "
            f"workers); commit {str(m.get('commit', ''))[:12] or 'unknown'}")


def write_headlines(result: StudyResult, table: pd.DataFrame, sens: pd.DataFrame, out: Path) -> dict[str, Path]:
    """``headlines.csv`` (every row, with role and fragility), ``headlines_sensitivity.csv``,
    ``headlines_cells.csv`` (the cells behind every headline: the per-seed distribution) and
    ``headlines_summary.json`` (:func:`marketsim.analysis.engine.headlines.headline_counts`: the counts the
    docs quote)."""
    study = result.study
    paths = {"headlines": out / "headlines.csv", "cells": out / "headlines_cells.csv",
             "summary": out / "headlines_summary.json"}  # fmt: skip
    # a realisation column only where it means something: auction mechanisms output their own schedule
    csv = table if study.family == "fair-share" else table.drop(columns="realisation")
    write_atomic(paths["headlines"], lambda p: csv.to_csv(p, index=False))
    if not sens.empty:
        paths["sensitivity"] = out / "headlines_sensitivity.csv"
        write_atomic(paths["sensitivity"], lambda p: sens.to_csv(p, index=False))
    cells = [headline_cells(result.frame, h) for h in study.headlines]
    every = pd.concat([c for c in cells if not c.empty] or [pd.DataFrame(columns=["id"])], ignore_index=True)
    write_atomic(paths["cells"], lambda p: every.to_csv(p, index=False))
    summary = {"study": study.name, "rule": "analysis/engine/headlines.py", "csv": "headlines.csv",
               **headline_counts(table)}  # fmt: skip
    write_atomic(paths["summary"], lambda p: p.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8"))
    return paths


def _per_cell_section(table: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """The per-cell (per-seed) figures of every ratio headline that is not a sensitivity row: sorted."""
    rows = table[(table["role"] != "sensitivity") & (table["statistic"] == "ratio of means")]
    if rows.empty or cells.empty:
        return []
    lines = ["### Per-seed figures of the ratio headlines", "",
             "Each cell's ratio (same workload), sorted; the headline's figure is the ratio of the means, not the "
             "mean of these. `headlines_cells.csv` has every cell's two values.", "", "<details><summary>"
             f"{len(rows)} headlines</summary>", ""]  # fmt: skip
    for _, r in rows.iterrows():
        c = cells[cells["id"] == r["id"]]
        vals = sorted(float(v) for v in c["ratio"] if v == v)
        zero = int(c["ratio"].isna().sum())
        tail = f"; {zero} cell(s) with a zero baseline" if zero else ""
        lines.append(f"* `{r['id']}` (n={len(c)}{tail}): " + " ".join(f"{v:.3g}" for v in vals))
    return [*lines, "", "</details>", ""]


def write_study(result: StudyResult, out_dir: str | Path) -> dict[str, Path]:
    """Write Parquet, one PNG per panel, ``report.md`` and ``meta.json`` last (each file whole or not
    at all: :func:`marketsim.analysis.engine.run_status.write_atomic`; under ``claim`` meta.json waits for the
    end of the command: :func:`~marketsim.analysis.engine.run_status.write_meta`); returns the paths by role."""
    out = Path(out_dir)
    guard(out)  # an earlier run there that this process does not hold is moved aside, never overwritten
    out.mkdir(parents=True, exist_ok=True)
    study = result.study
    paths: dict[str, Path] = {}
    paths["results"] = out / "results.parquet"
    write_atomic(paths["results"], lambda p: result.frame.to_parquet(p, index=False))
    if not result.tenants.empty:
        paths["tenants"] = out / "tenants.parquet"
        write_atomic(paths["tenants"], lambda p: result.tenants.to_parquet(p, index=False))
    paths["meta"] = out / "meta.json"  # written last, below
    if result.errors:
        paths["errors"] = out / "errors.txt"
        text = "".join(f"{rid}: {msg}\n" for rid, msg in result.errors)
        write_atomic(paths["errors"], lambda p: p.write_text(text, encoding="utf-8"))
    lines = [f"# {study.name}: reproduction study ({study.paper})", ""]
    table, sens = study_headlines(result.frame, study, seed=result.seed) if study.headlines else (None, None)
    if study.description:
        lines += [study.description, ""]
    if study.family == "fair-share":
        base = "the study's `[scenario]` with each panel's overrides (meta.json)"
    else:
        base = ", ".join(f"`{k}={v}`" for k, v in study.base.items())
    lines += [
        f"Mechanisms: {', '.join(study.mechanisms)}. Replications: {result.replications} (seed {result.seed}, "
        f"common random numbers across mechanisms). Base parameters: {base}"
        f". Wall time {result.seconds:.1f} s ({result.executor} executor){_machine_text(result.machine)}.",
        "",
    ]
    if result.errors:
        lines += [f"**{len(result.errors)} cell(s) failed** (see errors.txt); their rows are missing.", ""]
    lead_frames = []
    for li, lead in enumerate(study.leads):
        if lead.headlines:  # headline rows first, by the rule of the closing table (counted there too)
            assert table is not None
            rows = table.iloc[list(lead.headlines)]
            lines += [f"## First: {lead.text or 'mechanism-level headlines'}" if li == 0 else f"### {lead.text}", "",
                      "Judged by the verdict rule of the closing table (and counted there).", "",
                      headline_markdown(rows)]  # fmt: skip
            continue
        lt = lead_table(result.frame, study, lead)
        lead_frames.append(lt.assign(lead=li, metric=lead.metric))
        lines += [f"## First: {lead.text or lead.metric}" if li == 0 else f"### {lead.text or lead.metric}", ""]
        lines += [f"Mean of the per-seed paired ratios of `{lead.metric}` (same workload), 95% t-interval, n seeds.",
                  "", *_lead_markdown(lt, lead), ""]  # fmt: skip
    if lead_frames:
        paths["lead"] = out / "lead.csv"
        leads = pd.concat(lead_frames, ignore_index=True)
        write_atomic(paths["lead"], lambda p: leads.to_csv(p, index=False))
    for pi, panel in enumerate(study.panels):
        lines += [f"## Panel {pi}: {panel.label or panel.x}", ""]
        if not result.frame.empty and (result.frame["panel"] == pi).any():
            png = _plot_panel(result.frame, study, pi, out / f"panel{pi}_{panel.x}.png")
            paths[f"panel{pi}"] = png
            lines += [f"![panel {pi}]({png.name})", ""]
            headline = study.metrics[0]
            if headline in result.frame.columns:
                lines += [
                    f"Ours, mean {headline} per mechanism (truthful):",
                    "",
                    _md(_summary_table(result.frame, pi, headline)),
                    "",
                ]
        else:
            lines += ["No results for this panel.", ""]
        notes = [n for n in study.notes if n.panel == pi]
        if notes:
            lines += ["What the paper reports:", ""]
            lines += [f"* {f'({n.metric}) ' if n.metric else ''}{n.text}" for n in notes]
            lines += [""]
    fair = study.family == "fair-share"
    pair_metrics = (("liar_gain", "liar_act_active", "liar_jct_h", "total_act", "honest_jct_h") if fair
                    else ("liar_gain", "welfare"))  # fmt: skip
    pairs = paired_differences(result.frame, pair_metrics)
    if not pairs.empty:
        lines += ["## Lying variants: paired differences (variant − truthful, 95% t CI)", ""]
        if fair:
            lines += [
                "Per seed, the lying run minus the truthful run of the same workload and mechanism. "
                "`liar_act_active`: the liars' TRUE throughput while any of them is active (its integral over "
                "those records divided by their seconds, slowest-GPU equivalents; a tenant is active while one of "
                "its jobs has arrived and not completed); `liar_jct_h`: their mean JCT (h, finished jobs); "
                "`liar_gain`: their throughput gain over the run (rate model) or JCT saved (h, trace runs); "
                "`total_act`: the cluster's work per second; `honest_jct_h`: the truthful tenants' mean JCT. "
                "paid: share of seeds in which lying paid the liars (throughput up, JCT down).",
                "",
            ]
        cis = [f"[{fmt_value(a)}, {fmt_value(b)}]" for a, b in zip(pairs["low"], pairs["high"], strict=True)]
        pairs = pairs.assign(CI=cis)
        lines += [_md(pairs[["panel", "x", "mechanism", "variant", "metric", "mean", "CI", "n", "paid"]]), ""]
    lines += ["## Headline reproduction: the paper's numbers against ours", ""]
    if study.headlines:
        assert table is not None and sens is not None
        paths.update(write_headlines(result, table, sens, out))
        counts = headline_counts(table)
        counted = table[table["role"] == "counted"]
        lines += [
            counts_sentence(counts) + ". " + RULE + ". n per row in the table"
            + ("." if study.family == "fair-share" else "; headlines.csv has no `realisation` column: an auction "
               "mechanism's schedule is its own, there is no realisation to vary."),
            "",
            headline_markdown(counted),
        ]
        alts = table[table["role"] == "alternative"]
        if not alts.empty:
            lines += ["### Where the paper contradicts itself: the other reading", "",
                      "Each row below reads a claim the way another sentence of the paper states it (the conflict "
                      "is in the reason). These rows are not counted above; with them in place of the rows they "
                      "re-read, " + f"{counts['with_alternatives']['changed']} verdict(s) change:", ""]  # fmt: skip
            lines += [f"* `{a['of']}` **{a['primary_verdict']}** → `{a['id']}` **{a['verdict']}**"
                      for a in counts["alternatives"]]  # fmt: skip
            lines += ["", headline_markdown(alts)]
        srows = table[table["role"] == "sensitivity"]
        if not srows.empty:
            lines += ["### Sensitivity rows: the same claims with another realisation or engine", "",
                      "Not counted; a verdict above that one of these changes is marked fragile.", "",
                      headline_markdown(srows)]  # fmt: skip
        if not sens.empty:
            lines += [
                "### Sensitivity: each headline at every value of its panel",
                "",
                "The verdicts above are read at the setting that reads the paper most literally; where the paper "
                "leaves a setting open, a sensitivity panel sweeps it (fewer seeds), and this table gives the "
                "same headline there (`sensitivity` False: another point of the headline's own panel, e.g. another "
                "value the paper's figure sweeps). These rows decide nothing; a verdict that a conclusive sensitivity "
                "row changes is marked fragile (not conclusive: no cells, or a ratio whose interval contains 1 on the "
                "panel's few seeds).",
                "",
                _md(sens[["id", "headline", "realisation", "panel", "x_name", "x", "ours", "CI", "n", "verdict",
                          "conclusive", "sensitivity"]]),
                "",
            ]
        lines += _per_cell_section(table, pd.read_csv(paths["cells"]))
    else:
        lines += ["This study lists no `[[headline]]`: it claims nothing as reproduced.", ""]
    if study.unmeasured:
        lines += ["### Claims that are not headlines, and why", "", "| the paper's claim | why no verdict |",
                  "|---|---|", *(f"| {a} | {b} |" for a, b in study.unmeasured), ""]  # fmt: skip
    paths["report"] = out / "report.md"
    write_atomic(paths["report"], lambda p: p.write_text("\n".join(lines), encoding="utf-8"))
    # last: says what the files above hold (JSON-ready: ``default=str`` as the file writer had)
    write_meta(out, json.loads(json.dumps(result.meta(), default=str)))
    return paths
