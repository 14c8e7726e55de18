"""Independent oracles (marketsim.market.audit.oracles): a witness that flips a verdict is confirmed by an
independent path, or reported as an artefact (issue #32 item 2)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.market.audit import claims as ledger
from marketsim.market.audit import hunt as hunt_mod
from marketsim.market.audit.hunt import Evaluation, hunt_claims
from marketsim.market.audit.oracles import confirm_witness, oracle_kinds, register_oracle

# the hunt's C-P7 "counterexample" (benchmarks/results/hunt_ratio.json before issue #32), made on the
# spec's workload grid (dp_units = 40): OPT/ALG = 2833 against the bound 1485
GRID_WITNESS = {
    "kind": "pdors", "claim": "C-P7",
    "args": {"jobs": [[0.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.5, 5.9, 1.3],
                      [3.0, 6.0, 3.0, 2.0, 0.5, 1.0, 1.0, 1.0, 4.2, 2.5],
                      [0.0, 5.0, 4.0, 2.0, 1.0, 2.0, 2.0, 1.1, 4.8, 3.3]],
             "I": 3, "cap": 4.678081717034623, "mode": "thm3", "delta": 0.1, "run_seeds": [0, 1],
             "time_limit": 60.0, "dp": "grid", "dp_units": 40},
}  # fmt: skip


def test_every_flipping_witness_kind_of_the_ratio_claims_has_an_oracle() -> None:
    kinds = oracle_kinds()
    assert "exact-dp+milp-zero-gap" in kinds["pdors"]
    assert "milp-zero-gap" in kinds["oasis_tiny"]
    assert kinds["misreport"] == ["exact-best-response", "resolution-2x-4x"]
    assert "resolution-2x-4x" in kinds["property"]


def test_the_grid_witness_reproduces_on_the_grid_but_is_an_artefact() -> None:
    """The ledger's own checker reproduces the grid witness (the grid still rounds down), the oracle
    (exact DP + MILP at zero gap) does not: OPT/ALG = 1 there."""
    assert ledger.recheck_witness(GRID_WITNESS)
    res = confirm_witness(GRID_WITNESS)
    assert res.oracle == "exact-dp+milp-zero-gap" and res.confirmed is False and res.independent
    assert res.label == "artefact, not confirmed by exact-dp+milp-zero-gap"
    assert res.detail["exact"]["violations"] == 0
    assert res.detail["exact"]["detail"]["max_ratio"] == pytest.approx(1.0, abs=1e-9)
    assert {"grid_x2", "grid_x4"} <= set(res.detail)  # the grid at 2x and 4x dp_units, reported


def test_an_artefact_witness_makes_the_verdict_inconclusive() -> None:
    c = ledger.Claim("pdors", "C-P7", "s", "h", "violated", 1.9, "e", GRID_WITNESS, 4, 1, 0, "small", 0.0)
    ledger.confirm_entry(c)
    assert c.verdict == "inconclusive" and "artefact, not confirmed by exact-dp+milp-zero-gap" in c.reason
    assert c.oracle["confirmed"] is False
    assert "artefact, not confirmed by" in ledger.to_markdown([c])
    assert c.to_dict()["oracle"]["oracle"] == "exact-dp+milp-zero-gap"


def test_a_real_misreport_survives_the_resolution_oracle_a_null_one_does_not() -> None:
    """W = [[1,2],[1,5]]: tenant 1 copying tenant 0's row gains 75% at every resolution; a 'lie' that
    is the truth gains nothing."""
    from marketsim.market.audit.oracles import _resolution_misreport

    w = {"kind": "misreport", "mechanism": "oef-noncoop", "W": [[1.0, 2.0], [1.0, 5.0]], "m": [1.0, 1.0],
         "deviator": 1, "report": [1.0, 2.0], "weight": None, "gain": 0.0, "tol": 1e-7}  # fmt: skip
    res = _resolution_misreport(w)
    assert res.confirmed and res.oracle == "resolution-2x-4x"
    for s in ("x2", "x4"):
        assert res.detail[s]["relative_gain"] == pytest.approx(0.75, rel=1e-6)
    assert not _resolution_misreport({**w, "report": [1.0, 5.0]}).confirmed


def test_a_witness_kind_without_an_oracle_is_reported_as_not_independently_confirmed() -> None:
    res = confirm_witness({"kind": "no-such-kind"})
    assert res.confirmed is None and not res.independent
    assert res.label.startswith("not independently confirmed")

    # a plugin's own witness format (no 'kind'): said, not raised (it failed CI's plugin step)
    res = confirm_witness({"W": [[1.0]], "lie": {"1": 2.0}})
    assert res.confirmed is None and "no 'kind'" in res.oracle


def test_an_audit_result_becomes_a_misreport_witness_the_oracle_confirms() -> None:
    """The plugin route: ``misreport_witness(t, r)`` of an audit's best lie (W = [[1,2],[1,5]],
    tenant 1 under oef-noncoop gains 75% by copying row 0) is re-checked at 2x and 4x."""
    from marketsim.market.audit import FairShareTarget, audit
    from marketsim.market.audit.hunt_spaces import misreport_witness

    t = FairShareTarget("oef-noncoop", W=np.array([[1.0, 2.0], [1.0, 5.0]]), m=np.array([1.0, 1.0]))
    r = audit(t, 1, rng=np.random.default_rng(0))
    w = misreport_witness(t, r, reaudit=False)
    assert w["kind"] == "misreport" and w["deviator"] == 1 and w["relative_gain"] >= 0.75 - 1e-6
    res = confirm_witness(w)
    assert res.confirmed is True


class _Toy:
    name = "toy"

    def variants(self) -> list[tuple[Any, int]]:
        return [("v", 1)]

    def decode(self, v: Any, x: np.ndarray) -> float:
        return float(x[0])

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.random())

    def evaluate(self, inst: float, rng: np.random.Generator) -> Evaluation:
        return Evaluation(inst, inst > 0.5, {"kind": "toy_w", "x": inst}, inst)

    def shrink(self, inst: float) -> list[float]:
        return []


def test_a_hunt_witness_the_oracle_rejects_flips_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(hunt_mod._SPACES, ("toy", "T1"), lambda size, claim: _Toy())
    monkeypatch.setattr(hunt_mod, "hunt_spaces", lambda: sorted(hunt_mod._SPACES))
    monkeypatch.setitem(ledger._CHECKERS, "toy_w", lambda w: True)
    from marketsim.market.audit import oracles

    monkeypatch.setitem(oracles._ORACLES, "toy_w", [])
    register_oracle("toy_w", "toy-oracle")(lambda w: oracles.OracleResult("toy-oracle", False))

    def claim() -> ledger.Claim:
        return ledger.Claim("toy", "T1", "s", "h", "holds", 0.0, "e", None, 30, 0, 0, "small", 0.0)

    c = hunt_claims([claim()], evals=20, seed=0)[0]
    assert c.verdict == "holds" and c.hunt["rechecked"] is True
    assert c.hunt["oracle"]["confirmed"] is False
    assert c.hunt["artefacts"][0]["label"] == "artefact, not confirmed by toy-oracle"
    assert "artefact" in ledger.hunt_cell(c.hunt)
    register_oracle("toy_w", "toy-oracle")(lambda w: oracles.OracleResult("toy-oracle", True))
    c = hunt_claims([claim()], evals=20, seed=0)[0]
    assert c.verdict == "violated" and c.oracle["label"] == "confirmed by toy-oracle"


def test_the_resolution_oracle_scales_gavels_one_job_bound() -> None:
    """Gavel's max-sum-throughput, W = [[1,2],[1,5]], m = [1,1], one job per row (time <= 1): truthful,
    row 0 runs on the slow type (utility 1); reporting [1, 6] wins it the fast one (true utility 2,
    +100%). Counted in half / quarter GPUs the jobs' bound must scale too (caps = 2, 4 devices):
    then the gain is +100% at every resolution. Doubling m alone gives each job a second fast GPU to
    share and the real gain would vanish (an oracle calling it an artefact)."""
    from marketsim.market.audit.oracles import _resolution_misreport

    w = {"kind": "misreport", "mechanism": "gavel-max-sum-throughput", "W": [[1.0, 2.0], [1.0, 5.0]],
         "m": [1.0, 1.0], "deviator": 0, "report": [1.0, 6.0], "weight": None, "gain": 1.0, "tol": 1e-7}  # fmt: skip
    res = _resolution_misreport(w)
    assert res.confirmed, res.detail
    for s, f in (("x2", 2.0), ("x4", 4.0)):
        assert res.detail[s]["truthful_utility"] == pytest.approx(1.0 * f, rel=1e-6)
        assert res.detail[s]["lie_utility"] == pytest.approx(2.0 * f, rel=1e-6)


def test_the_ledger_run_confirms_its_witness_before_reporting(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_claims re-checks a violated claim's witness with the oracle of its kind: rejected, the
    verdict is `inconclusive` (an artefact), confirmed it stays `violated`; `confirm=False` skips it."""
    from marketsim.market.audit import oracles

    ledger.claims()  # load the registered papers first (the toy claim is added to them)
    monkeypatch.setitem(ledger._CLAIMS, ("toyp", "T1"), ledger.ClaimSpec(
        "toyp", "T1", "s", "h", "universal",
        lambda ctx: ledger.Measurement(5, 1, 1.0, "e", {"kind": "toy_l", "x": 1.0})))  # fmt: skip
    monkeypatch.setitem(ledger._CHECKERS, "toy_l", lambda w: True)
    monkeypatch.setitem(oracles._ORACLES, "toy_l", [])
    register_oracle("toy_l", "toy-oracle")(lambda w: oracles.OracleResult("toy-oracle", False))
    (c,) = ledger.run_claims("toyp")
    assert c.verdict == "inconclusive" and c.oracle["label"] == "artefact, not confirmed by toy-oracle"
    assert ledger.run_claims("toyp", confirm=False)[0].verdict == "violated"
    register_oracle("toy_l", "toy-oracle")(lambda w: oracles.OracleResult("toy-oracle", True))
    (c,) = ledger.run_claims("toyp")
    assert c.verdict == "violated" and c.oracle["confirmed"] is True
