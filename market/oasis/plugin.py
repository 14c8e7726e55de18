"""The OASiS plugin: the posted-price online auction, the FIFO / DRF / Dorm / RRH slot baselines,
its market adapter, claims and studies (entry point ``oasis`` of group ``marketsim.mechanisms``)."""

from market.plugins import Plugin

PLUGIN = Plugin(
    name="oasis",
    summary="OASiS: online posted-price admission and scheduling of parameter-server training jobs",
    mechanisms={"auction": ("market.oasis.mechanisms",)},
    claims=("market.oasis.claims", "market.oasis.hunt"),  # hunt: the claims' instance spaces (market.audit.hunt)
    market="market.oasis.market",
    studies="market.oasis.studies",
)
