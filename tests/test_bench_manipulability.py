"""The manipulability benchmark's ranking: a figure the independent oracle rejected is never ranked,
a gain over a truthful utility of 0 is shown as such (never ``inf``), and the committed table obeys
both (issue #32)."""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _bench():
    path = ROOT / "benchmarks" / "bench_manipulability.py"
    spec = importlib.util.spec_from_file_location("bench_manipulability", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(hunt: float, random: float, hunt_ok: bool | None, random_ok: bool | None) -> dict:
    o = lambda ok: None if ok is None else {"confirmed": ok, "label": "x"}  # noqa: E731
    return {"hunt": hunt, "random": random, "oracle": o(hunt_ok), "random_oracle": o(random_ok), "n": 2, "k": 2}


def test_an_oracle_rejected_figure_is_not_the_largest() -> None:
    b = _bench()
    rows = [_row(4.9, 0.2, False, True), _row(1.5, 3.0, True, False), _row(0.0, 0.0, None, None)]
    top = b._worst(rows)
    assert top is not None and top[1] == "hunt" and top[2] == 1.5  # 4.9 and 3.0 are artefacts
    assert b._worst([_row(2.0, 1.0, False, False)]) is None


def test_a_gain_from_zero_is_shown_as_such() -> None:
    b = _bench()
    assert b._f(math.inf) == "from 0" and b._ratio("inf", 0.0) == "from 0" and b._ratio(3.0, 0.0) == "from 0"
    assert b._ratio(0.5, 2.0) == "0.5"


def test_the_committed_ranking_has_no_inf_and_no_artefact() -> None:
    md = (RESULTS / "manipulability.md").read_text()
    table = md.split("## Ranking", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and not ln.startswith("| policy")]
    assert rows
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        assert not re.search(r"\binf\b", ln), ln
        assert float(cells[2]) >= 0.0 and not cells[6].startswith("artefact"), ln
    data = json.loads((RESULTS / "manipulability.json").read_text())
    b = _bench()
    for pol in {r["mechanism"] for r in data["fair_share"]}:
        top = b._worst([r for r in data["fair_share"] if r["mechanism"] == pol and r["scope"] == "all"])
        assert top is None or not b._artefact(top[0], top[1])
