"""The ``marketsim`` CLI: allocate (JSON and table), list, run, and one-line errors with status 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.analysis.frontends.cli import main, parse_matrix

TINY = """
name = "tiny"
policies = ["oef-noncoop", "max-throughput"]
rounds = 3
replications = 2
seed = 1
[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]
[workload]
tenants = 3
jobs_per_tenant = 2
backlogged = true
[[variant]]
name = "lying"
tenant = 0
strategy = "fast"
factor = 1.3
"""


def test_allocate_json_h2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "--policy", "oef-noncoop", "--speedups", "1,2;1,5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["allocation"], [[1.0, 4 / 7], [0.0, 3 / 7]], atol=1e-7)  # spec H2
    assert out["throughput"] == pytest.approx([15 / 7, 15 / 7], abs=1e-7)
    assert out["total"] == pytest.approx(30 / 7, abs=1e-7)
    assert out["common_value"] == pytest.approx(15 / 7, abs=1e-7)


def test_allocate_json_capacity_and_weights(capsys: pytest.CaptureFixture[str]) -> None:
    # spec F16: weights (1, 2) under non-coop OEF: class sums [[1, 1/3], [0, 2/3]]
    assert main(["allocate", "--policy", "oef-noncoop", "--speedups", "1,2;1,5", "--weights", "1,2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["allocation"], [[1.0, 1 / 3], [0.0, 2 / 3]], atol=1e-7)
    assert out["throughput"] == pytest.approx([5 / 3, 10 / 3], abs=1e-7)
    # spec F1 (Gandiva_fair) with explicit capacity
    args = ["allocate", "--policy", "gandiva-fair", "--speedups", "1,2;1,3;1,4", "--capacity", "1,1", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["allocation"], [[1, 4 / 45], [0, 7 / 15], [0, 4 / 9]], atol=1e-9)


def test_allocate_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "--policy", "oef-coop", "--speedups", "1,2;1,5"]) == 0
    out = capsys.readouterr().out
    assert "oef-coop" in out
    assert "0.2500" in out and "0.7500" in out and "5.2500" in out  # spec F11, total 21/4


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--policy", "nope", "--speedups", "1,2;1,5"], "--policy"),
        (["--policy", "gavel", "--speedups", "1,x;1,2"], "--speedups[0][1]"),
        (["--policy", "gavel", "--speedups", "1,2;1,5", "--capacity", "-1,1"], "--capacity[0]"),
        (["--policy", "gavel", "--speedups", "1,2;1,5,3"], "--speedups[1]"),
        (["--policy", "gavel", "--speedups", "1,2;1,5", "--capacity", "1,1,1"], "--capacity"),
        (["--policy", "gavel", "--speedups", "1,2;1,5", "--weights", "1"], "--weights"),
        (["--policy", "gavel", "--speedups", "1,2;;1,5"], "--speedups"),
        (["--policy", "gavel", "--speedups", "0,2;1,5"], "--speedups[0][0]"),
        (["--policy", "gavel"], "--speedups"),
    ],
)
def test_allocate_errors_exit_2_with_one_line(args: list[str], field: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert field in lines[0]


def test_parse_matrix() -> None:
    assert parse_matrix("s", " 1, 2 ;1,5").tolist() == [[1.0, 2.0], [1.0, 5.0]]


def test_list_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in (
        "oef-noncoop",
        "oef-coop",
        "gavel",
        "gandiva-fair",
        "maxmin",
        "max-throughput",
        "default",
        "oef_lying",
    ):
        assert name in out
    for cmd in ([], ["run"], ["allocate"], ["list"]):
        assert main([*cmd, "--help"]) == 0
        assert "usage: marketsim" in capsys.readouterr().out
    assert main([]) == 2
    assert main(["frobnicate"]) == 2


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"marketsim {version('marketsim-cluster')}\n"


def test_help_imports_no_heavy_module() -> None:
    """``marketsim --help`` stays cheap: Mesa, pandas, scipy, networkx load only when a command needs them
    (the CPU time is measured in benchmarks/bench_trace_scale.py, not here)."""
    import subprocess
    import sys

    code = (
        "import sys; from marketsim.analysis.frontends.cli import main; code = main(['--help']); "
        "print(sorted(m for m in ('mesa', 'pandas', 'scipy', 'networkx', 'highspy', 'marketsim.agents') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_run_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "no_such_scenario"]) == 2
    assert "scenario" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace("rounds = 3", "rounds = -3"), encoding="utf-8")
    assert main(["run", str(bad)]) == 2
    assert "rounds must be >= 1" in capsys.readouterr().err
    good = tmp_path / "tiny.toml"
    good.write_text(TINY, encoding="utf-8")
    assert main(["run", str(good), "--reps", "0"]) == 2
    assert "--reps" in capsys.readouterr().err
    assert main(["run", str(good), "--policies", "no-such-rule"]) == 2
    assert "--policies is not a registered fair-share policy" in capsys.readouterr().err


def test_run_tiny_scenario_writes_parquet_and_pngs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "tiny.toml"
    scen.write_text(TINY, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(scen), "--out", str(out), "--quiet", "--seed", "9"]) == 0
    printed = capsys.readouterr().out
    assert str(out.resolve()) in printed and "8/8 runs" in printed
    for name in ("results.parquet", "runs.csv", "meta.json", "throughput.png", "lying_gain.png", "report.md"):
        assert (out / name).is_file(), name
    df = pd.read_parquet(out / "results.parquet")
    assert set(df["policy"]) == {"oef-noncoop", "max-throughput"}
    assert set(df["variant"]) == {"truthful", "lying"}
    assert set(df["replication"]) == {0, 1}
    meta = json.loads((out / "meta.json").read_text())
    assert meta["seed"] == 9 and meta["deviators"] == {"lying": "t0"}
    assert "Gain from lying" in (out / "report.md").read_text()


@pytest.mark.slow
def test_run_default_scenario_with_process_workers(tmp_path: Path) -> None:
    assert main(["run", "--out", str(tmp_path / "d"), "--workers", "2", "--quiet"]) == 0
    df = pd.read_parquet(tmp_path / "d" / "results.parquet")
    assert df["policy"].nunique() == 6 and df["replication"].nunique() == 3
