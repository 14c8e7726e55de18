"""Equilibrium learning of bid functions in Bayesian single-item sealed-bid auctions.

Bidders come in classes; a class has ``count`` bidders whose private values are i.i.d. from its
:class:`~marketsim.market.learning.distributions.ValueDistribution` on ``[low, high]`` (currency units; one
class = a symmetric auction). A class's bid function ``b(v)`` is a Bernstein polynomial of degree
``d`` on its value range: ``b(v) = sum_k c_k B_{k,d}((v - low) / (high - low))`` (coefficients in
currency; ``b(v) = v`` has coefficients ``linspace(low, high, d + 1)``, the truthful start). The
payment rule comes from :data:`marketsim.market.learning.payments.PAYMENT_RULES` (first, second, all-pay,
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
utility), divided by that coefficient's expected share of the auctions under the class's value
distribution (a diagonal preconditioner, exactly 1 for uniform values: a skewed distribution no longer
starves the coefficients of its rare values, which otherwise stall the lognormal case at 4%
exploitability). BNE references to compare with are in :mod:`marketsim.market.learning.bne`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from marketsim.market.errors import InputError, check_int, check_positive
from marketsim.market.learning.distributions import ValueDistribution, make_distribution, uniform
from marketsim.market.learning.payments import PAYMENT_RULES, check_options

__all__ = [
    "BidFunction",
    "BidLearningResult",
    "Exploitability",
    "SEALED_BID_BATCH",
    "auto_settings",
    "batch_utilities",
    "bne_first_price",
    "expected_revenue",
    "exploitability",
    "learn_bid_function",
    "learn_bid_functions",
    "resolve_settings",
]


#: Coefficient families of :func:`learn_bid_functions` (``shape``); ``"auto"`` (the default) picks
#: the family and ES step settings per case by :func:`auto_settings`.
SHAPES = ("auto", "free", "monotone")
#: ES settings used for anything not given when ``shape`` is named explicitly (the pre-issue-#34 defaults).
FIXED_DEFAULTS: dict[str, Any] = {"degree": 4, "sigma": 0.02, "lr": 0.5}


def auto_settings(mechanism: str, n: int) -> dict[str, Any]:
    """The default family and ES step settings of a case with ``n`` bidders in total (issue #34).

    Every case uses the monotone family (coefficients projected onto non-negative, non-decreasing
    ones: every BNE of these single-item private-value auctions is non-decreasing and non-negative).
    All-pay: degree ``max(4, n)`` (the U[0, 1] BNE ``(n-1)/n v^n`` is a polynomial of degree n),
    ``sigma = 0.02``, ``lr = 0.5`` (smaller perturbations let a flat stretch of bids, an atom, pull
    the ES estimate up by its jump: the bids escalate past the value). Every other rule: degree 4,
    ``sigma = 0.005`` (a fraction of the value range: the perturbation smooths the kink at the
    opponents' top bid and biases the bids there down), ``lr = 1.0`` (the flat directions of the
    asymmetric auction converge within 400 rounds). Measured in ``benchmarks/results/bayesian.md``.

    :param mechanism: the payment rule (``"all-pay"`` gets its own settings).
    :param n: bidders in total, over all classes.
    :returns: ``{"shape", "degree", "sigma", "lr"}`` (sigma a fraction of the value range)."""
    if mechanism == "all-pay":
        return {"shape": "monotone", "degree": max(4, int(n)), "sigma": 0.02, "lr": 0.5}
    return {"shape": "monotone", "degree": 4, "sigma": 0.005, "lr": 1.0}


def resolve_settings(
    mechanism: str,
    n: int,
    *,
    shape: str = "auto",
    degree: int | None = None,
    sigma: float | None = None,
    lr: float | None = None,
) -> dict[str, Any]:
    """The concrete ``shape``, ``degree``, ``sigma`` and ``lr`` of a run: given values win; the rest
    come from :func:`auto_settings` when ``shape == "auto"``, else from :data:`FIXED_DEFAULTS`.

    :param mechanism: the payment rule.
    :param n: bidders in total.
    :param shape: ``"auto"``, ``"monotone"`` or ``"free"``.
    :param degree: Bernstein degree, or None for the family's default.
    :param sigma: perturbation size (fraction of the value range), or None.
    :param lr: step size, or None.
    :returns: ``{"shape", "degree", "sigma", "lr"}``, the given values kept.
    :raises InputError: an unknown ``shape``."""
    if shape not in SHAPES:
        raise InputError("shape", shape, f"must be one of {list(SHAPES)}")
    base = auto_settings(mechanism, n) if shape == "auto" else {"shape": shape, **FIXED_DEFAULTS}
    given = {"degree": degree, "sigma": sigma, "lr": lr}
    return {**base, **{k: v for k, v in given.items() if v is not None}}


def _monotone(coef: np.ndarray) -> np.ndarray:
    """Non-negative, non-decreasing coefficients (Bernstein: a non-negative non-decreasing b):
    the pool-adjacent-violators (least-squares isotonic) fit, then clipped at 0."""
    blocks: list[list[float]] = []  # [mean, size]
    for x in np.asarray(coef, dtype=float):
        blocks.append([x, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, n2 = blocks.pop()
            m1, n1 = blocks[-1]
            blocks[-1] = [(m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2]
    return np.maximum(np.concatenate([np.full(int(n), m) for m, n in blocks]), 0.0)


def _coefficient_shares(dist: ValueDistribution, degree: int, nodes: int = 64) -> np.ndarray:
    """``(degree + 1) * E[B_k((V - low) / (high - low))]`` for ``V`` from ``dist``: each coefficient's
    share of the auctions it shapes, relative to an equal share (1 for every k when ``dist`` is
    uniform). Gauss-Legendre in the quantile (exact for a uniform class: the integrand is then a
    polynomial of degree ``degree``)."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    v = dist.ppf(0.5 * (t + 1.0))
    H = _bernstein((v - dist.low) / (dist.high - dist.low), degree)
    return (degree + 1) * 0.5 * (w @ H)


def _bernstein(x: np.ndarray, degree: int) -> np.ndarray:
    """Bernstein basis on [0, 1]: shape ``x.shape + (degree + 1,)``; rows sum to 1."""
    k = np.arange(degree + 1)
    t = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)[..., None]
    return comb(degree, k) * t**k * (1.0 - t) ** (degree - k)


@dataclass(frozen=True)
class BidFunction:
    """``b(v) = sum_k coef[k] * B_{k,d}((v - low) / (high - low))``; values and bids in currency.

    :param coef: the d + 1 Bernstein coefficients (currency)
    :param low: the lowest value
    :param high: the highest value
    """

    coef: np.ndarray
    low: float = 0.0
    high: float = 1.0

    @property
    def degree(self) -> int:
        """Polynomial degree ``d``."""
        return int(len(self.coef) - 1)

    @classmethod
    def truthful(cls, degree: int = 4, low: float = 0.0, high: float = 1.0) -> BidFunction:
        """``b(v) = v`` exactly on ``[low, high]`` (Bernstein coefficients of the identity).

        :param degree: the polynomial degree d
        :param low: the lowest value
        :param high: the highest value
        :returns: the truthful bid function
        """
        return cls(np.linspace(low, high, degree + 1), low, high)

    def __call__(self, v: Any) -> np.ndarray:
        """Bids for values ``v`` (any shape), clipped at 0 (bids are non-negative)."""
        x = (np.asarray(v, dtype=float) - self.low) / (self.high - self.low)
        return np.maximum(_bernstein(x, self.degree) @ self.coef, 0.0)

    def l2_distance(
        self, other: Callable[[np.ndarray], np.ndarray], dist: ValueDistribution | None = None, points: int = 2001
    ) -> float:
        """Root-mean-square ``b(V) - other(V)`` (currency) with ``V`` from ``dist`` (default: uniform
        on ``[low, high]``); values where ``other`` is NaN (below a BNE's screening value) count 0.

        :param other: a bid function (e.g. a BNE), vectorised over values
        :param dist: the value distribution; ``None``: uniform on ``[low, high]``
        :param points: quantile grid points of the expectation
        :returns: the RMS distance, currency
        """
        d = dist if dist is not None else uniform(self.low, self.high)
        v = d.quantile_grid(points)
        ref = np.asarray(other(v), dtype=float)
        diff = np.where(np.isnan(ref), 0.0, self(v) - np.nan_to_num(ref))
        return float(np.sqrt(np.mean(diff**2)))

    def factor(self, dist: ValueDistribution | None = None, points: int = 2001) -> float:
        """Report factor ``E[b(V)] / E[V]`` (1 = truthful); ``V`` from ``dist`` (default uniform).

        :param dist: the value distribution; ``None``: uniform on ``[low, high]``
        :param points: quantile grid points of the expectation
        :returns: the factor
        """
        d = dist if dist is not None else uniform(self.low, self.high)
        v = d.quantile_grid(points)
        return float(self(v).mean() / v.mean())


def bne_first_price(n: int) -> Callable[[np.ndarray], np.ndarray]:
    """Symmetric BNE of the first-price auction with i.i.d. U[0, 1] values: ``(n-1)/n * v``
    (closed form; :func:`marketsim.market.learning.bne.symmetric_bne` covers any distribution and rule).

    :param n: bidders, >= 2
    :returns: the equilibrium bid function ``v -> (n-1)/n * v``
    """
    n = check_int("n", n, minimum=2)
    return lambda v: (n - 1) / n * np.asarray(v, dtype=float)


def _rule_batch(name: str) -> Callable[..., np.ndarray]:
    rule = PAYMENT_RULES[name]

    def f(own: np.ndarray, top: np.ndarray, value: np.ndarray, options: dict[str, Any], ties: Any = 0) -> np.ndarray:
        return rule.utility(own, top, np.asarray(ties, dtype=float), value, check_options(name, options))

    return f


class _RuleView(Mapping[str, Callable[..., np.ndarray]]):
    """A live read-only view of :data:`~marketsim.market.learning.payments.PAYMENT_RULES` as utility functions."""

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
    ``own_bids`` (..., batch), ``other_bids`` (batch, n - 1), ``values`` (batch,); currency.

    :param mechanism: a payment rule's name (:data:`~marketsim.market.learning.payments.PAYMENT_RULES`)
    :param own_bids: (..., batch) the bidder's bids
    :param other_bids: (batch, n - 1) the other bids of each auction
    :param values: (batch,) the bidder's TRUE values
    :param options: the rule's options (e.g. a reserve)
    :returns: (..., batch) utilities, currency
    """
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
    bidders, values ``values[i]``) bids ``bid[i]``; a single ``bid``/``n``/``values``: symmetric.

    :param mechanism: a payment rule's name
    :param bid: one bid function, or one per class
    :param n: bidders, or bidders per class
    :param values: the value distribution(s) (a spec or a :class:`ValueDistribution`); ``None``: U[0, 1]
    :param samples: auctions simulated, >= 1
    :param seed: the simulation's seed
    :param options: the rule's options
    :returns: the expected revenue per auction, currency
    :raises InputError: bad counts, options or one bid function per class missing
    """
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
    utility). ``bid`` is class 0's function (the only one in a symmetric auction).

    :param mechanism: the payment rule
    :param n: the number of bidders
    :param bid: class 0's learned bid function
    :param history: the per-round history
    :param bids: every class's learned bid function
    :param values: every class's value distribution
    :param counts: bidders per class
    :param settings: the family and ES step settings used (``shape``, ``degree``, ``sigma``, ``lr``)
    """

    mechanism: str
    n: int
    bid: BidFunction
    history: pd.DataFrame = field(repr=False)
    bids: tuple[BidFunction, ...] = ()
    values: tuple[ValueDistribution, ...] = ()
    counts: tuple[int, ...] = ()
    #: the family and ES step settings used (``shape``, ``degree``, ``sigma``, ``lr``; :func:`resolve_settings`)
    settings: dict[str, Any] = field(default_factory=dict)


def learn_bid_functions(
    mechanism: str,
    n: int | Sequence[int],
    *,
    values: ValueDistribution | Mapping[str, Any] | Sequence[Any] | None = None,
    rounds: int = 400,
    population: int = 32,
    sigma: float | None = None,
    lr: float | None = None,
    batch: int = 1 << 14,
    degree: int | None = None,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    init: BidFunction | Sequence[BidFunction] | None = None,
    progress: Callable[[int, int], None] | None = None,
    shape: str = "auto",
) -> BidLearningResult:
    """Learn one bid function per bidder class by ES self-play (module docstring).

    ``n``: bidders (symmetric, one class with ``values``) or a list of class sizes with ``values`` a
    list of distributions (default U[0, 1] for every class). ``sigma`` is a fraction of each class's
    value range; ``lr`` multiplies the (dimensionless) utility gradient, times that range;
    ``population`` must be even (antithetic pairs). ``shape="monotone"`` projects the coefficients
    after every step onto non-negative, non-decreasing ones (then ``b`` is non-negative and
    non-decreasing, never clipped flat at 0 over a range of values); ``"free"`` does not;
    ``"auto"`` (default) takes the family, ``degree``, ``sigma`` and ``lr`` not given from
    :func:`auto_settings` for this mechanism and number of bidders (an explicit ``"free"`` or
    ``"monotone"`` takes them from :data:`FIXED_DEFAULTS`). The settings used are in the result's
    ``settings``. Deterministic in ``seed``.

    :param mechanism: payment rule, a key of :data:`PAYMENT_RULES` (``"first-price"``, ``"all-pay"``, ...).
    :param n: number of i.i.d. bidders (one class), or the size of each bidder class.
    :param values: value distribution of the class (or one per class); default U[0, 1].
    :param rounds: ES steps (each one gradient step of every class).
    :param population: perturbations per step, even (antithetic pairs).
    :param sigma: perturbation size as a fraction of each class's value range (None: from ``shape``).
    :param lr: step size, times the class's value range (None: from ``shape``).
    :param batch: sampled auctions per step (stratified values).
    :param degree: Bernstein degree of each bid function (None: from ``shape``).
    :param seed: seed of the one random stream of the run.
    :param options: the payment rule's options (e.g. ``reserve``); checked by :func:`check_options`.
    :param init: starting bid function(s) (default: truthful bidding).
    :param progress: called with (rounds done, rounds) after every step.
    :param shape: ``"auto"`` (default), ``"monotone"`` or ``"free"``: the family and its step settings.
    :returns: the learned functions (mean of the last quarter of the steps), the per-round history
        (bid factor and utility per class) and the settings used.
    :raises InputError: a bad mechanism, option, count, distribution, setting or ``init`` shape."""
    opts = check_options(mechanism, options)
    dists, counts = _classes(n, values)
    settings = resolve_settings(mechanism, sum(counts), shape=shape, degree=degree, sigma=sigma, lr=lr)
    shape, degree, sigma, lr = settings["shape"], settings["degree"], settings["sigma"], settings["lr"]
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
    shares = [_coefficient_shares(d, degree) for d in dists]
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
            credit = u @ H / (batch * shares[c])
            grads.append(((credit - credit.mean(axis=0)) * eps).mean(axis=0) / s)
            utils.append(float(u.mean()))
        for c in range(K):
            m1[c] = b1 * m1[c] + (1 - b1) * grads[c]
            coefs[c] = coefs[c] + lr * widths[c] * m1[c] / (1 - b1 ** (t + 1))
            if shape == "monotone":
                coefs[c] = _monotone(coefs[c])
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
    return BidLearningResult(mechanism, int(sum(counts)), learned[0], history, learned, tuple(dists), tuple(counts),
                             settings)  # fmt: skip


def learn_bid_function(
    mechanism: str,
    n: int,
    *,
    values: ValueDistribution | Mapping[str, Any] | None = None,
    rounds: int = 400,
    population: int = 32,
    sigma: float | None = None,
    lr: float | None = None,
    batch: int = 1 << 14,
    degree: int | None = None,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    init: BidFunction | None = None,
    progress: Callable[[int, int], None] | None = None,
    shape: str = "auto",
) -> BidLearningResult:
    """Learn a symmetric bid function for ``n`` i.i.d. bidders (values ``values``, default U[0, 1])
    by ES self-play; :func:`learn_bid_functions` with one class.

    :param mechanism: payment rule, a key of :data:`PAYMENT_RULES`.
    :param n: number of bidders (at least 2).
    :param values: their common value distribution (default U[0, 1]); one distribution, not a list.
    :param rounds: ES steps.
    :param population: perturbations per step, even.
    :param sigma: perturbation size as a fraction of the value range (None: from ``shape``).
    :param lr: step size, times the value range (None: from ``shape``).
    :param batch: sampled auctions per step.
    :param degree: Bernstein degree of the bid function (None: from ``shape``).
    :param seed: seed of the run's random stream.
    :param options: the payment rule's options.
    :param init: starting bid function (default: truthful).
    :param progress: called with (rounds done, rounds) after every step.
    :param shape: ``"auto"`` (default), ``"monotone"`` or ``"free"``.
    :returns: as :func:`learn_bid_functions` (one class).
    :raises InputError: ``values`` given as a list, ``n`` below 2, or any input
        :func:`learn_bid_functions` refuses."""
    if isinstance(values, Sequence) and not isinstance(values, str | Mapping):
        raise InputError("values", values, "must be one distribution (use learn_bid_functions for classes)")
    n = check_int("n", n, minimum=2)
    return learn_bid_functions(mechanism, n, values=values, rounds=rounds, population=population, sigma=sigma,
                               lr=lr, batch=batch, degree=degree, seed=seed, options=options, init=init,
                               progress=progress, shape=shape)  # fmt: skip


def _top_distribution(bid_points: Sequence[np.ndarray], counts: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Exact law of (highest opposing bid, number of opponents at it) when opponent class ``j``
    (``counts[j]`` i.i.d. bidders) bids each entry of ``bid_points[j]`` (a quantile grid: equal
    weights) with equal probability: arrays ``(top, ties, weight)`` with weights summing to 1."""
    levels = np.unique(np.concatenate([np.asarray(b, dtype=float) for b in bid_points]))
    L = levels.size
    kmax = int(sum(counts))
    poly = np.zeros((L, kmax + 1))
    poly[:, 0] = 1.0
    deg = 0
    for b, k in zip(bid_points, counts, strict=True):
        s = np.sort(np.asarray(b, dtype=float))
        below = np.searchsorted(s, levels, side="left") / s.size  # P(bid < level)
        at = np.searchsorted(s, levels, side="right") / s.size - below  # P(bid == level)
        t = np.arange(k + 1)
        cls = comb(k, t) * at[:, None] ** t * below[:, None] ** (k - t)  # P(#at level = t, rest below)
        new = np.zeros((L, kmax + 1))
        for i in range(k + 1):
            new[:, i : i + deg + 1] += cls[:, i : i + 1] * poly[:, : deg + 1]
        poly, deg = new, deg + k
    tops, ties, weights = [], [], []
    for t in range(1, kmax + 1):
        w = poly[:, t]
        keep = w > 1e-15
        tops.append(levels[keep])
        ties.append(np.full(int(keep.sum()), float(t)))
        weights.append(w[keep])
    w = np.concatenate(weights)
    return np.concatenate(tops), np.concatenate(ties), w / w.sum()


@dataclass(frozen=True)
class Exploitability:
    """Best-response gain against a profile, per bidder class: ``utility`` = E[u] of the class's
    own bid function, ``best_response`` = E[max_b u] (currency per auction), ``gain`` = their
    difference and ``relative`` = gain / utility (NaN when utility <= 0); ``value`` is the worst
    class's ``relative`` (its ``gain`` when no class has positive utility).

    :param utility: per class, E[u] of its own bid function
    :param best_response: per class, E[max_b u]
    :param gain: per class, ``best_response - utility``
    :param relative: per class, ``gain / utility``
    """

    utility: tuple[float, ...]
    best_response: tuple[float, ...]
    gain: tuple[float, ...]
    relative: tuple[float, ...]

    @property
    def value(self) -> float:
        """Largest relative gain over classes (the exploitability reported beside L2)."""
        rel = [r for r in self.relative if np.isfinite(r)]
        return float(max(rel)) if rel else float(max(self.gain))


def exploitability(
    mechanism: str,
    bids: Callable[[np.ndarray], np.ndarray] | Sequence[Callable[[np.ndarray], np.ndarray]],
    counts: int | Sequence[int],
    *,
    values: ValueDistribution | Mapping[str, Any] | Sequence[Any] | None = None,
    options: dict[str, Any] | None = None,
    value_points: int = 201,
    bid_points: int = 401,
    quadrature: int = 4096,
    refine: int = 4,
) -> Exploitability:
    """Best-response utility gain of one bidder of each class against the others' ``bids``.

    The opponents' bids are taken at ``quadrature`` mid-quantiles of their values, and the law of
    the highest opposing bid (with the number tied at it) is computed exactly from them, so no
    sampling noise is maximised over. For each of ``value_points`` mid-quantile own values the
    best bid is searched over ``bid_points`` bids on ``[0, high]`` (the class's highest value),
    then ``refine`` times on 9 bids around the best so far, each time 4x finer. A rule's utility
    must be affine in the value (all built-in rules are; checked).

    :param mechanism: a registered payment rule
    :param bids: the bid function (symmetric) or one per class
    :param counts: bidders (symmetric) or bidders per class
    :param values: the value distribution(s) (default U[0, 1])
    :param options: the rule's options (e.g. ``reserve``)
    :param value_points: own values searched per class
    :param bid_points: bids on the first grid
    :param quadrature: opponents' quantiles
    :param refine: refinement rounds
    :returns: each class's best-response gain
    :raises InputError: bids and counts that do not match, a rule not affine in the value
    """
    opts = check_options(mechanism, options)
    if isinstance(counts, int | np.integer):
        dists, cnts = _classes(int(counts), values)
    else:
        dists, cnts = _classes(counts, values)
    fns = list(bids) if isinstance(bids, Sequence) else [bids] * len(cnts)
    if len(fns) != len(cnts):
        raise InputError("bids", len(fns), f"must give one bid function per class ({len(cnts)})")
    value_points = check_int("value_points", value_points, minimum=2)
    bid_points = check_int("bid_points", bid_points, minimum=3)
    quadrature = check_int("quadrature", quadrature, minimum=2)
    refine = check_int("refine", refine, minimum=0)
    rule = PAYMENT_RULES[mechanism]
    # NaN (a BNE reference below its screening value: any losing bid) counts as bidding 0
    grids = [np.nan_to_num(np.asarray(f(d.quantile_grid(quadrature)), dtype=float), nan=0.0)
             for f, d in zip(fns, dists, strict=True)]  # fmt: skip
    out: list[tuple[float, float]] = []
    for c, d in enumerate(dists):
        opp = [cnts[j] - (1 if j == c else 0) for j in range(len(dists))]
        top, ties, w = _top_distribution([g for g, k in zip(grids, opp, strict=True) if k > 0],
                                         [k for k in opp if k > 0])  # fmt: skip

        def coeffs(b: np.ndarray, top=top, ties=ties, w=w) -> tuple[np.ndarray, np.ndarray]:
            """E[u] = a(b) + v * s(b) for bids ``b`` (any shape)."""
            flat = b.reshape(-1)
            a = np.empty(flat.size)
            s = np.empty(flat.size)
            for i in range(0, flat.size, 512):
                own = flat[i : i + 512, None]
                u0 = rule.utility(own, top, ties, np.zeros_like(top), opts)
                u1 = rule.utility(own, top, ties, np.ones_like(top), opts)
                if i == 0:  # the affine decomposition below needs u(2) - u(1) == u(1) - u(0)
                    u2 = rule.utility(own, top, ties, np.full_like(top, 2.0), opts)
                    if not np.allclose(u2 - u1, u1 - u0, atol=1e-12):
                        raise InputError("mechanism", mechanism, "has a utility that is not affine in the value")
                a[i : i + 512] = u0 @ w
                s[i : i + 512] = (u1 - u0) @ w
            return a.reshape(b.shape), s.reshape(b.shape)

        v = d.quantile_grid(value_points)
        own_bid = np.maximum(np.nan_to_num(np.asarray(fns[c](v), dtype=float), nan=0.0), 0.0)
        a, s = coeffs(own_bid)
        u_own = a + v * s
        grid = np.linspace(0.0, d.high, bid_points)
        a, s = coeffs(grid)
        u = a[None, :] + v[:, None] * s[None, :]
        k = u.argmax(axis=1)
        best_b, best_u = grid[k], u[np.arange(v.size), k]
        step = grid[1] - grid[0]
        for _ in range(refine):
            cand = np.clip(best_b[:, None] + step * np.linspace(-1.0, 1.0, 9)[None, :], 0.0, None)
            a, s = coeffs(cand)
            uc = a + v[:, None] * s
            j = uc.argmax(axis=1)
            better = uc[np.arange(v.size), j] > best_u
            best_b = np.where(better, cand[np.arange(v.size), j], best_b)
            best_u = np.maximum(best_u, uc[np.arange(v.size), j])
            step /= 4.0
        out.append((float(u_own.mean()), float(np.maximum(best_u, u_own).mean())))
    util = tuple(o[0] for o in out)
    br = tuple(o[1] for o in out)
    gain = tuple(b - u for u, b in out)
    rel = tuple(g / u if u > 0 else float("nan") for g, u in zip(gain, util, strict=True))
    return Exploitability(util, br, gain, rel)
