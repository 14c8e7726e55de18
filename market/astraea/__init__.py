"""Astraea (Wang et al., IEEE TC'22): multi-tenant batch scheduling of PS training jobs with an
own-quota pass, a pooled pass at posted prices and gain-as-you-contribute incomes (spec astraea.md).

Import the submodules for the full API; the common names are re-exported here.
"""

from market.astraea.accounting import (
    TenantRevenue,
    Violation,
    alpha,
    check_feasible,
    collective_revenue,
    realised_utility,
    tenant_revenue,
)
from market.astraea.model import (
    AstraeaParams,
    Cluster,
    JobSpec,
    Server,
    Tenant,
    convex_utility,
    linear_utility,
)
from market.astraea.online import AstraeaOnline, AstraeaResult, JobOutcome, astraea, run_astraea

__all__ = [
    "AstraeaParams",
    "AstraeaOnline",
    "AstraeaResult",
    "Cluster",
    "JobOutcome",
    "JobSpec",
    "Server",
    "Tenant",
    "TenantRevenue",
    "Violation",
    "alpha",
    "astraea",
    "check_feasible",
    "collective_revenue",
    "convex_utility",
    "linear_utility",
    "realised_utility",
    "run_astraea",
    "tenant_revenue",
]
