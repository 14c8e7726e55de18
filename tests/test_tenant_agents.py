"""Mesa tenant agents (Astraea): quotas, tenant-level strategies in the ABM, consistency with the
tenant audit, and tenant variants in a study."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.agents.auction import AuctionModel, BidStrategy
from marketsim.analysis.engine.studies import parse_study, run_study
from marketsim.market.astraea.audit import AstraeaTenantTarget
from marketsim.market.astraea.market import make_market
from marketsim.market.auction.controls import make_market as control_market
from marketsim.market.errors import InputError

STRATEGIES = [
    {"value_scale": 2.0},
    {"value_scale": 0.5},
    {"size_scale": 0.75},
    {"arrival_delay": 2},
    {"hide_workers": 1},
    {"withhold": 1},
]


@pytest.fixture(scope="module")
def toy():
    return make_market({"workload": "toy"}, np.random.default_rng(0))


def test_tenant_agents_own_their_bidders_and_quota(toy):
    model = AuctionModel(toy, "astraea", rng=0).run()
    assert set(model.tenants) == {t["tenant"] for t in toy.tenants()}
    for uid, t in model.tenants.items():
        assert t.info["quota_workers"] == next(x.quota_workers for x in toy.cluster.tenants if x.uid == uid)
        assert {b.job_id for b in t.bidders} == {b.job_id for b in toy.bids() if b.tenant == uid}
    rows = {
        r["tenant"]: r for r in toy.tenant_rows(model.auctioneer.decisions, [b.report for b in model.bidders.values()])
    }
    for uid, t in model.tenants.items():
        assert t.revenue == pytest.approx(rows[uid]["revenue"], abs=1e-12)


@pytest.mark.parametrize("params", STRATEGIES, ids=lambda p: next(iter(p)))
@pytest.mark.parametrize("tenant", [1, 2])
def test_abm_tenant_strategy_matches_the_tenant_audit(toy, tenant, params):
    """The ABM's lying tenant earns exactly what the tenant audit target measures for the same
    strategy (two independent paths: Mesa slot-by-slot reports vs a direct replay)."""
    model = AuctionModel(toy, "astraea", tenant_strategies={tenant: BidStrategy(params, "s")}, rng=0).run()
    target = AstraeaTenantTarget(toy, "astraea")
    expected = target.evaluate(tenant, target.report(tenant, params))
    assert model.tenants[tenant].revenue == pytest.approx(expected, abs=1e-9)
    assert model.summary()["lying_tenant_revenue"] == pytest.approx(expected, abs=1e-9)


def test_withheld_and_phantom_jobs(toy):
    hide = AuctionModel(toy, "astraea", tenant_strategies={1: BidStrategy({"hide_workers": 1}, "hide")}, rng=0)
    phantoms = [b for b in hide.bidders.values() if b.bid.phantom]
    assert phantoms and all(b in hide.tenants[1].bidders for b in phantoms)
    hide.run()
    assert all(b.surplus <= 0 for b in phantoms)  # invented jobs have no true value
    hold = AuctionModel(toy, "astraea", tenant_strategies={2: BidStrategy({"withhold": 1}, "hold")}, rng=0).run()
    withheld = [b for b in hold.tenants[2].bidders if b.report is None]
    assert len(withheld) == 1 and withheld[0].decision is None and withheld[0].surplus == 0.0
    frame = hold.bidder_frame()
    assert frame["reported_arrival"].isna().sum() == 1


def test_tenant_strategy_errors(toy):
    with pytest.raises(InputError, match="tenant_strategies"):
        AuctionModel(toy, "astraea", tenant_strategies={9: BidStrategy({"withhold": 1})})
    with pytest.raises(InputError, match="tenant strategy parameter"):
        AuctionModel(toy, "astraea", tenant_strategies={1: BidStrategy({"quota": 1.0})})
    with pytest.raises(InputError, match="has no tenants"):
        AuctionModel(
            control_market({}, np.random.default_rng(0)), "fixed-price", tenant_strategies={0: BidStrategy({})}
        )


def test_study_tenant_variant_paired_gain():
    doc = {
        "kind": "study",
        "paper": "astraea",
        "mechanisms": ["astraea"],
        "replications": 1,
        "base": {"workload": "toy"},
        "panel": [{"x": "lam", "values": [1]}],
        "variant": [{"name": "hide", "params": {"hide_workers": 1}, "tenants": [1]}],
    }
    res = run_study(parse_study(doc, "t"), progress=False)
    assert not res.errors, res.errors
    row = res.frame[res.frame["variant"] == "hide"].iloc[0]
    model = AuctionModel(make_market({"workload": "toy", "lam": 1}, np.random.default_rng(0)), "astraea", rng=0).run()
    target = AstraeaTenantTarget(make_market({"workload": "toy", "lam": 1}, np.random.default_rng(0)))
    gain = target.evaluate(1, target.report(1, {"hide_workers": 1})) - model.tenants[1].revenue
    assert row["liar_gain"] == pytest.approx(gain, abs=1e-9)
    bad = {**doc, "variant": [{"name": "v", "params": {"withhold": 1}, "tenants": [1], "bidders": [0]}]}
    with pytest.raises(InputError, match="exactly one of"):
        parse_study(bad, "t")
