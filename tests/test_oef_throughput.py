"""Job-rate model of spec §2.3: straggler min, cross-host penalty, migration cost, linear in workers."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.errors import InputError
from marketsim.market.oef.throughput import cross_host_efficiency, job_rate

LSTM = np.array([1.0, 1.7, 2.15])  # speedups over (3070, 3080, 3090), fixture J2


def test_one_host_one_type_is_linear_in_workers() -> None:
    assert job_rate(np.array([0, 0, 4]), LSTM, 1) == pytest.approx(8.6, abs=1e-12)
    assert job_rate(np.array([0, 0, 1]), LSTM, 1) == pytest.approx(2.15, abs=1e-12)
    assert job_rate(np.array([3, 0, 0]), LSTM, 1) == pytest.approx(3.0, abs=1e-12)


def test_cross_host_penalty() -> None:
    assert job_rate(np.array([0, 0, 4]), LSTM, 2) == pytest.approx(8.6 / 1.1, abs=1e-12)
    assert job_rate(np.array([0, 0, 4]), LSTM, 4, kappa=0.25) == pytest.approx(8.6 / 1.75, abs=1e-12)
    assert job_rate(np.array([0, 0, 4]), LSTM, 3, kappa=0.0) == pytest.approx(8.6, abs=1e-12)
    assert cross_host_efficiency(1) == 1.0
    assert cross_host_efficiency(3, 0.1) == pytest.approx(1 / 1.2, abs=1e-15)


def test_straggler_min_over_types_in_use() -> None:
    # one slow worker drags all four to the 3070's pace; unused types do not count
    assert job_rate(np.array([1, 0, 3]), LSTM, 1) == pytest.approx(4.0, abs=1e-12)
    assert job_rate(np.array([0, 2, 2]), LSTM, 2) == pytest.approx(4 * 1.7 / 1.1, abs=1e-12)  # J2: 6.181818...
    assert job_rate(np.array([0, 2, 2]), LSTM, 2) == pytest.approx(6.1818181818, abs=1e-9)
    # non-monotone speedups: min, not the lowest rank
    assert job_rate(np.array([0, 1, 1]), np.array([1.0, 3.0, 2.0]), 1) == pytest.approx(4.0, abs=1e-12)


def test_migration_cost_only_when_moved() -> None:
    c = np.array([0, 0, 2])
    assert job_rate(c, LSTM, 1, migration_cost_s=30.0, moved=False) == pytest.approx(4.3, abs=1e-12)
    assert job_rate(c, LSTM, 1, migration_cost_s=30.0, moved=True) == pytest.approx(4.3 * 0.9, abs=1e-12)
    assert job_rate(c, LSTM, 1, migration_cost_s=30.0, round_seconds=60.0, moved=True) == pytest.approx(2.15)
    assert job_rate(c, LSTM, 1, migration_cost_s=600.0, moved=True) == 0.0  # longer than the round: no progress
    both = job_rate(c, LSTM, 2, kappa=0.1, migration_cost_s=75.0, moved=True)
    assert both == pytest.approx(4.3 / 1.1 * 0.75, abs=1e-12)


def test_idle_job_has_zero_rate() -> None:
    assert job_rate(np.array([0, 0, 0]), LSTM, 0) == 0.0
    assert job_rate(np.array([0, 0, 0]), LSTM, 1) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(counts=[0, 0, 4], speedups=LSTM, n_hosts=1, kappa=-0.1), "kappa"),
        (dict(counts=[0, 0, 4], speedups=LSTM, n_hosts=1, round_seconds=0.0), "round_seconds"),
        (dict(counts=[0, 0, 4], speedups=LSTM, n_hosts=1, migration_cost_s=-1.0), "migration_cost_s"),
        (dict(counts=[0, 4], speedups=LSTM, n_hosts=1), "speedups"),
        (dict(counts=[0, 0, 4], speedups=[1.0, 0.0, 2.0], n_hosts=1), "speedups[1]"),
        (dict(counts=[0, -1, 4], speedups=LSTM, n_hosts=1), "counts[1]"),
        (dict(counts=[0, 0.5, 4], speedups=LSTM, n_hosts=1), "counts[1]"),
        (dict(counts=[0, 0, 4], speedups=LSTM, n_hosts=5), "n_hosts"),
        (dict(counts=[0, 0, 4], speedups=LSTM, n_hosts=0), "n_hosts"),
        (dict(counts=[0, 0, 4], speedups=LSTM, n_hosts=-1), "n_hosts"),
    ],
)
def test_validation(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as e:
        job_rate(np.asarray(kwargs.pop("counts")), np.asarray(kwargs.pop("speedups")), **kwargs)
    assert e.value.field == field
