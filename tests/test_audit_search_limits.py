"""The audit reaches the best lie out to the validator's limits (issue #10).

Hand supremum on W = [[1,2],[1,5]], m = [1,1] (non-cooperative OEF): tenant 0 reporting its fast GPU
at speed e -> 0 gets all of type 0 plus b = 4/(5+e) -> 4/5 of type 1, true throughput 1 + 2*4/5 = 2.6
against 15/7 truthful: +16/75 = +21.33%, approached but never attained (any e > 0 is admissible).
"""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market import registry
from marketsim.market.audit.fairshare import FairShareTarget
from marketsim.market.audit.search import AuditConfig, audit
from marketsim.market.audit.target import BaseTarget, Dimension
from marketsim.market.oef.validate import validate_inputs

W2 = [[1.0, 2.0], [1.0, 5.0]]


def test_tenant0_reaches_the_hand_supremum_and_says_it_is_a_limit() -> None:
    t = FairShareTarget("oef-noncoop", W=W2, m=[1, 1])
    r = audit(t, 0)
    assert r.relative_gain == pytest.approx(16 / 75, abs=0.005)
    assert r.at_limit and r.witness_family == "DOWN_1"
    # the old factor box [0.25, 4] without tails and boundary walk stops near +17.5%
    old = audit(FairShareTarget("oef-noncoop", W=W2, m=[1, 1]), 0, config=AuditConfig(n_tail=0, edge_steps=0))
    assert old.relative_gain < 16 / 75 - 0.02


def _dense_best(t: FairShareTarget, agent: int) -> float:
    """Best relative gain on a dense log grid: 1200 points in the box, 150 on each tail."""
    (d,) = t.dimensions(agent)
    u0 = t.evaluate(agent, t.report(agent, {}))
    grid = np.r_[np.geomspace(d.limit_lower, d.lower, 150), np.geomspace(d.lower, d.upper, 1200),
                 np.geomspace(d.upper, d.limit_upper, 150)]  # fmt: skip
    return max(t.evaluate(agent, t.report(agent, {d.name: float(f)})) for f in grid) / u0 - 1.0


@pytest.mark.parametrize(
    "seed", [0, 1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)]
)
def test_audit_matches_a_dense_grid_on_small_instances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4))
    W = np.c_[np.ones(n), rng.uniform(1.05, 6.0, n)]
    m = rng.integers(1, 4, 2).astype(float)
    for mech in ("oef-noncoop", "gavel"):
        t = FairShareTarget(mech, W=W, m=m, n_arbitrary=0, copy_others=False, fast=True)
        for agent in range(n):
            best = max(0.0, _dense_best(t, agent))
            r = audit(t, agent)
            assert r.relative_gain >= best - 0.005, (mech, agent, r.relative_gain, best)


def test_no_proposed_report_leaves_what_the_validator_accepts() -> None:
    seen: list[np.ndarray] = []
    fn = registry.get("oef-noncoop", "fair-share").fn

    def checked(W, m, **kw):
        validate_inputs(W, m, weights=kw.get("weights"), caps=kw.get("caps"))  # raises on a bad report
        seen.append(np.asarray(W, dtype=float))
        return fn(W, m, **kw)

    t = FairShareTarget(checked, W=[[1, 2, 3], [1, 5, 6], [1, 1.5, 9]], m=[1, 2, 1])
    for agent in range(3):
        audit(t, agent)
    Wn = np.vstack(seen)
    assert Wn.min() >= 1e-4 * (1 - 1e-9) and Wn.max() <= 1e4 * (1 + 1e-9)
    assert Wn.min() < 0.01  # the tails really went far below the old box


class _Shading(BaseTarget):
    """A pay-your-bid bidder worth 1 facing a reserve ``r``: reporting ``s`` (a factor on its value)
    wins iff ``s >= r`` and pays ``s``; true surplus ``1 - s``. The hand supremum is ``1 - r``, at
    ``s -> r``. The value_scale dimension's hard limit is its search bound 0.1 (the default)."""

    def __init__(self, reserve: float) -> None:
        super().__init__(name="shading")
        self.reserve = reserve

    def agents(self) -> list[int]:
        return [0]

    def dimensions(self, agent: object) -> list[Dimension]:
        return [Dimension("value_scale", lower=0.1, upper=4.0),
                Dimension("delay", kind="value", lower=0, upper=3, truth=0, integer=True)]  # fmt: skip

    def report(self, agent: object, params: dict) -> float:
        return float(params.get("value_scale", 1.0))

    def outcome(self, agent: object, report: float) -> float:
        return report

    def utility(self, agent: object, outcome: float) -> float:
        return 1.0 - outcome if outcome >= self.reserve else 0.0


def test_at_limit_when_the_hard_limit_is_the_search_bound() -> None:
    # reserve 0.058 lies below the bound 0.1: the best searched lie is the bound itself, gain 0.9,
    # while the supremum 0.942 lies beyond it; the result must say so
    r = audit(_Shading(0.058), 0)
    assert r.witness["value_scale"] == pytest.approx(0.1) and r.best_gain == pytest.approx(0.9)
    assert r.at_limit and r.families["DOWN_value_scale"].at_limit
    # reserve 0.3 inside the box: the best lie is found inside, not at the limit (and the other
    # dimension, truthful at its own limit 0, does not count)
    inner = audit(_Shading(0.3), 0)
    assert inner.best_gain == pytest.approx(0.7, abs=1e-3) and inner.witness["value_scale"] > 0.29
    assert not inner.at_limit


def test_zero_truthful_utility_gives_a_null_relative_gain_with_a_note() -> None:
    import json

    from marketsim.analysis.frontends.audit_report import ZERO_TRUTHFUL_NOTE, agent_summary, format_relative_gain

    class _Zero(_Shading):
        def utility(self, agent: object, outcome: float) -> float:
            return max(0.0, 1.0 - outcome) if outcome < 1.0 else 0.0  # truthful surplus exactly 0

    r = audit(_Zero(0.0), 0)
    assert r.truthful_utility == 0.0 and r.best_gain > 0.5
    row = agent_summary(r)
    assert row["relative_gain"] is None and ZERO_TRUTHFUL_NOTE in row["notes"]
    assert '"relative_gain": null' in json.dumps(row) and "inf" not in json.dumps(row)
    assert format_relative_gain(row["relative_gain"]) == "n/a (truthful 0)"
    assert r.to_dict()["relative_gain"] is None
