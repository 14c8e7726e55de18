"""OEF's linear programs: the stable import path of the LP layer (spec A2-A5, §8).

The layer is split by job into modules, all re-exported here (``from marketsim.market.oef import lp``;
``lp.solve_noncoop(...)``, ``lp.NoncoopWarmStart()``, ``lp.build_coop(...)``):

* :mod:`marketsim.market.oef.programs`: the programs as sparse matrices (:class:`LinearProgram`,
  ``build_*``, CSC/CSR array forms) and their restriction to the GPU types with capacity;
* :mod:`marketsim.market.oef.scipy_lp`: solving a :class:`LinearProgram` with ``scipy.optimize.linprog``
  (HiGHS; :func:`solve`, :func:`solve_rows`, :func:`choose_solver`);
* :mod:`marketsim.market.oef.highs_model`: ``highspy`` models built from CSC arrays, and their solve;
* :mod:`marketsim.market.oef.staircase`: the staircase vertex of LP (9) and its optimality certificate;
* :mod:`marketsim.market.oef.noncoop_lp`: LP (9) on its fast paths (staircase, crashed simplex, price
  decomposition) and :class:`NoncoopWarmStart`;
* :mod:`marketsim.market.oef.coop_lp`: LP (10) by lazy envy-freeness rows;
* :mod:`marketsim.market.oef.solution`: clipping a solution (A4 step 3) and the allocation cache.

The two settings read at call time, :data:`PROGRESS` (:mod:`marketsim.market.oef.coop_lp`) and
``COLD_DECOMPOSE_ROWS_PER_TYPE`` (:mod:`marketsim.market.oef.noncoop_lp`), are read from and written to
their home modules through this one: ``lp.PROGRESS = print`` takes effect.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from marketsim.market.oef.coop_lp import ef_violations, row_envy, solve_coop
from marketsim.market.oef.noncoop_lp import NoncoopWarmStart, solve_noncoop
from marketsim.market.oef.programs import (
    LinearProgram,
    all_pairs,
    build_capped_throughput,
    build_coop,
    build_gavel,
    build_noncoop,
    build_pe_gap,
    build_si_constrained,
    capacity_rows,
    column_scale,
    ef_rows,
    noncoop_csc,
)
from marketsim.market.oef.scipy_lp import AUTO_IPM_NONZEROS, choose_solver, solve, solve_rows
from marketsim.market.oef.solution import CACHE, ZERO_TOL, AllocationCache, clip_solution
from marketsim.market.oef.staircase import Staircase, staircase

__all__ = [
    "ZERO_TOL",
    "LinearProgram",
    "capacity_rows",
    "build_noncoop",
    "build_coop",
    "build_si_constrained",
    "build_gavel",
    "build_capped_throughput",
    "build_pe_gap",
    "solve",
    "clip_solution",
    "column_scale",
    "ef_rows",
    "all_pairs",
    "solve_rows",
    "noncoop_csc",
    "Staircase",
    "staircase",
    "solve_noncoop",
    "NoncoopWarmStart",
    "solve_coop",
    "ef_violations",
    "row_envy",
    "AllocationCache",
    "CACHE",
    "AUTO_IPM_NONZEROS",
    "choose_solver",
]

#: settings read at call time -> the module that reads them (reads and writes here go there)
SETTINGS = {"PROGRESS": "marketsim.market.oef.coop_lp",
            "COLD_DECOMPOSE_ROWS_PER_TYPE": "marketsim.market.oef.noncoop_lp"}


class _LPModule(types.ModuleType):
    """This module, with :data:`SETTINGS` forwarded to their home modules on write."""

    def __setattr__(self, name: str, value: Any) -> None:
        home = SETTINGS.get(name)
        if home is None:
            super().__setattr__(name, value)
        else:
            setattr(importlib.import_module(home), name, value)


def __getattr__(name: str) -> Any:
    home = SETTINGS.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *SETTINGS])


sys.modules[__name__].__class__ = _LPModule
