"""Every per-run figure is a time integral or a per-job figure (issue #31 item 3): records of unequal
length (a trace record may merge hundreds of rounds) are weighted by the seconds they cover, never
averaged as records. Hand cases with records of 10 s and 1000 s, and end-to-end checks on small
trace runs against figures computed from the completions and the leases."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.analysis.engine.runner import COLUMNS, run_experiment
from marketsim.analysis.engine.stats import (
    cluster_integrals,
    gain_summary,
    jct_summary,
    paired_gains,
    policy_summary,
    record_lengths,
    throughput_while_active,
)
from marketsim.market.errors import InputError
from marketsim.scenarios.loader import parse_scenario

DATA = Path(__file__).resolve().parents[1] / "market" / "data"


def _frame(records: dict[tuple[str, str, int], list[dict[str, dict[str, float]]]]) -> pd.DataFrame:
    """A tidy runner frame by hand: per run, one dict per record: ``{"": cluster measures, tenant:
    tenant measures, ...}`` (``jct_s`` values are lists of per-job JCTs)."""
    rows = []
    for (policy, variant, rep), recs in records.items():
        for r, rec in enumerate(recs):
            for tenant, measures in rec.items():
                for m, v in measures.items():
                    for x in v if isinstance(v, list) else [v]:
                        rows.append(("r", "s", policy, variant, rep, r, tenant, m, float(x)))
    return pd.DataFrame(rows, columns=COLUMNS)


def _rec(length: float | None, gpus: float, util: float, act: float, est: float) -> dict[str, float]:
    out = {"available_gpus": gpus, "utilisation": util, "total_act": act, "total_est": est, "jobs_completed": 0.0}
    if length is not None:
        out["round_s"] = length
    return out


#: one run of two records, 10 s and 1000 s, on 4 GPUs: 4 GPUs busy for 10 s, then 1 GPU for 1000 s
HAND = {
    ("p", "truthful", 0): [
        {"": _rec(10.0, 4, 1.0, 4.0, 4.0), "a": {"act": 3.0, "runnable_jobs": 1},
         "b": {"act": 1.0, "runnable_jobs": 1}},
        {"": _rec(1000.0, 4, 0.25, 1.0, 2.0), "b": {"act": 1.0, "runnable_jobs": 1, "jct_s": [1010.0]},
         "a": {"act": 0.0, "runnable_jobs": 0, "jct_s": [5.0, 15.0]}},
    ]
}  # fmt: skip


def test_hand_case_integrals_weight_records_by_their_seconds() -> None:
    f = _frame(HAND)
    lengths = record_lengths(f)
    assert lengths.tolist() == [10.0, 1000.0]
    row = cluster_integrals(f).iloc[0]
    # GPU-seconds: used 4 x 10 + 1 x 1000 = 1040 of 4 x 1010 = 4040 available
    assert row["seconds"] == 1010.0
    assert row["gpu_seconds_used"] == pytest.approx(1040.0)
    assert row["gpu_seconds_available"] == pytest.approx(4040.0)
    assert row["utilisation"] == pytest.approx(1040.0 / 4040.0)  # 0.257, the plain mean of records is 0.625
    assert row["work_act"] == pytest.approx(4 * 10 + 1 * 1000) and row["total_act"] == pytest.approx(1040 / 1010)
    assert row["total_est"] == pytest.approx((4 * 10 + 2 * 1000) / 1010)
    summ = policy_summary(f).iloc[0]
    assert summ["utilisation"] == pytest.approx(1040 / 4040) and summ["total_act"] == pytest.approx(1040 / 1010)
    assert summ["mean_jct_s"] == pytest.approx((5 + 15 + 1010) / 3)
    assert summ["median_jct_s"] == pytest.approx(15.0)
    assert summ["p95_jct_s"] == pytest.approx(15 + 0.9 * (1010 - 15))  # linear interpolation, 3 jobs
    # tenant a is active only in the 10 s record; b in both
    thr = throughput_while_active(f).set_index("tenant")
    assert thr.loc["a", "active_s"] == 10.0 and thr.loc["a", "act"] == pytest.approx(3.0)
    assert thr.loc["b", "active_s"] == 1010.0 and thr.loc["b", "act"] == pytest.approx(1.0)
    both = throughput_while_active(f, ["a", "b"], as_one="ab").iloc[0]
    assert both["active_s"] == 1010.0 and both["act"] == pytest.approx((4 * 10 + 1 * 1000) / 1010)
    jct = jct_summary(f, by_tenant=True).set_index("tenant")
    assert jct.loc["a", "jobs"] == 2 and jct.loc["a", "mean_jct_s"] == 10.0


def test_fixed_rounds_take_the_configured_length_with_the_same_code() -> None:
    """Records without ``round_s`` (fixed rounds) are ``round_seconds`` long; a run of both kinds of
    record uses each record's own length; a missing length is an error naming the field."""
    recs = [{"": _rec(None, 4, 1.0, 4.0, 4.0)}, {"": _rec(None, 2, 0.5, 1.0, 1.0)}]
    f = _frame({("p", "truthful", 0): recs})
    with pytest.raises(InputError, match="round_seconds"):
        cluster_integrals(f)
    row = cluster_integrals(f, round_seconds=300.0).iloc[0]
    assert row["seconds"] == 600.0
    # available GPUs vary (a failed server): 4 x 300 + 2 x 300 GPU-s, 1200 + 300 of them used
    assert row["utilisation"] == pytest.approx(1500 / 1800)  # not the mean of 1.0 and 0.5
    mixed = _frame({("p", "truthful", 0): [{"": _rec(None, 4, 1.0, 4.0, 4.0)}, {"": _rec(100.0, 4, 0.0, 0.0, 0.0)}]})
    assert record_lengths(mixed, 300.0).tolist() == [300.0, 100.0]
    assert cluster_integrals(mixed, 300.0).iloc[0]["utilisation"] == pytest.approx(1200 / 1600)


def test_gain_from_lying_is_time_weighted_and_paired_with_the_jct() -> None:
    """Records of 1000 s and 10 s: the liar's mean over records says lying lost (1.6 < 3.0); over
    time it gained (1.208 > 1.040), and its JCT fell: the report must say it gained."""

    def run(first: tuple[float, float], second: tuple[float, float], jct: float) -> list:
        return [
            {"": _rec(first[0], 4, 1.0, 1.0, 1.0), "d": {"act": first[1], "runnable_jobs": 1}},
            {"": _rec(second[0], 4, 1.0, 1.0, 1.0), "d": {"act": second[1], "runnable_jobs": 1, "jct_s": [jct]}},
        ]

    f = _frame(
        {
            ("p", "truthful", 0): run((1000.0, 1.0), (10.0, 5.0), 1500.0),
            ("p", "lie", 0): run((10.0, 2.0), (1000.0, 1.2), 1200.0),
            ("p", "truthful", 1): run((1000.0, 1.0), (10.0, 5.0), 1500.0),
            ("p", "lie", 1): run((10.0, 2.0), (1000.0, 1.4), 1100.0),
        }
    )
    pairs = paired_gains(f, {"lie": "d"})
    assert pairs["truthful"].tolist() == pytest.approx([1050 / 1010] * 2)
    assert pairs["lying"].tolist() == pytest.approx([1220 / 1010, 1420 / 1010])
    assert pairs["jct_diff_s"].tolist() == [-300.0, -400.0]
    g = gain_summary(pairs).iloc[0]
    assert g["rel_gain"] > 0 and g["jct_rel"] < 0 and g["p_gain"] == 1.0 and g["p_jct_gain"] == 1.0
    assert g["rel_gain"] == pytest.approx(((1220 + 1420) / 2 - 1050) / 1050)
    assert g["jct_rel"] == pytest.approx(-350 / 1500)
    assert g["diff_low"] < g["diff"] < g["diff_high"]


# -- end to end on small trace runs -------------------------------------------------------------------------
def _gavel_scenario(jobs: int, gpus: tuple[int, int, int], policies: list[str], variants: str = "") -> object:
    text = f"""
name = "tw"
policies = {policies!r}
replications = 1
seed = 1
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = {list(gpus)!r}
round_seconds = 360.0
reallocation_interval_s = 1920.0
[workload]
trace = "{DATA / "gavel_trace_seed1.trace"}"
trace_format = "gavel"
tenancy = 4
max_jobs = {jobs}
{variants}"""
    return parse_scenario(tomllib.loads(text), "tw")


def _covered_seconds(arrival: np.ndarray, completion: np.ndarray) -> float:
    """Length of the union of the jobs' [arrival, completion] intervals: the time the trace engine
    simulates (it jumps over the gaps in which no job has arrived and is unfinished)."""
    order = np.argsort(arrival, kind="stable")
    total, start, end = 0.0, None, None
    for a, c in zip(arrival[order], completion[order], strict=True):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, c
        else:
            end = max(end, c)
    return total + (end - start if end is not None else 0.0)


def _utilisation_from_leases(scenario, policy: str) -> tuple[float, pd.DataFrame]:
    """(GPU-seconds used / GPU-seconds available, the run's tidy frame): used from every lease of the
    run (GPUs x the time its job ran on it = steps done / the job's throughput on the leased type),
    available from the completions (all GPUs over the union of the jobs' [arrival, completion])."""
    model = scenario.build_model(policy, "truthful", np.random.SeedSequence(1))
    model.progress = False
    eng = model.auctioneer.trace
    used = 0.0
    while model.running:
        model.step()
        res = model.auctioneer.last_trace
        if res is not None and res.leased.size:
            used += float((eng.s[res.leased] * res.done_steps / eng.T[res.leased, res.leased_type]).sum())
    comp = model.completions()
    assert len(comp) == len(model.config.trace.trace)  # every job finished
    covered = _covered_seconds(comp["arrival_s"].to_numpy(float), comp["completion_s"].to_numpy(float))
    return used / (sum(scenario.cluster.gpus) * covered), model.tidy()


@pytest.mark.parametrize("policy", ["gavel", pytest.param("oef-noncoop", marks=pytest.mark.slow)])
def test_trace_utilisation_is_gpu_seconds_used_over_available(policy: str) -> None:
    sc = _gavel_scenario(40, (2, 2, 2), [policy])
    ref, tidy = _utilisation_from_leases(sc, policy)
    frame = tidy.assign(policy=policy, variant="truthful", replication=0)
    got = float(policy_summary(frame).iloc[0]["utilisation"])
    assert got == pytest.approx(ref, rel=0.01)
    # records of unequal length: the plain mean of the per-record figures is far off
    cl = tidy[tidy["tenant"] == ""].pivot_table(index="round", columns="measure", values="value")
    assert cl["merged_rounds"].max() > 1
    assert abs(cl["utilisation"].mean() - ref) > 0.05


def test_philly_trace_reported_utilisation_matches_the_leases() -> None:
    """The packaged philly_trace scenario (reduced to its first 150 jobs on 12 + 12 + 12 GPUs): the
    utilisation `marketsim run` reports equals GPU-seconds used / available within 1%."""
    from dataclasses import replace

    from marketsim.analysis.frontends.report import render_report
    from marketsim.scenarios.loader import load_scenario

    sc = load_scenario("philly_trace")
    sc = replace(sc, workload=replace(sc.workload, trace=replace(sc.workload.trace, max_jobs=150)),
                 cluster=replace(sc.cluster, gpus=(12, 12, 12)), policies=("gavel",))  # fmt: skip
    ref, tidy = _utilisation_from_leases(sc, "gavel")
    frame = tidy.assign(policy="gavel", variant="truthful", replication=0)
    summ = policy_summary(frame)
    assert float(summ.iloc[0]["utilisation"]) == pytest.approx(ref, rel=0.01)
    meta = {"scenario": "philly", "round_seconds": 360.0, "gpu_types": ["k80", "p100", "v100"], "gpus": [12] * 3}
    text = render_report(meta, frame, {})
    row = next(ln for ln in text.splitlines() if ln.startswith("| gavel | truthful"))
    cols = next(ln for ln in text.splitlines() if ln.startswith("| policy | variant"))
    cell = row.split("|")[[c.strip() for c in cols.split("|")].index("utilisation")]
    assert float(cell) == pytest.approx(ref, abs=0.0015)  # the table's 3 decimals


LIAR = """
[[variant]]
name = "k80_deflate"
tenant = 0
strategy = "scale"
factors = {k80 = 0.5}
"""


def test_trace_liar_table_signs_agree_with_the_raw_data() -> None:
    """40 Gavel-trace jobs on 2 + 2 + 2 GPUs, 4 tenants, tenant 0 deflating its K80 speedups under
    gavel: its JCT worsens and its time-weighted throughput falls, so the gain is negative (a mean
    over records of unequal length said it gained)."""
    from marketsim.analysis.frontends.report import render_report

    sc = _gavel_scenario(40, (2, 2, 2), ["gavel"], LIAR)
    exp = run_experiment(sc, progress=False)
    dev = exp.deviators["k80_deflate"]
    f, comp = exp.frame, exp.completions
    # raw data: the liar's JCTs from the completions, its act x round_s from the records
    raw = {}
    for v in ("truthful", "k80_deflate"):
        run = f[f["variant"] == v]
        cl = run[run["tenant"] == ""].pivot_table(index="round", columns="measure", values="value")
        me = run[run["tenant"] == dev].pivot_table(index="round", columns="measure", values="value")
        length = cl["round_s"]
        on = me["runnable_jobs"].reindex(cl.index).fillna(0) > 0
        work = float((me["act"].reindex(cl.index).fillna(0) * length).sum())
        jct = comp[(comp["variant"] == v) & (comp["tenant"] == dev)]["jct_s"].to_numpy(float)
        plain = float(me["act"].reindex(cl.index).fillna(0).mean())  # the old mean over records
        raw[v] = (work / float(length[on].sum()), float(jct.mean()), plain)
    thr_t, jct_t, plain_t = raw["truthful"]
    thr_l, jct_l, plain_l = raw["k80_deflate"]
    assert jct_l > jct_t and thr_l < thr_t  # lying hurt the liar
    assert plain_l > plain_t  # ... which the mean over records missed
    g = gain_summary(paired_gains(f, exp.deviators, "act", 360.0)).iloc[0]
    assert g["truthful"] == pytest.approx(thr_t) and g["lying"] == pytest.approx(thr_l)
    assert g["jct_truthful_s"] == pytest.approx(jct_t) and g["jct_lying_s"] == pytest.approx(jct_l)
    assert g["rel_gain"] < 0 and g["jct_rel"] > 0 and g["p_gain"] == 0.0 and g["p_jct_gain"] == 0.0
    text = render_report(exp.meta(), f, exp.deviators)
    assert "JCT truthful h" in text and "throughput while active" in text.lower()
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| gavel | k80_deflate | {dev} | "))
    assert f"{g['rel_gain'] * 100:+.1f}" in row and f"{g['jct_rel'] * 100:+.1f}" in row
