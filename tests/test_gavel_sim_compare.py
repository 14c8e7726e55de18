"""Our trace engine against Gavel's own simulator on the same input (docs/gavel_comparison.md).

Gavel cannot run in CI, so its per-job JCTs are stored in ``tests/data/gavel_sim_jcts_*.csv``
(how they were made: ``tests/data/gavel_sim_jcts.README.md``). Two kinds of check:

* **exact**: Gavel's simulator with every documented modelling difference switched to our
  semantics (a local, uncommitted patch) and HiGHS's dual simplex as its LP solver, on 4 V100s:
  every one of the 100 JCTs must equal ours to Gavel's printed precision. The per-job max-min LP
  has many optimal points (capacity left over once the minimum ratio is reached can go anywhere),
  so this check solves the same per-job program with the same simplex (the engine's default solves
  identical jobs once with equal time fractions, ``NATIVE_OPTIONS``, and gives tied rows their
  symmetric point, ``TIE_BREAK``: other optimal points, both turned off here). Any change to the
  round mechanics (priorities, deficits, ties, resets, exact completions, arrivals) breaks it.
* **tolerance** (slow): unmodified Gavel (ECOS) on 4 + 4 + 4 GPUs, 200 jobs, three policies. The
  bounds come from measured effects (docs/gavel_comparison.md): swapping only Gavel's LP solver
  (ECOS -> HiGHS/SCS: another point of the same non-unique LP optimum) moves Gavel's own per-job
  JCTs by a median |log ratio| of up to 0.020, its mean by up to 0.7% and its JCT quantiles by up to
  8.7%; Gavel's per-round GPU-type shuffle (max_min_fairness) moves the mean by 1.8%. Our bounds are
  about twice that: mean within 3%, median |log ratio| <= 0.04, quantiles within 15%. A change of the
  round semantics fails them (measured: reallocation interval 0 s -> median 0.147; 300 s rounds ->
  0.056; 720 s rounds -> 0.20).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.scenarios.loader import load_scenario

DATA = Path(__file__).parent / "data"


def _ours(policy: str, n: int, v100: int, p100: int, k80: int, **cluster: float) -> pd.Series:
    """JCTs (s) by job id of the first ``n`` jobs of Gavel's trace on our engine."""
    types = [(t, c) for t, c in (("k80", k80), ("p100", p100), ("v100", v100)) if c > 0]
    scen = load_scenario("gavel_trace")
    assert scen.cluster.round_seconds == 360.0 and scen.cluster.reallocation_interval_s == 1920.0  # Gavel's
    cl = dataclasses.replace(
        scen.cluster, gpu_types=tuple(t for t, _ in types), gpus=tuple(c for _, c in types), **cluster
    )
    wl = dataclasses.replace(scen.workload, trace=dataclasses.replace(scen.workload.trace, max_jobs=n))
    scen = dataclasses.replace(scen, policies=(policy,), cluster=cl, workload=wl)
    model = scen.build_model(policy, "truthful", 0)
    model.run()
    c = model.completions()
    return pd.Series(c["jct_s"].to_numpy(), index=c["job_id"].astype(int)).sort_index()


def _gavel(name: str) -> pd.Series:
    g = pd.read_csv(DATA / name)
    return pd.Series(g["jct_s"].to_numpy(), index=g["job_id"]).sort_index()


def test_engine_reproduces_aligned_gavel_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 jobs, 4 V100s, max-min perf: Gavel (patched to our documented semantics, HiGHS) and we
    agree on every JCT to Gavel's printed 3 decimals, on the per-job program (no aggregation)."""
    import marketsim.agents.trace_rounds as tr

    monkeypatch.setattr(tr, "NATIVE_OPTIONS", {})
    monkeypatch.setattr(tr, "TIE_BREAK", False)  # tied rows in Gavel's (HiGHS) row order, as the patched Gavel
    g = _gavel("gavel_sim_jcts_max_min_fairness_perf_100_aligned.csv")
    ours = _ours("gavel-max-min-perf", 100, 4, 0, 0)
    assert ours.index.tolist() == g.index.tolist() == list(range(100))
    np.testing.assert_allclose(ours.to_numpy(), g.to_numpy(), rtol=0, atol=1e-3)


def test_exact_check_discriminates() -> None:
    """The same run with policy re-solves on every job-set change (interval 0 s instead of Gavel's
    1,920 s) is far from the stored JCTs: the exact check above can fail."""
    g = _gavel("gavel_sim_jcts_max_min_fairness_perf_100_aligned.csv")
    ours = _ours("gavel-max-min-perf", 100, 4, 0, 0, reallocation_interval_s=0.0)
    assert np.abs(ours.to_numpy() - g.to_numpy()).max() > 1000.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gavel_policy", "policy"),
    [
        ("max_min_fairness_perf", "gavel-max-min-perf"),
        ("max_min_fairness_perf", "gavel"),  # the same LP on speedups (rows rescaled): same optimum set
        ("max_sum_throughput_perf", "gavel-max-sum-throughput"),
        ("max_min_fairness", "maxmin"),
    ],
)
def test_jcts_within_documented_differences_of_gavel(gavel_policy: str, policy: str) -> None:
    """200 jobs on 4 + 4 + 4 GPUs against unmodified Gavel (ECOS): mean JCT, per-job JCTs and the
    JCT distribution within the bounds of the module docstring."""
    g = _gavel(f"gavel_sim_jcts_{gavel_policy}_200.csv")
    ours = _ours(policy, 200, 4, 4, 4)
    assert ours.index.tolist() == g.index.tolist() == list(range(200))
    G, O = g.to_numpy(), ours.to_numpy()
    assert O.mean() / G.mean() == pytest.approx(1.0, abs=0.03)
    assert float(np.median(np.abs(np.log(O / G)))) <= 0.04
    q = [0.1, 0.25, 0.5, 0.75, 0.9]
    assert np.quantile(O, q) / np.quantile(G, q) == pytest.approx(np.ones(5), abs=0.15)


@pytest.mark.slow
def test_maxmin_with_the_shuffle_on_gavels_own_cluster() -> None:
    """300 jobs on 12 + 12 + 12 GPUs (Gavel's cluster for this trace, a light load), Gavel's
    ``max_min_fairness`` (seeds 0-4) against ``maxmin`` with ``lease_order = "shuffle"`` (seeds
    0-4): every job completes; the means of the 5-seed means within 2% (measured 0.995; the
    per-seed means spread by 0.2% sd in both simulators). With the fixed fastest-first order the
    ratio is 0.905 (docs/gavel_comparison.md), so the bound catches a missing shuffle."""
    g = pd.read_csv(DATA / "gavel_sim_jcts_max_min_fairness_300_121212.csv", index_col="job_id").sort_index()
    means = []
    for seed in range(5):
        scen = load_scenario("gavel_trace")
        cl = dataclasses.replace(
            scen.cluster, gpu_types=("k80", "p100", "v100"), gpus=(12, 12, 12), lease_order="shuffle"
        )
        wl = dataclasses.replace(scen.workload, trace=dataclasses.replace(scen.workload.trace, max_jobs=300))
        scen = dataclasses.replace(scen, policies=("maxmin",), cluster=cl, workload=wl)
        model = scen.build_model("maxmin", "truthful", seed)
        model.run()
        c = model.completions()
        assert sorted(c["job_id"].astype(int).tolist()) == g.index.tolist() == list(range(300))
        means.append(float(c["jct_s"].mean()))
    g_mean = float(np.mean([g[f"seed{s}"].mean() for s in range(5)]))
    assert float(np.mean(means)) / g_mean == pytest.approx(1.0, abs=0.02)
