"""Layering (issue #27 item 5): nothing under market/ imports the application layer (analysis),
and no two project modules import each other, directly or through others, counting imports inside
functions as well as at module level (a lazy import still couples the two files). Imports under
``if TYPE_CHECKING:`` are not counted: they never run, they only name types for annotations."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("market", "analysis", "agents", "scenarios")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


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
            while t and t not in known:  # `import market.oef.lp` -> the deepest project module named
                t = t.rpartition(".")[0]
            if t:
                out.append((t, node.lineno))
    return out


def test_nothing_under_market_imports_analysis() -> None:
    mods = _modules()
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for name, path in mods.items()
        if name.split(".")[0] == "market"
        for target, line in _imports(name, path, set(mods))
        if target.split(".")[0] == "analysis"
    ]
    assert not bad, "the core depends on the application layer:\n" + "\n".join(bad)


def test_no_import_cycles_between_modules() -> None:
    mods = _modules()
    g = nx.DiGraph()
    for name, path in mods.items():
        for target, line in _imports(name, path, set(mods)):
            # a package's own __init__ and the modules it re-exports are one unit with the package:
            # importing `market.x` runs `market/__init__.py` anyway, so edges to an ancestor package are
            # not couplings between files
            if target != name and not name.startswith(target + "."):
                g.add_edge(name, target, line=line)
    found = [" <-> ".join(sorted(c)) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not found, "import cycles:\n" + "\n".join(sorted(found))


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """The walker sees imports inside functions and `from pkg import module` forms."""
    f = tmp_path / "m.py"
    f.write_text(
        "def f():\n    from analysis.engine.studies import load_study\n\nfrom market.learning import dynamics\n"
    )
    known = {"analysis.engine.studies", "market.learning", "market.learning.dynamics"}
    assert sorted(_imports("market.x", f, known)) == [
        ("analysis.engine.studies", 2),
        ("market.learning.dynamics", 4),
    ]
