"""C-O5b's two thresholds on a hand-built instance: one job alone on an empty one-server cluster, with a
constant utility ``v`` placed just above and just below OASiS's admission threshold
``admit_tol·max(1, f̂)`` (mechanism.Oasis.decide) and the claim's zero-payoff threshold
``ZERO_PAYOFF_REL·max(f̂, cost)`` (claims._zero_payoff_threshold), at three price scales.

Expected partition (read from the two pieces of code): μ <= zero threshold -> rejected, counted as zero
payoff (no violation); zero threshold < μ <= admission threshold -> rejected, a violation AND a tolerance
rejection; μ > admission threshold -> admitted, nothing counted."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from marketsim.market.oasis import Oasis, OasisCluster, OasisConstants, OasisRequest, oasis_search
from marketsim.market.oasis.claims import ZERO_PAYOFF_REL, _empty_rejections, _fresh_ledgers
from marketsim.market.utility import TabularUtility

ADMIT_TOL = inspect.signature(Oasis.__init__).parameters["admit_tol"].default
CL = OasisCluster.build(3, [[4.0]], [[4.0]])


def _job(v: float) -> OasisRequest:
    return OasisRequest(0, 0, 1, 1, 1.0, 1.0, np.array([1.0]), np.array([1.0]), TabularUtility((v,)))


def _cost(consts: OasisConstants) -> float:
    """Price of the cheapest schedule on the empty cluster (one worker + one PS for one slot); with a
    constant utility the search's best schedule is the cheapest one whatever ``v`` is."""
    res = oasis_search(_job(1e9), *_fresh_ledgers(CL, consts))
    return float(res.cost)


# (price L per unit, target): the job's value v is chosen from the schedule's cost so that μ = v - cost
# sits at `factor` times a threshold; "admit" = admission threshold admit_tol·max(1, v),
# "zero" = zero-payoff threshold ZERO_PAYOFF_REL·max(v, cost)
CASES = [
    (L, which, factor)
    for L in (1e-30, 0.5, 0.5e6)
    for which, factor in (("admit", 1.01), ("admit", 0.99), ("zero", 2.0), ("zero", 0.5))
]


@pytest.mark.parametrize(("L", "which", "factor"), CASES)
def test_c_o5b_thresholds_partition_rejections(L: float, which: str, factor: float) -> None:
    consts = OasisConstants.from_values(10 * L, L, 10 * L, L)
    c = _cost(consts)
    assert c == pytest.approx(2 * L, rel=1e-12)
    if which == "admit":  # μ = factor·admit_tol·max(1, v), with v = c + μ
        v = c + factor * ADMIT_TOL if c + ADMIT_TOL < 1 else c / (1 - factor * ADMIT_TOL)
    else:  # μ = factor·ZERO_PAYOFF_REL·v
        v = c / (1 - factor * ZERO_PAYOFF_REL)
    q = _job(v)
    mu = float(oasis_search(q, *_fresh_ledgers(CL, consts)).mu)
    admit_thr, zero_thr = ADMIT_TOL * max(1.0, v), ZERO_PAYOFF_REL * max(v, c)
    # the instance really sits where intended (a few percent either side of the threshold)
    thr = admit_thr if which == "admit" else zero_thr
    assert mu / thr == pytest.approx(factor, rel=0.02)
    assert zero_thr < admit_thr  # the claim's zero threshold is below the mechanism's at this scale
    admitted = Oasis(CL, consts).decide(q).admitted
    zero: list = []
    tol: list = []
    bad = _empty_rejections(CL, [q], consts, zero, tol)
    if mu > admit_thr:
        assert admitted and bad == [] and zero == [] and tol == []
    elif mu > zero_thr:
        assert not admitted and [j for j, _ in bad] == [0] and tol == bad and zero == []
    else:
        assert not admitted and bad == [] and tol == [] and [j for j, _ in zero] == [0]
    # and each case is on the side of its threshold that the parametrisation says
    assert (mu > thr) == (factor > 1)
