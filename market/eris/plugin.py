"""The Eris plugin: the edge posted-price auction, Tiresias / AntMan / Liquid, its market adapter,
claims and studies (entry point ``eris`` of group ``marketsim.mechanisms``)."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="eris",
    summary="Eris: online posted-price auction for unbiased distributed learning over edge networks",
    mechanisms={"auction": ("marketsim.market.eris.mechanism", "marketsim.market.eris.baselines")},
    # hunt: the claims' instance spaces (marketsim.market.audit.hunt)
    claims=("marketsim.market.eris.claims", "marketsim.market.eris.hunt"),
    market="marketsim.market.eris.market",
    studies="marketsim.market.eris.studies",
)
