"""Gavel parity of the trace engine for every policy (issue 24, item 3): the per-round GPU-type
shuffle (``lease_order``), jobs that cannot run on a GPU type, the GPU-type order taken from the
throughput table, and no Philly job with ``total_steps = 0``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.agents.trace_rounds import TraceRounds
from marketsim.market.errors import InputError
from marketsim.market.profiles import load_throughput_table
from marketsim.market.registry import get
from marketsim.market.traces import assign_philly_job_types, order_by_speed, read_philly_csv
from marketsim.scenarios.loader import load_scenario

TABLE = """job_type,gpu_type,num_gpus,throughput_steps_per_s
A,k80,1,1.0
A,k80,2,1.5
A,p100,1,1.5
A,p100,2,2.5
A,v100,1,2.0
A,v100,2,4.0
Z,k80,1,1.0
Z,k80,2,0.0
Z,p100,1,1.5
Z,p100,2,2.0
Z,v100,1,2.0
Z,v100,2,3.0
"""


def _line(job_type: str, steps: int, arrival: float, scale: int = 1) -> str:
    return "\t".join([job_type, "python x.py", "dir", "--steps", "0", str(steps), str(scale), "1", "-1", str(arrival)])


def _scenario(tmp_path: Path, lines: list[str], cluster: str, policy: str = "maxmin") -> Path:
    (tmp_path / "table.csv").write_text(TABLE)
    (tmp_path / "t.trace").write_text("\n".join(lines) + "\n")
    (tmp_path / "s.toml").write_text(
        f'policies = ["{policy}"]\nreplications = 1\n[cluster]\n{cluster}\nround_seconds = 360.0\n'
        '[profiles]\nfile = "table.csv"\n[workload]\ntrace = "t.trace"\n'
    )
    return tmp_path / "s.toml"


def _engine(lease_order: str, seed: int | None, steps: float = 1e6) -> TraceRounds:
    """One job, 1 K80 (1 step/s) + 1 V100 (2 steps/s), under maxmin; round by round (no merged
    rounds), so every step is one lease."""
    eng = TraceRounds(
        throughputs=np.array([[1.0, 2.0]]), scale=np.array([1]), total_steps=np.array([steps]),
        arrival_s=np.array([0.0]), priority=np.array([1.0]), tenant_code=np.array([0]),
        job_type_code=np.array([0]), policy="maxmin", mechanism=get("maxmin", "fair-share"),
        round_seconds=360.0, reallocation_interval_s=1920.0, per_job=True, lease_order=lease_order,
        lease_rng=None if seed is None else np.random.default_rng(seed),
    )  # fmt: skip
    eng.skip_rounds = False
    return eng


def _types_leased(eng: TraceRounds, rounds: int) -> list[int]:
    m = np.array([1, 1])
    return [int(eng.step(m).leased_type[0]) for _ in range(rounds)]


# ------------------------------------------------------------------------------------- lease order


def test_fastest_order_always_leases_the_fastest_free_type() -> None:
    """A lone job with a K80 and a V100 free takes the V100 in every round."""
    assert set(_types_leased(_engine("fastest", None), 50)) == {1}


def test_shuffle_order_is_a_fair_coin_per_round_and_seeded() -> None:
    """With the per-round shuffle a lone job lands on the K80 whenever the permutation puts the
    K80 first: about half the rounds (400 rounds: binomial sd 10, bound 5 sd), the same sequence for
    the same seed, another for another seed."""
    a = _types_leased(_engine("shuffle", 7), 400)
    assert abs(a.count(0) - 200) <= 50
    assert a == _types_leased(_engine("shuffle", 7), 400)
    assert a != _types_leased(_engine("shuffle", 8), 400)


def test_shuffle_progress_matches_the_leased_types() -> None:
    """JCT of a lone job under the shuffle: 360 s rounds at 1 step/s on K80, 2 on V100, the last
    one partial; computed by hand from the types the engine leased."""
    eng = _engine("shuffle", 3, steps=5000.0)
    kinds: list[int] = []
    m = np.array([1, 1])
    while not eng.finished:
        kinds.append(int(eng.step(m).leased_type[0]))
    done, t = 0.0, 0.0
    for kind in kinds:
        rate = (1.0, 2.0)[kind]
        step = min(360.0, (5000.0 - done) / rate)
        done, t = done + rate * step, t + step
    assert eng.done_at[0] == pytest.approx(t) and 5000 / 2 < t < 5000


def test_lease_order_key_in_a_scenario_is_seeded_per_replication(tmp_path: Path) -> None:
    """`lease_order = "shuffle"` from a scenario file: same seed, same JCTs; the JCT is between the
    all-V100 (720 s) and the all-K80 (1,440 s) run; seeds differ; bad values exit with the key named."""
    path = _scenario(
        tmp_path, [_line("A", 1440, 0.0)], 'gpu_types = ["k80", "v100"]\ngpus = [1, 1]\nlease_order = "shuffle"'
    )
    scen = load_scenario(path)
    jct = {}
    for seed in range(12):
        m = scen.build_model("maxmin", "truthful", seed)
        m.run()
        jct[seed] = float(m.completions()["jct_s"].iloc[0])
    again = scen.build_model("maxmin", "truthful", 5)
    again.run()
    assert float(again.completions()["jct_s"].iloc[0]) == jct[5]
    assert all(720.0 - 1e-9 <= v <= 1440.0 + 1e-9 for v in jct.values())
    assert len(set(jct.values())) > 1  # the shuffle is drawn, not fixed
    path.write_text(path.read_text().replace('"shuffle"', '"random"'))
    with pytest.raises(InputError, match="lease_order"):
        load_scenario(path)


# ------------------------------------------------------------------------------------ type order


def test_gpu_types_are_ordered_by_the_table_not_by_the_list(tmp_path: Path) -> None:
    """A lone job of 1,440 steps on a K80 (1 step/s) and a V100 (2 steps/s): JCT 720 s (the V100)
    whether the scenario lists the types slowest or fastest first."""
    for listed in ('["k80", "v100"]', '["v100", "k80"]'):
        path = _scenario(tmp_path, [_line("A", 1440, 0.0)], f"gpu_types = {listed}\ngpus = [1, 1]")
        scen = load_scenario(path)
        assert scen.cluster.gpu_types == ("k80", "v100")
        m = scen.build_model("maxmin", "truthful", 0)
        m.run()
        assert m.completions()["jct_s"].tolist() == pytest.approx([720.0]), listed


def test_gpu_counts_follow_their_types_when_reordered(tmp_path: Path) -> None:
    """`gpus` is permuted with `gpu_types`: 2 V100s and no K80 listed fastest first is 2 V100s."""
    path = _scenario(
        tmp_path, [_line("A", 720, 0.0), _line("A", 720, 0.0)], 'gpu_types = ["v100", "k80"]\ngpus = [2, 0]'
    )
    scen = load_scenario(path)
    assert dict(zip(scen.cluster.gpu_types, scen.cluster.gpus, strict=True)) == {"k80": 0, "v100": 2}
    m = scen.build_model("maxmin", "truthful", 0)
    m.run()
    assert m.completions()["jct_s"].tolist() == pytest.approx([360.0, 360.0])


def test_order_by_speed_uses_mean_log_ratio_over_shared_rows(tmp_path: Path) -> None:
    """Scores over rows > 0 on every listed type: here Z on 2 GPUs (0 on K80) is left out when
    the K80 is listed, and the order is k80 < p100 < v100 from any listing."""
    (tmp_path / "t.csv").write_text(TABLE)
    table = load_throughput_table(tmp_path / "t.csv")
    for listed in (("v100", "k80", "p100"), ("p100", "v100", "k80")):
        assert order_by_speed(table, listed) == ("k80", "p100", "v100")
    # a row faster on p100 than v100 moves the order only if it dominates the mean log ratio
    (tmp_path / "u.csv").write_text(TABLE.replace("A,v100,1,2.0", "A,v100,1,0.1"))
    assert order_by_speed(load_throughput_table(tmp_path / "u.csv"), ("k80", "v100")) == ("v100", "k80")


# --------------------------------------------------------------------------------- infeasible types


def test_errors_name_gpu_types_and_list_every_job(tmp_path: Path) -> None:
    """Two 2-GPU jobs of Z (0 on K80) on 2 K80s + 1 V100 fit nowhere: the message names both jobs
    and the types by name."""
    lines = [_line("A", 10, 0.0), _line("Z", 10, 1.0, 2), _line("A", 10, 2.0), _line("Z", 10, 3.0, 2)]
    path = _scenario(tmp_path, lines, 'gpu_types = ["k80", "v100"]\ngpus = [2, 1]')
    with pytest.raises(InputError) as e:
        load_scenario(path)
    msg = str(e.value)
    assert "jobs 1, 3" in msg and "throughput > 0 only on ['v100']" in msg and "2 k80, 1 v100" in msg
    assert "type 0" not in msg and "type 1" not in msg


def test_a_job_infeasible_on_a_type_never_runs_there_under_any_policy() -> None:
    """Job 1 (0 steps/s on the K80) shares a K80 and a V100 with job 0: under every speedup-based
    policy and both lease orders it is never leased the K80, both jobs complete, and the K80 is
    not left idle while job 0 waits for it."""
    from marketsim.market.registry import names

    T = np.array([[1.0, 2.0], [0.0, 1.0]])
    # built-in ones
    for policy in [n for n in names("fair-share") if get(n).fn.__module__.startswith("marketsim.market.")]:
        for order in ("fastest", "shuffle"):
            eng = TraceRounds(
                throughputs=T, scale=np.array([1, 1]), total_steps=np.array([3000.0, 3000.0]),
                arrival_s=np.array([0.0, 0.0]), priority=np.ones(2), tenant_code=np.array([0, 1]),
                job_type_code=np.array([0, 1]), policy=policy, mechanism=get(policy, "fair-share"),
                round_seconds=360.0, reallocation_interval_s=1920.0, per_job=True, lease_order=order,
                lease_rng=np.random.default_rng(0),
            )  # fmt: skip
            m = np.array([1, 1])
            while not eng.finished:
                r = eng.step(m)
                on = dict(zip(r.leased.tolist(), r.leased_type.tolist(), strict=True))
                assert on.get(1) != 0, (policy, order)
                if 0 in eng.active and 1 in on and on[1] == 1:  # V100 taken by job 1: job 0 has the K80
                    assert on.get(0) == 0, (policy, order)
            assert np.isfinite(eng.done_at).all(), (policy, order)


# ------------------------------------------------------------------------------------ Philly steps


def test_philly_jobs_never_get_zero_steps(tmp_path: Path) -> None:
    """Z on 2 GPUs has throughput 0 on the K80: with a K80 reference and a P100 + V100 cluster it
    runs everywhere in the cluster but would get total_steps = 0, so the rule must not pick it."""
    rows = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    rows += [f"2017-10-03 00:{i // 60:02d}:{i % 60:02d},100,2,200,vc{i % 3}" for i in range(200)]
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "t.csv").write_text(TABLE)
    table = load_throughput_table(tmp_path / "t.csv")
    tr = assign_philly_job_types(read_philly_csv(tmp_path / "p.csv"), table, ["p100", "v100"], seed=1, reference="k80")
    assert (tr.total_steps > 0).all()
    assert set(tr.job_type.tolist()) == {"A"}
    assert tr.total_steps.tolist() == pytest.approx([100.0 * 1.5] * 200)  # 100 s x 1.5 steps/s (A, 2 GPUs, K80)


# ------------------------------------------------------------------------------- fifo and isolated


def test_isolated_is_a_capped_static_partition() -> None:
    """Gavel's isolated on 4 + 4 + 4 GPUs, 4 rows: each row 1 GPU of every type (3 in all), scaled
    to its cap (1 -> 1/3 each, 2 -> 2/3 each, 6 and 12 -> unchanged); what capped rows leave stays
    free (maxmin would hand it on). Weights 1:3 on two uncapped rows split every type 1:3."""
    fn = get("gavel-isolated", "fair-share").fn
    W = np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [1.0, 1.5, 4.0], [1.0, 1.0, 1.0]])
    X = fn(W, [4, 4, 4], caps=[1.0, 2.0, 6.0, 12.0]).X
    np.testing.assert_allclose(X, [[1 / 3] * 3, [2 / 3] * 3, [1.0] * 3, [1.0] * 3])
    assert X.sum() == pytest.approx(1 + 2 + 3 + 3)  # 3 of the 12 GPUs stay free
    mm = get("maxmin", "fair-share").fn(W, [4, 4, 4], caps=[1.0, 2.0, 6.0, 12.0]).X
    assert mm.sum() > X.sum() + 2.9  # progressive filling hands the rest on
    inf = float("inf")
    np.testing.assert_allclose(fn(W[:2], [4, 8, 4], weights=[1.0, 3.0], caps=[inf, inf]).X, [[1, 2, 1], [3, 6, 3]])
    # no caps: Gavel's one-job time bound (row sum 1) on 1-GPU jobs
    np.testing.assert_allclose(fn(W[:2], [4, 8, 4], weights=[1.0, 3.0]).X, [[0.25, 0.5, 0.25]] * 2)


def test_fifo_serves_rows_in_order_on_their_fastest_type_with_room() -> None:
    """Gavel's fifo_perf: row 0 takes 2 GPUs of its fastest type (col 2), row 1 of its own (col 1),
    row 2 its fastest with room (col 0: col 2 is full); row 3 fits nowhere."""
    fn = get("gavel-fifo", "fair-share").fn
    W = np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [1.0, 1.5, 4.0], [1.0, 1.0, 1.0]])
    a = fn(W, [2, 2, 2], caps=[2.0, 2.0, 2.0, 1.0])
    np.testing.assert_array_equal(a.X, [[0, 0, 2], [0, 2, 0], [2, 0, 0], [0, 0, 0]])
    assert a.info["blocked_at"] == 3


def test_fifo_blocks_at_the_first_row_that_does_not_fit() -> None:
    """1 + 2 GPUs: row 0 takes both GPUs of type 1, row 1 (2 GPUs) fits nowhere, so row 2 (1 GPU),
    which would fit on type 0, gets nothing: no overtaking."""
    a = get("gavel-fifo", "fair-share").fn(np.array([[1.0, 2.0]] * 3), [1, 2], caps=[2.0, 2.0, 1.0])
    np.testing.assert_array_equal(a.X, [[0, 2], [0, 0], [0, 0]])
    assert a.info["served"] == 1 and a.info["blocked_at"] == 1


def test_fifo_skips_a_row_whose_best_free_type_cannot_run_it() -> None:
    """Raw throughputs, 1 K80 + 1 V100: row 0 takes the V100; row 1's only type with room is the
    K80, where it cannot run (0): it gets nothing and does not use the K80, which goes to row 2
    (Gavel pops such a job and goes on)."""
    a = get("gavel-fifo", "fair-share").fn(np.array([[1.0, 2.0], [0.0, 3.0], [1.0, 1.0]]), [1, 1])
    np.testing.assert_array_equal(a.X, [[0, 1], [0, 0], [1, 0]])
    assert a.info["blocked_at"] is None


def test_fifo_in_a_trace_run_leases_only_allocated_jobs(tmp_path: Path) -> None:
    """2 V100s (2 steps/s per GPU, 4 on 2 GPUs); jobs 0 (1 GPU, 720 steps), 1 (2 GPUs, 1,440 steps),
    2 (1 GPU, 720 steps) at t = 0. FIFO: job 0 runs alone (job 1 blocks job 2, and a FIFO job runs
    only with an allocation) until 360 s; job 1 then 360-720 s; job 2 720-1,080 s."""
    lines = [_line("A", 720, 0.0), _line("A", 1440, 0.0, 2), _line("A", 720, 0.0)]
    path = _scenario(tmp_path, lines, 'gpu_types = ["v100"]\ngpus = [2]', policy="gavel-fifo")
    m = load_scenario(path).build_model("gavel-fifo", "truthful", 0)
    m.run()
    assert m.completions().sort_values("job_id")["jct_s"].tolist() == pytest.approx([360.0, 720.0, 1080.0])


def test_lease_order_is_rejected_without_a_trace() -> None:
    """`lease_order` would be silently ignored by the synthetic round loop: an error names it."""
    from marketsim.scenarios.loader import parse_scenario

    data = {"policies": ["maxmin"], "cluster": {"gpu_types": ["k80"], "gpus": [2], "lease_order": "shuffle"},
            "workload": {"tenants": 2}}  # fmt: skip
    with pytest.raises(InputError, match="cluster.lease_order.*trace workloads only"):
        parse_scenario(data, "x")
