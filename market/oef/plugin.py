"""The OEF plugin (Fair allocation on heterogeneous GPUs): fair-share mechanisms, the Gavel /
Gandiva_fair / max-min baselines and OEF's claims. Published as the ``oef`` entry point of group
``marketsim.mechanisms``; light to import (names only)."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="oef",
    summary="OEF: envy-free and efficient fair allocation on heterogeneous GPUs, with Gavel, Gandiva_fair and max-min",
    mechanisms={
        "fair-share": ("marketsim.market.oef.mechanisms", "marketsim.market.oef.baselines",
                       "marketsim.market.oef.gavel", "marketsim.market.oef.gavel_simple")
    },
    # hunt: the claims' instance spaces (marketsim.market.audit.hunt)
    claims=("marketsim.market.oef.claims", "marketsim.market.oef.hunt"),
    studies="marketsim.market.oef.studies",
)
