"""Continuous best-response dynamics (market/learning/continuous.py): the audit's best lie against
the others' current reports, with an equilibrium certificate checked here independently."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.audit.fairshare import resolve_fair_share
from marketsim.market.errors import InputError
from marketsim.market.learning.continuous import ProfileTarget, continuous_best_response

W2 = [[1.0, 2.0], [1.0, 5.0]]
M2 = [1.0, 1.0]


def _true_utility(mech: str, W: np.ndarray, m, F: np.ndarray, i: int, f: float) -> float:
    """Tenant i's TRUE throughput when it reports factor f and the others report F (independent of
    the audit machinery: the registered allocator on the reported matrix)."""
    _, fn = resolve_fair_share(mech)
    R = W.copy()
    R[:, 1] *= F[:, 0]
    R[i, 1] = W[i, 1] * f
    X = fn(R, np.asarray(m, float), weights=None, caps=None).X
    return float(W[i] @ X[i])


def _dense_gain(mech: str, F: np.ndarray, i: int) -> float:
    W = np.asarray(W2)
    cur = _true_utility(mech, W, M2, F, i, F[i, 0])
    best = max(_true_utility(mech, W, M2, F, i, f) for f in np.geomspace(0.05, 20.0, 400))
    return best / cur - 1.0


@pytest.mark.parametrize("mech", ["gavel", "oef-coop"])
def test_converges_to_a_certified_equilibrium_where_one_tenant_inflates(mech: str) -> None:
    res = continuous_best_response(mech, W2, M2, passes=12, tol=1e-3)
    assert res.status == "converged" and res.eps_rel <= 1e-3
    assert res.factors[0, 0] > 1.5 and res.factors[1, 0] == 1.0  # the slow-GPU tenant inflates
    # an independent dense grid finds no profitable deviation at the final profile either
    for i in range(2):
        assert _dense_gain(mech, res.factors, i) <= 0.01


def test_truthful_rest_point_of_maxmin() -> None:
    res = continuous_best_response("maxmin", W2, M2, passes=5)
    assert res.status == "converged" and np.all(res.factors == 1.0) and res.passes == 1
    assert max(_dense_gain("maxmin", res.factors, i) for i in range(2)) <= 1e-9


def test_noncoop_oef_has_no_equilibrium_on_the_two_tenant_instance() -> None:
    """Both tenants shade their fast-GPU speedup towards the validator's limit, pass after pass:
    the dynamics never settle, and the final profile still has a profitable deviation."""
    res = continuous_best_response("oef-noncoop", W2, M2, passes=8)
    assert res.status != "converged" and res.eps_rel > 0.01
    assert np.all(res.factors < 1.0)
    assert max(_dense_gain("oef-noncoop", res.factors, i) for i in range(2)) > 0.01


def test_profile_target_uses_the_others_current_reports() -> None:
    W = np.asarray(W2)
    R = W.copy()
    R[1, 1] = 1.2  # tenant 1 currently under-reports its fast GPU
    t = ProfileTarget("gavel", W=W, m=M2, reports=R, n_arbitrary=0, copy_others=False)
    got = t.evaluate(0, t.report(0, {"1": 1.0}))
    assert got == pytest.approx(_true_utility("gavel", W, M2, np.array([[1.0], [1.2 / 5.0]]), 0, 1.0))
    assert got != pytest.approx(_true_utility("gavel", W, M2, np.ones((2, 1)), 0, 1.0))


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(InputError, match="learners"):
        continuous_best_response("gavel", W2, M2, learners=[5])
    with pytest.raises(InputError, match="W"):
        continuous_best_response("gavel", [[1.0], [1.0]], M2)
    with pytest.raises(InputError, match="passes"):
        continuous_best_response("gavel", W2, M2, passes=0)


def test_cooperative_oef_best_responses_chase_a_jump_in_the_allocation() -> None:
    """Why 20-tenant cooperative OEF never settles (README, learning speed): at a profile its best
    responses reach (tests/data/coop_knife_edge.json), tenant 1's TRUE throughput falls from ~3.03
    to ~1.30 when its first fast-GPU factor moves from 2.337 to 2.349 (0.5%). Its best reply sits
    just below that edge; the others' small replies move the edge, and it has to step back."""
    import json
    from pathlib import Path

    from marketsim.market.learning.dynamics import FairShareGame

    d = json.loads((Path(__file__).parent / "data" / "coop_knife_edge.json").read_text())
    g = FairShareGame(mechanism="oef-coop", W=d["W"], m=d["m"])
    F = np.array(d["factors"])

    def u1(f1: float) -> float:
        X = F.copy()
        X[1, 0] = f1
        return float(g._evaluate(X)[1])

    assert u1(F[1, 0]) == pytest.approx(1.296, abs=2e-3)  # where the chase left it
    below, above = u1(2.337), u1(2.3487)
    assert below > 3.0 and above < 1.31 and below / above > 2.3  # a jump of > 130% within 0.5%
    assert all(u1(f) > 3.0 for f in np.linspace(2.30, 2.337, 4))  # the whole good side, not one lucky point


W3 = [[1.0, 3.0], [1.0, 1.5], [1.0, 6.0]]
M3 = [2.0, 1.0]


def _utility_at(mech, W, m, F: np.ndarray, i: int, f: float) -> float:
    """Tenant i's TRUE throughput (rows normalised by column 0) when it reports factor f and the
    others report F; the registered allocator called directly."""
    _, fn = resolve_fair_share(mech)
    W = np.asarray(W, dtype=float)
    R = W.copy()
    R[:, 1] *= F[:, 0]
    R[i, 1] = W[i, 1] * f
    return float(W[i] @ fn(R, np.asarray(m, float), weights=None, caps=None).X[i])


def test_a_tie_chase_under_gavel_is_neither_a_cycle_nor_converged() -> None:
    """Issue 19's example: tenants 0 and 2 end up reporting the same fast-GPU speedup (1.5) and
    Gavel's tie-break hands the fast GPU to one of them; the other moves its report by ~1e-4 and
    gains 55% (tenant 0) or 115% (tenant 2). Compared on rounded log factors (the old check), the
    profile 'repeats' after one pass, which used to read 'cycle, period 1'. With a report tolerance
    of 1e-2 the repeat is found, but the moves that gained were smaller than it: a chase."""
    res = continuous_best_response("gavel", W3, M3, passes=20, report_tol=1e-2)
    h = res.history
    assert np.array_equal(np.round(np.log(h[-1]), 2), np.round(np.log(h[-2]), 2))  # the old check's "repeat"
    assert res.status == "chase" and res.period == 0 and not res.certified
    assert {mv["agent"] for mv in res.moves} == {0, 2}
    assert all(mv["step"] < 1e-3 and mv["gain"] > 0.5 for mv in res.moves)  # tiny moves, large gains
    # epsilon is the audit's gain at the FINAL profile (tenant 0's), not the last pass's largest (tenant 2's)
    c = res.certificate
    assert c.agent == 0 and res.eps_rel == c.eps_rel > 0.5 and res.eps_last_pass > 1.1
    cur = _utility_at("gavel", W3, M3, res.factors, 0, res.factors[0, 0])
    dev = _utility_at("gavel", W3, M3, res.factors, 0, c.to_report[0])
    assert dev / cur - 1.0 == pytest.approx(res.eps_rel, rel=1e-6)
    assert abs(np.log(c.to_report[0] / res.factors[0, 0])) < 1e-2  # an infinitesimal move


def _pennies(W, m, *, weights=None, caps=None, **_):
    """Matching pennies over reports (both TRUE rows are [1, 2]): the fast GPU goes to tenant 0 when
    both over-report or both do not, else to tenant 1; the slow GPU is split."""
    from marketsim.market.allocation import Allocation

    over = np.asarray(W, dtype=float)[:, 1] > 2.0 + 1e-12
    win = 0 if over[0] == over[1] else 1
    X = np.array([[0.5, 0.0], [0.5, 0.0]])
    X[win, 1] = 1.0
    return Allocation(X=X, policy="pennies", objective=0.0)


def test_a_true_cycle_repeats_exactly_with_real_moves() -> None:
    res = continuous_best_response(_pennies, [[1, 2], [1, 2]], [1, 1], passes=10)
    assert res.status == "cycle" and res.period == 2 and not res.certified
    assert np.array_equal(res.history[-1], res.history[-1 - res.period])
    assert len(res.moves) == 4 and all(mv["step"] > 0.1 and mv["gain"] == pytest.approx(4.0) for mv in res.moves)
    assert res.eps_rel == pytest.approx(4.0)  # the loser at the final profile: 0.5 -> 2.5


def test_report_tolerance_is_validated() -> None:
    for bad in (-1.0, float("nan"), "x"):
        with pytest.raises(InputError, match="report_tol"):
            continuous_best_response("gavel", W2, M2, report_tol=bad)
