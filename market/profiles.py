"""Speedup profiles: an explicit loader for measured throughput tables, and seeded generators.

A *speedup vector* of a job type lists, per GPU type (slowest type first), the job's throughput on
one GPU of that type divided by a reference throughput. It is dimensionless.

* :func:`load_throughput_table` reads a CSV in the layout of Gavel's ``gavel_throughputs.csv``
  (columns ``job_type, gpu_type, num_gpus, throughput_steps_per_s``) and validates every row;
  errors name the file, the line and the column.
* :func:`speedup_vectors` turns the table into speedup vectors following the table's README:
  fix ``num_gpus`` (default 1), divide by the slowest type that can run the job (``reference=
  "slowest"``) or by one named GPU type; an infeasible entry (throughput 0) gives speedup 0.
* :data:`OEF_ASSUMED_SPEEDUPS` is the six-model table assumed by the OEF spec (§5.2) over
  (RTX3070, RTX3080, RTX3090); :func:`jittered_profile` applies its per-tenant jitter and
  :func:`ordered_random_speedups` is the spec's random (optionally ordered) generator.

All randomness comes from an explicit ``numpy.random.Generator`` argument.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from marketsim.market.errors import InputError, check_int, check_nonneg, check_positive

__all__ = [
    "ThroughputTable",
    "load_throughput_table",
    "speedup_vectors",
    "feasible",
    "OEF_TESTBED_TYPES",
    "OEF_ASSUMED_SPEEDUPS",
    "jittered_profile",
    "ordered_random_speedups",
]

REQUIRED_COLUMNS = ("job_type", "gpu_type", "num_gpus", "throughput_steps_per_s")

#: GPU types of the OEF testbed, slowest first (spec §5.1).
OEF_TESTBED_TYPES: tuple[str, ...] = ("RTX3070", "RTX3080", "RTX3090")

#: Speedups over (RTX3070, RTX3080, RTX3090) assumed by the OEF spec §5.2 (``assumed=True``):
#: only VGG 1.39 and LSTM 2.15 on the 3090 come from the paper (Fig. 1(a)).
OEF_ASSUMED_SPEEDUPS: Mapping[str, tuple[float, float, float]] = {
    "VGG": (1.0, 1.22, 1.39),
    "ResNet": (1.0, 1.30, 1.55),
    "DenseNet": (1.0, 1.28, 1.50),
    "LSTM": (1.0, 1.70, 2.15),
    "RNN": (1.0, 1.50, 1.85),
    "Transformer": (1.0, 1.55, 1.95),
}


@dataclass(frozen=True)
class ThroughputTable:
    """Measured throughputs: ``values[(job_type, num_gpus)]`` is a (k,) float array over
    ``gpu_types`` (column order, slowest first when given so); 0 marks an infeasible entry.
    Units are the file's (Gavel: training steps per second). ``source`` is the file path.

    :param source: the file it was read from
    :param gpu_types: the GPU type names, in column order
    :param values: ``(job_type, num_gpus)`` -> (k,) throughputs (0: infeasible, NaN: not measured)
    """

    source: str
    gpu_types: tuple[str, ...]
    values: Mapping[tuple[str, int], np.ndarray]

    @property
    def job_types(self) -> list[str]:
        """Distinct job types, sorted."""
        return sorted({jt for jt, _ in self.values})

    def scale_factors(self, job_type: str) -> list[int]:
        """The ``num_gpus`` values recorded for ``job_type``, ascending.

        :param job_type: a job type of the table
        :returns: its GPU counts, ascending (empty for an unknown job type)
        """
        return sorted(n for jt, n in self.values if jt == job_type)


def load_throughput_table(
    path: str | Path, gpu_types: Sequence[str] | None = None, *, allow_missing: bool = False
) -> ThroughputTable:
    """Read and validate a throughput CSV (columns :data:`REQUIRED_COLUMNS`; extra columns ignored).

    ``gpu_types`` fixes the column order (slowest first); by default the order in which the GPU
    types first appear in the file. Every ``(job_type, num_gpus)`` pair must have exactly one row
    per GPU type, unless ``allow_missing`` (then an absent GPU type is NaN: "not measured", e.g.
    Gavel's unconsolidated table). Throughputs must be finite and >= 0 (0 = infeasible). Raises
    :class:`InputError` naming the file, line and column of the first problem.

    :param path: the CSV file
    :param gpu_types: the column order, slowest first; ``None``: the order of first appearance
    :param allow_missing: accept (job type, GPU count) pairs without a row for some GPU type (NaN)
    :returns: the validated table
    :raises InputError: a missing file or column, a bad field, a duplicate or missing row
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("throughput table", str(p), "does not exist or is not a file")
    where = str(p)
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in REQUIRED_COLUMNS if c not in header]
            if missing:
                raise InputError(f"{where}: header", header, f"is missing column(s) {missing}")
            raw: dict[tuple[str, int], dict[str, float]] = {}
            order: list[str] = []
            n_rows = 0
            for line_no, row in enumerate(reader, start=2):
                n_rows += 1
                if None in row or any(row.get(c) is None for c in REQUIRED_COLUMNS):
                    raise InputError(f"{where}:{line_no}", row, f"must have {len(header)} fields like the header")
                job = row["job_type"].strip()
                gpu = row["gpu_type"].strip()
                if not job:
                    raise InputError(f"{where}:{line_no} column 'job_type'", row["job_type"], "must not be empty")
                if not gpu:
                    raise InputError(f"{where}:{line_no} column 'gpu_type'", row["gpu_type"], "must not be empty")
                n = check_int(f"{where}:{line_no} column 'num_gpus'", row["num_gpus"].strip(), minimum=1)
                thr = check_nonneg(
                    f"{where}:{line_no} column 'throughput_steps_per_s'", row["throughput_steps_per_s"].strip()
                )
                cell = raw.setdefault((job, n), {})
                if gpu in cell:
                    raise InputError(
                        f"{where}:{line_no}",
                        f"{job}, {gpu}, {n}",
                        "duplicates an earlier (job_type, gpu_type, num_gpus)",
                    )
                cell[gpu] = thr
                if gpu not in order:
                    order.append(gpu)
    except UnicodeDecodeError as exc:
        raise InputError("throughput table", where, f"is not UTF-8 text ({exc.reason})") from None
    if n_rows == 0:
        raise InputError("throughput table", where, "has no data rows")
    if gpu_types is None:
        types = tuple(order)
    else:
        types = tuple(gpu_types)
        if len(set(types)) != len(types) or not types:
            raise InputError("gpu_types", list(types), "must be a non-empty list of distinct names")
        unknown = [g for g in order if g not in types]
        if unknown:
            raise InputError(f"{where} column 'gpu_type'", unknown, f"not in the requested gpu_types {list(types)}")
    values: dict[tuple[str, int], np.ndarray] = {}
    for key, cell in raw.items():
        absent = [g for g in types if g not in cell]
        if absent and not allow_missing:
            raise InputError(
                f"{where}: job_type {key[0]!r} num_gpus {key[1]}", sorted(cell), f"has no row for {absent}"
            )
        values[key] = np.array([cell.get(g, math.nan) for g in types], dtype=float)
    return ThroughputTable(where, types, values)


def speedup_vectors(
    table: ThroughputTable,
    num_gpus: int = 1,
    reference: str = "slowest",
    job_types: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Speedup vector per job type for the rows with ``num_gpus`` GPUs (README rules).

    ``reference="slowest"``: divide by the smallest positive throughput of the job, so the slowest
    feasible type gets 1.0. ``reference=<gpu type>``: divide by that type's throughput (jobs that
    cannot run on it raise). Infeasible entries (0) stay 0: such a job cannot run on that type;
    use :func:`feasible` to filter before handing vectors to a mechanism (which requires > 0).
    ``job_types`` restricts (and orders) the output; default all job types with such rows, sorted.

    :param table: the throughput table
    :param num_gpus: the GPU count whose rows to use, >= 1
    :param reference: ``"slowest"`` or a GPU type name to divide by
    :param job_types: the job types to return, in order; ``None``: all with such rows
    :returns: job type -> (k,) speedups (1.0 at the reference, 0 where infeasible)
    :raises InputError: an unknown reference or job type, a job infeasible everywhere or on the reference
    """
    check_int("num_gpus", num_gpus, minimum=1)
    if reference != "slowest" and reference not in table.gpu_types:
        raise InputError("reference", reference, f"must be 'slowest' or one of {list(table.gpu_types)}")
    names = (
        list(job_types) if job_types is not None else [jt for jt in table.job_types if (jt, num_gpus) in table.values]
    )
    out: dict[str, np.ndarray] = {}
    for jt in names:
        row = table.values.get((jt, num_gpus))
        if row is None:
            known = table.scale_factors(jt)
            reason = f"has no rows with num_gpus={num_gpus}" + (f" (has {known})" if known else " (unknown job type)")
            raise InputError(f"{table.source}: job_type", jt, reason)
        pos = row[row > 0]
        if pos.size == 0:
            raise InputError(
                f"{table.source}: job_type {jt!r} num_gpus {num_gpus}", row, "is infeasible on every GPU type"
            )
        if reference == "slowest":
            base = float(pos.min())
        else:
            base = float(row[table.gpu_types.index(reference)])
            if base <= 0:
                raise InputError(
                    f"{table.source}: job_type {jt!r} num_gpus {num_gpus}",
                    reference,
                    "cannot be the reference: the job cannot run on it (throughput 0)",
                )
        out[jt] = row / base
    return out


def feasible(vectors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The vectors whose every entry is > 0 (the job can run on every GPU type).

    :param vectors: job type -> speedup vector
    :returns: the same mapping without the vectors holding a 0
    """
    return {jt: v for jt, v in vectors.items() if bool(np.all(np.asarray(v) > 0))}


def jittered_profile(
    base: Sequence[float],
    rng: np.random.Generator,
    jitter: float = 0.03,
) -> np.ndarray:
    """One tenant's speedup vector from a base vector (spec §5.2).

    Multiplies every entry ``j >= 1`` by an independent ``U(1 - jitter, 1 + jitter)`` factor, then
    takes the cumulative maximum (monotone) and keeps ``w[0] = 1`` (the base is first divided by
    its ``w[0]``). ``jitter = 0`` returns the normalised base.

    :param base: (k,) the base speedups, each > 0, slowest type first
    :param rng: the random generator
    :param jitter: the half-width of the multiplicative noise, in [0, 1)
    :returns: (k,) non-decreasing speedups with ``w[0] = 1``
    :raises InputError: an empty or non-positive base, or a jitter outside [0, 1)
    """
    w = np.asarray(base, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise InputError("base speedups", base, "must be a non-empty vector")
    check_positive("base speedups[0]", w[0])
    for j, v in enumerate(w):
        check_positive(f"base speedups[{j}]", v)
    check_nonneg("jitter", jitter)
    if jitter >= 1:
        raise InputError("jitter", jitter, "must be < 1")
    w = w / w[0]
    if w.size > 1:
        w[1:] = w[1:] * rng.uniform(1.0 - jitter, 1.0 + jitter, size=w.size - 1)
    w = np.maximum.accumulate(w)
    w[0] = 1.0
    return w


def ordered_random_speedups(
    n: int,
    k: int,
    rng: np.random.Generator,
    step: tuple[float, float] = (1.0, 1.6),
    ordered: bool = False,
) -> np.ndarray:
    """Random (n, k) speedup matrix of spec §5.2: ``w^0 = 1``, ``w^{j+1} = w^j · U(step)``.

    ``ordered=True`` sorts each step column's log ratio ascending over rows, so every step ratio
    is non-decreasing in the row index and row 0 is element-wise slowest (the structure assumed by
    Theorem 5.2 / Lemma 3.1).

    :param n: rows (tenants), >= 1
    :param k: GPU types, >= 1
    :param rng: the random generator
    :param step: ``(low, high)`` bounds of the uniform ratio between adjacent types, ``0 < low <= high``
    :param ordered: sort the step ratios over rows (row 0 slowest)
    :returns: (n, k) speedups with column 0 = 1
    :raises InputError: a bad size or step range
    """
    check_int("n", n, minimum=1)
    check_int("k", k, minimum=1)
    lo, hi = step
    check_positive("step[0]", lo)
    if not (math.isfinite(hi) and hi >= lo):
        raise InputError("step", step, "must be (low, high) with 0 < low <= high")
    logs = np.log(rng.uniform(lo, hi, size=(n, k - 1)))
    if ordered:
        logs = np.sort(logs, axis=0)
    W = np.ones((n, k))
    if k > 1:
        W[:, 1:] = np.exp(np.cumsum(logs, axis=1))
    return W
