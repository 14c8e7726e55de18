"""The ``marketsim`` command line.

Commands::

    marketsim run [SCENARIO] [--reps N] [--workers N] [--seed S] [--out DIR]
    marketsim allocate --policy NAME --speedups "1,2;1,5"|@file.csv|@- [--capacity "1,1"] [--weights "1,2"] [--json]
    marketsim sweep CONFIG [--executor local|process|dask] [--address tcp://HOST:PORT] [--workers N]
                   [--resume] [--out DIR]
    marketsim audit --mechanism NAME --speedups "1,2;1,5" [--capacity "1,1"] [--weights ...] [--seed S]
                    [--search default|hunt] [--exact] [--json]
                    [--report DIR [--instances N]]
    marketsim claims [--paper NAME [--claim ID]] [--size small|large] [--seed S] [--json] [--report DIR]
                     [--hunt-evals N [--hunt-max-seconds S]]
    marketsim learn SCENARIO [--out DIR] [--rounds N] [--seed S] [--workers N] [--executor E] [--quiet]
    marketsim viz [SCENARIO] [--host 127.0.0.1] [--port 8765] [--no-browser]
    marketsim gavel-sim -t TRACE -p GAVEL_POLICY -c V100:P100:K80 [--seed S] [--time_per_iteration 360]
                        [--throughputs_file JSON] [--num_gpus_per_server 1:1:1] [--solver ECOS]
    marketsim list

User mistakes (bad numbers, unknown names, missing files) print one line on stderr and exit with
status 2; a run in which some simulations failed writes the others and exits with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import re
import shutil
import sys
import time
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from marketsim.analysis.frontends.args import float_arg, int_arg

try:  # these imports take seconds on a busy machine: a Ctrl-C meanwhile ends quietly, as one later does
    import numpy as np

    from marketsim.market.errors import InputError, SolveError, check_finite
except KeyboardInterrupt:
    sys.stderr.write("marketsim: interrupted\n")
    raise SystemExit(130) from None

__all__ = ["main", "build_parser", "parse_matrix", "parse_vector"]

PROG = "marketsim"
# the distribution (pyproject [project] name; `marketsim` on the package index is an unrelated project)
DISTRIBUTION = "marketsim-cluster"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


# ---------------------------------------------------------------------------------------------------
# parsing helpers (int_arg / float_arg: marketsim.analysis.frontends.args, shared with gavel_sim and explore_lying)


def parse_vector(field: str, text: str) -> np.ndarray:
    """``"1,2,3"`` -> float array; raises :class:`InputError` naming ``field[i]``."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise InputError(field, text, "must be comma-separated numbers like '1,2'")
    return np.array([check_finite(f"{field}[{i}]", p) for i, p in enumerate(parts)], dtype=float)


#: Size limits of a ``--speedups`` matrix (tenants x GPU types), checked while reading (a file is
#: streamed line by line), so a huge input fails at once (exit 2) instead of after minutes or a MemoryError.
MAX_ROWS = 100_000
MAX_COLUMNS = 1_000
#: most entries (rows x columns) of a ``--speedups`` matrix: 1,000,000 keeps the matrix and the
#: solvers' copies in well under 1 GB (100,000 x 1,000 = 10^8 entries needed several GB and failed)
MAX_CELLS = 1_000_000
#: most tenants of a fair-share ``audit`` (each tenant's misreport search solves the rule hundreds of
#: times on the whole instance: 500 tenants x 3 types ran past 120 s)
MAX_AUDIT_ROWS = 50
#: most rows of an ``allocate --policy oef-coop`` (the cooperative LP's constraint generation grows with
#: the rows: 50,000 x 2 ran past 120 s)
MAX_COOP_ROWS = 2_000
#: most evaluations of one claim's hunt (``claims --hunt-evals``): the documented hunts use 8 to 600;
#: 100,000 is hours of CPU for the slowest claims (a hunt evaluation re-runs the claim's measurement)
MAX_HUNT_EVALS = 100_000


def _check_shape(field: str, rows: int, cols: int, where: str) -> None:
    if rows > MAX_ROWS:
        raise InputError(field, where, f"has more than {MAX_ROWS:,} rows (tenants); that is the size limit")
    if cols > MAX_COLUMNS:
        raise InputError(field, where, f"has {cols:,} columns; at most {MAX_COLUMNS:,} GPU types (size limit)")
    if rows * cols > MAX_CELLS:
        raise InputError(field, where, f"has more than {MAX_CELLS:,} entries (rows x GPU types); that is the size "
                         "limit")  # fmt: skip


def read_matrix_file(field: str, ref: str) -> np.ndarray:
    """``@path`` (or ``@-`` for stdin): a CSV matrix, one row per line (comma-separated numbers;
    blank lines and lines starting with ``#`` are skipped). Errors name the file and line; the input
    is read line by line and stops at once past :data:`MAX_ROWS` rows or :data:`MAX_COLUMNS` columns."""
    name = ref[1:]
    if not name:
        raise InputError(field, ref, "must name a file after '@' (or '@-' for stdin)")
    if name == "-":
        return _read_rows(field, ref, sys.stdin, "stdin")
    path = Path(name).expanduser()
    if path.is_dir():
        raise InputError(field, ref, "names a directory, not a CSV file")
    try:
        with path.open(encoding="utf-8") as fh:
            return _read_rows(field, ref, fh, str(path))
    except FileNotFoundError:
        raise InputError(field, ref, "names a file that does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(field, ref, f"cannot be read ({exc})") from None


def _read_rows(field: str, ref: str, lines: Iterable[str], where: str) -> np.ndarray:
    rows: list[np.ndarray] = []
    for lineno, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",")]
        _check_shape(field, len(rows) + 1, len(parts), f"{where} line {lineno}")
        vals = []
        for j, p in enumerate(parts):
            try:
                vals.append(check_finite(f"{field} {where} line {lineno} column {j + 1}", p))
            except InputError:
                reason = f"column {j + 1} ({p!r}) is not a finite number"
                raise InputError(f"{field} {where} line {lineno}", line, reason) from None
        if rows and len(vals) != rows[0].size:
            raise InputError(f"{field} {where} line {lineno}", line,
                             f"has {len(vals)} entries, expected {rows[0].size} (one per GPU type)")  # fmt: skip
        rows.append(np.array(vals, dtype=float))
    if not rows:
        raise InputError(field, ref, f"holds no rows ({where} is empty)")
    return np.vstack(rows)


def parse_matrix(field: str, text: str) -> np.ndarray:
    """``"1,2;1,5"`` (rows separated by ';') -> (n, k) float array with equal-length rows;
    ``@file.csv`` / ``@-`` read the matrix from a CSV file / stdin (:func:`read_matrix_file`)."""
    if text.startswith("@"):
        return read_matrix_file(field, text)
    rows = [r for r in text.split(";")]
    if not text.strip() or any(not r.strip() for r in rows):
        raise InputError(field, text, "must be rows of comma-separated numbers separated by ';', like '1,2;1,5'")
    _check_shape(field, len(rows), max(r.count(",") + 1 for r in rows), "the matrix")
    out = [parse_vector(f"{field}[{i}]", r) for i, r in enumerate(rows)]
    k = out[0].size
    for i, r in enumerate(out):
        if r.size != k:
            raise InputError(f"{field}[{i}]", rows[i].strip(), f"has {r.size} entries, expected {k} (one per GPU type)")
    return np.vstack(out)


_CREATED: list[Path] = []
"""Directories that :func:`ensure_writable` created in this command; :func:`main` removes the ones
still empty when the command fails, so a failing command leaves no empty ``--out`` folder behind."""


def ensure_writable(out: Path, field: str = "--out") -> Path:
    """Create ``out`` and prove a file can be written there, before any computing starts; an
    unusable directory raises :class:`InputError` naming ``field`` (exit 2, nothing lost)."""
    try:
        missing = [p for p in (out, *out.parents) if not p.exists()]
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".marketsim-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(field, str(out), f"is not a writable directory ({exc.strerror or exc})") from None
    _CREATED.extend(missing)
    return out


def _remove_empty_created() -> None:
    """Remove the directories :func:`ensure_writable` created that are still empty, deepest first."""
    for p in sorted(set(_CREATED), key=lambda q: len(q.absolute().parts), reverse=True):
        try:
            p.rmdir()
        except OSError:  # holds files (results of the runs that finished) or is gone
            pass
    _CREATED.clear()


def _parse_weights(text: str, n: int) -> np.ndarray:
    """``--weights``: ``n`` finite numbers > 0 whose largest / smallest ratio the LPs solve reliably
    (:data:`marketsim.market.oef.validate.MAX_WEIGHT_RATIO`); errors name ``--weights[i]``."""
    from marketsim.market.oef.validate import MAX_WEIGHT_RATIO

    weights = parse_vector("--weights", text)
    if weights.size != n:
        raise InputError("--weights", text, f"has {weights.size} entries, expected {n} (one per tenant)")
    for i, w in enumerate(weights):
        if w <= 0:
            raise InputError(f"--weights[{i}]", float(w), "must be > 0")
    hi, lo = int(np.argmax(weights)), int(np.argmin(weights))
    if weights[hi] / weights[lo] > MAX_WEIGHT_RATIO:
        why = f"is more than {MAX_WEIGHT_RATIO:g} times --weights[{lo}] = {float(weights[lo])!r}"
        raise InputError(f"--weights[{hi}]", float(weights[hi]), f"{why} (outside the range the LPs solve reliably)")
    return weights


def _parse_scale_factors(text: str, n: int) -> np.ndarray:
    """``--scale-factors``: ``n`` whole numbers of GPUs per placement, 1 ..
    :data:`marketsim.market.types.MAX_GPUS_PER_TYPE` (a job wider than that fits no cluster we solve; 1e308 made
    HiGHS fail with a model error); errors name ``--scale-factors[i]``."""
    from marketsim.market.types import MAX_GPUS_PER_TYPE

    sf = parse_vector("--scale-factors", text)
    if sf.size != n:
        raise InputError("--scale-factors", text, f"has {sf.size} entries, expected {n} (one per tenant / job)")
    for i, v in enumerate(sf):
        if v < 1 or v != int(v):
            raise InputError(f"--scale-factors[{i}]", float(v), "must be a whole number of GPUs >= 1")
        if v > MAX_GPUS_PER_TYPE:
            raise InputError(f"--scale-factors[{i}]", float(v), f"must be at most {MAX_GPUS_PER_TYPE:,} GPUs")
    return sf


def _check_speedup_ratios(field: str, W: np.ndarray, mirrored: bool = False) -> None:
    """Each row of positive speedups divided by its first entry (what the mechanisms read) must be
    finite, > 0 and at most the validator's ``max_speedup``; ``mirrored`` (the audit, whose
    misreport limits mirror the bound below 1) also requires at least ``1 / max_speedup``.
    Errors name ``field[i]`` (not the mechanisms' internal fields) and no numpy warning leaks."""
    import inspect

    from marketsim.market.oef.validate import validate_inputs

    top = float(inspect.signature(validate_inputs).parameters["max_speedup"].default)
    with np.errstate(all="ignore"):
        Wn = W / W[:, :1]
    low = 1.0 / top if mirrored else 0.0
    bad = ~np.isfinite(Wn) | (Wn <= low) | (Wn > top)
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        ratio = "overflows" if not np.isfinite(Wn[i, j]) else f"is {float(Wn[i, j]):.3g}"
        allowed = f"[{low:g}, {top:g}]" if mirrored else f"(0, {top:g}]"
        raise InputError(f"{field}[{i}]", W[i].tolist(),
                         f"has entry {j} / entry 0 = a normalised speedup that {ratio}; it must lie in {allowed} "
                         "(the conditioning bound the mechanisms solve reliably)")  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# commands


def cmd_allocate(args: argparse.Namespace) -> int:
    """Solve one fair-share allocation and print it."""
    from marketsim.market.registry import get, names

    W = parse_matrix("--speedups", args.speedups)
    n, k = W.shape
    if args.policy == "oef-coop" and n > MAX_COOP_ROWS:
        why = f"is more than {MAX_COOP_ROWS:,} tenants for oef-coop (size limit)"
        raise InputError("--speedups", f"{n:,} rows", why)
    raw = args.policy in RAW_THROUGHPUT_POLICIES
    bad = np.argwhere(W < 0) if raw else np.argwhere(W <= 0)
    if bad.size:
        i, j = (int(x) for x in bad[0])
        what = ">= 0 (a raw throughput; 0 = cannot run there)" if raw else "> 0 (a speedup)"
        raise InputError(f"--speedups[{i}][{j}]", float(W[i, j]), f"must be {what}")
    options = {}
    if args.scale_factors is not None:
        if not raw:
            raise InputError("--scale-factors", args.scale_factors, f"apply to {sorted(RAW_THROUGHPUT_POLICIES)} only")
        options["scale_factors"] = _parse_scale_factors(args.scale_factors, n)
    if args.capacity is None:
        m = np.ones(k, dtype=int)
    else:
        cap = parse_vector("--capacity", args.capacity)
        if cap.size != k:
            raise InputError("--capacity", args.capacity, f"has {cap.size} entries, expected {k} (one per GPU type)")
        from marketsim.market.types import check_capacity_vector

        m = check_capacity_vector("--capacity", cap, k)
    weights = None if args.weights is None else _parse_weights(args.weights, n)
    if not raw:
        _check_speedup_ratios("--speedups", W)
    try:
        info = get(args.policy, "fair-share")
    except InputError:
        raise InputError(
            "--policy", args.policy, f"is not a registered fair-share mechanism; known: {names('fair-share')}"
        ) from None
    from marketsim.market.oef import lp as oef_lp

    if sys.stderr.isatty() and not args.quiet:  # long cooperative solves report their rounds

        def status(msg: str) -> None:
            print(f"\r{msg}\033[K", end="", file=sys.stderr, flush=True)

        oef_lp.PROGRESS = status
    try:
        alloc = info.fn(W, m, weights=weights, **options)
    finally:
        if oef_lp.PROGRESS is not None:
            oef_lp.PROGRESS = None
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    if raw:  # raw throughput per placement: W . (X / s) = T . x (time fractions)
        Wn = W / np.asarray(options.get("scale_factors", np.ones(n)), dtype=float)[:, None]
    else:
        Wn = W / W[:, :1]  # reports as the mechanisms read them: normalised to w[0] = 1
    if args.json:
        out = alloc.to_dict(Wn)
        out.update(
            {
                "policy": info.name,
                "speedups": W.tolist(),
                "normalised_speedups": Wn.tolist(),
                "capacity": m.tolist(),
                "weights": None if weights is None else weights.tolist(),
            }
        )
        print(json.dumps(out))
        return 0
    X = np.asarray(alloc.X, dtype=float)
    thr = alloc.throughput(Wn)
    print(f"policy {info.name} ({info.summary}); status {alloc.status}, {alloc.solve_seconds * 1000:.1f} ms")
    print(f"capacity per GPU type: {m.tolist()}" + (f"; weights {weights.tolist()}" if weights is not None else ""))
    head = ["tenant"] + [f"type{j}" for j in range(k)] + ["throughput"]
    rows = [[f"u{i}"] + [f"{x:.4f}" for x in X[i]] + [f"{thr[i]:.4f}"] for i in range(n)]
    rows.append(["total"] + [f"{x:.4f}" for x in X.sum(axis=0)] + [f"{thr.sum():.4f}"])
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(s.rjust(w) for s, w in zip(r, widths, strict=True)))
    if alloc.common_value is not None:
        print(f"common value t* = {alloc.common_value:.6f}")
    if raw:
        print("throughput = raw throughput · time fraction (allocated GPUs / scale factor)")
    else:
        print("throughput = reported speedups (normalised to the slowest type) · allocated GPUs")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print the installed plugins, the registered mechanisms and the embedded scenarios."""
    import warnings

    from marketsim.market import plugins
    from marketsim.market.registry import check_name_clashes, get, names
    from marketsim.scenarios.catalog import embedded
    from marketsim.scenarios.loader import scenario_names

    # import every family first: a plugin whose mechanism module fails, or whose names clash, is only
    # known after its modules were imported
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # listed below instead of warned about
        clashes = check_name_clashes()
        by_family = {family: names(family) for family in ("fair-share", "auction")}
        broken = plugins.broken()
    print(f"plugins (entry-point group {plugins.GROUP!r}):")
    for name in sorted(set(plugins.plugins()) | set(broken)):
        if name in broken:
            print(f"  {name:16s} BROKEN, skipped: {broken[name]}")
        else:
            print(f"  {name:16s} {plugins.plugins()[name].summary}")
        for why in clashes.get(name, ()):
            print(f"  {'':16s} NAME CLASH: {why}")
    for family, found in by_family.items():
        if not found:
            continue
        print(f"{family} mechanisms:")
        for name in found:
            info = get(name)
            flag = " [claims truthful]" if info.claims_truthful else ""
            flag += f" [plugin {info.plugin}, BROKEN]" if info.plugin in broken else ""
            print(f"  {name:16s} {info.summary}{flag}")
    from marketsim.analysis.engine.studies import study_names
    from marketsim.analysis.frontends.learn import learning_names

    sweeps = [n for n in scenario_names() if n.startswith("sweep_")]
    studies = study_names()
    learns = learning_names()
    plain = [n for n in scenario_names() if n not in sweeps and n not in studies and n not in learns]
    for title, found in (
        ("scenarios (marketsim run NAME):", plain),
        ("reproduction studies of the papers (marketsim run NAME):", studies),
        ("sweeps (marketsim sweep NAME):", sweeps),
        ("learning populations (marketsim learn NAME):", learns),
    ):
        if not found:
            continue
        print(title)
        for name in found:
            try:
                text = embedded()[name].read_text(encoding="utf-8")
                desc = " ".join(str(tomllib.loads(text).get("description", "")).split())
            except (OSError, tomllib.TOMLDecodeError) as exc:
                desc = f"(unreadable: {exc})"
            print(f"  {name:16s} {desc[:150]}{'...' if len(desc) > 150 else ''}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario's Monte Carlo experiment; write Parquet, plots and a report."""
    # Mesa first, while the call stack is shallow and few modules are loaded: Mesa 3.5 names a logger at
    # import with inspect.stack(), whose cost grows with both (callgrind: 8% fewer instructions for the
    # imports of a run than when Mesa comes in under marketsim.scenarios.loader -> agents -> ...).
    import mesa  # noqa: F401

    from marketsim.scenarios.loader import load_scenario

    if args.reps is not None and args.reps < 1:
        raise InputError("--reps", args.reps, "must be >= 1")
    if args.workers < 1:
        raise InputError("--workers", args.workers, "must be >= 1")
    if args.seed is not None and args.seed < 0:
        raise InputError("--seed", args.seed, "must be >= 0")
    from marketsim.analysis.engine.sweep import sweep_names

    if args.scenario in sweep_names():
        raise InputError("scenario", args.scenario, f"is a sweep config; run it with `{PROG} sweep {args.scenario}`")
    from marketsim.analysis.engine.studies import is_study

    if is_study(args.scenario):
        if args.check:
            raise InputError("--check", args.scenario, "applies to scenarios; this is a reproduction study")
        return _run_study(args)
    scenario = load_scenario(args.scenario)
    policies = None
    if args.policies is not None:  # any registered fair-share policy, a plugin's too (not only the scenario's)
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        scenario = scenario.with_policies(policies)
    from marketsim.analysis.engine.runner import MAX_RUNS

    reps = scenario.replications if args.reps is None else args.reps
    n_runs = reps * len(policies or scenario.policies) * len(scenario.variant_names)
    if n_runs > MAX_RUNS:
        field = "--reps" if args.reps is not None else f"scenario {scenario.name}: replications"
        why = f"gives {n_runs:,} runs (x policies x variants); at most {MAX_RUNS:,} (size limit)"
        raise InputError(field, reps, why)
    if args.check:  # validate and describe the workload; no run, no output folder
        from marketsim.analysis.frontends.trace_report import check_lines

        print("\n".join(check_lines(scenario, args.seed, policies)))
        return 0
    executor = args.executor or ("process" if args.workers > 1 else "local")
    out = Path(args.out) if args.out else Path("results") / scenario.name
    ensure_writable(out)
    from marketsim.analysis.engine.run_status import claim

    # an earlier run in `out` is moved aside; the folder says "running" until the end (a killed run's
    # folder says so), SIGTERM ends a run as Ctrl-C does (finished runs are kept)
    with claim(out, {"scenario": scenario.name}):
        return _run_scenario(args, scenario, policies, executor, out)


def _run_scenario(args: argparse.Namespace, scenario, policies: list[str] | None, executor: str, out: Path) -> int:
    """The runs, files and summary of :func:`cmd_run` for a scenario, once ``out`` is marked running."""
    from marketsim.analysis.engine.runner import run_experiment, write_experiment
    from marketsim.analysis.frontends.report import report_experiment, runs_time_text

    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    exp = run_experiment(
        scenario,
        replications=args.reps,
        seed=args.seed,
        executor=executor,
        workers=args.workers,
        progress=not args.quiet,
        policies=policies,
        spill_dir=out / ".parts",  # records stream to disk as runs go; memory does not grow with rounds
    )
    paths = write_experiment(exp, out)
    shutil.rmtree(out / ".parts", ignore_errors=True)  # only parts of runs cut off by Ctrl-C remain
    incomplete = exp.incomplete  # runs stopped by the round cap: not results (no plot, no table row)
    plots, report, summary = report_experiment(exp, paths["results"], out)  # reads only the rows it uses
    meta = exp.meta()
    wall = time.perf_counter() - t0
    ok = len(exp.runs) - len(exp.errors) - len(incomplete)
    headline = (
        f"{scenario.name}: {ok}/{len(exp.runs)} runs ({exp.replications} replication(s), seed {exp.seed}, "
        f"{executor} executor); {runs_time_text(meta['wall_seconds'])}; total including writing: {wall:.2f} s"
    )
    files = [paths["results"], paths.get("completions"), paths["runs"], paths["meta"], *plots, report,
             paths.get("errors")]  # fmt: skip
    code = _report_run(headline, out, files, [(f"run {rid}", msg) for rid, msg in exp.errors])
    _print_policy_table(summary)  # the result, last (also with --quiet)
    for r in incomplete:
        print(f"{PROG} run: run {r['run_id']} is INCOMPLETE, not a result: {r['reason']}", file=sys.stderr)
    if incomplete:
        code = max(code, 1)
    if exp.interrupted:
        print(f"{PROG} run: interrupted; the {len(exp.runs)} finished run(s) were written", file=sys.stderr)
        return 130
    return code


#: The report's per-policy columns that ``marketsim run`` prints (throughput, utilisation, per-job JCT).
POLICY_TABLE_COLUMNS = ("policy", "variant", "total_act", "utilisation", "jobs_completed", "mean_jct_s",
                        "p95_jct_s")  # fmt: skip


def _print_policy_table(summ) -> None:
    """Print the report's per-policy summary (``summ``: :func:`marketsim.analysis.engine.stats.policy_summary`
    as report.md has it, means over replications) on stdout: :data:`POLICY_TABLE_COLUMNS`; also with
    ``--quiet``, which only turns the progress bar off. Runs that are not results (capped) are not in it."""
    if summ.empty:
        print("per-policy summary: no results")
        return
    cols = [c for c in POLICY_TABLE_COLUMNS if c in summ.columns]
    print("per-policy summary (means over replications; total_act: work per simulated second in slowest-GPU "
          "equivalents; JCT in s over the jobs that finished; all columns in report.md):")  # fmt: skip
    print(summ[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))


def _report_run(headline: str, out: Path, files: Sequence[Path | None], errors: Sequence[tuple[str, str]]) -> int:
    """Print what a run wrote; failures go to stderr (first line each) and make the exit status 1."""
    print(headline)
    print(f"results in {out.resolve()}/")
    for p in files:
        if p is not None:
            print(f"  {p.name}")
    for what, msg in errors:
        print(f"{PROG} run: {what} failed: {msg.splitlines()[0] if msg else msg}", file=sys.stderr)
    if errors:
        print(f"{PROG} run: {len(errors)} run(s) failed; the others were written", file=sys.stderr)
    return 1 if errors else 0


def _run_study(args: argparse.Namespace) -> int:
    """``marketsim run STUDY``: a paper's reproduction study (auction or fair-share; see
    marketsim.analysis.engine.studies)."""
    from marketsim.analysis.engine.studies import load_study

    study = load_study(args.scenario)
    mechanisms = [p.strip() for p in args.policies.split(",") if p.strip()] if args.policies is not None else None
    if mechanisms is not None and not mechanisms:
        raise InputError("--policies", args.policies, f"names no mechanism; choose from {list(study.mechanisms)}")
    executor = args.executor or ("process" if args.workers > 1 else "local")
    out = Path(args.out) if args.out else Path("results") / study.name
    ensure_writable(out)
    from marketsim.analysis.engine.run_status import claim

    with claim(out, {"study": study.name}):  # write_study replaces meta.json and report.md at the end
        return _run_study_cells(args, study, mechanisms, executor, out)


def _run_study_cells(args: argparse.Namespace, study, mechanisms: list[str] | None, executor: str, out: Path) -> int:
    """The cells, files and summary of :func:`_run_study`, once ``out`` is marked running."""
    from marketsim.analysis.engine.studies import run_study
    from marketsim.analysis.frontends.study_report import write_study

    res = run_study(
        study,
        replications=args.reps,
        seed=args.seed,
        executor=executor,
        workers=args.workers,
        progress=not args.quiet,
        mechanisms=mechanisms,
    )
    try:
        paths = write_study(res, out)
    except Exception:
        if not res.interrupted:
            raise
        from marketsim.analysis.engine.run_status import write_atomic

        write_atomic(out / "results.parquet", lambda p: res.frame.to_parquet(p, index=False))  # the cells kept
        paths = {"results": out / "results.parquet"}
    from marketsim.analysis.engine.run_status import mark_complete

    # the status of the meta.json written last, at the end of `claim`: complete, failed (cells in errors.txt)
    # or interrupted (finished cells kept)
    mark_complete(out, failed=len(res.errors), interrupted=res.interrupted)
    n_cells = res.frame[["panel", "x", "replication"]].drop_duplicates().shape[0] if not res.frame.empty else 0
    headline = (
        f"{study.name}: {n_cells} cell(s) x {len(mechanisms or study.mechanisms)} mechanism(s) "
        f"({res.replications} replication(s), seed {res.seed}, {executor} executor) in {res.seconds:.1f} s"
    )
    code = _report_run(headline, out, list(paths.values()), [(f"cell {rid}", msg) for rid, msg in res.errors])
    if res.interrupted:
        print(f"{PROG} run: interrupted; the {n_cells} finished cell(s) were written", file=sys.stderr)
        return 130
    return code


def _parse_set(items: Sequence[str] | None) -> dict[str, object]:
    """``--set key=value`` overrides (values parsed as TOML, else kept as strings)."""
    out: dict[str, object] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--set", item, "must look like key=value")
        if not raw.strip():
            raise InputError(f"--set {key.strip()}", raw, "must have a value after '='")
        try:
            out[key.strip()] = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = raw.strip()
    return out


#: Size limits of an auction audit instance's ``--set`` overrides: the bidders (``jobs``; Eris: ``I``)
#: and any other whole number (slots, hosts, calibration jobs); every bidder's misreports are each
#: scored by whole mechanism runs, so audit instances are small.
MAX_AUDIT_BIDDERS = 1_000
MAX_AUDIT_INT = 100_000


def _check_audit_sizes(overrides: dict[str, object]) -> None:
    """Every number of an auction audit instance's ``--set`` overrides must be finite and at most
    :data:`MAX_AUDIT_INT` in magnitude (:data:`MAX_AUDIT_BIDDERS` for ``jobs`` / ``I``), whole or not
    (``1e308`` is a float): values, slots, sizes and limits alike, so no builder allocates an absurd
    array or overflows a value product; the error names ``--set KEY``."""

    for key, value in overrides.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            raise InputError(f"--set {key}", value, "must be finite")
        limit = MAX_AUDIT_BIDDERS if key in ("jobs", "I") else MAX_AUDIT_INT
        if abs(value) > limit:
            what = "bidders" if limit == MAX_AUDIT_BIDDERS else "in magnitude for an audit instance"
            raise InputError(f"--set {key}", value, f"must be at most {limit:,} {what} (size limit)")


def _audit_auction(args: argparse.Namespace) -> int:
    """``marketsim audit`` of an online auction on a study's small ``[audit]`` instance."""
    from marketsim.analysis.engine.studies import build_market, load_study, study_names
    from marketsim.analysis.frontends.audit_report import agent_summary, format_relative_gain
    from marketsim.market.audit.online import OnlineAuctionTarget
    from marketsim.market.audit.search import audit_all, jsonable

    if args.speedups is not None:
        raise InputError("--speedups", args.speedups, f"is for fair-share allocators; {args.mechanism} is an auction")
    if args.scenario:
        study = load_study(args.scenario)
    else:
        found = [n for n in study_names("auction") if args.mechanism in load_study(n).mechanisms]
        if not found:
            raise InputError("--mechanism", args.mechanism, "appears in no embedded study; pass --scenario FILE.toml")
        study = load_study(found[0])
    if args.mechanism not in study.mechanisms:
        raise InputError("--mechanism", args.mechanism, f"is not one of study {study.name}'s {list(study.mechanisms)}")
    overrides = _parse_set(args.set)
    _check_audit_sizes(overrides)
    params = {**study.audit_params(), **overrides}
    market = build_market(study.paper, params, np.random.default_rng(args.seed))
    bidders = None
    if args.bidders:
        vals = parse_vector("--bidders", args.bidders)
        bad = [float(b) for b in vals if b != int(b) or b < 0]
        if bad:
            raise InputError("--bidders", args.bidders, f"must be whole job ids >= 0 ({bad[0]!r} is not)")
        bidders = [int(b) for b in vals]
    try:
        target = OnlineAuctionTarget(market, args.mechanism, bidders=bidders, seed=args.seed)
    except InputError as exc:
        if exc.field != "bidders":
            raise
        raise InputError("--bidders", args.bidders, exc.reason) from None
    results = audit_all(target, rng=args.seed)
    agents = [agent_summary(r) for r in results]  # the same fields as the fair-share audit
    out = {
        "mechanism": args.mechanism,
        "study": study.name,
        "instance": {k: v for k, v in params.items()},
        "seed": args.seed,
        "agents": agents,
        "violations": {
            "strategyproofness": max((a["best_gain"] for a in agents), default=0.0),
            "individual_rationality": max((max(0.0, -a["truthful_utility"]) for a in agents), default=0.0),
        },
        "evaluations": target.evaluations,
    }
    if args.instances < 1:
        raise InputError("--instances", args.instances, "must be >= 1")
    if args.report:
        from marketsim.analysis.frontends.audit_report import (
            auction_regret_frame,
            target_gain_curves,
            write_audit_report,
        )

        with _report_folder(args.report, {"audit": args.mechanism, "study": study.name}):
            curves = target_gain_curves(target)
            regret = auction_regret_frame(study, args.mechanism, args.instances, args.seed, _parse_set(args.set))
            report = write_audit_report(args.report, regret=regret, curves=curves, absolute=True)
        print(f"{PROG} audit: wrote {report} with regret.png and gain_curves.png", file=sys.stderr)
    if args.json:
        print(json.dumps(jsonable(out)))
        return 0
    print(
        f"audit of {args.mechanism} on study {study.name}'s audit instance {params} (seed {args.seed}; others truthful)"
    )
    head = ["bidder", "truthful surplus", "best gain", "relative gain", "witness"]
    rows = []
    for a in agents:
        wit = json.dumps(jsonable(a["witness"]), separators=(",", ":")) if a["witness"] is not None else "-"
        if a["at_limit"]:
            wit += " (at the limit)"
        rel_s = format_relative_gain(a["relative_gain"])
        rows.append([str(a["agent"]), f"{a['truthful_utility']:.6g}", f"{a['best_gain']:.6g}", rel_s, wit])
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(s.ljust(w) for s, w in zip(r, widths, strict=True)))
    _print_audit_notes(agents)
    print("property violations (max over bidders; 0 = holds):")
    for prop, v in out["violations"].items():
        print(f"  {prop:24s} {v:.6g}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run or resume a parameter sweep; print the paired lying-gain summary."""
    from marketsim.analysis.engine.sweep import load_sweep, run_sweep

    if args.workers is not None and args.workers < 1:
        raise InputError("--workers", args.workers, "must be >= 1")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise InputError("--chunk-size", args.chunk_size, "must be >= 1")
    config = load_sweep(args.config)
    out = Path(args.out) if args.out else Path("results") / f"sweep-{config.name}"
    ensure_writable(out)
    from marketsim.analysis.engine.run_status import sigterm_as_interrupt

    with sigterm_as_interrupt():  # SIGTERM stops a sweep as Ctrl-C does: sweep.json says interrupted
        res = run_sweep(
            config,
            out,
            executor=args.executor,
            workers=args.workers,
            address=args.address,
            resume=args.resume,
            retry_failed=args.retry_failed,
            chunk_size=args.chunk_size,
            progress=not args.quiet,
        )
    n_ok = int((res.runs["status"] == "ok").sum())
    print(
        f"{config.name}: {n_ok}/{len(res.runs)} runs ok; this session ran {res.ran}, skipped {res.skipped} "
        f"already done ({res.executor} executor, {res.seconds:.1f} s)"
    )
    if not res.summary.empty:
        s = res.summary
        cells = [
            f"{100 * g:+.1f}% [{100 * lo / b:+.1f}, {100 * hi / b:+.1f}]" if b > 0 else "n/a"
            for g, lo, hi, b in zip(s["liar_rel_gain"], s["liar_low"], s["liar_high"], s["liar_truthful"], strict=True)
        ]
        table = s.assign(gain=cells).pivot_table(
            index=["scenario", "cell", "variant"], columns="policy", values="gain", aggfunc="first"
        )
        print("deviator's true throughput while active, gain from lying (paired by seed, mean and 95% CI):")
        print(table.to_string())
    print(f"results in {res.out.resolve()}/")
    for p in res.paths.values():
        print(f"  {p.name}")
    if not res.failures.empty:
        capped = int((res.failures["status"] == "capped").sum())
        what = f"{len(res.failures) - capped} run(s) failed, {capped} stopped by the round cap (not results)"
        print(f"{PROG} sweep: {what} (see failures.parquet)", file=sys.stderr)
        return 1
    return 0


def _positive_matrix(field: str, text: str) -> np.ndarray:
    W = parse_matrix(field, text)
    bad = np.argwhere(W <= 0)
    if bad.size:
        i, j = (int(x) for x in bad[0])
        raise InputError(f"{field}[{i}][{j}]", float(W[i, j]), "must be > 0 (a speedup)")
    return W


def _print_audit_notes(agents: Sequence[dict]) -> None:
    """One line per distinct note of the audited agents (zero truthful utility, lie at a limit)."""
    notes = list(dict.fromkeys(n for a in agents for n in a.get("notes", ())))
    for note in notes:
        print(f"note: {note}")


def _report_folder(path: str | Path, meta: dict[str, object]):
    """Hold ``--report`` folder ``path`` while the report is computed and written
    (:func:`marketsim.analysis.engine.run_status.claim`: an earlier report there is moved aside, the folder
    reads ``running`` until the end, a folder another live command writes exits 2)."""
    from marketsim.analysis.engine.run_status import claim

    return claim(Path(path), meta, field="--report")


def cmd_audit(args: argparse.Namespace) -> int:
    """Search every agent's best misreport against a mechanism on one instance."""
    from marketsim.analysis.frontends.audit_report import AuditRequest, audit_case, build_case, format_relative_gain
    from marketsim.market.registry import get, names

    try:
        family = get(args.mechanism).family
    except InputError:
        known = sorted(set(names("fair-share")) | set(names("auction")))
        raise InputError("--mechanism", args.mechanism, f"is not a registered mechanism; known: {known}") from None
    if args.report:  # before any computing; an unusable folder is named as --report
        ensure_writable(Path(args.report), "--report")
    if family == "auction":
        if args.exact:
            raise InputError("--exact", args.mechanism, f"not available for {args.mechanism}: an online auction is "
                             "not an LP allocator (exact best responses cover the fair-share LP policies)")  # fmt: skip
        return _audit_auction(args)
    if args.speedups is None:
        raise InputError("--speedups", None, f"is required to audit the fair-share allocator {args.mechanism}")
    W = _positive_matrix("--speedups", args.speedups)
    n, k = W.shape
    if n > MAX_AUDIT_ROWS:
        raise InputError("--speedups", f"{n:,} rows", f"is more than {MAX_AUDIT_ROWS} tenants to audit (size limit)")
    if args.seed < 0:
        raise InputError("--seed", args.seed, "must be >= 0")
    if args.capacity is None:
        m = np.ones(k, dtype=float)
    else:
        cap = parse_vector("--capacity", args.capacity)
        if cap.size != k:
            raise InputError("--capacity", args.capacity, f"has {cap.size} entries, expected {k} (one per GPU type)")
        from marketsim.market.types import check_capacity_vector

        m = check_capacity_vector("--capacity", cap, k).astype(float)
    weights = None if args.weights is None else _parse_weights(args.weights, n)
    _check_speedup_ratios("--speedups", W, mirrored=True)
    if args.instances < 1:
        raise InputError("--instances", args.instances, "must be >= 1")
    from marketsim.market.oef.validate import validate_inputs

    # the same input checks `allocate` applies (conditioning bound, weight range): exit 2, not a solver error
    validate_inputs(W, m, weights=weights, row_labels=[f"--speedups[{i}]" for i in range(n)])
    if args.exact:  # before the search: an unsupported policy or a missing solver fails at once
        from marketsim.market.audit.exact import available

        ok, why = available(args.mechanism)
        if not ok:
            raise InputError("--exact", args.mechanism, f"not available for {args.mechanism}: {why}")
    case = build_case(AuditRequest(args.mechanism, W, m, weights, args.seed))
    config = None
    if args.search == "hunt":  # the hunt's inner search: its config on the fast screen, no random-vector probes
        from marketsim.market.audit import FairShareTarget
        from marketsim.market.audit.hunt_spaces import HUNT_CONFIG

        case.target = FairShareTarget(args.mechanism, W, m, weights=weights, n_arbitrary=0, fast=True)
        config = HUNT_CONFIG
    out = audit_case(case, seed=args.seed, config=config)
    if args.exact:
        from marketsim.analysis.frontends.audit_report import attach_exact

        attach_exact(out, args.mechanism, W, m, weights)
    if args.report:
        from marketsim.analysis.frontends.audit_report import gain_curve_frame, regret_frame, write_audit_report

        with _report_folder(args.report, {"audit": args.mechanism}):
            curves = gain_curve_frame(args.mechanism, W, m, agent=None, weights=weights)
            regret = regret_frame([args.mechanism], n_instances=args.instances, seed=args.seed)
            report = write_audit_report(args.report, regret=regret, curves=curves)
        print(f"{PROG} audit: wrote {report} with regret.png and gain_curves.png", file=sys.stderr)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"audit of {out['mechanism']} (seed {args.seed}; {out['points']} misreports scored, others truthful)")
    head = ["agent", "truthful utility", "best gain", "relative gain", "witness"]
    rows = []
    for a in out["agents"]:
        rel_s = format_relative_gain(a["relative_gain"])
        wit = json.dumps(a["witness"], separators=(",", ":")) if a["witness"] is not None else "-"
        if a["at_limit"]:
            wit += " (at the limit)"
        rows.append([str(a["agent"]), f"{a['truthful_utility']:.6g}", f"{a['best_gain']:.6g}", rel_s, wit])
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(s.ljust(w) for s, w in zip(r, widths, strict=True)))
    _print_audit_notes(out["agents"])
    if args.exact:
        from marketsim.analysis.frontends.audit_report import exact_rows

        print("exact best responses (bilevel program solved by SCIP; certified = the registered mechanism attains "
              "the proven bound within the gap):")  # fmt: skip
        erows = exact_rows(out["agents"])
        widths = [max(len(r[c]) for r in erows) for c in range(len(erows[0]))]
        for r in erows:
            print("  " + "  ".join(s.ljust(w) for s, w in zip(r, widths, strict=True)))
        for note in dict.fromkeys(n for a in out["agents"] for n in a["exact"].get("notes", ())):
            print(f"note (exact): {note}")
    print("property violations (max over agents/resources; 0 = holds):")
    for prop, v in out["violations"].items():
        print(f"  {prop:20s} {v:.6g}")
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    """Run the claims ledger (of one paper) and print it as a table or JSON."""
    from marketsim.analysis.frontends.audit_report import claims_table, write_audit_report
    from marketsim.market.audit.claims import WEAK_N, papers, run_claims, to_records

    if args.paper is not None and args.paper not in papers():
        raise InputError("--paper", args.paper, f"has no registered claims; known: {papers()}")
    if args.seed < 0:
        raise InputError("--seed", args.seed, "must be >= 0")
    if args.width < 4:
        raise InputError("--width", args.width, "must be >= 4 (one character and '...')")
    if args.claim is not None and args.paper is None:
        raise InputError("--claim", args.claim, "needs --paper (claim ids are per paper)")
    if args.hunt is not None:
        raise InputError("--hunt", args.hunt, "was removed: give the budget in evaluations, --hunt-evals N (same "
                         "seed, same result), and cap its CPU time with --hunt-max-seconds S if needed")  # fmt: skip
    if args.hunt_evals is not None and args.hunt_evals < 1:
        raise InputError("--hunt-evals", args.hunt_evals, "must be >= 1")
    if args.hunt_evals is not None and args.hunt_evals > MAX_HUNT_EVALS:
        raise InputError("--hunt-evals", args.hunt_evals, f"must be at most {MAX_HUNT_EVALS:,} per claim (size limit)")
    if args.hunt_max_seconds is not None:
        if args.hunt_evals is None:
            raise InputError("--hunt-max-seconds", args.hunt_max_seconds, "caps a hunt: give --hunt-evals N too")
        if not (np.isfinite(args.hunt_max_seconds) and args.hunt_max_seconds > 0):
            raise InputError("--hunt-max-seconds", args.hunt_max_seconds, "must be a number of seconds > 0")
    if args.report:
        ensure_writable(Path(args.report), "--report")
    ids = None if args.claim is None else [args.claim]
    hunting = args.hunt_evals is not None
    meta = {"claims": args.paper or "all", "size": args.size, "seed": args.seed}
    # --report: the folder reads "running" from here on (a killed ledger's folder says so) and an
    # earlier report there is moved aside
    with _report_folder(args.report, meta) if args.report else contextlib.nullcontext():
        results = run_claims(args.paper, size=args.size, seed=args.seed, ids=ids)
        if hunting:
            from marketsim.market.audit.hunt import hunt_claims

            hunt_claims(results, evals=args.hunt_evals, seconds=args.hunt_max_seconds, seed=args.seed,
                        optimiser=args.hunt_optimiser)  # fmt: skip
        if args.report:
            write_audit_report(args.report, results)
    if args.json:
        print(json.dumps(to_records(results)))
        return 0
    head = ["claim", "statement", "verdict", "effect size", "witness"] + (["hunt"] if hunting else [])
    rows = claims_table(results, width=args.width)
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(s.ljust(w) for s, w in zip(r, widths, strict=True)).rstrip())
    kinds = [("holds (weak)" if c.weak else c.verdict) for c in results]
    tally = {v: kinds.count(v) for v in dict.fromkeys(kinds)}
    note = f"; weak = holds on fewer than {WEAK_N} instances" if "holds (weak)" in tally else ""
    print(", ".join(f"{n} {v}" for v, n in tally.items()) + f" ({args.size} size, seed {args.seed}{note})")
    return 0


def cmd_learn(args: argparse.Namespace) -> int:
    """Run a learning scenario: adaptive reports, equilibrium certificate, price of lying."""
    from dataclasses import replace

    from marketsim.analysis.frontends.learn import load_learning, run_learning, write_learning

    sc = load_learning(args.scenario)
    if args.rounds is not None:
        from marketsim.analysis.frontends.learn import check_rounds
        from marketsim.market.errors import check_int

        sc = replace(sc, rounds=check_rounds("--rounds", check_int("--rounds", args.rounds, minimum=1)))
    if args.seed is not None:
        from marketsim.market.errors import check_int

        sc = replace(sc, seed=check_int("--seed", args.seed, minimum=0))
    if args.workers is not None and args.workers < 1:
        raise InputError("--workers", args.workers, "must be >= 1")
    out = Path(args.out) if args.out else Path("results") / f"learn-{sc.name}"
    ensure_writable(out)
    t0 = time.monotonic()
    last = [0.0]

    def progress(label: str, i: int, n: int) -> None:
        now = time.monotonic()
        if not args.quiet and sys.stderr.isatty() and (i == n or now - last[0] > 0.5):
            last[0] = now
            print(f"\r{label}: {i}/{n} rounds ({now - t0:.0f} s)", end="" if i < n else "\n", file=sys.stderr)

    executor = args.executor or ("process" if (args.workers or 1) > 1 else "local")
    from marketsim.analysis.engine.run_status import claim, mark_complete

    with claim(out, {"learning": sc.name}):  # an earlier run in `out` is moved aside; running until the end
        traj, table = run_learning(sc, progress=progress, executor=executor, workers=args.workers)
        paths = write_learning(sc, traj, table, out)
        failed = int((table["status"] == "error").sum()) if "status" in table.columns else 0
        mark_complete(out, failed=failed)  # meta.json is written last, as the claim ends
        print(f"{sc.name}: {sc.rule} learning on {len(sc.mechanisms)} mechanism(s) in {time.monotonic() - t0:.1f} s")
        for p in paths:
            print(f"  {p}")
    return 0


def cmd_viz(args: argparse.Namespace) -> int:
    """Serve the Mesa SolaraViz page of a fair-share scenario or auction study (needs the ``viz`` extra)."""
    try:
        from marketsim.analysis.frontends import viz
    except ImportError as exc:  # solara / altair missing: the extra is optional
        print(
            f"{PROG} viz: error: the page needs the optional 'viz' extra ({exc.name or exc} is not installed); "
            "install it with: pip install 'marketsim-cluster[viz]' (in a clone: pip install -e '.[viz]')",
            file=sys.stderr,
        )
        return 2
    return viz.serve(args.scenario, host=args.host, port=args.port, open_browser=not args.no_browser)


# ---------------------------------------------------------------------------------------------------


def cmd_gavel_sim(args: argparse.Namespace) -> int:
    """``marketsim gavel-sim``: Gavel's trace driver on marketsim (marketsim.analysis.frontends.gavel_sim)."""
    from marketsim.analysis.frontends import gavel_sim

    return gavel_sim.main(args.gavel_args, prog=f"{PROG} gavel-sim")


def package_version() -> str:
    """The installed ``marketsim-cluster`` distribution's version (``importlib.metadata``), or ``"unknown"``
    when the package runs from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: print ``marketsim VERSION`` and exit 0 (the version is looked up only then)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the marketsim version and exit")  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        sys.stdout.write(f"{PROG} {package_version()}\n")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with the ``run``, ``allocate`` and ``list`` sub-commands."""
    parser = _Parser(
        prog=PROG,
        description="Agent-based simulator of markets and fair GPU allocation in shared ML clusters.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="run a scenario's Monte Carlo experiment",
        description="Run every (replication, policy, variant) of a scenario with common random numbers; write "
        "results.parquet (tidy), runs.csv, meta.json, PNG plots and report.md into --out.",
    )
    run.add_argument("scenario", nargs="?", default="default", help="embedded scenario name or a TOML path")
    run.add_argument("--reps", type=int_arg, default=None, help="replications (default: the scenario's)")
    run.add_argument("--workers", type=int_arg, default=1, help="worker processes (>1 uses the process executor)")
    run.add_argument("--executor", choices=["local", "process"], default=None, help="override the executor choice")
    run.add_argument("--seed", type=int_arg, default=None, help="experiment seed (default: the scenario's)")
    run.add_argument("--out", default=None, help="output directory (default: ./results/<scenario>)")
    run.add_argument("--policies", default=None,
                     help="comma-separated fair-share policies to compare instead of the scenario's own: any "
                     "registered one, a plugin's too (`marketsim list`); a study: a subset of its mechanisms")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--check", action="store_true",
                     help="validate the scenario and print its workload (jobs, span, offered load, tenants, job "
                          "sizes); run nothing")  # fmt: skip
    run.set_defaults(func=cmd_run)

    alloc = sub.add_parser(
        "allocate",
        help="solve one fair-share allocation",
        description="Allocate GPU types to tenants from reported speedups. Rows of --speedups are tenants, "
        "columns GPU types (slowest first), e.g. '1,2;1,5'.",
    )
    alloc.add_argument("--policy", required=True, help="fair-share mechanism (see `marketsim list`)")
    alloc.add_argument(
        "--speedups", required=True, help="speedups: rows ';'-separated, entries ','-separated; @file.csv or @- for CSV"
    )
    alloc.add_argument("--capacity", default=None, help="GPUs per type, e.g. '1,1' (default: 1 each)")
    alloc.add_argument("--weights", default=None, help="tenant priority weights, e.g. '1,2' (default: equal)")
    alloc.add_argument("--scale-factors", default=None,
                       help="Gavel policies: GPUs per placement of each job, e.g. '2,1' (default: 1 each)")  # fmt: skip
    alloc.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    alloc.add_argument("--quiet", action="store_true", help="no progress line on long solves")
    alloc.set_defaults(func=cmd_allocate)

    sw = sub.add_parser(
        "sweep",
        help="run a resumable parameter sweep",
        description="Run scenarios x parameter grid x lying strategies x replications (common random numbers) "
        "from a sweep TOML (or an embedded sweep_* name). Completed chunks stream to OUT/parts/*.parquet; "
        "--resume skips the runs already there; OUT/results.parquet, runs.parquet, paired.parquet and "
        "summary.csv are rewritten at the end.",
    )
    sw.add_argument("config", help="sweep TOML file or embedded sweep name (e.g. sweep_lie_factor)")
    sw.add_argument("--executor", choices=["local", "process", "dask"], default="local", help="where runs execute")
    sw.add_argument("--address", default=None, help="Dask scheduler tcp://HOST:PORT (default: a LocalCluster)")
    sw.add_argument("--workers", type=int_arg, default=None, help="processes / Dask LocalCluster workers")
    sw.add_argument("--resume", action="store_true", help="continue the sweep in --out, skipping finished runs")
    sw.add_argument("--retry-failed", action="store_true", help="with --resume: run failed runs again")
    sw.add_argument("--chunk-size", type=int_arg, default=None, help="runs per task and part file")
    sw.add_argument("--out", default=None, help="output directory (default: ./results/sweep-<name>)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)

    aud = sub.add_parser(
        "audit",
        help="search each agent's best misreport on one instance",
        description="Fix the others' truthful reports and search each agent's misreports (every dimension over "
        "and under, jointly, plus refinement); print the best gain and witness per agent and the truthful "
        "outcome's property violations. Fair-share allocators: rows of --speedups are agents, columns GPU "
        "types (slowest first). Auctions: the [audit] instance of a study (--scenario, --set key=value), "
        "every bidder's valuation, size, demand and arrival misreports.",
    )
    aud.add_argument("--mechanism", required=True, help="registered mechanism (see `marketsim list`)")
    aud.add_argument("--speedups", default=None,
                     help="fair-share: true speedup matrix, e.g. '1,2;1,5', or @file.csv / @- (stdin)")  # fmt: skip
    aud.add_argument("--capacity", default=None, help="GPUs per type, e.g. '1,1' (default: 1 each)")
    aud.add_argument("--weights", default=None, help="agent weights, e.g. '1,2' (default: equal)")
    aud.add_argument("--seed", type=int_arg, default=0, help="seed of the joint sampling and probes")
    aud.add_argument("--search", choices=["default", "hunt"], default="default",
                     help="fair-share: the misreport search, default or the hunt's inner search (re-derives a hunt "
                     "witness's figure exactly)")  # fmt: skip
    aud.add_argument("--json", action="store_true", help="print one JSON object")
    aud.add_argument("--exact", action="store_true",
                     help="fair-share LP policies: also solve each agent's best misreport exactly (bilevel "
                     "program, SCIP) and report the certified gain, its gap and the optimal report beside the "
                     "search's")  # fmt: skip
    aud.add_argument(
        "--report", default=None, help="also write DIR/report.md with gain-vs-factor curves and a regret plot"
    )
    aud.add_argument(
        "--instances", type=int_arg, default=20, help="random instances of the --report regret plot (auctions: try 3-5)"
    )
    aud.add_argument("--scenario", default=None, help="auction: study whose [audit] instance to use (default: first)")
    aud.add_argument("--set", action="append", default=None, metavar="KEY=VALUE", help="auction: instance override")
    aud.add_argument("--bidders", default=None, help="auction: comma-separated job ids to audit (default: all)")
    aud.set_defaults(func=cmd_audit)

    cl = sub.add_parser(
        "claims",
        help="run the claims ledger",
        description="Test each paper's incentive claims on seeded instances: claim id, statement, verdict, "
        "effect size and witness.",
    )
    cl.add_argument("--paper", default=None, help="paper key (e.g. oef); default: all papers")
    cl.add_argument("--size", choices=["small", "large"], default="small", help="instance sizes / counts")
    cl.add_argument("--seed", type=int_arg, default=0, help="ledger seed")
    cl.add_argument("--json", action="store_true", help="print a JSON list of ledger entries")
    cl.add_argument("--report", default=None, help="also write DIR/report.md with the ledger table")
    cl.add_argument("--width", type=int_arg, default=60, help="column width of the table's texts")
    cl.add_argument("--claim", default=None, help="only this claim id (with --paper)")
    cl.add_argument("--hunt", type=float_arg, default=None, metavar="SECONDS", help=argparse.SUPPRESS)
    cl.add_argument("--hunt-evals", type=int_arg, default=None, metavar="N",
                    help="after the sample, search each claim's instance space with N optimiser evaluations (and as "
                    "many random draws; same seed, same result; see docs/hunt.md)")  # fmt: skip
    cl.add_argument("--hunt-max-seconds", type=float_arg, default=None, metavar="S",
                    help="cap each hunt's optimiser CPU time at S seconds (the evaluations made are recorded)")
    cl.add_argument("--hunt-optimiser", choices=["de", "cma", "random"], default="de",
                    help="hunt optimiser (default: differential evolution, chosen by measurement, docs/hunt.md)")
    cl.set_defaults(func=cmd_claims)

    lrn = sub.add_parser(
        "learn",
        help="let tenants/bidders adapt their reports and measure the price of lying",
        description='Run a learning scenario (kind = "learning" TOML or embedded learn_* name): every '
        "learner starts truthful and adapts its report factors with best-response, Hedge or EXP3 (or an "
        "evolution strategy for Bayesian bid functions) from TRUE utilities; writes trajectories.parquet, "
        "price_of_lying.csv, convergence.png and report.md into --out.",
    )
    lrn.add_argument("scenario", help="learning TOML file or embedded name (see `marketsim list`)")
    lrn.add_argument("--out", default=None, help="output directory (default: ./results/learn-<name>)")
    lrn.add_argument("--rounds", type=int_arg, default=None, help="override the scenario's rounds / passes")
    lrn.add_argument("--seed", type=int_arg, default=None, help="override the scenario's seed")
    lrn.add_argument("--workers", type=int_arg, default=None, help="worker processes (>1 uses the process executor)")
    lrn.add_argument("--executor", choices=["local", "process"], default=None, help="override the executor choice")
    lrn.add_argument("--quiet", action="store_true", help="no progress line")
    lrn.set_defaults(func=cmd_learn)

    vz = sub.add_parser(
        "viz",
        help="serve an interactive page of a fair-share scenario or auction study (needs the viz extra)",
        description="Serve a Mesa SolaraViz page of a fair-share scenario: pick the mechanism, a lying tenant, its "
        "lie factor on the fast GPU types and a seed; step or play the rounds and watch the allocation, true vs "
        "reported throughput, the liar's gain against a truthful twin and the topology. An auction study serves "
        "the auction page (admission timeline, prices and payments, the liar's paired gain, resources). "
        "Needs: pip install 'marketsim-cluster[viz]'.",
    )
    vz.add_argument(
        "scenario", nargs="?", default="default", help="embedded fair-share scenario or auction study, or a TOML path"
    )
    vz.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    vz.add_argument("--port", type=int_arg, default=8765, help="port to listen on (default: 8765)")
    vz.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    vz.set_defaults(func=cmd_viz)

    gs = sub.add_parser(
        "gavel-sim",
        help="Gavel's simulate_scheduler_with_trace.py on marketsim (same flags, Gavel's summary lines)",
        description="A drop-in for Gavel's scripts/drivers/simulate_scheduler_with_trace.py: -t/--trace_file, "
        "-p/--policy (Gavel's names), -c/--cluster_spec #v100:#p100:#k80, --throughputs_file (Gavel's JSON), "
        "--num_gpus_per_server, --seed, --time_per_iteration, --solver; prints Gavel's 'Average job completion "
        "time' lines. `marketsim gavel-sim --help` lists the flags.",
        add_help=False,
    )
    gs.add_argument("gavel_args", nargs=argparse.REMAINDER, help="Gavel's driver flags")
    gs.set_defaults(func=cmd_gavel_sim)

    lst = sub.add_parser(
        "list",
        help="list mechanisms and scenarios",
        description="List registered mechanisms and the scenarios shipped with marketsim.",
    )
    lst.set_defaults(func=cmd_list)
    return parser


_VALUE_OPTIONS = ("--speedups", "--capacity", "--weights", "--scale-factors", "--bidders", "--set")
RAW_THROUGHPUT_POLICIES = frozenset({"gavel-max-sum-throughput", "gavel-max-min-perf"})
"""Policies that read raw throughputs (zeros allowed) instead of speedups normalised to type 0."""
_NUMBERISH = re.compile(r"^-[\d.]")


def _glue_negative_values(argv: Sequence[str]) -> list[str]:
    """Let ``--capacity -1,1`` reach our validation: argparse would read ``-1,1`` as an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in _VALUE_OPTIONS and i + 1 < len(argv) and _NUMBERISH.match(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


_POSITIONALS = frozenset({"scenario", "config"})


def _reject_empty_values(args: argparse.Namespace) -> None:
    """An empty or blank flag value (``--out ''``) is an error naming the flag, never "the default":
    a script whose variable came out empty should fail, not write somewhere else."""
    for dest, value in vars(args).items():
        if dest in ("command", "func"):
            continue
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            flag = dest if dest in _POSITIONALS else "--" + dest.replace("_", "-")
            raise InputError(flag, value if not isinstance(value, list) else "", "must not be empty")


_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
"""OSErrors of the machine, not of the input (a full disk, a quota, an I/O error): status 1, not 2."""


def _os_error_text(exc: OSError) -> str:
    """One line naming the file(s) of an :class:`OSError`: ``PATH: why`` (``PATH -> PATH2`` for a rename)."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why += " (the disk is full)"
    if exc.filename is None:
        return why
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    return f"{where}: {why}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``marketsim`` console script; returns the exit status."""
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["gavel-sim"]:  # Gavel's own flags (-t, --trace_file, ...): its parser, and nothing else to import
        from marketsim.analysis.frontends import gavel_sim

        return gavel_sim.main(raw[1:], prog=f"{PROG} gavel-sim")
    parser = build_parser()
    try:
        args = parser.parse_args(_glue_negative_values(raw))
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else 2
    where = f"{PROG} {args.command}"
    _CREATED.clear()
    code = 1
    from marketsim.analysis.engine.run_status import WriteError, sigterm_as_interrupt

    try:
        _reject_empty_values(args)
        with sigterm_as_interrupt():  # SIGTERM ends every command as Ctrl-C does: status 130
            code = int(args.func(args))
        return code
    except InputError as exc:
        print(f"{where}: error: {exc}", file=sys.stderr)
        return 2
    except SolveError as exc:
        print(f"{where}: solver error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `marketsim list | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except WriteError as exc:  # a results file could not be written (a full disk): its path, status 1
        print(f"{where}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{where}: error: {_os_error_text(exc)}", file=sys.stderr)
        return 1 if exc.errno in _WRITE_ERRNOS else 2
    except ValueError as exc:
        print(f"{where}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return 130
    finally:
        if code != 0:  # a failing command leaves no empty output folder behind
            _remove_empty_created()
        _CREATED.clear()


if __name__ == "__main__":
    sys.exit(main())
