"""What happens to a solved allocation: clipping to exact zeros (A4 step 3) and the LRU cache of
allocations keyed on validated inputs (spec §8)."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.market.errors import SolveError

__all__ = ["ZERO_TOL", "clip_solution", "AllocationCache", "CACHE"]

ZERO_TOL = 1e-9
_CLIP_FAIL = 1e-7


def clip_solution(policy: str, X: np.ndarray, zero_tol: float = ZERO_TOL) -> np.ndarray:
    """A4 step 3: entries below ``-1e-7`` raise; entries below ``zero_tol`` become exactly 0."""
    if X.size and X.min() < -_CLIP_FAIL:
        raise SolveError(policy, "negative", f"solution entry {X.min()!r} < -1e-7")
    out = X.copy()
    out[out < zero_tol] = 0.0
    return out


class AllocationCache:
    """Small LRU cache of allocations keyed on validated inputs (spec §8)."""

    def __init__(self, maxsize: int = 256) -> None:
        from collections import OrderedDict

        self.maxsize = maxsize
        self._d: OrderedDict[Any, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: Any, compute: Any, use: bool = True) -> Any:
        """The cached value for ``key`` (a fresh copy of ``X``), or ``compute()`` stored."""
        import dataclasses

        if not use:
            return compute()
        if key in self._d:
            self._d.move_to_end(key)
            self.hits += 1
            a = self._d[key]
            return dataclasses.replace(a, X=a.X.copy(), info={**a.info, "cache_hit": True})
        self.misses += 1
        a = compute()
        self._d[key] = a
        if len(self._d) > self.maxsize:
            self._d.popitem(last=False)
        return dataclasses.replace(a, X=a.X.copy())

    def clear(self) -> None:
        """Drop every entry."""
        self._d.clear()


CACHE = AllocationCache()
