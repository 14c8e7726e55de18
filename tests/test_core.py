"""Core types, validators, utilities, jobs, topology builders and the registry."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from marketsim.market.errors import InputError, as_float_array, check_int, check_positive
from marketsim.market.jobs import PSJob
from marketsim.market.registry import get, names, register
from marketsim.market.topology import multi_rack_tree, random_geometric_edge, shortest_path_latency, single_rack
from marketsim.market.types import Cluster, GpuServer, GpuType, JobType, Tenant, check_capacity_vector
from marketsim.market.utility import ConvexUtility, LinearUtility, SigmoidUtility, TabularUtility


def test_input_error_names_field_and_value() -> None:
    with pytest.raises(InputError, match=r"speed must be > 0, got -1\.0"):
        check_positive("speed", -1.0)
    with pytest.raises(InputError, match="must be finite"):
        check_positive("speed", float("nan"))
    with pytest.raises(InputError, match="must be an integer"):
        check_int("count", 2.5)
    with pytest.raises(InputError, match=r"must be >= 1"):
        check_int("count", 0, minimum=1)
    with pytest.raises(InputError, match=r"W\[1, 0\] must be finite"):
        as_float_array("W", [[1, 2], [np.nan, 3]])
    with pytest.raises(InputError, match="shape 2x\\?"):
        as_float_array("W", [[1, 2, 3]], shape=(2, None))
    assert check_int("count", 3.0) == 3


def test_sigmoid_utility_values_and_log() -> None:
    u = SigmoidUtility(10.0, 1.0, 3.0)
    assert u(3.0) == pytest.approx(5.0)
    assert u(0.0) == pytest.approx(10.0 / (1.0 + math.exp(-3.0)))
    x = np.arange(0, 2000, 100)
    vals = u(x)
    assert vals.shape == x.shape and np.all(np.diff(vals) <= 0) and np.all(vals >= 0)
    assert u.log(1000.0) == pytest.approx(math.log(10.0) - 997.0)  # no underflow
    assert u.scaled(2.0)(3.0) == pytest.approx(10.0)
    assert SigmoidUtility(4.0, 0.0, 7.0)(123.0) == pytest.approx(2.0)  # constant gamma1/2


def test_other_utilities() -> None:
    lin = LinearUtility(-2.0, 10.0)
    assert lin(3.0) == pytest.approx(4.0) and lin(6.0) == 0.0
    assert LinearUtility(-2.0, 10.0, floor_at_zero=False)(6.0) == pytest.approx(-2.0)
    assert lin.scaled(0.5)(1.0) == pytest.approx(4.0)
    conv = ConvexUtility(4.0, 2.0)
    assert conv(2.0) == pytest.approx(4.0)
    tab = TabularUtility((5.0, 3.0, 1.0))
    assert tab(np.array([0, 1, 2, 9])).tolist() == [5.0, 3.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: LinearUtility(0.5, 10.0), "LinearUtility.k"),
        (lambda: LinearUtility(-1.0, 0.0), "LinearUtility.g"),
        (lambda: SigmoidUtility(-1.0, 1.0, 1.0), "SigmoidUtility.gamma1"),
        (lambda: SigmoidUtility(1.0, float("nan"), 1.0), "SigmoidUtility.gamma2"),
        (lambda: TabularUtility((1.0, 2.0)), "TabularUtility.values"),
        (lambda: ConvexUtility(1.0, 0.0), "ConvexUtility.kappa"),
    ],
)
def test_bad_utilities_raise_naming_field(make, field) -> None:
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        make()


def test_ps_job_validation_and_derived() -> None:
    u = SigmoidUtility(10, 1, 3)
    job = PSJob(
        "j1",
        "t1",
        arrival=2,
        epochs=3,
        chunks=4,
        minibatches=10,
        compute_time=0.5,
        grad_mb=125.0,
        utility=u,
        worker_bw=1.0,
    )
    # push + pull of 125 MB at 1 Gbps = 2 * 1000 Mbit / 1000 Mbit/s = 2 s, plus 0.5 s compute
    assert job.seconds_per_minibatch() == pytest.approx(2.5)
    assert job.total_minibatches() == 120
    with pytest.raises(InputError, match=r"PSJob\[j1\]\.epochs"):
        PSJob("j1", "t1", 0, 0, 1, 1, 0.1, 1.0, u)
    with pytest.raises(InputError, match=r"PSJob\[j1\]\.compute_time must be >= 0, got -1"):
        PSJob("j1", "t1", 0, 1, 1, 1, -1, 1.0, u)
    with pytest.raises(InputError, match=r"arrival"):
        PSJob("j1", "t1", -3, 1, 1, 1, 0.1, 1.0, u)


def test_types_validation() -> None:
    with pytest.raises(InputError, match=r"GpuServer\[h0\]\.count must be >= 0, got -2"):
        GpuServer("h0", 0, -2)
    with pytest.raises(InputError, match=r"JobType\[vgg\]\.speedups\[1\] must be > 0"):
        JobType("vgg", (1.0, 0.0))
    with pytest.raises(InputError, match=r"Tenant\[a\]\.weight"):
        Tenant("a", (JobType("vgg", (1.0, 2.0)),), weight=0.0)
    with pytest.raises(InputError, match=r"Tenant\[a\]\.job_types"):
        Tenant("a", ())
    with pytest.raises(InputError, match="sorted by rank"):
        Cluster((GpuType("b", 1), GpuType("a", 0)), ())
    with pytest.raises(InputError, match=r"gpu_type must be < 1"):
        Cluster((GpuType("a", 0),), (GpuServer("h0", 1, 4),))
    with pytest.raises(InputError, match=r"m\[1\] must be >= 0 \(a negative capacity\), got -1(\.0)?$"):
        check_capacity_vector("m", [1, -1])
    with pytest.raises(InputError, match=r"m\[0\] must be a whole number"):
        check_capacity_vector("m", [1.5, 1])
    with pytest.raises(InputError, match=r"length 3"):
        check_capacity_vector("m", [1, 1], k=3)


def test_single_rack_is_the_oef_testbed() -> None:
    c = single_rack([("RTX3070", 8), ("RTX3080", 8), ("RTX3090", 8)])
    assert c.capacity.tolist() == [8, 8, 8]
    assert [(s.host_id, s.gpu_type, s.count) for s in c.servers] == [
        ("h0", 0, 4),
        ("h1", 0, 4),
        ("h2", 1, 4),
        ("h3", 1, 4),
        ("h4", 2, 4),
        ("h5", 2, 4),
    ]
    assert c.graph.degree["switch"] == 6 and c.type_index("RTX3080") == 1
    assert Cluster.from_counts({"k80": 3, "v100": 5}, gpus_per_host=4).capacity.tolist() == [3, 5]
    with pytest.raises(InputError, match="gpu type"):
        c.type_index("A100")


def test_multi_rack_tree_structure_and_latency() -> None:
    c = multi_rack_tree([[("k80", 8), ("v100", 4)], [("p100", 8)]], ["k80", "p100", "v100"])
    assert c.capacity.tolist() == [8, 8, 4]
    assert nx.is_tree(c.graph)
    # r0h0 -> tor0 -> core -> tor1 -> r1h0: 0.01 + 0.1 + 0.1 + 0.01 ms
    assert shortest_path_latency(c.graph, "r0h0", "r1h0") == pytest.approx(0.22)
    with pytest.raises(InputError, match="racks\\[0\\] gpu type"):
        multi_rack_tree([[("a100", 8)]], ["k80"])


def test_random_geometric_edge_is_seeded_and_connected() -> None:
    g1, s1 = random_geometric_edge(30, np.random.default_rng(7), radius=0.1)
    g2, _ = random_geometric_edge(30, np.random.default_rng(7), radius=0.1)
    g3, _ = random_geometric_edge(30, np.random.default_rng(8), radius=0.1)
    assert nx.is_connected(g1) and len(s1) == 30
    assert sorted(g1.edges(data=True)) == sorted(g2.edges(data=True))
    assert sorted(g1.edges()) != sorted(g3.edges())
    g = nx.Graph()
    g.add_nodes_from(["a", "b"])
    with pytest.raises(InputError, match="no path"):
        shortest_path_latency(g, "a", "b")


def test_registry_lookup_and_errors() -> None:
    pattern = r"mechanism must be a registered mechanism \(known: .*oef-noncoop.*\), got 'no-such'"
    with pytest.raises(InputError, match=pattern):
        get("no-such")
    with pytest.raises(InputError, match="family"):
        register("x", "lottery", "bad family")

    @register("test-dummy-fair", "fair-share", "dummy for the registry test")
    def _dummy(W, m, *, weights=None, caps=None):
        return None

    assert "test-dummy-fair" in names("fair-share")
    assert get("test-dummy-fair").fn is _dummy
    with pytest.raises(InputError, match="already registered"):
        register("test-dummy-fair", "fair-share", "again")(lambda W, m: None)
    with pytest.raises(InputError, match="must be a registered auction mechanism"):
        get("test-dummy-fair", family="auction")
