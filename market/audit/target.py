"""The adapter protocol between the incentive auditor and a mechanism.

The auditor never knows what a mechanism does. It talks to an :class:`AuditTarget`, which says

* who can deviate (:meth:`AuditTarget.agents`),
* what each agent can misreport (:meth:`AuditTarget.dimensions`: named real parameters, each a
  multiplicative *factor* on the truth or an absolute *value*, with bounds and the direction that
  counts as over-reporting),
* how a parameter setting becomes a report (:meth:`AuditTarget.report`; the all-truthful setting
  must give the truthful report),
* what the mechanism does with the profile "this report for the deviator, truthful reports for
  everyone else" (:meth:`AuditTarget.outcome`), and
* the deviator's TRUE utility of an outcome (:meth:`AuditTarget.utility`: true value of what it
  got minus what it paid; for fair-share allocators true throughput ``W_true_l . x_l``).

Structural misreports that are not a point in a box (declaring a fake job type, dropping a real
one, copying another agent's report, arbitrary vectors) are offered as discrete
:class:`Probe` objects by :meth:`AuditTarget.probes`; each carries its own family label.

Writing an adapter for an online auction (OASiS, PD-ORS, Astraea, Eris)
-----------------------------------------------------------------------
Subclass :class:`BaseTarget` and implement five methods:

``agents()``
    ids of the bidders / tenants whose reports may change (usually all jobs of the instance).
``dimensions(agent)``
    e.g. ``Dimension("value_scale")`` (factor on the utility function's scale, grid 0.25..4),
    ``Dimension("gamma2")`` (shape parameter, factor), ``Dimension("epochs", kind="value",
    lower=E-10, upper=E+10, truth=E, integer=True)``, ``Dimension("arrival_delay", kind="value",
    lower=0, upper=5, truth=0, integer=True)`` (only over-reporting is possible: ``lower == truth``),
    ``Dimension("workers", ...)``, ``Dimension("quota", ...)`` for quota claims.
``report(agent, params)``
    build the misreported job description / bid from the true one and ``params``
    (a ``{dimension name: value}`` dict; missing names mean "truthful").
``outcome(agent, report)``
    replay the mechanism with the others' reports fixed (and, for online mechanisms, the arrival
    order, price constants and seeds fixed): return the decision for the deviator (admitted?,
    schedule, completion time, payment) plus whatever the metrics need.
``utility(agent, outcome)``
    the deviator's TRUE surplus: true utility function evaluated at the realised true completion
    time (0 if not completed under the paper's consequence model) minus the payment.

Optional: a target may search on a cheap *screen* and set ``screening = True``; it must then
provide ``confirm(agent, report)`` (the mechanism's own TRUE utility), and the auditor re-measures
the truthful report and every family's best report with it before reporting any number.

Everything else (grids, joint sampling, refinement, caching, families, tidy results) is done by
:mod:`marketsim.market.audit.search`. Reports must be hashable through :meth:`BaseTarget.report_key` for
the cache; the default handles numbers, tuples, numpy arrays and frozen dataclasses.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from marketsim.market.errors import InputError, check_finite

__all__ = ["Dimension", "Probe", "AuditTarget", "BaseTarget", "check_params"]


@dataclass(frozen=True)
class Dimension:
    """One reportable real parameter of an agent (what the auditor and learning bidders misreport).

    :param name: the key of the parameter in the ``params`` dict passed to the target's / market's
        ``report`` / ``misreport``; families are named after it (``UP_<name>``, ``DOWN_<name>``)
    :param kind: ``"factor"`` (default): the report is ``true value * param``, ``truth`` is 1 and the
        search runs in log space between ``lower`` and ``upper`` (both > 0); ``"value"``: ``param``
        is the reported value itself (a count, a slot, a shape parameter), ``truth`` is the true
        value and the search runs in linear space
    :param lower: the search box's lower end (default 0.25 for a factor); ``lower == truth`` makes the
        parameter one-sided (e.g. an arrival can only be reported later)
    :param upper: the search box's upper end (default 4 for a factor)
    :param truth: the truthful setting (1 for a factor; the true value for a value dimension), inside the box
    :param over: +1 (default) when a parameter above ``truth`` is over-reporting (inflation, family
        ``UP_``), -1 when below is (e.g. a smaller reported bandwidth inflates the demand)
    :param integer: round the parameter (epochs, worker counts, arrival slots)
    :param limit_lower: the hard lower limit the search may reach beyond the box (tails and the
        boundary walk go out to it); ``None``: ``lower``. A best lie at a limit is reported with
        ``at_limit = True`` (the gain may keep growing past it)
    :param limit_upper: the hard upper limit; ``None``: ``upper``
    :raises InputError: an empty name, an unknown kind, a truth outside the box, a factor bound <= 0,
        ``over`` not ±1, or limits that do not contain the box
    """

    name: str
    kind: str = "factor"
    lower: float = 0.25
    upper: float = 4.0
    truth: float = 1.0
    over: int = 1
    integer: bool = False
    limit_lower: float | None = None
    limit_upper: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("Dimension.name", self.name, "must be a non-empty string")
        if self.kind not in ("factor", "value"):
            raise InputError(f"Dimension[{self.name}].kind", self.kind, "must be 'factor' or 'value'")
        lo = check_finite(f"Dimension[{self.name}].lower", self.lower)
        hi = check_finite(f"Dimension[{self.name}].upper", self.upper)
        tr = check_finite(f"Dimension[{self.name}].truth", self.truth)
        if not lo <= tr <= hi:
            raise InputError(f"Dimension[{self.name}].truth", tr, f"must lie in [lower, upper] = [{lo}, {hi}]")
        if self.kind == "factor" and lo <= 0:
            raise InputError(f"Dimension[{self.name}].lower", lo, "must be > 0 for a factor dimension")
        if self.over not in (1, -1):
            raise InputError(f"Dimension[{self.name}].over", self.over, "must be +1 or -1")
        ll = lo if self.limit_lower is None else check_finite(f"Dimension[{self.name}].limit_lower", self.limit_lower)
        lu = hi if self.limit_upper is None else check_finite(f"Dimension[{self.name}].limit_upper", self.limit_upper)
        if not (ll <= lo and lu >= hi):
            raise InputError(f"Dimension[{self.name}] limits", (ll, lu), f"must contain [lower, upper] = [{lo}, {hi}]")
        if self.kind == "factor" and ll <= 0:
            raise InputError(f"Dimension[{self.name}].limit_lower", ll, "must be > 0 for a factor dimension")
        object.__setattr__(self, "limit_lower", ll)
        object.__setattr__(self, "limit_upper", lu)

    def to_z(self, value: float | np.ndarray) -> float | np.ndarray:
        """Search coordinate: log for factors, identity for values.

        :param value: parameter value(s)
        :returns: the search coordinate(s)
        """
        return np.log(value) if self.kind == "factor" else value

    def from_z(self, z: float | np.ndarray) -> float | np.ndarray:
        """Inverse of :meth:`to_z`, clipped to the limits (and rounded if ``integer``).

        :param z: search coordinate(s)
        :returns: the parameter value(s)
        """
        v = np.exp(z) if self.kind == "factor" else z
        v = np.clip(v, self.limit_lower, self.limit_upper)
        return np.round(v) if self.integer else v

    def side(self, value: float, tol: float = 1e-12) -> int:
        """+1 if ``value`` over-reports, -1 if it under-reports, 0 if truthful.

        :param value: a parameter value
        :param tol: the distance from ``truth`` still read as truthful, relative to ``max(1, |truth|)``
        :returns: +1, -1 or 0
        """
        d = value - self.truth
        if abs(d) <= tol * max(1.0, abs(self.truth)):
            return 0
        return self.over if d > 0 else -self.over

    def grid(self, n_side: int) -> np.ndarray:
        """``n_side`` points strictly on each side of the truth (geometric for factors), truth excluded.

        :param n_side: points per side
        :returns: the grid (deduplicated and rounded for an integer dimension)
        """
        pts: list[np.ndarray] = []
        for a, b in ((self.lower, self.truth), (self.truth, self.upper)):
            if b - a <= 0:
                continue
            if self.kind == "factor":
                p = np.geomspace(a, b, n_side + 1)
            else:
                p = np.linspace(a, b, n_side + 1)
            pts.append(p[:-1] if b == self.truth else p[1:])
        if not pts:
            return np.empty(0)
        g = np.concatenate(pts)
        if self.integer:
            g = np.unique(np.round(g))
            g = g[g != self.truth]
        return g

    def zoom(self, n_side: int, n_grid: int) -> np.ndarray:
        """``n_side`` points per side between the truth and the first of ``n_grid`` grid points,
        log-spaced in distance from 0.1% of the step (factors: of the log-step) to half of it.

        :param n_side: points per side (none for an integer dimension)
        :param n_grid: the grid's points per side (sets the step)
        :returns: the points
        """
        if n_side <= 0 or self.integer:
            return np.empty(0)
        pts = []
        for a, b, sgn in ((self.lower, self.truth, -1.0), (self.truth, self.upper, 1.0)):
            if b - a <= 0 or n_grid <= 0:
                continue
            step = (np.log(b) - np.log(a) if self.kind == "factor" else b - a) / n_grid
            dist = np.geomspace(1e-3 * step, 0.5 * step, n_side)
            if self.kind == "factor":
                pts.append(self.truth * np.exp(sgn * dist))
            else:
                pts.append(self.truth + sgn * dist)
        return np.concatenate(pts) if pts else np.empty(0)

    def tails(self, n_side: int) -> np.ndarray:
        """``n_side`` points on each side beyond ``[lower, upper]`` out to the limits (geometric
        for factors); empty where the limit equals the bound.

        :param n_side: points per side
        :returns: the points
        """
        pts: list[np.ndarray] = []
        for a, b, inner in ((self.limit_lower, self.lower, self.lower), (self.upper, self.limit_upper, self.upper)):
            if b - a <= 0 or n_side <= 0:
                continue
            p = np.geomspace(a, b, n_side + 1) if self.kind == "factor" else np.linspace(a, b, n_side + 1)
            pts.append(p[p != inner])
        if not pts:
            return np.empty(0)
        g = np.concatenate(pts)
        return np.unique(np.round(g)) if self.integer else g


@dataclass(frozen=True)
class Probe:
    """A discrete (structural) misreport: ``family`` (e.g. ``"TYPES"``), a short ``label`` and the
    ``report`` object passed to :meth:`AuditTarget.outcome`.

    :param family: the misreport family, e.g. ``"TYPES"``
    :param label: a short description for results
    :param report: the report object
    """

    family: str
    label: str
    report: Any


@runtime_checkable
class AuditTarget(Protocol):
    """What the auditor needs from a mechanism (see the module docstring)."""

    name: str

    def agents(self) -> Sequence[Hashable]: ...

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        """What ``agent`` can misreport.

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :returns: its reportable dimensions
        """
        ...

    def report(self, agent: Hashable, params: Mapping[str, float]) -> Any:
        """The report of ``agent`` for a parameter setting (missing names: truthful).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param params: dimension name -> value (a factor, or the reported value)
        :returns: the report object :meth:`outcome` takes
        """
        ...

    def outcome(self, agent: Hashable, report: Any) -> Any:
        """The mechanism's outcome for ``agent`` when it submits ``report`` and the others are truthful.

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param report: from :meth:`report` or a :class:`Probe`
        :returns: what :meth:`utility` needs (allocation, decision, payment, ...)
        """
        ...

    def utility(self, agent: Hashable, outcome: Any) -> float:
        """The TRUE utility of ``agent`` for ``outcome`` (true value minus payment; fair share: true
        throughput).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param outcome: from :meth:`outcome`
        :returns: the utility (currency, or normalised throughput)
        """
        ...

    def probes(self, agent: Hashable, rng: np.random.Generator) -> Sequence[Probe]:
        """Structural misreports of ``agent`` (fake or dropped types, copies, arbitrary vectors).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param rng: the random generator (random probes)
        :returns: the probes
        """
        ...

    def in_scope(self, family: str) -> bool:
        """Whether the misreport family ``family`` is inside the paper's stated scope.

        :param family: a family label, e.g. ``"UP_1"``
        :returns: ``True`` when a gain in that family contradicts the paper's claim
        """
        ...

    def evaluate(self, agent: Hashable, report: Any) -> float:
        """TRUE utility of ``agent`` when it submits ``report`` and the others are truthful.

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param report: the report
        :returns: :meth:`utility` of :meth:`outcome`
        """
        ...


def _freeze(x: Any) -> Hashable:
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in x.items()))
    if isinstance(x, float) and math.isnan(x):
        return ("nan",)
    return x


@dataclass
class BaseTarget(ABC):
    """Convenience base: report cache, default (no) probes, default scope (``UP_*`` families).

    Subclasses implement ``agents``, ``dimensions``, ``report``, ``outcome`` and ``utility``.
    ``evaluations`` counts mechanism runs (cache misses); ``cache_hits`` the reuses.

    :param name: the target's name in results (keyword only)
    :param cache_size: the most cached report utilities (keyword only)
    """

    name: str = field(default="target", kw_only=True)
    cache_size: int = field(default=200_000, kw_only=True)
    evaluations: int = field(default=0, init=False)
    cache_hits: int = field(default=0, init=False)
    _cache: dict[Hashable, float] = field(default_factory=dict, init=False, repr=False)

    # -- to override -------------------------------------------------------------------------
    @abstractmethod
    def agents(self) -> Sequence[Hashable]:
        """Implemented by every target (see the module docstring)."""

    @abstractmethod
    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        """Implemented by every target: what ``agent`` can misreport.

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :returns: its reportable dimensions
        """

    @abstractmethod
    def report(self, agent: Hashable, params: Mapping[str, float]) -> Any:
        """Implemented by every target: the report of ``agent`` for a parameter setting (missing names: truthful).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param params: dimension name -> value (a factor, or the reported value)
        :returns: the report object :meth:`outcome` takes
        """

    @abstractmethod
    def outcome(self, agent: Hashable, report: Any) -> Any:
        """Implemented by every target: the mechanism's outcome for ``agent`` when it submits
        ``report`` and the others are truthful.

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param report: from :meth:`report` or a :class:`Probe`
        :returns: what :meth:`utility` needs (allocation, decision, payment, ...)
        """

    @abstractmethod
    def utility(self, agent: Hashable, outcome: Any) -> float:
        """Implemented by every target: the TRUE utility of ``agent`` for ``outcome`` (true value
        minus payment; fair share: true throughput).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param outcome: from :meth:`outcome`
        :returns: the utility (currency, or normalised throughput)
        """

    def probes(self, agent: Hashable, rng: np.random.Generator) -> Sequence[Probe]:
        """Structural misreports of ``agent`` (none by default).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param rng: the random generator (random probes)
        :returns: the probes
        """
        return ()

    def in_scope(self, family: str) -> bool:
        """Whether the misreport family ``family`` is inside the paper's stated scope (default:
        inflation, ``UP_*``).

        :param family: a family label, e.g. ``"UP_1"``
        :returns: ``True`` when a gain in that family contradicts the paper's claim
        """
        return family.startswith("UP_")

    # -- provided ----------------------------------------------------------------------------
    def report_key(self, agent: Hashable, report: Any) -> Hashable:
        """Hashable cache key of a report (override for exotic report objects).

        :param agent: the deviating agent
        :param report: the report
        :returns: a hashable key (arrays by dtype, shape and bytes)
        """
        return (agent, _freeze(report))

    def evaluate(self, agent: Hashable, report: Any) -> float:
        """TRUE utility of ``agent`` when it submits ``report`` and the others are truthful (cached;
        a miss counts in ``evaluations``).

        :param agent: the deviating agent (one of :meth:`marketsim.agents`)
        :param report: the report
        :returns: :meth:`utility` of :meth:`outcome`
        """
        key = self.report_key(agent, report)
        hit = self._cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        val = float(self.utility(agent, self.outcome(agent, report)))
        self.evaluations += 1
        if len(self._cache) < self.cache_size:
            self._cache[key] = val
        return val

    def dimension_map(self, agent: Hashable) -> dict[str, Dimension]:
        """``{name: Dimension}`` of ``agent``.

        :param agent: an agent of the target
        :returns: its dimensions by name
        """
        return {d.name: d for d in self.dimensions(agent)}

    def truthful_params(self, agent: Hashable) -> dict[str, float]:
        """The parameter setting that reproduces the truthful report.

        :param agent: an agent of the target
        :returns: dimension name -> its truthful value
        """
        return {d.name: d.truth for d in self.dimensions(agent)}


def check_params(target: AuditTarget, agent: Hashable, params: Mapping[str, float]) -> dict[str, float]:
    """Validate a misreport parameter dict against ``target``'s dimensions of ``agent``.

    Raises :class:`InputError` naming the field for an unknown agent, an unknown dimension name,
    a non-finite value or a value outside the dimension's bounds. Returns the full parameter dict
    (missing dimensions filled with their truthful values).

    :param target: the audit target
    :param agent: one of its agents
    :param params: dimension name -> value
    :returns: every dimension's value
    :raises InputError: an unknown agent or dimension, a non-finite value or one outside the limits
    """
    if agent not in list(target.agents()):
        raise InputError("agent", agent, f"is not an agent of {target.name}; known: {list(target.agents())}")
    dims = {d.name: d for d in target.dimensions(agent)}
    out = {name: d.truth for name, d in dims.items()}
    for name, value in params.items():
        if name not in dims:
            raise InputError(
                "dimension", name, f"is not a reportable dimension of agent {agent!r}; known: {list(dims)}"
            )
        v = check_finite(f"params[{name}]", value)
        d = dims[name]
        lo, hi = d.limit_lower, d.limit_upper
        if not lo - 1e-12 * max(1.0, abs(lo)) <= v <= hi + 1e-12 * max(1.0, abs(hi)):
            raise InputError(f"params[{name}]", value, f"must lie in [{lo}, {hi}]")
        out[name] = v
    return out
