"""Canonical per-site data sources (spec §3.2, D5): a house-monotone proportional interleaving."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["source_sequence", "cumulative_sources", "slot_sources"]


def source_sequence(data: Sequence[int] | np.ndarray) -> np.ndarray:
    """SOURCE_SEQUENCE: 0-based site rows, one per chunk; site r maximises ``n D^r - D A^r``
    among sites with chunks left (ties: smallest r). Integer arithmetic only."""
    Dr = [int(x) for x in np.asarray(data, dtype=np.int64)]
    D = sum(Dr)
    live = [r for r, x in enumerate(Dr) if x > 0]  # sites without data never enter the sequence
    A = dict.fromkeys(live, 0)
    seq = np.empty(D, dtype=np.int64)
    for n in range(1, D + 1):
        best, bkey = -1, None
        for r in live:
            if A[r] < Dr[r]:
                key = n * Dr[r] - D * A[r]
                if bkey is None or key > bkey:
                    best, bkey = r, key
        seq[n - 1] = best
        A[best] += 1
    return seq


def cumulative_sources(seq: np.ndarray, R: int) -> np.ndarray:
    """``A[n, r]`` = number of chunks of site r among the first n of ``seq``; shape (D+1, R)."""
    D = len(seq)
    onehot = np.zeros((D + 1, R), dtype=np.int64)
    onehot[np.arange(1, D + 1), seq] = 1
    return np.cumsum(onehot, axis=0)


def slot_sources(cum: np.ndarray, done: int, d: int) -> np.ndarray:
    """SLOT_SOURCES: chunks per site trained in a slot after ``done`` earlier chunks."""
    return cum[done + d] - cum[done]
