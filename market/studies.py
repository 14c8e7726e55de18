"""The parts of an auction study that the core needs: its paper's instance builder and its small
``[audit]`` instance.

A study TOML (``kind = "study"``, schema in :mod:`marketsim.analysis.engine.studies`) ships in the ``studies``
package of its plugin (e.g. ``market/oasis/studies/oasis.toml``). :func:`audit_params` reads the
``paper`` key and the ``[base]`` and ``[audit]`` tables (``[audit]`` overrides ``[base]``) and
:func:`build_market` hands them to the paper's ``make_market(params, rng)``; that builder validates
every parameter. This module lets :mod:`marketsim.market.testing` draw audit instances without importing the
application layer (:mod:`marketsim.analysis` imports ``market``, never the other way round).
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.market import plugins
from marketsim.market.errors import InputError

__all__ = ["builders", "build_market", "audit_params"]


def builders() -> dict[str, str]:
    """Paper key -> module with ``make_market(params, rng)``: the ``market`` of every plugin."""
    return dict(plugins.modules("market"))


def build_market(paper: str, params: Mapping[str, Any], rng: np.random.Generator) -> Any:
    """The paper's instance builder (its plugin's ``market`` module) applied to ``params``."""
    known = builders()
    if paper not in known:
        raise InputError("paper", paper, f"must be one of {sorted(known)}")
    plugins.import_modules([(paper, known[paper])])
    module = importlib.import_module(known[paper])
    return module.make_market(dict(params), rng)


def _plugin_study_file(name: str) -> Any:
    """The TOML ``name`` (without ``.toml``) in a plugin's ``studies`` package, or ``None``."""
    for _plugin, package in plugins.modules("studies"):
        try:
            f = resources.files(package) / f"{name}.toml"
        except (ModuleNotFoundError, OSError):  # a broken plugin: `marketsim list` reports it
            continue
        if f.is_file():
            return f
    return None


def audit_params(study: str) -> tuple[str, dict[str, Any]]:
    """``(paper, params)`` of the ``[audit]`` instance of auction study ``study``: an embedded study
    name (e.g. ``"oasis"``, ``"control_auction"``) or a study TOML path; ``params`` = ``[base]``
    updated with ``[audit]``. Raises :class:`InputError` naming the study when it is not one."""
    text = str(study)
    f = None if ("/" in text or text.endswith(".toml")) else _plugin_study_file(text)
    if f is None:
        path = Path(text).expanduser()
        if not path.is_file():
            raise InputError("study", text, "is neither an embedded auction study nor a study TOML file")
        f = path
    try:
        doc = tomllib.loads(f.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError("study", text, f"is not a valid TOML file ({exc})") from None
    if doc.get("kind") != "study":
        raise InputError(f"study {text}: kind", doc.get("kind"), "must be 'study'")
    if "scenario" in doc:
        raise InputError("study", text, "is a fair-share study; audit instances come from auction studies")
    base, audit = doc.get("base", {}), doc.get("audit", {})
    for key, table in (("base", base), ("audit", audit)):
        if not isinstance(table, dict):
            raise InputError(f"study {text}: {key}", table, "must be a table")
    return str(doc.get("paper")), {**base, **audit}
