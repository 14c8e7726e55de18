"""Package versions for a benchmark's results file (the benchmarks import this as a sibling module)."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version


def package_versions(packages: tuple[str, ...], missing: str = "missing") -> dict[str, str]:
    """``{"python": X.Y.Z, package: version, ...}`` of this interpreter; ``missing`` for a package not installed.

    :param packages: distribution names, in the order the results file lists them
    :param missing: the text recorded for a package that is not installed
    :returns: name -> version text
    """
    out = {"python": platform.python_version()}
    for pkg in packages:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = missing
    return out
