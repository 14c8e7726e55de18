"""Registers PD-ORS, its paper profile and OASiS-as-PD-ORS-baseline (family ``"auction"``).

* ``pdors(cluster: PdorsCluster, constants: PdorsConstants, config: PdorsConfig | None = None)``;
  ``pdors-paper(...)`` the same with the spec's reproduction profile (``PdorsConfig.paper()``)
* ``oasis-pdors(cluster: PdorsCluster, calib=jobs | constants=OasisConstants)``: OASiS as PD-ORS' baseline

FIFO, DRF, Dorm and RRH on a ``PdorsCluster`` are registered with OASiS
(:mod:`marketsim.market.oasis.mechanisms`).
"""

from __future__ import annotations

from marketsim.market.pdors.baselines import OasisForPdors
from marketsim.market.pdors.mechanism import Pdors, PdorsConfig
from marketsim.market.pdors.model import PdorsCluster
from marketsim.market.registry import register

__all__ = ["make_pdors_paper"]

register(
    "pdors", "auction", "PD-ORS locality-aware posted-price online scheduling (LP + randomized rounding)", paper="pdors"
)(Pdors)


def make_pdors_paper(cluster: PdorsCluster, constants, config: PdorsConfig | None = None) -> Pdors:
    """PD-ORS with the spec's reproduction profile (``PdorsConfig.paper()``: no repair, discard the job
    after ``max_attempts`` failed roundings); ``config`` supplies G, the DP (exact or grid), solver and seed.

    :param cluster: the cluster
    :param constants: the price constants
    :param config: G, DP, solver and seed (default :class:`PdorsConfig`)
    :returns: the mechanism
    """
    c = config or PdorsConfig()
    return Pdors(
        cluster,
        constants,
        PdorsConfig.paper(
            G=c.G, G_mode=c.G_mode, delta=c.delta, S=c.S, dp=c.dp, dp_units=c.dp_units,
            per_slot_solver=c.per_slot_solver, seed=c.seed,
        ),
    )  # fmt: skip


register(
    "pdors-paper",
    "auction",
    "PD-ORS, the paper's evaluation profile: no repair, a job is discarded when 5000 roundings fail",
    paper="pdors",
)(make_pdors_paper)
register(
    "oasis-pdors",
    "auction",
    "OASiS on PD-ORS instances via the spec's half/half adapter (PD-ORS baseline)",
    paper="pdors",
)(OasisForPdors)
