"""Fair-share reproduction studies (``marketsim run oef``): schema, cells, headlines, report."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from marketsim.analysis.engine.headlines import HEADLINE_VERDICTS
from marketsim.analysis.engine.studies import load_study, plan_cells, run_study, study_family, study_names
from marketsim.analysis.frontends.cli import main
from marketsim.analysis.frontends.study_report import write_study
from marketsim.market.errors import InputError
from marketsim.market.testing.equality import same

# Two GPU types, two tenants: H2 of the OEF spec (W = [[1, 2], [1, 5]], m = (1, 1)).
CSV = "job_type,gpu_type,num_gpus,throughput_steps_per_s\na,slow,1,1.0\na,fast,1,2.0\nb,slow,1,1.0\nb,fast,1,5.0\n"

H2 = """
kind = "study"
name = "tiny_h2"
paper = "oef"
mechanisms = ["oef-noncoop", "maxmin"]
replications = 2
seed = 3

[scenario]
rounds = 2
[scenario.cluster]
gpu_types = ["slow", "fast"]
gpus = [1, 1]
gpus_per_host = 1
[scenario.profiles]
file = "w.csv"
jitter = 0.0
[scenario.workload]
tenants = 2
jobs_per_tenant = 1
workers = [1]
workers_probs = [1.0]
backlogged = true
[[scenario.tenant]]
index = 0
job_types = ["a"]
[[scenario.tenant]]
index = 1
job_types = ["b"]

[[panel]]
x = "kappa"
values = [0.1]

[[headline]]
text = "hand: non-cooperative OEF's estimated throughput over max-min's"
panel = 0
metric = "total_est"
mechanism = "oef-noncoop"
baseline = "maxmin"
paper = 0.952381
"""

TINY = """
kind = "study"
name = "tiny_oef"
paper = "oef"
mechanisms = ["oef-coop", "oef-noncoop", "maxmin"]
replications = 2
seed = 5

[scenario]
rounds = 3
[scenario.cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [2, 2, 2]
gpus_per_host = 2
[scenario.profiles]
generator = "assumed"
jitter = 0.03
[scenario.workload]
tenants = 3
jobs_per_tenant = 2
backlogged = true
[[scenario.tenant]]
index = 0
job_types = ["LSTM"]
[[scenario.tenant]]
index = 1
job_types = ["VGG"]
[[scenario.tenant]]
index = 2
job_types = ["ResNet"]

[[panel]]
x = "variant.inflate.factor"
values = [1.3, 2.0]
common_workload = true
variants = ["inflate"]
mechanisms = ["oef-noncoop", "maxmin"]

[[panel]]
x = "kappa"
values = [0.0, 0.2]
common_workload = true
variants = []

[[variant]]
name = "inflate"
tenants = [0]
strategy = "fast"
factor = 1.3

[[headline]]
text = "cooperative OEF's estimated throughput is at least max-min's"
panel = 1
metric = "total_est"
mechanism = "oef-coop"
baseline = "maxmin"
paper = "higher"

[[headline]]
text = "CONTRADICTED: cooperative OEF halves max-min's estimated throughput"
panel = 1
x = 0.2
metric = "total_est"
mechanism = "oef-coop"
baseline = "maxmin"
paper = 0.5

[[headline]]
text = "the liar under max-min keeps exactly its truthful throughput"
panel = 0
x = 1.3
variant = "inflate"
metric = "liar_est"
baseline_metric = "liar_est_truthful"
mechanism = "maxmin"
paper = 1.0
tolerance = 0.0
"""


def _write(tmp_path: Path, text: str, name: str) -> Path:
    (tmp_path / "w.csv").write_text(CSV, encoding="utf-8")
    p = tmp_path / f"{name}.toml"
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_headline_figure_matches_the_hand_calculation(tmp_path: Path) -> None:
    """H2: non-coop OEF gives both tenants 15/7 (total 30/7); max-min's halves give 1.5 + 3 = 4.5,
    so the headline's ratio is (30/7) / 4.5 = 20/21 in every cell (no spread, so the CI is a point)."""
    study = load_study(_write(tmp_path, H2, "tiny_h2"))
    assert study.family == "fair-share"
    res = run_study(study, progress=False)
    assert not res.errors, res.errors
    f = res.frame.set_index("mechanism")
    assert f.loc["oef-noncoop", "total_est"].tolist() == pytest.approx([30 / 7] * 2, rel=1e-6)
    assert f.loc["maxmin", "total_est"].tolist() == pytest.approx([4.5] * 2, rel=1e-9)
    assert f.loc["oef-noncoop", "est_t0"].tolist() == pytest.approx([15 / 7] * 2, rel=1e-6)
    assert f.loc["maxmin", "est_t1"].tolist() == pytest.approx([3.0] * 2, rel=1e-9)
    out = write_study(res, tmp_path / "out")
    table = pd.read_csv(out["headlines"])
    assert table.loc[0, "ours"] == pytest.approx(20 / 21, rel=1e-6)
    assert table.loc[0, "low"] == pytest.approx(20 / 21, rel=1e-6) and table.loc[0, "high"] == pytest.approx(20 / 21)
    assert table.loc[0, "verdict"] == "reproduced"


def test_tiny_fair_share_study_end_to_end_with_a_contradicted_headline(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, TINY, "tiny_oef")
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    assert "tiny_oef: 8 cell(s)" in capsys.readouterr().out
    frame = pd.read_parquet(out / "results.parquet")
    # panel 0 runs only its two mechanisms, truthful and lying; panel 1 all three, truthful only
    p0, p1 = frame[frame["panel"] == 0], frame[frame["panel"] == 1]
    assert set(p0["mechanism"]) == {"oef-noncoop", "maxmin"} and set(p0["variant"]) == {"truthful", "inflate"}
    assert set(p1["mechanism"]) == {"oef-coop", "oef-noncoop", "maxmin"} and set(p1["variant"]) == {"truthful"}
    # the paired twin is the truthful run's value for the same tenant (tenant 0)
    lie = p0[p0["variant"] == "inflate"].set_index(["x", "replication", "mechanism"])
    tru = p0[p0["variant"] == "truthful"].set_index(["x", "replication", "mechanism"])
    assert (lie["liar_act_truthful"] - tru["act_t0"].reindex(lie.index)).abs().max() < 1e-9
    assert (lie["total_act_truthful"] - tru["total_act"].reindex(lie.index)).abs().max() < 1e-12
    # a common-workload panel over the lie factor: the truthful rows are identical at every x
    t = tru.reset_index()
    a, b = (t[t["x"] == v].sort_values(["replication", "mechanism"])["total_act"].to_numpy() for v in (1.3, 2.0))
    assert a.tolist() == b.tolist()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| id | paper's headline | ours (95% CI) | per cell: min / median / max" in report
    table = pd.read_csv(out / "headlines.csv")
    assert len(table) == 3 and set(table["verdict"]) <= set(HEADLINE_VERDICTS)
    by = table.set_index("headline")["verdict"]
    assert by["CONTRADICTED: cooperative OEF halves max-min's estimated throughput"] == "not reproduced"
    assert by["cooperative OEF's estimated throughput is at least max-min's"] == "reproduced"
    assert by["the liar under max-min keeps exactly its truthful throughput"] == "reproduced"
    rows = [line for line in report.splitlines() if "| CONTRADICTED" in line and "(panel 1," in line]
    assert len(rows) == 1 and "**not reproduced**" in rows[0] and "opposite direction" in rows[0]
    # the pinned headlines are re-read at every value of their panel
    sens = pd.read_csv(out / "headlines_sensitivity.csv")
    assert sorted(sens["x"].tolist()) == [0.0, 0.2, 1.3, 2.0]
    assert "### Sensitivity" in report


def test_fair_share_study_is_deterministic_across_executors(tmp_path: Path) -> None:
    study = load_study(_write(tmp_path, TINY, "tiny_oef"))
    a = run_study(study, replications=1, progress=False)
    b = run_study(study, replications=1, progress=False, executor="process", workers=2)
    cols = [c for c in a.frame.columns if c != "seconds"]
    pd.testing.assert_frame_equal(a.frame[cols], b.frame[cols])


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("[scenario]\nrounds = 3", "[scenario]\nrounds = 3\npolicies = ['maxmin']"), "scenario.policies"),
        (('x = "kappa"', 'x = "variant.nobody.factor"'), "panel[1].x"),
        (('variants = []', 'variants = ["ghost"]'), "panel[1].variants"),
        (("tenants = [0]", "tenants = [7]"), "variant inflate.tenants"),
        (('factor = 1.3', 'factor = -1.0'), "factor"),
        (('strategy = "fast"', 'strategy = "bribe"'), "strategy"),
        (("tenants = 3\n", "tenants = 3\nbogus = 1\n"), "workload.bogus"),
        (('mechanisms = ["oef-noncoop", "maxmin"]', 'mechanisms = ["oef-noncoop", "gavel"]'), "panel[0].mechanisms"),
        (('mechanisms = ["oef-coop", "oef-noncoop", "maxmin"]', 'mechanisms = ["oef-coop", "eris"]'), "mechanisms"),
    ],
)
def test_fair_share_study_validation_names_the_field(tmp_path: Path, edit: tuple[str, str], field: str) -> None:
    text = textwrap.dedent(TINY)
    assert edit[0] in text
    path = _write(tmp_path, text.replace(edit[0], edit[1], 1), "bad")
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        load_study(path)


def test_embedded_oef_study_is_registered_and_well_formed() -> None:
    assert "oef" in study_names("fair-share") and "oef" not in study_names("auction")
    assert study_family("oef") == "fair-share" and study_family("eris") == "auction"
    study = load_study("oef")
    assert study.source.endswith("market/oef/studies/oef.toml")
    assert len(study.headlines) >= 30 and study.replications >= 20
    # every headline is read at ONE value of a panel with the study's 20 seeds (sensitivity panels, with
    # their own fewer seeds, carry no headline)
    for h in study.headlines:
        panel = study.panels[h.panel]
        assert panel.replications is None, h.text
        assert (len(h.x) == 1 and h.x[0] in panel.values) or (not h.x and len(panel.values) == 1), h.text
    assert {p.replications for p in study.panels} == {None, 5, 3}
    cells = plan_cells(study)
    jct = next(i for i, p in enumerate(study.panels) if p.label.startswith("§6.3.2"))
    assert {c.mechanisms for c in cells if c.panel == jct} == {("oef-noncoop", "oef-coop", "gavel", "gandiva-fair")}
    assert study.panels[jct].values == (259200.0,)  # the "three-day-long" reading decides
    assert math.isclose(study.panels[0].values[0], 1.3)
    paper = load_study("oef_paper")  # the paper-scale twin keeps the same panels and headlines
    # NaN-aware: a headline that states only a direction has paper = NaN, and two loads' NaNs are two
    # objects (tuple equality of dataclasses would compare them by identity, then by ==)
    assert same(paper.headlines, study.headlines) and paper.replications == 20
    assert [p.values for p in paper.panels] == [p.values for p in study.panels]
    assert all(p.replications is None for p in paper.panels)


def test_gavel_duration_rule_draws_gavels_generator() -> None:
    """``duration_rule = "gavel"``: 10^U(1.5, 3) minutes w.p. 0.8 else 10^U(3, 4), on the job's fastest
    GPU type, so work (slowest-GPU seconds, one worker) / largest speedup lies in [60·10^1.5, 60·10^4]
    and about 80% of the jobs are below 60·10^3."""
    import numpy as np

    from marketsim.scenarios.loader import parse_scenario

    doc = {
        "cluster": {"gpu_types": ["k80", "p100", "v100"], "gpus": [4, 4, 4]},
        "profiles": {"file": str(Path(__file__).parents[1] / "market/data/gavel_throughputs.csv"), "jitter": 0.0},
        "workload": {"tenants": 2000, "jobs_per_tenant": 1, "workers": [1], "workers_probs": [1.0],
                     "duration_rule": "gavel", "arrival_window_s": 1000.0},
    }  # fmt: skip
    cfg = parse_scenario(doc, "g").instantiate("gavel", "truthful", np.random.default_rng(0))
    v100 = np.array([j.work / (max(t.speedups[j.job_type]) / t.speedups[j.job_type][0]) for t in cfg.tenants
                     for j in t.jobs])  # fmt: skip
    assert v100.min() >= 60 * 10**1.5 - 1e-6 and v100.max() <= 60 * 10**4 + 1e-6
    assert abs((v100 < 60 * 10**3).mean() - 0.8) < 0.03  # 3 sigma of a binomial(2000, 0.8) share is 0.027
    doc["workload"]["duration_rule"] = "weibull"
    with pytest.raises(InputError, match="workload.duration_rule"):
        parse_scenario(doc, "g")


def test_embedded_gavel_jct_study_loads() -> None:
    study = load_study("gavel_jct")
    assert study.family == "fair-share" and len(study.headlines) == 3
    assert study.mechanisms == ("maxmin", "gavel", "gavel-max-min-perf", "gavel-max-sum-throughput", "oef-noncoop",
                                "oef-coop", "gandiva-fair")  # fmt: skip
    assert study.variants[0].fraction == pytest.approx(0.2)
    # both panels run on the trace engine (Gavel's lease rounds) with Gavel-generated workloads
    from marketsim.analysis.engine.fairshare_study import panel_scenario

    for pi, x in ((0, 0.5), (1, 1.5)):
        scen = panel_scenario(study, pi, x)
        ts = scen.workload.trace
        assert ts is not None and ts.generator == "gavel" and ts.jobs == 60 and scen.cluster.round_seconds == 360.0
    assert panel_scenario(study, 0, 0.5).workload.trace.jobs_per_hour == 0.5
    assert panel_scenario(study, 1, 1.5).workload.trace.jobs_per_hour == 2.0


TRACE_LIE = """
kind = "study"
name = "trace_lie"
paper = "oef"
mechanisms = ["gavel-max-sum-throughput", "maxmin"]
replications = 2
seed = 1

[scenario.cluster]
gpu_types = ["k80", "v100"]
gpus = [1, 1]
round_seconds = 360.0
[scenario.profiles]
file = "lie.csv"
[scenario.workload]
trace = "lie.trace"

[[panel]]
x = "variant.liar.factor"
values = [1.5]
variants = ["liar"]

[[variant]]
name = "liar"
tenants = [0]
strategy = "fast"
factor = 1.5
"""


def test_trace_study_lying_paired_jcts_by_hand(tmp_path: Path) -> None:
    """The two-job trace of tests/test_traces.py (test_a_liar_on_a_trace_changes_the_lease_order_
    hand_computed) as a study: under Gavel's max-sum-throughput job 0 lying cuts its JCT from 540 s
    to 360 s (liar_gain 0.05 h) and lengthens job 1's from 360 s to 576 s; under max-min the
    reports are unused (a gain of exactly 0). Paired differences of the report use the twins."""
    from marketsim.analysis.engine.studies import paired_differences

    (tmp_path / "lie.csv").write_text("job_type,gpu_type,num_gpus,throughput_steps_per_s\nA,k80,1,1.0\n"
                                      "A,v100,1,2.0\nB,k80,1,1.0\nB,v100,1,2.5\n")  # fmt: skip
    rows = [[jt, "x", "d", "--s", "0", steps, "1", "1", "-1", "0"] for jt, steps in (("A", "720"), ("B", "900"))]
    (tmp_path / "lie.trace").write_text("".join("\t".join(r) + "\n" for r in rows))
    study = load_study(_write(tmp_path, TRACE_LIE, "trace_lie"))
    res = run_study(study, progress=False)
    assert not res.errors, res.errors
    f = res.frame.set_index(["mechanism", "variant"])
    g = f.loc[("gavel-max-sum-throughput", "liar")]
    assert g["liar_jct_h"].tolist() == pytest.approx([0.1, 0.1])
    assert g["liar_jct_h_truthful"].tolist() == pytest.approx([0.15, 0.15])
    assert g["honest_jct_h"].tolist() == pytest.approx([0.16, 0.16])
    assert g["honest_jct_h_truthful"].tolist() == pytest.approx([0.1, 0.1])
    assert g["liar_gain"].tolist() == pytest.approx([0.05, 0.05])
    # job 0's 720 slowest-GPU-equivalent seconds of work while it is active: 540 s truthful (records
    # [0, 360] and [360, 540]), 360 s lying (one record [0, 360]): throughput 4/3 -> 2
    assert g["liar_act_active"].tolist() == pytest.approx([2.0, 2.0])
    assert g["liar_act_active_truthful"].tolist() == pytest.approx([4 / 3, 4 / 3])
    assert f.loc[("gavel-max-sum-throughput", "truthful"), "mean_jct_h"].tolist() == pytest.approx([0.125, 0.125])
    m = f.loc[("maxmin", "liar")]
    assert (m["liar_gain"] == 0).all() and (m["liar_jct_h"] == m["liar_jct_h_truthful"]).all()
    assert (m["liar_act_active"] == m["liar_act_active_truthful"]).all()
    again = run_study(study, progress=False, executor="process", workers=2)  # same numbers with every executor
    cols = [c for c in res.frame.columns if c != "seconds"]
    pd.testing.assert_frame_equal(res.frame[cols], again.frame[cols])
    pairs = paired_differences(res.frame, ("liar_jct_h", "honest_jct_h")).set_index(["mechanism", "metric"])
    assert pairs.loc[("gavel-max-sum-throughput", "liar_jct_h"), "mean"] == pytest.approx(-0.05)
    assert pairs.loc[("gavel-max-sum-throughput", "honest_jct_h"), "mean"] == pytest.approx(0.06)
    both = paired_differences(res.frame, ("liar_act_active", "liar_jct_h")).set_index(["mechanism", "metric"])
    assert both.loc[("gavel-max-sum-throughput", "liar_act_active"), "mean"] == pytest.approx(2 / 3)
    assert both.loc[("gavel-max-sum-throughput", "liar_act_active"), "paid"] == 1.0  # throughput up ...
    assert both.loc[("gavel-max-sum-throughput", "liar_jct_h"), "paid"] == 1.0  # ... and JCT down: lying paid
    assert both.loc[("maxmin", "liar_jct_h"), "paid"] == 0.0
    # every strategy runs on a trace (marketsim.agents.trace_tenants): job 0 (true row [1, 2]) reporting the
    # speedup vector [1, 3] is the policy row [1, 3] = the same lie as "fast" x 1.5, the same JCTs
    rep = TRACE_LIE.replace('strategy = "fast"\nfactor = 1.5', 'strategy = "report"\nvector = [1.0, 3.0]')
    rep = rep.replace('x = "variant.liar.factor"\nvalues = [1.5]', 'x = "cluster.round_seconds"\nvalues = [360.0]')
    r2 = run_study(load_study(_write(tmp_path, rep, "rep")), progress=False).frame.set_index(["mechanism", "variant"])
    assert r2.loc[("gavel-max-sum-throughput", "liar"), "liar_jct_h"].tolist() == pytest.approx([0.1, 0.1])


# -- §6 reproduction machinery: realisations, per-panel seeds, S4's added job type, §6.2 metrics -----

S6 = """
kind = "study"
name = "tiny_s6"
paper = "oef"
mechanisms = ["oef-coop", "oef-noncoop", "gavel", "gandiva-fair", "maxmin"]
replications = 3
seed = 11

[scenario]
rounds = 6
[scenario.cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]
gpus_per_host = 4
[scenario.profiles]
generator = "assumed"
jitter = 0.0
[scenario.workload]
tenants = 4
jobs_per_tenant = 3
backlogged = true
[[scenario.tenant]]
index = 0
job_types = ["VGG"]
[[scenario.tenant]]
index = 1
job_types = ["ResNet"]
[[scenario.tenant]]
index = 2
job_types = ["Transformer"]
[[scenario.tenant]]
index = 3
job_types = ["LSTM"]

[[panel]]
x = "kappa"
values = [0.1]
realisations = ["own", "oef-rounding"]
variants = []

[[panel]]
x = "kappa"
values = [0.1]
replications = 2
variants = []
mechanisms = ["oef-noncoop"]
[[panel.scenario.tenant]]
index = 0
job_types = ["LSTM"]
add_type = { job_type = "VGG", at_s = 900.0, jobs = 2 }

[[headline]]
text = "gavel with OEF's rounding"
panel = 0
metric = "total_act"
mechanism = "oef-coop"
baseline = "gavel"
paper = 1.0
realisation = "oef-rounding"
"""


def test_realisations_per_panel_seeds_added_type_and_section6_metrics(tmp_path: Path) -> None:
    import numpy as np

    from marketsim.agents.model import MarketModel
    from marketsim.analysis.engine.fairshare_study import panel_scenario, summarise_run
    from marketsim.analysis.engine.headlines import evaluate_headline

    study = load_study(_write(tmp_path, S6, "tiny_s6"))
    cells = plan_cells(study)
    assert [c.panel for c in cells].count(0) == 3 and [c.panel for c in cells].count(1) == 2  # own seeds per panel
    assert len(plan_cells(study, replications=1)) == 2  # the command line's --reps overrides every panel
    res = run_study(study, progress=False)
    f = res.frame
    p0 = f[f["panel"] == 0]
    runs = p0.groupby(["mechanism", "realisation", "realisation_mode"]).size()
    assert runs[("gavel", "gavel-lease", "own")] == 3 and runs[("gavel", "oef-rounding", "alternative")] == 3
    assert runs[("gandiva-fair", "gandiva-lottery", "own")] == 3
    assert ("oef-coop", "oef-rounding", "own") in runs and len(runs) == 7  # no duplicate run for OEF / max-min
    gav = p0[p0["mechanism"] == "gavel"].pivot_table(index="replication", columns="realisation", values="total_act")
    assert not np.allclose(gav["gavel-lease"], gav["oef-rounding"])  # the lease realiser really ran
    # Fig. 5(a): per-user ratio over max-min, and U4 (LSTM) gains the most under cooperative OEF
    coop = p0[(p0["mechanism"] == "oef-coop") & (p0["realisation_mode"] == "own")]
    assert (coop["min_user_gain_vs_maxmin"] >= 1 - 1e-6).all() and (coop["u3_gains_most"] == 1).all()
    mm = p0[p0["mechanism"] == "maxmin"]
    assert np.allclose(mm["min_user_gain_vs_maxmin"], 1.0)
    # Fig. 6: cooperative OEF is envy-free; E[3,3] / E[3,0] recomputed from the last allocation
    assert (coop["min_envy_ratio"] >= 1 - 1e-6).all()
    scen = panel_scenario(study, 0, 0.1)
    ss = np.random.SeedSequence(study.seed, spawn_key=(0, 0, 0)).spawn(2)[0]
    work_ss, model_ss = np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key).spawn(2)
    model = MarketModel(scen.instantiate("oef-coop", "truthful", np.random.default_rng(work_ss)),
                        rng=np.random.default_rng(model_ss))  # fmt: skip
    model.run()
    row, _ = summarise_run(model)
    X = np.asarray(model.auctioneer.allocation.X)
    W = np.array([model.config.tenants[i].speedups[jt] for i, (_, jt) in enumerate(model.auctioneer.classes)])
    assert row["envy_own_u3"] == pytest.approx(W[3] @ X[3]) and row["envy_other_u3_u0"] == pytest.approx(W[3] @ X[0])
    assert row["envy_own_u3"] > row["envy_other_u3_u0"]  # the LSTM user would lose with the VGG user's GPUs
    first = coop[coop["replication"] == 0].iloc[0]
    assert first["envy_own_u3"] == pytest.approx(row["envy_own_u3"])
    # §6.2.3 / spec S4: User-1 adds VGG at 900 s; non-cooperative OEF halves its weight per class
    p1 = f[f["panel"] == 1]
    assert len(p1) == 2
    assert np.allclose(p1["u0_over_others_before"], 1.0, atol=1e-6)
    assert np.allclose(p1["u0_type_ratio"], 1.0, atol=1e-6) and np.allclose(p1["u0_class_over_others"], 0.5, atol=1e-6)
    s4 = panel_scenario(study, 1, 0.1).instantiate("oef-noncoop", "truthful", np.random.default_rng(0))
    jobs = s4.tenants[0].jobs
    assert [(j.job_type, j.arrival) for j in jobs] == [("LSTM", 0.0)] * 3 + [("VGG", 900.0)] * 2
    # the headline with realisation = "oef-rounding" pairs cooperative OEF with Gavel's OEF-rounded run
    h = study.headlines[0]
    r = evaluate_headline(f, h)
    g = p0[(p0["mechanism"] == "gavel") & (p0["realisation"] == "oef-rounding")].set_index("replication")["total_act"]
    c = coop.set_index("replication")["total_act"]
    assert r["n"] == 3 and r["ours"] == pytest.approx(c.mean() / g.mean())  # ratio of the means
    # §6.2.3 on Fig. 5(b)'s measure, ACTUAL throughput: tenant 0's mean over the others' mean, before and
    # from the added type's arrival (900 s), recomputed from the run's per-round records
    assert "u0_over_others_before_act" not in row  # no job type added in panel 0
    ss1 = np.random.SeedSequence(study.seed, spawn_key=(1, 0, 0)).spawn(2)[0]
    w1, m1 = np.random.SeedSequence(ss1.entropy, spawn_key=ss1.spawn_key).spawn(2)
    run1 = MarketModel(panel_scenario(study, 1, 0.1).instantiate("oef-noncoop", "truthful", np.random.default_rng(w1)),
                       rng=np.random.default_rng(m1))  # fmt: skip
    run1.run()
    tidy = run1.tidy()
    act = tidy[(tidy["measure"] == "act") & (tidy["tenant"] != "")]
    first = act["round"] * run1.round_seconds < 900 - 1e-9
    ids = [t.tenant_id for t in run1.config.tenants]
    for part, name in ((act[first], "u0_over_others_before_act"), (act[~first], "u0_over_others_after_act")):
        m = part.groupby("tenant")["value"].mean()
        expect = m[ids[0]] / np.mean([m[t] for t in ids[1:]])
        assert p1.iloc[0][name] == pytest.approx(expect, rel=1e-9), name
    assert r["realisation"] == "oef-rounding"


def test_add_type_and_realisations_reject_bad_input(tmp_path: Path) -> None:
    bad = S6.replace('job_type = "VGG", at_s = 900.0', 'job_type = "Nope", at_s = 900.0')
    with pytest.raises(InputError, match="add_type|job_types"):
        load_study(_write(tmp_path, bad, "bad1"))
    bad = S6.replace('realisations = ["own", "oef-rounding"]', 'realisations = ["own", "lottery"]')
    with pytest.raises(InputError, match="realisations"):
        load_study(_write(tmp_path, bad, "bad2"))
    bad = S6.replace("replications = 2\n", "replications = 0\n")
    with pytest.raises(InputError, match="replications"):
        load_study(_write(tmp_path, bad, "bad3"))
