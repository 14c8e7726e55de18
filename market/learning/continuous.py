"""Best-response dynamics in continuous report space: each learner in turn plays the audit's best lie
against the others' CURRENT reports (not a grid), until a full pass moves nobody (then the last
pass's searches are the equilibrium certificate: no learner found a gain above ``tol``), a profile
repeats (a cycle) or ``passes`` run out.

A learner's strategy is a factor per speedup dimension ``j >= 1`` (column 0 is the unit of a
normalised row); its payoff is its TRUE normalised throughput ``W_i · X_i``. The search is
:func:`market.audit.search.audit` on :class:`ProfileTarget`, a
:class:`~market.audit.fairshare.FairShareTarget` whose other rows are the current reports, so every
step inherits the audit's grid, zoom, tails, boundary walk and local refinement.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from market.audit.fairshare import FairShareTarget
from market.audit.search import AuditConfig, audit
from market.errors import InputError, as_float_array, check_int, check_positive

__all__ = ["ProfileTarget", "ContinuousResult", "continuous_best_response", "FAST_SEARCH"]

#: a lighter audit budget for the inner best responses (one per learner and pass)
FAST_SEARCH = AuditConfig(n_grid=6, n_zoom=2, n_tail=2, edge_steps=6, n_joint=12, refine_starts=1, refine_maxfev=30)


@dataclass
class ProfileTarget(FairShareTarget):
    """A fair-share audit target whose agents other than the deviator report ``reports`` (n, k),
    rows normalised by column 0 like ``W``; the deviator's report is its TRUE row times its factors,
    and every utility is TRUE (``W``)."""

    reports: Any = None

    def __post_init__(self) -> None:
        self.fast = False  # the warm-started screen assumes truthful others
        super().__post_init__()
        R = as_float_array("reports", self.reports, shape=self.Wt.shape, positive=True)
        self._R = R / R[:, :1]

    def profile(self, agent: Hashable, report: tuple[tuple[float, ...], float | None]) -> tuple[np.ndarray, Any]:
        Wr, weights = super().profile(agent, report)
        R = self._R.copy()
        R[int(agent)] = Wr[int(agent)]
        return R, weights


@dataclass
class ContinuousResult:
    """``factors`` (n, k−1) final reports, ``status`` (``converged`` / ``cycle`` / ``max-passes`` /
    ``time-limit``),
    cycle ``period`` in passes, ``eps_rel`` / ``eps_abs`` the largest gain the last pass's searches
    found (a certificate when converged: every learner searched against the final profile),
    ``trajectory`` one row per best response (``pass``, ``agent``, factors ``f1..``, TRUE
    ``utility`` before and after, ``gain_rel``), ``evaluations`` mechanism runs, ``seconds``."""

    factors: np.ndarray
    status: str
    period: int
    eps_rel: float
    eps_abs: float
    passes: int
    trajectory: pd.DataFrame
    evaluations: int = 0
    seconds: float = 0.0
    history: list[np.ndarray] = field(default_factory=list)


def _key(F: np.ndarray, digits: int) -> tuple[float, ...]:
    return tuple(np.round(np.log(F), digits).ravel().tolist())


def continuous_best_response(
    mechanism: str,
    W: Any,
    m: Any,
    *,
    weights: Any = None,
    caps: Any = None,
    learners: Sequence[int] | None = None,
    passes: int = 20,
    tol: float = 1e-3,
    config: AuditConfig | None = None,
    seed: int = 0,
    digits: int = 6,
    time_limit: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ContinuousResult:
    """Round-robin continuous best responses from truth on fair-share ``mechanism`` (TRUE speedups
    ``W`` (n, k), GPUs ``m`` (k,)). A learner moves when its best lie gains more than ``tol``
    (relative to its current TRUE utility). Profiles are compared after each pass on
    ``log(factor)`` rounded to ``digits`` (cycle detection). ``config``: the audit budget of every
    best response (default :data:`FAST_SEARCH`); ``seed`` seeds its sampling; ``time_limit`` (s)
    stops after the first pass that ends past it (status ``time-limit``)."""
    passes = check_int("passes", passes, minimum=1)
    tol = check_positive("tol", tol)
    Wt = as_float_array("W", W, ndim=2, positive=True)
    if Wt.shape[1] < 2:
        raise InputError("W", W, "needs at least two GPU types (nothing to misreport)")
    Wt = Wt / Wt[:, :1]
    n, k = Wt.shape
    ids = list(range(n)) if learners is None else [check_int("learners[]", i, minimum=0) for i in learners]
    for i in ids:
        if i >= n:
            raise InputError("learners", i, f"must index one of the {n} tenants")
    cfg = config or FAST_SEARCH
    F = np.ones((n, k - 1))
    seen = {_key(F, digits): 0}
    history = [F.copy()]
    rows: list[dict[str, Any]] = []
    evaluations = 0
    t0 = time.perf_counter()
    status, period, last_gains = "max-passes", 0, [(0.0, 0.0)]
    done = 0
    for p in range(1, passes + 1):
        gains: list[tuple[float, float]] = []
        moved = False
        for i in ids:
            R = Wt.copy()
            R[:, 1:] *= F
            target = ProfileTarget(mechanism, W=Wt, m=m, weights=weights, caps=caps, reports=R, n_arbitrary=0,
                                   copy_others=False, fast=False)  # fmt: skip
            res = audit(target, i, config=cfg, rng=seed + 7919 * p + i)
            evaluations += res.evaluations
            # the search is anchored at the truth; compare its best with the CURRENT report
            current = target.evaluate(i, target.report(i, {str(j): float(F[i, j - 1]) for j in range(1, k)}))
            best = res.truthful_utility + res.best_gain
            gain = best - current
            rel = gain / abs(current) if current != 0 else (math.inf if gain > 0 else 0.0)
            gains.append((max(rel, 0.0), max(gain, 0.0)))
            row: dict[str, Any] = {"pass": p, "agent": i, "utility_before": current,
                                   "gain_rel": rel, "gain_abs": gain}  # fmt: skip
            if rel > tol:
                wit = res.witness if isinstance(res.witness, dict) else {}
                F[i] = [float(wit.get(str(j), 1.0)) for j in range(1, k)]
                moved = True
            for j in range(1, k):
                row[f"f{j}"] = float(F[i, j - 1])
            row["utility_after"] = best if rel > tol else current
            rows.append(row)
        done = p
        last_gains = gains
        if progress is not None:
            progress(p, passes)
        if not moved:
            status = "converged"
            break
        key = _key(F, digits)
        history.append(F.copy())
        if key in seen:
            status, period = "cycle", p - seen[key]
            break
        seen[key] = p
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            status = "time-limit"
            break
    eps_rel = max(g[0] for g in last_gains)
    eps_abs = max(g[1] for g in last_gains)
    return ContinuousResult(F, status, period, eps_rel, eps_abs, done, pd.DataFrame(rows), evaluations,
                            time.perf_counter() - t0, history)  # fmt: skip
