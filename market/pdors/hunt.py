"""Hunt space of PD-ORS's truthfulness framing (C-P10-truthful, :mod:`market.audit.hunt`).

The ledger's tiny PD-ORS markets (R = 1, I = T = 5, H = 2; capacity ``CAPS[seed mod 3]``; price
constants from independent calibration jobs) drawn from generator seeds (the discrete part); the
continuous part moves every bidder's TRUE valuation scale, epochs, per-worker demand and arrival
within the market's own misreport boxes. Effect: the first bidder's largest relative gain of a
valuation, size, demand or arrival misreport against ``pdors-paper`` (rounding stream fixed).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from market.audit.hunt import register_hunt_space
from market.audit.hunt_spaces import AuctionSpace, register_auction_space

DIMS = ("value_scale", "epochs", "worker_demand", "arrival_delay")
"""Valuation, size, demand and arrival: the TRUE-type moves and the misreports searched."""


def _build(seed: int) -> Any:
    from market.pdors.claims import CAPS, tiny_market_params
    from market.pdors.market import make_market

    return make_market(tiny_market_params(CAPS[seed % 3]), np.random.default_rng(seed))


def _rebid(market: Any, bids: Any) -> Any:
    return replace(market, jobs=list(bids))


@register_auction_space("pdors:C-P10-truthful")
def space(
    mechanism: str = "pdors-paper",
    seeds: tuple[int, ...] = (0, 1),
    deviators: tuple[int, ...] = (0, 1, 2),
    lie_dims: tuple[str, ...] | None = None,
) -> AuctionSpace:
    """The C-P10-truthful space (``mechanism`` may be any of the market's auctions; ``lie_dims``
    ``None`` = every misreport dimension of the market, :data:`DIMS` for the four headline ones)."""
    return AuctionSpace("pdors:C-P10-truthful", _build, _rebid, mechanism, seeds=seeds, truth_dims=DIMS,
                        lie_dims=lie_dims, deviators=deviators, paper="pdors")  # fmt: skip


@register_hunt_space("pdors", "C-P10-truthful")
def _c_p10(size: str, claim: Any = None) -> AuctionSpace:
    return space()
