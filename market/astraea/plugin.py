"""The Astraea plugin: the multi-tenant batch auction with gain-as-you-contribute incomes, its
baselines (BatchSche, Gandiva_fair, HiveD, exclusive partitions), market adapter, claims and study
(entry point ``astraea`` of group ``marketsim.mechanisms``)."""

from market.plugins import Plugin

PLUGIN = Plugin(
    name="astraea",
    summary="Astraea: multi-tenant batch posted-price scheduling with gain-as-you-contribute incomes",
    mechanisms={"auction": ("market.astraea.mechanisms",)},
    claims=("market.astraea.claims",),
    market="market.astraea.market",
    studies="market.astraea.studies",
)
