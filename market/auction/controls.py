"""Control auctions for the online audit: one known truthful, one known manipulable.

Each bidder wants ``units`` of one resource for ``duration`` consecutive slots, starting no
earlier than its ``arrival``, and values completion by the end of the horizon at ``value``
(currency). Capacity is ``capacity`` units per slot; the price is a fixed ``price`` per unit-slot,
announced before the auction. Reports are decided on arrival, in job-id order within a slot; a job
gets the earliest start with enough free capacity.

* ``fixed-price``: admitted iff reported value > posted cost ``price·units·duration``; pays the
  posted cost. Dominant-strategy truthful: the price does not depend on the report, a later
  reported arrival only shrinks the set of starts, and a smaller reported size cannot finish the
  true job (consequence model: value 0), a larger one costs more.
* ``pay-your-bid``: the same admission rule (posted cost as reserve) but the winner pays its
  reported value: shading the value down to just above the reserve is profitable (gain
  ``value − cost`` minus the reported margin), which the audit must find.

:func:`make_market` builds a :class:`ControlMarket` (an :class:`~marketsim.market.auction.market.AuctionMarket`)
for the study runner, the Mesa model and the audit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from marketsim.market.auction.base import Decision, PostedPriceMechanism, Schedule
from marketsim.market.audit.target import Dimension
from marketsim.market.errors import InputError, check_finite, check_int, check_positive
from marketsim.market.registry import register

__all__ = ["ControlBid", "ControlAuction", "ControlMarket", "make_market", "RULES"]

RULES = ("fixed-price", "pay-your-bid")


@dataclass(frozen=True)
class ControlBid:
    """``units`` of the resource for ``duration`` slots from ``arrival`` on, worth ``value``.

    :param job_id: the bid's id
    :param arrival: the arrival slot, >= 0
    :param value: its value, currency, >= 0
    :param units: resource units per slot, >= 1
    :param duration: consecutive slots, >= 1
    :raises InputError: a field out of range
    """

    job_id: int
    arrival: int
    value: float
    units: int
    duration: int

    def __post_init__(self) -> None:
        check_int(f"bid[{self.job_id}].arrival", self.arrival, minimum=0)
        check_finite(f"bid[{self.job_id}].value", self.value)
        if self.value < 0:
            raise InputError(f"bid[{self.job_id}].value", self.value, "must be >= 0")
        check_int(f"bid[{self.job_id}].units", self.units, minimum=1)
        check_int(f"bid[{self.job_id}].duration", self.duration, minimum=1)


class ControlAuction(PostedPriceMechanism):
    """The control mechanisms (``rule`` in :data:`RULES`) over ``T`` slots of ``capacity`` units.

    A bid is admitted at the earliest start with ``units`` free for ``duration`` slots when its
    value exceeds the posted cost ``price * units * duration``; ``"fixed-price"`` charges that cost,
    ``"pay-your-bid"`` the reported value.

    :param T: the horizon in slots
    :param capacity: units per slot, >= 1
    :param price: the posted price per unit-slot, > 0
    :param rule: ``"fixed-price"`` or ``"pay-your-bid"``
    :raises InputError: an unknown rule or a parameter out of range
    """

    def __init__(self, T: int, capacity: int, price: float, rule: str = "fixed-price") -> None:
        super().__init__(T)
        if rule not in RULES:
            raise InputError("rule", rule, f"must be one of {list(RULES)}")
        self.rule = rule
        self.name = rule
        self.capacity = check_int("capacity", capacity, minimum=1)
        self.price = check_positive("price", price)
        self.used = np.zeros(self.T, dtype=np.int64)

    def decide(self, report: ControlBid) -> Decision:
        """Admit ``report`` at its earliest feasible start if its value exceeds the posted cost.

        :param report: the arriving bid
        :returns: its decision (payment by the rule)
        """
        d, u = int(report.duration), int(report.units)
        cost = self.price * u * d
        start = None
        if d <= self.T - report.arrival and u <= self.capacity:
            free = self.capacity - self.used
            # earliest s >= arrival with free[s:s+d] >= u (window minimum over every start)
            ok = np.lib.stride_tricks.sliding_window_view(free[report.arrival :], d).min(axis=1) >= u
            hits = np.flatnonzero(ok)
            start = int(report.arrival + hits[0]) if hits.size else None
        if start is None or not report.value > cost:
            return Decision(report.job_id, False, None, 0.0, None, 0.0)
        self.used[start : start + d] += u
        pay = cost if self.rule == "fixed-price" else float(report.value)
        sched = Schedule(report.job_id, start + d - 1, {t: np.array([u]) for t in range(start, start + d)}, {})
        return Decision(report.job_id, True, sched, pay, start + d - 1, float(report.value) - pay, float(report.value))


def _factory(rule: str):  # noqa: ANN202
    def make(T: int, capacity: int, price: float) -> ControlAuction:
        return ControlAuction(T, capacity, price, rule)

    make.__name__ = f"make_{rule.replace('-', '_')}"
    make.__doc__ = f"The ``{rule}`` control auction (see :mod:`marketsim.market.auction.controls`)."
    return make


register("fixed-price", "auction", "Control: fixed posted price per unit-slot (truthful)", paper="control")(
    _factory("fixed-price")
)
register("pay-your-bid", "auction", "Control: posted reserve, winner pays its bid (manipulable)", paper="control")(
    _factory("pay-your-bid")
)


@dataclass
class ControlMarket:
    """An :class:`~marketsim.market.auction.market.AuctionMarket` of the control auctions.

    :param T: the horizon in slots
    :param capacity: units per slot
    :param price: the posted price per unit-slot
    :param true_bids: the TRUE bids
    :param paper: the plugin key
    """

    T: int
    capacity: int
    price: float
    true_bids: tuple[ControlBid, ...]
    paper: str = "control"

    def bids(self) -> Sequence[ControlBid]:
        return self.true_bids

    def mechanisms(self) -> tuple[str, ...]:
        return RULES

    def mechanism(self, name: str, rng: np.random.Generator) -> ControlAuction:
        """A fresh control auction (deterministic: ``rng`` is not used).

        :param name: ``"fixed-price"`` or ``"pay-your-bid"``
        :param rng: unused
        :returns: the auction
        """
        return ControlAuction(self.T, self.capacity, self.price, name)

    def dimensions(self, bid: ControlBid) -> list[Dimension]:
        """Value scale (0.1..4), units and duration (1..twice the truth) and arrival delay (0..5).

        :param bid: a TRUE bid
        :returns: its dimensions
        """
        return [
            Dimension("value_scale", lower=0.1, upper=4.0),
            Dimension("units", kind="value", lower=1, upper=2 * bid.units, truth=bid.units, integer=True),
            Dimension("duration", kind="value", lower=1, upper=2 * bid.duration, truth=bid.duration, integer=True),
            Dimension("arrival_delay", kind="value", lower=0, upper=5, truth=0, integer=True),
        ]

    def misreport(self, bid: ControlBid, params: Mapping[str, float]) -> ControlBid:
        """``bid`` with its value scaled, units and duration replaced and arrival delayed (capped at T - 1).

        :param bid: a TRUE bid
        :param params: dimension name -> value; missing: truthful
        :returns: the report
        :raises InputError: an unknown parameter or a negative delay
        """
        allowed = {"value_scale", "units", "duration", "arrival_delay"}
        for k in params:
            if k not in allowed:
                raise InputError("misreport parameter", k, f"must be one of {sorted(allowed)}")
        delay = int(params.get("arrival_delay", 0))
        if delay < 0:
            raise InputError("arrival_delay", delay, "must be >= 0 (a bidder cannot report before it arrives)")
        return replace(
            bid,
            value=bid.value * float(params.get("value_scale", 1.0)),
            units=int(params.get("units", bid.units)),
            duration=int(params.get("duration", bid.duration)),
            arrival=min(bid.arrival + delay, self.T - 1),
        )

    def true_surplus(self, bid: ControlBid, report: ControlBid, decision: Decision | None) -> float:
        """The value (if the reported bundle covers the true one) minus the payment; 0 if not admitted.

        :param bid: the TRUE bid
        :param report: what it reported
        :param decision: its decision, or ``None``
        :returns: the TRUE surplus, currency
        """
        if decision is None or not decision.admitted:
            return 0.0
        done = report.units >= bid.units and report.duration >= bid.duration
        return (bid.value if done else 0.0) - float(decision.payment)

    def metrics(self, decisions: Sequence[Decision], reports: Sequence[ControlBid]) -> dict[str, float]:
        """``welfare``, ``revenue``, ``utility``, ``admission_rate``, ``utilisation``, ``mean_jct`` (TRUE types).

        :param decisions: the run's decisions
        :param reports: the reports the mechanism saw
        :returns: metric name -> value
        """
        truth = {b.job_id: b for b in self.true_bids}
        rep = {r.job_id: r for r in reports}
        adm = [d for d in decisions if d.admitted]
        welfare = sum(
            truth[d.job_id].value
            for d in adm
            if rep[d.job_id].units >= truth[d.job_id].units and rep[d.job_id].duration >= truth[d.job_id].duration
        )
        revenue = float(sum(d.payment for d in adm))
        used = sum(rep[d.job_id].units * rep[d.job_id].duration for d in adm)
        jct = [d.completion - truth[d.job_id].arrival + 1 for d in adm]
        return {
            "welfare": float(welfare),
            "revenue": revenue,
            "utility": float(welfare) - revenue,
            "admission_rate": len(adm) / max(1, len(self.true_bids)),
            "utilisation": used / (self.capacity * self.T),
            "mean_jct": float(np.mean(jct)) if jct else float("nan"),
        }


_KEYS = {"jobs", "T", "capacity", "price", "value_low", "value_high", "max_units", "max_duration"}


def make_market(params: Mapping[str, Any], rng: np.random.Generator) -> ControlMarket:
    """Random control instance: ``jobs`` bids over ``T`` slots, arrivals uniform, sizes uniform in
    ``1..max_units`` × ``1..max_duration``, value per unit-slot uniform in ``[value_low, value_high]``
    (defaults 20 jobs, T 20, capacity 4, price 1, values 0.5..2, 3 units, 4 slots).

    :param params: study parameters (the keys above); missing keys take their defaults
    :param rng: the only source of randomness of the instance
    :returns: the market instance (bids, resources, mechanisms)
    :raises InputError: an unknown key or an invalid value, naming the key
    """
    for k in params:
        if k not in _KEYS:
            raise InputError(f"control parameter {k}", params[k], f"is not one of {sorted(_KEYS)}")
    jobs = check_int("jobs", params.get("jobs", 20), minimum=1)
    T = check_int("T", params.get("T", 20), minimum=1)
    cap = check_int("capacity", params.get("capacity", 4), minimum=1)
    price = check_positive("price", params.get("price", 1.0))
    lo = check_positive("value_low", params.get("value_low", 0.5))
    hi = check_positive("value_high", params.get("value_high", 2.0))
    if hi < lo:
        raise InputError("value_high", hi, f"must be >= value_low = {lo}")
    mu = check_int("max_units", params.get("max_units", 3), minimum=1)
    md = check_int("max_duration", params.get("max_duration", 4), minimum=1)
    arrivals = rng.integers(0, T, size=jobs)
    units = rng.integers(1, mu + 1, size=jobs)
    dur = rng.integers(1, md + 1, size=jobs)
    per = rng.uniform(lo, hi, size=jobs)
    bids = tuple(
        ControlBid(i, int(arrivals[i]), float(per[i] * units[i] * dur[i]), int(units[i]), int(dur[i]))
        for i in range(jobs)
    )
    return ControlMarket(T, cap, price, bids)
