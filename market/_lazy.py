"""Lazy re-exports for the paper packages: ``from marketsim.market.eris import run_eris`` imports
``marketsim.market.eris.mechanism`` on first use, so importing a package (or its light ``plugin`` module, as
the entry-point loader does) costs nothing until a name is used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` re-exporting, per submodule in
    ``exports``, the listed names; a name is imported from its submodule on first access."""
    where = {name: mod for mod, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        mod = where.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(mod), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__, sorted(where)
