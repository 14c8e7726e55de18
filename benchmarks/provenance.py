"""Package versions for a benchmark's results file, and a command's own CPU, wall time and peak RSS
(the benchmarks import this as a sibling module)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, Any

#: runs ``argv[2:]`` and writes its exit code, CPU, wall seconds and peak RSS (its own ``wait4``) to ``argv[1]``
_LAUNCHER = """import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[2:])
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as f:
    json.dump({"code": os.waitstatus_to_exitcode(status), "cpu_s": ru.ru_utime + ru.ru_stime, "wall_s": wall,
               "rss_mb": ru.ru_maxrss / 1024}, f)
"""


def run_measured(
    cmd: list[str], cwd: str | Path | None, env: dict[str, str] | None, stdout: IO[bytes], stderr: IO[bytes]
) -> dict[str, Any]:
    """Run ``cmd`` to completion (output to the binary files ``stdout`` and ``stderr``); its exit
    ``code``, ``cpu_s`` (user + system), ``wall_s`` and ``rss_mb`` (peak RSS, MB).

    ``cmd`` runs under a small launcher (``python -S``) that reports the command's own ``wait4``
    figures: on Linux a process keeps, as its peak RSS, the peak of the process it was started from
    (``exec`` replaces the memory, not that figure), so a command started straight from a benchmark
    that holds results would report the benchmark's peak whenever that is the larger; the
    launcher's own peak is a few MB."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "child.json"
        p = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, str(report), *cmd], cwd=cwd, env=env,
                             stdout=stdout, stderr=stderr)  # fmt: skip
        p.wait()
        if not report.exists():  # the launcher itself failed (it prints why on stderr)
            return {"code": p.returncode or 1, "cpu_s": float("nan"), "wall_s": float("nan"), "rss_mb": float("nan")}
        return json.loads(report.read_text())


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
