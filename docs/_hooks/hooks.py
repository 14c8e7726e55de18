"""mkdocs hooks. A link from a docs page to a file of the repository outside ``docs/`` (a benchmark
result, a test, a scenario) becomes the link text with the repository path in code, because the site
does not contain those files. A link to a path that exists nowhere is left alone, so
``mkdocs build --strict`` still fails on it."""

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
