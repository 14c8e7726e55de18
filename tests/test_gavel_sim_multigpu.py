"""Our trace engine against Gavel's own simulator on three Gavel traces with multi-GPU jobs, 8 + 8 + 8
GPUs, 360 s rounds, one tenant per job: two files of Gavel's repository
(``scheduler/traces/physical_cluster/{minimize_makespan,max_min_fairness}.trace``) and the first
100 jobs of a trace written by Gavel's generator with multi-GPU jobs; all stored in ``tests/data/``.

Gavel's per-job JCTs (unmodified Gavel, ECOS) are stored in ``tests/data/gavel_sim_jcts_888_*.csv``
(how they were made: ``tests/data/gavel_multigpu.README.md``); the comparison is in
``docs/gavel_comparison.md``.

Checks, per trace:

* every job of the trace completes in every run (the same job ids as Gavel's);
* mean JCT within 5% of Gavel's for ``gavel-max-min-perf`` / ``max_min_fairness_perf``,
  ``gavel-max-sum-throughput`` / ``max_sum_throughput_perf``, ``gavel-fifo`` / ``fifo_perf``, and
  with ``lease_order = "shuffle"`` ``maxmin`` / ``max_min_fairness`` and ``gavel-isolated`` /
  ``isolated`` (these two as the mean over 5 seeds on both sides: Gavel's seeds 0-4, our
  replication seeds 0-4);
* the two agnostic policies with the shuffle within 2% of Gavel (5-seed means): the sd of the
  per-seed means is at most 0.5% (Gavel) and 1.0% (ours) of the mean, so the difference of the two
  5-seed means has an sd of about 0.5% and 2% is about 4 sd. Without the shuffle (``lease_order =
  "fastest"``) they are 3.1-9.2% below Gavel on ``max_min_fairness`` and ``generated_multigpu``
  (measured), so this bound catches it;
* per-job median |ln(JCT ours / JCT Gavel)| <= 0.08 (measured up to 0.060), except
  ``gavel-max-sum-throughput`` on ``generated_multigpu``: <= 0.25 (measured 0.122; Gavel against
  itself with only its LP solver changed, ECOS to SCS, gives 0.093 there: the max-sum LP has many
  optima and multi-GPU jobs make the schedules diverge).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.scenarios.loader import parse_scenario

DATA = Path(__file__).parent / "data"
#: trace name -> file in tests/data (tests/data/gavel_multigpu.README.md)
TRACE_FILES = {
    "minimize_makespan": "gavel_physical_minimize_makespan.trace",
    "max_min_fairness": "gavel_physical_max_min_fairness.trace",
    "generated_multigpu": "gavel_generated_multigpu_100.trace",
}
TRACES = tuple(TRACE_FILES)
SEEDS = range(5)


def _ours(trace: str, policy: str, lease_order: str = "fastest", seed: int = 0) -> pd.Series:
    """JCTs (s) by job id of Gavel's ``trace`` on our engine, 8 K80 + 8 P100 + 8 V100."""
    data = {
        "policies": [policy],
        "replications": 1,
        "cluster": {
            "gpu_types": ["k80", "p100", "v100"],
            "gpus": [8, 8, 8],
            "round_seconds": 360.0,
            "reallocation_interval_s": 1920.0,
            "lease_order": lease_order,
        },
        "workload": {"trace": str(DATA / TRACE_FILES[trace]), "tenancy": "job"},
    }
    model = parse_scenario(data, "gavel-multigpu").build_model(policy, "truthful", seed)
    model.run()
    assert not model.cap_reached
    c = model.completions()
    return pd.Series(c["jct_s"].to_numpy(), index=c["job_id"].astype(int)).sort_index()


def _gavel(trace: str) -> pd.DataFrame:
    return pd.read_csv(DATA / f"gavel_sim_jcts_888_{trace}.csv", index_col="job_id").sort_index()


def _n_jobs(trace: str) -> int:
    return sum(1 for line in (DATA / TRACE_FILES[trace]).read_text().splitlines() if line.strip())


@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize(
    ("gavel_policy", "policy"),
    [
        ("max_min_fairness_perf", "gavel-max-min-perf"),
        ("max_sum_throughput_perf", "gavel-max-sum-throughput"),
        ("fifo_perf", "gavel-fifo"),
    ],
)
def test_gavel_perf_policies_within_5_percent(trace: str, gavel_policy: str, policy: str) -> None:
    """Gavel's heterogeneity-aware policies (no shuffle): every job completes, mean JCT within 5%,
    the median job within 8% (log ratio)."""
    g = _gavel(trace)[gavel_policy]
    ours = _ours(trace, policy)
    assert ours.index.tolist() == g.index.tolist() == list(range(_n_jobs(trace)))
    assert ours.mean() / g.mean() == pytest.approx(1.0, abs=0.05)
    per_job = 0.25 if (policy, trace) == ("gavel-max-sum-throughput", "generated_multigpu") else 0.08
    assert float(np.median(np.abs(np.log(ours.to_numpy() / g.to_numpy())))) <= per_job


@pytest.mark.parametrize(
    "trace",
    [pytest.param(t, marks=pytest.mark.slow) if t == "generated_multigpu" else t for t in TRACES],  # 10 runs of 59 h
)
@pytest.mark.parametrize(("gavel_policy", "policy"), [("max_min_fairness", "maxmin"), ("isolated", "gavel-isolated")])
def test_agnostic_policies_with_the_shuffle_match_gavel(trace: str, gavel_policy: str, policy: str) -> None:
    """Gavel's heterogeneity-agnostic policies (per-round GPU-type shuffle) against ours with
    ``lease_order = "shuffle"``, 5 seeds each: every job completes in every run, the means of the
    5-seed means within 2% (and so within 5%), the median job within 8%."""
    g = _gavel(trace)
    n = _n_jobs(trace)
    ours = [_ours(trace, policy, "shuffle", seed) for seed in SEEDS]
    for s, o in zip(SEEDS, ours, strict=True):
        assert o.index.tolist() == g.index.tolist() == list(range(n))
        G = g[f"{gavel_policy}_seed{s}"].to_numpy()
        assert float(np.median(np.abs(np.log(o.to_numpy() / G)))) <= 0.08
    g_mean = float(np.mean([g[f"{gavel_policy}_seed{s}"].mean() for s in SEEDS]))
    o_mean = float(np.mean([o.mean() for o in ours]))
    assert o_mean / g_mean == pytest.approx(1.0, abs=0.02)


def test_the_stored_gavel_means_are_gavels_printed_means() -> None:
    """The stored per-job JCTs reproduce the means Gavel printed (README table), to its 3 decimals."""
    printed = {
        ("minimize_makespan", "max_min_fairness_perf"): 55093.912,
        ("minimize_makespan", "max_sum_throughput_perf"): 58145.339,
        ("minimize_makespan", "max_min_fairness_seed0"): 59944.208,
        ("max_min_fairness", "max_min_fairness_perf"): 30405.755,
        ("max_min_fairness", "max_sum_throughput_perf"): 33639.413,
        ("max_min_fairness", "max_min_fairness_seed0"): 27808.013,
        ("minimize_makespan", "fifo_perf"): 61207.488,
        ("max_min_fairness", "fifo_perf"): 35664.283,
        ("max_min_fairness", "isolated_seed4"): 27329.310,
        ("generated_multigpu", "max_sum_throughput_perf"): 109926.059,
        ("generated_multigpu", "fifo_perf"): 222337.165,
        ("generated_multigpu", "max_min_fairness_seed3"): 120489.411,
    }
    for (trace, col), mean in printed.items():
        assert _gavel(trace)[col].mean() == pytest.approx(mean, abs=2e-3)
