"""Bayes–Nash equilibrium references for single-item sealed-bid auctions, computed numerically.

* Symmetric i.i.d. values (any :class:`~marketsim.market.learning.distributions.ValueDistribution`, any
  registered payment rule with a revenue-equivalence BNE): with ``G(v) = F(v)^(n-1)`` the winning
  probability and ``v*`` the rule's screening value (``max(reserve, low)`` for first and second
  price, ``v* G(v*) = reserve`` for all-pay), the interim expected payment of type ``v >= v*`` is
  ``m(v) = v G(v) - int_{v*}^v G(x) dx`` (Gauss–Legendre quadrature on a fine grid). First price
  bids ``m/G`` (= ``v - int_r^v F^(n-1) / F^(n-1)(v)``), all-pay bids ``m`` (= ``int x dF^(n-1)``
  without a reserve), second price bids ``v``. Expected revenue ``n E[m(V)]``.
* Asymmetric first price (bidder classes ``i`` with ``n_i`` bidders each, values ``F_i``): the
  inverse bid functions ``phi_i(b)`` solve, with ``gap_i = phi_i - b`` and ``N = sum n_i``,
  ``d ln F_i(phi_i)/db = S - 1/gap_i``, ``S = sum_j n_j / gap_j / (N - 1)`` (each bidder's
  first-order condition), with ``phi_i(b_bar) = high_i`` at a common top bid and
  ``phi_i(b0) = b0`` at the bottom (``b0 = max(reserve, low)``). :func:`asymmetric_first_price_bne`
  finds ``b_bar`` by backward shooting: integrating down from a ``b_bar`` that is too high makes
  some ``phi_i`` meet the diagonal (``gap_i = 0``) above ``b0``; one too low reaches ``b0`` with
  every ``phi_i > b0``; bisection between the two.

Bids are in currency. A reference's bid functions are NaN below the screening value (there every
bid below the reserve is equally good, so the distance to it is measured only above).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from marketsim.market.errors import InputError, check_int
from marketsim.market.learning.distributions import ValueDistribution
from marketsim.market.learning.payments import PAYMENT_RULES, check_options

__all__ = ["BneReference", "asymmetric_first_price_bne", "bne_reference", "symmetric_bne"]

_GL_T, _GL_W = np.polynomial.legendre.leggauss(8)


@dataclass(frozen=True)
class BneReference:
    """A BNE: per bidder class its bid function (``None`` when the equilibrium bid is not unique,
    e.g. a posted price), its screening value (types below it do not participate) and the
    expected seller revenue (currency). ``top_bid``: the common highest bid (asymmetric solver).

    :param mechanism: the payment rule
    :param bids: per class its bid function, or ``None`` when not unique
    :param screening: per class the lowest participating value
    :param revenue: expected seller revenue, currency
    :param method: how it was computed
    :param top_bid: the common highest bid (asymmetric solver), or ``None``
    """

    mechanism: str
    bids: tuple[Callable[[np.ndarray], np.ndarray] | None, ...]
    screening: tuple[float, ...]
    revenue: float
    method: str
    top_bid: float | None = None


def _interp(x: np.ndarray, y: np.ndarray, lo: float) -> Callable[[np.ndarray], np.ndarray]:
    def f(v: Any) -> np.ndarray:
        vv = np.asarray(v, dtype=float)
        return np.where(vv < lo, np.nan, np.interp(vv, x, y))

    return f


def symmetric_bne(
    mechanism: str, dist: ValueDistribution, n: int, options: Mapping[str, Any] | None = None, *, points: int = 4096
) -> BneReference | None:
    """Symmetric BNE of ``mechanism`` with ``n`` i.i.d. bidders (module docstring), by quadrature;
    ``None`` for a registered rule that gives no ``screening``/``bid`` (no reference is claimed).

    :param mechanism: the payment rule
    :param dist: the value distribution
    :param n: bidders
    :param options: the rule's options
    :param points: quadrature points
    :returns: the BNE, or ``None``
    :raises InputError: a reserve that excludes every value
    """
    opts = check_options(mechanism, options)
    n = check_int("n", n, minimum=2)
    rule = PAYMENT_RULES[mechanism]
    r = opts["reserve"]
    if rule.screening is None or rule.bid is None:
        return _posted_price_reference([dist], [n], opts) if mechanism == "posted-price" else None

    def G(x: Any) -> np.ndarray:
        return dist.cdf(x) ** (n - 1)

    vstar = float(rule.screening(r, G, dist.low))
    if vstar >= dist.high:
        raise InputError("options.reserve", r, f"excludes every value in [{dist.low:g}, {dist.high:g}]")
    x = np.linspace(vstar, dist.high, points + 1)
    h = np.diff(x)
    nodes = x[:-1, None] + 0.5 * h[:, None] * (_GL_T + 1.0)
    seg = (G(nodes) * _GL_W).sum(axis=1) * 0.5 * h
    integral = np.concatenate([[0.0], np.cumsum(seg)])
    Gx = G(x)
    m = x * Gx - integral
    b = rule.bid(x, m, Gx)
    Fx = dist.cdf(x)
    rev = n * float(np.sum(0.5 * (m[1:] + m[:-1]) * np.diff(Fx)))
    return BneReference(mechanism, (_interp(x, b, vstar),), (vstar,), rev, "revenue equivalence, quadrature")


def asymmetric_first_price_bne(
    dists: Sequence[ValueDistribution],
    counts: Sequence[int],
    reserve: float = 0.0,
    *,
    tol: float = 1e-9,
    points: int = 2001,
) -> BneReference:
    """First-price BNE with bidder classes (``counts[i]`` bidders with values ``dists[i]``), by
    backward shooting on the common top bid (module docstring). Needs a common lower value bound
    (or a reserve at or above every class's lower bound).

    :param dists: each class's value distribution
    :param counts: bidders per class
    :param reserve: the reserve price
    :param tol: the shooting's tolerance on the top bid
    :param points: grid points of the solution
    :returns: the BNE
    :raises InputError: mismatched classes, fewer than 2 bidders, no common lower bound
    """
    if len(dists) != len(counts) or not dists:
        raise InputError("classes", len(dists), "need one count per value distribution")
    cnt = np.array([check_int("classes.count", c, minimum=1) for c in counts], dtype=float)
    N = cnt.sum()
    if N < 2:
        raise InputError("classes.count", counts, "must add up to at least 2 bidders")
    lows = np.array([d.low for d in dists])
    highs = np.array([d.high for d in dists])
    b0 = max(float(reserve), float(lows.max()))
    if reserve < lows.max() and not np.allclose(lows, lows[0]):
        raise InputError("classes.values.low", lows.tolist(),
                         "must be equal across classes (or the reserve >= their maximum) for the BNE")  # fmt: skip
    if b0 >= highs.min():
        raise InputError("options.reserve", reserve, f"must be below every class's highest value {highs.min():g}")
    scale = float(highs.max())

    K = len(dists)
    cdfs = [d.cdf_fn for d in dists]
    pdfs = [d.pdf_fn for d in dists]
    lo_l, hi_l, cnt_l = lows.tolist(), highs.tolist(), cnt.tolist()

    def rhs(b: float, phi: np.ndarray) -> list[float]:
        p = phi.tolist()
        gaps = [max(p[i] - b, 1e-300) for i in range(K)]
        S = sum(cnt_l[i] / gaps[i] for i in range(K)) / (N - 1.0)
        out = []
        for i in range(K):
            x = min(max(p[i], lo_l[i]), hi_l[i])
            F = min(max(float(cdfs[i](x)), 0.0), 1.0)
            f = max(float(pdfs[i](np.float64(x))), 1e-300)
            out.append((S - 1.0 / gaps[i]) * F / f)
        return out

    def gap_event(b: float, phi: np.ndarray) -> float:
        return float(np.min(phi - b)) - 1e-12 * scale

    gap_event.terminal = True  # type: ignore[attr-defined]
    gap_event.direction = -1  # type: ignore[attr-defined]

    def shoot(bbar: float) -> tuple[bool, Any]:
        """True when ``bbar`` is too high (some inverse bid meets the diagonal above ``b0``)."""
        sol = solve_ivp(rhs, (bbar, b0), highs.astype(float), method="DOP853", rtol=1e-9, atol=1e-11 * scale,
                        events=gap_event, dense_output=True)  # fmt: skip
        hit = sol.status == 1 or (sol.status == -1 and sol.t[-1] > b0)
        return bool(hit), sol

    lo, hi = b0, float(highs.min())
    best = None
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        too_high, sol = shoot(mid)
        if too_high:
            hi = mid
        else:
            lo, best = mid, sol
        if hi - lo <= tol * scale:
            break
    if best is None:  # pragma: no cover - lo never moved: the bracket has no valid top bid
        raise InputError("classes", [d.describe() for d in dists], "no first-price BNE found by shooting")
    bbar = lo
    bgrid = np.linspace(b0, bbar, points)
    phi = best.sol(bgrid)
    phi[:, -1] = highs
    phi = np.maximum.accumulate(np.maximum(phi, bgrid), axis=1)
    bids = tuple(_interp(phi[i], bgrid, b0) for i in range(len(dists)))
    H = np.prod([dists[i].cdf(phi[i]) ** cnt[i] for i in range(len(dists))], axis=0)
    from scipy.integrate import simpson

    rev = b0 * (1.0 - float(H[0])) + float(simpson(1.0 - H, x=bgrid))
    return BneReference("first-price", bids, tuple(b0 for _ in dists), rev, "backward shooting on the top bid", bbar)


def bne_reference(
    mechanism: str,
    dists: Sequence[ValueDistribution],
    counts: Sequence[int],
    options: Mapping[str, Any] | None = None,
) -> BneReference | None:
    """The BNE reference for a (possibly asymmetric) market, or ``None`` when none is computed
    (asymmetric all-pay or custom rules). Symmetric: one class, :func:`symmetric_bne`.

    :param mechanism: the payment rule
    :param dists: each class's value distribution
    :param counts: bidders per class
    :param options: the rule's options
    :returns: the BNE, or ``None``
    """
    opts = check_options(mechanism, options)
    if len(dists) == 1:
        return symmetric_bne(mechanism, dists[0], int(counts[0]), opts)
    if mechanism == "first-price":
        return asymmetric_first_price_bne(dists, counts, opts["reserve"])
    if mechanism == "second-price":
        r = opts["reserve"]
        ident = tuple(_interp(np.array([d.low, d.high]), np.array([d.low, d.high]), max(r, d.low)) for d in dists)
        rev = _second_price_revenue(dists, counts, r)
        return BneReference(mechanism, ident, tuple(max(r, d.low) for d in dists), rev, "truthful (dominant strategy)")
    if mechanism == "posted-price":
        return _posted_price_reference(dists, counts, opts)
    return None


def _posted_price_reference(
    dists: Sequence[ValueDistribution], counts: Sequence[int], opts: Mapping[str, Any]
) -> BneReference:
    """Posted price ``p = max(price, reserve)``: threshold strategies (any bid on the right side of
    ``p``), revenue ``sum_c n_c p (1 - F_c(p))``."""
    p = max(opts.get("price", 0.0), opts["reserve"])
    rev = sum(c * p * (1.0 - float(d.cdf(p))) for d, c in zip(dists, counts, strict=True))
    return BneReference("posted-price", tuple(None for _ in dists), tuple(p for _ in dists), rev,
                        "posted price: any bid on the right side of p")  # fmt: skip


def _second_price_revenue(dists: Sequence[ValueDistribution], counts: Sequence[int], r: float) -> float:
    """E[max(second-highest value, r); highest >= r] by quadrature over the value range."""
    hi = max(d.high for d in dists)
    x = np.linspace(0.0, hi, 8193)
    Fs = [d.cdf(x) for d in dists]
    P_le = np.prod([F**c for F, c in zip(Fs, counts, strict=True)], axis=0)  # P(max <= x)
    # P(at most one value above x) = P(all <= x) + sum_i n_i (1 - F_i) F_i^(n_i - 1) prod_{j != i} F_j^(n_j)
    one = np.zeros_like(x)
    for i, (F, c) in enumerate(zip(Fs, counts, strict=True)):
        rest = np.prod([Fj**cj for j, (Fj, cj) in enumerate(zip(Fs, counts, strict=True)) if j != i] or [1.0], axis=0)
        one += c * (1.0 - F) * F ** (c - 1) * rest
    P_second_le = P_le + one
    from scipy.integrate import simpson

    keep = x >= r
    tail = float(simpson(1.0 - P_second_le[keep], x=x[keep])) if keep.sum() > 1 else 0.0
    return r * (1.0 - float(np.interp(r, x, P_le))) + tail
