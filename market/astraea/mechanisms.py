"""Importing this module registers Astraea and its baselines in ``marketsim.market.registry``."""

from marketsim.market.astraea import baselines as _baselines  # noqa: F401  (registers the baselines)
from marketsim.market.astraea import online as _online  # noqa: F401  (registers "astraea")

__all__: list[str] = []
