"""Gavel's two simplest policies as fair-share mechanisms (Narayanan et al., OSDI'20; semantics read
from ``scheduler/policies/isolated.py`` and ``fifo.py`` of the public Gavel code, nothing copied).
Like ``gavel-max-min-perf`` (:mod:`marketsim.market.oef.gavel`, whose conventions they share) they take RAW
throughputs ``T`` (n, k) with zeros allowed (0 = the job cannot run on that type), optional
``scale_factors`` (GPUs per job), ``weights`` and ``caps``; ``Allocation.X`` holds devices
``s_l x[l, j]`` and ``info["time_fractions"]`` the time fractions ``x``, with time bound
``sum_j x[l, j] <= caps[l] / s_l`` (1 without caps). On speedups (the synthetic round loop) they
work the same.

* ``gavel-isolated`` (Gavel ``IsolatedPolicy``): every row gets its share ``pi_l / sum(pi)`` of every
  GPU type, ``x[l, j] = (pi_l / sum pi) m_j / s_l``, scaled down so the row meets its time bound.
  Nothing a capped row leaves is handed on (unlike ``maxmin``'s progressive filling): a static
  partition of the cluster. Throughputs are not used, except that time on a type with throughput 0
  is dropped after the scaling (as Gavel, which allocates it and never leases it). Gavel's policy
  splits evenly (it has no weights): the same with equal weights.
* ``gavel-fifo`` (Gavel ``FIFOPolicyWithPerf``, its ``fifo_perf``): rows in their order (arrival
  order in trace runs); each row needs ``g_l = min(s_l * time bound, max_j m_j)`` devices (``s_l``
  for a job without a cap). Among the types with at least ``g_l`` devices still free it takes the
  one with the largest throughput (ties: the first in column order) for the whole of its time; if
  that throughput is 0 the row gets nothing and the next row is tried; if no type has room, the
  allocation stops there (head-of-line blocking: no later row may jump ahead). Weights are not
  used. Gavel's plain ``fifo`` draws the type at random and keeps a job's type until it completes (a
  stateful policy, not modelled); ``fifo_perf`` is recomputed from scratch at every re-solve, as
  here. In trace runs (``marketsim.agents.trace_rounds``) a ``gavel-fifo`` job runs only where it has an
  allocation (Gavel never leases a FIFO job with priority 0).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.oef.gavel import _finish, validate_gavel
from marketsim.market.registry import register

__all__ = ["isolated", "fifo"]


@register(
    "gavel-isolated", "fair-share", "Gavel's isolated: a static (weighted) equal partition of every GPU type, capped"
)
def isolated(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel's ``IsolatedPolicy`` (module docstring): ``x[l, j] = (pi_l / sum pi) m_j / s_l``
    scaled to the row's time bound; a capped row's remainder stays unallocated. Option
    ``scale_factors`` (GPUs per job, default 1).

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    g = validate_gavel(W, m, weights, caps, options, "gavel-isolated")
    t0 = time.perf_counter()
    if g.n == 0 or not g.m.any():
        return _finish("gavel-isolated", g, np.zeros((g.n, g.k)), 0.0, 0.0, {})
    x = (g.w / g.w.sum())[:, None] * g.m[None, :] / g.s[:, None]
    tot = x.sum(axis=1)
    tub = g.time_ub()
    scale = np.where(tot > tub, tub / np.where(tot > 0, tot, 1.0), 1.0)
    x *= scale[:, None]
    x[g.T <= 0] = 0.0
    info = {"capped_rows": int((scale < 1).sum())}
    return _finish("gavel-isolated", g, x, float((g.T * x).sum()), time.perf_counter() - t0, info)


@register(
    "gavel-fifo", "fair-share", "Gavel's fifo_perf: rows in order, each on its fastest type with room; no overtaking"
)
def fifo(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel's ``FIFOPolicyWithPerf`` (module docstring): in row order, ``g_l`` devices on the
    row's fastest type with that many free (nothing if its throughput there is 0); stops at the
    first row that fits nowhere. Option ``scale_factors`` (GPUs per job, default 1).
    ``info["served"]`` counts the rows served, ``info["blocked_at"]`` is the blocking row (None if
    no row was blocked).

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    g = validate_gavel(W, m, weights, caps, options, "gavel-fifo")
    t0 = time.perf_counter()
    x = np.zeros((g.n, g.k))
    if g.n == 0 or not g.m.any():
        return _finish("gavel-fifo", g, x, 0.0, 0.0, {"served": 0, "blocked_at": None})
    free = g.m.copy()
    need = np.minimum(g.s * g.time_ub(), float(g.m.max()))
    blocked: int | None = None
    for l in range(g.n):
        d = float(need[l])
        if d <= 0:
            continue
        room = free >= d - 1e-12
        if not room.any():
            blocked = l
            break
        j = int(np.argmax(np.where(room, g.T[l], -np.inf)))
        if g.T[l, j] <= 0:  # its best type with room cannot run it: skipped, the queue goes on (Gavel)
            continue
        x[l, j] = d / g.s[l]
        free[j] -= d
    info = {"served": int((x.sum(axis=1) > 0).sum()), "blocked_at": blocked}
    return _finish("gavel-fifo", g, x, float((g.T * x).sum()), time.perf_counter() - t0, info)
