"""The PD-ORS plugin: locality-aware posted-price online scheduling, OASiS as its baseline, its
market adapter, claims and studies (entry point ``pdors`` of group ``marketsim.mechanisms``)."""

from market.plugins import Plugin

PLUGIN = Plugin(
    name="pdors",
    summary="PD-ORS: primal-dual online resource scheduling with randomized rounding and locality",
    mechanisms={"auction": ("market.pdors.mechanisms",)},
    claims=("market.pdors.claims", "market.pdors.hunt"),  # hunt: the claims' instance spaces (market.audit.hunt)
    market="market.pdors.market",
    studies="market.pdors.studies",
)
