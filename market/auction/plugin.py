"""The control-auction plugin: a fixed posted price (truthful) and pay-your-bid (manipulable), the
auditor's power check for online auctions, with their market adapter and study (entry point
``control`` of group ``marketsim.mechanisms``)."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="control",
    summary="Control auctions with known incentives: fixed posted price vs pay-your-bid",
    mechanisms={"auction": ("marketsim.market.auction.controls",)},
    market="marketsim.market.auction.controls",
    studies="marketsim.market.auction.studies",
)
