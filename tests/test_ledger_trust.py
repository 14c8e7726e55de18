"""Ledger checks that used to be unable to fail (issue #10): C6 over the optimal face, verdict
sample sizes, size-consistency of C15, and non-cooperative OEF's EF / SI findings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from marketsim.market import registry
from marketsim.market.audit.claims import run_claims
from marketsim.market.oef.claims import measure

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


def test_c6_slack_made_tie_is_not_an_alternative_optimum() -> None:
    """Row 1 of the cooperative vertex uses types {0, 2}. This was once read as a tie: on a face with
    slack 1e-9·|f*| the LP put s = 1.78e-7 > 1e-7 on type 1, but s shrinks in proportion to the slack
    (1.8e-10 at 1e-12, 0 at 0): no other optimum exists, and the row is counted."""
    W = np.array([[1.0, 1.51, 1.87], [1.0, 1.33, 1.72]])
    m = np.array([3.0, 2.0, 3.0])
    assert measure("noncontiguous_rows", "oef-coop", W, m) == 1.0
    assert measure("structural_noncontiguous", "oef-coop", W, m) == 1.0


def test_c6_ledger_row_is_violated_with_a_witness_and_split_by_generator() -> None:
    (c6,) = run_claims("oef", ids=["C6"])
    assert c6.verdict == "violated" and c6.witness is not None
    assert c6.witness["property"] == "structural_noncontiguous"
    W, m = np.array(c6.witness["W"]), np.array(c6.witness["m"])
    assert measure("structural_noncontiguous", c6.witness["mechanism"], W, m) >= 1
    assert c6.details["ordered"]["instances_violating"] == 0
    assert "ordered generator" in c6.reason


def test_small_samples_read_weak_and_every_label_carries_n() -> None:
    from marketsim.market.audit.claims import WEAK_N, Claim, to_markdown, verdict_label

    assert verdict_label("holds", 6) == "holds (n=6, weak)"
    assert verdict_label("holds", WEAK_N) == f"holds (n={WEAK_N})"
    assert verdict_label("violated", 3) == "violated (n=3)"
    assert verdict_label("holds", 3, "existential") == "holds (n=3)"
    results = run_claims("oef", ids=["C1", "C2"])
    by = {c.claim_id: c for c in results}
    assert by["C1"].n_instances < WEAK_N and by["C1"].label.endswith(", weak)") and by["C1"].weak
    assert by["C2"].n_instances >= WEAK_N and by["C2"].label == f"holds (n={by['C2'].n_instances})"
    md = to_markdown(results)
    assert "**holds (n=" in md and ", weak)**" in md
    assert isinstance(results[0], Claim) and results[0].to_dict()["label"] == results[0].label


def test_cli_claims_table_and_tally_show_weak(capsys, cli_reads_oef_small_ledger: list) -> None:
    from marketsim.analysis.frontends.cli import main

    assert main(["claims", "--paper", "oef", "--width", "20"]) == 0
    out = capsys.readouterr().out
    assert "holds (n=6, weak)" in out and "holds (weak)" in out.splitlines()[-1]


def test_c15_small_finds_the_coop_pe_counterexample_like_large() -> None:
    """C15 used to read holds on --size small and violated on --size large."""
    from marketsim.market.oef.claims import C15_PE_FIXTURE, _prop_tol

    W, m = np.array(C15_PE_FIXTURE[0]), np.array(C15_PE_FIXTURE[1])
    assert measure("pe", "oef-coop", W, m) > 1000 * _prop_tol("pe", W, m)
    (c15,) = run_claims("oef", ids=["C15"])
    assert c15.verdict == "violated" and c15.details["violation_rates"]["oef-coop"]["pe"] > 0


def test_noncoop_envy_and_si_findings_match_the_hand_numbers() -> None:
    """W = [[1,2],[1,5]], m = [1,1]: X = [[1,4/7],[0,3/7]]; tenant 1 values tenant 0's bundle at
    1 + 5*4/7 = 27/7 vs its own 15/7 (envy 12/7) and the equal split at 3 (SI shortfall 6/7)."""
    W, m = np.array([[1.0, 2.0], [1.0, 5.0]]), np.array([1.0, 1.0])
    assert measure("envy", "oef-noncoop", W, m) == pytest.approx(12 / 7)
    assert measure("si", "oef-noncoop", W, m) == pytest.approx(6 / 7)
    res = {c.claim_id: c for c in run_claims("oef", ids=["C2-noncoop", "C3-noncoop"])}
    for cid in ("C2-noncoop", "C3-noncoop"):
        c = res[cid]
        assert c.verdict == "violated" and c.n_instances >= 20
        assert 0 < c.details["violation_rate"] <= 1 and f"/{c.n_instances}" in c.reason


@pytest.mark.slow
@pytest.mark.heavy  # the paper-size ledger: run with -m heavy (outside the 30-minute CI budget)
def test_oef_small_and_large_ledgers_do_not_contradict(oef_small_ledger: list) -> None:
    """No claim may read a strong `holds` at one size and `violated` at the other."""
    small = {c.claim_id: c for c in oef_small_ledger}  # run_claims("oef", size="small"), shared (conftest.py)
    large = {c.claim_id: c for c in run_claims("oef", size="large")}
    for cid, s in small.items():
        pair = {s.verdict, large[cid].verdict}
        if pair == {"holds", "violated"}:
            strong = s if s.verdict == "holds" else large[cid]
            assert strong.weak, f"{cid}: {s.label} (small) vs {large[cid].label} (large)"


ZERO_PAYOFF_MARKET = {"seed": 390790834, "params": {"jobs": 10, "T": 20, "H": 4, "K": 4, "epochs_min": 50,
                      "epochs_max": 200, "chunks_min": 50, "chunks_max": 100, "minibatches_min": 10,
                      "minibatches_max": 100, "n_calib": 300}}  # fmt: skip


def test_c_o5b_tolerance_rejection_is_a_violation() -> None:
    """Job 0 arrives late; its sigmoid value has decayed to 6.6e-10 (peak 19.46) by the earliest
    completion and the empty cluster's price is ~4e-45, so its best payoff μ = 6.6e-10 is positive far
    beyond float noise; OASiS's 1e-9·max(1, f̂) admission guard rejects it. The claim's zero-payoff
    threshold sits below the admission threshold, so this tolerance rejection counts."""
    from marketsim.market.oasis.claims import _empty_rejections, _market

    m = _market(ZERO_PAYOFF_MARKET)
    q = m.true_request(0)
    zero: list = []
    tol: list = []
    bad = _empty_rejections(m.cluster, [q], m.constants, zero, tol)
    assert [j for j, _ in bad] == [0] and zero == []
    assert tol == bad and 1e-10 < tol[0][1] < 1e-9 < 1e-9 * q.utility(1)


@pytest.mark.parametrize(("f_hat", "cost"), [(6.6e-10, 4e-45), (0.5, 0.4999), (19.46, 3.0), (1e6, 1e6 - 1.0)])
def test_c_o5b_zero_threshold_is_below_the_admission_threshold(f_hat: float, cost: float) -> None:
    import inspect
    from types import SimpleNamespace

    from marketsim.market.oasis.claims import _zero_payoff_threshold
    from marketsim.market.oasis.mechanism import Oasis

    admit_tol = inspect.signature(Oasis.__init__).parameters["admit_tol"].default
    q = SimpleNamespace(arrival=0, utility=lambda n: f_hat)
    res = SimpleNamespace(schedule=SimpleNamespace(completion=0), cost=cost, mu=f_hat - cost)
    z = _zero_payoff_threshold(q, res)
    assert 0 < z < admit_tol * max(1.0, f_hat)
    assert res.mu > z  # every one of these payoffs is positive beyond float noise
    assert _zero_payoff_threshold(q, SimpleNamespace(schedule=None, cost=0.0, mu=-1.0)) == float("inf")


def test_c_o5b_reports_a_real_rejection(monkeypatch) -> None:
    """Power: an OASiS whose admission guard rejects clearly positive payoffs must be caught."""
    import marketsim.market.oasis.claims as oc

    class Picky(oc.Oasis):
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **{**k, "admit_tol": 1e6})

    monkeypatch.setattr(oc, "Oasis", Picky)
    (c,) = run_claims("oasis", ids=["C-O5b"])
    assert c.verdict == "violated" and c.witness is not None and max(c.witness["mu"]) > 1e-3


def test_c_o5b_counts_only_tolerance_rejections() -> None:
    """Every violation the ledger finds is a rejection by OASiS's admission tolerance (the search
    itself finds the schedule), and the detail says which thresholds are used."""
    (c,) = run_claims("oasis", ids=["C-O5b"])
    assert c.verdict == "violated" and not c.weak
    assert c.details["tolerance_rejections"] == sum(v["jobs_rejected"] for v in c.details["per_source"].values())
    assert c.details["tolerance_rejections_max_mu"] < 1e-9
    assert "below the admission threshold" in c.details["note"] and "admission tolerance" in c.reason


C6_W = np.array([[1.0, 1.5019, 1.6983], [1.0, 1.4480, 2.0830]])
C6_M = np.array([2.0, 2.0, 1.0])


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_c6_counts_a_unique_noncontiguous_optimum(scale: float) -> None:
    """The ledger's own unrestricted non-cooperative instance: the optimum is unique and row 1 uses
    GPU types 0 and 2 only. With a fixed face slack 1e-9·|f*| against a fixed threshold 1e-7 the
    slack alone let the face LP put s = 1.3e-7 on type 1 and the row passed as contiguous."""
    from marketsim.market.oef.claims import _no_contiguous_optimum, _p_structural

    m = C6_M * scale
    a = registry.get("oef-noncoop").fn(C6_W, m)
    assert a.X[1, 1] == pytest.approx(0.0, abs=1e-9) and a.X[1, 0] > 0.1 and a.X[1, 2] > 0.1
    assert _no_contiguous_optimum("oef-noncoop", C6_W, m, a.X, 1)
    assert _p_structural(a, C6_W, m, None, mechanism="oef-noncoop") == 1.0


def test_c6_tied_optimum_with_a_contiguous_alternative_is_not_counted() -> None:
    """Identical rows: every equal-throughput split is optimal; row 0 of X uses types {0, 2}, but
    X' = [[1, 1, 0], [0, 0, 1]] (both rows at throughput 3) is optimal and contiguous."""
    from marketsim.market.oef.claims import _no_contiguous_optimum

    W = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    X = np.array([[1.0, 0.0, 2 / 3], [0.0, 1.0, 1 / 3]])
    assert not _no_contiguous_optimum("oef-noncoop", W, np.ones(3), X, 0)


def test_c6_tolerances_are_relative_and_consistent() -> None:
    from marketsim.market.oef.claims import C6_SUPPORT_REL, C6_TIE_REL, c6_tolerances

    c = -np.array([1.0, 2.0, 3.0])
    tol1, slack1 = c6_tolerances(c, np.array([1.0, 2.0]))
    tol2, slack2 = c6_tolerances(1000 * c, np.array([1000.0, 2000.0]))
    assert tol1 == pytest.approx(2 * C6_SUPPORT_REL) and tol2 == pytest.approx(1000 * tol1)
    assert slack2 == pytest.approx(1e6 * slack1)  # objective and mass both scale by 1000
    # moving support_tol GPUs at a rate of C6_TIE_REL·max|c| costs more than the slack
    assert C6_TIE_REL * 3.0 * tol1 > slack1


def test_c6_ordered_instance_without_a_contiguous_optimum() -> None:
    """An instance of the ordered generator (step ratios sorted over users, as Theorem 5.2's proof
    assumes): cooperative OEF gives row 2 types {2, 4}. Moving mass onto type 3 costs ~7.5e-4 of
    throughput per GPU: the old face slack (1e-9·|f*| = 4.2e-8) let s reach 5.6e-5 > 1e-7 there."""
    W = np.array([[1.0, 1.0258, 1.2204, 1.4705, 1.515], [1.0, 1.1384, 1.5004, 1.9299, 2.7699],
                  [1.0, 1.2254, 1.7451, 2.2626, 3.3813], [1.0, 1.321, 2.0114, 2.6209, 3.9311]])  # fmt: skip
    assert (np.diff(np.log(W), axis=1)[1:] >= np.diff(np.log(W), axis=1)[:-1]).all()  # ordered
    m = np.array([7.0, 1.0, 5.0, 5.0, 4.0])
    X = registry.get("oef-coop", "fair-share").fn(W, m).X
    assert X[2, 2] > 1 and X[2, 4] > 1 and X[2, 3] == pytest.approx(0.0, abs=1e-9)
    assert measure("structural_noncontiguous", "oef-coop", W, m) == 1.0
