"""Whole-process CPU of ``marketsim run`` before and after a change of the round engine.

Runs each command in a fresh process for the code at ``--base`` (a git ref, checked out into a
temporary worktree) and for this checkout, alternating, with bytecode cached on both sides (one
warm-up run each, ``PYTHONDONTWRITEBYTECODE`` removed from the environment). CPU = user + system
of the child process (``resource.RUSAGE_CHILDREN``), robust to machine load; the load average is
recorded. Commands: the default scenario (``marketsim run --quiet``) and the packaged Gavel trace
(``marketsim run gavel_trace --policies gavel-max-min-perf --reps 1 --quiet``).

``python benchmarks/bench_engine.py [--base REF] [--repeats N]`` rewrites
benchmarks/results/engine.md (default base: ``bde120d``, the commit before the one-engine change).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "engine.md"
COMMANDS = {
    "default scenario": ["run", "--quiet"],
    "gavel_trace, gavel-max-min-perf, 1 rep": ["run", "gavel_trace", "--policies", "gavel-max-min-perf", "--reps", "1",
                                               "--quiet"],
}  # fmt: skip


def _cpu_of(tree: Path, args: list[str], out: Path) -> float:
    """CPU seconds (user + system) of one ``marketsim`` process running the code in ``tree``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = "import sys; from marketsim.analysis.frontends.cli import main; sys.exit(main(sys.argv[1:]))"
    subprocess.run([sys.executable, "-c", code, *args, "--out", str(out)], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _rev(tree: Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="bde120d", help="git ref of the code to compare with")
    ap.add_argument("--repeats", type=int, default=3, help="measured runs per command and side")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    base_tree = tmp / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), a.base], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    try:
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip())  # fmt: skip
        sides = {"base": base_tree, "this": ROOT}
        revs = {"base": _rev(base_tree), "this": _rev(ROOT) + (" (+ uncommitted changes)" if dirty else "")}
        load0 = os.getloadavg()
        cpu: dict[tuple[str, str], list[float]] = {}
        for name, args in COMMANDS.items():
            for side, tree in sides.items():  # warm-up: bytecode written, caches filled
                _cpu_of(tree, args, tmp / f"warm-{side}")
            for r in range(a.repeats):
                for side, tree in (sides.items() if r % 2 == 0 else reversed(sides.items())):
                    cpu.setdefault((name, side), []).append(_cpu_of(tree, args, tmp / f"out-{side}"))
        load1 = os.getloadavg()
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, check=False,
                       capture_output=True)  # fmt: skip
        shutil.rmtree(tmp, ignore_errors=True)
    import numpy
    import scipy

    lines = [
        "# Round engine: whole-process CPU of `marketsim run`, before and after",
        "",
        f"`python benchmarks/bench_engine.py --base {a.base}`; base = `{revs['base']}`, this = `{revs['this']}`; "
        f"Python {platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}; "
        f"load average {load0[0]:.2f} -> {load1[0]:.2f} (on {os.cpu_count()} cores"
        f"{': measured under load, CPU time only' if max(load0[0], load1[0]) > 1.5 else ''}); bytecode cached "
        f"on both sides; {a.repeats} runs per command and side, alternating; CPU = user + system of the process.",
        "",
        "| command | base CPU s (median, runs) | this CPU s (median, runs) | this / base |",
        "|---|---|---|---|",
    ]
    for name in COMMANDS:
        b, t = cpu[(name, "base")], cpu[(name, "this")]
        fmt = ", ".join
        lines.append(f"| {name} | {statistics.median(b):.2f} ({fmt(f'{x:.2f}' for x in b)}) | "
                     f"{statistics.median(t):.2f} ({fmt(f'{x:.2f}' for x in t)}) | "
                     f"{statistics.median(t) / statistics.median(b):.3f} |")  # fmt: skip
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
