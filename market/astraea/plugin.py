"""The Astraea plugin: the multi-tenant batch auction with gain-as-you-contribute incomes, its
baselines (BatchSche, Gandiva_fair, HiveD, exclusive partitions), market adapter, claims and study
(entry point ``astraea`` of group ``marketsim.mechanisms``)."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="astraea",
    summary="Astraea: multi-tenant batch posted-price scheduling with gain-as-you-contribute incomes",
    mechanisms={"auction": ("marketsim.market.astraea.mechanisms",)},
    claims=("marketsim.market.astraea.claims",),
    market="marketsim.market.astraea.market",
    studies="marketsim.market.astraea.studies",
)
