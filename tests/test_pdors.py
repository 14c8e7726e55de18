"""PD-ORS: spec fixtures F-P1..F-P11 and bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from marketsim.market.auction import ResourceSpace
from marketsim.market.errors import InputError
from marketsim.market.pdors import (
    Pdors,
    PdorsCluster,
    PdorsConfig,
    PdorsConstants,
    PdorsJob,
    estimate_pdors_constants,
    is_colocated,
    job_rng,
    mb_per_slot_to_gbps,
)
from marketsim.market.pdors.mechanism import slot_thetas
from marketsim.market.pdors.rounding import G_thm3, G_thm4, remark1_rhs, repair, round_draws
from marketsim.market.pdors.theta import SlotProblem, SplitLP, colocated_costs
from marketsim.market.utility import SigmoidUtility

TOL = 1e-9


def _job(jid=0, a=0, E=1, K=8, F=4, tau=0.0, g=1.0, gamma=1, bi_mb=1.0, be_mb=0.5, alpha=(1.0,), beta=(1.0,), u=None):
    return PdorsJob(
        jid,
        a,
        E,
        K,
        F,
        tau,
        g,
        gamma,
        mb_per_slot_to_gbps(bi_mb),
        mb_per_slot_to_gbps(be_mb),
        np.array(alpha),
        np.array(beta),
        u or SigmoidUtility(40, 0, 0),
    )


def test_F_P1_per_sample_time():
    j = PdorsJob(0, 0, 1, 1, 50, 1e-4, 100.0, 2, 10.0, 1.0, np.ones(1), np.ones(1), SigmoidUtility(1, 0, 0))
    assert j.c_int() == pytest.approx(1.0177777777777778e-4, abs=1e-15)
    assert j.c_ext() == pytest.approx(1.1777777777777778e-4, abs=1e-15)
    assert j.per_sample(1.0, actual_ratio=4 / 4) == pytest.approx(1.0888888888888889e-4, abs=1e-15)
    assert mb_per_slot_to_gbps(450000.0) == 1.0


def test_F_P2_fact1():
    def v(ids, H=2):
        x = np.zeros(H, dtype=int)
        x[list(ids)] = 1
        return x

    assert is_colocated(v({0}), v({0}))
    assert not is_colocated(v({0}), v({1}))
    assert not is_colocated(v({0, 1}), v({0}))
    assert not is_colocated(v({0}), v({0, 1}))


def test_F_P3_colocated():
    prices = np.array([[1.0, 0.2], [1.5, 0.3], [2.0, 0.5]])
    resid = np.array([[8.0, 8], [4, 12], [16, 16]])
    a, b = np.array([1.0, 2]), np.array([0.0, 1])
    sp = SlotProblem(prices @ a, prices @ b, resid, prices, a, b, 8, 2)
    h, c = colocated_costs(sp, np.array([4]), np.array([2]))
    assert h[0] == 1 and c[0] == pytest.approx(9.0, abs=TOL)


def _fp4():
    prices = np.array([[1.0], [2.0]])
    sp = SlotProblem(prices[:, 0], prices[:, 0], np.array([[3.0], [10.0]]), prices, np.ones(1), np.ones(1), 10, 1)
    return sp


def test_F_P4_split_lp_and_choice():
    sp = _fp4()
    lp = SplitLP(sp)
    val, x = lp.solve(3.75)
    assert val == pytest.approx(12.0, abs=1e-7)
    assert x[:2].sum() == pytest.approx(3.75, abs=1e-7) and x[2:].sum() >= 3.75 - 1e-7
    job = _job(F=10, gamma=1)
    th, ch = slot_thetas(job, sp, SplitLP(sp), 3.0, 1, 1.0, 1.25, PdorsConfig(), job_rng(0, 0), {})
    assert th[1] == pytest.approx(12.0, abs=TOL)
    assert ch[1].mode == "colocated" and ch[1].w.tolist() == [0, 3] and ch[1].s.tolist() == [0, 3]
    # without the ratio row the LP would place no PS (value 4.5); with it every integer split costs >= 13
    from marketsim.market.pdors.theta import _split_exact

    assert _split_exact(sp, 3.75).cost == pytest.approx(13.0, abs=TOL)


def test_F_P5_repair():
    sp = _fp4()
    w, s = repair(np.array([3, 1]), np.array([1, 2]), sp.alpha, sp.beta, sp.resid, sp.pw, sp.ps, 10, 3.75, 1)
    assert w.tolist() == [2, 2] and s.tolist() == [1, 3]
    assert float(w @ sp.pw + s @ sp.ps) == pytest.approx(13.0, abs=TOL)


def test_F_P6_G_delta():
    for d, want in ((0.02, 0.253318), (0.1, 0.277673), (0.5, 0.307750), (1.0, 0.323054)):
        assert G_thm3(15, 4, 100, d) == pytest.approx(want, abs=1e-6)
    assert G_thm3(100, 4, 100, 0.1) == pytest.approx(0.591641, abs=1e-6)
    assert G_thm4(100, 0.1) == pytest.approx(1.297034, abs=1e-6)
    assert G_thm4(100, 0.02) == pytest.approx(1.370611, abs=1e-6)
    assert G_thm4(1e4, 0.1) == pytest.approx(1.026424, abs=1e-6)
    for W2, d in ((15, 0.1), (100, 0.02)):
        G = G_thm3(W2, 4, 100, d)
        assert (1 - G) ** 2 / G == pytest.approx(3 * math.log(3 * 401 / d) / W2, abs=1e-12)
    for W1, d in ((100, 0.1), (1e4, 0.02)):
        G = G_thm4(W1, d)
        assert (1 - 1 / G) ** 2 * G == pytest.approx(2 * math.log(3 / d) / W1, abs=1e-12)


def test_F_P7_remark1():
    assert remark1_rhs(50, 15, 401, 0.02) == pytest.approx(0.005330, abs=1e-6)
    assert remark1_rhs(20, 15, 401, 0.1) == pytest.approx(0.186725, abs=1e-6)
    assert remark1_rhs(10, 15, 401, 0.05) == pytest.approx(0.791092, abs=1e-6)


def test_F_P8_rounding_expectation():
    rng = np.random.default_rng(1)
    n = 200_000
    X = round_draws(np.array([2.3, 0.5]), rng.random((n, 2)))
    assert set(np.unique(X[:, 0])) == {2, 3} and set(np.unique(X[:, 1])) == {0, 1}
    assert abs((X[:, 0] == 3).mean() - 0.3) < 0.005 and abs((X[:, 1] == 1).mean() - 0.5) < 0.005
    X = round_draws(0.5 * np.array([2.3, 0.5]), rng.random((n, 2)))
    np.testing.assert_allclose(X.mean(axis=0), [1.15, 0.25], atol=0.005)


def test_F_P9_constants():
    cl = PdorsCluster.build(10, [[10.0], [10.0]])
    A = _job(0, 0, 1, 100, 10, 0.011, 1.0, 1, 100.0, 10.0, u=SigmoidUtility(10, 0, 0))
    B = _job(1, 5, 2, 200, 4, 0.016, 2.0, 2, 100.0, 10.0, alpha=(2.0,), beta=(1.0,), u=SigmoidUtility(30, 1, 3))
    assert A.c_int() == pytest.approx(0.013, abs=TOL) and A.c_ext() == pytest.approx(0.031, abs=TOL)
    assert B.c_int() == pytest.approx(0.036, abs=TOL) and B.c_ext() == pytest.approx(0.216, abs=TOL)
    assert A.min_duration() == 1 and B.min_duration() == 4
    c = estimate_pdors_constants([A, B], cl)
    assert np.exp(c.log_U[0]) == pytest.approx(2.6894142136999513, abs=TOL)
    assert 1 / c.mu == pytest.approx(0.04, abs=TOL)
    assert np.exp(c.log_L) == pytest.approx(2.740297057979714e-4, rel=1e-12)
    assert c.log_U[0] - c.log_L == pytest.approx(9.19159744760748, abs=TOL)
    assert c.D0(cl) == pytest.approx(0.05480594115959428, abs=TOL)


def test_F_P10_end_to_end():
    cl = PdorsCluster.build(2, [[10.0], [10.0]])
    m = Pdors(cl, PdorsConstants.from_values(8.0, 1.0), PdorsConfig(dp_units=8))
    A, B, C = (_job(i) for i in range(3))
    assert A.c_int() == pytest.approx(0.5) and A.c_ext() == pytest.approx(1.0)
    p8 = 8**0.8
    dA = m.decide(A)
    assert dA.admitted and dA.completion == 0 and dA.payoff == pytest.approx(12, abs=TOL)
    assert dA.payment == pytest.approx(8, abs=TOL) and dA.schedule.modes == {0: "colocated"}
    assert dA.schedule.workers[0].tolist() == [4, 0] and dA.schedule.ps[0].tolist() == [4, 0]
    assert m.ledger.prices()[0, 0, 0] == pytest.approx(p8, abs=TOL) == 5.278031643091578
    dB = m.decide(B)
    assert dB.admitted and dB.completion == 0 and dB.payoff == pytest.approx(12, abs=TOL)
    assert dB.schedule.workers[0].tolist() == [0, 4]
    assert m.ledger.prices()[0, 1, 0] == pytest.approx(p8, abs=TOL)
    dC = m.decide(C)
    assert dC.admitted and dC.completion == 1 and dC.payoff == pytest.approx(12, abs=TOL)
    assert dC.payment == pytest.approx(8, abs=TOL) and dC.schedule.slots == [1]
    assert dC.schedule.workers[1].tolist() == [4, 0]
    assert m.ledger.prices()[1, 0, 0] == pytest.approx(p8, abs=TOL)
    # Q = 200 gives the same result
    m2 = Pdors(cl, PdorsConstants.from_values(8.0, 1.0), PdorsConfig(dp_units=200))

    def strip(d):
        out = d.to_dict()
        out["schedule"].pop("work_unit")
        return out

    assert [strip(m2.decide(j)) for j in (A, B, C)] == [strip(d) for d in (dA, dB, dC)]


def test_F_P11_determinism_and_crn():
    from marketsim.market.pdors.generators import pdors_tiny_instance

    def run(jobs, cl, c):
        return [d.to_json() for d in Pdors(cl, c, PdorsConfig(seed=3)).run(jobs)]

    cl, jobs, c = pdors_tiny_instance(np.random.default_rng(11), I=5, T=5, H=2, cap=4.0)
    assert run(jobs, cl, c) == run(jobs, cl, c)
    # per-job streams: job 1's and job 3's draws do not depend on job 2's report
    a = job_rng(3, 1).random(5), job_rng(3, 3).random(5)
    b = job_rng(3, 1).random(5), job_rng(3, 3).random(5)
    assert all((x == y).all() for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(K=0), "samples"),
        (dict(F=-1), "global_batch"),
        (dict(gamma=0), "ratio"),
        (dict(tau=float("nan")), "tau"),
        (dict(bi_mb=0.5, be_mb=1.0), "bw_external"),
        (dict(alpha=(-1.0,)), "worker_demand"),
        (dict(alpha=(0.0,)), "worker_demand"),
    ],
)
def test_bad_job(kwargs, field):
    with pytest.raises(InputError, match=field):
        _job(**kwargs)


def test_bad_config_constants_cluster():
    with pytest.raises(InputError, match="delta"):
        PdorsConfig(delta=0)
    with pytest.raises(InputError, match="max_attempts"):
        PdorsConfig(S=10, max_attempts=5)
    with pytest.raises(InputError, match="G"):
        PdorsConfig(G=-1)
    with pytest.raises(InputError, match="U"):
        PdorsConstants.from_values(1.0, 2.0)
    with pytest.raises(InputError, match="capacity"):
        PdorsCluster.build(2, np.zeros((0, 1)))
    with pytest.raises(InputError, match="empty cluster"):
        PdorsCluster.build(2, [[0.0]])
    with pytest.raises(InputError, match="capacity"):
        PdorsCluster.build(2, [[float("nan")]])


def test_bad_report_in_mechanism():
    cl = PdorsCluster.build(2, [[10.0], [10.0]], ResourceSpace(("cpu",)))
    m = Pdors(cl, PdorsConstants.from_values(8.0, 1.0))

    class Up:
        def __call__(self, x):
            return float(x)

    with pytest.raises(InputError, match="utility"):
        m.decide(_job(u=Up()))
    with pytest.raises(InputError, match="arrival"):
        m.decide(_job(a=7))
