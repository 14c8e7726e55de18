"""Exact best responses for the LP allocators: the deviator's best misreport, solved to global optimality.

For one deviating row ``i`` of a fair-share instance (everyone else truthful) the best misreport of
its speedup row is a *bilevel* program: the report ``r`` (the row's normalised entries ``j >= 1`` on
the types with GPUs; entry 0 is the normalisation anchor, 1) chooses the allocation LP, and the LP's
optimal allocation ``x`` gives the deviator its TRUE utility ``W_true_i . X_i`` (the same utility,
in the same units, as :class:`marketsim.market.audit.fairshare.FairShareTarget`). This module replaces the
allocation LP by its optimality conditions and solves the resulting single-level program with SCIP
(through ``pyscipopt``), a global solver for nonconvex programs that proves its bound by spatial
branch and bound:

``max  u_i . z``   over ``r`` in the box, ``z`` (primal), ``y >= 0`` / ``lam`` (duals)

* primal feasibility ``A(r) z <= b(r)``, ``E(r) z = e(r)``, ``z_v >= 0`` on the LP's signed columns;
* dual feasibility ``A(r)' y + E(r)' lam >= c(r)`` (``=`` on free columns);
* **strong duality** ``c(r) . z >= b(r) . y + e(r) . lam`` (the default ``formulation``), or, with
  ``formulation="kkt"``, **complementarity** ``y_a * slack_a = 0``, ``z_v * reduced_cost_v = 0``
  as SOS1 constraints (no big-M);
* **the box** ``lower_j <= r_j <= upper_j``.

Every coefficient of the LP is affine in ``r`` (the deviator's row appears in its own fairness /
throughput row, in the objective of the throughput-summing LPs and in its SI or Gavel target), so
the program is bilinear: products ``r_j * z_v`` and ``r_j * y_a``. Weak duality makes ``<=`` automatic,
so the conditions hold exactly when ``z`` is an optimal solution of the LP reported with ``r``:
the program's optimum is the supremum, over reports in the box, of the deviator's utility under
the most favourable optimal allocation of each report. That is an upper bound on what the
registered mechanism can give whatever its tie-breaking among optimal allocations; the returned
``report`` is then re-evaluated through the REGISTERED mechanism (after snapping it onto nearby
ties and box edges, where the best lie usually sits), and the result says how far the two are
apart (``gap``). A ``gap`` within ``tol`` is what "certified" means here: the registered
mechanism attains, at ``report``, a gain no lie in the box can beat by more than ``gap``.
"Certified" is in floating point: SCIP proves its bound up to its feasibility tolerance
(``feastol``, default ``1e-6``, SCIP's own), not in exact rational arithmetic.

Which policies (:data:`SUPPORTED`): ``oef-noncoop`` (LP 9, the direct weighted form),
``oef-coop`` (LP 10), ``gavel`` (one max-min LP; ``tiebreak="max_total"`` is a second LP and is not
modelled), ``gavel-max-min-perf``, ``si-constrained``, ``max-throughput`` (LP 4, with or without
caps) and ``maxmin``, whose allocation does not depend on the reported speedups at all (equal
split or progressive filling of ``m`` by weights and caps), so every lie gains exactly 0 (no solve).
Everything else raises :class:`marketsim.market.errors.InputError` naming the policy and the reason
(:data:`NOT_AVAILABLE`): Gandiva_fair's trades, Gavel's FIFO / isolated baselines and the integral
placer are not LPs, and a plugin's mechanism is a program this module cannot see.

The misreport box (:class:`ReportBox`): each free entry ``r_j`` lies in ``[lower_j, upper_j]`` in
reported normalised speedup units. The default is the existing search's box with its hard limits
(:meth:`FairShareTarget.dimensions`): the factor box ``[0.25, 4]`` widened to reported values in
``[1 / max_speedup, max_speedup]`` = ``[1e-4, 1e4]`` (the validator rejects larger reports and a
report must stay ``> 0``). ``box=(lo, hi)`` sets factors relative to the truth for every entry. The
supremum as an entry goes to 0 is not attained (a report must be > 0): when the optimum sits on a
lower edge, :attr:`ExactResult.closure_bound` is the optimum over the box with those lower edges
moved to 0, an upper bound on the supremum over every report the mechanism accepts.

Entry point: :func:`best_response` (one deviator) and :func:`best_responses` (every row).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, check_positive

__all__ = [
    "SUPPORTED",
    "NOT_AVAILABLE",
    "FORMULATIONS",
    "ReportBox",
    "ExactResult",
    "ParametricLP",
    "available",
    "best_response",
    "best_responses",
    "parametric_lp",
    "oracle",
    "ORACLE_MAX_ROWS",
    "ORACLE_MAX_TYPES",
]

SUPPORTED = ("oef-noncoop", "oef-coop", "gavel", "gavel-max-min-perf", "si-constrained", "max-throughput", "maxmin")
"""Registered fair-share policies with an exact best response."""

NOT_AVAILABLE: dict[str, str] = {
    "gandiva-fair": "its allocation comes from a sequence of greedy second-price trades, not from an LP",
    "gavel-fifo": "its allocation is a FIFO queue order, not the optimum of an LP",
    "gavel-isolated": "its allocation is a fixed equal split computed outside any LP (no report enters an LP)",
    "gavel-max-sum-throughput": "not modelled yet (an LP on raw throughputs with scale factors)",
}
"""Fair-share policies known NOT to be covered, with the reason."""

FORMULATIONS = ("strong-duality", "kkt")

_SCIP_HINT = "install it with: pip install pyscipopt (a core dependency of marketsim; SCIP is bundled in its wheels)"


def _scip() -> Any:
    """The ``pyscipopt`` module, or a one-line :class:`InputError` saying how to install it."""
    try:
        import pyscipopt
    except ImportError as exc:  # pragma: no cover - exercised with the import blocked in tests
        raise InputError("solver", "pyscipopt", f"is not installed ({exc}); exact best responses need SCIP: "
                         f"{_SCIP_HINT}") from None  # fmt: skip
    return pyscipopt


def available(policy: str) -> tuple[bool, str]:
    """``(True, "")`` when :func:`best_response` covers ``policy``, else ``(False, reason)``.

    :param policy: a registered fair-share policy
    :returns: ``(covered, reason)``
    """
    if policy in SUPPORTED:
        return True, ""
    if policy in NOT_AVAILABLE:
        return False, NOT_AVAILABLE[policy]
    from marketsim.market import registry

    try:
        info = registry.get(policy, "fair-share")
    except InputError:
        return False, "it is not a registered fair-share mechanism"
    return False, f"no LP model of it is known to the exact module (registered by {info.plugin or 'marketsim'!r})"


# ---------------------------------------------------------------------------------------------- the box


@dataclass(frozen=True)
class ReportBox:
    """Closed box of the deviator's report: free entry ``r_j`` (type ``types[j]``) in
    ``[lower[j], upper[j]]``, reported normalised speedup units (slowest type = 1). ``truth`` holds
    the true entries, so ``lower / truth`` and ``upper / truth`` are the factor bounds."""

    types: tuple[int, ...]
    lower: np.ndarray
    upper: np.ndarray
    truth: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: per free type its reported range and the factor range relative to the truth."""
        return {
            "types": list(self.types),
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "factor_lower": (self.lower / self.truth).tolist(),
            "factor_upper": (self.upper / self.truth).tolist(),
        }


def _box(target: Any, i: int, types: Sequence[int], box: Any) -> ReportBox:
    """The box of deviator ``i`` over the free ``types``: ``None`` = the search's hard limits;
    ``(lo, hi)`` factors for every entry; or a mapping ``{type: (lo, hi)}`` of factors (types not
    named keep the default). Upper ends are clipped to ``max_speedup`` as the search's reports are."""
    truth = np.array([float(target.Wt[i, j]) for j in types])
    dims = {d.name: d for d in target.dimensions(i)}
    lo = np.array([float(dims[str(j)].limit_lower) for j in types]) * truth
    hi = np.array([float(dims[str(j)].limit_upper) for j in types]) * truth
    if box is not None:
        if isinstance(box, ReportBox):
            if tuple(box.types) != tuple(types):
                raise InputError("box", box.types, f"must cover the free types {list(types)}")
            lo, hi = np.asarray(box.lower, dtype=float).copy(), np.asarray(box.upper, dtype=float).copy()
        else:
            spec: Mapping[Any, Any] = box if isinstance(box, Mapping) else {j: box for j in types}
            for key, pair in spec.items():
                try:
                    j = int(key)
                except (TypeError, ValueError):
                    raise InputError("box", key, "keys must be GPU type indices") from None
                if j not in types:
                    raise InputError("box", key, f"is not a free type of the report (free types: {list(types)}; type "
                                     "0 is the normalisation anchor and types without GPUs do not matter)")  # fmt: skip
                try:
                    flo, fhi = (float(v) for v in pair)
                except (TypeError, ValueError):
                    raise InputError(f"box[{j}]", pair, "must be a pair (lower, upper) of factors") from None
                if not (math.isfinite(flo) and math.isfinite(fhi)) or flo < 0 or fhi <= 0 or flo > 1.0 or fhi < 1.0:
                    raise InputError(f"box[{j}]", pair, "must be factors with 0 <= lower <= 1 <= upper < inf "
                                     "(the box holds the truthful report)")  # fmt: skip
                p = list(types).index(j)
                lo[p], hi[p] = flo * truth[p], fhi * truth[p]
    hi = np.minimum(hi, float(target.max_speedup))
    bad = np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)) | (lo < 0) | (lo > hi) | (lo > truth) | (hi < truth))
    if bad.size:
        p = int(bad[0])
        raise InputError(f"box[{types[p]}]", (float(lo[p]), float(hi[p])),
                         f"must be a finite range of reports with 0 <= lower <= truth {truth[p]!r} <= upper "
                         f"<= max_speedup {target.max_speedup!r}")  # fmt: skip
    return ReportBox(tuple(int(j) for j in types), lo, hi, truth)


# ---------------------------------------------------------------------------------------------- the LP


@dataclass
class ParametricLP:
    """``max c(r) . z`` s.t. ``A(r) z <= b(r)``, ``E(r) z = e(r)``, ``z_v >= 0`` where ``nonneg[v]``.

    Each coefficient array is affine in the report ``r`` (``q`` entries): ``c[0] + sum_j r_j c[1 + j]``
    (same for ``A``, ``b``, ``E``, ``e``). ``z_lo``/``z_hi`` bound every OPTIMAL solution (implied by the
    LP on the whole box; they cut no optimal solution), ``y_hi`` the inequality duals and
    ``lam_lo``/``lam_hi`` the equality duals of SOME optimal dual solution for every report in the box
    (``inf`` where no finite bound is proven: the solver then relaxes the products with one-sided
    bounds). ``utility`` (constant) gives the deviator's TRUE utility ``utility . z``.

    ``homogeneous``: the duals are normalised instead of bounded: dual feasibility reads ``A' y + E' lam
    >= y0 c`` with ``y0 >= 0`` and ``sum y + y0 = 1`` (every dual in ``[0, 1]``), and optimality comes from
    complementarity (the KKT form). A solution with ``y0 > 0`` is a KKT point of the LP scaled by
    ``1 / y0``; the builder must prove that ``y0 = 0`` admits only optimal ``z`` (see :func:`_lp_si`)."""

    c: np.ndarray
    A: np.ndarray
    b: np.ndarray
    E: np.ndarray
    e: np.ndarray
    nonneg: np.ndarray
    z_lo: np.ndarray
    z_hi: np.ndarray
    y_hi: np.ndarray
    lam_lo: np.ndarray
    lam_hi: np.ndarray
    utility: np.ndarray
    homogeneous: bool = False

    def at(self, r: Sequence[float]) -> tuple[np.ndarray, ...]:
        """``(c, A, b, E, e)`` at the report ``r``."""
        w = np.concatenate([[1.0], np.asarray(r, dtype=float)])
        return tuple(np.tensordot(w, X, axes=1) for X in (self.c, self.A, self.b, self.E, self.e))


def _affine(build: Callable[[np.ndarray], tuple[np.ndarray, ...]], q: int) -> tuple[np.ndarray, ...]:
    """Coefficient stacks ``[f(0), f(e_1) - f(0), ...]`` of a builder ``f(r)`` that is affine in ``r``;
    checked at a second point (a builder that is not affine raises)."""
    base = build(np.zeros(q))
    parts = [[a] for a in base]
    for j in range(q):
        ej = np.zeros(q)
        ej[j] = 1.0
        for slot, a in zip(parts, build(ej), strict=True):
            slot.append(a - slot[0])
    stacks = tuple(np.stack(p) for p in parts)
    probe = np.linspace(0.7, 1.9, q) if q else np.zeros(0)
    w = np.concatenate([[1.0], probe])
    for got, want in zip((np.tensordot(w, s, axes=1) for s in stacks), build(probe), strict=True):
        if not np.allclose(got, want, rtol=1e-12, atol=1e-12):  # pragma: no cover - a builder bug
            raise AssertionError("exact: LP builder is not affine in the report")
    return stacks


@dataclass
class _Instance:
    """Normalised active-type data of one deviation: ``W`` (n, ka) truthful normalised rows on the active
    types, ``m`` (ka,), deviator ``i``, ``free`` positions (within the active types) of the report's
    entries, ``Wt_i`` the TRUE row, ``Wlo``/``Whi`` entrywise bounds of the reported matrix over the box."""

    W: np.ndarray
    m: np.ndarray
    i: int
    free: np.ndarray
    Wlo: np.ndarray
    Whi: np.ndarray
    weights: np.ndarray | None
    caps: np.ndarray | None
    options: Mapping[str, Any]
    Wall: np.ndarray
    mall: np.ndarray
    active: np.ndarray
    Wt_i: np.ndarray

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    @property
    def k(self) -> int:
        return int(self.W.shape[1])

    def rows(self, r: np.ndarray) -> np.ndarray:
        """The reported matrix (active types) with the deviator's free entries set to ``r``."""
        Wr = self.W.copy()
        Wr[self.i, self.free] = r
        return Wr

    def rows_all(self, r: np.ndarray) -> np.ndarray:
        """The reported matrix on every type (inactive entries at the truth)."""
        Wr = self.Wall.copy()
        Wr[self.i, np.flatnonzero(self.active)[self.free]] = r
        return Wr


def _omega(inst: _Instance) -> np.ndarray:
    """OEF's row weights: ones when equal, else the exact fractions the mechanism uses
    (:func:`marketsim.market.oef.virtual.weight_fractions`, denominator limit from the options)."""
    if inst.weights is None or np.all(inst.weights == inst.weights[0]):
        return np.ones(inst.n)
    from marketsim.market.oef.virtual import weight_fractions

    limit = int(inst.options.get("weight_denominator_limit", 1000))
    return np.array([float(f) for f in weight_fractions(list(inst.weights), limit)])


def _lp_noncoop(inst: _Instance) -> ParametricLP:
    """LP (9), direct weighted form: ``max t`` s.t. ``sum_l x_lj <= m_j`` (duals ``p``), ``W_l . x_l -
    omega_l t = 0`` (duals ``lam``). Bounds: ``t* <= tmax = min_{l != i} W_l . m / omega_l``; the dual
    objective ``m . p = t*`` gives ``p_j <= tmax / m_j``; the ``x_lj`` dual rows ``p_j + lam_l W_lj >= 0``
    give ``lam_l >= -min_j p_j / W_lj``, and the ``t`` row ``sum_l omega_l lam_l = -1`` the upper ends."""
    n, k, i = inst.n, inst.k, inst.i
    om = _omega(inst)
    nz = n * k + 1

    def build(r: np.ndarray) -> tuple[np.ndarray, ...]:
        Wr = inst.rows(r)
        c = np.zeros(nz)
        c[-1] = 1.0
        A = np.zeros((k, nz))
        for j in range(k):
            A[j, j : n * k : k] = 1.0
        E = np.zeros((n, nz))
        for l in range(n):
            E[l, l * k : (l + 1) * k] = Wr[l]
            E[l, -1] = -om[l]
        return c, A, inst.m.astype(float), E, np.zeros(n)

    c, A, b, E, e = _affine(build, inst.free.size)
    others = [l for l in range(n) if l != i]
    tmax = min(float(inst.W[l] @ inst.m) / om[l] for l in others) if others else float(inst.Whi[i] @ inst.m) / om[i]
    p_hi = tmax / inst.m
    with np.errstate(divide="ignore"):
        L = np.array([float(np.min(p_hi / inst.Wlo[l])) for l in range(n)])
    lam_lo = -L
    lam_hi = np.array([(-1.0 + float(np.sum(om * L)) - om[l] * L[l]) / om[l] for l in range(n)])
    z_hi = np.concatenate([np.tile(inst.m.astype(float), n), [tmax]])
    return ParametricLP(c, A, b, E, e, np.concatenate([np.ones(n * k, bool), [False]]), np.zeros(nz), z_hi,
                        p_hi, lam_lo, lam_hi, _util(inst, nz))  # fmt: skip


def _util(inst: _Instance, nz: int, scale: float = 1.0) -> np.ndarray:
    u = np.zeros(nz)
    u[inst.i * inst.k : (inst.i + 1) * inst.k] = scale * inst.Wt_i
    return u


def _cap_rows(n: int, k: int, nz: int, scale: np.ndarray | None = None) -> np.ndarray:
    A = np.zeros((k, nz))
    for j in range(k):
        A[j, j : n * k : k] = 1.0 if scale is None else scale
    return A


def _lp_coop(inst: _Instance) -> ParametricLP:
    """LP (10) (typo fixed; weighted A3'): ``max sum_l W_l . x_l`` s.t. capacity (duals ``p``) and, for
    every ordered pair ``(l, a)``, ``omega_l W_l . x_a - omega_a W_l . x_l <= 0`` (duals ``eta``).
    ``p_j <= Vmax / m_j`` (the dual objective is ``m . p``); the EF duals get no finite bound (a copied
    row makes their optimal set unbounded), so the solver relaxes ``r_j * eta`` by ``lower_j eta <=
    r_j eta <= upper_j eta``, which tightens as it branches on ``r``."""
    n, k = inst.n, inst.k
    om = _omega(inst)
    nz = n * k
    pairs = [(l, a) for l in range(n) for a in range(n) if l != a]

    def build(r: np.ndarray) -> tuple[np.ndarray, ...]:
        Wr = inst.rows(r)
        A = np.zeros((k + len(pairs), nz))
        A[:k] = _cap_rows(n, k, nz)
        for p, (l, a) in enumerate(pairs):
            A[k + p, a * k : (a + 1) * k] += om[l] * Wr[l]
            A[k + p, l * k : (l + 1) * k] -= om[a] * Wr[l]
        b = np.concatenate([inst.m.astype(float), np.zeros(len(pairs))])
        return Wr.ravel().copy(), A, b, np.zeros((0, nz)), np.zeros(0)

    c, A, b, E, e = _affine(build, inst.free.size)
    vmax = float(np.sum(inst.m * inst.Whi.max(axis=0)))
    y_hi = np.concatenate([vmax / inst.m, np.full(len(pairs), np.inf)])
    return ParametricLP(c, A, b, E, e, np.ones(nz, bool), np.zeros(nz), np.tile(inst.m.astype(float), n), y_hi,
                        np.zeros(0), np.zeros(0), _util(inst, nz))  # fmt: skip


def _lp_si(inst: _Instance) -> ParametricLP:
    """A5: ``max sum_l W_l . x_l`` s.t. capacity (duals ``p``) and ``W_l . x_l >= share_l W_l . m``
    (duals ``y``; thresholds on the reported rows, so the deviator's threshold moves with its report).

    No finite dual bound holds on every report (the SI duals are unbounded when every row is the
    same), so the duals are normalised (``homogeneous``, KKT form). Why ``y0 = 0`` is harmless: then
    ``p_j >= y_l W_lj`` and complementarity give ``m . p = sum_l y_l W_l . x_l = sum_l y_l theta_l
    = sum_j m_j sum_l share_l y_l W_lj <= sum_j m_j max_l y_l W_lj <= m . p``, so every ``y_l W_l`` is the
    same vector on the active types, hence ``y > 0`` (else ``p = y = 0``, against ``sum = 1``) and all
    rows are proportional. Then every feasible ``x`` has ``W_l . x_l = theta_l`` for all ``l`` (the SI
    rows add up to the capacity) and the same objective: every feasible ``x`` is optimal."""
    n, k = inst.n, inst.k
    nz = n * k
    w = np.ones(n) if inst.weights is None else inst.weights
    share = w / w.sum()

    def build(r: np.ndarray) -> tuple[np.ndarray, ...]:
        Wr = inst.rows(r)
        A = np.zeros((k + n, nz))
        A[:k] = _cap_rows(n, k, nz)
        for l in range(n):
            A[k + l, l * k : (l + 1) * k] = -Wr[l]
        b = np.concatenate([inst.m.astype(float), -share * (Wr @ inst.m)])
        return Wr.ravel().copy(), A, b, np.zeros((0, nz)), np.zeros(0)

    c, A, b, E, e = _affine(build, inst.free.size)
    y_hi = np.ones(k + n)
    return ParametricLP(c, A, b, E, e, np.ones(nz, bool), np.zeros(nz), np.tile(inst.m.astype(float), n), y_hi,
                        np.zeros(0), np.zeros(0), _util(inst, nz), homogeneous=True)  # fmt: skip


def _lp_maxthr(inst: _Instance) -> ParametricLP:
    """LP (4): ``max sum_l W_l . x_l`` s.t. capacity (duals ``p``) and finite caps ``sum_j x_lj <= d_l``
    (duals ``z``). The dual objective ``m . p + d . z`` equals the optimum ``<= Vmax``, which bounds both.
    Without caps the mechanism is the closed form (each type to its fastest row, ties to the lowest
    index); its column-0 tie is modelled (type 0 to row 0), other ties are left to the optimistic bound."""
    n, k = inst.n, inst.k
    nz = n * k
    caps = np.full(n, np.inf) if inst.caps is None else inst.caps
    capped = np.flatnonzero(np.isfinite(caps))

    def build(r: np.ndarray) -> tuple[np.ndarray, ...]:
        Wr = inst.rows(r)
        A = np.zeros((k + capped.size, nz))
        A[:k] = _cap_rows(n, k, nz)
        for p, l in enumerate(capped):
            A[k + p, l * k : (l + 1) * k] = 1.0
        b = np.concatenate([inst.m.astype(float), caps[capped]])
        return Wr.ravel().copy(), A, b, np.zeros((0, nz)), np.zeros(0)

    c, A, b, E, e = _affine(build, inst.free.size)
    vmax = float(np.sum(inst.m * inst.Whi.max(axis=0)))
    with np.errstate(divide="ignore"):
        y_hi = np.concatenate([vmax / inst.m, vmax / caps[capped]])
    z_hi = np.concatenate([np.minimum(inst.m.astype(float), min(c_, float(inst.m.sum()))) for c_ in caps])
    if inst.caps is None and inst.active[0]:
        # the registered closed form gives each type to the lowest-index row among its argmax; every
        # normalised row has 1 in column 0, so type 0 always goes to row 0 whatever is reported: the
        # allocations the mechanism can return are the LP optima with x_l0 = 0 for l >= 1
        z_hi[k : n * k : k] = 0.0
    return ParametricLP(c, A, b, E, e, np.ones(nz, bool), np.zeros(nz), z_hi, y_hi, np.zeros(0), np.zeros(0),
                        _util(inst, nz))  # fmt: skip


def _lp_gavel(inst: _Instance) -> ParametricLP:
    """Gavel (spec §4.1), the registered single LP: ``max s`` s.t. ``W_l . x_l >= s target_l`` (duals
    ``y``), capacity (``p``), finite caps (``z``), ``target_l = w_l W_l . P_l`` with the proportional
    share ``P_l = (m / n) min(1, d_l / sum(m / n))`` (the deviator's target moves with its report).
    The ``s`` dual row ``sum_l target_l y_l = 1`` bounds ``y_l <= 1 / target_l``; the dual objective
    ``m . p + d . z = s* <= smax`` bounds ``p`` and ``z``."""
    n, k, i = inst.n, inst.k, inst.i
    nz = n * k + 1
    caps = np.full(n, np.inf) if inst.caps is None else inst.caps
    if (caps <= 0).any():
        raise InputError("caps", caps.tolist(), "must be > 0 for an exact best response under gavel (a row capped "
                         "at 0 has target 0 and leaves s unbounded by it)")  # fmt: skip
    w = np.ones(n) if inst.weights is None else inst.weights
    eq = inst.mall.astype(float) / n
    P = np.minimum(1.0, caps / eq.sum())[:, None] * eq[None, inst.active]
    capped = np.flatnonzero(np.isfinite(caps))

    def build(r: np.ndarray) -> tuple[np.ndarray, ...]:
        Wr = inst.rows(r)
        target = w * np.einsum("lj,lj->l", Wr, P)
        c = np.zeros(nz)
        c[-1] = 1.0
        A = np.zeros((n + k + capped.size, nz))
        for l in range(n):
            A[l, l * k : (l + 1) * k] = -Wr[l]
            A[l, -1] = target[l]
        A[n : n + k] = _cap_rows(n, k, nz)
        for p, l in enumerate(capped):
            A[n + k + p, l * k : (l + 1) * k] = 1.0
        b = np.concatenate([np.zeros(n), inst.m.astype(float), caps[capped]])
        return c, A, b, np.zeros((0, nz)), np.zeros(0)

    c, A, b, E, e = _affine(build, inst.free.size)
    t_lo = w * np.einsum("lj,lj->l", inst.Wlo, P)
    xmax = np.minimum(inst.m[None, :].astype(float), np.minimum(caps, float(inst.m.sum()))[:, None])
    val_hi = np.einsum("lj,lj->l", inst.Whi, xmax)
    others = [l for l in range(n) if l != i]
    smax = min(val_hi[l] / t_lo[l] for l in (others or [i]))
    y_hi = np.concatenate([1.0 / t_lo, smax / inst.m, smax / caps[capped]])
    return ParametricLP(c, A, b, E, e, np.concatenate([np.ones(n * k, bool), [False]]), np.zeros(nz),
                        np.concatenate([xmax.ravel(), [smax]]), y_hi, np.zeros(0), np.zeros(0),
                        _util(inst, nz))  # fmt: skip


def _lp_perf(inst: _Instance) -> ParametricLP:
    """Gavel ``MaxMinFairnessPolicyWithPerf``: ``max t`` s.t. ``s_l T_l . x_l >= t w_l P_l`` (the
    mechanism's row ``coef_l . x_l >= t`` multiplied by ``w_l P_l > 0``: same feasible set, and affine in
    the report), ``P_l = T_l . m / sum(m)``; capacity ``sum_l s_l x_lj <= m_j``; time ``sum_j x_lj <=
    tub_l``. ``x`` are time fractions; the deviator's devices are ``s_i x_i``. Dual bounds as for gavel."""
    n, k, i = inst.n, inst.k, inst.i
    nz = n * k + 1
    sf = inst.options.get("scale_factors")
    s = np.ones(n) if sf is None else np.asarray(sf, dtype=float)
    w = np.ones(n) if inst.weights is None else inst.weights
    M = float(inst.mall.sum())
    tub = np.ones(n) if inst.caps is None else np.minimum(inst.caps, M) / s
    if (tub <= 0).any():
        raise InputError("caps", inst.caps.tolist(), "must be > 0 (gavel-max-min-perf rejects a zero cap)")

    def build(r: np.ndarray) -> tuple[np.ndarray, ...]:
        Wr = inst.rows(r)
        prop = Wr @ inst.m / M
        c = np.zeros(nz)
        c[-1] = 1.0
        A = np.zeros((n + k + n, nz))
        for l in range(n):
            A[l, l * k : (l + 1) * k] = -s[l] * Wr[l]
            A[l, -1] = w[l] * prop[l]
        for j in range(k):
            A[n + j, j : n * k : k] = s
        for l in range(n):
            A[n + k + l, l * k : (l + 1) * k] = 1.0
        b = np.concatenate([np.zeros(n), inst.m.astype(float), tub])
        return c, A, b, np.zeros((0, nz)), np.zeros(0)

    c, A, b, E, e = _affine(build, inst.free.size)
    xmax = np.minimum(tub[:, None], inst.m[None, :] / s[:, None])
    p_lo = w * (inst.Wlo @ inst.m) / M
    val_hi = s * np.einsum("lj,lj->l", inst.Whi, xmax)
    others = [l for l in range(n) if l != i]
    tmax = min(val_hi[l] / p_lo[l] for l in (others or [i]))
    y_hi = np.concatenate([1.0 / p_lo, tmax / inst.m, tmax / tub])
    return ParametricLP(c, A, b, E, e, np.concatenate([np.ones(n * k, bool), [False]]), np.zeros(nz),
                        np.concatenate([xmax.ravel(), [tmax]]), y_hi, np.zeros(0), np.zeros(0),
                        _util(inst, nz, float(s[i])))  # fmt: skip


_BUILDERS: dict[str, Callable[[_Instance], ParametricLP]] = {
    "oef-noncoop": _lp_noncoop,
    "oef-coop": _lp_coop,
    "si-constrained": _lp_si,
    "max-throughput": _lp_maxthr,
    "gavel": _lp_gavel,
    "gavel-max-min-perf": _lp_perf,
}


def _check_options(policy: str, options: Mapping[str, Any]) -> None:
    """Options that change the program the mechanism solves are not modelled."""
    if policy == "gavel" and options.get("tiebreak", "none") != "none":
        raise InputError("options.tiebreak", options["tiebreak"], "is not available for an exact best response under "
                         "gavel: 'max_total' solves a second LP over the first one's optimal face (only the single "
                         "max-min LP, tiebreak='none', is modelled)")  # fmt: skip
    if options.get("normalise", True) is not True:
        raise InputError("options.normalise", options["normalise"], "must be True for an exact best response")


def parametric_lp(policy: str, target: Any, i: int, box: ReportBox) -> tuple[ParametricLP, _Instance]:
    """The allocation LP of ``policy`` on ``target``'s TRUE instance with row ``i``'s free entries as the
    parameters ``r`` (:class:`ParametricLP`), and the instance data it was built from."""
    Wall = np.asarray(target.Wt, dtype=float)
    mall = np.asarray(target.ma, dtype=float)
    active = mall > 0
    ka_idx = np.flatnonzero(active)
    free = np.array([int(np.flatnonzero(ka_idx == j)[0]) for j in box.types], dtype=int)
    W = Wall[:, active]
    Wlo, Whi = W.copy(), W.copy()
    Wlo[i, free], Whi[i, free] = box.lower, box.upper
    inst = _Instance(W, mall[active], i, free, Wlo, Whi, target.wt, target.ca, dict(target.options), Wall, mall,
                     active, W[i].copy())  # fmt: skip
    return _BUILDERS[policy](inst), inst


# ---------------------------------------------------------------------------------------------- SCIP model


@contextmanager
def _stdout_to_devnull() -> Iterator[None]:
    """File descriptors 1 and 2 to ``/dev/null`` while SCIP runs (its C library and SoPlex write there
    directly, e.g. SoPlex's "Cannot set feasibility tolerance ... without GMP" on stderr)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # no fd 1 / 2 (embedded interpreter): nothing to protect
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        for fd, old in zip((1, 2), saved, strict=True):
            os.dup2(old, fd)
            os.close(old)
        os.close(null)


def _solve_scip(lp: ParametricLP, lo: np.ndarray, hi: np.ndarray, formulation: str, time_limit: float,
                feastol: float, steps: frozenset[str], node_limit: int | None = None) -> dict[str, Any]:  # fmt: skip
    """Build and solve the single-level program; ``steps`` lists the conditions included (all of
    ``{"primal", "dual", "strong-duality" or "complementarity", "box"}`` in normal use; tests drop one
    to show it matters)."""
    scip = _scip()
    q = lo.size
    mdl = scip.Model("exact-best-response")
    mdl.hideOutput()
    # SCIP's CPU clock (timing/clocktype 1) costs a system call per check (measured: as much system time
    # as solving time), so time_limit stays in wall seconds and node_limit is the load-independent budget
    mdl.setParam("timing/statistictiming", False)
    mdl.setParam("limits/time", float(time_limit))
    if node_limit is not None:
        mdl.setParam("limits/nodes", int(node_limit))
    mdl.setParam("numerics/feastol", float(feastol))
    mdl.setParam("limits/gap", 0.0)
    mdl.setParam("limits/absgap", 0.0)
    inf = mdl.infinity()

    def fin(v: float) -> float:
        return float(v) if math.isfinite(v) else (inf if v > 0 else -inf)

    if "box" in steps:
        r = [mdl.addVar(f"r{j}", lb=float(lo[j]), ub=float(hi[j])) for j in range(q)]
    else:  # the box removed: only positivity of the report (what the mechanism's validator asks)
        r = [mdl.addVar(f"r{j}", lb=0.0, ub=inf) for j in range(q)]
    nz, ma, me = lp.c.shape[1], lp.A.shape[1], lp.E.shape[1]
    z = [mdl.addVar(f"z{v}", lb=fin(lp.z_lo[v]) if lp.nonneg[v] else fin(lp.z_lo[v]), ub=fin(lp.z_hi[v]))
         for v in range(nz)]  # fmt: skip
    y = [mdl.addVar(f"y{a}", lb=0.0, ub=fin(lp.y_hi[a])) for a in range(ma)]
    lam = [mdl.addVar(f"lam{b}", lb=fin(lp.lam_lo[b]), ub=fin(lp.lam_hi[b])) for b in range(me)]

    def aff(stack: np.ndarray, idx: tuple[int, ...], var: Any) -> Any:
        """``(stack[0][idx] + sum_j r_j stack[1+j][idx]) * var`` as an expression (0 when all zero)."""
        expr = 0.0
        if stack[(0, *idx)] != 0.0:
            expr = expr + float(stack[(0, *idx)]) * var
        for j in range(q):
            a = float(stack[(1 + j, *idx)])
            if a != 0.0:
                expr = expr + a * r[j] * var
        return expr

    def aff_const(stack: np.ndarray, idx: tuple[int, ...]) -> Any:
        expr = float(stack[(0, *idx)])
        for j in range(q):
            a = float(stack[(1 + j, *idx)])
            if a != 0.0:
                expr = expr + a * r[j]
        return expr

    slack_ub = []
    if "primal" in steps:
        for a in range(ma):
            lhs = sum((aff(lp.A, (a, v), z[v]) for v in range(nz)), 0.0)
            mdl.addCons(lhs <= aff_const(lp.b, (a,)), name=f"primal_ineq{a}")
        for bb in range(me):
            lhs = sum((aff(lp.E, (bb, v), z[v]) for v in range(nz)), 0.0)
            mdl.addCons(lhs == aff_const(lp.e, (bb,)), name=f"primal_eq{bb}")
    reduced = []
    y0 = None
    if lp.homogeneous:  # normalised duals: A'y + E'lam >= y0 c, sum y + y0 = 1 (see ParametricLP)
        y0 = mdl.addVar("y0", lb=0.0, ub=1.0)
        mdl.addCons(sum(y, 0.0) + y0 == 1.0, name="normalisation")
    if "dual" in steps:
        for v in range(nz):
            lhs = sum((aff(lp.A, (a, v), y[a]) for a in range(ma)), 0.0)
            lhs = lhs + sum((aff(lp.E, (bb, v), lam[bb]) for bb in range(me)), 0.0)
            rhs = aff_const(lp.c, (v,)) if y0 is None else aff(lp.c, (v,), y0)
            if lp.nonneg[v]:
                if formulation == "kkt" and "complementarity" in steps:
                    d = mdl.addVar(f"d{v}", lb=0.0, ub=inf)
                    mdl.addCons(lhs - rhs == d, name=f"dual{v}")
                    reduced.append((v, d))
                else:
                    mdl.addCons(lhs - rhs >= 0.0, name=f"dual{v}")
            else:
                mdl.addCons(lhs - rhs == 0.0, name=f"dual{v}")
    if formulation == "strong-duality" and "strong-duality" in steps and not lp.homogeneous:
        primal_obj = sum((aff(lp.c, (v,), z[v]) for v in range(nz)), 0.0)
        dual_obj = sum((aff(lp.b, (a,), y[a]) for a in range(ma)), 0.0)
        dual_obj = dual_obj + sum((aff(lp.e, (bb,), lam[bb]) for bb in range(me)), 0.0)
        mdl.addCons(primal_obj >= dual_obj, name="strong_duality")
    if formulation == "kkt" and "complementarity" in steps:
        for a in range(ma):
            s = mdl.addVar(f"s{a}", lb=0.0, ub=inf)
            lhs = sum((aff(lp.A, (a, v), z[v]) for v in range(nz)), 0.0)
            mdl.addCons(s == aff_const(lp.b, (a,)) - lhs, name=f"slack{a}")
            mdl.addConsSOS1([y[a], s])
            slack_ub.append(s)
        for v, d in reduced:
            mdl.addConsSOS1([z[v], d])
    obj = sum((float(lp.utility[v]) * z[v] for v in range(nz) if lp.utility[v] != 0.0), 0.0)
    mdl.setObjective(obj, "maximize")
    t0, c0 = time.perf_counter(), time.process_time()
    with _stdout_to_devnull():  # SCIP's C code may print (e.g. a feastol note); --json output must stay clean
        mdl.optimize()
    dt = time.perf_counter() - t0
    status = mdl.getStatus()
    out: dict[str, Any] = {"status": status, "seconds": dt, "nodes": int(mdl.getNNodes()),
                           "cpu_seconds": time.process_time() - c0}
    if mdl.getNSols() > 0:
        out["primal"] = float(mdl.getObjVal())
        out["r"] = np.array([mdl.getVal(v) for v in r])
        out["z"] = np.array([mdl.getVal(v) for v in z])
    out["dual_bound"] = float(mdl.getDualbound())
    return out


# ---------------------------------------------------------------------------------------------- results


@dataclass
class ExactResult:
    """An exact best response of row ``agent`` under ``policy``.

    Utilities are TRUE throughputs ``W_true_i . X_i`` (slowest-GPU equivalents, as the search's);
    relative figures are ``(utility - truthful_utility) / |truthful_utility|`` (as
    :func:`marketsim.market.audit.search.relative`).

    * ``relative_gain`` / ``gain``: what the REGISTERED mechanism gives at ``report`` (attained);
    * ``upper_bound``: proven upper bound on the relative gain of every report in ``box`` (SCIP's
      dual bound, under the most favourable optimal allocation of each report);
    * ``gap = upper_bound - relative_gain`` (>= 0; in utility units when the truthful utility is 0);
      ``certified`` when ``gap <= tol`` (SCIP's dual bound is a proof whatever stopped the solve);
    * ``report``: the deviator's reported normalised row (all types); ``factors`` the free entries
      relative to the truth; ``at_lower`` / ``at_upper`` per free type whether it sits on the box's
      edge, ``on_edge`` if any does;
    * ``closure_bound``: when a free entry sits on a lower edge > 0, the proven upper bound on the
      relative gain over the box with those lower edges at 0 (the supremum over every report > 0
      the mechanism accepts is at most this; it is approached, not attained, as the entry goes to 0);
    * ``method``: ``"scip/<formulation>"`` or ``"report-independent"`` (maxmin); ``status`` SCIP's;
      ``solver_gap`` SCIP's own relative gap of its program; ``seconds`` wall time of the whole call,
      ``cpu_seconds`` its CPU time (process), ``solver_cpu_seconds`` SCIP's share of it;
      ``evaluations`` how many reports were re-evaluated through the registered mechanism.

    :param policy: the fair-share policy
    :param agent: the deviating row
    :param truthful_utility: its TRUE utility when truthful
    :param utility: its TRUE utility at ``report``
    :param gain: ``utility - truthful_utility``
    :param relative_gain: the gain relative to the truthful utility
    :param upper_bound: proven upper bound on the relative gain over ``box``
    :param gap: ``upper_bound - relative_gain``
    :param certified: ``gap <= tol``
    :param report: the deviator's reported normalised row
    :param factors: the free entries relative to the truth
    :param box: the report box searched
    :param at_lower: per free type, whether it sits on the lower edge
    :param at_upper: per free type, whether it sits on the upper edge
    :param method: ``scip/<formulation>`` or ``report-independent``
    :param status: SCIP's status
    :param solver_gap: SCIP's relative gap
    :param seconds: wall time of the call, s
    :param nodes: branch-and-bound nodes
    :param closure_bound: the bound with the lower edges at 0, or ``None``
    :param tol: the certification tolerance
    :param notes: remarks on the solve
    :param cpu_seconds: CPU time of the call, s
    :param solver_cpu_seconds: SCIP's share of it, s
    :param evaluations: reports re-evaluated through the mechanism
    """

    policy: str
    agent: int
    truthful_utility: float
    utility: float
    gain: float
    relative_gain: float
    upper_bound: float
    gap: float
    certified: bool
    report: list[float]
    factors: list[float]
    box: ReportBox
    at_lower: list[bool]
    at_upper: list[bool]
    method: str
    status: str
    solver_gap: float
    seconds: float
    nodes: int = 0
    closure_bound: float | None = None
    tol: float = 1e-6
    notes: list[str] = field(default_factory=list)
    cpu_seconds: float = 0.0
    solver_cpu_seconds: float = 0.0
    evaluations: int = 0

    @property
    def on_edge(self) -> bool:
        """The optimal report sits on an edge of the box in at least one entry."""
        return any(self.at_lower) or any(self.at_upper)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (non-finite numbers as ``None``)."""

        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "policy": self.policy,
            "agent": self.agent,
            "truthful_utility": self.truthful_utility,
            "utility": self.utility,
            "gain": self.gain,
            "relative_gain": num(self.relative_gain),
            "upper_bound": num(self.upper_bound),
            "gap": num(self.gap),
            "certified": self.certified,
            "report": self.report,
            "factors": self.factors,
            "box": self.box.to_dict(),
            "at_lower": self.at_lower,
            "at_upper": self.at_upper,
            "on_edge": self.on_edge,
            "closure_bound": num(self.closure_bound),
            "method": self.method,
            "status": self.status,
            "solver_gap": num(self.solver_gap),
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "solver_cpu_seconds": self.solver_cpu_seconds,
            "evaluations": self.evaluations,
            "nodes": self.nodes,
            "tol": self.tol,
            "notes": list(self.notes),
        }


def _relative(gain: float, base: float) -> float:
    from marketsim.market.audit.search import relative

    return relative(gain, base)


_NUDGES = tuple(10.0**-e for e in range(9, 2, -1))
"""Relative nudge magnitudes of the polishing ladder, smallest first (1e-9 .. 1e-3)."""


def _bases(r: np.ndarray, box: ReportBox, inst: _Instance, limit: int = 64) -> list[np.ndarray]:
    """Reports near SCIP's ``r`` where the registered mechanism may attain the bound, nearest first:
    ``r`` itself and each entry snapped onto a box edge, the truth, another row's entry or a ratio tie
    with another row (``r_j / r_j'`` equal to its ratio) within 5% (the best lie often copies a row,
    sits on an edge or on a tie, and the optimistic bound may hold on a whole side of it); last, the
    truthful report (SCIP may return another optimum where the bound is 0 and the mechanism's
    tie-breaking gives less there)."""
    others = np.array([inst.W[l, inst.free] for l in range(inst.n) if l != inst.i]).reshape(-1, r.size)
    per: list[list[float]] = []
    for j in range(r.size):
        opts = [float(r[j])]
        specials = [box.lower[j], box.upper[j], box.truth[j], *others[:, j].tolist()]
        specials += [float(r[jj]) * o[j] / o[jj] for o in others for jj in range(r.size) if jj != j]
        for sp in specials:
            if abs(sp - r[j]) <= 1e-8 * max(abs(sp), 1e-12):
                if opts[0] == float(r[j]):  # SCIP's value is a special one up to its tolerance: the exact one
                    opts[0] = float(sp)  # (the first in this order: edges, truth, other rows, then ratio ties)
            elif abs(sp - r[j]) <= 0.05 * max(abs(sp), 1e-12) and all(sp != v for v in opts):
                opts.append(float(sp))
        per.append([float(np.clip(v, box.lower[j], box.upper[j])) for v in opts])
    out, seen = [], set()
    for combo in sorted(product(*per), key=lambda c: float(np.abs(np.log(np.maximum(c, 1e-300))
                                                                     - np.log(np.maximum(r, 1e-300))).sum())):
        if combo not in seen:
            seen.add(combo)
            out.append(np.array(combo))
        if len(out) >= limit:
            break
    truth = tuple(float(v) for v in box.truth)
    if truth not in seen:  # the truthful report attains gain 0: where the bound is 0, that certifies it
        out.append(np.array(truth))
    return out


def _polish(r: np.ndarray, box: ReportBox, inst: _Instance, value: Callable[[np.ndarray], float | None],
            goal: float) -> tuple[float, np.ndarray | None, int]:  # fmt: skip
    """Best TRUE utility the registered mechanism (``value``; ``None`` for a report it rejects) attains
    near SCIP's report ``r``, the report and the number of evaluations; stops once ``goal`` is reached.

    First the snapped reports of :func:`_bases`. Where the LP has several optimal allocations at a
    tie, the bound is a supremum approached just beside it, and the mechanism's LP solver resolves the
    tie the favourable way only beyond its own tolerances: so along every direction (each entry nudged
    down, kept or up, relative to the base) a ladder of magnitudes :data:`_NUDGES`, then a bisection
    (in log magnitude) between the largest magnitude that is not resolved and the smallest that is, to
    find the smallest nudge the mechanism resolves (the gain beside a tie falls linearly with it)."""
    best_u, best_r, evals = -math.inf, None, 0

    def score(rep: np.ndarray) -> float:
        nonlocal best_u, best_r, evals
        rep = np.clip(rep, box.lower, box.upper)
        evals += 1
        u = value(rep)
        if u is None:
            return -math.inf
        if best_r is None or u > best_u + 1e-12 * max(1.0, abs(best_u)):
            best_u, best_r = u, rep
        return u

    bases = _bases(r, box, inst)
    scored = []
    for b in bases:
        scored.append((score(b), len(scored), b))
        if best_u >= goal:
            return best_u, best_r, evals
    q = r.size
    signs = sorted((s for s in product((-1, 0, 1), repeat=q) if any(s)), key=lambda s: sum(map(abs, s)))
    for _, _, b in sorted(scored, key=lambda t: (-t[0], t[1]))[:3]:
        rays = []
        for s in signs:
            sv = np.array(s, dtype=float)
            ladder = [score(b * (1.0 + sv * d)) for d in _NUDGES]
            if best_u >= goal:
                return best_u, best_r, evals
            top = max(range(len(ladder)), key=lambda k: (ladder[k], -k))
            if top > 0 and ladder[top] > ladder[top - 1]:
                rays.append((ladder[top], len(rays), sv, top))
        for u_hi, _, sv, top in sorted(rays, key=lambda t: (-t[0], t[1])):  # the most promising ray first
            lo, hi = math.log(_NUDGES[top - 1]), math.log(_NUDGES[top])
            for _ in range(12):  # smallest resolved nudge: the gain beside the tie grows as the nudge shrinks
                mid = 0.5 * (lo + hi)
                u = score(b * (1.0 + sv * math.exp(mid)))
                if u >= u_hi - 1e-12 * max(1.0, abs(u_hi)):
                    hi, u_hi = mid, u
                else:
                    lo = mid
                if best_u >= goal:
                    return best_u, best_r, evals
    return best_u, best_r, evals


def _normalised(lp: ParametricLP) -> ParametricLP:
    """The same LP with normalised duals (:attr:`ParametricLP.homogeneous`: every dual in ``[0, 1]``).

    A RELAXATION of the optimality conditions, valid without any bound on the duals: every optimal
    dual ``y`` of the LP at a report maps to ``y / (1 + sum y)`` with ``y0 = 1 / (1 + sum y) > 0`` and the
    same complementarity, so the program's optimum bounds every report's most favourable optimal
    allocation. Points with ``y0 = 0`` need not be optimal allocations: they can only raise the bound
    (never make it invalid), and a bound the registered mechanism attains is certified all the same."""
    from dataclasses import replace

    if lp.E.shape[1] or lp.homogeneous:
        raise AssertionError("exact: only an inequality-form LP with bounded-dual form can be normalised")
    return replace(lp, homogeneous=True, y_hi=np.ones_like(lp.y_hi))


def _programs(lp: ParametricLP, formulation: str, feastol: float,
              relax: bool) -> list[tuple[ParametricLP, str, float, str]]:  # fmt: skip
    """The SCIP programs :func:`best_response` solves in turn, each ``(lp, formulation, feastol,
    method)``, stopping as soon as the registered mechanism attains a bound: ``formulation`` at
    ``feastol``; where some dual has no finite bound (``oef-coop``'s envy-freeness duals) and ``relax``,
    then :func:`_normalised` (its relaxation converges, every product having bounded factors, and its
    optimum is another report to polish: measured, it finds better lies where the first solve stops at
    its budget); then ``formulation`` at ``1e-9``."""
    form = "kkt" if lp.homogeneous else formulation  # normalised duals need complementarity
    out = [(lp, form, feastol, f"scip/{form}")]
    if relax and not lp.homogeneous and not lp.E.shape[1] and not np.isfinite(lp.y_hi).all():
        out.append((_normalised(lp), "kkt", feastol, "scip/kkt-normalised"))
    if feastol > 1e-9:
        out.append((lp, form, 1e-9, f"scip/{form}"))
    return out


def best_response(
    policy: str,
    W: Any,
    m: Any,
    i: int,
    *,
    weights: Any = None,
    caps: Any = None,
    options: Mapping[str, Any] | None = None,
    box: Any = None,
    formulation: str = "strong-duality",
    time_limit: float = 120.0,
    node_limit: int | None = 20_000,
    tol: float = 1e-6,
    feastol: float = 1e-6,
    closure: bool = True,
    _steps: frozenset[str] | None = None,
) -> ExactResult:
    """Exact best misreport of row ``i`` under the registered fair-share ``policy`` (see the module doc).

    ``W`` (n, k) TRUE speedups (rows are normalised by column 0, as the audit does), ``m`` (k,) GPUs per
    type, ``weights`` / ``caps`` / ``options`` as the mechanism takes them. ``box``: ``None`` (the
    search's box with its hard limits: reported entries in ``[1/max_speedup, max_speedup]``), a
    ``(lo, hi)`` pair of factors relative to the truth for every free entry, a mapping ``{type: (lo,
    hi)}`` or a :class:`ReportBox`. ``formulation``: ``"strong-duality"`` (default) or ``"kkt"``.
    ``node_limit`` (default 20,000; ``None``: none) the branch-and-bound nodes per SCIP solve, the budget
    that gives the same answer under any machine load, and ``time_limit`` (default 120) a wall-second cap
    behind it: a solve stopped by either reports its proven bound, certified only if the mechanism
    attains it within ``tol``.
    ``tol`` the gap (in relative-gain units) below which the result is ``certified``.

    Raises :class:`InputError` for a policy not in :data:`SUPPORTED` (with the reason), an unknown
    row, a bad box or missing ``pyscipopt``.

    :param policy: the registered fair-share policy
    :param W: (n, k) TRUE speedups
    :param m: (k,) GPUs per type
    :param i: the deviating row
    :param weights: (n,) priorities, or ``None``
    :param caps: (n,) caps, or ``None``
    :param options: the mechanism's options
    :param box: the report box (``None``, a factor pair, a mapping or a :class:`ReportBox`)
    :param formulation: ``strong-duality`` or ``kkt``
    :param time_limit: wall seconds per SCIP solve
    :param node_limit: branch-and-bound nodes per SCIP solve, or ``None``
    :param tol: certification tolerance (relative gain)
    :param feastol: SCIP's feasibility tolerance
    :param closure: also bound the box with its touched lower edges at 0
    :param _steps: the programs' constraint groups (tests only)
    :returns: the best response with its proven bound
    :raises InputError: an unsupported policy, an unknown row, a bad box or formulation, missing ``pyscipopt``
    """
    from marketsim.market.audit.fairshare import FairShareTarget

    ok, why = available(policy)
    if not ok:
        raise InputError("policy", policy, f"exact best response not available for {policy}: {why}")
    if formulation not in FORMULATIONS:
        raise InputError("formulation", formulation, f"must be one of {list(FORMULATIONS)}")
    check_positive("time_limit", time_limit)
    if node_limit is not None:
        if isinstance(node_limit, bool) or not isinstance(node_limit, (int, np.integer)) or node_limit < 1:
            raise InputError("node_limit", node_limit, "must be a positive integer (or None for no limit)")
    check_positive("tol", tol)
    opts = dict(options or {})
    _check_options(policy, opts)
    target = FairShareTarget(policy, W=W, m=m, weights=weights, caps=caps, options=opts, n_arbitrary=0)
    n, k = target.Wt.shape
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < n:
        raise InputError("agent", i, f"must be a row index in [0, {n - 1}]")
    i = int(i)
    t0, c0 = time.perf_counter(), time.process_time()
    truth_report = target.report(i, {})
    u0 = float(target.evaluate(i, truth_report))
    active = np.flatnonzero(target.ma > 0)
    types = [int(j) for j in active if j >= 1]
    rbox = _box(target, i, types, box)

    def result_at(rep: np.ndarray) -> tuple[float, list[float]]:
        row = target.Wt[i].copy()
        row[types] = rep
        return float(target.evaluate(i, (tuple(row.tolist()), None))), row.tolist()

    def value_at(rep: np.ndarray) -> float | None:
        try:
            return result_at(rep)[0]
        except InputError:  # a report the mechanism rejects (outside its limits): not a lie it accepts
            return None

    notes: list[str] = []
    if policy == "maxmin" or not types or n == 1:
        if policy == "maxmin":
            why = ("maxmin's allocation does not depend on the reported speedups (equal split or progressive "
                   "filling of m by weights and caps): every report gets the truthful allocation")
        else:
            why = "no report entry can change anything (a single row, or no GPU type besides the anchor has GPUs)"
        notes.append(why)
        return ExactResult(policy, i, u0, u0, 0.0, 0.0, 0.0, 0.0, True, list(map(float, target.Wt[i])),
                           [1.0] * len(types), rbox, [False] * len(types), [False] * len(types), "report-independent",
                           "optimal", 0.0, time.perf_counter() - t0, tol=tol, notes=notes,
                           cpu_seconds=time.process_time() - c0)  # fmt: skip
    if (rbox.upper - rbox.lower <= 0).all():
        notes.append("the box is a single point")
    lp, inst = parametric_lp(policy, target, i, rbox)
    if lp.homogeneous and formulation != "kkt":
        formulation = "kkt"  # normalised duals need complementarity (strong duality would be trilinear)
    steps = _steps if _steps is not None else frozenset(
        {"primal", "dual", "box", "strong-duality" if formulation == "strong-duality" else "complementarity"})
    best_u, best_r, best_row, ub_abs, sol, seconds = -math.inf, None, None, math.inf, {}, 0.0
    evaluations, method = 0, f"scip/{formulation}"
    prev: dict[str, Any] = {}
    done: dict[str, str] = {}  # method -> status of its last solve
    for prog, form, ftol, label in _programs(lp, formulation, feastol, _steps is None):
        # see _programs: the normalised-dual relaxation first where duals have no finite bound, then the
        # formulation asked for at SCIP's default tolerance, then once more at 1e-9 (a tighter relaxation,
        # hence a lower valid bound, and a more precise report to polish) after an optimal solve
        if sol and best_u >= ub_abs - tol * max(abs(u0), 1e-12):
            break  # certified: every bound is a proof, so a later program cannot change the answer
        if ftol < feastol and done.get(label) != "optimal":
            break  # a solve stopped by its limits does not get further at a tighter tolerance
        st = steps if form == formulation else frozenset({"primal", "dual", "box", "complementarity"})
        sol_t = _solve_scip(prog, rbox.lower, rbox.upper, form, time_limit, ftol, st, node_limit)
        seconds += sol_t["cpu_seconds"]
        prev, done[label] = sol_t, str(sol_t["status"])
        if "r" not in sol_t:
            continue
        if sol_t["dual_bound"] <= ub_abs or not sol:
            ub_abs, sol, method = min(ub_abs, sol_t["dual_bound"]), sol_t, label
        r_star = np.clip(sol_t["r"], rbox.lower, rbox.upper) if "box" in steps else sol_t["r"]
        goal = ub_abs - 0.5 * tol * max(abs(u0), 1e-12)  # certified with room for rounding
        if "box" in steps:
            u, rep, k_ev = _polish(r_star, rbox, inst, value_at, goal)
        else:  # the box removed (a test of that step): SCIP's report as it is
            v = value_at(r_star)
            u, rep, k_ev = (-math.inf if v is None else v), r_star, 1
        evaluations += k_ev
        if rep is not None and (best_r is None or u > best_u + 1e-12 * max(1.0, abs(best_u))):
            best_u, best_r, best_row = u, rep, result_at(rep)[1]
    if not sol:
        raise InputError("instance", policy, f"SCIP found no feasible point of the best-response program "
                         f"(status {prev.get('status')}); raise time_limit")  # fmt: skip
    if best_row is None or best_r is None:
        raise InputError("instance", policy, "the registered mechanism rejected every candidate report")
    rel = _relative(best_u - u0, u0)
    ub_rel = _relative(max(ub_abs, best_u) - u0, u0)
    gap_abs = max(ub_abs - best_u, 0.0)
    if abs(u0) > 1e-12:
        gap = gap_abs / abs(u0)
    else:
        gap = gap_abs
        notes.append("truthful utility is 0: relative gains are undefined (inf); gap is in utility units")
    status = str(sol["status"])
    certified = gap <= tol  # SCIP's dual bound is a proof whatever stopped the solve; attained within tol
    if status != "optimal" and not certified:
        notes.append(f"SCIP stopped with status {status!r}: upper_bound is its proven bound at that point")
    elif not certified:
        notes.append("the registered mechanism's tie-breaking does not attain the bound at the report found: the "
                     "bound is the best gain under the most favourable optimal allocation")  # fmt: skip
    if not certified and policy == "oef-coop":
        notes.append("oef-coop: near a report that copies another row the envy-freeness duals have no finite "
                     "bound, the relaxation stays weak there and the bound may not close (docs/exact.md, Limits)")
    scale = np.maximum(np.abs(rbox.upper), 1e-300)
    at_lo = [bool(abs(best_r[j] - rbox.lower[j]) <= 1e-7 * max(rbox.lower[j], 1e-12) or
                  abs(best_r[j] - rbox.lower[j]) <= 1e-9 * scale[j]) for j in range(len(types))]  # fmt: skip
    at_hi = [bool(abs(best_r[j] - rbox.upper[j]) <= 1e-7 * scale[j]) for j in range(len(types))]
    closure_bound = None
    edge_lo = [j for j in range(len(types)) if at_lo[j] and rbox.lower[j] > 0]
    if closure and edge_lo and "box" in steps:
        lo0 = rbox.lower.copy()
        lo0[edge_lo] = 0.0
        box0 = ReportBox(rbox.types, lo0, rbox.upper, rbox.truth)
        lp0, _ = parametric_lp(policy, target, i, box0)
        bound0 = math.inf
        for prog, form, ftol, _ in _programs(lp0, formulation, feastol, _steps is None):
            if ftol < feastol:
                break  # one solve per program: the closure's bound only needs to be valid
            st = steps if form == formulation else frozenset({"primal", "dual", "box", "complementarity"})
            sol0 = _solve_scip(prog, lo0, rbox.upper, form, time_limit, ftol, st, node_limit)
            seconds += sol0["cpu_seconds"]
            bound0 = min(bound0, sol0["dual_bound"])
        if math.isfinite(bound0):
            closure_bound = _relative(max(bound0, best_u) - u0, u0)
            notes.append("the best report sits on the box's lower edge in type(s) "
                         f"{[types[j] for j in edge_lo]}: the supremum over every accepted report (> 0) is at most "
                         "closure_bound, approached (not attained) as those entries go to 0")  # fmt: skip
    solver_gap = abs(ub_abs - sol.get("primal", ub_abs)) / max(abs(ub_abs), 1e-12)
    return ExactResult(
        policy=policy, agent=i, truthful_utility=u0, utility=best_u, gain=best_u - u0, relative_gain=rel,
        upper_bound=ub_rel, gap=gap, certified=certified, report=best_row,
        factors=(np.asarray(best_r) / rbox.truth).tolist(), box=rbox, at_lower=at_lo, at_upper=at_hi,
        method=method, status=status, solver_gap=solver_gap, seconds=time.perf_counter() - t0,
        nodes=sol["nodes"], closure_bound=closure_bound, tol=tol, notes=notes,
        cpu_seconds=time.process_time() - c0, solver_cpu_seconds=seconds, evaluations=evaluations,
    )  # fmt: skip


def best_responses(policy: str, W: Any, m: Any, **kwargs: Any) -> list[ExactResult]:
    """:func:`best_response` for every row of ``W`` (same keyword arguments).

    :param policy: the registered fair-share policy
    :param W: (n, k) TRUE speedups
    :param m: (k,) GPUs per type
    :param kwargs: :func:`best_response`'s keyword arguments
    :returns: one result per row
    """
    n = len(W)
    return [best_response(policy, W, m, i, **kwargs) for i in range(n)]



# ---------------------------------------------------------------------------------------------- ledger oracle

ORACLE_MAX_ROWS = 4
"""Largest instance (rows) on which the claims ledger asks the exact oracle."""
ORACLE_MAX_TYPES = 3
"""Largest instance (GPU types) on which the claims ledger asks the exact oracle."""


ORACLE_NODE_LIMIT = 20_000
"""Branch-and-bound nodes per SCIP solve of the ledger's oracle: the budget that makes its answer the
same under any machine load (the wall-clock ``time_limit`` is only a safety cap above it)."""

_ORACLE_CACHE: dict[tuple[Any, ...], ExactResult | None] = {}
_ORACLE_CACHE_SIZE = 1024


def _oracle_key(target: Any, agent: int, scope: str, time_limit: float, node_limit: int) -> tuple[Any, ...]:
    """Everything the oracle's answer depends on: the policy, the TRUE instance (speedups, GPUs, weights,
    caps, options), the deviator, its report limits, the scope and the solver budget."""

    def arr(a: Any) -> Any:
        return None if a is None else (np.asarray(a, dtype=float).shape, np.asarray(a, dtype=float).tobytes())

    from marketsim.market import registry

    fn = registry.get(target.name, "fair-share").fn  # a plugin may re-register a name between two calls
    return (target.name, getattr(fn, "__module__", ""), getattr(fn, "__qualname__", repr(fn)), arr(target.Wt),
            arr(target.ma), arr(target.wt), arr(target.ca),
            repr(sorted(dict(target.options).items())), float(target.max_speedup), int(agent), scope,
            tuple((d.name, float(d.limit_lower), float(d.limit_upper)) for d in target.dimensions(agent)),
            bool(target.weight_claims), float(time_limit), int(node_limit))  # fmt: skip


def oracle(target: Any, agent: int, scope: str = "all", *, time_limit: float = 120.0,
           node_limit: int = ORACLE_NODE_LIMIT) -> ExactResult | None:  # fmt: skip
    """The exact best response the claims ledger uses as its oracle on a
    :class:`~marketsim.market.audit.fairshare.FairShareTarget`'s instance, or ``None`` when it does not apply:
    more than :data:`ORACLE_MAX_ROWS` rows or :data:`ORACLE_MAX_TYPES` types, a policy not in
    :data:`SUPPORTED`, a target that also misreports weights, or options the exact model does not cover.

    ``scope="in"``: the paper's scope (every free entry inflated: factors in ``[1, upper]``, the
    union of the ``UP_*`` families); ``"all"``: the whole default box. The box's upper (and, for
    ``"all"``, lower) ends are the search's hard limits, so the oracle covers every report the search
    can score.

    The budget is :data:`ORACLE_NODE_LIMIT` nodes per solve (load-independent), ``time_limit`` wall
    seconds a cap above it. Answers are cached per process on everything they depend on
    (:func:`_oracle_key`): the same question asked again (the ledger run again in the same process,
    as several tests do) costs nothing; the cache holds the deterministic answer, not a relaxed one."""
    if scope not in ("in", "all"):
        raise InputError("scope", scope, "must be 'in' or 'all'")
    if not isinstance(target.mechanism, str) or target.name not in SUPPORTED:
        return None  # a mechanism object or a policy without an LP model: nothing to cache
    key = _oracle_key(target, agent, scope, time_limit, node_limit)
    if key in _ORACLE_CACHE:
        return _ORACLE_CACHE[key]
    out = _oracle(target, agent, scope, time_limit, node_limit)
    if len(_ORACLE_CACHE) >= _ORACLE_CACHE_SIZE:
        _ORACLE_CACHE.pop(next(iter(_ORACLE_CACHE)))  # oldest first
    _ORACLE_CACHE[key] = out
    return out


def _oracle(target: Any, agent: int, scope: str, time_limit: float, node_limit: int) -> ExactResult | None:
    """:func:`oracle` without its cache."""
    n, k = target.Wt.shape
    if n > ORACLE_MAX_ROWS or k > ORACLE_MAX_TYPES or target.weight_claims or not isinstance(target.mechanism, str):
        return None
    if target.name not in SUPPORTED:
        return None
    from marketsim.market import registry

    if not getattr(registry.get(target.name, "fair-share").fn, "__module__", "").startswith("marketsim.market."):
        return None  # a third-party mechanism under a built-in name is not the program modelled here
    box = None
    if scope == "in":
        dims = {d.name: d for d in target.dimensions(agent)}
        box = {int(name): (1.0, float(d.limit_upper)) for name, d in dims.items() if name.isdigit()
               and float(target.ma[int(name)]) > 0}  # fmt: skip
    try:
        return best_response(target.name, target.Wt, target.ma, int(agent), weights=target.wt, caps=target.ca,
                             options=dict(target.options), box=box, time_limit=time_limit,
                             node_limit=node_limit)  # fmt: skip
    except InputError as exc:
        if exc.field == "solver":
            raise  # a missing SCIP is an installation problem, never a silent fallback
        return None  # options or caps the exact model does not cover: the ledger keeps the search alone
