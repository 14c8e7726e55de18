"""Writing a study's outputs (a front end of :mod:`analysis.engine.studies`): ``results.parquet``,
``meta.json``, one PNG per panel, ``headlines.csv`` (+ ``headlines_sensitivity.csv``, ``lead.csv``)
and ``report.md`` with the verdict table. The engine computes; this module renders."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from analysis.engine.cells import TRUTHFUL
from analysis.engine.headlines import evaluate_headlines, headline_markdown
from analysis.engine.run_status import guard
from analysis.engine.studies import (
    Lead,
    Study,
    StudyResult,
    fmt_value,
    headline_sensitivity,
    lead_table,
    paired_differences,
)

__all__ = ["write_study"]


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
    fig.savefig(path, dpi=110, bbox_inches="tight")
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


def write_study(result: StudyResult, out_dir: str | Path) -> dict[str, Path]:
    """Write Parquet, meta, one PNG per panel and ``report.md``; returns the paths by role."""
    out = Path(out_dir)
    guard(out)  # an earlier run there that this process does not hold is moved aside, never overwritten
    out.mkdir(parents=True, exist_ok=True)
    study = result.study
    paths: dict[str, Path] = {}
    paths["results"] = out / "results.parquet"
    result.frame.to_parquet(paths["results"], index=False)
    if not result.tenants.empty:
        paths["tenants"] = out / "tenants.parquet"
        result.tenants.to_parquet(paths["tenants"], index=False)
    paths["meta"] = out / "meta.json"
    paths["meta"].write_text(json.dumps(result.meta(), indent=2, default=str) + "\n", encoding="utf-8")
    if result.errors:
        paths["errors"] = out / "errors.txt"
        paths["errors"].write_text("".join(f"{rid}: {msg}\n" for rid, msg in result.errors), encoding="utf-8")
    lines = [f"# {study.name}: reproduction study ({study.paper})", ""]
    if study.description:
        lines += [study.description, ""]
    if study.family == "fair-share":
        base = "the study's `[scenario]` with each panel's overrides (meta.json)"
    else:
        base = ", ".join(f"`{k}={v}`" for k, v in study.base.items())
    lines += [
        f"Mechanisms: {', '.join(study.mechanisms)}. Replications: {result.replications} (seed {result.seed}, "
        f"common random numbers across mechanisms). Base parameters: {base}"
        f". Wall time {result.seconds:.1f} s ({result.executor} executor).",
        "",
    ]
    if result.errors:
        lines += [f"**{len(result.errors)} cell(s) failed** (see errors.txt); their rows are missing.", ""]
    lead_frames = []
    for li, lead in enumerate(study.leads):
        if lead.headlines:  # headline rows first, by the rule of the closing table (counted there too)
            rows = evaluate_headlines(result.frame, [study.headlines[j] for j in lead.headlines], seed=result.seed)
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
        pd.concat(lead_frames, ignore_index=True).to_csv(paths["lead"], index=False)
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
    pair_metrics = (("liar_gain", "total_act", "liar_jct_h", "honest_jct_h") if study.family == "fair-share"
                    else ("liar_gain", "welfare"))  # fmt: skip
    pairs = paired_differences(result.frame, pair_metrics)
    if not pairs.empty:
        lines += ["## Lying variants: paired differences (variant − truthful, 95% t CI)", ""]
        cis = [f"[{fmt_value(a)}, {fmt_value(b)}]" for a, b in zip(pairs["low"], pairs["high"], strict=True)]
        pairs = pairs.assign(CI=cis)
        lines += [_md(pairs[["panel", "x", "mechanism", "variant", "metric", "mean", "CI", "n"]]), ""]
    lines += ["## Headline reproduction: the paper's numbers against ours", ""]
    if study.headlines:
        table = evaluate_headlines(result.frame, study.headlines, seed=result.seed)
        paths["headlines"] = out / "headlines.csv"
        # a realisation column only where it means something: auction mechanisms output their own schedule
        csv = table if study.family == "fair-share" else table.drop(columns="realisation")
        csv.to_csv(paths["headlines"], index=False)
        own = table[table["realisation"] == "own"]
        counts = own["verdict"].value_counts()
        extra = len(table) - len(own)
        lines += [
            f"{len(own)} headline(s) at each policy's own realisation"
            + (f" (+{extra} sensitivity rows with another realisation, not counted)" if extra else "")
            + ": "
            + ", ".join(f"{counts.get(v, 0)} {v}" for v in ("reproduced", "direction only", "not reproduced"))
            + ". Ratios are means of per-seed paired ratios (same workloads) with 95% t-intervals; levels use t "
            "intervals; verdict rule in `analysis/engine/headlines.py` (reproduced: the paper's number inside our "
            "CI or within the stated tolerance, and for a ratio our CI excludes 1 on the paper's side; direction only: "
            "the CI on the paper's side of 1 and at least a quarter of the paper's effect on a log scale; "
            "otherwise not reproduced). n per row in the table"
            + ("." if study.family == "fair-share" else "; headlines.csv has no `realisation` column: an auction "
               "mechanism's schedule is its own, there is no realisation to vary."),
            "",
            headline_markdown(table),
        ]
        sens = headline_sensitivity(result.frame, study, seed=result.seed)
        if not sens.empty:
            paths["sensitivity"] = out / "headlines_sensitivity.csv"
            sens.to_csv(paths["sensitivity"], index=False)
            lines += [
                "### Sensitivity: each headline at every value of its panel",
                "",
                "The verdicts above are read at the setting that reads the paper most literally; where the paper "
                "leaves a setting open, a sensitivity panel sweeps it (fewer seeds), and this table gives the "
                "same headline there. These rows decide nothing.",
                "",
                _md(sens[["headline", "realisation", "panel", "x_name", "x", "ours", "CI", "n", "verdict"]]),
                "",
            ]
    else:
        lines += ["This study lists no `[[headline]]`: it claims nothing as reproduced.", ""]
    if study.unmeasured:
        lines += ["### Claims that are not headlines, and why", "", "| the paper's claim | why no verdict |",
                  "|---|---|", *(f"| {a} | {b} |" for a, b in study.unmeasured), ""]  # fmt: skip
    paths["report"] = out / "report.md"
    paths["report"].write_text("\n".join(lines), encoding="utf-8")
    return paths
