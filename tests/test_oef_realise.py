"""Realisations of a fractional allocation (market/oef/realise.py): Gavel's leases and Gandiva_fair's lottery."""

from __future__ import annotations

import numpy as np
import pytest

from market.errors import InputError
from market.oef.realise import GandivaLottery, GavelLease, make_realiser, own_realisation

A, B, C = ("a", "j"), ("b", "j"), ("c", "j")


def _check(counts, ideal, md, cap, m):
    tot = sum(counts.values())
    assert (tot <= m).all()
    for c, a in counts.items():
        assert a.sum() <= cap[c]
        assert all(v % md[c] == 0 for v in a)  # job-sized chunks on one type each
        assert (a[np.asarray(ideal[c]) <= 0] == 0).all()  # no GPUs of a type the class has no share of


def test_gavel_lease_time_average_tracks_the_fractional_allocation():
    ideal = {A: np.array([2.5, 0.0]), B: np.array([1.5, 1.0]), C: np.array([0.0, 3.0])}
    md, cap, m = {A: 1, B: 1, C: 1}, {A: 10, B: 10, C: 10}, np.array([4, 4])
    lease = GavelLease()
    total = {c: np.zeros(2) for c in ideal}
    rounds = 400
    for _ in range(rounds):
        got = lease.round(ideal, md, cap, m)
        _check(got, ideal, md, cap, m)
        for c in got:
            total[c] += got[c]
    # work-conserving on every type a class has a share of: 4 + 4 GPUs used each round, in proportion
    # to the shares (type 0: 2.5 : 1.5; type 1: 1 : 3), so the averages are the shares scaled to 4
    assert total[A][0] / rounds == pytest.approx(2.5, abs=0.02)
    assert total[B][0] / rounds == pytest.approx(1.5, abs=0.02)
    assert total[B][1] / rounds == pytest.approx(1.0, abs=0.02)
    assert total[C][1] / rounds == pytest.approx(3.0, abs=0.02)
    assert lease.max_abs_dev <= 2.0


def test_gavel_lease_priority_serves_the_most_underserved_class_first():
    # one GPU, two classes with shares 0.75 / 0.25: a lease in priority order serves A 3 rounds in 4
    ideal = {A: np.array([0.75]), B: np.array([0.25])}
    lease = GavelLease()
    seq = [int(lease.round(ideal, {A: 1, B: 1}, {A: 1, B: 1}, np.array([1]))[A][0]) for _ in range(8)]
    assert sum(seq) == 6 and seq[:4].count(1) == 3


def test_gavel_lease_respects_job_sizes_and_caps():
    ideal = {A: np.array([3.0, 3.0]), B: np.array([1.0, 1.0])}
    md, cap, m = {A: 2, B: 4}, {A: 4, B: 4}, np.array([3, 5])
    got = GavelLease().round(ideal, md, cap, m)
    _check(got, ideal, md, cap, m)
    assert got[B].sum() in (0, 4) and got[A].sum() <= 4


def test_gandiva_lottery_is_seeded_and_proportional():
    ideal = {A: np.array([6.0]), B: np.array([2.0])}
    md, cap, m = {A: 1, B: 1}, {A: 1, B: 1}, np.array([1])

    def wins(seed: int) -> list[int]:
        lot = GandivaLottery(np.random.default_rng(seed))
        return [int(lot.round(ideal, md, cap, m)[A][0]) for _ in range(2000)]

    assert wins(3) == wins(3)
    assert wins(3) != wins(4)
    assert np.mean(wins(3)) == pytest.approx(0.75, abs=0.03)  # tickets 6 : 2


def test_gandiva_lottery_gives_nothing_without_a_share_and_fills_the_type():
    ideal = {A: np.array([0.0, 4.0]), B: np.array([8.0, 0.0])}
    md, cap, m = {A: 1, B: 1}, {A: 20, B: 20}, np.array([8, 8])
    got = GandivaLottery(np.random.default_rng(0)).round(ideal, md, cap, m)
    _check(got, ideal, md, cap, m)
    assert got[A].tolist() == [0, 8] and got[B].tolist() == [8, 0]


def test_own_realisations_and_errors():
    assert own_realisation("gavel") == "gavel-lease"
    assert own_realisation("gandiva-fair") == "gandiva-lottery"
    assert own_realisation("oef-coop") == own_realisation("maxmin") == "oef-rounding"
    with pytest.raises(InputError, match="realisation"):
        make_realiser("round-robin")
    with pytest.raises(InputError, match="rng"):
        make_realiser("gandiva-lottery")
    with pytest.raises(InputError, match="ideal"):
        GavelLease().round({A: np.array([-1.0])}, {A: 1}, {A: 1}, np.array([1]))
