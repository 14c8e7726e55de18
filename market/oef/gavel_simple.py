"""Gavel's two simplest policies as fair-share mechanisms (Narayanan et al., OSDI'20; semantics read
from ``scheduler/policies/isolated.py`` and ``fifo.py`` of the public Gavel code, nothing copied).
Fair-share signature ``fn(W, m, *, weights=None, caps=None, **options) -> Allocation`` with ``X``
in fractional devices and ``objective = sum_l W_l . X_l`` (normalised speedups).

* ``gavel-isolated`` (Gavel ``IsolatedPolicy``): every row gets its share ``pi_l / sum(pi)`` of every GPU
  type, ``X_l = (pi_l / sum pi) m``, scaled down to its cap: ``X_l *= min(1, d_l / sum_j X_l^j)``.
  Nothing a capped row leaves is handed on (unlike ``maxmin``'s progressive filling): a static
  partition of the cluster. Gavel's policy splits evenly (it has no weights): the same with equal
  weights. Speedups are not used.
* ``gavel-fifo`` (Gavel ``FIFOPolicyWithPerf``, its ``fifo_perf``): rows in their order (arrival order in
  trace runs); each row takes ``g_l = min(d_l, max_j m_j)`` devices (no cap: one whole type) of the
  type with the largest speedup among those with at least ``g_l`` devices still free (ties: the
  first such type); the first row that fits on no type stops the allocation (head-of-line
  blocking: no later row may jump ahead). Weights are not used. Gavel's plain ``fifo`` draws the
  type at random and keeps a job's type until it completes (a stateful policy); ``fifo_perf`` is
  recomputed from scratch at every re-solve, as here. In trace runs (``agents.trace_rounds``) a
  ``gavel-fifo`` job runs only where it has an allocation (Gavel: FIFO never leases a job with priority 0).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from market.allocation import Allocation
from market.oef.validate import prepare, trivial_allocation
from market.registry import register

__all__ = ["isolated", "fifo"]


def _finish(policy: str, W: np.ndarray, X: np.ndarray, seconds: float, info: dict[str, Any]) -> Allocation:
    return Allocation(X, policy, float(np.einsum("lj,lj->", W, X)), None, "optimal", seconds, info)


@register(
    "gavel-isolated", "fair-share", "Gavel's isolated: a static (weighted) equal partition of every GPU type, capped"
)
def isolated(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel's ``IsolatedPolicy`` (module docstring): ``X_l = (pi_l / sum pi) m`` scaled to the cap
    ``d_l``; a capped row's remainder stays unallocated."""
    _, v = prepare("gavel-isolated", W, m, weights, caps, options, {})
    triv = trivial_allocation("gavel-isolated", v)
    if triv is not None:
        return triv
    t0 = time.perf_counter()
    X = (v.weights / v.weights.sum())[:, None] * v.m.astype(float)[None, :]
    tot = X.sum(axis=1)
    scale = np.where(tot > v.caps, v.caps / np.where(tot > 0, tot, 1.0), 1.0)
    X *= scale[:, None]
    return _finish("gavel-isolated", v.W, X, time.perf_counter() - t0, {"capped_rows": int((scale < 1).sum())})


@register(
    "gavel-fifo", "fair-share", "Gavel's fifo_perf: rows in order, each on its fastest type with room; no overtaking"
)
def fifo(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel's ``FIFOPolicyWithPerf`` (module docstring): in row order, ``min(d_l, max m)`` devices
    on the row's fastest type with that many free; stops at the first row that fits nowhere.
    ``info["served"]`` counts the rows served, ``info["blocked_at"]`` is the blocking row (None if
    every row was served)."""
    _, v = prepare("gavel-fifo", W, m, weights, caps, options, {})
    triv = trivial_allocation("gavel-fifo", v)
    if triv is not None:
        return triv
    t0 = time.perf_counter()
    free = v.m.astype(float).copy()
    X = np.zeros((v.n, v.k))
    need = np.minimum(v.caps, float(v.m.max()))
    blocked: int | None = None
    for l in range(v.n):
        g = float(need[l])
        if g <= 0:
            continue
        room = free >= g - 1e-12
        if not room.any():
            blocked = l
            break
        j = int(np.argmax(np.where(room, v.W[l], -np.inf)))
        X[l, j] = g
        free[j] -= g
    served = int((X.sum(axis=1) > 0).sum())
    return _finish("gavel-fifo", v.W, X, time.perf_counter() - t0, {"served": served, "blocked_at": blocked})
