"""Headline verdicts of the study reports (analysis/engine/headlines.py): each verdict is reached on a
synthetic frame built to produce it, so none of them can be returned regardless of the data."""

import math

import numpy as np
import pandas as pd
import pytest

from marketsim.analysis.engine.headlines import (
    Headline,
    evaluate_headline,
    evaluate_headlines,
    headline_markdown,
    parse_headline,
)
from marketsim.analysis.engine.studies import Panel, load_study, parse_study, run_study
from marketsim.analysis.frontends.study_report import write_study
from marketsim.market.errors import InputError


def _frame(a_vals, b_vals, *, xs=(10, 20), panel=0, metric="welfare"):
    """Truthful rows of mechanisms A and B on the same cells (x, replication)."""
    rows = []
    per_x = len(a_vals) // len(xs)
    for i, (a, b) in enumerate(zip(a_vals, b_vals, strict=True)):
        x, rep = xs[i // per_x], i % per_x
        for mech, v in (("A", a), ("B", b)):
            rows.append({"panel": panel, "x": float(x), "replication": rep, "variant": "truthful",
                         "mechanism": mech, metric: float(v)})  # fmt: skip
    return pd.DataFrame(rows)


def _h(paper, **kw):
    return Headline(text="A beats B", panel=0, metric="welfare", mechanism="A", paper=paper, baseline="B", **kw)


B = 10 + np.random.default_rng(7).normal(0, 1, 20)


def _noise(seed, scale):
    return np.random.default_rng(seed).normal(0, scale, B.size)


@pytest.mark.parametrize(
    ("factor", "paper", "verdict", "phrase"),
    [
        (1.58, 1.58, "reproduced", "paper's 1.58x"),
        (1.20, 1.58, "direction only", "same direction, effect smaller"),  # 40% of the effect (log scale)
        (1.10, 1.58, "not reproduced", "effect too small"),  # 21% of the effect: below a quarter
        (3.00, 1.58, "direction only", "same direction, effect larger"),
        (0.80, 1.58, "not reproduced", "opposite direction"),
        (1.25, 0.80, "not reproduced", "opposite direction"),
        (0.70, 0.75, "reproduced", "0.75"),
        (1.30, 1.35, "reproduced", "effect within 25%"),  # +30% vs +35%, outside the narrow CI
        (1.11, 1.35, "direction only", "effect smaller"),  # within 25% of 1.35, but +11% vs +35%
        (0.50, 0.83, "direction only", "effect larger"),  # 373% of the effect: within 4x
        (0.20, 0.83, "stronger than the paper", "of the paper's on a log scale"),  # 861%
    ],
)
def test_ratio_verdicts(factor, paper, verdict, phrase):
    a = B * factor * (1 + _noise(11, 0.01))
    r = evaluate_headline(_frame(a, B), _h(paper))
    assert r["verdict"] == verdict, r
    assert phrase in r["reason"]
    assert r["n"] == 20
    assert r["low"] < factor * 1.02 and r["high"] > factor * 0.98  # the CI covers the true ratio
    assert r["ours"] == pytest.approx(a.mean() / B.mean())  # the ratio of the means over the paired cells


def test_no_separation_is_not_reproduced_even_when_the_paper_value_is_inside_the_ci():
    noise = _noise(1, 8)  # huge noise: CI spans 1 and 1.2
    r = evaluate_headline(_frame(B + noise, B), _h(1.2))
    assert r["low"] < 1 < r["high"] and r["low"] <= 1.2 <= r["high"]
    assert r["verdict"] == "not reproduced" and "includes 1" in r["reason"]


def test_negative_baseline_makes_the_ratio_undefined():
    r = evaluate_headline(_frame(-B * 0.5, -B), _h(1.58, note="value scale differs"))
    assert r["verdict"] == "not reproduced"
    assert "ratio undefined" in r["reason"] and "value scale differs" in r["reason"]


def test_level_headline_without_baseline():
    zero = np.zeros(B.size)
    h0 = Headline(text="no gain", panel=0, metric="welfare", mechanism="A", paper=0.0)
    assert evaluate_headline(_frame(zero, B), h0)["verdict"] == "reproduced"
    assert evaluate_headline(_frame(zero + 0.5 + _noise(2, 0.01), B), h0)["verdict"] == "not reproduced"
    h10 = Headline(text="level", panel=0, metric="welfare", mechanism="B", paper=11.0, tolerance=0.05)
    r = evaluate_headline(_frame(zero, B), h10)  # mean of B is about 10: 11 is outside CI and 5%
    assert r["verdict"] == "not reproduced", r


def test_x_filter_cells_and_missing_data():
    a = np.r_[B[:10] * 2.0, B[10:] * 0.5]  # 2x at x=10, 0.5x at x=20
    f = _frame(a, B)
    assert evaluate_headline(f, _h(2.0, x=(10,)))["verdict"] == "reproduced"
    assert evaluate_headline(f, _h(2.0, x=(20,)))["verdict"] == "not reproduced"
    assert evaluate_headline(f, _h(2.0, x=(10,)))["n"] == 10
    empty = evaluate_headline(f[f["mechanism"] == "A"], _h(2.0))
    assert empty["verdict"] == "not reproduced" and empty["reason"].startswith("no cells")
    missing = evaluate_headline(f, Headline(text="t", panel=0, metric="revenue", mechanism="A", paper=1.0))
    assert "not in the results" in missing["reason"]


def test_headline_figures_are_deterministic():
    a = B * 1.3 * (1 + _noise(3, 0.05))
    f = _frame(a, B)
    t1 = evaluate_headlines(f, [_h(1.3)], seed=3)
    t2 = evaluate_headlines(f, [_h(1.3)], seed=3)
    pd.testing.assert_frame_equal(t1, t2)
    md = headline_markdown(t1)
    assert md.startswith("| id | paper's headline | ours (95% CI) |") and "**reproduced**" in md


PANELS = (Panel("jobs", (10, 20)),)


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ({"panel": 0, "metric": "welfare", "mechanism": "A", "paper": 1.0}, "text"),
        ({"text": "t", "panel": 3, "metric": "welfare", "mechanism": "A", "paper": 1.0}, "panel"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "Z", "paper": 1.0}, "mechanism"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "baseline": "A", "paper": 1.0}, "baseline"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "baseline": "B", "paper": -1}, "paper"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "paper": float("nan")}, "paper"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "paper": 1, "x": [30]}, "x"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "paper": 1, "tolerance": -1}, "tolerance"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "paper": 1, "variant": "v"}, "variant"),
        ({"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "paper": 1, "colour": 1}, "colour"),
    ],
)
def test_parse_errors_name_the_field(table, field):
    with pytest.raises(InputError, match=f"h.{field}"):
        parse_headline(table, "h", panels=PANELS, mechanisms=["A", "B"])


def test_control_study_report_ends_with_the_headline_table(tmp_path):
    study = load_study("control_auction")
    assert study.headlines, "every shipped study states its headline numbers"
    doc = {
        "kind": "study", "name": "t", "paper": "control", "mechanisms": ["fixed-price", "pay-your-bid"],
        "replications": 3, "base": {"jobs": 8, "T": 8, "capacity": 2, "price": 1.0},
        "panel": [{"x": "jobs", "values": [6, 8]}],
        "variant": [{"name": "shade", "params": {"value_scale": 0.6}, "fraction": 0.3}],
        "headline": [
            {"text": "equal welfare when truthful", "panel": 0, "metric": "welfare", "mechanism": "pay-your-bid",
             "baseline": "fixed-price", "paper": 1.0},
            {"text": "no gain from shading under a fixed price", "panel": 0, "metric": "liar_gain",
             "mechanism": "fixed-price", "paper": 0.0, "variant": "shade"},
        ],
    }  # fmt: skip
    res = run_study(parse_study(doc, "t"), progress=False)
    paths = write_study(res, tmp_path)
    report = paths["report"].read_text()
    tail = report[report.index("## Headline reproduction") :]
    assert tail.count("\n| ") == 3  # header + 2 headlines, and nothing after the table (no [[unmeasured]])
    table = pd.read_csv(paths["headlines"])
    assert list(table["verdict"])[1] == "reproduced"  # a fixed price: shading never pays
    assert (res.frame.query("variant == 'shade' and mechanism == 'fixed-price'")["liar_gain"] <= 1e-9).all()


def test_equality_headline_fails_when_mechanisms_differ():
    h = _h(1.0, tolerance=0.0)
    assert evaluate_headline(_frame(B, B), h)["verdict"] == "reproduced"
    r = evaluate_headline(_frame(B * 1.2, B), h)
    assert r["verdict"] == "not reproduced" and "outside CI and tolerance" in r["reason"]


def test_shipped_control_study_headlines(tmp_path):
    res = run_study(load_study("control_auction"), progress=False, replications=2)
    table = pd.read_csv(write_study(res, tmp_path)["headlines"])
    assert list(table["verdict"]) == ["reproduced"] * 3, table[["headline", "ours", "reason"]]


def _frame_two(a: list[float], b: list[float]) -> pd.DataFrame:
    rows = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        base = {"panel": 0, "variant": "truthful", "x": 1, "replication": i}
        rows += [{**base, "mechanism": "m", "welfare": x}, {**base, "mechanism": "b", "welfare": y}]
    return pd.DataFrame(rows)


def test_direction_claims_need_separation_and_no_number() -> None:
    from types import SimpleNamespace

    panels = [SimpleNamespace(values=[1])]
    h = parse_headline({"text": "m best", "panel": 0, "metric": "welfare", "mechanism": "m", "baseline": "b",
                        "paper": "higher"}, "h", panels=panels, mechanisms=["m", "b"])  # fmt: skip
    up = evaluate_headline(_frame_two([3.0, 3.1, 2.9, 3.2], [1.0, 1.1, 0.9, 1.0]), h)
    assert up["verdict"] == "reproduced" and up["direction"] == "higher"
    down = evaluate_headline(_frame_two([1.0, 1.1, 0.9, 1.0], [3.0, 3.1, 2.9, 3.2]), h)
    assert down["verdict"] == "not reproduced" and "opposite" in down["reason"]
    same = evaluate_headline(_frame_two([1.0, 2.0, 1.0, 2.0], [2.0, 1.0, 2.0, 1.0]), h)
    assert same["verdict"] == "not reproduced"
    with pytest.raises(InputError):
        parse_headline({"text": "x", "panel": 0, "metric": "welfare", "mechanism": "m", "paper": "higher"}, "h",
                       panels=panels, mechanisms=["m", "b"])  # fmt: skip


def test_at_most_zero_level_claim() -> None:
    from types import SimpleNamespace

    panels = [SimpleNamespace(values=[1])]
    h = parse_headline({"text": "truthful", "panel": 0, "metric": "welfare", "mechanism": "m", "paper": "at most 0"},
                       "h", panels=panels, mechanisms=["m", "b"])  # fmt: skip
    assert evaluate_headline(_frame_two([0.0, 0.0, 0.0], [1, 1, 1]), h)["verdict"] == "reproduced"
    assert evaluate_headline(_frame_two([-1.0, -0.5, -0.7], [1, 1, 1]), h)["verdict"] == "reproduced"
    assert evaluate_headline(_frame_two([0.5, 0.4, 0.6], [1, 1, 1]), h)["verdict"] == "not reproduced"
    mixed = evaluate_headline(_frame_two([-1.0, -2.0, 0.5], [1, 1, 1]), h)  # mean < 0, one cell positive
    assert mixed["verdict"] == "not reproduced" and "positive in 1 of 3 cells" in mixed["reason"]


def test_every_shipped_study_ends_with_headlines() -> None:
    from marketsim.analysis.engine.studies import load_study, study_names

    for name in study_names():
        assert load_study(name).headlines, f"study {name} states no headline claim"


# -- the verdict rule at each of its boundaries (marketsim.analysis.engine.headlines.verdict)
# ---------------------------


@pytest.mark.parametrize(
    ("paper", "ours", "low", "high", "kw", "expected", "phrase"),
    [
        # the paper's number inside / just outside our CI (effect tolerance 0 to isolate the CI rule)
        (1.20, 1.15, 1.10, 1.20, {"tolerance": 0.0}, "reproduced", "inside our 95% CI"),
        (1.20, 1.15, 1.10, 1.1999, {"tolerance": 0.0}, "direction only", "same direction"),
        # stated tolerance on the effect (log scale): 25% of log(1.2) around it
        (1.20, math.exp(0.75 * math.log(1.2)) * 1.0001, 1.12, 1.13, {}, "reproduced", "effect within 25%"),
        (1.20, math.exp(0.75 * math.log(1.2)) * 0.9999, 1.12, 1.13, {}, "direction only", "effect smaller"),
        # a quarter of the paper's effect on a log scale: direction only vs not reproduced
        (1.20, math.exp(0.25 * math.log(1.2)) * 1.0001, 1.04, 1.05, {}, "direction only", "25% of the paper"),
        (1.20, math.exp(0.25 * math.log(1.2)) * 0.9999, 1.04, 1.05, {}, "not reproduced", "effect too small"),
        (0.80, math.exp(0.25 * math.log(0.8)) * 0.9999, 0.94, 0.95, {}, "direction only", "same direction"),
        (0.80, math.exp(0.25 * math.log(0.8)) * 1.0001, 0.94, 0.95, {}, "not reproduced", "effect too small"),
        # separation from 1 on the paper's side
        (1.20, 1.10, 1.0001, 1.19, {}, "direction only", "same direction"),
        (1.20, 1.10, 0.9999, 1.2, {}, "not reproduced", "includes 1"),  # 1.2 inside, but no separation
        (1.20, 0.90, 0.85, 0.9999, {}, "not reproduced", "opposite direction"),
        # equality ("comparable") and level claims: CI or tolerance, no direction
        (1.00, 1.0499, 1.04, 1.06, {"tolerance": 0.05}, "reproduced", "within 5%"),
        (1.00, 1.0501, 1.04, 1.049, {"tolerance": 0.05}, "not reproduced", "outside CI and tolerance"),
        (0.03, 0.0399, 0.0395, 0.041, {"ratio": False, "tolerance": 1 / 3}, "reproduced", "within 33%"),
        (0.03, 0.0401, 0.0402, 0.041, {"ratio": False, "tolerance": 0.3}, "not reproduced", "outside"),
        (0.03, 0.05, 0.02, 0.06, {"ratio": False, "tolerance": 0.0}, "reproduced", "inside our 95% CI"),
        # qualitative claims: the CI strictly on the stated side of 1
        (math.nan, 0.9, 0.8, 0.9999, {"direction": "lower"}, "reproduced", "lower, as the paper states"),
        (math.nan, 0.9, 0.8, 1.0001, {"direction": "lower"}, "not reproduced", "includes 1"),
    ],
)
def test_verdict_rule_on_both_sides_of_each_boundary(paper, ours, low, high, kw, expected, phrase):
    from marketsim.analysis.engine.headlines import verdict

    kw = {"ratio": True, **kw}
    got, reason = verdict(paper, ours, low, high, **kw)
    assert got == expected, reason
    assert phrase in reason


def test_ratio_is_a_ratio_of_means_with_a_seeded_bootstrap_interval():
    """Heavy-tailed per-seed ratios (a few seeds with a tiny baseline): the mean of the per-seed ratios
    is pulled far above the ratio of the means; the headline uses the latter, with a deterministic
    paired bootstrap interval, and reports the per-cell spread."""
    a = np.full(20, 10.0)
    b = np.r_[np.full(18, 10.0), 0.5, 0.2]  # two seeds where the baseline nearly fails
    r = evaluate_headline(_frame(a, b), _h(1.44))
    assert r["ours"] == pytest.approx(200 / 180.7)
    assert (a / b).mean() > 3.0  # what the former statistic (mean of per-seed ratios) reported
    assert r["low"] <= r["ours"] <= r["high"]
    assert (r["cell_min"], r["cell_median"], r["cell_max"]) == pytest.approx((1.0, 1.0, 50.0))
    assert r["cells_paper_side"] == 2  # cells where A beats B (the paper's side of 1.44)
    a2 = B * 1.3 * (1 + _noise(5, 0.05))  # continuous cells: the interval's ends move with the seed
    r2 = evaluate_headline(_frame(a2, B), _h(1.44))
    again = evaluate_headline(_frame(a2, B), _h(1.44))
    assert (again["low"], again["high"]) == (r2["low"], r2["high"])  # same seed, same interval
    other = evaluate_headline(_frame(a2, B), _h(1.44), seed=5)
    assert (other["low"], other["high"]) != (r2["low"], r2["high"])  # the seed is used


def test_ratio_of_means_bootstrap_covers_and_handles_zero_baselines():
    from marketsim.analysis.engine.headlines import ratio_of_means

    rng = np.random.default_rng(0)
    b = rng.lognormal(0, 1, 200)
    a = 1.3 * b * rng.lognormal(0, 0.05, 200)
    ours, lo, hi = ratio_of_means(a, b, seed=1)
    assert lo < 1.3 < hi and hi - lo < 0.05
    ours, lo, hi = ratio_of_means(np.array([1.0, 0.0, 2.0]), np.array([0.0, 0.0, 1.0]), seed=1)
    assert ours == 3.0 and hi == np.inf  # a resample of only zero-baseline cells is +inf, not an error
    assert math.isnan(ratio_of_means(np.array([1.0]), np.array([2.0]))[1])  # one cell: no interval


def _share_frame(ones: int, n: int = 20) -> pd.DataFrame:
    return pd.DataFrame([{"panel": 0, "x": 1.0, "replication": i, "variant": "truthful", "mechanism": "A",
                          "gains_most": float(i < ones)} for i in range(n)])  # fmt: skip


def test_a_share_uses_a_wilson_interval_inside_0_1():
    from marketsim.analysis.engine.headlines import wilson_interval

    h = Headline(text="A gains the most", panel=0, metric="gains_most", mechanism="A", paper=1.0, tolerance=0.0,
                 statistic="share")  # fmt: skip
    r = evaluate_headline(_share_frame(18), h)
    assert r["ours"] == 0.9 and (r["low"], r["high"]) == pytest.approx((0.699, 0.972), abs=5e-4)  # issue 32's figures
    assert r["verdict"] == "not reproduced" and "Wilson" in r["reason"]  # 1 is outside: 18/20 is not "always"
    full = evaluate_headline(_share_frame(20), h)
    assert (full["ours"], full["high"]) == (1.0, 1.0) and full["verdict"] == "reproduced"
    assert wilson_interval(0, 20)[0] == 0.0 and 0 < wilson_interval(1, 3)[0] < wilson_interval(1, 3)[1] < 1
    bad = _share_frame(18).assign(gains_most=0.5)
    assert "needs cells of 0 or 1" in evaluate_headline(bad, h)["reason"]


def test_by_construction_is_not_reproduced_and_a_failure_stays_a_failure():
    h = _h(1.0, tolerance=0.05, by_construction="the LP equalises it")
    r = evaluate_headline(_frame(B, B), h)
    assert r["verdict"] == "by construction" and r["reason"].startswith("holds by construction (the LP equalises it)")
    broken = evaluate_headline(_frame(B * 1.3, B), h)  # the property fails: a bug, reported as such
    assert broken["verdict"] == "not reproduced"
    t = evaluate_headlines(_frame(B, B), [_h(1.0, tolerance=0.05, id="a"), _h(1.0, tolerance=0.05, id="b",
                                                                            by_construction="by design")])  # fmt: skip
    from marketsim.analysis.engine.headlines import headline_counts, mark_fragile

    counts = headline_counts(mark_fragile(t))
    assert counts["verdicts"]["reproduced"] == 1 and counts["verdicts"]["by construction"] == 1


@pytest.mark.parametrize(("share", "expected"), [(3.999, "direction only"), (4.001, "stronger than the paper")])
def test_direction_only_is_bounded_above(share, expected):
    from marketsim.analysis.engine.headlines import verdict

    paper = 1.2
    ours = math.exp(share * math.log(paper))
    assert verdict(paper, ours, ours * 0.99, ours * 1.01, ratio=True)[0] == expected
    assert verdict(1 / paper, 1 / ours, 0.99 / ours, 1.01 / ours, ratio=True)[0] == expected  # both sides of 1


def test_fragile_marks_a_verdict_one_sensitivity_row_flips():
    from marketsim.analysis.engine.headlines import headline_counts, mark_fragile

    a = B * 0.945 * (1 + _noise(3, 0.01))
    f = pd.concat([_frame(a, B), _frame(B * 0.95 * (1 + _noise(4, 0.01)), B, panel=1)], ignore_index=True)
    main = _h(0.81, id="jct")
    sens = Headline(text="A beats B", panel=1, metric="welfare", mechanism="A", paper=0.81, baseline="B", id="jct-s",
                    sensitivity_of="jct", note="another engine")  # fmt: skip
    t = mark_fragile(evaluate_headlines(f, [main, sens]))
    assert list(t["verdict"]) == ["direction only", "not reproduced"]  # 27% vs 24% of the paper's effect
    assert t.loc[0, "fragile"].startswith("jct-s (another engine; n=20): not reproduced")
    assert t.loc[1, "fragile"] == "" and list(t["role"]) == ["counted", "sensitivity"]
    counts = headline_counts(t)
    assert counts["headlines"] == 1 and counts["fragile"] == {"direction only": ["jct"]}
    panel_sens = pd.DataFrame([{"id": "jct", "panel": 1, "x_name": "kappa", "x": 0.2, "n": 5,
                                "verdict": "direction only"}])  # fmt: skip
    same = mark_fragile(evaluate_headlines(f, [main]), panel_sens)
    assert same.loc[0, "fragile"] == ""  # the same verdict elsewhere: robust
    flip = mark_fragile(evaluate_headlines(f, [main]), panel_sens.assign(verdict="reproduced", conclusive=True))
    assert flip.loc[0, "fragile"] == "panel 1 kappa = 0.2 (n=5): reproduced"
    # a re-reading that cannot tell (no cells, or an interval around 1 on a few seeds) flips nothing
    for quiet in (panel_sens.assign(verdict="not reproduced", conclusive=False),
                  panel_sens.assign(verdict="not reproduced", n=0),
                  panel_sens.assign(verdict="reproduced", conclusive=True, sensitivity=False)):  # fmt: skip
        assert mark_fragile(evaluate_headlines(f, [main]), quiet).loc[0, "fragile"] == ""
    noisy = _frame(B * 0.95 * (1 + _noise(6, 0.3)), B, panel=2)  # the same claim, no separation from 1
    unsure = Headline(text="A beats B", panel=2, metric="welfare", mechanism="A", paper=0.81, baseline="B",
                      id="jct-u", sensitivity_of="jct")  # fmt: skip
    t2 = mark_fragile(evaluate_headlines(pd.concat([f, noisy]), [main, unsure]))
    assert t2.loc[1, "low"] <= 1 <= t2.loc[1, "high"] and t2.loc[0, "fragile"] == ""


def test_alternative_readings_are_listed_with_how_the_count_changes():
    from marketsim.analysis.engine.headlines import headline_counts, mark_fragile

    f = pd.concat([_frame(B * 1.16, B), _frame(B * 1.02, B, panel=1)], ignore_index=True)
    main = _h(1.16, id="u4")
    alt = Headline(text="A beats B (other naming)", panel=1, metric="welfare", mechanism="A", paper=1.16,
                   baseline="B", id="u4-vgg", alternative_of="u4", conflict="User-4 is named twice")  # fmt: skip
    t = mark_fragile(evaluate_headlines(f, [main, alt]))
    counts = headline_counts(t)
    assert counts["headlines"] == 1 and counts["verdicts"]["reproduced"] == 1
    assert counts["alternatives"] == [{"id": "u4-vgg", "of": "u4", "verdict": "not reproduced",
                                       "primary_verdict": "reproduced", "conflict": "User-4 is named twice"}]
    assert counts["with_alternatives"]["changed"] == 1
    assert counts["with_alternatives"]["verdicts"]["not reproduced"] == 1
    md = headline_markdown(t)
    assert "(alternative of `u4`)" in md and "The paper contradicts itself: User-4 is named twice" in md


def test_baseline_realisation_compares_one_mechanism_under_two_realisations():
    rows = []
    for rep in range(6):
        for real, mode, act in (("oef-placement", "own", 12.4), ("naive-placement", "alternative", 10.0)):
            rows.append({"panel": 0, "x": 0.1, "replication": rep, "variant": "truthful", "mechanism": "oef-coop",
                         "realisation": real, "realisation_mode": mode, "total_act": act + 0.01 * rep})
        rows.append({"panel": 0, "x": 0.1, "replication": rep, "variant": "truthful", "mechanism": "maxmin",
                     "realisation": "oef-rounding", "realisation_mode": "own", "total_act": 5.0})
    h = parse_headline({"text": "the placer adds 1.24x", "panel": 0, "metric": "total_act", "mechanism": "oef-coop",
                        "baseline_realisation": "naive-placement", "paper": 1.24},
                       "h", panels=[Panel("kappa", (0.1,), realisations=("own", "naive-placement"))],
                       mechanisms=["oef-coop", "maxmin"])  # fmt: skip
    r = evaluate_headline(pd.DataFrame(rows), h)
    assert r["ours"] == pytest.approx((12.4 * 6 + 0.15) / (10.0 * 6 + 0.15)) and r["verdict"] == "reproduced"
    assert r["baseline"] == "oef-coop@naive-placement"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"id": "Bad Id"}, "id"),
        ({"statistic": "median"}, "statistic"),
        ({"statistic": "share", "paper": 2.0}, "paper"),
        ({"baseline": "B", "statistic": "share"}, "statistic"),
        ({"by_construction": " "}, "by_construction"),
        ({"alternative_of": "x"}, "conflict"),
        ({"conflict": "the paper says two things"}, "conflict"),
        ({"sensitivity_of": "x", "alternative_of": "y", "conflict": "c"}, "alternative_of"),
        ({"baseline_realisation": "naive-placement"}, "baseline_realisation"),
        ({"id": "me", "sensitivity_of": "me"}, "sensitivity_of"),
    ],
)
def test_parse_errors_of_the_new_keys_name_the_field(extra, field):
    table = {"text": "t", "panel": 0, "metric": "welfare", "mechanism": "A", "paper": 1.0, **extra}
    with pytest.raises(InputError, match=f"h.{field}"):
        parse_headline(table, "h", panels=PANELS, mechanisms=["A", "B"])


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda hs: hs[1].update(id=hs[0]["id"]), "headline[1].id"),
        (lambda hs: hs[1].update(sensitivity_of="nope"), "headline[1].sensitivity_of"),
        (lambda hs: hs[1].update(alternative_of="nope", conflict="c"), "headline[1].alternative_of"),
    ],
)
def test_study_checks_headline_references(edit, field):
    import copy
    import tomllib
    from pathlib import Path

    doc = tomllib.loads((Path(__file__).resolve().parents[1] / "market" / "auction" / "studies"
                         / "control_auction.toml").read_text("utf-8"))  # fmt: skip
    doc = copy.deepcopy(doc)
    hs = doc["headline"]
    hs[0]["id"], hs[1]["id"] = "first", "second"
    edit(hs)
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_study(doc, "c")


def test_an_auction_variant_replays_only_its_panels():
    doc = {
        "kind": "study", "name": "t", "paper": "control", "mechanisms": ["fixed-price", "pay-your-bid"],
        "replications": 2, "base": {"jobs": 6, "T": 8, "capacity": 2, "price": 1.0},
        "panel": [{"x": "jobs", "values": [6]}, {"x": "capacity", "values": [2]}],
        "variant": [{"name": "shade", "params": {"value_scale": 0.6}, "fraction": 0.3, "panels": [1]}],
        "headline": [{"text": "equal welfare", "panel": 0, "metric": "welfare", "mechanism": "pay-your-bid",
                      "baseline": "fixed-price", "paper": 1.0}],
    }  # fmt: skip
    frame = run_study(parse_study(doc, "t"), progress=False).frame
    assert set(frame.loc[frame["variant"] == "shade", "panel"]) == {1}
    assert set(frame.loc[frame["variant"] == "truthful", "panel"]) == {0, 1}
    with pytest.raises(InputError, match=r"variant\[0\]\.panels"):
        parse_study({**doc, "variant": [{**doc["variant"][0], "panels": [2]}]}, "t")
