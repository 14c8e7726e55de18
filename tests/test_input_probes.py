"""Absurd inputs probed against every command (issue #27 item 7): each exits 2 with one stderr line
that names the flag or field, and neither a traceback nor a warning leaks. The input rules these
probes pin (ASCII digits only, empty values are errors) are documented in docs/inputs.md."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from marketsim.analysis.frontends.cli import main

LONG = "x" * 300
AUCTION = ["audit", "--mechanism", "fixed-price"]
GAVEL = ["allocate", "--policy", "gavel-max-sum-throughput", "--speedups", "1,2;1,5"]
OEF = ["allocate", "--policy", "oef-noncoop", "--speedups", "1,2;1,5"]
AUDIT_OEF = ["audit", "--mechanism", "oef-coop", "--speedups", "1,2;1,5"]


def _probe(capsys, argv: list[str], needle: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked RuntimeWarning fails the probe
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err and "Warning" not in err, err
    assert needle in err, err
    return err


PROBES = [
    # --set of an auction audit instance: sizes, values, non-finite, empty, non-ASCII digits
    (AUCTION + ["--set", "jobs=1e308"], "--set jobs"),
    (AUCTION + ["--set", "T=1e308"], "--set T"),
    (AUCTION + ["--set", "value_high=1e308"], "--set value_high"),
    (AUCTION + ["--set", "value_low=-1e308"], "--set value_low"),
    (AUCTION + ["--set", "price=inf"], "--set price"),
    (AUCTION + ["--set", "price=nan"], "--set price"),
    (AUCTION + ["--set", "capacity=1e308"], "--set capacity"),
    (AUCTION + ["--set", "max_units=1e308"], "--set max_units"),
    (AUCTION + ["--set", "max_duration=-1"], "max_duration"),
    (AUCTION + ["--set", "price=-0.0"], "price"),
    (AUCTION + ["--set", "jobs=0"], "jobs"),
    (AUCTION + ["--set", "jobs="], "--set jobs"),
    (AUCTION + ["--set", "jobs=１２"], "jobs"),
    (AUCTION + ["--set", "jobs=[1,2]"], "jobs"),
    (AUCTION + ["--set", "nonsense=1"], "nonsense"),
    (["audit", "--mechanism", "oasis", "--set", "H=1e308"], "--set H"),
    (["audit", "--mechanism", "oasis", "--set", "gamma1_max=1e308"], "--set gamma1_max"),
    (["audit", "--mechanism", "oasis", "--set", "dorm_time_limit=nan"], "--set dorm_time_limit"),
    (["audit", "--mechanism", "pdors", "--set", "machines=1e308"], "--set machines"),
    (["audit", "--mechanism", "pdors", "--set", "G=1e308"], "--set G"),
    (AUCTION + ["--bidders", "1e308"], "--bidders"),
    (AUCTION + ["--bidders", "-1"], "--bidders"),
    (AUCTION + ["--instances", "0", "--report", "unused-dir"], "--instances"),
    # allocate's numeric flags
    (GAVEL + ["--scale-factors", "1e308,1"], "--scale-factors[0]"),
    (GAVEL + ["--scale-factors", "1e-308,1"], "--scale-factors[0]"),
    (GAVEL + ["--scale-factors", "-0,1"], "--scale-factors[0]"),
    (GAVEL + ["--scale-factors", "inf,1"], "--scale-factors[0]"),
    (GAVEL + ["--scale-factors", "nan,1"], "--scale-factors[0]"),
    (GAVEL + ["--scale-factors", "1"], "--scale-factors"),
    (GAVEL + ["--scale-factors", "１,1"], "--scale-factors[0]"),
    (OEF + ["--weights", "1e308,1"], "--weights[0]"),
    (OEF + ["--weights", "1e-308,1"], "--weights"),
    (OEF + ["--weights", "-0,1"], "--weights[0]"),
    (OEF + ["--weights", "nan,1"], "--weights[0]"),
    (OEF + ["--capacity", "1e308,1"], "--capacity[0]"),
    (OEF + ["--capacity", "1e-308,1"], "--capacity[0]"),
    (OEF + ["--capacity", "inf,1"], "--capacity[0]"),
    (["allocate", "--policy", "oef-noncoop", "--speedups", "1,1e308;1,5"], "--speedups[0]"),
    (["allocate", "--policy", "oef-noncoop", "--speedups", "1e-308,1;1,5"], "--speedups[0]"),
    (["allocate", "--policy", "oef-noncoop", "--speedups", "-0,1;1,5"], "--speedups[0][0]"),
    (["allocate", "--policy", "oef-noncoop", "--speedups", "nan,1;1,5"], "--speedups[0][0]"),
    (["allocate", "--policy", "oef-noncoop", "--speedups", "１,２;1,5"], "--speedups[0][0]"),
    (["allocate", "--policy", "oef-noncoop", "--speedups", "1,2;1,５"], "--speedups[1][1]"),
    (["allocate", "--policy", "no-such-policy", "--speedups", "1,2"], "--policy"),
    # audit's fair-share flags
    (AUDIT_OEF + ["--capacity", "1e308,1"], "--capacity[0]"),
    (AUDIT_OEF + ["--weights", "1e308,1"], "--weights[0]"),
    (AUDIT_OEF + ["--seed", "-1"], "--seed"),
    (["audit", "--mechanism", "oef-coop", "--speedups", "1,1e-308;1,5"], "--speedups[0]"),
    # empty values are errors, not "the default"
    (["run", "default", "--out", ""], "--out"),
    (["run", "default", "--out", "  "], "--out"),
    (["run", "default", "--policies", ""], "--policies"),
    (["run", ""], "scenario"),
    (OEF + ["--capacity", ""], "--capacity"),
    (OEF + ["--weights", ""], "--weights"),
    (["allocate", "--policy", "", "--speedups", "1,2"], "--policy"),
    (["audit", "--mechanism", "oef-coop", "--speedups", "1,2", "--report", ""], "--report"),
    (["claims", "--paper", ""], "--paper"),
    (["claims", "--report", ""], "--report"),
    (["learn", "learn_oef", "--out", ""], "--out"),
    (["sweep", "sweep_lie_factor", "--out", ""], "--out"),
    (["sweep", "sweep_lie_factor", "--address", ""], "--address"),
    (["sweep", ""], "config"),
    # absurd ints of the other commands
    (["run", "default", "--reps", "0"], "--reps"),
    (["run", "default", "--workers", "-1"], "--workers"),
    (["run", "default", "--seed", "-1"], "--seed"),
    (["run", "default", "--reps", "10000000000"], "--reps"),
    (["sweep", "sweep_lie_factor", "--chunk-size", "0"], "--chunk-size"),
    (["sweep", "sweep_lie_factor", "--workers", "0"], "--workers"),
    (["learn", "learn_oef", "--rounds", "0"], "--rounds"),
    (["learn", "learn_oef", "--seed", "-1"], "--seed"),
    (["learn", "learn_oef", "--workers", "0"], "--workers"),
    (["claims", "--seed", "-1"], "--seed"),
    (["claims", "--paper", "no-such-paper"], "--paper"),
    (["run", "no-such-scenario"], "no-such-scenario"),
]


@pytest.mark.parametrize(("argv", "needle"), PROBES, ids=[" ".join(a)[-60:] for a, _ in PROBES])
def test_absurd_input_exits_2_with_one_line(capsys, tmp_path: Path, monkeypatch, argv: list[str], needle: str) -> None:
    monkeypatch.chdir(tmp_path)  # a probe that wrongly ran would write here, not into the repository
    _probe(capsys, argv, needle)
    assert not (tmp_path / "results").exists()  # nothing was written for a rejected command


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "default", "--reps", "1", "--out"],
        ["sweep", "sweep_lie_factor", "--out"],
        ["learn", "learn_oef", "--out"],
        ["audit", "--mechanism", "oef-coop", "--speedups", "1,2;1,5", "--report"],
        ["claims", "--paper", "oef", "--report"],
    ],
)
def test_a_300_character_output_name_is_named_as_the_flag(capsys, tmp_path: Path, argv: list[str]) -> None:
    err = _probe(capsys, [*argv, str(tmp_path / LONG)], argv[-1])
    assert "Errno" not in err and "too long" in err


def test_text_numbers_must_use_ascii_digits() -> None:
    from marketsim.market.errors import InputError, as_float_array, check_finite, check_int

    for bad in (
        lambda: check_finite("x", "１"),
        lambda: check_int("n", "١٢"),
        lambda: as_float_array("a", ["1", "２"]),
    ):
        with pytest.raises(InputError, match="ASCII digits"):
            bad()
    with pytest.raises(InputError, match="not empty"):
        check_finite("x", " ")
    assert check_finite("x", " 1e3 ") == 1000.0 and check_int("n", "12") == 12


def test_trace_keys_without_a_trace_say_what_is_missing(capsys, tmp_path: Path) -> None:
    text = (Path(__file__).parents[1] / "scenarios" / "philly_trace.toml").read_text()
    toml = tmp_path / "no_trace.toml"
    toml.write_text(text.replace('trace = "../market/data/philly_sample.csv"\n', "", 1))
    err = _probe(capsys, ["run", str(toml), "--out", str(tmp_path / "out")], "workload.trace_format")
    assert "needs workload.trace" in err and "tenants is required" not in err


def test_an_executor_that_never_comes_up_leaves_no_manifest(tmp_path: Path) -> None:
    from marketsim.analysis.engine.sweep import load_sweep, run_sweep
    from marketsim.market.errors import InputError

    class Unreachable:
        name = "dask"

        def map(self, fn, items):  # like DaskExecutor.map failing to reach its scheduler
            raise InputError("--address", "tcp://127.0.0.1:9", "has no reachable Dask scheduler")
            yield  # pragma: no cover (a generator, as the real executors are)

    out = tmp_path / "sweep"
    out.mkdir()
    with pytest.raises(InputError, match="--address"):
        run_sweep(load_sweep("sweep_lie_factor"), out, executor=Unreachable(), progress=False)
    assert list(out.iterdir()) == []  # no sweep.json, no empty parts/
