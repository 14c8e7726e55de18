"""Eris (Pang et al., IEEE TMC 2024): online posted-price auction for unbiased distributed
learning over edge networks, in the paper's global-budget mode and a topology (per-link) mode.
See ``shared/spec/eris.md``. Importing :mod:`marketsim.market.eris.mechanism` and
:mod:`marketsim.market.eris.baselines` registers ``eris``, ``tiresias``, ``antman`` and ``liquid`` (the
plugin loader does this when an auction mechanism is first asked for)."""

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.market.eris.baselines": (
            "BaselineOutcome",
            "antman",
            "liquid",
            "tiresias",
        ),
        "marketsim.market.eris.mechanism": (
            "ErisAuction",
            "ErisDecision",
            "ErisOutcome",
            "realised_utility",
            "realised_value",
            "run_eris",
        ),
        "marketsim.market.eris.prices": (
            "CR_CONSTANT",
            "ErisState",
            "competitive_constant",
            "price",
        ),
        "marketsim.market.eris.types": (
            "RESOURCES",
            "ErisBid",
            "ErisConfig",
            "ErisJob",
            "ErisSchedule",
            "ErisSites",
            "MenuEntry",
            "NetworkSpec",
            "SlotPlan",
            "UDLJob",
        ),
    },
)
