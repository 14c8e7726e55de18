"""``marketsim viz``: a Mesa SolaraViz page for the fair-share market (optional ``viz`` extra).

The page model is :class:`MarketVizModel`, a :class:`agents.model.MarketModel` of one embedded
fair-share scenario under one fair-share mechanism in which ONE tenant (the liar) scales its
reported speedups on every faster GPU type (``j >= 1``) by ``lie_factor``
(:meth:`agents.strategies.ScaleDims.fast`); everyone else is truthful. It carries a *truthful
twin*: a second :class:`MarketModel` of the same scenario, mechanism and seed with everyone
truthful (same workload, same model RNG), stepped in lockstep inside :meth:`MarketVizModel.step`.
The liar's paired gain of a round is its TRUE throughput in the lying model minus its TRUE
throughput in the twin, so ``lie_factor = 1`` gives a gain of exactly 0. (The twin is a full
simulation rather than a re-solve of the allocator on truthful reports, so the gain includes the
knock-on effects of the lie on job progress, exits and later rounds.)

Figures (matplotlib, one card each, titled for people and for the browser test):
``Allocation (GPUs)`` (heat map tenants x GPU types of the last round's fractional allocation),
``True vs reported throughput`` (per tenant, last round), ``Liar's paired gain`` (over rounds) and
``Server topology`` (the networkx cluster graph, hosts coloured by GPU type).

Auction studies (``control_auction``, ``oasis``, ``eris``, ``astraea``, ``pdors``, ...) get the auction
page instead: :class:`AuctionVizModel`, an :class:`agents.auction.AuctionModel` of the study's small
``[audit]`` instance in which ONE bidder scales its reported value (``value_scale``, or the market's
first factor dimension) by ``lie_factor``, with a truthful twin ``AuctionModel`` (same market,
mechanism and mechanism seed) stepped in lockstep, one slot per step. The liar's paired gain after
each slot is its TRUE surplus (``market.true_surplus``) as decided so far minus the twin's (0 while
undecided; the final value is the gain of the run). Figures ``Admission timeline``, ``Prices and
payments``, ``Liar's paired gain (auction)`` and ``Resources`` (:data:`AUCTION_TITLES`).

Serving: :func:`serve` runs ``solara run analysis.viz:Page`` in this process; the scenario (or
study) travels in the environment variable :data:`SCENARIO_ENV`.
Nothing else in marketsim imports this module's dependencies (solara, altair).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import tomllib
import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib
import networkx as nx
import numpy as np
import solara
from matplotlib.figure import Figure
from mesa.visualization import Slider, SolaraViz

from agents.auction import AuctionModel, BidStrategy
from agents.config import ModelConfig
from agents.model import MarketModel
from agents.strategies import ScaleDims, Truthful
from market.errors import InputError, check_finite, check_int
from market.registry import get, names
from scenarios.loader import Scenario, load_scenario

__all__ = [
    "AUCTION_TITLES",
    "AuctionPageModel",
    "AuctionVizModel",
    "DEFAULT_SCENARIO",
    "DEFAULT_STUDY",
    "SCENARIO_ENV",
    "TITLES",
    "MarketVizModel",
    "Page",
    "PageModel",
    "allocation_figure",
    "auction_gain_figure",
    "auction_studies",
    "build_auction_page",
    "build_page",
    "fair_share_scenarios",
    "loadable_scenarios",
    "gain_figure",
    "is_auction_study",
    "resolve_scenario",
    "prices_figure",
    "resources_figure",
    "serve",
    "throughput_figure",
    "timeline_figure",
    "topology_figure",
    "viz_mechanisms",
]

#: Environment variable carrying the page's scenario (name or TOML path) to the solara server.
SCENARIO_ENV = "MARKETSIM_VIZ_SCENARIO"
DEFAULT_SCENARIO = "default"
#: The figures' stable titles (card headings in the DOM and the figures' own titles).
TITLES = {
    "allocation": "Allocation (GPUs)",
    "throughput": "True vs reported throughput",
    "gain": "Liar's paired gain",
    "topology": "Server topology",
}
#: The auction page's figure titles (card keys distinct from the fair-share ones).
AUCTION_TITLES = {
    "timeline": "Admission timeline",
    "prices": "Prices and payments",
    "auction_gain": "Liar's paired gain (auction)",
    "resources": "Resources",
}
ALL_TITLES = {**TITLES, **AUCTION_TITLES}
DEFAULT_STUDY = "control_auction"
LIE_FACTOR_RANGE = (0.25, 4.0)
FIG_W, FIG_H, FIG_DPI = 5.0, 3.4, 90  # fits one card of Mesa's default 2 x 2 grid
SEED_MAX = 999


# ---------------------------------------------------------------------------------------------------
# scenarios and mechanisms the page offers


def fair_share_scenarios() -> list[str]:
    """Embedded fair-share scenarios: every embedded TOML that is no sweep, auction study or
    learning population (the same split as ``marketsim list``)."""
    from analysis.learn import learning_names
    from analysis.studies import study_names
    from analysis.sweep import sweep_names
    from scenarios.loader import scenario_names

    other = set(sweep_names()) | set(study_names()) | set(learning_names())
    return [n for n in scenario_names() if n not in other]


def _toml_kind(path: Path) -> str | None:
    try:
        kind = tomllib.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # the loader reports unreadable files with its own message
    return kind if isinstance(kind, str) else None


def resolve_scenario(name: str) -> Scenario:
    """Load fair-share scenario ``name`` (embedded name or TOML path); an auction study, a sweep,
    a learning population or an unknown name raises :class:`InputError` naming ``scenario``."""
    from analysis.learn import learning_names
    from analysis.studies import study_names
    from analysis.sweep import sweep_names

    if not isinstance(name, str) or not name.strip():
        raise InputError("scenario", name, f"must name a fair-share scenario, one of {fair_share_scenarios()}")
    embedded_name = "/" not in name and not name.endswith(".toml")
    kind = None
    if embedded_name:
        from scenarios.loader import scenario_names

        if name not in scenario_names():
            raise InputError("scenario", name, f"is neither an embedded fair-share scenario {fair_share_scenarios()} "
                             "nor a TOML file")  # fmt: skip
        if name in study_names():
            kind = "study"
        elif name in learning_names():
            kind = "learning"
        elif name in sweep_names():
            kind = "sweep"
    elif Path(name).expanduser().is_file():
        kind = _toml_kind(Path(name).expanduser())
    if kind is not None:
        what = {"study": "a reproduction study", "learning": "a learning population", "sweep": "a sweep config"}
        raise InputError(
            "scenario",
            name,
            f"is {what.get(kind, repr(kind))}, not a fair-share scenario (auction studies get the auction page, "
            f"AuctionVizModel); choose one of {fair_share_scenarios()}",
        )
    return load_scenario(name)


@lru_cache(maxsize=1)
def viz_mechanisms() -> tuple[str, ...]:
    """Fair-share mechanisms the round loop can run: the registered ones that accept the per-class
    GPU caps the auctioneer always passes (probed once on a 2 x 2 instance)."""
    W = np.array([[1.0, 2.0], [1.0, 3.0]])
    m = np.array([2, 2])
    out = []
    for name in names("fair-share"):
        try:
            get(name, "fair-share").fn(W, m, weights=np.ones(2), caps=np.array([2.0, 2.0]))
        except InputError:
            continue
        out.append(name)
    return tuple(out)


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """(workload RNG, model RNG) of ``seed``, split like :meth:`Scenario.build_model`."""
    work, model = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(work), np.random.default_rng(model)


# ---------------------------------------------------------------------------------------------------
# the page model


class MarketVizModel(MarketModel):
    """The lying market of one scenario, mechanism and seed, with its truthful twin in lockstep.

    Parameters (all keyword, as SolaraViz re-creates the model from them on Reset):
    ``scenario_name`` (embedded fair-share scenario or TOML path), ``mechanism`` (one of
    :func:`viz_mechanisms`; default the scenario's first policy), ``liar`` (tenant index),
    ``lie_factor`` (> 0; the liar reports ``w'^j = lie_factor · w^j`` for ``j >= 1``) and ``seed``.
    The scenario name is not called ``scenario``: Mesa reserves that for its own Scenario object.

    After each step, :attr:`history` holds one row per round: the liar's TRUE throughput ``est``
    (true value of its fractional allocation) and ``act`` (work done per second) here and in the
    twin (:attr:`twin`), in slowest-GPU equivalents.
    """

    def __init__(
        self,
        scenario_name: str = DEFAULT_SCENARIO,
        mechanism: str | None = None,
        liar: int = 0,
        lie_factor: float = 1.0,
        seed: int = 0,
    ) -> None:
        market = resolve_scenario(scenario_name)
        mechanism = market.policies[0] if mechanism is None else mechanism
        if mechanism not in viz_mechanisms():
            raise InputError(
                "mechanism",
                mechanism,
                f"must be a fair-share mechanism the round loop can run: {list(viz_mechanisms())}",
            )
        seed = check_int("seed", seed, minimum=0)
        liar = check_int("liar", liar, minimum=0)
        n = market.workload.tenants
        if liar >= n:
            raise InputError("liar", liar, f"must be a tenant index in 0..{n - 1} (scenario {market.name})")
        factor = check_finite("lie_factor", lie_factor)
        if factor <= 0:
            raise InputError("lie_factor", lie_factor, "must be > 0")
        truthful = self._config(market, mechanism, seed)
        k = truthful.cluster.k
        strategy = ScaleDims.fast(factor, k) if k >= 2 else Truthful()  # one GPU type: no fast type to lie on
        tenants = list(truthful.tenants)
        tenants[liar] = dataclasses.replace(tenants[liar], strategy=strategy)
        lying = dataclasses.replace(truthful, tenants=tuple(tenants))
        super().__init__(lying, rng=_streams(seed)[1])
        #: the same scenario, mechanism and seed with everyone truthful, stepped in lockstep
        self.twin = MarketModel(self._config(market, mechanism, seed), rng=_streams(seed)[1])
        self.market_scenario = market
        self.scenario_name = scenario_name
        self.mechanism = mechanism
        self.liar_index = liar
        self.liar_id = truthful.tenants[liar].tenant_id
        self.lie_factor = factor
        self.seed = seed
        self.history: list[dict[str, float]] = []

    @staticmethod
    def _config(market: Scenario, mechanism: str, seed: int) -> ModelConfig:
        """The truthful config: the scenario's truthful variant under ``mechanism`` (the workload
        does not depend on the policy, so instantiating under the scenario's first one is exact)."""
        base = market.instantiate(market.policies[0], "truthful", _streams(seed)[0])
        return dataclasses.replace(base, policy=mechanism)

    @staticmethod
    def _liar_measures(model: MarketModel, tenant_id: str) -> tuple[float, float]:
        for t in model.tenant_list():
            if t.tenant_id == tenant_id:
                return float(t.est), float(t.act)
        return 0.0, 0.0  # not arrived yet, or gone

    def step(self) -> None:
        """One round of the lying market and (while it runs) one of the truthful twin."""
        super().step()
        if self.twin.running:
            self.twin.step()
            twin_est, twin_act = self._liar_measures(self.twin, self.liar_id)
        else:
            twin_est, twin_act = 0.0, 0.0
        est, act = self._liar_measures(self, self.liar_id)
        self.history.append(
            {"round": float(self.round), "est": est, "twin_est": twin_est, "act": act, "twin_act": twin_act,
             "gain": est - twin_est, "gain_act": act - twin_act}
        )  # fmt: skip

    # -- what the figures read ----------------------------------------------------------------------
    def tenant_ids(self) -> list[str]:
        """Every tenant of the scenario (present or not), in config order."""
        return [t.tenant_id for t in self.config.tenants]

    def allocation_matrix(self) -> np.ndarray:
        """(tenants, GPU types) fractional GPUs of the last round's allocation (0 before the first)."""
        ids = self.tenant_ids()
        row = {tid: i for i, tid in enumerate(ids)}
        out = np.zeros((len(ids), self.k))
        alloc = self.auctioneer.allocation
        if alloc is not None and self.steps > 0:
            X = np.asarray(alloc.X, dtype=float)
            for i, (tid, _jt) in enumerate(self.auctioneer.classes):
                out[row[tid]] += X[i]
        return out

    def throughputs(self) -> tuple[np.ndarray, np.ndarray]:
        """(true, reported) throughput per tenant of the last round (slowest-GPU equivalents)."""
        ids = self.tenant_ids()
        true = np.zeros(len(ids))
        reported = np.zeros(len(ids))
        present = {t.tenant_id: t for t in self.tenant_list()}
        for i, tid in enumerate(ids):
            t = present.get(tid)
            if t is not None and self.steps > 0:
                true[i], reported[i] = t.est, t.est_reported
        return true, reported

    def caption(self) -> str:
        """One line: round, mechanism and the lie (changes with every step and parameter)."""
        r = self.steps
        return (
            f"{self.market_scenario.name} · {self.mechanism} · round {r}/{self.config.rounds} · liar {self.liar_id} "
            f"x{self.lie_factor:.2f} · seed {self.seed}" + ("" if self.running else " · finished")
        )


# ---------------------------------------------------------------------------------------------------
# figures (plain matplotlib, no pyplot: safe in the server's threads)


def _tenant_labels(model: MarketVizModel) -> list[str]:
    return [f"{tid} (liar)" if tid == model.liar_id else tid for tid in model.tenant_ids()]


def allocation_figure(model: MarketVizModel) -> Figure:
    """Heat map tenants x GPU types of the last round's fractional allocation."""
    X = model.allocation_matrix()
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(X, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(1.0, float(X.max())))
    ax.set_xticks(range(model.k), model.gpu_names)
    ax.set_yticks(range(X.shape[0]), _tenant_labels(model), fontsize=8)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] > 0.005:
                light = X[i, j] < 0.6 * max(1.0, float(X.max()))
                ax.text(j, i, f"{X[i, j]:.1f}", ha="center", va="center", fontsize=7, color="w" if light else "k")
    fig.colorbar(im, ax=ax, label="GPUs (fractional)")
    ax.set_title(f"{TITLES['allocation']} · {model.mechanism} · round {model.steps}", fontsize=10)
    return fig


def throughput_figure(model: MarketVizModel) -> Figure:
    """Per-tenant TRUE vs REPORTED throughput of the last round (bars)."""
    true, reported = model.throughputs()
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(true.size)
    ax.bar(x - 0.2, true, 0.4, label="true", color="tab:blue")
    ax.bar(x + 0.2, reported, 0.4, label="reported (what the mechanism sees)", color="tab:orange")
    ax.set_xticks(x, _tenant_labels(model), rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("throughput (slowest-GPU equivalents)")
    ax.legend(fontsize=8)
    ax.set_title(f"{TITLES['throughput']} · round {model.steps}", fontsize=10)
    return fig


def gain_figure(model: MarketVizModel) -> Figure:
    """The liar's TRUE throughput lying vs in the truthful twin, and their difference, per round."""
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    h = model.history
    rounds = [r["round"] for r in h]
    ax.plot(rounds, [r["est"] for r in h], "o-", ms=3, color="tab:red", label=f"liar x{model.lie_factor:.2f}")
    ax.plot(rounds, [r["twin_est"] for r in h], "s-", ms=3, color="tab:gray", label="same tenant, all truthful")
    total = sum(r["gain"] for r in h)
    ax.plot(rounds, [r["gain"] for r in h], "-", lw=2, color="tab:green", label=f"paired gain (sum {total:+.2f})")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("round")
    ax.set_ylabel(f"{model.liar_id}'s true throughput")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"{TITLES['gain']} · {model.liar_id} · {model.mechanism}", fontsize=10)
    return fig


def _tree_layout(g: nx.Graph) -> dict[Any, tuple[float, float]]:
    """Switches on top, hosts below: BFS levels from the highest-degree switch."""
    if g.number_of_nodes() == 0:
        return {}
    switches = [n for n, d in g.nodes(data=True) if d.get("kind") == "switch"]
    root = max(switches or list(g.nodes), key=lambda n: (g.degree(n), str(n)))
    pos: dict[Any, tuple[float, float]] = {}
    seen: set[Any] = set()
    for level, layer in enumerate(nx.bfs_layers(g, [root])):
        layer = sorted(layer, key=str)
        seen.update(layer)
        for i, node in enumerate(layer):
            pos[node] = ((i + 0.5) / len(layer), -float(level))
    rest = sorted((n for n in g.nodes if n not in seen), key=str)  # other components: one more row
    bottom = min(y for _, y in pos.values()) - 1.0
    for i, node in enumerate(rest):
        pos[node] = ((i + 0.5) / len(rest), bottom)
    return pos


def topology_figure(model: MarketVizModel) -> Figure:
    """The cluster's networkx topology; hosts coloured by GPU type, labelled busy/total GPUs."""
    g = model.cluster.graph
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"{TITLES['topology']} · busy/total GPUs, round {model.steps}", fontsize=10)
    ax.set_axis_off()
    if g.number_of_nodes() == 0:
        ax.text(0.5, 0.5, "no topology", ha="center", va="center")
        return fig
    pos = _tree_layout(g)
    cmap = matplotlib.colormaps["tab10"]
    by_node = {s.server.node: s for s in model.server_agents() if s.server.node is not None}
    nx.draw_networkx_edges(g, pos, ax=ax, edge_color="0.6")
    switches = [n for n in g.nodes if n not in by_node]
    nx.draw_networkx_nodes(g, pos, nodelist=switches, ax=ax, node_shape="s", node_color="0.75", node_size=500)
    for j, name in enumerate(model.gpu_names):
        hosts = [n for n, s in by_node.items() if s.server.gpu_type == j]
        if hosts:
            nx.draw_networkx_nodes(
                g, pos, nodelist=hosts, ax=ax, node_color=[cmap(j % 10)], node_size=700, label=name,
                edgecolors=["k" if by_node[h].healthy else "r" for h in hosts],
            )  # fmt: skip
    labels = {n: str(n) for n in switches}
    labels.update({n: f"{n}\n{s.busy}/{s.server.count}" for n, s in by_node.items()})
    nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7)
    ax.legend(loc="lower center", fontsize=8, ncol=max(1, model.k), markerscale=0.5, bbox_to_anchor=(0.5, -0.12))
    ax.margins(0.08)
    return fig


# ---------------------------------------------------------------------------------------------------
# the auction page: model


def auction_studies() -> list[str]:
    """Embedded auction reproduction studies (``kind = "study"``; ``marketsim list``)."""
    from analysis.studies import study_names

    return study_names("auction")


def is_auction_study(name: str) -> bool:
    """Whether ``name`` is an embedded auction study or a study TOML file."""
    from analysis.studies import study_family

    return isinstance(name, str) and bool(name.strip()) and study_family(name) == "auction"


def load_auction_market(study_name: str, seed: int = 0) -> tuple[Any, Any]:
    """(study, market) of the study's small ``[audit]`` instance drawn with replication ``seed``;
    an unknown study raises :class:`InputError` naming ``study``."""
    from analysis.studies import build_market, load_study

    if not isinstance(study_name, str) or not study_name.strip():
        raise InputError("study", study_name, f"must name an auction study, one of {auction_studies()}")
    if not is_auction_study(study_name):
        raise InputError("study", study_name, f"is neither an embedded auction study {auction_studies()} "
                         "nor a study TOML file")  # fmt: skip
    seed = check_int("seed", seed, minimum=0)
    study = load_study(study_name)
    market = build_market(study.paper, study.audit_params(), _streams(seed)[0])
    return study, market


def lie_dimension(market: Any, bid: Any) -> Any:
    """The dimension the page's liar scales: ``value_scale`` if the market has it for ``bid``,
    else its first factor dimension (``None`` if it has none)."""
    dims = [d for d in market.dimensions(bid) if d.kind == "factor"]
    return next((d for d in dims if d.name == "value_scale"), dims[0] if dims else None)


class AuctionVizModel(AuctionModel):
    """An auction study's ``[audit]`` instance under one mechanism in which ONE bidder (the liar,
    by job id) scales its reported value by ``lie_factor`` (``value_scale``, or the market's first
    factor dimension), everyone else truthful; with a truthful twin (:attr:`twin`: same market,
    mechanism and mechanism seed) stepped in lockstep. One step = one slot of the horizon.

    Parameters (keyword; SolaraViz re-creates the model from them on Reset): ``study`` (embedded
    auction study or TOML path), ``mechanism`` (one of the instance's ``mechanisms()``; default
    its first, the paper's own), ``liar`` (a job id), ``lie_factor`` (within the dimension's
    limits; 1 = truthful) and ``seed`` (draws the instance and the mechanism seed).

    :attr:`history` holds one row per slot: the liar's TRUE surplus as decided so far here
    (``surplus``) and in the twin (``twin_surplus``; 0 while undecided) and ``gain`` = their
    difference, so a factor of 1 gives a gain of exactly 0.
    """

    def __init__(
        self,
        study: str = DEFAULT_STUDY,
        mechanism: str | None = None,
        liar: int = 0,
        lie_factor: float = 1.0,
        seed: int = 0,
    ) -> None:
        seed = check_int("seed", seed, minimum=0)
        spec, market = load_auction_market(study, seed)
        mechs = tuple(market.mechanisms())
        mechanism = mechs[0] if mechanism is None else mechanism
        if mechanism not in mechs:
            raise InputError("mechanism", mechanism, f"must be one of {list(mechs)} for study {spec.name}")
        bids = {int(b.job_id): b for b in market.bids()}
        liar = check_int("liar", liar, minimum=0)
        if liar not in bids:
            raise InputError("liar", liar, f"must be a job id of study {spec.name}'s instance: {sorted(bids)}")
        factor = check_finite("lie_factor", lie_factor)
        dim = lie_dimension(market, bids[liar])
        if dim is None:
            raise InputError("lie_factor", lie_factor, f"study {spec.name} has no factor dimension to scale")
        if not dim.limit_lower <= factor <= dim.limit_upper:
            raise InputError(
                "lie_factor", lie_factor, f"must lie in [{dim.limit_lower}, {dim.limit_upper}] ({dim.name})"
            )
        strategy = BidStrategy({dim.name: factor}, name=f"{dim.name} x{factor:g}")
        mech_seed = int(_streams(seed)[1].integers(0, 2**32))
        super().__init__(market, mechanism, {liar: strategy}, rng=mech_seed)
        #: the same market, mechanism and mechanism seed with everyone truthful, stepped in lockstep
        self.twin = AuctionModel(market, mechanism, rng=mech_seed)
        assert self.twin.mechanism_seed == self.mechanism_seed
        self.study_name = study
        self.study = spec
        self.mechanism_name = mechanism
        self.liar_id = liar
        self.lie_dim = dim.name
        self.lie_factor = factor
        self.seed = seed
        self.history: list[dict[str, float]] = []

    def step(self) -> None:
        """One slot of the lying auction and of its truthful twin (nothing after the horizon)."""
        if self.slot >= self.T - 1:
            self.running = False
            return
        super().step()
        self.twin.step()
        here, there = self.bidders[self.liar_id], self.twin.bidders[self.liar_id]
        self.history.append(
            {"slot": float(self.slot), "surplus": here.surplus, "twin_surplus": there.surplus,
             "gain": here.surplus - there.surplus, "decided": float(here.decision is not None),
             "twin_decided": float(there.decision is not None)}
        )  # fmt: skip

    # -- what the figures read ----------------------------------------------------------------------
    def job_ids(self) -> list[int]:
        """Every job id of the instance (phantom bidders of a lying tenant included), sorted."""
        return sorted(self.bidders)

    def job_state(self, job_id: int) -> str:
        """``admitted`` / ``rejected`` (decided), ``pending`` (reported, undecided) or ``future``."""
        b = self.bidders[job_id]
        if b.decision is not None:
            return "admitted" if b.decision.admitted else "rejected"
        if b.report is not None and int(b.report.arrival) <= self.slot:
            return "pending"
        return "future"

    def run_slots(self, job_id: int) -> list[int]:
        """Slots the job's decided schedule runs in (its completion slot without a schedule)."""
        d = self.bidders[job_id].decision
        if d is None or not d.admitted:
            return []
        if d.schedule is not None and d.schedule.slots:
            return [int(t) for t in d.schedule.slots]
        return [] if d.completion is None else [int(d.completion)]

    def reported_value(self, job_id: int) -> float:
        """The value the mechanism saw: the reported utility at the decided completion for an
        admitted job, else the report's ``value`` field if the market has one (NaN otherwise)."""
        b = self.bidders[job_id]
        if b.decision is not None and b.decision.admitted:
            return float(b.decision.utility)
        v = getattr(b.report, "value", None)
        return float(v) if isinstance(v, (int, float)) else float("nan")

    def usage(self) -> tuple[list[str], np.ndarray]:
        """(row labels, rows x slots) workers (``W<i>``) and parameter servers (``PS<i>``) per
        server of the admitted schedules decided so far, over the horizon."""
        w_rows = ps_rows = 0
        decided = [d for d in self.auctioneer.decisions if d.admitted and d.schedule is not None]
        for d in decided:
            for arr in d.schedule.workers.values():
                w_rows = max(w_rows, int(np.size(arr)))
            for arr in d.schedule.ps.values():
                ps_rows = max(ps_rows, int(np.size(arr)))
        U = np.zeros((w_rows + ps_rows, self.T))
        for d in decided:
            for t, arr in d.schedule.workers.items():
                if 0 <= int(t) < self.T:
                    U[: np.size(arr), int(t)] += np.ravel(arr)
            for t, arr in d.schedule.ps.items():
                if 0 <= int(t) < self.T:
                    U[w_rows : w_rows + np.size(arr), int(t)] += np.ravel(arr)
        labels = [f"W{i}" for i in range(w_rows)] + [f"PS{i}" for i in range(ps_rows)]
        return labels, U

    def caption(self) -> str:
        """One line: study, mechanism, slot and the lie (changes with every step and parameter)."""
        return (
            f"{self.study.name} · {self.mechanism_name} · slot {self.slot + 1}/{self.T} · liar job {self.liar_id} "
            f"{self.lie_dim} x{self.lie_factor:.2f} · seed {self.seed}" + ("" if self.running else " · finished")
        )


# ---------------------------------------------------------------------------------------------------
# the auction page: figures

_STATE_COLOURS = {"admitted": "tab:green", "rejected": "tab:red", "pending": "tab:orange", "future": "0.8"}


def _job_labels(model: AuctionVizModel) -> list[str]:
    return [f"job {j} (liar)" if j == model.liar_id else f"job {j}" for j in model.job_ids()]


def _bold_liar(ax: Any, model: AuctionVizModel) -> None:
    for label in ax.get_yticklabels() + ax.get_xticklabels():
        if label.get_text().endswith("(liar)"):
            label.set_fontweight("bold")
            label.set_color("tab:purple")


def timeline_figure(model: AuctionVizModel) -> Figure:
    """One row per job: true arrival (▼; the reported one ▽ when later), the slots its decided
    schedule runs in, coloured admitted / rejected / pending / not arrived; the current slot."""
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    ids = model.job_ids()
    for row, j in enumerate(ids):
        b = model.bidders[j]
        state = model.job_state(j)
        colour = _STATE_COLOURS[state]
        slots = model.run_slots(j)
        if slots:
            ax.broken_barh([(t - 0.4, 0.8) for t in slots], (row - 0.3, 0.6), color=colour,
                           edgecolor="tab:purple" if j == model.liar_id else "none", lw=1.5)  # fmt: skip
        a = int(b.bid.arrival)
        ax.plot([a], [row], marker="v", ms=7, color=colour, mec="k", mew=0.6, ls="none")
        if b.report is not None and int(b.report.arrival) != a:
            ax.plot([int(b.report.arrival)], [row], marker="v", ms=7, mfc="none", mec=colour, ls="none")
        if state == "rejected":
            ax.plot([a], [row], marker="x", ms=8, color="tab:red", ls="none")
    for state, colour in _STATE_COLOURS.items():
        ax.plot([], [], "s", color=colour, label="not arrived" if state == "future" else state)
    ax.axvline(model.slot + 0.5, color="k", lw=0.8, ls="--")
    ax.set_xlim(-0.7, model.T - 0.3)
    ax.set_ylim(len(ids) - 0.5, -0.5)
    ax.set_yticks(range(len(ids)), _job_labels(model), fontsize=7)
    _bold_liar(ax, model)
    ax.set_xlabel("slot (▼ arrival, bars: scheduled slots, -- now)")
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    ax.set_title(f"{AUCTION_TITLES['timeline']} · {model.mechanism_name} · slot {model.slot + 1}", fontsize=10)
    return fig


def prices_figure(model: AuctionVizModel) -> Figure:
    """Per decided job: the payment next to the reported value (what the mechanism saw); for the
    liar also its TRUE value (true surplus + payment) and, after the bars, its twin's payment."""
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    decided = [j for j in model.job_ids() if model.bidders[j].decision is not None]
    x = np.arange(len(decided))
    pay = [model.bidders[j].payment for j in decided]
    rep = [model.reported_value(j) for j in decided]
    ax.bar(x - 0.2, rep, 0.4, label="reported value", color="tab:orange")
    ax.bar(x + 0.2, pay, 0.4, label="payment", color="tab:blue")
    if model.liar_id in decided:
        i = decided.index(model.liar_id)
        liar = model.bidders[model.liar_id]
        true_value = liar.surplus + liar.payment
        ax.plot([i - 0.2], [true_value], marker="*", ms=12, color="tab:purple", ls="none", label="liar's true value")
    if not decided:
        ax.text(0.5, 0.5, "no job decided yet", ha="center", va="center", transform=ax.transAxes)
    labels = [f"job {j} (liar)" if j == model.liar_id else f"job {j}" for j in decided]
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    _bold_liar(ax, model)
    ax.set_ylabel("currency")
    ax.legend(fontsize=7)
    ax.set_title(f"{AUCTION_TITLES['prices']} · {len(decided)}/{len(model.bidders)} decided", fontsize=10)
    return fig


def auction_gain_figure(model: AuctionVizModel) -> Figure:
    """The liar's TRUE surplus (as decided so far) lying vs in the truthful twin, and the gain, per slot."""
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    h = model.history
    slots = [r["slot"] for r in h]
    ax.step(slots, [r["surplus"] for r in h], "-o", where="post", ms=3, color="tab:red",
            label=f"liar {model.lie_dim} x{model.lie_factor:.2f}")  # fmt: skip
    ax.step(slots, [r["twin_surplus"] for r in h], "-s", where="post", ms=3, color="tab:gray",
            label="same job, all truthful")  # fmt: skip
    last = h[-1]["gain"] if h else 0.0
    ax.step(slots, [r["gain"] for r in h], "-", where="post", lw=2, color="tab:green",
            label=f"paired gain (now {last:+.2f})")  # fmt: skip
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlim(-0.5, model.T - 0.5)
    ax.set_xlabel("slot")
    ax.set_ylabel(f"job {model.liar_id}'s true surplus")
    ax.legend(fontsize=8, loc="best")
    ax.set_title(f"{AUCTION_TITLES['auction_gain']} · job {model.liar_id} · {model.mechanism_name}", fontsize=10)
    return fig


def resources_figure(model: AuctionVizModel) -> Figure:
    """Heat map servers x slots of the workers / parameter servers the admitted schedules hold."""
    labels, U = model.usage()
    fig = Figure(figsize=(FIG_W, FIG_H), layout="constrained")
    ax = fig.add_subplot()
    n_res = len(model.resources)
    ax.set_title(f"{AUCTION_TITLES['resources']} · {n_res or 'one pool of'} resources, slot {model.slot + 1}",
                 fontsize=10)  # fmt: skip
    if U.shape[0] == 0:
        U = np.zeros((1, model.T))
        labels = ["(none held)"]
    im = ax.imshow(U, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(1.0, float(U.max())))
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("slot")
    ax.axvline(model.slot + 0.5, color="w", lw=0.8, ls="--")
    fig.colorbar(im, ax=ax, label="units held (admitted schedules)")
    return fig


# ---------------------------------------------------------------------------------------------------
# the page


def _card(key: str, model: Any, figure: Figure) -> Any:
    """One figure card (fair-share or auction): heading ``ALL_TITLES[key]``, the model's caption and
    the figure, in a column with the CSS class ``marketsim-<key>`` (what the browser test queries)."""
    with solara.Column(gap="4px", classes=[f"marketsim-{key}"]) as col:
        solara.HTML(tag="h3", unsafe_innerHTML=ALL_TITLES[key], classes=["marketsim-title"])
        solara.Text(model.caption(), classes=["marketsim-caption"])
        solara.FigureMatplotlib(figure, format="png", dpi=FIG_DPI)
    return col


def _view(name: str, key: str, figure: Callable[[Any], Figure], doc: str) -> Callable[[Any], Any]:
    """A Mesa component ``name(model)`` drawing ``figure(model)`` in the card ``key``."""

    def view(model: Any) -> Any:
        return _card(key, model, figure(model))

    view.__name__ = view.__qualname__ = name
    view.__doc__ = doc
    return view


AllocationView = _view(
    "AllocationView",
    "allocation",
    allocation_figure,
    "Card (a): allocation heat map (Mesa wraps it in an auto-updating component).",
)
ThroughputView = _view(
    "ThroughputView", "throughput", throughput_figure, "Card (b): true vs reported throughput per tenant."
)
GainView = _view("GainView", "gain", gain_figure, "Card (c): the liar's paired gain over rounds.")
TopologyView = _view("TopologyView", "topology", topology_figure, "Card (d): the server topology.")
TimelineView = _view("TimelineView", "timeline", timeline_figure, "Auction card (a): the admission timeline.")
PricesView = _view(
    "PricesView", "prices", prices_figure, "Auction card (b): payments vs reported (and the liar's true) values."
)
AuctionGainView = _view(
    "AuctionGainView", "auction_gain", auction_gain_figure, "Auction card (c): the liar's paired gain over slots."
)
ResourcesView = _view(
    "ResourcesView", "resources", resources_figure, "Auction card (d): per-slot usage of the resources."
)


class PageModel(MarketVizModel):
    """The page's model: like :class:`MarketVizModel`, but a liar index past the chosen scenario's
    last tenant wraps around (the slider spans the largest scenario's tenants)."""

    def __init__(
        self,
        scenario_name: str = DEFAULT_SCENARIO,
        mechanism: str | None = None,
        liar: int = 0,
        lie_factor: float = 1.0,
        seed: int = 0,
    ) -> None:
        n = resolve_scenario(scenario_name).workload.tenants
        liar = check_int("liar", liar, minimum=0) % n
        super().__init__(scenario_name, mechanism=mechanism, liar=liar, lie_factor=lie_factor, seed=seed)


def loadable_scenarios() -> dict[str, Scenario]:
    """The embedded fair-share scenarios that load on this machine (``gavel_table`` needs the
    measured throughputs in ``../shared/data``; without them it is left out of the page), trace
    replays (``gavel_trace``, ``philly_trace``) excepted."""
    out = {}
    for name in fair_share_scenarios():
        try:
            scen = load_scenario(name)
        except InputError:
            continue
        if scen.workload.trace is None:  # trace replays have no lying tenant to show
            out[name] = scen
    return out


def _model_params(scenario: str, model: MarketVizModel) -> dict[str, Any]:
    loaded = loadable_scenarios()
    scenarios = list(loaded)
    most = max([sc.workload.tenants for sc in loaded.values()] + [model.market_scenario.workload.tenants])
    if scenario not in scenarios:
        scenarios.append(scenario)  # a TOML path given on the command line
    lo, hi = LIE_FACTOR_RANGE
    return {
        "scenario_name": {"type": "Select", "value": scenario, "values": scenarios, "label": "scenario"},
        "mechanism": {
            "type": "Select",
            "value": model.mechanism,
            "values": list(viz_mechanisms()),
            "label": "mechanism",
        },
        "liar": Slider("liar (tenant index)", value=model.liar_index, min=0, max=most - 1, step=1),
        "lie_factor": Slider(
            "lie factor on fast GPU types", value=model.lie_factor, min=lo, max=hi, step=0.05, dtype=float
        ),
        "seed": Slider("seed", value=model.seed, min=0, max=SEED_MAX, step=1),
    }


def build_page(scenario: str | None = None, model: PageModel | None = None) -> Any:
    """The SolaraViz page (an element) for ``scenario`` (default :data:`DEFAULT_SCENARIO`).

    ``model``: the initial page model (default: a fresh :class:`PageModel` of the scenario).
    Controls: Step / play / Reset; parameter changes take effect on Reset (Mesa's behaviour)."""
    name = scenario or DEFAULT_SCENARIO
    if model is None:
        model = PageModel(scenario_name=name)
    return SolaraViz(
        model,
        components=[(AllocationView, 0), (ThroughputView, 0), (GainView, 0), (TopologyView, 0)],
        model_params=_model_params(name, model),
        name="marketsim · fair-share market",
        play_interval=400,
    )


class AuctionPageModel(AuctionVizModel):
    """The auction page's model: like :class:`AuctionVizModel`, but lenient where the controls span
    several studies: a mechanism the chosen study does not run falls back to its first one, a
    liar id that is no job id picks the job at that position (modulo the number of jobs) and the
    factor is clipped to the lie dimension's limits."""

    def __init__(
        self,
        study: str = DEFAULT_STUDY,
        mechanism: str | None = None,
        liar: int = 0,
        lie_factor: float = 1.0,
        seed: int = 0,
    ) -> None:
        spec, market = load_auction_market(study, check_int("seed", seed, minimum=0))
        if mechanism not in market.mechanisms():
            mechanism = None
        bids = {int(b.job_id): b for b in market.bids()}
        ids = sorted(bids)
        liar = check_int("liar", liar, minimum=0)
        liar = liar if liar in bids else ids[liar % len(ids)]
        factor = check_finite("lie_factor", lie_factor)
        dim = lie_dimension(market, bids[liar])
        if dim is not None:
            factor = float(min(max(factor, dim.limit_lower), dim.limit_upper))
        super().__init__(study, mechanism=mechanism, liar=liar, lie_factor=factor, seed=seed)


@lru_cache(maxsize=8)
def _study_summary(study: str) -> tuple[tuple[str, ...], int]:
    """(mechanisms, largest job id) of a study's seed-0 instance (for the page's controls)."""
    _, market = load_auction_market(study, 0)
    return tuple(market.mechanisms()), max(int(b.job_id) for b in market.bids())


def _auction_params(study: str, model: AuctionVizModel) -> dict[str, Any]:
    studies = auction_studies()
    if study not in studies:
        studies.append(study)  # a study TOML path given on the command line
    mechanisms = list(model.market.mechanisms())  # the given study's first: its default stays first
    for s in studies:
        mechanisms += [m for m in _study_summary(s)[0] if m not in mechanisms]
    top = max([_study_summary(s)[1] for s in studies] + [max(model.bidders)])
    lo, hi = LIE_FACTOR_RANGE
    return {
        "study": {"type": "Select", "value": study, "values": studies, "label": "study"},
        "mechanism": {"type": "Select", "value": model.mechanism_name, "values": mechanisms, "label": "mechanism"},
        "liar": Slider("liar (job id)", value=model.liar_id, min=0, max=top, step=1),
        "lie_factor": Slider(
            "liar's value-scale factor", value=model.lie_factor, min=lo, max=hi, step=0.05, dtype=float
        ),
        "seed": Slider("seed", value=model.seed, min=0, max=SEED_MAX, step=1),
    }


def build_auction_page(study: str | None = None, model: AuctionPageModel | None = None) -> Any:
    """The SolaraViz page of auction study ``study`` (default :data:`DEFAULT_STUDY`); ``model``:
    the initial page model (default: a fresh :class:`AuctionPageModel`). Step = one slot."""
    name = study or DEFAULT_STUDY
    if model is None:
        model = AuctionPageModel(study=name)
    return SolaraViz(
        model,
        components=[(TimelineView, 0), (PricesView, 0), (AuctionGainView, 0), (ResourcesView, 0)],
        model_params=_auction_params(name, model),
        name="marketsim · online auction",
        play_interval=400,
    )


@solara.component
def Page() -> Any:
    """The app ``solara run analysis.viz:Page`` serves: one fresh model per browser session; an
    auction study gets the auction page, anything else the fair-share page."""
    scenario = os.environ.get(SCENARIO_ENV) or DEFAULT_SCENARIO
    auction = is_auction_study(scenario)
    model = solara.use_memo(
        lambda: AuctionPageModel(study=scenario) if auction else PageModel(scenario_name=scenario), []
    )
    return build_auction_page(scenario, model=model) if auction else build_page(scenario, model=model)


def serve(scenario: str | None = None, host: str = "127.0.0.1", port: int = 8765, open_browser: bool = True) -> int:
    """Serve :func:`Page` with the solara server on ``host:port`` until interrupted (Ctrl-C).

    Equivalent to ``MARKETSIM_VIZ_SCENARIO=<scenario> solara run analysis.viz:Page --production``
    (no telemetry, no version check). The scenario is validated first; a port in use raises
    :class:`InputError` naming ``--port``."""
    name = scenario or DEFAULT_SCENARIO
    if is_auction_study(name):
        AuctionPageModel(study=name)  # builds the instance: a broken study fails here, not in the browser
    else:
        resolve_scenario(name)
    port = check_int("--port", port, minimum=0)
    if port > 65535:
        raise InputError("--port", port, "must be <= 65535")
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise InputError("--port", port, f"cannot be bound on {host} ({exc.strerror or exc})") from None
    os.environ[SCENARIO_ENV] = name
    os.environ["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "false"
    import click
    import solara.__main__ as solara_main
    from solara.server import settings

    settings.telemetry.mixpanel_enable = False
    # served on 127.0.0.1 over http, solara warns on every page load that it falls back to samesite=lax cookies
    warnings.filterwarnings("ignore", message="Cookies with samesite=none require https", category=UserWarning)
    args = ["analysis.viz:Page", "--host", host, "--port", str(port), "--production", "--no-check-version"]
    args.append("--open" if open_browser else "--no-open")
    try:
        solara_main.run.main(args=args, prog_name="marketsim viz", standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):
        return 130
    return 0
