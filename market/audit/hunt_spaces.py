"""Instance spaces for :func:`market.audit.hunt.hunt`: fair-share allocators and online auctions.

* :class:`FairShareSpace` — TRUE speedups, capacities (and integer weights) of ``n`` tenants on
  ``k`` GPU types, the ranges of the ledger's generator
  (:func:`market.audit.instances.random_instance`: rows start at 1 and grow by a factor in
  ``step`` per type; ``m_j`` whole GPUs in ``1..m_max``). Variants are the ``(n, k)`` pairs;
  the continuous part is ``n (k - 1)`` step factors, ``k`` capacities (rounded to whole GPUs) and
  optionally ``n`` weights (``1..3``).
* :class:`MisreportSpace` — effect = the deviator's largest relative gain of a misreport over the
  claim's probe families (row 0 deviates: the space contains every row, so fixing the deviator
  loses nothing for a mechanism that treats rows alike). The inner search is
  :func:`market.audit.search.audit` with :data:`HUNT_CONFIG` on the mechanism's fast screen
  (warm-started LP where registered); the final instance is confirmed by the audit that
  ``marketsim audit --seed 0`` runs (default :class:`AuditConfig`, the registered mechanism),
  so ``witness["reaudit"]`` re-derives the reported figure.
* :class:`PropertySpace` — effect = a property's violation amount on the truthful allocation.
* :class:`AuctionSpace` — an online auction market from its paper's generator (the discrete
  part: generator seeds); the continuous part moves every bidder's TRUE type along the market's
  own misreport dimensions (valuation, size, demands, arrival) within their boxes; the effect is
  one bidder's largest relative gain of a misreport (:class:`market.audit.online.OnlineAuctionTarget`).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from market.audit.fairshare import FairShareTarget
from market.audit.hunt import Evaluation
from market.audit.instances import FairShareInstance, random_instance
from market.audit.search import AuditConfig, AuditResult, FamilyBest, audit, jsonable, relative
from market.errors import InputError

__all__ = [
    "HUNT_CONFIG",
    "SCOPES",
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
    """Decorator registering ``factory() -> AuctionSpace`` under ``name`` (the witness's ``space``)."""

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
"""Inner misreport search of one hunt evaluation (a fraction of the default audit's budget)."""

SCOPES: dict[str, Callable[[FamilyBest], bool]] = {
    "in": lambda fb: fb.in_scope,
    "out": lambda fb: not fb.in_scope,
    "all": lambda fb: True,
    "up": lambda fb: fb.family.startswith("UP_"),
    "down": lambda fb: fb.family.startswith("DOWN_"),
}
"""Probe families a misreport claim counts: the paper's scope (``in``, e.g. inflation for OEF),
the extension (``out``) or every family (``all``)."""


def _fmt(x: float) -> str:
    return repr(float(x)) if float(x) != int(x) else str(int(x))


def reaudit_command(mechanism: str, W: np.ndarray, m: np.ndarray, weights: Any = None) -> str:
    """The ``marketsim audit`` command line that re-derives a fair-share misreport witness."""
    sp = ";".join(",".join(_fmt(v) for v in row) for row in np.asarray(W, dtype=float))
    parts = ["marketsim", "audit", "--mechanism", mechanism, "--speedups", sp,
             "--capacity", ",".join(_fmt(v) for v in np.asarray(m, dtype=float))]  # fmt: skip
    if weights is not None:
        parts += ["--weights", ",".join(_fmt(v) for v in np.asarray(weights, dtype=float))]
    return " ".join(shlex.quote(p) for p in [*parts, "--seed", "0", "--json"])


def misreport_witness(t: FairShareTarget, r: AuditResult, fb: FamilyBest, reaudit: bool = True) -> dict[str, Any]:
    """The ledger's ``misreport`` witness (re-checked by :func:`market.audit.claims.recheck_witness`)
    plus, with ``reaudit``, the ``marketsim audit`` command whose agent ``deviator`` re-derives it."""
    row, weight = fb.report
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
        "tol": r.tol,
    }
    if reaudit:
        out["reaudit"] = reaudit_command(t.name, t.Wt, t.ma, t.wt) if isinstance(t.mechanism, str) else None
    return out


@dataclass
class FairShareSpace:
    """Fair-share instances (module docstring). ``n`` / ``k``: inclusive ranges of tenants and
    GPU types; ``m_max`` the largest capacity; ``step`` the per-type speedup factor range;
    ``weighted``: integer weights ``1..3`` are part of the space (half the baseline's draws
    carry weights, as in the ledger); ``keep_row0``: shrinking never drops row 0 (the deviator)."""

    name: str
    n: tuple[int, int] = (2, 4)
    k: tuple[int, int] = (2, 3)
    m_max: int = 4
    step: tuple[float, float] = (1.0, 1.6)
    weighted: bool = False
    keep_row0: bool = False
    kind: str = "unrestricted"

    def variants(self) -> list[tuple[Hashable, int]]:
        return [((n, k), n * (k - 1) + k + (n if self.weighted else 0))
                for n in range(self.n[0], self.n[1] + 1) for k in range(self.k[0], self.k[1] + 1)]  # fmt: skip

    def decode(self, variant: Hashable, x: np.ndarray) -> FairShareInstance:
        n, k = variant  # type: ignore[misc]
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        lo, hi = self.step
        steps = (lo + (hi - lo) * x[: n * (k - 1)]).reshape(n, k - 1)
        if self.kind != "unrestricted":  # the ordered generator: step columns sorted over users
            steps = np.sort(steps, axis=0)
        W = np.cumprod(np.c_[np.ones(n), steps], axis=1)
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
        lo, hi = self.step
        xs = np.clip((W[:, 1:] / W[:, :-1] - lo) / max(hi - lo, 1e-12), 0, 1).ravel()
        xm = np.clip((m - 0.5) / self.m_max, 0, 1)
        parts = [xs, xm]
        if self.weighted:
            w = witness.get("weights")
            wv = np.ones(n) if w is None else np.asarray(w, dtype=float)[order]
            parts.append(np.clip((wv - 0.5) / 3, 0, 1))
        return (n, k), np.concatenate(parts)

    def sample(self, rng: np.random.Generator) -> FairShareInstance:
        inst = random_instance(rng, self.kind, n=self.n, k=self.k, m_max=self.m_max, step=self.step)
        if self.weighted and rng.random() < 0.5:
            return FairShareInstance(inst.W, inst.m, inst.kind,
                                     weights=rng.integers(1, 4, inst.W.shape[0]).astype(float))  # fmt: skip
        return inst

    def contains(self, inst: FairShareInstance) -> bool:
        """Whether ``inst`` lies in the space: sizes in range, speedup steps in ``step`` (1e-9
        slack), whole capacities in ``1..m_max``, weights in ``1..3``."""
        W, m = inst.W, inst.m
        n, k = W.shape
        if not (self.n[0] <= n <= self.n[1] and self.k[0] <= k <= self.k[1]):
            return False
        st = W[:, 1:] / W[:, :-1]
        if st.size and (st.min() < self.step[0] - 1e-9 or st.max() > self.step[1] + 1e-9):
            return False
        if (m < 1).any() or (m > self.m_max).any() or (m != np.round(m)).any():
            return False
        w = inst.weights
        return w is None or (self.weighted and bool(((w >= 1) & (w <= 3) & (w == np.round(w))).all()))

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


@dataclass
class MisreportSpace(FairShareSpace):
    """Fair-share instances; effect = row 0's largest relative gain of a misreport over the
    families of ``scope`` (:data:`SCOPES`) against ``mechanism`` (a registered fair-share name or
    a callable with the fair-share signature).
    A gain counts when it exceeds the audit's tolerance (``1e-7 max(1, |u|)``); below it the
    effect is 0, as in the ledger."""

    mechanism: str = "oef-noncoop"
    scope: str = "all"
    config: AuditConfig = HUNT_CONFIG
    keep_row0: bool = True
    confirm_full: bool = True

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise InputError("scope", self.scope, f"must be one of {sorted(SCOPES)}")

    def _figure(self, t: FairShareTarget, r: AuditResult) -> Evaluation:
        gain, fb = r.family_gain(SCOPES[self.scope])
        if fb is None or gain <= r.tol:
            return Evaluation(0.0, False, None)
        return Evaluation(relative(gain, r.truthful_utility), True, misreport_witness(t, r, fb))

    def evaluate(self, inst: FairShareInstance, rng: np.random.Generator) -> Evaluation:
        # no random-vector probes in the inner search: a lucky random vector is noise to the optimiser
        # and would not re-derive in the confirming audit (copies of other rows stay: deterministic)
        t = FairShareTarget(self.mechanism, W=inst.W, m=inst.m, weights=inst.weights, n_arbitrary=0, fast=True)
        ev = self._figure(t, audit(t, 0, config=self.config, rng=rng))
        ev.instance = inst
        return ev

    def confirm(self, inst: FairShareInstance, rng: np.random.Generator) -> Evaluation:
        """Row 0's audit exactly as ``marketsim audit --seed 0`` runs it (the registered mechanism,
        the default :class:`AuditConfig`, agent 0 first on ``default_rng(0)``); with
        ``confirm_full=False`` the inner search again (cheaper; the witness still re-checks)."""
        if not self.confirm_full:
            return self.evaluate(inst, rng)
        t = FairShareTarget(self.mechanism, inst.W, inst.m, weights=inst.weights)
        ev = self._figure(t, audit(t, 0, rng=np.random.default_rng(0)))
        ev.instance = inst
        return ev


@dataclass
class PropertySpace(FairShareSpace):
    """Fair-share instances; effect = ``measure(instance)`` -> ``(violation amount, tolerance,
    witness)`` of a property of the truthful allocation (the claim's own measurement)."""

    measure: Callable[[FairShareInstance], tuple[float, float, dict[str, Any]]] | None = None

    def evaluate(self, inst: FairShareInstance, rng: np.random.Generator) -> Evaluation:
        if self.measure is None:
            raise InputError("PropertySpace.measure", None, "must be a callable")
        v, tol, wit = self.measure(inst)
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
    names the checker of the witness (:func:`market.audit.claims.register_witness_checker`);
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
        from market.audit.online import OnlineAuctionTarget

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
        from market.audit.online import OnlineAuctionTarget
        from market.audit.search import evaluate_misreport

        point = AuctionPoint.from_dict(witness["point"])
        mech = str(witness.get("mechanism", self.mechanism))
        run_seed = int(witness.get("run_seed", 0))
        t = OnlineAuctionTarget(self.market(point), mech, bidders=[point.deviator], seed=run_seed)
        gain, _ = evaluate_misreport(t, point.deviator, witness["lie"])
        return gain > float(witness["tol"])


def _register_checker() -> None:
    from market.audit.claims import register_witness_checker

    register_witness_checker("auction_hunt")(_check_auction_hunt)


_register_checker()
