"""PD-ORS (Yu et al., TNSE'22): locality-aware online scheduling with posted prices."""

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.market.pdors.constants": (
            "PdorsConstants",
            "estimate_pdors_constants",
        ),
        "marketsim.market.pdors.mechanism": (
            "Pdors",
            "PdorsConfig",
            "PdorsSearch",
            "dp_grid",
            "job_rng",
            "pdors_realised",
            "pdors_search",
        ),
        "marketsim.market.pdors.model": (
            "Machine",
            "PdorsCluster",
            "PdorsJob",
            "gbps_to_mb_per_slot",
            "is_colocated",
            "mb_per_slot_to_gbps",
        ),
    },
)
