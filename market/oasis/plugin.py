"""The OASiS plugin: the posted-price online auction, the FIFO / DRF / Dorm / RRH slot baselines,
its market adapter, claims and studies (entry point ``oasis`` of group ``marketsim.mechanisms``)."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="oasis",
    summary="OASiS: online posted-price admission and scheduling of parameter-server training jobs",
    mechanisms={"auction": ("marketsim.market.oasis.mechanisms",)},
    # hunt: the claims' instance spaces (marketsim.market.audit.hunt)
    claims=("marketsim.market.oasis.claims", "marketsim.market.oasis.hunt"),
    market="marketsim.market.oasis.market",
    studies="marketsim.market.oasis.studies",
)
