"""OASiS (Bao et al., INFOCOM'18): online admission and scheduling of PS jobs with posted prices."""

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.market.oasis.constants": (
            "OasisConstants",
            "estimate_constants",
        ),
        "marketsim.market.oasis.mechanism": (
            "Oasis",
            "RealisedOutcome",
            "SearchResult",
            "oasis_search",
            "realised_outcome",
            "slot_cost_vector",
        ),
        "marketsim.market.oasis.model": (
            "OasisCluster",
            "OasisJob",
            "OasisRequest",
            "Server",
        ),
    },
)
