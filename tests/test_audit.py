"""Audit layer: controls (detector power), hand-derivable OEF lies, metrics on the spec fixtures,
Monte Carlo tables and bad input."""

from __future__ import annotations

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.market.audit import (
    AuditConfig,
    FairShareTarget,
    SealedBidTarget,
    TenantTarget,
    agent_table,
    audit,
    audit_all,
    audit_instances,
    budget_balance_violation,
    contribution_violation,
    envy_violation,
    evaluate_misreport,
    fair_share_report,
    ir_violation,
    max_throughput,
    pe_violation,
    si_violation,
    summarize,
    wilson_interval,
)
from marketsim.market.audit.instances import random_instance
from marketsim.market.audit.target import BaseTarget, Dimension, check_params
from marketsim.market.errors import InputError
from marketsim.market.registry import get

# ---------------------------------------------------------------------------------------------
# controls: the detector has power, and finds nothing where nothing is to be found
# ---------------------------------------------------------------------------------------------


def test_first_price_shading_gain_matches_hand_calculation() -> None:
    # Bidder 1 (value 10) faces a fixed bid 6 from bidder 0; ties go to the lowest index, so
    # bidder 1 loses ties. Truthful: wins at 10, utility 0. Bidding b in (6, 10) wins and pays b:
    # utility 10 - b, supremum 4 (not attained: b = 6 loses the tie).
    t = SealedBidTarget(mechanism="first-price", values=[6.0, 10.0])
    r = audit(t, 1)
    assert r.truthful_utility == 0.0
    bid = r.witness["bid"]
    assert 6.0 < bid <= 6.0 + 1e-5
    assert r.best_gain == pytest.approx(10.0 - bid, abs=1e-12)
    assert 4.0 - 1e-5 <= r.best_gain < 4.0
    assert r.witness_family == "DOWN_bid" and r.violated
    # Grid only (no zoom, tails, boundary walk or refinement): the 12 points below the truth are
    # 10 i / 12; the best one above the competing 6 is 20/3, so the gain is exactly 10 - 20/3 = 10/3.
    g = audit(t, 1, config=AuditConfig(refine_starts=0, n_zoom=0, n_tail=0, edge_steps=0))
    assert g.best_gain == pytest.approx(10.0 / 3.0, abs=1e-12)
    # the boundary walk alone (bisection towards the jump at 6) gets within 0.01 of the supremum 4
    w = audit(t, 1, config=AuditConfig(refine_starts=0))
    assert 4.0 - 0.01 <= w.best_gain < 4.0
    # Over-bidding never helps in a first-price auction.
    assert g.families["UP_bid"].gain < 0


def test_vickrey_and_posted_price_are_truthful() -> None:
    for t in (
        SealedBidTarget(mechanism="second-price", values=[6.0, 10.0]),
        SealedBidTarget(mechanism="second-price", values=[3.0, 7.5, 7.5, 1.0], options={"reserve": 2.0}),
        SealedBidTarget(mechanism="posted-price", values=[6.0, 10.0, 7.0], options={"price": 7.0}),
    ):
        for r in audit_all(t):
            assert r.best_gain <= 1e-9, (t.name, r.agent, r.witness)
            assert r.points > 20


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.5, 20.0), min_size=2, max_size=4))
def test_vickrey_truthful_property(values: list[float]) -> None:
    t = SealedBidTarget(mechanism="second-price", values=values)
    cfg = AuditConfig(n_grid=6, refine_starts=1, refine_maxfev=20)
    for r in audit_all(t, config=cfg):
        assert r.best_gain <= 1e-9


def test_max_throughput_control_lie_found_by_hand() -> None:
    # LP (4): each type to the highest reported speedup (ties -> lowest index). W = [[1,2],[1,3]]:
    # truthful row 0 gets type 0 only (u = 1); reporting w^1 >= 3 (factor >= 1.5) also captures
    # type 1: true u = 1 + 2 = 3, gain exactly 2.
    W, m = [[1.0, 2.0], [1.0, 3.0]], [1, 1]
    for mech in (max_throughput, "max-throughput"):
        t = FairShareTarget(mech, W=W, m=m)
        r = audit(t, 0)
        assert r.truthful_utility == pytest.approx(1.0)
        assert r.best_gain == pytest.approx(2.0, abs=1e-9)
        fb = r.families["UP_1"]
        assert fb.gain == pytest.approx(2.0, abs=1e-9) and fb.params["1"] >= 1.5 - 1e-12
        assert fb.in_scope


def test_detector_power_over_random_instances() -> None:
    def make(rng: np.random.Generator) -> FairShareTarget:
        inst = random_instance(rng, n=(2, 4), k=(2, 3), m_max=4)
        return FairShareTarget(max_throughput, W=inst.W, m=inst.m, n_arbitrary=1)

    cfg = AuditConfig(n_grid=4, n_joint=6, refine_starts=1, refine_maxfev=10)
    df = audit_instances(make, 6, seed=3, config=cfg)
    s = summarize(df).set_index("family")
    assert s.loc["ANY", "violations"] >= 1
    assert 0 <= s.loc["ANY", "ci_low"] <= s.loc["ANY", "fraction"] <= s.loc["ANY", "ci_high"] <= 1
    assert set(df.columns) >= {"family", "instance", "deviator", "witness", "gain", "violated"}
    per_agent = agent_table(df)
    assert len(per_agent) == len(df.groupby(["instance", "deviator"]))
    assert per_agent["violated"].any() and (per_agent["gain"] >= 0).all()


# ---------------------------------------------------------------------------------------------
# OEF hand calculations (spec F12, F15)
# ---------------------------------------------------------------------------------------------


def _dense_family_max(t: FairShareTarget, agent: int, dim: str, factors: np.ndarray) -> float:
    return max(evaluate_misreport(t, agent, {dim: float(f)})[0] for f in factors)


def test_f12_coop_inflation_gain() -> None:
    t = FairShareTarget("oef-coop", W=[[1, 2], [1, 5]], m=[1, 1])
    gain_14, u_14 = evaluate_misreport(t, 0, {"1": 2.0})  # report <1, 4>
    assert u_14 == pytest.approx(7 / 4, abs=1e-7)
    assert gain_14 == pytest.approx(7 / 4 - 3 / 2, abs=1e-7)
    r = audit(t, 0)
    assert r.truthful_utility == pytest.approx(3 / 2, abs=1e-7)
    up = r.families["UP_1"].gain
    assert up >= 7 / 4 - 3 / 2
    # Exact optimum over UP_1 (report <1, a>, a in [2, 8]): for a <= 5 u1 keeps GPU_1 and the EF
    # row of u1 binds, u1 = 1 + 2 (a-1)/(2a) = 2 - 1/a; for a > 5 u1 looks faster than u2 on
    # GPU_2 relative to GPU_1, GPU_1 moves to u2 and u1 = 2 * 3/5 = 6/5. Maximum at a = 5 (factor
    # 5/2): u1 = 9/5, gain 3/10.
    assert evaluate_misreport(t, 0, {"1": 2.5})[0] == pytest.approx(0.3, abs=1e-7)
    assert evaluate_misreport(t, 0, {"1": 3.0})[1] == pytest.approx(6 / 5, abs=1e-7)
    dense = _dense_family_max(t, 0, "1", np.geomspace(1, 4, 801))
    assert 0.3 - 1e-3 <= dense <= 0.3 + 1e-7
    assert up == pytest.approx(0.3, abs=1e-6) and up <= 0.3 + 1e-7


def test_f15_coop_inflation_gain() -> None:
    t = FairShareTarget("oef-coop", W=[[1, 2], [1, 4]], m=[1, 1])
    _, u_13 = evaluate_misreport(t, 0, {"1": 1.5})  # report <1, 3>
    assert u_13 == pytest.approx(5 / 3, abs=1e-7)
    r = audit(t, 0)
    # u1 = 2 - 1/a for a <= 4 (maximum 7/4 at a = 4, factor 2); beyond, GPU_1 moves to u2.
    assert evaluate_misreport(t, 0, {"1": 2.0})[0] == pytest.approx(1 / 4, abs=1e-7)
    assert r.families["UP_1"].gain == pytest.approx(1 / 4, abs=1e-6)
    assert 1 / 4 - 1e-3 <= _dense_family_max(t, 0, "1", np.geomspace(1, 4, 401)) <= 1 / 4 + 1e-7


def test_weight_claims_and_scope() -> None:
    t = FairShareTarget("oef-noncoop", W=[[1, 2], [1, 5]], m=[1, 1], weight_claims=True)
    names = [d.name for d in t.dimensions(0)]
    assert names == ["1", "weight"]
    g, _ = evaluate_misreport(t, 0, {"weight": 2.0})
    assert g > 0  # claiming a larger weight pays under non-coop OEF
    assert not t.in_scope("UP_weight") and not t.in_scope("UP_all") and t.in_scope("UP_1")


def test_tenant_target_types_probes() -> None:
    tt = TenantTarget("oef-noncoop", tenants={"u1": {"a": [1, 2], "b": [1, 3]}, "u2": {"a": [1, 5]}}, m=[1, 1])
    # F17: tenant totals 90/37 each when truthful
    assert tt.evaluate("u1", tt.report("u1", {})) == pytest.approx(90 / 37, abs=1e-7)
    r = audit(tt, "u1", config=AuditConfig(n_grid=3, n_joint=4, refine_starts=0))
    assert "TYPES" in r.families and not r.families["TYPES"].in_scope
    labels = {p.label for p in tt.probes("u1", np.random.default_rng(0))}
    assert {"duplicate a", "duplicate b", "drop a", "drop b"} <= labels
    # a fake duplicate is valued at the best real job type (spec §2.2)
    dup = next(p for p in tt.probes("u1", np.random.default_rng(0)) if p.label == "duplicate b")
    out = tt.outcome("u1", dup.report)
    fake = out.X_class[("u1", "fake:dup-b")]
    assert tt.utility("u1", out) == pytest.approx(
        float(np.dot([1, 2], out.X_class[("u1", "a")]) + np.dot([1, 3], out.X_class[("u1", "b")]))
        + max(float(np.dot([1, 2], fake)), float(np.dot([1, 3], fake)))
    )


def test_audit_is_reproducible_and_counts() -> None:
    rng = np.random.default_rng(11)
    inst = random_instance(rng, n=4, k=3, m_max=4)
    t1 = FairShareTarget("oef-noncoop", W=inst.W, m=inst.m)
    t2 = FairShareTarget("oef-noncoop", W=inst.W, m=inst.m)
    cfg = AuditConfig(n_grid=4, n_joint=8, refine_starts=1, refine_maxfev=10)
    a, b = audit(t1, 1, config=cfg, rng=5), audit(t2, 1, config=cfg, rng=5)
    assert a.best_gain == b.best_gain and a.witness == b.witness
    assert a.evaluations > 0 and a.points >= a.evaluations
    d = a.to_dict()
    assert d["agent"] == 1 and "families" in d
    assert set(a.families) >= {"UP_1", "UP_2", "DOWN_1", "DOWN_2", "UP_all", "DOWN_all", "MIXED", "ARBITRARY"}


def test_audit_instances_executor_matches_serial() -> None:
    make = partial(_make_noncoop)
    cfg = AuditConfig(n_grid=3, n_joint=4, refine_starts=0)
    serial = audit_instances(make, 3, seed=7, deviators="random", config=cfg)
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as ex:
        par = audit_instances(make, 3, seed=7, deviators="random", config=cfg, executor=ex)
    assert serial[["instance", "deviator", "family", "gain"]].equals(par[["instance", "deviator", "family", "gain"]])


def _make_noncoop(rng: np.random.Generator) -> FairShareTarget:
    inst = random_instance(rng, n=(2, 3), k=2, m_max=3)
    return FairShareTarget("oef-noncoop", W=inst.W, m=inst.m, n_arbitrary=1)


def test_wilson_interval() -> None:
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.23659, abs=1e-5) and hi == pytest.approx(0.76341, abs=1e-5)
    assert wilson_interval(0, 0) == (0.0, 1.0)


# ---------------------------------------------------------------------------------------------
# metrics on the spec fixtures
# ---------------------------------------------------------------------------------------------
F1_W = np.array([[1.0, 2.0], [1.0, 3.0], [1.0, 4.0]])
M11 = np.array([1, 1])


def test_envy_fixtures_f3_f6() -> None:
    X_f1 = get("gandiva-fair").fn(F1_W, M11).X
    assert envy_violation(F1_W, X_f1) == pytest.approx(28 / 15 - 16 / 9, abs=1e-9)  # F3
    X_f5 = get("gavel").fn(F1_W, M11, caps=[1, 1, 1]).X
    assert envy_violation(F1_W, X_f5) == pytest.approx(21 / 11 - 20 / 11, abs=1e-7)  # F6
    X_f4 = get("oef-coop").fn(F1_W, M11).X
    assert envy_violation(F1_W, X_f4) <= 1e-9


def test_si_fixture_f10_and_quota() -> None:
    X9 = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    assert np.allclose(get("max-throughput").fn(F1_W, M11).X, X9)
    assert si_violation(F1_W, X9, M11) == pytest.approx(4 / 3)  # u2's threshold 4/3, gets 0
    assert envy_violation(F1_W, X9) == pytest.approx(3.0)  # u2 values u3's bundle at 3
    quota = np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 0.5]])
    assert si_violation(F1_W, X9, M11, quota=quota) == pytest.approx(1.5)


def test_pe_gap_fixture_f8() -> None:
    X5 = np.array([[10 / 11, 1 / 11], [1 / 11, 5 / 11], [0, 5 / 11]])
    assert pe_violation(F1_W, X5, M11) == pytest.approx(2 / 33, abs=1e-7)
    rep = fair_share_report(F1_W, X5, M11)
    assert rep["pe"] == pytest.approx(2 / 33, abs=1e-7) and rep["total"] == pytest.approx(48 / 11)


def test_ir_and_budget_balance() -> None:
    assert ir_violation([5.0, 0.0, 3.0], [4.0, 0.0, 3.5]) == pytest.approx(0.5)
    assert ir_violation([5.0, 0.0], [4.0, 0.0]) == 0.0
    assert ir_violation([0.0], [1.0]) == 1.0  # a rejected bidder charged 1
    assert budget_balance_violation([3.0, 2.0], [4.0, 0.5]) == pytest.approx(0.5)
    assert budget_balance_violation([3.0, 2.0], [4.0, 0.5], mode="weak") == 0.0
    assert budget_balance_violation([3.0, 2.0], [4.0, 2.0], mode="weak") == pytest.approx(1.0)
    with pytest.raises(InputError, match="mode"):
        budget_balance_violation([1.0], [1.0], mode="strict")


def test_contribution_proportionality() -> None:
    assert contribution_violation([1, 3, 0], [1, 3, 0]) == 0.0
    assert contribution_violation([1, 3, 0], [2, 2, 0]) == pytest.approx(1.0)
    rows_c = [[1, 1, 0], [0, 0, 0]]
    rows_g = [[2, 2, 0], [0, 0.5, 0]]  # second event: nobody contributed but someone is paid
    assert contribution_violation(rows_c, rows_g) == pytest.approx(0.5)
    assert contribution_violation([1, 3], [2, 2], relative=True) == pytest.approx(0.25)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_bad_input_names_field_and_value() -> None:
    with pytest.raises(InputError) as e:
        FairShareTarget("no-such-mechanism", W=[[1, 2]], m=[1, 1])
    assert e.value.field == "mechanism" and e.value.value == "no-such-mechanism"
    t = FairShareTarget("oef-noncoop", W=[[1, 2], [1, 3]], m=[1, 1])
    with pytest.raises(InputError) as e:
        audit(t, 0, dimensions=["7"])
    assert e.value.field == "dimension" and e.value.value == "7"
    with pytest.raises(InputError) as e:
        evaluate_misreport(t, 0, {"speed": 2.0})
    assert e.value.field == "dimension" and e.value.value == "speed"
    with pytest.raises(InputError) as e:
        evaluate_misreport(t, 0, {"1": math.nan})
    assert e.value.field == "params[1]" and math.isnan(e.value.value)
    with pytest.raises(InputError) as e:  # beyond the validator's limit max_speedup / W = 1e4 / 2
        check_params(t, 0, {"1": 1e5})
    assert e.value.field == "params[1]"
    assert check_params(t, 0, {"1": 100.0})["1"] == 100.0  # outside the search box, inside the limits
    with pytest.raises(InputError) as e:
        audit(t, 5)
    assert e.value.field == "agent" and e.value.value == 5
    with pytest.raises(InputError) as e:
        FairShareTarget("oef-noncoop", W=np.zeros((0, 2)), m=[1, 1])
    assert e.value.field == "W"
    with pytest.raises(InputError) as e:
        SealedBidTarget(mechanism="first-price", values=[])
    assert e.value.field == "bids"
    with pytest.raises(InputError) as e:
        SealedBidTarget(mechanism="dutch", values=[1.0])
    assert e.value.field == "mechanism" and e.value.value == "dutch"
    with pytest.raises(InputError) as e:
        TenantTarget("oef-noncoop", tenants={}, m=[1, 1])
    assert e.value.field == "tenants"
    with pytest.raises(InputError) as e:
        audit_instances(_make_noncoop, 0)
    assert e.value.field == "n_instances" and e.value.value == 0
    with pytest.raises(InputError) as e:
        Dimension("x", lower=0.0)
    assert e.value.field == "Dimension[x].lower"
    with pytest.raises(InputError) as e:
        AuditConfig(n_grid=-1)
    assert e.value.field == "AuditConfig.n_grid"


def test_fast_screen_agrees_with_registered_mechanism() -> None:
    rng = np.random.default_rng(21)
    for _ in range(3):
        inst = random_instance(rng, n=(3, 6), k=(2, 4), m_max=6)
        slow = FairShareTarget("oef-noncoop", W=inst.W, m=inst.m)
        fast = FairShareTarget("oef-noncoop", W=inst.W, m=inst.m, fast=True)
        assert fast.screening and not slow.screening
        # the screen solves the same LP: equal utilities at generic (non-degenerate) reports
        for _ in range(15):
            p = {d.name: float(np.exp(rng.uniform(np.log(0.25), np.log(4)))) for d in slow.dimensions(0)}
            assert fast.evaluate(0, fast.report(0, p)) == pytest.approx(slow.evaluate(0, slow.report(0, p)), abs=1e-7)
        cfg = AuditConfig(n_grid=4, n_joint=8, refine_starts=1, refine_maxfev=10)
        a, b = audit(slow, 0, config=cfg, rng=1), audit(fast, 0, config=cfg, rng=1)
        assert b.truthful_utility == pytest.approx(a.truthful_utility, abs=1e-9)
        # every number the fast audit reports was confirmed by the registered mechanism
        for fb in b.families.values():
            if fb.report is not None:
                assert fb.gain == pytest.approx(slow.evaluate(0, fb.report) - a.truthful_utility, abs=1e-9)
        # probes are never screened: identical probe family results
        assert b.families["ARBITRARY"].gain == pytest.approx(a.families["ARBITRARY"].gain, abs=1e-9)
    # weighted calls are screened in the direct weighted form; coop and weight claims are not
    wt = FairShareTarget("oef-noncoop", W=[[1, 2], [1, 3], [1, 5]], m=[2, 1], weights=[1, 2, 1.5], fast=True)
    ws = FairShareTarget("oef-noncoop", W=[[1, 2], [1, 3], [1, 5]], m=[2, 1], weights=[1, 2, 1.5])
    assert wt.screening
    for f in (0.5, 1.7, 3.0):
        assert wt.evaluate(1, wt.report(1, {"1": f})) == pytest.approx(ws.evaluate(1, ws.report(1, {"1": f})), abs=1e-7)
    assert not FairShareTarget("oef-noncoop", W=[[1, 2], [1, 3]], m=[1, 1], weight_claims=True, fast=True).screening
    assert not FairShareTarget("oef-coop", W=[[1, 2], [1, 3]], m=[1, 1], fast=True).screening


@dataclass
class _SlotPostedPrice(BaseTarget):
    """Toy online posted-price market with the adapter shape of OASiS / PD-ORS / Eris: slot prices
    are fixed before the bidder arrives (independent of its report). The bidder (true value
    ``value`` at arrival slot 0, decaying by 0.8 per slot of delay, one slot of work) reports a
    value scale (factor) and an arrival delay (integer slots, only delaying is possible). Admitted
    iff the reported value covers the price of its reported arrival slot; pays that price."""

    prices: tuple[float, ...] = (5.0, 2.0, 2.0, 2.0)
    value: float = 10.0

    def agents(self) -> list[int]:
        return [0]

    def dimensions(self, agent: object) -> list[Dimension]:
        return [
            Dimension("scale"),
            Dimension("delay", kind="value", lower=0.0, upper=3.0, truth=0.0, integer=True),
        ]

    def report(self, agent: object, params: dict) -> tuple[float, int]:
        return self.value * params.get("scale", 1.0), int(params.get("delay", 0))

    def outcome(self, agent: object, report: tuple[float, int]) -> tuple[bool, float, int]:
        bid, slot = report
        price = self.prices[slot]
        return (bid >= price, price if bid >= price else 0.0, slot)

    def utility(self, agent: object, outcome: tuple[bool, float, int]) -> float:
        admitted, pay, slot = outcome
        return (self.value * 0.8**slot if admitted else 0.0) - pay


def test_online_style_adapter_with_integer_arrival_dimension() -> None:
    t = _SlotPostedPrice(name="toy-online")
    r = audit(t, 0)
    # truthful: 10 - 5 = 5; delaying one slot: 10 * 0.8 - 2 = 6 (gain 1); two: 6.4 - 2; three: 5.12 - 2
    assert r.truthful_utility == pytest.approx(5.0)
    assert r.families["UP_delay"].gain == pytest.approx(1.0)
    assert r.families["UP_delay"].params["delay"] == 1.0
    assert "DOWN_delay" not in r.families  # an arrival cannot be reported early
    assert r.best_gain == pytest.approx(1.0)
    # the value-scale dimension alone cannot help against a posted price
    assert r.families["UP_scale"].gain <= 1e-12 and r.families["DOWN_scale"].gain <= 1e-12
