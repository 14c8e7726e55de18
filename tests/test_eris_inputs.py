"""Every invalid Eris input raises InputError naming the field and the value."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from marketsim.market.eris import ErisAuction, ErisConfig, ErisJob, ErisSites, NetworkSpec
from marketsim.market.eris.workload import generate_jobs
from marketsim.market.errors import InputError
from marketsim.market.utility import SigmoidUtility, TabularUtility

F = SigmoidUtility(3000.0, 1 / 3, 0.0)


def _job(**kw):
    base = dict(
        job_id=7,
        arrival=1,
        utility=F,
        data={1: 2},
        epochs=1,
        worker_demand=np.array([1.0]),
        ps_demand=np.array([0.0]),
        proc_capacity=1,
        param_mb=0.0,
    )
    base.update(kw)
    return ErisJob(**base)


def _sites(cap=((4.0,), (4.0,))):
    return ErisSites((1, 2), np.array(cap), ("gpu",))


def _raises(match_field, fn):
    with pytest.raises(InputError) as e:
        fn()
    assert match_field in str(e.value)
    return e.value


def test_negative_capacity():
    err = _raises("capacity[site 2, gpu]", lambda: _sites(((4.0,), (-1.0,))))
    assert "-1" in str(err)


def test_nan_capacity_and_duplicate_sites():
    _raises("ErisSites.capacity", lambda: _sites(((np.nan,), (1.0,))))
    _raises("ErisSites.ids", lambda: ErisSites((1, 1), np.ones((2, 1)), ("gpu",)))


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(proc_capacity=0), "proc_capacity"),
        (dict(epochs=0), "epochs"),
        (dict(arrival=0), "arrival"),
        (dict(param_mb=-1.0), "param_mb"),
        (dict(param_mb=math.nan), "param_mb"),
        (dict(data={1: -1}), "data"),
        (dict(data={1: 0}), "data"),
        (dict(worker_demand=np.array([0.0])), "worker_demand"),
        (dict(worker_demand=np.array([np.nan])), "worker_demand"),
        (dict(ps_demand=np.array([-1.0])), "ps_demand"),
    ],
)
def test_bad_job_fields(kw, field):
    err = _raises(field, lambda: _job(**kw))
    assert "job_id=7" in str(err)


def test_data_on_unknown_site():
    auc = ErisAuction(_sites(), NetworkSpec(), ErisConfig(horizon=3))
    _raises("data", lambda: auc.step(1, [_job(data={9: 2})]))


def test_utility_increasing_with_time():
    auc = ErisAuction(_sites(), NetworkSpec(), ErisConfig(horizon=3))
    err = _raises("utility", lambda: auc.step(1, [_job(utility=lambda d: np.asarray(d, float) + 1.0)]))
    assert "non-increasing" in str(err)
    _raises("utility", lambda: auc.step(1, [_job(utility=lambda d: np.full(np.shape(d), np.nan))]))


def test_arrival_mismatch_and_horizon():
    auc = ErisAuction(_sites(), NetworkSpec(), ErisConfig(horizon=3))
    _raises("arrival", lambda: auc.step(2, [_job(arrival=1)]))
    _raises("arrival", lambda: auc.run([_job(arrival=5)]))
    _raises("TabularUtility.values", lambda: TabularUtility((1.0, 2.0)))


def test_bad_config_and_network():
    _raises("horizon", lambda: ErisConfig(horizon=0))
    _raises("gamma_d", lambda: ErisConfig(horizon=1, gamma_d=1.0))
    _raises("gamma_k", lambda: ErisConfig(horizon=1, gamma_k=(1000.0, 0.5)))
    _raises("theta_mb", lambda: ErisConfig(horizon=1, theta_mb=0))
    _raises("budget_mb", lambda: NetworkSpec(budget_mb=0))
    _raises("budget_mb", lambda: NetworkSpec(budget_mb=math.inf))
    _raises("mode", lambda: NetworkSpec(mode="mesh"))
    _raises("graph", lambda: NetworkSpec(mode="topology"))
    with pytest.warns(UserWarning):
        ErisConfig(horizon=1, gamma_d=1.5)


def test_disconnected_topology():
    G = nx.Graph()
    G.add_nodes_from([1, 2])
    err = _raises(
        "NetworkSpec.graph", lambda: ErisAuction(_sites(), NetworkSpec(mode="topology", graph=G), ErisConfig(horizon=1))
    )
    assert "connected" in str(err)


def test_graph_nodes_must_be_sites_and_edges_valid():
    G = nx.Graph()
    G.add_edge(1, 3, capacity_mb=10.0)
    _raises("graph nodes", lambda: ErisAuction(_sites(), NetworkSpec(mode="topology", graph=G), ErisConfig(horizon=1)))
    G = nx.Graph()
    G.add_edge(1, 2, capacity_mb=-5.0)
    _raises("capacity", lambda: ErisAuction(_sites(), NetworkSpec(mode="topology", graph=G), ErisConfig(horizon=1)))
    G = nx.Graph()
    G.add_edge(1, 2, latency_ms=1.0)
    _raises("graph edge", lambda: ErisAuction(_sites(), NetworkSpec(mode="topology", graph=G), ErisConfig(horizon=1)))
    G = nx.Graph()
    G.add_edge(1, 2, capacity_mb=10.0, latency_ms=-1.0)
    _raises("latency_ms", lambda: ErisAuction(_sites(), NetworkSpec(mode="topology", graph=G), ErisConfig(horizon=1)))


def test_worker_demand_shape_mismatch():
    auc = ErisAuction(ErisSites((1,), np.ones((1, 2)), ("gpu", "cpu")), NetworkSpec(), ErisConfig(horizon=1))
    _raises("worker_demand", lambda: auc.step(1, [_job(data={1: 1})]))


def test_generator_needs_generator():
    _raises("rng", lambda: generate_jobs(3, 4, 5, rng=42))


def test_unschedulable_job_is_rejected_not_an_error():
    auc = ErisAuction(_sites(((0.0,), (0.0,))), NetworkSpec(), ErisConfig(horizon=2))
    d = auc.step(1, [_job()])[0]
    assert not d.admitted and d.menu_size == 0 and d.payment == 0.0


def test_auction_built_from_a_horizon_alone() -> None:
    """``ErisAuction(sites, horizon=T)`` (no config) builds the default config: base slots 0..T, and
    without either it is an InputError naming ``config``."""
    from marketsim.market.types import EdgeSite

    site = [EdgeSite("s0", {"gpu": 4.0, "cpu": 32.0})]
    auction = ErisAuction(site, horizon=5)
    assert auction.cfg.horizon == 5 and auction.T == 6 and auction._duals.shape == (6,)
    with pytest.raises(InputError, match="config"):
        ErisAuction(site)
