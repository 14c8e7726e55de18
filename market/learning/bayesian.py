"""Equilibrium learning of bid functions in Bayesian single-item sealed-bid auctions.

Bidders come in classes; a class has ``count`` bidders whose private values are i.i.d. from its
:class:`~market.learning.distributions.ValueDistribution` on ``[low, high]`` (currency units; one
class = a symmetric auction). A class's bid function ``b(v)`` is a Bernstein polynomial of degree
``d`` on its value range: ``b(v) = sum_k c_k B_{k,d}((v - low) / (high - low))`` (coefficients in
currency; ``b(v) = v`` has coefficients ``linspace(low, high, d + 1)``, the truthful start). The
payment rule comes from :data:`market.learning.payments.PAYMENT_RULES` (first, second, all-pay,
posted price; ``reserve`` for any of them); ties are broken uniformly at random.

Learning is self-play with a gradient-free evolution strategy (NPGA-style): every round, for each
class, one representative bidder tries ``population`` antithetic Gaussian perturbations of its
class's current coefficients against opponents who play their classes' current functions, and
every class's coefficients move along the estimated gradient of that bidder's TRUE expected
utility (plain gradient ascent with momentum: a direction in which utility is flat does not move,
so a learner with a weakly dominant truthful strategy is not pushed off it by normalised noise).

Utilities come only from simulated auctions (values drawn, the mechanism run, the winner paying):
no analytic best response is used. Two standard variance reductions: the learner's own values are
stratified in quantile and each basis coefficient is credited with the utility of the auctions
whose own value it shapes (its Bernstein weight; the weights sum to one, so the total is the plain
utility). BNE references to compare with are in :mod:`market.learning.bne`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from market.errors import InputError, check_int, check_positive
from market.learning.distributions import ValueDistribution, make_distribution, uniform
from market.learning.payments import PAYMENT_RULES, check_options

__all__ = [
    "BidFunction",
    "BidLearningResult",
    "SEALED_BID_BATCH",
    "batch_utilities",
    "bne_first_price",
    "expected_revenue",
    "learn_bid_function",
    "learn_bid_functions",
]


def _bernstein(x: np.ndarray, degree: int) -> np.ndarray:
    """Bernstein basis on [0, 1]: shape ``x.shape + (degree + 1,)``; rows sum to 1."""
    k = np.arange(degree + 1)
    t = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)[..., None]
    return comb(degree, k) * t**k * (1.0 - t) ** (degree - k)


@dataclass(frozen=True)
class BidFunction:
    """``b(v) = sum_k coef[k] * B_{k,d}((v - low) / (high - low))``; values and bids in currency."""

    coef: np.ndarray
    low: float = 0.0
    high: float = 1.0

    @property
    def degree(self) -> int:
        """Polynomial degree ``d``."""
        return int(len(self.coef) - 1)

    @classmethod
    def truthful(cls, degree: int = 4, low: float = 0.0, high: float = 1.0) -> BidFunction:
        """``b(v) = v`` exactly on ``[low, high]`` (Bernstein coefficients of the identity)."""
        return cls(np.linspace(low, high, degree + 1), low, high)

    def __call__(self, v: Any) -> np.ndarray:
        """Bids for values ``v`` (any shape), clipped at 0 (bids are non-negative)."""
        x = (np.asarray(v, dtype=float) - self.low) / (self.high - self.low)
        return np.maximum(_bernstein(x, self.degree) @ self.coef, 0.0)

    def l2_distance(
        self, other: Callable[[np.ndarray], np.ndarray], dist: ValueDistribution | None = None, points: int = 2001
    ) -> float:
        """Root-mean-square ``b(V) - other(V)`` (currency) with ``V`` from ``dist`` (default: uniform
        on ``[low, high]``); values where ``other`` is NaN (below a BNE's screening value) count 0."""
        d = dist if dist is not None else uniform(self.low, self.high)
        v = d.quantile_grid(points)
        ref = np.asarray(other(v), dtype=float)
        diff = np.where(np.isnan(ref), 0.0, self(v) - np.nan_to_num(ref))
        return float(np.sqrt(np.mean(diff**2)))

    def factor(self, dist: ValueDistribution | None = None, points: int = 2001) -> float:
        """Report factor ``E[b(V)] / E[V]`` (1 = truthful); ``V`` from ``dist`` (default uniform)."""
        d = dist if dist is not None else uniform(self.low, self.high)
        v = d.quantile_grid(points)
        return float(self(v).mean() / v.mean())


def bne_first_price(n: int) -> Callable[[np.ndarray], np.ndarray]:
    """Symmetric BNE of the first-price auction with i.i.d. U[0, 1] values: ``(n-1)/n * v``
    (closed form; :func:`market.learning.bne.symmetric_bne` covers any distribution and rule)."""
    n = check_int("n", n, minimum=2)
    return lambda v: (n - 1) / n * np.asarray(v, dtype=float)


def _rule_batch(name: str) -> Callable[..., np.ndarray]:
    rule = PAYMENT_RULES[name]

    def f(own: np.ndarray, top: np.ndarray, value: np.ndarray, options: dict[str, Any], ties: Any = 0) -> np.ndarray:
        return rule.utility(own, top, np.asarray(ties, dtype=float), value, check_options(name, options))

    return f


class _RuleView(Mapping[str, Callable[..., np.ndarray]]):
    """A live read-only view of :data:`~market.learning.payments.PAYMENT_RULES` as utility functions."""

    def __getitem__(self, name: str) -> Callable[..., np.ndarray]:
        if name not in PAYMENT_RULES:
            raise KeyError(name)
        return _rule_batch(name)

    def __iter__(self):  # noqa: ANN204
        return iter(list(PAYMENT_RULES))

    def __len__(self) -> int:
        return len(PAYMENT_RULES)


#: Vectorised TRUE expected utility of a bidder (ties broken uniformly at random) given its bids
#: ``own`` (pop, batch), the highest opposing bid ``top`` (batch,), its value (batch,), the options
#: and the number of opponents tied at ``top`` (batch,). A live view of the payment-rule registry.
SEALED_BID_BATCH: Mapping[str, Callable[..., np.ndarray]] = _RuleView()


def _top_and_ties(other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if other.shape[1] == 0:
        z = np.zeros(other.shape[0])
        return z, z
    top = other.max(axis=1)
    return top, (other == top[:, None]).sum(axis=1).astype(float)


def batch_utilities(
    mechanism: str, own_bids: Any, other_bids: Any, values: Any, options: dict[str, Any] | None = None
) -> np.ndarray:
    """TRUE expected utility of one bidder in each auction (ties broken uniformly at random):
    ``own_bids`` (..., batch), ``other_bids`` (batch, n - 1), ``values`` (batch,); currency."""
    opts = check_options(mechanism, options)
    top, ties = _top_and_ties(np.asarray(other_bids, dtype=float))
    return PAYMENT_RULES[mechanism].utility(np.asarray(own_bids, dtype=float), top, ties,
                                            np.asarray(values, dtype=float), opts)  # fmt: skip


def _classes(
    n: int | Sequence[int], values: ValueDistribution | Mapping[str, Any] | Sequence[Any] | None
) -> tuple[list[ValueDistribution], list[int]]:
    if isinstance(n, int | np.integer):
        if isinstance(values, Sequence) and not isinstance(values, str | Mapping):
            raise InputError("values", values, "must be one distribution when n is a number")
        return [make_distribution(values)], [check_int("n", n, minimum=2)]
    counts = [check_int("n", c, minimum=1) for c in n]
    if not counts:
        raise InputError("n", n, "must name at least one bidder class")
    if values is None or isinstance(values, Mapping | ValueDistribution):
        dists = [make_distribution(values)] * len(counts)
    else:
        dists = [make_distribution(v, f"values[{i}]") for i, v in enumerate(values)]
    if len(dists) != len(counts):
        raise InputError("values", len(dists), f"must give one distribution per class ({len(counts)})")
    if sum(counts) < 2:
        raise InputError("n", n, "must add up to at least 2 bidders")
    return dists, counts


def expected_revenue(
    mechanism: str,
    bid: BidFunction | Sequence[BidFunction],
    n: int | Sequence[int],
    *,
    values: ValueDistribution | Mapping[str, Any] | Sequence[Any] | None = None,
    samples: int = 1 << 17,
    seed: int = 0,
    options: dict[str, Any] | None = None,
) -> float:
    """Monte Carlo expected seller revenue (currency) when every bidder of class ``i`` (``n[i]``
    bidders, values ``values[i]``) bids ``bid[i]``; a single ``bid``/``n``/``values``: symmetric."""
    opts = check_options(mechanism, options)
    samples = check_int("samples", samples, minimum=1)
    if isinstance(n, int | np.integer):
        n = check_int("n", n, minimum=1)
        dists, counts = [make_distribution(values)], [n]
    else:
        dists, counts = _classes(n, values)
    bids_fns = [bid] * len(counts) if isinstance(bid, BidFunction) else list(bid)
    if len(bids_fns) != len(counts):
        raise InputError("bid", len(bids_fns), f"must give one bid function per class ({len(counts)})")
    rng = np.random.default_rng(seed)
    cols = [b(d.sample(rng, (samples, c))) for b, d, c in zip(bids_fns, dists, counts, strict=True)]
    return float(np.mean(PAYMENT_RULES[mechanism].revenue(np.concatenate(cols, axis=1), opts)))


@dataclass
class BidLearningResult:
    """Learned bid function(s) (Polyak average of the last quarter of rounds) and per-round history
    (``round``, ``class``, ``factor`` = E[b(V)] / E[V], ``utility`` = the class learner's mean TRUE
    utility). ``bid`` is class 0's function (the only one in a symmetric auction)."""

    mechanism: str
    n: int
    bid: BidFunction
    history: pd.DataFrame = field(repr=False)
    bids: tuple[BidFunction, ...] = ()
    values: tuple[ValueDistribution, ...] = ()
    counts: tuple[int, ...] = ()


def learn_bid_functions(
    mechanism: str,
    n: int | Sequence[int],
    *,
    values: ValueDistribution | Mapping[str, Any] | Sequence[Any] | None = None,
    rounds: int = 400,
    population: int = 32,
    sigma: float = 0.02,
    lr: float = 0.5,
    batch: int = 1 << 14,
    degree: int = 4,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    init: BidFunction | Sequence[BidFunction] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BidLearningResult:
    """Learn one bid function per bidder class by ES self-play (module docstring).

    ``n``: bidders (symmetric, one class with ``values``) or a list of class sizes with ``values`` a
    list of distributions (default U[0, 1] for every class). ``sigma`` is a fraction of each class's
    value range; ``lr`` multiplies the (dimensionless) utility gradient, times that range;
    ``population`` must be even (antithetic pairs). Deterministic in ``seed``."""
    opts = check_options(mechanism, options)
    dists, counts = _classes(n, values)
    rounds = check_int("rounds", rounds, minimum=1)
    population = check_int("population", population, minimum=2)
    if population % 2:
        raise InputError("population", population, "must be even (antithetic pairs)")
    batch = check_int("batch", batch, minimum=16)
    degree = check_int("degree", degree, minimum=1)
    sig = check_positive("sigma", sigma)
    lr = check_positive("lr", lr)
    K = len(dists)
    lows = [d.low for d in dists]
    widths = [d.high - d.low for d in dists]
    if init is None:
        inits = [BidFunction.truthful(degree, d.low, d.high) for d in dists]
    else:
        inits = [init] * K if isinstance(init, BidFunction) else list(init)
    coefs = [b.coef.astype(float).copy() for b in inits]
    if len(coefs) != K or any(c.size != degree + 1 for c in coefs):
        raise InputError("init", [c.size for c in coefs], f"must give {K} function(s) of {degree + 1} coefficients")
    rule = PAYMENT_RULES[mechanism]
    rng = np.random.default_rng(seed)
    b1 = 0.9
    m1 = [np.zeros(degree + 1) for _ in range(K)]
    tail = [np.zeros(degree + 1) for _ in range(K)]
    kept = 0
    strata = np.arange(batch)
    grids = [d.quantile_grid(257) for d in dists]
    rows: list[tuple[int, int, float, float]] = []
    for t in range(rounds):
        cur = [BidFunction(coefs[c], dists[c].low, dists[c].high) for c in range(K)]
        opp = [cur[j](dists[j].sample(rng, (batch, counts[j]))) for j in range(K)]
        grads = []
        utils = []
        for c in range(K):
            others = np.concatenate([opp[j][:, 1:] if j == c else opp[j] for j in range(K)], axis=1)
            top, ties = _top_and_ties(others)
            v0 = dists[c].ppf((strata + rng.random(batch)) / batch)
            H = _bernstein((v0 - lows[c]) / widths[c], degree)
            half = rng.standard_normal((population // 2, degree + 1))
            eps = np.concatenate([half, -half])
            s = sig * widths[c]
            own = np.maximum((coefs[c] + s * eps) @ H.T, 0.0)
            u = rule.utility(own, top, ties, v0, opts)
            credit = u @ H / batch
            grads.append(((credit - credit.mean(axis=0)) * eps).mean(axis=0) / s)
            utils.append(float(u.mean()))
        for c in range(K):
            m1[c] = b1 * m1[c] + (1 - b1) * grads[c]
            coefs[c] = coefs[c] + lr * widths[c] * m1[c] / (1 - b1 ** (t + 1))
            rows.append((t, c, float(BidFunction(coefs[c], lows[c], dists[c].high)(grids[c]).mean() / grids[c].mean()),
                         utils[c]))  # fmt: skip
        if t >= (3 * rounds) // 4:
            for c in range(K):
                tail[c] += coefs[c]
            kept += 1
        if progress is not None:
            progress(t + 1, rounds)
    learned = tuple(BidFunction(tail[c] / max(kept, 1), dists[c].low, dists[c].high) for c in range(K))
    history = pd.DataFrame(rows, columns=["round", "class", "factor", "utility"])
    return BidLearningResult(mechanism, int(sum(counts)), learned[0], history, learned, tuple(dists), tuple(counts))


def learn_bid_function(
    mechanism: str,
    n: int,
    *,
    values: ValueDistribution | Mapping[str, Any] | None = None,
    rounds: int = 400,
    population: int = 32,
    sigma: float = 0.02,
    lr: float = 0.5,
    batch: int = 1 << 14,
    degree: int = 4,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    init: BidFunction | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BidLearningResult:
    """Learn a symmetric bid function for ``n`` i.i.d. bidders (values ``values``, default U[0, 1])
    by ES self-play; :func:`learn_bid_functions` with one class."""
    if isinstance(values, Sequence) and not isinstance(values, str | Mapping):
        raise InputError("values", values, "must be one distribution (use learn_bid_functions for classes)")
    n = check_int("n", n, minimum=2)
    return learn_bid_functions(mechanism, n, values=values, rounds=rounds, population=population, sigma=sigma,
                               lr=lr, batch=batch, degree=degree, seed=seed, options=options, init=init,
                               progress=progress)  # fmt: skip
