"""Plain-data types of the OEF fair-share layer (spec §2.1).

Speedups are dimensionless (throughput on one type-``j`` GPU over throughput on one type-0 GPU);
allocations are time-averaged numbers of devices; throughput is in slowest-GPU equivalents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, check_finite, check_int, check_nonneg, check_positive

__all__ = [
    "ClassKey",
    "SpeedupReport",
    "TenantSpec",
    "JobSpec",
    "VirtualUserTable",
    "TenantAllocation",
]

ClassKey = tuple[str, str]
"""A placer / LP class: ``(tenant_id, job_type)``."""


@dataclass(frozen=True)
class SpeedupReport:
    """What a tenant declares for ONE job type (may be a lie).

    ``w[j]`` = throughput on one type-``j`` GPU / throughput on one type-0 GPU (dimensionless);
    the mechanisms normalise by ``w[0]`` unless told otherwise. Entries are checked (finite, > 0)
    by the validator of the mechanism that receives the report, so a report can be built first
    and rejected with a message naming the tenant and job type.

    :param tenant_id: the tenant (non-empty)
    :param job_type: the job type (non-empty)
    :param w: k speedups, one per GPU type, relative to type 0 (dimensionless)
    """

    tenant_id: str
    job_type: str
    w: tuple[float, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.tenant_id, str) or not self.tenant_id:
            raise InputError("SpeedupReport.tenant_id", self.tenant_id, "must be a non-empty string")
        if not isinstance(self.job_type, str) or not self.job_type:
            raise InputError("SpeedupReport.job_type", self.job_type, "must be a non-empty string")
        try:
            w = tuple(self.w)
        except TypeError:
            raise InputError(f"speedup report for {self.key}", self.w, "must be a sequence of numbers") from None
        object.__setattr__(self, "w", w)

    @property
    def key(self) -> ClassKey:
        """The class ``(tenant_id, job_type)``."""
        return (self.tenant_id, self.job_type)


@dataclass(frozen=True)
class TenantSpec:
    """A tenant with priority ``weight`` (pi_u > 0, paper §4.2.3).

    :param tenant_id: the tenant (non-empty)
    :param weight: its priority, > 0
    """

    tenant_id: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.tenant_id, str) or not self.tenant_id:
            raise InputError("TenantSpec.tenant_id", self.tenant_id, "must be a non-empty string")
        check_positive(f"TenantSpec[{self.tenant_id}].weight", self.weight)


@dataclass(frozen=True)
class JobSpec:
    """A gang job: ``workers`` GPUs at once; ``work`` in slowest-GPU-seconds; ``arrival`` in s.

    :param job_id: the job (non-empty)
    :param tenant_id: its tenant
    :param job_type: its type
    :param workers: GPUs it uses at once, >= 1
    :param work: slowest-GPU-seconds, > 0
    :param arrival: arrival time in seconds, >= 0
    """

    job_id: str
    tenant_id: str
    job_type: str
    workers: int
    work: float
    arrival: float = 0.0

    def __post_init__(self) -> None:
        if not self.job_id:
            raise InputError("JobSpec.job_id", self.job_id, "must be a non-empty string")
        check_int(f"JobSpec[{self.job_id}].workers", self.workers, minimum=1)
        check_positive(f"JobSpec[{self.job_id}].work", self.work)
        check_nonneg(f"JobSpec[{self.job_id}].arrival", self.arrival)
        check_finite(f"JobSpec[{self.job_id}].arrival", self.arrival)


@dataclass(frozen=True)
class VirtualUserTable:
    """Output of A1: LP rows for (tenant, job type) classes, with weights by replication.

    ``W`` (R, k): one row per replica (or one per class when ``direct_weights`` is set);
    ``row_class[r]`` is the class of row ``r``; ``class_weight[c]`` = pi_u / |T_u| (exact);
    ``copies[c]`` = rows of class ``c``; ``classes`` lists the classes in row order.

    :param W: (R, k) reported speedups, one row per replica (or per class)
    :param row_class: the class of each row
    :param class_weight: exact weight ``pi_u / |T_u|`` per class
    :param copies: rows per class
    :param direct_weights: (R,) float row weights when rows are not replicated, else ``None``
    :param classes: the classes in row order
    """

    W: np.ndarray
    row_class: tuple[ClassKey, ...]
    class_weight: Mapping[ClassKey, Fraction]
    copies: Mapping[ClassKey, int]
    direct_weights: np.ndarray | None
    classes: tuple[ClassKey, ...] = field(default=())

    @property
    def n_rows(self) -> int:
        """Number of LP rows ``R``."""
        return int(self.W.shape[0])


@dataclass(frozen=True)
class TenantAllocation:
    """Tenant-level result of :func:`marketsim.market.oef.virtual.allocate_tenants`.

    ``allocation.X`` has one row per class in ``classes`` order; ``X_class[c]`` (k,) and
    ``X_tenant[u]`` (k,) are fractional devices per GPU type. ``W`` holds the (normalised)
    reported speedups per class row and ``class_weight`` the weights the policy used.

    :param classes: the ``(tenant, job type)`` classes in row order
    :param X_class: (k,) fractional devices per GPU type for each class
    :param X_tenant: (k,) fractional devices per GPU type for each tenant
    :param allocation: the policy's row-level result (one row per class)
    :param W: (n_classes, k) normalised reported speedups
    :param class_weight: the weight the policy used per class
    """

    classes: tuple[ClassKey, ...]
    X_class: Mapping[ClassKey, np.ndarray]
    X_tenant: Mapping[str, np.ndarray]
    allocation: Allocation
    W: np.ndarray
    class_weight: Mapping[ClassKey, Fraction]

    @property
    def tenants(self) -> tuple[str, ...]:
        """Tenant ids in first-appearance order."""
        return tuple(dict.fromkeys(c[0] for c in self.classes))

    def class_throughput(self) -> dict[ClassKey, float]:
        """Reported throughput ``W_c . x_c`` per class (slowest-GPU equivalents)."""
        thr = self.allocation.throughput(self.W)
        return {c: float(v) for c, v in zip(self.classes, thr, strict=True)}

    def tenant_throughput(self) -> dict[str, float]:
        """Reported throughput summed over each tenant's classes."""
        out: dict[str, float] = {u: 0.0 for u in self.tenants}
        for (u, _), v in self.class_throughput().items():
            out[u] += v
        return out
