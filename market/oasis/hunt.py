"""Hunt space of OASiS's truthfulness framing (C-O6-truthful, :mod:`market.audit.hunt`).

The ledger's paper-setup markets (:data:`market.oasis.market.AUDIT_PARAMS`, calibration
constants fixed before the auction) drawn from generator seeds (the discrete part); the
continuous part moves every bidder's TRUE valuation scale, epochs, per-worker demand and arrival
within the market's own misreport boxes. Effect: the first bidder's largest relative gain of a
valuation, size, demand or arrival misreport against ``oasis``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.audit.hunt import register_hunt_space
from market.audit.hunt_spaces import AuctionSpace, register_auction_space

DIMS = ("value_scale", "epochs", "worker_demand", "arrival_delay")
"""Valuation, size, demand and arrival: the TRUE-type moves and the misreports searched."""


def _build(seed: int) -> Any:
    from market.oasis.market import AUDIT_PARAMS, make_market

    return make_market(AUDIT_PARAMS, np.random.default_rng(seed))


def _rebid(market: Any, bids: Any) -> Any:
    from market.oasis.market import OasisMarket

    return OasisMarket(market.cluster, bids, market.constants, dorm_time_limit=market.dorm_time_limit)


@register_auction_space("oasis:C-O6-truthful")
def space(
    mechanism: str = "oasis",
    seeds: tuple[int, ...] = (0, 1),
    deviators: tuple[int, ...] = (0, 1, 2),
    lie_dims: tuple[str, ...] | None = None,
) -> AuctionSpace:
    """The C-O6-truthful space (``mechanism`` may be any of the market's auctions; ``lie_dims``
    ``None`` = every misreport dimension of the market, :data:`DIMS` for the four headline ones)."""
    return AuctionSpace("oasis:C-O6-truthful", _build, _rebid, mechanism, seeds=seeds, truth_dims=DIMS,
                        lie_dims=lie_dims, deviators=deviators, paper="oasis")  # fmt: skip


@register_hunt_space("oasis", "C-O6-truthful")
def _c_o6(size: str, claim: Any = None) -> AuctionSpace:
    return space()
