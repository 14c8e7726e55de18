"""Declarative TOML scenarios (package data) and their loader; see :mod:`scenarios.loader`.

The loader's names are imported on first use, so ``scenarios.catalog`` (used by ``marketsim
--help``) does not import Mesa or pandas."""

from market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "scenarios.loader": ("Scenario", "load_scenario", "parse_scenario", "scenario_names"),
        "scenarios.model": ("ScenarioModel",),
    },
)
