"""Honest certificates (market/learning/certificates.py): epsilon re-measured at the reported
profile, or against the empirical play, by the audit's own search; certificates that must fail."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.audit.fairshare import resolve_fair_share
from marketsim.market.errors import InputError
from marketsim.market.learning.certificates import AuctionProfileTarget, audit_play, audit_profile
from marketsim.market.learning.dynamics import (
    FairShareGame,
    best_response_dynamics,
    cce_epsilon,
    certify,
    default_grid,
    hedge,
)

W2 = [[1, 2], [1, 5]]


def _u(mech: str, W, m, factors, i: int, f: float) -> float:
    """Tenant i's TRUE throughput when it reports factor f and the others report ``factors``
    (the registered allocator called directly, no audit machinery)."""
    _, fn = resolve_fair_share(mech)
    Wn = np.asarray(W, dtype=float)
    R = Wn.copy()
    R[:, 1] *= np.asarray(factors, dtype=float).ravel()
    R[i, 1] = Wn[i, 1] * f
    return float(Wn[i] @ fn(R, np.asarray(m, float), weights=None, caps=None).X[i])


def test_a_grid_cce_of_non_cooperative_oef_is_not_certified_against_every_report() -> None:
    """Issue 19: optimistic Hedge stops at a 1%-CCE of the 13-point grid game on the two-tenant
    instance; against fixed reports off the grid tenant 1 has ~20% regret. The verdict is 'not
    certified', and the audit's best fixed report is re-checked by hand on the empirical play."""
    g = FairShareGame(mechanism="oef-noncoop", W=W2, m=[1, 1], grid=default_grid(13, 0.25, 4.0))
    res = hedge(g, rounds=3000, eta=10.0, optimistic=True, tol=0.01, seed=0)
    assert res.status == "grid-cce" and max(res.regret_rel.values()) <= 0.01
    cert = audit_play(g, res.distribution, tol=0.01)
    assert not cert.certified and cert.verdict == "not certified" and cert.eps_rel > 0.15
    # at least what the powers of two 1/8..8 find (the bench's old re-check: ~18%)
    wide = cce_epsilon(g, res.distribution, grid=2.0 ** np.arange(-3, 4))
    assert cert.eps_rel >= max(wide.values()) - 1e-9 > 0.15
    i, f = cert.agent, cert.to_report[0]
    play = sum(w * g.utilities(p)[i] for p, w in res.distribution.items())
    fixed = sum(w * _u("oef-noncoop", W2, [1, 1], g.strategies[list(p)], i, f) for p, w in res.distribution.items())
    assert fixed / play - 1.0 == pytest.approx(cert.eps_rel, rel=1e-9)
    assert cert.per_agent[i] == cert.eps_rel and len(cert.per_agent) == 2


@pytest.mark.parametrize("mech", ["gavel", "oef-coop"])
def test_grid_equilibria_fail_the_audit_off_the_grid(mech: str) -> None:
    """Best responses converge on the 13-point grid, and the wide grid certificate finds nothing
    (eps_grid 0), but the audit finds a report off both grids that gains 2-3%: not certified at 1%;
    the witness re-checked with the allocator."""
    g = FairShareGame(mechanism=mech, W=W2, m=[1, 1])
    res = best_response_dynamics(g)
    assert res.status == "converged" and certify(g, res.profile, points=41)["eps_rel"] == 0.0
    cert = audit_profile(g, res.profile, tol=0.01)
    assert not cert.certified and 0.015 < cert.eps_rel < 0.05
    F = g.strategies[res.profile]
    i = cert.agent
    cur = _u(mech, W2, [1, 1], F, i, F[i, 0])
    assert cur == pytest.approx(g.utilities(res.profile)[i]) and cert.utility == pytest.approx(cur)
    assert _u(mech, W2, [1, 1], F, i, cert.to_report[0]) / cur - 1.0 == pytest.approx(cert.eps_rel, rel=1e-9)
    assert cert.from_report == F[i].tolist()
    assert audit_profile(g, res.profile, tol=0.05).certified  # the same number passes a looser tolerance


def test_reports_that_do_not_matter_are_certified() -> None:
    g = FairShareGame(mechanism="maxmin", W=[[1, 2], [1, 3], [1, 5]], m=[1, 1])
    prof = g.truthful_profile()
    prof[1] = 0  # a lie that changes nothing under max-min
    cert = audit_profile(g, prof, tol=1e-9)
    assert cert.certified and cert.eps_rel == 0.0 and cert.agent is None and cert.evaluations > 100
    assert cert.describe() == "no learner gains"
    play = audit_play(g, hedge(g, rounds=5).distribution, tol=1e-9)
    assert play.certified and play.eps_rel == 0.0


def test_off_grid_factors_are_accepted_and_bad_inputs_name_the_field() -> None:
    g = FairShareGame(mechanism="oef-noncoop", W=W2, m=[1, 1])
    at = audit_profile(g, np.array([[0.3], [0.77]]), tol=0.01)
    assert at.from_report in ([0.3], [0.77])
    with pytest.raises(InputError, match="tol"):
        audit_profile(g, g.truthful_profile(), tol=0.0)
    with pytest.raises(InputError, match="distribution"):
        audit_play(g, {})
    with pytest.raises(InputError, match="factors"):
        audit_profile(g, np.ones((3, 1)))
    with pytest.raises(InputError, match="game"):
        audit_profile(object(), [0, 0])


def test_the_auction_profile_target_sees_the_others_reports() -> None:
    """Pay-your-bid control: the deviator's TRUE surplus against shaded rivals equals the game's
    own evaluation of that profile, and differs from the one against truthful rivals."""
    from marketsim.analysis.engine.studies import build_market
    from marketsim.market.learning.dynamics import AuctionGame

    market = build_market("control", {"jobs": 8, "T": 8, "capacity": 4, "price": 1.0}, np.random.default_rng(0))
    g = AuctionGame(market=market, mechanism="pay-your-bid", grid=default_grid(9, 0.25, 4.0))
    F = np.full((g.n, 1), 0.5)
    F[0, 0] = 1.0
    others = {int(b.job_id): market.misreport(b, {"value_scale": 0.5}) for b in g.bids[1:]}
    t = AuctionProfileTarget(market, "pay-your-bid", seed=g.seed, others=others)
    jid = int(g.bids[0].job_id)
    u_game = g._evaluate(F)[0]
    assert t.evaluate(jid, t.report(jid, {})) == pytest.approx(u_game)
    cert = audit_profile(g, F, tol=0.01)
    assert cert.per_agent.keys() == set(g.learner_ids)
    assert cert.eps_rel > 0.01  # pay-your-bid: shading pays against any profile of rivals
