"""The mechanism registry: every mechanism under one stable name.

Configs, the CLI, the audit and the benchmarks look mechanisms up here by name. There is no
import-by-string from user input: the modules that register mechanisms are a fixed list below.

Families:

* ``"fair-share"``: ``fn(W, m, *, weights=None, caps=None, **options) -> market.allocation.Allocation``
  where ``W`` (n x k) are reported speedups (column 0 = slowest type), ``m`` (k,) GPUs per type,
  ``weights`` (n,) priorities > 0 and ``caps`` (n,) most GPUs a row can use at once.
* ``"auction"``: online / batch posted-price mechanisms (see each mechanism's module).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from market.errors import InputError

__all__ = ["MechanismInfo", "register", "get", "names", "FAMILIES"]

FAMILIES = ("fair-share", "auction")

# Modules whose import registers mechanisms. Fixed here; never derived from user input.
_MECHANISM_MODULES: tuple[str, ...] = (
    "market.oef.mechanisms",
    "market.oef.baselines",
    "market.auction.mechanisms",
    "market.auction.controls",
    "market.astraea.mechanisms",
    "market.eris",
)

_REGISTRY: dict[str, MechanismInfo] = {}
_loaded = False


@dataclass(frozen=True)
class MechanismInfo:
    """A registered mechanism: stable ``name``, ``family``, callable ``fn``, one-line ``summary``,
    source ``paper`` key (e.g. ``"oef"``) and whether the paper claims it is strategy-proof."""

    name: str
    family: str
    fn: Callable[..., Any]
    summary: str
    paper: str = ""
    claims_truthful: bool = False


def register(
    name: str, family: str, summary: str, paper: str = "", claims_truthful: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` under ``name`` (names are unique)."""
    if family not in FAMILIES:
        raise InputError("family", family, f"must be one of {list(FAMILIES)}")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise InputError("mechanism name", name, "is already registered")
        _REGISTRY[name] = MechanismInfo(name, family, fn, summary, paper, claims_truthful)
        return fn

    return deco


def _load() -> None:
    global _loaded
    if not _loaded:
        for mod in _MECHANISM_MODULES:
            importlib.import_module(mod)
        _loaded = True


def get(name: str, family: str | None = None) -> MechanismInfo:
    """The mechanism registered as ``name``; a clear :class:`InputError` listing the known names
    otherwise (restricted to ``family`` when given)."""
    _load()
    info = _REGISTRY.get(name)
    if info is None or (family is not None and info.family != family):
        kind = f"{family} " if family else ""
        raise InputError("mechanism", name, f"must be a registered {kind}mechanism (known: {', '.join(names(family))})")
    return info


def names(family: str | None = None) -> list[str]:
    """Registered names, sorted, optionally of one family."""
    _load()
    return sorted(n for n, i in _REGISTRY.items() if family is None or i.family == family)
