"""PD-ORS (Yu et al., TNSE'22): locality-aware online scheduling with posted prices."""

from market.pdors.constants import PdorsConstants, estimate_pdors_constants
from market.pdors.mechanism import Pdors, PdorsConfig, PdorsSearch, dp_grid, job_rng, pdors_realised, pdors_search
from market.pdors.model import Machine, PdorsCluster, PdorsJob, gbps_to_mb_per_slot, is_colocated, mb_per_slot_to_gbps

__all__ = [
    "Machine",
    "Pdors",
    "PdorsCluster",
    "PdorsConfig",
    "PdorsConstants",
    "PdorsJob",
    "PdorsSearch",
    "dp_grid",
    "estimate_pdors_constants",
    "gbps_to_mb_per_slot",
    "is_colocated",
    "job_rng",
    "mb_per_slot_to_gbps",
    "pdors_realised",
    "pdors_search",
]
