"""The mechanism registry: every mechanism under one stable name.

Configs, the CLI, the audit and the benchmarks look mechanisms up here by name. There is no
import-by-string from user input: the modules that register mechanisms are declared by installed
plugins (:mod:`marketsim.market.plugins`, entry-point group ``marketsim.mechanisms``), the five papers
included, and imported one family at a time when a name of that family is first asked for.

Families:

* ``"fair-share"``: ``fn(W, m, *, weights=None, caps=None, **options) -> marketsim.market.allocation.Allocation``
  where ``W`` (n x k) are reported speedups (column 0 = slowest type), ``m`` (k,) GPUs per type,
  ``weights`` (n,) priorities > 0 and ``caps`` (n,) most GPUs a row can use at once. A mechanism
  that does not implement caps is registered with ``caps=False``: the round engine (every
  ``marketsim run``, the live page) then calls it without them and caps its rows itself.
* ``"auction"``: online / batch posted-price mechanisms (see each mechanism's module).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marketsim.market.errors import InputError

__all__ = ["MechanismInfo", "register", "get", "names", "check_name_clashes", "FAMILIES"]

FAMILIES = ("fair-share", "auction")

_REGISTRY: dict[str, MechanismInfo] = {}


@dataclass(frozen=True)
class MechanismInfo:
    """A registered mechanism (built by :func:`register`).

    :param name: the stable name (unique across families)
    :param family: ``"fair-share"`` or ``"auction"``
    :param fn: the mechanism's callable (fair-share: ``fn(W, m, *, weights, caps, **options)``)
    :param summary: one line for ``marketsim list``
    :param paper: the source paper's key, e.g. ``"oef"`` (comma-separated when several)
    :param claims_truthful: whether the paper claims it is strategy-proof
    :param screen: the optional fast misreport screen (see :func:`register`)
    :param plugin: the plugin that registered it (``""``: imported outside a plugin import)
    :param caps: (fair-share) whether ``fn`` implements the row ``caps``
    """

    name: str
    family: str
    fn: Callable[..., Any]
    summary: str
    paper: str = ""
    claims_truthful: bool = False
    screen: Callable[..., Any] | None = None
    plugin: str = ""
    caps: bool = True


def register(
    name: str,
    family: str,
    summary: str,
    paper: str = "",
    claims_truthful: bool = False,
    screen: Callable[..., Any] | None = None,
    caps: bool = True,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` under ``name`` (names are unique).

    ``screen`` (fair-share only, optional): ``screen(W, m, weights, caps, options) -> resolver | None``
    builds a fast misreport screen for one TRUE instance (``W`` rows normalised by column 0); the
    resolver's ``allocation(agent, row) -> X`` (n, k) must equal ``fn`` with ``agent``'s row replaced
    by ``row``. The auditor screens with it and confirms every family's best with ``fn``.

    ``caps`` (fair-share only): ``True`` (default) when ``fn`` implements the row caps ``caps=``
    (most GPUs a row can use at once: a class's or a job's GPU count). The round engine of
    ``marketsim run`` and ``marketsim viz`` always has caps; it passes them only to mechanisms
    registered with ``caps=True``. With ``caps=False`` it calls ``fn`` without caps and a row's
    share beyond what its jobs can use stays idle that round (a job's time fractions are scaled to
    sum to at most 1). Callers given caps by the user (``FairShareTarget(caps=...)``, a
    ``marketsim.market.testing`` instance with caps) still pass them, so ``fn`` should reject caps it does not
    implement with an :class:`InputError`.

    Names are unique across families. When a plugin's module (imported by :mod:`marketsim.market.plugins`)
    registers a name that is already taken, the mechanism is NOT registered: the clash is warned
    about and listed by :func:`marketsim.market.plugins.clashes` (marketsim's own modules are imported first,
    so built-in names always win). Registering a taken name outside a plugin import raises
    :class:`InputError`.

    :param name: the stable name to register ``fn`` under
    :param family: ``"fair-share"`` or ``"auction"``
    :param summary: one line for ``marketsim list``
    :param paper: the source paper's key, e.g. ``"oef"``
    :param claims_truthful: whether the paper claims the mechanism is strategy-proof
    :param screen: (fair-share, optional) the fast misreport screen described above
    :param caps: (fair-share) whether ``fn`` implements row caps
    :returns: the decorator; it returns ``fn`` unchanged
    :raises InputError: an unknown family, a non-bool ``caps``, or (when decorating) a taken name
        outside a plugin import
    """
    if family not in FAMILIES:
        raise InputError("family", family, f"must be one of {list(FAMILIES)}")
    if not isinstance(caps, bool):
        raise InputError("caps", caps, "must be True or False (does fn implement row caps?)")
    from marketsim.market import plugins

    owner = plugins.importing() or ""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        old = _REGISTRY.get(name)
        if old is not None and old.fn is not fn:
            if owner and owner != old.plugin and not plugins.is_builtin_module(getattr(fn, "__module__", "") or ""):
                by = f"plugin {old.plugin!r}" if old.plugin else "marketsim"
                plugins.note_clash(
                    owner, f"mechanism name {name!r} is already registered by {by} ({old.family}); "
                    f"the plugin's {family} mechanism {name!r} is ignored: rename it"
                )  # fmt: skip
                return fn
            raise InputError("mechanism name", name, f"is already registered ({old.family}, paper {old.paper!r})")
        _REGISTRY[name] = MechanismInfo(name, family, fn, summary, paper, claims_truthful, screen, owner, caps)
        return fn

    return deco


def _load(family: str | None = None, *, builtin_only: bool = False) -> None:
    """Import the plugin modules of ``family`` (``None``: every family); each module once.
    marketsim's own modules of the family come first; before any third-party module, marketsim's
    own modules of EVERY family are imported, so a built-in name always wins a clash whatever the
    order of lookups. ``builtin_only`` stops after marketsim's own modules of ``family``. Families
    are imported lazily so a fair-share run never pays for the auction papers (unless a third-party
    plugin has to be imported)."""
    if family is not None and family not in FAMILIES:
        raise InputError("family", family, f"must be one of {list(FAMILIES)}")
    from marketsim.market import plugins

    plugins.import_modules(plugins.modules("mechanisms", family, builtin=True))
    if builtin_only:
        return
    third = plugins.modules("mechanisms", family, builtin=False)
    if third:
        plugins.import_modules(plugins.modules("mechanisms", None, builtin=True))
        plugins.import_modules(third)


def check_name_clashes() -> dict[str, list[str]]:
    """Import every family and return :func:`marketsim.market.plugins.clashes`, after recording plugins named
    like a mechanism of another paper (e.g. a plugin ``drf``: ``--paper drf`` and ``--mechanism drf``
    would name different things)."""
    from marketsim.market import plugins

    _load(None)
    for pname in plugins.plugins():
        info = _REGISTRY.get(pname)
        if info is not None and pname not in info.paper.split(",") and info.plugin != pname:
            plugins.note_clash(
                pname, f"plugin name {pname!r} is also the name of the {info.family} mechanism {pname!r} "
                f"(paper {info.paper!r}); rename the plugin"
            )  # fmt: skip
    return plugins.clashes()


def get(name: str, family: str | None = None) -> MechanismInfo:
    """The mechanism registered as ``name``; a clear :class:`InputError` listing the known names
    otherwise (restricted to ``family`` when given). marketsim's own families are imported one at a
    time until ``name`` is found; third-party plugins only when it is not a built-in name.

    :param name: a registered name, e.g. ``"oef-noncoop"``
    :param family: ``"fair-share"`` or ``"auction"`` to require that family; ``None``: any
    :returns: its :class:`MechanismInfo`
    :raises InputError: no mechanism of that name (and family)
    """
    info = _REGISTRY.get(name)
    for fam in FAMILIES if family is None else (family,):
        if info is not None:
            break
        _load(fam, builtin_only=True)
        info = _REGISTRY.get(name)
    if info is None:
        _load(family)
        info = _REGISTRY.get(name)
    if info is None or (family is not None and info.family != family):
        kind = f"{family} " if family else ""
        raise InputError("mechanism", name, f"must be a registered {kind}mechanism (known: {', '.join(names(family))})")
    return info


def names(family: str | None = None) -> list[str]:
    """Registered names, sorted, optionally of one family.

    :param family: ``"fair-share"`` or ``"auction"``; ``None``: every family
    :returns: the names, sorted
    """
    _load(family)
    return sorted(n for n, i in _REGISTRY.items() if family is None or i.family == family)
