"""``marketsim learn``: learning scenarios end to end, their outputs and their input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from marketsim.analysis.frontends.cli import main
from marketsim.analysis.frontends.learn import learning_names, load_learning


def test_embedded_learning_scenarios_parse() -> None:
    names = learning_names()
    assert {"learn_oef", "learn_oef_hedge", "learn_auctions", "learn_first_price"} <= set(names)
    for n in names:
        sc = load_learning(n)
        assert sc.mechanisms and 1.0 in sc.grid


def test_learn_oef_writes_the_price_of_lying_table(tmp_path: Path, capsys) -> None:
    assert main(["learn", "learn_oef", "--out", str(tmp_path), "--quiet"]) == 0
    for f in ("trajectories.parquet", "price_of_lying.csv", "convergence.png", "report.md"):
        assert (tmp_path / f).stat().st_size > 0
    table = pd.read_csv(tmp_path / "price_of_lying.csv").set_index("mechanism")
    sc = load_learning("learn_oef")
    assert list(table.index) == list(sc.mechanisms)
    # non-cooperative OEF: best responses cycle (the audit finds a lie at truth, so truth is not a rest point)
    assert table.loc["oef-noncoop", "status"] == "cycle" and table.loc["oef-noncoop", "period"] >= 2
    # truthful totals by hand for OEF non-coop: 15/7 each
    assert table.loc["oef-noncoop", "truthful_total"] == pytest.approx(30 / 7)
    # maxmin stays at truth: price of lying exactly 1, no gain on the wide grid
    assert table.loc["maxmin", "status"] == "converged" and table.loc["maxmin", "price_of_lying"] == 1.0
    assert table.loc["maxmin", "eps_abs"] == 0.0 and table.loc["maxmin", "certificate"] == "certified"
    # Gavel's grid equilibrium holds on the wide grid but not against the audit's search: not certified
    gavel = table.loc["gavel"]
    assert gavel["status"] == "converged" and gavel["eps_grid"] == 0.0 and gavel["eps_audit"] > 0.01
    assert gavel["certificate"] == "not certified" and gavel["eps_rel"] == gavel["eps_audit"]
    assert table.loc["oef-noncoop", "certificate"] == "not certified"  # a cycle is no certificate
    traj = pd.read_parquet(tmp_path / "trajectories.parquet")
    assert set(traj["mechanism"]) == set(sc.mechanisms)
    report = (tmp_path / "report.md").read_text()
    assert "| oef-noncoop | cycle |" in report and "eps_audit" in report
    assert f"* gavel: agent {int(gavel['deviator'])}: " in report


@pytest.mark.slow  # about 15-25 s: CI's slow step (the default suite's 10-minute budget)
def test_learning_runs_are_deterministic_with_every_executor(tmp_path: Path) -> None:
    """Same seed, same trajectories and price-of-lying table: twice locally and with 2 processes
    (tasks finish in any order there; the output order is the scenario's)."""
    runs = {"a": [], "b": [], "p": ["--workers", "2"]}
    for d, extra in runs.items():
        argv = ["learn", "learn_oef_hedge", "--out", str(tmp_path / d), "--rounds", "60", "--quiet", *extra]
        assert main(argv) == 0
    a = pd.read_parquet(tmp_path / "a" / "trajectories.parquet")
    assert len(a) and a["mechanism"].nunique() > 1
    for d in ("b", "p"):
        pd.testing.assert_frame_equal(a, pd.read_parquet(tmp_path / d / "trajectories.parquet"))
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "a" / "price_of_lying.csv"), pd.read_csv(tmp_path / d / "price_of_lying.csv")
        )


def test_a_failing_learning_task_keeps_the_others(monkeypatch) -> None:
    import marketsim.analysis.frontends.learn as L

    sc = L.load_learning("learn_oef")
    real = L._dynamics_one

    def flaky(sc_, mech, progress):
        if mech == "gavel":
            raise RuntimeError("solver exploded")
        return real(sc_, mech, progress)

    monkeypatch.setattr(L, "_dynamics_one", flaky)
    traj, table = L.run_learning(sc)
    row = table.set_index("mechanism").loc["gavel"]
    assert row["status"] == "error" and "solver exploded" in row["error"]
    assert (table["status"] != "error").sum() == len(sc.mechanisms) - 1
    assert "gavel" not in set(traj["mechanism"])


def test_bayesian_learning_from_the_cli(tmp_path: Path) -> None:
    toml = tmp_path / "fp.toml"
    toml.write_text(
        'kind = "learning"\n[learning]\nfamily = "bayesian"\nrule = "es"\nmechanisms = ["first-price"]\n'
        "rounds = 30\n[learning.instance]\nn = [2]\n"
    )
    assert main(["learn", str(toml), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    table = pd.read_csv(tmp_path / "o" / "price_of_lying.csv")
    assert {"l2_to_bne", "bne_revenue", "factor"} <= set(table.columns)
    assert table["factor"].iloc[0] < 1.0  # shading has begun after 30 rounds


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('kind = "study"\n', "kind"),
        ('kind = "learning"\n[learning]\nmechanisms = ["gavel"]\nbogus = 1\n', "learning has unknown keys"),
        ('kind = "learning"\n[learning]\nfamily = "fair-share"\nrule = "es"\nmechanisms = ["gavel"]\n',
         "learning.rule"),
        ('kind = "learning"\n[learning]\nmechanisms = []\n', "learning.mechanisms"),
        ('kind = "learning"\n[learning]\nmechanisms = ["gavel"]\n', "learning.instance.W"),
        ('kind = "learning"\n[learning]\nmechanisms = ["gavel"]\ngrid = {low = 2.0}\n', "learning.grid"),
        ('kind = "learning"\nname = "../x"\n[learning]\nmechanisms = ["gavel"]\n', "name"),
        ('kind = "learning"\n[learning]\nmechanisms = ["nope"]\n[learning.instance]\nW = [[1,2]]\nm = [1,1]\n',
         "mechanism"),
        ('kind = "learning"\n[learning]\nrule = "hedge"\nmechanisms = ["gavel"]\noptions = {optimistic = "yes"}\n',
         "learning.options.optimistic"),
        ('kind = "learning"\n[learning]\nrule = "hedge"\nmechanisms = ["gavel"]\noptions = {tol = -0.5}\n',
         "learning.options.tol"),
        ('kind = "learning"\n[learning]\nrule = "best-response"\nmechanisms = ["gavel"]\noptions = {tol = 0}\n',
         "learning.options.tol"),
        ('kind = "learning"\n[learning]\nrule = "continuous"\nmechanisms = ["gavel"]\n'
         'options = {report_tol = -1}\n', "learning.options.report_tol"),
    ],
)  # fmt: skip
def test_bad_learning_files_exit_2_naming_the_field(tmp_path: Path, capsys, body: str, needle: str) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text(body)
    assert main(["learn", str(toml), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_directory_and_unknown_names_are_reported(tmp_path: Path, capsys) -> None:
    assert main(["learn", str(tmp_path) + "/"]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["learn", "no_such_learning"]) == 2
    assert "not an embedded learning scenario" in capsys.readouterr().err


def test_continuous_rule_from_the_cli(tmp_path: Path) -> None:
    """rule = "continuous": no grid; gavel converges with a certificate, the slow-GPU tenant inflates,
    and the table's price-of-lying metrics are those of the final continuous profile."""
    toml = tmp_path / "c.toml"
    toml.write_text(
        'kind = "learning"\n[learning]\nrule = "continuous"\nmechanisms = ["gavel", "maxmin"]\nrounds = 10\n'
        "[learning.instance]\nW = [[1.0, 2.0], [1.0, 5.0]]\nm = [1.0, 1.0]\n"
    )
    assert main(["learn", str(toml), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    table = pd.read_csv(tmp_path / "o" / "price_of_lying.csv").set_index("mechanism")
    assert table.loc["gavel", "status"] == "converged" and table.loc["gavel", "eps_rel"] <= 1e-3
    assert table.loc["gavel", "certificate"] == "certified" and table.loc["gavel", "eps_audit"] <= 1e-3
    assert table.loc["maxmin", "status"] == "converged" and table.loc["maxmin", "price_of_lying"] == 1.0
    g = table.loc["gavel"]
    assert g["gain_0"] > 0 and g["learned_total"] != g["truthful_total"]
    assert (tmp_path / "o" / "convergence.png").stat().st_size > 0


def test_every_registered_mechanism_has_a_price_of_lying_row() -> None:
    """Each fair-share allocator and online auction in the registry is learned on in at least one
    shipped learning scenario (a newly registered mechanism fails this until it gets a row)."""
    from marketsim.market import registry

    covered = set()
    for name in learning_names():
        covered |= set(load_learning(name).mechanisms)
    shipped = [
        n
        for kind in ("fair-share", "auction")
        for n in registry.names(kind)
        if registry.get(n, kind).fn.__module__.startswith("marketsim.market.")
    ]  # not mechanisms tests register
    missing = set(shipped) - covered
    assert not missing, sorted(missing)


@pytest.mark.slow  # the longest default test (episodes in the Mesa auction model)
def test_episode_learning_in_the_mesa_auction_model_from_the_cli(tmp_path: Path) -> None:
    """rule = "episodes": Hedge bidders inside Mesa AuctionModel runs. AntMan's bidder 0 learns to
    inflate 1.41x into the resource-guarantee class (welfare 0 -> positive, its TRUE gain > 0, no
    further unilateral gain on the certificate grid); Eris keeps everyone truthful (epsilon 0).
    Deterministic across local and process executors."""
    for d, extra in {"a": [], "p": ["--workers", "2"]}.items():
        assert main(["learn", "learn_auction_episodes", "--out", str(tmp_path / d), "--quiet", *extra]) == 0
    table = pd.read_csv(tmp_path / "a" / "price_of_lying.csv").set_index("mechanism")
    eris, antman = table.loc["eris"], table.loc["antman"]
    assert eris["eps_rel"] == 0.0 and eris["price_of_lying"] == 1.0
    assert json.loads(antman["final_factors"])[0] == [1.4142]
    assert antman["gain_0"] > 0 and antman["learned_welfare"] > antman["truthful_welfare"] == 0.0
    assert antman["eps_abs"] <= 1e-9
    traj = pd.read_parquet(tmp_path / "a" / "trajectories.parquet")
    assert set(traj["agent"]) == {0, 1} and traj["step"].max() == 15
    pd.testing.assert_frame_equal(traj, pd.read_parquet(tmp_path / "p" / "trajectories.parquet"))


def test_optimistic_hedge_with_a_tolerance_from_the_cli(tmp_path: Path) -> None:
    """``options = {optimistic = true, tol = 0.01}`` stops each population at a 1%-CCE of the grid
    game; the table carries the relative CCE gap and the rounds played."""
    toml = tmp_path / "h.toml"
    toml.write_text(
        'kind = "learning"\n[learning]\nrule = "hedge"\nmechanisms = ["oef-noncoop", "maxmin"]\nrounds = 1000\n'
        "options = {eta = 10.0, optimistic = true, tol = 0.01}\n"
        "[learning.instance]\nW = [[1, 2], [1, 3], [1, 5]]\nm = [1, 1]\n"
    )
    assert main(["learn", str(toml), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    table = pd.read_csv(tmp_path / "o" / "price_of_lying.csv").set_index("mechanism")
    for mech in ("oef-noncoop", "maxmin"):
        row = table.loc[mech]
        assert row["status"] == "grid-cce" and 1 <= row["rounds"] < 1000 and row["max_regret_rel"] <= 0.01
    assert table.loc["oef-noncoop", "rounds"] > 1  # its first (uniformly drawn) round was no 1%-CCE: it had to learn
    # a 1%-CCE of the grid game, but a fixed report off the grid gains more than 1% against that play
    noncoop = table.loc["oef-noncoop"]
    assert noncoop["cce_eps_audit"] > 0.05 and noncoop["cce_certificate"] == "not certified"
    assert table.loc["maxmin", "cce_eps_audit"] == 0.0 and table.loc["maxmin", "cce_certificate"] == "certified"
    assert "max_regret_rel" in (tmp_path / "o" / "report.md").read_text()
