"""Declarative TOML scenarios (package data) and their loader; see :mod:`marketsim.scenarios.loader`.

The loader's names are imported on first use, so ``marketsim.scenarios.catalog`` (used by ``marketsim
--help``) does not import Mesa or pandas."""

if __name__ != "marketsim.scenarios":  # the bare name (this checkout's root on sys.path): a second copy of every module
    raise ImportError(f"import marketsim.scenarios, not {__name__}: marketsim's packages live in one namespace "
                      "(docs/concepts.md, Package layout)", name=__name__)

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.scenarios.loader": ("Scenario", "load_scenario", "parse_scenario", "scenario_names"),
        "marketsim.scenarios.model": ("ScenarioModel",),
    },
)
