"""Scenario loading, validation messages, table-backed profiles and common random numbers."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.agents.strategies import ScaleDims, Truthful
from marketsim.market.errors import InputError
from marketsim.scenarios.loader import load_scenario, parse_scenario, scenario_names

TINY = """
name = "tiny"
policies = ["oef-noncoop", "maxmin"]
rounds = 4
replications = 2
seed = 3
[cluster]
gpu_types = ["a", "b", "c"]
gpus = [4, 4, 4]
[workload]
tenants = 4
jobs_per_tenant = 3
[[variant]]
name = "lying"
tenant = 1
strategy = "scale"
factors = { c = 1.5 }
"""


def _doc(**changes: object) -> dict:
    import tomllib

    doc = tomllib.loads(TINY)
    for dotted, value in changes.items():
        parts = dotted.split("__")
        target = doc
        for p in parts[:-1]:
            target = target[p]
        target[parts[-1]] = value
    return doc


def test_embedded_scenarios_load() -> None:
    names = scenario_names()
    assert {"default", "oef_lying"} <= set(names)
    d = load_scenario("default")
    assert d.policies == ("oef-noncoop", "oef-coop", "gavel", "gandiva-fair", "maxmin", "max-throughput")
    assert d.workload.tenants == 12 and d.cluster.gpu_types == ("RTX3070", "RTX3080", "RTX3090")
    lying = load_scenario("oef_lying")
    assert lying.variant_names == ("truthful", "lying")
    assert lying.deviator("lying") == "t0"
    strat = lying.variants[0].strategy
    assert isinstance(strat, ScaleDims) and strat.factors == {1: 1.3, 2: 1.3}


def test_gavel_table_scenario_reads_the_real_table(shared_data: Path) -> None:
    scen = load_scenario("gavel_table")
    base = scen.base_profiles()
    np.testing.assert_allclose(base["ResNet-50 (batch size 64)"], [1.0, 4.23, 7.10], atol=0.005)
    cfg = scen.instantiate("oef-noncoop", "truthful", np.random.default_rng(0))
    assert len(cfg.tenants) == 12


def test_relative_table_path_is_resolved_against_the_scenario(tmp_path: Path, shared_data: Path) -> None:
    csv = shared_data / "gavel_throughputs.csv"
    rel = os.path.relpath(csv, tmp_path)
    text = TINY.replace('["a", "b", "c"]', '["k80", "p100", "v100"]').replace("c = 1.5", "v100 = 1.5")
    text = text.replace("[workload]", f'[profiles]\nfile = "{rel}"\njob_types = ["A3C", "CycleGAN"]\n[workload]')
    (tmp_path / "s.toml").write_text(text, encoding="utf-8")
    scen = load_scenario(tmp_path / "s.toml")
    assert scen.profiles.file == str(csv.resolve())
    assert sorted(scen.base_profiles()) == ["A3C", "CycleGAN"]


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"colour": "red"}, r"scenario tiny\.colour is not a known key"),
        ({"cluster__gpus_per_hots": 4}, r"cluster\.gpus_per_hots is not a known key"),
        ({"rounds": "ten"}, r"scenario tiny\.rounds must be an integer, got 'ten'"),
        ({"rounds": 0}, r"rounds must be >= 1"),
        ({"policies": ["oef-noncoop", "gavle"]}, r"policies\[1\] is not a registered fair-share mechanism.*'gavle'"),
        ({"cluster__gpus": [4, 4]}, r"cluster\.gpus must have one count per GPU type"),
        ({"cluster__gpus": [4, -1, 4]}, r"cluster\.gpus\[1\] must be >= 0"),
        ({"workload__tenants": 2.5}, r"workload\.tenants must be an integer"),
        ({"workload__workers_probs": [1, 1]}, r"workload\.workers_probs must give one weight"),
        ({"backfill": "yes"}, r"backfill must be true or false"),
        ({"placement": "best"}, r"placement must be one of"),
        ({"profiles": {"file": "nope.csv"}}, r"profiles\.file does not exist"),
        ({"profiles": {"generator": "magic"}}, r"profiles\.generator must be 'assumed' or 'ordered'"),
        ({"profiles": {"job_types": ["GPT"]}}, r"profiles\.job_types is not a model of the assumed table"),
    ],
)
def test_validation_errors_name_the_key(changes: dict, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        parse_scenario(_doc(**changes), "tiny")


@pytest.mark.parametrize(
    ("variant", "pattern"),
    [
        (
            {"name": "x", "tenant": 9, "strategy": "truthful"},
            r"scenario tiny: variant x\.tenant must be a tenant index in 0\.\.3",
        ),
        ({"name": "x", "tenant": 0, "strategy": "bribe"}, r"variant\[0\]\.strategy must be one of"),
        ({"name": "x", "tenant": 0, "strategy": "scale", "factors": {"z": 2}}, r"factors\.z names no GPU type"),
        ({"name": "x", "tenant": 0, "strategy": "noise", "e": 2.0}, r"variant\[0\]\.e must be < 1"),
        ({"name": "x", "tenant": 0, "strategy": "report", "vector": [1, 2]}, r"vector must have one entry per GPU"),
        ({"name": "truthful", "tenant": 0, "strategy": "truthful"}, r"name must be a non-empty name other than"),
        ({"name": "x", "tenant": 0, "strategy": "fast", "lambda": 2}, r"variant\[0\]\.factor is required"),
    ],
)
def test_variant_validation(variant: dict, pattern: str) -> None:
    doc = _doc()
    doc["variant"] = [variant]
    with pytest.raises(InputError, match=pattern):
        parse_scenario(doc, "tiny")


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="neither an embedded scenario"):
        load_scenario("no_such_scenario")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [", encoding="utf-8")
    with pytest.raises(InputError, match="is not valid TOML"):
        load_scenario(bad)


def test_common_random_numbers_across_policies_and_variants() -> None:
    scen = parse_scenario(_doc(), "tiny")
    cfgs = {
        (p, v): scen.instantiate(p, v, np.random.default_rng(42)) for p in scen.policies for v in scen.variant_names
    }
    ref = cfgs[("oef-noncoop", "truthful")]
    for (p, v), cfg in cfgs.items():
        assert cfg.policy == p
        for a, b in zip(ref.tenants, cfg.tenants, strict=True):
            assert a.jobs == b.jobs and dict(a.speedups) == dict(b.speedups)
            liar = v == "lying" and b.tenant_id == "t1"
            assert isinstance(b.strategy, ScaleDims if liar else Truthful)
    other = scen.instantiate("oef-noncoop", "truthful", np.random.default_rng(43))
    assert [t.jobs for t in other.tenants] != [t.jobs for t in ref.tenants]


def test_workload_distributions_and_overrides() -> None:
    doc = _doc(workload__tenants=40, workload__jobs_per_tenant=5)
    doc["tenant"] = [{"index": 2, "job_types": ["LSTM"], "weight": 2.0, "arrival_s": 600.0, "leave_s": 1200.0}]
    scen = parse_scenario(doc, "tiny")
    cfg = scen.instantiate("maxmin", "truthful", np.random.default_rng(0))
    t2 = cfg.tenants[2]
    assert list(t2.speedups) == ["LSTM"] and t2.weight == 2.0 and t2.arrival == 600.0 and t2.leave_at == 1200.0
    assert all(j.arrival == 600.0 for j in t2.jobs)
    workers = np.array([j.workers for t in cfg.tenants for j in t.jobs])
    assert set(workers.tolist()) <= {1, 2, 4, 8}
    assert 0.4 < np.mean(workers == 1) < 0.8  # p = 0.6 over 200 jobs
    for t in cfg.tenants:
        for w in t.speedups.values():
            assert w[0] == 1.0 and np.all(np.diff(w) >= 0)


def test_explore_lying_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from marketsim.analysis.frontends.explore_lying import main as sweep

    text = TINY.replace('policies = ["oef-noncoop", "maxmin"]', 'policies = ["oef-noncoop", "max-throughput"]')
    text = text.replace('["a", "b", "c"]', '["RTX3070", "RTX3080", "RTX3090"]').replace("c = 1.5", "RTX3090 = 1.5")
    (tmp_path / "s.toml").write_text(text.replace("rounds = 4", "rounds = 3"), encoding="utf-8")
    args = ["--scenario", str(tmp_path / "s.toml"), "--factors", "1.5,2", "--reps", "2", "--out", str(tmp_path / "o")]
    assert sweep(args) == 0
    out = capsys.readouterr().out
    assert "lambda=1.5" in out and "lambda=2" in out and "max-throughput" in out
    summary = pd.read_csv(tmp_path / "o" / "lie_sweep.csv")
    assert set(summary["variant"]) == {"lambda=1.5", "lambda=2"} and (summary["n"] == 2).all()
    assert (tmp_path / "o" / "lie_sweep.png").is_file()
    assert sweep(["--scenario", str(tmp_path / "s.toml"), "--factors", "-1"]) == 2
