"""The result type of every fair-share allocator (OEF and its baselines)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Allocation"]


@dataclass(frozen=True)
class Allocation:
    """A fractional allocation of GPU types to rows (tenants or (tenant, job type) classes).

    ``X[l, j]`` is the time-averaged number of type-``j`` GPUs given to row ``l`` (fractional
    shares are realised by the rounding placer over rounds). ``objective`` is
    ``sum_l W_l . x_l`` under the REPORTED speedups, in slowest-GPU equivalents.
    ``common_value`` is the equalised per-row value ``t*`` of the non-cooperative OEF LP (per unit
    weight), else ``None``. ``info`` holds policy-specific diagnostics (trade log, LP sizes, ...).
    """

    X: np.ndarray
    policy: str
    objective: float
    common_value: float | None = None
    status: str = "optimal"
    solve_seconds: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)

    def throughput(self, W: np.ndarray) -> np.ndarray:
        """Per-row normalised throughput ``W_l . x_l`` under the speedups ``W`` (e.g. TRUE ones)."""
        return np.einsum("lj,lj->l", np.asarray(W, dtype=float), self.X)

    def to_dict(self, W: np.ndarray | None = None) -> dict[str, Any]:
        """JSON-ready dict: ``allocation`` (rows x types), ``throughput`` per row and ``total``."""
        out: dict[str, Any] = {"policy": self.policy, "allocation": self.X.tolist(), "status": self.status}
        if W is not None:
            thr = self.throughput(W)
            out["throughput"] = thr.tolist()
            out["total"] = float(thr.sum())
        if self.common_value is not None:
            out["common_value"] = self.common_value
        out["solve_seconds"] = self.solve_seconds
        return out
