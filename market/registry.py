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

# Modules whose import registers mechanisms, per family. Fixed here; never derived from user input.
# A family is imported only when it is asked for, so a fair-share run (and every sweep or pool
# worker running one) never pays for importing the auction papers.
_FAMILY_MODULES: dict[str, tuple[str, ...]] = {
    "fair-share": ("market.oef.mechanisms", "market.oef.baselines", "market.oef.gavel"),
    "auction": ("market.auction.mechanisms", "market.auction.controls", "market.astraea.mechanisms", "market.eris"),
}
_MECHANISM_MODULES: tuple[str, ...] = tuple(m for mods in _FAMILY_MODULES.values() for m in mods)

_REGISTRY: dict[str, MechanismInfo] = {}
_loaded: set[str] = set()


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


def _load(family: str | None = None) -> None:
    """Import the modules of ``family`` (``None``: every family), once."""
    if family is not None and family not in _FAMILY_MODULES:
        raise InputError("family", family, f"must be one of {sorted(_FAMILY_MODULES)}")
    for fam in _FAMILY_MODULES if family is None else (family,):
        if fam not in _loaded:
            for mod in _FAMILY_MODULES[fam]:
                importlib.import_module(mod)
            _loaded.add(fam)


def get(name: str, family: str | None = None) -> MechanismInfo:
    """The mechanism registered as ``name``; a clear :class:`InputError` listing the known names
    otherwise (restricted to ``family`` when given). Families are imported one at a time until
    ``name`` is found."""
    info = _REGISTRY.get(name)
    for fam in _FAMILY_MODULES if family is None else (family,):
        if info is not None:
            break
        _load(fam)
        info = _REGISTRY.get(name)
    if info is None:
        _load(family)
    if info is None or (family is not None and info.family != family):
        kind = f"{family} " if family else ""
        raise InputError("mechanism", name, f"must be a registered {kind}mechanism (known: {', '.join(names(family))})")
    return info


def names(family: str | None = None) -> list[str]:
    """Registered names, sorted, optionally of one family."""
    _load(family)
    return sorted(n for n, i in _REGISTRY.items() if family is None or i.family == family)
