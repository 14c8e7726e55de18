"""Learning tenants inside the Mesa MarketModel (agents/strategies.py HedgeLearner): each round a
tenant samples its report from Hedge weights fed with TRUE counterfactual throughputs. (8 jobs per
tenant: the learner's runnable workers exceed any share it can get, so no report wins it GPUs it
could not use; the engine values an allocation at what the tenant's jobs can run.)"""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
import pytest

from marketsim.agents.strategies import HedgeLearner
from marketsim.market.audit.fairshare import resolve_fair_share
from marketsim.market.errors import InputError
from marketsim.scenarios.loader import parse_scenario

TOML = """
name = "learners"
policies = ["oef-noncoop", "maxmin"]
rounds = 40
replications = 1
seed = 3
[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]
[workload]
tenants = 2
jobs_per_tenant = 8
backlogged = true
[[tenant]]
index = 0
job_types = ["VGG"]
[[tenant]]
index = 1
job_types = ["LSTM"]
[[variant]]
name = "hedge"
tenant = 0
strategy = "hedge"
points = 5
low = 0.5
high = 2.0
eta = 2.0
"""


@pytest.fixture(scope="module")
def scenario():
    return parse_scenario(tomllib.loads(TOML), "learners")


def _run(scenario, policy: str, variant: str):
    return scenario.build_model(policy, variant, 11).run()


def test_hedge_tenant_learns_the_best_response_to_the_others(scenario) -> None:
    """Under non-cooperative OEF the VGG tenant (low speedups) facing an LSTM tenant learns to
    shade its fast-GPU speedups: its weights concentrate on the report that is best against the
    other's report, re-derived here with a fresh allocator call per grid vector, and its TRUE
    estimated throughput in the last rounds beats what truth earns in the paired run."""
    model = _run(scenario, "oef-noncoop", "hedge")
    ten = next(a for a in model.agents if getattr(a, "learning", False))
    log = pd.DataFrame(ten.learning_log)
    assert len(log) >= 30 and set(log["job_type"]) == {"*"}  # one weight vector for all its jobs
    (jt,) = ten.true_speedups
    w = ten.learning_weights()
    assert w is not None and w.max() > 0.9
    grid = HedgeLearner(5, 0.5, 2.0, 2.0).grid(3)
    best = int(np.argmax(w))
    assert (grid[best] < 1.0).all()  # shading
    # independent best response against the other tenant's (truthful) report
    _, fn = resolve_fair_share("oef-noncoop")
    other = next(a for a in model.agents if hasattr(a, "true_speedups") and a is not ten)
    tw = ten.true_speedups[jt] / ten.true_speedups[jt][0]
    ow = next(iter(other.true_speedups.values()))
    utils = []
    for f in grid:
        W = np.vstack([tw * np.r_[1.0, f], ow / ow[0]])
        utils.append(float(tw @ np.asarray(fn(W, np.array([4.0, 4.0, 4.0])).X)[0]))
    assert int(np.argmax(utils)) == best
    truthful = _run(scenario, "oef-noncoop", "truthful").tidy()
    lying = model.tidy()
    tid = ten.tenant_id

    def late(frame):
        s = frame[(frame["tenant"] == tid) & (frame["measure"] == "est") & (frame["round"] >= 20)]
        return s["value"].mean()

    assert late(lying) > late(truthful) * 1.05


def test_counterfactual_scores_match_the_allocator(scenario) -> None:
    """The utility logged for the played strategy equals the learner's TRUE share of a fresh
    allocator call on the round's reported matrix (so the feedback is not the reported value)."""
    model = scenario.build_model("oef-noncoop", "hedge", 11)
    _, fn = resolve_fair_share("oef-noncoop")
    for _ in range(5):
        model.step()
        auc = model.auctioneer
        classes = auc.classes
        ten = next(a for a in model.agents if getattr(a, "learning", False))
        i = next(j for j, c in enumerate(classes) if c[0] == ten.tenant_id)
        W = np.array([model._tenants[u].report(jt) for u, jt in classes])
        X = np.asarray(auc.allocation.X)
        tw = ten.true_speedups[classes[i][1]]
        rec = ten.learning_log[-1]
        assert rec["utility"] == pytest.approx(float(tw / tw[0] @ X[i]), rel=1e-6) or rec["round"] == 0
        assert W.shape == X.shape


def test_maxmin_gives_the_learner_nothing_to_learn(scenario) -> None:
    """Max-min on this instance: every report earns the learner the same TRUE throughput, so the
    played utility never moves from the truthful one."""
    model = _run(scenario, "maxmin", "hedge")
    ten = next(a for a in model.agents if getattr(a, "learning", False))
    log = pd.DataFrame(ten.learning_log)
    assert np.allclose(log["utility"], log["utility"].iloc[0], rtol=1e-9)


def test_bad_hedge_parameters_name_the_field() -> None:
    with pytest.raises(InputError, match="low"):
        HedgeLearner(low=1.5)
    bad = TOML.replace("eta = 2.0", "eta = -1.0")
    with pytest.raises(InputError, match="eta"):
        parse_scenario(tomllib.loads(bad), "x")
