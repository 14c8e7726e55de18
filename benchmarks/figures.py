r"""Figures in README.md and docs/*.md, read from committed results files (no number typed by hand).

A figure is written in place between two HTML comments; the text between them is the value the
results file gives today, so a reader of the raw markdown (GitHub renders README.md and docs/*.md
unprocessed, and hides the comments) sees the current number::

    our whole process uses <!--fig trace_scale.json median(gavel.pairs.cpu_ratio):.1f-->13.5<!--/fig-->x less CPU

The opening comment holds a SOURCE, an EXPRESSION on it and, after the last ``:``, an optional Python
format spec (``.1f``, ``,d``, ``+.1%``, ``.3g``; none: ``str(value)``). The unit stays outside the
marker. ``python benchmarks/figures.py --check`` (and the default test suite, and ``mkdocs build
--strict`` through ``docs/_hooks/hooks.py``) fails when a source, a key or a row is missing or when
the text shown differs from the value; ``--write`` rewrites every shown value from its source (run it
after re-running a benchmark, and commit the results file with the docs).

SOURCE is a path relative to ``benchmarks/results/``, or to the repository root when it starts with
``/`` (``/scenarios/philly_trace.toml``). What a source offers to the expression, by suffix:

* ``.json`` / ``.toml``: the top-level keys as names (``data`` is the whole document);
* ``.csv``: ``rows``, the table (numbers parsed, empty cells None), with ``where(...)`` / ``row(...)``;
* ``.jsonl``: ``rows``, one object a line;
* ``.md`` / ``.txt``: ``text``, ``tables`` (every markdown table, as rows keyed by header) and
  ``table(k)``: the k-th table (0-based), or the first table after the heading k (else after the first
  heading containing k); ``grep(pattern)``.

EXPRESSION is a small, safe subset of Python (parsed, never ``eval``-ed): names, ``a.b`` (a key of a
dict; on a list of dicts, the list of that key: ``gavel.pairs.cpu_ratio``), ``a[0]`` / ``a["key"]``,
numbers and strings, ``+ - * / // % **``, and these calls:

* on a table (a list of dicts): ``t.where(col=value, ...)`` (rows with those values; a dict as
  positional argument for column names that are not identifiers), ``t.without(...)`` (the other
  rows), ``t.row(...)`` (exactly one such row, else an error), ``t.col`` (a column);
* ``select(rows, "col", {"shown": "col"})`` and ``format_cols(rows, {"col": ".1%"})`` for tables;
* per-seed lists: ``means(lists)`` (the mean of each), ``ci95(values)`` (``[low, high]``, 95%
  t-interval), ``mean_ci(values, ".4f")`` (``"mean [low, high]"`` as text) and
  ``mean_ci_cols(rows, {"col": ".2%"})`` (the same for columns);
* ``len min max sum mean median abs round num count unique match each``: ``num("13.5x")`` is the first
  number in a string; ``count(values, v)`` the number of elements equal to ``v``; ``unique(values)``
  the distinct values, sorted; ``match(r"in (\d+) of", text)`` the first group of a regex match;
  ``each(values, k)`` the element or key ``k`` of every element (``each(runs.load, 0)``).

A whole table is ``<!--figtable SOURCE EXPRESSION[:FORMAT]-->``, the table, ``<!--/figtable-->``, each
comment on a line of its own; the expression gives a list of rows (``select`` picks and renames
columns, ``format_cols`` formats some), FORMAT applies to the other numbers that are not whole.

Write figures for the page they sit on: a marker must not open a line (GitHub would show the line
as raw HTML); in code (fenced or inline) a marker is literal text, an example of the syntax.
Numbers that are definitions, not results (a limit, an input size) can be wrapped in
``<!--nofig REASON-->...<!--/nofig-->`` so the scan for hand-typed figures (``--scan``,
tests/test_figures.py) passes them.

Usage::

    python benchmarks/figures.py --check [FILE ...]   # exit 1, listing every figure that is wrong or unreadable
    python benchmarks/figures.py --write [FILE ...]   # refresh every shown value from its results file
                                                      # (and join lines so that no marker opens a line)
    python benchmarks/figures.py --scan [FILE ...]    # numbers outside figure markers (hand-typed figures;
                                                      # without FILE the PENDING pages are skipped)
    python benchmarks/figures.py --list [FILE ...]    # every figure, its source and its value
    python benchmarks/figures.py --eval 'SOURCE EXPRESSION[:FORMAT]'   # try an expression: its value and marker

Without FILE: README.md and every docs/**/*.md page.
"""

from __future__ import annotations

import argparse
import ast
import csv
import functools
import json
import math
import operator
import re
import statistics
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: pages that still carry hand-typed figures; each leaves this list when it is converted to figure
#: markers (the scan of tests/test_figures.py skips them, and fails on a listed page that is clean)
PENDING: frozenset[str] = frozenset()  # every page is converted (the last: docs/gavel_comparison.md)


class FigureError(Exception):
    """A figure that cannot be read: a missing source, key or row, or a malformed marker."""


# --------------------------------------------------------------------------------------------- sources


def _cell(v: str) -> Any:
    """A CSV cell: None when empty, else an int or float when it parses as one, else the string."""
    s = v.strip()
    if s == "":
        return None
    for cast in (int, float):
        try:
            return cast(s)
        except ValueError:
            pass
    return s


_MD_NUMBER = re.compile(r"[-+−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _md_cell(v: str) -> Any:
    """A markdown table cell: ``**`` and backticks removed; a number (thousands commas allowed) parsed."""
    s = v.strip().replace("**", "").strip("`").strip()
    if s == "":
        return None
    if _MD_NUMBER.fullmatch(s):
        return _cell(s.replace(",", "").replace("−", "-"))
    return s


def _md_tables(text: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every pipe table of a markdown text as ``(heading above it, rows keyed by header)``."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    lines = text.splitlines()
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if (
            line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and re.fullmatch(r"\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", lines[i + 1])
        ):
            header = [h.strip().replace("**", "") for h in line.strip().strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = [_md_cell(c) for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
                i += 1
            out.append((heading, rows))
            continue
        i += 1
    return out


def resolve(source: str, root: Path = ROOT) -> Path:
    """The file a SOURCE names: relative to ``benchmarks/results/``, or to ``root`` when it starts with ``/``."""
    base = root if source.startswith("/") else root / "benchmarks" / "results"
    path = (base / source.lstrip("/")).resolve()
    if not path.is_relative_to(root.resolve()):
        raise FigureError(f"source {source!r} is outside the repository")
    if not path.is_file():
        raise FigureError(f"source {source!r}: no such file ({path.relative_to(root.resolve()).as_posix()})")
    return path


@functools.lru_cache(maxsize=256)
def _load(path: Path, mtime_ns: int) -> dict[str, Any]:
    """The names a source file offers to expressions (cached per file version)."""
    del mtime_ns  # part of the cache key only
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix in (".json", ".toml"):
        data = json.loads(text) if suffix == ".json" else tomllib.loads(text)
        names = dict(data) if isinstance(data, dict) else {"rows": data}
        names["data"] = data
        return names
    if suffix == ".jsonl":
        return {"rows": [json.loads(line) for line in text.splitlines() if line.strip()]}
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        return {"rows": [{k: _cell(v or "") for k, v in r.items()} for r in reader]}
    if suffix in (".md", ".txt"):
        tables = _md_tables(text)
        return {"text": text, "tables": [rows for _, rows in tables], "_headed": tables}
    raise FigureError(f"{path.name}: unknown source type {suffix!r} (json, toml, jsonl, csv, md, txt)")


def load(source: str, root: Path = ROOT) -> dict[str, Any]:
    """The names of a SOURCE (see the module doc)."""
    path = resolve(source, root)
    return _load(path, path.stat().st_mtime_ns)


# ----------------------------------------------------------------------------------------- expressions


def _num(v: Any) -> float | int:
    """A number, or the first number in a string (thousands commas and a Unicode minus allowed)."""
    if isinstance(v, bool) or v is None:
        raise FigureError(f"num(): {v!r} is not a number")
    if isinstance(v, int | float):
        return v
    m = _MD_NUMBER.search(str(v))
    if not m:
        raise FigureError(f"num(): no number in {v!r}")
    return _cell(m.group(0).replace(",", "").replace("−", "-"))


def _numbers(values: Any, fn: str) -> list[Any]:
    if not isinstance(values, list):
        raise FigureError(f"{fn}() needs a list, got {values!r}")
    if not values:
        raise FigureError(f"{fn}() of an empty list")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int | float)]
    if bad:
        raise FigureError(f"{fn}() needs numbers; the list has {str(bad[0])[:80]!r}")
    return values


def _mean(values: Any) -> float:
    return statistics.fmean(_numbers(values, "mean"))


def _median(values: Any) -> Any:
    return statistics.median(_numbers(values, "median"))


def _match(pattern: str, string: Any, group: int = 1) -> Any:
    """The ``group`` of the first match of ``pattern`` in ``string``, a number when it reads as one."""
    m = re.search(pattern, str(string))
    if not m:
        raise FigureError(f"match({pattern!r}): no match in {str(string)[:80]!r}")
    return _md_cell(m.group(group if m.groups() else 0))


def _count(values: Any, value: Any) -> int:
    if not isinstance(values, list):
        raise FigureError(f"count() needs a list, got {values!r}")
    return sum(1 for v in values if _equal(v, value))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _t_cdf(t: float, df: float) -> float:
    """Student's t distribution function (stdlib only: the docs build must not import scipy)."""
    if t == 0:
        return 0.5
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    ib = front * _betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1.0 - front * _betacf(b, a, 1 - x) / b
    return 1.0 - 0.5 * ib if t > 0 else 0.5 * ib


def t_quantile(p: float, df: float) -> float:
    """The ``p``-quantile of Student's t with ``df`` degrees of freedom (bisection to 1e-12)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def _ci95(values: Any) -> list[float]:
    """The 95% t-interval of the mean of ``values`` (n - 1 degrees of freedom), as ``[low, high]``."""
    xs = _numbers(values, "ci95")
    if len(xs) < 2:
        raise FigureError("ci95() needs at least 2 values")
    m, sd = statistics.fmean(xs), statistics.stdev(xs)
    half = t_quantile(0.975, len(xs) - 1) * sd / math.sqrt(len(xs))
    return [m - half, m + half]


def _mean_ci(values: Any, spec: str = ".4g") -> str:
    """``"mean [low, high]"`` of ``values`` (95% t-interval), each number formatted with ``spec``."""
    lo, hi = _ci95(values)
    return f"{fmt(statistics.fmean(values), spec)} [{fmt(lo, spec)}, {fmt(hi, spec)}]"


def _mean_ci_cols(rows: Any, specs: dict[str, str]) -> list[dict[str, Any]]:
    """``rows`` with each named column (a list of per-seed values) replaced by ``"mean [low, high]"``."""
    if not isinstance(rows, list) or not isinstance(specs, dict):
        raise FigureError("mean_ci_cols(rows, {column: format}) needs a table and a dict")
    return [{k: (_mean_ci(v, specs[k]) if k in specs else v) for k, v in r.items()} for r in rows]


def _select(rows: Any, *columns: str | dict[str, str]) -> list[dict[str, Any]]:
    """``rows`` with only the named columns, in that order; a dict argument renames
    (``{"shown name": "column"}``)."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise FigureError("select() applies to a table (a list of rows)")
    pairs: list[tuple[str, str]] = []
    for c in columns:
        pairs += list(c.items()) if isinstance(c, dict) else [(c, c)]
    have = {k for r in rows for k in r}
    missing = [src for _, src in pairs if src not in have]
    if missing:
        raise FigureError(f"select(): no column {missing[0]!r} (columns: {', '.join(map(str, sorted(have)))})")
    return [{shown: r.get(src) for shown, src in pairs} for r in rows]


def _format_cols(rows: Any, specs: dict[str, str]) -> list[dict[str, Any]]:
    """``rows`` with the named columns formatted as text (``{"column": ".3f"}``); empty cells stay empty."""
    if not isinstance(rows, list) or not isinstance(specs, dict):
        raise FigureError("format_cols(rows, {column: format}) needs a table and a dict")
    return [{k: (fmt(v, specs[k]) if k in specs and v is not None else v) for k, v in r.items()} for r in rows]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "min": lambda v: min(_numbers(v, "min")),
    "max": lambda v: max(_numbers(v, "max")),
    "sum": lambda v: sum(_numbers(v, "sum")),
    "mean": _mean,
    "median": _median,
    "abs": abs,
    "round": round,
    "num": _num,
    "count": _count,
    "match": _match,
    "select": _select,
    "ci95": _ci95,
    "mean_ci": _mean_ci,
    "mean_ci_cols": _mean_ci_cols,
    "format_cols": _format_cols,
    "means": lambda lists: [_mean(v) for v in lists] if isinstance(lists, list) else _mean(lists),
    "each": lambda values, key: [_key(v, key) for v in values] if isinstance(values, list) else _key(values, key),
    "unique": lambda v: sorted(set(v), key=str) if isinstance(v, list) else _numbers(v, "unique"),
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return a == b


def _filter(rows: Any, args: list[Any], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise FigureError("where()/row() apply to a table (a list of rows)")
    cond: dict[str, Any] = {}
    for a in args:
        if not isinstance(a, dict):
            raise FigureError(f"where()/row(): a positional argument must be a dict of column: value, got {a!r}")
        cond.update(a)
    cond.update(kwargs)
    columns = {k for r in rows for k in r}
    unknown = [c for c in cond if c not in columns]
    if unknown:
        raise FigureError(f"no column {unknown[0]!r} (columns: {', '.join(sorted(columns))})")
    return [r for r in rows if all(_equal(r.get(c), v) for c, v in cond.items())]


def _where(rows: Any, args: list[Any], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    return _filter(rows, args, kwargs)


def _without(rows: Any, args: list[Any], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    hits = {id(r) for r in _filter(rows, args, kwargs)}
    return [r for r in rows if id(r) not in hits]


def _row(rows: Any, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    hits = _filter(rows, args, kwargs)
    if len(hits) != 1:
        cond = ", ".join(
            [*(f"{k}={v!r}" for a in args for k, v in a.items()), *(f"{k}={v!r}" for k, v in kwargs.items())]
        )
        raise FigureError(f"row({cond}): {len(hits)} rows match, expected exactly 1")
    return hits[0]


METHODS: dict[str, Callable[[Any, list[Any], dict[str, Any]], Any]] = {
    "where": _where,
    "without": _without,
    "row": _row,
}


def _key(obj: Any, key: Any) -> Any:
    """``obj[key]`` on a dict or list; on a list of dicts with a string key, that key of every element."""
    if isinstance(obj, dict):
        if key not in obj:
            shown = ", ".join(map(str, list(obj)[:30]))
            raise FigureError(f"no key {key!r} (keys: {shown}{', ...' if len(obj) > 30 else ''})")
        return obj[key]
    if isinstance(obj, list):
        if isinstance(key, int) and not isinstance(key, bool):
            if not -len(obj) <= key < len(obj):
                raise FigureError(f"index {key} out of range (a list of {len(obj)})")
            return obj[key]
        if isinstance(key, str):
            return [_key(e, key) for e in obj]
    raise FigureError(f"cannot take {key!r} of {type(obj).__name__} {str(obj)[:60]!r}")


class _Evaluator:
    """Evaluates the expression subset of the module doc over one source's names."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names

    def eval(self, node: ast.AST) -> Any:
        match node:
            case ast.Expression(body=body):
                return self.eval(body)
            case ast.Constant(value=v) if isinstance(v, int | float | str) or v is None:
                return v
            case ast.Name(id=name):
                if name in self.names and not name.startswith("_"):
                    return self.names[name]
                shown = ", ".join(n for n in self.names if not n.startswith("_"))
                raise FigureError(f"unknown name {name!r} (this source offers: {shown})")
            case ast.Attribute(value=value, attr=attr):
                return _key(self.eval(value), attr)
            case ast.Subscript(value=value, slice=index):
                return _key(self.eval(value), self.eval(index))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return -self.eval(operand)
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return +self.eval(operand)
            case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINOPS:
                a, b = self.eval(left), self.eval(right)
                try:
                    return _BINOPS[type(op)](a, b)
                except (TypeError, ZeroDivisionError) as e:
                    raise FigureError(f"{a!r} {type(op).__name__} {b!r}: {e}") from None
            case ast.List(elts=elts) | ast.Tuple(elts=elts):
                return [self.eval(e) for e in elts]
            case ast.Dict(keys=keys, values=values) if all(k is not None for k in keys):
                return {self.eval(k): self.eval(v) for k, v in zip(keys, values, strict=True)}
            case ast.Call(func=func, args=args, keywords=keywords) if all(k.arg for k in keywords):
                pos = [self.eval(a) for a in args]
                kw = {k.arg: self.eval(k.value) for k in keywords}
                if isinstance(func, ast.Attribute) and func.attr in METHODS:
                    return METHODS[func.attr](self.eval(func.value), pos, kw)
                if isinstance(func, ast.Name) and func.id in METHODS and "rows" in self.names:
                    return METHODS[func.id](self.names["rows"], pos, kw)
                if isinstance(func, ast.Name) and func.id in self.names and callable(self.names[func.id]):
                    return self.names[func.id](*pos, **kw)
                if isinstance(func, ast.Name) and func.id in FUNCTIONS:
                    try:
                        return FUNCTIONS[func.id](*pos, **kw)
                    except TypeError as e:
                        raise FigureError(f"{func.id}(): {e}") from None
                raise FigureError(
                    f"unknown function {ast.unparse(func)!r} (functions: {', '.join([*FUNCTIONS, *METHODS])})"
                )
        raise FigureError(f"{ast.unparse(node)!r} is not allowed in a figure expression")


def _text_names(names: dict[str, Any]) -> dict[str, Any]:
    """The functions a markdown/text source adds: ``table(k)`` and ``grep(pattern, group=1)``."""
    headed: list[tuple[str, list[dict[str, Any]]]] = names["_headed"]

    def table(k: int | str) -> list[dict[str, Any]]:
        if isinstance(k, int):
            if not 0 <= k < len(headed):
                raise FigureError(f"table({k}): the source has {len(headed)} tables")
            return headed[k][1]
        for heading, rows in headed:  # an exact heading first, then one containing k
            if heading == k:
                return rows
        for heading, rows in headed:
            if k in heading:
                return rows
        raise FigureError(f"table({k!r}): no table under a heading containing it (headings: {[h for h, _ in headed]})")

    def grep(pattern: str, group: int = 1) -> Any:
        m = re.search(pattern, names["text"], re.M)
        if not m:
            raise FigureError(f"grep({pattern!r}): no match")
        return _md_cell(m.group(group if m.groups() else 0))

    return {**names, "table": table, "grep": grep}


def evaluate(source: str, expr: str, root: Path = ROOT) -> Any:
    """The value of EXPRESSION on SOURCE (see the module doc)."""
    names = load(source, root)
    if "_headed" in names:
        names = _text_names(names)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SyntaxWarning)  # "\d" in a non-raw string: write r"\d"
            tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise FigureError(f"expression {expr!r} does not parse: {e.msg}") from None
    return _Evaluator(names).eval(tree)


def fmt(value: Any, spec: str) -> str:
    """``value`` formatted with the Python format ``spec``; a list or an empty value is an error."""
    if isinstance(value, list | dict):
        raise FigureError(f"the expression gives a {type(value).__name__} ({str(value)[:80]}); reduce it to one value")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise FigureError("the expression gives an empty value")
    try:
        return format(value, spec)
    except (ValueError, TypeError) as e:
        raise FigureError(f"format {value!r} with {spec!r}: {e}") from None


def md_table(value: Any, spec: str) -> str:
    """A markdown pipe table of a list of rows: the first row's keys as the header, numbers that are
    not whole formatted with ``spec`` (default ``.4g``), empty cells empty, ``|`` escaped."""
    if not isinstance(value, list) or not value or not all(isinstance(r, dict) for r in value):
        raise FigureError("a figtable expression must give a non-empty list of rows (dicts)")
    cols = list(value[0])

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        if isinstance(v, float):
            return format(v, spec or ".4g")
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in cols) + " |" for r in value]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ markers

FIG = re.compile(r"<!--fig\s+(?P<spec>[^\n]*?)\s*-->(?P<shown>[^\n]*?)<!--/fig-->")
FIGTABLE = re.compile(
    r"^<!--figtable\s+(?P<spec>[^\n]*?)\s*-->[ \t]*\n(?P<shown>.*?)^<!--/figtable-->[ \t]*$", re.M | re.S
)
_TABLE_OPEN = re.compile(r"<!--figtable\b")
_TABLE_CLOSE = re.compile(r"<!--/figtable-->")
_OPEN = re.compile(r"<!--fig\b")
_CLOSE = re.compile(r"<!--/fig-->")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINE_START = re.compile(r"[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+|>[ \t]*)*")  # what may precede a block's first text


@dataclass(frozen=True)
class Figure:
    """One figure marker of a page: where it is, what it reads, what it shows."""

    page: str
    line: int
    source: str
    expr: str
    spec: str
    shown: str
    start: int
    end: int
    table: bool = False

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def value(self, root: Path = ROOT) -> str:
        """The text the source gives for this figure (raises :class:`FigureError`)."""
        value = evaluate(self.source, self.expr, root)
        return md_table(value, self.spec) if self.table else fmt(value, self.spec)

    def marker(self, shown: str) -> str:
        spec = f":{self.spec}" if self.spec else ""
        if self.table:
            return f"<!--figtable {self.source} {self.expr}{spec}-->\n\n{shown}\n\n<!--/figtable-->"
        return f"<!--fig {self.source} {self.expr}{spec}-->{shown}<!--/fig-->"


def split_spec(spec: str) -> tuple[str, str, str]:
    """``SOURCE EXPRESSION[:FORMAT]`` as ``(source, expression, format)``."""
    parts = spec.strip().split(None, 1)
    if len(parts) != 2:
        raise FigureError(f"figure {spec!r}: expected 'SOURCE EXPRESSION[:FORMAT]'")
    source, rest = parts
    for i in range(len(rest) - 1, -1, -1):  # the last ':' whose left side parses as an expression
        if rest[i] == ":":
            try:
                ast.parse(rest[:i].strip(), mode="eval")
            except SyntaxError:
                continue
            return source, rest[:i].strip(), rest[i + 1 :].strip()
    return source, rest.strip(), ""


def _code_lines(text: str) -> set[int]:
    """0-based numbers of the lines inside fenced code blocks (fences included)."""
    inside, fence, out = False, "", set()
    for i, line in enumerate(text.split("\n")):
        m = _FENCE.match(line)
        if m and (not inside or m.group(1) == fence):
            out.add(i)
            inside, fence = (not inside), m.group(1)
        elif inside:
            out.add(i)
    return out


_INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks and inline code (where markers are literal text)."""
    offsets = [0]
    for line in text.split("\n"):
        offsets.append(offsets[-1] + len(line) + 1)
    spans = [(offsets[i], offsets[i + 1] - 1) for i in sorted(_code_lines(text))]
    masked = _mask(text, spans)
    return spans + [m.span() for m in _INLINE_CODE.finditer(masked)]


def parse(text: str, page: str) -> tuple[list[Figure], list[str]]:
    """The figure markers of a page, and the problems of its markup (malformed or misplaced markers).

    Markers in code (fenced blocks, inline code) are literal text: examples of the syntax."""
    figures: list[Figure] = []
    problems: list[str] = []
    code = _code_spans(text)

    def in_code(i: int) -> bool:
        return any(a <= i < b for a, b in code)

    spans = []
    for m in FIGTABLE.finditer(text):
        if in_code(m.start()):
            continue
        line = text.count("\n", 0, m.start()) + 1
        spans.append((m.start(), m.end()))
        try:
            source, expr, spec = split_spec(m.group("spec"))
        except FigureError as e:
            problems.append(f"{page}:{line}: {e}")
            continue
        shown = m.group("shown").strip("\n")
        figures.append(Figure(page, line, source, expr, spec, shown, m.start(), m.end(), table=True))
    for pattern, what in ((_TABLE_OPEN, "opening <!--figtable"), (_TABLE_CLOSE, "closing <!--/figtable-->")):
        for m in pattern.finditer(text):
            if not in_code(m.start()) and not any(a <= m.start() < b for a, b in spans):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{page}:{line}: {what} without its pair (each on a line of its own)")
    tables = list(spans)
    for m in FIG.finditer(text):
        if in_code(m.start()) or any(a <= m.start() < b for a, b in tables):
            continue
        line = text.count("\n", 0, m.start()) + 1
        spans.append((m.start(), m.end()))
        try:
            source, expr, spec = split_spec(m.group("spec"))
        except FigureError as e:
            problems.append(f"{page}:{line}: {e}")
            continue
        if _LINE_START.fullmatch(text[text.rfind("\n", 0, m.start()) + 1 : m.start()]):
            problems.append(
                f"{page}:{line}: a figure marker opens the line (GitHub would render the line as raw HTML); "
                "put a word before it"
            )
        figures.append(Figure(page, line, source, expr, spec, m.group("shown"), m.start(), m.end()))
    for m in _NOFIG_TAG.finditer(text):  # a region tag alone on its line is a block; before text it is raw HTML
        line_end = text.find("\n", m.end())
        rest = text[m.end() : len(text) if line_end < 0 else line_end]
        if (
            not in_code(m.start())
            and rest.strip()
            and _LINE_START.fullmatch(text[text.rfind("\n", 0, m.start()) + 1 : m.start()])
        ):
            problems.append(
                f"{page}:{text.count(chr(10), 0, m.start()) + 1}: a nofig tag opens a line of text (GitHub would "
                "render the line as raw HTML); put a word before it or the tag on a line of its own"
            )
    for pattern, what in ((_OPEN, "opening <!--fig"), (_CLOSE, "closing <!--/fig-->")):
        for m in pattern.finditer(text):
            if not in_code(m.start()) and not any(a <= m.start() < b for a, b in spans):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{page}:{line}: {what} without its pair on the same line")
    figures.sort(key=lambda f: f.start)
    return figures, problems


_NOFIG_TAG = re.compile(r"<!--/?nofig\b[^>]*-->")
_NOFIG_LINE = re.compile(r"^[ \t]*<!--/?nofig\b[^>]*-->[ \t]*\n", re.M)


def join_opening_markers(text: str) -> str:
    """``text`` with every paragraph continuation line that opens with a figure marker joined to the
    line above (which renders the same), so no marker opens a line; ``--write`` applies it. A marker
    that opens a paragraph, a list item or a line after a heading or a table row is left (an error)."""
    lines = text.split("\n")
    code = _code_lines(text)
    out: list[str] = []
    for i, line in enumerate(lines):
        prev = out[-1] if out else ""
        if (
            i not in code
            and i - 1 not in code
            and line.lstrip(" \t").startswith("<!--fig ")
            and prev.strip()
            and not prev.lstrip().startswith(("#", "|", "<!--nofig", "```", "~~~"))
            and not prev.rstrip().endswith("  ")  # a hard line break
        ):
            out[-1] = prev.rstrip() + " " + line.lstrip(" \t")
        else:
            out.append(line)
    return "\n".join(out)


def render(text: str, page: str, *, strip: bool, root: Path = ROOT) -> tuple[str, list[str], list[str]]:
    """The page with every figure's value read from its source: ``(text, errors, differences)``.

    ``strip=False`` keeps the markers and rewrites the shown values (``--write``); ``strip=True``
    replaces each marker by its value and drops ``<!--nofig-->`` comments (the docs site).
    ``errors``: malformed or misplaced markers and figures whose source cannot be read (those keep
    their shown text); ``differences``: figures whose shown text differs from their source's value."""
    figures, errors = parse(text, page)
    diffs: list[str] = []
    out, pos = [], 0
    for f in figures:
        try:
            value = f.value(root)
        except FigureError as e:
            errors.append(f"{f.where}: {f.source} {f.expr!r}: {e}")
            value = f.shown
        else:
            if value != f.shown:
                diffs.append(f"{f.where}: shows {f.shown!r}, {f.source} gives {value!r} ({f.expr})")
        shown = (f"\n{value}\n" if f.table else value) if strip else f.marker(value)
        out += [text[pos : f.start], shown]
        pos = f.end
    out.append(text[pos:])
    page_text = "".join(out)
    if strip:  # the site: drop the scan's region comments too (a line holding only one goes)
        page_text = _NOFIG_LINE.sub("", page_text)
        page_text = _NOFIG_TAG.sub("", page_text)
    return page_text, errors, diffs


# ---------------------------------------------------------------------------- the scan for typed figures

#: numeric claims: ratios, percentages, durations, sizes, "x / y / z" and "k of n" counts, decimals
CLAIM = re.compile(
    r"""
    (?<![\w.])[-+−±~]?\d+(?:[.,]\d+)*(?:\s?[–-]\s?\d+(?:\.\d+)*)?
        (?:[x×](?![\w])|\s?%|\s?(?:ms|µs|us|s|min|h|hours?|seconds?|minutes?|days?|years?)(?![\w])|\s?[KMGT]i?B\b)
    | (?<![\w.])\d+\s?/\s?\d+(?:\s?/\s?\d+)+(?![\w.])
    | (?<![\w.])\d+(?:,\d{3})*\s+(?:of|out\ of)\s+(?:the\s+)?\d+(?:,\d{3})*(?![\w.])
    | (?<![\w.])[-+−]?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])
    | (?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])
    """,
    re.X,
)

#: text just before a number that makes it something other than a measured figure, with the reason
ALLOWED_BEFORE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?i)(?:python|cpython|mesa|numpy|scipy|pandas|cvxpy|ecos|highs|highspy|pyscipopt|scip|dask|"
            r"mkdocs|solara|ipyvuetify|pip|setuptools|pytest|version|CC\s?BY(?:-SA)?|v)\s*(?:[<>=!~]=?\s*)?$"
        ),
        "a software or licence version",
    ),
    (
        # "paper +20%", "the paper reports 1.56 s", "paper 0.81x / 0.83x": up to 4 words, no bracket or ;:
        re.compile(
            r"(?i)\bpaper(?:'s)?(?:\s+(?:reports|gives|says|states|claims))?\s*:?(?:\s*[^\s()\[\];:]+){0,4}\s*$"
        ),
        "a figure quoted from a paper (a published constant: it cannot drift)",
    ),
    (re.compile(r"(?i)\bdefault(?:s| is| of)?\s*:?\s*$"), "a parameter's default (a definition)"),
    (
        re.compile(r"(?:Theorem|Lemma|Corollary|Proposition|Section|Appendix|Fig\.|Figure|Table|Eq\.|§)\s*$"),
        "a paper's numbering (Theorem 5.2, §6.2.1)",
    ),
)
#: text just after a number that makes it something other than a measured figure, with the reason
ALLOWED_AFTER: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s?(?:CI|confidence|t[- ]intervals?|intervals?|Wilson)\b"), "a confidence level"),
    (re.compile(r"^\s?(?:target|threshold|budget|tolerance)\b"), "a target or threshold (a definition)"),
    (re.compile(r"^[\s-]?(?:CCE|equilibri)"), "the tolerance of an equilibrium concept (1%-CCE)"),
)


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with the given spans blanked (newlines kept, so line numbers hold)."""
    chars = list(text)
    for a, b in spans:
        for i in range(a, b):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


_NOFIG = re.compile(r"<!--nofig\s+(?P<reason>[^>]*?)\s*-->.*?<!--/nofig-->", re.S)
_EXCLUDED = (
    FIGTABLE,  # tables read from results files
    FIG,  # figures read from results files
    re.compile(r"<!--.*?-->", re.S),  # other comments
    _INLINE_CODE,  # inline code: commands, keys, literal values
    re.compile(r"\]\([^)\s]*\)"),  # link targets
    re.compile(r"https?://\S+"),
)


def scan(text: str, page: str) -> list[str]:
    """Numbers of a page that look like measured figures but are not figure markers: ``page:line: match``.

    Skipped: fenced code blocks, inline code, link targets, figure markers, ``<!--nofig REASON-->``
    regions (a reason is required), and the contexts of :data:`ALLOWED_BEFORE` / :data:`ALLOWED_AFTER`
    (versions, figures quoted from a paper, defaults, confidence levels)."""
    problems = []
    spans = [m.span() for m in _NOFIG.finditer(text)]
    for m in _NOFIG.finditer(text):
        if not m.group("reason").strip():
            problems.append(f"{page}:{text.count(chr(10), 0, m.start()) + 1}: <!--nofig--> without a reason")
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    spans += [(offsets[i], offsets[i + 1] - 1) for i in _code_lines(text)]
    masked = _mask(text, spans)
    for pattern in _EXCLUDED:
        masked = _mask(masked, [m.span() for m in pattern.finditer(masked)])
    for m in CLAIM.finditer(masked):
        before = masked[max(0, m.start() - 60) : m.start()].split("\n\n")[-1].replace("\n", " ")
        after = masked[m.end() : m.end() + 30].split("\n\n")[0].replace("\n", " ")
        if any(p.search(before) for p, _ in ALLOWED_BEFORE) or any(p.search(after) for p, _ in ALLOWED_AFTER):
            continue
        line = masked.count("\n", 0, m.start()) + 1
        problems.append(f"{page}:{line}: {m.group(0).strip()!r} in: {lines[line - 1].strip()[:160]}")
    return problems


# ----------------------------------------------------------------------------------------------- CLI


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every markdown page under docs/ (``_*`` folders excluded)."""
    docs = sorted(
        p for p in (root / "docs").rglob("*.md") if not any(s.startswith("_") for s in p.relative_to(root).parts)
    )
    return [root / "README.md", *docs]


def tracked(root: Path = ROOT) -> set[str] | None:
    """Repository paths tracked by git, or None when ``root`` is not a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.decode().split("\0")) - {""}


def check(paths: Iterable[Path], root: Path = ROOT) -> list[str]:
    """Every problem of the figures of ``paths``: unreadable or differing values, untracked sources."""
    problems: list[str] = []
    known = tracked(root)
    for path in paths:
        page = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        _, errors, diffs = render(text, page, strip=False, root=root)
        problems += errors + diffs
        if known is None:
            continue
        for f in parse(text, page)[0]:
            try:
                rel = resolve(f.source, root).relative_to(root.resolve()).as_posix()
            except FigureError:
                continue  # reported by render
            if rel not in known:
                problems.append(f"{f.where}: source {rel} is not committed (git add it)")
    return problems


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    """The command line (see the module doc); ``root`` is the repository (default: this file's)."""
    root = (root or ROOT).resolve()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail (exit 1) when a figure is unreadable or differs")
    mode.add_argument("--write", action="store_true", help="rewrite every shown value from its results file")
    mode.add_argument("--scan", action="store_true", help="list numbers outside figure markers (hand-typed)")
    mode.add_argument("--list", action="store_true", help="list every figure with its source and value")
    mode.add_argument("--eval", metavar="SPEC", help="print the value of 'SOURCE EXPRESSION[:FORMAT]' and its marker")
    ap.add_argument("files", nargs="*", type=Path, help="markdown files (default: README.md and docs/**/*.md)")
    a = ap.parse_args(argv)
    if a.eval:
        try:
            source, expr, spec = split_spec(a.eval)
            value = fmt(evaluate(source, expr, root), spec)
        except FigureError as e:
            print(e, file=sys.stderr)
            return 1
        print(value)
        print(Figure("", 0, source, expr, spec, value, 0, 0).marker(value))
        return 0
    paths = [p.resolve() for p in a.files] or pages(root)
    problems: list[str] = []
    if a.check:
        problems = check(paths, root)
    elif a.write:
        for path in paths:
            page = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            new, errors, diffs = render(join_opening_markers(text), page, strip=False, root=root)
            problems += errors
            if new != text:
                path.write_text(new, encoding="utf-8")
                print(f"{page}: {len(diffs)} figure(s) updated")
                for d in diffs:
                    print(f"  {d}")
    elif a.scan:
        for path in paths:
            page = path.relative_to(root).as_posix()
            if a.files or page not in PENDING:  # a page named on the command line is scanned even if pending
                problems += scan(path.read_text(encoding="utf-8"), page)
    else:
        for path in paths:
            page = path.relative_to(root).as_posix()
            for f in parse(path.read_text(encoding="utf-8"), page)[0]:
                try:
                    value = f.value(root)
                except FigureError as e:
                    value = f"ERROR {e}"
                print(f"{f.where}\t{f.source}\t{f.expr}{':' + f.spec if f.spec else ''}\t{value}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
