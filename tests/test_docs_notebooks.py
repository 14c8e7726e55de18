"""The docs notebooks are committed with their outputs (the site shows them as stored), and CI checks
that those outputs are current (docs/_hooks/notebook_outputs.py). Fast: nothing is executed here."""

from __future__ import annotations

import base64
import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))

_spec = importlib.util.spec_from_file_location("notebook_outputs", ROOT / "docs" / "_hooks" / "notebook_outputs.py")
nbo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbo)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_its_outputs(path: Path) -> None:
    """Every code cell ran, in order, from one clean kernel; no errors; at least one PNG plot; nothing
    that changes from run to run or machine to machine (timing metadata, Python patch version, an
    absolute path)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), "not executed whole, in order"
    assert all("execution" not in c.get("metadata", {}) for c in code), "timing metadata: run --write"
    assert "version" not in nb["metadata"].get("language_info", {})
    outputs = nbo.key_outputs(nb)
    assert not [o for o in outputs if o[1] == "error"]
    pngs = [o["data"]["image/png"] for c in code for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert pngs and all(base64.b64decode(nbo._text(p))[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    text = "".join(t for _, _, t in outputs)
    assert len(text) > 500  # tables and values, not only figure reprs
    assert not re.search(r"(/home/|/tmp/|/work/|/root/|[A-Z]:\\\\)", text), "an absolute path in an output"


def test_output_check_tolerates_last_digits_and_catches_changes() -> None:
    nb = json.loads(NOTEBOOKS[0].read_text(encoding="utf-8"))
    assert nbo.differences(nb, copy.deepcopy(nb)) == []

    def edit(fn):  # a copy with fn applied to the first text/plain output holding a number like 1.234
        other = copy.deepcopy(nb)
        for cell in other["cells"]:
            for o in cell.get("outputs", []):
                text = nbo._text(o.get("data", {}).get("text/plain", ""))
                if re.search(r"\d\.\d{3}", text):
                    o["data"]["text/plain"] = fn(text)
                    return other
        raise AssertionError("no numeric output")

    def scale(f):
        return lambda t: re.sub(r"[1-9]\d*\.\d+", lambda m: repr(float(m.group(0)) * f), t, count=1)

    assert nbo.differences(nb, edit(scale(1 + 1e-12))) == []  # last digits of a different BLAS build
    assert nbo.differences(nb, edit(scale(1 + 1e-3)))  # a changed result
    assert nbo.differences(nb, edit(lambda t: t.replace(" ", "  ", 1)))  # changed text
    no_plot = copy.deepcopy(nb)
    for cell in no_plot["cells"]:
        cell["outputs"] = [o for o in cell.get("outputs", []) if "image/png" not in o.get("data", {})]
    assert nbo.differences(nb, no_plot)  # a plot gone


def test_ci_compares_the_executed_notebooks_with_the_committed_outputs() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"--nbmake .*--overwrite \"\$nb\"\n.*notebook_outputs\.py --check \"\$nb\"", run)
    assert "execute: false" in (ROOT / "mkdocs.yml").read_text()
