"""Shared engine of the online posted-price auctions: the online-mechanism interface, the price
ledger with exponential price functions, and the vectorised schedule search (greedy slot cost,
DP over slots, completion enumeration)."""

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.market.auction.base": (
            "Decision",
            "OnlineMechanism",
            "PostedPriceMechanism",
            "Report",
            "ResourceSpace",
            "Schedule",
        ),
        "marketsim.market.auction.prices": (
            "PriceLedger",
            "exp_price",
            "log_exp_price",
        ),
        "marketsim.market.auction.schedule": (
            "best_completion",
            "dp_forward",
            "greedy_cost_vector",
            "greedy_placement",
            "reconstruct",
        ),
    },
)
