"""marketsim.market.profiles: the throughput-table loader (on Gavel's real table) and the generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.market.errors import InputError
from marketsim.market.profiles import (
    OEF_ASSUMED_SPEEDUPS,
    feasible,
    jittered_profile,
    load_throughput_table,
    ordered_random_speedups,
    speedup_vectors,
)

HEADER = "job_type,gpu_type,num_gpus,throughput_steps_per_s\n"


def test_gavel_table_readme_examples(shared_data: Path) -> None:
    table = load_throughput_table(shared_data / "gavel_throughputs.csv")
    assert table.gpu_types == ("k80", "p100", "v100")
    assert len(table.values) == 83  # (job_type, num_gpus) pairs, README
    v1 = speedup_vectors(table, num_gpus=1)
    assert len(v1) == 26
    np.testing.assert_allclose(v1["ResNet-50 (batch size 64)"], [1.00, 4.23, 7.10], atol=0.005)
    np.testing.assert_allclose(v1["Recommendation (batch size 1024)"], [1.51, 2.31, 1.00], atol=0.005)
    assert all(v.min() == pytest.approx(1.0) for v in v1.values())  # slowest feasible type = 1
    assert len(feasible(v1)) == 26  # every single-GPU row is feasible


def test_gavel_table_infeasible_entries(shared_data: Path) -> None:
    table = load_throughput_table(shared_data / "gavel_throughputs.csv")
    v2 = speedup_vectors(table, num_gpus=2)
    np.testing.assert_allclose(v2["ResNet-50 (batch size 128)"], [0.0, 1.00, 1.47], atol=0.005)
    assert "ResNet-50 (batch size 128)" not in feasible(v2)
    with pytest.raises(InputError, match="cannot be the reference"):
        speedup_vectors(table, num_gpus=2, reference="k80", job_types=["ResNet-50 (batch size 128)"])
    # a fixed reference: K80 = 1
    k80 = speedup_vectors(table, num_gpus=1, reference="k80")
    assert all(v[0] == pytest.approx(1.0) for v in k80.values())
    with pytest.raises(InputError, match="num_gpus=3"):
        speedup_vectors(table, num_gpus=3, job_types=["A3C"])


def _write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    p = tmp_path / "t.csv"
    p.write_text(header + body, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("header", "body", "pattern"),
    [
        ("job_type,gpu_type,throughput_steps_per_s\n", "A,k80,1.0\n", r"missing column\(s\) \['num_gpus'\]"),
        (HEADER, "A,k80,1,abc\n", r"t\.csv:2 column 'throughput_steps_per_s' must be a real number"),
        (HEADER, "A,k80,1,1.0\nA,p100,1,-2\n", r"t\.csv:3 column 'throughput_steps_per_s' must be >= 0"),
        (HEADER, "A,k80,1,1.0\nA,p100,x,2\n", r"t\.csv:3 column 'num_gpus' must be an integer"),
        (HEADER, "A,k80,1,1.0\nA,k80,1,2\n", r"t\.csv:3.*duplicates"),
        (HEADER, "A,k80,1,1.0\nA,p100,1,2\nB,k80,1,1\n", r"job_type 'B' num_gpus 1.*has no row for \['p100'\]"),
        (HEADER, "A,k80,1\n", r"t\.csv:2 .*must have 4 fields"),
        (HEADER, "", "has no data rows"),
        (HEADER, "A,k80,1,nan\n", "must be finite"),
    ],
)
def test_malformed_csv_errors_name_file_row_column(tmp_path: Path, header: str, body: str, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        load_throughput_table(_write(tmp_path, body, header))


def test_missing_file_and_gpu_order(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_throughput_table(tmp_path / "nope.csv")
    p = _write(tmp_path, "A,fast,1,4.0\nA,slow,1,2.0\n")
    t = load_throughput_table(p, gpu_types=["slow", "fast"])
    np.testing.assert_allclose(speedup_vectors(t)["A"], [1.0, 2.0])
    with pytest.raises(InputError, match="not in the requested gpu_types"):
        load_throughput_table(p, gpu_types=["slow"])


def test_jittered_profile_is_monotone_normalised_and_seeded() -> None:
    base = OEF_ASSUMED_SPEEDUPS["LSTM"]
    a = jittered_profile(base, np.random.default_rng(3), 0.03)
    b = jittered_profile(base, np.random.default_rng(3), 0.03)
    np.testing.assert_array_equal(a, b)
    assert a[0] == 1.0
    assert np.all(np.diff(a) >= 0)
    assert np.all(np.abs(a[1:] / np.array(base[1:]) - 1) <= 0.03 + 1e-12)
    np.testing.assert_allclose(jittered_profile(base, np.random.default_rng(0), 0.0), base)
    # jitter can break monotonicity before the cumulative max: (1, 1.0, 1.0) stays monotone
    flat = jittered_profile((1.0, 1.0, 1.0), np.random.default_rng(1), 0.5)
    assert np.all(np.diff(flat) >= 0)
    with pytest.raises(InputError, match="jitter"):
        jittered_profile(base, np.random.default_rng(0), 1.5)


def test_ordered_random_speedups_structure() -> None:
    W = ordered_random_speedups(6, 4, np.random.default_rng(5), ordered=True)
    assert W.shape == (6, 4)
    np.testing.assert_array_equal(W[:, 0], 1.0)
    steps = W[:, 1:] / W[:, :-1]
    assert np.all(steps >= 1.0 - 1e-12) and np.all(steps <= 1.6 + 1e-12)
    assert np.all(np.diff(steps, axis=0) >= -1e-12)  # step ratios non-decreasing in the row index
    assert np.all(W[0] <= W.min(axis=0) + 1e-12)  # row 0 element-wise slowest
    U = ordered_random_speedups(6, 4, np.random.default_rng(5), ordered=False)
    assert not np.allclose(U, W)
