"""Markdown report of a runner experiment, written beside its plots."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.engine.stats import gain_summary, paired_gains, policy_summary

__all__ = ["render_report", "write_report", "runs_time_text"]


def runs_time_text(seconds: float) -> str:
    """The one label of an experiment's run time, shared by report.md and the command's output:
    wall-clock seconds from starting the runs (and any worker processes) to the last run's end
    (``meta["wall_seconds"]``)."""
    return f"wall-clock time of the runs: {float(seconds):.2f} s"


def _fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, float):
        return "—" if math.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def _table(df: pd.DataFrame, digits: int = 3) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v, digits) for v in row) + " |")
    return "\n".join(lines)


def _horizon(meta: Mapping[str, Any]) -> str:
    """The run length line: fixed rounds, or a trace replayed until every job completed."""
    tr = meta.get("trace")
    if not tr:
        return f"{meta.get('rounds')} rounds of {meta.get('round_seconds')} s"
    src = f"trace {Path(str(tr.get('path'))).name} ({tr.get('format')} format, tenancy {tr.get('tenancy')})"
    pl = meta.get("placement", "ideal")
    if pl == "ideal":
        src += ", placement ideal (no hosts, consolidated throughputs)"
    else:
        src += f", placement {pl} on hosts of {meta.get('gpus_per_host')} GPUs in {meta.get('racks')} rack(s), " \
               f"migration cost {meta.get('migration_cost_s')} s"  # fmt: skip
    if tr.get("until_done"):
        return f"{src}, rounds of up to {meta.get('round_seconds')} s until every job completed " \
               f"(safety cap {tr.get('max_rounds')} rounds)"  # fmt: skip
    return f"{src}, {meta.get('rounds')} rounds of up to {meta.get('round_seconds')} s"


def render_report(
    meta: Mapping[str, Any],
    frame: pd.DataFrame,
    deviators: Mapping[str, str],
    plots: Sequence[Path] = (),
    errors: Sequence[tuple[str, str]] = (),
    sections: Sequence[str] = (),
) -> str:
    """The markdown text: experiment header, per-policy summary table, lying-gain table (if the
    scenario has lying variants), extra ``sections`` (markdown, e.g. the trace section of
    :mod:`analysis.frontends.trace_report`), plot links and failed runs."""
    pairs = zip(meta.get("gpu_types", []), meta.get("gpus", []), strict=False)
    cluster = ", ".join(f"{c}x {t}" for t, c in pairs)
    out = [f"# {meta.get('scenario', 'experiment')}", ""]
    if meta.get("interrupted"):
        out += [
            f"**INCOMPLETE: interrupted (SIGINT or SIGTERM); only the {meta.get('runs')} run(s) finished by then "
            "are reported below. Run the same command again to complete it.**",
            "",
        ]
    if meta.get("description"):
        out += [str(meta["description"]), ""]
    out += [
        f"- seed {meta.get('seed')}, {meta.get('replications')} replication(s), {meta.get('runs')} run(s), "
        f"executor {meta.get('executor')}",
        f"- {runs_time_text(meta.get('wall_seconds', float('nan')))} (from starting the runs and any worker "
        "processes to the last run's end; writing the results, plots and this report is not included)",
        f"- cluster: {cluster}; {_horizon(meta)}",
        "- throughput unit: slowest-GPU equivalents (work-seconds per second); 'est' = fractional allocation "
        "valued with TRUE speedups, 'act' = measured progress of running jobs",
        "",
        "## Per-policy summary (means over replications)",
        "",
        "total_* per round; jobs_completed, straggler_worker_rounds (workers of cross-type jobs, summed over "
        "rounds) and resolves per run; mean_jct_s over the jobs that finished within the horizon; trace runs "
        "with hosts: migrations (leases that changed hosts) and migration_lost_s (seconds they lost) per run.",
        "",
    ]
    incomplete = list(meta.get("incomplete_runs") or [])
    if incomplete:  # not results: left out of every table and figure below
        bad = {str(r["run_id"]) for r in incomplete}
        if "run_id" in frame.columns:
            frame = frame[~frame["run_id"].astype(str).isin(bad)]
        out[-4:-4] = [
            f"**INCOMPLETE: {len(incomplete)} run(s) hit the round cap and are not reported as results** "
            "(they are left out of every table and figure below; raise `max_rounds`):",
            "",
            *[f"- `{r['run_id']}`: {r['reason']}" for r in incomplete],
            "",
        ]
    summ = policy_summary(frame)
    out += [_table(summ) if not summ.empty else "(no results)", ""]
    if deviators and not frame.empty:
        out += ["## Gain from lying (deviator's TRUE throughput, paired by seed, 95% t CI)", ""]
        for measure in ("act", "est"):
            g = gain_summary(paired_gains(frame, deviators, measure))
            if g.empty:
                continue
            g = g.assign(
                deviator=g["variant"].map(dict(deviators)),
                rel_gain_pct=g["rel_gain"] * 100,
                ci_pct=[
                    f"[{_fmt(a * 100, 1)}, {_fmt(b * 100, 1)}]"
                    for a, b in zip(g["rel_low"], g["rel_high"], strict=True)
                ],
            )[["policy", "variant", "deviator", "n", "truthful", "lying", "diff", "rel_gain_pct", "ci_pct", "p_gain"]]
            out += [f"### {measure}", "", _table(g), ""]
    out += [x for sec in sections if sec for x in (sec, "")]
    if plots:
        out += ["## Figures", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    if errors:
        out += ["## Failed runs", ""] + [f"- `{rid}`: {msg}" for rid, msg in errors] + [""]
    return "\n".join(out)


def write_report(
    path: str | Path,
    meta: Mapping[str, Any],
    frame: pd.DataFrame,
    deviators: Mapping[str, str],
    plots: Sequence[Path] = (),
    errors: Sequence[tuple[str, str]] = (),
    sections: Sequence[str] = (),
) -> Path:
    """Write :func:`render_report` to ``path`` (UTF-8) and return it."""
    p = Path(path)
    p.write_text(render_report(meta, frame, deviators, plots, errors, sections), encoding="utf-8")
    return p
