"""Realisations of a fractional allocation (market/oef/realise.py): Gandiva_fair's lottery, each policy's own
realisation (Gavel's lease is the round engine's own, tested with the engine: tests/test_trace_lease.py)."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.errors import InputError
from marketsim.market.oef.realise import GandivaLottery, make_realiser, own_realisation

A, B, C = ("a", "j"), ("b", "j"), ("c", "j")


def _check(counts, ideal, md, cap, m):
    tot = sum(counts.values())
    assert (tot <= m).all()
    for c, a in counts.items():
        assert a.sum() <= cap[c]
        assert all(v % md[c] == 0 for v in a)  # job-sized chunks on one type each
        assert (a[np.asarray(ideal[c]) <= 0] == 0).all()  # no GPUs of a type the class has no share of


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
    assert own_realisation("gavel") == own_realisation("gavel-max-min-perf") == "gavel-lease"
    assert own_realisation("gandiva-fair") == "gandiva-lottery"
    assert own_realisation("oef-coop") == own_realisation("maxmin") == "oef-rounding"
    assert make_realiser("gavel-lease") is None  # the round engine's own per-job lease
    with pytest.raises(InputError, match="realisation"):
        make_realiser("round-robin")
    with pytest.raises(InputError, match="rng"):
        make_realiser("gandiva-lottery")
    with pytest.raises(InputError, match="ideal"):
        GandivaLottery(np.random.default_rng(0)).round({A: np.array([-1.0])}, {A: 1}, {A: 1}, np.array([1]))
