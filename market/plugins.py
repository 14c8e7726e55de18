"""Plugins: how mechanisms, market adapters, claims and studies reach marketsim.

A plugin is a :class:`Plugin` object published under the entry-point group
``marketsim.mechanisms`` (read with :mod:`importlib.metadata`). The five papers and the control
auctions are plugins of the ``marketsim`` distribution itself (see ``pyproject.toml``); an external
package adds one the same way::

    # pyproject.toml of your package
    [project.entry-points."marketsim.mechanisms"]
    mypaper = "mypaper.plugin:PLUGIN"

    # mypaper/plugin.py  (keep it light: it is imported whenever marketsim lists plugins)
    from marketsim.market.plugins import Plugin
    PLUGIN = Plugin(name="mypaper", summary="...", mechanisms={"fair-share": ("mypaper.mechanism",)},
                    claims=("mypaper.claims",))

Nothing is imported from a string a user typed: the module names come from installed packages'
metadata (or from :func:`add_plugin`). A plugin whose entry point or modules fail to import is
skipped with a warning (once per process) and listed by :func:`broken` (``marketsim list`` marks it
``BROKEN``), so one broken package never takes the framework down.

Names are unique. marketsim's own modules (``market.*``) are always imported before any third-party
module, so a built-in mechanism keeps its name: a plugin mechanism registered under a name that is
already taken is not registered, and the clash is warned about and listed by :func:`clashes` (as is
a plugin named like a mechanism of another paper, e.g. a plugin ``drf``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from marketsim.market.errors import InputError

__all__ = [
    "GROUP",
    "Plugin",
    "plugins",
    "add_plugin",
    "broken",
    "clashes",
    "note_clash",
    "importing",
    "is_builtin_module",
    "modules",
    "import_modules",
]

#: the entry-point group every plugin is published under
GROUP = "marketsim.mechanisms"
_FAMILIES = ("fair-share", "auction")


@dataclass(frozen=True)
class Plugin:
    """What one package contributes (module names are imported lazily, only when needed).

    :param name: the plugin's key (letters, digits, ``-``, ``_``); also the ``paper`` key of its
        claims and studies
    :param summary: one line for ``marketsim list``
    :param mechanisms: family (``"fair-share"`` / ``"auction"``) -> modules whose import registers
        mechanisms with :func:`marketsim.market.registry.register`; a family is imported only when one of its
        mechanisms is asked for
    :param claims: modules whose import registers claims (:func:`marketsim.market.audit.claims.register_claim`)
    :param market: module with ``make_market(params, rng) -> AuctionMarket``, used by the studies whose
        ``paper`` is ``name`` (auction plugins)
    :param studies: a package holding scenario / study TOML files (found by ``marketsim run NAME``)
    :raises InputError: a bad name, an unknown family or a module name that is not dotted identifiers
    """

    name: str
    summary: str = ""
    mechanisms: Mapping[str, Sequence[str]] = field(default_factory=dict)
    claims: Sequence[str] = ()
    market: str | None = None
    studies: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise InputError("Plugin.name", self.name, "must be a non-empty name of letters, digits, '-' or '_'")
        for fam, mods in dict(self.mechanisms).items():
            if fam not in _FAMILIES:
                raise InputError(f"Plugin({self.name}).mechanisms", fam, f"must be a family in {list(_FAMILIES)}")
            _check_modules(f"Plugin({self.name}).mechanisms[{fam!r}]", mods)
        _check_modules(f"Plugin({self.name}).claims", self.claims)
        for label, mod in (("market", self.market), ("studies", self.studies)):
            if mod is not None:
                _check_modules(f"Plugin({self.name}).{label}", (mod,))


def _check_modules(label: str, mods: Any) -> None:
    if isinstance(mods, str) or not isinstance(mods, Sequence):
        raise InputError(label, mods, "must be a tuple of dotted module names")
    for m in mods:
        if not isinstance(m, str) or not all(part.isidentifier() for part in m.split(".")):
            raise InputError(label, m, "must be a dotted module name such as 'mypaper.mechanism'")


_PLUGINS: dict[str, Plugin] | None = None
_EXTRA: dict[str, Plugin] = {}
_BROKEN: dict[str, str] = {}
_IMPORTED: set[str] = set()
_CLASHES: dict[str, list[str]] = {}
_CURRENT: list[str] = []


def _discover() -> dict[str, Plugin]:
    found: dict[str, Plugin] = {}
    seen: set[str] = set()
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: (e.name, e.value)):
        if ep.name in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(ep.name)
        try:
            obj = ep.load()
        except Exception as exc:  # a broken third-party package must not break the framework
            _mark_broken(ep.name, f"entry point {ep.value!r} failed to load: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(obj, Plugin):
            _mark_broken(ep.name,
                         f"entry point {ep.value!r} is a {type(obj).__name__}, not a marketsim.market.plugins.Plugin")
            continue
        if obj.name in found:
            _mark_broken(ep.name, f"plugin name {obj.name!r} is already provided by another entry point")
            continue
        found[obj.name] = obj
    return found


def _mark_broken(name: str, why: str) -> None:
    _BROKEN[name] = why
    warnings.warn(f"marketsim plugin {name!r} skipped: {why} (see `marketsim list`)", RuntimeWarning, stacklevel=3)


def is_builtin_module(mod: str) -> bool:
    """Whether ``mod`` is one of marketsim's own modules (``marketsim.market.*``).

    :param mod: a dotted module name
    :returns: ``True`` for ``marketsim.market`` and its submodules
    """
    return mod == "marketsim.market" or mod.startswith("marketsim.market.")


def importing() -> str | None:
    """The plugin whose module is being imported right now by :func:`import_modules` (``None``
    outside such an import, e.g. a module imported directly by a test)."""
    return _CURRENT[-1] if _CURRENT else None


def note_clash(plugin: str, why: str) -> None:
    """Record (and warn once about) a name clash of ``plugin``; listed by :func:`clashes`.

    :param plugin: the plugin's name
    :param why: the message (one clash, one sentence)
    """
    seen = _CLASHES.setdefault(plugin, [])
    if why not in seen:
        seen.append(why)
        warnings.warn(f"marketsim plugin {plugin!r}: {why}", RuntimeWarning, stacklevel=3)


def clashes() -> dict[str, list[str]]:
    """Name clashes found so far, by plugin: mechanism names already taken (the plugin's mechanism
    was not registered) and plugin names equal to another paper's mechanism name. Complete once every
    family has been loaded (``marketsim.market.registry.names()``)."""
    return {k: list(v) for k, v in _CLASHES.items()}


def plugins() -> dict[str, Plugin]:
    """Every plugin by name: the installed entry points (discovered once) plus :func:`add_plugin`'s.

    :returns: plugin name -> :class:`Plugin`
    :raises InputError: when none is installed (marketsim itself not installed)
    """
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = _discover()
    out = {**_PLUGINS, **_EXTRA}
    if not out:
        raise InputError(
            "plugins",
            GROUP,
            "no marketsim plugins are installed: install marketsim itself (`pip install marketsim-cluster`, in a clone "
            "`pip install -e .` or `.ci/setup`) "
            "so its entry points are registered",
        )
    return out


def add_plugin(plugin: Plugin) -> None:
    """Register ``plugin`` for this process without installing a package (tests, notebooks).

    :param plugin: the descriptor to add
    :raises InputError: not a :class:`Plugin`, or its name is taken by a different plugin
    """
    if not isinstance(plugin, Plugin):
        raise InputError("plugin", plugin, "must be a marketsim.market.plugins.Plugin")
    if plugin.name in plugins() and plugins()[plugin.name] != plugin:
        raise InputError("plugin", plugin.name, "is already provided by another plugin")
    _EXTRA[plugin.name] = plugin


def broken() -> dict[str, str]:
    """Entry points or modules that failed, by plugin name, with the reason."""
    plugins()
    return dict(_BROKEN)


def modules(kind: str, family: str | None = None, *, builtin: bool | None = None) -> list[tuple[str, str]]:
    """``(plugin, module)`` pairs of ``kind`` (``"mechanisms"`` of ``family``, ``"claims"``,
    ``"market"`` or ``"studies"``) over every plugin, in plugin-name order; ``builtin`` keeps only
    marketsim's own modules (True) or only third-party ones (False).

    :param kind: ``"mechanisms"``, ``"claims"``, ``"market"`` or ``"studies"``
    :param family: with ``"mechanisms"``: ``"fair-share"`` or ``"auction"``; ``None`` for both
    :param builtin: ``True``: marketsim's own modules only, ``False``: third-party only, ``None``: all
    :returns: ``(plugin name, module name)`` pairs
    :raises InputError: an unknown ``kind``
    """
    out: list[tuple[str, str]] = []
    for name, p in sorted(plugins().items()):
        if kind == "mechanisms":
            fams = _FAMILIES if family is None else (family,)
            out += [(name, m) for f in fams for m in p.mechanisms.get(f, ())]
        elif kind == "claims":
            out += [(name, m) for m in p.claims]
        elif kind in ("market", "studies"):
            mod = getattr(p, kind)
            if mod is not None:
                out.append((name, mod))
        else:
            raise InputError("kind", kind, "must be 'mechanisms', 'claims', 'market' or 'studies'")
    if builtin is not None:
        out = [(p, m) for p, m in out if is_builtin_module(m) == builtin]
    return out


def import_modules(pairs: Sequence[tuple[str, str]]) -> None:
    """Import each ``(plugin, module)`` once. A module that fails marks its plugin broken (warning)
    unless the plugin is one of marketsim's own, whose failure is a bug and is raised.

    :param pairs: ``(plugin name, module name)`` pairs, e.g. from :func:`modules`
    """
    for plugin, mod in pairs:
        if mod in _IMPORTED or plugin in _BROKEN:
            continue
        _CURRENT.append(plugin)
        try:
            importlib.import_module(mod)
        except Exception as exc:
            if is_builtin_module(mod):
                raise
            _mark_broken(plugin, f"module {mod!r} failed to import: {type(exc).__name__}: {exc}")
            continue
        finally:
            _CURRENT.pop()
        _IMPORTED.add(mod)
