"""Reproduction studies of the fair-share papers (OEF): ``marketsim run oef``.

A fair-share study is a ``kind = "study"`` TOML with a ``[scenario]`` table: a fair-share scenario
in the schema of :mod:`marketsim.scenarios.loader` (cluster, profiles, workload, tenants; no ``policies``,
``replications``, ``seed`` or ``[[variant]]``, which the study sets). Each ``[[panel]]`` deep-merges
its own ``[panel.scenario]`` over it (tables merge key by key, everything else is replaced), may
restrict the study's ``mechanisms`` and ``variants``, and sweeps ``x``: a dotted path into the
scenario (``"kappa"``, ``"workload.arrival_window_s"``) or ``"variant.<name>.<key>"`` (a strategy
parameter of a lying variant, e.g. its inflation factor).

Every cell (panel, value, replication) draws ONE workload: ``SeedSequence(seed, spawn_key=(panel,
xi, rep))`` seeds :meth:`marketsim.scenarios.loader.Scenario.instantiate`, so every mechanism and every
variant of the cell runs the same tenants, jobs and speedups (common random numbers). A
``[[variant]]`` makes tenants lie: ``tenants = [indices]`` or ``fraction = f`` (drawn per cell),
with a strategy table as in a scenario's variant (``strategy = "fast"``, ``factor = 1.3``; ``scale``,
``report``, ``noise``).

Every cell runs on the one round engine (:mod:`marketsim.agents.trace_rounds`, ``docs/trace_simulation.md``).
Metrics of one run (one row per panel × x × replication × variant × mechanism), throughputs in
slowest-GPU equivalents (OEF spec §5.4). Every figure is a time integral over the run's records
(each weighted by the seconds it covers, its ``round_s``; :mod:`marketsim.analysis.engine.stats`) or a per-job
figure:

* ``total_est`` / ``total_act``: the cluster's estimated (the policy's allocation at the true
  speedups) and actual (realised leases: stragglers, hosts, restarts included) normalised
  throughput, work per simulated second of the run; ``act_over_est`` their ratio;
* ``mean_jct_h`` (hours, finished jobs), ``makespan_h``, ``jobs_done``, ``jobs_unfinished``;
* ``straggler_workers``: workers of cross-GPU-type leases summed over rounds (paper §6.3.3; a
  count per round, not a time integral: a round is ``round_seconds`` unless every lease ended early);
* ``utilisation`` (GPU-seconds used / GPU-seconds available), ``rounds``;
* ``est_tI`` / ``act_tI``: tenant I's time mean over the records it was present in (its integral over
  them divided by their seconds; runs of <= 8 tenants);
* lying variants: ``liar_est``, ``liar_act``, ``honest_est``, ``honest_act`` (the set's summed
  throughput, work per second of the run), ``liar_act_active`` (the liars' summed throughput while
  any of them is active: its integral over those records divided by their seconds;
  :data:`marketsim.analysis.engine.stats.ACTIVE_DEFINITION`), ``liar_jct_h``, ``honest_jct_h``, each with a
  ``_truthful`` twin measured on the SAME tenants in the truthful run of the same cell and mechanism,
  plus ``total_est_truthful``, ``total_act_truthful``, ``mean_jct_h_truthful`` and ``liar_gain``
  (``liar_act − liar_act_truthful``). Headlines compare such columns with ``baseline_metric``.

Further per-run metrics (runs of <= 8 tenants; NaN where they do not apply), for OEF §6.2:

* ``spread_act`` / ``spread_est``: max / min over the tenants of their time-mean actual / estimated
  throughput over the records starting before the first change of the tenant set (a tenant leaving, or a job
  type added, ``split_s``); ``spread_act_after`` / ``spread_est_after`` the same over the records
  from ``split_s`` on (Fig. 4(a) "almost identical normalised progress");
* ``envy_own_u3`` = ``E[3,3]``, ``envy_other_u3_u0`` = ``E[3,0]`` and ``min_envy_ratio`` =
  ``min_{l != i} E[l,l] / E[l,i]`` with ``E[l,i] = w_l · x_i`` (true speedups, the last round's
  allocation; one class per tenant):
  Fig. 6's envy ratios;
* a tenant that adds a job type (``add_type``, spec S4): ``u0_over_others_before`` (tenant 0's
  estimated throughput over the others' mean, before ``split_s``), ``u0_type_ratio`` (its added
  class over its first class) and ``u0_class_over_others`` (its classes' mean over the other
  tenants' mean), both from the last round's allocation (Fig. 5(b)); ``u0_over_others_before_act`` /
  ``u0_over_others_after_act``: tenant 0's ACTUAL throughput over the others' mean before / from
  ``split_s`` (the rate model has no per-class actual: tenant level, both classes together);
* ``eff_dev`` = ``|Σ est − Σ est_reported| / Σ est_reported`` over the run (spec §5.4, Fig. 10(b));
* set across the mechanisms of a cell (truthful, own realisation) when ``maxmin`` ran:
  ``min_user_gain_vs_maxmin`` = ``min_l est_tl / est_tl(maxmin)`` and ``u3_gains_most`` (1 if tenant 3
  has the largest such ratio, else 0) (Fig. 5(a)).

**Realisation** (:mod:`marketsim.market.oef.realise`, ``ModelConfig.realisation``): each mechanism runs with
its OWN realisation (``realisation_mode = "own"``: Gavel's lease for ``gavel`` and Gavel's own
policies, Gandiva_fair's lottery, OEF's rounding for the others); a panel's ``realisations =
["own", "oef-rounding"]`` adds a run with OEF's rounding for the mechanisms whose own realisation
differs (``realisation_mode = "alternative"``). An ``engine = "trace"`` panel runs every mechanism
with Gavel's lease and its leases on hosts; its realisations are host placements (``own`` =
``placement = "auto"``, ``oef-placement``). Columns ``realisation`` and ``realisation_mode``.

**Trace scenarios** (``[scenario.workload] trace = ...``, Gavel's lease rounds,
``docs/trace_simulation.md``) run the same way (:func:`summarise_trace_run`): the cluster
measures are time integrals weighted by each record's ``round_s`` (records of a trace run differ
in length: a record may merge many rounds), ``makespan_h`` is the last completion minus the first
arrival, ``straggler_workers`` the recorded cross-type workers (0 under Gavel's lease) and the
only per-tenant rows are
the liars' (every variant's liars are agents, truthful ones in the truthful run, for
``liar_act_active``); ``liar_gain`` is the liars' mean JCT saved by lying (hours, > 0 = sooner).
A lying variant's tenants are the trace's tenants under its tenancy (``"job"``: single jobs;
``"user"`` / ``N``: every job of the tenant lies), indexed in order of their first job's arrival;
they play the variant's strategy as trace tenants (:mod:`marketsim.agents.trace_tenants`, every strategy): the policy
sees their reports, the jobs progress at the true throughputs.
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

from marketsim.analysis.engine.cells import TRUTHFUL, CellResult, CellSpec
from marketsim.analysis.engine.stats import cluster_integrals
from marketsim.market.errors import InputError

if TYPE_CHECKING:
    from marketsim.analysis.engine.studies import Study, Variant
    from marketsim.scenarios.loader import Scenario

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
    """The validated :class:`marketsim.scenarios.loader.Scenario` of panel ``pi`` at value ``x``."""
    from marketsim.scenarios.loader import parse_scenario

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
    from marketsim.scenarios.loader import _strategy, _Table

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
        from marketsim.scenarios.loader import _strategy, _Table

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
        if panel.engine == "trace" and panel_variants(study, pi):
            why = "must be [] on an engine = 'trace' panel (reports are not mapped to the trace twin)"
            names_ = [v.name for v in panel_variants(study, pi)]
            raise InputError(f"study {study.name}: panel[{pi}].variants", names_, why)
        for x in panel.values:
            scen = panel_scenario(study, pi, x)
            if panel.engine == "trace" and scen.workload.trace is not None:
                why = "replays the panel's synthetic workload; its scenario must not name a trace"
                raise InputError(f"study {study.name}: panel[{pi}].engine", "trace", why)
            n = scen.workload.tenants
            for v in panel_variants(study, pi):
                bad = [i for i in v.tenants if not 0 <= i < n]
                if bad:
                    raise InputError(f"study {study.name}: variant {v.name}.tenants", bad,
                                     f"must be tenant indices in 0..{n - 1} (panel {pi})")  # fmt: skip
                variant_strategy(study, v, pi, x, scen.cluster.gpu_types)  # validates the strategy


def _liar_indices(variant: Variant, n: int, rng: np.random.Generator) -> list[int]:
    if variant.tenants:
        return sorted(set(variant.tenants))
    k = max(1, int(round(variant.fraction * n)))
    return sorted(int(i) for i in rng.choice(n, size=min(k, n), replace=False))


def _split_s(model: Any) -> float | None:
    """The first time the tenant set changes after the start: a tenant leaving or a later job
    arrival of a tenant present from 0 (s); None if it never does."""
    times = [t.leave_at for t in model.config.tenants if t.leave_at is not None and t.leave_at > 0]
    for t in model.config.tenants:
        if t.arrival <= 0:
            times += [j.arrival for j in t.jobs if j.arrival > 0]
    return float(min(times)) if times else None


def _spread(values: Sequence[float]) -> float:
    v = np.asarray([x for x in values if math.isfinite(x)], dtype=float)
    return float(v.max() / v.min()) if v.size >= 2 and v.min() > 0 else math.nan


def _timed_tenant_rows(f: pd.DataFrame, round_seconds: float) -> tuple[pd.DataFrame, float]:
    """The tenants' ``est`` / ``act`` / ``est_reported`` rows with their record's ``start`` and
    ``length`` (s: ``round_start_s`` / ``round_s`` where the record has them, else ``round x
    round_seconds`` / ``round_seconds``; :func:`marketsim.analysis.engine.stats.record_lengths`) and ``w`` =
    value x length; and the seconds the run's records cover."""
    from marketsim.analysis.engine.stats import record_lengths

    length = record_lengths(f, round_seconds, keys=())
    starts = f[(f["tenant"] == "") & (f["measure"] == "round_start_s")].set_index("round")["value"]
    fixed = pd.Series(length.index.to_numpy(dtype=float) * round_seconds, index=length.index)
    start = starts.reindex(length.index).fillna(fixed)
    ten = f[(f["tenant"] != "") & f["measure"].isin(["est", "act", "est_reported"])]
    ten = ten.assign(start=ten["round"].map(start).to_numpy(dtype=float),
                     length=ten["round"].map(length).to_numpy(dtype=float))  # fmt: skip
    return ten.assign(w=ten["value"].to_numpy(dtype=float) * ten["length"].to_numpy()), float(length.sum())


def _time_means(frame: pd.DataFrame, measure: str) -> dict[str, float]:
    """Per tenant: ``measure`` integrated over the records it has rows in, over their seconds."""
    g = frame[frame["measure"] == measure].groupby("tenant")[["w", "length"]].sum()
    return (g["w"] / g["length"]).to_dict()


def _small_run_metrics(model: Any, f: pd.DataFrame, ids: Sequence[str], liars: Sequence[str]) -> dict[str, float]:
    """The §6.2 metrics of the module docstring for a run of <= 8 tenants (per-tenant figures are
    time means over the records the tenant has rows in, before / from ``split_s``)."""
    out: dict[str, float] = {}
    split = _split_s(model)
    ten, _ = _timed_tenant_rows(f, float(model.round_seconds))
    before = ten if split is None else ten[ten["start"] < split - 1e-9]
    after = ten.iloc[0:0] if split is None else ten[ten["start"] >= split - 1e-9]
    means = _time_means

    for tag, part in (("", before), ("_after", after)):
        for measure in ("act", "est"):
            out[f"spread_{measure}{tag}"] = _spread(list(means(part, measure).values()))
    if liars:
        liar_set = set(liars)
        a = means(after, "act")
        out["liar_act_after"] = float(sum(a.get(t, 0.0) for t in liar_set)) if split is not None else math.nan
    eng = model.auctioneer
    alloc = eng.allocation
    classes = list(eng.classes)
    by_id = {t.tenant_id: t for t in model.config.tenants}
    if alloc is not None and classes:
        X = np.asarray(alloc.X, dtype=float)
        W = np.array([np.asarray(by_id[u].speedups[jt], dtype=float) / by_id[u].speedups[jt][0] for u, jt in classes])
        est_c = np.einsum("lj,lj->l", W, X)
        owners = [u for u, _ in classes]
        if len(set(owners)) == len(owners) == len(ids) and len(ids) >= 4:  # one class per tenant
            E = W @ X.T  # E[l, i]: tenant l's true throughput on tenant i's allocation
            pos = [i for i, u in enumerate(owners) if u == ids[3]], [i for i, u in enumerate(owners) if u == ids[0]]
            l3, l0 = pos[0][0], pos[1][0]
            out["envy_own_u3"], out["envy_other_u3_u0"] = float(E[l3, l3]), float(E[l3, l0])
            off = ~np.eye(len(owners), dtype=bool) & (E > 0)
            ratios = (np.diag(E)[:, None] / np.where(E > 0, E, 1.0))[off]
            out["min_envy_ratio"] = float(ratios.min()) if ratios.size else math.nan
        mine = [i for i, u in enumerate(owners) if u == ids[0]]
        if len(mine) == 2 and split is not None:  # tenant 0 added a job type (spec S4)
            first_type = by_id[ids[0]].jobs[0].job_type
            i0 = next(i for i in mine if classes[i][1] == first_type)
            i1 = next(i for i in mine if i != i0)
            others = [est_c[[i for i, u in enumerate(owners) if u == t]].sum() for t in ids[1:] if t in owners]
            out["u0_type_ratio"] = float(est_c[i1] / est_c[i0]) if est_c[i0] > 0 else math.nan
            om = float(np.mean(others)) if others else math.nan
            out["u0_class_over_others"] = float(est_c[mine].mean() / om) if om > 0 else math.nan
            b = means(before, "est")
            ob = [b[t] for t in ids[1:] if t in b]
            out["u0_over_others_before"] = float(b.get(ids[0], math.nan) / np.mean(ob)) if ob else math.nan
            for tag, part in (("before", before), ("after", after)):  # the same on ACTUAL throughput (Fig. 5(b))
                act = means(part, "act")
                oa = [act[t] for t in ids[1:] if t in act]
                den = float(np.mean(oa)) if oa else math.nan
                out[f"u0_over_others_{tag}_act"] = float(act.get(ids[0], math.nan) / den) if den > 0 else math.nan
    return out


def summarise_run(
    model: Any, liars: Sequence[str] = (), frame: pd.DataFrame | None = None
) -> tuple[dict[str, float], pd.DataFrame]:
    """Metrics of one finished :class:`marketsim.agents.model.MarketModel` run (see the module docstring)
    and its per-tenant rows (``tenant, index, est, act, jct_h, jobs_done, liar``). ``frame``: the
    model's :meth:`~marketsim.agents.model.MarketModel.tidy` frame if already computed. Rates are means over
    simulated time (each record weighted by its length ``round_s``); a tenant's over the time it had
    an active job; the liars' and honest tenants' summed rates over the whole run's time."""
    f = model.tidy() if frame is None else frame
    cl = f[f["tenant"] == ""]
    sums = cl.groupby("measure", sort=False)["value"].sum()
    ids = [t.tenant_id for t in model.config.tenants]
    ten, run_s = _timed_tenant_rows(f, float(model.round_seconds))
    agg = ten.groupby(["measure", "tenant"], sort=False)[["w", "length"]].sum()

    def col(measure: str, what: str) -> dict[str, float]:
        return agg.loc[measure, what].to_dict() if measure in agg.index.get_level_values(0) else {}

    # integrals (value x seconds) per tenant, and the seconds of the records each tenant has rows in
    s_est, s_act, c_est = col("est", "w"), col("act", "w"), col("est", "length")
    jct = f[f["measure"] == "jct_s"]
    jct_by = jct.groupby("tenant", sort=False)["value"].agg(["sum", "count"])
    jsum, jcount = jct_by["sum"].to_dict(), jct_by["count"].to_dict()
    n_jobs = sum(len(t.jobs) for t in model.config.tenants)
    integ = cluster_integrals(f, model.round_seconds, keys=()).iloc[0]  # time integrals over the records
    est, act = float(integ["total_est"]), float(integ["total_act"])
    comp = model.completions()
    first_arrival = min((j.arrival for t in model.config.tenants for j in t.jobs), default=0.0)
    row: dict[str, float] = {
        "total_est": est,
        "total_act": act,
        "act_over_est": act / est if est > 0 else math.nan,
        "mean_jct_h": float(jct["value"].mean() / 3600.0) if len(jct) else math.nan,
        "makespan_h": float((comp["completion_s"].max() - first_arrival) / 3600.0) if len(comp) else math.nan,
        "jobs_done": float(len(jct)),
        "jobs_unfinished": float(n_jobs - len(jct)),
        "straggler_workers": float(sums.get("cross_type_workers", 0.0)),
        "utilisation": float(integ["utilisation"]),
        "rounds": float(max(int(model.auctioneer.trace.rounds), 1)),
    }

    def mean_of(sums_: dict[str, float], t: str) -> float:
        c = c_est.get(t, 0.0)
        return float(sums_.get(t, 0.0) / c) if c > 0 else math.nan

    def jct_of(who: Sequence[str]) -> float:
        n = sum(jcount.get(t, 0) for t in who)
        return float(sum(jsum.get(t, 0.0) for t in who) / n / 3600.0) if n else math.nan

    s_rep = col("est_reported", "w") if "est_reported" in agg.index.get_level_values(0) else {}
    tot_est, tot_rep = sum(s_est.values()), sum(s_rep.values())
    row["eff_dev"] = abs(tot_est - tot_rep) / tot_rep if tot_rep > 0 else math.nan
    if len(ids) <= _PER_TENANT_MAX:
        for i, t in enumerate(ids):
            row[f"est_t{i}"] = mean_of(s_est, t)
            row[f"act_t{i}"] = mean_of(s_act, t)
        row.update(_small_run_metrics(model, f, ids, liars))
    if liars:
        liar_set = set(liars)
        honest = [t for t in ids if t not in liar_set]
        per_s = 1.0 / run_s if run_s > 0 else math.nan  # work per second of the run
        row.update(
            liar_est=sum(s_est.get(t, 0.0) for t in liars) * per_s,
            liar_act=sum(s_act.get(t, 0.0) for t in liars) * per_s,
            honest_est=sum(s_est.get(t, 0.0) for t in honest) * per_s,
            honest_act=sum(s_act.get(t, 0.0) for t in honest) * per_s,
            liar_jct_h=jct_of(liars),
            honest_jct_h=jct_of(honest),
            liar_act_active=_liar_act_active(f, liars, model.round_seconds),
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
    from marketsim.agents.trace_tenants import tenant_order

    return tenant_order(tenants)


def summarise_trace_run(model: Any, liars: Sequence[str] = (), frame: pd.DataFrame | None = None) -> dict[str, float]:
    """Metrics of one finished trace run (module docstring; JCTs from the completions table)."""
    tw = model.config.trace
    f = model.tidy() if frame is None else frame
    integ = cluster_integrals(f, model.round_seconds, keys=()).iloc[0]  # records weigh their round_s
    comp = model.completions()
    jct = comp["jct_s"].to_numpy(dtype=float)
    n_jobs = len(tw.trace)
    est, act = float(integ["total_est"]), float(integ["total_act"])
    row: dict[str, float] = {
        "total_est": est,
        "total_act": act,
        "act_over_est": act / est if est > 0 else math.nan,
        "mean_jct_h": float(jct.mean() / 3600.0) if jct.size else math.nan,
        "makespan_h": float((comp["completion_s"].max() - tw.trace.arrival_s.min()) / 3600.0) if jct.size else math.nan,
        "jobs_done": float(jct.size),
        "jobs_unfinished": float(n_jobs - jct.size),
        "straggler_workers": float(f.loc[(f["tenant"] == "") & (f["measure"] == "cross_type_workers"), "value"].sum()),
        "utilisation": float(integ["utilisation"]),
        "rounds": float(max(int(model.auctioneer.trace.rounds), 1)),  # Gavel rounds (steps may merge rounds)
    }
    if liars:
        lie = comp["tenant"].astype(str).isin(set(liars)).to_numpy()
        row["liar_jct_h"] = float(jct[lie].mean() / 3600.0) if lie.any() else math.nan
        row["honest_jct_h"] = float(jct[~lie].mean() / 3600.0) if (~lie).any() else math.nan
        row["liar_jobs_done"] = float(lie.sum())
        row["liar_act_active"] = _liar_act_active(f, liars, model.round_seconds)
    return row


def _liar_act_active(f: pd.DataFrame, liars: Sequence[str], round_seconds: float) -> float:
    """The liars' summed TRUE ``act`` integrated over the records in which any of them is active,
    divided by that time (slowest-GPU equivalents; :func:`marketsim.analysis.engine.stats.throughput_while_active`);
    NaN without their per-tenant rows or if none of them was ever active."""
    from marketsim.analysis.engine.stats import throughput_while_active

    t = throughput_while_active(f, liars, ("act",), round_seconds, keys=(), as_one="liars")
    return float(t["act"].iloc[0]) if len(t) else math.nan


_TRACE_TWINS = ("liar_jct_h", "honest_jct_h", "liar_act_active")


def _execute_trace_cell(spec: CellSpec, scenario: Scenario, scen_ss: np.random.SeedSequence,
                        liar_rng: np.random.Generator, key: dict[str, Any]) -> CellResult:  # fmt: skip
    """A cell of a trace scenario: every mechanism truthful and with each variant's liars."""
    from marketsim.agents.model import MarketModel
    from marketsim.agents.strategies import Truthful

    study = spec.study

    work_ss = np.random.SeedSequence(scen_ss.entropy, spawn_key=scen_ss.spawn_key).spawn(2)[0]
    first = scenario.instantiate(spec.mechanisms[0], TRUTHFUL, np.random.default_rng(work_ss))
    # the cell's metrics use the cluster rows, the completions and the liars' rows (agents) only
    first = replace(first, trace=replace(first.trace, tenant_rows="none"))

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
    every_liar = sorted({t for _, liars, _ in variants for t in liars})
    rows: list[dict[str, Any]] = []
    for mech in spec.mechanisms:
        truthful: tuple[dict[str, float], Any, pd.DataFrame] | None = None
        for vname, liars, strat in variants:
            t0 = time.perf_counter()
            config = config_of(mech)
            if liars:  # the liars are trace tenants playing the variant's strategy (marketsim.agents.trace_tenants)
                lying = replace(config.trace, strategies=dict.fromkeys(liars, strat), liars=liars, tenant_rows="agents")
                config = replace(config, trace=lying)
            elif every_liar:  # every variant's liar is a (truthful) agent here: its rows pair up with the lying run
                agents = dict.fromkeys(every_liar, Truthful())
                config = replace(config, trace=replace(config.trace, strategies=agents, tenant_rows="agents"))
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
            rows.append({**key, "variant": vname, "mechanism": mech, "realisation": "trace-lease",
                         "realisation_mode": "own", **metrics, "seconds": seconds})  # fmt: skip
    return CellResult(spec.run_id, rows, [])


def panel_realisations(study: Study, pi: int) -> tuple[str, ...]:
    """The realisation modes panel ``pi`` runs: ``"own"`` and optionally named realisations."""
    return tuple(getattr(study.panels[pi], "realisations", ()) or ("own",))


def _realisations(study: Study, pi: int, mech: str) -> list[tuple[str, str]]:
    """(mode, realisation) pairs of ``mech`` on panel ``pi``: its own realisation first, then each other
    named realisation that differs from it (OEF's rounding for Gavel is a second run; for OEF it is
    the same run). On an ``engine = "trace"`` panel every mechanism is realised by Gavel's lease
    and the realisation is the host placement (own: "oef-placement" for ``oef-*``,
    "naive-placement" for the others, as ``placement = "auto"``)."""
    from marketsim.market.oef.realise import own_realisation

    if study.panels[pi].engine == "trace":
        own = "oef-placement" if mech.startswith("oef-") else "naive-placement"
    else:
        own = own_realisation(mech)
    out = [("own", own)]
    for r in panel_realisations(study, pi):
        if r != "own" and r != own and r not in {x for _, x in out}:
            out.append(("alternative", r))
    return out


#: the placement of an ``engine = "trace"`` panel's run per realisation name
_TWIN_PLACEMENT = {"oef-placement": "oef", "naive-placement": "naive"}


def _execute_twin_cell(spec: CellSpec, scenario: Scenario, scen_ss: np.random.SeedSequence,
                       key: dict[str, Any]) -> CellResult:  # fmt: skip
    """A cell of an ``engine = "trace"`` panel: the workload drawn exactly as on another panel
    (same streams), every mechanism realised by Gavel's lease (the round engine's
    ``realisation = "gavel-lease"``) with its leases on hosts, per realisation (= host placement);
    truthful only."""
    from marketsim.agents.model import MarketModel

    rows: list[dict[str, Any]] = []
    for mech in spec.mechanisms:
        for mode, real in _realisations(spec.study, spec.panel, mech):
            t0 = time.perf_counter()
            work_ss, model_ss = np.random.SeedSequence(scen_ss.entropy, spawn_key=scen_ss.spawn_key).spawn(2)
            config = scenario.instantiate(mech, TRUTHFUL, np.random.default_rng(work_ss))
            config = replace(config, realisation="gavel-lease", placement=_TWIN_PLACEMENT[real])
            model = MarketModel(config, rng=np.random.default_rng(model_ss))
            model.progress = False
            model.run()
            metrics, _ = summarise_run(model)
            metrics["liar_gain"] = 0.0
            seconds = time.perf_counter() - t0
            rows.append({**key, "variant": TRUTHFUL, "mechanism": mech, "realisation": real,
                         "realisation_mode": mode, **metrics, "seconds": seconds})  # fmt: skip
    return CellResult(spec.run_id, rows, [])


def _versus_maxmin(rows: list[dict[str, Any]]) -> None:
    """Fig. 5(a)'s per-user ratios over max-min, set on the truthful own-realisation rows of a cell."""
    own = [r for r in rows if r["variant"] == "truthful" and r.get("realisation_mode") == "own"]
    base = next((r for r in own if r["mechanism"] == "maxmin"), None)
    if base is None or "est_t0" not in base:
        return
    n = sum(1 for k in base if k.startswith("est_t"))
    for r in own:
        ratios = np.array([r.get(f"est_t{i}", math.nan) / base[f"est_t{i}"] if base[f"est_t{i}"] > 0 else math.nan
                           for i in range(n)])  # fmt: skip
        if np.isfinite(ratios).all():
            r["min_user_gain_vs_maxmin"] = float(ratios.min())
            r["u3_gains_most"] = float(n > 3 and int(np.argmax(ratios)) == 3)


_TWINS = ("liar_est", "liar_act", "honest_est", "honest_act", "liar_jct_h", "honest_jct_h")


def execute_fair_cell(spec: CellSpec) -> CellResult:
    """Draw the cell's workload once and run every mechanism of the panel, truthful and lying."""
    from marketsim.agents.model import MarketModel

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
        if panel.engine == "trace":
            return _execute_twin_cell(spec, scenario, scen_ss, key)
        ids = scenario.tenant_ids()
        variants: list[tuple[str, dict[str, Any]]] = [(TRUTHFUL, {})]
        for v in panel_variants(study, spec.panel):
            strat = variant_strategy(study, v, spec.panel, spec.x, scenario.cluster.gpu_types)
            variants.append((v.name, {ids[i]: strat for i in _liar_indices(v, len(ids), liar_rng)}))
        rows: list[dict[str, Any]] = []
        trows: list[dict[str, Any]] = []
        for mech in spec.mechanisms:
            for mode, real in _realisations(study, spec.panel, mech):
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
                    config = replace(config, realisation=real)
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
                        for name in (*_TWINS, "liar_act_after", "liar_act_active"):
                            if name in twin:
                                metrics[f"{name}_truthful"] = twin[name]
                        for name in ("total_est", "total_act", "mean_jct_h"):
                            metrics[f"{name}_truthful"] = truthful[name]
                        metrics["liar_gain"] = metrics["liar_act"] - twin["liar_act"]
                    seconds = time.perf_counter() - t0
                    where = {"variant": vname, "mechanism": mech, "realisation": real, "realisation_mode": mode}
                    rows.append({**key, **where, **metrics, "seconds": seconds})
                    for tr in tframe.to_dict("records"):
                        trows.append({**key, **where, **tr})
        _versus_maxmin(rows)
        return CellResult(spec.run_id, rows, trows)
    except Exception as exc:  # a crashing cell becomes a failure row; the study goes on
        return CellResult.failed(spec.run_id, exc)
