"""Registers OASiS and the slot-simulated baselines of its evaluation (family ``"auction"``).

Every registered ``fn`` is a factory returning an :class:`~marketsim.market.auction.base.OnlineMechanism`;
run it with ``mech.run(reports)`` (or ``mech.step(now, reports)`` slot by slot):

* ``oasis(cluster: OasisCluster, constants: OasisConstants, **options)``
* ``fifo`` / ``drf`` / ``dorm`` / ``rrh``: ``(cluster, rng: np.random.Generator | None = None, seed=0, **options)``
  on an ``OasisCluster`` (OASiS' two pools) or a ``PdorsCluster`` (one pool; PD-ORS compares
  against the same baselines).
"""

from __future__ import annotations

import numpy as np

from marketsim.market.auction.slotsim import SlotSimulator
from marketsim.market.errors import InputError
from marketsim.market.oasis.baselines import make_oasis_baseline
from marketsim.market.oasis.mechanism import Oasis
from marketsim.market.oasis.model import OasisCluster
from marketsim.market.registry import register

__all__ = ["make_baseline"]

register(
    "oasis",
    "auction",
    "OASiS posted-price online admission/scheduling of PS jobs (payment = posted cost)",
    paper="oasis",
)(Oasis)


def make_baseline(
    name: str, cluster, rng: np.random.Generator | None = None, seed: int = 0, **options
) -> SlotSimulator:
    """A slot-simulated baseline on either paper's cluster; randomness from ``rng`` (or ``seed``).

    :param name: ``fifo``, ``drf``, ``rrh`` or ``dorm``
    :param cluster: an OASiS or a PD-ORS cluster
    :param rng: the randomness (default: a generator seeded with ``seed``)
    :param seed: the seed when ``rng`` is ``None``
    :param options: passed to the paper's baseline factory
    :returns: the slot simulator running the baseline
    :raises InputError: a cluster of neither paper
    """
    rng = np.random.default_rng(seed) if rng is None else rng
    if isinstance(cluster, OasisCluster):
        return make_oasis_baseline(name, cluster, rng, **options)
    from marketsim.market.pdors.baselines import make_pdors_baseline
    from marketsim.market.pdors.model import PdorsCluster

    if isinstance(cluster, PdorsCluster):
        return make_pdors_baseline(name, cluster, rng, **options)
    raise InputError("cluster", cluster, "must be an OasisCluster or a PdorsCluster")


def _factory(name: str):
    def make(cluster, rng: np.random.Generator | None = None, seed: int = 0, **options) -> SlotSimulator:
        return make_baseline(name, cluster, rng, seed, **options)

    make.__name__ = f"make_{name}"
    make.__doc__ = f"The ``{name}`` baseline (see :func:`make_baseline`)."
    return make


for _name, _summary in (
    ("fifo", "FIFO with fixed worker/PS bundles, head-of-line blocking, round-robin placement"),
    ("drf", "DRF progressive filling of workers/PSs at every arrival/completion, round-robin placement"),
    ("dorm", "Dorm: utilisation-maximising MILP with fairness and adjustment-overhead constraints"),
    ("rrh", "Risk-Reward Heuristic: admission by utility minus delay cost, run/pause by reward"),
):
    register(_name, "auction", _summary, paper="oasis" if _name == "rrh" else "oasis,pdors")(_factory(_name))
