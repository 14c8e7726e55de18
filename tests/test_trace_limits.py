"""Sanity limits of trace runs (issue #24): absurd sizes and times exit 2 with one line naming the
field, before any computing; a run stopped by the round cap is recorded as incomplete."""

from __future__ import annotations

from pathlib import Path

import pytest

from marketsim.analysis.frontends.cli import main

GEN = """
name = "gen"
policies = ["maxmin"]
replications = 1
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [2, 2, 2]
round_seconds = ROUND
[workload]
generator = "gavel"
jobs = JOBS
jobs_per_hour = RATE
MAXR
"""

LINE = "ResNet-18 (batch size 64)\tcmd\tdir\t--num_steps\tFalse\t{steps}\t1\t1\t-1\t{arrival}\n"


def _gen(tmp_path: Path, round_s: str = "360.0", jobs: str = "5", rate: str = "2.0", maxr: str = "") -> Path:
    text = GEN.replace("ROUND", round_s).replace("JOBS", jobs).replace("RATE", rate).replace("MAXR", maxr)
    p = tmp_path / "gen.toml"
    p.write_text(text, encoding="utf-8")
    return p


def _trace(tmp_path: Path, steps: str, arrival: str) -> Path:
    (tmp_path / "t.trace").write_text(LINE.format(steps=1000, arrival=0) + LINE.format(steps=steps, arrival=arrival))
    p = tmp_path / "t.toml"
    p.write_text(
        'name = "t"\npolicies = ["maxmin"]\nreplications = 1\n[cluster]\ngpu_types = ["k80", "p100", "v100"]\n'
        'gpus = [1, 1, 1]\n[workload]\ntrace = "t.trace"\n',
        encoding="utf-8",
    )
    return p


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"round_s": "1e-9"}, "cluster.round_seconds"),
        ({"round_s": "1e6"}, "cluster.round_seconds"),
        ({"jobs": "1000000000"}, "workload.jobs"),
        ({"maxr": "max_rounds = 1000000000000000000"}, "workload.max_rounds"),
        ({"rate": "1e-300"}, "workload.jobs_per_hour"),
    ],
)
def test_absurd_generated_scenarios_exit_2_at_once(capsys, tmp_path: Path, monkeypatch, kw: dict, needle: str) -> None:
    import marketsim.analysis.engine.runner
    import marketsim.analysis.engine.sweep  # imported before the patches below: it binds runner.execute_run at import
    import marketsim.market.traces

    def never(*args, **kwargs):
        raise AssertionError("the scenario was refused after the runs started")

    real, drawn = marketsim.market.traces.generate_gavel_trace, []

    def draw(table, types, jobs, *args, **kwargs):
        drawn.append(int(jobs))
        if sum(drawn) > 5:  # fail here, before a huge draw could take the machine's memory
            raise AssertionError(f"{jobs} jobs drawn before the size limit")
        return real(table, types, jobs, *args, **kwargs)

    # nothing is simulated, and at most the 5 jobs of a sane scenario are drawn (the rate's limit reads
    # their arrival times; a 1e9-job trace cannot even be drawn): counts, not a time
    monkeypatch.setattr(marketsim.market.traces, "generate_gavel_trace", draw)
    monkeypatch.setattr(marketsim.analysis.engine.runner, "run_experiment", never)
    monkeypatch.setattr(marketsim.analysis.engine.runner, "execute_run", never)
    monkeypatch.setattr(marketsim.analysis.engine.sweep, "execute_run", never)
    assert main(["run", str(_gen(tmp_path, **kw)), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert sum(drawn) <= 5, drawn
    err = capsys.readouterr().err
    assert needle in err and "size limit" in err and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("steps", "arrival", "needle"),
    [("1e300", "10", "column 'total_steps'"), ("1000", "1e308", "column 'arrival_time'")],
)
def test_absurd_trace_lines_exit_2_naming_line_and_column(capsys, tmp_path: Path, steps, arrival, needle) -> None:
    assert main(["run", str(_trace(tmp_path, steps, arrival)), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"t.trace:2 {needle}" in err and "size limit" in err and err.count("\n") == 1, err


def test_limits_leave_room_for_the_packaged_traces() -> None:
    from marketsim.market.traces import MAX_TOTAL_STEPS, MAX_TRACE_SECONDS, data_path, load_trace

    for name, fmt in (("gavel_trace_seed1.trace", "gavel"), ("philly_sample.csv", "philly")):
        tr = load_trace(data_path(name), fmt)
        assert tr.total_steps.max() < MAX_TOTAL_STEPS / 100 and tr.arrival_s.max() < MAX_TRACE_SECONDS / 100


@pytest.mark.filterwarnings("ignore:trace run stopped at the safety cap:RuntimeWarning")
def test_a_run_stopped_by_the_round_cap_is_recorded_as_incomplete(capsys, tmp_path: Path) -> None:
    import json

    import pandas as pd

    out = tmp_path / "o"
    code = main(["run", str(_gen(tmp_path, jobs="6", maxr="max_rounds = 3")), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "INCOMPLETE" in err and "max_rounds = 3" in err
    runs = pd.read_csv(out / "runs.csv")
    assert runs["complete"].tolist() == [False] and runs["rounds"].tolist() == [3]
    assert "safety cap" in runs["incomplete"].iloc[0] and 0 < runs["unfinished_jobs"].iloc[0] <= 6
    meta = json.loads((out / "meta.json").read_text())
    assert meta["complete"] is False and len(meta["incomplete_runs"]) == 1 and meta["status"] == "capped"
    assert meta["incomplete_runs"][0]["unfinished_jobs"] == runs["unfinished_jobs"].iloc[0]
    report = (out / "report.md").read_text()
    assert "INCOMPLETE" in report and "(no results)" in report  # its numbers are not reported as a result
    assert report.startswith("# INCOMPLETE (capped): 1 run(s) hit the round cap (max_rounds) and are not results\n")
    assert not (out / "jct_cdf.png").exists()
    # the same scenario with room to finish is complete
    out2 = tmp_path / "o2"
    assert main(["run", str(_gen(tmp_path, jobs="6")), "--out", str(out2), "--quiet"]) == 0
    assert pd.read_csv(out2 / "runs.csv")["complete"].tolist() == [True]
    meta2 = json.loads((out2 / "meta.json").read_text())
    assert meta2["complete"] is True and meta2["incomplete_runs"] == []
    assert "INCOMPLETE" not in (out2 / "report.md").read_text()


SWEEP = """
name = "capsweep"
scenarios = ["gen.toml"]
policies = ["maxmin"]
replications = 2
seed = 3
[grid]
"cluster.round_seconds" = [360]
[[strategy]]
name = "inflate"
kind = "fast"
tenant = 0
factor = [1.5]
"""


@pytest.mark.filterwarnings("ignore:trace run stopped at the safety cap:RuntimeWarning")
def test_a_sweep_records_capped_runs_as_capped_not_as_results(capsys, tmp_path: Path) -> None:
    import json

    import pandas as pd

    (tmp_path / "sw.toml").write_text(SWEEP, encoding="utf-8")
    _gen(tmp_path, jobs="6", maxr="max_rounds = 3")
    out = tmp_path / "o"
    assert main(["sweep", str(tmp_path / "sw.toml"), "--out", str(out), "--quiet"]) == 1
    assert "4 stopped by the round cap" in capsys.readouterr().err
    runs = pd.read_parquet(out / "runs.parquet")
    assert runs["status"].tolist() == ["capped"] * 4 and set(runs["error_type"]) == {"SafetyCap"}
    assert "max_rounds = 3" in runs["error_message"].iloc[0]
    assert pd.read_parquet(out / "results.parquet").empty  # a capped run's rows are not results
    assert len(pd.read_parquet(out / "failures.parquet")) == 4
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["complete"] is False and manifest["status"] == "capped"
    assert (out / "report.md").read_text().startswith("# INCOMPLETE (capped): some runs hit the round cap")
    # with room to finish the same sweep is complete and has its rows
    _gen(tmp_path, jobs="6")
    out2 = tmp_path / "o2"
    assert main(["sweep", str(tmp_path / "sw.toml"), "--out", str(out2), "--quiet"]) == 0
    assert pd.read_parquet(out2 / "runs.parquet")["status"].tolist() == ["ok"] * 4
    assert not pd.read_parquet(out2 / "results.parquet").empty
