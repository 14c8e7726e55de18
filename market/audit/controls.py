"""Control mechanisms with known incentive properties, used to prove the auditor has power.

* :func:`first_price` sealed-bid single-item auction — manipulable (bid shading pays).
* :func:`second_price` (Vickrey) — truthful in dominant strategies.
* :func:`posted_price` — truthful (a take-it-or-leave-it price independent of one's bid).
* :func:`max_throughput` — LP (4) of the OEF spec in its closed form (every GPU type to the row
  with the highest reported speedup on it, ties to the lowest index): a manipulable fair-share
  allocator (inflating one's speedup on a type captures that type).

:class:`SealedBidTarget` adapts any sealed-bid mechanism to the auditor. Money is in currency
units; a bidder's TRUE utility is ``value * won - payment``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.audit.target import BaseTarget, Dimension
from marketsim.market.errors import InputError, as_float_array, check_choice, check_nonneg

__all__ = [
    "AuctionOutcome",
    "first_price",
    "second_price",
    "posted_price",
    "max_throughput",
    "SealedBidTarget",
    "CONTROL_AUCTIONS",
]


@dataclass(frozen=True)
class AuctionOutcome:
    """``won[i]`` in {0, 1} (units received), ``payments[i]`` (currency) per bidder.

    :param won: (n,) units received, 0 or 1
    :param payments: (n,) payments, currency
    """

    won: np.ndarray
    payments: np.ndarray


def _bids(bids: Any) -> np.ndarray:
    b = as_float_array("bids", bids, ndim=1, nonneg=True)
    if b.size == 0:
        raise InputError("bids", bids, "must hold at least one bid (empty instance)")
    return b


def _winner(b: np.ndarray, tie: str, reserve: float) -> int:
    check_choice("tie", tie, ("lowest", "highest"))
    top = b.max()
    if top < reserve:
        return -1
    idx = np.flatnonzero(b == top)
    return int(idx[0] if tie == "lowest" else idx[-1])


def first_price(bids: Any, *, reserve: float = 0.0, tie: str = "lowest") -> AuctionOutcome:
    """Highest bid (>= ``reserve``) wins and pays its own bid; ties to the lowest (or highest) index.

    :param bids: one bid per bidder, currency
    :param reserve: the lowest winning bid
    :param tie: ``lowest`` or ``highest`` index wins a tie
    :returns: who won and what each pays
    """
    b = _bids(bids)
    w = _winner(b, tie, check_nonneg("reserve", reserve))
    won, pay = np.zeros(b.size), np.zeros(b.size)
    if w >= 0:
        won[w], pay[w] = 1.0, b[w]
    return AuctionOutcome(won, pay)


def second_price(bids: Any, *, reserve: float = 0.0, tie: str = "lowest") -> AuctionOutcome:
    """Vickrey: highest bid (>= ``reserve``) wins and pays max(second-highest bid, reserve).

    :param bids: one bid per bidder, currency
    :param reserve: the lowest winning bid
    :param tie: ``lowest`` or ``highest`` index wins a tie
    :returns: who won and what each pays
    """
    b = _bids(bids)
    w = _winner(b, tie, check_nonneg("reserve", reserve))
    won, pay = np.zeros(b.size), np.zeros(b.size)
    if w >= 0:
        others = np.delete(b, w)
        won[w], pay[w] = 1.0, max(float(others.max()) if others.size else 0.0, reserve)
    return AuctionOutcome(won, pay)


def posted_price(bids: Any, *, price: float) -> AuctionOutcome:
    """Every bidder whose bid is >= ``price`` buys one unit at ``price`` (unlimited supply).

    :param bids: one bid per bidder, currency
    :param price: the posted price, currency
    :returns: who bought and what each pays
    """
    b = _bids(bids)
    p = check_nonneg("price", price)
    won = (b >= p).astype(float)
    return AuctionOutcome(won, won * p)


CONTROL_AUCTIONS: Mapping[str, Callable[..., AuctionOutcome]] = {
    "first-price": first_price,
    "second-price": second_price,
    "posted-price": posted_price,
}


def max_throughput(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """LP (4) in closed form: type ``j`` goes wholly to ``argmax_l W[l, j] / W[l, 0]`` (ties to the
    lowest index). ``weights`` and ``caps`` are accepted for signature compatibility and ignored
    (LP (4) has neither). Units: X in devices, objective in slowest-GPU equivalents (reported).

    :param W: (n, k) reported speedups
    :param m: (k,) GPUs per type
    :param weights: ignored
    :param caps: ignored
    :param options: ignored
    :returns: the allocation
    """
    Wa = as_float_array("W", W, ndim=2, positive=True)
    n, k = Wa.shape
    ma = as_float_array("m", m, shape=(k,), nonneg=True)
    X = np.zeros((n, k))
    if n:
        Wn = Wa / Wa[:, :1]
        X[np.argmax(Wn, axis=0), np.arange(k)] = ma
    obj = float(np.einsum("lj,lj->", Wa / Wa[:, :1], X)) if n else 0.0
    return Allocation(X=X, policy="max-throughput-control", objective=obj)


@dataclass
class SealedBidTarget(BaseTarget):
    """Adapter: sealed-bid mechanism ``mechanism(bids) -> AuctionOutcome`` with true ``values``.

    Each bidder has one dimension ``"bid"`` (kind ``value``, from 0 to ``bid_upper_factor`` x its
    value; over-reporting = bidding above the value). Others bid ``others_bids`` if given, else
    truthfully. ``mechanism`` is a callable or a name in :data:`CONTROL_AUCTIONS` (``options`` are
    passed through, e.g. ``price=7`` for the posted price).

    :param mechanism: a callable ``bids -> AuctionOutcome`` or a name in :data:`CONTROL_AUCTIONS`
    :param values: the bidders' true values, currency
    :param others_bids: the others' fixed bids, or ``None`` (truthful)
    :param options: passed to the mechanism (e.g. ``price``)
    :param bid_upper_factor: highest bid probed, as a multiple of the value
    :param name: the target's name (set from the mechanism)
    :param cache_size: the most cached report utilities
    :raises InputError: an unknown mechanism, ``others_bids`` of the wrong length
    """

    mechanism: Any = None
    values: Sequence[float] = ()
    others_bids: Sequence[float] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    bid_upper_factor: float = 4.0

    def __post_init__(self) -> None:
        if isinstance(self.mechanism, str):
            check_choice("mechanism", self.mechanism, list(CONTROL_AUCTIONS))
            self.name = self.mechanism
            self._fn = partial(CONTROL_AUCTIONS[self.mechanism], **self.options)
        elif callable(self.mechanism):
            self.name = getattr(self.mechanism, "__name__", "auction")
            self._fn = partial(self.mechanism, **self.options)
        else:
            raise InputError("mechanism", self.mechanism, "must be a control auction name or a callable")
        self._values = _bids(self.values)
        self._bids = self._values.copy() if self.others_bids is None else _bids(self.others_bids)
        if self._bids.shape != self._values.shape:
            raise InputError("others_bids", self.others_bids, f"must have {self._values.size} entries")

    def agents(self) -> Sequence[Hashable]:
        return list(range(self._values.size))

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        v = float(self._values[int(agent)])
        return [Dimension("bid", kind="value", lower=0.0, upper=self.bid_upper_factor * max(v, 1e-12), truth=v)]

    def report(self, agent: Hashable, params: Mapping[str, float]) -> float:
        return float(params.get("bid", self._values[int(agent)]))

    def outcome(self, agent: Hashable, report: float) -> AuctionOutcome:
        b = self._bids.copy()
        b[int(agent)] = report
        return self._fn(b)

    def utility(self, agent: Hashable, outcome: AuctionOutcome) -> float:
        i = int(agent)
        return float(self._values[i] * outcome.won[i] - outcome.payments[i])
