"""Shared engine of the online posted-price auctions: the online-mechanism interface, the price
ledger with exponential price functions, and the vectorised schedule search (greedy slot cost,
DP over slots, completion enumeration)."""

from market.auction.base import Decision, OnlineMechanism, PostedPriceMechanism, Report, ResourceSpace, Schedule
from market.auction.prices import PriceLedger, exp_price, log_exp_price
from market.auction.schedule import best_completion, dp_forward, greedy_cost_vector, greedy_placement, reconstruct

__all__ = [
    "Decision",
    "OnlineMechanism",
    "PostedPriceMechanism",
    "Report",
    "ResourceSpace",
    "Schedule",
    "PriceLedger",
    "exp_price",
    "log_exp_price",
    "best_completion",
    "dp_forward",
    "greedy_cost_vector",
    "greedy_placement",
    "reconstruct",
]
