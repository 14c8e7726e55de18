"""The docs notebooks are committed WITH their outputs (tables, printed values, PNG plots), so the site
(mkdocs-jupyter, ``execute: false``) and GitHub show them without executing anything at build time.

* ``python docs/_hooks/notebook_outputs.py --write``: execute every notebook of docs/notebooks from a
  clean kernel (in place, cwd docs/notebooks) and store its outputs, with no timing metadata and no
  Python patch version, so a re-run on the same code gives the same file apart from the PNG bytes.
* ``python docs/_hooks/notebook_outputs.py --check DIR``: compare the committed outputs with copies of
  the notebooks executed into ``DIR`` (CI: ``pytest --nbmake --overwrite`` on a temporary copy, the
  execution CI does anyway). Text outputs (printed text, ``text/plain`` and ``text/html`` of every
  result) must agree: the text between numbers exactly, the numbers to a relative 1e-6 (BLAS and
  solver builds may move the last digits); each output's kind and each plot's presence must agree
  (PNG bytes are not compared: they depend on the matplotlib and freetype builds). Exit 1 with the
  first differences and the refresh command.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TEXT_MIMES = ("text/plain", "text/html")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")
REL_TOL = 1e-6
ABS_TOL = 1e-9


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def key_outputs(nb: dict[str, Any]) -> list[tuple[int, str, str]]:
    """``(code cell number, kind, text)`` per output of the notebook: ``stream:NAME`` with its text,
    ``MIME`` with the text of each text MIME type, ``image/png`` with an empty text (presence only),
    ``error`` with the exception name and value."""
    out: list[tuple[int, str, str]] = []
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for i, cell in enumerate(code_cells):
        for o in cell.get("outputs", []):
            kind = o["output_type"]
            if kind == "stream":
                out.append((i, f"stream:{o['name']}", _text(o["text"])))
            elif kind in ("execute_result", "display_data"):
                for mime in sorted(o["data"]):
                    text = _text(o["data"][mime]) if mime in TEXT_MIMES else ""
                    out.append((i, mime, text))
            elif kind == "error":
                out.append((i, "error", f"{o.get('ename')}: {o.get('evalue')}"))
    return out


def _close(a: str, b: str) -> bool:
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def same_text(a: str, b: str) -> bool:
    """``a`` and ``b`` agree: the same text between numbers, numbers equal to a relative 1e-6."""
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    return (_NUMBER.split(a) == _NUMBER.split(b) and len(na) == len(nb)
            and all(_close(x, y) for x, y in zip(na, nb, strict=True)))


def differences(committed: dict[str, Any], executed: dict[str, Any]) -> list[str]:
    """Where the executed notebook's outputs differ from the committed ones (empty: current)."""
    a, b = key_outputs(committed), key_outputs(executed)
    diffs = []
    if [(i, k) for i, k, _ in a] != [(i, k) for i, k, _ in b]:
        diffs.append(f"outputs (code cell, kind): committed {[(i, k) for i, k, _ in a]}, "
                     f"executed {[(i, k) for i, k, _ in b]}")
        return diffs
    for (i, kind, ta), (_, _, tb) in zip(a, b, strict=True):
        if not same_text(ta, tb):
            diffs.append(f"code cell {i} {kind}: committed {ta[:300]!r}, executed {tb[:300]!r}")
    return diffs


def normalise(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` without what changes from run to run: cells' timing metadata, the Python patch version."""
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("execution", None)
    info = nb.get("metadata", {}).get("language_info")
    if info:
        nb["metadata"]["language_info"] = {"name": info.get("name", "python")}
    return nb


def _write(path: Path, nb: dict[str, Any]) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write(paths: list[Path], timeout: int = 600) -> None:
    """Execute each notebook from a clean kernel (cwd: its folder) and store its normalised outputs;
    a cell error raises and leaves the file as it was."""
    import nbformat
    from nbclient import NotebookClient

    for path in paths:
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        _write(path, normalise(json.loads(nbformat.writes(nb))))
        print(f"wrote {path}")


def check(executed_dir: Path, paths: list[Path]) -> list[str]:
    """Every difference between the committed notebooks and their executed copies in ``executed_dir``."""
    problems = []
    for path in paths:
        copy = executed_dir / path.name
        if not copy.exists():
            problems.append(f"{path.name}: no executed copy in {executed_dir}")
            continue
        committed = json.loads(path.read_text(encoding="utf-8"))
        executed = json.loads(copy.read_text(encoding="utf-8"))
        problems += [f"{path.name}: {d}" for d in differences(committed, executed)]
    return problems


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring); exit 0, or 1 when outputs are out of date."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="execute the notebooks and store their outputs")
    group.add_argument("--check", metavar="DIR", type=Path, help="compare with executed copies in DIR")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every docs/notebooks/*.ipynb")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.write:
        write(paths)
        return 0
    problems = check(args.check, paths)
    if problems:
        print("docs notebooks: the committed outputs are out of date:", file=sys.stderr)
        for p in problems[:20]:
            print(f"  {p}", file=sys.stderr)
        print("refresh them with: python docs/_hooks/notebook_outputs.py --write  (and commit)", file=sys.stderr)
        return 1
    print(f"docs notebooks: committed outputs current ({len(paths)} notebooks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
