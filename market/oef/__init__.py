"""OEF: fair, efficiency-maximising allocation of heterogeneous GPUs (Mo et al., Middleware'24).

Matrix-level policies (registered in :mod:`marketsim.market.registry`): ``oef-noncoop``, ``oef-coop``,
``si-constrained`` (:mod:`marketsim.market.oef.mechanisms`) and the baselines ``gavel``,
``gandiva-fair``, ``maxmin``, ``max-throughput`` (:mod:`marketsim.market.oef.baselines`). Tenant level:
:func:`allocate_tenants` over :class:`SpeedupReport` lists. Audit measures live in
:mod:`marketsim.market.oef.properties`.
"""

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.market.oef.baselines": (
            "equal_split",
            "gandiva_fair",
            "gavel_maxmin",
            "max_throughput",
        ),
        "marketsim.market.oef.mechanisms": (
            "oef_coop",
            "oef_noncoop",
            "si_constrained_lp",
        ),
        "marketsim.market.oef.types": (
            "JobSpec",
            "SpeedupReport",
            "TenantAllocation",
            "TenantSpec",
            "VirtualUserTable",
        ),
        "marketsim.market.oef.validate": ("validate_inputs",),
        "marketsim.market.oef.virtual": (
            "allocate_tenants",
            "build_virtual_users",
            "replication_copies",
            "weight_fractions",
        ),
    },
)
