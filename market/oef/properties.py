"""Fairness / efficiency / structure measures for any fair-share allocation (spec A5, §2.2, §7).

Generic over policies: every function takes a speedup matrix ``W`` (n, k) -- pass the TRUE
speedups to measure experienced utility, the reported ones to audit the mechanism's own
constraints -- and an allocation matrix ``X`` (n, k) (``Allocation.X``) in fractional devices.
Throughput is in slowest-GPU equivalents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError
from marketsim.market.oef import lp
from marketsim.market.oef.types import ClassKey

__all__ = [
    "utilities",
    "envy_matrix",
    "envy",
    "max_envy",
    "si_threshold",
    "si_gap",
    "pe_gap",
    "support",
    "nnz",
    "is_contiguous",
    "contiguous_rows",
    "single_type_fraction",
    "tenant_utility",
]


def _mat(X: np.ndarray | Allocation) -> np.ndarray:
    return np.asarray(X.X if isinstance(X, Allocation) else X, dtype=float)


def _pair(W: Any, X: np.ndarray | Allocation) -> tuple[np.ndarray, np.ndarray]:
    Wa = np.asarray(W, dtype=float)
    Xa = _mat(X)
    if Wa.shape != Xa.shape:
        raise InputError("W", Wa.shape, f"must have the shape of X {Xa.shape}")
    return Wa, Xa


def _weights(weights: Any, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = np.asarray([float(x) for x in weights], dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or (w <= 0).any():
        raise InputError("weights", weights, f"must be {n} finite values > 0")
    return w


def utilities(W: Any, X: np.ndarray | Allocation) -> np.ndarray:
    """``u_l = W_l . x_l`` per row (slowest-GPU equivalents).

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :returns: (n,) utilities
    """
    Wa, Xa = _pair(W, X)
    return np.einsum("lj,lj->l", Wa, Xa)


def envy_matrix(W: Any, X: np.ndarray | Allocation) -> np.ndarray:
    """``E[l, i] = W_l . x_i``: how row ``l`` values row ``i``'s bundle. Fig. 6's ratio is ``E/diag``.

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :returns: (n, n) the matrix
    """
    Wa, Xa = _pair(W, X)
    return Wa @ Xa.T


def envy(W: Any, X: np.ndarray | Allocation, weights: Any = None) -> np.ndarray:
    """Per-row envy ``max_i E[l,i]/pi_i - E[l,l]/pi_l`` (>= 0; 0 = envy-free row).

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param weights: (n,) priorities > 0; ``None``: equal
    :returns: (n,) envy per row
    """
    E = envy_matrix(W, X)
    w = _weights(weights, E.shape[0])
    if E.size == 0:
        return np.zeros(E.shape[0])
    return (E / w[None, :]).max(axis=1) - np.diag(E) / w


def max_envy(W: Any, X: np.ndarray | Allocation, weights: Any = None) -> float:
    """Largest envy over all rows (0 for an envy-free allocation).

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param weights: (n,) priorities > 0; ``None``: equal
    :returns: the largest envy
    """
    e = envy(W, X, weights)
    return float(e.max()) if e.size else 0.0


def si_threshold(W: Any, m: Any, weights: Any = None) -> np.ndarray:
    """Sharing-incentive threshold ``(pi_l / sum pi) W_l . m`` per row.

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param m: (k,) GPUs per type
    :param weights: (n,) priorities > 0; ``None``: equal
    :returns: (n,) thresholds
    """
    Wa = np.asarray(W, dtype=float)
    w = _weights(weights, Wa.shape[0])
    return (w / w.sum()) * (Wa @ np.asarray(m, dtype=float)) if Wa.shape[0] else np.zeros(0)


def si_gap(W: Any, X: np.ndarray | Allocation, m: Any, weights: Any = None) -> np.ndarray:
    """``u_l - (pi_l/sum pi) W_l . m`` per row; negative entries violate sharing incentive.

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param m: (k,) GPUs per type
    :param weights: (n,) priorities > 0; ``None``: equal
    :returns: (n,) gaps
    """
    return utilities(W, X) - si_threshold(W, m, weights)


def pe_gap(W: Any, X: np.ndarray | Allocation, m: Any, solver: str = "highs-ds") -> float:
    """A5: ``max sum W_l.x'_l`` over capacity-feasible ``X'`` with ``W_l.x'_l >= u_l(X)`` for all
    ``l``, minus ``U(X)`` (>= 0). ``X`` is Pareto-efficient (strong definition) iff the gap is
    ``<= 1e-7 max(1, U)``. Uses the same ``W`` for ``u_l`` and the program.

    :param W: (n, k) speedups (TRUE ones for experienced figures)
    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param m: (k,) GPUs per type
    :param solver: the LP method
    :returns: the gap, >= 0
    :raises InputError: ``W`` and ``X`` of different shapes, or ``m`` of the wrong length
    """
    Wa, Xa = _pair(W, X)
    mm = np.asarray(m, dtype=float)
    if mm.shape != (Wa.shape[1],):
        raise InputError("m", m, f"must have length k={Wa.shape[1]}")
    u = np.einsum("lj,lj->l", Wa, Xa)
    if Wa.shape[0] == 0 or not (mm > 0).any():
        return 0.0
    _, _, _, _, fun = lp.solve_rows("pe_gap", lambda W_, m_: lp.build_pe_gap(W_, m_, u), Wa, mm, solver)
    return max(0.0, -fun - float(u.sum()))


def support(X: np.ndarray | Allocation, zero_tol: float = lp.ZERO_TOL) -> np.ndarray:
    """Boolean (n, k) mask of entries ``> zero_tol``.

    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param zero_tol: entries up to this count as 0
    :returns: the mask
    """
    return _mat(X) > zero_tol


def nnz(X: np.ndarray | Allocation, zero_tol: float = lp.ZERO_TOL) -> int:
    """Number of entries ``> zero_tol`` (paper §4.4 bound: ``n + k - 1`` at a vertex).

    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param zero_tol: entries up to this count as 0
    :returns: the count
    """
    return int(support(X, zero_tol).sum())


def is_contiguous(row: Any, zero_tol: float = lp.ZERO_TOL) -> bool:
    """Whether the support ``{j : x^j > zero_tol}`` is an interval of consecutive ranks
    (an empty support counts as contiguous).

    :param row: (k,) one row's allocation
    :param zero_tol: entries up to this count as 0
    :returns: ``True`` when contiguous
    """
    idx = np.flatnonzero(np.asarray(row, dtype=float) > zero_tol)
    return idx.size == 0 or int(idx[-1] - idx[0] + 1) == idx.size


def contiguous_rows(X: np.ndarray | Allocation, zero_tol: float = lp.ZERO_TOL) -> np.ndarray:
    """Per-row :func:`is_contiguous` (Theorem 5.2 audit).

    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param zero_tol: entries up to this count as 0
    :returns: (n,) bool
    """
    return np.array([is_contiguous(r, zero_tol) for r in _mat(X)], dtype=bool)


def single_type_fraction(X: np.ndarray | Allocation, zero_tol: float = lp.ZERO_TOL) -> float:
    """Fraction of rows whose support has exactly one GPU type.

    :param X: (n, k) allocation or an :class:`~marketsim.market.allocation.Allocation`
    :param zero_tol: entries up to this count as 0
    :returns: the fraction (1 without rows)
    """
    s = support(X, zero_tol).sum(axis=1)
    return float((s == 1).mean()) if s.size else 1.0


def tenant_utility(
    tenant_id: str,
    true_speedups: Mapping[str, Sequence[float]],
    X_class: Mapping[ClassKey, Any],
    *,
    normalise: bool = True,
) -> float:
    """Tenant utility ``U_u`` (spec §2.2) with TRUE speedups per job type.

    ``true_speedups`` maps the tenant's real job types to speedup vectors; ``X_class`` maps
    ``(tenant, job_type)`` to devices per type (e.g. ``TenantAllocation.X_class``). Classes of
    ``tenant_id`` whose job type is not real (a fake type) are valued at
    ``max_tau W_true_tau . x_fake`` -- the tenant runs its best real job type there.

    :param tenant_id: the tenant
    :param true_speedups: its real job types -> TRUE speedup vectors
    :param X_class: ``(tenant, job_type)`` -> GPUs per type
    :param normalise: divide each speedup vector by its first entry
    :returns: the tenant's utility, slowest-GPU equivalents
    :raises InputError: no job type, or a speedup vector that is not finite and > 0
    """
    if not true_speedups:
        raise InputError(f"true_speedups[{tenant_id!r}]", true_speedups, "must list at least one real job type")
    Wt = {}
    for tau, w in true_speedups.items():
        arr = np.asarray(w, dtype=float)
        if arr.ndim != 1 or not np.all(np.isfinite(arr)) or (arr <= 0).any():
            raise InputError(f"true speedups for {(tenant_id, tau)!r}", w, "must be finite and > 0")
        Wt[tau] = arr / arr[0] if normalise else arr
    total = 0.0
    for (u, tau), x in X_class.items():
        if u != tenant_id:
            continue
        xa = np.asarray(x, dtype=float)
        if tau in Wt:
            total += float(Wt[tau] @ xa)
        else:
            total += max(float(w @ xa) for w in Wt.values())
    return total
