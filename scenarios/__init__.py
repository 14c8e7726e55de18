"""Declarative TOML scenarios (package data) and their loader; see :mod:`scenarios.loader`.

The loader's names are imported on first use, so ``scenarios.catalog`` (used by ``marketsim
--help``) does not import Mesa or pandas."""

if __name__ != "marketsim.scenarios":  # the bare name (this checkout's root on sys.path): a second copy of every module
    raise ImportError(f"import marketsim.scenarios, not {__name__}: marketsim's packages live in one namespace "
                      "(docs/concepts.md, Package layout)", name=__name__)

from market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "scenarios.loader": ("Scenario", "load_scenario", "parse_scenario", "scenario_names"),
        "scenarios.model": ("ScenarioModel",),
    },
)
