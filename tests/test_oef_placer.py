"""OEF placer: deviation rounding (spec A6, fixtures §6.3 P1–P5, claim C13), job assignment (A7) and host packing
(A8, fixtures §6.4 J1–J3)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketsim.market.errors import InputError
from marketsim.market.oef.placer import (
    DeviationRounder,
    Placement,
    RunnableJob,
    _check_invariants,
    assign_jobs,
    pack_hosts,
    round_half_up,
    waterfill,
)
from marketsim.market.oef.throughput import job_rate
from marketsim.market.topology import single_rack

BIG = 10**6  # "cap = ∞" of the §6.3 table


def _keys(n: int) -> list[tuple[str, str]]:
    return [(f"u{i}", "jt") for i in range(n)]


def _run(ideals, min_demand, m, backfill, rounds, caps=None):
    """Run the rounder on a static instance; return per-round allocations (C, k), dev and tdev after each round."""
    keys = _keys(len(ideals))
    caps = caps or [BIG] * len(ideals)
    dr = DeviationRounder(backfill=backfill, debug=True)
    ideal = {c: np.array(x, dtype=float) for c, x in zip(keys, ideals, strict=True)}
    md = dict(zip(keys, min_demand, strict=True))
    cap = dict(zip(keys, caps, strict=True))
    allocs, devs, tdevs = [], [], []
    for _ in range(rounds):
        out = dr.round(ideal, md, cap, np.array(m))
        allocs.append(np.stack([out[c] for c in keys]))
        devs.append([dr.dev[c] for c in keys])
        tdevs.append(np.stack([dr.tdev[c] for c in keys]))
    return allocs, devs, tdevs, dr


def _close(got, want, tol=1e-9) -> bool:
    return all(abs(float(g) - float(w)) <= tol for g, w in zip(got, want, strict=True))


# ----------------------------------------------------------------------------------------------------------------------
# §6.3 fixtures

T3 = F(1, 3)
PLACER_FIXTURES = {
    # id: (ideals, min_demand, m, backfill, r per round, {round: dev after it})
    "P1": (
        [[1 / 3]] * 3,
        [1, 1, 1],
        [1],
        False,
        [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1)],
        {0: (T3, T3, T3), 1: (-T3, 2 * T3, 2 * T3), 2: (0, 0, 1), 3: (T3, T3, T3)},
    ),
    "P1b": (
        [[1 / 3]] * 3,
        [1, 1, 1],
        [1],
        True,
        [(1, 0, 0), (0, 1, 0), (0, 0, 1)] * 3,
        {0: (-2 * T3, T3, T3), 1: (-T3, -T3, 2 * T3), 2: (0, 0, 0)},
    ),
    "P2": (
        [[3.5], [0.5]],
        [1, 2],
        [4],
        False,
        [(4, 0), (3, 0), (2, 2), (4, 0), (4, 0), (4, 0), (2, 2), (4, 0)],
        {0: (-0.5, 0.5), 1: (0, 1), 2: (1.5, -0.5), 3: (1, 0), 4: (0.5, 0.5), 5: (0, 1)},
    ),
    "P2b": (
        [[3.5], [0.5]],
        [1, 2],
        [4],
        True,
        [(4, 0), (4, 0), (2, 2), (4, 0)] * 3,
        {0: (-0.5, 0.5), 1: (-1, 1), 2: (0.5, -0.5), 3: (0, 0)},
    ),
    "P3": ([[1], [1]], [2, 2], [2], False, [(0, 0), (2, 0), (0, 2), (2, 0), (0, 2)], {}),
    "P3b": ([[1], [1]], [2, 2], [2], True, [(2, 0), (0, 2)] * 3, {0: (-1, 1), 1: (0, 0)}),
}


@pytest.mark.parametrize("fid", list(PLACER_FIXTURES))
def test_placer_fixtures_single_type(fid: str) -> None:
    ideals, md, m, backfill, r_seq, dev_after = PLACER_FIXTURES[fid]
    allocs, devs, _, _ = _run(ideals, md, m, backfill, len(r_seq))
    got = [tuple(int(v) for v in a[:, 0]) for a in allocs]
    assert got == r_seq
    for t, want in dev_after.items():
        assert _close(devs[t], want), (fid, t, devs[t], want)


def test_p4_two_types_type_mix() -> None:
    allocs, devs, tdevs, _ = _run([[1, 0.5], [0, 0.5]], [1, 1], [1, 1], True, 6)
    expected = [[[1, 0], [0, 1]], [[1, 1], [0, 0]]] * 3
    assert [a.tolist() for a in allocs] == expected
    assert _close(devs[0], (0.5, -0.5)) and _close(devs[1], (0, 0))
    assert _close(tdevs[0][0], (-T3, T3)) and _close(tdevs[0][1], (0, 0))
    assert _close(tdevs[1].ravel(), (0, 0, 0, 0))


def test_round_half_up_is_literal() -> None:
    assert [round_half_up(x) for x in (0.5, 1.5, 2.5, 0.4999, -0.5, 0.0, 2.0)] == [1, 2, 3, 0, 0, 0, 2]
    # float noise within 1e-9 below .5 still rounds up (1/6 + 1/3 = 0.49999999999999994)
    assert round_half_up(1 / 6 + 1 / 3) == 1
    assert round(2.5) == 2  # what must NOT be used


def test_type_mix_ties_prefer_lower_class_then_faster_type() -> None:
    # one class, half of each type: tie -> faster type first, then tdev alternates the type
    allocs, _, tdevs, _ = _run([[0.5, 0.5]], [1], [1, 1], True, 2, caps=[1])
    assert allocs[0].tolist() == [[0, 1]] and allocs[1].tolist() == [[1, 0]]
    assert _close(tdevs[0][0], (0.5, -0.5)) and _close(tdevs[1][0], (0, 0))
    # two identical classes: class 0 wins the tie and takes the faster type
    allocs, _, _, _ = _run([[0.5, 0.5], [0.5, 0.5]], [1, 1], [1, 1], True, 1)
    assert allocs[0].tolist() == [[0, 1], [1, 0]]


def test_tdev_clip_bounds_type_deviation() -> None:
    # class 0 wants 2 type-1 GPUs but only one exists: tdev drifts by (−1, +1) a round and stops at the clip
    dr = DeviationRounder(tdev_clip=0.5, debug=True)
    keys = _keys(2)
    ideal = {keys[0]: np.array([0.0, 2.0]), keys[1]: np.array([0.0, 0.0])}
    for _ in range(20):
        out = dr.round(ideal, dict.fromkeys(keys, 1), {keys[0]: 2, keys[1]: 0}, np.array([1, 1]))
        assert out[keys[0]].tolist() == [1, 1]  # only one type-1 GPU exists
        assert np.abs(dr.tdev[keys[0]]).max() <= 0.5 + 1e-12
    assert _close(dr.tdev[keys[0]], (-0.5, 0.5))


def test_float_noise_does_not_decide_ties() -> None:
    """Residuals are compared rounded to 9 decimals, so the written tie rules apply to values equal up to noise."""
    noisy = float(np.nextafter(0.5, 1.0))  # 0.5000000000000001
    assert noisy != 0.5
    # repair: T − r = (−0.5, −0.4999…) is a tie -> the HIGHER index is cut (raw floats would cut class 0)
    allocs, _, _, _ = _run([[0.5], [noisy]], [1, 1], [1], False, 1)
    assert allocs[0][:, 0].tolist() == [1, 0]
    # backfill: residuals (0.3, 0.30000000000000004) tie -> the LOWER index is served first
    allocs, _, _, _ = _run([[0.3], [0.1 + 0.2]], [1, 1], [1], True, 1)
    assert allocs[0][:, 0].tolist() == [1, 0]
    # type mix: shares (0.5, 0.49999999999999994) tie -> the faster type
    allocs, _, _, _ = _run([[0.1 + 0.2, 0.3]], [1], [1, 1], True, 1, caps=[1])
    assert allocs[0].tolist() == [[0, 1]]


def test_starvation_diagnostic_p3() -> None:
    _, _, _, dr = _run([[1], [1]], [2, 2], [2], False, 6)  # r: (0,0), (2,0), (0,2), (2,0), (0,2), (2,0)
    a, b = _keys(2)
    assert dr.longest_zero_run == {a: 1, b: 2} and dr.zero_run == {a: 0, b: 1}
    assert dr.last_eff == {a: 1.0, b: 1.0}
    # C13(c) bound ceil(min_demand / eff) = 2 holds here
    assert max(dr.longest_zero_run.values()) <= math.ceil(2 / 1.0)
    dr.reset()
    assert dr.rounds == 0 and dr.dev == {} and dr.longest_zero_run == {}


# ----------------------------------------------------------------------------------------------------------------------
# water-fill, caps, diagnostics, state


def test_waterfill_redistributes_unusable_share() -> None:
    assert np.allclose(waterfill(np.array([3.0, 1.0]), np.array([1, 10]), 4), [1, 3])
    assert np.allclose(waterfill(np.array([2.0, 1.0, 1.0]), np.array([1, 10, 1]), 4), [1, 2, 1])
    assert np.allclose(waterfill(np.array([2.0, 1.0, 1.0]), np.array([1, 10, 10]), 4), [1, 1.5, 1.5])
    # the spill is proportional to ideal (2 : 1), with a second pass once class 2 hits its cap
    assert np.allclose(waterfill(np.array([4.0, 2.0, 1.0]), np.array([1, 10, 10]), 7), [1, 4, 2])
    assert np.allclose(waterfill(np.array([4.0, 2.0, 1.0]), np.array([1, 10, 1.5]), 7), [1, 4.5, 1.5])
    # total demand below G: nobody exceeds its cap, nothing is invented
    assert np.allclose(waterfill(np.array([2.0, 2.0]), np.array([1, 1]), 4), [1, 1])
    # a class with zero share receives nothing by the water-fill
    assert np.allclose(waterfill(np.array([0.0, 4.0]), np.array([5, 2]), 4), [0, 2])


def test_capped_class_share_goes_to_others_and_dev_stays_bounded() -> None:
    keys = _keys(2)
    dr = DeviationRounder(debug=True)
    ideal = {keys[0]: np.array([3.0]), keys[1]: np.array([1.0])}
    tot = np.zeros(2)
    for _ in range(200):
        out = dr.round(ideal, dict.fromkeys(keys, 1), {keys[0]: 1, keys[1]: 10}, np.array([4]))
        tot += [out[keys[0]][0], out[keys[1]][0]]
    assert tot.tolist() == [200, 600]  # eff = (1, 3): realised exactly every round
    assert dr.max_abs_dev_seen == 0.0 and dr.unused_gpu_rounds == 0


def test_diagnostics_unused_and_max_abs_dev() -> None:
    _, _, _, dr = _run([[1 / 3]] * 3, [1, 1, 1], [1], False, 3)
    # P1: round 0 leaves the GPU idle, rounds 1 and 2 use it; the largest |dev| is 1 (class 2 after round 2)
    assert dr.rounds == 3 and dr.unused_gpu_rounds == 1 and dr.last_unused == 0
    assert dr.max_abs_dev == pytest.approx(1.0) and dr.max_abs_dev_seen == pytest.approx(1.0)
    _, _, _, dr = _run([[1 / 3]] * 3, [1, 1, 1], [1], True, 3)
    assert dr.unused_gpu_rounds == 0


@pytest.mark.parametrize("backfill", [True, False])
def test_unrealisable_share_grows_dev_and_dev_clip_bounds_it(backfill: bool) -> None:
    # gang of 3 next to a class capped at 2 on 4 GPUs: class 1 gets 4/3 on average instead of eff = 2
    keys = _keys(2)
    ideal = {keys[0]: np.array([2.0]), keys[1]: np.array([2.0])}
    md, cap = {keys[0]: 3, keys[1]: 1}, {keys[0]: 3, keys[1]: 2}
    free = DeviationRounder(backfill=backfill, debug=True)
    clipped = DeviationRounder(backfill=backfill, dev_clip=1.5, debug=True)
    for _ in range(300):
        a = free.round(ideal, md, cap, np.array([4]))
        b = clipped.round(ideal, md, cap, np.array([4]))
        assert clipped.max_abs_dev <= 1.5
        assert a[keys[0]][0] in (0, 3) and b[keys[0]][0] in (0, 3)
    assert free.dev[keys[1]] == pytest.approx(200.0)  # 300 rounds x 2/3 GPU short
    assert clipped.max_abs_dev_seen == pytest.approx(1.5)
    assert free.unused_gpu_rounds == 200  # rounds (3, 1): 0 idle; rounds (0, 2): 2 idle


def test_class_churn_keeps_dev_of_survivors_and_starts_new_at_zero() -> None:
    a, b, c = _keys(3)
    dr = DeviationRounder(backfill=False)
    dr.round({a: np.array([1 / 3]), b: np.array([2 / 3])}, {a: 1, b: 1}, {a: 5, b: 5}, np.array([1]))
    assert dr.dev[a] == pytest.approx(1 / 3) and dr.dev[b] == pytest.approx(-1 / 3)
    out = dr.round({a: np.array([0.5]), c: np.array([0.5])}, {a: 1, c: 1}, {a: 5, c: 5}, np.array([1]))
    assert set(dr.dev) == {a, c} and set(dr.tdev) == {a, c}
    assert out[a][0] == 1 and out[c][0] == 0  # a: 0.5 + 1/3 rounds up; c starts at dev 0 and rounds 0.5 up, repaired
    assert dr.dev[c] == pytest.approx(0.5)
    assert dr.round({}, {}, {}, np.array([1])) == {}
    assert dr.dev == {} and dr.last_unused == 1


def test_validation_errors_name_field_and_value() -> None:
    a, b = _keys(2)
    dr = DeviationRounder()
    good = {a: np.array([1.0, 0.0])}
    cases = [
        (dict(ideal=good, min_demand={a: 1}, cap={a: 1}, m_avail=np.array([1, -1])), "m_avail[1]"),
        (dict(ideal=good, min_demand={a: 1}, cap={a: 1}, m_avail=np.array([1.5, 1])), "m_avail[0]"),
        (dict(ideal=good, min_demand={a: 0}, cap={a: 1}, m_avail=np.array([1, 1])), f"min_demand[{a}]"),
        (dict(ideal=good, min_demand={a: 1}, cap={a: -1}, m_avail=np.array([1, 1])), f"cap[{a}]"),
        (dict(ideal={a: np.array([1.0])}, min_demand={a: 1}, cap={a: 1}, m_avail=np.array([1, 1])), f"ideal[{a}]"),
        (
            dict(ideal={a: np.array([-0.1, 0])}, min_demand={a: 1}, cap={a: 1}, m_avail=np.array([1, 1])),
            f"ideal[{a}][0]",
        ),
        (
            dict(ideal={a: np.array([np.nan, 0])}, min_demand={a: 1}, cap={a: 1}, m_avail=np.array([1, 1])),
            f"ideal[{a}][0]",
        ),
        (dict(ideal=good, min_demand={}, cap={a: 1}, m_avail=np.array([1, 1])), "min_demand"),
        (dict(ideal=good, min_demand={a: 1, b: 1}, cap={a: 1}, m_avail=np.array([1, 1])), "min_demand"),
        (dict(ideal=good, min_demand={a: 1}, cap={}, m_avail=np.array([1, 1])), "cap"),
        (dict(ideal={}, min_demand={}, cap={}, m_avail=np.array([], dtype=int)), "m_avail"),
    ]
    for kwargs, fld in cases:
        with pytest.raises(InputError) as e:
            dr.round(**kwargs)
        assert e.value.field == fld, (fld, str(e.value))
    assert dr.rounds == 0 and dr.dev == {}  # failed calls leave no state behind
    dr.round(good, {a: 1}, {a: 1}, np.array([1, 1]))
    with pytest.raises(InputError, match="length 2"):
        dr.round({a: np.array([1.0])}, {a: 1}, {a: 1}, np.array([1]))
    with pytest.raises(InputError):
        DeviationRounder(dev_clip=-1.0)
    with pytest.raises(InputError):
        DeviationRounder(tdev_clip=-0.1)
    # tiny LP noise below zero is clipped, not rejected
    out = DeviationRounder().round({a: np.array([-1e-12, 1.0])}, {a: 1}, {a: 1}, np.array([1, 1]))
    assert out[a].tolist() == [0, 1]


def test_debug_invariant_checker_detects_violations() -> None:
    keys = _keys(2)
    m = np.array([2, 1])
    ok = np.array([[2, 0], [0, 1]])
    _check_invariants(keys, ok, ok.sum(1), m, [2, 1], [2, 1])
    bad = [
        (np.array([[2, 1], [0, 1]]), [2, 1], [3, 1]),  # type 1 over capacity
        (np.array([[1, 0], [0, 1]]), [2, 1], [2, 1]),  # zeroing rule broken
        (np.array([[2, 0], [0, 1]]), [1, 1], [1, 1]),  # cap broken
        (np.array([[-1, 0], [0, 1]]), [1, 1], [1, 1]),  # negative
    ]
    for a, md, cp in bad:
        with pytest.raises(AssertionError):
            _check_invariants(keys, a, a.sum(1), m, md, cp)


# ----------------------------------------------------------------------------------------------------------------------
# P5: hard invariants on random instances (hypothesis), and equivalence with the paper's literal rule


@st.composite
def placer_instances(draw):
    k = draw(st.integers(1, 4))
    m = np.array(draw(st.lists(st.integers(0, 8), min_size=k, max_size=k)))
    if m.sum() == 0:
        m[draw(st.integers(0, k - 1))] = draw(st.integers(1, 8))
    g = int(m.sum())
    n = draw(st.integers(1, 10))
    seed = draw(st.integers(0, 2**32 - 1))
    md = [draw(st.sampled_from([d for d in (1, 2, 4, 8) if d <= g])) for _ in range(n)]
    churn = draw(st.booleans())
    failures = draw(st.booleans())
    return m, md, seed, churn, failures


def _random_ideal(rng: np.random.Generator, n: int, m: np.ndarray) -> np.ndarray:
    """A fractional allocation (n, k) using each type fully, some entries exactly 0."""
    w = rng.random((n, m.size)) * (rng.random((n, m.size)) < 0.7)
    w[rng.integers(0, n), :] += 1e-3  # every column has mass
    return w / w.sum(axis=0) * m


@pytest.mark.parametrize("backfill", [True, False])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=placer_instances())
def test_p5_hard_invariants_random_instances(backfill: bool, inst) -> None:
    m, md, seed, churn, failures = inst
    rng = np.random.default_rng(seed)
    n = len(md)
    keys = _keys(n)
    x = _random_ideal(rng, n, m)
    dr = DeviationRounder(backfill=backfill, debug=True)
    for _ in range(400):
        live = [i for i in range(n) if not churn or rng.random() < 0.9] or [0]
        m_avail = m - (rng.integers(0, 2, m.size) * (m > 0) if failures else 0)
        caps = {keys[i]: int(rng.choice([0, md[i], md[i] + rng.integers(0, 8), BIG])) for i in live}
        ideal = {keys[i]: x[i] for i in live}
        out = dr.round(ideal, {keys[i]: md[i] for i in live}, caps, m_avail)
        assert list(out) == [keys[i] for i in live]
        a = np.stack([out[keys[i]] for i in live])
        assert a.dtype.kind == "i" and (a >= 0).all()
        assert (a.sum(axis=0) <= m_avail).all()
        for row, i in zip(a, live, strict=True):
            s = int(row.sum())
            assert s <= caps[keys[i]]
            assert s == 0 or s >= md[i]
        assert dr.last_unused == int(m_avail.sum()) - int(a.sum())
        if backfill:
            # work-conserving: no class could have taken one more grant of its size
            free = int(m_avail.sum()) - int(a.sum())
            for row, i in zip(a, live, strict=True):
                s = int(row.sum())
                need = max(1, md[i] - s)
                assert not (need <= free and s + need <= caps[keys[i]])
        assert all(np.abs(t).max() <= dr.tdev_clip + 1e-12 for t in dr.tdev.values())


def _paper_literal(ideals: np.ndarray, md: list[int], dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paper's rule: real = round(ideal + dev); 0 below min demand; dev += ideal − real."""
    real = np.array([math.floor(x + 0.5 + 1e-9) for x in np.maximum(ideals + dev, 0)])
    real = np.where(real < np.array(md), 0, real)
    return real, dev + ideals - real


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 6),
    g=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
)
def test_without_backfill_matches_paper_rule_while_it_fits(n: int, g: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = _keys(n)
    x = rng.dirichlet(np.ones(n)) * g
    md = [int(rng.choice([d for d in (1, 2, 4) if d <= g])) for _ in range(n)]
    dr = DeviationRounder(backfill=False, debug=True)
    dev = np.zeros(n)
    for _ in range(100):
        real, dev_next = _paper_literal(x, md, dev)
        if real.sum() > g:
            break  # from here on the paper's rule over-commits; the capacity-aware version departs from it
        out = dr.round(
            {c: x[i : i + 1] for i, c in enumerate(keys)},
            dict(zip(keys, md, strict=True)),
            dict.fromkeys(keys, BIG),
            np.array([g]),
        )
        assert [int(out[c][0]) for c in keys] == real.tolist()
        assert _close([dr.dev[c] for c in keys], dev_next, 1e-9)
        dev = dev_next


# ----------------------------------------------------------------------------------------------------------------------
# C13(b): long-run averages converge to eff when the share is integrally realisable


@pytest.mark.parametrize("backfill", [True, False])
@pytest.mark.parametrize("seed", [3, 11])
def test_long_run_average_converges_to_share(backfill: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n, rounds = np.array([8, 8, 8]), 5, 2000
    x = rng.dirichlet(np.ones(n), size=m.size).T * m  # columns sum to m: the whole cluster is shared out
    keys = _keys(n)
    ideal = {c: x[i] for i, c in enumerate(keys)}
    dr = DeviationRounder(backfill=backfill, debug=True)
    total = np.zeros((n, m.size))
    max_tdev = 0.0
    for _ in range(rounds):
        out = dr.round(ideal, dict.fromkeys(keys, 1), dict.fromkeys(keys, 100), m)  # single-GPU jobs, caps slack
        total += np.stack([out[c] for c in keys])
        max_tdev = max(max_tdev, max(float(np.abs(t).max()) for t in dr.tdev.values()))
    avg = total / rounds
    eff = x.sum(axis=1)
    # Σ_t (eff − r_t) = dev_T, hence |avg − eff| = |dev_T| / rounds ≤ max|dev| / rounds
    assert dr.max_abs_dev_seen <= 1.5  # bounded (about 0.8 with backfill, 1.3 without)
    assert np.abs(avg.sum(axis=1) - eff).max() <= dr.max_abs_dev_seen / rounds + 1e-12
    assert np.abs(avg.sum(axis=1) - eff).max() <= 1e-3
    # per type: Σ_t (share·r_t − a_t) = tdev_T as long as the clip (2) never binds
    assert max_tdev < dr.tdev_clip
    assert np.abs(avg - x).max() <= (dr.max_abs_dev_seen + max_tdev) / rounds + 1e-12
    assert dr.unused_gpu_rounds <= (0 if backfill else 5)


# ----------------------------------------------------------------------------------------------------------------------
# A7 / A8 and §6.4 J1–J3


@pytest.fixture
def testbed():
    return single_rack([("RTX3070", 8), ("RTX3080", 8), ("RTX3090", 8)])


def test_j1_single_type_best_fit(testbed) -> None:
    j1 = RunnableJob("J1", 4, arrival=0.0, starved_s=600.0)
    j2 = RunnableJob("J2", 2, arrival=0.0, starved_s=300.0)
    chosen, left = assign_jobs(np.array([0, 0, 6]), [j2, j1], "oef")
    assert [(j.job_id, t.tolist()) for j, t in chosen] == [("J1", [0, 0, 4]), ("J2", [0, 0, 2])]
    assert left.tolist() == [0, 0, 0]
    placed = pack_hosts(chosen, testbed.servers, "oef")
    assert placed["J1"] == Placement("J1", (("h4", 2, 4),), cross_type=False, cross_host=False)
    assert placed["J2"] == Placement("J2", (("h5", 2, 2),), cross_type=False, cross_host=False)


def test_j2_cross_type_extends_to_nearest_rank(testbed) -> None:
    j3 = RunnableJob("J3", 4, arrival=0.0, starved_s=0.0)
    chosen, left = assign_jobs(np.array([0, 2, 2]), [j3], "oef")
    assert chosen[0][1].tolist() == [0, 2, 2] and left.tolist() == [0, 0, 0]
    p = pack_hosts(chosen, testbed.servers, "oef")["J3"]
    assert p.hosts == (("h2", 1, 2), ("h4", 2, 2))
    assert p.cross_type and p.cross_host and p.n_hosts == 2
    straggler_workers = int(p.counts(3).sum()) if p.cross_type else 0
    assert straggler_workers == 4
    rate = job_rate(p.counts(3), np.array([1.0, 1.7, 2.15]), p.n_hosts, kappa=0.1)
    assert rate == pytest.approx(4 * 1.7 / 1.1, abs=1e-12)
    assert rate == pytest.approx(6.181818181818, abs=1e-9)


def test_j3_naive_rank_order(testbed) -> None:
    j3 = RunnableJob("J3", 4, arrival=0.0, starved_s=0.0)
    chosen, _ = assign_jobs(np.array([0, 2, 2]), [j3], "naive")
    assert chosen[0][1].tolist() == [0, 2, 2]
    p = pack_hosts(chosen, testbed.servers, "naive")["J3"]
    assert p.hosts == (("h2", 1, 2), ("h4", 2, 2)) and p.cross_type and p.cross_host
    # where the two differ: naive fills slow types first, oef keeps the job on one type
    naive, _ = assign_jobs(np.array([2, 1, 4]), [RunnableJob("x", 3, 0.0, 0.0)], "naive")
    oef, _ = assign_jobs(np.array([2, 1, 4]), [RunnableJob("x", 3, 0.0, 0.0)], "oef")
    assert naive[0][1].tolist() == [2, 1, 0] and oef[0][1].tolist() == [0, 0, 3]


def test_assign_jobs_order_skip_and_leftover() -> None:
    jobs = [
        RunnableJob("b", 2, arrival=10.0, starved_s=100.0),
        RunnableJob("a", 2, arrival=10.0, starved_s=100.0),  # same starvation and arrival: job_id decides
        RunnableJob("old", 1, arrival=0.0, starved_s=100.0),  # earlier arrival beats both
        RunnableJob("big", 8, arrival=0.0, starved_s=math.inf),  # never ran: first, but does not fit -> skipped
        RunnableJob("late", 1, arrival=0.0, starved_s=5.0),
    ]
    chosen, left = assign_jobs(np.array([3, 3]), jobs, "oef")  # each job: the type with the most units left
    assert [(j.job_id, t.tolist()) for j, t in chosen] == [
        ("old", [0, 1]),
        ("a", [2, 0]),
        ("b", [0, 2]),
        ("late", [1, 0]),
    ]
    assert left.tolist() == [0, 0]
    chosen, left = assign_jobs(np.array([1, 1, 2]), [RunnableJob("x", 1, 0.0, 0.0)], "oef")
    assert chosen[0][1].tolist() == [0, 0, 1] and left.tolist() == [1, 1, 1]
    assert assign_jobs(np.array([0, 0]), [RunnableJob("x", 1, 0.0, 0.0)])[0] == []


def test_assign_jobs_oef_spreads_to_nearest_ranks_faster_first() -> None:
    # 4 types, no single type holds 3: start at type 0 (most left), then type 1 (distance 1), then type 2
    chosen, _ = assign_jobs(np.array([2, 0, 1, 1]), [RunnableJob("x", 3, 0.0, 0.0)], "oef")
    assert chosen[0][1].tolist() == [2, 0, 1, 0]
    # start at type 2 (tie on 2 units with type 0 -> faster); equal distance 1: type 3 before type 1
    chosen, _ = assign_jobs(np.array([2, 1, 2, 1]), [RunnableJob("x", 4, 0.0, 0.0)], "oef")
    assert chosen[0][1].tolist() == [0, 1, 2, 1]


def test_pack_hosts_best_fit_vs_first_fit(testbed) -> None:
    a3 = RunnableJob("A", 3, 0.0, 0.0)
    b2 = RunnableJob("B", 2, 0.0, 0.0)
    chosen = [(b2, np.array([2, 0, 0])), (a3, np.array([3, 0, 0]))]
    oef = pack_hosts(chosen, testbed.servers, "oef")
    assert oef["A"].hosts == (("h0", 0, 3),) and oef["B"].hosts == (("h1", 0, 2),)
    assert not oef["B"].cross_host
    naive = pack_hosts(chosen, testbed.servers, "naive")
    assert naive["A"].hosts == (("h0", 0, 3),) and naive["B"].hosts == (("h0", 0, 1), ("h1", 0, 1))
    assert naive["B"].cross_host and not naive["B"].cross_type
    # best fit prefers the fuller host; fewest hosts when no single host fits
    c1 = RunnableJob("C", 1, 0.0, 0.0)
    oef = pack_hosts([(a3, np.array([3, 0, 0])), (c1, np.array([1, 0, 0]))], testbed.servers, "oef")
    assert oef["C"].hosts == (("h0", 0, 1),)
    jobs = [(RunnableJob(n, 3, 0.0, 0.0), np.array([3, 0, 0])) for n in ("P", "Q")]
    jobs.append((RunnableJob("R", 2, 0.0, 0.0), np.array([2, 0, 0])))
    oef = pack_hosts(jobs, testbed.servers, "oef")
    assert oef["R"].hosts == (("h0", 0, 1), ("h1", 0, 1)) and oef["R"].cross_host


def test_pack_hosts_natural_host_order_and_errors() -> None:
    from marketsim.market.types import GpuServer

    servers = [GpuServer("h10", 0, 4), GpuServer("h2", 0, 4)]
    out = pack_hosts([(RunnableJob("x", 4, 0.0, 0.0), np.array([4]))], servers)
    assert out["x"].hosts == (("h2", 0, 4),)  # tie on free GPUs -> h2 before h10
    with pytest.raises(InputError) as e:
        pack_hosts([(RunnableJob("x", 9, 0.0, 0.0), np.array([9]))], servers)
    assert "type 0" in e.value.field
    with pytest.raises(InputError) as e:
        pack_hosts([], servers, "fancy")
    assert e.value.field == "placement"
    with pytest.raises(InputError):
        pack_hosts([(RunnableJob("x", 1, 0.0, 0.0), np.array([1]))] * 2, servers)
    with pytest.raises(InputError):
        pack_hosts(
            [(RunnableJob("x", 1, 0.0, 0.0), np.array([1])), (RunnableJob("y", 1, 0.0, 0.0), np.array([1, 0]))], servers
        )
    assert pack_hosts([], servers) == {}


def test_runnable_job_and_assign_validation() -> None:
    for kwargs, fld in [
        (dict(job_id="j", workers=0, arrival=0.0, starved_s=0.0), "RunnableJob[j].workers"),
        (dict(job_id="j", workers=1, arrival=-1.0, starved_s=0.0), "RunnableJob[j].arrival"),
        (dict(job_id="j", workers=1, arrival=0.0, starved_s=float("nan")), "RunnableJob[j].starved_s"),
        (dict(job_id="j", workers=1, arrival=0.0, starved_s=-1.0), "RunnableJob[j].starved_s"),
        (dict(job_id="", workers=1, arrival=0.0, starved_s=0.0), "RunnableJob.job_id"),
    ]:
        with pytest.raises(InputError) as e:
            RunnableJob(**kwargs)
        assert e.value.field == fld
    job = RunnableJob("j", 1, 0.0, 0.0)
    with pytest.raises(InputError) as e:
        assign_jobs(np.array([1]), [job], "greedy")
    assert e.value.field == "placement" and e.value.value == "greedy"
    with pytest.raises(InputError):
        assign_jobs(np.array([1, -1]), [job])
    with pytest.raises(InputError):
        assign_jobs(np.array([0.5]), [job])
    with pytest.raises(InputError):
        assign_jobs(np.array([2]), [job, job])


@pytest.mark.parametrize("placement", ["oef", "naive"])
def test_pipeline_rounds_on_testbed_are_host_feasible(testbed, placement: str) -> None:
    rng = np.random.default_rng(7)
    m = testbed.capacity
    speedups = {"t0": np.array([1.0, 1.7, 2.15]), "t1": np.array([1.0, 1.22, 1.39]), "t2": np.array([1.0, 1.3, 1.55])}
    jobs = {
        (t, "jt"): [RunnableJob(f"{t}-{i}", int(rng.choice([1, 2, 4, 8])), float(i), 0.0) for i in range(6)]
        for t in speedups
    }
    x = rng.dirichlet(np.ones(3), size=3).T * m  # 3 classes x 3 types
    ideal = {c: x[i] for i, c in enumerate(jobs)}
    last_ran = {j.job_id: 0.0 for js in jobs.values() for j in js}
    dr = DeviationRounder(debug=True)
    starts = 0
    for t in range(60):
        now = 300.0 * t
        runnable = {
            c: [RunnableJob(j.job_id, j.workers, j.arrival, now - last_ran[j.job_id]) for j in js]
            for c, js in jobs.items()
        }
        a = dr.round(
            ideal,
            {c: min(j.workers for j in js) for c, js in runnable.items()},
            {c: sum(j.workers for j in js) for c, js in runnable.items()},
            m,
        )
        chosen = []
        for c, js in runnable.items():
            started, left = assign_jobs(a[c], js, placement)
            assert (left >= 0).all() and sum(int(v.sum()) for _, v in started) + int(left.sum()) == int(a[c].sum())
            chosen += started
        placed = pack_hosts(chosen, testbed.servers, placement)
        used: dict[str, int] = {}
        host_type = {s.host_id: s.gpu_type for s in testbed.servers}
        for job, vec in chosen:
            p = placed[job.job_id]
            assert p.counts(3).tolist() == vec.tolist() and int(vec.sum()) == job.workers
            assert p.cross_type == (np.count_nonzero(vec) > 1) and p.cross_host == (p.n_hosts > 1)
            for h, j, g in p.hosts:
                assert host_type[h] == j and g > 0
                used[h] = used.get(h, 0) + g
            rate = job_rate(vec, speedups[job.job_id.split("-")[0]], p.n_hosts)
            assert 0 < rate <= job.workers * 2.15 + 1e-12
            last_ran[job.job_id] = now
            starts += 1
        assert all(used[s.host_id] <= s.count for s in testbed.servers if s.host_id in used)
    assert starts >= 60 and len(set(last_ran.values())) > 1  # jobs do run, and they rotate
