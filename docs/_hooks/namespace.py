"""mkdocs hook: the API reference documents ``marketsim.market``, ``marketsim.agents``, ... (the import names).

In the repository the layers are the top-level folders ``market/``, ``agents/``, ``scenarios/``, ``analysis/``;
``marketsim/__init__.py`` maps them at import time, which mkdocstrings' static reader (griffe) cannot follow. So
before the build this hook lays out ``.cache/api/marketsim/`` as the wheel does: the package's ``__init__.py``
and one symbolic link per layer (a copy where links are not supported). ``mkdocs.yml`` lists ``.cache/api``
first among the handler's search paths. Nothing is generated into ``docs/`` or tracked by git."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("market", "agents", "scenarios", "analysis")


def api_tree(root: Path = ROOT) -> Path:
    """``root/.cache/api`` holding ``marketsim/`` with the checkout's layers as subpackages; returns it."""
    base = root / ".cache" / "api"
    pkg = base / "marketsim"
    if pkg.is_symlink() or pkg.is_file():
        pkg.unlink()
    elif pkg.exists():
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    shutil.copyfile(root / "marketsim" / "__init__.py", pkg / "__init__.py")
    for layer in LAYERS:
        try:
            os.symlink(root / layer, pkg / layer, target_is_directory=True)
        except OSError:  # no symlinks (some Windows setups): a copy of the sources
            shutil.copytree(root / layer, pkg / layer, ignore=shutil.ignore_patterns("__pycache__"))
    return base


def on_startup(**kwargs: Any) -> None:
    """Before any plugin's ``on_config``: mkdocstrings keeps only the search paths that exist when it starts."""
    api_tree()


# and at once when mkdocs loads this hook (validating mkdocs.yml), which precedes every plugin event
api_tree()
