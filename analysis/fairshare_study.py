"""Reproduction studies of the fair-share papers (OEF): ``marketsim run oef``.

A fair-share study is a ``kind = "study"`` TOML with a ``[scenario]`` table: a fair-share scenario
in the schema of :mod:`scenarios.loader` (cluster, profiles, workload, tenants; no ``policies``,
``replications``, ``seed`` or ``[[variant]]``, which the study sets). Each ``[[panel]]`` deep-merges
its own ``[panel.scenario]`` over it (tables merge key by key, everything else is replaced), may
restrict the study's ``mechanisms`` and ``variants``, and sweeps ``x``: a dotted path into the
scenario (``"kappa"``, ``"workload.arrival_window_s"``) or ``"variant.<name>.<key>"`` (a strategy
parameter of a lying variant, e.g. its inflation factor).

Every cell (panel, value, replication) draws ONE workload: ``SeedSequence(seed, spawn_key=(panel,
xi, rep))`` seeds :meth:`scenarios.loader.Scenario.instantiate`, so every mechanism and every
variant of the cell runs the same tenants, jobs and speedups (common random numbers). A
``[[variant]]`` makes tenants lie: ``tenants = [indices]`` or ``fraction = f`` (drawn per cell),
with a strategy table as in a scenario's variant (``strategy = "fast"``, ``factor = 1.3``; ``scale``,
``report``, ``noise``).

Metrics of one run (one row per panel × x × replication × variant × mechanism), throughputs in
slowest-GPU equivalents (OEF spec §5.4), means over the rounds of the run:

* ``total_est`` / ``total_act``: the cluster's estimated (LP, true speedups) and actual (job-rate
  model, placement included) normalised throughput; ``act_over_est`` their ratio;
* ``mean_jct_h`` (hours, finished jobs), ``makespan_h``, ``jobs_done``, ``jobs_unfinished``;
* ``straggler_workers``: workers of cross-GPU-type jobs summed over rounds (paper §6.3.3);
* ``utilisation``, ``rounds``;
* ``est_tI`` / ``act_tI``: tenant I's mean over the rounds it was present (runs of <= 8 tenants);
* lying variants: ``liar_est``, ``liar_act``, ``honest_est``, ``honest_act`` (the set's summed
  throughput per round of the run), ``liar_jct_h``, ``honest_jct_h``, each with a ``_truthful`` twin
  measured on the SAME tenants in the truthful run of the same cell and mechanism, plus
  ``total_est_truthful``, ``total_act_truthful``, ``mean_jct_h_truthful`` and ``liar_gain``
  (``liar_act − liar_act_truthful``). Headlines compare such columns with ``baseline_metric``.

**Trace scenarios** (``[scenario.workload] trace = ...``, Gavel's lease rounds,
``docs/trace_simulation.md``) run the same way (:func:`summarise_trace_run`): the cluster
measures are means over the rounds weighted by each round's length (rounds of a trace run differ
in length), ``makespan_h`` is the last completion minus the first arrival, ``straggler_workers``
is 0 (a lease is on one GPU type) and there are no per-tenant rows. A lying variant's tenants are
the trace's tenants under its tenancy (``"job"``: single jobs; ``"user"`` / ``N``: every job of
the tenant lies), indexed in order of their first job's arrival; only ``scale`` / ``fast``
strategies apply (:func:`agents.trace_rounds.lying_throughputs`): the policy sees the inflated
throughputs, the jobs progress at the true ones.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from market.errors import InputError

if TYPE_CHECKING:
    from analysis.studies import CellResult, CellSpec, Study, Variant
    from scenarios.loader import Scenario

__all__ = [
    "FAIR_METRICS",
    "VARIANT_KEYS",
    "deep_merge",
    "panel_scenario",
    "variant_strategy",
    "validate_fair_study",
    "execute_fair_cell",
    "summarise_run",
    "summarise_trace_run",
    "trace_tenant_ids",
]

#: default metrics of a fair-share study (plots and the report's summary table use them in order)
FAIR_METRICS = ("total_act", "total_est", "mean_jct_h", "act_over_est", "straggler_workers", "utilisation")
#: keys of a fair-share ``[[variant]]`` besides ``name`` / ``tenants`` / ``fraction``
VARIANT_KEYS = frozenset({"strategy", "factor", "factors", "vector", "e", "job_types"})
_STUDY_SETS = ("policies", "replications", "seed", "variant", "name")
_PER_TENANT_MAX = 8


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in: tables merge key by key, any other value is replaced."""
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _set_path(doc: dict[str, Any], path: str, value: Any, where: str) -> None:
    """Set ``doc[a][b]... = value`` for ``path = "a.b..."``; a numeric part indexes an array
    (``"profiles.step.1"``: the upper end of the ordered generator's step range)."""
    parts = path.split(".")
    node: Any = doc
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not p.isdigit() or int(p) >= len(node):
                raise InputError(where, path, f"indexes {p!r} of an array of {len(node)} entries")
            if last:
                node[int(p)] = value
                return
            node = node[int(p)]
            continue
        if not isinstance(node, dict):
            raise InputError(where, path, f"crosses {parts[i - 1]!r}, which is not a table or array of the scenario")
        if last:
            node[p] = value
            return
        node = node.setdefault(p, {})


def panel_mechanisms(study: Study, pi: int) -> tuple[str, ...]:
    """The mechanisms panel ``pi`` runs (its own list, else the study's)."""
    return study.panels[pi].mechanisms or study.mechanisms


def panel_variants(study: Study, pi: int) -> tuple[Variant, ...]:
    """The lying variants panel ``pi`` runs (its own list of names, else all of the study's)."""
    names = study.panels[pi].variants
    if names is None:
        return study.variants
    return tuple(v for v in study.variants if v.name in names)


def panel_scenario(study: Study, pi: int, x: Any) -> Scenario:
    """The validated :class:`scenarios.loader.Scenario` of panel ``pi`` at value ``x``."""
    from scenarios.loader import parse_scenario

    panel = study.panels[pi]
    doc = deep_merge(study.scenario, panel.scenario)
    if not panel.x.startswith("variant."):
        _set_path(doc, panel.x, x, f"study {study.name}: panel[{pi}].x")
    doc["policies"] = list(panel_mechanisms(study, pi))
    doc["name"] = f"{study.name}-p{pi}"
    base_dir = Path(study.base_dir) if study.base_dir else None
    return parse_scenario(doc, f"{study.name}-p{pi}", base_dir=base_dir, source=study.source)


def variant_strategy(study: Study, variant: Variant, pi: int, x: Any, gpu_types: Sequence[str]) -> Any:
    """The reporting strategy of ``variant`` on panel ``pi`` at ``x`` (a panel over
    ``variant.<name>.<key>`` sets that key to ``x``)."""
    from scenarios.loader import _strategy, _Table

    params = dict(variant.params)
    prefix = f"variant.{variant.name}."
    if study.panels[pi].x.startswith(prefix):
        params[study.panels[pi].x[len(prefix) :]] = x
    t = _Table(params, f"study {study.name}: variant {variant.name}")
    strategy = _strategy(t, gpu_types)
    t.done()
    return strategy


def validate_fair_study(study: Study) -> None:
    """Build every panel's scenario at every value and every variant's strategy once, so a bad
    key fails when the study is loaded (naming the panel and the key), not in a worker."""
    if not study.scenario:
        raise InputError(f"study {study.name}: scenario", {}, "must be a fair-share scenario table")
    for k in _STUDY_SETS:
        if k in study.scenario:
            raise InputError(f"study {study.name}: scenario.{k}", study.scenario[k], "is set by the study, not here")
    names = {v.name for v in study.variants}
    first = panel_scenario(study, 0, study.panels[0].values[0])
    for v in study.variants:  # the variant as written (a panel may sweep one of its keys)
        from scenarios.loader import _strategy, _Table

        t = _Table(dict(v.params), f"study {study.name}: variant {v.name}")
        _strategy(t, first.cluster.gpu_types)
        t.done()
    for pi, panel in enumerate(study.panels):
        for k in _STUDY_SETS:
            if k in panel.scenario:
                raise InputError(f"study {study.name}: panel[{pi}].scenario.{k}", panel.scenario[k],
                                 "is set by the study, not here")  # fmt: skip
        for m in panel.mechanisms:
            if m not in study.mechanisms:
                raise InputError(f"study {study.name}: panel[{pi}].mechanisms", m,
                                 f"is not one of the study's mechanisms {list(study.mechanisms)}")  # fmt: skip
        for v in panel.variants or ():
            if v not in names:
                raise InputError(f"study {study.name}: panel[{pi}].variants", v, f"is not a variant {sorted(names)}")
        if panel.x.startswith("variant."):
            parts = panel.x.split(".")
            where = f"study {study.name}: panel[{pi}].x"
            if len(parts) != 3 or parts[1] not in names or parts[2] not in VARIANT_KEYS:
                raise InputError(where, panel.x, f"must be variant.<one of {sorted(names)}>.<{sorted(VARIANT_KEYS)}>")
            if parts[1] not in {v.name for v in panel_variants(study, pi)}:
                raise InputError(where, panel.x, "sweeps a variant the panel does not run")
        for x in panel.values:
            scen = panel_scenario(study, pi, x)
            n = scen.workload.tenants
            for v in panel_variants(study, pi):
                bad = [i for i in v.tenants if not 0 <= i < n]
                if bad:
                    raise InputError(f"study {study.name}: variant {v.name}.tenants", bad,
                                     f"must be tenant indices in 0..{n - 1} (panel {pi})")  # fmt: skip
                strat = variant_strategy(study, v, pi, x, scen.cluster.gpu_types)
                if scen.workload.trace is not None:
                    from agents.strategies import ScaleDims

                    if not isinstance(strat, ScaleDims):
                        raise InputError(f"study {study.name}: variant {v.name}.strategy", v.params.get("strategy"),
                                         "is not supported with a trace workload: use 'scale' or 'fast'")  # fmt: skip


def _liar_indices(variant: Variant, n: int, rng: np.random.Generator) -> list[int]:
    if variant.tenants:
        return sorted(set(variant.tenants))
    k = max(1, int(round(variant.fraction * n)))
    return sorted(int(i) for i in rng.choice(n, size=min(k, n), replace=False))


def summarise_run(
    model: Any, liars: Sequence[str] = (), frame: pd.DataFrame | None = None
) -> tuple[dict[str, float], pd.DataFrame]:
    """Metrics of one finished :class:`agents.model.MarketModel` run (see the module docstring)
    and its per-tenant rows (``tenant, index, est, act, jct_h, jobs_done, liar``). ``frame``: the
    model's :meth:`~agents.model.MarketModel.tidy` frame if already computed."""
    f = model.tidy() if frame is None else frame
    rounds = max(int(model.steps), 1)
    cl = f[f["tenant"] == ""]
    by = cl.groupby("measure", sort=False)["value"]
    means, sums = by.mean(), by.sum()
    ids = [t.tenant_id for t in model.config.tenants]
    ten = f[(f["tenant"] != "") & f["measure"].isin(["est", "act"])]
    agg = ten.groupby(["measure", "tenant"], sort=False)["value"].agg(["sum", "count"])

    def col(measure: str, what: str) -> dict[str, float]:
        return agg.loc[measure, what].to_dict() if measure in agg.index.get_level_values(0) else {}

    s_est, s_act, c_est = col("est", "sum"), col("act", "sum"), col("est", "count")
    jct = f[f["measure"] == "jct_s"]
    jct_by = jct.groupby("tenant", sort=False)["value"].agg(["sum", "count"])
    jsum, jcount = jct_by["sum"].to_dict(), jct_by["count"].to_dict()
    n_jobs = sum(len(t.jobs) for t in model.config.tenants)
    est, act = float(means.get("total_est", 0.0)), float(means.get("total_act", 0.0))
    row: dict[str, float] = {
        "total_est": est,
        "total_act": act,
        "act_over_est": act / est if est > 0 else math.nan,
        "mean_jct_h": float(jct["value"].mean() / 3600.0) if len(jct) else math.nan,
        "makespan_h": float((jct["round"].max() + 1) * model.round_seconds / 3600.0) if len(jct) else math.nan,
        "jobs_done": float(len(jct)),
        "jobs_unfinished": float(n_jobs - len(jct)),
        "straggler_workers": float(sums.get("cross_type_workers", 0.0)),
        "utilisation": float(means.get("utilisation", 0.0)),
        "rounds": float(rounds),
    }

    def mean_of(sums_: dict[str, float], t: str) -> float:
        c = c_est.get(t, 0)
        return float(sums_.get(t, 0.0) / c) if c > 0 else math.nan

    def jct_of(who: Sequence[str]) -> float:
        n = sum(jcount.get(t, 0) for t in who)
        return float(sum(jsum.get(t, 0.0) for t in who) / n / 3600.0) if n else math.nan

    if len(ids) <= _PER_TENANT_MAX:
        for i, t in enumerate(ids):
            row[f"est_t{i}"] = mean_of(s_est, t)
            row[f"act_t{i}"] = mean_of(s_act, t)
    if liars:
        liar_set = set(liars)
        honest = [t for t in ids if t not in liar_set]
        row.update(
            liar_est=sum(s_est.get(t, 0.0) for t in liars) / rounds,
            liar_act=sum(s_act.get(t, 0.0) for t in liars) / rounds,
            honest_est=sum(s_est.get(t, 0.0) for t in honest) / rounds,
            honest_act=sum(s_act.get(t, 0.0) for t in honest) / rounds,
            liar_jct_h=jct_of(liars),
            honest_jct_h=jct_of(honest),
        )
    trows = pd.DataFrame(
        {
            "tenant": ids,
            "index": range(len(ids)),
            "est": [mean_of(s_est, t) for t in ids],
            "act": [mean_of(s_act, t) for t in ids],
            "jct_h": [jct_of([t]) for t in ids],
            "jobs_done": [int(jcount.get(t, 0)) for t in ids],
            "liar": [t in set(liars) for t in ids],
        }
    )
    return row, trows


def trace_tenant_ids(tenants: np.ndarray) -> list[str]:
    """The distinct tenant names of a trace workload in order of their first job (arrival order)."""
    names, first = np.unique(np.asarray(tenants).astype(str), return_index=True)
    return [str(n) for n in names[np.argsort(first, kind="stable")]]


def summarise_trace_run(model: Any, liars: Sequence[str] = (), frame: pd.DataFrame | None = None) -> dict[str, float]:
    """Metrics of one finished trace run (module docstring; JCTs from the completions table)."""
    tw = model.config.trace
    f = model.tidy() if frame is None else frame
    cl = f[f["tenant"] == ""].pivot_table(index="round", columns="measure", values="value", aggfunc="first")
    length = cl["round_s"].to_numpy(dtype=float) if "round_s" in cl else np.ones(len(cl))
    total_len = float(length.sum())

    def wmean(measure: str) -> float:
        if measure not in cl or total_len <= 0:
            return math.nan
        return float(np.nansum(cl[measure].to_numpy(dtype=float) * length) / total_len)

    comp = model.completions()
    jct = comp["jct_s"].to_numpy(dtype=float)
    n_jobs = len(tw.trace)
    est, act = wmean("total_est"), wmean("total_act")
    row: dict[str, float] = {
        "total_est": est,
        "total_act": act,
        "act_over_est": act / est if est > 0 else math.nan,
        "mean_jct_h": float(jct.mean() / 3600.0) if jct.size else math.nan,
        "makespan_h": float((comp["completion_s"].max() - tw.trace.arrival_s.min()) / 3600.0) if jct.size else math.nan,
        "jobs_done": float(jct.size),
        "jobs_unfinished": float(n_jobs - jct.size),
        "straggler_workers": 0.0,
        "utilisation": wmean("utilisation"),
        "rounds": float(max(int(model.auctioneer.trace.rounds), 1)),  # Gavel rounds (steps may merge rounds)
    }
    if liars:
        lie = comp["tenant"].astype(str).isin(set(liars)).to_numpy()
        row["liar_jct_h"] = float(jct[lie].mean() / 3600.0) if lie.any() else math.nan
        row["honest_jct_h"] = float(jct[~lie].mean() / 3600.0) if (~lie).any() else math.nan
        row["liar_jobs_done"] = float(lie.sum())
    return row


_TRACE_TWINS = ("liar_jct_h", "honest_jct_h")


def _execute_trace_cell(spec: CellSpec, scenario: Scenario, scen_ss: np.random.SeedSequence,
                        liar_rng: np.random.Generator, key: dict[str, Any]) -> CellResult:  # fmt: skip
    """A cell of a trace scenario: every mechanism truthful and with each variant's liars."""
    from agents.model import MarketModel
    from agents.trace_rounds import lying_throughputs
    from analysis.studies import TRUTHFUL, CellResult

    study = spec.study

    work_ss = np.random.SeedSequence(scen_ss.entropy, spawn_key=scen_ss.spawn_key).spawn(2)[0]
    first = scenario.instantiate(spec.mechanisms[0], TRUTHFUL, np.random.default_rng(work_ss))

    def config_of(mech: str) -> Any:
        """``first`` for ``mech``: the same (read-only) trace workload, a fresh cluster."""
        return replace(first, policy=mech, cluster=scenario.cluster.build())

    ids = trace_tenant_ids(first.trace.tenants)
    variants: list[tuple[str, tuple[str, ...], Any]] = [(TRUTHFUL, (), None)]
    for v in panel_variants(study, spec.panel):
        strat = variant_strategy(study, v, spec.panel, spec.x, scenario.cluster.gpu_types)
        bad = [i for i in v.tenants if not 0 <= i < len(ids)]
        if bad:
            raise InputError(f"study {study.name}: variant {v.name}.tenants", bad,
                             f"must be tenant indices in 0..{len(ids) - 1} (the trace's tenants)")  # fmt: skip
        variants.append((v.name, tuple(ids[i] for i in _liar_indices(v, len(ids), liar_rng)), strat))
    rows: list[dict[str, Any]] = []
    for mech in spec.mechanisms:
        truthful: tuple[dict[str, float], Any, pd.DataFrame] | None = None
        for vname, liars, strat in variants:
            t0 = time.perf_counter()
            config = config_of(mech)
            if liars:
                tw = config.trace
                R = lying_throughputs(tw.throughputs, tw.trace.job_type, tw.tenants, liars, strat)
                config = replace(config, trace=replace(tw, reported=R, liars=liars))
            model_ss = np.random.SeedSequence(scen_ss.entropy, spawn_key=scen_ss.spawn_key).spawn(2)[1]
            model = MarketModel(config, rng=np.random.default_rng(model_ss))
            model.progress = False
            model.run()
            tidy = model.tidy()
            metrics = summarise_trace_run(model, liars, tidy)
            if vname == TRUTHFUL:
                truthful = (metrics, model, tidy)
                metrics["liar_gain"] = 0.0
            else:
                assert truthful is not None
                twin = summarise_trace_run(truthful[1], liars, truthful[2])
                for name in _TRACE_TWINS:
                    metrics[f"{name}_truthful"] = twin[name]
                for name in ("total_est", "total_act", "mean_jct_h"):
                    metrics[f"{name}_truthful"] = truthful[0][name]
                # the liars' JCT saved by lying (hours; > 0 = the liars finish sooner)
                metrics["liar_gain"] = twin["liar_jct_h"] - metrics["liar_jct_h"]
            seconds = time.perf_counter() - t0
            rows.append({**key, "variant": vname, "mechanism": mech, **metrics, "seconds": seconds})
    return CellResult(spec.run_id, rows, [])


_TWINS = ("liar_est", "liar_act", "honest_est", "honest_act", "liar_jct_h", "honest_jct_h")


def execute_fair_cell(spec: CellSpec) -> CellResult:
    """Draw the cell's workload once and run every mechanism of the panel, truthful and lying."""
    from agents.model import MarketModel
    from analysis.studies import TRUTHFUL, CellResult

    study = spec.study
    try:
        panel = study.panels[spec.panel]
        xi = 0 if panel.common_workload else spec.xi
        ss = np.random.SeedSequence(study.seed, spawn_key=(spec.panel, xi, spec.rep))
        scen_ss, liar_ss = ss.spawn(2)
        scenario = panel_scenario(study, spec.panel, spec.x)
        liar_rng = np.random.default_rng(liar_ss)
        key = {
            "study": study.name,
            "panel": spec.panel,
            "x_name": panel.x,
            "x": float(spec.x) if isinstance(spec.x, (int, float)) else spec.x,
            "replication": spec.rep,
        }
        if scenario.workload.trace is not None:
            return _execute_trace_cell(spec, scenario, scen_ss, liar_rng, key)
        ids = scenario.tenant_ids()
        variants: list[tuple[str, dict[str, Any]]] = [(TRUTHFUL, {})]
        for v in panel_variants(study, spec.panel):
            strat = variant_strategy(study, v, spec.panel, spec.x, scenario.cluster.gpu_types)
            variants.append((v.name, {ids[i]: strat for i in _liar_indices(v, len(ids), liar_rng)}))
        rows: list[dict[str, Any]] = []
        trows: list[dict[str, Any]] = []
        for mech in spec.mechanisms:
            truthful: dict[str, float] = {}
            truthful_run: tuple[Any, pd.DataFrame] | None = None
            for vname, liars in variants:
                t0 = time.perf_counter()
                work_ss, model_ss = np.random.SeedSequence(scen_ss.entropy, spawn_key=scen_ss.spawn_key).spawn(2)
                config = scenario.instantiate(mech, TRUTHFUL, np.random.default_rng(work_ss))
                if liars:
                    tenants = tuple(replace(t, strategy=liars[t.tenant_id]) if t.tenant_id in liars else t
                                    for t in config.tenants)  # fmt: skip
                    config = replace(config, tenants=tenants)
                model = MarketModel(config, rng=np.random.default_rng(model_ss))
                model.run()
                tidy = model.tidy()
                metrics, tframe = summarise_run(model, sorted(liars), tidy)
                if vname == TRUTHFUL:
                    truthful, truthful_run = metrics, (model, tidy)
                    metrics["liar_gain"] = 0.0
                else:
                    assert truthful_run is not None
                    twin, _ = summarise_run(truthful_run[0], sorted(liars), truthful_run[1])
                    for name in _TWINS:
                        metrics[f"{name}_truthful"] = twin[name]
                    for name in ("total_est", "total_act", "mean_jct_h"):
                        metrics[f"{name}_truthful"] = truthful[name]
                    metrics["liar_gain"] = metrics["liar_act"] - twin["liar_act"]
                seconds = time.perf_counter() - t0
                rows.append({**key, "variant": vname, "mechanism": mech, **metrics, "seconds": seconds})
                for tr in tframe.to_dict("records"):
                    trows.append({**key, "variant": vname, "mechanism": mech, **tr})
        return CellResult(spec.run_id, rows, trows)
    except Exception as exc:  # a crashing cell becomes a failure row; the study goes on
        return CellResult.failed(spec.run_id, exc)
