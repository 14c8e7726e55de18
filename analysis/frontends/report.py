"""Markdown report of a runner experiment, written beside its plots."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from marketsim.analysis.engine.stats import ACTIVE_DEFINITION, gain_summary, paired_gains, policy_summary

__all__ = ["render_report", "write_report", "report_experiment", "runs_time_text", "gain_tables"]


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


def _pct(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x * 100:+.1f}"


def _ci_pct(lo: float, hi: float) -> str:
    return "—" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo * 100:+.1f}, {hi * 100:+.1f}]"


def gain_tables(frame: pd.DataFrame, deviators: Mapping[str, str], round_seconds: float | None) -> list[str]:
    """The "Gain from lying" section (markdown lines): per policy and lying variant, the deviator's
    TRUE throughput while active and its mean JCT, truthful against lying, paired by seed
    (:func:`marketsim.analysis.engine.stats.paired_gains` / :func:`~marketsim.analysis.engine.stats.gain_summary`)."""
    out = [
        "## Gain from lying (the deviator's TRUE experience, truthful vs lying, paired by seed, 95% t CI)",
        "",
        "Throughput while active = the integral of the deviator's throughput over the records in which it is "
        f"active, divided by its active time (slowest-GPU equivalents); {ACTIVE_DEFINITION}. Mean JCT over the "
        "deviator's jobs that finished (h). change % = mean paired difference / mean truthful value, with the 95% t "
        "interval of the paired differences over the same denominator; paid = share of seeds in which lying raised "
        "the throughput (thr) or shortened the mean JCT (JCT). A lie pays when the throughput rises and the JCT "
        "falls.",
        "",
    ]
    for measure in ("act", "est"):
        g = gain_summary(paired_gains(frame, deviators, measure, round_seconds))
        if g.empty:
            continue
        t = pd.DataFrame(
            {
                "policy": g["policy"],
                "variant": g["variant"],
                "deviator": g["variant"].map(dict(deviators)),
                "n": g["n"],
                f"{measure} truthful": g["truthful"],
                f"{measure} lying": g["lying"],
                "thr change %": [_pct(x) for x in g["rel_gain"]],
                "thr CI %": [_ci_pct(a, b) for a, b in zip(g["rel_low"], g["rel_high"], strict=True)],
                "thr paid": g["p_gain"],
            }
        )
        if measure == "act":
            t = t.assign(
                **{
                    "JCT truthful h": g["jct_truthful_s"] / 3600.0,
                    "JCT lying h": g["jct_lying_s"] / 3600.0,
                    "JCT change %": [_pct(x) for x in g["jct_rel"]],
                    "JCT CI %": [_ci_pct(a, b) for a, b in zip(g["jct_rel_low"], g["jct_rel_high"], strict=True)],
                    "JCT paid": g["p_jct_gain"],
                }
            )
        what = "actual throughput (measured progress)" if measure == "act" else \
            "estimated throughput (fractional allocation valued with true speedups)"  # fmt: skip
        out += [f"### {measure}: {what} while active" + (", and mean JCT" if measure == "act" else ""), "",
                _table(t), ""]  # fmt: skip
    return out


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
    :mod:`marketsim.analysis.frontends.trace_report`), plot links and failed runs."""
    return _render(meta, frame, deviators, plots, errors, sections)[0]


def _render(
    meta: Mapping[str, Any],
    frame: pd.DataFrame,
    deviators: Mapping[str, str],
    plots: Sequence[Path] = (),
    errors: Sequence[tuple[str, str]] = (),
    sections: Sequence[str] = (),
) -> tuple[str, pd.DataFrame]:
    """:func:`render_report`'s text and its per-policy summary (:func:`policy_summary`)."""
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
        "Per run, then the mean over replications. Time integrals over the run's records (each record weighted by "
        "the simulated seconds it covers, its `round_s` or the round length; idle gaps with no active job have no "
        "record): total_est / total_act = work per simulated second (slowest-GPU equivalents); utilisation = "
        "GPU-seconds used / GPU-seconds available; straggler_gpu_s = GPU-seconds of workers of cross-GPU-type jobs. "
        "Counts per run: jobs_completed, resolves (policy re-solves); trace runs with hosts: migrations (leases that "
        "changed hosts) and migration_lost_s (lease seconds they lost). Per job, over the jobs that finished within "
        "the horizon: mean / median / p95 JCT (s).",
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
    round_s = meta.get("round_seconds")
    summ = policy_summary(frame, round_s)
    out += [_table(summ) if not summ.empty else "(no results)", ""]
    if deviators and not frame.empty:
        out += gain_tables(frame, deviators, round_s)
    out += [x for sec in sections if sec for x in (sec, "")]
    if plots:
        out += ["## Figures", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    if errors:
        out += ["## Failed runs", ""] + [f"- `{rid}`: {msg}" for rid, msg in errors] + [""]
    return "\n".join(out), summ


def write_report(
    path: str | Path,
    meta: Mapping[str, Any],
    frame: pd.DataFrame,
    deviators: Mapping[str, str],
    plots: Sequence[Path] = (),
    errors: Sequence[tuple[str, str]] = (),
    sections: Sequence[str] = (),
) -> Path:
    """Write :func:`render_report` to ``path`` (UTF-8, whole or not at all:
    :func:`marketsim.analysis.engine.run_status.write_atomic`) and return it."""
    from marketsim.analysis.engine.run_status import write_atomic

    text = render_report(meta, frame, deviators, plots, errors, sections)
    return write_atomic(Path(path), lambda p: p.write_text(text, encoding="utf-8"))


def report_experiment(exp: Any, results: str | Path, out: str | Path) -> tuple[list[Path], Path, pd.DataFrame]:
    """The report phase of ``marketsim run``: from ``exp`` (an :class:`marketsim.analysis.engine.runner.Experiment`)
    and its written ``results`` (results.parquet), the figures (trace runs: ``jct_cdf.png`` and the trace
    section's ``utilisation.png``; otherwise ``throughput.png`` and, with lying variants,
    ``lying_gain.png``) and ``report.md`` in ``out``. Returns ``(figures, report path, the report's
    per-policy summary)`` (:func:`marketsim.analysis.engine.stats.policy_summary`, computed once: ``run`` prints it).

    Memory: the results file is never read whole. The trace section reads one run's records at a time
    (:func:`marketsim.analysis.frontends.trace_report.trace_section`) and keeps per-run summaries; then the rows the
    tables and plots use are read (:func:`marketsim.analysis.engine.runner.load_report_frame`; for a trace run the
    cluster records, the JCTs and the deviators' rows, not every tenant's records). Runs stopped by the
    round cap are left out."""
    from marketsim.analysis.engine.runner import load_report_frame
    from marketsim.analysis.frontends.plots import plot_jct_cdf, plot_lying_gain, plot_throughput

    scenario = exp.scenario
    out = Path(out)
    trace = scenario.workload.trace is not None
    round_s = scenario.cluster.round_seconds
    section = ""
    if trace:  # per-tenant, per-size, tail, backfill, makespan; first, so no other frame is alive meanwhile
        from marketsim.analysis.frontends.trace_report import trace_section

        section = trace_section(exp, results, exp.completions, out)
    bad = {r["run_id"] for r in exp.incomplete}  # runs stopped by the round cap: not results
    frame = load_report_frame(results, exp.deviators, trace=trace, exclude_runs=bad)
    plots: list[Path] = []
    if not frame.empty and trace:  # trace runs: no per-tenant rounds, JCTs
        if (frame["measure"] == "jct_s").any():
            plots.append(plot_jct_cdf(frame, out / "jct_cdf.png"))
    elif not frame.empty:
        plots.append(plot_throughput(frame, out / "throughput.png", round_seconds=round_s))
        if exp.deviators:
            plots.append(plot_lying_gain(frame, exp.deviators, out / "lying_gain.png", round_seconds=round_s))
    sections: list[str] = []
    if trace and not frame.empty:
        sections.append(section)
        if (out / "utilisation.png").is_file():
            plots.append(out / "utilisation.png")
    from marketsim.analysis.engine.run_status import write_atomic

    text, summ = _render(exp.meta(), frame, exp.deviators, plots, exp.errors, sections)
    report = write_atomic(out / "report.md", lambda p: p.write_text(text, encoding="utf-8"))
    return plots, report, summ
