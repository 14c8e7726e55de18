"""``marketsim audit`` and ``marketsim claims``: keys, consistency with the auditor, bad inputs;
audit plots and report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from marketsim.analysis.frontends.audit_report import (
    INSTANCE_BUILDERS,
    AuditCase,
    AuditRequest,
    build_case,
    gain_curve_frame,
    register_instance_builder,
    regret_frame,
    write_audit_report,
)
from marketsim.analysis.frontends.cli import main
from marketsim.market.audit import AuditConfig, FairShareTarget, audit_all
from marketsim.market.audit.claims import claims as registered_claims
from marketsim.market.errors import InputError


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_audit_json_matches_the_auditor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, ["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,5", "--json"])
    assert code == 0
    doc = json.loads(out)
    assert len(doc["agents"]) == 2
    for a in doc["agents"]:
        assert {"agent", "truthful_utility", "best_gain", "relative_gain", "witness"} <= set(a)
    assert {"strategyproofness", "envy_freeness", "sharing_incentive", "pareto_efficiency"} <= set(doc["violations"])
    direct = audit_all(FairShareTarget("oef-noncoop", np.array([[1.0, 2.0], [1.0, 5.0]]), np.ones(2)), rng=0)
    for a, r in zip(doc["agents"], direct, strict=True):
        assert a["agent"] == r.agent
        assert a["truthful_utility"] == pytest.approx(r.truthful_utility, rel=1e-12)
        assert a["best_gain"] == pytest.approx(r.best_gain, rel=1e-12, abs=1e-12)
        assert a["relative_gain"] == pytest.approx(r.relative_gain, rel=1e-12, abs=1e-12)
    assert doc["violations"]["strategyproofness"] == pytest.approx(max(r.best_gain for r in direct))
    # the truthful OEF allocation on this instance: t* from 2 + 5 x... both users' utilities equal
    assert doc["agents"][0]["truthful_utility"] == pytest.approx(doc["agents"][1]["truthful_utility"])


def test_auction_audit_json_has_the_fair_share_fields(capsys: pytest.CaptureFixture[str]) -> None:
    from marketsim.analysis.frontends.audit_report import AT_LIMIT_NOTE, ZERO_TRUTHFUL_NOTE

    _, fs_out, _ = _run(capsys, ["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,5", "--json"])
    fields = set(json.loads(fs_out)["agents"][0])
    assert {"at_limit", "witness_report", "notes"} <= fields
    code, out, _ = _run(capsys, ["audit", "--mechanism", "pay-your-bid", "--bidders", "2,4", "--json"])
    assert code == 0
    doc = json.loads(out)
    for a in doc["agents"]:
        assert set(a) == fields, set(a) ^ fields
        # the control study's bidders pay their posted cost: truthful surplus 0, so a gain is not a ratio
        assert a["truthful_utility"] == 0.0 and a["best_gain"] > 0
        assert a["relative_gain"] is None and ZERO_TRUTHFUL_NOTE in a["notes"]
        assert a["at_limit"] == (AT_LIMIT_NOTE in a["notes"])
    assert "inf" not in out
    code, text, _ = _run(capsys, ["audit", "--mechanism", "pay-your-bid", "--bidders", "2"])
    assert code == 0 and "n/a (truthful 0)" in text and "inf" not in text and "note: truthful utility is 0" in text


def test_audit_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, ["audit", "--mechanism", "max-throughput", "--speedups", "1,2;1,5", "--capacity", "2,1"]
    )
    assert code == 0 and "best gain" in out and "strategyproofness" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["audit", "--mechanism", "nope", "--speedups", "1,2;1,5"], "not a registered mechanism"),
        (["audit", "--mechanism", "fifo", "--speedups", "1,2;1,5"], "is for fair-share allocators"),
        (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1"], "expected 2"),
        (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,-5"], "must be > 0"),
        (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,5", "--capacity", "1"], "--capacity"),
        (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,5", "--weights", "1,0"], "--weights[1]"),
        (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,5", "--seed", "-1"], "--seed"),
        (["audit", "--speedups", "1,2"], "--mechanism"),
        (["claims", "--paper", "nope"], "no registered claims"),
        (["claims", "--size", "huge"], "invalid choice"),
    ],
)
def test_bad_inputs_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    code, out, err = _run(capsys, argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and needle in lines[0], lines


def test_claims_json_lists_every_oef_claim(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          cli_reads_oef_small_ledger: list) -> None:  # fmt: skip
    code, out, _ = _run(capsys, ["claims", "--paper", "oef", "--json", "--report", str(tmp_path)])
    assert code == 0
    recs = json.loads(out)
    assert [r["claim_id"] for r in recs] == [c.claim_id for c in registered_claims("oef")]
    for r in recs:
        assert r["verdict"] in {"holds", "violated", "inconclusive"}
        assert {"statement", "effect_size", "witness"} <= set(r)
    report = (tmp_path / "report.md").read_text()
    assert "## Claims ledger" in report and all(f"| {r['claim_id']} |" in report for r in recs)


def test_instance_builders_are_pluggable() -> None:
    assert "fair-share" in INSTANCE_BUILDERS
    calls: list[str] = []

    @register_instance_builder("auction")
    def _fake(req: AuditRequest) -> AuditCase:
        calls.append(req.mechanism)
        return AuditCase(target=None)

    try:
        build_case(AuditRequest("fifo", np.ones((1, 1)), np.ones(1)))
        assert calls == ["fifo"]
    finally:
        del INSTANCE_BUILDERS["auction"]
    with pytest.raises(InputError, match="no audit instance builder"):
        build_case(AuditRequest("fifo", np.ones((1, 1)), np.ones(1)))


def test_regret_and_gain_curves_report(tmp_path: Path) -> None:
    cfg = AuditConfig(n_grid=3, n_joint=4, refine_starts=0, probes=False)
    regret = regret_frame(["oef-noncoop", "max-throughput"], n_instances=2, seed=1, config=cfg)
    assert set(regret["mechanism"]) == {"oef-noncoop", "max-throughput"}
    assert (regret["best_gain"] >= 0).all()
    again = regret_frame(["oef-noncoop", "max-throughput"], n_instances=2, seed=1, config=cfg)
    assert regret.equals(again)
    curves = gain_curve_frame("oef-noncoop", [[1, 2, 3], [1, 1.5, 4]], [1, 1, 1], factors=[0.5, 1.0, 2.0])
    assert set(curves["dimension"]) == {"1", "2"}
    assert np.allclose(curves.loc[curves["factor"] == 1.0, "gain"], 0.0)
    path = write_audit_report(tmp_path, regret=regret, curves=curves)
    text = path.read_text()
    assert "regret.png" in text and "gain_curves.png" in text
    assert (tmp_path / "regret.png").stat().st_size > 0 and (tmp_path / "gain_curves.png").stat().st_size > 0


def test_audit_report_flag_writes_plots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["audit", "--mechanism", "maxmin", "--speedups", "1,2;1,5", "--report", str(tmp_path), "--instances", "1"]
    code, out, err = _run(capsys, argv)
    assert code == 0 and "report.md" in err
    assert {"report.md", "regret.png", "gain_curves.png", "regret.csv", "gain_curves.csv"} <= {
        p.name for p in tmp_path.iterdir()
    }
    assert _run(capsys, [*argv[:-1], "0"])[0] == 2
