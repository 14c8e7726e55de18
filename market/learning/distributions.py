"""Private-value distributions for Bayesian auctions: a small registry (name -> factory).

A distribution is given as a table, e.g. ``{distribution = "uniform", low = 0, high = 1}`` in a
learning TOML. Built in:

* ``"uniform"`` with ``low`` (default 0) and ``high`` (default 1);
* ``"power"`` with ``a`` > 0: ``F(v) = v**a`` on [0, 1] (``a = 1`` is U[0, 1]);
* any continuous :mod:`scipy.stats` distribution by name with its shape parameters and ``loc`` /
  ``scale``, truncated to ``[low, high]`` (``low`` defaults to max(0, support start); ``high`` to
  the support end, required when that is infinite).

Every distribution is a :class:`ValueDistribution` on a bounded range ``[low, high]`` with
``low >= 0`` (values are money). Add one with :func:`register_distribution` (docs/bayesian.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, check_finite, check_nonneg, check_positive

__all__ = [
    "DISTRIBUTIONS",
    "ValueDistribution",
    "make_distribution",
    "register_distribution",
    "uniform",
]

_TABLE = 4097  # points of the tabulated inverse CDF of distributions without a closed-form ppf


@dataclass(frozen=True)
class ValueDistribution:
    """A continuous value distribution on ``[low, high]`` (currency units).

    ``cdf``, ``pdf`` and ``ppf`` take arrays; ``cdf`` is 0 below ``low`` and 1 above ``high``.
    ``params`` are the parameters as given (for reports).

    :param name: the distribution's name
    :param low: the lowest value, currency
    :param high: the highest value, currency
    :param cdf_fn: the CDF on ``[low, high]``, vectorised
    :param pdf_fn: the density on ``[low, high]``, vectorised
    :param ppf_fn: the quantile function on [0, 1], vectorised
    :param params: the parameters as given
    """

    name: str
    low: float
    high: float
    cdf_fn: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    pdf_fn: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    ppf_fn: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    params: Mapping[str, float] = field(default_factory=dict)

    def cdf(self, v: Any) -> np.ndarray:
        """``P(V <= v)``.

        :param v: values (any shape)
        :returns: probabilities, of the shape of ``v``
        """
        x = np.asarray(v, dtype=float)
        inside = np.clip(x, self.low, self.high)
        return np.where(x >= self.high, 1.0, np.where(x <= self.low, 0.0, np.clip(self.cdf_fn(inside), 0.0, 1.0)))

    def pdf(self, v: Any) -> np.ndarray:
        """Density on ``[low, high]`` (0 outside).

        :param v: values (any shape)
        :returns: densities, of the shape of ``v``
        """
        x = np.asarray(v, dtype=float)
        inside = (x >= self.low) & (x <= self.high)
        return np.where(inside, self.pdf_fn(np.clip(x, self.low, self.high)), 0.0)

    def ppf(self, u: Any) -> np.ndarray:
        """Quantile function: values for probabilities ``u`` in [0, 1].

        :param u: probabilities (clipped to [0, 1])
        :returns: values in ``[low, high]``
        """
        return np.clip(self.ppf_fn(np.clip(np.asarray(u, dtype=float), 0.0, 1.0)), self.low, self.high)

    def sample(self, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """i.i.d. draws by inversion (one uniform per value).

        :param rng: the random generator
        :param shape: the output shape
        :returns: the draws
        """
        return self.ppf(rng.random(shape))

    def quantile_grid(self, points: int = 2001) -> np.ndarray:
        """``points`` values at the mid-quantiles ``(i + 1/2) / points``: a prior-weighted grid.

        :param points: the number of values
        :returns: (points,) values, increasing
        """
        return self.ppf((np.arange(points) + 0.5) / points)

    def mean(self, points: int = 4001) -> float:
        """``E[V]`` (mid-quantile rule).

        :param points: quantile points
        :returns: the mean, currency
        """
        return float(self.quantile_grid(points).mean())

    def describe(self) -> str:
        """e.g. ``uniform(low=0, high=1)``."""
        inner = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.name}({inner})"


Factory = Callable[[Mapping[str, Any], str], ValueDistribution]

#: name -> factory(spec, field) building a :class:`ValueDistribution` from a TOML table; ``field``
#: is the table's name for error messages (``learning.instance.values``).
DISTRIBUTIONS: dict[str, Factory] = {}


def register_distribution(name: str, factory: Factory) -> Factory:
    """Register ``factory(spec, field) -> ValueDistribution`` under ``name``; returns it.

    :param name: the name TOML tables give as ``distribution``
    :param factory: builds the distribution from the table (``field`` names it in errors)
    :returns: ``factory``
    :raises InputError: an empty name
    """
    if not isinstance(name, str) or not name:
        raise InputError("distribution name", name, "must be a non-empty string")
    DISTRIBUTIONS[name] = factory
    return factory


def _check_keys(spec: Mapping[str, Any], field_: str, known: set[str], what: str) -> None:
    extra = sorted(set(spec) - known - {"distribution"})
    if extra:
        raise InputError(f"{field_}.{extra[0]}", spec[extra[0]],
                         f"is not a parameter of {what}; known: {sorted(known)}")


def uniform(low: float = 0.0, high: float = 1.0) -> ValueDistribution:
    """U[low, high].

    :param low: the lowest value, >= 0, currency
    :param high: the highest value, > ``low``
    :returns: the distribution
    :raises InputError: ``low < 0`` or ``high <= low``
    """
    lo = check_nonneg("low", low)
    hi = check_finite("high", high)
    if hi <= lo:
        raise InputError("high", high, f"must be > low = {lo:g}")
    w = hi - lo
    return ValueDistribution("uniform", lo, hi, lambda x: (x - lo) / w, lambda x: np.full_like(x, 1.0 / w),
                             lambda u: lo + u * w, {"low": lo, "high": hi})  # fmt: skip


def _uniform(spec: Mapping[str, Any], field_: str) -> ValueDistribution:
    _check_keys(spec, field_, {"low", "high"}, "the uniform distribution")
    lo = check_nonneg(f"{field_}.low", spec.get("low", 0.0))
    hi = check_finite(f"{field_}.high", spec.get("high", 1.0))
    if hi <= lo:
        raise InputError(f"{field_}.high", spec.get("high", 1.0), f"must be > low = {lo:g}")
    return uniform(lo, hi)


def _power(spec: Mapping[str, Any], field_: str) -> ValueDistribution:
    _check_keys(spec, field_, {"a"}, "the power distribution F(v) = v^a on [0, 1]")
    if "a" not in spec:
        raise InputError(f"{field_}.a", None, "is required by the power distribution F(v) = v^a")
    a = check_positive(f"{field_}.a", spec["a"])
    return ValueDistribution("power", 0.0, 1.0, lambda x: x**a, lambda x: a * np.maximum(x, 1e-300) ** (a - 1.0),
                             lambda u: u ** (1.0 / a), {"a": a})  # fmt: skip


register_distribution("uniform", _uniform)
register_distribution("power", _power)


def _scipy(name: str, spec: Mapping[str, Any], field_: str) -> ValueDistribution:
    import scipy.stats

    base = getattr(scipy.stats, name, None)
    if not isinstance(base, scipy.stats.rv_continuous):
        raise InputError(f"{field_}.distribution", name,
                         f"is not a registered distribution {sorted(DISTRIBUTIONS)} nor a continuous "
                         "scipy.stats distribution")  # fmt: skip
    shapes = [s.strip() for s in (base.shapes or "").split(",") if s.strip()]
    _check_keys(spec, field_, {"low", "high", "loc", "scale", *shapes}, f"scipy.stats.{name}")
    params: dict[str, float] = {}
    for s in shapes:
        if s not in spec:
            raise InputError(f"{field_}.{s}", None, f"is required by scipy.stats.{name} (shapes: {shapes})")
        params[s] = check_finite(f"{field_}.{s}", spec[s])
    params["loc"] = check_finite(f"{field_}.loc", spec.get("loc", 0.0))
    params["scale"] = check_positive(f"{field_}.scale", spec.get("scale", 1.0))
    if not base._argcheck(*[params[s] for s in shapes]):
        raise InputError(f"{field_}", {k: params[k] for k in shapes}, f"are not valid parameters of scipy.stats.{name}")
    frozen = base(**params)
    s_lo, s_hi = (float(x) for x in frozen.support())
    lo = check_nonneg(f"{field_}.low", spec.get("low", max(0.0, s_lo)))
    if "high" not in spec and not np.isfinite(s_hi):
        raise InputError(f"{field_}.high", None, f"is required: scipy.stats.{name} is unbounded above")
    hi = check_finite(f"{field_}.high", spec.get("high", s_hi))
    if hi <= lo:
        raise InputError(f"{field_}.high", hi, f"must be > low = {lo:g}")
    f_lo, f_hi = float(frozen.cdf(lo)), float(frozen.cdf(hi))
    mass = f_hi - f_lo
    if not np.isfinite(mass) or mass <= 1e-12:
        raise InputError(f"{field_}", dict(spec), f"has no probability mass on [low, high] = [{lo:g}, {hi:g}]")

    def cdf(x: np.ndarray) -> np.ndarray:
        return (frozen.cdf(x) - f_lo) / mass

    def pdf(x: np.ndarray) -> np.ndarray:
        return frozen.pdf(x) / mass

    grid = np.linspace(lo, hi, _TABLE)
    fx = np.maximum.accumulate(np.clip(cdf(grid), 0.0, 1.0))
    fx[0], fx[-1] = 0.0, 1.0
    if not np.all(np.isfinite(fx)):
        raise InputError(f"{field_}", dict(spec), f"gives a non-finite CDF for scipy.stats.{name}")

    def ppf(u: np.ndarray) -> np.ndarray:
        return np.interp(u, fx, grid)

    shown = {**{k: params[k] for k in shapes}, "loc": params["loc"], "scale": params["scale"], "low": lo, "high": hi}
    return ValueDistribution(name, lo, hi, cdf, pdf, ppf, shown)


def make_distribution(spec: Mapping[str, Any] | ValueDistribution | None, field: str = "values") -> ValueDistribution:
    """A :class:`ValueDistribution` from a TOML table (``None``: U[0, 1]); errors name ``field.key``.

    :param spec: a table such as ``{distribution = "uniform", low = 0, high = 1}``, a distribution, or ``None``
    :param field: the table's name in error messages
    :returns: the distribution
    :raises InputError: not a table, an unknown distribution or a bad parameter
    """
    if spec is None:
        return uniform()
    if isinstance(spec, ValueDistribution):
        return spec
    if not isinstance(spec, Mapping):
        raise InputError(field, spec, 'must be a table like {distribution = "uniform", low = 0, high = 1}')
    name = spec.get("distribution", "uniform")
    if not isinstance(name, str) or not name:
        raise InputError(f"{field}.distribution", name, "must be a distribution name")
    if name in DISTRIBUTIONS:
        return DISTRIBUTIONS[name](spec, field)
    return _scipy(name, spec, field)
