"""Every embedded TOML by name: ``scenarios/*.toml`` plus the ``studies`` package of every plugin
(:class:`marketsim.market.plugins.Plugin`), e.g. ``market/oasis/studies/oasis_paper.toml``. Names are unique
across plugins; a clash is an error naming both files."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

from marketsim.market.errors import InputError

__all__ = ["embedded", "embedded_file"]


def _tomls(package: str) -> list[Traversable]:
    return sorted((p for p in resources.files(package).iterdir() if p.name.endswith(".toml")), key=lambda p: p.name)


def embedded() -> dict[str, Traversable]:
    """``name -> file`` of every embedded scenario, study, sweep and learning TOML."""
    from marketsim.market import plugins

    out: dict[str, Traversable] = {}
    where: dict[str, str] = {}
    sources = [("marketsim", "marketsim.scenarios")] + plugins.modules("studies")
    for plugin, package in sources:
        try:
            files = _tomls(package)
        except (ModuleNotFoundError, OSError) as exc:
            if plugin == "marketsim" or package.startswith("marketsim.market."):
                raise
            plugins._mark_broken(plugin, f"studies package {package!r} cannot be read: {exc}")
            continue
        for f in files:
            name = f.name[:-5]
            if name in out:
                raise InputError(
                    "scenario name", name, f"is shipped twice: by {where[name]} and by {package} (plugin {plugin})"
                )
            out[name] = f
            where[name] = package
    return out


def embedded_file(name: str) -> Traversable | None:
    """The embedded TOML called ``name`` (without ``.toml``), or ``None``."""
    return embedded().get(name)
