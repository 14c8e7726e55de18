"""griffe extension for the API reference: ``a[i][j]`` in a docstring's prose is an index, not a
Markdown reference link, so ``][`` outside code becomes ``]\\[``. Without this, mkdocs-autorefs reads
``c[t][d]`` as a link to an object ``d`` and ``mkdocs build --strict`` fails on it. Code spans,
indented (literal) blocks and fenced blocks are left alone."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_CODE = re.compile(r"(`+)(?:.*?)\1")


def escape_index_brackets(text: str) -> str:
    """``text`` with ``][`` escaped outside inline code, indented blocks and fenced blocks."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or line.startswith("    ") or "][" not in line:
            out.append(line)
            continue
        parts, last = [], 0
        for m in _CODE.finditer(line):
            parts.append(line[last : m.start()].replace("][", "]\\["))
            parts.append(m.group(0))
            last = m.end()
        parts.append(line[last:].replace("][", "]\\["))
        out.append("".join(parts))
    return "\n".join(out)


class EscapeIndexBrackets(Extension):
    """Escape ``][`` in every docstring that griffe loads (see the module docstring)."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = escape_index_brackets(obj.docstring.value)
