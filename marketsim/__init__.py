"""marketsim: one import namespace for the four layers of the project.

Import the project as ``marketsim.market`` (the core: mechanisms, audit, data), ``marketsim.agents`` (the Mesa
models), ``marketsim.scenarios`` (TOML scenarios and their loader) and ``marketsim.analysis`` (the experiment
engine and the front ends). A user's own ``agents.py`` or ``model.py`` (Mesa's layout) beside a script cannot
shadow them: Python only looks them up inside this package.

The repository keeps the layers as top-level folders (``market/``, ``agents/``, ``scenarios/``, ``analysis/``).
The wheel ships them physically under ``marketsim/`` (``package_dir`` in ``setup.py``); in a source checkout
(an editable install or a clone on ``sys.path``) this package adds the checkout's root to its ``__path__``, so
``marketsim.market`` is the folder ``market/``. A layer imported under its bare name (``import market``) refuses
to load (see its ``__init__``), so no module can exist twice. See ``docs/concepts.md``, "Package layout".
"""

import os as _os

#: the layers, in the order they may import each other (lowest first)
LAYERS = ("market", "agents", "scenarios", "analysis")

_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isfile(_os.path.join(_here, "market", "__init__.py")):  # a source checkout, not the wheel
    _root = _os.path.dirname(_here)
    if all(_os.path.isfile(_os.path.join(_root, layer, "__init__.py")) for layer in LAYERS):
        __path__.append(_root)  # noqa: F821 (the package's __path__, set by the import system)
