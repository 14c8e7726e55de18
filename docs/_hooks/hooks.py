"""mkdocs hooks.

* A docs page that is not in ``mkdocs.yml``'s nav (a page another change added) is appended under
  "More", so the site always lists every page and ``--strict`` does not fail on it.
* A link from a docs page to a file of the repository outside ``docs/`` (a benchmark result, a
  test, a scenario) becomes the link text with the repository path in code, because the site does
  not contain those files. A link to a path that exists nowhere is left alone, so
  ``mkdocs build --strict`` still fails on it.
* Sphinx roles in docstrings render as code in the API reference.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Rewrite links that leave ``docs/`` but name an existing repository file."""
    docs = Path(config["docs_dir"]).resolve()
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
