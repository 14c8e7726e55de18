"""Astraea (Wang et al., IEEE TC'22): multi-tenant batch scheduling of PS training jobs with an
own-quota pass, a pooled pass at posted prices and gain-as-you-contribute incomes (spec astraea.md).

Import the submodules for the full API; the common names are re-exported here.

Run a workload::

    import numpy as np
    from marketsim.market.astraea import AstraeaParams, run_astraea, tenant_revenue, alpha
    from marketsim.market.astraea.trace import load_philly_csv, philly_workload, synthetic_workload
    from marketsim.market.astraea.baselines import run_batchsche, run_exclusive, run_gandiva_fair, run_hived

    cluster, jobs, info = synthetic_workload(300, 100, 14, np.random.default_rng(0))
    res = run_astraea(cluster, jobs, AstraeaParams(worker_count_mode="elastic"))
    g = [t.total for t in tenant_revenue(res)]       # per-tenant revenue g_u (§2.10)
    alphas, var_alpha, ok = alpha(res)               # fairness ratio and its variance

or through the registry: ``marketsim.market.registry.get("astraea").fn(cluster, jobs, params, **overrides)``.
"""

from marketsim.market._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "marketsim.market.astraea.accounting": (
            "TenantRevenue",
            "Violation",
            "alpha",
            "check_feasible",
            "collective_revenue",
            "realised_utility",
            "tenant_revenue",
        ),
        "marketsim.market.astraea.model": (
            "AstraeaParams",
            "Cluster",
            "JobSpec",
            "Server",
            "Tenant",
            "convex_utility",
            "linear_utility",
        ),
        "marketsim.market.astraea.online": (
            "AstraeaOnline",
            "AstraeaResult",
            "JobOutcome",
            "astraea",
            "run_astraea",
        ),
    },
)
