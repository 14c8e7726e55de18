"""Instance spaces for :func:`marketsim.market.audit.hunt.hunt`: fair-share allocators and online auctions.

* :class:`FairShareSpace` — TRUE speedups, capacities (and integer weights) of ``n`` tenants on
  ``k`` GPU types: either the realistic box (:data:`REALISTIC`: 2-6 tenants, 2-4 types, 1-8 GPUs
  per type, a fastest/slowest speed ratio up to 12x per tenant) or the ranges of the ledger's
  generator (:func:`marketsim.market.audit.instances.random_instance`: rows grow by a factor in ``step``
  per type). Variants are the ``(n, k)`` pairs; the continuous part is ``n (k - 1)`` speedup
  coordinates, ``k`` capacities (rounded to whole GPUs) and optionally ``n`` weights (``1..3``).
  :meth:`FairShareSpace.edges` says which bounds a witness sits on and :meth:`~FairShareSpace.grow`
  doubles them (up to :data:`EDGE_LIMITS`), which :func:`marketsim.market.audit.hunt.hunt` uses to grow the
  box until the witness is interior or a limit is hit.
* :class:`MisreportSpace` — effect = the deviator's largest gain of a misreport over the claim's
  probe families (relative, or as a fraction of its equal-split utility; row 0 deviates: the
  space contains every row, so fixing the deviator loses nothing for a mechanism that treats rows
  alike). The inner search is :func:`marketsim.market.audit.search.audit` with :data:`HUNT_CONFIG` on the
  mechanism's fast screen, on a fixed seed: confirmation re-runs it and gets the same figure
  (or the exact best response, where one exists), and ``witness["reaudit"]`` is the
  ``marketsim audit --search hunt`` command that prints it.
* :class:`PropertySpace` — effect = a property's violation amount on the truthful allocation.
* :class:`AuctionSpace` — an online auction market from its paper's generator (the discrete
  part: generator seeds); the continuous part moves every bidder's TRUE type along the market's
  own misreport dimensions (valuation, size, demands, arrival) within their boxes; the effect is
  one bidder's largest relative gain of a misreport (:class:`marketsim.market.audit.online.OnlineAuctionTarget`).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.market.audit.fairshare import FairShareTarget
from marketsim.market.audit.hunt import Evaluation
from marketsim.market.audit.instances import FairShareInstance, random_instance
from marketsim.market.audit.search import AuditConfig, AuditResult, FamilyBest, audit, jsonable, relative
from marketsim.market.errors import InputError

__all__ = [
    "HUNT_CONFIG",
    "INNER_SEED",
    "REALISTIC",
    "EDGE_LIMITS",
    "MEASURES",
    "SCOPES",
    "gavel_max_ratio",
    "equal_share_utility",
    "FairShareSpace",
    "MisreportSpace",
    "PropertySpace",
    "AuctionSpace",
    "misreport_witness",
    "reaudit_command",
    "register_auction_space",
    "AUCTION_SPACES",
]

AUCTION_SPACES: dict[str, Callable[[], AuctionSpace]] = {}
"""Auction hunt spaces by name (their witnesses name the space, so the checker rebuilds it)."""


def register_auction_space(name: str) -> Callable[[Callable[[], AuctionSpace]], Callable[[], AuctionSpace]]:
    """Decorator registering ``factory() -> AuctionSpace`` under ``name`` (the witness's ``space``).

    :param name: the space's name (the witness's ``space``)
    :returns: the decorator (returns the factory unchanged)
    """

    def deco(fn: Callable[[], AuctionSpace]) -> Callable[[], AuctionSpace]:
        AUCTION_SPACES[name] = fn
        return fn

    return deco


def _check_auction_hunt(w: dict[str, Any]) -> bool:
    fn = AUCTION_SPACES.get(w.get("space", ""))
    if fn is None:
        known = sorted(AUCTION_SPACES)
        raise InputError("witness space", w.get("space"), f"is not a registered auction space; known: {known}")
    return fn().recheck(w)

HUNT_CONFIG = AuditConfig(
    n_grid=3, n_zoom=1, n_tail=1, edge_steps=4, n_joint=8, refine_starts=1, refine_maxfev=12, probes=True
)
"""Inner misreport search of one hunt evaluation (a fraction of the default audit's budget). It
runs on a fixed seed (:data:`INNER_SEED`), so an instance's figure is a function of the instance:
the confirmation and ``marketsim audit --search hunt`` re-derive it exactly."""
INNER_SEED = 0
"""Seed of every inner search (the same on every evaluation and on confirmation)."""

REALISTIC: dict[str, Any] = {"n": (2, 6), "k": (2, 4), "m_max": 8, "ratio_max": 12.0}
"""The fair-share hunt box that covers what users have (issue #32): 2-6 tenants, 2-4 GPU types,
1-8 GPUs per type, a speed ratio up to 12x between a tenant's slowest and fastest type (Gavel's
measured single-GPU table reaches :func:`gavel_max_ratio`, about 11.6x between K80 and V100)."""
EDGE_LIMITS: dict[str, float] = {"ratio_max": 48.0, "m_max": 32}
"""How far :meth:`FairShareSpace.grow` grows a box whose witness sits at its edge (4x the
realistic speed ratio, 4x its capacities)."""
EDGE_FRACTION = 0.98
"""A speed ratio ``r`` is at the box's edge when ``log r >= EDGE_FRACTION · log ratio_max``."""

SCOPES: dict[str, Callable[[FamilyBest], bool]] = {
    "in": lambda fb: fb.in_scope,
    "out": lambda fb: not fb.in_scope,
    "all": lambda fb: True,
    "up": lambda fb: fb.family.startswith("UP_"),
    "down": lambda fb: fb.family.startswith("DOWN_"),
}
"""Probe families a misreport claim counts: the paper's scope (``in``, e.g. inflation for OEF),
the extension (``out``) or every family (``all``)."""


def gavel_max_ratio() -> float:
    """The largest fastest/slowest single-GPU throughput ratio of one job type in Gavel's measured
    table (``market/data/gavel_throughputs.csv``)."""
    from pathlib import Path

    import pandas as pd

    d = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "gavel_throughputs.csv")
    d = d[d["num_gpus"] == 1]
    p = d.pivot_table(index="job_type", columns="gpu_type", values="throughput_steps_per_s")
    return float((p.max(axis=1) / p.min(axis=1)).max())


def _fmt(x: float) -> str:
    return repr(float(x)) if float(x) != int(x) else str(int(x))


def reaudit_command(mechanism: str, W: np.ndarray, m: np.ndarray, weights: Any = None, search: str = "default",
                    exact: bool = False) -> str:  # fmt: skip
    """The ``marketsim audit`` command line that re-derives a fair-share misreport witness
    (``search="hunt"``: the hunt's fixed inner search, ``--search hunt``; ``exact``: the certified
    best response, ``--exact``)."""
    sp = ";".join(",".join(_fmt(v) for v in row) for row in np.asarray(W, dtype=float))
    parts = ["marketsim", "audit", "--mechanism", mechanism, "--speedups", sp,
             "--capacity", ",".join(_fmt(v) for v in np.asarray(m, dtype=float))]  # fmt: skip
    if weights is not None:
        parts += ["--weights", ",".join(_fmt(v) for v in np.asarray(weights, dtype=float))]
    if search != "default":
        parts += ["--search", search]
    if exact:
        parts += ["--exact"]
    return " ".join(shlex.quote(p) for p in [*parts, "--seed", "0", "--json"])


def equal_share_utility(W: np.ndarray, m: np.ndarray, agent: int = 0, weights: Any = None) -> float:
    """The agent's TRUE utility under the (weighted) equal split of every GPU type:
    ``share · Σ_j W[agent, j] m_j`` with ``share = 1/n`` (or ``w_agent / Σ w``)."""
    W = np.asarray(W, dtype=float)
    share = 1.0 / W.shape[0] if weights is None else float(np.asarray(weights)[agent] / np.sum(weights))
    return share * float(W[agent] @ np.asarray(m, dtype=float))


def misreport_witness(t: FairShareTarget, r: AuditResult, fb: FamilyBest | None = None, reaudit: bool = True,
                      search: str = "default") -> dict[str, Any]:  # fmt: skip
    """The ledger's ``misreport`` witness (re-checked by :func:`marketsim.market.audit.claims.recheck_witness`
    and by the independent oracles of :mod:`marketsim.market.audit.oracles`) of the lie in family ``fb``
    (default: the family of ``r``'s best lie) plus, with ``reaudit``, the ``marketsim audit``
    command whose agent ``deviator`` re-derives it (``search``: which inner search produced it).
    ``gain_over_equal_share`` is the gain as a fraction of the deviator's equal-split utility
    (finite where the relative gain is ``inf``).

    :param t: the audited target
    :param r: its audit result
    :param fb: the family's best lie (default: ``r``'s best)
    :param reaudit: add the ``marketsim audit`` command
    :param search: the inner search that found it
    :returns: the witness
    :raises InputError: a result without a lie
    """
    if fb is None:
        fb = r.families.get(r.witness_family) if r.witness_family is not None else None
        if fb is None or fb.report is None:
            raise InputError("audit result", r.target, "has no best lie to turn into a witness (it found no family)")
    row, weight = fb.report
    eq = equal_share_utility(t.Wt, t.ma, int(r.agent), t.wt)
    out = {
        "kind": "misreport",
        "mechanism": t.name,
        "W": t.Wt.tolist(),
        "m": t.ma.tolist(),
        "weights": jsonable(t.wt),
        "caps": jsonable(t.ca),
        "deviator": int(r.agent),
        "family": fb.family,
        "params": jsonable(fb.params if fb.params is not None else fb.label),
        "report": list(row),
        "weight": weight,
        "truthful_utility": r.truthful_utility,
        "lie_utility": r.truthful_utility + fb.gain,
        "gain": fb.gain,
        "relative_gain": relative(fb.gain, r.truthful_utility),
        "equal_share_utility": eq,
        "gain_over_equal_share": fb.gain / eq if eq > 0 else math.inf,
        "report_at_limit": bool(fb.at_limit),
        "tol": r.tol,
    }
    if reaudit:
        out["reaudit"] = (reaudit_command(t.name, t.Wt, t.ma, t.wt, search=search)
                          if isinstance(t.mechanism, str) else None)  # fmt: skip
    return out


@dataclass
class FairShareSpace:
    """Fair-share instances (module docstring). ``n`` / ``k``: inclusive ranges of tenants and
    GPU types; ``m_max`` the largest capacity; ``weighted``: integer weights ``1..3`` are part of
    the space (half the baseline's draws carry weights, as in the ledger); ``keep_row0``: shrinking
    never drops row 0 (the deviator).

    Speedups, two parametrisations:

    * ``ratio_max`` set (the realistic box, :data:`REALISTIC`): per row the fastest/slowest ratio
      ``r_i`` on a log scale over ``[1, ratio_max]`` and the intermediate types' log-positions in
      ``[0, log r_i]`` (sorted: rows non-decreasing, column 0 the slowest type); the baseline
      draws uniform points of the same box. Only the unrestricted generator.
    * ``ratio_max=None``: the ledger generator's per-type step factors in ``step``
      (:func:`marketsim.market.audit.instances.random_instance`, also the baseline)."""

    name: str
    n: tuple[int, int] = (2, 4)
    k: tuple[int, int] = (2, 3)
    m_max: int = 4
    step: tuple[float, float] = (1.0, 1.6)
    weighted: bool = False
    keep_row0: bool = False
    kind: str = "unrestricted"
    ratio_max: float | None = None
    ratio_limit: float = EDGE_LIMITS["ratio_max"]
    m_limit: int = int(EDGE_LIMITS["m_max"])

    def __post_init__(self) -> None:
        if self.ratio_max is not None:
            if not (isinstance(self.ratio_max, (int, float)) and math.isfinite(self.ratio_max) and self.ratio_max > 1):
                raise InputError("ratio_max", self.ratio_max, "must be a finite number > 1")
            if self.kind != "unrestricted":
                raise InputError("kind", self.kind, "must be 'unrestricted' with ratio_max (the realistic box)")

    def variants(self) -> list[tuple[Hashable, int]]:
        return [((n, k), n * (k - 1) + k + (n if self.weighted else 0))
                for n in range(self.n[0], self.n[1] + 1) for k in range(self.k[0], self.k[1] + 1)]  # fmt: skip

    def _speedups(self, n: int, k: int, xs: np.ndarray) -> np.ndarray:
        if self.ratio_max is None:
            lo, hi = self.step
            steps = (lo + (hi - lo) * xs).reshape(n, k - 1)
            if self.kind != "unrestricted":  # the ordered generator: step columns sorted over users
                steps = np.sort(steps, axis=0)
            return np.cumprod(np.c_[np.ones(n), steps], axis=1)
        xr = xs.reshape(n, k - 1)
        logr = xr[:, 0] * math.log(self.ratio_max)
        mid = np.sort(xr[:, 1:], axis=1) * logr[:, None]
        return np.exp(np.c_[np.zeros(n), mid, logr])

    def decode(self, variant: Hashable, x: np.ndarray) -> FairShareInstance:
        n, k = variant  # type: ignore[misc]
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        W = self._speedups(n, k, x[: n * (k - 1)])
        xm = x[n * (k - 1) : n * (k - 1) + k]
        m = np.clip(1 + np.floor(xm * self.m_max), 1, self.m_max)
        weights = None
        if self.weighted:
            weights = np.clip(1 + np.floor(x[n * (k - 1) + k :] * 3), 1, 3)
        return FairShareInstance(W, m, "hunt", weights=weights)

    def encode(self, witness: Any) -> tuple[Hashable, np.ndarray] | None:
        """A ledger witness (``W``, ``m``, optional ``weights``, ``deviator``) as a point of the
        space (the deviator moved to row 0); ``None`` when it does not fit."""
        if not isinstance(witness, dict) or "W" not in witness or "m" not in witness:
            return None
        W = np.asarray(witness["W"], dtype=float)
        m = np.asarray(witness["m"], dtype=float)
        if W.ndim != 2:
            return None
        n, k = W.shape
        if not (self.n[0] <= n <= self.n[1] and self.k[0] <= k <= self.k[1]):
            return None
        order = list(range(n))
        dev = int(witness.get("deviator", 0) or 0)
        if self.keep_row0 and 0 < dev < n:
            order = [dev] + [i for i in range(n) if i != dev]
        W = W[order] / W[order][:, :1]
        if self.ratio_max is None:
            lo, hi = self.step
            xs = np.clip((W[:, 1:] / W[:, :-1] - lo) / max(hi - lo, 1e-12), 0, 1).ravel()
        else:
            if (W[:, 1:] < W[:, :-1] * (1 - 1e-9)).any():
                return None  # rows must be non-decreasing in this box
            logr = np.log(W[:, -1])
            x0 = np.clip(logr / math.log(self.ratio_max), 0, 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                fr = np.where(logr[:, None] > 0, np.log(W[:, 1:-1]) / logr[:, None], 0.5)
            xs = np.c_[x0, np.clip(fr, 0, 1)].ravel()
        xm = np.clip((m - 0.5) / self.m_max, 0, 1)
        parts = [xs, xm]
        if self.weighted:
            w = witness.get("weights")
            wv = np.ones(n) if w is None else np.asarray(w, dtype=float)[order]
            parts.append(np.clip((wv - 0.5) / 3, 0, 1))
        return (n, k), np.concatenate(parts)

    def sample(self, rng: np.random.Generator) -> FairShareInstance:
        """The baseline: the ledger's generator (step box), or a uniform point of the realistic box
        (``ratio_max``: a uniform (n, k) pair, then uniform coordinates)."""
        if self.ratio_max is not None:
            vs = self.variants()
            v, d = vs[int(rng.integers(len(vs)))]
            inst = self.decode(v, rng.uniform(0.0, 1.0, d))
            if self.weighted and rng.random() < 0.5:
                return inst
            return FairShareInstance(inst.W, inst.m, "hunt")
        inst = random_instance(rng, self.kind, n=self.n, k=self.k, m_max=self.m_max, step=self.step)
        if self.weighted and rng.random() < 0.5:
            return FairShareInstance(inst.W, inst.m, inst.kind,
                                     weights=rng.integers(1, 4, inst.W.shape[0]).astype(float))  # fmt: skip
        return inst

    def contains(self, inst: FairShareInstance) -> bool:
        """Whether ``inst`` lies in the space: sizes in range, speedup steps in ``step`` (or rows
        non-decreasing with a ratio up to ``ratio_max``; 1e-9 slack), whole capacities in
        ``1..m_max``, weights in ``1..3``."""
        W, m = inst.W, inst.m
        n, k = W.shape
        if not (self.n[0] <= n <= self.n[1] and self.k[0] <= k <= self.k[1]):
            return False
        st = W[:, 1:] / W[:, :-1]
        if self.ratio_max is None:
            if st.size and (st.min() < self.step[0] - 1e-9 or st.max() > self.step[1] + 1e-9):
                return False
        elif st.size and (st.min() < 1 - 1e-9 or (W[:, -1] / W[:, 0]).max() > self.ratio_max * (1 + 1e-9)):
            return False
        if (m < 1).any() or (m > self.m_max).any() or (m != np.round(m)).any():
            return False
        w = inst.weights
        return w is None or (self.weighted and bool(((w >= 1) & (w <= 3) & (w == np.round(w))).all()))

    def box(self) -> dict[str, Any]:
        """The box as JSON-ready ranges."""
        out: dict[str, Any] = {"tenants": list(self.n), "types": list(self.k), "m_max": self.m_max}
        if self.ratio_max is None:
            out["step"] = list(self.step)
        else:
            out["ratio_max"] = self.ratio_max
        return out

    def edges(self, inst: FairShareInstance) -> dict[str, bool]:
        """Which of the box's bounds ``inst`` sits on: ``speed_ratio`` (a row's fastest/slowest ratio
        within :data:`EDGE_FRACTION` of the bound on a log scale, or a step factor at its upper
        bound), ``capacity`` (some ``m_j == m_max``), ``tenants`` / ``types`` (at the largest
        ``n`` / ``k`` of the range). The first two can grow (:meth:`grow`); the last two are the
        stated range."""
        W, m = inst.W, inst.m
        n, k = W.shape
        if self.ratio_max is None:
            st = W[:, 1:] / W[:, :-1]
            ratio = bool(st.size and st.max() >= self.step[1] * (1 - 1e-3))
        else:
            ratio = bool(np.log(float((W[:, -1] / W[:, 0]).max())) >= EDGE_FRACTION * math.log(self.ratio_max))
        return {"speed_ratio": ratio, "capacity": bool((m >= self.m_max).any()), "tenants": n >= self.n[1],
                "types": k >= self.k[1]}  # fmt: skip

    def grow(self, edges: dict[str, bool]) -> FairShareSpace | None:
        """The same space with the bounds ``inst`` sits on doubled (speed ratio, capacity), capped at
        ``ratio_limit`` / ``m_limit``; ``None`` when nothing can grow (then the limit is hit)."""
        from dataclasses import replace

        ch: dict[str, Any] = {}
        if edges.get("speed_ratio") and self.ratio_max is not None and self.ratio_max < self.ratio_limit:
            ch["ratio_max"] = min(self.ratio_limit, 2.0 * self.ratio_max)
        if edges.get("capacity") and self.m_max < self.m_limit:
            ch["m_max"] = int(min(self.m_limit, 2 * self.m_max))
        return replace(self, **ch) if ch else None

    def shrink(self, inst: FairShareInstance) -> Iterable[FairShareInstance]:
        """Candidates inside the space (:meth:`contains`): fewer tenants, fewer GPU types (the first
        or the last: dropping a middle one would merge two steps), rounder speedups (W, then the
        steps, to 1 then 2 decimals), capacities 1, unit weights."""
        for cand in self._shrink(inst):
            if self.contains(cand):
                yield cand

    def _shrink(self, inst: FairShareInstance) -> Iterable[FairShareInstance]:
        W, m, w = inst.W, inst.m, inst.weights
        n, k = W.shape
        if n > 2:
            for i in range(n - 1, 0 if self.keep_row0 else -1, -1):
                yield FairShareInstance(np.delete(W, i, 0), m, "hunt",
                                        weights=None if w is None else np.delete(w, i))  # fmt: skip
        if k > 2:
            for j in (k - 1, 0):
                Wd = np.delete(W, j, 1)
                yield FairShareInstance(Wd / Wd[:, :1], np.delete(m, j), "hunt", weights=w)
        for dec in (1, 2):
            Wr = np.round(W, dec)
            if not np.array_equal(Wr, W) and (Wr > 0).all():
                yield FairShareInstance(Wr / Wr[:, :1], m, "hunt", weights=w)
            sr = np.round(W[:, 1:] / W[:, :-1], dec)
            Ws = np.cumprod(np.c_[np.ones(n), sr], axis=1)
            if not np.allclose(Ws, W, rtol=0, atol=1e-12) and (sr > 0).all():
                yield FairShareInstance(Ws, m, "hunt", weights=w)
        for j in range(k):
            if m[j] > 1:
                m2 = m.copy()
                m2[j] = 1.0
                yield FairShareInstance(W, m2, "hunt", weights=w)
        if w is not None and not np.all(w == 1):
            yield FairShareInstance(W, m, "hunt")


MEASURES = ("relative", "share")
"""The effect a misreport space maximises: the relative gain (gain / truthful utility; ``inf``
from a truthful utility of 0) or the gain as a fraction of the deviator's equal-split utility."""


@dataclass
class MisreportSpace(FairShareSpace):
    """Fair-share instances; effect = row 0's largest gain of a misreport over the families of
    ``scope`` (:data:`SCOPES`) against ``mechanism`` (a registered fair-share name or a callable
    with the fair-share signature), as a relative gain (``measure="relative"``, the ledger's
    figure) or as a fraction of row 0's equal-split utility (``measure="share"``, comparable across
    instances and finite when the truthful utility is 0). A gain counts when it exceeds the
    audit's tolerance (``1e-7 max(1, |u|)``); below it the effect is 0, as in the ledger.

    The inner search is :func:`marketsim.market.audit.search.audit` with ``config`` on the mechanism's fast
    screen, seeded with :data:`INNER_SEED` on every evaluation: the figure is a function of the
    instance. Confirmation (:meth:`confirm`) is the certified best response of
    :mod:`marketsim.market.audit.exact` where it covers the mechanism and size
    (:func:`marketsim.market.audit.oracles.exact_hook`), otherwise the same inner search re-run (identical figure), so
    the reported figure is never below what the search saw; ``witness["reaudit"]`` is the ``marketsim audit`` command
    that prints it (``--search hunt`` / ``--exact``)."""

    mechanism: str = "oef-noncoop"
    scope: str = "all"
    config: AuditConfig = HUNT_CONFIG
    keep_row0: bool = True
    confirm_full: bool = False
    measure: str = "relative"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.scope not in SCOPES:
            raise InputError("scope", self.scope, f"must be one of {sorted(SCOPES)}")
        if self.measure not in MEASURES:
            raise InputError("measure", self.measure, f"must be one of {list(MEASURES)}")

    def _search_label(self) -> str:
        if self.config == HUNT_CONFIG:
            return "hunt"
        return "default" if self.config == AuditConfig() else "custom"

    def _figure(self, t: FairShareTarget, r: AuditResult, inst: FairShareInstance) -> Evaluation:
        gain, fb = r.family_gain(SCOPES[self.scope])
        if fb is None or gain <= r.tol:
            return Evaluation(0.0, False, None, inst)
        search = self._search_label()
        wit = misreport_witness(t, r, fb, reaudit=search != "custom", search=search)
        wit["box_edges"] = self.edges(inst)
        eff = wit["gain_over_equal_share"] if self.measure == "share" else wit["relative_gain"]
        return Evaluation(float(eff), True, wit, inst)

    def evaluate(self, inst: FairShareInstance, rng: np.random.Generator) -> Evaluation:
        # no random-vector probes in the inner search: a lucky random vector is noise to the optimiser
        # (copies of other rows stay: deterministic); the inner search's seed is fixed (INNER_SEED)
        t = FairShareTarget(self.mechanism, W=inst.W, m=inst.m, weights=inst.weights, n_arbitrary=0, fast=True)
        return self._figure(t, audit(t, 0, config=self.config, rng=np.random.default_rng(INNER_SEED)), inst)

    def confirm(self, inst: FairShareInstance, rng: np.random.Generator) -> Evaluation:
        """The exact best response where :mod:`marketsim.market.audit.exact` covers the instance, else the
        inner search re-run (deterministic: the figure the optimiser saw)."""
        ev = self.evaluate(inst, rng)
        ex = self._exact(inst)
        if ex is not None:
            ev.witness = {**(ev.witness or {}), "exact": ex}
        return ev

    def _exact(self, inst: FairShareInstance) -> dict[str, Any] | None:
        from marketsim.market.audit.oracles import EXACT_MECHANISMS, exact_hook

        fn = exact_hook()
        n, k = inst.W.shape
        if fn is None or self.mechanism not in EXACT_MECHANISMS or n > 4 or k > 3 or inst.weights is not None:
            return None
        res = fn(self.mechanism, inst.W, inst.m, 0)
        get = (lambda o, a: o.get(a)) if isinstance(res, dict) else (lambda o, a: getattr(o, a, None))  # noqa: E731
        return {key: jsonable(get(res, key)) for key in ("relative_gain", "upper_bound", "gap", "certified", "report",
                                                         "on_edge")} | {  # fmt: skip
            "reaudit": reaudit_command(str(self.mechanism), inst.W, inst.m, exact=True)}


@dataclass
class PropertySpace(FairShareSpace):
    """Fair-share instances; effect = ``measure(instance)`` -> ``(violation amount, tolerance,
    witness)`` of a property of the truthful allocation (the claim's own measurement)."""

    measure: Callable[[FairShareInstance], tuple[float, float, dict[str, Any]]] | None = None

    def evaluate(self, inst: FairShareInstance, rng: np.random.Generator) -> Evaluation:
        if self.measure is None:
            raise InputError("PropertySpace.measure", None, "must be a callable")
        v, tol, wit = self.measure(inst)
        if v > tol and isinstance(wit, dict):
            wit = {**wit, "box_edges": self.edges(inst)}
        return Evaluation(float(v), bool(v > tol), wit if v > tol else None, inst)


# ---------------------------------------------------------------------------------------------
# online auctions
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuctionPoint:
    """An auction instance of the hunt: generator ``seed``, per-bidder TRUE-type moves
    ``truth`` (``{job id: {dimension: value}}``, applied with the market's ``misreport``) and
    the deviator's job id."""

    seed: int
    truth: tuple[tuple[int, tuple[tuple[str, float], ...]], ...]
    deviator: int

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "deviator": self.deviator,
                "truth": {str(j): dict(p) for j, p in self.truth}}  # fmt: skip

    @classmethod
    def from_dict(cls, p: dict[str, Any]) -> AuctionPoint:
        """Inverse of :meth:`to_dict`."""
        truth = tuple(sorted((int(j), tuple((str(n), float(v)) for n, v in d.items())) for j, d in p["truth"].items()))
        return cls(int(p["seed"]), truth, int(p["deviator"]))


@dataclass
class AuctionSpace:
    """Online-auction instances (module docstring). ``build(seed) -> market`` draws a market from
    the paper's generator; ``rebid(market, bids) -> market`` the same market with other TRUE
    bids; ``mechanism`` the auction run; ``seeds`` the generator seeds (the discrete variants);
    ``truth_dims`` which of a bid's misreport dimensions move the TRUE type (``None`` = all but
    ``arrival_delay`` when ``arrival`` is False); ``lie_dims`` restricts the inner search;
    ``deviators`` the positions (in job-id order) of the deviating bid, crossed with ``seeds`` as
    the variants; ``config`` the inner audit; ``witness_kind``
    names the checker of the witness (:func:`marketsim.market.audit.claims.register_witness_checker`);
    ``absolute``: the effect is the gain in utility units (as the Eris ledger reports it) instead
    of the relative gain."""

    name: str
    build: Callable[[int], Any]
    rebid: Callable[[Any, Sequence[Any]], Any]
    mechanism: str
    seeds: tuple[int, ...] = (0, 1)
    truth_dims: tuple[str, ...] | None = None
    lie_dims: tuple[str, ...] | None = None
    deviators: tuple[int, ...] = (0,)
    config: AuditConfig = AuditConfig(n_grid=1, n_zoom=0, n_tail=0, edge_steps=2, n_joint=3, refine_starts=0,
                                      refine_maxfev=0, probes=False)  # fmt: skip
    run_seed: int = 0
    witness_kind: str = "auction_hunt"
    paper: str = ""
    absolute: bool = False
    from_witness: Callable[[dict[str, Any]], AuctionPoint | None] | None = None

    def __post_init__(self) -> None:
        self._markets: dict[int, Any] = {}
        self._layout: dict[int, list[tuple[int, Any]]] = {}

    def _base(self, seed: int) -> Any:
        if seed not in self._markets:
            mk = self.build(seed)
            self._markets[seed] = mk
            lay = []
            for b in mk.bids():
                for d in mk.dimensions(b):
                    if self.truth_dims is None or d.name in self.truth_dims:
                        lay.append((int(b.job_id), d))
            self._layout[seed] = lay
        return self._markets[seed]

    def variants(self) -> list[tuple[Hashable, int]]:
        out = []
        for s in self.seeds:
            self._base(s)
            out += [((s, d), max(1, len(self._layout[s]))) for d in self.deviators]
        return out

    def _dev_id(self, mk: Any, pos: int) -> int:
        ids = sorted(int(b.job_id) for b in mk.bids())
        return ids[min(pos, len(ids) - 1)]

    def decode(self, variant: Hashable, x: np.ndarray) -> AuctionPoint:
        seed, pos = (int(v) for v in variant)  # type: ignore[union-attr]
        mk = self._base(seed)
        moves: dict[int, list[tuple[str, float]]] = {}
        for (jid, d), xi in zip(self._layout[seed], np.clip(np.asarray(x, dtype=float), 0, 1), strict=False):
            z = float(d.to_z(d.lower)) + xi * (float(d.to_z(d.upper)) - float(d.to_z(d.lower)))
            v = float(d.from_z(z))
            if d.integer:
                v = float(round(v))
            if abs(v - float(d.truth)) <= 1e-9 * max(1.0, abs(float(d.truth))):
                continue  # the true value itself (up to the log/exp round trip): no move
            moves.setdefault(jid, []).append((d.name, v))
        truth = tuple(sorted((j, tuple(p)) for j, p in moves.items()))
        return AuctionPoint(seed, truth, self._dev_id(mk, pos))

    def point_x(self, point: AuctionPoint) -> np.ndarray:
        """The unit-box coordinates of ``point``'s TRUE-type moves (unmoved dimensions at their
        truth): ``decode((seed, position), point_x(point))`` gives ``point`` back."""
        self._base(point.seed)
        moves = {j: dict(p) for j, p in point.truth}
        x = []
        for jid, d in self._layout[point.seed]:
            v = moves.get(jid, {}).get(d.name, float(d.truth))
            lo, hi = float(d.to_z(d.lower)), float(d.to_z(d.upper))
            x.append(0.0 if hi <= lo else (float(d.to_z(v)) - lo) / (hi - lo))
        return np.clip(np.asarray(x if x else [0.5], dtype=float), 0.0, 1.0)

    def encode(self, witness: Any) -> tuple[Hashable, np.ndarray] | None:
        """A witness as a warm start ``((seed, deviator position), x)``: this space's own
        ``auction_hunt`` witnesses, and the ledger's through ``from_witness``; ``None`` when it does
        not fit (another mechanism or rounding stream, a deviator position outside ``deviators``)."""
        if not isinstance(witness, dict):
            return None
        point = None
        if witness.get("kind") == self.witness_kind and witness.get("space") == self.name:
            if witness.get("mechanism") != self.mechanism or int(witness.get("run_seed", 0)) != self.run_seed:
                return None
            point = AuctionPoint.from_dict(witness["point"])
        elif self.from_witness is not None:
            point = self.from_witness(witness)
        if point is None:
            return None
        ids = sorted(int(b.job_id) for b in self._base(point.seed).bids())
        pos = ids.index(point.deviator) if point.deviator in ids else -1
        if pos not in self.deviators:
            return None
        return (point.seed, pos), self.point_x(point)

    def sample(self, rng: np.random.Generator) -> AuctionPoint:
        """The ledger's sampler: a generator seed, the bids as drawn, a random deviator."""
        seed = int(rng.integers(0, 2**31 - 1))
        pos = int(self.deviators[int(rng.integers(len(self.deviators)))])
        return AuctionPoint(seed, (), self._dev_id(self._base(seed), pos))

    def market(self, point: AuctionPoint) -> Any:
        """The market of ``point`` (TRUE bids moved)."""
        mk = self._base(point.seed)
        moves = dict(point.truth)
        bids = [mk.misreport(b, dict(moves[int(b.job_id)])) if int(b.job_id) in moves else b for b in mk.bids()]
        return self.rebid(mk, bids) if moves else mk

    def evaluate(self, point: AuctionPoint, rng: np.random.Generator) -> Evaluation:
        from marketsim.market.audit.online import OnlineAuctionTarget

        mk = self.market(point)
        t = OnlineAuctionTarget(mk, self.mechanism, bidders=[point.deviator], seed=self.run_seed)
        dims = None
        if self.lie_dims is not None:  # the deviator's bid may lack some (no PS, no room to delay)
            have = {d.name for d in t.dimensions(point.deviator)}
            dims = [d for d in self.lie_dims if d in have]
            if not dims:
                return Evaluation(0.0, False, None, point)
        r = audit(t, point.deviator, config=self.config, rng=rng, dimensions=dims)
        if not r.violated or not isinstance(r.witness, dict):
            return Evaluation(0.0, False, None, point)
        eff = float(r.best_gain) if self.absolute else relative(r.best_gain, r.truthful_utility)
        wit = {"kind": self.witness_kind, "paper": self.paper, "space": self.name, "mechanism": self.mechanism,
               "point": point.to_dict(), "job_id": point.deviator, "lie": jsonable(r.witness),
               "family": r.witness_family, "truthful_surplus": r.truthful_utility, "gain": r.best_gain,
               "relative_gain": eff if math.isfinite(eff) else "inf", "tol": r.tol,
               "run_seed": self.run_seed}  # fmt: skip
        return Evaluation(eff, True, wit, point)

    def confirm(self, point: AuctionPoint, rng: np.random.Generator) -> Evaluation:
        return self.evaluate(point, rng)

    def shrink(self, point: AuctionPoint) -> Iterable[AuctionPoint]:
        """Undo the TRUE-type moves of one bidder at a time (other than the deviator's), then
        round the remaining moves to 2 significant digits."""
        for j, _ in point.truth:
            if j != point.deviator:
                yield AuctionPoint(point.seed, tuple(t for t in point.truth if t[0] != j), point.deviator)
        rounded = tuple((j, tuple((n, float(f"{v:.2g}")) for n, v in p)) for j, p in point.truth)
        if rounded != point.truth:
            yield AuctionPoint(point.seed, rounded, point.deviator)

    def recheck(self, witness: dict[str, Any]) -> bool:
        """Re-run the witness's single misreport on its instance: True when it still gains."""
        from marketsim.market.audit.online import OnlineAuctionTarget
        from marketsim.market.audit.search import evaluate_misreport

        point = AuctionPoint.from_dict(witness["point"])
        mech = str(witness.get("mechanism", self.mechanism))
        run_seed = int(witness.get("run_seed", 0))
        t = OnlineAuctionTarget(self.market(point), mech, bidders=[point.deviator], seed=run_seed)
        gain, _ = evaluate_misreport(t, point.deviator, witness["lie"])
        return gain > float(witness["tol"])


def _register_checker() -> None:
    from marketsim.market.audit.claims import register_witness_checker

    register_witness_checker("auction_hunt")(_check_auction_hunt)


_register_checker()
