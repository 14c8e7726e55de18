"""Hunt spaces of Eris's truthfulness claims C3a–C3f (:mod:`marketsim.market.audit.hunt`).

The ledger's study instances (``make_market``, R = 4, I = 6, T = 10, global mode) drawn from
generator seeds (the discrete part, crossed with the deviating bidder's position); the
continuous part moves every bidder's TRUE utility scale, data size, worker demand and arrival
within the market's own misreport boxes. Effect: the deviator's largest gain (money, as the
ledger reports it) of a misreport of the claim's dimensions (C3a utility, C3b arrival, C3c data sizes, C3d epochs, C3e
demands, C3f all jointly) against ``eris``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.market.audit.hunt import register_hunt_space
from marketsim.market.audit.hunt_spaces import AuctionSpace, register_auction_space

TRUTH_DIMS = ("value_scale", "data_scale", "worker_scale", "arrival_delay")
"""The TRUE-type moves: valuation, size, demand and arrival."""
LIE_DIMS: dict[str, tuple[str, ...] | None] = {
    "C3a": ("value_scale", "decay"),
    "C3b": ("arrival_delay",),
    "C3c": ("data_scale",),
    "C3d": ("epochs",),
    "C3e": ("worker_scale", "ps_scale"),
    "C3f": None,
}
"""Misreport dimensions each claim covers (``None`` = every dimension jointly)."""
PARAMS = {"R": 4, "I": 6, "T": 10, "mode": "global"}


def _build(seed: int) -> Any:
    from marketsim.market.eris.market import make_market

    return make_market(PARAMS, np.random.default_rng(seed))


def _rebid(market: Any, bids: Any) -> Any:
    from marketsim.market.eris.market import ErisMarket

    return ErisMarket(market.sites, market.network, market.config, bids, baseline_options=market.baseline_options)


def space(claim: str = "C3f", mechanism: str = "eris", seeds: tuple[int, ...] = (0, 1),
          deviators: tuple[int, ...] = (0, 1, 2)) -> AuctionSpace:  # fmt: skip
    """The space of Eris claim ``claim`` (C3a–C3f)."""
    return AuctionSpace(f"eris:{claim}", _build, _rebid, mechanism, seeds=seeds, truth_dims=TRUTH_DIMS,
                        lie_dims=LIE_DIMS[claim], deviators=deviators, paper="eris", absolute=True)  # fmt: skip


def _register(cid: str) -> None:
    register_auction_space(f"eris:{cid}")(lambda: space(cid))

    @register_hunt_space("eris", cid)
    def _space(size: str, claim: Any = None) -> AuctionSpace:
        return space(cid)


for _cid in LIE_DIMS:
    _register(_cid)
