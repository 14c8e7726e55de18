"""Build glue for the one thing ``pyproject.toml`` cannot say: the layers ship under the ``marketsim`` namespace.

The repository keeps ``market/ agents/ scenarios/ analysis/`` as top-level folders (the design card); the wheel
installs them as ``marketsim/market/`` ... (``package_dir``), so ``import marketsim.agents`` works and a user's
own ``agents.py`` cannot shadow it. Every package under the four folders is listed (namespace packages too: the
studies folders hold only TOML files). Metadata, dependencies and package data stay in ``pyproject.toml``.
"""

from setuptools import find_namespace_packages, setup

LAYERS = ("market", "agents", "scenarios", "analysis")

subpackages = find_namespace_packages(
    include=[*LAYERS, *(f"{layer}.*" for layer in LAYERS)], exclude=["*.__pycache__", "*.__pycache__.*"]
)
setup(
    packages=["marketsim", *(f"marketsim.{p}" for p in subpackages)],
    package_dir={"marketsim": "marketsim", **{f"marketsim.{layer}": layer for layer in LAYERS}},
)
