"""OASiS (Bao et al., INFOCOM'18): online admission and scheduling of PS jobs with posted prices."""

from market.oasis.constants import OasisConstants, estimate_constants
from market.oasis.mechanism import (
    Oasis,
    RealisedOutcome,
    SearchResult,
    oasis_search,
    realised_outcome,
    slot_cost_vector,
)
from market.oasis.model import OasisCluster, OasisJob, OasisRequest, Server

__all__ = [
    "Oasis",
    "OasisCluster",
    "OasisConstants",
    "OasisJob",
    "OasisRequest",
    "RealisedOutcome",
    "SearchResult",
    "Server",
    "estimate_constants",
    "oasis_search",
    "realised_outcome",
    "slot_cost_vector",
]
