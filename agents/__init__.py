"""The Mesa 3.5 layer: tenants, GPU servers and the auctioneer wired into :class:`MarketModel`.

Build a model from a :class:`ModelConfig` (or from a scenario with
:meth:`marketsim.scenarios.loader.Scenario.build_model`), run it, and read :meth:`MarketModel.tidy`.
Every run goes through one round engine, :class:`TraceRounds` (see ``docs/trace_simulation.md``): a
trace workload (:class:`TraceWorkload` in ``ModelConfig(trace=...)``) or synthetic tenants, which are
a generated trace.
"""

if __name__ != "marketsim.agents":  # the bare name (this checkout's root on sys.path): a second copy of every module
    raise ImportError(f"import marketsim.agents, not {__name__}: marketsim's packages live in one namespace "
                      "(docs/concepts.md, Package layout)", name=__name__)

from marketsim.agents.auctioneer import Auctioneer, RoundStats
from marketsim.agents.config import JobConfig, ModelConfig, TenantConfig, TraceWorkload
from marketsim.agents.model import CLUSTER_MEASURES, TENANT_MEASURES, MarketModel
from marketsim.agents.server import GPUServerAgent
from marketsim.agents.strategies import MultiplicativeNoise, ReportVector, ScaleDims, Strategy, Truthful
from marketsim.agents.tenant import TenantAgent
from marketsim.agents.trace_rounds import TraceRounds

__all__ = [
    "Auctioneer",
    "RoundStats",
    "JobConfig",
    "ModelConfig",
    "TenantConfig",
    "TraceWorkload",
    "TraceRounds",
    "MarketModel",
    "TENANT_MEASURES",
    "CLUSTER_MEASURES",
    "GPUServerAgent",
    "TenantAgent",
    "Strategy",
    "Truthful",
    "ScaleDims",
    "ReportVector",
    "MultiplicativeNoise",
]
