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

from marketsim.agents.trace_rounds import TraceRounds
from marketsim.market.traces import GAVEL_TRACE, data_path
from marketsim.scenarios.loader import load_scenario, parse_scenario

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
    checked = {"rounds": 0, "liar_differs": 0, "agents": 0}

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
        if res.active.size:  # every present agent holds its tenant's row (zeros without an active job)
            ut, want = direct(res)
            for c, a in ten.agents.items():
                got = (a.est, a.est_reported, a.act, a.alloc_gpus, a.gpus, a.runnable_jobs)
                i = int(np.searchsorted(ut, c))
                row = want[i].tolist() if i < ut.size and ut[i] == c else [0.0] * 6
                assert got == (*row[:4], int(row[4]), int(row[5]))
                checked["agents"] += 1

    ten.record = checking
    model.run()
    assert checked["rounds"] > 20 and checked["liar_differs"] > 0 and eng.solves > 5
    assert checked["agents"] > 40


@pytest.mark.slow  # two child processes with different BLAS thread counts
def test_long_dot_products_do_not_depend_on_blas_threads() -> None:
    """``_dot`` (the round's ``total_est``) is ``x @ y`` up to ``DOT_CHUNK`` entries and, beyond, the
    same number whatever OpenBLAS's thread count (Dask's workers run with 1 thread; a plain ``@``
    over 10,000 entries splits the sum over the threads and its last bits change)."""
    import os
    import subprocess
    import sys

    from marketsim.agents.trace_rounds import DOT_CHUNK, _dot

    rng = np.random.default_rng(4)
    x, y = rng.random(DOT_CHUNK) * 1e3, rng.random(DOT_CHUNK)
    assert _dot(x, y) == float(x @ y)
    code = (
        "import numpy as np; from marketsim.agents.trace_rounds import _dot\n"
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


@pytest.mark.parametrize("seed", range(4))
def test_row_groups_equal_numpy_unique_rows(seed: int) -> None:
    """``row_groups`` (one lexsort) finds the groups ``np.unique(axis=0)`` finds, numbered the same:
    ties, -0.0 against 0.0, integer-valued columns, a NaN key (np.unique's path); ``row_classes``
    built on it gives the classes in order of first appearance."""
    from marketsim.market.oef.roundlp import row_classes, row_groups

    rng = np.random.default_rng(seed)
    n, q = int(rng.integers(1, 300)), int(rng.integers(1, 7))
    key = rng.integers(0, 3, (n, q)).astype(float) * rng.choice([1.0, 0.5, 1e-12], q)
    key[rng.random((n, q)) < 0.2] = -0.0  # equal to 0.0
    if seed == 3:
        key[0, 0] = np.nan
    want = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)[1:]
    got = row_groups(key)
    for w, g in zip(want, got, strict=True):
        assert np.array_equal(np.ravel(w), g)
    first, cls, counts = row_classes(key[:, :1], key[:, 1:])
    assert np.array_equal(first, np.sort(first)) and np.array_equal(key[first][cls], key, equal_nan=True)
    assert np.array_equal(np.bincount(cls), counts) and set(first.tolist()) == set(want[0].tolist())


def test_class_identities_cached_per_class_equal_the_named_hash(tmp_path: Path) -> None:
    """``TraceRounds._class_ident`` (the seeded tie draw's identity of a class, cached in an array)
    gives each class the crc of its tenant, job type and speedup vector, whatever the order and
    repeats of the classes asked for, before and after the cache is filled."""
    import zlib

    path = tmp_path / "t4.toml"
    path.write_text(tenant4_trace(data_path(GAVEL_TRACE), ("gavel-max-min-perf", "oef-noncoop", "maxmin"), 40))
    eng = load_scenario(path).build_model("oef-noncoop", "liar", 2).auctioneer.trace
    _, tnames, jnames = eng._names

    def named(c: int) -> int:
        j = int(eng._klass_first[c])
        row = eng.T[j] / eng.T[j][eng.T[j] > 0][0]
        text = "\x1f".join([str(tnames[eng.tenant[j]]), str(jnames[eng.job_type[j]]),
                            ",".join(f"{v:.12g}" for v in row.tolist())]).encode()  # fmt: skip
        return zlib.crc32(text) | (zlib.crc32(b"class:" + text) << 32)

    n = eng._klass_first.size
    assert n > 3 and tnames is not None and jnames is not None
    rng = np.random.default_rng(0)
    for ask in (rng.integers(0, n, 2 * n), np.arange(n)[::-1], rng.permutation(n)):
        assert eng._class_ident(ask).tolist() == [named(c) for c in ask.tolist()]


IDLE_TABLE = "job_type,gpu_type,num_gpus,throughput_steps_per_s\nA,k80,1,1.0\nA,v100,1,2.0\n"
IDLE_TRACE = """job_id,arrival_s,num_gpus,total_steps,job_type,tenant
u1,0,1,400,A,u
v1,0,1,40000,A,v
w1,0,1,40000,A,w
u2,20000,1,400,A,u
"""


def test_an_agent_without_active_jobs_holds_zeros_while_others_run(tmp_path: Path) -> None:
    """Tenant u is present but idle between its two jobs while v and w run: its agent's measures
    are 0 then, and every agent's job count and GPUs are its own (the agents' rows follow the
    active tenants, not only arrivals and exits)."""
    (tmp_path / "table.csv").write_text(IDLE_TABLE)
    (tmp_path / "t.csv").write_text(IDLE_TRACE)
    (tmp_path / "s.toml").write_text("""name = "idle"
policies = ["maxmin"]
replications = 1
[cluster]
gpu_types = ["k80", "v100"]
gpus = [1, 2]
round_seconds = 360.0
[profiles]
file = "table.csv"
[workload]
trace = "t.csv"
trace_format = "csv"
tenancy = "user"
""")
    model = load_scenario(tmp_path / "s.toml").build_model("maxmin", "truthful", 0)
    model.progress = False
    ten = model.auctioneer.tenants
    record = ten.record
    seen = {"idle": 0, "busy": 0}

    def checking(res) -> None:  # noqa: ANN001
        record(res)
        for c, a in ten.agents.items():
            jobs = int((ten.code[res.active] == c).sum())
            gpus = int((ten.code[res.leased] == c).sum())
            assert (a.runnable_jobs, a.gpus) == (jobs, gpus)
            if jobs == 0:
                assert (a.est, a.est_reported, a.act, a.alloc_gpus) == (0.0, 0.0, 0.0, 0.0)
            seen["idle" if jobs == 0 else "busy"] += 1

    ten.record = checking
    model.run()
    assert seen["idle"] > 0 and seen["busy"] > 10


@pytest.mark.parametrize("seed", range(5))
def test_unique_codes_is_np_unique_by_counting(seed: int) -> None:
    """The engine's class grouping by counting gives np.unique's distinct codes, first positions and
    inverse, repeated codes and gaps included (the classes, caps and weights of a solve follow)."""
    from marketsim.agents.trace_rounds import _unique_codes

    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 60))
    codes = rng.integers(0, size, int(rng.integers(1, 200)))
    want = np.unique(codes, return_index=True, return_inverse=True)
    got = _unique_codes(codes, size)
    for w, g in zip(want, got, strict=True):
        assert np.array_equal(w.ravel(), g)
