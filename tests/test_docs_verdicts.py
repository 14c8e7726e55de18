"""The verdicts the docs state are the committed tables' (issue 32 item 4).

A finding in the docs links to the row or ledger entry that decides it, as a Markdown link whose text
is a verdict marker:

* ``[oef:6.2.2-u4-gain = direction only](../benchmarks/results/oef/headlines.csv)``: a study's headline
  row (id in ``headlines.csv``); ``, fragile`` after the verdict states that one sensitivity change
  flips it;
* ``[astraea:fig4a-batchsche@p6x1 = not reproduced](../benchmarks/results/astraea/headlines_sensitivity.csv)``:
  the same headline on sensitivity panel 6 at x = 1;
* ``[ledger:oef/C1 = holds](../benchmarks/results/claims/oef.json)``: a claims-ledger entry
  (``python benchmarks/claims_ledger.py``).

This test fails when a marker disagrees with the committed file it names, when its link points at
another file, and when a bullet of docs/findings.md's "Findings so far" carries no marker. After a re-run,
``python benchmarks/docs_verdicts.py --check`` lists the stale markers and ``--write`` rewrites them (read
the sentence around each: the prose may state the old verdict in words). The numbers
beside a verdict are figure markers (``<!--fig oef/headlines.csv row(id="...").ours:.3f-->``,
docs/figures.md), checked by tests/test_figures.py.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: the pages whose findings carry markers (every marker on them is checked)
PAGES = sorted({ROOT / "docs" / "findings.md", ROOT / "docs" / "studies.md", *(ROOT / "docs" / "papers").glob("*.md"),
                ROOT / "docs" / "oef_reproduction.md", ROOT / "docs" / "astraea_calibration.md",
                ROOT / "docs" / "eris_baselines.md"})  # fmt: skip
#: bullets of findings.md allowed without a marker (none: the PD-ORS and OASiS bullets got theirs with
#: issue 32 item 2)
UNMARKED_OK: tuple[str, ...] = ()

MARKER = re.compile(
    r"\[(?P<ledger>ledger:)?(?P<src>[a-z_]+)[:/](?P<id>[A-Za-z0-9][\w.-]*?)(?:@p(?P<panel>\d+)x(?P<x>[\d.e+-]+))?"
    r" = (?P<verdict>[a-z ]+?)(?P<fragile>, fragile)?\]\((?P<link>[^)\s]+)\)"
)


@cache
def _headlines(study: str) -> pd.DataFrame:
    t = pd.read_csv(RESULTS / study / "headlines.csv", keep_default_na=False, na_values=[""])
    t["fragile"] = t["fragile"].fillna("").astype(str)
    return t.set_index("id")


@cache
def _sensitivity(study: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / study / "headlines_sensitivity.csv")


@cache
def _ledger(paper: str) -> dict[str, str]:
    doc = json.loads((RESULTS / "claims" / f"{paper}.json").read_text(encoding="utf-8"))
    return {c["claim_id"]: c["verdict"] for c in doc["claims"]}


def check_marker(m: re.Match[str], page: Path) -> None:
    """One marker against the committed file it cites (AssertionError naming the page and marker)."""
    where = f"{page.relative_to(ROOT)}: {m.group(0)}"
    link = (page.parent / m["link"]).resolve()
    if m["ledger"]:
        assert link == RESULTS / "claims" / f"{m['src']}.json", f"{where}: links elsewhere"
        ledger = _ledger(m["src"])
        assert m["id"] in ledger, f"{where}: no such claim"
        assert ledger[m["id"]] == m["verdict"], f"{where}: the ledger says {ledger[m['id']]}"
        return
    if m["panel"] is not None:
        assert link == RESULTS / m["src"] / "headlines_sensitivity.csv", f"{where}: links elsewhere"
        s = _sensitivity(m["src"])
        row = s[(s["id"] == m["id"]) & (s["panel"] == int(m["panel"])) & (s["x"].astype(float) == float(m["x"]))]
        assert len(row) == 1, f"{where}: no such sensitivity row"
        assert row["verdict"].iloc[0] == m["verdict"], f"{where}: the table says {row['verdict'].iloc[0]}"
        return
    assert link == RESULTS / m["src"] / "headlines.csv", f"{where}: links elsewhere"
    t = _headlines(m["src"])
    assert m["id"] in t.index, f"{where}: no such row"
    r = t.loc[m["id"]]
    assert r["verdict"] == m["verdict"], f"{where}: the table says {r['verdict']}"
    assert bool(m["fragile"]) == bool(r["fragile"]), f"{where}: fragile in the table: {r['fragile']!r}"


def _markers(page: Path) -> list[re.Match[str]]:
    return list(MARKER.finditer(page.read_text(encoding="utf-8")))


#: the opening of a marker, to find one that does not parse (split over two lines, a typo)
OPENING = re.compile(r"\[(?:ledger:)?[a-z_]+[:/][A-Za-z0-9][\w.-]*?(?:@p\d+x[\d.e+-]+)? =")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_verdict_marker_agrees_with_the_committed_tables(page: Path) -> None:
    markers = _markers(page)
    for m in markers:
        check_marker(m, page)
    opened = OPENING.findall(page.read_text(encoding="utf-8"))
    assert len(opened) == len(markers), f"{page.relative_to(ROOT)}: a verdict marker that does not parse"


def test_the_pages_carry_markers() -> None:
    for name in ("findings.md", "studies.md", "papers/oef.md", "papers/astraea.md", "papers/eris.md",
                 "oef_reproduction.md"):  # fmt: skip
        assert _markers(ROOT / "docs" / name), f"docs/{name} states verdicts without a marker"


def test_every_finding_links_to_what_decides_it() -> None:
    text = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    section = text.split("## Findings so far", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n(?=\* )", section)
    bullets = [b for b in bullets if b.startswith("* ")]
    assert len(bullets) >= 10
    for b in bullets:
        if b.startswith(UNMARKED_OK):
            continue
        assert MARKER.search(b), f"docs/findings.md: a finding without a verdict marker: {b[:100]!r}"


def test_a_contradicting_marker_is_caught(tmp_path: Path) -> None:
    """The check really compares: a doctored verdict, figure, fragility, side count or link fails."""
    t = _headlines("oef")
    hid = t.index[0]
    right = t.loc[hid, "verdict"]
    wrong = "reproduced" if right != "reproduced" else "not reproduced"
    page = ROOT / "docs" / "findings.md"
    frag = ", fragile" if t.loc[hid, "fragile"] else ""
    good = f"[oef:{hid} = {right}{frag}](../benchmarks/results/oef/headlines.csv)"
    check_marker(MARKER.search(good), page)  # type: ignore[arg-type]
    bad = [good.replace(f"= {right}", f"= {wrong}"), good.replace("results/oef/headlines", "results/eris/headlines"),
           good.replace(", fragile", "") if ", fragile" in good else good.replace(f"= {right}", f"= {right}, fragile"),
           "[ledger:oef/C1 = violated](../benchmarks/results/claims/oef.json)",
           "[ledger:oef/C1 = holds](../benchmarks/results/claims/eris.json)"]  # fmt: skip
    for text in bad:
        m = MARKER.search(text)
        assert m, text
        with pytest.raises(AssertionError):
            check_marker(m, page)
