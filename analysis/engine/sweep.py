"""Parameter sweeps: scenarios × parameter grid × lying strategies × replications, resumable.

Config (TOML)::

    name = "lie_factor"                 # default: the file's stem
    description = "..."
    scenarios = ["oef_lying"]           # embedded scenario names or TOML paths (relative to this file)
    policies = ["oef-noncoop", "gavel"] # optional: replaces every scenario's policy list
    replications = 4                    # default 3
    seed = 2024                         # the experiment seed (default 0)
    chunk_size = 4                      # optional: runs per task and per part file

    [grid]                              # optional: cartesian product of scenario overrides
    "workload.tenants" = [4, 6]         # dotted keys into the scenario TOML, each a list of values
    rounds = [8]

    [[strategy]]                        # lying strategies; without any, the scenarios' own variants
    name = "inflate"                    # unique label
    kind = "fast"                       # fast | scale | noise | report
    tenant = 0                          # deviating tenant (index or id), or a list of them
    factor = [1.1, 1.3, 1.5]            # fast/scale: lie factor λ (number or list); scale also needs
                                        # dims = ["RTX3090"]; noise: e = [...]; report: vector = [...]
    job_types = ["LSTM"]                # optional: lie only about these job types

Every (scenario, grid cell, policy, replication) runs the ``truthful`` variant plus one lying
variant per (strategy, tenant, value), named e.g. ``inflate[factor=1.3]``.

Seeds (DESIGN "Randomness and reproducibility"): ONE ``SeedSequence(seed)`` per sweep, spawned
into ``replications`` children; child ``r`` seeds every run of replication ``r`` — every scenario,
grid cell, policy and variant, truthful and lying alike (common random numbers) — through
:meth:`marketsim.scenarios.loader.Scenario.build_model` (workload stream and model stream split off it).
A run id is the first 16 hex digits of the SHA-256 of the run's canonical JSON description
(scenario TOML data after overrides, policy, variant definition, replication, seed entropy and
spawn key), so it is stable across processes, machines and restarts.

Execution: runs are grouped into chunks (plan order); an executor (``local``, ``process`` or
``dask``) runs chunks and yields them as they complete; each completed chunk is written at once
to ``OUT/parts/part-sSSS-NNNNNN.parquet`` (temp file, fsync, atomic rename) holding its
measurement rows, with the chunk's run records (status, error, timestamps) in the file's
metadata. ``resume`` reads the run ids in the parts and skips them, so a sweep killed at any
moment loses no completed chunk and recomputes none. A run that raises becomes a failure record
(``status = "failed"``, ``error_type``, ``error_message``) and the sweep goes on; a trace run stopped
by its round cap is recorded the same way with ``status = "capped"`` (``error_type = "SafetyCap"``):
its rows are not results, so it has none in ``results.parquet`` and it is listed in ``failures.parquet``.
:func:`consolidate` then writes, deterministically sorted:

* ``results.parquet`` — measurements (:data:`RESULT_COLUMNS`), identical with every executor;
* ``runs.parquet`` — one row per run: spec, status, error; plus :data:`EXECUTION_COLUMNS`
  (session, part, worker, timestamps, seconds) that depend on scheduling and wall clock and are
  excluded from reproducibility comparisons;
* ``failures.parquet``, ``paired.parquet`` (:func:`paired_differences`), ``summary.csv``
  (:func:`paired_summary`) and ``sweep.json`` (manifest: plan hash, sessions).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime as dt
import hashlib
import itertools
import json
import math
import os
import socket
import sys
import time
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from marketsim.agents.strategies import MultiplicativeNoise, ReportVector, ScaleDims, Strategy
from marketsim.analysis.engine.run_status import CAPPED
from marketsim.analysis.engine.runner import MAX_RUNS, Executor, LocalExecutor, ProcessExecutor, RunSpec, execute_run
from marketsim.analysis.engine.stats import t_interval
from marketsim.market.errors import InputError, check_choice, check_int, check_name, slug
from marketsim.scenarios.catalog import embedded, embedded_file
from marketsim.scenarios.loader import TRUTHFUL, Scenario, VariantSpec, parse_scenario

__all__ = [
    "StrategyDef",
    "SweepConfig",
    "SweepRun",
    "Chunk",
    "ChunkResult",
    "SweepResult",
    "SWEEP_EXECUTORS",
    "RESULT_COLUMNS",
    "RUN_COLUMNS",
    "EXECUTION_COLUMNS",
    "load_sweep",
    "sweep_names",
    "parse_sweep",
    "plan_sweep",
    "execute_chunk",
    "make_sweep_executor",
    "run_sweep",
    "consolidate",
    "completed_run_ids",
    "paired_differences",
    "paired_summary",
]

RESULT_COLUMNS = [
    "run_id",
    "scenario",
    "cell",
    "policy",
    "variant",
    "replication",
    "round",
    "tenant",
    "measure",
    "value",
]
RESULT_SORT = ["scenario", "cell", "policy", "variant", "replication", "round", "tenant", "measure", "value"]
RESULT_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("scenario", pa.string()),
        ("cell", pa.string()),
        ("policy", pa.string()),
        ("variant", pa.string()),
        ("replication", pa.int64()),
        ("round", pa.int64()),
        ("tenant", pa.string()),
        ("measure", pa.string()),
        ("value", pa.float64()),
    ]
)
#: Deterministic columns of ``runs.parquet`` (same with every executor).
RUN_COLUMNS = [
    "run_id",
    "scenario",
    "cell",
    "params",
    "policy",
    "variant",
    "strategy",
    "kind",
    "param",
    "param_value",
    "deviator",
    "replication",
    "seed_entropy",
    "spawn_key",
    "round_seconds",
    "status",
    "error_type",
    "error_message",
    "rounds",
    "resolves",
]
#: Scheduling / wall-clock columns of ``runs.parquet``: exclude them when comparing sweeps.
EXECUTION_COLUMNS = ["session", "part", "worker", "started_at", "finished_at", "seconds"]
RUN_SORT = ["scenario", "cell", "policy", "variant", "replication"]
PART_META_KEY = b"marketsim.sweep.runs"
KINDS = ("fast", "scale", "noise", "report")
_PARAM_OF = {"fast": "factor", "scale": "factor", "noise": "e", "report": "vector"}
_RESERVED_GRID_KEYS = {"name", "description", "replications", "seed", "variant", "policies", "source"}


# ---------------------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class StrategyDef:
    """A lying strategy of the sweep: ``kind`` applied by each of ``tenants`` for each of ``values``
    (λ for fast/scale, e for noise; ``report`` has the single ``vector``)."""

    name: str
    kind: str
    tenants: tuple[int | str, ...]
    values: tuple[float, ...] = ()
    dims: tuple[str, ...] = ()
    vector: tuple[float, ...] = ()
    job_types: tuple[str, ...] | None = None

    @property
    def param(self) -> str:
        """Name of the swept parameter (``factor``, ``e`` or ``vector``)."""
        return _PARAM_OF[self.kind]


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep configuration (see the module docstring)."""

    name: str
    scenarios: tuple[str, ...]
    replications: int = 3
    seed: int = 0
    policies: tuple[str, ...] | None = None
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    strategies: tuple[StrategyDef, ...] = ()
    chunk_size: int | None = None
    description: str = ""
    base_dir: str = "."
    source: str = ""

    def cells(self) -> list[tuple[tuple[str, Any], ...]]:
        """Grid cells in order: tuples of ``(dotted key, value)`` (one empty cell without a grid)."""
        keys = [k for k, _ in self.grid]
        return [tuple(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in self.grid))]


def _where(source: str) -> str:
    return f"sweep {source}" if source else "sweep"


def _number_list(key: str, raw: Any, positive: bool = True) -> tuple[float, ...]:
    vals = raw if isinstance(raw, list) else [raw]
    if not vals:
        raise InputError(key, raw, "must be a number or a non-empty list of numbers")
    out = []
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise InputError(f"{key}[{i}]" if isinstance(raw, list) else key, v, "must be a finite number")
        if positive and v <= 0:
            raise InputError(f"{key}[{i}]" if isinstance(raw, list) else key, v, "must be > 0")
        out.append(float(v))
    return tuple(out)


def _strategy_def(raw: Any, where: str) -> StrategyDef:
    if not isinstance(raw, dict):
        raise InputError(where, raw, "must be a table")
    known = {"name", "kind", "tenant", "factor", "dims", "e", "vector", "job_types"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", raw[unknown[0]], f"is not a known key; known: {sorted(known)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name or name == TRUTHFUL or any(c in name for c in "[],="):
        raise InputError(f"{where}.name", name, f"must be a non-empty name other than '{TRUTHFUL}' without [],=")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise InputError(f"{where}.kind", kind, f"must be one of {list(KINDS)}")
    tenant = raw.get("tenant")
    tenants = tenant if isinstance(tenant, list) else [tenant]
    if not tenants or any(isinstance(t, bool) or not isinstance(t, (int, str)) for t in tenants):
        raise InputError(f"{where}.tenant", tenant, "must be a tenant index or id, or a list of them")
    jt = raw.get("job_types")
    if jt is not None and (not isinstance(jt, list) or not all(isinstance(x, str) and x for x in jt)):
        raise InputError(f"{where}.job_types", jt, "must be a list of job type names")
    job_types = tuple(jt) if jt is not None else None
    needs = {"fast": "factor", "scale": "factor", "noise": "e", "report": "vector"}[kind]
    if needs not in raw:
        raise InputError(f"{where}.{needs}", None, f"is required by kind '{kind}'")
    extra = sorted({"factor", "e", "vector", "dims"} & set(raw) - {needs} - ({"dims"} if kind == "scale" else set()))
    if extra:
        raise InputError(f"{where}.{extra[0]}", raw[extra[0]], f"does not apply to kind '{kind}'")
    if kind == "report":
        vec = raw["vector"]
        if not isinstance(vec, list):
            raise InputError(f"{where}.vector", vec, "must be a list of numbers (one per GPU type)")
        return StrategyDef(name, kind, tuple(tenants), vector=_number_list(f"{where}.vector", vec), job_types=job_types)
    values = _number_list(f"{where}.{needs}", raw[needs], positive=kind != "noise")
    if kind == "noise" and any(not 0 <= e < 1 for e in values):
        raise InputError(f"{where}.e", raw["e"], "must be in [0, 1)")
    dims: tuple[str, ...] = ()
    if kind == "scale":
        d = raw.get("dims")
        if not isinstance(d, list) or not d or not all(isinstance(x, str) and x for x in d):
            raise InputError(f"{where}.dims", d, "must list the GPU type names to scale, e.g. ['RTX3090']")
        dims = tuple(d)
    return StrategyDef(name, kind, tuple(tenants), values=values, dims=dims, job_types=job_types)


def parse_sweep(data: Mapping[str, Any], name: str, base_dir: Path | None = None, source: str = "") -> SweepConfig:
    """Validate a parsed sweep TOML document (``base_dir`` resolves relative scenario paths)."""
    where = _where(source or name)
    known = {"name", "description", "scenarios", "policies", "replications", "seed", "chunk_size", "grid", "strategy"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"{where}: {unknown[0]}", data[unknown[0]], f"is not a known key; known: {sorted(known)}")
    name = check_name(f"{where}: name", data.get("name", slug(name)))
    description = data.get("description", "")
    if not isinstance(description, str):
        raise InputError(f"{where}: description", description, "must be a string")
    scen = data.get("scenarios")
    if isinstance(scen, str):
        scen = [scen]
    if not isinstance(scen, list) or not scen or not all(isinstance(s, str) and s for s in scen):
        raise InputError(f"{where}: scenarios", scen, "must be a non-empty list of scenario names or TOML paths")
    if len(set(scen)) != len(scen):
        raise InputError(f"{where}: scenarios", scen, "must not repeat a scenario")
    pol = data.get("policies")
    if pol is not None and (not isinstance(pol, list) or not pol or not all(isinstance(p, str) for p in pol)):
        raise InputError(f"{where}: policies", pol, "must be a non-empty list of mechanism names")
    reps = check_int(f"{where}: replications", data.get("replications", 3), minimum=1)
    seed = check_int(f"{where}: seed", data.get("seed", 0), minimum=0)
    chunk = data.get("chunk_size")
    chunk = None if chunk is None else check_int(f"{where}: chunk_size", chunk, minimum=1)
    grid_raw = data.get("grid", {})
    if not isinstance(grid_raw, dict):
        raise InputError(f"{where}: grid", grid_raw, "must be a table of dotted keys -> lists of values")
    grid: list[tuple[str, tuple[Any, ...]]] = []
    for key, vals in grid_raw.items():
        if key.split(".")[0] in _RESERVED_GRID_KEYS:
            raise InputError(f"{where}: grid.{key}", vals, "cannot be swept (set it at the sweep's top level)")
        vals = vals if isinstance(vals, list) else [vals]
        if not vals:
            raise InputError(f"{where}: grid.{key}", vals, "must list at least one value")
        grid.append((key, tuple(vals)))
    strategies = tuple(_strategy_def(s, f"{where}: strategy[{i}]") for i, s in enumerate(data.get("strategy", [])))
    if len({s.name for s in strategies}) != len(strategies):
        raise InputError(f"{where}: strategy", [s.name for s in strategies], "must have distinct names")
    return SweepConfig(
        name=name,
        scenarios=tuple(scen),
        replications=reps,
        seed=seed,
        policies=tuple(pol) if pol is not None else None,
        grid=tuple(grid),
        strategies=strategies,
        chunk_size=chunk,
        description=" ".join(description.split()),
        base_dir=str((base_dir or Path.cwd()).resolve()),
        source=source,
    )


def sweep_names() -> list[str]:
    """Sweep configs shipped with the package (``scenarios/sweep_*.toml``)."""
    return sorted(n for n in embedded() if _is_sweep_file(f"{n}.toml"))


def _is_sweep_file(name: str) -> bool:
    return name.startswith("sweep_") and name.endswith(".toml")


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and validate a sweep TOML file, or an embedded sweep by name (see :func:`sweep_names`)."""
    text = str(path)
    shipped = embedded_file(text)
    if "/" not in text and _is_sweep_file(f"{text}.toml") and shipped is not None:
        with resources.as_file(shipped) as real:
            path = Path(real)
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError("sweep config", text, f"is neither a file nor an embedded sweep {sweep_names()}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"sweep config {p}", "", f"is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"sweep config {p}", "", "is not UTF-8 text") from None
    return parse_sweep(data, p.stem, base_dir=p.parent, source=str(p))


# ---------------------------------------------------------------------------------------------------
# planning


@dataclass(frozen=True)
class SweepRun:
    """One simulation of a sweep; :meth:`runspec` is what :func:`marketsim.analysis.engine.runner.execute_run` runs."""

    run_id: str
    scenario: Scenario
    cell: str
    params: str
    policy: str
    variant: str
    strategy: str
    kind: str
    param: str
    param_value: float
    deviator: str
    replication: int
    entropy: int
    spawn_key: tuple[int, ...]

    def runspec(self) -> RunSpec:
        """The runner's spec (same seed child for every variant of the replication)."""
        return RunSpec(
            self.run_id, self.scenario, self.policy, self.variant, self.replication, self.entropy, self.spawn_key
        )

    def record(self) -> dict[str, Any]:
        """The deterministic description columns of ``runs.parquet``."""
        return {
            "run_id": self.run_id,
            "scenario": self.scenario.name,
            "cell": self.cell,
            "params": self.params,
            "policy": self.policy,
            "variant": self.variant,
            "strategy": self.strategy,
            "kind": self.kind,
            "param": self.param,
            "param_value": self.param_value,
            "deviator": self.deviator,
            "replication": self.replication,
            "seed_entropy": str(self.entropy),
            "spawn_key": ",".join(str(x) for x in self.spawn_key),
            # the length of records without round_s rows (fixed rounds): the pairing's time weights
            "round_seconds": float(self.scenario.cluster.round_seconds),
        }


def _scenario_data(ref: str, base_dir: Path) -> tuple[str, dict[str, Any], Path, str]:
    """``(default name, raw TOML data, base dir, source)`` of an embedded scenario or a TOML path."""
    shipped = embedded_file(ref)
    if "/" not in ref and not ref.endswith(".toml") and shipped is not None:
        with resources.as_file(shipped) as real:
            path = Path(real)
    else:
        path = Path(ref).expanduser()
        if not path.is_absolute():
            path = base_dir / path
        if not path.is_file():
            raise InputError("scenarios", ref, "is neither an embedded scenario nor an existing TOML file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"scenario file {path}", "", f"is not valid TOML: {exc}") from None
    return path.stem, data, path.parent, str(path)


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for p in parts[:-1]:
        nxt = node.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise InputError(f"grid.{key}", value, f"goes through '{p}', which is not a table")
        node = nxt
    node[parts[-1]] = value


def _cell_label(cell: Sequence[tuple[str, Any]]) -> str:
    return ",".join(f"{k}={_fmt(v)}" for k, v in cell) if cell else "base"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "[" + ";".join(_fmt(x) for x in v) + "]"
    return str(v)


def _build_strategy(s: StrategyDef, value: float, gpu_types: Sequence[str], where: str) -> Strategy:
    k = len(gpu_types)
    if s.kind == "fast":
        return ScaleDims.fast(value, k, job_types=s.job_types)
    if s.kind == "scale":
        idx = {}
        for d in s.dims:
            if d not in gpu_types:
                raise InputError(f"{where}.dims", d, f"names no GPU type of the cluster {list(gpu_types)}")
            idx[gpu_types.index(d)] = value
        return ScaleDims(idx, job_types=s.job_types)
    if s.kind == "noise":
        return MultiplicativeNoise(value, job_types=s.job_types)
    if len(s.vector) != k:
        raise InputError(f"{where}.vector", list(s.vector), f"must have one entry per GPU type ({k})")
    return ReportVector(s.vector, job_types=s.job_types)


def _variants(config: SweepConfig, scen: Scenario) -> list[tuple[VariantSpec, dict[str, Any]]]:
    """Lying variants of one materialised scenario with their descriptive columns."""
    if not config.strategies:
        return [
            (v, {"strategy": v.name, "kind": "scenario", "param": "", "param_value": float("nan")})
            for v in scen.variants
        ]
    out = []
    for i, s in enumerate(config.strategies):
        where = f"{_where(config.source)}: strategy[{i}]"
        values: Iterable[float] = s.values if s.kind != "report" else (float("nan"),)
        for tenant, value in itertools.product(s.tenants, values):
            label = [f"tenant={tenant}"] if len(s.tenants) > 1 else []
            if s.kind != "report":
                label.append(f"{s.param}={value:g}")
            name = f"{s.name}[{','.join(label)}]" if label else s.name
            strat = _build_strategy(s, value, scen.cluster.gpu_types, where)
            desc = {"strategy": s.name, "kind": s.kind, "param": s.param, "param_value": float(value)}
            out.append((VariantSpec(name, tenant, strat), desc))
    return out


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=repr).encode()).hexdigest()


def plan_sweep(config: SweepConfig) -> list[SweepRun]:
    """All runs of the sweep in plan order: scenario, grid cell, replication, policy, variant."""
    base = Path(config.base_dir)
    n_cells = math.prod(len(values) for _, values in config.grid)
    at_least = len(config.scenarios) * n_cells * config.replications  # x policies x variants, known later
    if at_least > MAX_RUNS:
        raise InputError(f"{_where(config.source)}: grid x replications", f"{n_cells:,} cells x {config.replications}",
                         f"plans at least {at_least:,} runs; at most {MAX_RUNS:,} (size limit)")  # fmt: skip
    children = np.random.SeedSequence(config.seed).spawn(config.replications)
    runs: list[SweepRun] = []
    cells_done = 0
    for ref in config.scenarios:
        default_name, raw, scen_dir, source = _scenario_data(ref, base)
        for cell in config.cells():
            data = copy.deepcopy(raw)
            if config.strategies:  # the sweep's strategies replace the scenario's own variants
                data.pop("variant", None)
            if config.policies is not None:
                data["policies"] = list(config.policies)
            for key, value in cell:
                _set_dotted(data, key, value)
            label = _cell_label(cell)
            try:
                scen = parse_scenario(data, default_name, base_dir=scen_dir, source=source)
            except InputError as exc:
                raise InputError(f"{_where(config.source)}: scenario {ref} cell {label}", "", str(exc)) from None
            variants = _variants(config, scen)
            if config.strategies:
                scen = dataclasses.replace(scen, variants=tuple(v for v, _ in variants))
            if len(set(scen.variant_names)) != len(scen.variant_names):
                raise InputError(f"{_where(config.source)}: strategy", list(scen.variant_names), "repeat a variant")
            per_cell = len(children) * len(scen.policies) * len(scen.variant_names)
            cells_left = len(config.scenarios) * n_cells - cells_done  # counting this one
            cells_done += 1
            if len(runs) + per_cell * cells_left > MAX_RUNS:  # if the cells left are like this one
                raise InputError(f"{_where(config.source)}: scenario {ref} cell {label}", config.replications,
                                 f"takes the sweep to about {len(runs) + per_cell * cells_left:,} runs "
                                 f"({per_cell:,} per cell); at most {MAX_RUNS:,} (size limit)")  # fmt: skip
            desc = {v.name: (d, scen.deviator(v.name) or "") for v, d in variants}
            params = json.dumps({k: v for k, v in cell}, sort_keys=True)
            scen_key = {k: v for k, v in data.items() if k != "variant"}
            for r, child in enumerate(children):
                entropy = int(child.entropy)  # type: ignore[arg-type]
                spawn_key = tuple(int(x) for x in child.spawn_key)
                for policy in scen.policies:
                    for variant in scen.variant_names:
                        d, dev = desc.get(variant, ({"strategy": TRUTHFUL, "kind": TRUTHFUL, "param": ""}, ""))
                        strat_def = next((v.strategy for v, _ in variants if v.name == variant), None)
                        key = {
                            "scenario": scen.name,
                            "data": scen_key,
                            "policy": policy,
                            "variant": variant,
                            "strategy": repr(strat_def),
                            "deviator": dev,
                            "replication": r,
                            "seed": [str(entropy), list(spawn_key)],
                        }
                        runs.append(
                            SweepRun(
                                run_id=_digest(key)[:16],
                                scenario=scen,
                                cell=label,
                                params=params,
                                policy=policy,
                                variant=variant,
                                strategy=d["strategy"],
                                kind=d["kind"],
                                param=d["param"],
                                param_value=float(d.get("param_value", float("nan"))),
                                deviator=dev,
                                replication=r,
                                entropy=entropy,
                                spawn_key=spawn_key,
                            )
                        )
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise InputError(_where(config.source), config.name, "plans the same run twice (duplicate grid values?)")
    return runs


def plan_hash(runs: Sequence[SweepRun]) -> str:
    """Fingerprint of a plan (its sorted run ids)."""
    return _digest(sorted(r.run_id for r in runs))[:16]


# ---------------------------------------------------------------------------------------------------
# execution


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def _split_error(text: str) -> tuple[str, str]:
    kind, sep, rest = text.partition(": ")
    return (kind, rest) if sep and kind.isidentifier() else ("Error", text)


@dataclass
class ChunkResult:
    """Measurement rows (:data:`RESULT_COLUMNS`) and one record per run of a chunk."""

    frame: pd.DataFrame
    records: list[dict[str, Any]]


@dataclass(frozen=True)
class Chunk:
    """Runs executed together as one task and written as one part file."""

    runs: tuple[SweepRun, ...]

    def failure(self, message: str) -> ChunkResult:
        """The chunk as failed runs (its task crashed, e.g. a killed worker)."""
        kind, msg = _split_error(message)
        now = _now()
        records = [
            {
                **r.record(),
                "status": "failed",
                "error_type": kind,
                "error_message": msg,
                "rounds": 0,
                "resolves": 0,
                "worker": "",
                "started_at": now,
                "finished_at": now,
                "seconds": 0.0,
            }
            for r in self.runs
        ]
        return ChunkResult(_empty_results(), records)


def _empty_results() -> pd.DataFrame:
    return RESULT_SCHEMA.empty_table().to_pandas()


def execute_chunk(chunk: Chunk) -> ChunkResult:
    """Run every run of ``chunk`` (never raises: a failing run becomes a failure record)."""
    worker = f"{socket.gethostname()}:{os.getpid()}"
    frames: list[pd.DataFrame] = []
    records: list[dict[str, Any]] = []
    for run in chunk.runs:
        started = _now()
        res = execute_run(run.runspec())
        rec = {**run.record(), "rounds": res.rounds, "resolves": res.resolves, "worker": worker}
        rec.update({"started_at": started, "finished_at": _now(), "seconds": res.seconds})
        if res.error is None and res.incomplete:  # stopped by the round cap: not a result, no rows
            rec.update({"status": CAPPED, "error_type": "SafetyCap", "error_message": res.incomplete})
        elif res.error is None and res.frame is not None:
            f = res.frame.copy()
            f.insert(2, "cell", run.cell)
            frames.append(f[RESULT_COLUMNS])
            rec.update({"status": "ok", "error_type": "", "error_message": ""})
        else:
            kind, msg = _split_error(res.error or "no result")
            rec.update({"status": "failed", "error_type": kind, "error_message": msg})
        records.append(rec)
    frame = pd.concat(frames, ignore_index=True) if frames else _empty_results()
    return ChunkResult(frame, records)


#: Sweep executor factories by name: ``(workers, address) -> Executor``.
SWEEP_EXECUTORS: dict[str, Callable[[int | None, str | None], Executor]] = {
    "local": lambda workers, address: LocalExecutor(),
    "process": lambda workers, address: ProcessExecutor(workers),
    "dask": lambda workers, address: _dask(workers, address),
}


def _dask(workers: int | None, address: str | None) -> Executor:
    from marketsim.analysis.engine.executors_dask import DaskExecutor

    return DaskExecutor(address=address, workers=workers)


def make_sweep_executor(name: str, workers: int | None = None, address: str | None = None) -> Executor:
    """The executor ``name`` ("local", "process" or "dask"); ``address`` only with "dask"."""
    check_choice("--executor", name, list(SWEEP_EXECUTORS))
    if address is not None and name != "dask":
        raise InputError("--address", address, "is only used with --executor dask")
    if workers is not None:
        check_int("--workers", workers, minimum=1)
    return SWEEP_EXECUTORS[name](workers, address)


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` ``path`` whole or not at all, synced to disk
    (:func:`marketsim.analysis.engine.run_status.write_atomic`: a failure raises ``WriteError`` naming ``path``)."""
    from marketsim.analysis.engine.run_status import write_atomic

    def write_synced(tmp: Path) -> None:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())

    write_atomic(path, write_synced)


def _write_part(parts: Path, name: str, res: ChunkResult) -> Path:
    table = pa.Table.from_pandas(res.frame[RESULT_COLUMNS], schema=RESULT_SCHEMA, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[PART_META_KEY] = json.dumps(res.records).encode()
    table = table.replace_schema_metadata(meta)
    path = parts / name
    _atomic_write(path, lambda p: pq.write_table(table, p))
    return path


def _part_files(out: Path) -> list[Path]:
    parts = out / "parts"
    return sorted(parts.glob("part-*.parquet")) if parts.is_dir() else []


def _part_records(path: Path) -> list[dict[str, Any]]:
    meta = pq.read_schema(path).metadata or {}
    if PART_META_KEY not in meta:
        raise InputError("part file", str(path), "has no sweep run records (not written by marketsim sweep)")
    return [{**r, "session": _session_of(path), "part": path.name} for r in json.loads(meta[PART_META_KEY])]


def _session_of(path: Path) -> int:
    return int(path.name.split("-")[1][1:])


def completed_run_ids(out: str | Path, include_failed: bool = True) -> set[str]:
    """Run ids recorded in ``OUT/parts`` (reads only the part files' footers)."""
    ids = set()
    for p in _part_files(Path(out)):
        ids.update(r["run_id"] for r in _part_records(p) if include_failed or r["status"] == "ok")
    return ids


@dataclass
class SweepResult:
    """A consolidated sweep: ``results`` (measurements), ``runs`` (one row per run),
    ``failures``, ``pairs`` (paired differences) and ``summary``, plus this session's counts."""

    out: Path
    _results: pd.DataFrame | None
    runs: pd.DataFrame
    failures: pd.DataFrame
    pairs: pd.DataFrame
    summary: pd.DataFrame
    ran: int = 0
    skipped: int = 0
    seconds: float = 0.0
    executor: str = "local"
    paths: dict[str, Path] = dataclasses.field(default_factory=dict)

    @property
    def results(self) -> pd.DataFrame:
        """The measurements, read from ``results.parquet`` on first use (consolidation streams them
        to disk and never holds them all in memory)."""
        if self._results is None:
            self._results = pd.read_parquet(self.paths.get("results", self.out / "results.parquet"))
        return self._results


def _read_manifest(out: Path) -> dict[str, Any] | None:
    p = out / "sweep.json"
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError("sweep manifest", str(p), f"is not valid JSON ({exc})") from None


def _write_json(path: Path, obj: Any) -> None:
    _atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8"))


def _write_status(out: Path, manifest: dict[str, Any], runs: pd.DataFrame | None = None) -> None:
    """Write ``sweep.json`` and a ``report.md`` whose first line says the sweep's status
    (:func:`marketsim.analysis.engine.run_status.status_line` unless complete), with its sessions and, at the
    end, its runs by status (``runs``)."""
    from marketsim.analysis.engine.run_status import COMPLETE, RUNNING, status_line

    status = manifest.get("status", RUNNING)
    lines = [] if status == COMPLETE else [status_line(status), ""]
    lines += [f"# sweep {manifest.get('name')}", "", f"- status `{status}`; plan of {manifest.get('runs')} runs "
              f"(plan hash {manifest.get('plan_hash')}), config `{manifest.get('config')}`"]  # fmt: skip
    for sess in manifest.get("sessions", []):
        lines.append(f"- session {sess['session']} started {sess['started_at']}: {sess['to_run']} run(s) to run, "
                     f"{sess['skipped']} skipped ({sess['executor']} executor)"
                     + (f", {sess['ended']}" if sess.get("ended") else ""))  # fmt: skip
    if runs is not None:
        counts = runs["status"].value_counts()
        lines.append("- runs: " + ", ".join(f"{int(n)} {k}" for k, n in counts.items()))
        lines += ["", "Files: results.parquet, runs.parquet, failures.parquet, paired.parquet, summary.csv (the "
                  "deviator's paired gains), sweep.json; parts/ (the finished chunks)."]  # fmt: skip
    if status != COMPLETE:
        lines += ["", "parts/ holds every finished chunk; `marketsim sweep CONFIG --out THIS_FOLDER --resume` "
                  "continues the sweep without recomputing them."]  # fmt: skip
    _atomic_write(out / "report.md", lambda p: p.write_text("\n".join(lines) + "\n", encoding="utf-8"))
    _write_json(out / "sweep.json", manifest)  # last: "complete" only once the report says so too


def _default_chunk(n: int, workers: int) -> int:
    return max(1, min(16, n // (8 * max(1, workers))))


def run_sweep(
    config: SweepConfig,
    out: str | Path,
    *,
    executor: str | Executor = "local",
    workers: int | None = None,
    address: str | None = None,
    resume: bool = False,
    retry_failed: bool = False,
    chunk_size: int | None = None,
    progress: bool = True,
) -> SweepResult:
    """Run (or, with ``resume``, continue) a sweep into ``out`` and consolidate it.

    Without ``resume`` ``out`` must not hold parts yet; with it, run ids already in the parts are
    skipped (failed ones too, unless ``retry_failed``), and the plan must be the one that wrote them.
    No other live process may be writing ``out`` (:func:`marketsim.analysis.engine.run_status.claim`: an
    :class:`InputError` names ``--out``); a sweep there that was killed is labelled so first
    (``"status": "killed"``, its last session ``"ended": "killed"``).
    """
    from marketsim.analysis.engine.run_status import claim

    with claim(out, keep_previous=False, mark=False, sigterm=False):
        return _run_sweep(config, Path(out), executor=executor, workers=workers, address=address, resume=resume,
                          retry_failed=retry_failed, chunk_size=chunk_size, progress=progress)  # fmt: skip


def _run_sweep(
    config: SweepConfig,
    out: Path,
    *,
    executor: str | Executor,
    workers: int | None,
    address: str | None,
    resume: bool,
    retry_failed: bool,
    chunk_size: int | None,
    progress: bool,
) -> SweepResult:
    """:func:`run_sweep` once ``out`` is held by this process."""
    plan = plan_sweep(config)
    ex = make_sweep_executor(executor, workers, address) if isinstance(executor, str) else executor
    if chunk_size is not None:
        check_int("--chunk-size", chunk_size, minimum=1)
    out = Path(out)
    parts_existed = (out / "parts").is_dir()
    try:
        (out / "parts").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("--out", str(out), f"cannot be created ({exc.strerror})") from None
    for stale in (out / "parts").glob(".*.tmp*"):  # a chunk being written when the sweep was killed
        stale.unlink()
    existing = _part_files(out)
    manifest = _read_manifest(out)
    phash = plan_hash(plan)
    if existing and not resume:
        raise InputError("--out", str(out), "already holds sweep parts; pass --resume to continue or pick a new --out")
    if resume and manifest is not None and manifest.get("plan_hash") != phash:
        raise InputError(
            "--resume", str(out), f"holds a different sweep ({manifest.get('name')}, plan {manifest.get('plan_hash')})"
        )
    records = [r for p in existing for r in _part_records(p)]
    planned = {r.run_id for r in plan}
    strangers = sorted({r["run_id"] for r in records} - planned)
    if strangers:
        raise InputError("--resume", str(out), f"holds runs not in this sweep's plan (e.g. {strangers[0]})")
    latest: dict[str, dict[str, Any]] = {}
    for r in records:
        latest[r["run_id"]] = (
            r if r["run_id"] not in latest or r["session"] >= latest[r["run_id"]]["session"] else latest[r["run_id"]]
        )
    done = {rid for rid, r in latest.items() if r["status"] == "ok" or not retry_failed}
    todo = [r for r in plan if r.run_id not in done]
    ex_name = getattr(ex, "name", "custom")
    n_workers = workers or (1 if ex_name == "local" else 2 if ex_name == "dask" else os.cpu_count() or 1)
    size = chunk_size or config.chunk_size or _default_chunk(len(todo), n_workers)
    chunks = [Chunk(tuple(todo[i : i + size])) for i in range(0, len(todo), size)]
    sessions = list((manifest or {}).get("sessions", [])) if existing else []  # a fresh start forgets old sessions
    session = max([s["session"] for s in sessions] + [_session_of(p) for p in existing] + [0]) + 1
    sessions.append(
        {
            "session": session,
            "started_at": _now(),
            "executor": ex_name,
            "workers": n_workers,
            "chunk_size": size,
            "skipped": len(plan) - len(todo),
            "to_run": len(todo),
        }
    )
    manifest_out = {"name": config.name, "config": config.source, "plan_hash": phash, "runs": len(plan),
                    "status": "running", "complete": False, "sessions": sessions}  # fmt: skip
    # marked running before any run (a SIGKILLed sweep reads incomplete); if the executor never comes
    # up (an unreachable Dask scheduler) or the sweep stops before its first chunk, the previous manifest
    # (or none) is put back, so no sweep.json describes a session that never ran
    _write_status(out, manifest_out)
    wrote_part = False
    t0 = time.perf_counter()
    try:
        with tqdm(total=len(todo), desc=config.name, unit="run", disable=not progress, file=sys.stderr) as bar:
            for seq, res in enumerate(ex.map(execute_chunk, chunks)):
                _write_part(out / "parts", f"part-s{session:03d}-{seq:06d}.parquet", res)
                wrote_part = True
                bar.update(len(res.records))
                for rec in res.records:
                    if rec["status"] != "ok":
                        what = "capped" if rec["status"] == CAPPED else "failed"
                        why = f"{rec['error_type']}: {rec['error_message']}"
                        bar.write(f"run {rec['run_id']} ({rec['variant']}) {what}: {why}", file=sys.stderr)
    except BaseException:
        if wrote_part:  # SIGINT / SIGTERM or a crash after some chunks: --resume continues it
            sessions[-1]["ended"] = "interrupted"
            _write_status(out, {**manifest_out, "status": "interrupted"})
        elif manifest is not None:
            _write_status(out, manifest)
        else:
            (out / "sweep.json").unlink(missing_ok=True)
            (out / "report.md").unlink(missing_ok=True)
            if not parts_existed:  # nothing ran: leave no empty parts/ folder either
                with contextlib.suppress(OSError):
                    (out / "parts").rmdir()
        raise
    seconds = time.perf_counter() - t0
    try:
        result = consolidate(out)
    except BaseException as exc:  # Ctrl-C / SIGTERM or a failure (a full disk) during the final merge
        stopped = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        sessions[-1]["ended"] = stopped
        extra = {} if stopped == "interrupted" else {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        with contextlib.suppress(OSError):  # every part is kept: --resume merges them again
            _write_status(out, {**manifest_out, "status": stopped, **extra})
        raise
    result.ran, result.skipped, result.seconds, result.executor = len(todo), len(plan) - len(todo), seconds, ex_name
    complete = len(result.runs) == len(plan) and result.failures.empty
    # complete, else failed (a run raised) or capped (a trace run hit its round cap): failures.parquet
    capped_only = not result.failures.empty and bool((result.failures["status"] == CAPPED).all())
    status = "complete" if complete else CAPPED if capped_only else "failed"
    _write_status(out, {**manifest_out, "status": status, "complete": bool(complete)}, result.runs)
    return result


# ---------------------------------------------------------------------------------------------------
# consolidation and paired analysis


def consolidate(out: str | Path, measure: str = "act") -> SweepResult:
    """Merge ``OUT/parts`` into sorted ``results.parquet``, ``runs.parquet``, ``failures.parquet``,
    ``paired.parquet`` and ``summary.csv`` (each written atomically). When a run appears in several
    parts (a retried failure), the record of its latest session wins."""
    out = Path(out)
    files = _part_files(out)
    latest: dict[str, dict[str, Any]] = {}
    for p in files:
        for r in _part_records(p):
            prev = latest.get(r["run_id"])
            if prev is None or (r["session"], r["part"]) >= (prev["session"], prev["part"]):
                latest[r["run_id"]] = r
    runs = pd.DataFrame(list(latest.values()), columns=RUN_COLUMNS + EXECUTION_COLUMNS)
    runs = runs.sort_values([*RUN_SORT, "run_id"], kind="mergesort").reset_index(drop=True)
    runs = runs.astype({"replication": "int64", "rounds": "int64", "resolves": "int64", "param_value": "float64",
                        "round_seconds": "float64"})  # fmt: skip
    failures = runs.loc[runs["status"] != "ok", RUN_COLUMNS].reset_index(drop=True)
    paths = {
        "results": out / "results.parquet",
        "runs": out / "runs.parquet",
        "failures": out / "failures.parquet",
        "paired": out / "paired.parquet",
        "summary": out / "summary.csv",
    }
    rounds, sums = _stream_results(out, files, latest, runs, paths["results"], measure)
    pairs = paired_from_aggregates(rounds, sums, runs)
    summary = paired_summary(pairs)
    _atomic_write(paths["runs"], lambda p: runs.to_parquet(p, index=False))
    _atomic_write(paths["failures"], lambda p: failures.to_parquet(p, index=False))
    _atomic_write(paths["paired"], lambda p: pairs.to_parquet(p, index=False))
    _atomic_write(paths["summary"], lambda p: summary.to_csv(p, index=False))
    return SweepResult(out, None, runs, failures, pairs, summary, paths=paths)


STREAM_ROWS = 200_000
"""Rows buffered before a row group is written to ``results.parquet`` during consolidation."""
PART_CACHE = 4
"""Part files held in memory at once while consolidating (least recently used ones are dropped)."""
STREAM_STATS: dict[str, int] = {"loads": 0, "max_cached": 0}
"""Counters of the last consolidation: part loads and the most parts held at once."""


def _stream_results(
    out: Path, files: list[Path], latest: dict[str, dict[str, Any]], runs: pd.DataFrame, dest: Path, measure: str
) -> tuple[pd.Series, pd.DataFrame]:
    """Write ``dest`` sorted by :data:`RESULT_SORT` holding at most :data:`PART_CACHE` part files
    (plus a row-group buffer) in memory: runs are visited in sorted order and each part is loaded
    when its runs come up (an evicted part may be read again). Returns the pairing aggregates
    (:func:`pair_aggregates`) gathered on the way."""
    by_part: dict[str, Path] = {p.name: p for p in files}
    cache: OrderedDict[str, Any] = OrderedDict()
    STREAM_STATS.update(loads=0, max_cached=0)

    def rows_of(rid: str) -> pd.DataFrame:
        name = latest[rid]["part"]
        if name in cache:
            cache.move_to_end(name)
        else:
            while len(cache) >= PART_CACHE:
                cache.popitem(last=False)
            f = pq.read_table(by_part[name]).to_pandas()
            cache[name] = (f, f.groupby("run_id", sort=False).indices)
            STREAM_STATS["loads"] += 1
            STREAM_STATS["max_cached"] = max(STREAM_STATS["max_cached"], len(cache))
        f, idx = cache[name]
        pos = idx.get(rid)
        return f.iloc[pos] if pos is not None else f.iloc[0:0]

    rounds: list[pd.Series] = []
    sums: list[pd.DataFrame] = []
    round_s = runs.set_index("run_id")["round_seconds"] if "round_seconds" in runs else pd.Series(dtype=float)
    buf: list[pd.DataFrame] = []
    n_buf = 0
    tmp = dest.with_name(f".{dest.name}.tmp")
    writer = pq.ParquetWriter(tmp, RESULT_SCHEMA)
    try:

        def flush() -> None:
            nonlocal buf, n_buf
            if buf:
                chunk = pd.concat(buf, ignore_index=True)[RESULT_COLUMNS]
                r, sm = _batched_aggregates(chunk, round_s, measure)
                rounds.append(r)
                sums.append(sm)
                writer.write_table(pa.Table.from_pandas(chunk, schema=RESULT_SCHEMA, preserve_index=False))
            buf, n_buf = [], 0

        for rid in runs["run_id"]:
            f = rows_of(rid)
            if f.empty:
                continue
            buf.append(f.sort_values(RESULT_SORT, kind="mergesort"))
            n_buf += len(f)
            if n_buf >= STREAM_ROWS:
                flush()
        flush()
        if writer.schema is not None and not rounds:
            writer.write_table(pa.Table.from_pandas(_empty_results()[RESULT_COLUMNS], schema=RESULT_SCHEMA,
                                                    preserve_index=False))  # fmt: skip
    finally:
        writer.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, dest)
    cache.clear()
    r = pd.concat(rounds) if rounds else pd.Series(dtype=float)
    sm = pd.concat(sums, ignore_index=True) if sums else pd.DataFrame(columns=_AGG_COLUMNS)
    return r, sm


PAIR_KEYS = ["scenario", "cell", "policy", "replication"]
_PAIR_COLUMNS = [
    "scenario",
    "cell",
    "policy",
    "variant",
    "strategy",
    "param",
    "param_value",
    "deviator",
    "replication",
    *(f"{g}_{s}" for g in ("liar", "others", "total", "liar_jct") for s in ("truthful", "lying", "diff")),
]
#: per (run, tenant) aggregates of :func:`pair_aggregates`
_AGG_COLUMNS = ["run_id", "tenant", "work", "active_s", "jct_sum_s", "jobs"]


def paired_differences(results: pd.DataFrame, runs: pd.DataFrame, measure: str = "act") -> pd.DataFrame:
    """Truthful vs lying on the same seed, per lying run.

    For every successful lying run and the successful truthful run of the same (scenario, cell,
    policy, replication), truthful, lying and ``diff`` (lying − truthful) of:

    * ``liar_*``: the deviator's TRUE ``measure`` (default ``act``: actual throughput, the fair-share
      tenants' utility) while active: its integral over the records in which the deviator is active
      (:data:`marketsim.analysis.engine.stats.ACTIVE_DEFINITION`) divided by that time (slowest-GPU equivalents);
    * ``others_*`` / ``total_*``: the other tenants' / everyone's ``measure`` integrated over the run
      and divided by the run's simulated seconds (work per second; ``total`` is welfare, and
      ``liar + others`` is not ``total``: the liar's figure is per second of ITS active time);
    * ``liar_jct_*``: the mean JCT (s) of the deviator's finished jobs (< 0 diff: sooner).

    Records weigh the seconds they cover (:func:`marketsim.analysis.engine.stats.record_lengths`: ``round_s``,
    else the run's ``round_seconds`` from ``runs``)."""
    if results.empty or runs.empty:
        return pd.DataFrame(columns=_PAIR_COLUMNS)
    rs = runs.set_index("run_id")["round_seconds"] if "round_seconds" in runs else pd.Series(dtype=float)
    seconds, per = _batched_aggregates(results, rs, measure)
    return paired_from_aggregates(seconds, per, runs)


def _batched_aggregates(
    results: pd.DataFrame, round_s: pd.Series, measure: str
) -> tuple[pd.Series, pd.DataFrame]:
    """:func:`pair_aggregates` of every run in ``results`` (not empty), one call per distinct
    ``round_seconds`` (``round_s``: run_id -> s; a run absent or NaN there has none): the same figures
    as run by run, at a few pivots per batch instead of a few per run."""
    ids = results["run_id"].astype(str)
    rs = ids.map(pd.Series({r: round_s.get(r, float("nan")) for r in ids.unique()}, dtype=float)).astype(float)
    seconds, per = [], []
    for value in pd.unique(rs.to_numpy()):
        sel = rs.isna().to_numpy() if pd.isna(value) else (rs == value).to_numpy()
        a, b = pair_aggregates(results[sel], measure, None if pd.isna(value) else float(value))
        seconds.append(a)
        per.append(b)
    return pd.concat(seconds), pd.concat(per, ignore_index=True)


def pair_aggregates(
    results: pd.DataFrame, measure: str = "act", round_seconds: float | None = None
) -> tuple[pd.Series, pd.DataFrame]:
    """What pairing needs from measurements, computable run by run: the simulated seconds of each run
    (its records' summed lengths) and per (run, tenant): ``work`` (the tenant's ``measure`` integrated
    over its active records, slowest-GPU-equivalent seconds), ``active_s`` (s), and the sum and count
    of its finished jobs' JCTs (``jct_sum_s``, ``jobs``). ``round_seconds``: the length of records
    without ``round_s`` rows."""
    from marketsim.analysis.engine.stats import record_lengths, throughput_while_active

    seconds = record_lengths(results, round_seconds, ["run_id"]).groupby(level="run_id").sum()
    thr = throughput_while_active(results, None, (measure,), round_seconds, ["run_id"])
    per = thr.rename(columns={f"work_{measure}": "work"})[["run_id", "tenant", "work", "active_s"]]
    jct = results[results["measure"] == "jct_s"]
    if len(jct):
        j = jct.astype({"tenant": str}).groupby(["run_id", "tenant"])["value"].agg(["sum", "count"]).reset_index()
        j = j.rename(columns={"sum": "jct_sum_s", "count": "jobs"}).astype({"run_id": str})
        per = per.astype({"run_id": str}).merge(j, on=["run_id", "tenant"], how="outer")
    else:
        per = per.assign(jct_sum_s=0.0, jobs=0)
    per = per.fillna({"work": 0.0, "active_s": 0.0, "jct_sum_s": 0.0, "jobs": 0})
    return seconds, per[_AGG_COLUMNS]


def paired_from_aggregates(seconds: pd.Series, per: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`paired_differences` from :func:`pair_aggregates` (of all runs, concatenated)."""
    if runs.empty or per.empty:
        return pd.DataFrame(columns=_PAIR_COLUMNS)
    per = per.copy()
    per["run_s"] = per["run_id"].map(seconds)
    total = per.groupby("run_id")["work"].sum() / seconds.reindex(per["run_id"].unique())
    ok = runs[runs["status"] == "ok"]
    truthful = ok[ok["variant"] == TRUTHFUL][[*PAIR_KEYS, "run_id"]].rename(columns={"run_id": "truth_id"})
    lying = ok[ok["variant"] != TRUTHFUL]
    pairs = lying.merge(truthful, on=PAIR_KEYS, how="inner")
    if pairs.empty:
        return pd.DataFrame(columns=_PAIR_COLUMNS)
    tab = per.set_index(["run_id", "tenant"])

    def lookup(ids: pd.Series, tenants: pd.Series, col: str) -> np.ndarray:
        idx = pd.MultiIndex.from_arrays([ids.astype(str), tenants.astype(str)])
        return tab[col].reindex(idx).to_numpy(dtype=float)

    out = pairs[["scenario", "cell", "policy", "variant", "strategy", "param", "param_value", "deviator"]].copy()
    out["replication"] = pairs["replication"].astype("int64")
    for side, ids in (("truthful", pairs["truth_id"]), ("lying", pairs["run_id"])):
        work = np.nan_to_num(lookup(ids, pairs["deviator"], "work"))
        act_s = np.nan_to_num(lookup(ids, pairs["deviator"], "active_s"))
        run_s = ids.map(seconds).to_numpy(dtype=float)
        tot = ids.map(total).fillna(0.0).to_numpy(dtype=float)
        out[f"liar_{side}"] = np.divide(work, act_s, out=np.full(work.size, np.nan), where=act_s > 0)
        out[f"total_{side}"] = tot
        out[f"others_{side}"] = tot - np.divide(work, run_s, out=np.zeros(work.size), where=run_s > 0)
        jobs = np.nan_to_num(lookup(ids, pairs["deviator"], "jobs"))
        jsum = np.nan_to_num(lookup(ids, pairs["deviator"], "jct_sum_s"))
        out[f"liar_jct_{side}"] = np.divide(jsum, jobs, out=np.full(jobs.size, np.nan), where=jobs > 0)
    for g in ("liar", "others", "total", "liar_jct"):
        out[f"{g}_diff"] = out[f"{g}_lying"] - out[f"{g}_truthful"]
    out = out[_PAIR_COLUMNS]
    return out.sort_values(["scenario", "cell", "policy", "variant", "replication"], kind="mergesort").reset_index(
        drop=True
    )


def paired_summary(pairs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per (scenario, cell, policy, variant): n pairs, the liar's mean truthful throughput while active
    and its relative gain (ratio estimator: mean diff / mean truthful), and for liar / others / total /
    liar_jct (the liar's mean JCT, s) the mean paired difference with its Student-t ``level`` interval
    (:func:`marketsim.analysis.engine.stats.t_interval`); ``p_gain``: share of replications in which lying raised
    the liar's throughput while active (diff > 1e-9); ``p_jct_gain``: share in which it shortened the
    liar's mean JCT (replications where the liar finished jobs in both runs)."""
    keys = ["scenario", "cell", "policy", "variant"]
    cols = [*keys, "strategy", "param", "param_value", "deviator", "n", "liar_truthful", "liar_rel_gain"]
    cols += [f"{g}_{s}" for g in ("liar", "others", "total", "liar_jct") for s in ("diff", "low", "high")]
    cols += ["p_gain", "p_jct_gain"]
    rows = []
    for key, g in pairs.groupby(keys, sort=True):
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        first = g.iloc[0]
        row.update({c: first[c] for c in ("strategy", "param", "param_value", "deviator")})
        row["n"] = len(g)
        lt = g["liar_truthful"].to_numpy(dtype=float)
        base = float(np.nanmean(lt)) if np.isfinite(lt).any() else float("nan")
        row["liar_truthful"] = base
        for grp in ("liar", "others", "total", "liar_jct"):
            m, lo, hi = t_interval(g[f"{grp}_diff"].to_numpy(dtype=float), level)
            row.update({f"{grp}_diff": m, f"{grp}_low": lo, f"{grp}_high": hi})
        row["liar_rel_gain"] = row["liar_diff"] / base if base > 0 else float("nan")
        d = g["liar_diff"].to_numpy(dtype=float)
        row["p_gain"] = float((d[np.isfinite(d)] > 1e-9).mean()) if np.isfinite(d).any() else float("nan")
        jd = g["liar_jct_diff"].to_numpy(dtype=float)
        row["p_jct_gain"] = float((jd[np.isfinite(jd)] < -1e-6).mean()) if np.isfinite(jd).any() else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
