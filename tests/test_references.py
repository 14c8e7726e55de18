"""Every mention of an ``analysis`` module in the code, tests, benchmarks, docs, notebooks, README,
pyproject and CI scripts names one that exists (``marketsim.analysis.engine.runner``, ``analysis/frontends/cli.py``,
``python -m marketsim.analysis.frontends.cli``): a module moved or renamed leaves no stale path behind in prose,
subprocess commands or entry points, which no import would catch. ``benchmarks/results/`` is left out:
those files record the state when they were produced."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".toml", ".ipynb", ".yml", ".yaml", ".cfg", ".txt"}
SKIP_DIRS = {"site", "build", "dist", "node_modules", "__pycache__", "results"}
# analysis.x.y or analysis/x/y(.py); the first name after analysis is required
_REF = re.compile(r"(?<![\w.\-/])(?:marketsim\.)?analysis([./])([A-Za-z_]\w*)(?:\1([A-Za-z_]\w*))?")


def _files(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if any(part.startswith(".") and part != ".ci" for part in rel) or SKIP_DIRS & set(rel[:-1]):
            continue
        if any(part.endswith(".egg-info") for part in rel[:-1]):  # pip's build metadata, not ours
            continue
        if p.is_file() and (p.suffix in SUFFIXES or rel[0] == ".ci") and p != Path(__file__).resolve():
            out.append(p)
    return out


def _stale(root: Path) -> list[str]:
    """``file:line: reference`` for each mention of an ``analysis`` module or package that does not exist."""
    bad = []
    for f in _files(root):
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for m in _REF.finditer(text):
            first, second = m.group(2), m.group(3)
            pkg = root / "analysis" / first
            if pkg.is_dir() and (pkg / "__init__.py").is_file():
                # a subpackage exports nothing itself: the next name must be one of its modules
                ok = second is None or (pkg / f"{second}.py").is_file() or (pkg / second / "__init__.py").is_file()
            else:
                ok = (root / "analysis" / f"{first}.py").is_file()
            if not ok:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{f.relative_to(root)}:{line}: {m.group(0)}")
    return bad


def test_every_analysis_reference_names_an_existing_module() -> None:
    bad = _stale(ROOT)
    assert not bad, "references to analysis modules that do not exist:\n" + "\n".join(bad)


# ns_rewrite: off (the tree below names the modules bare and namespaced on purpose)
def test_the_check_finds_stale_references(tmp_path: Path) -> None:
    (tmp_path / "analysis" / "engine").mkdir(parents=True)
    for rel in ("analysis/__init__.py", "analysis/engine/__init__.py", "analysis/engine/runner.py"):
        (tmp_path / rel).write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "`analysis/engine/runner.py` and analysis.engine.runner.run_experiment are fine;\n"
        "`python -m analysis.cli` and analysis/engine/sweep.py and analysis.frontends are not\n"
        "marketsim.analysis.engine.runner is fine, `python -m marketsim.analysis.cli` is not\n"
    )
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "old.md").write_text("analysis.runner\n")  # a record: not checked
    assert _stale(tmp_path) == [
        "docs/a.md:2: analysis.cli",
        "docs/a.md:2: analysis/engine/sweep",
        "docs/a.md:2: analysis.frontends",
        "docs/a.md:3: marketsim.analysis.cli",
    ]
# ns_rewrite: on
