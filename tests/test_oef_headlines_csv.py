"""The committed OEF headline table (benchmarks/results/oef/headlines.csv, written by `marketsim run oef`):
n >= 20 everywhere, every §6 claim the study covers, the verdict rule re-applied to its own numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.engine.headlines import MIN_EFFECT, verdict
from analysis.engine.studies import load_study

CSV = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "oef" / "headlines.csv"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(CSV, keep_default_na=False, na_values=[""])


def test_every_row_has_at_least_20_seeds_and_a_realisation(table: pd.DataFrame) -> None:
    assert "realisation" in table.columns
    assert (table["n"] >= 20).all(), table.loc[table["n"] < 20, ["headline", "n"]]
    # own; the baselines with OEF's rounding (rate model) or with OEF's placer (trace engine)
    assert set(table["realisation"]) == {"own", "oef-rounding", "oef-placement"}


def test_actual_throughput_and_jct_verdicts_come_from_the_trace_engine(table: pd.DataFrame) -> None:
    """Issue 25 item 4: §6.3.1's actual throughput and §6.3.2's JCT are read on the trace engine with
    hosts (panels 10 and 11); the straggler rows stay on the rate model (panel 6)."""
    own = table[table["realisation"] == "own"]
    actual = own[own["headline"].str.startswith("§6.3.1") & (own["metric"] == "total_act")]
    jct = own[own["metric"] == "mean_jct_h"]
    assert len(actual) == 4 and set(actual["panel"]) == {10}
    assert len(jct) == 4 and set(jct["panel"]) == {11}
    assert set(own.loc[own["metric"] == "straggler_workers", "panel"]) == {6}
    placed = table[table["realisation"] == "oef-placement"]
    assert len(placed) == 8 and set(placed["panel"]) == {10, 11}


def test_rows_for_every_section6_claim_the_issue_names(table: pd.DataFrame) -> None:
    text = table["headline"]
    assert text.str.startswith("§6.2.3").sum() >= 3  # Fig. 5(b): a job type added at minute 40
    envy = table[text.str.startswith("§6.2.4") & (table["paper"].astype(str) == "1.58")]
    assert len(envy) == 1  # Fig. 6: User-4 1.58x with User-1's allocation
    assert text.str.contains("Fig. 4(a)", regex=False).sum() >= 2  # almost identical normalised progress
    assert text.str.contains("quits", regex=False).any()  # User-4 quits at minute 40
    assert text.str.startswith("§6.4.2").sum() >= 1  # ~3% deviation under 20% profiling error
    assert text.str.contains(">= max-min", regex=False).any()  # Fig. 5(a): every user >= max-min


def test_no_headline_maps_user4_to_vgg(table: pd.DataFrame) -> None:
    for h in table["headline"]:
        assert "User-4 (VGG" not in h, h
    # the study's own mapping: in the §6.2.2 / §6.2.4 panel User-4 is the LSTM user, User-1 the VGG user
    study = load_study("oef")
    panel = next(p for p in study.panels if p.label.startswith("§6.2.2"))
    types = {t["index"]: t["job_types"] for t in panel.scenario["tenant"]}
    assert types[3] == ["LSTM"] and types[0] == ["VGG"]


def test_direction_only_rows_have_a_quarter_of_the_effect(table: pd.DataFrame) -> None:
    d = table[table["verdict"] == "direction only"]
    for _, r in d.iterrows():
        share = math.log(float(r["ours"])) / math.log(float(r["paper"]))
        assert share >= MIN_EFFECT, (r["headline"], r["ours"], r["paper"])


def test_verdicts_follow_the_rule_from_the_rows_own_numbers(table: pd.DataFrame) -> None:
    for _, r in table.iterrows():
        if r["direction"] in ("at most 0", "at least 1"):  # a statement about every cell: not from the CI
            continue
        ratio = isinstance(r["baseline"], str) and r["baseline"] != ""
        paper = math.nan if r["direction"] in ("higher", "lower") else float(r["paper"])
        got, _ = verdict(paper, float(r["ours"]), float(r["low"]), float(r["high"]), ratio=ratio,
                         tolerance=float(r["tolerance"]), direction=r["direction"] or "")  # fmt: skip
        assert got == r["verdict"], r["headline"]
