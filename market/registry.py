"""The mechanism registry: every mechanism under one stable name.

Configs, the CLI, the audit and the benchmarks look mechanisms up here by name. There is no
import-by-string from user input: the modules that register mechanisms are declared by installed
plugins (:mod:`market.plugins`, entry-point group ``marketsim.mechanisms``), the five papers
included, and imported one family at a time when a name of that family is first asked for.

Families:

* ``"fair-share"``: ``fn(W, m, *, weights=None, caps=None, **options) -> market.allocation.Allocation``
  where ``W`` (n x k) are reported speedups (column 0 = slowest type), ``m`` (k,) GPUs per type,
  ``weights`` (n,) priorities > 0 and ``caps`` (n,) most GPUs a row can use at once.
* ``"auction"``: online / batch posted-price mechanisms (see each mechanism's module).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from market.errors import InputError

__all__ = ["MechanismInfo", "register", "get", "names", "FAMILIES"]

FAMILIES = ("fair-share", "auction")

_REGISTRY: dict[str, MechanismInfo] = {}


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
    screen: Callable[..., Any] | None = None


def register(
    name: str,
    family: str,
    summary: str,
    paper: str = "",
    claims_truthful: bool = False,
    screen: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` under ``name`` (names are unique).

    ``screen`` (fair-share only, optional): ``screen(W, m, weights, caps, options) -> resolver | None``
    builds a fast misreport screen for one TRUE instance (``W`` rows normalised by column 0); the
    resolver's ``allocation(agent, row) -> X`` (n, k) must equal ``fn`` with ``agent``'s row replaced
    by ``row``. The auditor screens with it and confirms every family's best with ``fn``."""
    if family not in FAMILIES:
        raise InputError("family", family, f"must be one of {list(FAMILIES)}")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise InputError("mechanism name", name, "is already registered")
        _REGISTRY[name] = MechanismInfo(name, family, fn, summary, paper, claims_truthful, screen)
        return fn

    return deco


def _load(family: str | None = None) -> None:
    """Import the plugin modules of ``family`` (``None``: every family); each module once.
    Families are imported lazily so a fair-share run never pays for the auction papers."""
    if family is not None and family not in FAMILIES:
        raise InputError("family", family, f"must be one of {list(FAMILIES)}")
    from market import plugins

    plugins.import_modules(plugins.modules("mechanisms", family))


def get(name: str, family: str | None = None) -> MechanismInfo:
    """The mechanism registered as ``name``; a clear :class:`InputError` listing the known names
    otherwise (restricted to ``family`` when given). Families are imported one at a time until
    ``name`` is found."""
    info = _REGISTRY.get(name)
    for fam in FAMILIES if family is None else (family,):
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
