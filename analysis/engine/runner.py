"""Monte Carlo runner: plan runs, execute them with a pluggable executor, collect tidy data.

Randomness (DESIGN "Randomness and reproducibility"): one ``numpy.random.SeedSequence`` per
experiment; ``spawn`` one child per replication; the SAME child seeds every policy and every
variant (truthful / lying) of that replication, so paired comparisons use common random numbers.
A run spec carries the child's ``entropy`` and ``spawn_key`` (plain data), so it rebuilds an
identical seed in any process.

Executors map a function over run specs and yield results as they finish: ``local`` (in this
process) and ``process`` (``concurrent.futures.ProcessPoolExecutor``); the Dask executor
(:class:`marketsim.analysis.engine.executors_dask.DaskExecutor`, optional dependency) implements the same
:class:`Executor` protocol and can be passed as ``executor=``. Results are reassembled in plan
order and sorted, so the output is identical whatever the executor and completion order.
Resumable parameter sweeps with Parquet part files live in :mod:`marketsim.analysis.engine.sweep`.

Output (long format, one row per measurement): ``run_id, scenario, policy, variant,
replication, round, tenant, measure, value`` (see :meth:`marketsim.agents.model.MarketModel.tidy` for the
measures). A run that raises is reported in :attr:`Experiment.errors` and the others still count.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from marketsim.analysis.engine import run_status
from marketsim.market.errors import InputError, check_choice, check_int
from marketsim.scenarios.loader import Scenario

__all__ = [
    "RunSpec",
    "RunResult",
    "Experiment",
    "Executor",
    "LocalExecutor",
    "ProcessExecutor",
    "EXECUTORS",
    "make_executor",
    "crash_result",
    "plan_runs",
    "execute_run",
    "run_experiment",
    "write_experiment",
    "COLUMNS",
    "empty_results",
    "scan_results",
    "decoded_frame",
    "load_report_frame",
    "DICT_COLUMNS",
]

#: Most runs one experiment plans (replications x policies x variants): each run spec is held in
#: memory, so a huge ``--reps`` fails at once (exit 2) instead of in a MemoryError.
MAX_RUNS = 1_000_000

COLUMNS = ["run_id", "scenario", "policy", "variant", "replication", "round", "tenant", "measure", "value"]
SORT_KEYS = ["policy", "variant", "replication", "round", "tenant", "measure"]


@dataclass(frozen=True)
class RunSpec:
    """One simulation: ``scenario`` under ``policy`` and ``variant`` for replication ``replication``,
    seeded by the SeedSequence ``(entropy, spawn_key)`` shared by all runs of that replication."""

    run_id: str
    scenario: Scenario
    policy: str
    variant: str
    replication: int
    entropy: int
    spawn_key: tuple[int, ...]

    def seed_sequence(self) -> np.random.SeedSequence:
        """A fresh SeedSequence equal to the replication's child (never mutated between runs)."""
        return np.random.SeedSequence(self.entropy, spawn_key=self.spawn_key)


@dataclass
class RunResult:
    """What one run produced: its tidy ``frame`` (None on error), the ``error`` text, the
    wall-clock ``seconds`` and the model's ``rounds`` and ``resolves`` (policy re-solves)."""

    run_id: str
    frame: pd.DataFrame | None
    error: str | None = None
    seconds: float = 0.0
    rounds: int = 0
    resolves: int = 0
    parts: list[str] = field(default_factory=list)  # spilled Arrow IPC files (write_part), in row order
    completions: pd.DataFrame | None = None  # trace runs: one row per finished job (with job_id)
    #: why the run is not a result although it did not fail ("" = complete): a trace run stopped
    #: by the safety cap ``max_rounds`` before every job finished (``unfinished_jobs`` of them)
    incomplete: str = ""
    unfinished_jobs: int = 0


def plan_runs(
    scenario: Scenario,
    replications: int | None = None,
    seed: int | None = None,
    policies: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
) -> list[RunSpec]:
    """All runs of an experiment, replication-major: per replication, every policy × variant.

    ``replications`` and ``seed`` default to the scenario's; ``policies`` / ``variants`` restrict
    the scenario's lists. Run ids are ``<scenario>/<policy>/<variant>/r<replication>``.
    """
    reps = check_int("replications", scenario.replications if replications is None else replications, minimum=1)
    root_seed = check_int("seed", scenario.seed if seed is None else seed, minimum=0)
    pols = list(scenario.policies if policies is None else policies)
    for p in pols:
        check_choice("policy", p, scenario.policies)
    vars_ = list(scenario.variant_names if variants is None else variants)
    for v in vars_:
        check_choice("variant", v, scenario.variant_names)
    if reps * len(pols) * len(vars_) > MAX_RUNS:
        runs = f"{reps * len(pols) * len(vars_):,} runs (x {len(pols)} policies x {len(vars_)} variants)"
        raise InputError("replications", reps, f"gives {runs}; at most {MAX_RUNS:,} (size limit)")
    children = np.random.SeedSequence(root_seed).spawn(reps)
    specs: list[RunSpec] = []
    for r, child in enumerate(children):
        for p in pols:
            for v in vars_:
                specs.append(
                    RunSpec(
                        f"{scenario.name}/{p}/{v}/r{r}",
                        scenario,
                        p,
                        v,
                        r,
                        int(child.entropy),  # type: ignore[arg-type]
                        tuple(int(x) for x in child.spawn_key),
                    )
                )
    return specs


def empty_results() -> pd.DataFrame:
    """A results frame with no rows but the column types of a real one (strings, int64 replication
    and round, float64 value), so its Parquet file has the same schema and filters on it work."""
    kinds = {"replication": "int64", "round": "int64", "value": "float64"}
    return pd.DataFrame({c: pd.Series(dtype=kinds.get(c, "str")) for c in COLUMNS})


def _with_run_columns(frame: pd.DataFrame, spec: RunSpec) -> pd.DataFrame:
    frame.insert(0, "replication", spec.replication)
    frame.insert(0, "variant", spec.variant)
    frame.insert(0, "policy", spec.policy)
    frame.insert(0, "scenario", spec.scenario.name)
    frame.insert(0, "run_id", spec.run_id)
    return frame[COLUMNS]


@cache
def results_schema() -> Any:
    """The Arrow schema of a results file (:data:`COLUMNS`; strings as ``large_string``, with the
    pandas metadata ``DataFrame.to_parquet`` writes for :func:`empty_results`)."""
    import pyarrow as pa

    return pa.Schema.from_pandas(empty_results(), preserve_index=False)


@cache
def parts_schema() -> Any:
    """The Arrow schema of a spilled part (:func:`execute_run`): :func:`results_schema`'s columns with
    the string columns (:data:`DICT_COLUMNS`) dictionary-encoded (int32 codes into ``large_string``
    values), as the records come out of a model; :func:`_stream_parts` casts them to the file's strings."""
    import pyarrow as pa

    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in DICT_COLUMNS else f
                      for f in results_schema()])  # fmt: skip


def records_table(chunk: pd.DataFrame, spec: RunSpec) -> Any:
    """A model's drained records as its sink gets them (round, tenant, measure, value; tenant and
    measure categorical: :meth:`marketsim.agents.model.MarketModel._finish_tidy` with ``strings=False``)
    with ``spec``'s run columns, as an Arrow table in :func:`parts_schema`: the rows
    :func:`_with_run_columns` gives, the string columns as the categories and codes (no string per row)."""
    import pyarrow as pa

    n = len(chunk)
    zeros = pa.array(np.zeros(n, dtype=np.int32))

    def const(value: str) -> Any:
        return pa.DictionaryArray.from_arrays(zeros, pa.array([value], pa.large_string()))

    def strings(col: pd.Series) -> Any:
        cats = pa.array([str(c) for c in col.cat.categories], type=pa.large_string())
        return pa.DictionaryArray.from_arrays(pa.array(col.cat.codes.to_numpy(dtype=np.int32)), cats)

    arrays = {"run_id": const(spec.run_id), "scenario": const(spec.scenario.name), "policy": const(spec.policy),
              "variant": const(spec.variant), "replication": pa.array(np.full(n, spec.replication, dtype=np.int64)),
              "round": pa.array(chunk["round"].to_numpy(dtype=np.int64)), "tenant": strings(chunk["tenant"]),
              "measure": strings(chunk["measure"]),
              "value": pa.array(chunk["value"].to_numpy(dtype=float))}  # fmt: skip
    return pa.Table.from_arrays([arrays[c] for c in COLUMNS], schema=parts_schema())


#: compression of the spilled parts (Arrow IPC files, read once into results.parquet): zstd writes a part
#: in a fraction of a Parquet write's time and is smaller than a snappy Parquet part
PART_COMPRESSION = "zstd"


def write_part(table: Any, path: str | Path) -> None:
    """Write a spilled part: ``table`` (in :func:`parts_schema`, its chunks' dictionaries unified: an
    Arrow IPC file holds one dictionary per column) as an Arrow IPC file (what ``pandas.read_feather``
    and ``pyarrow.ipc.open_file`` read)."""
    import pyarrow as pa

    table = table.unify_dictionaries()
    codec = PART_COMPRESSION if pa.Codec.is_available(PART_COMPRESSION) else None
    with pa.ipc.new_file(str(path), table.schema, options=pa.ipc.IpcWriteOptions(compression=codec)) as w:
        w.write_table(table)


def read_part(path: str | Path) -> Any:
    """A spilled part written by :func:`write_part`, as a ``pyarrow.Table`` in :func:`parts_schema`."""
    import pyarrow as pa

    with pa.ipc.open_file(str(path)) as r:
        return r.read_all()


#: rows of records gathered before a spilled part is written (48 bytes a row in the parts' schema: six int32
#: codes, two int64 and one float64 column; dictionaries aside): a run's memory stays
#: bounded, and a long run writes a part per SPILL_ROWS rows instead of one per drain (every
#: :attr:`~marketsim.agents.model.MarketModel.DRAIN_ROUNDS` rounds)
SPILL_ROWS = 250_000


def _spill_name(run_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)


def execute_run(spec: RunSpec, spill_dir: str | None = None) -> RunResult:
    """Build and run one model; never raises (errors come back in :attr:`RunResult.error`).

    With ``spill_dir`` the model's records are written, as they are drained
    (:attr:`marketsim.agents.model.MarketModel.DRAIN_ROUNDS` rounds at a time) and gathered up to
    :data:`SPILL_ROWS` rows, to Arrow IPC files ``spill_dir/<run>/part-NNNNN.arrow`` (:func:`write_part`) listed in
    :attr:`RunResult.parts`, and the result holds no frame: the run's memory then does not grow with
    its rounds."""
    t0 = time.perf_counter()
    parts: list[str] = []
    try:
        model = spec.scenario.build_model(spec.policy, spec.variant, spec.seed_sequence())
        if spill_dir is not None:
            folder = Path(spill_dir) / _spill_name(spec.run_id)
            folder.mkdir(parents=True, exist_ok=True)
            for old in folder.glob("part-*.arrow"):
                old.unlink()

            import pyarrow as pa

            pending: list[Any] = []  # pyarrow tables in the parts' schema

            def write() -> None:
                if pending:
                    path = folder / f"part-{len(parts):05d}.arrow"
                    write_part(pending[0] if len(pending) == 1 else pa.concat_tables(pending), path)
                    parts.append(str(path))
                    pending.clear()

            def sink(chunk: pd.DataFrame) -> None:
                # drained blocks (in round order) are gathered up to SPILL_ROWS rows per part: each part
                # costs a fixed write, and the parts are read again into results.parquet
                if len(chunk):
                    pending.append(records_table(chunk, spec))
                    if sum(t.num_rows for t in pending) >= SPILL_ROWS:
                        write()

            model.sink = sink
        model.run()
        if spill_dir is not None:
            model.flush()
            write()
        frame = None if spill_dir is not None else _with_run_columns(model.tidy(), spec)
        comp = None
        if model.config.trace is not None:
            comp = model.completions()
            for i, (col, val) in enumerate(
                (
                    ("run_id", spec.run_id),
                    ("policy", spec.policy),
                    ("variant", spec.variant),
                    ("replication", spec.replication),
                )  # fmt: skip
            ):
                comp.insert(i, col, val)
        incomplete, unfinished = _incomplete(model)
        return RunResult(
            spec.run_id,
            frame,
            seconds=time.perf_counter() - t0,
            rounds=int(model.steps if model.auctioneer.trace is None else model.auctioneer.trace.rounds),
            resolves=int(model.auctioneer.resolves),
            parts=parts,
            completions=comp,
            incomplete=incomplete,
            unfinished_jobs=unfinished,
        )
    except Exception as exc:  # a failing run must not take the others down
        for p in parts:
            Path(p).unlink(missing_ok=True)
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        return RunResult(spec.run_id, None, f"{type(exc).__name__}: {exc}{where}", time.perf_counter() - t0)


def _incomplete(model: Any) -> tuple[str, int]:
    """``(reason, unfinished jobs)`` of a trace run stopped by the safety cap, else ``("", 0)``."""
    if not getattr(model, "cap_reached", False):
        return "", 0
    tw = model.config.trace
    eng = model.auctioneer.trace
    left = len(tw.trace) - int(eng.completed)
    why = (f"safety cap: stopped after max_rounds = {int(model.config.rounds):,} rounds at t = {float(eng.now):.0f} s "
           f"with {left:,} of {len(tw.trace):,} jobs unfinished; raise max_rounds")  # fmt: skip
    return why, left


def crash_result(item: Any, exc: BaseException) -> Any:
    """What an executor yields for an item whose task crashed: ``item.failure(message)`` if the item
    defines it (e.g. a sweep chunk), else an error :class:`RunResult` for a :class:`RunSpec`."""
    message = f"{type(exc).__name__}: {exc}"
    failure = getattr(item, "failure", None)
    if callable(failure):
        return failure(message)
    return RunResult(item.run_id, None, message)


class Executor(Protocol):
    """Maps ``fn`` over ``specs``, yielding results in completion order."""

    name: str

    def map(self, fn: Callable[[RunSpec], RunResult], specs: list[RunSpec]) -> Iterator[RunResult]: ...


@dataclass
class LocalExecutor:
    """Runs every spec in this process, in order."""

    name: str = "local"

    def map(self, fn: Callable[[RunSpec], RunResult], specs: list[RunSpec]) -> Iterator[RunResult]:
        """Yield ``fn(spec)`` for each spec in order."""
        for spec in specs:
            yield fn(spec)


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the parent's business (it cancels and stops the workers)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: Seconds between a worker's checks that the process that started it is still alive.
PARENT_POLL_SECONDS = 0.5


def _exit_when_orphaned(parent_pid: int, interval: float = PARENT_POLL_SECONDS) -> None:
    """Watchdog loop of a worker: once its parent has died (SIGKILL, OOM killer: no chance to stop
    its pool) the worker is re-parented, ``os.getppid()`` changes, and the worker exits at once
    (status 1, no cleanup) instead of running on as an orphan. Portable: needs only ``getppid``."""
    while os.getppid() == parent_pid:
        time.sleep(interval)
    os._exit(1)


def _worker_init(parent_pid: int, death_signal: bool = False) -> None:
    """Process-pool worker initializer: ignore SIGINT (the parent handles Ctrl-C and stops the
    pool) and start a daemon thread that ends this worker when ``parent_pid`` dies. With
    ``death_signal`` (Linux, the pool started from the parent's main thread, whose end is the
    process's) the kernel also sends SIGTERM at the parent's death, which ends the worker even while
    its main thread runs C code that holds the GIL. A worker whose parent died while it was still
    importing exits as soon as this runs."""
    _ignore_sigint()
    if death_signal and sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the watchdog below still works
            pass
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), name="orphan-watchdog", daemon=True).start()


@contextmanager
def _sigint_ignored_in_children() -> Iterator[None]:
    """While worker processes are started: SIGINT ignored in this (main) thread, a disposition
    that ``fork``/``exec`` hand on, so a spawned worker ignores Ctrl-C from its first instruction
    (a Ctrl-C during its seconds of imports would otherwise print a traceback). A Ctrl-C in these
    few milliseconds is dropped. Outside the main thread (where signals cannot be set) a no-op."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel every queued task of ``pool`` and terminate its workers without waiting for the
    running ones (their results are abandoned; what was already yielded is kept by the caller)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    results = getattr(pool, "_result_queue", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=2.0)
    # A worker terminated while it was sending a result leaves the pool's manager thread blocked
    # reading the rest of that message, and interpreter exit joins that thread: it would hang for
    # good. This process never writes results; closing its copy of the pipe's write end lets the
    # read end see EOF once the workers are gone, so the manager marks the pool broken and exits.
    if results is not None:
        results._writer.close()


@dataclass
class ProcessExecutor:
    """Runs specs in a ``ProcessPoolExecutor`` of ``workers`` processes (default: CPU count),
    started with the "spawn" method (safe with threads, same on every platform). Workers ignore
    Ctrl-C from their start (the parent cancels and stops them) and exit by themselves if the
    parent dies without stopping them (e.g. SIGKILL): at once on Linux (a death signal), else
    within :data:`PARENT_POLL_SECONDS` (see :func:`_worker_init`)."""

    workers: int | None = None
    name: str = "process"

    def __post_init__(self) -> None:
        if self.workers is not None:
            self.workers = check_int("workers", self.workers, minimum=1)

    def map(self, fn: Callable[[RunSpec], RunResult], specs: list[RunSpec]) -> Iterator[RunResult]:
        """Submit all specs; yield results as they complete (a crashed worker becomes an error result)."""
        if not specs:
            return
        n = min(self.workers or os.cpu_count() or 1, len(specs))
        ctx = multiprocessing.get_context("spawn")
        pool: ProcessPoolExecutor | None = None
        done = False
        try:
            with _sigint_ignored_in_children():  # spawn starts the workers on demand, in the first n submits
                main = threading.current_thread() is threading.main_thread()
                pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(), main))
                futures = {pool.submit(fn, s): s for s in specs[:n]}
            futures.update({pool.submit(fn, s): s for s in specs[n:]})
            for fut in as_completed(futures):
                spec = futures[fut]
                try:
                    yield fut.result()
                except Exception as exc:  # e.g. BrokenProcessPool
                    yield crash_result(spec, exc)
            done = True
        finally:
            if pool is None:
                pass
            elif done:
                pool.shutdown(wait=True)
            else:  # Ctrl-C (or the consumer stopped early): drop queued runs, stop the workers now
                stop_pool(pool)


#: Executor factories by name (``--executor`` / ``executor=`` values).
EXECUTORS: dict[str, Callable[[int | None], Executor]] = {
    "local": lambda workers: LocalExecutor(),
    "process": lambda workers: ProcessExecutor(workers),
}


def make_executor(name: str, workers: int | None = None) -> Executor:
    """The executor registered as ``name`` ("local" or "process")."""
    check_choice("executor", name, list(EXECUTORS))
    return EXECUTORS[name](workers)


@dataclass
class Experiment:
    """Results of :func:`run_experiment`: the tidy ``frame`` (sorted, :data:`COLUMNS`), the
    ``runs`` table (run_id, policy, variant, replication, seconds, rounds, resolves, error),
    ``errors`` as ``(run_id, message)``, and the metadata needed by plots and reports."""

    scenario: Scenario
    seed: int
    replications: int
    frame: pd.DataFrame
    runs: pd.DataFrame
    errors: list[tuple[str, str]] = field(default_factory=list)
    executor: str = "local"
    seconds: float = 0.0
    interrupted: bool = False  # Ctrl-C: the finished runs are kept, the rest never ran
    parts: list[str] = field(default_factory=list)  # spilled records in SORT_KEYS order (frame empty)
    completions: pd.DataFrame | None = None  # trace runs: every finished job of every run

    @property
    def incomplete(self) -> list[dict[str, Any]]:
        """Runs that ended without failing but are not results (a trace run stopped by its round
        cap): ``run_id``, ``policy``, ``variant``, ``replication``, ``reason``, ``unfinished_jobs``."""
        if "incomplete" not in self.runs.columns:
            return []
        bad = self.runs[self.runs["incomplete"].astype(str) != ""]
        return [
            {"run_id": r.run_id, "policy": r.policy, "variant": r.variant, "replication": int(r.replication),
             "reason": r.incomplete, "unfinished_jobs": int(r.unfinished_jobs)}  # fmt: skip
            for r in bad.itertuples(index=False)
        ]

    @property
    def deviators(self) -> dict[str, str]:
        """Lying variant -> id of its deviating tenant."""
        return {v: d for v in self.scenario.variant_names if (d := self.scenario.deviator(v)) is not None}

    def meta(self) -> dict[str, Any]:
        """JSON-ready description of the experiment."""
        s = self.scenario
        return {
            "scenario": s.name,
            "source": s.source,
            "description": s.description,
            "seed": self.seed,
            "replications": self.replications,
            "policies": list(s.policies),
            "variants": list(s.variant_names),
            "deviators": self.deviators,
            "rounds": s.rounds,
            "round_seconds": s.cluster.round_seconds,
            "gpu_types": list(s.cluster.gpu_types),
            "gpus": list(s.cluster.gpus),
            "placement": s.placement or ("ideal" if s.workload.trace is not None else "auto"),
            "gpus_per_host": s.cluster.gpus_per_host,
            "racks": s.cluster.racks,
            "migration_cost_s": s.migration_cost_s,
            "executor": self.executor,
            "wall_seconds": round(self.seconds, 3),
            "runs": len(self.runs),
            "failed_runs": len(self.errors),
            "incomplete_runs": self.incomplete,
            "complete": not self.errors and not self.interrupted and not self.incomplete,
            "interrupted": self.interrupted,
            # interrupted, failed (errors.txt), capped (a run stopped at the round cap: incomplete_runs) or complete
            "status": (
                run_status.INTERRUPTED
                if self.interrupted
                else run_status.FAILED
                if self.errors
                else (run_status.CAPPED if self.incomplete else run_status.COMPLETE)
            ),
            "trace": None if s.workload.trace is None else asdict(s.workload.trace),
        }


def run_experiment(
    scenario: Scenario,
    *,
    replications: int | None = None,
    seed: int | None = None,
    executor: str | Executor = "local",
    workers: int | None = None,
    progress: bool = True,
    skip: Collection[str] = (),
    policies: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
    spill_dir: str | Path | None = None,
) -> Experiment:
    """Run every (replication, policy, variant) of ``scenario`` and collect tidy results.

    ``executor``: "local", "process" (``workers`` processes) or an :class:`Executor`;
    ``progress``: show a tqdm bar on stderr; ``skip``: run ids not to run (resuming a sweep).
    ``spill_dir``: runs write their records there as they go (:func:`execute_run`) and the
    experiment keeps only the file list (:attr:`Experiment.parts`, in sorted order; ``frame`` is
    empty); :func:`write_experiment` streams them into ``results.parquet``.
    """
    reps = scenario.replications if replications is None else replications
    root = scenario.seed if seed is None else seed
    specs = [s for s in plan_runs(scenario, reps, root, policies, variants) if s.run_id not in set(skip)]
    ex = make_executor(executor, workers) if isinstance(executor, str) else executor
    t0 = time.perf_counter()
    results: dict[str, RunResult] = {}
    interrupted = False
    with tqdm(total=len(specs), desc=scenario.name, unit="run", disable=not progress, file=sys.stderr) as bar:
        fn = execute_run if spill_dir is None else partial(execute_run, spill_dir=str(spill_dir))
        stream = ex.map(fn, specs)
        try:
            for res in stream:
                results[res.run_id] = res
                bar.update(1)
                if res.error:  # counted live; the caller prints each failure once, at the end
                    bar.set_postfix(failed=sum(1 for r in results.values() if r.error), refresh=False)
        except KeyboardInterrupt:  # keep what finished; the executor cancels the rest
            interrupted = True
            close = getattr(stream, "close", None)
            if close is not None:
                close()
    seconds = time.perf_counter() - t0
    # each run's frame is sorted by (round, tenant, measure); concatenating the runs in (policy,
    # variant, replication) order gives the SORT_KEYS order without a second full copy for a sort
    in_order = sorted((s for s in specs if s.run_id in results), key=lambda s: (s.policy, s.variant, s.replication))
    parts = [p for s in in_order for p in results[s.run_id].parts]
    comps = [c for s in in_order if (c := results[s.run_id].completions) is not None]
    completions = pd.concat(comps, ignore_index=True) if comps else None
    frames = [results[s.run_id].frame for s in in_order]
    frames = [f for f in frames if f is not None and len(f)]
    for s in in_order:  # the frames now live only in ``frames`` (freed by the concat below)
        results[s.run_id].frame = None
    if frames:
        frame = pd.concat(frames, ignore_index=True)
        del frames
    else:
        frame = empty_results()
    runs = pd.DataFrame(
        [
            {
                "run_id": s.run_id,
                "policy": s.policy,
                "variant": s.variant,
                "replication": s.replication,
                "seconds": results[s.run_id].seconds if s.run_id in results else float("nan"),
                "rounds": results[s.run_id].rounds if s.run_id in results else 0,
                "resolves": results[s.run_id].resolves if s.run_id in results else 0,
                "error": (results[s.run_id].error or "") if s.run_id in results else "no result",
                "complete": s.run_id in results and not results[s.run_id].error and not results[s.run_id].incomplete,
                "incomplete": results[s.run_id].incomplete if s.run_id in results else "",
                "unfinished_jobs": results[s.run_id].unfinished_jobs if s.run_id in results else 0,
            }
            for s in specs
        ],
        columns=["run_id", "policy", "variant", "replication", "seconds", "rounds", "resolves", "error", "complete",
                 "incomplete", "unfinished_jobs"],  # fmt: skip
    )
    errors = [
        (s.run_id, results[s.run_id].error or "") for s in specs if s.run_id in results and results[s.run_id].error
    ]
    if not interrupted:
        errors += [(s.run_id, "no result returned") for s in specs if s.run_id not in results]
    else:
        runs = runs[runs["run_id"].isin(results)].reset_index(drop=True)
    return Experiment(
        scenario, int(root), int(reps), frame, runs, errors, getattr(ex, "name", "custom"), seconds, interrupted, parts,
        completions,
    )  # fmt: skip


def _stream_parts(parts: Sequence[str], path: Path) -> None:
    """Concatenate the spilled ``parts`` (:func:`write_part`, already in order) into the Parquet file
    ``path`` (:func:`results_schema`), one part in memory at a time, then delete the parts and their
    emptied folders."""
    import pyarrow.parquet as pq

    tmp = path.with_suffix(".parquet.tmp")
    schema = results_schema()
    writer = None
    try:
        for p in parts:
            table = read_part(p)  # strings as dictionaries, cast to the file's strings by Arrow
            if writer is None:
                writer = pq.ParquetWriter(tmp, schema)
            writer.write_table(table.cast(schema))
    finally:
        if writer is not None:
            writer.close()
    run_status.replace_file(tmp, path)
    for p in parts:
        Path(p).unlink(missing_ok=True)
    for folder in {Path(p).parent for p in parts}:
        if folder.exists() and not any(folder.iterdir()):
            folder.rmdir()


#: string columns of a results file, read dictionary-encoded while scanning (a row's strings are decoded
#: only when the row is kept)
DICT_COLUMNS = ("run_id", "scenario", "policy", "variant", "tenant", "measure")
#: rows per record batch of :func:`scan_results` (about 3 MB of decoded columns)
SCAN_ROWS = 65_536


def scan_results(
    path: str | Path,
    filters: Sequence[Sequence[tuple[str, str, Any]]] | None = None,
    columns: Sequence[str] | None = None,
    batch_rows: int = SCAN_ROWS,
) -> Iterator[Any]:
    """The rows of the Parquet results file at ``path`` that match ``filters`` (pyarrow's
    disjunctive normal form, as ``pyarrow.parquet.read_table`` takes it), in file order, as
    ``pyarrow.Table`` pieces of at most ``batch_rows`` rows with the ``columns`` asked for (all by
    default). The file is read one record batch at a time with its string columns
    (:data:`DICT_COLUMNS`) dictionary-encoded, so memory holds one batch plus the rows the caller
    keeps: a filtered ``read_table`` reads many row groups ahead at once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    pf = pq.ParquetFile(path, read_dictionary=[c for c in DICT_COLUMNS if c in names])
    expr = pq.filters_to_expression([list(f) for f in filters]) if filters else None
    want = list(pf.schema_arrow.names if columns is None else columns)
    need = sorted({*want, *(c for conj in (filters or ()) for c, _, _ in conj)}, key=pf.schema_arrow.names.index)
    for batch in pf.iter_batches(batch_size=batch_rows, columns=need):
        t = pa.Table.from_batches([batch])
        if expr is not None:
            t = t.filter(expr)
        if t.num_rows:
            yield t.select(want)


def decoded_frame(tables: Iterable[Any], schema: Any, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """One pandas frame of the ``pyarrow.Table`` pieces ``tables`` (when there are none, an empty frame
    of the pyarrow ``schema``'s ``columns``, all by default), dictionary columns decoded to the plain
    strings a results file holds (pandas ``str``)."""
    import pyarrow as pa

    parts = list(tables)
    empty = schema.empty_table() if columns is None else schema.empty_table().select(list(columns))
    table = pa.concat_tables(parts) if parts else empty
    del parts
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type).cast(pa.large_string()))
    return table.to_pandas()


def load_report_frame(
    path: str | Path,
    deviators: Mapping[str, str] | None = None,
    *,
    trace: bool = False,
    exclude_runs: Collection[str] = (),
) -> pd.DataFrame:
    """The rows of ``results.parquet`` that the report and plots use, scanned batch by batch
    (:func:`scan_results`) so the per-tenant measures they never look at stay on disk.

    Without ``trace`` (rounds of a synthetic workload, whose throughput plot shows every tenant):
    every cluster row (``tenant == ""``), every tenant's ``act``, the ``jct_s`` rows and the deviators'
    ``est`` and ``runnable_jobs`` (when they are active:
    :func:`marketsim.analysis.engine.stats.throughput_while_active`). With ``trace`` (a trace run: the JCT
    plot, the summary and the gain tables): the cluster rows of
    :data:`marketsim.analysis.engine.stats.REPORT_CLUSTER_MEASURES`, the ``jct_s`` rows and the deviators'
    ``act``, ``est`` and ``runnable_jobs``; the other tenants' records (most of the file) are not
    kept. ``exclude_runs``: run ids whose rows are left out (runs stopped by the round cap)."""
    import pyarrow.parquet as pq

    from marketsim.analysis.engine.stats import REPORT_CLUSTER_MEASURES

    devs = sorted(set((deviators or {}).values()))
    filters: list[list[tuple[str, str, Any]]]
    if trace:
        filters = [[("tenant", "=", ""), ("measure", "in", list(REPORT_CLUSTER_MEASURES))], [("measure", "=", "jct_s")]]
        dev_measures = ["act", "est", "runnable_jobs"]
    else:
        filters = [[("tenant", "=", "")], [("measure", "in", ["act", "jct_s"])]]
        dev_measures = ["est", "runnable_jobs"]
    if devs:
        filters.append([("measure", "in", dev_measures), ("tenant", "in", devs)])
    if exclude_runs:
        filters = [[*conj, ("run_id", "not in", sorted(exclude_runs))] for conj in filters]
    return decoded_frame(scan_results(path, filters), pq.read_schema(path))


def write_experiment(exp: Experiment, out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.parquet`` (tidy data), ``runs.csv``, for trace runs ``completions.parquet``
    (one row per finished job: run columns, round, tenant, job_id, job_type, workers, arrival_s,
    completion_s, jct_s), if any run failed ``errors.txt``, and ``meta.json`` last into ``out_dir``
    (created; an earlier run there that this process does not hold is moved aside first:
    :func:`marketsim.analysis.engine.run_status.guard`). Each file is written whole or not at all
    (:func:`~marketsim.analysis.engine.run_status.write_atomic`); under
    :func:`~marketsim.analysis.engine.run_status.claim` meta.json waits for the end of the command
    (:func:`~marketsim.analysis.engine.run_status.write_meta`). Returns the paths by kind."""
    out = Path(out_dir)
    run_status.guard(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("--out", str(out), f"cannot be created ({exc.strerror})") from None
    paths = {"results": out / "results.parquet", "runs": out / "runs.csv", "meta": out / "meta.json"}
    if exp.parts:
        try:  # the parts are deleted only once results.parquet is in place
            _stream_parts(exp.parts, paths["results"])
        except BaseException as exc:
            paths["results"].with_suffix(".parquet.tmp").unlink(missing_ok=True)
            if isinstance(exc, OSError) and not isinstance(exc, run_status.WriteError):
                raise run_status.WriteError(exc.errno or errno.EIO, exc.strerror or str(exc),
                                            str(paths["results"])) from exc  # fmt: skip
            raise
    else:
        run_status.write_atomic(paths["results"], lambda p: exp.frame.to_parquet(p, index=False))
    run_status.write_atomic(paths["runs"], lambda p: exp.runs.to_csv(p, index=False))
    if exp.completions is not None:  # trace runs: per-job JCTs with job ids
        comps = exp.completions
        paths["completions"] = run_status.write_atomic(out / "completions.parquet",
                                                       lambda p: comps.to_parquet(p, index=False))  # fmt: skip
    err = out / "errors.txt"
    if exp.errors:
        text = "".join(f"{rid}: {msg}\n" for rid, msg in exp.errors)
        paths["errors"] = run_status.write_atomic(err, lambda p: p.write_text(text, encoding="utf-8"))
    elif err.exists():
        err.unlink()
    run_status.write_meta(out, exp.meta())  # last: it says what the files above hold
    return paths
