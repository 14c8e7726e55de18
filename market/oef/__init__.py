"""OEF: fair, efficiency-maximising allocation of heterogeneous GPUs (Mo et al., Middleware'24).

Matrix-level policies (registered in :mod:`market.registry`): ``oef-noncoop``, ``oef-coop``,
``si-constrained`` (:mod:`market.oef.mechanisms`) and the baselines ``gavel``,
``gandiva-fair``, ``maxmin``, ``max-throughput`` (:mod:`market.oef.baselines`). Tenant level:
:func:`allocate_tenants` over :class:`SpeedupReport` lists. Audit measures live in
:mod:`market.oef.properties`.
"""

from market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "market.oef.baselines": (
            "equal_split",
            "gandiva_fair",
            "gavel_maxmin",
            "max_throughput",
        ),
        "market.oef.mechanisms": (
            "oef_coop",
            "oef_noncoop",
            "si_constrained_lp",
        ),
        "market.oef.types": (
            "JobSpec",
            "SpeedupReport",
            "TenantAllocation",
            "TenantSpec",
            "VirtualUserTable",
        ),
        "market.oef.validate": ("validate_inputs",),
        "market.oef.virtual": (
            "allocate_tenants",
            "build_virtual_users",
            "replication_copies",
            "weight_fractions",
        ),
    },
)
