"""Layering (issue #27 item 5). The packages form layers, lowest first: the core ``market`` (mechanisms,
audit, data), the Mesa models ``agents``, the TOML scenarios ``scenarios``, the experiment engine
``marketsim.analysis.engine`` and its front ends ``marketsim.analysis.frontends`` (CLI, live page, reports, plots). A
module imports only its own layer or lower ones: nothing under market/ imports the application layer, and the
engine never imports a front end. No two project modules import each other, directly or through others.
Imports inside functions count as well as those at module level (a lazy import still couples the two
files); imports under ``if TYPE_CHECKING:`` do not: they never run, they only name types for annotations."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("market", "analysis", "agents", "scenarios")  # the folders; imported as marketsim.<folder>
#: the layers, lowest first; a module belongs to the longest one its name starts with
LAYERS = ("marketsim.market", "marketsim.agents", "marketsim.scenarios", "marketsim.analysis.engine",
          "marketsim.analysis.frontends")


def _module_name(path: Path, root: Path = ROOT) -> str:
    """The import name of a file under one of the :data:`PACKAGES` folders (``marketsim.market.oef.lp``)."""
    parts = ["marketsim", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    return {_module_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}


def _layer(name: str) -> int | None:
    """Index in :data:`LAYERS` of the module ``name`` (None: a bare package such as ``analysis``)."""
    hits = [i for i, layer in enumerate(LAYERS) if name == layer or name.startswith(layer + ".")]
    return max(hits, key=lambda i: len(LAYERS[i]), default=None)


def _imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """``(imported project module, line)`` for every import statement in the file, at any depth."""
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, int]] = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    type_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in node.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from pkg import sub` imports the module pkg.sub when there is one
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # `import marketsim.market.oef.lp` -> the deepest project module named
                t = t.rpartition(".")[0]
            if t:
                out.append((t, node.lineno))
    return out


def _upward_imports(mods: dict[str, Path], root: Path = ROOT) -> list[str]:
    """Every import of a module in a higher layer than the importer's, as ``file:line imports target``."""
    out = []
    for name, path in mods.items():
        mine = _layer(name)
        for target, line in _imports(name, path, set(mods)):
            theirs = _layer(target)
            if mine is not None and theirs is not None and theirs > mine:
                why = f"{LAYERS[mine]} is below {LAYERS[theirs]}"
                out.append(f"{path.relative_to(root)}:{line} imports {target} ({why})")
    return out


def _cycles(mods: dict[str, Path]) -> list[str]:
    """The import cycles between files, as ``a <-> b <-> ...`` (sorted)."""
    g = nx.DiGraph()
    for name, path in mods.items():
        for target, line in _imports(name, path, set(mods)):
            # a package's own __init__ and the modules it re-exports are one unit with the package:
            # importing `market.x` runs `market/__init__.py` anyway, so edges to an ancestor package are
            # not couplings between files
            if target != name and not name.startswith(target + "."):
                g.add_edge(name, target, line=line)
    return sorted(" <-> ".join(sorted(c)) for c in nx.strongly_connected_components(g) if len(c) > 1)


def test_nothing_under_market_imports_analysis() -> None:
    mods = _modules()
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for name, path in mods.items()
        if name.split(".")[:2] == ["marketsim", "market"]
        for target, line in _imports(name, path, set(mods))
        if target.split(".")[:2] == ["marketsim", "analysis"]
    ]
    assert not bad, "the core depends on the application layer:\n" + "\n".join(bad)


def test_layers_import_only_downwards() -> None:
    """Includes: the engine (marketsim.analysis.engine) never imports a front end (marketsim.analysis.frontends)."""
    mods = _modules()
    assert {_layer(n) for n in mods} == {None, *range(len(LAYERS))}  # every layer exists and is seen
    bad = _upward_imports(mods)
    assert not bad, "imports of a higher layer:\n" + "\n".join(bad)


def test_no_import_cycles_between_modules() -> None:
    found = _cycles(_modules())
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """The walker sees imports inside functions and `from pkg import module` forms."""
    f = tmp_path / "m.py"
    f.write_text(
        "def f():\n    from marketsim.analysis.engine.studies import load_study\n\n"
        "from marketsim.market.learning import dynamics\n"
    )
    known = {"marketsim.analysis.engine.studies", "marketsim.market.learning", "marketsim.market.learning.dynamics"}
    assert sorted(_imports("marketsim.market.x", f, known)) == [
        ("marketsim.analysis.engine.studies", 2),
        ("marketsim.market.learning.dynamics", 4),
    ]


def test_the_rules_fail_when_violated(tmp_path: Path) -> None:
    """A small tree breaking each rule once: the engine importing a front end (inside a function), the
    core importing the engine, and a two-file cycle; a TYPE_CHECKING import and a downward import do not
    count."""
    files = {
        "market/__init__.py": "",
        "market/a.py": "from marketsim.market import b\n",
        "market/b.py": "def f():\n    import marketsim.market.a\n",
        "market/c.py": "import marketsim.analysis.engine.runner\n",
        "agents/__init__.py": "",
        "scenarios/__init__.py": "",
        "analysis/__init__.py": "",
        "analysis/engine/__init__.py": "",
        "analysis/engine/runner.py": (
            "from typing import TYPE_CHECKING\nfrom marketsim.market import a\nif TYPE_CHECKING:\n"
            "    from marketsim.analysis.frontends.cli import main\n\ndef f():\n"
            "    from marketsim.analysis.frontends import plots\n"
        ),
        "analysis/frontends/__init__.py": "",
        "analysis/frontends/cli.py": "from marketsim.analysis.engine import runner\n",
        "analysis/frontends/plots.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    mods = _modules(tmp_path)
    assert _upward_imports(mods, tmp_path) == [
        "market/c.py:1 imports marketsim.analysis.engine.runner (marketsim.market is below marketsim.analysis.engine)",
        "analysis/engine/runner.py:7 imports marketsim.analysis.frontends.plots "
        "(marketsim.analysis.engine is below marketsim.analysis.frontends)",
    ]
    assert _cycles(mods) == ["marketsim.market.a <-> marketsim.market.b"]
    (tmp_path / "market/b.py").write_text("")
    (tmp_path / "market/c.py").write_text("")
    (tmp_path / "analysis/engine/runner.py").write_text("from marketsim.analysis.frontends import cli\n")
    assert _cycles(mods) == ["marketsim.analysis.engine.runner <-> marketsim.analysis.frontends.cli"]
