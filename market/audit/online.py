"""The audit adapter for every online auction: one :class:`OnlineAuctionTarget` over an
:class:`~marketsim.market.auction.market.AuctionMarket`.

The deviator is one bidder (``job_id``); everyone else reports truthfully, and the arrival order,
price constants and the mechanism's random draws are held fixed (the mechanism is rebuilt from the
same ``seed`` for every evaluation). A misreport is the market's own
:meth:`~marketsim.market.auction.market.AuctionMarket.misreport` of the named parameters; the deviator's
utility is its TRUE surplus (:meth:`~marketsim.market.auction.market.AuctionMarket.true_surplus`).

For posted-price mechanisms the decisions of bidders that arrive before the deviator do not depend
on its report, so ``outcome`` replays the whole instance; it is exact, and the audit's cache makes
repeated reports free.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from marketsim.market.auction.base import Decision
from marketsim.market.auction.market import AuctionMarket, decisions_by_id, run_market
from marketsim.market.audit.target import BaseTarget, Dimension
from marketsim.market.errors import InputError

__all__ = ["OnlineAuctionTarget"]


@dataclass
class OnlineAuctionTarget(BaseTarget):
    """Audit target of mechanism ``mechanism`` on ``market``; ``bidders`` limits who deviates
    (default: every bid). ``seed`` fixes randomised mechanisms' draws across evaluations.

    :param market: the auction instance
    :param mechanism: one of ``market.mechanisms()``
    :param bidders: the deviating bids' job ids; ``None``: every bid
    :param seed: the mechanism's seed
    :param name: the target's name in results (default: the mechanism's)
    :param cache_size: the most cached report utilities
    :raises InputError: an unknown mechanism or bidder, or no bids
    """

    market: AuctionMarket
    mechanism: str
    bidders: Sequence[int] | None = None
    seed: int = 0
    _bids: dict[int, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in self.market.mechanisms():
            raise InputError(
                "mechanism", self.mechanism, f"must be one of {list(self.market.mechanisms())} for {self.market.paper}"
            )
        self._bids = {int(b.job_id): b for b in self.market.bids()}
        if not self._bids:
            raise InputError("market.bids", [], "must hold at least one bid to audit")
        if self.bidders is not None:
            unknown = [b for b in self.bidders if int(b) not in self._bids]
            if unknown:
                raise InputError("bidders", unknown, f"are not job ids of the instance {sorted(self._bids)}")
        if self.name == "target":
            self.name = f"{self.mechanism}@{self.market.paper}"

    def agents(self) -> Sequence[Hashable]:
        return sorted(self._bids) if self.bidders is None else [int(b) for b in self.bidders]

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        return list(self.market.dimensions(self._bids[int(agent)]))

    def report(self, agent: Hashable, params: Mapping[str, float]) -> Any:
        return self.market.misreport(self._bids[int(agent)], params)

    def report_key(self, agent: Hashable, report: Any) -> Hashable:
        return (agent, repr(report))

    def outcome(self, agent: Hashable, report: Any) -> tuple[Any, Decision | None]:
        aid = int(agent)
        reports = [report if jid == aid else b for jid, b in self._bids.items()]
        decs = decisions_by_id(run_market(self.market, self.mechanism, reports, self.seed))
        return report, decs.get(aid)

    def utility(self, agent: Hashable, outcome: tuple[Any, Decision | None]) -> float:
        report, decision = outcome
        return float(self.market.true_surplus(self._bids[int(agent)], report, decision))

    def in_scope(self, family: str) -> bool:
        """Posted-price truthfulness claims cover every direction of every reported field.

        :param family: a family label
        :returns: ``True`` for every family
        """
        return True
