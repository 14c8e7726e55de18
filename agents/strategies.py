"""Reporting strategies: how a tenant turns its TRUE speedup vector into a REPORT.

A strategy is a small frozen object with ``tags`` (for selection by scenarios and tests) and
``report(job_type, true_w, rng) -> reported w``. Vectors are per GPU type, slowest first, and
dimensionless (``w[0] = 1`` for true vectors). The tenant agent calls ``report`` once per job type
when the type first becomes active and caches the result, so a random misreport (profiling noise)
is a fixed error, drawn from the ``numpy.random.Generator`` handed in (the model's RNG), not a
fresh draw every round. Throughput and utility are always measured with the TRUE vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_nonneg, check_positive

__all__ = [
    "Strategy",
    "Truthful",
    "ScaleDims",
    "ReportVector",
    "MultiplicativeNoise",
    "HedgeLearner",
    "MAX_SPEEDUP",
]

_TRUTHFUL_TAGS: Mapping[str, Any] = MappingProxyType({"truthful": True, "misreports": frozenset()})
_SPEEDUP_LIE_TAGS: Mapping[str, Any] = MappingProxyType({"truthful": False, "misreports": frozenset({"speedup"})})

#: Largest reportable speedup (the OEF validator's ``max_speedup``, spec A0).
MAX_SPEEDUP = 1e4


@runtime_checkable
class Strategy(Protocol):
    """Maps a true speedup vector of one job type to the reported vector."""

    tags: Mapping[str, Any]

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The vector reported for one job type.

        :param job_type: the job type whose vector is reported
        :param true_w: (k,) its TRUE speedups, slowest type first
        :param rng: the random generator (the model's strategy stream)
        :returns: (k,) the reported speedups
        """
        ...


def _job_types(value: Iterable[str] | None) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


def _applies(job_types: frozenset[str] | None, job_type: str) -> bool:
    return job_types is None or job_type in job_types


def _checked(name: str, w: np.ndarray) -> np.ndarray:
    """Reports must stay finite, > 0 and <= MAX_SPEEDUP (the mechanisms' validation range)."""
    w = as_float_array(f"{name} report", w, ndim=1, positive=True)
    if (w > MAX_SPEEDUP).any():
        raise InputError(f"{name} report", w, f"must stay <= {MAX_SPEEDUP:g} (max_speedup)")
    return w


@dataclass(frozen=True)
class Truthful:
    """Report the true vector."""

    tags: ClassVar[Mapping[str, Any]] = _TRUTHFUL_TAGS

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The true vector, unchanged.

        :param job_type: the job type whose vector is reported
        :param true_w: (k,) its TRUE speedups, slowest type first
        :param rng: the random generator (the model's strategy stream)
        :returns: (k,) the reported speedups
        """
        return np.array(true_w, dtype=float)


@dataclass(frozen=True)
class ScaleDims:
    """Scale chosen speedup dimensions: ``w'[j] = factors[j] · w[j]`` (other dims unchanged).

    ``factors`` maps GPU type index -> factor > 0 (> 1 inflates, < 1 deflates); e.g. ``{2: 1.3}``
    inflates the fastest of three types by λ = 1.3 and ``ScaleDims.fast(1.3, k)`` scales every
    ``j >= 1`` (spec S2). ``job_types`` limits the lie to those job types (default: all).

    :param factors: GPU type index -> factor > 0
    :param job_types: the job types that lie; ``None``: all
    :raises InputError: no factor, a key that is no index >= 0, or a factor not > 0
    """

    factors: Mapping[int, float]
    job_types: frozenset[str] | None = None
    tags: ClassVar[Mapping[str, Any]] = _SPEEDUP_LIE_TAGS

    def __post_init__(self) -> None:
        if not self.factors:
            raise InputError("ScaleDims.factors", dict(self.factors), "must scale at least one dimension")
        clean: dict[int, float] = {}
        for j, f in self.factors.items():
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or j < 0:
                raise InputError("ScaleDims.factors", j, "keys must be GPU type indices >= 0")
            clean[int(j)] = check_positive(f"ScaleDims.factors[{j}]", f)
        object.__setattr__(self, "factors", clean)
        object.__setattr__(self, "job_types", _job_types(self.job_types))

    @classmethod
    def fast(cls, factor: float, k: int, job_types: Iterable[str] | None = None) -> ScaleDims:
        """Scale every dimension ``j >= 1`` by ``factor`` (the spec's ``w'^j = λ·w^j``).

        :param factor: λ > 0
        :param k: the number of GPU types, >= 2
        :param job_types: the job types that lie; ``None``: all
        :returns: the strategy
        :raises InputError: ``k < 2`` or a factor not > 0
        """
        if k < 2:
            raise InputError("k", k, "must be >= 2 to have a fast dimension")
        return cls({j: factor for j in range(1, k)}, job_types=_job_types(job_types))

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The true vector with the chosen dimensions scaled (for the chosen job types).

        :param job_type: the job type whose vector is reported
        :param true_w: (k,) its TRUE speedups, slowest type first
        :param rng: the random generator (the model's strategy stream)
        :returns: (k,) the reported speedups
        :raises InputError: a factor's index >= k, or a report outside (0, ``MAX_SPEEDUP``]
        """
        w = np.array(true_w, dtype=float)
        if not _applies(self.job_types, job_type):
            return w
        for j, f in self.factors.items():
            if j >= w.size:
                raise InputError("ScaleDims.factors", j, f"is not a GPU type index (k = {w.size})")
            w[j] *= f
        return _checked("ScaleDims", w)


@dataclass(frozen=True)
class ReportVector:
    """Report a fixed vector (any positive vector, also non-monotone) for the chosen job types.

    :param vector: (k,) the reported speedups, each in (0, ``MAX_SPEEDUP``]
    :param job_types: the job types that lie; ``None``: all
    :raises InputError: an empty vector or an entry out of range
    """

    vector: tuple[float, ...]
    job_types: frozenset[str] | None = None
    tags: ClassVar[Mapping[str, Any]] = _SPEEDUP_LIE_TAGS

    def __post_init__(self) -> None:
        v = _checked("ReportVector", self.vector)
        if v.size == 0:
            raise InputError("ReportVector.vector", self.vector, "must not be empty")
        object.__setattr__(self, "vector", tuple(float(x) for x in v))
        object.__setattr__(self, "job_types", _job_types(self.job_types))

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``vector`` (for the chosen job types), else the truth.

        :param job_type: the job type whose vector is reported
        :param true_w: (k,) its TRUE speedups, slowest type first
        :param rng: the random generator (the model's strategy stream)
        :returns: (k,) the reported speedups
        :raises InputError: ``vector`` does not have length k
        """
        if not _applies(self.job_types, job_type):
            return np.array(true_w, dtype=float)
        if len(self.vector) != len(true_w):
            raise InputError("ReportVector.vector", self.vector, f"must have length k = {len(true_w)}")
        return np.array(self.vector, dtype=float)


@dataclass(frozen=True)
class MultiplicativeNoise:
    """Profiling error (spec S10): report ``w[j]·(1 + ε_j)``, ``ε_j ~ U(−e, e)`` iid for ``j >= 1``.

    ``w[0]`` stays 1 (the reference). ``0 <= e < 1``; ``e = 0`` is truthful. Draws come from the
    generator passed to :meth:`report` (the model RNG).

    :param e: the noise's half-width, in [0, 1)
    :param job_types: the job types with noisy reports; ``None``: all
    :raises InputError: ``e`` outside [0, 1)
    """

    e: float
    job_types: frozenset[str] | None = None
    tags: ClassVar[Mapping[str, Any]] = _SPEEDUP_LIE_TAGS

    def __post_init__(self) -> None:
        e = check_nonneg("MultiplicativeNoise.e", self.e)
        if e >= 1:
            raise InputError("MultiplicativeNoise.e", e, "must be < 1 (reports must stay > 0)")
        object.__setattr__(self, "e", e)
        object.__setattr__(self, "job_types", _job_types(self.job_types))

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The true vector with independent multiplicative noise on every ``j >= 1``.

        :param job_type: the job type whose vector is reported
        :param true_w: (k,) its TRUE speedups, slowest type first
        :param rng: the random generator (the model's strategy stream)
        :returns: (k,) the reported speedups
        :raises InputError: a report outside (0, ``MAX_SPEEDUP``]
        """
        w = np.array(true_w, dtype=float)
        if not _applies(self.job_types, job_type) or w.size < 2:
            return w
        eps = rng.uniform(-self.e, self.e, size=w.size - 1)
        w[1:] = w[1:] * (1.0 + eps)
        return _checked("MultiplicativeNoise", w)


_LEARNING_TAGS: Mapping[str, Any] = MappingProxyType(
    {"truthful": False, "misreports": frozenset({"speedup"}), "learning": True}
)


@dataclass(frozen=True)
class HedgeLearner:
    """A tenant that LEARNS its report: every round it samples a factor vector (one factor per
    speedup dimension ``j >= 1`` on a ``points``-point log grid from ``low`` to ``high``, truth
    included) from Hedge weights, and after the round it updates every weight with the TRUE
    throughput the strategy would have earned against the others' reports of that round
    (full-information counterfactuals: the auctioneer re-scores the policy), scaled by the best
    one: ``w_s <- w_s · exp(eta · u_s / max_s u_s)``. Parameters only; the weights live in the
    tenant agent (one set per job type), so one object can serve many runs.

    :param points: grid points from ``low`` to ``high``, >= 2 (1 is added when missing)
    :param low: the smallest factor, in (0, 1)
    :param high: the largest factor, > 1
    :param eta: the Hedge learning rate, > 0
    :raises InputError: a parameter out of range
    """

    points: int = 7
    low: float = 0.5
    high: float = 2.0
    eta: float = 1.0
    tags: ClassVar[Mapping[str, Any]] = _LEARNING_TAGS

    def __post_init__(self) -> None:
        from marketsim.market.errors import check_int

        check_int("HedgeLearner.points", self.points, minimum=2)
        check_positive("HedgeLearner.low", self.low)
        check_positive("HedgeLearner.high", self.high)
        check_positive("HedgeLearner.eta", self.eta)
        if not self.low < 1.0 < self.high:
            raise InputError("HedgeLearner.low/high", (self.low, self.high), "must satisfy low < 1 < high")

    def grid(self, k: int) -> np.ndarray:
        """All factor vectors (S, k − 1), truth (all ones) included; S = len(values) ** (k − 1).

        :param k: the number of GPU types
        :returns: (S, k − 1) factors for the dimensions ``j >= 1``
        """
        import itertools

        vals = np.unique(np.r_[np.geomspace(self.low, self.high, self.points), 1.0])
        return np.array(list(itertools.product(vals, repeat=k - 1)), dtype=float).reshape(-1, k - 1)

    def report(self, job_type: str, true_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The truth (the tenant agent replaces it by the learned report each round).

        :param job_type: the job type whose vector is reported
        :param true_w: (k,) its TRUE speedups, slowest type first
        :param rng: the random generator (the model's strategy stream)
        :returns: (k,) the reported speedups
        """
        return np.array(true_w, dtype=float)
