"""The PD-ORS plugin: locality-aware posted-price online scheduling, OASiS as its baseline, its
market adapter, claims and studies (entry point ``pdors`` of group ``marketsim.mechanisms``)."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="pdors",
    summary="PD-ORS: primal-dual online resource scheduling with randomized rounding and locality",
    mechanisms={"auction": ("marketsim.market.pdors.mechanisms",)},
    # hunt: the claims' instance spaces (marketsim.market.audit.hunt)
    claims=("marketsim.market.pdors.claims", "marketsim.market.pdors.hunt"),
    market="marketsim.market.pdors.market",
    studies="marketsim.market.pdors.studies",
)
