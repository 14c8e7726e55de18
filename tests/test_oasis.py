"""OASiS: spec fixtures F-O1..F-O8, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from marketsim.market.auction import PriceLedger, ResourceSpace, exp_price
from marketsim.market.errors import InputError
from marketsim.market.oasis import (
    Oasis,
    OasisCluster,
    OasisConstants,
    OasisJob,
    OasisRequest,
    estimate_constants,
    oasis_search,
    realised_outcome,
    slot_cost_vector,
)
from marketsim.market.utility import SigmoidUtility, TabularUtility

TOL = 1e-9


def test_F_O1_price_function():
    assert exp_price(0, 10, 1, 100) == pytest.approx(1, abs=TOL)
    assert exp_price(5, 10, 1, 100) == pytest.approx(10, abs=TOL)
    assert exp_price(10, 10, 1, 100) == pytest.approx(100, abs=TOL)
    assert exp_price(1, 2, 1, 16) == pytest.approx(4, abs=TOL)
    assert exp_price(2, 2, 1, 16) == pytest.approx(16, abs=TOL)
    led = PriceLedger([[10.0]], 1, 0.0, np.log(100.0))
    led.reserve(0, np.array([[5.0]]))
    assert led.prices()[0, 0, 0] == pytest.approx(10, abs=TOL)


def test_F_O2_sigmoid():
    f = SigmoidUtility(10, 0, 3)
    assert all(f(x) == pytest.approx(5, abs=TOL) for x in range(1, 20))
    g = SigmoidUtility(10, 1, 2)
    assert g(1) == pytest.approx(7.310585786300049, abs=TOL)
    assert g(2) == pytest.approx(5.0, abs=TOL)
    assert g(3) == pytest.approx(2.6894142136999513, abs=TOL)
    assert SigmoidUtility(1, 6, 1).log(300) == pytest.approx(-1794.0, abs=1e-9)


def _req(jid=0, a=0, W=3, N=2, w=(1.0,), s=(1.0,), b=1.0, B=1.0, f=None, d=0):
    return OasisRequest(jid, a, W, N, b, B, np.array(w), np.array(s), f or TabularUtility((10, 10, 10, 4)), d)


def test_F_O3_cost_vector():
    w, s = np.array([1, 2, 1.0]), np.array([0, 1, 2.0])
    res_w = np.array([[2, 8, 10], [4, 4, 10], [8, 16, 2.0]])
    pr_w = np.array([[1.0, 0.5, 0.1], [0.5, 0.25, 0.1], [2.0, 1.0, 1.0]])
    res_p = np.array([[0, 2, 10], [0, 10, 10.0]])
    pr_p = np.array([[0, 0.2, 0.05], [0, 0.4, 0.1]])

    def caps(res, d):
        m = d > 0
        return np.floor(res[:, m] / d[m] + 1e-9).min(axis=1).astype(int)

    for N in (6, 8):
        req = _req(N=N, W=10, w=w, s=s, b=1, B=2)
        cost, wo, po = slot_cost_vector(req, pr_w @ w, caps(res_w, w), pr_p @ s, caps(res_p, s))
        np.testing.assert_allclose(cost[:7], [0, 1.4, 2.5, 4.9, 7.0, 12.6, 17.6], atol=TOL)
        if N == 8:
            assert math.isinf(cost[7]) and math.isinf(cost[8])
    from marketsim.market.auction import greedy_placement

    assert greedy_placement(wo, caps(res_w, w), 5).tolist() == [2, 2, 1]
    assert greedy_placement(po, caps(res_p, s), 3).tolist() == [2, 1]


def _fo4_mech(f):
    cl = OasisCluster.build(3, [[2.0]], [[2.0]])
    m = Oasis(cl, OasisConstants.from_values(16, 1, 16, 1))
    m.workers.override_prices(np.array([1.0, 3.0, 1.5]).reshape(3, 1, 1))
    m.ps.override_prices(np.full((3, 1, 1), 0.5))
    return m, _req(f=f)


def test_F_O4_best_schedule():
    m, req = _fo4_mech(TabularUtility((10, 10, 10, 4)))
    res = oasis_search(req, m.workers, m.ps)
    assert math.isinf(res.theta_W[0])
    np.testing.assert_allclose(res.theta_W[1:], [6.5, 5.0], atol=TOL)
    d = m.decide(req)
    assert d.admitted and d.payoff == pytest.approx(3.5, abs=TOL) and d.completion == 1
    assert [d.schedule.total_workers(t) for t in range(3)] == [2, 1, 0]
    assert [d.schedule.total_ps(t) for t in range(3)] == [2, 1, 0]
    assert d.payment == pytest.approx(6.5, abs=TOL)

    m, req = _fo4_mech(TabularUtility((5, 5, 5, 4)))
    d = m.decide(req)
    assert not d.admitted and d.payment == 0 and d.payoff == 0
    res = oasis_search(req, m.workers, m.ps)
    np.testing.assert_allclose(np.array([5, 4]) - res.theta_W[1:], [-1.5, -1.0], atol=TOL)

    m, req = _fo4_mech(TabularUtility((10, 10, 10, 9)))
    d = m.decide(req)
    assert d.admitted and d.payoff == pytest.approx(4.0, abs=TOL) and d.completion == 2
    assert [d.schedule.total_workers(t) for t in range(3)] == [2, 0, 1]
    assert d.payment == pytest.approx(5.0, abs=TOL)


def test_F_O5_end_to_end_exhaustion():
    cl = OasisCluster.build(3, [[2.0]], [[2.0]])
    m = Oasis(cl, OasisConstants.from_values(16, 1, 16, 1))
    A = _req(0, 0, 3, 2, f=TabularUtility((10, 10, 10, 4)))
    B = _req(1, 1, 2, 2, f=TabularUtility((9, 9, 6)))
    C = _req(2, 2, 1, 1, f=TabularUtility((100.0,)))
    dA = m.decide(A)
    assert dA.admitted and dA.payoff == pytest.approx(4, abs=TOL) and dA.payment == pytest.approx(6, abs=TOL)
    assert [dA.schedule.total_workers(t) for t in range(3)] == [2, 1, 0]
    np.testing.assert_allclose(m.workers.prices()[:, 0, 0], [16, 4, 1], atol=TOL)
    np.testing.assert_allclose(m.ps.prices()[:, 0, 0], [16, 4, 1], atol=TOL)
    dB = m.decide(B)
    assert dB.admitted and dB.completion == 2
    assert dB.payoff == pytest.approx(2, abs=TOL) and dB.payment == pytest.approx(4, abs=TOL)
    assert [dB.schedule.total_workers(t) for t in range(3)] == [0, 0, 2]
    assert m.workers.prices()[2, 0, 0] == pytest.approx(16, abs=TOL)
    assert m.ps.prices()[2, 0, 0] == pytest.approx(16, abs=TOL)
    dC = m.decide(C)
    assert not dC.admitted and dC.payment == 0


def _fo6():
    cl = OasisCluster.build(10, [[10.0]], [[10.0]])
    A = OasisRequest(0, 0, 4, 2, 1, 1, np.array([1.0]), np.array([1.0]), SigmoidUtility(10, 0, 1), 2)
    B = OasisRequest(1, 4, 3, 3, 1, 1, np.array([2.0]), np.array([1.0]), SigmoidUtility(20, 1, 2), 1)
    return cl, A, B


def test_F_O6_price_constants():
    cl, A, B = _fo6()
    assert (A.work_units, A.min_duration, B.work_units, B.min_duration) == (4, 2, 3, 1)
    assert B.utility(1) == pytest.approx(14.621171572600097, abs=TOL)
    assert B.utility(6) == pytest.approx(0.3597241992418312, abs=TOL)
    c = estimate_constants([A, B], cl)
    assert np.exp(c.log_U1[0]) == pytest.approx(7.310585786300049, abs=TOL)
    assert np.exp(c.log_U2[0]) == pytest.approx(14.621171572600097, abs=TOL)
    assert c.inv_eta1 == pytest.approx(0.04, abs=TOL) and c.inv_eta2 == pytest.approx(0.03, abs=TOL)
    assert np.exp(c.log_L1) == pytest.approx(5.995403320697187e-4, rel=1e-12)
    assert np.exp(c.log_L2) == pytest.approx(8.993104981045779e-4, rel=1e-12)
    assert c.log_U1[0] - c.log_L1 == pytest.approx(9.408670715055788, abs=TOL)
    assert c.log_U2[0] - c.log_L2 == pytest.approx(9.69635278750757, abs=TOL)
    assert c.alpha == pytest.approx(9.69635278750757, abs=TOL)
    assert c.D0(cl) == pytest.approx(0.14988508301742967, abs=TOL)
    assert c.D0(cl) <= 0.5 * min(A.utility(10), B.utility(6)) == pytest.approx(0.1798620996209156, abs=TOL)


def test_F_O7_empty_system_admission():
    cl, A, B = _fo6()
    m = Oasis(cl, estimate_constants([A, B], cl))
    d = m.decide(A)
    assert d.admitted and d.payoff > 0
    assert m.dual[0] == pytest.approx(estimate_constants([A, B], cl).D0(cl), rel=1e-12)


def test_F_O8_determinism():
    from marketsim.market.oasis.generators import oasis_tiny_instance

    outs = []
    for _ in range(2):
        cl, reqs, consts = oasis_tiny_instance(np.random.default_rng(7), H=2, gamma1_range=(1, 100))
        decs = Oasis(cl, consts).run(reqs)
        outs.append([d.to_json() for d in decs])
    assert outs[0] == outs[1]


def test_realised_outcome_ps_shortfall():
    cl = OasisCluster.build(3, [[2.0]], [[2.0]])
    m = Oasis(cl, OasisConstants.from_values(16, 1, 16, 1))
    A = _req(0, 0, 3, 2, f=TabularUtility((10, 10, 10, 4)))
    d = m.decide(A)
    out = realised_outcome(A, d.schedule)
    assert out.completed and out.completion == 1 and out.utility == 10
    # a truly heavier PS load (b/B = 2 -> half speed with 1 PS per worker) does not finish
    true = _req(0, 0, 3, 2, b=2, B=2.0, f=A.utility)
    assert realised_outcome(true, d.schedule).completed
    slow = OasisRequest(0, 0, 3, 2, 1.0, 1.0, np.ones(1), np.ones(1), A.utility)
    assert realised_outcome(slow, None).utility == 0.0


def test_job_to_request():
    res = ResourceSpace(("gpu", "cpu", "bw"))
    cl = OasisCluster.build(10, [[8, 32, 40.0]], [[0, 36, 40.0]], res)
    job = OasisJob(
        0, 0, 2, 4, 10, 0.01, 100.0, 1.0, 2.0, np.array([1, 2, 1.0]), np.array([0, 2, 2.0]), SigmoidUtility(10, 1, 3)
    )
    rho = 0.01 + 2 * 100 * 8 / 1000 / 3600
    req = job.to_request(cl)
    assert req.work_units == math.ceil(2 * 4 * 10 * rho - 1e-9)
    assert req.min_duration == math.ceil(2 * 10 * rho - 1e-9)
    assert req.n_ps(3) == 2


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(W=-1), "work_units"),
        (dict(N=0), "max_workers"),
        (dict(w=(-1.0,)), "worker_demand"),
        (dict(w=(float("nan"),)), "worker_demand"),
        (dict(b=2.0, B=1.0), "ps_den"),
        (dict(w=(0.0,)), "worker_demand"),
    ],
)
def test_bad_request(kwargs, field):
    with pytest.raises(InputError, match=field):
        _req(**kwargs)


def test_bad_utility_increasing():
    cl = OasisCluster.build(3, [[2.0]], [[2.0]])
    m = Oasis(cl, OasisConstants.from_values(16, 1, 16, 1))
    with pytest.raises(InputError, match="utility"):
        m.decide(_req(f=_Increasing()))


class _Increasing:
    def __call__(self, x):
        return float(x)


def test_bad_constants_and_cluster():
    with pytest.raises(InputError, match="U1"):
        OasisConstants.from_values(1.0, 2.0, 16, 1)
    with pytest.raises(InputError, match="L1"):
        OasisConstants.from_values(16, float("nan"), 16, 1)
    with pytest.raises(InputError, match="worker_capacity"):
        OasisCluster.build(3, np.zeros((0, 1)), [[2.0]])
    with pytest.raises(InputError, match="capacity"):
        OasisCluster.build(3, [[-2.0]], [[2.0]])
    with pytest.raises(InputError, match="T"):
        OasisCluster.build(0, [[2.0]], [[2.0]])
    with pytest.raises(InputError, match="empty cluster"):
        OasisCluster.build(3, [[0.0]], [[2.0]])


def test_bad_arrival_and_job():
    cl = OasisCluster.build(3, [[2.0]], [[2.0]])
    m = Oasis(cl, OasisConstants.from_values(16, 1, 16, 1))
    with pytest.raises(InputError, match="arrival"):
        m.decide(_req(a=5))
    with pytest.raises(InputError, match="arrival"):
        m.step(0, [_req(a=1)])
    with pytest.raises(InputError, match="epochs"):
        OasisJob(0, 0, 0, 1, 1, 0.1, 1, 1, 1, np.ones(1), np.ones(1), SigmoidUtility(1, 0, 0))
    with pytest.raises(InputError, match="tau"):
        OasisJob(0, 0, 1, 1, 1, -0.1, 1, 1, 1, np.ones(1), np.ones(1), SigmoidUtility(1, 0, 0))
