"""The Eris plugin: the edge posted-price auction, Tiresias / AntMan / Liquid, its market adapter,
claims and studies (entry point ``eris`` of group ``marketsim.mechanisms``)."""

from market.plugins import Plugin

PLUGIN = Plugin(
    name="eris",
    summary="Eris: online posted-price auction for unbiased distributed learning over edge networks",
    mechanisms={"auction": ("market.eris.mechanism", "market.eris.baselines")},
    claims=("market.eris.claims", "market.eris.hunt"),  # hunt: the claims' instance spaces (market.audit.hunt)
    market="market.eris.market",
    studies="market.eris.studies",
)
