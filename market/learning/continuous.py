"""Best-response dynamics in continuous report space: each learner in turn plays the audit's best lie
against the others' CURRENT reports (not a grid), until a full pass moves nobody, a profile repeats
(a cycle), the dynamics chase a jump (a profile repeats within ``report_tol`` while a learner still
gains more than ``tol`` by a move that small), or ``passes`` run out.

A learner's strategy is a factor per speedup dimension ``j >= 1`` (column 0 is the unit of a
normalised row); its payoff is its TRUE normalised throughput ``W_i · X_i``. The search is
:func:`marketsim.market.audit.search.audit` on :class:`ProfileTarget`, a
:class:`~marketsim.market.audit.fairshare.FairShareTarget` whose other rows are the current reports, so every
step inherits the audit's grid, zoom, tails, boundary walk and local refinement.

Whatever the status, epsilon is re-measured at the FINAL profile by the audit's full default search
(:func:`marketsim.market.learning.certificates.audit_fair_share_profile`), not taken from the last pass, whose
searches ran against profiles that later moves changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from marketsim.market.audit.search import AuditConfig, audit, relative
from marketsim.market.errors import InputError, as_float_array, check_int, check_positive
from marketsim.market.learning.certificates import Certificate, ProfileTarget, audit_fair_share_profile

__all__ = ["ProfileTarget", "ContinuousResult", "continuous_best_response", "FAST_SEARCH"]

#: a lighter audit budget for the inner best responses (one per learner and pass)
FAST_SEARCH = AuditConfig(n_grid=6, n_zoom=2, n_tail=2, edge_steps=6, n_joint=12, refine_starts=1, refine_maxfev=30)


@dataclass
class ContinuousResult:
    """``factors`` (n, k−1) final reports; ``status``: ``converged`` (a pass moved nobody and the
    audit's full search at the final profile finds no gain above ``tol``), ``stalled`` (a pass
    moved nobody but the full search finds one), ``cycle`` (the end-of-pass profile repeats an
    earlier one exactly, or within ``report_tol`` with every TRUE utility within ``tol`` of the
    earlier one and every move of the cycle that gained more than ``tol`` larger than
    ``report_tol``), ``chase`` (a profile repeats within ``report_tol`` but some learner gained more
    than ``tol`` by a move no larger than that: a jump in its utility, not a rest point and not a
    cycle), ``max-passes`` or ``time-limit``; ``period`` of a cycle in passes.

    ``eps_rel`` / ``eps_abs``: epsilon at the FINAL profile measured by the audit's full search
    (``certificate``: deviating agent, its from- and to-report); ``certified`` when it is within
    ``tol``. ``eps_last_pass``: the largest relative gain the last pass's fast searches found (each
    against the profile of its own step). ``moves``: who moved and by how much in the last pass (in
    the cycle's passes for ``cycle`` / ``chase``): ``pass``, ``agent``, ``from``, ``to`` factors,
    ``step`` (max |log(to / from)|) and relative ``gain``. ``trajectory`` one row per best response
    (``pass``, ``agent``, factors ``f1..``, TRUE ``utility`` before and after, ``gain_rel``),
    ``evaluations`` mechanism runs (certificate included), ``seconds``.

    :param factors: (n, k-1) final reports
    :param status: how the run ended
    :param period: a cycle's period in passes
    :param eps_rel: relative epsilon at the final profile
    :param eps_abs: the same in utility units
    :param passes: passes run
    :param trajectory: one row per best response
    :param evaluations: mechanism runs
    :param seconds: wall time, s
    :param history: the end-of-pass profiles
    :param certificate: the final certificate, or ``None``
    :param eps_last_pass: the largest relative gain of the last pass
    :param moves: the last pass's moves
    """

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
    certificate: Certificate | None = None
    eps_last_pass: float = 0.0
    moves: list[dict[str, Any]] = field(default_factory=list)

    @property
    def certified(self) -> bool:
        """The audit-measured epsilon at the final profile is within the run's ``tol``."""
        return self.certificate is not None and self.certificate.certified


def _utilities(fn: Callable[..., Any], Wt: np.ndarray, m: Any, F: np.ndarray, weights: Any, caps: Any) -> np.ndarray:
    R = Wt.copy()
    R[:, 1:] *= F
    X = np.asarray(fn(R, np.asarray(m, dtype=float), weights=weights, caps=caps).X, dtype=float)
    return np.einsum("lj,lj->l", Wt, X)


def _to_factors(witness: Any, k: int) -> list[float]:
    """The audit's best reply as report factors: its parameters, or the truth when no lie beat the
    truth (``witness`` None); probes are off in the dynamics' searches."""
    if isinstance(witness, dict):
        return [float(witness.get(str(j), 1.0)) for j in range(1, k)]
    if witness is None:
        return [1.0] * (k - 1)
    raise InputError("witness", witness, "is a probe; continuous best responses search factor dimensions only")


def _step(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.max(np.abs(np.log(np.asarray(b, dtype=float)) - np.log(np.asarray(a, dtype=float)))))


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
    report_tol: float = 1e-6,
    time_limit: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    certify_config: AuditConfig | None = None,
) -> ContinuousResult:
    """Round-robin continuous best responses from truth on fair-share ``mechanism`` (TRUE speedups
    ``W`` (n, k), GPUs ``m`` (k,)). A learner moves when its best lie gains more than ``tol``
    (relative to its current TRUE utility). After each pass the profile is compared with the
    earlier end-of-pass profiles: one within ``report_tol`` (max |log factor difference|) is a
    ``cycle`` or a ``chase`` (see :class:`ContinuousResult`). ``config``: the audit budget of every
    best response (default :data:`FAST_SEARCH`); ``seed`` seeds its sampling; ``time_limit`` (s)
    stops after the first pass that ends past it (status ``time-limit``). At the end the final
    profile is certified by the audit's search with ``certify_config`` (default: ``marketsim
    audit``'s ``AuditConfig()``) for every learner.

    :param mechanism: a registered fair-share name
    :param W: (n, k) TRUE speedups
    :param m: (k,) GPUs per type
    :param weights: (n,) priorities, or ``None``
    :param caps: (n,) caps, or ``None``
    :param learners: the rows that move (default: all)
    :param passes: most passes
    :param tol: relative gain needed to move
    :param config: the budget of every best response (default :data:`FAST_SEARCH`)
    :param seed: the searches' seed
    :param report_tol: max |log factor| difference of a repeated profile
    :param time_limit: seconds, or ``None``
    :param progress: called with (done, total) passes
    :param certify_config: the final certificate's budget
    :returns: the run
    :raises InputError: a bad tolerance, fewer than two GPU types, bad inputs
    """
    from marketsim.market.audit.fairshare import resolve_fair_share

    passes = check_int("passes", passes, minimum=1)
    tol = check_positive("tol", tol)
    if not (isinstance(report_tol, int | float) and 0 <= report_tol < np.inf):
        raise InputError("report_tol", report_tol, "must be a number >= 0 (max |log factor| difference)")
    Wt = as_float_array("W", W, ndim=2, positive=True)
    if Wt.shape[1] < 2:
        raise InputError("W", W, "needs at least two GPU types (nothing to misreport)")
    Wt = Wt / Wt[:, :1]
    n, k = Wt.shape
    ids = list(range(n)) if learners is None else [check_int("learners[]", i, minimum=0) for i in learners]
    for i in ids:
        if i >= n:
            raise InputError("learners", i, f"must index one of the {n} tenants")
    _, fn = resolve_fair_share(mechanism)
    cfg = config or FAST_SEARCH
    F = np.ones((n, k - 1))
    history = [F.copy()]
    utils = [_utilities(fn, Wt, m, F, weights, caps)]
    rows: list[dict[str, Any]] = []
    moves_by_pass: dict[int, list[dict[str, Any]]] = {}
    evaluations = 0
    t0 = time.perf_counter()
    status, period, last_gain = "max-passes", 0, 0.0
    done = 0
    reported: list[dict[str, Any]] = []
    for p in range(1, passes + 1):
        gains: list[float] = []
        moves: list[dict[str, Any]] = []
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
            rel = relative(gain, current) if gain > 0 else (gain / abs(current) if current else 0.0)
            gains.append(max(rel, 0.0))
            row: dict[str, Any] = {"pass": p, "agent": i, "utility_before": current,
                                   "gain_rel": rel, "gain_abs": gain}  # fmt: skip
            step = rel > tol
            if step:
                before = F[i].tolist()
                F[i] = _to_factors(res.witness, k)
                moves.append({"pass": p, "agent": i, "from": before, "to": F[i].tolist(),
                              "step": _step(before, F[i]), "gain": float(rel)})  # fmt: skip
            for j in range(1, k):
                row[f"f{j}"] = float(F[i, j - 1])
            row["utility_after"] = best if step else current
            rows.append(row)
        done = p
        last_gain = max(gains, default=0.0)
        moves_by_pass[p] = moves
        reported = moves
        if progress is not None:
            progress(p, passes)
        if not moves:
            status = "converged"  # provisional: the certificate below decides
            break
        history.append(F.copy())
        utils.append(_utilities(fn, Wt, m, F, weights, caps))
        logF = np.log(F)
        for q in range(p - 1, -1, -1):
            d = float(np.max(np.abs(logF - np.log(history[q]))))
            if d > report_tol:
                continue
            cyc = [mv for r in range(q + 1, p + 1) for mv in moves_by_pass[r]]
            tiny = [mv for mv in cyc if mv["step"] <= report_tol]
            same_u = bool(np.all(np.abs(utils[p] - utils[q]) <= tol * np.maximum(1.0, np.abs(utils[q]))))
            if d == 0.0 or (not tiny and same_u):
                status, period, reported = "cycle", p - q, cyc
            else:
                status, reported = "chase", tiny or cyc
            break
        if status in ("cycle", "chase"):
            break
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            status = "time-limit"
            break
    cert = audit_fair_share_profile(mechanism, Wt, m, F, weights=weights, caps=caps, learners=ids, tol=tol,
                                    config=certify_config, seed=seed)  # fmt: skip
    evaluations += cert.evaluations
    if status == "converged" and not cert.certified:
        status = "stalled"
    return ContinuousResult(F, status, period, cert.eps_rel, cert.eps_abs, done, pd.DataFrame(rows), evaluations,
                            time.perf_counter() - t0, history, cert, last_gain, reported)  # fmt: skip
