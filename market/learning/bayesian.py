"""Equilibrium learning of bid functions in symmetric Bayesian sealed-bid auctions.

Each bidder's private value is i.i.d. U[0, ``vmax``] (currency units). A bid function
``b(v)`` is a Bernstein polynomial of degree ``d`` on ``[0, vmax]`` (coefficients in currency;
``b(v) = v`` is exactly representable with coefficients ``linspace(0, vmax, d + 1)``, the truthful
start). Learning is symmetric self-play with a gradient-free evolution strategy (NPGA-style):
every round, bidder 0 tries ``population`` antithetic Gaussian perturbations of the current
coefficients against ``n - 1`` opponents who play the current function, and the coefficients
move along the estimated gradient of bidder 0's TRUE expected utility (plain gradient ascent with
momentum: a direction in which utility is flat does not move, so a learner with a weakly dominant
truthful strategy is not pushed off it by normalised noise).

Utilities come only from simulated auctions (values drawn, the mechanism run, the winner paying):
no analytic best response is used. Two standard variance reductions: bidder 0's own values are
stratified on ``[0, vmax]`` and each basis coefficient is credited with the utility of the
auctions whose own value it shapes (its Bernstein weight; the weights sum to one, so the total is
the plain utility). The mechanism options and tie rule follow :mod:`market.audit.controls`:
ties go to the lowest index, and the learner is bidder 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from market.errors import InputError, check_choice, check_int, check_nonneg, check_positive

__all__ = [
    "BidFunction",
    "BidLearningResult",
    "SEALED_BID_BATCH",
    "batch_utilities",
    "bne_first_price",
    "expected_revenue",
    "learn_bid_function",
]


def _bernstein(v: np.ndarray, degree: int) -> np.ndarray:
    """Bernstein basis on [0, 1]: shape ``v.shape + (degree + 1,)``; rows sum to 1."""
    k = np.arange(degree + 1)
    x = np.clip(np.asarray(v, dtype=float), 0.0, 1.0)[..., None]
    return comb(degree, k) * x**k * (1.0 - x) ** (degree - k)


@dataclass(frozen=True)
class BidFunction:
    """``b(v) = sum_k coef[k] * B_{k,d}(v / vmax)``; values and bids in currency units."""

    coef: np.ndarray
    vmax: float = 1.0

    @property
    def degree(self) -> int:
        """Polynomial degree ``d``."""
        return int(len(self.coef) - 1)

    @classmethod
    def truthful(cls, degree: int = 4, vmax: float = 1.0) -> BidFunction:
        """``b(v) = v`` exactly (Bernstein coefficients of the identity)."""
        return cls(np.linspace(0.0, vmax, degree + 1), vmax)

    def __call__(self, v: Any) -> np.ndarray:
        """Bids for values ``v`` (any shape), clipped at 0 (bids are non-negative)."""
        return np.maximum(_bernstein(np.asarray(v, dtype=float) / self.vmax, self.degree) @ self.coef, 0.0)

    def l2_distance(self, other: Callable[[np.ndarray], np.ndarray], points: int = 2001) -> float:
        """Root-mean-square ``b(v) - other(v)`` over values uniform on ``[0, vmax]`` (currency)."""
        v = np.linspace(0.0, self.vmax, points)
        return float(np.sqrt(np.mean((self(v) - np.asarray(other(v), dtype=float)) ** 2)))

    def factor(self, points: int = 2001) -> float:
        """Report factor: mean bid / mean value for values uniform on ``[0, vmax]`` (1 = truthful)."""
        v = np.linspace(0.0, self.vmax, points)
        return float(self(v).mean() / v.mean())


def bne_first_price(n: int) -> Callable[[np.ndarray], np.ndarray]:
    """Symmetric BNE of the first-price auction with i.i.d. U[0, vmax] values: ``(n-1)/n * v``."""
    n = check_int("n", n, minimum=2)
    return lambda v: (n - 1) / n * np.asarray(v, dtype=float)


def _first(own: np.ndarray, top: np.ndarray, value: np.ndarray, options: dict[str, Any]) -> np.ndarray:
    reserve = options.get("reserve", 0.0)
    win = (own >= top) & (own >= reserve)
    return (value - own) * win


def _second(own: np.ndarray, top: np.ndarray, value: np.ndarray, options: dict[str, Any]) -> np.ndarray:
    reserve = options.get("reserve", 0.0)
    win = (own >= top) & (own >= reserve)
    return (value - np.maximum(top, reserve)) * win


def _posted(own: np.ndarray, top: np.ndarray, value: np.ndarray, options: dict[str, Any]) -> np.ndarray:
    price = options["price"]
    return (value - price) * (own >= price)


#: Vectorised TRUE utility of bidder 0 (index 0: ties to the lowest index go to it) given its
#: bids ``own`` (pop, batch), the highest opposing bid ``top`` (batch,) and its value (batch,).
SEALED_BID_BATCH: dict[str, Callable[..., np.ndarray]] = {
    "first-price": _first,
    "second-price": _second,
    "posted-price": _posted,
}


def _options(mechanism: str, options: dict[str, Any] | None) -> dict[str, Any]:
    check_choice("mechanism", mechanism, list(SEALED_BID_BATCH))
    opts = dict(options or {})
    if mechanism == "posted-price":
        if "price" not in opts:
            raise InputError("options.price", None, "is required by the posted-price auction")
        opts["price"] = check_nonneg("options.price", opts["price"])
    if "reserve" in opts:
        opts["reserve"] = check_nonneg("options.reserve", opts["reserve"])
    return opts


def batch_utilities(
    mechanism: str, own_bids: Any, other_bids: Any, values: Any, options: dict[str, Any] | None = None
) -> np.ndarray:
    """TRUE utility of bidder 0 in each auction: ``own_bids`` (..., batch), ``other_bids``
    (batch, n - 1), ``values`` (batch,) of bidder 0; currency units."""
    opts = _options(mechanism, options)
    other = np.asarray(other_bids, dtype=float)
    top = other.max(axis=1) if other.shape[1] else np.zeros(other.shape[0])
    return SEALED_BID_BATCH[mechanism](np.asarray(own_bids, dtype=float), top, np.asarray(values, dtype=float), opts)


def expected_revenue(
    mechanism: str,
    bid: BidFunction,
    n: int,
    *,
    samples: int = 1 << 17,
    seed: int = 0,
    options: dict[str, Any] | None = None,
) -> float:
    """Monte Carlo expected revenue (currency) when all ``n`` bidders bid ``bid`` (values U[0, vmax])."""
    opts = _options(mechanism, options)
    n = check_int("n", n, minimum=1)
    rng = np.random.default_rng(seed)
    bids = bid(rng.random((check_int("samples", samples, minimum=1), n)) * bid.vmax)
    order = np.sort(bids, axis=1)
    top = order[:, -1]
    second = order[:, -2] if n > 1 else np.zeros_like(top)
    reserve = opts.get("reserve", 0.0)
    if mechanism == "first-price":
        return float(np.mean(np.where(top >= reserve, top, 0.0)))
    if mechanism == "second-price":
        return float(np.mean(np.where(top >= reserve, np.maximum(second, reserve), 0.0)))
    return float(np.mean((bids >= opts["price"]).sum(axis=1) * opts["price"]))


@dataclass
class BidLearningResult:
    """Learned bid function (Polyak average of the last quarter of rounds) and per-round history
    (``round``, ``factor`` = mean bid / mean value, ``utility`` = bidder 0's mean TRUE utility)."""

    mechanism: str
    n: int
    bid: BidFunction
    history: pd.DataFrame = field(repr=False)


def learn_bid_function(
    mechanism: str,
    n: int,
    *,
    rounds: int = 400,
    population: int = 32,
    sigma: float = 0.02,
    lr: float = 0.5,
    batch: int = 1 << 14,
    degree: int = 4,
    vmax: float = 1.0,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    init: BidFunction | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BidLearningResult:
    """Learn a symmetric bid function by ES self-play (module docstring). ``sigma`` is a fraction
    of ``vmax``; ``lr`` multiplies the (dimensionless) utility gradient, times ``vmax``;
    ``population`` must be even (antithetic pairs). Deterministic in ``seed``."""
    opts = _options(mechanism, options)
    n = check_int("n", n, minimum=2)
    rounds = check_int("rounds", rounds, minimum=1)
    population = check_int("population", population, minimum=2)
    if population % 2:
        raise InputError("population", population, "must be even (antithetic pairs)")
    batch = check_int("batch", batch, minimum=16)
    degree = check_int("degree", degree, minimum=1)
    vmax = check_positive("vmax", vmax)
    sigma = check_positive("sigma", sigma) * vmax
    lr = check_positive("lr", lr) * vmax
    coef = (init or BidFunction.truthful(degree, vmax)).coef.astype(float).copy()
    if coef.size != degree + 1:
        raise InputError("init", coef.size, f"must have degree + 1 = {degree + 1} coefficients")
    rng = np.random.default_rng(seed)
    m1 = np.zeros_like(coef)
    b1 = 0.9
    tail = np.zeros_like(coef)
    kept = 0
    strata = np.arange(batch)
    rows: list[tuple[int, float, float]] = []
    fn = SEALED_BID_BATCH[mechanism]
    for t in range(rounds):
        v0 = (strata + rng.random(batch)) / batch * vmax
        others = BidFunction(coef, vmax)(rng.random((batch, n - 1)) * vmax)
        top = others.max(axis=1)
        half = rng.standard_normal((population // 2, coef.size))
        eps = np.concatenate([half, -half])
        H = _bernstein(v0 / vmax, degree)
        own = np.maximum((coef + sigma * eps) @ H.T, 0.0)
        u = fn(own, top, v0, opts)
        credit = u @ H / batch
        grad = ((credit - credit.mean(axis=0)) * eps).mean(axis=0) / sigma
        m1 = b1 * m1 + (1 - b1) * grad
        coef = coef + lr * m1 / (1 - b1 ** (t + 1))
        if t >= (3 * rounds) // 4:
            tail += coef
            kept += 1
        cur = BidFunction(coef, vmax)
        rows.append((t, cur.factor(257), float(u.mean())))
        if progress is not None:
            progress(t + 1, rounds)
    learned = BidFunction(tail / max(kept, 1), vmax)
    history = pd.DataFrame(rows, columns=["round", "factor", "utility"])
    return BidLearningResult(mechanism, n, learned, history)
