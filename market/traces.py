"""Job traces for trace-driven cluster simulation: parsing and job-type assignment (no Mesa).

Public API (stable; used by :mod:`marketsim.scenarios.loader` and by the studies):

* :class:`Trace`: a columnar job trace (numpy arrays, one entry per job, sorted by arrival).
  ``job_id`` (str), ``job_type`` (str), ``scale`` (GPUs, int >= 1), ``total_steps`` (training
  steps, float > 0), ``arrival_s`` (seconds from the trace start, float >= 0, ascending),
  ``priority`` (Gavel priority weight, float > 0), ``user`` (str; "" when the format has none),
  ``duration_s`` (the trace's run time, s, NaN when the format has none). ``len(trace)`` jobs;
  :meth:`Trace.head` keeps the first ``n`` jobs; :meth:`Trace.throughputs` gives the (N, k) matrix
  of consolidated throughputs (steps/s of the whole job on ``scale`` GPUs of each type).
* :func:`read_gavel_trace` (Gavel's ``.trace`` format), :func:`read_philly_csv` (the Philly
  per-job CSV), :func:`load_trace` (either, plus Philly's job-type assignment).
* :func:`generate_gavel_trace`: a Gavel-style generated workload (Poisson arrivals, job types
  uniform over the table, Gavel's durations) as a :class:`Trace` in memory, seeded.
* :func:`tenant_of_jobs`: tenancy rule ``"job"`` | ``"user"`` | ``N`` -> tenant names per job.
* :func:`data_path` / :data:`GAVEL_THROUGHPUTS`: the reference data shipped in ``market/data``.

**Gavel's format** (as Gavel's simulator writes it, ``scheduler/utils.py:parse_trace``): one job a
line, tab-separated, 10 columns, no header: job_type, command, working_directory, num_steps_arg,
needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time (s). Job ids are the
0-based line indices (Gavel numbers jobs in trace order). Lines must be in arrival order (Gavel
asserts this too).

**The Philly sample** (columns timestamp, duration, num_gpus, gpu_time, cluster): arrival =
seconds since the earliest timestamp (read as a naive wall clock, no time zone or DST; rows
sorted by time, ties keep file order); ``user`` = the
``cluster`` (virtual cluster) id. The trace has no model names, so each job gets a Gavel job type
by this seeded rule (:func:`assign_philly_job_types`):

1. *GPU count -> table scale factor.* A count the table measures (1, 2, 4, 8) is used as is. Any
   other count ``g`` (16 and 32 in the sample) uses the largest measured count ``s < g`` and
   scales that row's throughputs linearly by ``g / s`` (perfect weak scaling beyond the table;
   Gavel's table has no such rows).
2. *Candidates.* The job types with rows at that scale factor whose throughput is > 0 on every
   GPU type of the cluster (so every job can run anywhere) and on the reference type of step 4
   (so no job gets ``total_steps = 0``, e.g. ResNet-50 at batch size 128 on 2+ GPUs with a K80
   reference).
3. *Draw.* One ``u ~ U[0, 1)`` per job, in file order, from
   ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(0x7A11,)))``; the job takes
   candidate ``floor(u * len(candidates))`` of the candidates sorted by name. Same seed, same
   types, whatever the policy.
4. *Work.* ``total_steps = duration * throughput(job type, scale factor, reference)`` with the
   reference GPU type ``"v100"`` by default (Gavel's own convention for generated jobs): the job
   takes exactly its trace duration when it runs alone on V100s.

**Tenancy** (:func:`tenant_of_jobs`): ``"job"`` makes every job its own tenant (Gavel's
semantics, tenant name = the job id); ``"user"`` uses the trace's user (Philly's VC id; Gavel
traces have none); an integer ``N >= 1`` puts job ``i`` into tenant ``t{crc32(job_id) mod N}``
(``zlib.crc32`` of the UTF-8 job id: stable across runs, platforms and Python versions, unlike
``hash``).

Units: seconds, steps, steps per second, GPUs.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, check_finite
from marketsim.market.profiles import ThroughputTable, load_throughput_table

__all__ = [
    "Trace",
    "generate_gavel_trace",
    "GENERATOR_SALT",
    "TRACE_FORMATS",
    "GAVEL_THROUGHPUTS",
    "GAVEL_THROUGHPUTS_UNCONSOLIDATED",
    "unconsolidated_throughputs",
    "GAVEL_TRACE",
    "PHILLY_SAMPLE",
    "PHILLY_SALT",
    "data_path",
    "read_gavel_trace",
    "read_philly_csv",
    "read_generic_csv",
    "GENERIC_COLUMNS",
    "assign_philly_job_types",
    "TraceProfile",
    "trace_profile",
    "load_trace",
    "tenant_of_jobs",
    "scale_row",
    "type_columns",
]

TRACE_FORMATS = ("gavel", "philly", "csv")
#: file names of the data shipped in ``market/data`` (see :func:`data_path`)
GAVEL_THROUGHPUTS = "gavel_throughputs.csv"
#: Gavel's throughputs of multi-GPU jobs whose GPUs are not on one host (same README and licence)
GAVEL_THROUGHPUTS_UNCONSOLIDATED = "gavel_throughputs_unconsolidated.csv"
GAVEL_TRACE = "gavel_trace_seed1.trace"
PHILLY_SAMPLE = "philly_sample.csv"
#: spawn key of the Philly job-type stream (keeps it apart from the scenario's other streams)
PHILLY_SALT = 0x7A11

#: Sanity limits of a trace, checked while it is read or generated, so an absurd value fails at once
#: (exit 2, naming the file, line and column) instead of running forever, losing precision or ending
#: in a MemoryError. Jobs per trace (file lines or generated ``jobs``); arrival times and Philly
#: durations in s (1e9 s = 31.7 years; the packaged traces span 19 and 109 days, and below 1e9 a
#: float keeps sub-microsecond resolution, so ``completion - arrival`` stays exact); ``total_steps``
#: (1e12: the packaged traces need at most 3.2e7 resp. 6e9 steps). README "size limits" lists them.
MAX_TRACE_JOBS = 1_000_000
MAX_TRACE_SECONDS = 1e9
MAX_TOTAL_STEPS = 1e12
#: GPUs one job may ask for (``scale_factor``, ``num_gpus``): the scenario limit on a cluster's GPUs
MAX_JOB_GPUS = 1_000_000
#: range of a job's priority weight (``priority_weight``, ``priority``): weights far apart make the
#: policies' LPs ill-conditioned (1e-308 underflowed in them, 1e308 overflowed)
PRIORITY_RANGE = (1e-6, 1e6)
#: size of a trace file on disk (plain or gzip), checked before it is opened: 1,000,000 jobs of the
#: packaged formats take under 100 MB (the full Philly CSV: 3.4 MB for 117,325 jobs)
MAX_TRACE_BYTES = 256 * 2**20

_GAVEL_COLUMNS = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)


def data_path(name: str) -> Path:
    """Absolute path of a file shipped in ``market/data`` (e.g. :data:`GAVEL_THROUGHPUTS`).

    :param name: the file's name
    :returns: its path
    :raises InputError: no such file is shipped
    """
    p = Path(str(resources.files("marketsim.market.data").joinpath(name)))
    if not p.is_file():
        raise InputError("packaged data file", name, f"is not shipped in market/data ({p} does not exist)")
    return p


@dataclass(frozen=True, eq=False)
class Trace:
    """A job trace, one array entry per job, sorted by ``arrival_s`` (see the module docstring).

    :param job_id: (N,) job ids
    :param job_type: (N,) job types
    :param scale: (N,) GPUs per job, >= 1
    :param total_steps: (N,) training steps, > 0
    :param arrival_s: (N,) seconds from the trace start, ascending
    :param priority: (N,) Gavel priority weights, > 0
    :param user: (N,) users ("" when the format has none)
    :param duration_s: (N,) the trace's run times, s (NaN when the format has none)
    :param source: where it came from
    :param format: ``gavel``, ``philly`` or ``csv``
    :param table_scale: (N,) the throughput-table scale of each job (Philly), or ``None``
    """

    job_id: np.ndarray
    job_type: np.ndarray
    scale: np.ndarray
    total_steps: np.ndarray
    arrival_s: np.ndarray
    priority: np.ndarray
    user: np.ndarray
    duration_s: np.ndarray
    source: str = ""
    format: str = "gavel"
    #: Philly: the throughput scale factor of each job's table row (== ``scale`` unless extrapolated)
    table_scale: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.job_id.size)

    def head(self, n: int) -> Trace:
        """The first ``n`` jobs (by arrival).

        :param n: jobs to keep
        :returns: the shorter trace
        """
        sl = slice(0, int(n))
        ts = None if self.table_scale is None else self.table_scale[sl]
        return replace(
            self,
            job_id=self.job_id[sl],
            job_type=self.job_type[sl],
            scale=self.scale[sl],
            total_steps=self.total_steps[sl],
            arrival_s=self.arrival_s[sl],
            priority=self.priority[sl],
            user=self.user[sl],
            duration_s=self.duration_s[sl],
            table_scale=ts,
        )

    def throughputs(self, table: ThroughputTable, gpu_types: Sequence[str]) -> np.ndarray:
        """(N, k) consolidated throughputs (steps/s of the whole job on ``scale`` GPUs of type j),
        columns in ``gpu_types`` order; 0 = the job cannot run on that type. Counts beyond the
        table use :func:`scale_row`. Raises :class:`InputError` naming the job for an unknown job
        type or a GPU type the table lacks.

        :param table: the throughput table
        :param gpu_types: the cluster's GPU types
        :returns: (N, k) steps/s
        """
        cols = type_columns(table, gpu_types)
        out = np.zeros((len(self), len(cols)))
        cache: dict[tuple[str, int], np.ndarray] = {}
        for i, (jt, s) in enumerate(zip(self.job_type.tolist(), self.scale.tolist(), strict=True)):
            key = (jt, int(s))
            row = cache.get(key)
            if row is None:
                row = scale_row(table, jt, int(s), where=f"{self.source}: job {self.job_id[i]}")[cols]
                cache[key] = row
            out[i] = row
        return out


def type_columns(table: ThroughputTable, gpu_types: Sequence[str]) -> list[int]:
    """The table's column of each name in ``gpu_types``; an absent name is an error naming
    ``cluster.gpu_types``.

    :param table: the throughput table
    :param gpu_types: the GPU types
    :returns: the column indices
    :raises InputError: a type absent from the table
    """
    missing = [g for g in gpu_types if g not in table.gpu_types]
    if missing:
        raise InputError("cluster.gpu_types", list(gpu_types), f"names {missing} absent from {table.source}")
    return [table.gpu_types.index(g) for g in gpu_types]


def order_by_speed(table: ThroughputTable, gpu_types: Sequence[str]) -> tuple[str, ...]:
    """``gpu_types`` ordered slowest first by the throughput table, never by list position: each
    type's score is its mean log throughput over the table's rows (job type, GPU count) that are
    > 0 on every one of ``gpu_types``, so two types compare by the mean log ratio of their
    throughputs on the same rows (Gavel's table: k80 < p100 < v100). Exact ties, and all types
    when no row runs on every type, keep their listed order.

    :param table: the throughput table
    :param gpu_types: the GPU types
    :returns: the types, slowest first
    """
    cols = type_columns(table, gpu_types)
    rows = np.array([r[cols] for r in table.values.values()], dtype=float).reshape(-1, len(cols))
    ok = rows[(rows > 0).all(axis=1)]
    if ok.shape[0] == 0:
        return tuple(gpu_types)
    score = np.log(ok).mean(axis=0)
    return tuple(gpu_types[j] for j in sorted(range(len(cols)), key=lambda j: (float(score[j]), j)))


def scale_row(table: ThroughputTable, job_type: str, gpus: int, where: str = "job") -> np.ndarray:
    """Throughputs (k,) of ``job_type`` on ``gpus`` GPUs in the table's GPU-type order: the table's
    row when it measures that count, else the largest measured count ``s < gpus`` scaled by
    ``gpus / s`` (linear extrapolation, documented in the module docstring).

    :param table: the throughput table
    :param job_type: the job type
    :param gpus: GPUs of the job
    :param where: names the job in messages
    :returns: (k,) steps/s
    :raises InputError: an unknown job type, no measured count <= ``gpus``
    """
    row = table.values.get((job_type, gpus))
    if row is not None:
        return row
    known = table.scale_factors(job_type)
    if not known:
        raise InputError(f"{where} job_type", job_type, f"is not in the throughput table {table.source}")
    below = [s for s in known if s < gpus]
    if not below:
        raise InputError(f"{where} scale_factor", gpus, f"has no row for {job_type!r} (measured: {known})")
    s = max(below)
    return table.values[(job_type, s)] * (gpus / s)


def unconsolidated_throughputs(
    trace: Trace, consolidated: np.ndarray, table: ThroughputTable | None, gpu_types: Sequence[str]
) -> np.ndarray:
    """(N, k) throughputs (steps/s of the whole job) of each job when its ``scale`` GPUs of type j
    span more than one host, columns in ``gpu_types`` order; ``consolidated`` is
    :meth:`Trace.throughputs` of the same jobs and types. ``table`` is an unconsolidated table
    (Gavel's ``gavel_throughputs_unconsolidated.csv``, loaded with ``allow_missing=True``; None =
    no such table). The rule where the table has no entry (``docs/trace_simulation.md``):

    * a 1-GPU job never spans hosts: its consolidated value;
    * a (job type, scale factor) the table measures: the table's row; a count the table does not
      measure: the largest measured count ``s < scale`` scaled by ``scale / s`` (as
      :func:`scale_row` does for the consolidated table);
    * no row (the job type is absent, or no measured count ``<= scale``), a GPU type absent from
      the table, or an entry the table leaves out (NaN: in Gavel's table only ResNet-50 at batch
      sizes 64 and 128 on 2, 4 and 8 K80s): the consolidated value (no penalty; on K80s the
      measured unconsolidated / consolidated ratio has a median of 1.01 to 1.04);
    * 0 wherever the consolidated value is 0 (a job that cannot run on a type cannot run there
      spread either).

    :param trace: the trace
    :param consolidated: (N, k) :meth:`Trace.throughputs`
    :param table: the unconsolidated table, or ``None``
    :param gpu_types: the types
    :returns: (N, k) steps/s
    """
    C = np.asarray(consolidated, dtype=float)
    out = C.copy()
    if table is None:
        return out
    names = list(gpu_types)
    cols = [table.gpu_types.index(g) if g in table.gpu_types else -1 for g in names]
    have = np.array([c >= 0 for c in cols])
    take = [c if c >= 0 else 0 for c in cols]
    cache: dict[tuple[str, int], np.ndarray | None] = {}
    for i, (jt, s) in enumerate(zip(trace.job_type.tolist(), trace.scale.tolist(), strict=True)):
        g = int(s)
        if g <= 1:
            continue
        key = (jt, g)
        if key not in cache:
            row = table.values.get(key)
            if row is None:
                below = [m for m in table.scale_factors(jt) if m < g]
                row = table.values[(jt, max(below))] * (g / max(below)) if below else None
            cache[key] = None if row is None else np.where(have, row[take], np.nan)
        row = cache[key]
        if row is not None:
            out[i] = np.where(np.isnan(row), C[i], row)
    return np.where(C > 0, out, 0.0)


def _int(where: str, text: str) -> int:
    x = check_finite(where, text)
    if not x.is_integer():
        raise InputError(where, text, "must be an integer")
    return int(x)


def _gpus(where: str, text: str) -> int:
    """A job's GPU count: an integer in 1 .. :data:`MAX_JOB_GPUS` (checked before any int64 array)."""
    g = _int(where, text)
    if g < 1:
        raise InputError(where, text, "must be >= 1")
    if g > MAX_JOB_GPUS:
        raise InputError(where, text, f"must be at most {MAX_JOB_GPUS:,} GPUs (size limit)")
    return g


def _priority(where: str, text: str) -> float:
    """A job's priority weight in :data:`PRIORITY_RANGE`."""
    w = check_finite(where, text)
    if w <= 0:
        raise InputError(where, text, "must be > 0")
    lo, hi = PRIORITY_RANGE
    if not lo <= w <= hi:
        raise InputError(where, text, f"must be between {lo:g} and {hi:g} (the policies' LPs need comparable weights)")
    return w


def _check_size(p: Path) -> None:
    """Refuse a trace file over :data:`MAX_TRACE_BYTES` before reading it."""
    size = p.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise InputError("trace", str(p), f"is {size:,} bytes; at most {MAX_TRACE_BYTES:,} (size limit)")


def read_gavel_trace(path: str | Path) -> Trace:
    """Parse a trace in Gavel's format (module docstring). Errors name the file, line and column.

    :param path: the trace file
    :returns: the trace
    :raises InputError: a missing, oversized or malformed file
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("trace", str(p), "does not exist or is not a file")
    _check_size(p)
    types, steps, scale, prio, arr = [], [], [], [], []
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError("trace", str(p), f"is not UTF-8 text ({exc.reason})") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        f = line.split("\t")
        where = f"{p}:{n}"
        if len(f) != len(_GAVEL_COLUMNS):
            raise InputError(where, line[:80], f"must have {len(_GAVEL_COLUMNS)} tab-separated columns, has {len(f)}")
        if not f[0].strip():
            raise InputError(f"{where} column 'job_type'", f[0], "must not be empty")
        t = _int(f"{where} column 'total_steps'", f[5])
        s = _gpus(f"{where} column 'scale_factor'", f[6])
        w = _priority(f"{where} column 'priority_weight'", f[7])
        a = check_finite(f"{where} column 'arrival_time'", f[9])
        if t <= 0:
            raise InputError(f"{where} column 'total_steps'", f[5], "must be > 0")
        if t > MAX_TOTAL_STEPS:
            why = f"must be at most {MAX_TOTAL_STEPS:.0e} (size limit)"
            raise InputError(f"{where} column 'total_steps'", f[5], why)
        if s < 1:
            raise InputError(f"{where} column 'scale_factor'", f[6], "must be >= 1")
        if w <= 0:
            raise InputError(f"{where} column 'priority_weight'", f[7], "must be > 0")
        if a < 0:
            raise InputError(f"{where} column 'arrival_time'", f[9], "must be >= 0")
        if a > MAX_TRACE_SECONDS:
            why = f"must be at most {MAX_TRACE_SECONDS:.0e} s (size limit)"
            raise InputError(f"{where} column 'arrival_time'", f[9], why)
        if arr and a < arr[-1]:
            raise InputError(f"{where} column 'arrival_time'", f[9], f"must not decrease (previous {arr[-1]})")
        if len(types) >= MAX_TRACE_JOBS:
            raise InputError("trace", str(p), f"has more than {MAX_TRACE_JOBS:,} jobs (size limit)")
        types.append(f[0].strip())
        steps.append(t)
        scale.append(s)
        prio.append(w)
        arr.append(a)
    if not types:
        raise InputError("trace", str(p), "has no jobs")
    n = len(types)
    return Trace(
        job_id=np.array([str(i) for i in range(n)]),
        job_type=np.array(types),
        scale=np.array(scale, dtype=np.int64),
        total_steps=np.array(steps, dtype=float),
        arrival_s=np.array(arr, dtype=float),
        priority=np.array(prio, dtype=float),
        user=np.full(n, "", dtype=object).astype(str),
        duration_s=np.full(n, np.nan),
        source=str(p),
        format="gavel",
    )


GZIP_MAGIC = b"\x1f\x8b"


def open_text(p: Path) -> io.TextIOBase:
    """``p`` opened as UTF-8 text for the csv module; a gzip file (recognised by its magic bytes,
    whatever its name) is decompressed on the fly. The caller closes it.

    :param p: the file
    :returns: the open text stream
    """
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic == GZIP_MAGIC:
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", newline="")
    return p.open(newline="", encoding="utf-8")


_PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")


def _philly_fast(p: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The Philly columns of ``p`` parsed vectorised: (timestamps s, durations s, GPUs, clusters),
    or None when anything is unusual (a missing column, a short or blank row, a value that is not
    plainly valid): :func:`read_philly_csv` then reads row by row and names the first problem.
    Accepts exactly what the row-by-row reader accepts, with the same numbers."""
    with open_text(p) as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or any(c not in header for c in _PHILLY_COLUMNS):
            return None
        rows = []
        for r in reader:
            if r:  # blank lines are skipped, as csv.DictReader does
                rows.append(r)
                if len(rows) > MAX_TRACE_JOBS:  # the row-by-row reader names the limit
                    return None
    if not rows or any(len(r) != len(header) for r in rows):
        return None
    cols = list(zip(*rows, strict=True))
    ts_s, d_s, g_s, u_s = (cols[header.index(c)] for c in _PHILLY_COLUMNS)
    if not all("".join(c).isascii() for c in (ts_s, d_s, g_s)):
        return None
    ts_a = np.array(ts_s)
    if (np.char.str_len(ts_a) != 19).any():
        return None
    try:
        stamp = np.char.replace(ts_a, " ", "T", count=1).astype("datetime64[s]")
        d = np.array(d_s, dtype=float)
        g = np.array(g_s, dtype=float)
    except ValueError:
        return None
    if (np.isnat(stamp).any() or not (np.isfinite(d) & (d > 0) & (d <= MAX_TRACE_SECONDS)).all()
            or not (np.isfinite(g) & (g >= 1) & (g <= MAX_JOB_GPUS) & (g == np.floor(g))).all()):  # fmt: skip
        return None
    # strptime and datetime64 agree on a well-formed YYYY-MM-DD HH:MM:SS; check the round trip
    if not (np.datetime_as_string(stamp, unit="s") == np.char.replace(ts_a, " ", "T", count=1)).all():
        return None
    u = np.char.strip(np.array(u_s))
    if (np.char.str_len(u) == 0).any():
        return None
    return stamp.astype(np.int64).astype(float), d, g.astype(np.int64), u


def read_philly_csv(path: str | Path) -> Trace:
    """Parse the Philly per-job CSV (columns timestamp, duration, num_gpus, cluster; gpu_time is
    ignored), plain or gzip-compressed. Job types are left empty and ``total_steps`` NaN: see
    :func:`assign_philly_job_types`. A well-formed file is parsed vectorised; otherwise the rows are
    read one by one and the first bad value is named (file, line, column).

    :param path: the CSV file
    :returns: the trace (job types empty, ``total_steps`` NaN)
    :raises InputError: a missing, oversized or malformed file
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("trace", str(p), "does not exist or is not a file")
    _check_size(p)
    try:
        fast = _philly_fast(p)
        if fast is None:
            fast = _philly_rows(p)
    except UnicodeDecodeError as exc:
        raise InputError("trace", str(p), f"is not UTF-8 text ({exc.reason})") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputError("trace", str(p), f"is not a readable gzip file ({exc})") from None
    except csv.Error as exc:  # e.g. a field over the csv module's 131,072-character limit
        raise InputError("trace", str(p), f"is not a readable CSV file ({exc})") from None
    ts, dur, gpus, users = fast
    order = np.argsort(ts, kind="stable")  # ties keep file order
    t0 = float(ts[order[0]])
    if float(ts[order[-1]]) - t0 > MAX_TRACE_SECONDS:
        why = f"spans {float(ts[order[-1]]) - t0:.3g} s; at most {MAX_TRACE_SECONDS:.0e} s (size limit)"
        raise InputError(f"{p} column 'timestamp'", datetime.fromtimestamp(float(ts[order[-1]]), UTC), why)
    n = int(ts.size)
    return Trace(
        job_id=np.array([str(i) for i in range(n)]),
        job_type=np.full(n, "", dtype=object).astype(str),
        scale=gpus[order].astype(np.int64),
        total_steps=np.full(n, np.nan),
        arrival_s=ts[order] - t0,
        priority=np.ones(n),
        user=np.asarray(users)[order].astype(str),
        duration_s=dur[order].astype(float),
        source=str(p),
        format="philly",
    )


def _philly_rows(p: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Philly columns of ``p`` read row by row, raising :class:`InputError` at the first bad value."""
    rows: list[tuple[float, float, int, str]] = []
    with open_text(p) as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in _PHILLY_COLUMNS if c not in header]
        if missing:
            raise InputError(f"{p}: header", header, f"is missing column(s) {missing}")
        for n, r in enumerate(reader, start=2):
            where = f"{p}:{n}"
            try:
                stamp = datetime.strptime((r["timestamp"] or "").strip(), "%Y-%m-%d %H:%M:%S")
            except ValueError:
                reason = "must be YYYY-MM-DD HH:MM:SS"
                raise InputError(f"{where} column 'timestamp'", r["timestamp"], reason) from None
            ts = stamp.replace(tzinfo=UTC).timestamp()  # wall clock as given: no DST shifts
            d = check_finite(f"{where} column 'duration'", r["duration"] or "")
            g = _gpus(f"{where} column 'num_gpus'", r["num_gpus"] or "")
            if d <= 0:
                raise InputError(f"{where} column 'duration'", r["duration"], "must be > 0")
            if d > MAX_TRACE_SECONDS:
                why = f"must be at most {MAX_TRACE_SECONDS:.0e} s (size limit)"
                raise InputError(f"{where} column 'duration'", r["duration"], why)
            if len(rows) >= MAX_TRACE_JOBS:
                raise InputError("trace", str(p), f"has more than {MAX_TRACE_JOBS:,} jobs (size limit)")
            if g < 1:
                raise InputError(f"{where} column 'num_gpus'", r["num_gpus"], "must be >= 1")
            u = (r["cluster"] or "").strip()
            if not u:
                raise InputError(f"{where} column 'cluster'", r["cluster"], "must not be empty")
            rows.append((ts, d, int(g), u))
    if not rows:
        raise InputError("trace", str(p), "has no jobs")
    return (
        np.array([r[0] for r in rows], dtype=float),
        np.array([r[1] for r in rows], dtype=float),
        np.array([r[2] for r in rows], dtype=np.int64),
        np.array([r[3] for r in rows]),
    )


#: columns of the generic CSV format (:func:`read_generic_csv`): required, then optional
GENERIC_COLUMNS = {
    "arrival_s": "submission time, s from the trace start (>= 0; rows in any order)",
    "num_gpus": "GPUs the job needs (integer >= 1)",
    "duration_s": "run time on the reference GPU type, s (> 0); or give job_type and total_steps",
    "total_steps": "training steps (> 0); needs job_type; instead of duration_s",
    "job_type": "a job type of the throughput table (optional with duration_s: then drawn as for Philly)",
    "tenant": "tenant (user, virtual cluster) of the job, for tenancy = 'user' (optional)",
    "job_id": "unique job id (optional; default: the row's 0-based position in arrival order)",
    "priority": "Gavel priority weight (> 0, optional; default 1)",
}


def read_generic_csv(path: str | Path) -> Trace:
    """Parse a generic per-job CSV (plain or gzip) whose header names its columns
    (:data:`GENERIC_COLUMNS`, any order, extra columns ignored): ``arrival_s`` and ``num_gpus``,
    plus ``duration_s`` or (``job_type`` and ``total_steps``). Rows are sorted by arrival (stable).
    Jobs with a ``duration_s`` and no ``job_type`` get one by :func:`assign_philly_job_types` in
    :func:`load_trace`; with a ``job_type``, ``total_steps`` = duration x its reference throughput.
    Errors name the file, line, column and value; a missing column is named with what it is for.

    :param path: the CSV file
    :returns: the trace
    :raises InputError: a missing, oversized or malformed file
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("trace", str(p), "does not exist or is not a file")
    _check_size(p)
    try:
        with open_text(p) as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in (reader.fieldnames or [])]
            if not header:
                raise InputError("trace", str(p), "is empty (no header line with column names)")
            reader.fieldnames = header
            missing = [c for c in ("arrival_s", "num_gpus") if c not in header]
            has_d, has_s, has_t = "duration_s" in header, "total_steps" in header, "job_type" in header
            if not has_d and not has_s:
                missing.append("duration_s")
            if has_s and not has_t:
                missing.append("job_type")
            if missing:
                need = "; ".join(f"{c}: {GENERIC_COLUMNS[c]}" for c in missing)
                raise InputError(f"{p}: header", header, f"is missing column(s) {missing} ({need})")
            if has_d and has_s:
                raise InputError(f"{p}: header", header, "has both duration_s and total_steps; give one of them")
            has_u, has_id, has_w = "tenant" in header, "job_id" in header, "priority" in header
            arr, gpus, work, types, users, ids, prio = [], [], [], [], [], [], []
            seen: set[str] = set()
            for n, r in enumerate(reader, start=2):
                where = f"{p}:{n}"
                if None in r:
                    raise InputError(where, ",".join(r[None]), f"has more fields than the header's {len(header)}")
                vals = {k: (v or "").strip() for k, v in r.items()}
                a = check_finite(f"{where} column 'arrival_s'", vals["arrival_s"])
                if a < 0:
                    raise InputError(f"{where} column 'arrival_s'", vals["arrival_s"], "must be >= 0")
                if a > MAX_TRACE_SECONDS:
                    why = f"must be at most {MAX_TRACE_SECONDS:.0e} s (size limit)"
                    raise InputError(f"{where} column 'arrival_s'", vals["arrival_s"], why)
                g = _gpus(f"{where} column 'num_gpus'", vals["num_gpus"])
                col = "duration_s" if has_d else "total_steps"
                x = check_finite(f"{where} column '{col}'", vals[col])
                if x <= 0:
                    raise InputError(f"{where} column '{col}'", vals[col], "must be > 0")
                limit = MAX_TRACE_SECONDS if has_d else MAX_TOTAL_STEPS
                if x > limit:
                    raise InputError(f"{where} column '{col}'", vals[col], f"must be at most {limit:.0e} (size limit)")
                if has_t and not vals["job_type"]:
                    raise InputError(f"{where} column 'job_type'", r["job_type"], "must not be empty")
                w = 1.0
                if has_w and vals["priority"]:
                    w = _priority(f"{where} column 'priority'", vals["priority"])
                jid = vals["job_id"] if has_id else ""
                if has_id:
                    if not jid:
                        raise InputError(f"{where} column 'job_id'", r["job_id"], "must not be empty")
                    if jid in seen:
                        raise InputError(f"{where} column 'job_id'", jid, "repeats an earlier job's id")
                    seen.add(jid)
                if len(arr) >= MAX_TRACE_JOBS:
                    raise InputError("trace", str(p), f"has more than {MAX_TRACE_JOBS:,} jobs (size limit)")
                arr.append(a)
                gpus.append(g)
                work.append(x)
                types.append(vals["job_type"] if has_t else "")
                users.append(vals["tenant"] if has_u else "")
                ids.append(jid)
                prio.append(w)
    except UnicodeDecodeError as exc:
        raise InputError("trace", str(p), f"is not UTF-8 text ({exc.reason})") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputError("trace", str(p), f"is not a readable gzip file ({exc})") from None
    except csv.Error as exc:
        raise InputError("trace", str(p), f"is not a readable CSV file ({exc})") from None
    if not arr:
        raise InputError("trace", str(p), "has no jobs (a header but no rows)")
    order = np.argsort(np.asarray(arr), kind="stable")
    n = len(arr)
    work_a = np.asarray(work, dtype=float)[order]
    return Trace(
        job_id=np.array([ids[i] if has_id else str(k) for k, i in enumerate(order.tolist())]),
        job_type=np.array([types[i] for i in order.tolist()], dtype=object).astype(str),
        scale=np.asarray(gpus, dtype=np.int64)[order],
        total_steps=work_a if not has_d else np.full(n, np.nan),
        arrival_s=np.asarray(arr, dtype=float)[order],
        priority=np.asarray(prio, dtype=float)[order],
        user=np.array([users[i] for i in order.tolist()], dtype=object).astype(str),
        duration_s=work_a if has_d else np.full(n, np.nan),
        source=str(p),
        format="csv",
    )


def assign_philly_job_types(
    trace: Trace, table: ThroughputTable, gpu_types: Sequence[str], seed: int, reference: str = "v100"
) -> Trace:
    """Give every Philly job a Gavel job type and ``total_steps`` by the seeded rule of the module
    docstring (steps = duration x throughput on ``reference`` GPUs at the job's GPU count).

    :param trace: a trace without job types (Philly, or a generic CSV)
    :param table: the throughput table
    :param gpu_types: the cluster's GPU type names, in column order
    :param seed: the seed of the assignment
    :param reference: the GPU type durations are measured on
    :returns: the trace with job types and ``total_steps``
    :raises InputError: ``reference`` is not a GPU type of the table, or a job's GPU count has no usable row
    """
    if reference not in table.gpu_types:
        raise InputError("workload.duration_reference", reference, f"must be one of {list(table.gpu_types)}")
    cols = type_columns(table, gpu_types)
    ref = table.gpu_types.index(reference)
    measured = sorted({s for _, s in table.values})
    cand: dict[int, tuple[int, list[str]]] = {}
    for g in sorted(set(trace.scale.tolist())):
        s = g if g in measured else max((x for x in measured if x < g), default=0)
        if s == 0:
            raise InputError(f"{trace.source}: num_gpus", g, f"is below every measured scale factor {measured}")
        # runnable on every cluster type, and > 0 on the reference (else total_steps would be 0)
        names = sorted(
            jt for (jt, sf), row in table.values.items() if sf == s and bool(np.all(row[cols] > 0)) and row[ref] > 0
        )
        if not names:
            reason = f"has no job type runnable on every GPU type {list(gpu_types)} and on the reference {reference!r}"
            raise InputError(f"{trace.source}: num_gpus", g, reason)
        cand[g] = (s, names)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(PHILLY_SALT,)))
    u = rng.random(len(trace))
    types: list[str] = []
    steps = np.empty(len(trace))
    tscale = np.empty(len(trace), dtype=np.int64)
    for i, g in enumerate(trace.scale.tolist()):
        s, names = cand[g]
        jt = names[int(u[i] * len(names))]
        types.append(jt)
        tscale[i] = s
        steps[i] = float(trace.duration_s[i]) * float(table.values[(jt, s)][ref]) * (g / s)
    return replace(trace, job_type=np.array(types), total_steps=steps, table_scale=tscale)


def _steps_from_durations(trace: Trace, table: ThroughputTable, reference: str) -> Trace:
    """``total_steps = duration x`` the ``reference`` throughput of each job's own job type at its
    GPU count (:func:`scale_row`); a job that cannot run on the reference is an error naming it."""
    if reference not in table.gpu_types:
        raise InputError("workload.duration_reference", reference, f"must be one of {list(table.gpu_types)}")
    ref = table.gpu_types.index(reference)
    steps = np.empty(len(trace))
    tscale = np.empty(len(trace), dtype=np.int64)
    for i, (jt, g) in enumerate(zip(trace.job_type.tolist(), trace.scale.tolist(), strict=True)):
        where = f"{trace.source}: job {trace.job_id[i]}"
        row = scale_row(table, jt, int(g), where=where)
        if not row[ref] > 0:
            why = f"cannot run on the reference {reference!r} (throughput 0), so duration_s gives no steps"
            raise InputError(f"{where} job_type", jt, why)
        steps[i] = float(trace.duration_s[i]) * float(row[ref])
        tscale[i] = g if (jt, int(g)) in table.values else max(x for x in table.scale_factors(jt) if x < g)
    return replace(trace, total_steps=steps, table_scale=tscale)


def load_trace(
    path: str | Path,
    fmt: str,
    table: ThroughputTable | None = None,
    gpu_types: Sequence[str] = ("k80", "p100", "v100"),
    seed: int = 0,
    reference: str = "v100",
) -> Trace:
    """Read a trace of format ``fmt`` ("gavel" | "philly" | "csv"); a Philly trace, and a generic
    CSV without job types, gets its job types and steps from ``table`` (default: the packaged Gavel
    table) by :func:`assign_philly_job_types`; a generic CSV with job types and durations gets
    ``total_steps = duration x`` the reference throughput of its job type at its GPU count.

    :param path: the trace file (Philly and generic CSV may be gzip-compressed)
    :param fmt: ``"gavel"``, ``"philly"`` or ``"csv"``
    :param table: the throughput table for job types and steps; ``None``: the packaged Gavel table
    :param gpu_types: the cluster's GPU type names, in column order
    :param seed: the seed of the job-type assignment (Philly, CSV without job types)
    :param reference: the GPU type durations are measured on
    :returns: the trace, sorted by arrival
    :raises InputError: an unknown format, a missing or malformed file (naming file, line and column)
    """
    if fmt not in TRACE_FORMATS:
        raise InputError("workload.trace_format", fmt, f"must be one of {list(TRACE_FORMATS)}")
    if fmt == "gavel":
        return read_gavel_trace(path)
    table = table if table is not None else load_throughput_table(data_path(GAVEL_THROUGHPUTS))
    raw = read_philly_csv(path) if fmt == "philly" else read_generic_csv(path)
    if fmt == "csv" and not np.isnan(raw.total_steps).all():  # job_type and total_steps given
        tr = raw
        for i, jt in enumerate(tr.job_type.tolist()):  # every job type must be in the table
            scale_row(table, jt, int(tr.scale[i]), where=f"{tr.source}: job {tr.job_id[i]}")
        return tr
    if fmt == "csv" and (raw.job_type != "").all():  # job_type and duration_s given
        tr = _steps_from_durations(raw, table, reference)
    else:
        tr = assign_philly_job_types(raw, table, gpu_types, seed, reference)
    big = np.flatnonzero(tr.total_steps > MAX_TOTAL_STEPS)
    if big.size:
        i = int(big[0])
        why = f"gives total_steps {tr.total_steps[i]:.3g} > {MAX_TOTAL_STEPS:.0e} (size limit)"
        raise InputError(f"{tr.source}: job {tr.job_id[i]} duration", float(tr.duration_s[i]), why)
    return tr


@dataclass(frozen=True)
class TraceProfile:
    """What a trace asks of a cluster (:func:`trace_profile`; printed by ``marketsim run --check``).

    ``jobs``; ``span_s`` from the first to the last arrival (s); ``tenants`` name -> jobs (under the
    scenario's tenancy), largest first; ``sizes`` GPUs per job -> jobs, ascending; ``demand_gpu_s``
    the GPU-seconds the jobs need when each runs on its fastest GPU type of the cluster
    (``scale x total_steps / max_t T[j, t]``); ``gpus`` per type of the cluster; ``speed`` per type:
    the demand-weighted mean of ``T[j, t] / max_t T[j, t]`` (1 = every job's fastest type);
    ``offered_load`` = demand / (all GPUs x span); ``effective_load`` = demand / (span x sum_t
    gpus_t x speed_t): the load on the cluster's capacity counted in fastest-type GPUs (above 1: the
    jobs arrive faster than the cluster can run them, on average over the span); duration
    quantiles (s, on the fastest type); ``largest_job`` GPUs against ``largest_type`` GPUs.

    :param jobs: jobs
    :param span_s: first to last arrival, s
    :param tenants: tenant -> jobs
    :param sizes: GPUs per job -> jobs
    :param demand_gpu_s: GPU-seconds on each job's fastest type
    :param gpu_types: the cluster's types
    :param gpus: GPUs per type
    :param speed: demand-weighted relative speed per type
    :param offered_load: demand / (GPUs × span)
    :param effective_load: demand / (span × Σ gpus × speed)
    :param duration_median_s: median duration on the fastest type, s
    :param duration_p99_s: 99th percentile, s
    :param duration_max_s: longest, s
    :param largest_job: GPUs of the largest job
    :param largest_type: GPUs of the largest type
    """

    jobs: int
    span_s: float
    tenants: dict[str, int]
    sizes: dict[int, int]
    demand_gpu_s: float
    gpu_types: tuple[str, ...]
    gpus: tuple[int, ...]
    speed: tuple[float, ...]
    offered_load: float
    effective_load: float
    duration_median_s: float
    duration_p99_s: float
    duration_max_s: float
    largest_job: int
    largest_type: int

    def lines(self, per_job: bool = False) -> list[str]:
        """Human-readable summary, one fact a line (hours and days); ``per_job``: every job is its
        own tenant (tenancy "job"), so the tenants are not listed.

        :param per_job: tenancy ``job`` (tenants not listed)
        :returns: the lines
        """
        d = 86400.0
        ten = ", ".join(f"{k} {v:,}" for k, v in list(self.tenants.items())[:20])
        more = f", ... ({len(self.tenants) - 20:,} more)" if len(self.tenants) > 20 else ""
        if per_job:
            ten, more = "one per job", ""
        sizes = ", ".join(f"{g} GPU{'s' if g > 1 else ''}: {n:,}" for g, n in self.sizes.items())
        cl = " + ".join(f"{m} {t}" for t, m in zip(self.gpu_types, self.gpus, strict=True))
        spd = ", ".join(f"{t} {v:.2f}" for t, v in zip(self.gpu_types, self.speed, strict=True))
        return [
            f"jobs: {self.jobs:,}",
            f"arrival span: {self.span_s / d:.2f} days ({self.span_s:,.0f} s)",
            f"tenants: {len(self.tenants):,} ({ten}{more})",
            f"job sizes: {sizes}",
            f"duration on the job's fastest type: median {self.duration_median_s / 3600:.2f} h, "
            f"p99 {self.duration_p99_s / 3600:.1f} h, max {self.duration_max_s / d:.1f} days",
            f"demand: {self.demand_gpu_s / 3600:,.0f} GPU-hours on each job's fastest type",
            f"cluster: {cl} = {sum(self.gpus)} GPUs; relative speed (demand-weighted): {spd}",
            f"offered load: {self.offered_load:.1%} of the cluster's GPU-time over the arrival span; "
            f"{self.effective_load:.1%} of its capacity in fastest-type GPUs",
            f"largest job: {self.largest_job} GPU{'s' if self.largest_job > 1 else ''} "
            f"(largest GPU type: {self.largest_type} GPUs)",
        ]


def trace_profile(
    trace: Trace, throughputs: np.ndarray, gpus: Sequence[int], gpu_types: Sequence[str], tenants: np.ndarray
) -> TraceProfile:
    """The :class:`TraceProfile` of ``trace`` on a cluster of ``gpus`` per type (``gpu_types``
    order, the columns of ``throughputs``: steps/s of each whole job, 0 = cannot run there) with
    ``tenants`` the tenant of each job (:func:`tenant_of_jobs`).

    :param trace: the trace
    :param throughputs: (N, k) steps/s of each job per type
    :param gpus: GPUs per type
    :param gpu_types: the types
    :param tenants: (N,) tenant of each job
    :returns: the profile
    :raises InputError: a job that runs on no GPU type
    """
    T = np.asarray(throughputs, dtype=float)
    m = np.asarray(gpus, dtype=float)
    best = T.max(axis=1)
    if not (best > 0).all():
        i = int(np.argmin(best > 0))
        raise InputError(f"{trace.source}: job {trace.job_id[i]}", str(trace.job_type[i]), "runs on no GPU type")
    dur = trace.total_steps / best  # s on the job's fastest type
    gpu_s = trace.scale * dur
    demand = float(gpu_s.sum())
    speed = (gpu_s[:, None] * (T / best[:, None])).sum(axis=0) / demand
    span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if len(trace) else 0.0
    names, counts = np.unique(np.asarray(tenants).astype(str), return_counts=True)
    order = sorted(range(names.size), key=lambda i: (-int(counts[i]), str(names[i])))
    sz, sc = np.unique(trace.scale, return_counts=True)
    span_safe = span if span > 0 else float("nan")
    return TraceProfile(
        jobs=len(trace),
        span_s=span,
        tenants={str(names[i]): int(counts[i]) for i in order},
        sizes={int(a): int(b) for a, b in zip(sz, sc, strict=True)},
        demand_gpu_s=demand,
        gpu_types=tuple(gpu_types),
        gpus=tuple(int(x) for x in m),
        speed=tuple(float(x) for x in speed),
        offered_load=demand / (float(m.sum()) * span_safe),
        effective_load=demand / (span_safe * float((m * speed).sum())),
        duration_median_s=float(np.median(dur)),
        duration_p99_s=float(np.quantile(dur, 0.99)),
        duration_max_s=float(dur.max()),
        largest_job=int(trace.scale.max()),
        largest_type=int(m.max()),
    )


#: spawn key of the generator's random stream (``SeedSequence(seed, spawn_key=(GENERATOR_SALT,))``)
GENERATOR_SALT = 0x6A7E


def generate_gavel_trace(
    table: ThroughputTable,
    gpu_types: Sequence[str],
    jobs: int,
    jobs_per_hour: float,
    seed: int,
    reference: str = "v100",
) -> Trace:
    """A workload drawn the way Gavel's simulator draws one (``scheduler/utils.py``:
    ``generate_job``, ``_generate_duration``; semantics read, nothing copied), single-GPU jobs:

    * arrivals: a Poisson process of rate ``jobs_per_hour``: exponential gaps of mean
      ``3600 / jobs_per_hour`` s, the first job at t = 0;
    * job type: uniform over the table's job types with a 1-GPU row > 0 on every GPU type of
      ``gpu_types`` (so every policy accepts every job), sorted by name;
    * duration: ``60 * 10^U(1.5, 3)`` s with probability 0.8, else ``60 * 10^U(3, 4)`` s, the run
      time on ``reference`` (Gavel's ``reference_worker_type = 'v100'``); ``total_steps`` = duration
      x the job's throughput there.

    Draws (numpy, ``SeedSequence(seed, spawn_key=(GENERATOR_SALT,))``), each a vector over the jobs
    in this order: gaps, job types, the short/long coin, the short exponents, the long exponents.
    Same arguments, same trace. Job ids ``"0", "1", ...`` in arrival order; priority 1; no users.

    :param table: the throughput table
    :param gpu_types: the cluster's GPU type names, in column order
    :param jobs: the number of jobs
    :param jobs_per_hour: the arrival rate, > 0
    :param seed: the seed of every draw
    :param reference: the GPU type the durations are run times on
    :returns: the trace
    :raises InputError: a bad job count or rate, an unknown reference, or no job type runs on every GPU type
    """
    n = int(jobs)
    if n < 1:
        raise InputError("workload.jobs", jobs, "must be an integer >= 1")
    if n > MAX_TRACE_JOBS:
        raise InputError("workload.jobs", jobs, f"must be at most {MAX_TRACE_JOBS:,} (size limit)")
    rate = float(jobs_per_hour)
    if not math.isfinite(rate) or rate <= 0:
        raise InputError("workload.jobs_per_hour", jobs_per_hour, "must be a finite number > 0")
    if reference not in table.gpu_types:
        raise InputError("workload.duration_reference", reference, f"must be one of {list(table.gpu_types)}")
    cols = type_columns(table, gpu_types)
    ref = table.gpu_types.index(reference)
    names = sorted(jt for jt in table.job_types if (row := table.values.get((jt, 1))) is not None
                   and (row[cols] > 0).all() and row[ref] > 0)  # fmt: skip
    if not names:
        raise InputError(f"throughput table {table.source}", list(gpu_types),
                         "has no job type with a 1-GPU row > 0 on every GPU type")  # fmt: skip
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(GENERATOR_SALT,)))
    gaps = rng.exponential(3600.0 / rate, n)
    pick = rng.integers(0, len(names), n)
    short = rng.random(n) < 0.8
    exps = np.where(short, rng.uniform(1.5, 3.0, n), rng.uniform(3.0, 4.0, n))
    arrival = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    if not arrival[-1] <= MAX_TRACE_SECONDS:
        why = f"gives arrivals up to {arrival[-1]:.3g} s for {n:,} jobs; at most {MAX_TRACE_SECONDS:.0e} s (size limit)"
        raise InputError("workload.jobs_per_hour", jobs_per_hour, why)
    duration = 60.0 * 10.0**exps
    job_type = np.array([names[int(i)] for i in pick], dtype=object).astype(str)
    ref_tput = np.array([table.values[(names[int(i)], 1)][ref] for i in pick])
    return Trace(
        job_id=np.arange(n).astype(str),
        job_type=job_type,
        scale=np.ones(n, dtype=np.int64),
        total_steps=duration * ref_tput,
        arrival_s=arrival,
        priority=np.ones(n),
        user=np.full(n, "", dtype=object).astype(str),
        duration_s=duration,
        source=f"gavel-generator(jobs={n}, jobs_per_hour={rate:g}, seed={int(seed)})",
        format="gavel",
    )


def tenant_of_jobs(trace: Trace, tenancy: str | int) -> np.ndarray:
    """Tenant name per job (str array) under ``tenancy`` (module docstring).

    :param trace: the trace
    :param tenancy: ``"job"``, ``"user"`` or a number of tenants >= 1 (jobs hashed to them)
    :returns: (N,) tenant names
    :raises InputError: ``"user"`` on a trace without users, or a bad tenancy
    """
    if not isinstance(tenancy, str | int):
        return _tenant_of_jobs(trace, tenancy)  # names the bad value
    key = (type(tenancy), tenancy)
    memo = _TENANTS_OF.setdefault(trace, {})
    if key not in memo:  # a trace is frozen: its tenants under a tenancy never change
        memo[key] = _tenant_of_jobs(trace, tenancy)
    return memo[key].copy()


#: per trace (weakly held: a trace gone, its entry goes) and tenancy, the tenants of its jobs: a run's
#: model, its scenario checks and its report ask for them several times
_TENANTS_OF: weakref.WeakKeyDictionary[Trace, dict[Any, np.ndarray]] = weakref.WeakKeyDictionary()


def _tenant_of_jobs(trace: Trace, tenancy: str | int) -> np.ndarray:
    if tenancy == "job":
        return trace.job_id.astype(str)
    if tenancy == "user":
        if trace.format != "philly" and not np.any(trace.user != ""):
            raise InputError("workload.tenancy", "user", f"needs a trace with users; {trace.format} traces have none")
        return trace.user.astype(str)
    if isinstance(tenancy, bool) or not isinstance(tenancy, int) or tenancy < 1:
        raise InputError("workload.tenancy", tenancy, "must be 'job', 'user' or an integer >= 1")
    width = len(str(tenancy - 1))
    return np.array([f"t{zlib.crc32(j.encode('utf-8')) % tenancy:0{width}d}" for j in trace.job_id.tolist()])
