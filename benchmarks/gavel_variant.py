"""Run Gavel's trace simulator with some of its documented differences from ours switched to our
semantics (docs/gavel_comparison.md, "Every difference, attributed"), or with another LP solver.

Runs under **Gavel's** Python (``benchmarks/gavel_env.sh``), standard library only. It copies the
simulator's files of the user's checkout (``--gavel-dir``, Gavel's ``scheduler/`` folder) into a
temporary folder, applies the chosen switches there as small text substitutions (each must match
the pinned commit's source exactly, else it stops with an error naming the switch), and runs
``scripts/drivers/simulate_scheduler_with_trace.py`` from that copy with the remaining arguments.
Nothing of Gavel is stored in this repository and the checkout is never modified. The anchors
below quote single lines of Gavel's ``scheduler.py`` and driver (MIT licence, the Gavel authors)
only to locate where a switch applies, as the context lines of a patch do.

Switches (``--switches a,b,...``; none = unmodified Gavel):

``steps``       continuous steps per lease: ``throughput * time_per_iteration`` instead of
                ``int(...)`` (a full round lasts exactly the round), a job done when fewer than
                1e-6 steps remain.
``reset0``      the reset interval counts from the first reset (Gavel resets without the
                1,920 s interval while ``_last_reset_time == 0``).
``unalloc``     a job without an allocation is skipped in the greedy pass (Gavel counts it
                against the GPUs left, then does not assign it).
``idlereset``   a reset is forced at once when no active job has an allocation or the previous
                round ran nothing.
``idlegap``     a round after an idle spell starts at the arrival (Gavel's first micro-task after
                the spell counts the idle gap into the time received).
``noshuffle``   no per-round GPU-type shuffle (Gavel shuffles for policies without "Perf").

``--solver HIGHS`` is accepted besides Gavel's ``ECOS``, ``GUROBI``, ``SCS`` (cvxpy's HiGHS
interface; highspy is pinned in ``benchmarks/gavel_requirements.txt``).

Usage::

    GAVEL_PY benchmarks/gavel_variant.py --gavel-dir GAVEL/scheduler --switches steps,reset0 -- \\
        -t first100.trace -p max_min_fairness_perf -c 4:0:0 --seed 0 --solver HIGHS ...
"""

from __future__ import annotations

import argparse
import os
import runpy
import shutil
import sys
import tempfile
from pathlib import Path

DRIVER = "scripts/drivers/simulate_scheduler_with_trace.py"
FILES = ("scheduler.py", DRIVER)

# switch -> [(file, old, new, expected count)]
SWITCHES: dict[str, list[tuple[str, str, str, int]]] = {
    "steps": [
        (
            "scheduler.py",
            "num_steps = int(self._throughputs[job_id][worker_type] *\n"
            "                                self._time_per_iteration)",
            "num_steps = (self._throughputs[job_id][worker_type] *\n"
            "                                self._time_per_iteration)",
            2,
        ),
        ("scheduler.py", "if remaining_steps > 0:", "if remaining_steps > 1e-6:", 1),
    ],
    "reset0": [
        (
            "scheduler.py",
            "reset_interval_elapsed or self._last_reset_time == 0",
            "reset_interval_elapsed or not getattr(self, '_gvc_reset_done', False)",
            1,
        ),
        (
            "scheduler.py",
            "        self._last_reset_time = current_time\n",
            "        self._last_reset_time = current_time\n        self._gvc_reset_done = True\n",
            1,
        ),
        (
            "scheduler.py",
            "                        self._last_reset_time = 0\n",
            "                        self._last_reset_time = 0\n                        self._gvc_reset_done = False\n",
            1,
        ),
    ],
    "unalloc": [
        (
            "scheduler.py",
            "            if num_workers_left[worker_type] == 0:\n                continue\n",
            "            if num_workers_left[worker_type] == 0:\n                continue\n"
            "            if self._allocation is None or job_id not in self._allocation:\n                continue\n",
            1,
        ),
    ],
    "idlereset": [
        (
            "scheduler.py",
            "        need_to_reset_time_run_so_far = \\\n            reset_interval_elapsed or ",
            "        _gvc_idle = getattr(self, '_gvc_ran_nothing', False) or not any(\n"
            "            self._allocation is not None and j in self._allocation for j in self._jobs)\n"
            "        need_to_reset_time_run_so_far = \\\n            _gvc_idle or reset_interval_elapsed or ",
            1,
        ),
        (
            "scheduler.py",
            "            # Since we're scheduling in rounds, no jobs should be\n",
            "            self._gvc_ran_nothing = max_timestamp == 0 and current_round_end_time is not None\n"
            "            # Since we're scheduling in rounds, no jobs should be\n",
            1,
        ),
    ],
    "idlegap": [
        (
            "scheduler.py",
            "                if next_job_arrival_time is not None:\n"
            "                    self._current_timestamp = next_job_arrival_time\n",
            "                if next_job_arrival_time is not None:\n"
            "                    self._current_timestamp = next_job_arrival_time\n"
            "                    if current_round_end_time is not None:\n"
            "                        current_round_end_time = self._current_timestamp\n",
            1,
        ),
    ],
    "noshuffle": [
        (
            "scheduler.py",
            "            self._worker_type_shuffler.shuffle(worker_types)\n",
            "            pass  # gavel_variant: noshuffle\n",
            1,
        ),
    ],
}
SOLVER = (DRIVER, "choices=['ECOS', 'GUROBI', 'SCS']", "choices=['ECOS', 'GUROBI', 'SCS', 'HIGHS']", 1)


def patched_copy(gavel_dir: Path, switches: list[str], dest: Path) -> Path:
    """Copy Gavel's ``scheduler/`` (without traces, notebooks, tests) to ``dest`` and apply ``switches``."""
    unknown = [s for s in switches if s not in SWITCHES]
    if unknown:
        raise SystemExit(f"error: unknown switch(es) {unknown}; choose from {sorted(SWITCHES)}")
    root = dest / "scheduler"
    shutil.copytree(gavel_dir, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "notebooks", "traces",
                                                                   "tests", "*.pickle"))  # fmt: skip
    for sw in [*switches, "_solver"]:
        for fname, old, new, count in [SOLVER] if sw == "_solver" else SWITCHES[sw]:
            path = root / fname
            text = path.read_text()
            if text.count(old) != count:
                raise SystemExit(f"error: switch {sw!r}: {fname} has {text.count(old)} matches of its anchor, "
                                 f"expected {count} (not Gavel's pinned commit?)")  # fmt: skip
            path.write_text(text.replace(old, new))
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel-dir", required=True, type=Path, help="Gavel's scheduler/ folder")
    ap.add_argument("--switches", default="", help="comma-separated switches (see the module docstring)")
    ap.add_argument("driver_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.driver_args[1:] if a.driver_args[:1] == ["--"] else a.driver_args
    switches = [s for s in a.switches.split(",") if s]
    gavel_dir = a.gavel_dir.resolve()
    with tempfile.TemporaryDirectory(prefix="gavel_variant_") as tmp:
        root = patched_copy(gavel_dir, switches, Path(tmp))
        os.chdir(gavel_dir)  # relative paths (simulation_throughputs.json) as in the driver's own folder
        sys.argv = [str(root / DRIVER), *args]
        runpy.run_path(str(root / DRIVER), run_name="__main__")


if __name__ == "__main__":
    main()
