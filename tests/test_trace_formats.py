"""Bring your own trace: the generic CSV format, gzip-compressed traces, the trace profile (offered
load) and ``marketsim run --check`` on good and bad files (one error line naming the field and value,
exit 2)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from marketsim.analysis.frontends.cli import main
from marketsim.market.errors import InputError
from marketsim.market.profiles import load_throughput_table
from marketsim.market.traces import (
    PHILLY_SAMPLE,
    data_path,
    load_trace,
    read_generic_csv,
    read_philly_csv,
    tenant_of_jobs,
    trace_profile,
)

TABLE = """job_type,gpu_type,num_gpus,throughput_steps_per_s
A,k80,1,1.0
A,k80,2,3.0
A,v100,1,2.0
A,v100,2,5.0
B,k80,1,0.5
B,v100,1,4.0
"""


def _table(tmp_path: Path):
    (tmp_path / "table.csv").write_text(TABLE)
    return load_throughput_table(tmp_path / "table.csv")


def _scenario(tmp_path: Path, trace: str, fmt: str = "csv", tenancy: str = '"user"', gpus: str = "[2, 2]") -> Path:
    (tmp_path / "table.csv").write_text(TABLE)
    p = tmp_path / "s.toml"
    p.write_text(
        f"""
name = "mine"
policies = ["maxmin"]
replications = 1
[cluster]
gpu_types = ["k80", "v100"]
gpus = {gpus}
[profiles]
file = "table.csv"
[workload]
trace = "{trace}"
trace_format = "{fmt}"
tenancy = {tenancy}
"""
    )
    return p


def test_generic_csv_with_types_and_durations_sorts_and_computes_steps(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(
        "job_id,arrival_s,num_gpus,duration_s,job_type,tenant,extra\n"
        "x,100,1,50,A,alice,ignored\n"
        "y,0,2,10,A,bob,\n"
        "z,100,1,20,B,alice,\n"
    )
    tr = load_trace(tmp_path / "t.csv", "csv", _table(tmp_path), ("k80", "v100"))
    assert tr.job_id.tolist() == ["y", "x", "z"]  # by arrival, ties in file order
    assert tr.arrival_s.tolist() == [0.0, 100.0, 100.0]
    # steps = duration x the v100 throughput of the job's type at its GPU count
    assert tr.total_steps.tolist() == [10 * 5.0, 50 * 2.0, 20 * 4.0]
    assert tenant_of_jobs(tr, "user").tolist() == ["bob", "alice", "alice"]
    assert tr.format == "csv"


def test_generic_csv_with_total_steps_keeps_them(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("arrival_s,num_gpus,total_steps,job_type,priority\n5,1,700,B,2\n0,2,300,A,\n")
    tr = load_trace(tmp_path / "t.csv", "csv", _table(tmp_path), ("k80", "v100"))
    assert tr.total_steps.tolist() == [300.0, 700.0]
    assert tr.priority.tolist() == [1.0, 2.0]
    assert tr.job_id.tolist() == ["0", "1"]  # default ids: position in arrival order


def test_generic_csv_without_types_draws_them_by_the_philly_rule(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("arrival_s,num_gpus,duration_s\n0,1,100\n10,1,100\n20,2,100\n")
    table = _table(tmp_path)
    a = load_trace(tmp_path / "t.csv", "csv", table, ("k80", "v100"), seed=3)
    b = load_trace(tmp_path / "t.csv", "csv", table, ("k80", "v100"), seed=3)
    assert a.job_type.tolist() == b.job_type.tolist()
    assert a.job_type[2] == "A"  # the only type with a 2-GPU row
    assert set(a.job_type.tolist()) <= {"A", "B"}


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("num_gpus,duration_s\n1,5\n", "header", "arrival_s"),  # missing column, named with its meaning
        ("arrival_s,num_gpus\n0,1\n", "header", "duration_s"),
        ("arrival_s,num_gpus,total_steps\n0,1,5\n", "header", "job_type"),
        ("arrival_s,num_gpus,duration_s,total_steps,job_type\n0,1,5,5,A\n", "header", "both"),
        ("arrival_s,num_gpus,duration_s\n0,1,-5\n", "t.csv:2 column 'duration_s'", "-5"),
        ("arrival_s,num_gpus,duration_s\n0,1,nan\n", "t.csv:2 column 'duration_s'", "nan"),
        ("arrival_s,num_gpus,duration_s\n0,1,5\n-1,1,5\n", "t.csv:3 column 'arrival_s'", "-1"),
        ("arrival_s,num_gpus,duration_s\n0,0,5\n", "t.csv:2 column 'num_gpus'", "0"),
        ("arrival_s,num_gpus,duration_s\n0,1.5,5\n", "t.csv:2 column 'num_gpus'", "1.5"),
        ("arrival_s,num_gpus,duration_s\n", "trace", "no jobs"),
        ("", "trace", "is empty"),
        ("job_id,arrival_s,num_gpus,duration_s\na,0,1,5\na,1,1,5\n", "t.csv:3 column 'job_id'", "a"),
        ("arrival_s,num_gpus,duration_s\n0,1,5,7\n", "t.csv:2", "7"),
    ],
)
def test_generic_csv_errors_name_field_and_value(tmp_path: Path, text: str, field: str, value: str) -> None:
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(InputError) as e:
        read_generic_csv(tmp_path / "t.csv")
    assert field in str(e.value) and value in str(e.value)


def test_generic_csv_unknown_job_type_is_named(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("arrival_s,num_gpus,duration_s,job_type\n0,1,5,Nope\n")
    with pytest.raises(InputError, match="job_type.*Nope"):
        load_trace(tmp_path / "t.csv", "csv", _table(tmp_path), ("k80", "v100"))


def test_gzip_trace_reads_as_the_plain_one(tmp_path: Path) -> None:
    raw = data_path(PHILLY_SAMPLE).read_bytes()
    (tmp_path / "p.csv.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "renamed.csv").write_bytes(gzip.compress(raw))  # recognised by content, not by name
    a = read_philly_csv(data_path(PHILLY_SAMPLE))
    for name in ("p.csv.gz", "renamed.csv"):
        b = read_philly_csv(tmp_path / name)
        assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.user, b.user)
    (tmp_path / "bad.gz").write_bytes(gzip.compress(raw)[:200])  # truncated
    with pytest.raises(InputError, match="gzip"):
        read_philly_csv(tmp_path / "bad.gz")


def test_trace_profile_hand_computed(tmp_path: Path) -> None:
    # two 1-GPU jobs of type B (k80 0.5, v100 4 steps/s): 400 steps = 100 s on v100 (the fastest)
    (tmp_path / "t.csv").write_text("arrival_s,num_gpus,total_steps,job_type,tenant\n0,1,400,B,u\n50,1,400,B,v\n")
    tr = load_trace(tmp_path / "t.csv", "csv", _table(tmp_path), ("k80", "v100"))
    T = tr.throughputs(_table(tmp_path), ("k80", "v100"))
    p = trace_profile(tr, T, (2, 2), ("k80", "v100"), tenant_of_jobs(tr, "user"))
    assert p.jobs == 2 and p.span_s == 50.0 and p.tenants == {"u": 1, "v": 1} and p.sizes == {1: 2}
    assert p.demand_gpu_s == pytest.approx(200.0)
    assert p.speed == pytest.approx((0.125, 1.0))
    assert p.offered_load == pytest.approx(200 / (4 * 50))
    assert p.effective_load == pytest.approx(200 / (50 * (2 * 0.125 + 2 * 1.0)))


def test_check_prints_the_workload_and_runs_nothing(capsys, tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("arrival_s,num_gpus,duration_s,job_type,tenant\n0,1,100,A,u\n3600,2,100,A,v\n")
    s = _scenario(tmp_path, "t.csv")
    out_dir = tmp_path / "out"
    assert main(["run", str(s), "--check", "--out", str(out_dir)]) == 0
    text = capsys.readouterr().out
    for needle in ("mine: valid", "jobs: 2", "arrival span: 0.04 days", "tenants: 2 (u 1, v 1)",
                   "job sizes: 1 GPU: 1, 2 GPUs: 1", "offered load:", "nothing was run"):  # fmt: skip
        assert needle in text, needle
    assert not out_dir.exists()


def test_check_on_the_packaged_philly_trace(capsys) -> None:
    assert main(["run", "philly_trace", "--check"]) == 0
    text = capsys.readouterr().out
    assert "jobs: 2,007" in text and "tenants: 12" in text and "arrival span: 13.61 days" in text


_PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time"
_BAD_FILES = [  # (file, scenario keys, text, field named, value named)
    ("p.csv", {"fmt": "philly"}, f"{_PHILLY_HEAD}\n2017-10-01 00:00:00,5,1,5\n", "header", "['cluster']"),
    ("p.csv", {"fmt": "philly"}, f"{_PHILLY_HEAD},cluster\n2017-10-01 00:00:00,-5,1,-5,a\n",
     "p.csv:2 column 'duration'", "'-5'"),
    ("p.csv", {"fmt": "philly"}, f"{_PHILLY_HEAD},cluster\n2017-10-01 00:00:00,nan,1,5,a\n",
     "p.csv:2 column 'duration'", "'nan'"),
    ("p.csv", {"fmt": "philly"}, "", "header", "[]"),
    ("t.csv", {"tenancy": '"job"'}, "arrival_s,num_gpus\n0,1\n", "header", "['duration_s']"),
    ("t.csv", {"tenancy": '"job"'}, "arrival_s,num_gpus,duration_s\n0,1,-3\n", "t.csv:2 column 'duration_s'", "'-3'"),
    ("t.csv", {"tenancy": '"job"'}, "arrival_s,num_gpus,duration_s\nNaN,1,3\n", "t.csv:2 column 'arrival_s'",
     "'NaN'"),
    ("t.csv", {"tenancy": '"job"'}, "", "t.csv", "is empty"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "keys", "text", "field", "value"), _BAD_FILES)
def test_check_on_a_bad_philly_or_generic_file_is_one_line_and_exit_2(
    capsys, tmp_path: Path, name: str, keys: dict, text: str, field: str, value: str
) -> None:
    (tmp_path / name).write_text(text)
    s = _scenario(tmp_path, name, **keys)
    assert main(["run", str(s), "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and value in err[0], err


def test_user_tenancy_needs_a_tenant_column(capsys, tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("arrival_s,num_gpus,duration_s\n0,1,3\n")
    s = _scenario(tmp_path, "t.csv")
    assert main(["run", str(s), "--check"]) == 2
    assert "tenancy" in capsys.readouterr().err


def test_check_refuses_a_study(capsys) -> None:
    assert main(["run", "oef", "--check"]) == 2
    assert "--check" in capsys.readouterr().err


def test_vectorised_philly_reader_equals_the_row_reader(tmp_path: Path) -> None:
    from marketsim.market.traces import _philly_fast, _philly_rows

    p = data_path(PHILLY_SAMPLE)
    fast, slow = _philly_fast(p), _philly_rows(p)
    assert fast is not None
    for a, b in zip(fast, slow, strict=True):
        assert np.array_equal(a, b)
    # what only the row reader accepts (unpadded fields) or rejects goes through it
    (tmp_path / "q.csv").write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                                    "2017-9-4 1:02:03,10,1,10,a\n2017-09-04 01:02:00,5,2,10,b\n")  # fmt: skip
    assert _philly_fast(tmp_path / "q.csv") is None
    tr = read_philly_csv(tmp_path / "q.csv")
    assert tr.arrival_s.tolist() == [0.0, 3.0] and tr.user.tolist() == ["b", "a"]
