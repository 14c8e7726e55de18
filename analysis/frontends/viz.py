"""``marketsim viz``: a Mesa SolaraViz page for the fair-share market (optional ``viz`` extra).

The page model is :class:`MarketVizModel`, a :class:`marketsim.agents.model.MarketModel` of one embedded
fair-share scenario under one fair-share mechanism in which ONE tenant (the liar) scales its
reported speedups on every faster GPU type (``j >= 1``) by ``lie_factor``
(:meth:`marketsim.agents.strategies.ScaleDims.fast`); everyone else is truthful. It carries a *truthful
twin*: a second :class:`MarketModel` of the same scenario, mechanism and seed with everyone
truthful (same workload, same model RNG), stepped in lockstep inside :meth:`MarketVizModel.step`.
The liar's paired gain of a round is its TRUE throughput in the lying model minus its TRUE
throughput in the twin, so ``lie_factor = 1`` gives a gain of exactly 0. (The twin is a full
simulation rather than a re-solve of the allocator on truthful reports, so the gain includes the
knock-on effects of the lie on job progress, exits and later rounds.)

Figures (one card each, titled for people and for the browser test): ``Allocation (GPUs)`` (heat
map tenants x GPU types of the last round's fractional allocation), ``True vs reported
throughput`` (per tenant, last round), ``Liar's paired gain`` (over rounds 1..R) and ``Server
topology`` (the networkx cluster graph, hosts coloured by GPU type). Each is SVG text built by
:class:`SvgChart` (about a millisecond; the browser draws it) and memoised per (model, step): a
matplotlib PNG per card per step cost 0.1-0.2 s of CPU each and made a step take seconds.

Auction studies (``control_auction``, ``oasis``, ``eris``, ``astraea``, ``pdors``, ...) get the auction
page instead: :class:`AuctionVizModel`, an :class:`marketsim.agents.auction.AuctionModel` of the study's small
``[audit]`` instance in which ONE bidder scales its reported value (``value_scale``, or the market's
first factor dimension) by ``lie_factor``, with a truthful twin ``AuctionModel`` (same market,
mechanism and mechanism seed) stepped in lockstep, one slot per step. The liar's paired gain after
each slot is its TRUE surplus (``market.true_surplus``) as decided so far minus the twin's (0 while
undecided; the final value is the gain of the run). Figures ``Admission timeline``, ``Prices and
payments``, ``Liar's paired gain (auction)`` and ``Resources`` (:data:`AUCTION_TITLES`).

Serving: :func:`serve` runs ``solara run marketsim.analysis.frontends.viz:Page`` in this process; the scenario (or
study) travels in the environment variable :data:`SCENARIO_ENV`.
Nothing else in marketsim imports this module's dependencies (solara, altair).
"""

from __future__ import annotations

import dataclasses
import html
import os
import socket
import tomllib
import warnings
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib
import networkx as nx
import numpy as np
import solara
from mesa.visualization import Slider
from mesa.visualization.solara_viz import ModelController, ModelCreator, ShowSteps, make_initial_grid_layout
from mesa.visualization.utils import update_counter

from marketsim.agents.auction import AuctionModel, BidStrategy
from marketsim.agents.config import ModelConfig
from marketsim.agents.model import MarketModel
from marketsim.agents.strategies import ScaleDims, Truthful
from marketsim.market.errors import InputError, check_finite, check_int
from marketsim.market.registry import get, names
from marketsim.scenarios.loader import Scenario, load_scenario

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
    "check_page_target",
    "fair_share_scenarios",
    "nice_ticks",
    "SvgChart",
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
#: The pages' default lie: one where the paired gain is clearly non-zero. On ``default`` under its
#: first policy (``oef-noncoop``, seed 0) tenant 0 inflating its fast-GPU speedups 2x LOSES about
#: 1.36 of its 2.86 true throughput every round; in ``control_auction`` (``fixed-price``, seed 0) job 2
#: doubling its value is admitted at a price above its true value: paired gain -2.93 from slot 1.
DEFAULT_LIAR, DEFAULT_LIE_FACTOR = 0, 2.0
DEFAULT_AUCTION_LIAR, DEFAULT_AUCTION_LIE_FACTOR = 2, 2.0
LIE_FACTOR_RANGE = (0.25, 4.0)
SEED_MAX = 999


# ---------------------------------------------------------------------------------------------------
# scenarios and mechanisms the page offers


def fair_share_scenarios() -> list[str]:
    """Embedded fair-share scenarios: every embedded TOML that is no sweep, auction study or
    learning population (the same split as ``marketsim list``)."""
    from marketsim.analysis.engine.studies import study_names
    from marketsim.analysis.engine.sweep import sweep_names
    from marketsim.analysis.frontends.learn import learning_names
    from marketsim.scenarios.loader import scenario_names

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
    from marketsim.analysis.engine.studies import study_names
    from marketsim.analysis.engine.sweep import sweep_names
    from marketsim.analysis.frontends.learn import learning_names

    if not isinstance(name, str) or not name.strip():
        raise InputError("scenario", name, f"must name a fair-share scenario, one of {fair_share_scenarios()}")
    embedded_name = "/" not in name and not name.endswith(".toml")
    kind = None
    if embedded_name:
        from marketsim.scenarios.loader import scenario_names

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
    """Fair-share mechanisms the round loop can run: the registered ones that run on a 2 x 2 instance
    (probed once) with the per-class GPU caps the round engine passes to those registered with
    ``caps=True``, without caps for the others (:func:`marketsim.market.registry.register`)."""
    W = np.array([[1.0, 2.0], [1.0, 3.0]])
    m = np.array([2, 2])
    out = []
    for name in names("fair-share"):
        info = get(name, "fair-share")
        try:
            info.fn(W, m, weights=np.ones(2), caps=np.array([2.0, 2.0]) if info.caps else None)
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

    After each step, :attr:`history` holds one row per round: ``round`` (1-based, = :attr:`steps`,
    the round every chart title and caption shows), the liar's TRUE throughput ``est`` (true value
    of its fractional allocation) and ``act`` (work done per second) here and in the twin
    (:attr:`twin`), in slowest-GPU equivalents, and ``gain`` = ``est - twin_est``.
    """

    def __init__(
        self,
        scenario_name: str = DEFAULT_SCENARIO,
        mechanism: str | None = None,
        liar: int = DEFAULT_LIAR,
        lie_factor: float = DEFAULT_LIE_FACTOR,
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
            {"round": float(self.steps), "est": est, "twin_est": twin_est, "act": act, "twin_act": twin_act,
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
# charts: SVG text drawn in the browser (a step re-renders in milliseconds, not a matplotlib PNG)

_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")  # fmt: skip
_C = {"blue": _TAB10[0], "orange": _TAB10[1], "green": _TAB10[2], "red": _TAB10[3], "purple": _TAB10[4],
      "gray": _TAB10[7], "light": "#cccccc"}  # fmt: skip
_FONT = "font-family:DejaVu Sans,Arial,sans-serif"


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(v: float) -> str:
    return f"{v:.1f}"


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]`` (steps 1, 2, 2.5 or 5 x 10^k; whole
    numbers only with ``integer``)."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, n)
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)
    if integer:
        step = max(1.0, float(np.ceil(step)))
    first = np.ceil(lo / step - 1e-9) * step
    return [float(round(v, 10)) + 0.0 for v in np.arange(first, hi + step * 1e-6, step)]  # + 0.0: no "-0"


def _viridis(v: float) -> str:
    """Hex colour of ``v`` in [0, 1] on matplotlib's viridis map (256 levels, cached)."""
    return _viridis_level(int(round(min(max(float(v), 0.0), 1.0) * 255)))


@lru_cache(maxsize=256)
def _viridis_level(level: int) -> str:
    r, g, b, _ = matplotlib.colormaps["viridis"](level / 255)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


class SvgChart:
    """One chart as SVG text: a plot area with linear scales, axes, a title and a legend.

    ``key`` and ``meta`` become ``data-*`` attributes of the ``<svg>`` element (what the tests read);
    coordinates passed to the drawing methods are data units."""

    W, H = 450, 300

    def __init__(self, key: str, title: str, *, left: int = 60, right: int = 14, top: int = 30, bottom: int = 42,
                 meta: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.key, self.title, self.meta = key, title, dict(meta or {})
        self.left, self.right, self.top, self.bottom = left, right, top, bottom
        self.x0, self.x1, self.y0, self.y1 = 0.0, 1.0, 0.0, 1.0
        self.y_down = False
        self.parts: list[str] = []
        self.legend_items: list[tuple[str, str, str]] = []

    # -- scales
    def limits(self, x0: float, x1: float, y0: float, y1: float, y_down: bool = False) -> None:
        """Data ranges of the plot area (``y_down``: y grows downwards, as rows of a table)."""
        self.x0, self.x1 = float(x0), float(x1) if x1 > x0 else float(x0) + 1.0
        self.y0, self.y1 = float(y0), float(y1) if y1 > y0 else float(y0) + 1.0
        self.y_down = y_down

    def px(self, x: float) -> float:
        return self.left + (x - self.x0) / (self.x1 - self.x0) * (self.W - self.left - self.right)

    def py(self, y: float) -> float:
        f = (y - self.y0) / (self.y1 - self.y0)
        h = self.H - self.top - self.bottom
        return self.top + (f * h if self.y_down else (1.0 - f) * h)

    # -- drawing (data units)
    def rect(self, x0: float, y0: float, x1: float, y1: float, fill: str, stroke: str = "none", sw: float = 1.0,
             tip: str | None = None) -> None:  # fmt: skip
        a, b = sorted((self.px(x0), self.px(x1)))
        c, d = sorted((self.py(y0), self.py(y1)))
        inner = f"<title>{_esc(tip)}</title>" if tip else ""
        self.parts.append(f'<rect x="{_num(a)}" y="{_num(c)}" width="{_num(max(b - a, 0.5))}" '
                          f'height="{_num(max(d - c, 0.5))}" fill="{fill}" stroke="{stroke}" '
                          f'stroke-width="{sw}">{inner}</rect>')  # fmt: skip

    def polyline(self, xs: Any, ys: Any, colour: str, width: float = 1.5, dash: str | None = None,
                 step: bool = False, marker: str | None = None, cls: str = "") -> None:  # fmt: skip
        xs, ys = list(map(float, xs)), list(map(float, ys))
        if not xs:
            return
        pts = []
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if step and i > 0:
                pts.append((self.px(x), self.py(ys[i - 1])))
            pts.append((self.px(x), self.py(y)))
        d = " ".join(f"{_num(a)},{_num(b)}" for a, b in pts)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        data = " ".join(f"{x:g},{y:.6g}" for x, y in zip(xs, ys, strict=True))
        self.parts.append(f'<polyline class="{cls}" data-points="{data}" points="{d}" fill="none" stroke="{colour}" '
                          f'stroke-width="{width}"{extra}/>')  # fmt: skip
        if marker:
            for x, y in zip(xs, ys, strict=True):
                self.marker(x, y, marker, colour, 3.0)

    def marker(self, x: float, y: float, shape: str, colour: str, size: float = 5.0, hollow: bool = False,
               edge: str = "none", tip: str | None = None, cls: str = "") -> None:  # fmt: skip
        """``shape``: ``o`` circle, ``s`` square, ``v`` triangle down, ``x`` cross, ``*`` star."""
        cx, cy, r = self.px(x), self.py(y), size
        fill, stroke = ("none", colour) if hollow else (colour, edge)
        inner = f"<title>{_esc(tip)}</title>" if tip else ""
        attrs = f'class="{cls}" data-x="{x:.6g}" data-y="{y:.6g}" fill="{fill}" stroke="{stroke}" stroke-width="1"'
        if shape == "o":
            self.parts.append(f'<circle {attrs} cx="{_num(cx)}" cy="{_num(cy)}" r="{r}">{inner}</circle>')
        elif shape == "s":
            self.parts.append(f'<rect {attrs} x="{_num(cx - r)}" y="{_num(cy - r)}" width="{2 * r}" height="{2 * r}">'
                              f"{inner}</rect>")  # fmt: skip
        elif shape in ("v", "*", "x"):
            if shape == "v":
                pts = [(cx - r, cy - r * 0.8), (cx + r, cy - r * 0.8), (cx, cy + r)]
            elif shape == "*":
                pts = [(cx + (r if k % 2 == 0 else r * 0.45) * np.sin(k * np.pi / 5),
                        cy - (r if k % 2 == 0 else r * 0.45) * np.cos(k * np.pi / 5)) for k in range(10)]  # fmt: skip
            else:
                w = r * 0.35
                pts = [(cx - r, cy - r + w), (cx - r + w, cy - r), (cx, cy - w), (cx + r - w, cy - r),
                       (cx + r, cy - r + w), (cx + w, cy), (cx + r, cy + r - w), (cx + r - w, cy + r), (cx, cy + w),
                       (cx - r + w, cy + r), (cx - r, cy + r - w), (cx - w, cy)]  # fmt: skip
            d = " ".join(f"{_num(a)},{_num(b)}" for a, b in pts)
            self.parts.append(f'<polygon {attrs} points="{d}">{inner}</polygon>')

    def text(self, x: float, y: float, s: str, size: int = 10, colour: str = "#222", anchor: str = "middle",
             bold: bool = False, data_units: bool = True, rotate: float = 0.0, cls: str = "") -> None:  # fmt: skip
        px, py = (self.px(x), self.py(y)) if data_units else (x, y)
        rot = f' transform="rotate({rotate} {_num(px)} {_num(py)})"' if rotate else ""
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(f'<text class="{cls}" x="{_num(px)}" y="{_num(py)}" font-size="{size}" fill="{colour}" '
                          f'text-anchor="{anchor}" dominant-baseline="middle"{weight}{rot}>'
                          f"{_esc(s)}</text>")  # fmt: skip

    def hline(self, y: float, colour: str = "#000", width: float = 0.8, dash: str | None = None) -> None:
        self.polyline([self.x0, self.x1], [y, y], colour, width, dash, cls="ref")

    def vline(self, x: float, colour: str = "#000", width: float = 0.8, dash: str | None = None) -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{_num(self.px(x))}" x2="{_num(self.px(x))}" y1="{self.top}" '
                          f'y2="{self.H - self.bottom}" stroke="{colour}" stroke-width="{width}"{extra}/>')  # fmt: skip

    def legend(self, label: str, colour: str, shape: str = "s") -> None:
        self.legend_items.append((label, colour, shape))

    # -- axes and output
    def axes(self, xticks: list[float] | None = None, xlabels: list[str] | None = None,
             yticks: list[float] | None = None, ylabels: list[str] | None = None, xlabel: str = "", ylabel: str = "",
             xrotate: float = 0.0, grid: bool = True, label_colours: dict[str, str] | None = None) -> None:  # fmt: skip
        """Frame, ticks (``*labels`` default to the tick values) and axis labels."""
        W, H, L, R, T, B = self.W, self.H, self.left, self.right, self.top, self.bottom
        out = [f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#444" '
               'stroke-width="0.8"/>']  # fmt: skip
        colours = label_colours or {}
        for i, v in enumerate(yticks or []):
            y = self.py(v)
            lab = ylabels[i] if ylabels else f"{v:g}"
            if grid:
                out.append(f'<line x1="{L}" x2="{W - R}" y1="{_num(y)}" y2="{_num(y)}" stroke="#e6e6e6"/>')
            colour = colours.get(lab, "#222")
            bold = ' font-weight="bold"' if lab in colours else ""
            out.append(f'<text class="ytick" x="{L - 4}" y="{_num(y)}" font-size="10" text-anchor="end" '
                       f'dominant-baseline="middle" fill="{colour}"{bold}>{_esc(lab)}</text>')  # fmt: skip
        for i, v in enumerate(xticks or []):
            x = self.px(v)
            lab = xlabels[i] if xlabels else f"{v:g}"
            colour = colours.get(lab, "#222")
            bold = ' font-weight="bold"' if lab in colours else ""
            out.append(f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{H - B}" y2="{H - B + 3}" stroke="#444"/>')
            if xrotate:
                out.append(f'<text class="xtick" x="{_num(x)}" y="{H - B + 8}" font-size="10" text-anchor="end" '
                           f'fill="{colour}"{bold} transform="rotate({xrotate} {_num(x)} {H - B + 8})">{_esc(lab)}'
                           "</text>")  # fmt: skip
            else:
                out.append(f'<text class="xtick" x="{_num(x)}" y="{H - B + 13}" font-size="10" text-anchor="middle" '
                           f'fill="{colour}"{bold}>{_esc(lab)}</text>')  # fmt: skip
        if xlabel:
            y = H - 4 if self.bottom < 50 else H - 24  # a bottom margin >= 50 leaves a row for a legend
            out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{y}" font-size="10" text-anchor="middle">'
                       f"{_esc(xlabel)}</text>")  # fmt: skip
        if ylabel:
            yc = (T + H - B) / 2
            out.append(f'<text x="11" y="{yc:.0f}" font-size="10" text-anchor="middle" '
                       f'transform="rotate(-90 11 {yc:.0f})">{_esc(ylabel)}</text>')  # fmt: skip
        self.parts = out + self.parts

    def svg(self, legend_at: str = "top-right") -> str:
        """The chart as one ``<svg>`` element (``class="marketsim-chart"``, ``data-chart`` = key)."""
        meta = "".join(f' data-{k}="{_esc(v)}"' for k, v in self.meta.items())
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="marketsim-chart" data-chart="{self.key}"{meta} '
                f'viewBox="0 0 {self.W} {self.H}" width="100%" '
                f'style="max-width:{self.W * 1.6:.0f}px;{_FONT}">')  # fmt: skip
        title = (f'<text class="chart-title" x="{self.W / 2:.0f}" y="15" font-size="12" text-anchor="middle" '
                 f'font-weight="bold">{_esc(self.title)}</text>')  # fmt: skip
        legend = []
        if self.legend_items and legend_at == "below":  # one row under the x axis label
            widths = [22 + 5.6 * len(lab) for lab, _, _ in self.legend_items]
            x = (self.W - sum(widths)) / 2
            for (lab, colour, _shape), w in zip(self.legend_items, widths, strict=True):
                legend.append(f'<rect x="{_num(x)}" y="{self.H - 12}" width="9" height="9" fill="{colour}"/>'
                              f'<text x="{_num(x + 12)}" y="{self.H - 7}" font-size="9.5" dominant-baseline="middle">'
                              f"{_esc(lab)}</text>")  # fmt: skip
                x += w
        elif self.legend_items:
            n = len(self.legend_items)
            width = 16 + 5.6 * max(len(lab) for lab, _, _ in self.legend_items)
            x = self.W - self.right - width - 4 if legend_at.endswith("right") else self.left + 4
            y = self.top + 4 if legend_at.startswith("top") else self.H - self.bottom - 4 - 14 * n
            legend.append(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(width)}" height="{14 * n + 4}" '
                          'fill="white" fill-opacity="0.85" stroke="#bbb" stroke-width="0.6"/>')  # fmt: skip
            for i, (lab, colour, shape) in enumerate(self.legend_items):
                cy = y + 9 + 14 * i
                if shape == "line":
                    legend.append(f'<line x1="{_num(x + 3)}" x2="{_num(x + 13)}" y1="{_num(cy)}" y2="{_num(cy)}" '
                                  f'stroke="{colour}" stroke-width="2"/>')  # fmt: skip
                elif shape == "*":
                    legend.append(f'<text x="{_num(x + 8)}" y="{_num(cy + 1)}" font-size="12" fill="{colour}" '
                                  'text-anchor="middle" dominant-baseline="middle">★</text>')  # fmt: skip
                else:
                    legend.append(f'<rect x="{_num(x + 3)}" y="{_num(cy - 4)}" width="9" height="9" fill="{colour}"/>')
                legend.append(f'<text x="{_num(x + 17)}" y="{_num(cy)}" font-size="9.5" dominant-baseline="middle">'
                              f"{_esc(lab)}</text>")  # fmt: skip
        return head + title + "".join(self.parts) + "".join(legend) + "</svg>"


def _colorbar(c: SvgChart, vmax: float, label: str) -> None:
    """A vertical viridis scale 0..``vmax`` right of the plot area."""
    x, top, bottom = c.W - c.right + 10, c.top, c.H - c.bottom
    gid = f"cbar-{c.key}"
    stops = "".join(f'<stop offset="{f:.2f}" stop-color="{_viridis(1.0 - f)}"/>' for f in np.linspace(0, 1, 9))
    out = [f'<defs><linearGradient id="{gid}" x1="0" x2="0" y1="0" y2="1">{stops}</linearGradient></defs>',
           f'<rect x="{x}" y="{top}" width="10" height="{bottom - top}" fill="url(#{gid})" stroke="#444" '
           'stroke-width="0.5"/>']  # fmt: skip
    for v in nice_ticks(0.0, vmax, 4):
        y = bottom - v / vmax * (bottom - top)
        out.append(f'<text x="{x + 13}" y="{_num(y)}" font-size="8" dominant-baseline="middle">{v:g}</text>')
    ym = (top + bottom) / 2
    out.append(f'<text x="{c.W - 6}" y="{ym:.0f}" font-size="9" text-anchor="middle" '
               f'transform="rotate(-90 {c.W - 6} {ym:.0f})">{_esc(label)}</text>')  # fmt: skip
    c.parts.extend(out)


def _heat(c: SvgChart, M: np.ndarray, tips: Callable[[int, int], str], values: bool) -> float:
    vmax = max(1.0, float(M.max()) if M.size else 1.0)
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            v = float(M[i, j])
            c.rect(j - 0.5, i - 0.5, j + 0.5, i + 0.5, _viridis(v / vmax), stroke="white", sw=0.5, tip=tips(i, j))
            if values and v > 0.005:
                c.text(j, i, f"{v:.1f}", size=8, colour="white" if v < 0.6 * vmax else "black")
    return vmax


def _tenant_labels(model: MarketVizModel) -> list[str]:
    return [f"{tid} (liar)" if tid == model.liar_id else tid for tid in model.tenant_ids()]


def _liar_colour(labels: list[str]) -> dict[str, str]:
    return {lab: _C["purple"] for lab in labels if lab.endswith("(liar)")}


def allocation_figure(model: MarketVizModel) -> str:
    """SVG heat map tenants x GPU types of the last round's fractional allocation."""
    X = model.allocation_matrix()
    r = model.steps
    c = SvgChart("allocation", f"{TITLES['allocation']} · {model.mechanism} · round {r}", left=80, right=58,
                 bottom=28, meta={"round": r})  # fmt: skip
    n, k = X.shape
    c.limits(-0.5, k - 0.5, -0.5, n - 0.5, y_down=True)
    labels = _tenant_labels(model)
    vmax = _heat(c, X, lambda i, j: f"{labels[i]} on {model.gpu_names[j]}: {X[i, j]:.3f} GPUs", values=True)
    c.axes(
        list(range(k)), list(model.gpu_names), list(range(n)), labels, grid=False, label_colours=_liar_colour(labels)
    )
    _colorbar(c, vmax, "GPUs (fractional)")
    return c.svg()


def throughput_figure(model: MarketVizModel) -> str:
    """SVG bars: per tenant the TRUE vs REPORTED throughput of the last round."""
    true, reported = model.throughputs()
    r = model.steps
    c = SvgChart("throughput", f"{TITLES['throughput']} · round {r}", bottom=62, meta={"round": r})
    n = true.size
    top = float(max(true.max(initial=0.0), reported.max(initial=0.0))) * 1.25 or 1.0  # 1.0 before round 1
    c.limits(-0.6, n - 0.4, 0.0, top)
    labels = _tenant_labels(model)
    for i in range(n):
        c.rect(i - 0.38, 0.0, i, float(true[i]), _C["blue"], tip=f"{labels[i]} true {true[i]:.3f}")
        c.rect(i, 0.0, i + 0.38, float(reported[i]), _C["orange"], tip=f"{labels[i]} reported {reported[i]:.3f}")
    c.axes(list(range(n)), labels, yticks=nice_ticks(0.0, top), xrotate=-45, label_colours=_liar_colour(labels),
           ylabel="throughput (slowest-GPU equiv.)")  # fmt: skip
    c.legend("true", _C["blue"])
    c.legend("reported (what the mechanism sees)", _C["orange"])
    return c.svg()


def gain_figure(model: MarketVizModel) -> str:
    """SVG lines per round: the liar's TRUE throughput lying and in the truthful twin, and their difference."""
    h = model.history
    r = model.steps
    last = h[-1]["gain"] if h else 0.0
    total = sum(row["gain"] for row in h)
    c = SvgChart("gain", f"{TITLES['gain']} · {model.liar_id} · {model.mechanism} · round {r}", bottom=36,
                 meta={"round": r, "last-round": int(h[-1]["round"]) if h else 0,
                       "last-gain": f"{last:.6g}"})  # fmt: skip
    R = max(model.config.rounds, 1)
    values = [v for row in h for v in (row["est"], row["twin_est"], row["gain"])] + [0.0]
    lo, hi = min(values), max(values)
    pad = 0.08 * (hi - lo) if hi > lo else 1.0
    c.limits(0.5, R + 0.5, lo - pad, hi + pad)
    c.hline(0.0)
    rounds = [row["round"] for row in h]
    c.polyline(rounds, [row["twin_est"] for row in h], _C["gray"], marker="s", cls="twin")
    c.polyline(rounds, [row["est"] for row in h], _C["red"], marker="o", cls="liar")
    c.polyline(rounds, [row["gain"] for row in h], _C["green"], width=2.5, cls="gain")
    c.axes(nice_ticks(1, R, 8, integer=True), yticks=nice_ticks(lo - pad, hi + pad), xlabel="round",
           ylabel=f"{model.liar_id}'s true throughput")  # fmt: skip
    c.legend(f"liar x{model.lie_factor:.2f}", _C["red"], "line")
    c.legend("same tenant, all truthful", _C["gray"], "line")
    c.legend(f"paired gain (now {last:+.2f}, sum {total:+.2f})", _C["green"], "line")
    return c.svg(legend_at="bottom-right" if last >= 0 else "top-right")


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


def topology_figure(model: MarketVizModel) -> str:
    """SVG of the cluster's networkx topology; hosts coloured by GPU type, labelled busy/total GPUs."""
    g = model.cluster.graph
    r = model.steps
    c = SvgChart("topology", f"{TITLES['topology']} · busy/total GPUs, round {r}", left=10, right=10, top=34,
                 bottom=30, meta={"round": r})  # fmt: skip
    if g.number_of_nodes() == 0:
        c.text(c.W / 2, c.H / 2, "no topology", data_units=False)
        return c.svg()
    pos = model.__dict__.get("_topology_pos")
    if pos is None:  # the graph never changes: lay it out once per model
        pos = model.__dict__["_topology_pos"] = _tree_layout(g)
    ys = [y for _, y in pos.values()]
    c.limits(0.0, 1.0, min(ys) - 0.35, max(ys) + 0.35)
    for u, v in g.edges:
        c.polyline([pos[u][0], pos[v][0]], [pos[u][1], pos[v][1]], "#999999", 1.0, cls="edge")
    by_node = {s.server.node: s for s in model.server_agents() if s.server.node is not None}
    size = float(min(16.0, max(7.0, 0.42 * (c.W - 20) / max(1, max(Counter(ys).values())))))
    for node, (x, y) in pos.items():
        s = by_node.get(node)
        if s is None:
            c.marker(x, y, "s", "#bfbfbf", size * 0.8, edge="#777", tip=str(node), cls="switch")
            c.text(x, y, str(node), size=8)
            continue
        colour = _TAB10[s.server.gpu_type % 10]
        tip = f"{node}: {model.gpu_names[s.server.gpu_type]}, {s.busy}/{s.server.count} GPUs busy"
        c.marker(x, y, "o", colour, size, edge="black" if s.healthy else "red", tip=tip, cls="host")
        c.text(x, y, f"{s.busy}/{s.server.count}", size=8, colour="white", bold=True)
        c.text(c.px(x), c.py(y) + size + 7, str(node), size=7, data_units=False)
    for j, name in enumerate(model.gpu_names):
        c.legend(name, _TAB10[j % 10])
    return c.svg(legend_at="top-left")


# ---------------------------------------------------------------------------------------------------
# the auction page: model


def auction_studies() -> list[str]:
    """Embedded auction reproduction studies (``kind = "study"``; ``marketsim list``)."""
    from marketsim.analysis.engine.studies import study_names

    return study_names("auction")


def is_auction_study(name: str) -> bool:
    """Whether ``name`` is an embedded auction study or a study TOML file."""
    from marketsim.analysis.engine.studies import study_family

    return isinstance(name, str) and bool(name.strip()) and study_family(name) == "auction"


def load_auction_market(study_name: str, seed: int = 0) -> tuple[Any, Any]:
    """(study, market) of the study's small ``[audit]`` instance drawn with replication ``seed``;
    an unknown study raises :class:`InputError` naming ``study``."""
    from marketsim.analysis.engine.studies import build_market, load_study

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
        liar: int = DEFAULT_AUCTION_LIAR,
        lie_factor: float = DEFAULT_AUCTION_LIE_FACTOR,
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

    def true_value(self, job_id: int) -> float:
        """The job's TRUE value, from its true bid (not from the surplus, which is 0 when rejected):
        the bid's ``value`` field where the market has one (the control auctions), else for an
        admitted job its realised true utility (``true_surplus`` + payment, the market's
        consequence model); NaN for a rejected or undecided job of a market without ``value``."""
        b = self.bidders[job_id]
        v = getattr(b.bid, "value", None)
        if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool):
            return float(v)
        if b.decision is not None and b.decision.admitted:
            return float(self.market.true_surplus(b.bid, b.report, b.decision)) + float(b.decision.payment)
        return float("nan")

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

_STATE_COLOURS = {"admitted": _C["green"], "rejected": _C["red"], "pending": _C["orange"], "future": _C["light"]}


def _job_labels(model: AuctionVizModel) -> list[str]:
    return [f"job {j} (liar)" if j == model.liar_id else f"job {j}" for j in model.job_ids()]


def timeline_figure(model: AuctionVizModel) -> str:
    """SVG, one row per job: true arrival (▼; the reported one hollow when later), the slots its
    decided schedule runs in, coloured admitted / rejected / pending / not arrived; the current slot."""
    ids = model.job_ids()
    s = model.slot + 1
    c = SvgChart("timeline", f"{AUCTION_TITLES['timeline']} · {model.mechanism_name} · slot {s}", left=78,
                 bottom=52, meta={"slot": s})  # fmt: skip
    c.limits(-0.7, model.T - 0.3, -0.6, len(ids) - 0.4, y_down=True)
    for row, j in enumerate(ids):
        b = model.bidders[j]
        state = model.job_state(j)
        colour = _STATE_COLOURS[state]
        for t in model.run_slots(j):
            edge = _C["purple"] if j == model.liar_id else "none"
            c.rect(t - 0.4, row - 0.3, t + 0.4, row + 0.3, colour, stroke=edge, sw=1.5, tip=f"job {j} runs in slot {t}")
        a = int(b.bid.arrival)
        c.marker(a, row, "v", colour, 5.5, edge="black", tip=f"job {j}: arrives in slot {a}, {state}", cls="arrival")
        if b.report is not None and int(b.report.arrival) != a:
            c.marker(int(b.report.arrival), row, "v", colour, 5.5, hollow=True, tip=f"job {j}: reported arrival")
        if state == "rejected":
            c.marker(a + 0.45, row, "x", _C["red"], 4.5, tip=f"job {j} rejected", cls="rejected")
    c.vline(model.slot + 0.5, dash="4 3")
    labels = _job_labels(model)
    c.axes(nice_ticks(0, model.T - 1, 8, integer=True), yticks=list(range(len(ids))), ylabels=labels, grid=False,
           xlabel="slot (▼ arrival, bars: scheduled slots, -- now)", label_colours=_liar_colour(labels))  # fmt: skip
    for state, colour in _STATE_COLOURS.items():
        c.legend("not arrived" if state == "future" else state, colour)
    return c.svg(legend_at="below")


def prices_figure(model: AuctionVizModel) -> str:
    """SVG bars per decided job: the reported value the mechanism saw next to the payment; a star
    marks the liar's TRUE value (:meth:`AuctionVizModel.true_value`)."""
    decided = [j for j in model.job_ids() if model.bidders[j].decision is not None]
    pay = [float(model.bidders[j].payment) for j in decided]
    rep = [model.reported_value(j) for j in decided]
    star = model.true_value(model.liar_id) if model.liar_id in decided else float("nan")
    c = SvgChart("prices", f"{AUCTION_TITLES['prices']} · {len(decided)}/{len(model.bidders)} decided", bottom=58,
                 meta={"slot": model.slot + 1, "liar-true-value": f"{star:.6g}"})  # fmt: skip
    finite = [v for v in rep + pay + [star] if np.isfinite(v)]
    lo, hi = min(finite + [0.0]), max(finite + [0.0]) or 1.0  # nothing decided yet: a 0..1 frame
    pad = 0.15 * (hi - lo)
    c.limits(-0.6, max(len(decided), 1) - 0.4, lo - (pad if lo < 0 else 0.0), hi + pad)
    for i, j in enumerate(decided):
        if np.isfinite(rep[i]):
            c.rect(i - 0.38, 0.0, i, rep[i], _C["orange"], tip=f"job {j}: reported value {rep[i]:.3f}")
        c.rect(i, 0.0, i + 0.38, pay[i], _C["blue"], tip=f"job {j}: payment {pay[i]:.3f}")
    c.hline(0.0)
    if np.isfinite(star):
        i = decided.index(model.liar_id)
        c.marker(i - 0.19, star, "*", _C["purple"], 8.0, edge="black", tip=f"liar's true value {star:.3f}",
                 cls="true-value")  # fmt: skip
    if not decided:
        c.text(c.W / 2, c.H / 2, "no job decided yet", data_units=False)
    labels = [f"job {j} (liar)" if j == model.liar_id else f"job {j}" for j in decided]
    c.axes(list(range(len(decided))), labels, yticks=nice_ticks(c.y0, c.y1), xrotate=-45, ylabel="currency",
           label_colours=_liar_colour(labels))  # fmt: skip
    c.legend("reported value", _C["orange"])
    c.legend("payment", _C["blue"])
    c.legend("liar's true value", _C["purple"], "*")
    return c.svg()


def auction_gain_figure(model: AuctionVizModel) -> str:
    """SVG step lines per slot: the liar's TRUE surplus (as decided so far) lying and in the twin, and the gain."""
    h = model.history
    s = model.slot + 1
    last = h[-1]["gain"] if h else 0.0
    c = SvgChart("auction_gain", f"{AUCTION_TITLES['auction_gain']} · job {model.liar_id} · {model.mechanism_name}",
                 bottom=36, meta={"slot": s, "last-gain": f"{last:.6g}"})  # fmt: skip
    values = [v for row in h for v in (row["surplus"], row["twin_surplus"], row["gain"])] + [0.0]
    lo, hi = min(values), max(values)
    pad = 0.1 * (hi - lo) if hi > lo else 1.0
    c.limits(-0.5, model.T - 0.5, lo - pad, hi + pad)
    c.hline(0.0)
    slots = [row["slot"] for row in h]
    c.polyline(slots, [row["twin_surplus"] for row in h], _C["gray"], step=True, marker="s", cls="twin")
    c.polyline(slots, [row["surplus"] for row in h], _C["red"], step=True, marker="o", cls="liar")
    c.polyline(slots, [row["gain"] for row in h], _C["green"], width=2.5, step=True, cls="gain")
    c.axes(nice_ticks(0, model.T - 1, 8, integer=True), yticks=nice_ticks(lo - pad, hi + pad), xlabel="slot",
           ylabel=f"job {model.liar_id}'s true surplus")  # fmt: skip
    c.legend(f"liar {model.lie_dim} x{model.lie_factor:.2f}", _C["red"], "line")
    c.legend("same job, all truthful", _C["gray"], "line")
    c.legend(f"paired gain (now {last:+.2f})", _C["green"], "line")
    return c.svg(legend_at="bottom-right" if last >= 0 else "top-right")


def resources_figure(model: AuctionVizModel) -> str:
    """SVG heat map servers x slots of the workers / parameter servers the admitted schedules hold."""
    labels, U = model.usage()
    s = model.slot + 1
    n_res = len(model.resources)
    c = SvgChart("resources", f"{AUCTION_TITLES['resources']} · {n_res or 'one pool of'} resources, slot {s}",
                 left=70, right=58, bottom=36, meta={"slot": s})  # fmt: skip
    if U.shape[0] == 0:
        U = np.zeros((1, model.T))
        labels = ["(none held)"]
    c.limits(-0.5, model.T - 0.5, -0.5, U.shape[0] - 0.5, y_down=True)
    vmax = _heat(c, U, lambda i, t: f"{labels[i]}, slot {t}: {U[i, t]:g} units", values=U.shape[0] * model.T <= 200)
    c.vline(model.slot + 0.5, colour="white", dash="4 3")
    c.axes(nice_ticks(0, model.T - 1, 8, integer=True), yticks=list(range(len(labels))), ylabels=labels, grid=False,
           xlabel="slot")  # fmt: skip
    _colorbar(c, vmax, "units held (admitted)")
    return c.svg()


# ---------------------------------------------------------------------------------------------------
# the page


def _card(key: str, model: Any, figure: Callable[[Any], str]) -> Any:
    """One figure card (fair-share or auction): heading ``ALL_TITLES[key]``, the model's caption and
    the chart, in a column with the CSS class ``marketsim-<key>`` (what the browser test queries).

    The chart's SVG is memoised on (model, step): a re-render that is not a step (another card, a
    parameter change before Reset) reuses it, and a step rebuilds it in milliseconds."""
    svg = solara.use_memo(lambda: figure(model), dependencies=[model, model.steps])  # the model itself: no id reuse
    with solara.Column(gap="4px", classes=[f"marketsim-{key}"]) as col:
        solara.HTML(tag="h3", unsafe_innerHTML=ALL_TITLES[key], classes=["marketsim-title"])
        solara.Text(model.caption(), classes=["marketsim-caption"])
        solara.HTML(tag="div", unsafe_innerHTML=svg, classes=["marketsim-figure"])
    return col


def _view(name: str, key: str, figure: Callable[[Any], str], doc: str) -> Callable[[Any], Any]:
    """A Mesa component ``name(model)`` drawing ``figure(model)`` in the card ``key``."""

    def view(model: Any) -> Any:
        return _card(key, model, figure)

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
        liar: int = DEFAULT_LIAR,
        lie_factor: float = DEFAULT_LIE_FACTOR,
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


@solara.component
def _Card(view: Callable[[Any], Any], model: Any) -> Any:
    """``view(model)``, re-rendered whenever Mesa's controller steps the model (``update_counter``)."""
    update_counter.get()
    return view(model)


@solara.component
def MarketSolaraViz(
    model: Any,
    components: list[Callable[[Any], Any]],
    model_params: dict[str, Any],
    name: str,
    play_interval: int = 301,
) -> None:
    """Mesa's SolaraViz page for one page of cards, built from Mesa's own controls (``ModelController``:
    Reset / play / Step, ``ModelCreator``: the parameters, applied on Reset, ``ShowSteps``) without
    SolaraViz's leftovers: no tab bar (SolaraViz always draws one, a lone "Page 0" here) and no "Render
    Interval" slider or "Use Threads" box (every step is drawn; a threaded play skips charts). Mesa
    3.5's SolaraViz cannot hide these, hence this composition. ``play_interval`` in ms (Mesa's slider
    runs 1, 11, 21, ...: 301 is shown as is)."""
    reactive_model = solara.use_reactive(model)
    parameters = solara.use_reactive({})
    interval = solara.use_reactive(play_interval)
    one_step, no_threads = solara.use_reactive(1), solara.use_reactive(False)
    layout, set_layout = solara.use_state(make_initial_grid_layout(len(components)))
    with solara.AppBar():
        solara.AppBarTitle(name)
        solara.lab.ThemeToggle()
    with solara.Sidebar(), solara.Column():
        with solara.Card("Controls"):
            solara.SliderInt(label="Play Interval (ms)", value=interval, on_value=interval.set, min=1, max=500, step=10)
            ModelController(
                reactive_model,
                model_parameters=parameters,
                play_interval=interval,
                render_interval=one_step,
                use_threads=no_threads,
            )
        with solara.Card("Model Parameters"):
            ModelCreator(reactive_model, model_params, model_parameters=parameters)
        with solara.Card("Information"):
            ShowSteps(reactive_model.value)
    solara.GridDraggable(
        items=[_Card(view, reactive_model.value) for view in components],
        grid_layout=layout,
        resizable=True,
        draggable=True,
        on_grid_layout=set_layout,
    )


def build_page(scenario: str | None = None, model: PageModel | None = None) -> Any:
    """The SolaraViz page (an element) for ``scenario`` (default :data:`DEFAULT_SCENARIO`).

    ``model``: the initial page model (default: a fresh :class:`PageModel` of the scenario).
    Controls: Step / play / Reset; parameter changes take effect on Reset (Mesa's behaviour)."""
    name = scenario or DEFAULT_SCENARIO
    if model is None:
        model = PageModel(scenario_name=name)
    return MarketSolaraViz(
        model,
        components=[AllocationView, ThroughputView, GainView, TopologyView],
        model_params=_model_params(name, model),
        name="marketsim · fair-share market",
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
        liar: int = DEFAULT_AUCTION_LIAR,
        lie_factor: float = DEFAULT_AUCTION_LIE_FACTOR,
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
    return MarketSolaraViz(
        model,
        components=[TimelineView, PricesView, AuctionGainView, ResourcesView],
        model_params=_auction_params(name, model),
        name="marketsim · online auction",
    )


#: Page CSS: every slider shows its value (Vuetify's thumb label, otherwise only shown while the
#: slider is focused or dragged) and the charts fill their cards.
PAGE_CSS = """
.v-slider__thumb-label-container { display: block !important; }
.v-slider__thumb-label { transform: translateY(-20%) translateY(-12px) translateX(-50%) rotate(45deg) !important; }
.v-slider--horizontal { margin-top: 26px; }
.marketsim-figure svg { display: block; margin: 0 auto; }
"""


@solara.component
def Page() -> None:
    """The app ``solara run marketsim.analysis.frontends.viz:Page`` serves: one fresh model per browser session; an
    auction study gets the auction page, anything else the fair-share page."""
    scenario = os.environ.get(SCENARIO_ENV) or DEFAULT_SCENARIO
    auction = is_auction_study(scenario)
    model = solara.use_memo(
        lambda: AuctionPageModel(study=scenario) if auction else PageModel(scenario_name=scenario), []
    )
    solara.Style(PAGE_CSS)  # no return: the style and the SolaraViz page are both children of the app
    if auction:
        build_auction_page(scenario, model=model)
    else:
        build_page(scenario, model=model)


def check_page_target(name: str) -> None:
    """Raise :class:`InputError` naming ``scenario`` when ``name`` is neither an embedded fair-share
    scenario, an embedded auction study nor a TOML file; the message lists both kinds."""
    from marketsim.scenarios.loader import scenario_names

    embedded = isinstance(name, str) and "/" not in name and not name.endswith(".toml")
    if embedded and name.strip() and name in scenario_names():
        return
    if not embedded and Path(name).expanduser().is_file():
        return
    raise InputError(
        "scenario",
        name,
        f"is neither a fair-share scenario {fair_share_scenarios()}, an auction study {auction_studies()} "
        "nor a TOML file",
    )


def serve(scenario: str | None = None, host: str = "127.0.0.1", port: int = 8765, open_browser: bool = True) -> int:
    """Serve :func:`Page` with the solara server on ``host:port`` until interrupted (Ctrl-C).

    Equivalent to ``MARKETSIM_VIZ_SCENARIO=<scenario> solara run marketsim.analysis.frontends.viz:Page --production``
    (no telemetry, no version check). The scenario is validated first; a port in use raises
    :class:`InputError` naming ``--port``."""
    name = scenario or DEFAULT_SCENARIO
    if is_auction_study(name):
        AuctionPageModel(study=name)  # builds the instance: a broken study fails here, not in the browser
    else:
        check_page_target(name)
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
    args = ["marketsim.analysis.frontends.viz:Page", "--host", host, "--port", str(port), "--production",
            "--no-check-version"]
    args.append("--open" if open_browser else "--no-open")
    try:
        solara_main.run.main(args=args, prog_name="marketsim viz", standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):
        return 130
    return 0
