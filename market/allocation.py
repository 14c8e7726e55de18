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

    :param X: (n, k) GPUs of each type per row, time-averaged (fractional)
    :param policy: the registered name of the allocator
    :param objective: ``sum_l W_l . x_l`` under the reported speedups (slowest-GPU equivalents)
    :param common_value: the equalised per-row value ``t*`` (non-cooperative OEF), else ``None``
    :param status: the solver's status, ``"optimal"`` when solved
    :param solve_seconds: wall time of the solve, in seconds
    :param info: policy-specific diagnostics
    """

    X: np.ndarray
    policy: str
    objective: float
    common_value: float | None = None
    status: str = "optimal"
    solve_seconds: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)

    def throughput(self, W: np.ndarray) -> np.ndarray:
        """Per-row normalised throughput ``W_l . x_l`` under the speedups ``W`` (e.g. TRUE ones).

        :param W: (n, k) speedups, column 0 the slowest type
        :returns: (n,) throughput per row, in slowest-GPU equivalents
        """
        return np.einsum("lj,lj->l", np.asarray(W, dtype=float), self.X)

    def to_dict(self, W: np.ndarray | None = None) -> dict[str, Any]:
        """JSON-ready dict: ``allocation`` (rows x types), ``throughput`` per row and ``total``.

        :param W: (n, k) speedups to measure throughput with; ``None``: no throughput keys
        :returns: ``policy``, ``allocation``, ``status``, ``solve_seconds``, and ``throughput``/``total``
            (with ``W``) and ``common_value`` (when set)
        """
        out: dict[str, Any] = {"policy": self.policy, "allocation": self.X.tolist(), "status": self.status}
        if W is not None:
            thr = self.throughput(W)
            out["throughput"] = thr.tolist()
            out["total"] = float(thr.sum())
        if self.common_value is not None:
            out["common_value"] = self.common_value
        out["solve_seconds"] = self.solve_seconds
        return out
