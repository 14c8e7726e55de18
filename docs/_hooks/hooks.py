"""mkdocs hooks.

* Figures: every ``<!--fig SOURCE EXPRESSION[:FORMAT]-->value<!--/fig-->`` of a page is read from its
  committed results file (``benchmarks/figures.py``) and replaced by the value; a missing source, key
  or row, or a shown value that differs from the file's, is logged as an error, so ``mkdocs build
  --strict`` fails on it (an error, not a warning: ``--quiet``, which CI uses, drops warnings before
  strict mode counts them).
* A docs page that is not in ``mkdocs.yml``'s nav (a page another change added) is appended under
  "More", so the site always lists every page and ``--strict`` does not fail on it.
* A link from a docs page to a file of the repository outside ``docs/`` (a benchmark result, a
  test, a scenario) becomes the link text with the repository path in code, because the site does
  not contain those files. A link to a path that exists nowhere is left alone, so
  ``mkdocs build --strict`` still fails on it.
* Sphinx roles in docstrings render as code in the API reference.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

log = logging.getLogger("mkdocs.hooks.figures")

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _figures_module() -> ModuleType:
    """``benchmarks/figures.py`` beside these hooks (not a package: loaded from its path, once)."""
    name = "_marketsim_docs_figures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parents[2] / "benchmarks" / "figures.py"
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def render_figures(markdown: str, page: str, repo: Path) -> str:
    """The page with each figure marker replaced by the value its results file gives; every problem
    (unreadable source, missing key or row, shown value that differs) is logged as an error."""
    figures = _figures_module()
    text, errors, diffs = figures.render(markdown, page, strip=True, root=repo)
    for problem in errors + diffs:
        log.error("figure %s (refresh with: python benchmarks/figures.py --write)", problem)
    return text


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the figures from their results files; rewrite links that leave ``docs/`` but name an
    existing repository file."""
    docs = Path(config["docs_dir"]).resolve()
    markdown = render_figures(markdown, f"{Path(config['docs_dir']).name}/{page.file.src_path}", docs.parent)
    repo = docs.parent
    here = (docs / page.file.src_path).parent

    def repl(m: re.Match[str]) -> str:
        target = m.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return m.group(0)
        path = (here / target).resolve()
        if path.is_relative_to(docs) or not path.is_relative_to(repo) or not path.exists():
            return m.group(0)
        rel = path.relative_to(repo).as_posix()
        text = m.group(1)
        return text if text.strip("`") == rel else f"{text} (`{rel}`)"

    return _LINK.sub(repl, markdown)


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):\s*<code>(~?)([^<]*)</code>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Docstrings use Sphinx roles (``:class:`~market.x.Y```), which Markdown leaves as text: show
    them as code (``~`` keeps only the last dotted component, as Sphinx does); a paragraph ending in
    reST's ``::`` (a literal block follows) ends in one colon."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)
        return f"<code>{name}</code>"

    return _ROLE.sub(repl, html).replace("::</p>", ":</p>")  # reST's "text::" before a literal block


def _nav_files(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    if isinstance(nav, dict):
        return [f for v in nav.values() for f in _nav_files(v)]
    return []


def unlisted_pages(docs_dir: str | Path, nav: Any) -> list[str]:
    """Markdown pages under ``docs_dir`` that ``nav`` does not name (``_*`` folders excluded)."""
    docs = Path(docs_dir)
    listed = set(_nav_files(nav))
    pages = (p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))
    return sorted(p for p in pages if p not in listed and not any(part.startswith("_") for part in p.split("/")))


def on_config(config: Any) -> Any:
    """Append the pages the nav does not list under a "More" section."""
    nav = config.get("nav")
    if nav:
        extra = unlisted_pages(config["docs_dir"], nav)
        if extra:
            nav.append({"More": extra})
    return config
