"""Tenant-level strategies in Astraea (market/astraea/market.py; their audit in market/astraea/audit.py):
pure report transforms, phantom jobs hiding quota, withholding, leaving the coalition, and the tenant audit
target (TRUE g_u)."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.astraea.audit import STRATEGIES, AstraeaTenantTarget, strategy_gains
from marketsim.market.astraea.market import AstraeaMarket, make_market, phantom_jobs, tenant_reports
from marketsim.market.auction.market import decisions_by_id, run_market
from marketsim.market.audit.search import AuditConfig, audit
from marketsim.market.errors import InputError

approx = lambda x: pytest.approx(x, rel=1e-9, abs=1e-9)  # noqa: E731


def toy(mode: str = "fixed", horizon: int = 16) -> AstraeaMarket:
    return make_market({"workload": "toy", "worker_count_mode": mode, "horizon": horizon}, np.random.default_rng(0))


def test_truthful_strategy_is_the_identity() -> None:
    m = make_market({"workload": "micro", "jobs": 7, "servers": 4, "tenants": 2}, np.random.default_rng(4))
    t = AstraeaTenantTarget(m)
    for u in t.agents():
        mine = [b for b in m.bids() if b.tenant == u]
        assert tenant_reports(m, u) == mine
        assert list(t.report(u, t.truthful_params(u))) == mine
        assert sorted(b.job_id for b in t.profile(u, mine)) == sorted(b.job_id for b in m.bids())
        # truthful g_u is the market's tenant revenue of the truthful run
        g = m.tenant_revenue(run_market(m, "astraea"), m.bids())[u]
        assert t.evaluate(u, tuple(mine)) == approx(g)


def test_transforms_touch_only_the_deviator() -> None:
    m = toy()
    rep = tenant_reports(m, 2, value_scale=2.0, size_scale=2.0, arrival_delay=1)
    assert {b.tenant for b in rep} == {2}
    truth = {b.job_id: b for b in m.bids()}
    for b in rep:
        tb = truth[b.job_id]
        assert b.spec.utility(5.0) == approx(2 * tb.spec.utility(5.0))
        assert b.spec.epochs == 2 * tb.spec.epochs and b.spec.arrival == approx(tb.spec.arrival + 1)


def test_withhold_drops_largest_jobs_first() -> None:
    m = toy()
    assert [b.spec.jid for b in tenant_reports(m, 2, withhold=1)] == ["j21"]  # j22 (work 60) withheld
    assert tenant_reports(m, 2, withhold="half") == tenant_reports(m, 2, withhold=1)
    with pytest.raises(InputError, match="withhold"):
        tenant_reports(m, 2, withhold=3)


def test_hiding_idle_quota_with_phantom_jobs() -> None:
    m = toy()
    ph = phantom_jobs(m, 2, 2)
    assert len(ph) == m.params.lam * 2  # batches 1, 2 fit in horizon 16 with λ = 2
    assert all(b.phantom and b.tenant == 2 and b.spec.chunks == 2 for b in ph)
    t = AstraeaTenantTarget(m)
    rep = tuple(tenant_reports(m, 2, hide_workers=2))
    prof = t.profile(2, rep)
    parts = m.tenant_parts(run_market(m, "astraea", prof), prof)
    # u2's whole quota is taken by phantoms in round 1 of batch 2: it shares nothing, earns no income,
    # and its real job j21 has to buy from the pool (pays 18); phantoms count 0 true value
    assert parts["income"].tolist() == [approx(18), approx(0)]
    assert parts["payments"].tolist() == [approx(0), approx(18)]
    assert parts["revenue"].tolist() == [approx(178), approx(64)]
    assert t.evaluate(2, rep) == approx(64)
    with pytest.raises(InputError, match="hide_workers"):
        tenant_reports(m, 2, hide_workers=5)


def test_inflating_values_gains_in_the_worked_example() -> None:
    """Finding (claim 14): pass-1 admission prices schedules at posted prices that pass-1 jobs never
    pay, so u2 inflating j21's value ×2 moves j21 to the earlier, priced slots 9–10 for free (+4 true
    value), raises the pool price j12 pays (16 → 24) and with it u2's Eq. (2) income (8 → 12)."""
    m = toy()
    t = AstraeaTenantTarget(m)
    gains = strategy_gains(t, 2)
    assert gains["truthful"]["g"] == approx(90)
    assert gains["inflate_values"]["gain"] == approx(8)
    rep = tuple(tenant_reports(m, 2, value_scale=2.0))
    decs = decisions_by_id(run_market(m, "astraea", t.profile(2, rep)))
    j21 = next(b for b in m.bids() if b.spec.jid == "j21")
    assert decs[j21.job_id].completion == 10 and decs[j21.job_id].payment == 0
    assert t.all_revenues(2, rep) == {1: approx(156), 2: approx(98)}


@pytest.mark.parametrize(("mode", "gain"), [("fixed", -4.0), ("elastic", 4.0)])
def test_leave_the_coalition_is_the_sharing_gap(mode: str, gain: float) -> None:
    m = toy(mode, 64)
    t = AstraeaTenantTarget(m)
    assert strategy_gains(t, 2)["leave_coalition"]["gain"] == approx(gain)
    row = {r["tenant"]: r for r in m.tenant_rows(run_market(m, "astraea"), m.bids())}[2]
    assert row["si_gap"] == approx(-gain)


def test_audit_finds_the_inflation_and_scopes_families() -> None:
    t = AstraeaTenantTarget(toy())
    r = audit(t, 2, config=AuditConfig(n_grid=3, n_joint=4, refine_starts=0))
    assert r.violated and r.in_scope_gain >= 8 - 1e-9
    assert "LEAVE" in r.families and not r.families["LEAVE"].in_scope
    assert not t.in_scope("UP_withhold") and t.in_scope("UP_value_scale") and t.in_scope("UP_hide_workers")
    assert set(STRATEGIES) >= {"truthful", "inflate_values", "hide_idle_quota", "withhold_jobs"}
    with pytest.raises(InputError, match="tenants"):
        AstraeaTenantTarget(toy(), tenants=[7])
    with pytest.raises(InputError, match="mechanism"):
        AstraeaTenantTarget(toy(), mechanism="vcg")
