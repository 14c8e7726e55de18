"""The plugin descriptor marketsim reads through the ``marketsim.mechanisms`` entry point. Keep this
module light: marketsim imports it whenever it lists plugins; the modules named here are imported
only when needed."""

from marketsim.market.plugins import Plugin

PLUGIN = Plugin(
    name="proportional",
    summary="Example plugin: proportional-share GPU allocation (splits each GPU type by reported speedup)",
    mechanisms={"fair-share": ("marketsim_proportional.mechanism",)},
    claims=("marketsim_proportional.claims",),
)
