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

Serving: :func:`serve` runs ``solara run analysis.viz:Page`` in this process; the scenario travels
in the environment variable :data:`SCENARIO_ENV`. Auctions (``AuctionModel``) are out of scope.
Nothing else in marketsim imports this module's dependencies (solara, altair).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import tomllib
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib
import networkx as nx
import numpy as np
import solara
from matplotlib.figure import Figure
from mesa.visualization import Slider, SolaraViz

from agents.config import ModelConfig
from agents.model import MarketModel
from agents.strategies import ScaleDims, Truthful
from market.errors import InputError, check_finite, check_int
from market.registry import get, names
from scenarios.loader import Scenario, load_scenario

__all__ = [
    "DEFAULT_SCENARIO",
    "SCENARIO_ENV",
    "TITLES",
    "MarketVizModel",
    "Page",
    "PageModel",
    "allocation_figure",
    "build_page",
    "fair_share_scenarios",
    "gain_figure",
    "resolve_scenario",
    "serve",
    "throughput_figure",
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
        what = {"study": "an auction study", "learning": "a learning population", "sweep": "a sweep config"}
        raise InputError(
            "scenario",
            name,
            f"is {what.get(kind, repr(kind))}, not a fair-share scenario (auctions are out of scope of the viz "
            f"page); choose one of {fair_share_scenarios()}",
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
# the page


def _card(key: str, model: MarketVizModel, figure: Figure) -> Any:
    with solara.Column(gap="4px", classes=[f"marketsim-{key}"]) as col:
        solara.HTML(tag="h3", unsafe_innerHTML=TITLES[key], classes=["marketsim-title"])
        solara.Text(model.caption(), classes=["marketsim-caption"])
        solara.FigureMatplotlib(figure, format="png", dpi=FIG_DPI)
    return col


def AllocationView(model: MarketVizModel) -> Any:
    """Card (a): allocation heat map (Mesa wraps it in an auto-updating component)."""
    return _card("allocation", model, allocation_figure(model))


def ThroughputView(model: MarketVizModel) -> Any:
    """Card (b): true vs reported throughput per tenant."""
    return _card("throughput", model, throughput_figure(model))


def GainView(model: MarketVizModel) -> Any:
    """Card (c): the liar's paired gain over rounds."""
    return _card("gain", model, gain_figure(model))


def TopologyView(model: MarketVizModel) -> Any:
    """Card (d): the server topology."""
    return _card("topology", model, topology_figure(model))


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


def _model_params(scenario: str, model: MarketVizModel) -> dict[str, Any]:
    scenarios = fair_share_scenarios()
    most = max([load_scenario(s).workload.tenants for s in scenarios] + [model.market_scenario.workload.tenants])
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


@solara.component
def Page() -> Any:
    """The app ``solara run analysis.viz:Page`` serves: one fresh model per browser session."""
    scenario = os.environ.get(SCENARIO_ENV) or DEFAULT_SCENARIO
    model = solara.use_memo(lambda: PageModel(scenario_name=scenario), [])
    return build_page(scenario, model=model)


def serve(scenario: str | None = None, host: str = "127.0.0.1", port: int = 8765, open_browser: bool = True) -> int:
    """Serve :func:`Page` with the solara server on ``host:port`` until interrupted (Ctrl-C).

    Equivalent to ``MARKETSIM_VIZ_SCENARIO=<scenario> solara run analysis.viz:Page --production``
    (no telemetry, no version check). The scenario is validated first; a port in use raises
    :class:`InputError` naming ``--port``."""
    name = scenario or DEFAULT_SCENARIO
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
