"""Ledger checks that used to be unable to fail (issue #10): C6 over the optimal face, verdict
sample sizes, size-consistency of C15, and non-cooperative OEF's EF / SI findings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from market import registry
from market.audit.claims import run_claims
from market.audit.oef_claims import measure

# Two tenants, three GPU types. Tenant 0's comparative advantage is the middle type (1.51/1.30),
# tenant 1's the two ends, so every efficient allocation gives tenant 1 types 0 and 2 but not 1.
W_GAP = np.array([[1.0, 1.51, 1.86], [1.0, 1.30, 1.82]])
M_GAP = np.array([3.0, 2.0, 1.0])


def _independent_coop_face_has_contiguous_row(W: np.ndarray, m: np.ndarray, row: int) -> bool:
    """Dense re-build of cooperative OEF (max total s.t. capacity and pairwise envy-freeness),
    solved with interior point, then one LP per interval of ranks (max the row's smallest entry)."""
    n, k = W.shape
    nv = n * k
    A, b = [], []
    for j in range(k):
        r = np.zeros(nv)
        r[j::k] = 1.0
        A.append(r)
        b.append(m[j])
    for l_, i in itertools.permutations(range(n), 2):
        r = np.zeros(nv)
        r[i * k : (i + 1) * k] += W[l_]
        r[l_ * k : (l_ + 1) * k] -= W[l_]
        A.append(r)
        b.append(0.0)
    c = -W.ravel()
    opt = linprog(c, A_ub=np.array(A), b_ub=np.array(b), method="highs-ipm")
    assert opt.status == 0
    for a, z in itertools.combinations_with_replacement(range(k), 2):
        Aub = [np.r_[r, 0.0] for r in A] + [np.r_[c, 0.0]]
        bub = [*b, opt.fun + 1e-9 * max(1, abs(opt.fun))]
        for j in range(a, z + 1):
            r = np.zeros(nv + 1)
            r[row * k + j], r[-1] = -1.0, 1.0
            Aub.append(r)
            bub.append(0.0)
        bounds = [(0, None)] * nv + [(0, float(m.max()))]
        for j in range(k):
            if not a <= j <= z:
                bounds[row * k + j] = (0, 0)
        res = linprog(np.r_[np.zeros(nv), -1.0], A_ub=np.array(Aub), b_ub=np.array(bub), bounds=bounds,
                      method="highs-ipm")  # fmt: skip
        if res.status == 0 and -res.fun > 1e-7:
            return True
    return False


def test_c6_gap_instance_has_no_contiguous_optimum_for_tenant_1_by_an_independent_lp() -> None:
    X = registry.get("oef-coop", "fair-share").fn(W_GAP, M_GAP).X
    assert X[1, 0] > 0 and X[1, 2] > 0 and X[1, 1] == pytest.approx(0.0, abs=1e-9)
    assert not _independent_coop_face_has_contiguous_row(W_GAP, M_GAP, 1)
    assert _independent_coop_face_has_contiguous_row(W_GAP, M_GAP, 0)  # the check is not vacuous


@pytest.mark.parametrize("mechanism", ["oef-coop", "oef-noncoop"])
def test_c6_structural_check_reports_the_gap_row(mechanism: str) -> None:
    # the old check minimised mass on entries already zero at the vertex and returned 0 here
    assert measure("structural_noncontiguous", mechanism, W_GAP, M_GAP) == 1.0


def test_c6_tie_breaking_vertex_is_not_a_violation() -> None:
    """A non-contiguous vertex whose row can be made contiguous at another optimum."""
    W = np.array([[1.0, 1.51, 1.87], [1.0, 1.33, 1.72]])
    m = np.array([3.0, 2.0, 3.0])
    assert measure("noncontiguous_rows", "oef-coop", W, m) == 1.0
    assert measure("structural_noncontiguous", "oef-coop", W, m) == 0.0


def test_c6_ledger_row_is_violated_with_a_witness_and_split_by_generator() -> None:
    (c6,) = run_claims("oef", ids=["C6"])
    assert c6.verdict == "violated" and c6.witness is not None
    assert c6.witness["property"] == "structural_noncontiguous"
    W, m = np.array(c6.witness["W"]), np.array(c6.witness["m"])
    assert measure("structural_noncontiguous", c6.witness["mechanism"], W, m) >= 1
    assert c6.details["ordered"]["instances_violating"] == 0
    assert "ordered generator" in c6.reason
