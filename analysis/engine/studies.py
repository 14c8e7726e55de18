"""Reproduction studies: ``marketsim run NAME`` on a ``kind = "study"`` TOML.

Two families share this runner, the report and the headline verdicts: the auction papers (below)
and, when the TOML has a ``[scenario]`` table, the fair-share papers (OEF), whose cells run the Mesa
:class:`marketsim.agents.model.MarketModel` (:mod:`marketsim.analysis.engine.fairshare_study`, which documents their
schema and metrics).

A study sweeps one parameter per *panel* (e.g. the number of jobs, of sites, the price parameter
gamma) and, for every value and replication, builds ONE instance with the paper's builder
(``make_market(params, rng)`` of ``market/<paper>/market.py``) and runs every mechanism on it
through the Mesa :class:`marketsim.agents.auction.AuctionModel` (common random numbers: the same workload and
the same mechanism seed for every mechanism and variant of a cell). Optional lying *variants*
replay the cell with some bidders misreporting, so paired differences (variant − truthful) come
from the same workload.

Output (:func:`write_study`): ``results.parquet`` (one row per panel × x × replication × variant ×
mechanism, one column per metric), ``tenants.parquet`` (per-tenant rows when the market provides
``tenant_rows``), ``meta.json``, one PNG per panel (every metric vs x, mean and 95% CI per
mechanism) and ``report.md`` with the paper's reported numbers beside each figure, ending with the
headline table (``headlines.csv``): each headline of the paper, our figure with its 95% CI and the
verdict with its reason.

Schema (unknown keys are errors naming the key)::

    kind = "study"  (required)   name, paper (required), description, mechanisms = [..] (required),
    replications, seed, metrics = [..]
    [base]        keyword parameters of the paper's builder
    [audit]       overrides of [base] for the small instance of ``marketsim audit``
    [[panel]]     x (required, a key of [base]), values = [..] (required), label, fixed = {..},
                  common_workload = true|false (default false: each x value draws its own workload;
                  true: replication r uses the same seed at every x, for panels that sweep a
                  mechanism parameter the builder does not draw the workload from)
    [[reported]]  panel (index, required), metric, text (required): what the paper reports
    [[headline]]  text, panel, metric, mechanism, paper (required), id, baseline, baseline_metric,
                  baseline_realisation, x, tolerance, note, variant, realisation, statistic,
                  by_construction, sensitivity_of, alternative_of, conflict: a headline number of
                  the paper, judged reproduced / by construction / direction only / stronger than the
                  paper / not reproduced from our cells (:mod:`marketsim.analysis.engine.headlines`); the
                  report ends with their table
    [[variant]]   name (required), params = {dimension = value} (required), and exactly one of
                  bidders = [job ids] | fraction = f (share of bidders, drawn per cell) |
                  tenants = [tenant ids] (tenant-level strategy of markets with tenants, e.g.
                  params = { hide_workers = 2 } or { withhold = 1 } for Astraea); panels = [..]
                  (the panels it is replayed on; default every panel)
    [[lead]]      what the report opens with, before any panel: text and either headlines = [..]
                  (indices of [[headline]] tables, same verdict rule, e.g. a mechanism-level property)
                  or panels, metric, mechanisms, baselines (per-seed paired ratios per x)
    [[unmeasured]] text, reason: a claim of the paper that gets no verdict, and why
"""

from __future__ import annotations

import math
import os
import resource
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from marketsim.agents.auction import AuctionModel, BidStrategy
from marketsim.analysis.engine.cells import TRUTHFUL, CellResult, CellSpec
from marketsim.analysis.engine.headlines import (
    Headline,
    conclusive,
    evaluate_headline,
    evaluate_headlines,
    mark_fragile,
    parse_headline,
)
from marketsim.analysis.engine.runner import make_executor
from marketsim.analysis.engine.stats import t_interval
from marketsim.market import plugins
from marketsim.market.auction.market import AuctionMarket
from marketsim.market.errors import InputError, check_int, check_name, slug
from marketsim.market.studies import build_market, builders  # the core's instance builders, re-exported here
from marketsim.scenarios.catalog import embedded

__all__ = [
    "builders",
    "git_commit",
    "DEFAULT_METRICS",
    "Panel",
    "PaperNote",
    "Variant",
    "Study",
    "CellSpec",
    "CellResult",
    "StudyResult",
    "parse_study",
    "load_study",
    "study_names",
    "is_study",
    "build_market",
    "plan_cells",
    "execute_cell",
    "run_study",
    "fmt_value",
    "paired_differences",
    "headline_sensitivity",
    "study_headlines",
    "study_family",
    "FAMILIES",
    "cell_cost",
    "run_cost",
    "Lead",
    "lead_table",
    "panel_replications",
    "machine_record",
]


DEFAULT_METRICS = ("welfare", "revenue", "utility", "admission_rate", "utilisation", "mean_jct")
_TOP = {"kind", "name", "paper", "description", "mechanisms", "replications", "seed", "metrics"}
_TABLES = {"base", "audit", "panel", "reported", "variant", "headline", "scenario", "lead", "unmeasured"}
FAMILIES = ("auction", "fair-share")


@dataclass(frozen=True)
class Panel:
    """One swept parameter ``x`` over ``values``, with ``fixed`` overrides of the base parameters."""

    x: str
    values: tuple[Any, ...]
    label: str = ""
    fixed: Mapping[str, Any] = field(default_factory=dict)
    common_workload: bool = False
    scenario: Mapping[str, Any] = field(default_factory=dict)  # fair-share: overrides of the study's [scenario]
    mechanisms: tuple[str, ...] = ()  # fair-share: the panel's subset of the study's mechanisms (empty: all)
    variants: tuple[str, ...] | None = None  # fair-share: the panel's lying variants (None: all)
    replications: int | None = None  # the panel's own number of replications (None: the study's)
    sensitivity_of: int | None = None  # a sensitivity panel: re-reads the headlines of that panel here
    realisations: tuple[str, ...] = ()  # fair-share: "own" plus alternatives, e.g. ("own", "oef-rounding")
    #: fair-share: "synthetic" (the rate model) or "trace" (the same drawn workload on the trace engine
    #: with hosts, marketsim.agents.trace_from_tenants; its alternative realisation is "oef-placement")
    engine: str = "synthetic"


#: fair-share panel engines and the alternative realisations each accepts (besides "own")
ENGINES = ("synthetic", "trace")
TRACE_REALISATIONS = ("oef-placement", "naive-placement")


@dataclass(frozen=True)
class Lead:
    """A comparison the report opens with: per-seed paired ratios of ``metric`` of each mechanism
    over each baseline, at every value of ``panels`` (own realisation, truthful); or, with
    ``headlines`` (indices of the study's ``[[headline]]`` tables), those headlines' rows, judged by
    the same rule as the closing table (e.g. a mechanism's incentive property, which holds or fails
    whatever the simulated hardware)."""

    text: str
    panels: tuple[int, ...]
    metric: str
    mechanisms: tuple[str, ...]
    baselines: tuple[str, ...]
    headlines: tuple[int, ...] = ()


@dataclass(frozen=True)
class PaperNote:
    """What the paper reports for panel ``panel`` (optionally about ``metric``)."""

    panel: int
    text: str
    metric: str = ""


@dataclass(frozen=True)
class Variant:
    """A lying variant: bidders ``bidders`` (job ids), a ``fraction`` of them, or whole ``tenants``
    (tenant-level strategy) report with ``params`` (fair-share: the strategy table, e.g.
    ``{"strategy": "fast", "factor": 1.3}``, and ``tenants`` / ``fraction`` pick tenants)."""

    name: str
    params: Mapping[str, Any]
    bidders: tuple[int, ...] = ()
    fraction: float = 0.0
    tenants: tuple[int, ...] = ()
    panels: tuple[int, ...] = ()  # auction studies: the panels it is replayed on (empty: every panel)


@dataclass(frozen=True)
class Study:
    """A validated study (plain data, picklable)."""

    name: str
    paper: str
    mechanisms: tuple[str, ...]
    panels: tuple[Panel, ...]
    base: Mapping[str, Any] = field(default_factory=dict)
    audit: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[PaperNote, ...] = ()
    variants: tuple[Variant, ...] = ()
    description: str = ""
    replications: int = 3
    seed: int = 0
    metrics: tuple[str, ...] = DEFAULT_METRICS
    source: str = ""
    headlines: tuple[Headline, ...] = ()
    family: str = "auction"
    scenario: Mapping[str, Any] = field(default_factory=dict)  # fair-share: the base scenario document
    base_dir: str = ""  # fair-share: resolves a relative profiles.file
    leads: tuple[Lead, ...] = ()  # comparisons the report opens with (before any simulated figure)
    unmeasured: tuple[tuple[str, str], ...] = ()  # (claim, why it cannot be a headline)

    def params(self, panel: int, x: Any) -> dict[str, Any]:
        """Builder parameters of panel ``panel`` at ``x``."""
        p = self.panels[panel]
        return {**self.base, **p.fixed, p.x: x}

    def audit_params(self) -> dict[str, Any]:
        """Builder parameters of the small audit instance."""
        return {**self.base, **self.audit}


# -- parsing -------------------------------------------------------------------------------------


def _where(name: str, key: str) -> str:
    return f"study {name}: {key}"


def _str_list(name: str, key: str, v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(s, str) and s for s in v):
        raise InputError(_where(name, key), v, "must be a non-empty list of strings")
    if len(set(v)) != len(v):
        raise InputError(_where(name, key), v, "must not repeat a name")
    return tuple(v)


def _table(name: str, key: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise InputError(_where(name, key), v, "must be a table")
    return dict(v)


def _tables(name: str, key: str, v: Any) -> list[dict[str, Any]]:
    if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
        raise InputError(_where(name, key), v, f"must be an array of tables ([[{key}]])")
    return v


def _unknown(name: str, key: str, t: Mapping[str, Any], allowed: set[str]) -> None:
    for k in t:
        if k not in allowed:
            raise InputError(_where(name, f"{key}.{k}"), t[k], f"is not a known key (allowed: {sorted(allowed)})")


def parse_study(data: Mapping[str, Any], name: str, source: str = "", base_dir: str | Path | None = None) -> Study:
    """Validate a study TOML document (see the module docstring for the schema; a ``[scenario]``
    table makes it a fair-share study, :mod:`marketsim.analysis.engine.fairshare_study`). ``base_dir`` resolves a
    fair-share scenario's relative ``profiles.file`` (default: the current directory)."""
    from marketsim.market.registry import names as mechanism_names

    _unknown(name, "", {k: v for k, v in data.items() if k not in _TABLES}, _TOP)
    if data.get("kind") != "study":
        raise InputError(_where(name, "kind"), data.get("kind"), "must be 'study'")
    name = check_name(_where(name, "name"), data.get("name", slug(name)))
    family = _family(data)
    paper = data.get("paper")
    papers = builders() if family == "auction" else plugins.plugins()
    if paper not in papers:
        raise InputError(_where(name, "paper"), paper, f"must be one of {sorted(papers)}")
    mechs = _str_list(name, "mechanisms", data.get("mechanisms"))
    known = set(mechanism_names(family))
    for m in mechs:
        if m not in known:
            raise InputError(_where(name, "mechanisms"), m, f"is not a registered {family} mechanism {sorted(known)}")
    if family == "fair-share":
        from marketsim.analysis.engine.fairshare_study import FAIR_METRICS

        default_metrics: tuple[str, ...] = FAIR_METRICS
        if data.get("base") or data.get("audit"):
            raise InputError(_where(name, "base"), data.get("base") or data.get("audit"),
                             "is for auction studies; a fair-share study sets [scenario]")  # fmt: skip
    else:
        default_metrics = DEFAULT_METRICS
    reps = check_int(_where(name, "replications"), data.get("replications", 3), minimum=1)
    seed = check_int(_where(name, "seed"), data.get("seed", 0), minimum=0)
    metrics = _str_list(name, "metrics", data["metrics"]) if "metrics" in data else default_metrics
    base = _table(name, "base", data.get("base", {}))
    audit = _table(name, "audit", data.get("audit", {}))
    panels = []
    raw_panels = _tables(name, "panel", data.get("panel", []))
    if not raw_panels:
        raise InputError(_where(name, "panel"), [], "must define at least one [[panel]]")
    for i, t in enumerate(raw_panels):
        key = f"panel[{i}]"
        extra = {"scenario", "mechanisms", "variants", "realisations", "engine"} if family == "fair-share" else set()
        _unknown(name, key, t, {"x", "values", "label", "fixed", "common_workload", "replications", "sensitivity_of",
                                *extra})  # fmt: skip
        sens = None
        if "sensitivity_of" in t:
            sens = check_int(_where(name, f"{key}.sensitivity_of"), t["sensitivity_of"], minimum=0)
            if sens >= i:
                raise InputError(_where(name, f"{key}.sensitivity_of"), sens, "must index an earlier panel")
        preps = check_int(_where(name, f"{key}.replications"), t["replications"], minimum=1) if "replications" in t \
            else None
        x = t.get("x")
        if not isinstance(x, str) or not x:
            raise InputError(_where(name, f"{key}.x"), x, "must name a builder parameter")
        values = t.get("values")
        if not isinstance(values, list) or not values:
            raise InputError(_where(name, f"{key}.values"), values, "must be a non-empty list")
        if len({repr(v) for v in values}) != len(values):
            raise InputError(_where(name, f"{key}.values"), values, "must not repeat a value")
        common = t.get("common_workload", False)
        if not isinstance(common, bool):
            raise InputError(_where(name, f"{key}.common_workload"), common, "must be true or false")
        fixed = _table(name, f"{key}.fixed", t.get("fixed", {}))
        if family == "fair-share":
            if fixed:
                raise InputError(_where(name, f"{key}.fixed"), fixed, "is for auction studies; use [panel.scenario]")
            pmechs = _str_list(name, f"{key}.mechanisms", t["mechanisms"]) if "mechanisms" in t else ()
            pvars = t.get("variants")
            if pvars is not None:
                if not isinstance(pvars, list) or not all(isinstance(v, str) for v in pvars):
                    raise InputError(_where(name, f"{key}.variants"), pvars, "must be a list of variant names")
                pvars = tuple(pvars)
            pscen = _table(name, f"{key}.scenario", t.get("scenario", {}))
            engine = t.get("engine", "synthetic")
            if engine not in ENGINES:
                raise InputError(_where(name, f"{key}.engine"), engine, f"must be one of {list(ENGINES)}")
            preal: tuple[str, ...] = ()
            if "realisations" in t:
                from marketsim.market.oef.realise import REALISATIONS

                allowed = TRACE_REALISATIONS if engine == "trace" else REALISATIONS
                preal = _str_list(name, f"{key}.realisations", t["realisations"])
                for r in preal:
                    if r != "own" and r not in allowed:
                        raise InputError(_where(name, f"{key}.realisations"), r,
                                         f"must be 'own' or one of {list(allowed)} (engine {engine!r})")  # fmt: skip
                if preal[0] != "own":
                    raise InputError(_where(name, f"{key}.realisations"), list(preal), "must start with 'own'")
            panels.append(Panel(x, tuple(values), str(t.get("label", "")), {}, common, pscen, pmechs, pvars,
                                replications=preps, realisations=preal, sensitivity_of=sens,
                                engine=engine))  # fmt: skip
            continue
        panels.append(Panel(x, tuple(values), str(t.get("label", "")), fixed, common, replications=preps,
                            sensitivity_of=sens))  # fmt: skip
    notes = []
    for i, t in enumerate(_tables(name, "reported", data.get("reported", []))):
        key = f"reported[{i}]"
        _unknown(name, key, t, {"panel", "metric", "text"})
        pi = check_int(_where(name, f"{key}.panel"), t.get("panel"), minimum=0)
        if pi >= len(panels):
            raise InputError(_where(name, f"{key}.panel"), pi, f"must index one of the {len(panels)} panels")
        text = t.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(_where(name, f"{key}.text"), text, "must be a non-empty string")
        notes.append(PaperNote(pi, " ".join(text.split()), str(t.get("metric", ""))))
    variants = []
    for i, t in enumerate(_tables(name, "variant", data.get("variant", []))):
        key = f"variant[{i}]"
        if family == "fair-share":
            from marketsim.analysis.engine.fairshare_study import VARIANT_KEYS

            _unknown(name, key, t, {"name", "tenants", "fraction", *VARIANT_KEYS})
        else:
            _unknown(name, key, t, {"name", "params", "bidders", "fraction", "tenants", "panels"})
        vname = t.get("name")
        if not isinstance(vname, str) or not vname or vname == TRUTHFUL:
            raise InputError(_where(name, f"{key}.name"), vname, f"must be a non-empty name other than '{TRUTHFUL}'")
        if family == "fair-share":
            frac = t.get("fraction", 0.0)
            if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 <= frac <= 1:
                raise InputError(_where(name, f"{key}.fraction"), frac, "must be a number in [0, 1]")
            tenants = t.get("tenants", [])
            if not isinstance(tenants, list) or not all(
                isinstance(u, int) and not isinstance(u, bool) and u >= 0 for u in tenants
            ):
                raise InputError(_where(name, f"{key}.tenants"), tenants, "must be tenant indices (ints >= 0)")
            if bool(tenants) + (frac > 0) != 1:
                raise InputError(_where(name, key), vname, "must give exactly one of tenants = [..] or fraction > 0")
            if "strategy" not in t:
                raise InputError(_where(name, f"{key}.strategy"), None, "is required (e.g. 'fast' with factor = 1.3)")
            strategy = {k: v for k, v in t.items() if k in VARIANT_KEYS}
            variants.append(Variant(vname, strategy, (), float(frac), tuple(tenants)))
            continue
        params = _table(name, f"{key}.params", t.get("params"))
        if not params:
            raise InputError(_where(name, f"{key}.params"), params, "must misreport at least one dimension")
        for pk, pv in params.items():
            if isinstance(pv, bool) or not isinstance(pv, (int, float)) or not math.isfinite(pv):
                raise InputError(_where(name, f"{key}.params.{pk}"), pv, "must be a finite number")
        bidders = t.get("bidders", [])
        if not isinstance(bidders, list) or not all(isinstance(b, int) and b >= 0 for b in bidders):
            raise InputError(_where(name, f"{key}.bidders"), bidders, "must be a list of job ids (ints >= 0)")
        frac = t.get("fraction", 0.0)
        if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 <= frac <= 1:
            raise InputError(_where(name, f"{key}.fraction"), frac, "must be a number in [0, 1]")
        tenants = t.get("tenants", [])
        if not isinstance(tenants, list) or not all(isinstance(u, int) and not isinstance(u, bool) for u in tenants):
            raise InputError(_where(name, f"{key}.tenants"), tenants, "must be a list of tenant ids (ints)")
        if bool(bidders) + (frac > 0) + bool(tenants) != 1:
            raise InputError(
                _where(name, key), vname, "must give exactly one of bidders = [..], fraction > 0 or tenants = [..]"
            )
        params = {k: float(v) for k, v in params.items()}
        vpanels = t.get("panels", [])
        if not isinstance(vpanels, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(panels) for v in vpanels):  # fmt: skip
            raise InputError(_where(name, f"{key}.panels"), vpanels, f"must list panel indices < {len(panels)}")
        variants.append(Variant(vname, params, tuple(bidders), float(frac), tuple(tenants), tuple(vpanels)))
    if len({v.name for v in variants}) != len(variants):
        raise InputError(_where(name, "variant"), [v.name for v in variants], "names must be unique")
    leads = []
    for i, t in enumerate(_tables(name, "lead", data.get("lead", []))):
        key = f"lead[{i}]"
        _unknown(name, key, t, {"text", "panels", "metric", "mechanisms", "baselines", "headlines"})
        if "headlines" in t:  # the lead is a set of headline rows (same verdict rule as the closing table)
            hl, n_h = t["headlines"], len(_tables(name, "headline", data.get("headline", [])))
            if not isinstance(hl, list) or not hl or not all(
                    isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n_h for v in hl):  # fmt: skip
                raise InputError(_where(name, f"{key}.headlines"), hl, f"must list headline indices < {n_h}")
            both = sorted({"panels", "metric", "mechanisms", "baselines"} & set(t))
            if both:
                raise InputError(_where(name, f"{key}.{both[0]}"), t[both[0]], "give either headlines or a ratio lead")
            leads.append(Lead(" ".join(str(t.get("text", "")).split()), (), "", (), (), tuple(hl)))
            continue
        lp = t.get("panels")
        if not isinstance(lp, list) or not lp or not all(isinstance(v, int) and 0 <= v < len(panels) for v in lp):
            raise InputError(_where(name, f"{key}.panels"), lp, f"must list panel indices < {len(panels)}")
        lm, lb = _str_list(name, f"{key}.mechanisms", t.get("mechanisms")), _str_list(name, f"{key}.baselines",
                                                                                        t.get("baselines"))  # fmt: skip
        for m in (*lm, *lb):
            if m not in mechs:
                raise InputError(_where(name, f"{key}.mechanisms"), m, f"is not one of the study's mechanisms {mechs}")
        metric = t.get("metric")
        if not isinstance(metric, str) or not metric:
            raise InputError(_where(name, f"{key}.metric"), metric, "must name a metric column")
        leads.append(Lead(" ".join(str(t.get("text", "")).split()), tuple(lp), metric, lm, lb))
    unmeasured = []
    for i, t in enumerate(_tables(name, "unmeasured", data.get("unmeasured", []))):
        _unknown(name, f"unmeasured[{i}]", t, {"text", "reason"})
        pair = (t.get("text"), t.get("reason"))
        if not all(isinstance(v, str) and v.strip() for v in pair):
            raise InputError(_where(name, f"unmeasured[{i}]"), t, "needs a non-empty text and reason")
        unmeasured.append((" ".join(pair[0].split()), " ".join(pair[1].split())))
    headlines = tuple(
        parse_headline(
            t,
            _where(name, f"headline[{i}]"),
            panels=panels,
            mechanisms=mechs,
            variants=[TRUTHFUL, *(v.name for v in variants)],
            index=i,
        )
        for i, t in enumerate(_tables(name, "headline", data.get("headline", [])))
    )
    _check_headline_refs(name, headlines)
    desc = " ".join(str(data.get("description", "")).split())
    study = Study(
        name,
        paper,
        mechs,
        tuple(panels),
        base,
        audit,
        tuple(notes),
        tuple(variants),
        desc,
        reps,
        seed,
        metrics,
        source,
        headlines,
        family,
        _table(name, "scenario", data.get("scenario", {})),
        str(base_dir) if base_dir is not None else "",
        tuple(leads),
        tuple(unmeasured),
    )
    if family == "fair-share":
        from marketsim.analysis.engine.fairshare_study import validate_fair_study

        validate_fair_study(study)
    return study


def _check_headline_refs(name: str, headlines: Sequence[Headline]) -> None:
    """Ids unique; ``sensitivity_of`` / ``alternative_of`` name a counted headline (a row at another
    realisation without ``sensitivity_of`` is a sensitivity row that marks nothing fragile)."""
    ids = [h.id for h in headlines]
    for i, h in enumerate(headlines):
        if ids.index(h.id) != i:
            raise InputError(_where(name, f"headline[{i}].id"), h.id, "must be unique in the study")
    counted = {h.id for h in headlines if h.role == "counted"}
    for i, h in enumerate(headlines):
        for key in ("sensitivity_of", "alternative_of"):
            ref = getattr(h, key)
            if ref and ref not in counted:
                raise InputError(_where(name, f"headline[{i}].{key}"), ref,
                                 f"must be the id of a counted headline {sorted(counted)}")  # fmt: skip


def _embedded(name: str) -> Any:
    return embedded()[name]


def _source(name: str) -> str:
    """Where an embedded study lives, relative to the installed packages (e.g.
    ``market/oasis/studies/oasis_paper.toml``)."""
    f = embedded()[name]
    parts = Path(str(f)).parts
    for anchor in ("market", "scenarios"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[i:])
    return f.name


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"study file {path}", "", f"is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"study file {path}", "", "is not UTF-8 text") from None


def study_names(family: str | None = None) -> list[str]:
    """Embedded studies (TOMLs with ``kind = "study"``), optionally only one ``family``
    (``"auction"`` or ``"fair-share"``: a study with a ``[scenario]`` table)."""
    out = []
    for p in embedded().values():
        if p.name.endswith(".toml"):
            try:
                doc = tomllib.loads(p.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            if doc.get("kind") == "study" and (family is None or _family(doc) == family):
                out.append(p.name[:-5])
    return sorted(out)


def _family(doc: Mapping[str, Any]) -> str:
    """A study's family: fair-share when it has a ``[scenario]`` table, else auction."""
    return "fair-share" if "scenario" in doc else "auction"


def study_family(name_or_path: str | Path) -> str | None:
    """``"auction"`` / ``"fair-share"`` for a study (embedded name or TOML path), else None."""
    if not is_study(name_or_path):
        return None
    text = str(name_or_path)
    if "/" not in text and not text.endswith(".toml"):
        return "fair-share" if text in study_names("fair-share") else "auction"
    return _family(_read(Path(text).expanduser()))


def is_study(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` names an embedded study or a TOML file with ``kind = "study"``."""
    text = str(name_or_path)
    if "/" not in text and not text.endswith(".toml"):
        return text in study_names()
    path = Path(text).expanduser()
    if not path.is_file():
        return False
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")).get("kind") == "study"
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False


def load_study(name_or_path: str | Path) -> Study:
    """An embedded study by name (:func:`study_names`) or a study TOML file by path."""
    text = str(name_or_path)
    if "/" not in text and not text.endswith(".toml"):
        if text not in study_names():
            raise InputError("study", text, f"is not an embedded study {study_names()}")
        with resources.as_file(_embedded(text)) as real:
            return parse_study(_read(Path(real)), text, source=_source(text), base_dir=Path(real).parent)
    path = Path(text).expanduser()
    if path.is_dir():
        raise InputError("study", text, "is a directory, not a study TOML file")
    if not path.is_file():
        raise InputError("study", text, "does not exist")
    return parse_study(_read(path), path.stem, source=str(path), base_dir=path.resolve().parent)



# -- running -------------------------------------------------------------------------------------


def plan_cells(
    study: Study, replications: int | None = None, mechanisms: Sequence[str] | None = None
) -> list[CellSpec]:
    """Every (panel, value, replication) cell, in a fixed order. A panel's own ``replications``
    applies unless ``replications`` (the command line's) overrides every panel."""
    if replications is not None:
        replications = check_int("replications", replications, minimum=1)
    mechs = tuple(mechanisms) if mechanisms else study.mechanisms
    for m in mechs:
        if m not in study.mechanisms:
            raise InputError("mechanisms", m, f"is not one of the study's mechanisms {list(study.mechanisms)}")
    return [
        CellSpec(f"{study.name}-p{pi}-x{xi}-r{rep}", study, pi, xi, rep, _panel_mechs(study, pi, mechs))
        for pi, panel in enumerate(study.panels)
        for xi in range(len(panel.values))
        for rep in range(panel_replications(study, pi, replications))
        if _panel_mechs(study, pi, mechs)
    ]


def panel_replications(study: Study, pi: int, override: int | None = None) -> int:
    """Replications of panel ``pi``: ``override`` if given, else the panel's own, else the study's."""
    if override is not None:
        return int(override)
    own = study.panels[pi].replications
    return int(own) if own is not None else study.replications


#: Cost model of a fair-share run in CPU seconds (the progress bar's unit), calibrated on the OEF
#: study (``python -m marketsim.analysis.frontends.cli run oef``; per-run ``seconds`` of results.parquet and process CPU
#: of single cells, 2026-11-27): a run costs a fixed ``_RUN_S`` (building the model, summarising)
#: plus per round ``_ROUND_S + _TENANT_ROUND_S x tenants`` (backlogged workloads: every tenant is
#: active every round), or for workloads with arrivals ``_ARRIVAL_ROUND_S[engine] x factor(policy)
#: x (72 h / window)^e`` (a shorter window means more concurrent tenants per round; the LPs of
#: Gavel and cooperative OEF grow faster with them; on the trace engine, whose policy rows are
#: (tenant, job type, job size) classes, cooperative OEF's envy-freeness rows grow much faster:
#: e = 3; otherwise e = 1). Relative costs are what matter: the bar's remaining time is
#: elapsed / done x left.
_RUN_S = 0.035
_ROUND_S = 0.003
_TENANT_ROUND_S = 0.00006
_ARRIVAL_ROUND_S = {"synthetic": 0.0022, "trace": 0.0015}
_POLICY_FACTOR = {
    "synthetic": {"gavel": 1.65, "oef-coop": 1.05, "gandiva-fair": 0.7},
    "trace": {"gavel": 2.2, "oef-coop": 2.2, "gandiva-fair": 0.8},
}


def run_cost(policy: str, rounds: float, tenants: int, *, arrival_window_s: float = 0.0,
             engine: str = "synthetic") -> float:  # fmt: skip
    """Expected CPU seconds of one fair-share run of ``policy`` lasting ``rounds`` rounds with
    ``tenants`` tenants (backlogged if ``arrival_window_s`` is 0), on ``engine`` (see the constants
    above: a model for the progress bar, not a benchmark)."""
    if arrival_window_s > 0:
        expo = 3.0 if (engine, policy) == ("trace", "oef-coop") else 1.0
        per_round = (_ARRIVAL_ROUND_S[engine] * _POLICY_FACTOR[engine].get(policy, 1.0)
                     * (259200.0 / arrival_window_s) ** expo * tenants / 50.0)  # fmt: skip
    else:
        per_round = _ROUND_S + _TENANT_ROUND_S * tenants
    return _RUN_S + rounds * per_round


def cell_cost(spec: CellSpec) -> float:
    """Planned work of a cell in expected CPU seconds (:func:`run_cost` summed over its runs; for
    auction studies 1 per run): the progress bar's unit, so its remaining-time estimate weighs a
    50-tenant JCT cell and a 2-round cell by what they cost, not by their rounds. A fair-share run
    that stops when idle is expected to last ``max(arrival window, 48 h) + 6 h`` (calibrated on
    the OEF JCT panel, whose runs last 57-78 h at windows of 24-72 h), capped at the scenario's
    rounds."""
    study = spec.study
    if study.family != "fair-share":
        return float(len(spec.mechanisms) * (1 + sum(1 for v in study.variants if not v.panels
                                                     or spec.panel in v.panels)))
    from marketsim.analysis.engine.fairshare_study import _realisations, panel_scenario, panel_variants

    scen = panel_scenario(study, spec.panel, spec.x)
    rounds = float(scen.rounds)
    wl = scen.workload
    window = 0.0
    if scen.stop_when_idle and not wl.backlogged and wl.arrival_window_s > 0:
        window = float(wl.arrival_window_s)
        hours = max(window / 3600.0, 48.0) + 6.0
        rounds = min(rounds, hours * 3600.0 / scen.cluster.round_seconds)
    engine = study.panels[spec.panel].engine
    if engine == "trace" and not window:  # a backlogged trace twin merges its identical rounds
        rounds = min(rounds, 4.0)
    variants = 1 + len(panel_variants(study, spec.panel))
    return sum(
        len(_realisations(study, spec.panel, m)) * variants
        * run_cost(m, rounds, wl.tenants, arrival_window_s=window, engine=engine)
        for m in spec.mechanisms
    )  # fmt: skip


def _panel_mechs(study: Study, pi: int, mechs: tuple[str, ...]) -> tuple[str, ...]:
    own = study.panels[pi].mechanisms
    return tuple(m for m in mechs if m in own) if own else mechs


def _liars(variant: Variant, market: AuctionMarket, rng: np.random.Generator) -> list[int]:
    ids = sorted(int(b.job_id) for b in market.bids())
    if variant.bidders:
        unknown = sorted(set(variant.bidders) - set(ids))
        if unknown:
            raise InputError(f"variant {variant.name}.bidders", unknown, "are not job ids of the instance")
        return list(variant.bidders)
    k = max(1, int(round(variant.fraction * len(ids)))) if ids else 0
    return sorted(int(i) for i in rng.choice(ids, size=k, replace=False))


def execute_cell(spec: CellSpec) -> CellResult:
    """Build the cell's instance once and run every mechanism and variant on it."""
    study = spec.study
    if study.family == "fair-share":
        from marketsim.analysis.engine.fairshare_study import execute_fair_cell

        return execute_fair_cell(spec)
    try:
        xi = 0 if study.panels[spec.panel].common_workload else spec.xi
        ss = np.random.SeedSequence(study.seed, spawn_key=(spec.panel, xi, spec.rep))
        market_ss, mech_ss, liar_ss = ss.spawn(3)
        params = study.params(spec.panel, spec.x)
        market = build_market(study.paper, params, np.random.default_rng(market_ss))
        liar_rng = np.random.default_rng(liar_ss)
        variants: list[tuple[str, dict[int, BidStrategy], dict[int, BidStrategy]]] = [(TRUTHFUL, {}, {})]
        for v in study.variants:
            if v.panels and spec.panel not in v.panels:
                continue
            strat = BidStrategy(v.params, v.name)
            if v.tenants:
                variants.append((v.name, {}, {u: strat for u in v.tenants}))
            else:
                variants.append((v.name, {i: strat for i in _liars(v, market, liar_rng)}, {}))
        rows: list[dict[str, Any]] = []
        trows: list[dict[str, Any]] = []
        key = {
            "study": study.name,
            "panel": spec.panel,
            "x_name": study.panels[spec.panel].x,
            "x": float(spec.x) if isinstance(spec.x, (int, float)) else spec.x,
            "replication": spec.rep,
        }
        truthful_surplus: dict[str, dict[int, float]] = {}
        truthful_tenants: dict[str, dict[int, float]] = {}
        for vname, strategies, tenant_strategies in variants:
            for mech in spec.mechanisms:
                t0 = time.perf_counter()
                rng = np.random.SeedSequence(mech_ss.entropy, spawn_key=mech_ss.spawn_key)
                model = AuctionModel(market, mech, strategies, tenant_strategies=tenant_strategies, rng=rng)
                model.run()
                summary = model.summary()
                if vname == TRUTHFUL:
                    truthful_surplus[mech] = {i: b.surplus for i, b in model.bidders.items()}
                    truthful_tenants[mech] = {u: t.revenue for u, t in model.tenants.items()}
                    summary["liar_gain"] = 0.0
                elif tenant_strategies:  # the tenants' true revenue (incl. income) minus their truthful one
                    before = sum(truthful_tenants[mech][u] for u in tenant_strategies)
                    summary["liar_gain"] = summary["lying_tenant_revenue"] - before
                else:  # the liars' true surplus minus what the same bidders got truthfully (paired)
                    summary["liar_gain"] = summary["liar_surplus"] - sum(truthful_surplus[mech][i] for i in strategies)
                seconds = time.perf_counter() - t0
                rows.append({**key, "variant": vname, "mechanism": mech, **summary, "seconds": seconds})
                if hasattr(market, "tenant_rows"):
                    reports = [b.report for b in model.bidders.values()]
                    for tr in market.tenant_rows(model.auctioneer.decisions, reports):
                        trows.append({**key, "variant": vname, "mechanism": mech, **tr})
        return CellResult(spec.run_id, rows, trows)
    except Exception as exc:  # a crashing cell becomes a failure row; the study goes on
        return CellResult.failed(spec.run_id, exc)


@dataclass
class StudyResult:
    """Rows of a study run (sorted, executor-independent) and its failures."""

    study: Study
    frame: pd.DataFrame
    tenants: pd.DataFrame
    errors: list[tuple[str, str]]
    replications: int
    seed: int
    executor: str
    seconds: float
    #: the machine during the run (:func:`machine_record`): load average at start and end, CPU seconds, commit
    machine: Mapping[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C / SIGTERM: the cells finished by then are kept, the rest never ran

    def meta(self) -> dict[str, Any]:
        return {
            "study": self.study.name,
            "paper": self.study.paper,
            "family": self.study.family,
            "source": self.study.source,
            "mechanisms": list(self.study.mechanisms),
            "panels": [
                {
                    "x": p.x,
                    "values": list(p.values),
                    "label": p.label,
                    "fixed": dict(p.fixed),
                    "common_workload": p.common_workload,
                    **(
                        {
                            "scenario": dict(p.scenario),
                            "mechanisms": list(p.mechanisms),
                            "variants": None if p.variants is None else list(p.variants),
                            "engine": p.engine,
                        }
                        if self.study.family == "fair-share"
                        else {}
                    ),
                }
                for p in self.study.panels
            ],
            "base": dict(self.study.base),
            **({"scenario": dict(self.study.scenario)} if self.study.family == "fair-share" else {}),
            "variants": [
                {
                    "name": v.name,
                    "params": dict(v.params),
                    "bidders": list(v.bidders),
                    "fraction": v.fraction,
                    "tenants": list(v.tenants),
                    **({"panels": list(v.panels)} if v.panels else {}),
                }
                for v in self.study.variants
            ],
            "replications": self.replications,
            "seed": self.seed,
            "executor": self.executor,
            "seconds": round(self.seconds, 3),
            "cells_failed": len(self.errors),
            "interrupted": self.interrupted,
            **({"machine": dict(self.machine)} if self.machine else {}),
        }


_SORT = ["panel", "x", "replication", "variant", "mechanism"]


def _cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def git_commit(where: str | Path | None = None, *, short: bool = False, default: str = "") -> str:
    """The git commit checked out at ``where`` (default: this package's checkout), with
    ``" +uncommitted changes"`` appended when tracked files differ from it; ``default`` outside a
    git checkout (e.g. an installed wheel). ``short``: the abbreviated hash. Results files record it
    beside their figures."""
    import subprocess

    cwd = Path(where) if where is not None else Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", *(["--short"] if short else []), "HEAD"], capture_output=True,
                              text=True, timeout=10, cwd=cwd, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=10, cwd=cwd, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return default
    return head + (" +uncommitted changes" if dirty else "")


def machine_record(start: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The machine's state for a results file. Without ``start``: the load averages (1, 5, 15 min),
    the CPU seconds so far and the commit (:func:`git_commit`). With
    ``start`` (this function's earlier result): the load averages at start and end, the CPU seconds
    of this process and its finished workers in between, a ``loaded`` flag (1-min load above the
    core count at start or end: wall times are then not idle-machine figures), the commit at the
    start, the core count and the Python / numpy / pandas versions."""
    import platform

    now = {"load_avg": [round(v, 2) for v in os.getloadavg()], "cpu_s": _cpu_seconds()}
    if start is None:
        return {**now, "commit": git_commit()}
    cores = os.cpu_count() or 1
    return {
        "load_avg_start": start["load_avg"],
        "load_avg_end": now["load_avg"],
        "loaded": bool(max(start["load_avg"][0], now["load_avg"][0]) > cores),
        "cpu_s": round(now["cpu_s"] - start["cpu_s"], 1),
        "cores": cores,
        "commit": start.get("commit", ""),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
    }


def run_study(
    study: Study,
    *,
    replications: int | None = None,
    seed: int | None = None,
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    mechanisms: Sequence[str] | None = None,
) -> StudyResult:
    """Run every cell of ``study`` with the ``local`` or ``process`` executor (same numbers with both)."""
    if seed is not None:
        study = Study(**{**study.__dict__, "seed": check_int("seed", seed, minimum=0)})
    cells = plan_cells(study, replications, mechanisms)
    cost = {c.run_id: cell_cost(c) for c in cells}
    # longest cells first: a shorter tail on several workers; the results are sorted below, so the
    # order changes no number (every cell is seeded by its own key)
    cells = sorted(cells, key=lambda c: -cost[c.run_id])
    ex = make_executor(executor, workers)
    t0 = time.perf_counter()
    start = machine_record()
    rows: list[dict[str, Any]] = []
    trows: list[dict[str, Any]] = []
    errors: list[tuple[str, str]] = []
    # progress in expected CPU seconds (cell_cost), not cells or rounds (a JCT cell is ~100x a
    # 16-round cell, and a round of 50 tenants under Gavel costs more than one of 4), with
    # smoothing 0: the remaining-time estimate is elapsed / done x left over the whole run
    bar = tqdm(total=sum(cost.values()), desc=f"{study.name} ({len(cells)} cells)", unit="cpu-s",
               bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} planned cpu-s [{elapsed}<{remaining}]",
               smoothing=0.0, disable=not progress)  # fmt: skip
    stream = ex.map(execute_cell, cells)
    interrupted = False
    try:
        for res in stream:
            rows.extend(res.rows)
            trows.extend(res.tenant_rows)
            if res.error:
                errors.append((res.run_id, res.error))
            bar.update(cost[res.run_id])
    except KeyboardInterrupt:  # keep the finished cells; the executor cancels the rest
        interrupted = True
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    bar.close()
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(_SORT, kind="stable").reset_index(drop=True)
    tenants = pd.DataFrame(trows)
    if not tenants.empty:
        tenants = tenants.sort_values([*_SORT, "tenant"], kind="stable").reset_index(drop=True)
    errors.sort()
    reps = study.replications if replications is None else int(replications)
    seconds = time.perf_counter() - t0
    return StudyResult(study, frame, tenants, errors, reps, study.seed, executor, seconds, machine_record(start),
                       interrupted)  # fmt: skip


#: the sign of a paired difference (variant − truthful) in which lying paid the liars, per metric
#: (``paid`` column of :func:`paired_differences`): more surplus or throughput, a shorter JCT
LIAR_PAYS = {"liar_gain": 1, "liar_act": 1, "liar_est": 1, "liar_act_active": 1, "liar_surplus": 1,
             "liar_jct_h": -1}  # fmt: skip


def paired_differences(frame: pd.DataFrame, metrics: Sequence[str] = ("liar_gain", "welfare")) -> pd.DataFrame:
    """Variant − truthful per (panel, x, replication, mechanism), summarised with 95% t intervals:
    columns ``panel, x, mechanism, variant, metric, mean, low, high, n, paid``. ``liar_gain`` is already
    paired in each variant row (the liars' true surplus minus the same bidders' truthful surplus;
    fair-share: their throughput gain, or on a trace their JCT saved); a metric with a
    ``<metric>_truthful`` twin column (fair-share: ``liar_act_active``, ``liar_jct_h``, ``honest_jct_h``,
    measured on the same tenants in the truthful run) is differenced against that twin. ``paid``: for
    the liars' own metrics (:data:`LIAR_PAYS`), the share of seeds in which lying paid them (a higher
    surplus or throughput, a shorter JCT); NaN for the others."""
    cols = ["panel", "x", "mechanism", "variant", "metric", "mean", "low", "high", "n", "paid"]
    if frame.empty or "variant" not in frame or set(frame["variant"]) <= {TRUTHFUL}:
        return pd.DataFrame(columns=cols)
    keys = ["panel", "x", "replication", "mechanism"]
    base = frame[frame["variant"] == TRUTHFUL].set_index(keys)
    out = []
    for vname, sub in frame[frame["variant"] != TRUTHFUL].groupby("variant", sort=True):
        s = sub.set_index(keys)
        for metric in (m for m in metrics if m in frame.columns):
            if metric == "liar_gain":
                d = s[metric]
            elif f"{metric}_truthful" in s.columns:  # the twin measured on the same tenants in the truthful run
                d = s[metric] - s[f"{metric}_truthful"]
            else:
                d = s[metric] - base[metric].reindex(s.index)
            dd = d.rename("d").reset_index()
            sign = LIAR_PAYS.get(metric)
            for (p, x, mech), g in dd.groupby(["panel", "x", "mechanism"], sort=True):
                v = g["d"].to_numpy(dtype=float)
                v = v[np.isfinite(v)]
                mean, lo, hi = t_interval(v)
                paid = float((sign * v > 1e-9).mean()) if sign is not None and v.size else math.nan
                out.append(dict(zip(cols, (p, x, mech, vname, metric, mean, lo, hi, v.size, paid), strict=True)))
    return pd.DataFrame(out, columns=cols)


def lead_table(frame: pd.DataFrame, study: Study, lead: Lead) -> pd.DataFrame:
    """One row per (panel, x, mechanism, baseline) of ``lead``: the mean per-seed paired ratio of
    ``lead.metric`` with its 95% t-interval and n (truthful, own realisation). The lead's ratios are
    tight (estimated throughput); the headlines use a ratio of means, robust to heavy tails."""
    cols = ["panel", "label", "x", "mechanism", "baseline", "ratio", "low", "high", "n"]
    out = []
    if frame.empty or lead.metric not in frame.columns:
        return pd.DataFrame(columns=cols)
    sub = frame[frame["variant"] == TRUTHFUL]
    if "realisation_mode" in sub.columns:
        sub = sub[sub["realisation_mode"] == "own"]
    for pi in lead.panels:
        p = sub[sub["panel"] == pi]
        if p.empty:
            continue
        wide = p.pivot_table(index=["x", "replication"], columns="mechanism", values=lead.metric, aggfunc="first")
        for x in sorted(set(p["x"])):
            w = wide.xs(x, level="x")
            for m in lead.mechanisms:
                for b in lead.baselines:
                    if m not in w or b not in w:
                        continue
                    ab = w[[m, b]].dropna()
                    ab = ab[ab[b] > 0]
                    r, lo, hi = t_interval((ab[m] / ab[b]).to_numpy())
                    label = study.panels[pi].label.split(":")[0]
                    out.append(dict(zip(cols, (pi, label, x, m, b, r, lo, hi, len(ab)), strict=True)))
    return pd.DataFrame(out, columns=cols)


def fmt_value(v: Any) -> str:
    """A table cell: floats to 4 significant digits ("—" if not finite), anything else as ``str``."""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        return f"{v:.4g}"
    return str(v)


def headline_sensitivity(frame: pd.DataFrame, study: Study, *, seed: int = 0) -> pd.DataFrame:
    """Every counted or alternative headline re-evaluated at each value of its panel (if it pins
    ``x`` on a panel of several values) and of every panel marked ``sensitivity_of`` its panel (one
    row per value): ``id, headline, realisation, panel, x_name, x, ours, low, high, CI, n, verdict,
    conclusive, sensitivity``. These rows decide nothing; ``sensitivity`` is True on a sensitivity
    panel (a setting the paper leaves open), False at the other values of the headline's own panel
    (other points of the swept figure, e.g. another profiling error than the one the paper quotes).
    A verdict that a conclusive sensitivity row changes is fragile
    (:func:`marketsim.analysis.engine.headlines.mark_fragile`)."""
    from dataclasses import replace

    cols = ["id", "headline", "realisation", "panel", "x_name", "x", "ours", "low", "high", "CI", "n", "verdict",
            "conclusive", "sensitivity"]  # fmt: skip
    out = []
    for h in study.headlines:
        if h.role == "sensitivity":
            continue
        targets = [(h.panel, study.panels[h.panel])] if h.x and len(study.panels[h.panel].values) >= 2 else []
        targets += [(i, p) for i, p in enumerate(study.panels) if p.sensitivity_of == h.panel
                    and (h.realisation == "own" or h.realisation in p.realisations)
                    and (not h.baseline_realisation or h.baseline_realisation in p.realisations)]  # fmt: skip
        for pi, panel in targets:
            for v in panel.values:
                r = evaluate_headline(frame, replace(h, panel=pi, x=(v,)), seed=seed)
                ci = f"[{fmt_value(r['low'])}, {fmt_value(r['high'])}]"
                ok = conclusive(r["n"], r["low"], r["high"], ratio=h.stat == "ratio of means")
                sens = panel.sensitivity_of is not None  # the headline's own panel: other points, not a sensitivity
                out.append(dict(zip(cols, (h.id, h.text, h.realisation, pi, panel.x, v, r["ours"], r["low"],
                                           r["high"], ci, r["n"], r["verdict"], ok, sens), strict=True)))  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def study_headlines(frame: pd.DataFrame, study: Study, *, seed: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's headline table (every headline, :func:`marketsim.analysis.engine.headlines.evaluate_headlines`)
    with its ``fragile`` column filled, and the sensitivity table (:func:`headline_sensitivity`).
    ``seed`` (default: the study's) seeds the bootstrap intervals."""
    seed = study.seed if seed is None else seed
    table = evaluate_headlines(frame, study.headlines, seed=seed)
    sens = headline_sensitivity(frame, study, seed=seed)
    return mark_fragile(table, sens), sens
