"""The trace engine's lease (``TraceRounds._lease``) against a direct transcription of its rule
(docs/trace_simulation.md, "One round", steps 3-4), on random engine states built to tie: the
fast lease caches the per-active-set arrays, ranks only the types with more candidates than GPUs
and breaks ties by a precomputed (deficit, alloc, arrival) order plus a stable sort by priority.
It must lease the same jobs, on the same types, in the same order, and say whether the lease
depended on priorities (``_order_free``, what merging rounds relies on)."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.agents.trace_rounds import ALLOCATED_ONLY, TraceRounds


def _reference(eng: TraceRounds, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Gavel's greedy lease written out: priorities of every (job, type) in one matrix, per type
    in the round's order the candidates sorted by (priority, deficit, alloc) descending, then
    arrival (when they do not all fit; else in arrival order); a job is leased where it is not
    leased yet, can run, has an allocation and fits."""
    A = eng.active
    a, T = eng.alloc[A], eng.T[A]
    wt = eng.worker_time
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(wt > 0, eng.job_time[A] / np.where(wt > 0, wt, 1.0), 0.0)
        prio = np.where(frac > 0, a / np.where(frac > 0, frac, 1.0), a * 1e9)
    prio[(a == 0) | (T <= 0)] = 0.0
    ok = (T > 0) & eng.has_alloc[A][:, None]
    if eng.policy in ALLOCATED_ONLY:
        ok &= a > 0
    left = m.astype(np.int64).copy()
    taken = np.zeros(A.size, dtype=bool)
    pos: list[int] = []
    typ: list[int] = []
    ranked = False
    for t in eng._order.tolist():
        cand = [i for i in range(A.size) if ok[i, t] and not taken[i] and eng.s[A[i]] <= left[t]]
        if sum(int(eng.s[A[i]]) for i in cand) > left[t]:  # else every candidate fits: arrival order
            ranked = True
            cand.sort(key=lambda i: (-prio[i, t], -eng.deficit[A[i], t], -a[i, t], i))
        for i in cand:
            g = int(eng.s[A[i]])
            if g <= left[t]:
                pos.append(i)
                typ.append(t)
                taken[i] = True
                left[t] -= g
    return np.asarray(pos, dtype=np.int64), np.asarray(typ, dtype=np.int64), not ranked


def _engine(rng: np.random.Generator, policy: str, multi: bool) -> TraceRounds:
    n, k = int(rng.integers(1, 40)), int(rng.integers(1, 4))
    T = rng.choice([0.0, 0.5, 1.0, 2.0], size=(n, k), p=[0.15, 0.3, 0.3, 0.25])
    T[T.max(axis=1) == 0, 0] = 1.0
    scale = rng.choice([1, 2, 4], size=n) if multi else np.ones(n, dtype=np.int64)
    eng = TraceRounds(
        throughputs=T, scale=scale, total_steps=np.full(n, 1e6), arrival_s=np.zeros(n), priority=np.ones(n),
        tenant_code=np.arange(n), job_type_code=np.zeros(n, dtype=np.int64), policy=policy, mechanism=None,
        round_seconds=360.0, reallocation_interval_s=1920.0, per_job=True,
    )  # fmt: skip
    # a state made of few distinct values, so priorities, deficits and allocations tie often
    eng.active = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    eng.alloc = np.where(T > 0, rng.choice([0.0, 0.25, 0.5, 1.0], size=(n, k)), 0.0)
    eng.has_alloc = rng.random(n) < 0.85
    eng.job_time = rng.choice([180.0, 360.0, 540.0, 720.0], size=(n, k))
    eng.worker_time = rng.choice([0.0, 720.0, 1440.0, 2160.0], size=k, p=[0.1, 0.3, 0.3, 0.3])
    eng.deficit = rng.choice([-90.0, 0.0, 0.0, 90.0], size=(n, k))
    eng._order = rng.permutation(k)
    eng._lease_st = None  # the state was set by hand: drop the lease's cache
    return eng


@pytest.mark.parametrize("policy", ["gavel-max-min-perf", "gavel-fifo"])
@pytest.mark.parametrize("multi", [False, True])
def test_lease_equals_the_rule_written_out(policy: str, multi: bool) -> None:
    rng = np.random.default_rng(11 + multi)
    seen = {"ranked": 0, "free": 0}
    for _ in range(400):
        eng = _engine(rng, policy, multi)
        m = rng.integers(0, 12, size=eng.k)
        pos, typ, free = _reference(eng, m)
        got_pos, got_typ = eng._lease(m)
        assert got_pos.tolist() == pos.tolist() and got_typ.tolist() == typ.tolist()
        assert eng._order_free == free
        again = eng._lease(m)  # from the cache: the same lease
        assert again[0].tolist() == pos.tolist() and again[1].tolist() == typ.tolist()
        seen["free" if free else "ranked"] += 1
    assert min(seen.values()) > 50  # both branches exercised
