"""``marketsim gavel-sim``: Gavel's trace driver flags in, Gavel's summary lines out (issue #33 item 2).

End to end on Gavel's own 96-job trace (``tests/data/gavel_physical_max_min_fairness.trace``, 8 + 8 + 8
GPUs, Gavel's per-job JCTs in ``tests/data/gavel_sim_jcts_888_max_min_fairness.csv``, unmodified Gavel
with ECOS): the ``Average job completion time`` line is within 5% of the mean of Gavel's JCTs for
``max_min_fairness_perf``, ``max_sum_throughput_perf`` and ``max_min_fairness`` (seed 0 on both
sides). The full packaged trace against Gavel's printed means (benchmarks/results/gavel_sim_parity.json)
is a slow test. The rest: the flags do what Gavel's do (the throughputs JSON is read, servers of
``--num_gpus_per_server`` GPUs drop a type's remainder, the window averages only its jobs), and bad
input is one line and exit 2.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from marketsim.analysis.frontends import cli, gavel_sim

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
TRACE = DATA / "gavel_physical_max_min_fairness.trace"
#: Gavel's packaged trace (single-GPU jobs): its first jobs make the small cases
PACKAGED = ROOT / "market" / "data" / "gavel_trace_seed1.trace"
AVG = re.compile(r"^Average job completion time: ([0-9.]+) seconds \(([0-9.]+) hours\)$", re.M)
JOB = re.compile(r"^Job (\d+)(?: \(high priority\))?: ([0-9.]+)$", re.M)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = gavel_sim.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _mean(out: str) -> float:
    m = AVG.search(out)
    assert m is not None, out[-500:]
    assert float(m.group(2)) == pytest.approx(float(m.group(1)) / 3600.0, abs=0.006)  # Gavel's hours, 2 decimals
    return float(m.group(1))


def _head(tmp_path: Path, n: int, src: Path = PACKAGED) -> Path:
    p = tmp_path / f"first{n}.trace"
    p.write_text("".join(src.read_text().splitlines(keepends=True)[:n]))
    return p


@pytest.mark.parametrize(
    ("policy", "column"),
    [
        ("max_min_fairness_perf", "max_min_fairness_perf"),
        ("max_sum_throughput_perf", "max_sum_throughput_perf"),
        ("max_min_fairness", "max_min_fairness_seed0"),
    ],
)
def test_average_jct_line_within_5_percent_of_gavel(
    capsys: pytest.CaptureFixture[str], policy: str, column: str
) -> None:
    """Gavel's command line, Gavel's output format, Gavel's mean JCT within 5%; every job printed once."""
    code, out, err = _run(capsys, "-t", str(TRACE), "-p", policy, "-c", "8:8:8", "--seed", "0",
                          "--time_per_iteration", "360")  # fmt: skip
    assert code == 0, err
    gavel = {}
    with (DATA / "gavel_sim_jcts_888_max_min_fairness.csv").open() as fh:
        for row in csv.DictReader(fh):
            gavel[int(row["job_id"])] = float(row[column])
    jobs = {int(i): float(v) for i, v in JOB.findall(out)}
    assert sorted(jobs) == sorted(gavel) == list(range(96))
    mean = _mean(out)
    assert mean == pytest.approx(sum(jobs.values()) / len(jobs), abs=1e-3 * len(jobs))  # the line is the jobs' mean
    assert mean / (sum(gavel.values()) / len(gavel)) == pytest.approx(1.0, abs=0.05)
    if policy == "max_min_fairness":  # measured 0.997 with the shuffle; 0.962 without it (fixed fastest-first order)
        assert mean / (sum(gavel.values()) / len(gavel)) == pytest.approx(1.0, abs=0.02)
    assert "Average job completion time (low priority)" in out  # every job of this trace has weight 1
    assert re.search(r"^Cluster utilization: 0\.\d{3}$", out, re.M)
    assert "solver ECOS requested" in err and f"marketsim {gavel_sim.POLICIES[policy][0]};" in err


def test_policy_names_map_to_ours_and_unknown_ones_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = _head(tmp_path, 3)
    for name in ("gandiva", "min_total_duration_perf", "fifo"):  # Gavel's, not ours
        code, _, err = _run(capsys, "-t", str(trace), "-p", name, "-c", "1:1:1")
        assert code == 2
        assert "--policy" in err and f"got '{name}'" in err
        assert "marketsim does not implement" in err and "max_min_fairness_perf" in err
    code, _, err = _run(capsys, "-t", str(trace), "-c", "1:1:1")  # Gavel's default policy is fifo
    assert code == 2 and "fifo" in err
    code, _, err = _run(capsys, "-t", str(trace), "-p", "max-min", "-c", "1:1:1")
    assert code == 2 and "not a Gavel policy name" in err
    assert set(gavel_sim.POLICIES).isdisjoint(gavel_sim.UNSUPPORTED)


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["-c", "8:8"], "--cluster_spec"),
        (["-c", "8:x:8"], "--cluster_spec (p100)"),
        (["-c", "0:0:0"], "--cluster_spec"),
        (["-c", "1:1:1", "--num_gpus_per_server", "1:0:1"], "--num_gpus_per_server (p100)"),
        (["-c", "1:1:1", "--checkpoint_file", "x.pkl"], "--checkpoint_file"),
        (["-c", "1:1:1", "--time_per_iteration", "0"], "--time_per_iteration"),
        (["-c", "1:1:1", "-s", "0"], "--window-start/--window-end"),
        (["-c", "1:1:1", "--throughputs_file", "/no/such.json"], "--throughputs_file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], field: str
) -> None:
    code, out, err = _run(capsys, "-t", str(_head(tmp_path, 3)), "-p", "max_min_fairness_perf", *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and field in err and "Traceback" not in err


def test_bad_trace_names_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text(PACKAGED.read_text().splitlines()[0] + "\nonly\tthree\tfields\n")
    code, _, err = _run(capsys, "-t", str(bad), "-p", "max_min_fairness_perf", "-c", "1:1:1")
    assert code == 2 and "line 2" in err and "10 tab-separated fields" in err
    code, _, err = _run(capsys, "-t", str(tmp_path / "none.trace"), "-p", "max_min_fairness_perf", "-c", "1:1:1")
    assert code == 2 and "does not exist" in err


def _gavel_json(path: Path, scale_v100: float = 1.0) -> Path:
    """Gavel's throughputs JSON layout, written from our packaged copy of Gavel's table."""
    table: dict[str, dict[str, dict[str, float]]] = {"k80": {}, "p100": {}, "v100": {}}
    with (ROOT / "market" / "data" / "gavel_throughputs.csv").open() as fh:
        for row in csv.DictReader(fh):
            thr = float(row["throughput_steps_per_s"]) * (scale_v100 if row["gpu_type"] == "v100" else 1.0)
            table[row["gpu_type"]][str((row["job_type"], int(row["num_gpus"])))] = {"null": thr}
    path.write_text(json.dumps(table))
    return path


def test_throughputs_json_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Gavel's JSON with the packaged numbers gives exactly the packaged table's output; halving the V100
    throughputs in the file changes the mean JCT."""
    trace = _head(tmp_path, 12)
    base = ["-t", str(trace), "-p", "max_min_fairness_perf", "-c", "1:1:1", "--seed", "0"]
    code, packaged, _ = _run(capsys, *base)
    assert code == 0
    code, same, err = _run(capsys, *base, "--throughputs_file", str(_gavel_json(tmp_path / "t.json")))
    assert code == 0 and str(tmp_path / "t.json") in err
    assert same == packaged
    code, slow, _ = _run(capsys, *base, "--throughputs_file", str(_gavel_json(tmp_path / "s.json", 0.5)))
    assert code == 0
    assert _mean(slow) > _mean(packaged) * 1.01


def test_servers_drop_a_types_remainder_as_gavel_does(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Gavel registers cluster_spec // num_gpus_per_server servers: 3 V100s in servers of 2 are 2 GPUs."""
    trace = _head(tmp_path, 10)
    base = ["-t", str(trace), "-p", "max_min_fairness_perf", "--seed", "0"]
    two = _run(capsys, *base, "-c", "2:0:0")[1]
    three_by_two = _run(capsys, *base, "-c", "3:0:0", "--num_gpus_per_server", "2:1:1")[1]
    three = _run(capsys, *base, "-c", "3:0:0")[1]
    assert three_by_two == two
    assert _mean(three) < _mean(two)


def test_window_and_priority_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``-s/-e`` average only the window's jobs; a job of priority weight != 1 gets Gavel's
    "(high priority)" lines."""
    lines = PACKAGED.read_text().splitlines(keepends=True)[:8]
    parts = lines[1].split("\t")
    parts[7] = "2.000000"
    lines[1] = "\t".join(parts)
    trace = tmp_path / "prio.trace"
    trace.write_text("".join(lines))
    base = ["-t", str(trace), "-p", "max_min_fairness_perf", "-c", "1:1:1", "--seed", "0"]
    code, out, _ = _run(capsys, *base)
    assert code == 0
    jobs = {int(i): float(v) for i, v in JOB.findall(out)}
    assert re.search(r"^Job 1 \(high priority\): ", out, re.M)
    assert re.search(r"^Average job completion time \(high priority\): ", out, re.M)
    code, win, _ = _run(capsys, *base, "-s", "2", "-e", "5")
    assert code == 0
    assert sorted(int(i) for i, _ in JOB.findall(win)) == [2, 3, 4]
    assert _mean(win) == pytest.approx(sum(jobs[i] for i in (2, 3, 4)) / 3, abs=2e-3)


def test_cli_dispatch_and_cheap_help(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``marketsim gavel-sim`` reaches this front end; its --help imports neither Mesa nor pandas."""
    trace = _head(tmp_path, 3)
    assert cli.main(["gavel-sim", "-t", str(trace), "-p", "max_min_fairness_perf", "-c", "1:1:1"]) == 0
    assert AVG.search(capsys.readouterr().out)
    assert cli.main(["gavel-sim", "-t", str(trace), "-p", "gandiva", "-c", "1:1:1"]) == 2
    assert "marketsim gavel-sim: error: --policy" in capsys.readouterr().err
    code = (
        "import sys; from marketsim.analysis.frontends.cli import main; code = main(['gavel-sim', '--help']); "
        "print(code, sorted(m for m in ('mesa', 'pandas', 'scipy', 'networkx', 'marketsim.agents') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "--trace_file" in out and "--cluster_spec" in out
    assert out.strip().splitlines()[-1] == "0 []"


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["max_min_fairness_perf", "max_sum_throughput_perf", "max_min_fairness"])
def test_full_packaged_trace_within_5_percent_of_gavel(capsys: pytest.CaptureFixture[str], policy: str) -> None:
    """The packaged 1,301-job trace on Gavel's 12:12:12 cluster against the mean JCT Gavel's simulator printed
    for the same command (benchmarks/results/gavel_sim_parity.json, written by benchmarks/gavel_sim_parity.py)."""
    rows = json.loads((ROOT / "benchmarks" / "results" / "gavel_sim_parity.json").read_text())["rows"]
    gavel = next(r["gavel"]["mean_jct_s"] for r in rows if r["case"] == "full" and r["policy"] == policy)
    code, out, _ = _run(capsys, "-t", str(PACKAGED), "-p", policy,
                        "-c", "12:12:12", "--seed", "0", "--time_per_iteration", "360")  # fmt: skip
    assert code == 0
    assert _mean(out) / gavel == pytest.approx(1.0, abs=0.05)
