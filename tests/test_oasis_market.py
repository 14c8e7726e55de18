"""OASiS behind the AuctionMarket adapter: misreports, true surplus, metrics, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from marketsim.market.auction.market import AuctionMarket, decisions_by_id, run_market
from marketsim.market.audit.online import OnlineAuctionTarget
from marketsim.market.errors import InputError
from marketsim.market.oasis import OasisCluster, OasisConstants, OasisJob
from marketsim.market.oasis.market import AUDIT_PARAMS, MECHANISMS, OasisMarket, make_market
from marketsim.market.utility import TabularUtility

TOL = 1e-9
SMALL = AUDIT_PARAMS


def _small(seed: int = 0) -> OasisMarket:
    return make_market(SMALL, np.random.default_rng(seed))


def _job(jid, a, E, N, M, tau, f):
    """R = 1 (cpu) job with grad_mb = 0, so rho' = tau and W = ceil(E·N·M·tau)."""
    return OasisJob(jid, a, E, N, M, tau, 0.0, 1.0, 1.0, np.array([1.0]), np.array([1.0]), f)


def _fo5_market() -> OasisMarket:
    """Spec fixture F-O5 as OasisJobs: A (W=3, d=2), B (W=2), C (W=1) on cpu 2 + cpu 2, T = 3."""
    cl = OasisCluster.build(3, [[2.0]], [[2.0]])
    jobs = [
        _job(0, 0, 2, 2, 1, 0.75, TabularUtility((10, 10, 10, 4))),
        _job(1, 1, 1, 2, 1, 1.0, TabularUtility((9, 9, 6))),
        _job(2, 2, 1, 1, 1, 1.0, TabularUtility((100.0,))),
    ]
    return OasisMarket(cl, jobs, OasisConstants.from_values(16, 1, 16, 1))


def test_protocol_and_mechanisms():
    m = _small()
    assert isinstance(m, AuctionMarket)
    assert m.mechanisms() == MECHANISMS == ("oasis", "fifo", "drf", "dorm", "rrh")
    for name in m.mechanisms():
        decs = run_market(m, name, seed=3)
        assert sorted(d.job_id for d in decs) == [b.job_id for b in m.bids()]
    info = m.agents_info()
    assert [a["kind"] for a in info] == ["gpu_server"] * 2 + ["ps_host"] * 2
    assert info[0]["capacity"]["gpu"] in (4.0, 8.0, 16.0) and info[2]["capacity"]["gpu"] == 0.0


def test_fo5_metrics_by_hand():
    m = _fo5_market()
    decs = run_market(m, "oasis")
    by = decisions_by_id(decs)
    assert by[0].payment == pytest.approx(6, abs=TOL) and by[0].completion == 1
    assert by[1].payment == pytest.approx(4, abs=TOL) and by[1].completion == 2
    assert not by[2].admitted
    met = m.metrics(decs, m.bids())
    # welfare f_A(2) + f_B(2) = 10 + 6; revenue 6 + 4; cpu-slots used: A 2+1 workers and 2+1 PSs, B 2 + 2
    assert met["welfare"] == pytest.approx(16, abs=TOL)
    assert met["revenue"] == pytest.approx(10, abs=TOL)
    assert met["utility"] == pytest.approx(6, abs=TOL)
    assert met["admission_rate"] == pytest.approx(2 / 3) and met["completion_rate"] == pytest.approx(2 / 3)
    assert met["utilisation"] == pytest.approx(10 / 12, abs=TOL) == met["utilisation_max"]
    assert met["mean_jct"] == pytest.approx(2.0) and met["unfinished"] == 1
    assert math.isnan(met["lateness_sensitive"])
    # surplus of the truthful winners: f - payment = the mechanism's payoff
    assert m.true_surplus(m.bids()[0], m.bids()[0], by[0]) == pytest.approx(4, abs=TOL)
    assert m.true_surplus(m.bids()[1], m.bids()[1], by[1]) == pytest.approx(2, abs=TOL)
    assert m.true_surplus(m.bids()[2], m.bids()[2], by[2]) == 0.0


def test_under_reported_epochs_do_not_finish():
    m = _fo5_market()
    A = m.bids()[0]
    lie = m.misreport(A, {"epochs": 1})
    assert lie.epochs == 1 and lie.to_request(m.cluster).work_units == 2
    t = OnlineAuctionTarget(m, "oasis")
    rep, dec = t.outcome(0, lie)
    assert dec.admitted and sum(dec.schedule.total_workers(s) for s in dec.schedule.slots) == 2
    # two worker-slots cannot finish the true 3: utility 0, the reservation is still paid
    assert m.true_surplus(A, lie, dec) == pytest.approx(-dec.payment, abs=TOL) and dec.payment > 0
    assert t.evaluate(0, lie) < t.evaluate(0, A)


def test_misreport_identity_and_each_dimension_changes_the_report():
    m = _small(1)
    for bid in m.bids():
        dims = m.dimensions(bid)
        names = [d.name for d in dims]
        for want in ("value_scale", "gamma2", "gamma3", "epochs", "worker_demand", "ps_demand", "arrival_delay"):
            assert want in names
        assert m.misreport(bid, {d.name: d.truth for d in dims}) is bid
        assert m.misreport(bid, {}) is bid
        for d in dims:
            v = d.upper if d.upper != d.truth else d.lower
            if v == d.truth:
                continue  # e.g. no room to delay at the last slot
            lie = m.misreport(bid, {d.name: v})
            assert repr(lie) != repr(bid), d.name
            assert lie.job_id == bid.job_id and lie.arrival >= bid.arrival


def test_misreport_fields():
    m = _small(2)
    bid = m.bids()[0]
    lie = m.misreport(bid, {"value_scale": 2.0, "worker_demand": 0.5, "ps_bw": 0.01, "arrival_delay": 0})
    assert lie.utility.gamma1 == pytest.approx(2 * bid.utility.gamma1)
    np.testing.assert_allclose(lie.worker_demand[:4], 0.5 * bid.worker_demand[:4])
    assert lie.worker_demand[4] == bid.worker_bw  # bandwidth entry untouched
    assert lie.ps_bw == bid.worker_bw == lie.ps_demand[4]  # B clipped up to b
    assert lie.arrival == bid.arrival
    assert m.misreport(bid, {"arrival_delay": 50}).arrival == m.T - 1
    with pytest.raises(InputError, match="dimension"):
        m.misreport(bid, {"priority": 2.0})
    with pytest.raises(InputError, match="value_scale"):
        m.misreport(bid, {"value_scale": float("nan")})


@pytest.mark.parametrize("name", MECHANISMS)
def test_truthful_winners_surplus_nonnegative(name):
    for seed in range(2):
        m = _small(seed)
        decs = decisions_by_id(run_market(m, name, seed=seed))
        for bid in m.bids():
            d = decs[bid.job_id]
            s = m.true_surplus(bid, bid, d)
            assert s >= -TOL
            if not d.admitted:
                assert d.payment == 0 and s == 0
            if name == "oasis" and d.admitted:
                assert s == pytest.approx(d.payoff, abs=1e-9 * max(1, d.utility))


def test_prices_fixed_before_the_auction():
    m = _small(3)
    c = m.constants
    t = OnlineAuctionTarget(m, "oasis")
    for bid in m.bids()[:2]:
        for params in ({"value_scale": 4.0}, {"epochs": bid.epochs * 4}, {"worker_demand": 0.25}):
            t.evaluate(bid.job_id, m.misreport(bid, params))
    assert m.constants is c and c.source == "calibration"
    mech = m.mechanism("oasis", np.random.default_rng(0))
    assert mech.constants is c


def test_determinism_same_seed():
    a, b = _small(5), _small(5)
    assert [repr(x) for x in a.bids()] == [repr(x) for x in b.bids()]
    for name in ("oasis", "fifo"):
        da = [d.to_json() for d in run_market(a, name, seed=1)]
        db = [d.to_json() for d in run_market(b, name, seed=1)]
        assert da == db


def test_oracle_constants_refuse_misreports():
    m = make_market({**SMALL, "constants": "oracle"}, np.random.default_rng(0))
    assert m.constants.source == "oracle"
    run_market(m, "oasis")
    with pytest.raises(InputError, match="constants"):
        m.dimensions(m.bids()[0])


@pytest.mark.parametrize(
    "params, field",
    [
        ({"jobz": 3}, "jobz"),
        ({"jobs": 0}, "jobs"),
        ({"T": 2.5}, "T"),
        ({"epochs_min": 5, "epochs_max": 4}, "epochs_max"),
        ({"gamma1_min": -1.0}, "gamma1_min"),
        ({"frac_critical": -0.1}, "frac_critical"),
        ({"constants": "magic"}, "constants"),
        ({"demand_scale": "big"}, "demand_scale"),
        ({"ul_scale": 0.0}, "ul_scale"),
    ],
)
def test_bad_params_name_the_key(params, field):
    with pytest.raises(InputError, match=field):
        make_market({**SMALL, **params}, np.random.default_rng(0))


def test_bad_rng_and_mechanism():
    with pytest.raises(InputError, match="rng"):
        make_market(SMALL, 0)
    with pytest.raises(InputError, match="mechanism"):
        _small().mechanism("pdors", np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------------
# the claims ledger (spec §7 C-O1..C-O6) through the CLI
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def oasis_ledger() -> list[dict]:
    import contextlib
    import io
    import json

    from marketsim.analysis.frontends.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["claims", "--paper", "oasis", "--json"]) == 0
    return json.loads(out.getvalue())


def test_every_oasis_claim_has_a_measured_verdict(oasis_ledger):
    from marketsim.market.audit.claims import VERDICTS

    ids = [c["claim_id"] for c in oasis_ledger]
    for prefix in ("C-O1", "C-O2", "C-O3", "C-O4", "C-O5", "C-O6"):
        assert any(i.startswith(prefix) for i in ids), prefix
    for c in oasis_ledger:
        assert c["paper"] == "oasis" and c["size"] == "small" and c["verdict"] in VERDICTS
        assert c["n_instances"] > 0, c["claim_id"]
        if c["verdict"] == "violated":
            assert c["witness"] is not None and c["violations"] > 0
    # the small ledger's size, as a deterministic count (its CPU and wall time are measured, with the
    # machine's load, by `python benchmarks/claims_ledger.py --paper oasis` into
    # benchmarks/results/claims/oasis.json, never asserted here: a timed test flakes under load)
    assert sum(c["n_instances"] for c in oasis_ledger) <= 250


def test_oasis_witnesses_reproduce(oasis_ledger):
    from marketsim.market.audit.claims import recheck_witness

    for c in oasis_ledger:
        if c["witness"] is not None:
            assert recheck_witness(c["witness"]), c["claim_id"]


def test_oasis_ledger_findings(oasis_ledger):
    """What we measured at small size (seed 0): Theorem 1, primal feasibility, the 2α ratio and the
    price properties hold; the dual-feasibility and weak-duality steps fail on coarse demands (the
    known instance of test_finding_weak_duality_fails_with_coarse_demands is in the set)."""
    v = {c["claim_id"]: c for c in oasis_ledger}
    for cid in ("C-O1", "C-O2", "C-O4", "C-O4-D0", "C-O5a", "C-O5c", "C-O6-IR", "C-O6-prices", "C-O6-monotone"):
        assert v[cid]["verdict"] == "holds", cid
    assert v["C-O2-dual"]["verdict"] == "violated"
    assert v["C-O4-weak-duality"]["verdict"] == "violated"
    assert v["C-O4-weak-duality"]["witness"]["spec"]["seed"] == 2004
    # the dual excess vanishes once per-unit demands are small against capacities
    fine = v["C-O2-dual"]["details"]["per_demand_ratio"]["demand/cap<=0.05"]
    assert fine["violations"] == 0


def test_subroutine_enumeration_matches_on_fixed_cases():
    from marketsim.market.oasis.claims import subroutine_error

    assert max(subroutine_error(s) for s in range(25)) <= 1e-9


# ---------------------------------------------------------------------------------------------------
# the reproduction study (market/oasis/studies/oasis.toml) and the Mesa model
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["oasis", "oasis_paper"])
def test_oasis_study_loads_and_its_audit_instance_is_the_small_one(name):
    from marketsim.analysis.engine.studies import load_study

    s = load_study(name)
    assert s.paper == "oasis" and s.mechanisms == MECHANISMS
    assert {p.x for p in s.panels} == {"jobs", "ul_scale"} and s.notes
    assert s.audit_params() == {**s.base, **AUDIT_PARAMS}
    assert make_market(s.audit_params(), np.random.default_rng(0)).T == AUDIT_PARAMS["T"]
    for pi, panel in enumerate(s.panels):  # every swept value is a valid instance
        for x in panel.values:
            make_market({**s.params(pi, x), "jobs": 2, "n_calib": 5}, np.random.default_rng(0))


def test_mesa_model_runs_oasis_like_the_plain_replay():
    from marketsim.agents.auction import AuctionModel, BidStrategy

    m = _small(4)
    model = AuctionModel(m, "oasis", {1: BidStrategy({"arrival_delay": 1}, "late")}, rng=0).run()
    assert [r.kind for r in model.resources] == ["gpu_server"] * 2 + ["ps_host"] * 2
    reports = [model.bidders[i].report for i in sorted(model.bidders)]
    assert reports[1].arrival == min(m.bids()[1].arrival + 1, m.T - 1)
    plain = decisions_by_id(run_market(m, "oasis", reports))
    for i, bidder in model.bidders.items():
        assert bidder.decision.to_dict() == plain[i].to_dict()
        assert bidder.surplus == m.true_surplus(bidder.bid, bidder.report, plain[i])
    s = model.summary()
    assert s["welfare"] == pytest.approx(m.metrics(list(plain.values()), reports)["welfare"])


def test_audit_has_power_on_the_same_market():
    """Control for the truthfulness audit: under FIFO (fixed bundles capped at the reported chunk
    count; a bundle that cannot fit the empty cluster is dropped) bidder 0 of this instance (4 GPUs
    per worker on 4-GPU hosts, W = 2) gains by reporting 2 chunks instead of 4: its bundle now fits
    and 2 workers x 1 slot finish the true work; under OASiS the same lie gains nothing."""
    m = _small(0)
    bid = m.bids()[0]
    assert (bid.chunks, m.true_request(0).work_units, bid.worker_demand[0]) == (4, 2, 4.0)
    lie = m.misreport(bid, {"chunks": 2})
    fifo = OnlineAuctionTarget(m, "fifo")
    assert fifo.evaluate(0, bid) == 0.0
    assert fifo.evaluate(0, lie) == pytest.approx(bid.utility(1), rel=1e-12)  # done in its arrival slot
    oasis = OnlineAuctionTarget(m, "oasis")
    assert oasis.evaluate(0, lie) <= oasis.evaluate(0, bid)


@pytest.mark.slow
@pytest.mark.heavy  # the paper-size ledger: run with -m heavy (outside the 30-minute CI budget)
def test_oasis_ledger_large():
    """Large size (every demand/capacity level down to 1/100, 12 markets, full audits): minutes."""
    from marketsim.market.audit.claims import VERDICTS, recheck_witness, run_claims

    res = {r.claim_id: r for r in run_claims("oasis", size="large", seed=1)}
    for r in res.values():
        assert r.verdict in VERDICTS and r.n_instances > 0
        if r.witness is not None:
            assert recheck_witness(r.witness), r.claim_id
    assert res["C-O1"].verdict == res["C-O2"].verdict == res["C-O4"].verdict == "holds"
    assert res["C-O6-truthful"].verdict == "holds"
