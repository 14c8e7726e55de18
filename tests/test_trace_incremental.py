"""The round engine's incremental bookkeeping (issue #33: philly_full's long queues) gives what a
rebuild from scratch gives: the lease state kept up to date through arrivals and completions
(``TraceRounds._lease_append`` / ``_remove_active``) equals the state built afresh, ranking only
the head of a long queue (``TraceRounds._ranked`` / ``_fill``) leases exactly what a full sort
leases, and the tenants' per-round measures from per-job values cached per solve
(``TraceTenants._job_values``) equal the measures computed over the active jobs directly.
``benchmarks/engine_equivalence.py`` checks the same on philly_full and gavel_trace runs against
an older commit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from testkit import tenant4_trace

from agents.trace_rounds import TraceRounds
from market.traces import GAVEL_TRACE, data_path
from scenarios.loader import load_scenario, parse_scenario

DATA = Path(__file__).parent / "data"


def _small(name: str, jobs: int, gpus: tuple[int, ...] | None = None):  # noqa: ANN202 - a Scenario
    if name == "multigpu":  # Gavel's generated trace with 1-, 2-, 4- and 8-GPU jobs
        data = {"policies": ["maxmin"], "replications": 1,
                "cluster": {"gpu_types": ["k80", "p100", "v100"], "gpus": [8, 8, 8]},
                "workload": {"trace": str(DATA / "gavel_generated_multigpu_100.trace")}}  # fmt: skip
        s = parse_scenario(data, "mg")
    else:
        s = load_scenario(name)
    s = replace(s, workload=replace(s.workload, trace=replace(s.workload.trace, max_jobs=jobs)))
    return s if gpus is None else replace(s, cluster=replace(s.cluster, gpus=gpus))


def _fresh_equals(eng: TraceRounds) -> None:
    """The engine's kept lease state against one rebuilt from the engine's arrays."""
    kept = eng._lease_st
    eng._lease_st = None
    fresh = eng._lease_state()
    eng._lease_st = kept
    A, a, a9, ok, ties, sizes, unit = kept
    assert np.array_equal(A, eng.active) and np.array_equal(A, fresh[0])
    for t in range(eng.k):
        assert np.array_equal(a[t], fresh[1][t]) and np.array_equal(a9[t], fresh[2][t])
        assert np.array_equal(ok[t], fresh[3][t])
        if ties[t] is not None:  # the rank order of the jobs that may be leased (others are never ranked)
            full = np.lexsort((-fresh[1][t], -eng.deficit[A, t]))
            assert np.array_equal(ties[t][ok[t][ties[t]]], full[ok[t][full]])
    assert np.array_equal(sizes, fresh[5]) and unit == fresh[6]


@pytest.mark.parametrize(
    ("name", "jobs", "gpus", "policy"),
    [("gavel_trace", 40, (2, 2, 2), "gavel-max-min-perf"), ("multigpu", 100, (8, 8, 8), "maxmin")],
)
def test_the_kept_lease_state_equals_a_rebuild_every_round(name: str, jobs: int, gpus: tuple, policy: str) -> None:
    """Under contention (queues longer than the GPUs, gang jobs of up to 8 GPUs) the state kept
    through arrivals and completions is the rebuilt one after every round, and it is kept (not
    dropped) across completions and arrivals: the point of keeping it."""
    model = _small(name, jobs, gpus).build_model(policy, "truthful", 3)
    model.progress = False
    eng = model.auctioneer.trace
    step = eng.step
    kept = {"completions": 0, "arrivals": 0}

    def checked(m: np.ndarray):  # noqa: ANN202
        before = eng._lease_st
        res = step(m)
        if eng._lease_st is not None:
            _fresh_equals(eng)
        if before is not None and eng._lease_st is not None and not res.resolved:
            kept["completions"] += int(res.finished.size > 0)
            kept["arrivals"] += int(len(eng.arrived_now) > 0)
        return res

    eng.step = checked
    model.run()
    assert eng.n_done == jobs
    assert kept["completions"] > 20 and kept["arrivals"] > 5, kept


@pytest.mark.parametrize(("name", "jobs", "gpus", "policy"), [("gavel_trace", 60, (3, 3, 3), "gavel-max-min-perf"),
                                                             ("multigpu", 50, (8, 8, 8), "maxmin")])  # fmt: skip
def test_ranking_the_head_of_the_queue_leases_what_a_full_sort_leases(
    name: str, jobs: int, gpus: tuple, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run with the partial ranking on every ranked type (threshold 0, greedy blocks of
    1 job) and off (threshold above any queue): bit-identical completions, and the partial path
    had ties at the boundary and needed the queue's rest at least once (gang jobs skipped)."""
    seen = {"ties": 0, "rest": 0}
    ranked = TraceRounds._ranked.__func__  # type: ignore[attr-defined]

    def spying(cls: type, prio: np.ndarray, room: int) -> list[np.ndarray]:
        out = ranked(cls, prio, room)
        seen["ties"] += int(len(out) > 1 and out[1].size > 1)
        return out

    fill = TraceRounds._fill.__func__  # type: ignore[attr-defined]

    def spying_fill(cls, c, prio, pieces, sizes, room):  # noqa: ANN001, ANN202
        got = fill(cls, c, prio, pieces, sizes, room)
        head = sum(p.size for p in pieces[:2])
        seen["rest"] += int(len(pieces) == 3 and np.isin(got, c[pieces[2]]).any() and head > 0)
        return got

    def run(partial: bool) -> np.ndarray:
        monkeypatch.setattr(TraceRounds, "PARTIAL_RANK_MIN", 0 if partial else 10**9)
        monkeypatch.setattr(TraceRounds, "FILL_BLOCK_MIN", 1 if partial else 64)
        model = _small(name, jobs, gpus).build_model(policy, "truthful", 5)
        model.progress = False
        model.run()
        comp = model.completions().sort_values("job_id", kind="mergesort")
        assert len(comp) == jobs
        return comp[["job_id", "completion_s"]].to_numpy()

    full = run(False)
    monkeypatch.setattr(TraceRounds, "_ranked", classmethod(spying))
    monkeypatch.setattr(TraceRounds, "_fill", classmethod(spying_fill))
    part = run(True)
    assert (full == part).all()
    assert seen["ties"] > 10
    if name == "multigpu":
        assert seen["rest"] > 0




@pytest.mark.parametrize("policy", ["gavel-max-min-perf", "oef-noncoop", "maxmin"])
def test_tenant_measures_from_cached_job_values_equal_the_direct_sums(tmp_path: Path, policy: str) -> None:
    """Every recorded per-tenant row (a liar's reports change at every solve) equals, bit for bit,
    the measures summed over the round's active jobs from the engine's arrays."""
    path = tmp_path / "t4.toml"
    path.write_text(tenant4_trace(data_path(GAVEL_TRACE), ("gavel-max-min-perf", "oef-noncoop", "maxmin"), 40))
    model = load_scenario(path).build_model(policy, "liar", 2)
    model.progress = False
    ten = model.auctioneer.tenants
    eng = model.auctioneer.trace
    record = ten.record
    checked = {"rounds": 0, "liar_differs": 0}

    def direct(res) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
        A = res.active
        ut, inv = np.unique(ten.code[A], return_inverse=True)
        x = eng.alloc_est[A]
        est = (x * eng.T[A]).sum(axis=1) / eng.unit[A]
        R = ten.R[A]
        est_r = (x * R).sum(axis=1) / (R[np.arange(A.size), ten.ref[A]] / eng.s[A])
        n = ut.size
        slot = np.searchsorted(ut, ten.code[res.leased])
        act = np.zeros(n)
        if res.length_s > 0 and res.leased.size:
            act = np.bincount(slot, res.done_steps / eng.unit[res.leased], minlength=n) / res.length_s
        M = np.column_stack([np.bincount(inv, est, minlength=n), np.bincount(inv, est_r, minlength=n), act,
                             np.bincount(inv, x.sum(axis=1) * eng.s[A], minlength=n),
                             np.bincount(slot, eng.s[res.leased].astype(float), minlength=n),
                             np.bincount(inv, minlength=n).astype(float)])  # fmt: skip
        return ut, M

    def checking(res) -> None:  # noqa: ANN001
        n0 = len(ten.blocks)
        record(res)
        if res.active.size and len(ten.blocks) > n0:
            _, codes, M = ten.blocks[-1]
            ut, want = direct(res)
            assert np.array_equal(codes, ut) and np.array_equal(M, want)
            checked["rounds"] += 1
            checked["liar_differs"] += int((M[:, 1] != M[:, 0]).any())

    ten.record = checking
    model.run()
    assert checked["rounds"] > 20 and checked["liar_differs"] > 0 and eng.solves > 5


@pytest.mark.slow  # two child processes with different BLAS thread counts
def test_long_dot_products_do_not_depend_on_blas_threads() -> None:
    """``_dot`` (the round's ``total_est``) is ``x @ y`` up to ``DOT_CHUNK`` entries and, beyond, the
    same number whatever OpenBLAS's thread count (Dask's workers run with 1 thread; a plain ``@``
    over 10,000 entries splits the sum over the threads and its last bits change)."""
    import os
    import subprocess
    import sys

    from agents.trace_rounds import DOT_CHUNK, _dot

    rng = np.random.default_rng(4)
    x, y = rng.random(DOT_CHUNK) * 1e3, rng.random(DOT_CHUNK)
    assert _dot(x, y) == float(x @ y)
    code = (
        "import numpy as np; from agents.trace_rounds import _dot\n"
        "out = []\n"
        "for s in range(30):\n"
        "    r = np.random.default_rng(s); n = 12_000 + 997 * s\n"
        "    x = r.random(n) * r.choice([1e-3, 1.0, 1e3], n); y = r.random(n)\n"
        "    out.append(_dot(x, y).hex())\n"
        "print(' '.join(out))"
    )
    runs = {}
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads}
        runs[threads] = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                       check=True, cwd=Path(__file__).parents[1]).stdout  # fmt: skip
    assert runs["1"] == runs["2"] and len(runs["1"].split()) == 30
