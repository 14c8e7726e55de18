"""Audit adapters for fair-share allocators (every registered ``"fair-share"`` mechanism).

:class:`FairShareTarget` — one row per agent. Dimensions: each speedup entry ``j >= 1`` of the
deviator's row as a multiplicative factor (named ``"1"``, ``"2"``, ... so families read ``UP_1``,
``DOWN_2`` as in the OEF spec §7), optionally its weight (``"weight"``). Column 0 is the
normalisation anchor (misreporting it equals scaling all others by its inverse). Probes:
``ARBITRARY`` (copying another agent's row; random positive vectors unrelated to the truth).
Utility: TRUE normalised throughput ``W_true_l . x_l`` (slowest-GPU equivalents).

:class:`TenantTarget` — tenants with several job types through
:func:`marketsim.market.oef.virtual.allocate_tenants` (weights split over job types, the lie applies to all
of a class's replicas). Dimensions ``"<job type>:<j>"``; ``TYPES`` probes declare a fake job type
(a duplicate of a real one or a random vector) or drop a real one. Utility (spec §2.2):
``sum_tau W_true_tau . x_(u, tau)`` plus ``max_tau W_true_tau . x_fake`` for each fake class.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.audit.target import BaseTarget, Dimension, Probe
from marketsim.market.errors import InputError, as_float_array

__all__ = ["FairShareTarget", "TenantTarget", "resolve_fair_share", "FAKE_PREFIX"]

FAKE_PREFIX = "fake:"
"""Job-type prefix of invented (fake) job types in :class:`TenantTarget` probes."""


def resolve_fair_share(mechanism: str | Callable[..., Allocation]) -> tuple[str, Callable[..., Allocation]]:
    """``(name, fn)`` of a registered fair-share mechanism name, or of a callable with the
    fair-share signature. Unknown names raise :class:`InputError` listing the known ones.

    :param mechanism: a registered fair-share name or a callable
    :returns: ``(name, fn)``
    :raises InputError: neither a string nor a callable, or an unknown name
    """
    if callable(mechanism):
        return getattr(mechanism, "__name__", "fair-share"), mechanism
    if not isinstance(mechanism, str):
        raise InputError("mechanism", mechanism, "must be a registered fair-share name or a callable")
    from marketsim.market import registry

    return mechanism, registry.get(mechanism, "fair-share").fn


def _true_matrix(W: Any) -> np.ndarray:
    Wa = as_float_array("W", W, ndim=2, positive=True)
    if Wa.shape[0] == 0:
        raise InputError("W", W, "must have at least one row (empty instance)")
    if Wa.shape[1] == 0:
        raise InputError("W", W, "must have at least one GPU type (column)")
    return Wa / Wa[:, :1]


@dataclass
class FairShareTarget(BaseTarget):
    """Adapter for ``fn(W, m, *, weights, caps, **options) -> Allocation`` (see module docstring).

    ``W`` TRUE speedups (n, k) (rows are normalised by column 0), ``m`` (k,) GPUs per type,
    ``weights`` (n,) or ``None``, ``caps`` (n,) or ``None``; ``factor_bounds`` the factor range of
    each speedup dimension; ``weight_claims`` adds a ``"weight"`` factor dimension (then families
    that move the weight are out of the paper's scope); ``n_arbitrary`` random vectors and
    ``copy_others`` copies of other rows as ``ARBITRARY`` probes; ``max_speedup`` caps reports.

    :param mechanism: a registered fair-share name or a callable with the fair-share signature
    :param W: (n, k) TRUE speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0, or ``None``
    :param caps: (n,) most GPUs a row can use at once, or ``None``
    :param options: extra keywords passed to the mechanism
    :param factor_bounds: ``(low, high)`` search box of every speedup factor
    :param weight_claims: add a ``"weight"`` factor dimension (out of the paper's scope)
    :param n_arbitrary: random report vectors tried as ``ARBITRARY`` probes
    :param copy_others: try copying every other row's report
    :param max_speedup: the largest reported normalised speedup
    :param dimension_bounds: dimension name -> ``(low, high)`` overriding ``factor_bounds``
    :param fast: search on the mechanism's registered screen and confirm family bests with the mechanism
    :param name: the target's name (set from the mechanism)
    :param cache_size: the most cached report utilities
    :raises InputError: bad ``W``, ``m``, ``weights`` or ``caps``, an unknown mechanism or dimension
    """

    mechanism: Any = "oef-noncoop"
    W: Any = None
    m: Any = None
    weights: Any = None
    caps: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    factor_bounds: tuple[float, float] = (0.25, 4.0)
    weight_claims: bool = False
    n_arbitrary: int = 4
    copy_others: bool = True
    max_speedup: float = 1e4
    dimension_bounds: Mapping[str, tuple[float, float]] | None = None
    fast: bool = False

    def __post_init__(self) -> None:
        self.name, self._fn = resolve_fair_share(self.mechanism)
        self.Wt = _true_matrix(self.W)
        n, k = self.Wt.shape
        self.ma = as_float_array("m", self.m, shape=(k,), nonneg=True)
        self.wt = None if self.weights is None else as_float_array("weights", self.weights, shape=(n,), positive=True)
        self.ca = None if self.caps is None else as_float_array("caps", self.caps, shape=(n,), nonneg=True)
        lo, hi = self.factor_bounds
        self._dims = [Dimension(str(j), "factor", lo, hi) for j in range(1, k)]
        for name, (blo, bhi) in (self.dimension_bounds or {}).items():
            idx = [i for i, d in enumerate(self._dims) if d.name == name]
            if not idx:
                raise InputError(
                    "dimension_bounds", name, f"is not a speedup dimension; known: {[d.name for d in self._dims]}"
                )
            self._dims[idx[0]] = Dimension(name, "factor", blo, bhi)
        if self.weight_claims:
            self._dims.append(Dimension("weight", "factor", lo, hi))
        self._resolver = None
        if self.fast and isinstance(self.mechanism, str) and not self.weight_claims:
            from marketsim.market import registry

            info = registry.get(self.name, "fair-share")
            if info.screen is not None:
                self._resolver = info.screen(self.Wt, self.ma, self.wt, self.ca, dict(self.options))
            else:  # built-in LPs solved through linprog: the audit's own screens (marketsim.market.audit.screens)
                from marketsim.market.audit.screens import audit_screen

                self._resolver = audit_screen(self.name, info.fn, self.Wt, self.ma, self.wt, self.ca,
                                              dict(self.options))  # fmt: skip
        self._confirmed: dict[Any, float] = {}
        self.confirmations = 0
        self._dims_by_agent: dict[int, list[Dimension]] = {}

    @property
    def screening(self) -> bool:
        """True when searches run on the mechanism's registered fast screen (``fast=True`` and the
        screen accepted the instance, e.g. ``oef-noncoop``'s warm-started LP) and family bests are
        confirmed with the registered mechanism."""
        return self._resolver is not None

    def evaluate(self, agent: Hashable, report: Any) -> float:
        """TRUE utility of ``report`` (cached): from the screen when :attr:`screening`, else from
        the registered mechanism.

        :param agent: the deviating row (0..n-1)
        :param report: ``(reported row, reported weight or None)``
        :returns: the row's TRUE throughput (slowest-GPU equivalents)
        """
        if self._resolver is None:
            return super().evaluate(agent, report)
        key = self.report_key(agent, report)
        hit = self._cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        X = self._resolver.allocation(int(agent), np.asarray(report[0], dtype=float))
        val = float(self.Wt[int(agent)] @ X[int(agent)])
        self.evaluations += 1
        if len(self._cache) < self.cache_size:
            self._cache[key] = val
        return val

    def confirm(self, agent: Hashable, report: Any) -> float:
        """TRUE utility of ``report`` under the registered mechanism (cached): never from the screen,
        unless the screen declares ``exact`` (it returns the mechanism's allocation bit for bit, as
        :class:`marketsim.market.audit.screens.LinprogScreen` does: same program, same solver; tested).

        :param agent: the deviating row (0..n-1)
        :param report: ``(reported row, reported weight or None)``
        :returns: the row's TRUE throughput under the mechanism
        """
        key = self.report_key(agent, report)
        if self._resolver is not None and getattr(self._resolver, "exact", False):
            if key not in self._confirmed:
                self._confirmed[key] = self.evaluate(agent, report)
                self.confirmations += 1
            return self._confirmed[key]
        if key not in self._confirmed:
            self._confirmed[key] = self.utility(agent, self.outcome(agent, report))
            self.confirmations += 1
        return self._confirmed[key]

    @property
    def n(self) -> int:
        """Number of rows (agents)."""
        return int(self.Wt.shape[0])

    def agents(self) -> Sequence[Hashable]:
        return list(range(self.n))

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        """The factor dimensions of ``agent``; each speedup's hard limits keep the reported
        normalised speedup within ``[1 / max_speedup, max_speedup]`` (the validator's conditioning
        bound, mirrored below 1), so the audit's tails and boundary walk never leave what the
        mechanism accepts.

        :param agent: the deviating row (0..n-1)
        :returns: one factor dimension per speedup column ``1..k-1`` (and ``"weight"``)
        """
        key = int(agent)
        cached = self._dims_by_agent.get(key)
        if cached is not None:
            return cached
        out = []
        for d in self._dims:
            if d.name == "weight":
                out.append(d)
                continue
            w = float(self.Wt[key, int(d.name)])
            lo = min(d.lower, 1.0 / (self.max_speedup * w))
            hi = max(d.upper, self.max_speedup / w)
            out.append(Dimension(d.name, d.kind, d.lower, d.upper, d.truth, d.over, d.integer, lo, hi))
        self._dims_by_agent[key] = out
        return out

    def report(self, agent: Hashable, params: Mapping[str, float]) -> tuple[tuple[float, ...], float | None]:
        """``(reported row, reported weight or None)``; the row is clipped to ``max_speedup``.

        :param agent: the deviating row (0..n-1)
        :param params: column index (as text) or ``"weight"`` -> factor; missing: 1
        :returns: the report
        """
        l = int(agent)
        row = self.Wt[l].copy()
        for j in range(1, row.size):
            row[j] *= float(params.get(str(j), 1.0))
        row = np.minimum(row, self.max_speedup)
        w = None
        if self.weight_claims:
            base = 1.0 if self.wt is None else float(self.wt[l])
            w = base * float(params.get("weight", 1.0))
        return tuple(row.tolist()), w

    def profile(self, agent: Hashable, report: tuple[tuple[float, ...], float | None]) -> tuple[np.ndarray, Any]:
        """The full reported matrix and weights when ``agent`` submits ``report``.

        :param agent: the deviating row (0..n-1)
        :param report: ``(reported row, reported weight or None)``
        :returns: ``(W reported (n, k), weights or None)``
        """
        l = int(agent)
        row, w = report
        Wr = self.Wt.copy()
        Wr[l] = row
        weights = self.wt
        if w is not None:
            weights = np.ones(self.n) if self.wt is None else self.wt.copy()
            weights[l] = w
        return Wr, weights

    def outcome(self, agent: Hashable, report: tuple[tuple[float, ...], float | None]) -> Allocation:
        Wr, weights = self.profile(agent, report)
        return self._fn(Wr, self.ma, weights=weights, caps=self.ca, **self.options)

    def utility(self, agent: Hashable, outcome: Allocation) -> float:
        l = int(agent)
        return float(self.Wt[l] @ outcome.X[l])

    def utilities(self, outcome: Allocation) -> np.ndarray:
        """TRUE throughput of every row under ``outcome``.

        :param outcome: an allocation
        :returns: (n,) throughput per row
        """
        return np.einsum("lj,lj->l", self.Wt, outcome.X)

    def truthful(self) -> Allocation:
        """The allocation when everyone is truthful."""
        return self.outcome(0, self.report(0, {}))

    def probes(self, agent: Hashable, rng: np.random.Generator) -> Sequence[Probe]:
        l = int(agent)
        out: list[Probe] = []
        w = None
        if self.weight_claims:
            w = 1.0 if self.wt is None else float(self.wt[l])
        if self.copy_others:
            for i in range(self.n):
                if i != l and not np.array_equal(self.Wt[i], self.Wt[l]):
                    out.append(Probe("ARBITRARY", f"copy row {i}", (tuple(self.Wt[i].tolist()), w)))
        k = self.Wt.shape[1]
        top = float(np.log(min(self.max_speedup, 4.0 * self.Wt.max())))
        for r in range(self.n_arbitrary):
            v = np.ones(k)
            v[1:] = np.exp(rng.uniform(np.log(0.25), top, k - 1))
            out.append(Probe("ARBITRARY", f"random vector {r}", (tuple(v.tolist()), w)))
        return out

    def in_scope(self, family: str) -> bool:
        """The paper's SP scope: inflating speedups only (``UP_j``, ``UP_all``).

        :param family: a family label
        :returns: ``True`` for the speedup inflation families
        """
        if not family.startswith("UP_"):
            return False
        return not (self.weight_claims and family in ("UP_weight", "UP_all"))


@dataclass
class TenantTarget(BaseTarget):
    """Tenant-level adapter over :func:`marketsim.market.oef.virtual.allocate_tenants` (see module docstring).

    ``tenants`` maps tenant id -> {job type -> TRUE speedup vector}; ``weights`` tenant -> pi_u;
    ``n_fake_random`` random fake job types per audit; ``drop_types`` whether dropping a real job
    type is probed. Fake job types are named ``"fake:<label>"``.

    :param policy: a registered fair-share policy
    :param tenants: tenant -> {job type -> TRUE speedup vector}
    :param m: (k,) GPUs per type
    :param weights: tenant -> priority, or ``None``
    :param options: the policy's options
    :param factor_bounds: the factor range of a reported entry
    :param n_fake_random: random fake job types per audit
    :param drop_types: probe dropping a real job type
    :param max_speedup: the largest reported normalised speedup
    :param name: the target's name
    :param cache_size: the most cached report utilities
    :raises InputError: no tenant, a tenant without job types, bad vectors
    """

    policy: str = "oef-noncoop"
    tenants: Mapping[str, Mapping[str, Sequence[float]]] = field(default_factory=dict)
    m: Any = None
    weights: Mapping[str, float] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    factor_bounds: tuple[float, float] = (0.25, 4.0)
    n_fake_random: int = 2
    drop_types: bool = True
    max_speedup: float = 1e4

    def __post_init__(self) -> None:
        from marketsim.market import registry

        registry.get(self.policy, "fair-share")
        self.name = f"{self.policy}[tenants]"
        if not self.tenants:
            raise InputError("tenants", self.tenants, "must hold at least one tenant (empty instance)")
        self._true: dict[str, dict[str, np.ndarray]] = {}
        k = None
        for u, types in self.tenants.items():
            if not types:
                raise InputError(f"tenants[{u}]", types, "must hold at least one job type")
            self._true[u] = {}
            for tau, w in types.items():
                if tau.startswith(FAKE_PREFIX):
                    raise InputError(f"tenants[{u}] job type", tau, f"must not start with {FAKE_PREFIX!r}")
                arr = as_float_array(f"tenants[{u}][{tau}]", w, ndim=1, positive=True)
                k = arr.size if k is None else k
                if arr.size != k:
                    raise InputError(f"tenants[{u}][{tau}]", w, f"must have length k={k}")
                self._true[u][tau] = arr / arr[0]
        self.k = int(k or 0)
        self.ma = as_float_array("m", self.m, shape=(self.k,), nonneg=True)
        lo, hi = self.factor_bounds
        self._dims = {
            u: [Dimension(f"{tau}:{j}", "factor", lo, hi) for tau in types for j in range(1, self.k)]
            for u, types in self._true.items()
        }

    def agents(self) -> Sequence[Hashable]:
        return list(self._true)

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        """One factor dimension per job type and GPU type of ``agent``.

        :param agent: a tenant
        :returns: its dimensions
        :raises InputError: an unknown tenant
        """
        if agent not in self._dims:
            raise InputError("agent", agent, f"is not a tenant; known: {list(self._dims)}")
        return self._dims[agent]

    def report(self, agent: Hashable, params: Mapping[str, float]) -> tuple[tuple[str, tuple[float, ...]], ...]:
        """``((job type, reported vector), ...)`` of the deviating tenant.

        :param agent: the deviating tenant
        :param params: dimension -> factor
        :returns: its reported vectors
        """
        out = []
        for tau, w in self._true[agent].items():
            v = w.copy()
            for j in range(1, self.k):
                v[j] *= float(params.get(f"{tau}:{j}", 1.0))
            out.append((tau, tuple(np.minimum(v, self.max_speedup).tolist())))
        return tuple(out)

    def reports(self, agent: Hashable, report: Sequence[tuple[str, Sequence[float]]]) -> list[Any]:
        """All SpeedupReports of the profile: ``agent``'s ``report``, the others truthful.

        :param agent: the deviating tenant
        :param report: its reported vectors
        :returns: every report
        """
        from marketsim.market.oef.types import SpeedupReport

        out = []
        for u, types in self._true.items():
            if u == agent:
                out += [SpeedupReport(u, tau, tuple(w)) for tau, w in report]
            else:
                out += [SpeedupReport(u, tau, tuple(w.tolist())) for tau, w in types.items()]
        return out

    def outcome(self, agent: Hashable, report: Sequence[tuple[str, Sequence[float]]]) -> Any:
        from marketsim.market.oef.virtual import allocate_tenants

        return allocate_tenants(self.policy, self.reports(agent, report), self.ma, self.weights, **self.options)

    def tenant_value(self, tenant: str, X_class: Mapping[tuple[str, str], np.ndarray]) -> float:
        """Spec §2.2 TRUE tenant utility (:func:`marketsim.market.oef.properties.tenant_utility`): real classes
        at their true speedups, fake classes at the tenant's best real job type (slowest-GPU eq.).

        :param tenant: the tenant
        :param X_class: class -> (k,) devices
        :returns: its utility, slowest-GPU equivalents
        """
        from marketsim.market.oef.properties import tenant_utility

        return tenant_utility(tenant, self._true[tenant], X_class)

    def utility(self, agent: Hashable, outcome: Any) -> float:
        return self.tenant_value(agent, outcome.X_class)

    def utilities(self, outcome: Any) -> dict[str, float]:
        """TRUE utility of every tenant under ``outcome``.

        :param outcome: a tenant allocation
        :returns: tenant -> utility
        """
        return {u: self.tenant_value(u, outcome.X_class) for u in self._true}

    def probes(self, agent: Hashable, rng: np.random.Generator) -> Sequence[Probe]:
        truth = self.report(agent, {})
        out: list[Probe] = []
        for tau, w in truth:
            out.append(Probe("TYPES", f"duplicate {tau}", truth + ((f"{FAKE_PREFIX}dup-{tau}", w),)))
        for r in range(self.n_fake_random):
            v = np.cumprod(np.r_[1.0, rng.uniform(1.0, 1.6, self.k - 1)])
            out.append(Probe("TYPES", f"fake random {r}", truth + ((f"{FAKE_PREFIX}rand-{r}", tuple(v.tolist())),)))
        if self.drop_types and len(truth) > 1:
            for i, (tau, _) in enumerate(truth):
                out.append(Probe("TYPES", f"drop {tau}", truth[:i] + truth[i + 1 :]))
        return out

    def in_scope(self, family: str) -> bool:
        """The paper's SP scope: inflating speedups (``UP_*``); ``TYPES`` and deflation are extensions.

        :param family: the audit family
        :returns: whether the paper's SP claim covers it
        """
        return family.startswith("UP_")
