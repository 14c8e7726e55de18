"""The generic auction layers on the control auctions: Mesa bidder model, online audit target
(detector power), study TOML validation, study runner (executors, CRN, paired lies) and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from marketsim.agents.auction import AuctionModel, BidStrategy
from marketsim.analysis.engine.studies import load_study, parse_study, run_study, study_names
from marketsim.analysis.frontends.cli import main
from marketsim.analysis.frontends.study_report import write_study
from marketsim.market.auction.controls import ControlBid, ControlMarket, make_market
from marketsim.market.auction.market import decisions_by_id, run_market
from marketsim.market.audit.online import OnlineAuctionTarget
from marketsim.market.audit.search import audit
from marketsim.market.errors import InputError


def _tiny() -> ControlMarket:
    # capacity 2 per slot, price 1 per unit-slot; hand-checkable:
    # job 0 (t0, 2 units x 2 slots, value 6) -> admitted at t0, pays 4 (fixed) / 6 (pay-your-bid)
    # job 1 (t0, 1 unit x 1 slot, value 3)   -> no capacity at t0/t1 -> starts t2, pays 1 / 3
    # job 2 (t1, 1 unit x 1 slot, value 0.5) -> value below cost 1: rejected
    bids = (ControlBid(0, 0, 6.0, 2, 2), ControlBid(1, 0, 3.0, 1, 1), ControlBid(2, 1, 0.5, 1, 1))
    return ControlMarket(T=4, capacity=2, price=1.0, true_bids=bids)


def test_mesa_model_hand_checked_outcome():
    m = _tiny()
    model = AuctionModel(m, "fixed-price", rng=0).run()
    b = model.bidders
    assert [b[i].admitted for i in range(3)] == [True, True, False]
    assert b[0].decision.completion == 1 and b[1].decision.completion == 2
    assert [b[i].payment for i in range(3)] == [4.0, 1.0, 0.0]
    assert [b[i].surplus for i in range(3)] == [2.0, 2.0, 0.0]
    s = model.summary()
    assert s["welfare"] == 9.0 and s["revenue"] == 5.0 and s["utility"] == 4.0
    assert s["admission_rate"] == pytest.approx(2 / 3) and s["utilisation"] == pytest.approx(5 / 8)
    dc = model.datacollector.get_model_vars_dataframe()
    assert list(dc["slot"]) == [0, 1, 2, 3] and list(dc["submitted"]) == [2, 1, 0, 0]
    assert dc["welfare"].iloc[-1] == 9.0 and dc["revenue"].iloc[-1] == 5.0
    pyb = AuctionModel(m, "pay-your-bid", rng=0).run().summary()
    assert pyb["revenue"] == 9.0 and pyb["utility"] == 0.0


def test_mesa_model_equals_plain_replay_and_strategies_apply():
    m = make_market({"jobs": 15, "T": 12}, np.random.default_rng(3))
    model = AuctionModel(m, "fixed-price", {4: BidStrategy({"arrival_delay": 2}, "late")}, rng=1).run()
    reports = [model.bidders[i].report for i in sorted(model.bidders)]
    assert reports[4].arrival == min(m.true_bids[4].arrival + 2, m.T - 1)
    plain = decisions_by_id(run_market(m, "fixed-price", reports))
    for i, bidder in model.bidders.items():
        assert bidder.decision.to_dict() == plain[i].to_dict()
    assert model.summary()["liars"] == 1.0
    frame = model.bidder_frame()
    assert list(frame["strategy"]).count("late") == 1


def test_mesa_model_bad_input():
    m = _tiny()
    with pytest.raises(InputError, match="strategies"):
        AuctionModel(m, "fixed-price", {99: BidStrategy({"value_scale": 2.0})})
    with pytest.raises(InputError, match="mechanism"):
        AuctionModel(m, "oasis")
    with pytest.raises(InputError, match="misreport parameter"):
        AuctionModel(m, "fixed-price", {0: BidStrategy({"speed": 2.0})})
    with pytest.raises(InputError, match="call run"):
        AuctionModel(m, "fixed-price").summary()


def test_online_audit_power_and_truthful_control():
    """Detector power: under pay-your-bid an admitted bidder gains by shading its value towards the
    posted cost (at most value − cost); under the fixed price no misreport of value, size or arrival
    gains anything."""
    m = make_market({"jobs": 10, "T": 8}, np.random.default_rng(0))
    admitted = [d.job_id for d in run_market(m, "pay-your-bid") if d.admitted]
    truth = {b.job_id: b for b in m.bids()}
    pyb = OnlineAuctionTarget(m, "pay-your-bid")
    gains = []
    for a in admitted:
        r = audit(pyb, a)
        bound = truth[a].value - m.price * truth[a].units * truth[a].duration
        assert r.best_gain <= bound + 1e-9
        gains.append((r.best_gain, bound))
    assert max(g for g, _ in gains) > 0.5 * max(b for _, b in gains) > 0
    fixed = OnlineAuctionTarget(m, "fixed-price")
    for a in fixed.agents():
        r = audit(fixed, a)
        assert r.best_gain <= 1e-9, (a, r.witness)


def _study_doc(**over):
    doc = {
        "kind": "study",
        "paper": "control",
        "mechanisms": ["fixed-price", "pay-your-bid"],
        "replications": 2,
        "base": {"jobs": 8, "T": 8},
        "panel": [{"x": "jobs", "values": [6, 10]}],
        "reported": [{"panel": 0, "metric": "welfare", "text": "equal welfare"}],
        "variant": [{"name": "shade", "params": {"value_scale": 0.6}, "bidders": [0, 1]}],
    }
    doc.update(over)
    return doc


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"kind": "scenario"}, "kind"),
        ({"paper": "nope"}, "paper"),
        ({"mechanisms": ["fixed-price", "warp-drive"]}, "mechanisms"),
        ({"panel": []}, "panel"),
        ({"panel": [{"x": "jobs", "values": []}]}, "values"),
        ({"reported": [{"panel": 3, "text": "x"}]}, "reported[0].panel"),
        ({"variant": [{"name": "v", "params": {"value_scale": 0.5}}]}, "variant[0]"),
        ({"variant": [{"name": "truthful", "params": {"value_scale": 0.5}, "fraction": 0.1}]}, "name"),
        ({"replications": 0}, "replications"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_study_validation_names_the_field(over, field):
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_study(_study_doc(**over), "t")


def test_study_local_and_process_identical_and_paired(tmp_path):
    study = parse_study(_study_doc(), "t")
    a = run_study(study, executor="local", progress=False)
    b = run_study(study, executor="process", workers=2, progress=False)
    assert not a.errors and not b.errors
    drop = ["seconds"]
    pd.testing.assert_frame_equal(a.frame.drop(columns=drop), b.frame.drop(columns=drop))
    f = a.frame
    assert len(f) == 2 * 2 * 2 * 2  # x values x reps x variants x mechanisms
    # common random numbers: truthful welfare equal across the two rules in every cell
    t = f[f["variant"] == "truthful"].pivot_table(index=["x", "replication"], columns="mechanism", values="welfare")
    np.testing.assert_allclose(t["fixed-price"], t["pay-your-bid"])
    # shading never helps under the fixed price; the liars' paired gain is >= 0 under pay-your-bid
    v = f[f["variant"] == "shade"]
    assert (v[v["mechanism"] == "fixed-price"]["liar_gain"] <= 1e-9).all()
    assert (v[v["mechanism"] == "pay-your-bid"]["liar_gain"] >= -1e-9).all()
    paths = write_study(a, tmp_path)
    report = paths["report"].read_text()
    assert "equal welfare" in report and "liar_gain" in report
    assert paths["panel0"].stat().st_size > 0
    assert json.loads(paths["meta"].read_text())["replications"] == 2


def test_embedded_control_study_loads():
    assert "control_auction" in study_names()
    s = load_study("control_auction")
    assert s.paper == "control" and s.variants[0].name == "shade"


@pytest.mark.slow  # about 15-25 s: CI's slow step (the default suite's 10-minute budget)
def test_cli_run_study_and_audit_auction(tmp_path, capsys):
    def cli(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        cap = capsys.readouterr()
        return code, cap.out, cap.err

    out = tmp_path / "ca"
    code, _, err = cli("run", "control_auction", "--reps", "1", "--out", str(out), "--quiet")
    assert code == 0, err
    assert (out / "results.parquet").is_file() and (out / "report.md").is_file()
    code, text, err = cli("audit", "--mechanism", "pay-your-bid", "--json", "--set", "jobs=6")
    assert code == 0, err
    res = json.loads(text)
    assert res["instance"]["jobs"] == 6 and len(res["agents"]) == 6
    assert res["violations"]["strategyproofness"] > 0
    code, text, _ = cli("audit", "--mechanism", "fixed-price", "--json", "--set", "jobs=6")
    assert json.loads(text)["violations"]["strategyproofness"] <= 1e-9
    code, _, err = cli("audit", "--mechanism", "fixed-price", "--speedups", "1,2;1,5")
    assert code == 2 and "--speedups" in err
    code, _, err = cli("audit", "--mechanism", "fixed-price", "--set", "jobz=3")
    assert code == 2 and "jobz" in err


@pytest.mark.parametrize("common", [True, False])
def test_common_workload_panel_reuses_the_workload_across_x(common):
    """Prices 1 and 1 + 1e-9 admit the same bids on the same workload: identical welfare per
    replication iff the panel shares its workload across x."""
    doc = _study_doc(panel=[{"x": "price", "values": [1.0, 1.0 + 1e-9], "common_workload": common}], variant=[])
    doc["reported"] = []
    res = run_study(parse_study(doc, "t"), progress=False, mechanisms=["fixed-price"])
    w = res.frame.pivot_table(index="replication", columns="x", values="welfare")
    same = np.allclose(w.iloc[:, 0], w.iloc[:, 1])
    assert same == common


def test_common_workload_must_be_boolean():
    with pytest.raises(InputError, match=r"panel\[0\].common_workload"):
        parse_study(_study_doc(panel=[{"x": "price", "values": [1.0], "common_workload": "yes"}]), "t")


def test_auction_gain_curves_match_the_hand_formula_and_report(tmp_path, capsys):
    """Pay-your-bid, admitted bidder of value v and posted cost c: reporting f·v with f·v > c keeps
    the same slot and pays f·v instead of v, so the gain is v·(1 − f) exactly; the fixed price
    has gain <= 0 everywhere."""
    from marketsim.analysis.frontends.audit_report import target_gain_curves

    m = make_market({"jobs": 8, "T": 8}, np.random.default_rng(0))
    admitted = [d.job_id for d in run_market(m, "pay-your-bid") if d.admitted]
    truth = {b.job_id: b for b in m.bids()}
    curves = target_gain_curves(OnlineAuctionTarget(m, "pay-your-bid"), admitted)
    assert set(curves["dimension"]) == {"value_scale"}  # value-kind dimensions are not factor curves
    checked = 0
    for a in admitted:
        v, c = truth[a].value, m.price * truth[a].units * truth[a].duration
        rows = curves[(curves["agent"] == a) & (curves["factor"] * v > c + 1e-9) & (curves["factor"] <= 1)]
        np.testing.assert_allclose(rows["gain"], v * (1 - rows["factor"]), atol=1e-9)
        checked += len(rows)
    assert checked > 0
    assert (target_gain_curves(OnlineAuctionTarget(m, "fixed-price"))["gain"] <= 1e-9).all()
    code = main(
        ["audit", "--mechanism", "pay-your-bid", "--set", "jobs=5", "--report", str(tmp_path), "--instances", "2"]
    )
    capsys.readouterr()
    assert code == 0
    for f in ("regret.png", "gain_curves.png", "regret.csv", "gain_curves.csv", "report.md"):
        assert (tmp_path / f).stat().st_size > 0
    regret = pd.read_csv(tmp_path / "regret.csv")
    assert regret["instance"].nunique() == 2 and regret["best_gain"].max() > 0
