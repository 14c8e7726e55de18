"""Payment rules of single-item sealed-bid Bayesian auctions: a small registry (name -> rule).

Every rule is vectorised over auctions and sees a bidder's own bids, the highest opposing bid
``top`` and the number of opponents who bid exactly ``top`` (``ties``). **Ties are broken
uniformly at random**: a bidder tied with ``k`` opponents at the top wins with probability
``1 / (k + 1)``; utilities use that exact share (the expectation over the random tie-break, no
extra noise). Every rule takes ``reserve`` (default 0): a bid below it is rejected (it neither wins
nor pays). Built in:

* ``"first-price"``: the highest bid wins and pays itself;
* ``"second-price"``: the highest bid wins and pays max(second-highest bid, reserve);
* ``"all-pay"``: the highest bid wins; every admitted bid is paid;
* ``"posted-price"``: ``price`` (required) is posted, ``p = max(price, reserve)``; every bidder
  with bid >= p buys one unit at p (unlimited supply).

For the symmetric BNE by revenue equivalence (:mod:`marketsim.market.learning.bne`), a rule gives its
screening value ``v*`` (the lowest type that participates) and its equilibrium bid in terms of
the interim expected payment ``m(v)`` and winning probability ``G(v) = F(v)^(n-1)``. Add a rule
with :func:`register_payment_rule` (docs/bayesian.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, check_nonneg

__all__ = ["PAYMENT_RULES", "PaymentRule", "check_options", "register_payment_rule", "win_share"]


def win_share(own: np.ndarray, top: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Probability of winning with bids ``own`` (..., batch) against the highest opposing bid
    ``top`` (batch,) held by ``ties`` (batch,) opponents, ties broken uniformly at random.

    :param own: (..., batch) own bids
    :param top: (batch,) highest opposing bid
    :param ties: (batch,) opponents at ``top``
    :returns: winning probabilities
    """
    return np.where(own > top, 1.0, np.where(own == top, 1.0 / (1.0 + ties), 0.0))


@dataclass(frozen=True)
class PaymentRule:
    """A sealed-bid payment rule.

    * ``utility(own, top, ties, value, opts)``: TRUE expected utility of a bidder (over the random
      tie-break) with bids ``own`` (..., batch), value ``value`` (batch,);
    * ``revenue(bids, opts)``: seller revenue per auction from all bids (batch, n);
    * ``screening(reserve, G, low)``: lowest participating type in the symmetric BNE (``None``:
      the rule has no BNE by revenue equivalence, e.g. a posted price);
    * ``bid(v, m, G)``: symmetric BNE bid from the interim payment ``m(v)`` and ``G(v)``;
    * ``options``: the option keys it accepts (``reserve`` always); ``required``: those it needs.

    :param name: the rule's registry name
    :param utility: TRUE expected utility of a bidder
    :param revenue: seller revenue per auction
    :param screening: lowest participating type in the symmetric BNE, or ``None``
    :param bid: symmetric BNE bid, or ``None``
    :param options: option keys it accepts (``reserve`` always)
    :param required: option keys it needs
    :param summary: a one-line description
    """

    name: str
    utility: Callable[..., np.ndarray]
    revenue: Callable[[np.ndarray, Mapping[str, float]], np.ndarray]
    screening: Callable[[float, Callable[[np.ndarray], np.ndarray], float], float] | None
    bid: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None
    options: tuple[str, ...] = ("reserve",)
    required: tuple[str, ...] = ()
    summary: str = ""


#: name -> :class:`PaymentRule`
PAYMENT_RULES: dict[str, PaymentRule] = {}


def register_payment_rule(rule: PaymentRule) -> PaymentRule:
    """Register ``rule`` under ``rule.name`` (replacing one of that name); returns it.

    :param rule: the rule
    :returns: ``rule``
    :raises InputError: not a PaymentRule, options without ``reserve``
    """
    if not isinstance(rule, PaymentRule):
        raise InputError("payment rule", rule, "must be a PaymentRule")
    if "reserve" not in rule.options:
        raise InputError(f"payment rule {rule.name}.options", rule.options, "must include 'reserve'")
    PAYMENT_RULES[rule.name] = rule
    return rule


def check_options(mechanism: str, options: Mapping[str, Any] | None, field: str = "options") -> dict[str, float]:
    """Validate ``options`` for ``mechanism``: known keys only, numbers >= 0, required ones given.

    :param mechanism: a registered payment rule
    :param options: the options, or ``None``
    :param field: names the options in messages
    :returns: the checked options
    :raises InputError: an unknown rule or key, a bad value, a missing required key
    """
    if mechanism not in PAYMENT_RULES:
        raise InputError("mechanism", mechanism, f"must be one of {sorted(PAYMENT_RULES)}")
    rule = PAYMENT_RULES[mechanism]
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise InputError(field, options, "must be a table like {reserve = 0.3}")
    out: dict[str, float] = {}
    for key, val in options.items():
        if key not in rule.options:
            raise InputError(f"{field}.{key}", val, f"is not an option of {mechanism}; known: {list(rule.options)}")
        out[key] = check_nonneg(f"{field}.{key}", val)
    for key in rule.required:
        if key not in out:
            raise InputError(f"{field}.{key}", None, f"is required by the {mechanism} auction")
    out.setdefault("reserve", 0.0)
    return out


def _first_u(own, top, ties, value, opts):  # noqa: ANN001, ANN202
    r = opts["reserve"]
    return (value - own) * win_share(own, top, ties) * (own >= r)


def _second_u(own, top, ties, value, opts):  # noqa: ANN001, ANN202
    r = opts["reserve"]
    return (value - np.maximum(top, r)) * win_share(own, top, ties) * (own >= r)


def _allpay_u(own, top, ties, value, opts):  # noqa: ANN001, ANN202
    admitted = own >= opts["reserve"]
    return (value * win_share(own, top, ties) - own) * admitted


def _posted_u(own, top, ties, value, opts):  # noqa: ANN001, ANN202
    p = max(opts["price"], opts["reserve"])
    return (value - p) * (own >= p)


def _first_rev(bids: np.ndarray, opts: Mapping[str, float]) -> np.ndarray:
    top = bids.max(axis=1)
    return np.where(top >= opts["reserve"], top, 0.0)


def _second_rev(bids: np.ndarray, opts: Mapping[str, float]) -> np.ndarray:
    r = opts["reserve"]
    srt = np.sort(bids, axis=1)
    second = srt[:, -2] if bids.shape[1] > 1 else np.zeros(bids.shape[0])
    return np.where(srt[:, -1] >= r, np.maximum(second, r), 0.0)


def _allpay_rev(bids: np.ndarray, opts: Mapping[str, float]) -> np.ndarray:
    return np.where(bids >= opts["reserve"], bids, 0.0).sum(axis=1)


def _posted_rev(bids: np.ndarray, opts: Mapping[str, float]) -> np.ndarray:
    p = max(opts["price"], opts["reserve"])
    return p * (bids >= p).sum(axis=1)


def _screen_at_reserve(reserve: float, G: Callable[[np.ndarray], np.ndarray], low: float) -> float:
    """Winner-pays rules: the type equal to the reserve is indifferent, ``v* = max(reserve, low)``."""
    return max(reserve, low)


def _screen_all_pay(reserve: float, G: Callable[[np.ndarray], np.ndarray], low: float) -> float:
    """All-pay: the lowest participant pays ``reserve`` for sure and wins w.p. ``G(v*)``: ``v* G(v*) = reserve``."""
    if reserve <= low * float(G(np.array(low))):
        return low
    lo, hi = low, max(low, reserve) * 2 + 1.0
    while hi * float(G(np.array(hi))) < reserve and hi < 1e12:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid * float(G(np.array(mid))) < reserve:
            lo = mid
        else:
            hi = mid
    return hi


def _first_bid(v: np.ndarray, m: np.ndarray, G: np.ndarray) -> np.ndarray:
    tiny = G <= 1e-300
    return np.where(tiny, v, m / np.where(tiny, 1.0, G))


register_payment_rule(PaymentRule("first-price", _first_u, _first_rev, _screen_at_reserve, _first_bid,
                                  summary="highest bid wins and pays its bid"))  # fmt: skip
register_payment_rule(PaymentRule("second-price", _second_u, _second_rev, _screen_at_reserve,
                                  lambda v, m, G: np.asarray(v, dtype=float),
                                  summary="highest bid wins and pays max(second bid, reserve)"))  # fmt: skip
register_payment_rule(PaymentRule("all-pay", _allpay_u, _allpay_rev, _screen_all_pay, lambda v, m, G: m,
                                  summary="highest bid wins; every admitted bid is paid"))  # fmt: skip
register_payment_rule(PaymentRule("posted-price", _posted_u, _posted_rev, None, None, ("price", "reserve"),
                                  ("price",), "every bid >= max(price, reserve) buys at that price"))  # fmt: skip
