"""Astraea behind the AuctionMarket adapter (market/astraea/market.py): the worked example through
the online interface, misreport identity, consequence model, income = payments, own quota free,
metrics and tenant rows, Philly trace workload, input errors, and the generic per-job audit."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from marketsim.market.astraea import run_astraea, tenant_revenue
from marketsim.market.astraea.market import AstraeaMarket, make_bid, make_market
from marketsim.market.auction.market import AuctionMarket, decisions_by_id, run_market
from marketsim.market.audit.online import OnlineAuctionTarget
from marketsim.market.audit.search import AuditConfig, audit
from marketsim.market.errors import InputError

approx = lambda x: pytest.approx(x, rel=1e-9, abs=1e-9)  # noqa: E731


def toy(mode: str = "fixed", horizon: int = 16) -> AstraeaMarket:
    return make_market({"workload": "toy", "worker_count_mode": mode, "horizon": horizon}, np.random.default_rng(0))


def micro(seed: int, **kw: object) -> AstraeaMarket:
    return make_market({"workload": "micro", "jobs": 6, "servers": 4, "tenants": 3, **kw}, np.random.default_rng(seed))


def test_protocol_and_mechanisms_run_through_online_interface() -> None:
    m = micro(3)
    assert isinstance(m, AuctionMarket)
    ids = sorted(b.job_id for b in m.bids())
    for name in m.mechanisms():
        decs = run_market(m, name)
        assert sorted(d.job_id for d in decs) == ids, name  # every bid decided exactly once
        for d in decs:
            if d.schedule is not None:
                assert d.schedule.job_id == d.job_id


@pytest.mark.parametrize(
    ("mode", "g", "pay", "inc"),
    [("fixed", [160, 90], [16, 0], [8, 8]), ("elastic", [168, 82], [0, 0], [0, 0])],
)
def test_worked_example_f8_f9_through_the_adapter(mode: str, g: list, pay: list, inc: list) -> None:
    m = toy(mode)
    decs = run_market(m, "astraea")
    parts = m.tenant_parts(decs, m.bids())
    assert parts["revenue"].tolist() == [approx(x) for x in g]
    assert parts["payments"].tolist() == [approx(x) for x in pay]
    assert parts["income"].tolist() == [approx(x) for x in inc]
    assert m.metrics(decs, m.bids())["welfare"] == approx(250)
    # the same as the one-shot driver on the same θ
    direct = [t.total for t in tenant_revenue(run_astraea(m.cluster, m.jobs, m.params))]
    assert parts["revenue"].tolist() == [approx(x) for x in direct]


def test_toy_rows_alpha_and_sharing_gap() -> None:
    m = toy("fixed", 64)
    rows = {r["tenant"]: r for r in m.tenant_rows(run_market(m, "astraea"), m.bids())}
    # F8: α = (1.28, 0.72); exclusive partitions give u1 160 and u2 86 (sharing incentive holds)
    assert rows[1]["alpha"] == approx(1.28) and rows[2]["alpha"] == approx(0.72)
    assert rows[1]["si_gap"] == approx(0) and rows[2]["si_gap"] == approx(4)
    assert rows[1]["payments"] == approx(16) and rows[2]["payments"] == 0
    # the elastic reading breaks it for u2 (the strict-xfail finding of test_astraea_baselines)
    me = toy("elastic", 64)
    met = me.metrics(run_market(me, "astraea"), me.bids())
    assert met["si_gap"] == approx(-4) and met["si_fraction"] == 0.5


def test_misreport_identity_and_dimensions() -> None:
    m = micro(5)
    for b in m.bids():
        assert m.misreport(b, {}) is b
        assert m.misreport(b, {d.name: d.truth for d in m.dimensions(b)}) is b
        up = m.misreport(b, {"value_scale": 2.0})
        assert up.job_id == b.job_id and up.spec.utility(3.0) == approx(2 * b.spec.utility(3.0))
        late = m.misreport(b, {"arrival_delay": 2})
        assert late.spec.arrival == approx(b.spec.arrival + 2) and late.arrival == math.ceil(late.spec.arrival)
        big = m.misreport(b, {"size_scale": 2.0})
        assert big.spec.epochs == 2 * b.spec.epochs
    with pytest.raises(InputError, match="misreport parameter"):
        m.misreport(m.bids()[0], {"quota": 2.0})


def test_underreported_size_is_not_completed_and_still_pays() -> None:
    m = toy("fixed")
    bids = {b.spec.jid: b for b in m.bids()}
    j12 = bids["j12"]  # pass-2 job of u1, pays 16 truthfully
    lie = m.misreport(j12, {"size_scale": 0.5})  # E = 1: reserves half the slots it needs
    reports = [lie if b.job_id == j12.job_id else b for b in m.bids()]
    d = decisions_by_id(run_market(m, "astraea", reports))[j12.job_id]
    assert d.admitted and m.true_completion(j12, lie, d) is None
    assert m.true_surplus(j12, lie, d) == approx(-d.payment)
    truth = decisions_by_id(run_market(m, "astraea"))[j12.job_id]
    assert m.true_surplus(j12, j12, truth) == approx(82 - 16)


@pytest.mark.parametrize("seed", range(6))
def test_income_sums_to_payments_and_own_quota_is_free(seed: int) -> None:
    m = micro(seed, jobs=7)
    decs = run_market(m, "astraea")
    met = m.metrics(decs, m.bids())
    parts = m.tenant_parts(decs, m.bids())
    assert abs(met["budget_residual"]) <= 1e-9 * max(1.0, met["revenue"])
    assert math.fsum(parts["income"].tolist()) == pytest.approx(math.fsum(parts["payments"].tolist()), abs=1e-9)
    # Σ g_u = R (self-income included)
    assert math.fsum(parts["revenue"].tolist()) == pytest.approx(met["welfare"], abs=1e-9)
    for d in decs:
        if d.admitted and d.log["pass"] == 1:
            assert d.payment == 0.0  # inside the owner's quota: free
        if d.admitted and d.log["pass"] == 2:
            assert math.fsum(d.log["income"]) == pytest.approx(d.payment, abs=1e-9)


def test_metrics_keys_and_determinism() -> None:
    a = make_market({"jobs": 25, "servers": 8, "tenants": 3}, np.random.default_rng(11))
    b = make_market({"jobs": 25, "servers": 8, "tenants": 3}, np.random.default_rng(11))
    for name in ("astraea", "hived"):
        ma = a.metrics(run_market(a, name), a.bids())
        mb = b.metrics(run_market(b, name), b.bids())
        assert ma.keys() == mb.keys()
        assert all(ma[k] == mb[k] or (math.isnan(ma[k]) and math.isnan(mb[k])) for k in ma)
    for k in ("welfare", "revenue", "utility", "admission_rate", "utilisation", "mean_jct", "makespan"):
        assert k in ma
    assert 0.0 <= ma["utilisation"] <= 1.0


def _philly() -> str:
    for base in (Path(__file__).resolve().parents[2] / "shared" / "data", Path("/work/shared/data")):
        if (base / "philly_sample.csv").is_file():
            return str(base / "philly_sample.csv")
    pytest.skip("philly_sample.csv (shared data) is not available")


def test_philly_trace_workload() -> None:
    path = _philly()
    m = make_market({"trace": path, "jobs": 30, "servers": 10, "tenants": 3}, np.random.default_rng(0))
    assert len(m.bids()) == 30 and len(m.cluster.tenants) == 3 and m.info.source == "philly"
    assert all(j.gpu_request is not None for j in m.jobs)
    gpus = make_market(
        {"trace": path, "jobs": 30, "servers": 10, "tenants": 3, "worker_cap_source": "trace_gpus"},
        np.random.default_rng(0),
    )
    assert gpus.params.worker_cap_source == "trace_gpus"
    assert run_market(gpus, "astraea")


def test_bad_parameters_name_the_key() -> None:
    rng = np.random.default_rng(0)
    for params, key in [
        ({"job": 5}, "job"),
        ({"workload": "tiny"}, "workload"),
        ({"jobs": 0}, "jobs"),
        ({"theta": 0.5}, "theta"),
        ({"utility": "mixed"}, "utility"),
        ({"revenue_time_origin": "round_start"}, "revenue_time_origin"),
        ({"trace": "/nonexistent/philly.csv"}, "trace file"),
        ({"workload": "micro", "servers": 2, "tenants": 3}, "servers"),
        ({"horizon": 2}, "horizon_T"),
        ({"workload": "micro", "m_scale": 0.5}, "m_scale"),
        ({"m_scale": 0}, "m_scale"),
    ]:
        with pytest.raises(InputError, match=key):
            make_market(params, rng)
    with pytest.raises(InputError, match="rng"):
        make_market({}, 0)  # type: ignore[arg-type]


def test_per_job_audit_with_generic_target() -> None:
    m = toy("fixed")
    j12 = next(b for b in m.bids() if b.spec.jid == "j12")
    t = OnlineAuctionTarget(m, "astraea", bidders=[j12.job_id])
    r = audit(t, j12.job_id, config=AuditConfig(n_grid=3, n_joint=4, refine_starts=0, probes=False))
    assert r.truthful_utility == approx(82 - 16)
    assert r.best_gain >= 0 and r.evaluations > 0
    # value deflation by 4 keeps j12 admitted here? its reported μ = 76 / 4 > 0 (same schedule, same cost)
    assert t.evaluate(j12.job_id, m.misreport(j12, {"value_scale": 0.25})) <= r.truthful_utility + r.best_gain


def test_m_scale_shortens_jobs() -> None:
    a = make_market({"jobs": 10, "servers": 6, "tenants": 2}, np.random.default_rng(2))
    b = make_market({"jobs": 10, "servers": 6, "tenants": 2, "m_scale": 0.1}, np.random.default_rng(2))
    assert [j.m_hours * 0.1 for j in a.jobs] == pytest.approx([j.m_hours for j in b.jobs], rel=1e-12)
    assert [j.work for j in a.jobs] == [j.work for j in b.jobs]


def test_make_bid_submission_slot() -> None:
    _, spec = toy().jobs[0], toy().jobs[0]
    assert make_bid(7, spec.with_(arrival=2.0)).arrival == 2
    assert make_bid(7, spec.with_(arrival=2.25)).arrival == 3


def test_study_scenario_and_mesa_model_match_plain_replay() -> None:
    from marketsim.agents.auction import AuctionModel
    from marketsim.analysis.engine.studies import build_market, load_study

    study = load_study("astraea")
    m0 = make_market({}, np.random.default_rng(0))
    assert study.paper == "astraea" and set(study.mechanisms) == set(m0.mechanisms())
    assert all(p.x in study.base for p in study.panels)
    small = {**study.params(0, 20), "jobs": 12, "servers": 6, "tenants": 2}
    m = build_market("astraea", small, np.random.default_rng(3))
    audit_m = build_market("astraea", study.audit_params(), np.random.default_rng(0))
    assert audit_m.settings["workload"] == "micro"
    for name in ("astraea", "batchsche", "hived"):
        model = AuctionModel(m, name, rng=5).run()
        plain = m.metrics(run_market(m, name), m.bids())
        got = model.summary()
        assert all(got[k] == plain[k] or (math.isnan(got[k]) and math.isnan(plain[k])) for k in plain), name
