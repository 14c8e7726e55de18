"""Hunt spaces of OASiS: the truthfulness framing (C-O6-truthful) and Theorem 4's competitive
ratio (C-O4, :class:`OasisRatioSpace`); :mod:`marketsim.market.audit.hunt`.

C-O6-truthful:

The ledger's paper-setup markets (:data:`marketsim.market.oasis.market.AUDIT_PARAMS`, calibration
constants fixed before the auction) drawn from generator seeds (the discrete part); the
continuous part moves every bidder's TRUE valuation scale, epochs, per-worker demand and arrival
within the market's own misreport boxes. Effect: the first bidder's largest relative gain of a
valuation, size, demand or arrival misreport against ``oasis``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.market.audit.hunt import Evaluation, register_hunt_space
from marketsim.market.audit.hunt_spaces import AuctionSpace, register_auction_space
from marketsim.market.audit.search import jsonable
from marketsim.market.errors import InputError
from marketsim.market.oasis.generators import oasis_tiny_params
from marketsim.market.oasis.offline import oasis_offline_optimum

DIMS = ("value_scale", "epochs", "worker_demand", "arrival_delay")
"""Valuation, size, demand and arrival: the TRUE-type moves and the misreports searched."""


def _build(seed: int) -> Any:
    from marketsim.market.oasis.market import AUDIT_PARAMS, make_market

    return make_market(AUDIT_PARAMS, np.random.default_rng(seed))


def _rebid(market: Any, bids: Any) -> Any:
    from marketsim.market.oasis.market import OasisMarket

    return OasisMarket(market.cluster, bids, market.constants, dorm_time_limit=market.dorm_time_limit)


@register_auction_space("oasis:C-O6-truthful")
def space(
    mechanism: str = "oasis",
    seeds: tuple[int, ...] = (0, 1),
    deviators: tuple[int, ...] = (0, 1, 2),
    lie_dims: tuple[str, ...] | None = None,
) -> AuctionSpace:
    """The C-O6-truthful space (``mechanism`` may be any of the market's auctions; ``lie_dims``
    ``None`` = every misreport dimension of the market, :data:`DIMS` for the four headline ones)."""
    return AuctionSpace("oasis:C-O6-truthful", _build, _rebid, mechanism, seeds=seeds, truth_dims=DIMS,
                        lie_dims=lie_dims, deviators=deviators, paper="oasis")  # fmt: skip


@register_hunt_space("oasis", "C-O6-truthful")
def _c_o6(size: str, claim: Any = None) -> AuctionSpace:
    return space()


# ---------------------------------------------------------------------------------------------
# C-O4: Theorem 4's competitive ratio on the spec's tiny ratio generator
# ---------------------------------------------------------------------------------------------
HUNT_MILP_NODES = 5000
"""Branch-and-bound node limit of one hunt evaluation's offline MILP: a deterministic work limit
(the same instance stops at the same node on any machine, at any load); an evaluation whose MILP
stops at it is skipped (:data:`SKIPPED`), never reported as a ratio."""
HUNT_MILP_SECONDS = {"small": 300.0, "large": 600.0}
"""Safety-net wall-time limit (s) of the same MILP (the ledger uses 30 s small / 300 s large); a MILP
stopped by it is skipped too (then the run depends on the machine's speed: ``skipped_evaluations``
in ``--json`` shows it)."""
SKIPPED = -1e6
"""The effect of a skipped evaluation (finite, below every real figure, so the optimiser can rank it)."""
GAMMA2_CLASSES = (0.10, 0.55, 0.35)
"""The generator's (insensitive, sensitive, critical) weights: one unit coordinate covers γ2 = 0 on
its first 10%, U[0.01, 1] on the next 55% and U[4, 6] on the last 35%."""


def unit_int(x: float, lo: int, hi: int) -> int:
    """``x`` in [0, 1] to an integer of ``lo..hi`` (equal-width bins)."""
    return int(min(hi, lo + math.floor(float(np.clip(x, 0.0, 1.0)) * (hi - lo + 1))))


def int_unit(v: float, lo: int, hi: int) -> float:
    """The centre of ``v``'s bin (inverse of :func:`unit_int`)."""
    return (float(v) - lo + 0.5) / (hi - lo + 1)


def unit_gamma2(x: float) -> float:
    """One coordinate to the generator's γ2 (:data:`GAMMA2_CLASSES`)."""
    x = float(np.clip(x, 0.0, 1.0))
    a, b, _ = GAMMA2_CLASSES
    if x < a:
        return 0.0
    if x < a + b:
        return 0.01 + 0.99 * (x - a) / b
    return 4.0 + 2.0 * min(1.0, (x - a - b) / (1.0 - a - b))


def gamma2_unit(g2: float) -> float:
    """Inverse of :func:`unit_gamma2` (γ2 = 0 at the centre of its class)."""
    a, b, _ = GAMMA2_CLASSES
    if g2 <= 0:
        return a / 2
    if g2 <= 1.0:
        return a + b * (float(g2) - 0.01) / 0.99
    return a + b + (1.0 - a - b) * (float(g2) - 4.0) / 2.0


def _log_unit(x: float, lo: float, hi: float) -> float:
    return float(math.exp(math.log(lo) + float(np.clip(x, 0.0, 1.0)) * (math.log(hi) - math.log(lo))))


def _unit_log(v: float, lo: float, hi: float) -> float:
    return float(np.clip((math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)), 0.0, 1.0))


@dataclass
class OasisRatioSpace:
    """Tiny instances of the spec's ratio generator (:func:`~marketsim.market.oasis.generators.oasis_tiny_instance`)
    as explicit parameters (:func:`~marketsim.market.oasis.generators.oasis_tiny_from_params`). Variants: the
    number of servers ``H = K`` (enumerated; ``I`` jobs, ``T`` slots fixed as in the ledger). The
    continuous part: the server cpu (log scale over ``cpu``, the ledger's demand/capacity sweep) and
    per job its arrival U{0..5}, work W U{2..12}, at most N U{1..4} workers, per-unit demands w
    U{1..3}, s U{1..2}, and the sigmoid's γ1 (log scale over [1, 1000], the union of the ledger's
    three ranges), γ2 (:func:`unit_gamma2`) and γ3 U[1, 4]. Effect: the ledger's ``OPT/ALG − 2α``
    (``marketsim.market.oasis.claims`` check ``ratio``) with OPT from the exact offline MILP; an evaluation
    whose MILP stops at ``node_limit`` nodes or ``time_limit`` seconds is skipped (:data:`SKIPPED`)."""

    name: str = "oasis:C-O4"
    H: tuple[int, ...] = (1, 2, 3)
    I: int = 8
    T: int = 8
    cpu: tuple[float, float] = (6.0, 60.0)
    cpu_choices: tuple[float, ...] = (6.0, 60.0)
    time_limit: float = 300.0
    node_limit: int | None = HUNT_MILP_NODES
    max_work: int = 12

    def __post_init__(self) -> None:
        self.skipped = 0

    def variants(self) -> list[tuple[Hashable, int]]:
        return [(h, 1 + 8 * self.I) for h in self.H]

    def decode(self, variant: Hashable, x: np.ndarray) -> dict[str, Any]:
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        if x.size != 1 + 8 * self.I:
            raise InputError("x", x.size, f"must have {1 + 8 * self.I} coordinates")
        jobs = []
        for r in x[1:].reshape(self.I, 8):
            jobs.append([float(unit_int(r[0], 0, min(6, self.T) - 1)), float(unit_int(r[1], 2, self.max_work)),
                         float(unit_int(r[2], 1, 4)), float(unit_int(r[3], 1, 3)), float(unit_int(r[4], 1, 2)),
                         _log_unit(r[5], 1.0, 1000.0), unit_gamma2(r[6]), 1.0 + 3.0 * float(r[7])])  # fmt: skip
        return {"jobs": jobs, "H": int(variant), "cpu": _log_unit(x[0], *self.cpu), "T": self.T}  # type: ignore[call-overload]

    def encode(self, witness: Any) -> tuple[Hashable, np.ndarray] | None:
        """An ``oasis_tiny`` witness (seeded or explicit) as a point of the space; ``None`` when its
        sizes or cpu fall outside it."""
        if not isinstance(witness, dict) or witness.get("kind") != "oasis_tiny" or "spec" not in witness:
            return None
        spec = witness["spec"]
        jobs = spec["jobs"] if "jobs" in spec else oasis_tiny_params(_instance(spec)[1])
        if int(spec["H"]) not in self.H or len(jobs) != self.I or not self.cpu[0] <= float(spec["cpu"]) <= self.cpu[1]:
            return None
        x = [_unit_log(float(spec["cpu"]), *self.cpu)]
        for a, W, N, w, s, g1, g2, g3 in jobs:
            x += [int_unit(a, 0, min(6, self.T) - 1), int_unit(W, 2, self.max_work), int_unit(N, 1, 4),
                  int_unit(w, 1, 3), int_unit(s, 1, 2), _unit_log(g1, 1.0, 1000.0), gamma2_unit(g2),
                  float(np.clip((g3 - 1.0) / 3.0, 0.0, 1.0))]  # fmt: skip
        return int(spec["H"]), np.asarray(x)

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """The ledger's sampler (``marketsim.market.oasis.claims._tiny_runs``): a generator seed, H U{1..3},
        a cpu of the sweep and one of the three γ1 ranges."""
        from marketsim.market.oasis.claims import tiny_spec

        g1s = ((1.0, 10.0), (1.0, 100.0), (1.0, 1000.0))
        cpu = self.cpu_choices[int(rng.integers(len(self.cpu_choices)))]
        return tiny_spec(rng.integers(2**31), rng.integers(1, 4), cpu, g1s[rng.integers(3)])

    def evaluate(self, spec: dict[str, Any], rng: np.random.Generator) -> Evaluation:
        from marketsim.market.oasis.claims import STEP_CHECKS, tiny_run

        run = tiny_run(spec)
        run.opt = oasis_offline_optimum(run.cluster, run.reqs, time_limit=self.time_limit, node_limit=self.node_limit)
        if not run.opt.optimal:
            self.skipped += 1
            return Evaluation(SKIPPED, False, None, spec)
        v, info = STEP_CHECKS["ratio"](run)
        wit = {"kind": "oasis_tiny", "check": "ratio", "spec": spec, "excess": v, "where": jsonable(info),
               "time_limit": self.time_limit, "node_limit": self.node_limit, "opt_optimal": True,
               "violation": bool(v > 0)}  # fmt: skip
        return Evaluation(float(v), bool(v > 0), wit, spec)

    def shrink(self, spec: dict[str, Any]) -> Iterable[dict[str, Any]]:
        """Fewer jobs (drop one, last first), a whole cpu, rounder utilities (γ1 to 2 significant
        digits, γ2 and γ3 to 1 decimal)."""
        jobs = spec["jobs"] if "jobs" in spec else oasis_tiny_params(_instance(spec)[1])
        base = {"jobs": jobs, "H": spec["H"], "cpu": float(spec["cpu"]), "T": int(spec.get("T", 8))}
        if len(jobs) > 1:
            for i in range(len(jobs) - 1, -1, -1):
                yield {**base, "jobs": jobs[:i] + jobs[i + 1 :]}
        if base["cpu"] != round(base["cpu"]) and round(base["cpu"]) > 0:
            yield {**base, "cpu": float(round(base["cpu"]))}
        rj = [[*j[:5], float(f"{j[5]:.2g}"), round(j[6], 1), round(j[7], 1)] for j in jobs]
        if rj != jobs:
            yield {**base, "jobs": rj}


def _instance(spec: dict[str, Any]) -> Any:
    from marketsim.market.oasis.generators import oasis_tiny_instance

    return oasis_tiny_instance(np.random.default_rng(spec["seed"]), H=spec["H"], gamma1_range=tuple(spec["gamma1"]),
                               cpu=spec["cpu"])  # fmt: skip


@register_hunt_space("oasis", "C-O4")
def _c_o4(size: str, claim: Any = None) -> OasisRatioSpace:
    from marketsim.market.oasis.claims import _CPU_LARGE, _CPU_SMALL

    sweep = _CPU_SMALL if size == "small" else _CPU_LARGE
    return OasisRatioSpace(cpu=(min(sweep), max(sweep)), cpu_choices=sweep, time_limit=HUNT_MILP_SECONDS[size])
