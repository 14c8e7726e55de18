"""The Mesa layer: MarketModel invariants, hand-checked job progress, arrivals/exits, strategies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketsim.agents.config import JobConfig, ModelConfig, TenantConfig
from marketsim.agents.model import MarketModel
from marketsim.agents.server import GPUServerAgent
from marketsim.agents.strategies import MultiplicativeNoise, ReportVector, ScaleDims, Strategy, Truthful
from marketsim.agents.tenant import TenantAgent
from marketsim.market.errors import InputError
from marketsim.market.topology import single_rack
from marketsim.scenarios.loader import load_scenario

POLICIES = ["oef-noncoop", "oef-coop", "gavel", "gandiva-fair", "maxmin", "max-throughput"]
BIG = 1e9  # work that never finishes within the tests' horizons


def _tenant(tid: str, w: tuple[float, ...], workers: list[int], work: float = BIG, **kw: object) -> TenantConfig:
    jobs = tuple(JobConfig(f"{tid}-j{i}", "m", g, work, float(kw.get("arrival", 0.0))) for i, g in enumerate(workers))
    return TenantConfig(tid, {"m": w}, jobs, **kw)  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------------------
# hand-checked progress


@pytest.mark.parametrize("policy", POLICIES)
def test_single_job_progress_matches_true_rate(policy: str) -> None:
    """One tenant, one 2-worker job on a cluster of two fast GPUs (speedup 3): rate = 2·3 = 6
    work-s/s; work = 6·300·2 + 300 finishes 50 s into round 2 (JCT 650 s). Round 2 ends with its
    last lease (50 s long): every record's rates are over its own length ``round_s``, so act × round_s
    sums to the work done (3,900) and the GPUs were busy the whole 650 s."""
    cluster = single_rack([("slow", 0), ("fast", 2)])
    t = TenantConfig("a", {"m": (1.0, 3.0)}, (JobConfig("j", "m", 2, 6 * 300 * 2 + 300),))
    model = MarketModel(ModelConfig(cluster, (t,), policy=policy, rounds=10), rng=0).run()
    assert model.steps == 3  # stops once idle
    comp = model.completions()
    assert comp["jct_s"].tolist() == [pytest.approx(650.0)]
    df = model.tidy()
    act = df[(df.tenant == "a") & (df.measure == "act")].sort_values("round")["value"].to_numpy()
    np.testing.assert_allclose(act, [6.0, 6.0, 6.0])
    length = df[(df.tenant == "") & (df.measure == "round_s")].sort_values("round")["value"].to_numpy()
    np.testing.assert_allclose(length, [300.0, 300.0, 50.0])
    assert float(act @ length) == pytest.approx(6 * 300 * 2 + 300)
    util = df[(df.tenant == "") & (df.measure == "utilisation")]["value"].to_numpy()
    np.testing.assert_allclose(util, [1.0, 1.0, 1.0])


def test_two_types_one_job_each_and_cross_host_penalty() -> None:
    """OEF with one tenant gets the whole cluster x = (4, 4); its two 4-worker jobs run one on
    the 4 fast GPUs (rate 4·2.5 = 10) and one on the 4 slow ones (rate 4): actual = estimated = 14."""
    cluster = single_rack([("slow", 4), ("fast", 4)])
    t = _tenant("a", (1.0, 2.5), [4, 4])
    model = MarketModel(ModelConfig(cluster, (t,), policy="oef-noncoop", rounds=3), rng=0).run()
    # servers sit on their topology nodes of the Mesa Network space
    for srv in model.agents_by_type[GPUServerAgent]:
        assert srv.cell.coordinate == srv.server.node and srv in srv.cell.agents
    assert set(model.space.G.nodes) == {"switch", "h0", "h1"}
    df = model.tidy()
    for m in ("act", "est"):
        np.testing.assert_allclose(df[(df.tenant == "a") & (df.measure == m)]["value"], 14.0)
    # an 8-worker job of one type on two 4-GPU hosts: rate = 8 · 2.5 / (1 + 0.1)
    cluster2 = single_rack([("slow", 0), ("fast", 8)])
    m2 = MarketModel(ModelConfig(cluster2, (_tenant("a", (1.0, 2.5), [8]),), rounds=2), rng=0).run()
    d2 = m2.tidy()
    np.testing.assert_allclose(d2[(d2.tenant == "a") & (d2.measure == "act")]["value"], 8 * 2.5 / 1.1)
    np.testing.assert_allclose(d2[(d2.tenant == "") & (d2.measure == "cross_host_jobs")]["value"], 1.0)


# -------------------------------------------------------------------------------------------------
# invariants over a random scenario


def _check_round_invariants(model: MarketModel) -> None:
    cap = model.m_avail()
    busy = np.zeros(model.k, dtype=int)
    for srv in model.agents_by_type[GPUServerAgent]:
        assert srv.busy <= srv.server.count
        busy[srv.server.gpu_type] += srv.busy
    assert np.all(busy <= cap)
    res = model.auctioneer.last_trace
    assert np.all(res.busy_by_type <= cap) and np.array_equal(res.busy_by_type, busy)
    held: dict[str, int] = {}
    for srv in model.agents_by_type[GPUServerAgent]:
        for job_id, g in srv.assigned.items():
            held[job_id] = held.get(job_id, 0) + g
    eng = model.auctioneer.trace
    ids = model.workload.trace.job_id.astype(str)
    assert (eng.remaining >= 0).all()
    for ten in model.tenant_list():
        # the GPUs a tenant is charged with are exactly those its jobs hold on the hosts
        assert ten.gpus == sum(held.get(ids[j], 0) for j in ten.job_index)
        for j in ten.job_index:
            assert held.get(ids[j], 0) in (0, int(eng.s[j]))  # gang: all workers or none


@pytest.mark.parametrize("policy", POLICIES)
def test_capacity_never_exceeded_any_round(policy: str) -> None:
    scen = load_scenario("default")
    model = scen.build_model(policy, "truthful", np.random.SeedSequence(3))
    while model.running:
        model.step()
        _check_round_invariants(model)
    df = model.tidy()
    for j, name in enumerate(model.gpu_names):
        col = df[(df.tenant == "") & (df.measure == f"busy_gpus:{name}")]["value"]
        assert (col <= model.cluster.capacity[j]).all()
    util = df[(df.tenant == "") & (df.measure == "utilisation")]["value"]
    assert ((util >= 0) & (util <= 1 + 1e-12)).all()


def test_model_is_deterministic_and_seed_sensitive() -> None:
    scen = load_scenario("oef_lying")

    def frame(seed: int, variant: str = "lying") -> pd.DataFrame:
        return scen.build_model("oef-noncoop", variant, np.random.SeedSequence(seed)).run().tidy()

    a, b = frame(11), frame(11)
    pd.testing.assert_frame_equal(a, b)
    c = frame(12)
    assert not a.equals(c)
    # the integer-seed path of Mesa gives the same result twice as well
    cfg = scen.instantiate("gavel", "truthful", np.random.default_rng(4))
    pd.testing.assert_frame_equal(MarketModel(cfg, rng=5).run().tidy(), MarketModel(cfg, rng=5).run().tidy())


# -------------------------------------------------------------------------------------------------
# arrivals and exits


def test_leaving_tenant_frees_its_share() -> None:
    cluster = single_rack([("slow", 4), ("fast", 4)])
    stay = _tenant("a", (1.0, 2.0), [1] * 8)
    leave = _tenant("b", (1.0, 3.0), [1] * 8, leave_at=600.0)
    model = MarketModel(ModelConfig(cluster, (stay, leave), policy="oef-noncoop", rounds=5), rng=0).run()
    df = model.tidy()
    alloc = df[df.measure == "alloc_gpus"].pivot_table(index="round", columns="tenant", values="value")
    assert alloc.loc[0, "a"] < 8 - 1e-6 and alloc.loc[0, "b"] > 1e-6
    # from round 2 (t = 600 s) b is gone and a holds all 8 GPUs
    assert alloc.loc[2:, "b"].isna().all()
    np.testing.assert_allclose(alloc.loc[2:, "a"], 8.0)
    gpus = df[(df.tenant == "a") & (df.measure == "gpus")].set_index("round")["value"]
    np.testing.assert_allclose(gpus.loc[2:], 8.0)
    assert [e["event"] for e in model.events if e["tenant"] == "b"] == ["arrive", "leave"]
    assert len(model.agents_by_type[TenantAgent]) == 1


def test_late_arrival_and_exit_when_done() -> None:
    """Tenant a's job runs alone for one round and exits (its agent is removed); the cluster is
    then idle until b arrives at 900 s, so the clock jumps there (no empty records); b runs three
    rounds from 900 s and exits."""
    cluster = single_rack([("slow", 0), ("fast", 2)])
    early = _tenant("a", (1.0, 2.0), [1], work=2 * 300.0)  # runs alone at rate 2 for one round
    late = _tenant("b", (1.0, 2.0), [1], work=2 * 300.0 * 3, arrival=900.0)
    model = MarketModel(ModelConfig(cluster, (early, late), policy="oef-coop", rounds=20), rng=0).run()
    df = model.tidy()
    rounds_of = df[df.measure == "act"].groupby("tenant")["round"].agg(["min", "max"])
    assert rounds_of.loc["a"].tolist() == [0, 0]
    assert rounds_of.loc["b"].tolist() == [1, 3]
    starts = df[(df.tenant == "") & (df.measure == "round_start_s")].sort_values("round")["value"].tolist()
    assert starts == pytest.approx([0.0, 900.0, 1200.0, 1500.0])
    comp = model.completions().set_index("job_id")
    assert comp.loc["a-j0", "completion_s"] == pytest.approx(300.0)
    assert comp.loc["b-j0", "jct_s"] == pytest.approx(900.0)
    assert model.steps == 4  # idle after round 3
    assert [(e["tenant"], e["event"]) for e in model.events] == [("a", "arrive"), ("a", "exit"), ("b", "arrive"),
                                                                  ("b", "exit")]  # fmt: skip
    assert TenantAgent not in model.agents_by_type or not len(model.agents_by_type[TenantAgent])


# -------------------------------------------------------------------------------------------------
# truth vs report


def test_lying_tenant_reports_differ_but_throughput_uses_truth() -> None:
    cluster = single_rack([("slow", 0), ("fast", 2)])
    liar = TenantConfig("a", {"m": (1.0, 3.0)}, (JobConfig("j", "m", 2, BIG),), strategy=ScaleDims({1: 2.0}))
    model = MarketModel(ModelConfig(cluster, (liar,), rounds=2), rng=0).run()
    ten = model.tenant_list()[0]
    np.testing.assert_allclose(ten.report("m"), [1.0, 6.0])
    np.testing.assert_allclose(ten.true_speedups["m"], [1.0, 3.0])
    df = model.tidy().set_index(["round", "tenant", "measure"])["value"]
    assert df[(1, "a", "act")] == pytest.approx(6.0)  # 2 workers × TRUE speedup 3
    assert df[(1, "a", "est")] == pytest.approx(6.0)
    assert df[(1, "a", "est_reported")] == pytest.approx(12.0)  # what the mechanism believes


def test_strategies_and_tags() -> None:
    rng = np.random.default_rng(0)
    w = np.array([1.0, 2.0, 4.0])
    for s in (Truthful(), ScaleDims({2: 1.3}), ReportVector((1.0, 5.0, 2.0)), MultiplicativeNoise(0.1)):
        assert isinstance(s, Strategy)
    assert Truthful().tags["truthful"] is True
    assert ScaleDims({2: 1.3}).tags == {"truthful": False, "misreports": frozenset({"speedup"})}
    np.testing.assert_allclose(ScaleDims({2: 1.3}).report("m", w, rng), [1.0, 2.0, 5.2])
    np.testing.assert_allclose(ScaleDims.fast(1.3, 3).report("m", w, rng), [1.0, 2.6, 5.2])
    np.testing.assert_allclose(ScaleDims({1: 0.5}, job_types={"other"}).report("m", w, rng), w)
    np.testing.assert_allclose(ReportVector((1.0, 5.0, 2.0)).report("m", w, rng), [1.0, 5.0, 2.0])
    noisy = MultiplicativeNoise(0.2).report("m", w, np.random.default_rng(1))
    assert noisy[0] == 1.0 and np.all(np.abs(noisy[1:] / w[1:] - 1) <= 0.2)
    np.testing.assert_allclose(MultiplicativeNoise(0.0).report("m", w, rng), w)
    with pytest.raises(InputError, match="factors"):
        ScaleDims({1: -2.0})
    with pytest.raises(InputError, match="length k"):
        ReportVector((1.0, 2.0)).report("m", w, rng)
    with pytest.raises(InputError, match="< 1"):
        MultiplicativeNoise(1.5)
    with pytest.raises(InputError, match="max_speedup"):
        ScaleDims({2: 1e5}).report("m", w, rng)


def test_noise_draws_come_from_the_model_rng() -> None:
    cluster = single_rack([("slow", 2), ("fast", 2)])

    def reports(seed: int) -> np.ndarray:
        t = TenantConfig("a", {"m": (1.0, 2.0)}, (JobConfig("j", "m", 1, BIG),), strategy=MultiplicativeNoise(0.2))
        model = MarketModel(ModelConfig(cluster, (t,), rounds=3), rng=seed).run()
        rep = model.tenant_list()[0].report("m")
        assert model.auctioneer.resolves == 1  # the noisy report is drawn once, not every round
        return rep

    np.testing.assert_array_equal(reports(1), reports(1))
    assert not np.array_equal(reports(1), reports(2))


def test_config_validation_names_the_field() -> None:
    cluster = single_rack([("slow", 2), ("fast", 2)])
    with pytest.raises(InputError, match=r"job x\.workers"):
        ModelConfig(cluster, (TenantConfig("a", {"m": (1.0, 2.0)}, (JobConfig("x", "m", 5, 1.0),)),))
    with pytest.raises(InputError, match=r"speedups\[m\]"):
        ModelConfig(cluster, (TenantConfig("a", {"m": (1.0, 2.0, 3.0)}, ()),))
    with pytest.raises(InputError, match="has no speedups"):
        TenantConfig("a", {"m": (1.0, 2.0)}, (JobConfig("x", "other", 1, 1.0),))
    with pytest.raises(InputError, match="mechanism"):
        MarketModel(ModelConfig(cluster, (), policy="nope"))
