"""The OEF plugin (Fair allocation on heterogeneous GPUs): fair-share mechanisms, the Gavel /
Gandiva_fair / max-min baselines and OEF's claims. Published as the ``oef`` entry point of group
``marketsim.mechanisms``; light to import (names only)."""

from market.plugins import Plugin

PLUGIN = Plugin(
    name="oef",
    summary="OEF: envy-free and efficient fair allocation on heterogeneous GPUs, with Gavel, Gandiva_fair and max-min",
    mechanisms={
        "fair-share": ("market.oef.mechanisms", "market.oef.baselines", "market.oef.gavel", "market.oef.gavel_simple")
    },
    claims=("market.oef.claims", "market.oef.hunt"),  # hunt: the claims' instance spaces (market.audit.hunt)
    studies="market.oef.studies",
)
