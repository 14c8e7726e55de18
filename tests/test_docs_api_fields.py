"""Every function, method and class constructor the API reference renders documents its parameters
and its result, so mkdocstrings (``docstring_style: sphinx``) shows Parameters/Returns sections.

The objects are found the way the reference pages name them: each ``::: identifier`` line of
docs/reference/*.md (with its ``show_submodules`` and ``members`` options) is imported, and the walk
takes what mkdocstrings renders there: the module's public functions and classes (its own, and
imported ones listed in ``__all__``; only the listed ones when the line has a ``members:`` list,
which also selects a package's submodules) and the public methods a class defines. A function or method with
parameters besides ``self``/``cls`` needs a ``:param name:`` field for each, and a ``:returns:``
field unless it is annotated to return ``None``; a constructor (the class's own ``__init__``, a
dataclass's fields) needs a ``:param`` for each parameter in the class or ``__init__`` docstring; a
``:param`` must name a real parameter; a function that raises ``InputError`` itself says so with
``:raises InputError:``.

Every rendered object has its fields: a new public function without them fails here.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
NO_RESULT = {"None", "NoReturn", "Never", "typing.NoReturn", "typing.Never"}
_DIRECTIVE = re.compile(r"^::: ([\w.]+)[ \t]*\n((?:[ \t]+\S.*\n?)*)", re.M)
_MEMBERS = re.compile(r"^([ \t]+)members:[ \t]*\n((?:\1[ \t]+- \w+[ \t]*\n?)+)", re.M)
_PARAM = re.compile(r"^\s*:param(?:\s+[^:]+?)?\s+\\?\*{0,2}(\w+):", re.M)
_RETURNS = re.compile(r"^\s*:(?:returns?|yields?):", re.M)
_RAISES_INPUT = re.compile(r"^\s*:raises\s+(?:[\w.~`:]*\.)?InputError`?:", re.M)


def reference_identifiers(
    pages: Path = ROOT / "docs" / "reference",
) -> list[tuple[str, bool, frozenset[str] | None]]:
    """``(identifier, show_submodules, members)`` for every ``:::`` line of the reference pages;
    ``members`` is the line's ``members:`` list (``None`` without one)."""
    out = []
    for page in sorted(pages.glob("*.md")):
        for m in _DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            listed = _MEMBERS.search(m.group(2))
            members = frozenset(re.findall(r"- (\w+)", listed.group(2))) if listed else None
            out.append((m.group(1), bool(re.search(r"^\s+show_submodules:\s*true\s*$", m.group(2), re.M)), members))
    return out


def _modules(identifier: str, submodules: bool, members: frozenset[str] | None) -> Iterator[ModuleType]:
    """The module and (``submodules``) its public submodules; a ``members`` list keeps the
    submodules whose first level below ``identifier`` it names."""
    module = importlib.import_module(identifier)
    yield module
    if submodules and hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, module.__name__ + "."):
            below = info.name.removeprefix(module.__name__ + ".").split(".")
            if members is not None and below[0] not in members:
                continue
            if not any(part.startswith("_") for part in info.name.split(".")):
                yield importlib.import_module(info.name)


def _own(obj: object, module: ModuleType, name: str) -> bool:
    """``obj`` is defined in ``module`` under ``name`` (not an import, not an alias of a local)."""
    return (getattr(obj, "__module__", None) == module.__name__ and getattr(obj, "__name__", None) == name
            and "<locals>" not in getattr(obj, "__qualname__", "<locals>"))


@functools.cache
def rendered_objects() -> dict[str, Callable[..., object]]:
    """Qualified name -> every public function, class and method the reference pages render."""
    found: dict[str, Callable[..., object]] = {}

    def add_class(cls: type) -> None:
        found[f"{cls.__module__}.{cls.__qualname__}"] = cls
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if inspect.isfunction(fn):
                found[f"{cls.__module__}.{cls.__qualname__}.{name}"] = fn

    for identifier, submodules, members in reference_identifiers():
        for module in _modules(identifier, submodules, members):
            exported = set(getattr(module, "__all__", ()))
            for name, obj in vars(module).items():
                if members is not None and module.__name__ == identifier and name not in members:
                    continue
                if hasattr(obj, "__wrapped__") and not inspect.isclass(obj):
                    obj = inspect.unwrap(obj)  # a pytest fixture renders as its function
                if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                if not (_own(obj, module, name) or name in exported):
                    continue
                if inspect.isclass(obj):
                    add_class(obj)
                else:
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def _constructor(cls: type) -> Callable[..., object] | None:
    """The constructor mkdocstrings merges into the class (its own ``__init__``, or a NamedTuple's
    ``__new__``); ``None`` for an inherited one, an enum or a protocol."""
    import enum

    if issubclass(cls, (enum.Enum, BaseException)) and "__init__" not in vars(cls):
        return None
    if getattr(cls, "_is_protocol", False):
        return None
    if "__init__" in vars(cls):
        return vars(cls)["__init__"]
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return cls.__new__
    return None


def _parameters(fn: Callable[..., object]) -> tuple[list[str], str]:
    sig = inspect.signature(fn)
    names = [p.name for p in sig.parameters.values() if p.name not in ("self", "cls", "_cls")]
    ret = sig.return_annotation
    if ret is inspect.Signature.empty:
        result = ""
    elif ret is None:
        result = "None"
    else:
        result = ret if isinstance(ret, str) else getattr(ret, "__name__", str(ret))
    return names, result


def missing_fields(obj: Callable[..., object]) -> tuple[list[str], list[str]]:
    """``(missing, wrong)``: the fields ``obj``'s docstring lacks (``:param x``, ``:returns``,
    ``:raises InputError``) and the ``:param`` names that are no parameter of it."""
    if inspect.isclass(obj):
        init = _constructor(obj)
        if init is None:
            return [], []
        doc = (inspect.getdoc(obj) or "") + "\n" + (init.__doc__ if "__init__" in vars(obj) and init.__doc__ else "")
        names, _ = _parameters(init)
        need_result = False
        source_of = init
    else:
        doc = inspect.getdoc(obj) or ""
        names, result = _parameters(obj)
        need_result = bool(names) and result not in NO_RESULT
        source_of = obj
    documented = _PARAM.findall(doc)
    missing = [f":param {n}" for n in names if n not in documented]
    if need_result and not _RETURNS.search(doc):
        missing.append(":returns")
    try:
        source = inspect.getsource(inspect.unwrap(source_of))
    except (OSError, TypeError):
        source = ""
    if re.search(r"\braise InputError\(", source) and not _RAISES_INPUT.search(doc):
        missing.append(":raises InputError")
    wrong = [n for n in documented if n not in names]
    return missing, wrong


def audit(objects: dict[str, Callable[..., object]]) -> list[str]:
    """Every problem: a missing field or a ``:param`` naming no parameter."""
    problems = []
    for qualname, obj in sorted(objects.items()):
        key = qualname
        missing, wrong = missing_fields(obj)
        problems += [f"{key}: ':param {n}:' names no parameter" for n in wrong]
        if missing:
            problems.append(f"{key}: docstring lacks {', '.join(missing)}")
    return problems


def test_reference_pages_name_importable_identifiers() -> None:
    idents = {name: whole for name, whole, _ in reference_identifiers()}
    assert len(idents) >= 20
    assert idents["marketsim.market.audit"] is True and idents["marketsim.market.registry"] is False
    objects = rendered_objects()
    # one of each kind: a module function, a class with its constructor, a method, an __all__ re-export
    assert any(k.endswith("marketsim.market.registry.get") for k in objects)
    assert any(k.endswith("marketsim.market.errors.InputError") for k in objects)
    assert any(k.endswith("marketsim.market.audit.fairshare.FairShareTarget") for k in objects)
    assert len(objects) > 500
    # a members: list restricts a module to the names it lists and a package to the submodules it lists
    keys = set(objects)
    assert "marketsim.market.oef.validate.validate_inputs" in keys
    assert "marketsim.market.oef.validate.prepare" not in keys
    assert "marketsim.market.oef.claims.c1" in keys
    assert not any(k.startswith("marketsim.market.oef.programs.") for k in keys)


def test_every_rendered_function_documents_its_parameters_and_result() -> None:
    problems = audit(rendered_objects())
    assert not problems, "API reference docstrings (sphinx fields):\n" + "\n".join(problems)


def test_the_field_check_catches_a_missing_param_returns_and_raises() -> None:
    def documented(weights: list[float], seed: int = 0) -> float:
        """Mean weight.

        :param weights: one per tenant, > 0
        :param seed: unused
        :returns: the mean
        """
        return sum(weights) / len(weights)

    def lacking(weights: list[float], seed: int = 0) -> float:
        """Mean weight.

        :param weights: one per tenant, > 0
        :param speed: no such parameter
        """
        if not weights:
            raise InputError("weights", weights, "must not be empty")  # noqa: F821
        return sum(weights) / len(weights)

    def nothing(x: int) -> None:
        """Side effect only.

        :param x: anything
        """

    assert missing_fields(documented) == ([], [])
    assert missing_fields(nothing) == ([], [])
    assert missing_fields(lacking) == ([":param seed", ":returns", ":raises InputError"], ["speed"])
    problems = audit({"pkg.lacking": lacking, "pkg.documented": documented})
    assert problems == ["pkg.lacking: ':param speed:' names no parameter",
                        "pkg.lacking: docstring lacks :param seed, :returns, :raises InputError"]
