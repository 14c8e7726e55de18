"""Gavel's own policies on RAW throughputs (Narayanan et al., OSDI'20; facts from the public
``scheduler/policies`` code): first-class scale factors, priority weights and zero throughputs.

Units: ``T`` (n, k) raw throughputs of job ``l`` on one placement of type ``j`` (e.g. iterations/s of
the job running with its ``scale_factors[l]`` GPUs); ``T[l, j] = 0`` means the model cannot run on
type ``j`` (accepted, as in Gavel's measured tables, and never allocated). Gavel's variable is a time
fraction ``x[l, j]`` with ``sum_j x[l, j] <= 1`` and capacity ``sum_l s_l x[l, j] <= m_j``. The
returned :class:`~marketsim.market.allocation.Allocation` holds devices ``X = s_l x[l, j]`` (like every
fair-share policy) and ``info["time_fractions"]`` holds ``x``.

Caps: ``caps[l]`` (devices, >= 0, ``inf`` = none) bounds row ``l``'s devices, ``sum_j s_l x[l, j]
<= caps[l]``, i.e. its time bound becomes ``caps[l] / s_l`` instead of 1 (a row may then stand for
several jobs: marketsim's round loop passes one row per (tenant, job type) class with cap = the
class's runnable workers, OEF spec A9). ``caps=None`` keeps Gavel's one-job bound ``sum_j x <= 1``
(``caps = s``). An infinite cap is taken as ``sum(m)``, which the capacity rows imply anyway.
``gavel-max-min-perf`` rejects a zero cap (like an all-zero row it pins the minimum at 0).

* ``gavel-max-sum-throughput`` (Gavel ``ThroughputSumWithPerf``): ``max sum_l T_l . x_l``.
  The framework's ``max-throughput`` is LP (4) of the OEF paper, which normalises each row by its
  slowest type first; on raw throughputs the two differ.
* ``gavel-max-min-perf`` (Gavel ``MaxMinFairnessPolicyWithPerf``): ``max min_l s_l T_l . x_l /
  (w_l P_l)`` where ``P_l = sum_j T[l, j] m_j / sum(m)`` is job ``l``'s throughput under Gavel's
  proportional share (``ProportionalPolicy``: time fraction ``m_j / sum(m)`` of every type, the
  same for every job, scale factors not counted).

Both solve one HiGHS LP with ``solver="auto"`` by default: dual simplex on small programs,
interior point on large ones (:func:`marketsim.market.oef.lp.choose_solver`); ``gavel-max-min-perf`` solves a
large program by exact price decomposition first (:mod:`marketsim.market.oef.maxmin`, ``info["lp_path"]``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, SolveError, as_float_array, check_choice
from marketsim.market.oef import highs_direct
from marketsim.market.oef import lp as lpmod
from marketsim.market.oef.maxmin import solve_maxmin_live
from marketsim.market.oef.roundlp import check_aggregate, row_classes, use_aggregation
from marketsim.market.oef.validate import SOLVERS, check_caps
from marketsim.market.registry import register
from marketsim.market.types import check_capacity_vector

__all__ = ["gavel_max_sum_throughput", "gavel_max_min_perf", "proportional_throughputs", "GavelInput", "validate_gavel"]


class GavelInput:
    """Validated Gavel inputs: ``T`` (n, k) >= 0, ``m`` (k,), ``s`` (n,) ints >= 1, ``w`` (n,) > 0,
    ``caps`` (n,) devices in [0, inf] or ``None``."""

    def __init__(
        self,
        T: np.ndarray,
        m: np.ndarray,
        s: np.ndarray,
        w: np.ndarray,
        solver: str,
        aggregate: object = "auto",
        caps: np.ndarray | None = None,
    ) -> None:
        self.T, self.m, self.s, self.w, self.solver, self.aggregate = T, m, s, w, solver, aggregate
        self.caps = caps

    def time_ub(self) -> np.ndarray:
        """Each row's time bound ``sum_j x[l, j] <= caps[l] / s_l`` (1 without caps; an infinite cap
        is taken as ``sum(m)`` devices, implied by the capacity rows)."""
        if self.caps is None:
            return np.ones(self.n)
        return np.minimum(self.caps, float(self.m.sum())) / self.s

    @property
    def n(self) -> int:
        return int(self.T.shape[0])

    @property
    def k(self) -> int:
        return int(self.T.shape[1])


def validate_gavel(
    W: Any, m: Any, weights: Any, caps: Any, options: dict[str, Any], policy: str, more: tuple[str, ...] = ()
) -> GavelInput:
    """Check Gavel inputs; errors name the field and value (scale factors: ``scale_factors[l]``).
    ``more`` names further options the policy accepts (``aggregate``)."""
    known = {"scale_factors", "solver", *more}
    extra = sorted(set(options) - known)
    if extra:
        raise InputError("option", extra[0], f"is not an option of policy {policy!r}; known: {sorted(known)}")
    T = as_float_array("W", W, ndim=2, nonneg=True)
    n, k = T.shape
    if k == 0:
        raise InputError("W", W, "must have at least one GPU type (column)")
    ma = check_capacity_vector("m", as_float_array("m", m, shape=(k,), nonneg=True)).astype(float)
    sf = options.get("scale_factors")
    if sf is None:
        s = np.ones(n)
    else:
        s = as_float_array("scale_factors", sf, shape=(n,), positive=True)
        bad = np.flatnonzero(s != np.round(s))
        if bad.size:
            raise InputError(f"scale_factors[{int(bad[0])}]", float(s[bad[0]]), "must be a whole number of GPUs >= 1")
    if weights is None:
        w = np.ones(n)
    else:
        w = as_float_array("weights", weights, shape=(n,), positive=True)
    solver = options.get("solver", "auto")
    check_choice("solver", solver, SOLVERS)
    aggregate = options.get("aggregate", "auto")
    check_aggregate(aggregate)
    return GavelInput(T, ma, s, w, solver, aggregate, _check_caps(caps, n))


def _check_caps(caps: Any, n: int) -> np.ndarray | None:
    """``caps`` as an (n,) float array of devices in [0, inf] (``None`` stays ``None``)."""
    return None if caps is None else check_caps(caps, n)


def _program(
    g: GavelInput, c: np.ndarray, extra_rows: sp.csr_array | None, extra_cols: int, time_ub: np.ndarray | None = None
) -> lpmod.LinearProgram:
    """Variables: ``x`` (n*k, row-major) then ``extra_cols`` free ones; capacity and time rows
    (``sum_j x[l, j] <= time_ub[l]``, ones by default)."""
    n, k = g.n, g.k
    nv = n * k + extra_cols
    rows_l = np.repeat(np.arange(n), k)
    cols = np.arange(n * k)
    cap = sp.csr_array((np.repeat(g.s, k), (np.tile(np.arange(k), n), cols)), shape=(k, nv))
    tim = sp.csr_array((np.ones(n * k), (rows_l, cols)), shape=(n, nv))
    blocks = [cap, tim] + ([extra_rows] if extra_rows is not None else [])
    A = sp.vstack(blocks, format="csr")
    tub = np.ones(n) if time_ub is None else np.asarray(time_ub, dtype=float)
    b = np.concatenate([g.m, tub, np.zeros(0 if extra_rows is None else extra_rows.shape[0])])
    zero = (g.T.ravel() <= 0) | np.repeat(g.m[None, :] <= 0, n, axis=0).ravel()
    bounds = [(0.0, 0.0) if z else (0.0, None) for z in zero] + [(None, None)] * extra_cols
    return lpmod.LinearProgram(c, A, b, bounds=bounds)


def _direct(g: GavelInput) -> bool:
    """Solve by :mod:`marketsim.market.oef.highs_direct`: the dual simplex (``"highs-ds"``) is the method, given
    or picked by ``"auto"`` for a program this small (``3 n k + n`` nonzeros at most)."""
    return lpmod.choose_solver(g.solver, 3 * g.n * g.k + g.n) == "highs-ds"


def _finish(policy: str, g: GavelInput, x: np.ndarray, objective: float, seconds: float, info: dict) -> Allocation:
    x = np.clip(x, 0.0, g.time_ub()[:, None]) + 0.0
    x[g.T <= 0] = 0.0
    X = g.s[:, None] * x + 0.0  # no negative zeros
    over = float((X.sum(axis=0) - g.m).max()) if g.n else 0.0
    if over > 1e-6 * max(1.0, float(g.m.max())):
        raise SolveError(policy, "capacity", f"capacity excess {over!r}")
    info = {**info, "time_fractions": x.tolist(), "scale_factors": g.s.tolist()}
    return Allocation(X, policy, objective, None, "optimal", seconds, info)


def _sum_lp(g: GavelInput, T: np.ndarray) -> tuple[np.ndarray, float, float]:
    if _direct(g):  # small program: straight to highspy, same method and vertex (marketsim.market.oef.highs_direct)
        t0 = time.perf_counter()
        x = highs_direct.gavel_sum("gavel-max-sum-throughput", T, g.m, g.s, g.time_ub())
        return x, float((T * x).sum()), time.perf_counter() - t0
    prog = _program(g, -T.ravel(), None, 0, g.time_ub())
    x, fun, dt = lpmod.solve("gavel-max-sum-throughput", prog, g.solver)
    return x.reshape(g.n, g.k), -fun, dt


@register(
    "gavel-max-sum-throughput",
    "fair-share",
    "Gavel max-sum-throughput on raw throughputs (time fractions, scale factors, zero = cannot run)",
)
def gavel_max_sum_throughput(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel ``ThroughputSumWithPerf``: ``max sum_l T_l . x_l`` s.t. ``sum_l s_l x[l, j] <= m_j``,
    ``sum_j x[l, j] <= 1`` (``<= caps[l] / s_l`` with ``caps``, module docstring), ``x >= 0`` and
    ``x[l, j] = 0`` where ``T[l, j] = 0``. ``weights`` are accepted and unused (Gavel's sum
    objective has none). Objective in raw throughput units.

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    g = validate_gavel(W, m, weights, caps, options, "gavel-max-sum-throughput")
    t0 = time.perf_counter()
    if g.n == 0 or not g.m.any():
        return _finish("gavel-max-sum-throughput", g, np.zeros((g.n, g.k)), 0.0, 0.0, {})
    x, _, _ = _sum_lp(g, g.T)
    obj = float((g.T * np.clip(x, 0, g.time_ub()[:, None])).sum())
    return _finish("gavel-max-sum-throughput", g, x, obj, time.perf_counter() - t0, {"solver": g.solver})


def _maxmin_lp(g: GavelInput, coef: np.ndarray, time_ub: np.ndarray) -> tuple[np.ndarray, float, str, dict]:
    """``max t`` s.t. ``coef_l . x_l >= t`` for every job, capacity and time rows; returns ``(x, t,
    path, decomposition info)``. With ``solver="auto"`` a program large enough for interior point is first solved by
    price decomposition (:mod:`marketsim.market.oef.maxmin`, exact, path ``"decomposition"``), falling back
    to the full LP (path ``"full"``)."""
    n, k = g.n, g.k
    if g.solver == "auto" and lpmod.choose_solver("auto", 3 * n * k + n) == "highs-ipm":
        got = solve_maxmin_live(coef, g.m, g.s, time_ub, policy="gavel-max-min-perf")
        if got is not None:
            return got[0], got[1], "decomposition", got[2]
    if _direct(g):  # small program: straight to highspy, same method and vertex (marketsim.market.oef.highs_direct)
        x, t = highs_direct.gavel_maxmin("gavel-max-min-perf", g.T, g.m, g.s, coef, time_ub)
        return x, t, "full", {}
    rows = np.concatenate([np.repeat(np.arange(n), k), np.arange(n)])
    cols = np.concatenate([np.arange(n * k), np.full(n, n * k)])
    fair = sp.csr_array((np.concatenate([-coef.ravel(), np.ones(n)]), (rows, cols)), shape=(n, n * k + 1))
    c = np.zeros(n * k + 1)
    c[-1] = -1.0
    prog = _program(g, c, fair, 1, time_ub)
    x, fun, _ = lpmod.solve("gavel-max-min-perf", prog, g.solver)
    return x[: n * k].reshape(n, k), -fun, "full", {}


def proportional_throughputs(T: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Gavel's normalisers ``P_l = sum_j T[l, j] m_j / sum(m)`` (raw throughput units): job ``l``'s
    throughput under ``ProportionalPolicy``, which gives every job the time fraction ``m_j / sum(m)``
    of type ``j`` (the cluster split evenly over jobs, rescaled so each job's row sums to 1)."""
    return T @ m / float(m.sum())


@register(
    "gavel-max-min-perf",
    "fair-share",
    "Gavel max-min fairness (perf) on raw throughputs: scale factors, priority weights, proportional-share normalisers",
)
def gavel_max_min_perf(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel ``MaxMinFairnessPolicyWithPerf``: ``max min_l s_l T_l . x_l / (w_l P_l)`` with Gavel's
    proportional-share throughputs ``P_l`` (:func:`proportional_throughputs`); same constraints as
    the sum policy (caps: module docstring). ``info["min_ratio"]`` is the optimal ``min_l``,
    ``info["proportional_throughputs"]`` holds ``P``. Option ``aggregate`` (``"auto"`` default,
    ``True``, ``False``): solve identical jobs once, with equal time fractions
    (:mod:`marketsim.market.oef.roundlp`; same optimum); ``"auto"`` does so when jobs repeat and
    ``solver="auto"`` would pick interior point. A job that can run nowhere (all-zero row), or only
    on types with no GPUs (``P_l = 0``), or with cap 0, is rejected: its ratio would pin the minimum
    at 0. Identical jobs are those with the same throughputs, scale factor, weight and cap.

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    g = validate_gavel(W, m, weights, caps, options, "gavel-max-min-perf", ("aggregate",))
    dead = np.flatnonzero(~(g.T > 0).any(axis=1)) if g.n else np.zeros(0, dtype=int)
    if dead.size:
        raise InputError(f"W[{int(dead[0])}]", g.T[dead[0]].tolist(),
                         "is all zero: the job cannot run on any GPU type, so max-min fairness is 0 for everyone; "
                         "drop it or use gavel-max-sum-throughput")  # fmt: skip
    t0 = time.perf_counter()
    if g.n == 0 or not g.m.any():
        return _finish("gavel-max-min-perf", g, np.zeros((g.n, g.k)), 0.0, 0.0, {})
    prop = proportional_throughputs(g.T, g.m)
    if (prop <= 0).any():
        l = int(np.flatnonzero(prop <= 0)[0])
        reason = "runs only on GPU types with no GPUs (proportional-share throughput 0)"
        raise InputError(f"W[{l}]", g.T[l].tolist(), reason)
    if g.caps is not None and (g.caps <= 0).any():
        l = int(np.flatnonzero(g.caps <= 0)[0])
        raise InputError(f"caps[{l}]", float(g.caps[l]), "is 0: the row can get no GPU, so max-min fairness is 0 for "
                         "everyone; drop the row or use gavel-max-sum-throughput")  # fmt: skip
    coef = g.T * (g.s / (g.w * prop))[:, None]
    tub = g.time_ub()
    nnz = 3 * g.n * g.k + g.n
    # use_aggregation can only say yes when asked to, or ("auto") for a program large enough for
    # interior point: only then are the identical rows looked for (np.unique of the rows costs more
    # than a small program's solve)
    agg = False
    if g.aggregate is True or (g.aggregate == "auto" and g.solver == "auto" and nnz >= lpmod.AUTO_IPM_NONZEROS):
        first, cls, counts = row_classes(g.T, g.s, g.w, tub)
        agg = use_aggregation(g.aggregate, g.solver, first.size, g.n, nnz)
    # identical jobs solved once (marketsim.market.oef.roundlp): class time n_c tub_c, class ratio coef . Y_c / n_c
    if agg:
        ga = GavelInput(g.T[first], g.m, g.s[first], g.w[first], g.solver)
        xa, t, path, dec = _maxmin_lp(ga, coef[first] / counts[:, None], counts * tub[first])
        x = xa[cls] / counts[cls][:, None]
    else:
        x, t, path, dec = _maxmin_lp(g, coef, tub)
    obj = float((g.T * np.clip(x, 0, tub[:, None])).sum())
    return _finish("gavel-max-min-perf", g, x, obj, time.perf_counter() - t0,
                   {"min_ratio": t, "proportional_throughputs": prop.tolist(), "solver": g.solver,
                    "aggregated_classes": int(first.size) if agg else None, "lp_path": path,
                    "decomposition": dec})  # fmt: skip
