"""A :class:`~marketsim.agents.model.MarketModel` built from plain keyword arguments, the form ``mesa.batch_run`` and
Mesa's visualisation drive: ``ScenarioModel(scenario_name=..., policy=..., variant=..., seed=..., rounds=...)``.

It lives here, above both the Mesa layer (:mod:`marketsim.agents`) and the scenario loader, because loading a
scenario by name needs :mod:`marketsim.scenarios.loader`, which itself builds configs from
:mod:`marketsim.agents.config` and models with :meth:`marketsim.scenarios.loader.Scenario.build_model`: the Mesa model
does not depend on the TOML layer."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from marketsim.agents.config import ModelConfig
from marketsim.agents.model import MarketModel
from marketsim.market.errors import InputError, check_int
from marketsim.scenarios.loader import Scenario, load_scenario

__all__ = ["ScenarioModel"]


class ScenarioModel(MarketModel):
    """:class:`~marketsim.agents.model.MarketModel` of a scenario, from plain keyword arguments.

    ``scenario_name``: a scenario name, TOML path or :class:`marketsim.scenarios.loader.Scenario` (not
    ``scenario``, which Mesa reserves for its own Scenario object); ``policy`` (default: the scenario's
    first); ``variant`` (``"truthful"``); ``seed`` (int or ``SeedSequence``; the same model as
    ``Scenario.build_model(policy, variant, seed)``; ``rng=`` is accepted as its synonym, which is how
    ``mesa.batch_run(rng=[...])`` passes it) and optionally ``rounds`` (overrides the scenario's horizon,
    in rounds). :attr:`scenario_name` holds the scenario's name. Its DataCollector also has a reporter
    per cluster measure and the tenant agents' measures (``MESA_REPORTERS``: what ``mesa.batch_run`` reads).

    :param scenario_name: a shipped scenario's name, a TOML path or a :class:`marketsim.scenarios.loader.Scenario`
    :param policy: a policy of the scenario; ``None``: its first
    :param variant: a variant of the scenario, e.g. ``"truthful"`` or ``"lying"``
    :param seed: an int or ``SeedSequence``; ``None``: fresh OS entropy (not reproducible)
    :param rounds: the horizon in rounds; ``None``: the scenario's
    :param rng: a synonym of ``seed`` (how ``mesa.batch_run`` passes it); give one of the two
    :raises InputError: no scenario, both ``seed`` and ``rng``, or an unknown policy or variant
    """

    MESA_REPORTERS = True

    def __init__(
        self,
        scenario_name: Any = None,
        policy: str | None = None,
        variant: str = "truthful",
        seed: int | np.random.SeedSequence | None = None,
        rounds: int | None = None,
        *,
        rng: Any = None,
    ) -> None:
        config, model_rng, name = _from_scenario(scenario_name, policy, variant, seed, rng, rounds)
        super().__init__(config, rng=model_rng)
        #: the scenario's name
        self.scenario_name: str = name


def _from_scenario(
    scenario: Any, policy: str | None, variant: str, seed: Any, rng: Any, rounds: int | None
) -> tuple[ModelConfig, np.random.Generator, str]:
    """(config, model RNG, scenario name) of the keyword form (see :class:`ScenarioModel`)."""
    if scenario is None:
        raise InputError("ScenarioModel.scenario_name", None, "is required (a scenario name, TOML path or Scenario)")
    if rng is not None and seed is not None:
        raise InputError("ScenarioModel.rng", rng, "pass either seed= or rng=, not both")
    seed = rng if seed is None else seed
    if isinstance(seed, np.random.Generator) or not (
        seed is None or isinstance(seed, np.random.SeedSequence | int | np.integer)
    ):
        raise InputError("ScenarioModel.seed", seed, "must be an int or a numpy SeedSequence")
    scen = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    seed = np.random.SeedSequence() if seed is None else seed
    config, model_rng = scen.model_inputs(scen.policies[0] if policy is None else policy, variant, seed)
    if rounds is not None:
        config = dataclasses.replace(config, rounds=check_int("ScenarioModel.rounds", rounds, minimum=1))
    return config, model_rng, scen.name
