"""Our trace engine against Gavel's own simulator on two of Gavel's traces with multi-GPU jobs
(``scheduler/traces/physical_cluster/{minimize_makespan,max_min_fairness}.trace``; stored in
``tests/data/gavel_physical_*.trace``), 8 + 8 + 8 GPUs, 360 s rounds, one tenant per job.

Gavel's per-job JCTs (unmodified Gavel, ECOS) are stored in
``tests/data/gavel_sim_jcts_physical_*_888.csv`` (how they were made:
``tests/data/gavel_physical.README.md``); the comparison is in ``docs/gavel_comparison.md``.

Checks, per trace:

* every job of the trace completes in every run (the same job ids as Gavel's);
* mean JCT within 5% of Gavel's for ``gavel-max-min-perf`` / ``max_min_fairness_perf``,
  ``gavel-max-sum-throughput`` / ``max_sum_throughput_perf``, ``gavel-fifo`` / ``fifo_perf``, and
  with ``lease_order = "shuffle"`` ``maxmin`` / ``max_min_fairness`` and ``gavel-isolated`` /
  ``isolated`` (these two as the mean over 5 seeds on both sides: Gavel's seeds 0-4, our
  replication seeds 0-4);
* the two agnostic policies with the shuffle within 2% of Gavel (5-seed means): the sd of the
  per-seed means is 0.5% (Gavel) and 1.0% (ours) of the mean on ``max_min_fairness.trace``, so the
  difference of the two 5-seed means has an sd of about 0.5% and 2% is about 4 sd. Without the
  shuffle (``lease_order = "fastest"``) they are 3.5% and 3.1% below Gavel on
  ``max_min_fairness.trace`` (measured), so this bound catches it;
* per-job median |ln(JCT ours / JCT Gavel)| <= 0.08 (measured 0.016-0.060 per run).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scenarios.loader import parse_scenario

DATA = Path(__file__).parent / "data"
TRACES = ("minimize_makespan", "max_min_fairness")
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
        "workload": {"trace": str(DATA / f"gavel_physical_{trace}.trace"), "tenancy": "job"},
    }
    model = parse_scenario(data, "gavel-physical").build_model(policy, "truthful", seed)
    model.run()
    assert not model.cap_reached
    c = model.completions()
    return pd.Series(c["jct_s"].to_numpy(), index=c["job_id"].astype(int)).sort_index()


def _gavel(trace: str) -> pd.DataFrame:
    return pd.read_csv(DATA / f"gavel_sim_jcts_physical_{trace}_888.csv", index_col="job_id").sort_index()


def _n_jobs(trace: str) -> int:
    return sum(1 for line in (DATA / f"gavel_physical_{trace}.trace").read_text().splitlines() if line.strip())


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
    assert float(np.median(np.abs(np.log(ours.to_numpy() / g.to_numpy())))) <= 0.08


@pytest.mark.parametrize("trace", TRACES)
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
    }
    for (trace, col), mean in printed.items():
        assert _gavel(trace)[col].mean() == pytest.approx(mean, abs=2e-3)
