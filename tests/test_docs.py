"""The documentation's own examples run, and the docs site's navigation and API reference stay complete.

docs/plugins.md's worked plugins are run by tests/test_plugins.py; this file runs the page's other
snippets (the non-posted-price mechanism of §3, the hypothesis auction strategy of §10) and checks
that mkdocs.yml lists every page of docs/ and every public module of the API reference. The site
itself is built by ``mkdocs build --strict`` in .ci/run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "docs" / "plugins.md"


def _block(marker: str) -> str:
    """The code block of docs/plugins.md whose first line is ``# example: <marker>``."""
    m = re.search(r"```python\n# example: " + re.escape(marker) + r"\n(.*?)```", PLUGINS.read_text(), re.S)
    assert m, f"docs/plugins.md has no block '# example: {marker}'"
    return m.group(1)


def test_plugins_page_non_posted_price_mechanism_runs() -> None:
    """§3's per-slot Vickrey: ``_advance`` + ``step`` + the default ``finish``; its own asserts check the
    decisions (winner pays the runner-up's report, a lone bidder pays 0, the loser has completion None)."""
    ns: dict = {}
    exec(compile(_block("slot-vickrey"), "docs/plugins.md#slot-vickrey", "exec"), ns)
    mech = ns["SlotVickrey"](T=1, k=1)
    decisions = mech.run([ns["Bid"](0, 0, 1.0), ns["Bid"](1, 0, 5.0)])
    assert [(d.job_id, d.admitted, d.completion) for d in decisions] == [(0, False, None), (1, True, 0)]
    assert decisions[1].payment == 1.0 and decisions[1].payoff == 4.0


def _doc_project(project: str) -> dict[str, str]:
    text = PLUGINS.read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"```(?:python|toml)\n# file: ([^\n]+)\n(.*?)```", text, re.S):
        proj, _, rel = m.group(1).strip().partition("/")
        if proj == project:
            out[rel] = m.group(2)
    return out


@pytest.mark.slow  # a pytest subprocess auditing 10 hypothesis examples: 20-50 s on 2 shared cores
def test_plugins_page_auction_strategy_snippet_runs(tmp_path: Path) -> None:
    """§10's ``auction_instances`` example, as a user's test file run by pytest with the marketsim plugin,
    against §9's plugin written from the page (an installed distribution on PYTHONPATH)."""
    pytest.importorskip("hypothesis")
    files = _doc_project("reserve-auction")
    meta = tomllib.loads(files.pop("pyproject.toml"))
    for pkg in meta["tool"]["setuptools"]["packages"]:
        files.setdefault(pkg.replace(".", "/") + "/__init__.py", "")
    for rel, text in files.items():
        p = tmp_path / "site" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    info = tmp_path / "site" / "reserve_auction-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reserve_auction\nVersion: 0.1\n")
    eps = meta["project"]["entry-points"]["marketsim.mechanisms"]
    (info / "entry_points.txt").write_text("[marketsim.mechanisms]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    snippet = re.search(r"```python\n(from hypothesis import given, settings\n"
                        r"from marketsim.market.testing.strategies import auction_instances\n.*?)```",
                        PLUGINS.read_text(), re.S)  # fmt: skip
    assert snippet, "docs/plugins.md lost its auction_instances example"
    test = tmp_path / "user_tests" / "test_user.py"
    test.parent.mkdir()
    test.write_text(snippet.group(1))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "--marketsim-budget", "fast", str(test)],
                       cwd=test.parent, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 passed" in r.stdout


def test_claims_ledger_stores_negative_zero_as_zero() -> None:
    """docs/plugins.md §7: ``effect_size`` is stored as given except that -0.0 becomes 0 (no '-0' in tables)."""
    code = textwrap.dedent(
        """
        from marketsim.market.audit.claims import Measurement, register_claim, run_claims, to_markdown
        @register_claim("negzero-doc", "Z1", "statement", "how", kind="universal")
        def z1(ctx):
            return Measurement(n_instances=1, effect_size=-0.0, effect="max relative gain")
        res = run_claims("negzero-doc")
        print(repr(res[0].effect_size)); print(to_markdown(res))
        """
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert r.returncode == 0, r.stderr
    first, table = r.stdout.split("\n", 1)
    assert first == "0.0" and "| -0 " not in table and "| 0 (max relative gain)" in table


def _nav_files(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    if isinstance(nav, dict):
        return [f for v in nav.values() for f in _nav_files(v)]
    return []


def test_docs_site_lists_every_page_and_public_module() -> None:
    """mkdocs.yml's nav names only existing pages and, with the hook's "More" section, every page; the
    API reference renders the public modules and, whole, the packages of the papers, audit, learning
    and agents."""
    yaml = pytest.importorskip("yaml")

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may carry python/name tags (e.g. for emoji); ignore them here
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    cfg = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    listed = set(_nav_files(cfg["nav"]))
    pages = {str(p.relative_to(ROOT / "docs")) for ext in ("*.md", "*.ipynb") for p in (ROOT / "docs").rglob(ext)
             if ".ipynb_checkpoints" not in p.parts}
    assert listed - pages == set(), f"mkdocs.yml nav names missing pages: {sorted(listed - pages)}"
    # a page the nav does not list (one added by another change) is appended under "More" by the hook
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "_hooks" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    unlisted = {p for p in pages - listed if p.endswith(".md")}
    assert set(hooks.unlisted_pages(ROOT / "docs", cfg["nav"])) == unlisted
    nav = [*cfg["nav"]]
    hooks.on_config({"nav": nav, "docs_dir": str(ROOT / "docs")})
    assert {p for p in pages if p.endswith(".md")} <= set(_nav_files(nav))
    reference = "\n".join((ROOT / "docs" / p).read_text() for p in pages if p.startswith("reference/"))
    documented = set(re.findall(r"^::: ([\w.]+)", reference, re.M))
    # a package rendered with show_submodules covers every module under it, present and future
    whole = set(re.findall(r"^::: ([\w.]+)\n(?:    .*\n)*?\s+show_submodules: true", reference, re.M))
    # the public API of issue 27 (registry, types, testing, audit, the mechanisms' entry points, the Mesa
    # models); a module added later needs no entry here (packages rendered whole pick it up)
    public = {"marketsim.market.registry", "marketsim.market.plugins", "marketsim.market.types",
              "marketsim.market.allocation", "marketsim.market.errors",
              "marketsim.market.testing", "marketsim.market.testing.strategies", "marketsim.market.traces"}
    assert public <= documented, f"not in the API reference: {sorted(public - documented)}"
    assert {"marketsim.market.audit", "marketsim.market.auction", "marketsim.market.oef", "marketsim.market.oasis",
            "marketsim.market.pdors", "marketsim.market.eris",
            "marketsim.market.astraea", "marketsim.market.learning", "marketsim.agents"} <= whole


def test_packaging_licence_extras_and_ci_steps() -> None:
    """The MIT LICENSE the metadata declares, the `testing` and `docs` extras, and the CI steps that
    build the site strictly, execute the notebooks and wait for the apt lock."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    licence = (ROOT / "LICENSE").read_text()
    assert meta["license"] == "MIT" and "LICENSE" in meta["license-files"]
    assert licence.startswith("MIT License") and "Copyright (c) 2026 marketsim developers" in licence
    extras = meta["optional-dependencies"]
    assert any(d.startswith("hypothesis") for d in extras["testing"])
    assert {d.split(">")[0].split("[")[0] for d in extras["docs"]} >= {"mkdocs", "mkdocs-material", "mkdocstrings"}
    setup, run = (ROOT / ".ci" / "setup").read_text(), (ROOT / ".ci" / "run").read_text()
    assert "DPkg::Lock::Timeout=" in setup and "docs" in re.search(r"pip install --quiet -e '\.\[([^]]+)\]'", setup)[1]
    assert "mkdocs build --strict" in run and "--nbmake" in run and "docs/notebooks" in run
    notebooks = sorted(p.name for p in (ROOT / "docs" / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 3, notebooks


def test_docstring_index_brackets_are_escaped_outside_code() -> None:
    """``c[t][d]`` in prose would be a Markdown reference link (a strict-build failure); in code it stays."""
    pytest.importorskip("griffe")
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_brackets", ROOT / "docs" / "_hooks" / "griffe_brackets.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = "min of c[t][d_t] and ``F[t][D]``\n\n    x[i][j] = 0\n```\na[b][c]\n```\nend [x][y]"
    assert mod.escape_index_brackets(text) == (
        "min of c[t]\\[d_t] and ``F[t][D]``\n\n    x[i][j] = 0\n```\na[b][c]\n```\nend [x]\\[y]"
    )
