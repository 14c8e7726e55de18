"""Astraea's gain-as-you-contribute check recomputes Eq. (2) independently of the mechanism
(issue #10): its own formula, the post-pass-1 snapshot rebuilt from the logged schedule, and the
paper's numbers; a wrong Eq. (2) in the mechanism must be caught."""

from __future__ import annotations

import numpy as np
import pytest

import marketsim.market.astraea.online as online
from marketsim.market.astraea.claims import TOY_FIXED, _build, _eq2_error, _pooled, eq2_incomes
from marketsim.market.auction.market import run_market
from marketsim.market.audit.claims import run_claims


def test_spec_f13_generic_numbers() -> None:
    rho = eq2_incomes([[2], [0], [6]], [[1], [1], [0]], [10.0], [4.0])
    assert np.allclose(rho, [4.5, 2.0, 7.5]) and rho.sum() == pytest.approx(14.0)


def test_worked_example_incomes_are_8_and_8() -> None:
    """§4.3 of the paper (spec fixture): j12 costs 16; u1 and u2 each get 8 (worker 6 + PS 2)."""
    m = _build(TOY_FIXED, 0)
    decs = run_market(m, "astraea")
    (j12,) = [d for d in decs if _pooled(d)]
    assert j12.payment == pytest.approx(16.0)
    assert np.allclose(j12.log["income"], [8.0, 8.0])
    err, zero = _eq2_error(m, decs, j12)
    assert err < 1e-9 and zero == 0.0


def test_a_wrong_eq2_in_the_mechanism_is_caught(monkeypatch) -> None:
    """Mutant: split each slot's cost equally among contributors instead of by unused quota."""

    def equal_share(unused, cost, *, exact_balance=True):
        u = np.atleast_2d(np.asarray(unused, float))
        c = np.asarray(cost, float)
        members = (u > 0).astype(float)
        k = members.sum(axis=0)
        return (np.divide(members, k, out=np.zeros_like(u), where=k > 0) * c).sum(axis=1)

    monkeypatch.setattr(online, "gain_as_you_contribute", equal_share)  # still budget balanced
    (c,) = run_claims("astraea", ids=["GAYC"])
    assert c.verdict == "violated" and c.witness is not None


def test_gayc_holds_on_the_real_mechanism() -> None:
    (c,) = run_claims("astraea", ids=["GAYC"])
    assert c.verdict == "holds" and not c.weak and c.details["pass2_jobs"] > 0
