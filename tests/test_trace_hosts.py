"""Hosts on trace runs: Gavel's unconsolidated throughputs, the host placer (sticky, then OEF's
A8 best fit / first fit), the migration charge, the hand case end to end through the loader and
the model, and "ideal" staying Gavel's semantics (docs/trace_simulation.md, "Hosts")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from marketsim.market.errors import InputError
from marketsim.market.hosts import HostPlacer
from marketsim.market.oef.placer import RunnableJob, pack_hosts
from marketsim.market.profiles import ThroughputTable, load_throughput_table
from marketsim.market.traces import (
    GAVEL_THROUGHPUTS,
    GAVEL_THROUGHPUTS_UNCONSOLIDATED,
    Trace,
    data_path,
    unconsolidated_throughputs,
)
from marketsim.market.types import GpuServer
from marketsim.scenarios.loader import load_scenario

RESNET16 = "ResNet-50 (batch size 16)"
#: Gavel's table (market/data): ResNet-50 (batch size 16) on 4 P100s
P100_4_CONSOLIDATED = 30.798442100370274
P100_4_UNCONSOLIDATED = 18.05783712383328
#: the hand case's job: the one integer step count whose JCT on hosts of 2 rounds to 6,140.1 s
HAND_STEPS = 110877


def _tables() -> tuple[object, object]:
    types = ["k80", "p100", "v100"]
    c = load_throughput_table(data_path(GAVEL_THROUGHPUTS), types)
    u = load_throughput_table(data_path(GAVEL_THROUGHPUTS_UNCONSOLIDATED), types, allow_missing=True)
    return c, u


def _trace(job_types: list[str], scales: list[int]) -> Trace:
    n = len(job_types)
    return Trace(
        job_id=np.arange(n).astype(str),
        job_type=np.array(job_types),
        scale=np.array(scales, dtype=np.int64),
        total_steps=np.ones(n),
        arrival_s=np.zeros(n),
        priority=np.ones(n),
        user=np.full(n, ""),
        duration_s=np.full(n, np.nan),
    )


def test_unconsolidated_lookup_and_its_fallback_rule() -> None:
    c, u = _tables()
    types = ["k80", "p100", "v100"]
    tr = _trace([RESNET16, RESNET16, "ResNet-50 (batch size 64)", "ResNet-50 (batch size 128)", RESNET16, "A3C"],
                [4, 1, 2, 2, 16, 1])  # fmt: skip
    T = tr.throughputs(c, types)
    U = unconsolidated_throughputs(tr, T, u, types)
    # the numbers: 4 P100s consolidated vs spread
    assert T[0, 1] == pytest.approx(P100_4_CONSOLIDATED, rel=1e-15)
    assert U[0, 1] == pytest.approx(P100_4_UNCONSOLIDATED, rel=1e-15)
    assert round(U[0, 1], 4) == 18.0578 and round(T[0, 1], 4) == 30.7984
    # 1 GPU never spans hosts: consolidated
    np.testing.assert_array_equal(U[1], T[1])
    np.testing.assert_array_equal(U[5], T[5])
    # K80 entry the unconsolidated table leaves out: consolidated; P100/V100 from the table
    assert U[2, 0] == T[2, 0] == pytest.approx(1.26363707, rel=1e-8)
    assert U[2, 1] == pytest.approx(5.60596463, rel=1e-8)
    # infeasible consolidated (0 on K80) stays 0
    assert T[3, 0] == 0.0 and U[3, 0] == 0.0 and U[3, 2] == pytest.approx(4.3341484, rel=1e-7)
    # 16 GPUs: the 8-GPU row scaled by 16/8, like the consolidated rule
    np.testing.assert_allclose(U[4], u.values[(RESNET16, 8)] * 2.0, rtol=1e-15)
    # no unconsolidated table: everything consolidated
    np.testing.assert_array_equal(unconsolidated_throughputs(tr, T, None, types), T)
    # a table measuring a type the consolidated table marks infeasible: still 0 (cannot run there)
    odd = ThroughputTable("odd.csv", ("k80", "p100", "v100"), {(RESNET16, 4): np.array([5.0, 6.0, 7.0])})
    T0 = T[:1].copy()
    T0[0, 0] = 0.0
    np.testing.assert_array_equal(unconsolidated_throughputs(tr.head(1), T0, odd, types), [[0.0, 6.0, 7.0]])


def _a8_plain(
    host_type: list[int], free: list[int], typ: list[int], size: list[int], rule: str
) -> list[list[tuple[int, int]]]:
    """OEF spec A8 written plainly (an oracle independent of the engine's placer): leases largest
    first (ties: lease order); "oef": the host of the type with the smallest sufficient free count
    (ties: lower index), else spread in descending free count (ties: lower index); "naive": first fit
    in host order, spilling over. One rack."""
    free = list(free)
    parts: list[list[tuple[int, int]]] = [[] for _ in typ]
    for i in sorted(range(len(typ)), key=lambda i: -size[i]):
        t, need = typ[i], size[i]
        pool = [h for h in range(len(free)) if host_type[h] == t]
        if rule == "oef":
            fit = [h for h in pool if free[h] >= need]
            if fit:
                h = min(fit, key=lambda h: (free[h], h))
                free[h] -= need
                parts[i] = [(h, need)]
                continue
            pool = sorted(pool, key=lambda h: (-free[h], h))
        got = []
        for h in pool:
            take = min(free[h], need)
            if take:
                free[h] -= take
                need -= take
                got.append((h, take))
            if not need:
                break
        assert not need
        parts[i] = sorted(got)
    return parts


def _pack_reference(host_type: list[int], cap: list[int], typ: list[int], size: list[int], rule: str):
    return _a8_plain(host_type, cap, typ, size, rule)


def test_pack_hosts_is_the_placer_on_spec_objects() -> None:
    """``marketsim.market.oef.placer.pack_hosts`` (spec A8 on job and server objects) is the engine's placer."""
    servers = [GpuServer("h0", 0, 4), GpuServer("h1", 0, 2), GpuServer("h10", 1, 4)]
    chosen = [(RunnableJob("a", 2, 0.0, 0.0), np.array([2, 0])), (RunnableJob("b", 5, 0.0, 0.0), np.array([1, 4]))]
    out = pack_hosts(chosen, servers, "oef")
    # spec A8 by hand: b (5 workers) first; its 1 GPU of type 0 best-fits h1 (2 free < 4 free on h0),
    # its 4 of type 1 go to h10; then a's 2 GPUs of type 0: h1 has 1 left, so h0
    assert out["a"].hosts == (("h0", 0, 2),) and not out["a"].cross_host
    assert out["b"].hosts == (("h1", 0, 1), ("h10", 1, 4)) and out["b"].cross_type and out["b"].cross_host


@pytest.mark.parametrize("rule", ["oef", "naive"])
def test_placer_matches_pack_hosts_and_respects_host_capacity(rule: str) -> None:
    """A fresh placer (no job has run) is OEF's A8 (written plainly, :func:`_a8_plain`) exactly; no
    host ever holds more than it has."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        k = int(rng.integers(1, 4))
        H = int(rng.integers(1, 12))
        host_type = np.sort(rng.integers(0, k, H)).tolist()
        cap = rng.integers(1, 9, H).tolist()
        typ, size = [], []
        left = np.bincount(host_type, weights=cap, minlength=k).astype(int)
        for _ in range(int(rng.integers(1, 15))):
            t = int(rng.integers(0, k))
            g = int(rng.choice([1, 1, 2, 4, 8]))
            if g <= left[t]:
                typ.append(t)
                size.append(g)
                left[t] -= g
        if not typ:
            continue
        pl = HostPlacer(np.array(host_type), np.array(cap), rule, len(typ))
        got = pl.place(np.arange(len(typ)), np.array(typ), np.array(size))
        ref = _pack_reference(host_type, cap, typ, size, rule)
        mine = [sorted(zip(got.part_host[got.part_lease == i].tolist(), got.part_gpus[got.part_lease == i].tolist(),
                           strict=True)) for i in range(len(typ))]  # fmt: skip
        assert mine == ref
        used = np.bincount(got.part_host, weights=got.part_gpus, minlength=H)
        assert (used <= np.array(cap)).all()
        assert (np.array(host_type)[got.part_host] == np.array(typ)[got.part_lease]).all()
        np.testing.assert_array_equal(np.bincount(got.part_lease, weights=got.part_gpus), size)
        assert not got.moved.any()


def test_sticky_lease_keeps_its_hosts() -> None:
    """h0 has 4 GPUs, h1 has 2. Round 1: X (2 GPUs) takes h1 by best fit, Y (2 GPUs) h0. Round 2:
    Y alone; best fit would pick h1, but Y keeps h0 (no migration)."""
    pl = HostPlacer(np.array([0, 0]), np.array([4, 2]), "oef", 2)
    r1 = pl.place(np.array([0, 1]), np.array([0, 0]), np.array([2, 2]))
    assert r1.part_host.tolist() == [1, 0]
    r2 = pl.place(np.array([1]), np.array([0]), np.array([2]))
    assert r2.part_host.tolist() == [0] and not r2.moved.any() and pl.migrations == 0


def test_sticky_lease_checks_host_room_and_migration_rule() -> None:
    """Hosts h0, h1 of 2 GPUs. Round 1: A (2 GPUs) on h0. Round 2: h0 is down, so A cannot stay:
    it moves to h1 (a migration). Round 3: A waits, B runs (first fit: h0, back up). Round 4: A
    resumes; h0 is B's (sticky) so A lands on h1, and a resume after a pause is no migration."""
    pl = HostPlacer(np.array([0, 0]), np.array([2, 2]), "naive", 2)
    assert pl.place(np.array([0]), np.array([0]), np.array([2])).part_host.tolist() == [0]
    r2 = pl.place(np.array([0]), np.array([0]), np.array([2]), cap=np.array([0, 2]))
    assert r2.part_host.tolist() == [1] and r2.moved.tolist() == [True]
    assert pl.place(np.array([1]), np.array([0]), np.array([2])).part_host.tolist() == [0]
    r4 = pl.place(np.array([0, 1]), np.array([0, 0]), np.array([2, 2]))
    assert r4.part_host.tolist() == [1, 0] and not r4.moved.any() and pl.migrations == 1
    r5 = pl.place(np.array([1, 0]), np.array([0, 0]), np.array([2, 2]))  # both stay
    assert r5.part_host.tolist() == [0, 1] and not r5.moved.any()
    with pytest.raises(RuntimeError, match="exceed the free GPUs"):
        pl.place(np.array([0, 1]), np.array([0, 0]), np.array([2, 4]))


def _reference_round(state: dict, host_type: list[int], cap: list[int], jobs: list[int], typ: list[int],
                     size: list[int], rule: str) -> tuple[list[list[tuple[int, int]]], list[bool]]:  # fmt: skip
    """The placer's rules, written plainly: sticky (sequential, largest first), then OEF's A8
    (:func:`_a8_plain`) on the hosts' remaining GPUs; migration = ran last round, other hosts."""
    r = state["round"]
    free = list(cap)
    parts: list[list[tuple[int, int]] | None] = [None] * len(jobs)
    order = sorted(range(len(jobs)), key=lambda i: -size[i])
    for i in order:
        prev = state["last"].get(jobs[i])
        if prev and prev[0] == r - 1 and prev[1] == typ[i] and sum(g for _, g in prev[2]) == size[i] \
                and all(free[h] >= g for h, g in prev[2]):  # fmt: skip
            for h, g in prev[2]:
                free[h] -= g
            parts[i] = list(prev[2])
    rest = [i for i in range(len(jobs)) if parts[i] is None]
    if rest:
        packed = _a8_plain(host_type, free, [typ[i] for i in rest], [size[i] for i in rest], rule)
        for i, p in zip(rest, packed, strict=True):
            parts[i] = p
    moved = []
    for i, j in enumerate(jobs):
        prev = state["last"].get(j)
        moved.append(bool(prev and prev[0] == r - 1 and [h for h, _ in prev[2]] != [h for h, _ in parts[i]]))
        state["last"][j] = (r, typ[i], parts[i])
    state["round"] = r + 1
    return parts, moved  # type: ignore[return-value]


@pytest.mark.parametrize("rule", ["oef", "naive"])
def test_placer_over_many_rounds_matches_the_plain_rules(rule: str) -> None:
    """200 rounds of random leases (sizes 1 to 8, some jobs continuing, some switching type) on
    random hosts, some of them down in some rounds: same placement and migrations as the plain
    sequential rules, and never a host over its capacity."""
    rng = np.random.default_rng(11 if rule == "oef" else 12)
    for _ in range(6):
        k = int(rng.integers(1, 3))
        H = int(rng.integers(2, 10))
        host_type = np.sort(rng.integers(0, k, H)).tolist()
        host_type[0], host_type[-1] = 0, k - 1
        cap = rng.integers(1, 9, H).tolist()
        n = 30
        scale = rng.choice([1, 1, 2, 4, 8], n)
        pl = HostPlacer(np.array(host_type), np.array(cap), rule, n)
        state: dict = {"round": 0, "last": {}}
        migrations = 0
        for _ in range(200):
            c = np.array(cap) * (rng.random(H) > 0.1)  # hosts down this round
            left = np.bincount(host_type, weights=c, minlength=k).astype(int)
            jobs, typ, size = [], [], []
            for j in rng.permutation(n).tolist():
                t = int(rng.integers(0, k))
                if scale[j] <= left[t] and rng.random() < 0.7:
                    jobs.append(j)
                    typ.append(t)
                    size.append(int(scale[j]))
                    left[t] -= scale[j]
            if not jobs:
                continue
            got = pl.place(np.array(jobs), np.array(typ), np.array(size), c)
            ref, ref_moved = _reference_round(state, host_type, c.tolist(), jobs, typ, size, rule)
            mine = [list(zip(got.part_host[got.part_lease == i].tolist(), got.part_gpus[got.part_lease == i].tolist(),
                             strict=True)) for i in range(len(jobs))]  # fmt: skip
            assert mine == ref
            assert got.moved.tolist() == ref_moved
            assert got.n_hosts.tolist() == [len(p) for p in ref]
            used = np.bincount(got.part_host, weights=got.part_gpus, minlength=H)
            assert (used <= c).all()
            migrations += sum(ref_moved)
        assert pl.migrations == migrations


def _scenario(tmp_path: Path, steps: int, extra: str = "", gpus: int = 4, per_host: int = 2):
    line = "\t".join([RESNET16, "python x.py", "dir", "--steps", "0", str(steps), "4", "1", "-1", "0"])
    (tmp_path / "hand.trace").write_text(line + "\n")
    (tmp_path / "s.toml").write_text(
        f"""
name = "hand"
policies = ["maxmin", "gavel-max-min-perf"]
replications = 1
{extra}
[cluster]
gpu_types = ["p100"]
gpus = [{gpus}]
gpus_per_host = {per_host}
[workload]
trace = "hand.trace"
"""
    )
    return load_scenario(tmp_path / "s.toml")


@pytest.mark.parametrize("policy", ["maxmin", "gavel-max-min-perf"])
def test_hand_case_jct_hosts_of_two_and_four(tmp_path: Path, policy: str) -> None:
    """Must show: one 4-GPU ResNet-50 (batch size 16) job of 110,877 steps on 4 P100s, rounds of
    360 s. Hosts of 2: it spans 2 hosts and runs at the unconsolidated 18.0578 steps/s, 17 full
    rounds then the rest: JCT 6,140.1 s. Hosts of 4: consolidated 30.7984 steps/s, 3,600.1 s."""
    sc = _scenario(tmp_path, HAND_STEPS, 'placement = "auto"')
    m = sc.build_model(policy, "truthful", 0).run()
    jct2 = float(m.completions()["jct_s"].iloc[0])
    u = P100_4_UNCONSOLIDATED
    assert jct2 == pytest.approx(17 * 360 + (HAND_STEPS - 17 * 360 * u) / u, rel=1e-12)
    assert round(jct2, 1) == 6140.1
    # the server agents hold the lease: 2 GPUs on each of the two hosts
    assert sorted((a.host_id, a.assigned) for a in m.servers) == [("h0", {"0": 2}), ("h1", {"0": 2})]
    m4 = replace(sc, cluster=replace(sc.cluster, gpus_per_host=4)).build_model(policy, "truthful", 0).run()
    jct4 = float(m4.completions()["jct_s"].iloc[0])
    assert jct4 == pytest.approx(HAND_STEPS / P100_4_CONSOLIDATED, rel=1e-12)
    assert round(jct4) == 3600
    # "ideal" (the default): Gavel's semantics, consolidated on hosts of 2 too, no hosts held
    mi = _scenario(tmp_path, HAND_STEPS).build_model(policy, "truthful", 0).run()
    assert mi.config.placement == "ideal"
    assert float(mi.completions()["jct_s"].iloc[0]) == jct4
    assert all(a.assigned == {} for a in mi.servers)


def test_migration_cost_charged_when_hosts_change(tmp_path: Path) -> None:
    """8 P100s on 2 hosts of 4; the 4-GPU job (1000 s of work at 30.7984 steps/s) runs round 1 on
    h0 (best fit, ties -> lower id); h0 then fails, so round 2 runs on h1: a migration, 60 s
    without progress. JCT = 1000 + 60 s. The run reports 1 migration and 60 s lost."""
    steps = 1000 * P100_4_CONSOLIDATED
    sc = _scenario(tmp_path, 1, 'placement = "oef"\nmigration_cost_s = 60.0', gpus=8, per_host=4)
    tw = sc.trace_workload()
    tw = replace(tw, trace=replace(tw.trace, total_steps=np.array([steps])))
    from marketsim.agents.model import MarketModel

    cfg = sc.instantiate("maxmin", "truthful", np.random.default_rng(0))
    m = MarketModel(replace(cfg, trace=tw), rng=0)
    m.step()
    assert m.servers[0].assigned == {"0": 4} and m.servers[1].assigned == {}
    m.servers[0].healthy = False
    m.run()
    assert m.servers[1].assigned == {"0": 4} and m.servers[0].assigned == {}
    assert float(m.completions()["jct_s"].iloc[0]) == pytest.approx(1060.0, rel=1e-12)
    eng = m.auctioneer.trace
    assert eng.migrations == 1 and eng.migration_lost_s == 60.0
    tidy = m.tidy()
    assert tidy.loc[tidy["measure"] == "migrations", "value"].sum() == 1
    assert tidy.loc[tidy["measure"] == "migration_lost_s", "value"].sum() == 60.0
    # a migration cost longer than a round: no progress that round, nothing more
    sc2 = replace(sc, migration_cost_s=500.0)
    m2 = MarketModel(replace(sc2.instantiate("maxmin", "truthful", np.random.default_rng(0)), trace=tw), rng=0)
    m2.step()
    m2.servers[0].healthy = False
    m2.run()
    assert float(m2.completions()["jct_s"].iloc[0]) == pytest.approx(1360.0, rel=1e-12)
    assert m2.auctioneer.trace.migration_lost_s == 360.0


def test_report_lists_migrations(tmp_path: Path) -> None:
    from marketsim.analysis.engine.runner import run_experiment
    from marketsim.analysis.engine.stats import policy_summary

    sc = _scenario(tmp_path, HAND_STEPS, 'placement = "naive"\nmigration_cost_s = 30.0')
    res = run_experiment(sc, progress=False)
    summ = policy_summary(res.frame)
    assert {"migrations", "migration_lost_s"} <= set(summ.columns)
    assert (summ["migrations"] == 0).all()
    assert res.meta()["placement"] == "naive" and res.meta()["gpus_per_host"] == 2


def test_ideal_runs_a_synthetic_workload_without_hosts(tmp_path: Path) -> None:
    """One engine: "ideal" (no hosts) applies to a synthetic workload too; a kappa there would do
    nothing and is refused, naming the key; "ideal" keeps the hosts idle."""
    (tmp_path / "syn.toml").write_text(
        'name = "x"\nplacement = "ideal"\nrounds = 3\n[cluster]\ngpu_types = ["RTX3070", "RTX3080", "RTX3090"]\n'
        "gpus = [4, 4, 4]\n[workload]\ntenants = 2\n"
    )
    m = load_scenario(tmp_path / "syn.toml").build_model("oef-noncoop", "truthful", 0).run()
    assert m.config.resolved_placement == "ideal" and m.auctioneer.trace.placer is None
    assert all(not a.assigned for a in m.servers) and len(m.tidy())
    text = (tmp_path / "syn.toml").read_text()
    (tmp_path / "k.toml").write_text(text.replace("rounds = 3", "rounds = 3\nkappa = 0.2"))
    with pytest.raises(InputError, match="kappa"):
        load_scenario(tmp_path / "k.toml")
    sc = _scenario(tmp_path, HAND_STEPS, 'placement = "auto"')
    assert sc.trace_workload().unconsolidated is not None
    assert _scenario(tmp_path, HAND_STEPS).trace_workload().unconsolidated is None


def test_single_gpu_jobs_without_migration_cost_match_ideal(tmp_path: Path) -> None:
    """1-GPU jobs never span hosts, so with migration_cost_s = 0 the hosts change nothing: every
    JCT equals "ideal"'s. With a cost, jobs that switch GPU type between rounds pay it."""
    (tmp_path / "g.toml").write_text(
        'name = "g"\npolicies = ["maxmin"]\nreplications = 1\nplacement = "oef"\n'
        '[cluster]\ngpu_types = ["k80", "p100", "v100"]\ngpus = [3, 3, 3]\ngpus_per_host = 2\n'
        '[workload]\ngenerator = "gavel"\njobs = 60\njobs_per_hour = 6.0\n'
    )
    sc = load_scenario(tmp_path / "g.toml")
    placed = sc.build_model("maxmin", "truthful", 0).run()
    ideal = replace(sc, placement="ideal").build_model("maxmin", "truthful", 0).run()
    a, b = placed.completions(), ideal.completions()
    assert len(a) == 60
    np.testing.assert_array_equal(a["jct_s"].to_numpy(), b["jct_s"].to_numpy())
    eng = placed.auctioneer.trace
    assert eng.migrations > 0 and eng.migration_lost_s == 0.0
    costly = replace(sc, migration_cost_s=30.0).build_model("maxmin", "truthful", 0).run()
    lost = costly.auctioneer.trace.migration_lost_s
    assert lost == 30.0 * costly.auctioneer.trace.migrations > 0
    assert costly.completions()["jct_s"].mean() > b["jct_s"].mean()
