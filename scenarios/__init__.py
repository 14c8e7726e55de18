"""Declarative TOML scenarios (package data) and their loader; see :mod:`scenarios.loader`."""

from scenarios.loader import Scenario, load_scenario, parse_scenario, scenario_names

__all__ = ["Scenario", "load_scenario", "parse_scenario", "scenario_names"]
