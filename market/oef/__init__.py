"""OEF: fair, efficiency-maximising allocation of heterogeneous GPUs (Mo et al., Middleware'24).

Matrix-level policies (registered in :mod:`market.registry`): ``oef-noncoop``, ``oef-coop``,
``si-constrained`` (:mod:`market.oef.mechanisms`) and the baselines ``gavel``,
``gandiva-fair``, ``maxmin``, ``max-throughput`` (:mod:`market.oef.baselines`). Tenant level:
:func:`allocate_tenants` over :class:`SpeedupReport` lists. Audit measures live in
:mod:`market.oef.properties`.
"""

from market.oef.baselines import equal_split, gandiva_fair, gavel_maxmin, max_throughput
from market.oef.mechanisms import oef_coop, oef_noncoop, si_constrained_lp
from market.oef.types import JobSpec, SpeedupReport, TenantAllocation, TenantSpec, VirtualUserTable
from market.oef.validate import validate_inputs
from market.oef.virtual import allocate_tenants, build_virtual_users, replication_copies, weight_fractions

__all__ = [
    "SpeedupReport",
    "TenantSpec",
    "JobSpec",
    "VirtualUserTable",
    "TenantAllocation",
    "validate_inputs",
    "build_virtual_users",
    "allocate_tenants",
    "replication_copies",
    "weight_fractions",
    "oef_noncoop",
    "oef_coop",
    "si_constrained_lp",
    "gavel_maxmin",
    "gandiva_fair",
    "equal_split",
    "max_throughput",
]
