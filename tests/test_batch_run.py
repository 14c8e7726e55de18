"""The Mesa model from plain keyword arguments (marketsim.scenarios.model.ScenarioModel, a MarketModel), driven by
``mesa.batch_run`` (issue #27 item 4)."""

from __future__ import annotations

import mesa
import numpy as np
import pandas as pd
import pytest

from marketsim.agents.model import MarketModel
from marketsim.market.errors import InputError
from marketsim.scenarios.loader import load_scenario
from marketsim.scenarios.model import ScenarioModel

POLICIES = ["oef-noncoop", "gavel"]


def _batch() -> pd.DataFrame:
    rows = mesa.batch_run(
        ScenarioModel,
        parameters={"scenario_name": "default", "policy": POLICIES, "variant": "truthful", "rounds": 5},
        rng=[1, 2],  # Mesa passes each as ``seed=`` (``iterations=`` is deprecated and unseeded)
        max_steps=3,
        number_processes=1,
        data_collection_period=1,
        display_progress=False,
    )
    return pd.DataFrame(rows)


def test_batch_run_drives_the_keyword_form_and_is_deterministic() -> None:
    df = _batch()
    tenants = len(load_scenario("default").instantiate("gavel", "truthful", np.random.default_rng(0)).tenants)
    # 2 policies x 2 seeds x 3 steps, one row per tenant (Mesa adds the agent-type reporters)
    assert len(df) == 2 * 2 * 3 * tenants
    assert set(df["seed"]) == {1, 2} and set(df["policy"]) == set(POLICIES)
    assert sorted(df["Step"].unique()) == [1, 2, 3]
    for (policy, seed), g in df.groupby(["policy", "seed"]):
        # the same numbers as the config route (Scenario.build_model) with the same seed
        ref = load_scenario("default").build_model(policy, "truthful", seed).run(3).tidy()
        util = ref[ref["measure"] == "utilisation"]["value"].to_numpy()
        got = g.drop_duplicates("Step").sort_values("Step")["utilisation"].to_numpy()
        np.testing.assert_array_equal(got, util)
        est = ref[(ref["measure"] == "est") & (ref["tenant"] != "")].sort_values(["round", "tenant"])
        got_est = g.sort_values(["Step", "tenant"])["est"].to_numpy()
        np.testing.assert_array_equal(got_est, est["value"].to_numpy())
    pd.testing.assert_frame_equal(df, _batch())  # same seeds, same rows
    a = df[(df["seed"] == 1) & (df["policy"] == "gavel")]["total_act"].to_numpy()
    b = df[(df["seed"] == 2) & (df["policy"] == "gavel")]["total_act"].to_numpy()
    assert not np.array_equal(a, b)  # the seed reaches the workload


def test_keyword_form_equals_the_config_form() -> None:
    kw = ScenarioModel(scenario_name="default", policy="oef-noncoop", variant="truthful", seed=7, rounds=4).run()
    ref = load_scenario("default").build_model("oef-noncoop", "truthful", 7)
    ref.run(4)
    assert kw.scenario_name == "default" and kw.config.rounds == 4 and kw.steps == 4
    pd.testing.assert_frame_equal(kw.tidy(), ref.tidy())
    first = ScenarioModel(scenario_name="default", seed=7, rounds=2)
    assert first.config.policy == load_scenario("default").policies[0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scenario_name": "no-such-scenario"}, "no-such-scenario"),
        ({"scenario_name": "default", "policy": "nope"}, "policy"),
        ({"scenario_name": "default", "variant": "nope"}, "variant"),
        ({"scenario_name": "default", "rounds": 0}, "ScenarioModel.rounds"),
        ({"scenario_name": "default", "seed": 1, "rng": 2}, "ScenarioModel.rng"),
        ({"scenario_name": "default", "seed": 1.5}, "ScenarioModel.seed"),
        ({}, "ScenarioModel.scenario_name"),
    ],
)
def test_keyword_form_rejects_bad_arguments(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError, match=field):
        ScenarioModel(**kwargs)


def test_the_keyword_form_is_a_market_model() -> None:
    """ScenarioModel adds only the keyword constructor: everything else is MarketModel's."""
    m = ScenarioModel(scenario_name="default", seed=3, rounds=2)
    assert isinstance(m, MarketModel) and type(m).__mro__[1] is MarketModel
    assert [k for k, v in vars(ScenarioModel).items() if callable(v)] == ["__init__"]
