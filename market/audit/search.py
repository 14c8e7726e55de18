"""The misreport auditor: grid + joint sampling + local refinement over an :class:`AuditTarget`.

For one deviating agent (everyone else truthful) :func:`audit` searches

1. every dimension alone over a grid on both sides of the truth (geometric for factors),
2. all dimensions jointly: Latin-hypercube samples in the inflation box, the deflation box and
   the full box (seeded ``np.random.Generator``),
3. the target's discrete probes (fake / dropped job types, copied or arbitrary reports),
4. Nelder–Mead refinement (log-factor space, projected onto each family's box) from the best
   points of every continuous family,

and returns an :class:`AuditResult` with the best gain overall, per probe family (``UP_<dim>``,
``DOWN_<dim>``, ``UP_all``, ``DOWN_all``, ``MIXED`` and the probe families) and the witness. All
utilities are TRUE utilities (the target's :meth:`utility`). :func:`audit_instances` repeats this
over random instances and returns a tidy DataFrame; :func:`summarize` turns it into per-family
violation rates with Wilson 95% intervals.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.stats import qmc

from marketsim.market.audit.target import AuditTarget, Dimension, check_params
from marketsim.market.errors import InputError, check_int

__all__ = [
    "AuditConfig",
    "FamilyBest",
    "AuditResult",
    "audit",
    "audit_all",
    "evaluate_misreport",
    "audit_instances",
    "summarize",
    "agent_table",
    "wilson_interval",
    "classify",
    "jsonable",
    "relative",
]


@dataclass(frozen=True)
class AuditConfig:
    """Search budget and tolerance.

    ``n_grid`` points per side per dimension inside its box, plus ``n_zoom`` points per side between
    the truth and the first grid point (log-spaced, down to 0.1% away: gains that exist only just
    next to the truth); ``n_tail`` more per side beyond the
    box out to the dimension's hard limits (the validator's); ``edge_steps`` geometric steps of the
    boundary walk that follows a family best lying at the edge of what was explored towards the
    limit; ``n_joint`` Latin-hypercube samples per joint box
    (inflation, deflation, full); ``refine_starts`` best points per continuous family refined by
    Nelder–Mead with at most ``refine_maxfev`` evaluations each; a gain counts as a violation when
    it exceeds ``max(abs_tol, rel_tol * max(1, |truthful utility|))``. ``families`` restricts the
    search to family names (or prefixes ending in ``*``), ``None`` = all.

    :param n_grid: grid points per side per dimension inside its box, >= 0
    :param n_zoom: points per side between the truth and the first grid point, >= 0
    :param n_tail: points per side beyond the box out to the hard limits, >= 0
    :param edge_steps: steps of the boundary walk, >= 0
    :param n_joint: Latin-hypercube samples per joint box, >= 0
    :param refine_starts: best points per continuous family refined by Nelder–Mead, >= 0
    :param refine_maxfev: evaluations per refinement, >= 0
    :param rel_tol: tolerated gain relative to ``max(1, |truthful utility|)``, >= 0
    :param abs_tol: tolerated absolute gain (utility units), >= 0
    :param probes: also try the target's structural probes
    :param families: family names or ``*``-prefixes to search; ``None``: all
    :raises InputError: a negative count or tolerance
    """

    n_grid: int = 12
    n_zoom: int = 3
    n_tail: int = 4
    edge_steps: int = 16
    n_joint: int = 48
    refine_starts: int = 2
    refine_maxfev: int = 60
    rel_tol: float = 1e-7
    abs_tol: float = 0.0
    probes: bool = True
    families: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_int("AuditConfig.n_grid", self.n_grid, minimum=0)
        check_int("AuditConfig.n_tail", self.n_tail, minimum=0)
        check_int("AuditConfig.n_zoom", self.n_zoom, minimum=0)
        check_int("AuditConfig.edge_steps", self.edge_steps, minimum=0)
        check_int("AuditConfig.n_joint", self.n_joint, minimum=0)
        check_int("AuditConfig.refine_starts", self.refine_starts, minimum=0)
        check_int("AuditConfig.refine_maxfev", self.refine_maxfev, minimum=0)
        if not (self.rel_tol >= 0 and self.abs_tol >= 0):
            raise InputError("AuditConfig tolerances", (self.rel_tol, self.abs_tol), "must be >= 0")

    def wants(self, family: str) -> bool:
        """Whether ``family`` is searched under this config.

        :param family: a family label, e.g. ``"UP_1"``
        :returns: ``True`` when ``families`` is ``None`` or names or prefixes it
        """
        if self.families is None:
            return True
        for f in self.families:
            if f.endswith("*") and family.startswith(f[:-1]) or family == f:
                return True
        return False


@dataclass
class FamilyBest:
    """Best misreport found within one probe family. ``gain`` is in the target's utility unit.

    :param family: the family label
    :param in_scope: whether the family is inside the paper's stated scope
    :param gain: the best gain found (``-inf`` before any point)
    :param params: the best point's parameters (continuous families)
    :param label: the best probe's label (probe families)
    :param report: the best report
    :param n_points: misreports scored in the family
    :param at_limit: the best point sits at a dimension's hard limit
    """

    family: str
    in_scope: bool
    gain: float = -math.inf
    params: dict[str, float] | None = None
    label: str | None = None
    report: Any = None
    n_points: int = 0
    at_limit: bool = False


@dataclass
class AuditResult:
    """Outcome of :func:`audit` for one deviating agent.

    ``best_gain`` = best true utility found minus ``truthful_utility`` (absolute, >= 0 because the
    truthful report is evaluated); ``relative_gain`` = ``best_gain / |truthful_utility|`` (``inf`` when
    that is 0 and the gain positive; :meth:`to_dict` writes ``None`` then).
    ``witness`` is the parameter dict (or probe label) of the best lie, ``witness_report`` the report
    itself; ``at_limit`` says the best lie sits at a dimension's hard limit (``limit_lower`` /
    ``limit_upper``, which default to the search bounds): the gain may keep growing as the report
    goes to or past that limit, so it is a lower bound on the supremum rather than a maximum
    attained inside the searched range.
    ``families`` holds the best per family; ``in_scope_gain`` is the best over the paper's
    stated scope. ``evaluations`` counts mechanism runs, ``points`` all misreports scored (incl.
    cache hits).

    :param target: the target's name
    :param agent: the deviating agent
    :param truthful_utility: its TRUE utility when truthful
    :param best_gain: the best gain found, >= 0
    :param relative_gain: ``best_gain / |truthful_utility|`` (``inf`` from a zero baseline)
    :param witness: the best lie's parameters or probe label (``None``: no gain)
    :param witness_report: the best lie's report
    :param witness_family: the best lie's family
    :param tol: the gain that counts as a violation
    :param evaluations: mechanism runs
    :param points: misreports scored (incl. cache hits)
    :param seconds: wall time of the search, seconds
    :param families: the best per family
    :param at_limit: the best lie sits at a hard limit (the gain is a lower bound on the supremum)
    """

    target: str
    agent: Hashable
    truthful_utility: float
    best_gain: float
    relative_gain: float
    witness: dict[str, float] | str | None
    witness_report: Any
    witness_family: str | None
    tol: float
    evaluations: int
    points: int
    seconds: float
    families: dict[str, FamilyBest] = field(default_factory=dict)
    at_limit: bool = False

    @property
    def violated(self) -> bool:
        """A lie beats the truth by more than ``tol``."""
        return self.best_gain > self.tol

    def family_gain(self, predicate: Callable[[FamilyBest], bool]) -> tuple[float, FamilyBest | None]:
        """Best gain (>= 0) over the families satisfying ``predicate`` and the family attaining it.

        :param predicate: selects families
        :returns: ``(gain, family best or None)``
        """
        best, arg = 0.0, None
        for fb in self.families.values():
            if predicate(fb) and fb.gain > best:
                best, arg = fb.gain, fb
        return best, arg

    @property
    def in_scope_gain(self) -> float:
        """Best gain inside the paper's stated scope (e.g. inflation only for OEF)."""
        return self.family_gain(lambda fb: fb.in_scope)[0]

    @property
    def out_of_scope_gain(self) -> float:
        """Best gain over the extended families."""
        return self.family_gain(lambda fb: not fb.in_scope)[0]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "target": self.target,
            "agent": jsonable(self.agent),
            "truthful_utility": self.truthful_utility,
            "best_gain": self.best_gain,
            "relative_gain": self.relative_gain if math.isfinite(self.relative_gain) else None,
            "violated": self.violated,
            "tol": self.tol,
            "witness": jsonable(self.witness),
            "witness_report": jsonable(self.witness_report),
            "witness_family": self.witness_family,
            "at_limit": self.at_limit,
            "in_scope_gain": self.in_scope_gain,
            "out_of_scope_gain": self.out_of_scope_gain,
            "evaluations": self.evaluations,
            "points": self.points,
            "seconds": self.seconds,
            "families": {
                f: {"gain": fb.gain, "in_scope": fb.in_scope, "params": jsonable(fb.params), "label": fb.label}
                for f, fb in self.families.items()
            },
        }


def jsonable(x: Any) -> Any:
    """Convert numpy arrays/scalars, tuples and dataclass-free containers to JSON-ready values.

    :param x: any value
    :returns: lists, dicts with string keys, Python scalars; non-finite floats as strings
    """
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if hasattr(x, "__dataclass_fields__"):
        return {k: jsonable(getattr(x, k)) for k in x.__dataclass_fields__}
    return x


def relative(gain: float, base: float) -> float:
    """``gain / |base|``; ``inf`` for a positive gain over a zero baseline (from nothing to
    something), 0 for a non-positive one.

    :param gain: the absolute gain
    :param base: the truthful utility
    :returns: the relative gain
    """
    if abs(base) > 1e-12:
        return gain / abs(base)
    return math.inf if gain > 0 else 0.0


def classify(dims: Sequence[Dimension], values: Sequence[float]) -> str:
    """Probe family of a parameter point: ``UP_<d>``/``DOWN_<d>`` when one dimension moved,
    ``UP_all``/``DOWN_all`` when several moved all in the over/under direction, else ``MIXED``
    (``TRUTH`` when nothing moved).

    :param dims: the agent's dimensions
    :param values: one parameter value per dimension
    :returns: the family label
    """
    sides = [d.side(float(v)) for d, v in zip(dims, values, strict=True)]
    moved = [(d, s) for d, s in zip(dims, sides, strict=True) if s != 0]
    if not moved:
        return "TRUTH"
    if len(moved) == 1:
        d, s = moved[0]
        return f"{'UP' if s > 0 else 'DOWN'}_{d.name}"
    if all(s > 0 for _, s in moved):
        return "UP_all"
    if all(s < 0 for _, s in moved):
        return "DOWN_all"
    return "MIXED"


class _Search:
    """State of one audit: evaluated points, per-family bests and top-k starts."""

    def __init__(self, target: AuditTarget, agent: Hashable, dims: Sequence[Dimension], cfg: AuditConfig) -> None:
        self.target, self.agent, self.dims, self.cfg = target, agent, list(dims), cfg
        self.names = [d.name for d in self.dims]
        truth = target.report(agent, {d.name: d.truth for d in self.dims})
        self.u0 = float(target.evaluate(agent, truth))
        self.tol = max(cfg.abs_tol, cfg.rel_tol * max(1.0, abs(self.u0)))
        self.families: dict[str, FamilyBest] = {}
        self.starts: dict[str, list[tuple[float, np.ndarray]]] = {}
        self.points = 1

    def _family(self, name: str) -> FamilyBest:
        fb = self.families.get(name)
        if fb is None:
            fb = self.families[name] = FamilyBest(name, bool(self.target.in_scope(name)))
        return fb

    def values_of(self, z: np.ndarray) -> np.ndarray:
        return np.array([float(d.from_z(zz)) for d, zz in zip(self.dims, z, strict=True)])

    def eval_z(self, z: np.ndarray) -> float:
        """Gain at search coordinates ``z`` (projected onto the bounds); records the family best."""
        vals = self.values_of(np.asarray(z, dtype=float))
        fam = classify(self.dims, vals)
        if fam == "TRUTH":
            return 0.0
        params = dict(zip(self.names, vals.tolist(), strict=True))
        report = self.target.report(self.agent, params)
        gain = float(self.target.evaluate(self.agent, report)) - self.u0
        self.points += 1
        fb = self._family(fam)
        fb.n_points += 1
        if gain > fb.gain:
            fb.gain, fb.params, fb.report, fb.label = gain, params, report, None
        st = self.starts.setdefault(fam, [])
        st.append((gain, np.array([float(d.to_z(v)) for d, v in zip(self.dims, vals, strict=True)])))
        if len(st) > 4 * max(1, self.cfg.refine_starts):
            st.sort(key=lambda t: -t[0])
            del st[2 * max(1, self.cfg.refine_starts) :]
        return gain

    def eval_probe(self, family: str, label: str, report: Any) -> None:
        # structural probes are few and often degenerate (copied rows): never screen them
        ev = self.target.confirm if getattr(self.target, "screening", False) else self.target.evaluate
        gain = float(ev(self.agent, report)) - self.u0
        self.points += 1
        fb = self._family(family)
        fb.n_points += 1
        if gain > fb.gain:
            fb.gain, fb.params, fb.report, fb.label = gain, None, report, label

    # -- boxes in z space ------------------------------------------------------------------------
    def box(self, family: str) -> tuple[np.ndarray, np.ndarray]:
        """Lower/upper z-bounds of ``family``'s region (others pinned at the truth)."""
        z0 = np.array([float(d.to_z(d.truth)) for d in self.dims])
        lo = np.array([float(d.to_z(d.lower)) for d in self.dims])
        hi = np.array([float(d.to_z(d.upper)) for d in self.dims])
        over_lo = np.where([d.over > 0 for d in self.dims], z0, lo)
        over_hi = np.where([d.over > 0 for d in self.dims], hi, z0)
        under_lo = np.where([d.over > 0 for d in self.dims], lo, z0)
        under_hi = np.where([d.over > 0 for d in self.dims], z0, hi)
        if family == "UP_all":
            return over_lo, over_hi
        if family == "DOWN_all":
            return under_lo, under_hi
        if family == "MIXED":
            return lo, hi
        side, _, name = family.partition("_")
        i = self.names.index(name)
        blo, bhi = z0.copy(), z0.copy()
        if side == "UP":
            blo[i], bhi[i] = over_lo[i], over_hi[i]
        else:
            blo[i], bhi[i] = under_lo[i], under_hi[i]
        return blo, bhi


def audit(
    target: AuditTarget,
    agent: Hashable,
    *,
    config: AuditConfig | None = None,
    rng: np.random.Generator | int | None = None,
    dimensions: Iterable[str] | None = None,
) -> AuditResult:
    """Search ``agent``'s misreports against ``target`` (others truthful); see the module docstring.

    ``dimensions`` restricts the search to those dimension names (others stay truthful); an
    unknown name raises :class:`InputError`. ``rng`` seeds the joint sampling and the probes (an
    int is turned into ``np.random.default_rng(int)``; ``None`` means seed 0, for reproducibility).

    :param target: the mechanism's audit target
    :param agent: the deviating agent
    :param config: the search budget and tolerance; ``None``: :class:`AuditConfig` defaults
    :param rng: a generator or an int seed; ``None``: seed 0
    :param dimensions: the dimension names to search; ``None``: all
    :returns: the best lie found, per family and overall
    :raises InputError: an unknown dimension name
    """
    cfg = config or AuditConfig()
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(0 if rng is None else rng)
    t_start = time.perf_counter()
    check_params(target, agent, {})
    all_dims = list(target.dimensions(agent))
    if dimensions is not None:
        known = {d.name for d in all_dims}
        wanted = list(dimensions)
        for name in wanted:
            if name not in known:
                hint = ""
                if name == "weight" and getattr(target, "weight_claims", None) is False:
                    hint = " (the weight is a dimension of FairShareTarget(..., weight_claims=True))"
                why = f"is not a reportable dimension of agent {agent!r}; known: {sorted(known)}{hint}"
                raise InputError("dimension", name, why)
        all_dims = [d for d in all_dims if d.name in wanted]
    ev0 = getattr(target, "evaluations", 0)
    s = _Search(target, agent, all_dims, cfg)
    z0 = np.array([float(d.to_z(d.truth)) for d in all_dims])

    # 1. one dimension at a time, both directions
    for i, d in enumerate(all_dims):
        for v in d.grid(cfg.n_grid):
            side = d.side(float(v))
            if not cfg.wants(f"{'UP' if side > 0 else 'DOWN'}_{d.name}"):
                continue
            z = z0.copy()
            z[i] = float(d.to_z(v))
            s.eval_z(z)

    # 1a. zoom: just next to the truth, inside the first grid step
    for i, d in enumerate(all_dims):
        for v in d.zoom(cfg.n_zoom, cfg.n_grid):
            side = d.side(float(v))
            if side == 0 or not cfg.wants(f"{'UP' if side > 0 else 'DOWN'}_{d.name}"):
                continue
            z = z0.copy()
            z[i] = float(d.to_z(v))
            s.eval_z(z)

    # 1b. beyond the box, out to the validator's limits (log-spaced for factors)
    for i, d in enumerate(all_dims):
        for v in d.tails(cfg.n_tail):
            side = d.side(float(v))
            if side == 0 or not cfg.wants(f"{'UP' if side > 0 else 'DOWN'}_{d.name}"):
                continue
            z = z0.copy()
            z[i] = float(d.to_z(v))
            s.eval_z(z)

    # 2. jointly: Latin hypercube in the inflation, deflation and full boxes
    joint = ("UP_all", "DOWN_all", "MIXED") if len(all_dims) >= 2 else ()
    for fam in joint:
        if cfg.n_joint == 0 or not cfg.wants(fam):
            continue
        lo, hi = s.box(fam)
        if np.all(hi - lo <= 0):
            continue
        sampler = qmc.LatinHypercube(d=len(all_dims), rng=gen)
        for u in sampler.random(cfg.n_joint):
            s.eval_z(lo + u * (hi - lo))

    # 3. structural probes
    if cfg.probes:
        for p in target.probes(agent, gen):
            if cfg.wants(p.family):
                s.eval_probe(p.family, p.label, p.report)

    # 4. local refinement from the best points of each continuous family
    if cfg.refine_starts > 0 and cfg.refine_maxfev > 0:
        for fam in sorted(s.starts):
            lo, hi = s.box(fam)
            width = hi - lo
            free = width > 0
            if not free.any():
                continue
            starts = sorted(s.starts[fam], key=lambda t: -t[0])[: cfg.refine_starts]
            for _, zs in starts:
                x0 = zs[free]

                def obj(
                    x: np.ndarray,
                    zs: np.ndarray = zs,
                    lo: np.ndarray = lo,
                    hi: np.ndarray = hi,
                    free: np.ndarray = free,
                ) -> float:
                    z = zs.copy()
                    z[free] = np.clip(x, lo[free], hi[free])
                    return -s.eval_z(z)

                simplex = [x0]
                for j in range(x0.size):
                    step = 0.1 * width[free][j]
                    e = x0.copy()
                    # step towards the interior of the box
                    e[j] = x0[j] - step if x0[j] + step > hi[free][j] else x0[j] + step
                    simplex.append(e)
                minimize(
                    obj,
                    x0,
                    method="Nelder-Mead",
                    options={
                        "maxfev": cfg.refine_maxfev,
                        "initial_simplex": np.array(simplex),
                        "xatol": 1e-10,
                        "fatol": 1e-12 * max(1.0, abs(s.u0)),
                    },
                )

    # 5. boundary walk: a single-dimension family whose best is the outermost point explored on
    # its side keeps stepping (doubling the log-distance) towards the limit while the gain grows
    if cfg.edge_steps > 0:
        for i, d in enumerate(all_dims):
            for fam, sign in ((f"UP_{d.name}", d.over), (f"DOWN_{d.name}", -d.over)):
                fb = s.families.get(fam)
                if fb is None or fb.params is None or fb.gain <= 0:
                    continue
                _edge_walk(s, i, d, fb, sign, z0, cfg.edge_steps)

    if getattr(target, "screening", False):
        # the search ran on a fast screen: re-measure the truth and every family's best report
        # with the mechanism itself, so every reported number is the mechanism's
        truth_report = target.report(agent, {d.name: d.truth for d in all_dims})
        s.u0 = float(target.confirm(agent, truth_report))
        s.tol = max(cfg.abs_tol, cfg.rel_tol * max(1.0, abs(s.u0)))
        for fb in s.families.values():
            if fb.report is not None:
                screened = fb.gain
                fb.gain = float(target.confirm(agent, fb.report)) - s.u0
                if fb.params is not None and fb.gain < screened - s.tol:
                    # screen and mechanism disagree (e.g. a point on the edge of a jump, where ties
                    # break differently): confirm the family's next-best screened points as well
                    for _, zz in sorted(s.starts.get(fb.family, []), key=lambda t: -t[0])[:4]:
                        vals = s.values_of(zz)
                        params = dict(zip(s.names, vals.tolist(), strict=True))
                        rep = target.report(agent, params)
                        g = float(target.confirm(agent, rep)) - s.u0
                        if g > fb.gain:
                            fb.gain, fb.params, fb.report = g, params, rep

    for fb in s.families.values():
        fb.at_limit = fb.params is not None and any(_at_limit(d, fb.params[d.name]) for d in all_dims)
    best = max(s.families.values(), key=lambda fb: fb.gain, default=None)
    if best is None or best.gain <= 0:
        gain, witness, wrep, wfam = 0.0, None, None, None
    else:
        gain, wrep, wfam = best.gain, best.report, best.family
        witness = best.params if best.params is not None else best.label
    return AuditResult(
        target=getattr(target, "name", type(target).__name__),
        agent=agent,
        truthful_utility=s.u0,
        best_gain=gain,
        relative_gain=relative(gain, s.u0),
        witness=witness,
        witness_report=wrep,
        witness_family=wfam,
        tol=s.tol,
        evaluations=getattr(target, "evaluations", 0) - ev0,
        points=s.points,
        seconds=time.perf_counter() - t_start,
        families=s.families,
        at_limit=bool(best is not None and best.gain > 0 and best.at_limit),
    )


def _at_limit(d: Dimension, value: float) -> bool:
    """Whether a misreported ``value`` of ``d`` sits at one of its hard limits (the edge of what the
    auditor may search), whether or not the limit equals the search bound (the default)."""
    if d.side(float(value)) == 0:
        return False  # truthful in this dimension, even when the truth is itself a limit
    return any(np.isclose(value, lim, rtol=1e-9, atol=1e-12) and not np.isclose(lim, d.truth, rtol=1e-12, atol=0)
               for lim in (d.limit_lower, d.limit_upper))  # fmt: skip


def _edge_walk(s: _Search, i: int, d: Dimension, fb: FamilyBest, sign: int, z0: np.ndarray, steps: int) -> None:
    """From ``fb``'s best value of dimension ``i``, step outwards (away from the truth, towards the
    hard limit on ``sign``'s side), doubling the log-distance, while the gain does not fall."""
    zb = float(d.to_z(fb.params[d.name]))
    lim = float(d.to_z(d.limit_upper if (sign > 0) == (d.over > 0) else d.limit_lower))
    out_dir = float(np.sign(lim - float(z0[i])))
    if out_dir == 0 or (lim - zb) * out_dir <= 1e-12:
        return
    step = max(abs(zb - float(z0[i])), 1e-3)
    z = z0.copy()
    last = fb.gain
    for _ in range(steps):
        nxt = zb + out_dir * step
        if (nxt - lim) * out_dir >= 0:
            nxt = lim
        z[i] = nxt
        g = s.eval_z(z)
        if g < last - s.tol:
            # overshot: bisect between the last rising point and this one (finds a kink or a peak)
            lo_z, hi_z = zb, nxt
            for _ in range(10):
                mid = 0.5 * (lo_z + hi_z)
                z[i] = mid
                gm = s.eval_z(z)
                if gm >= last:
                    lo_z, last = mid, gm
                else:
                    hi_z = mid
            break
        if nxt == lim:
            break
        last, zb, step = g, nxt, step * 2.0


def evaluate_misreport(target: AuditTarget, agent: Hashable, params: Mapping[str, float]) -> tuple[float, float]:
    """``(gain, true utility)`` of one misreport ``params`` (``{dimension: value}``, missing =
    truthful) against the truthful report. Validates ``params`` (unknown dimension, NaN, out of
    bounds raise :class:`InputError`). Cheap entry point for external sweeps.

    :param target: the audit target
    :param agent: the deviating agent
    :param params: dimension name -> value
    :returns: ``(gain, TRUE utility)`` of the misreport
    """
    full = check_params(target, agent, params)
    u0 = float(target.evaluate(agent, target.report(agent, {d.name: d.truth for d in target.dimensions(agent)})))
    u = float(target.evaluate(agent, target.report(agent, full)))
    return u - u0, u


def audit_all(
    target: AuditTarget,
    agents: Iterable[Hashable] | None = None,
    *,
    config: AuditConfig | None = None,
    rng: np.random.Generator | int | None = None,
) -> list[AuditResult]:
    """:func:`audit` for every agent (or the given ones), sharing one seeded generator.

    :param target: the audit target
    :param agents: the agents to audit; ``None``: ``target.agents()``
    :param config: the search budget; ``None``: defaults
    :param rng: a generator or an int seed; ``None``: seed 0
    :returns: one result per agent, in order
    """
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(0 if rng is None else rng)
    ags = list(target.agents()) if agents is None else list(agents)
    return [audit(target, a, config=config, rng=gen) for a in ags]


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval (default 95%) for a binomial proportion; ``(0, 1)`` when ``n == 0``.

    :param successes: the count of successes
    :param n: the number of trials
    :param z: the normal quantile (1.96: 95%)
    :returns: ``(low, high)``
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def _rows(result: AuditResult, instance: int, seed: Any) -> list[dict[str, Any]]:
    rows = []
    for fam, fb in sorted(result.families.items()):
        g = max(fb.gain, 0.0) if math.isfinite(fb.gain) else 0.0
        rows.append(
            {
                "instance": instance,
                "deviator": result.agent,
                "family": fam,
                "in_scope": fb.in_scope,
                "truthful_utility": result.truthful_utility,
                "gain": g,
                "relative_gain": relative(g, result.truthful_utility),
                "violated": g > result.tol,
                "witness": jsonable(fb.params if fb.params is not None else fb.label),
                "evaluations": result.evaluations,
                "seed": seed,
            }
        )
    return rows


def _run_instance(
    make_target: Callable[[np.random.Generator], AuditTarget],
    instance: int,
    seq: np.random.SeedSequence,
    deviators: str | int | Callable[[AuditTarget, np.random.Generator], Sequence[Hashable]],
    config: AuditConfig,
) -> list[dict[str, Any]]:
    inst_seq, search_seq = seq.spawn(2)
    target = make_target(np.random.default_rng(inst_seq))
    gen = np.random.default_rng(search_seq)
    agents = list(target.agents())
    if not agents:
        raise InputError("instance", instance, "has no agents (empty instance)")
    if deviators == "all":
        chosen = agents
    elif deviators == "random":
        chosen = [agents[int(gen.integers(len(agents)))]]
    elif callable(deviators):
        chosen = list(deviators(target, gen))
    else:
        chosen = [agents[int(deviators)]]
    rows: list[dict[str, Any]] = []
    for a in chosen:
        rows += _rows(audit(target, a, config=config, rng=gen), instance, seq.entropy)
    return rows


def audit_instances(
    make_target: Callable[[np.random.Generator], AuditTarget],
    n_instances: int,
    *,
    seed: int | np.random.SeedSequence = 0,
    deviators: str | int | Callable[[AuditTarget, np.random.Generator], Sequence[Hashable]] = "all",
    config: AuditConfig | None = None,
    executor: Any = None,
) -> pd.DataFrame:
    """Audit ``n_instances`` random instances; tidy rows ``(instance, deviator, family, in_scope,
    truthful_utility, gain, relative_gain, violated, witness, evaluations, seed)``.

    ``make_target(rng)`` draws one instance (it must be picklable to use ``executor``, an object
    with a ``map`` method such as ``concurrent.futures.ProcessPoolExecutor``). Instance ``i`` uses
    child ``i`` of ``SeedSequence(seed)`` (instance draw and search get separate grandchildren), so
    results do not depend on the executor. ``deviators``: ``"all"``, ``"random"`` (one per
    instance), an agent position, or ``fn(target, rng) -> agents``.

    :param make_target: draws one instance's target from a generator
    :param n_instances: the number of instances
    :param seed: the root seed
    :param deviators: who deviates (above)
    :param config: the search budget; ``None``: defaults
    :param executor: an object with ``map`` (e.g. a process pool); ``None``: in process
    :returns: the tidy frame, one row per (instance, deviator, family)
    """
    n = check_int("n_instances", n_instances, minimum=1)
    cfg = config or AuditConfig()
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(check_int("seed", seed))
    children = root.spawn(n)
    args = [(make_target, i, children[i], deviators, cfg) for i in range(n)]
    if executor is None:
        chunks = [_run_instance(*a) for a in args]
    else:
        chunks = list(executor.map(_star_run, args))
    rows = [r for c in chunks for r in c]
    cols = [
        "instance",
        "deviator",
        "family",
        "in_scope",
        "truthful_utility",
        "gain",
        "relative_gain",
        "violated",
        "witness",
        "evaluations",
        "seed",
    ]
    return pd.DataFrame(rows, columns=cols)


def _star_run(a: tuple[Any, ...]) -> list[dict[str, Any]]:
    return _run_instance(*a)


def summarize(frame: pd.DataFrame, *, n_instances: int | None = None) -> pd.DataFrame:
    """Per family (plus ``ANY``, ``IN_SCOPE`` and ``OUT_OF_SCOPE``): instances audited, instances with
    a profitable lie, that fraction with a Wilson 95% CI, mean and max of the per-instance best
    relative gain, and the max absolute gain. An instance counts once per family (its best deviator).

    :param frame: the rows of :func:`audit_instances`
    :param n_instances: the denominator; ``None``: the instances in ``frame``
    :returns: one row per family
    """
    if frame.empty:
        return pd.DataFrame(
            columns=[
                "family",
                "n_instances",
                "violations",
                "fraction",
                "ci_low",
                "ci_high",
                "mean_rel_gain",
                "max_rel_gain",
                "max_gain",
            ]
        )
    total = n_instances if n_instances is not None else int(frame["instance"].nunique())
    groups: dict[str, pd.DataFrame] = {f: g for f, g in frame.groupby("family", sort=True)}
    groups["ANY"] = frame
    groups["IN_SCOPE"] = frame[frame["in_scope"]]
    groups["OUT_OF_SCOPE"] = frame[~frame["in_scope"]]
    out = []
    for fam, g in groups.items():
        per = g.groupby("instance").agg(gain=("gain", "max"), rel=("relative_gain", "max"), v=("violated", "any"))
        nv = int(per["v"].sum())
        n = total if fam in ("ANY", "IN_SCOPE", "OUT_OF_SCOPE") else len(per)
        lo, hi = wilson_interval(nv, n)
        rel = (
            per["rel"].reindex(range(total), fill_value=0.0)
            if fam in ("ANY", "IN_SCOPE", "OUT_OF_SCOPE")
            else per["rel"]
        )
        out.append(
            {
                "family": fam,
                "n_instances": n,
                "violations": nv,
                "fraction": nv / n if n else float("nan"),
                "ci_low": lo,
                "ci_high": hi,
                "mean_rel_gain": float(rel.mean()) if len(rel) else 0.0,
                "max_rel_gain": float(rel.max()) if len(rel) else 0.0,
                "max_gain": float(per["gain"].max()) if len(per) else 0.0,
            }
        )
    return pd.DataFrame(out)


def agent_table(frame: pd.DataFrame, *, in_scope: bool | None = None) -> pd.DataFrame:
    """Per (instance, deviator): the best gain and relative gain over the families (only in-scope
    or only out-of-scope families when ``in_scope`` is given), whether it is a violation, and the
    family of the best lie.

    :param frame: the rows of :func:`audit_instances`
    :param in_scope: ``True``/``False``: only in-scope / out-of-scope families; ``None``: all
    :returns: one row per (instance, deviator)
    """
    cols = ["instance", "deviator", "gain", "relative_gain", "violated", "family"]
    f = frame if in_scope is None else frame[frame["in_scope"] == in_scope]
    if f.empty:
        return pd.DataFrame(columns=cols)
    idx = f.groupby(["instance", "deviator"], sort=True)["gain"].idxmax()
    best = f.loc[idx, ["instance", "deviator", "gain", "relative_gain", "family"]]
    viol = f.groupby(["instance", "deviator"], sort=True)["violated"].any().to_numpy()
    best = best.assign(violated=viol)
    return best[cols].reset_index(drop=True)
