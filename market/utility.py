"""Utility functions of completion time (elapsed time since arrival).

A bidder's valuation of a job is a non-increasing function of how long the job takes. Every
utility here is a frozen dataclass, vectorised over numpy arrays, validated on construction,
and can be scaled (the "valuation scale" misreport).

Units: the argument ``x`` is elapsed time in the caller's unit (slots for OASiS / PD-ORS / Eris,
hours for Astraea); the value is in currency units.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

import numpy as np

from marketsim.market.errors import InputError, check_finite, check_nonneg, check_positive

__all__ = [
    "Utility",
    "SigmoidUtility",
    "LinearUtility",
    "ConvexUtility",
    "TabularUtility",
    "check_non_increasing",
]


@runtime_checkable
class Utility(Protocol):
    """A valuation of elapsed time: non-negative (or bounded below) and non-increasing."""

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray: ...

    def scaled(self, factor: float) -> Utility:
        """The same shape with values multiplied by ``factor`` (the "valuation scale" misreport).

        :param factor: the value scale, > 0
        :returns: the scaled utility
        """
        ...


def _arg(x: float | np.ndarray) -> np.ndarray:
    """``x`` as a float array of at least one dimension.

    Scalars go through numpy's 1-d loops too: a 0-d ``pow``/``exp`` may round differently (by an
    ulp) from the SIMD 1-d loop, and the vectorised searches must score a schedule exactly as the
    scalar reference does."""
    return np.atleast_1d(np.asarray(x, dtype=float))


def _out(values: np.ndarray, x: float | np.ndarray) -> float | np.ndarray:
    return float(values[0]) if np.ndim(x) == 0 else values


@dataclass(frozen=True)
class SigmoidUtility:
    """``f(x) = gamma1 / (1 + exp(gamma2 * (x - gamma3)))``.

    ``gamma1`` > 0 is the priority (value scale), ``gamma2`` >= 0 the decay rate per unit of
    elapsed time, ``gamma3`` the target elapsed time. ``gamma2 = 0`` is the constant ``gamma1/2``.
    Eris' ``3000*tau / (1 + e^(d/3))`` is ``SigmoidUtility(3000*tau, 1/3, 0)``.

    :param gamma1: the priority (value scale), > 0, currency units
    :param gamma2: the decay rate per unit of elapsed time, >= 0
    :param gamma3: the target elapsed time (the value is ``gamma1/2`` there)
    :raises InputError: a parameter out of range
    """

    gamma1: float
    gamma2: float
    gamma3: float

    def __post_init__(self) -> None:
        check_positive("SigmoidUtility.gamma1", self.gamma1)
        check_nonneg("SigmoidUtility.gamma2", self.gamma2)
        check_finite("SigmoidUtility.gamma3", self.gamma3)

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray:
        z = self.gamma2 * (_arg(x) - self.gamma3)
        # 1/(1+e^z) = exp(-logaddexp(0, z)): never overflows
        return _out(self.gamma1 * np.exp(-np.logaddexp(0.0, z)), x)

    def log(self, x: float | np.ndarray) -> float | np.ndarray:
        """``log f(x)`` without underflow.

        :param x: elapsed time (scalar or array)
        :returns: ``log f(x)``, of the shape of ``x``
        """
        z = self.gamma2 * (_arg(x) - self.gamma3)
        return _out(np.log(self.gamma1) - np.logaddexp(0.0, z), x)

    def scaled(self, factor: float) -> SigmoidUtility:
        """The same shape with values multiplied by ``factor`` (> 0).

        :param factor: the value scale, > 0
        :returns: the scaled utility
        :raises InputError: ``factor`` not finite and > 0
        """
        return replace(self, gamma1=self.gamma1 * check_positive("factor", factor))


@dataclass(frozen=True)
class LinearUtility:
    """``f(x) = k * x + g`` with ``k <= 0`` and ``g > 0`` (Astraea's linear utility).

    ``floor_at_zero`` clips negative values to 0 (a late job is worth nothing, not a debt).

    :param k: the slope, <= 0, currency per unit of elapsed time
    :param g: the value at elapsed time 0, > 0
    :param floor_at_zero: clip negative values to 0
    :raises InputError: ``k > 0`` or ``g <= 0``
    """

    k: float
    g: float
    floor_at_zero: bool = True

    def __post_init__(self) -> None:
        if check_finite("LinearUtility.k", self.k) > 0:
            raise InputError("LinearUtility.k", self.k, "must be <= 0 (utility may not increase with time)")
        check_positive("LinearUtility.g", self.g)

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray:
        v = self.k * _arg(x) + self.g
        return _out(np.maximum(v, 0.0) if self.floor_at_zero else v, x)

    def scaled(self, factor: float) -> LinearUtility:
        """The same line with slope and intercept multiplied by ``factor``.

        :param factor: the value scale, > 0
        :returns: the scaled utility
        :raises InputError: ``factor`` not finite and > 0
        """
        f = check_positive("factor", factor)
        return replace(self, k=self.k * f, g=self.g * f)


@dataclass(frozen=True)
class ConvexUtility:
    """``f(x) = scale * (e / x) ** kappa`` for ``x > 0`` (Astraea's convex utility).

    :param e: the elapsed time at which ``f = scale``, > 0
    :param kappa: the exponent, > 0
    :param scale: the value scale, > 0 (1 = the paper's utility)
    :raises InputError: a parameter not finite and > 0
    """

    e: float
    kappa: float
    scale: float = 1.0

    def __post_init__(self) -> None:
        check_positive("ConvexUtility.e", self.e)
        check_positive("ConvexUtility.kappa", self.kappa)
        check_positive("ConvexUtility.scale", self.scale)

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray:
        xa = _arg(x)
        if (xa <= 0).any():
            raise InputError("elapsed time", x, "must be > 0 for a convex utility")
        return _out(self.scale * (self.e / xa) ** self.kappa, x)

    def scaled(self, factor: float) -> ConvexUtility:
        """The same curve with ``scale`` multiplied by ``factor``.

        :param factor: the value scale, > 0
        :returns: the scaled utility
        :raises InputError: ``factor`` not finite and > 0
        """
        return replace(self, scale=self.scale * check_positive("factor", factor))


@dataclass(frozen=True)
class TabularUtility:
    """Arbitrary non-increasing table: ``values[d]`` for integer elapsed ``d = 0..len-1``.

    Past the table the last value holds. Used for arbitrary (mis)reported shapes.

    :param values: the value at elapsed time 0, 1, ..., finite, >= 0 and non-increasing
    :raises InputError: empty, not finite, negative or rising values
    """

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        arr = np.array(self.values, dtype=float)
        if arr.ndim != 1 or arr.size == 0:
            raise InputError("TabularUtility.values", self.values, "must be a non-empty 1-D sequence")
        if not np.isfinite(arr).all() or (arr < 0).any():
            raise InputError("TabularUtility.values", self.values, "must be finite and >= 0")
        check_non_increasing("TabularUtility.values", arr)
        object.__setattr__(self, "values", tuple(float(v) for v in arr))

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray:
        table = np.asarray(self.values)
        idx = np.clip(_arg(x).astype(int), 0, table.size - 1)
        return _out(table[idx], x)

    def scaled(self, factor: float) -> TabularUtility:
        """The table with every value multiplied by ``factor``.

        :param factor: the value scale, > 0
        :returns: the scaled utility
        :raises InputError: ``factor`` not finite and > 0
        """
        f = check_positive("factor", factor)
        return TabularUtility(tuple(v * f for v in self.values))


def check_non_increasing(field: str, values: np.ndarray, tol: float = 1e-12) -> None:
    """Raise :class:`InputError` if ``values`` (a utility sampled on increasing times) ever rises.

    :param field: the input's name, shown in the error
    :param values: the utility's values at increasing elapsed times
    :param tol: the rise tolerated, relative to ``max(1, |value|)``
    :raises InputError: a rise larger than ``tol``
    """
    d = np.diff(np.asarray(values, dtype=float))
    if (d > tol * np.maximum(1.0, np.abs(values[1:]))).any():
        i = int(np.argmax(d > tol))
        raise InputError(field, values, f"must be non-increasing in elapsed time (rises at index {i + 1})")
