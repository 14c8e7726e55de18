"""CLI input errors that used to give tracebacks, solver errors or wrong messages (issue #10):
each exits 2 with one line naming the field and value."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from marketsim.analysis.frontends.cli import main


def _err(capsys, argv: list[str], code: int = 2) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["allocate", "--policy", "gavel", "--speedups", "1,2;1,5", "--weights", "1e19,1"], "--weights[0]"),
        (["allocate", "--policy", "oef-noncoop", "--speedups", "1,2;1,5", "--capacity", "1e300,1"], "--capacity[0]"),
        (["allocate", "--policy", "oef-noncoop", "--speedups", "1,2;1,5", "--capacity", "1e18,1"], "at most"),
        (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,1e308;1,5"], "--speedups[0]"),
        (["allocate", "--policy", "oef-noncoop", "--speedups", "1,1e308;1,5"], "--speedups[0]"),
        (["audit", "--mechanism", "oasis", "--bidders", "1.5"], "--bidders"),
        (["run", "default", "--policies", ","], "--policies"),
        (["run", "control_auction", "--policies", ","], "--policies"),
    ],
)
def test_bad_numbers_exit_2_with_one_line(capsys, argv: list[str], needle: str) -> None:
    err = _err(capsys, argv)
    assert needle in err and "np.float64" not in err


def test_directory_as_scenario_says_directory(capsys, tmp_path: Path) -> None:
    assert "is a directory" in _err(capsys, ["run", str(tmp_path)])
    (tmp_path / "d.toml").mkdir()
    assert "is a directory" in _err(capsys, ["run", str(tmp_path / "d.toml")])


def test_empty_job_types_fail_validation(tmp_path: Path) -> None:
    from marketsim.market.errors import InputError
    from marketsim.scenarios.loader import load_scenario

    text = (Path(__file__).parents[1] / "scenarios" / "default.toml").read_text()
    toml = tmp_path / "s.toml"
    toml.write_text(text.replace("[profiles]\n", "[profiles]\njob_types = []\n", 1))
    with pytest.raises(InputError) as err:
        load_scenario(toml)
    assert "job_types" in err.value.field and "empty" in str(err.value)


def test_speedups_from_a_csv_file_and_stdin(capsys, tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "w.csv"
    f.write_text("# tenants x GPU types\n1,2\n\n1,5\n")
    assert main(["allocate", "--policy", "oef-coop", "--speedups", f"@{f}", "--json"]) == 0
    a = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("1,2\n1,5\n"))
    assert main(["allocate", "--policy", "oef-coop", "--speedups", "@-", "--json"]) == 0
    assert capsys.readouterr().out == a
    assert '"allocation": [[1.0, 0.25], [0.0, 0.75]]' in a
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n1,x\n")
    assert f"{bad} line 2" in _err(capsys, ["allocate", "--policy", "oef-coop", "--speedups", f"@{bad}"])
    bad.write_text("1,2\n1,5,3\n")
    assert "has 3 entries, expected 2" in _err(capsys, ["audit", "--mechanism", "oef-coop", "--speedups", f"@{bad}"])
    assert "does not exist" in _err(capsys, ["allocate", "--policy", "oef-coop", "--speedups", f"@{tmp_path}/no.csv"])
    assert "directory" in _err(capsys, ["allocate", "--policy", "oef-coop", "--speedups", f"@{tmp_path}"])
    (tmp_path / "empty.csv").write_text("# nothing\n")
    assert "no rows" in _err(capsys, ["allocate", "--policy", "oef-coop", "--speedups", f"@{tmp_path}/empty.csv"])


def test_failed_runs_are_reported_once(capsys, tmp_path: Path, monkeypatch) -> None:
    from marketsim.agents.model import MarketModel

    original = MarketModel.run

    def flaky(self, rounds=None):
        if self.config.policy == "gavel":
            raise RuntimeError("solver exploded")
        return original(self, rounds)

    monkeypatch.setattr(MarketModel, "run", flaky)
    code = main(["run", "default", "--reps", "1", "--policies", "gavel,maxmin", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    for rid in ("default/gavel/truthful/r0",):
        assert sum(rid in ln for ln in err.splitlines()) == 1, err  # once, not live and again at the end
    assert "run(s) failed; the others were written" in err


@pytest.mark.parametrize("bad", ["../../x", "a/b", ".hidden", "x" * 101, "sp ace"])
def test_names_that_would_escape_the_output_directory_are_rejected(tmp_path: Path, bad: str) -> None:
    from marketsim.market.errors import InputError
    from marketsim.scenarios.loader import load_scenario

    text = (Path(__file__).parents[1] / "scenarios" / "default.toml").read_text()
    toml = tmp_path / "s.toml"
    lines = [ln for ln in text.splitlines() if not ln.startswith("name")]
    toml.write_text(f"name = {bad!r}\n" + "\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        load_scenario(toml)
    assert err.value.field.endswith("name")


def test_file_stems_become_safe_default_names(tmp_path: Path) -> None:
    from marketsim.scenarios.loader import load_scenario

    text = (Path(__file__).parents[1] / "scenarios" / "default.toml").read_text()
    toml = tmp_path / "my run (v2).toml"
    toml.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("name")) + "\n")
    assert load_scenario(toml).name == "my_run__v2_"


def test_study_and_sweep_names_are_checked(tmp_path: Path) -> None:
    from marketsim.analysis.engine.studies import load_study
    from marketsim.market.errors import InputError

    text = (Path(__file__).parents[1] / "market" / "auction" / "studies" / "control_auction.toml").read_text()
    toml = tmp_path / "c.toml"
    toml.write_text('name = "../../etc"\n' + "\n".join(ln for ln in text.splitlines() if not ln.startswith("name")))
    with pytest.raises(InputError) as err:
        load_study(toml)
    assert "name" in err.value.field


def test_unwritable_output_fails_before_computing(capsys, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "not a writable directory" in _err(capsys, ["run", "default", "--out", str(blocker / "out")])
    assert "--out" in _err(capsys, ["run", "control_auction", "--out", str(blocker / "out")])
    assert "--out" in _err(capsys, ["learn", "learn_oef", "--out", str(blocker / "out")])
    assert not list(tmp_path.glob("**/*.parquet"))  # nothing was computed first


# issue #20: smaller defects


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--mechanism", "oef-noncoop", "--speedups", "1e308,1;1,5"],
        ["allocate", "--policy", "oef-noncoop", "--speedups", "1e-320,2;1,5"],
        ["audit", "--mechanism", "oef-coop", "--speedups", "1e-320,2;1,5"],
        ["allocate", "--policy", "gavel", "--speedups", "1,2;1e300,1e-300"],
    ],
)
def test_speedups_whose_ratios_overflow_name_the_option(capsys, argv: list[str]) -> None:
    """Used to leak RuntimeWarnings and name internal fields (``Dimension[1].limit_upper``, ``W[0]``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy overflow warning now fails the test
        err = _err(capsys, argv)
    assert err.startswith(f"marketsim {argv[0]}: error: --speedups[") and "normalised speedup" in err
    assert "Dimension" not in err and "W[" not in err and "Warning" not in err


def test_weights_are_named_as_the_option(capsys) -> None:
    for cmd in (["allocate", "--policy", "gavel"], ["audit", "--mechanism", "oef-noncoop"]):
        err = _err(capsys, [*cmd, "--speedups", "1,2;1,5", "--weights", "1,1e19"])
        assert "--weights[1] is more than 1e+06 times --weights[0]" in err and " weights[" not in err


def test_report_folder_is_checked_before_computing(capsys, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for argv in (["audit", "--mechanism", "oef-noncoop", "--speedups", "1,2;1,5"], ["claims", "--paper", "oef"]):
        err = _err(capsys, [*argv, "--report", str(blocker / "r")])
        assert "--report" in err and "not a writable directory" in err


def test_report_folder_error_comes_before_the_ledger_runs(capsys, tmp_path: Path, monkeypatch) -> None:
    import marketsim.market.audit.claims as ledger

    def never(*a, **k):
        raise AssertionError("the ledger ran before --report was checked")

    monkeypatch.setattr(ledger, "run_claims", never)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "--report" in _err(capsys, ["claims", "--paper", "oef", "--report", str(blocker / "r")])


@pytest.mark.parametrize("width", ["-5", "0", "3"])
def test_claims_width_must_leave_room_for_text(capsys, width: str) -> None:
    assert "--width" in _err(capsys, ["claims", "--paper", "oef", f"--width={width}"])


@pytest.mark.parametrize(
    "argv",
    [
        ["learn", "learn_oef", "--workers", "0"],
        ["sweep", "sweep_lie_factor", "--address", "tcp://127.0.0.1:1"],
        ["run", "default", "--reps", "1", "--policies", "gavel", "--executor", "process", "--workers", "1",
         "--seed", "-1"],
    ],
)  # fmt: skip
def test_failing_commands_leave_no_empty_out_folder(capsys, tmp_path: Path, argv: list[str]) -> None:
    out = tmp_path / "new" / "out"
    _err(capsys, [*argv, "--out", str(out)])
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()  # a folder that existed before is never removed
    _err(capsys, [*argv, "--out", str(kept)])
    assert kept.is_dir()


# issue #20: huge sizes fail at once, naming the field and the limit


def _scenario_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (Path(__file__).parents[1] / "scenarios" / "default.toml").read_text()
    assert old in text
    toml = tmp_path / "big.toml"
    toml.write_text(text.replace(old, new, 1))
    return toml


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("tenants = 12", "tenants = 10000000", "workload.tenants must be at most 100,000"),
        ("jobs_per_tenant = 6", "jobs_per_tenant = 1000000", "workload.jobs_per_tenant gives 12 tenants x 1e+06 jobs"),
        ("gpus = [8, 8, 8]", "gpus = [8, 8, 1000000000]", "cluster.gpus must hold at most 1,000,000 GPUs"),
    ],
)
def test_a_huge_scenario_fails_before_building(capsys, tmp_path: Path, old: str, new: str, needle: str) -> None:
    toml = _scenario_with(tmp_path, old, new)
    err = _err(capsys, ["run", str(toml), "--out", str(tmp_path / "out")])
    assert needle in err and "size limit" in err
    assert not (tmp_path / "out").exists()


def test_huge_replications_fail_before_planning(capsys, tmp_path: Path) -> None:
    err = _err(capsys, ["run", "default", "--reps", "100000000", "--out", str(tmp_path / "out")])
    assert "--reps gives 600,000,000 runs" in err and "at most 1,000,000" in err
    from marketsim.analysis.engine.runner import plan_runs
    from marketsim.market.errors import InputError
    from marketsim.scenarios.loader import load_scenario

    with pytest.raises(InputError, match="at most 1,000,000"):
        plan_runs(load_scenario("default"), replications=10**8)


def test_a_huge_speedups_file_stops_at_the_row_limit(capsys, tmp_path: Path, monkeypatch) -> None:
    import marketsim.analysis.frontends.cli as cli

    monkeypatch.setattr(cli, "MAX_ROWS", 50)  # the same code path as 10^7 rows against 100,000
    f = tmp_path / "w.csv"
    f.write_text("1,2\n" * 51)
    err = _err(capsys, ["allocate", "--policy", "gavel", "--speedups", f"@{f}"])
    assert "--speedups has more than 50 rows" in err and "line 51" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("1,2\n" * 51))
    assert "more than 50 rows" in _err(capsys, ["audit", "--mechanism", "gavel", "--speedups", "@-"])
    assert "more than 50 rows" in _err(capsys, ["allocate", "--policy", "gavel", "--speedups", ";".join(["1,2"] * 51)])
    f.write_text(",".join(["1"] * 1001) + "\n")
    assert "at most 1,000 GPU types" in _err(capsys, ["allocate", "--policy", "gavel", "--speedups", f"@{f}"])


def test_the_row_limit_is_100000(capsys, tmp_path: Path) -> None:
    """10^5 + 1 rows (the real limit, no monkeypatch) fail without reading the rest of the file."""
    f = tmp_path / "w.csv"
    f.write_text("1,2\n" * 100_001 + "x\n" * 1_000_000)  # a bad line after the limit is never reached
    err = _err(capsys, ["allocate", "--policy", "gavel", "--speedups", f"@{f}"])
    assert "more than 100,000 rows" in err and "line 100001" in err


@pytest.mark.parametrize(
    ("setting", "needle"),
    [("jobs=10000000", "--set jobs must be at most 1,000 bidders"), ("T=10000000", "--set T must be at most 100,000")],
)
def test_a_huge_auction_audit_instance_fails_before_building(capsys, setting: str, needle: str) -> None:
    assert needle in _err(capsys, ["audit", "--mechanism", "oasis", "--set", setting])


@pytest.mark.parametrize(
    ("edits", "needle"),
    [
        ({"points = 13": "points = 100000000"}, "learning.grid.points must be at most 10,000"),
        (
            {"points = 13": "points = 2000", "W = [[1, 2], [1, 5]]": "W = [[1, 2, 3], [1, 5, 6]]",
             "m = [1, 1]": "m = [1, 1, 1]"},
            "learning.grid.points gives 2001^2 = 4,004,001 report vectors per learner",
        ),
    ],
)  # fmt: skip
def test_a_huge_learning_grid_fails_before_allocating(capsys, tmp_path: Path, edits: dict, needle: str) -> None:
    text = (Path(__file__).parents[1] / "scenarios" / "learn_oef.toml").read_text()
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    toml = tmp_path / "grid.toml"
    toml.write_text(text)
    err = _err(capsys, ["learn", str(toml), "--out", str(tmp_path / "out")])
    assert needle in err and "size limit" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("replications = 4", "replications = 100000000", "plans at least 200,000,000 runs"),
        ("replications = 4", "replications = 40000", "takes the sweep to about 1,440,000 runs (720,000 per cell)"),
    ],
)
def test_a_huge_sweep_fails_before_planning(capsys, tmp_path: Path, old: str, new: str, needle: str) -> None:
    text = (Path(__file__).parents[1] / "scenarios" / "sweep_lie_factor.toml").read_text()
    assert old in text
    cfg = tmp_path / "big.toml"
    cfg.write_text(text.replace(old, new))
    err = _err(capsys, ["sweep", str(cfg), "--out", str(tmp_path / "out")])
    assert needle in err and "size limit" in err and not (tmp_path / "out").exists()
