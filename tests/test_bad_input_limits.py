"""The last bad inputs of issue 34 item 6: each probe exits 2 with one stderr line naming the key or
flag, before any work starts (no output folder, no traceback, no numpy warning). Limits: docs/cli.md
"Size limits" and docs/inputs.md."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from marketsim.analysis.frontends.cli import main
from marketsim.market.traces import MAX_TRACE_BYTES

GAVEL_LINE = ("ResNet-18 (batch size 16)\tpython3 main.py\tcifar10\t--num_steps\t1\t{steps}\t{scale}\t{prio}"
              "\t-1.000000\t{arrival}\n")  # fmt: skip
PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time,cluster\n"
PHILLY_ROW = "2017-09-04 10:30:41,{dur},{gpus},100.0,{cluster}\n"

TRACE_SCENARIO = """name = "probe"
policies = ["maxmin"]
rounds = 2
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [4, 4, 4]
[workload]
trace = "{trace}"
trace_format = "{fmt}"
"""

SYNTH = """name = "probe"
policies = ["maxmin"]
rounds = 2
replications = 1
{top}
[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]
{cluster}
[workload]
tenants = 2
jobs_per_tenant = 1
{variant}
"""


def _gavel(tmp: Path, scale: str = "1", prio: str = "1", steps: str = "1000") -> list[str]:
    trace = tmp / "t.trace"
    trace.write_text(GAVEL_LINE.format(steps=steps, scale=scale, prio=prio, arrival="0"), encoding="utf-8")
    scen = tmp / "s.toml"
    scen.write_text(TRACE_SCENARIO.format(trace=trace, fmt="gavel"), encoding="utf-8")
    return [str(scen)]


def _philly(tmp: Path, gpus: str = "1", cluster: str = "vc1") -> list[str]:
    trace = tmp / "t.csv"
    trace.write_text(PHILLY_HEAD + PHILLY_ROW.format(dur="100.0", gpus=gpus, cluster=cluster), encoding="utf-8")
    scen = tmp / "s.toml"
    scen.write_text(TRACE_SCENARIO.format(trace=trace, fmt="philly"), encoding="utf-8")
    return [str(scen)]


def _generic(tmp: Path, prio: str) -> list[str]:
    trace = tmp / "t.csv"
    trace.write_text(f"arrival_s,num_gpus,duration_s,priority\n0,1,100,{prio}\n", encoding="utf-8")
    scen = tmp / "s.toml"
    scen.write_text(TRACE_SCENARIO.format(trace=trace, fmt="csv"), encoding="utf-8")
    return [str(scen)]


def _huge(tmp: Path) -> list[str]:
    trace = tmp / "t.csv"
    with trace.open("wb") as fh:  # sparse: no disk used, but stat() says it is over the limit
        fh.write(PHILLY_HEAD.encode())
        fh.truncate(MAX_TRACE_BYTES + 1)
    scen = tmp / "s.toml"
    scen.write_text(TRACE_SCENARIO.format(trace=trace, fmt="philly"), encoding="utf-8")
    return [str(scen)]


def _synth(tmp: Path, top: str = "", cluster: str = "", variant: str = "") -> list[str]:
    scen = tmp / "s.toml"
    scen.write_text(SYNTH.format(top=top, cluster=cluster, variant=variant), encoding="utf-8")
    return [str(scen)]


def _matrix(tmp: Path, rows: int, cols: int) -> str:
    f = tmp / "m.csv"
    line = ",".join(["1"] + ["2"] * (cols - 1)) + "\n"
    f.write_text(line * rows, encoding="utf-8")
    return f"@{f}"


def _variant(body: str) -> str:
    return f'[[variant]]\nname = "liar"\ntenant = 0\n{body}\n'


Probe = Callable[[Path], list[str]]
RUN: list[tuple[str, Probe, str]] = [
    ("gavel scale_factor 1e308", lambda t: _gavel(t, scale="1e308"), "column 'scale_factor'"),
    ("gavel scale_factor 1e20", lambda t: _gavel(t, scale="100000000000000000000"), "column 'scale_factor'"),
    ("gavel priority_weight 1e-308", lambda t: _gavel(t, prio="1e-308"), "column 'priority_weight'"),
    ("gavel priority_weight 1e308", lambda t: _gavel(t, prio="1e308"), "column 'priority_weight'"),
    ("philly num_gpus 1e308", lambda t: _philly(t, gpus="1e308"), "column 'num_gpus'"),
    ("philly num_gpus 1e20", lambda t: _philly(t, gpus="100000000000000000000"), "column 'num_gpus'"),
    ("philly field over 131072 chars", lambda t: _philly(t, cluster="x" * 140_000), "trace"),
    ("generic priority 1e308", lambda t: _generic(t, "1e308"), "column 'priority'"),
    ("trace file over the byte limit", _huge, "size limit"),
    ("racks 10^9", lambda t: _synth(t, cluster="racks = 1000000000"), "cluster.racks"),
    ("racks 10^9 ideal", lambda t: _synth(t, top='placement = "ideal"', cluster="racks = 1000000000"),
     "cluster.racks"),
    ("variant factors 1e308", lambda t: _synth(t, variant=_variant('strategy = "scale"\nfactors = {RTX3090 = 1e308}')),
     "factors.RTX3090"),
    ("variant factor 1e308", lambda t: _synth(t, variant=_variant('strategy = "fast"\nfactor = 1e308')), "factor"),
    ("variant vector 1e-308", lambda t: _synth(t, variant=_variant('strategy = "report"\nvector = [1, 1e-308, 2]')),
     "vector[1]"),
    ("hedge points 10^9", lambda t: _synth(t, variant=_variant('strategy = "hedge"\npoints = 1000000000')), "points"),
]

FLAGS: list[tuple[list[str], str]] = [
    (["learn", "learn_oef_hedge", "--rounds", "1000000000000"], "--rounds"),
    (["claims", "--paper", "oef", "--hunt-evals", "1000000000000"], "--hunt-evals"),
    (["claims", "--paper", "oef", "--hunt", "1e9"], "--hunt"),
    (["claims", "--paper", "oef", "--hunt", "3", "--hunt-evals", "5"], "--hunt"),
    # ASCII digits only on every number flag
    (["run", "default", "--reps", "２"], "--reps"),
    (["run", "default", "--seed", "１"], "--seed"),
    (["run", "default", "--workers", "２"], "--workers"),
    (["run", "default", "--reps", "1_0"], "--reps"),
    (["learn", "learn_oef", "--rounds", "３"], "--rounds"),
    (["learn", "learn_oef", "--seed", "３"], "--seed"),
    (["claims", "--hunt-evals", "３"], "--hunt-evals"),
    (["claims", "--hunt", "３"], "--hunt"),
    (["claims", "--seed", "３"], "--seed"),
    (["claims", "--hunt-evals", "5", "--hunt-max-seconds", "３"], "--hunt-max-seconds"),
    (["audit", "--mechanism", "maxmin", "--speedups", "1,2;1,5", "--seed", "３"], "--seed"),
    (["sweep", "sweep_lie_factor", "--workers", "２"], "--workers"),
    (["viz", "--port", "８７６５"], "--port"),
]


def _expect_exit_2(capsys, argv: list[str], needle: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked numpy RuntimeWarning fails the probe
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err and "Warning" not in err, err
    assert needle in err, err


@pytest.mark.parametrize(("label", "make", "needle"), RUN, ids=[r[0] for r in RUN])
def test_scenario_probe_exits_2_before_work(label: str, make: Probe, needle: str, capsys, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _expect_exit_2(capsys, ["run", *make(tmp_path), "--out", str(out), "--quiet"], needle)
    assert not out.exists()  # refused before the output folder was made


@pytest.mark.parametrize(("argv", "needle"), FLAGS, ids=[" ".join(a) for a, _ in FLAGS])
def test_flag_probe_exits_2(argv: list[str], needle: str, capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # any default output folder lands here (and must not be made)
    _expect_exit_2(capsys, argv, needle)
    assert not (tmp_path / "results").exists()


def test_allocate_over_the_cell_limit(capsys, tmp_path: Path) -> None:
    """100,000 x 1,000 was inside both documented limits and failed deep in the solver: the entries
    limit (1,000,000) now refuses it while the file is read (here at its 1,001st row of 1,000)."""
    _expect_exit_2(capsys, ["allocate", "--policy", "maxmin", "--speedups", _matrix(tmp_path, 1_001, 1_000)],
                   "1,000,000 entries")  # fmt: skip


def test_fair_share_audit_and_coop_sizes(capsys, tmp_path: Path) -> None:
    _expect_exit_2(capsys, ["audit", "--mechanism", "oef-noncoop", "--speedups", _matrix(tmp_path, 500, 3)],
                   "--speedups")  # fmt: skip
    _expect_exit_2(capsys, ["allocate", "--policy", "oef-coop", "--speedups", _matrix(tmp_path, 50_000, 2)],
                   "--speedups")  # fmt: skip
