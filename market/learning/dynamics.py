"""Adaptive reporting in fair-share markets: best-response, Hedge and EXP3 dynamics.

A :class:`FairShareGame` is the normal-form game a registered fair-share allocator induces: each
learning tenant reports its speedup row scaled, per GPU type ``j >= 1``, by a factor from a
log-spaced grid (column 0 is the normalisation anchor, as in the audit); the allocator runs on the
reported matrix and each tenant's payoff is its TRUE normalised throughput ``W_true_l . x_l``
(slowest-GPU equivalents). A profile is an integer array: one strategy index per tenant (tenants
that do not learn always play truth).

* :func:`best_response_dynamics`: tenants in turn switch to their best grid strategy against the
  others' current reports; stops at a pure grid equilibrium or when a profile repeats (a cycle,
  reported with its period).
* :func:`hedge` (full information: every grid strategy is re-scored against the others' realised
  reports each round) and :func:`exp3` (bandit: only the played strategy's utility is seen).
  Both return the empirical distribution of play, a coarse correlated equilibrium candidate, with
  each tenant's average external regret (its CCE gap); :func:`cce_epsilon` re-checks empirical play
  against deviations on a wider grid.
* :func:`certify`: epsilon of a pure profile, the largest unilateral TRUE gain found on a grid
  finer and wider than the learning grid (a lower bound on the exact epsilon, and a grid one:
  :mod:`market.learning.certificates` re-measures profiles and play with the audit's search over
  every report the validator accepts, the number a certificate must rest on).
* :func:`pure_equilibrium_search`: two learners, one dimension: the smallest epsilon over zoomed
  grids of pure profiles (does a pure approximate equilibrium exist at all?).
* :func:`price_of_lying`: welfare and fairness at a profile against truthful play.
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from market.audit.fairshare import resolve_fair_share
from market.audit.metrics import envy_violation, si_violation
from market.errors import InputError, as_float_array, check_int, check_positive

__all__ = [
    "Game",
    "FairShareGame",
    "AuctionGame",
    "DynamicsResult",
    "best_response_dynamics",
    "hedge",
    "exp3",
    "certify",
    "pure_equilibrium_search",
    "GapSearch",
    "cce_epsilon",
    "price_of_lying",
    "default_grid",
]


def default_grid(points: int = 13, low: float = 0.25, high: float = 4.0) -> np.ndarray:
    """Log-spaced report factors from ``low`` to ``high`` that always include 1 (truth)."""
    points = check_int("points", points, minimum=2)
    low, high = check_positive("low", low), check_positive("high", high)
    if not low < 1.0 < high:
        raise InputError("grid", (low, high), "must satisfy low < 1 < high so truth is a strategy")
    g = np.unique(np.concatenate([np.geomspace(low, high, points), [1.0]]))
    return g


class Game(ABC):
    """A finite game of report factors: ``n`` agents, each learner picks a row of ``strategies``
    (factor vectors over the game's reportable dimensions; ``truth_index`` is truthful), payoffs
    are TRUE utilities. Subclasses implement :meth:`_evaluate`, :meth:`metrics`, :meth:`with_grid`."""

    n: int
    grid_values: np.ndarray
    strategies: np.ndarray
    truth_index: int
    learner_ids: list[int]

    def _setup(self, grid: Any, dims: int, learners: Sequence[int] | None) -> None:
        g = default_grid() if grid is None else as_float_array("grid", grid, ndim=1, positive=True)
        if not np.any(np.isclose(g, 1.0, rtol=0, atol=1e-12)):
            raise InputError("grid", grid, "must contain the truthful factor 1")
        self.grid_values = np.asarray(g, dtype=float)
        self.strategies = np.array(list(itertools.product(self.grid_values, repeat=dims)))
        self.truth_index = int(np.flatnonzero(np.all(np.isclose(self.strategies, 1.0), axis=1))[0])
        ls = range(self.n) if learners is None else learners
        self.learner_ids = [check_int("learners", i, minimum=0) for i in ls]
        if any(i >= self.n for i in self.learner_ids) or not self.learner_ids:
            raise InputError("learners", learners, f"must be a non-empty list of agent indices < {self.n}")
        self._cache: dict[tuple[int, ...], np.ndarray] = {}
        self.evaluations = 0

    @abstractmethod
    def _evaluate(self, factors: np.ndarray) -> np.ndarray:
        """TRUE utilities (n,) when agent ``l`` reports with factor vector ``factors[l]``."""

    @abstractmethod
    def metrics(self, profile: Sequence[int]) -> dict[str, float]:
        """Welfare / revenue / fairness figures at ``profile`` (TRUE types)."""

    @abstractmethod
    def with_grid(self, grid: Any) -> Game:
        """The same game over another factor grid."""

    @property
    def S(self) -> int:
        """Strategies per learner."""
        return int(len(self.strategies))

    def truthful_profile(self) -> np.ndarray:
        """Everyone truthful."""
        return np.full(self.n, self.truth_index, dtype=int)

    def utilities(self, profile: Sequence[int]) -> np.ndarray:
        """TRUE utility of every agent at ``profile`` (cached)."""
        key = tuple(int(s) for s in profile)
        hit = self._cache.get(key)
        if hit is None:
            hit = np.asarray(self._evaluate(self.strategies[np.asarray(key, dtype=int)]), dtype=float)
            self._cache[key] = hit
            self.evaluations += 1
        return hit

    def deviations(self, profile: Sequence[int], agent: int) -> np.ndarray:
        """TRUE utility of ``agent`` for each of its strategies, others fixed at ``profile``."""
        p = np.array(profile, dtype=int)
        out = np.empty(self.S)
        for s in range(self.S):
            p[agent] = s
            out[s] = self.utilities(p)[agent]
        return out

    def scales(self) -> np.ndarray:
        """Per-agent utility scale used to normalise no-regret updates (default: 1)."""
        return np.ones(self.n)

    def __getstate__(self) -> dict[str, Any]:
        # sent to worker processes without the utility cache (it only grows) or its run count
        return {**self.__dict__, "_cache": {}, "evaluations": 0}


@dataclass
class FairShareGame(Game):
    """Game induced by fair-share ``mechanism`` on TRUE speedups ``W`` (n, k), GPUs ``m`` (k,).

    ``grid``: report factors per speedup dimension ``j >= 1`` (must contain 1); ``learners``:
    indices of the tenants that adapt (default: all). Strategies of a learner are the
    ``len(grid) ** (k - 1)`` factor vectors. Utility: TRUE normalised throughput.
    """

    mechanism: Any = "oef-noncoop"
    W: Any = None
    m: Any = None
    weights: Any = None
    caps: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    grid: Any = None
    learners: Sequence[int] | None = None

    def __post_init__(self) -> None:
        self.name, self._fn = resolve_fair_share(self.mechanism)
        Wa = as_float_array("W", self.W, ndim=2, positive=True)
        if Wa.shape[0] < 1 or Wa.shape[1] < 2:
            raise InputError("W", self.W, "needs at least one tenant and two GPU types (nothing to misreport)")
        self.Wt = Wa / Wa[:, :1]
        self.n, self.k = self.Wt.shape
        self.ma = as_float_array("m", self.m, shape=(self.k,), nonneg=True)
        self._setup(self.grid, self.k - 1, self.learners)

    def with_grid(self, grid: Any) -> FairShareGame:
        return replace(self, grid=grid)

    def reported(self, profile: Sequence[int]) -> np.ndarray:
        """Reported speedup matrix of ``profile`` (rows scaled on columns ``1..k-1``)."""
        return self._reported(self.strategies[np.asarray(profile, dtype=int)])

    def _reported(self, factors: np.ndarray) -> np.ndarray:
        F = np.ones((self.n, self.k))
        F[:, 1:] = factors
        return self.Wt * F

    def _alloc(self, factors: np.ndarray) -> np.ndarray:
        out = self._fn(self._reported(factors), self.ma, weights=self.weights, caps=self.caps, **self.options)
        return np.asarray(out.X, dtype=float)

    def allocation(self, profile: Sequence[int]) -> np.ndarray:
        """Allocation matrix X (n, k) in devices at ``profile``."""
        return self._alloc(self.strategies[np.asarray(profile, dtype=int)])

    def _evaluate(self, factors: np.ndarray) -> np.ndarray:
        return np.einsum("lj,lj->l", self.Wt, self._alloc(factors))

    def scales(self) -> np.ndarray:
        """TRUE throughput of owning every GPU (an upper bound on each tenant's utility)."""
        return self.Wt @ self.ma

    def metrics(self, profile: Sequence[int]) -> dict[str, float]:
        """``total`` TRUE throughput, max ``envy`` and ``si`` shortfall (throughput units), ``jain``."""
        X = self.allocation(profile)
        u = self.utilities(profile)
        jain = float(u.sum() ** 2 / (u.size * (u**2).sum())) if (u**2).sum() > 0 else 1.0
        return {
            "total": float(u.sum()),
            "envy": envy_violation(self.Wt, X, self.weights),
            "si": si_violation(self.Wt, X, self.ma, self.weights),
            "jain": jain,
        }


@dataclass
class AuctionGame(Game):
    """Game of an online/batch auction instance (:class:`~market.auction.market.AuctionMarket`):
    each bid is an agent reporting ``dimension`` (default ``value_scale``) times a grid factor;
    payoffs are TRUE surpluses. ``seed`` fixes randomised mechanisms' draws across profiles."""

    market: Any = None
    mechanism: str = ""
    dimension: str = "value_scale"
    grid: Any = None
    learners: Sequence[int] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        from market.auction.market import AuctionMarket

        if not isinstance(self.market, AuctionMarket):
            raise InputError("market", type(self.market).__name__, "must be an AuctionMarket instance")
        if self.mechanism not in self.market.mechanisms():
            raise InputError("mechanism", self.mechanism, f"must be one of {list(self.market.mechanisms())}")
        self.bids = list(self.market.bids())
        if not self.bids:
            raise InputError("market.bids", [], "must hold at least one bid")
        self.n = len(self.bids)
        for b in self.bids:
            dims = {d.name: d for d in self.market.dimensions(b)}
            d = dims.get(self.dimension)
            if d is None or d.kind != "factor":
                raise InputError("dimension", self.dimension, f"is not a factor dimension of bid {b.job_id}")
        self._setup(self.grid, 1, self.learners)
        lo = min(d.lower for b in self.bids for d in self.market.dimensions(b) if d.name == self.dimension)
        hi = max(d.upper for b in self.bids for d in self.market.dimensions(b) if d.name == self.dimension)
        if self.grid_values.min() < lo - 1e-12 or self.grid_values.max() > hi + 1e-12:
            raise InputError("grid", self.grid_values.tolist(), f"must lie within the validator's [{lo}, {hi}]")

    def with_grid(self, grid: Any) -> AuctionGame:
        return replace(self, grid=grid)

    def _run(self, factors: np.ndarray) -> tuple[list[Any], list[Any]]:
        from market.auction.market import run_market

        reports = [
            b if f[0] == 1.0 else self.market.misreport(b, {self.dimension: float(f[0])})
            for b, f in zip(self.bids, factors, strict=True)
        ]
        return reports, run_market(self.market, self.mechanism, reports, self.seed)

    def _evaluate(self, factors: np.ndarray) -> np.ndarray:
        from market.auction.market import decisions_by_id

        reports, decs = self._run(factors)
        by_id = decisions_by_id(decs)
        return np.array([
            self.market.true_surplus(b, r, by_id.get(int(b.job_id)))
            for b, r in zip(self.bids, reports, strict=True)
        ])  # fmt: skip

    def scales(self) -> np.ndarray:
        """Per-bid largest |TRUE surplus| over its grid strategies at truthful play (1 if all zero)."""
        out = np.ones(self.n)
        t = self.truthful_profile()
        for i in self.learner_ids:
            m = float(np.abs(self.deviations(t, i)).max())
            out[i] = m if m > 0 else 1.0
        return out

    def metrics(self, profile: Sequence[int]) -> dict[str, float]:
        """The market's own run metrics (``welfare``, ``revenue``, ``utility``, ``admission_rate``...)."""
        reports, decs = self._run(self.strategies[np.asarray(profile, dtype=int)])
        return {k: float(v) for k, v in self.market.metrics(decs, reports).items()}


@dataclass
class DynamicsResult:
    """Outcome of a learning run: ``trajectory`` (one row per step: ``step``, ``agent``,
    ``strategy``, factor columns ``f1..f{k-1}``, TRUE ``utility``), the final pure ``profile``
    (best-response) or modal profile (no-regret), ``status`` (``converged`` / ``cycle`` /
    ``max-steps``: a grid equilibrium, an exact repeat of a grid profile, out of passes;
    no-regret: ``finished`` / ``grid-cce`` / ``time-limit``), ``period`` of a detected cycle, ``distribution`` (joint
    empirical frequency of profiles, no-regret only) and ``regret`` (average external regret per
    learner, TRUE throughput units; no-regret only). ``regret_rel``: each learner's regret over its
    mean TRUE utility in play; its maximum is the epsilon of ``distribution`` as a coarse correlated
    equilibrium of the grid game. ``rounds`` played and wall ``seconds`` (no-regret only)."""

    rule: str
    trajectory: pd.DataFrame
    profile: np.ndarray
    status: str
    period: int = 0
    cycle: list[tuple[int, ...]] = field(default_factory=list)
    distribution: dict[tuple[int, ...], float] = field(default_factory=dict)
    regret: dict[int, float] = field(default_factory=dict)
    regret_rel: dict[int, float] = field(default_factory=dict)
    rounds: int = 0
    seconds: float = 0.0


def _row(game: FairShareGame, step: int, agent: int, s: int, u: float) -> dict[str, Any]:
    r: dict[str, Any] = {"step": step, "agent": agent, "strategy": s, "utility": u}
    for j, f in enumerate(game.strategies[s], start=1):
        r[f"f{j}"] = float(f)
    return r


def best_response_dynamics(game: FairShareGame, *, max_passes: int = 50, tol: float = 1e-9) -> DynamicsResult:
    """Round-robin best responses from truth. A learner switches only if the best grid strategy
    beats its current one by more than ``tol`` relative (ties keep the current report)."""
    max_passes = check_int("max_passes", max_passes, minimum=1)
    p = game.truthful_profile()
    seen: dict[tuple[int, ...], int] = {tuple(p): 0}
    order: list[tuple[int, ...]] = [tuple(p)]
    rows = [_row(game, 0, -1, game.truth_index, float(game.utilities(p).sum()))]
    step = 0
    for _ in range(max_passes):
        changed = False
        for i in game.learner_ids:
            u = game.deviations(p, i)
            best = int(np.argmax(u))
            # relative to |current| (a negative utility must not lower the bar below itself)
            moved = bool(best != p[i] and u[best] > u[p[i]] + tol * max(1.0, abs(u[p[i]])))
            if moved:
                p[i] = best
                changed = True
            step += 1
            rows.append(_row(game, step, i, int(p[i]), float(game.utilities(p)[i])))
            key = tuple(int(x) for x in p)
            if moved and key in seen:
                first = seen[key]
                return DynamicsResult("best-response", pd.DataFrame(rows), p.copy(), "cycle",
                                      period=len(order) - first, cycle=order[first:])  # fmt: skip
            if key not in seen:
                seen[key] = len(order)
                order.append(key)
        if not changed:
            return DynamicsResult("best-response", pd.DataFrame(rows), p.copy(), "converged")
    return DynamicsResult("best-response", pd.DataFrame(rows), p.copy(), "max-steps")


def _no_regret(
    game: FairShareGame,
    rule: str,
    rounds: int,
    eta: float,
    gamma: float,
    seed: int,
    progress: Callable[[int, int], None] | None,
    optimistic: bool = False,
    tol: float | None = None,
    time_limit: float | None = None,
    executor: Executor | None = None,
) -> DynamicsResult:
    rounds = check_int("rounds", rounds, minimum=1)
    eta = check_positive("eta", eta)
    if tol is not None:
        tol = check_positive("tol", tol)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit)
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    S, L = game.S, game.learner_ids
    scale = game.scales()
    logw = {i: np.zeros(S) for i in L}
    cum_cf = {i: np.zeros(S) for i in L}  # cumulative counterfactual utility of each strategy
    cum_play = dict.fromkeys(L, 0.0)
    counts: dict[tuple[int, ...], int] = {}
    rows = []
    last = {i: np.zeros(S) for i in L}  # optimistic Hedge: the last counterfactual, counted twice
    p = game.truthful_profile()
    status, played = "finished", rounds
    for t in range(rounds):
        probs = {}
        for i in L:
            w = np.exp(logw[i] - logw[i].max())
            q = w / w.sum()
            if rule == "exp3":
                q = (1 - gamma) * q + gamma / S
            probs[i] = q
            p[i] = int(rng.choice(S, p=q))
        key = tuple(int(x) for x in p)
        counts[key] = counts.get(key, 0) + 1
        u_now = game.utilities(p)
        cfs = _all_deviations(game, p, L, executor)  # for regret accounting (both rules)
        for i in L:
            cf = cfs[i]  # EXP3 learns from u_now only
            cum_cf[i] += cf
            cum_play[i] += float(u_now[i])
            if rule == "hedge":
                step = cf / scale[i]
                logw[i] += eta * (2.0 * step - last[i]) if optimistic else eta * step
                last[i] = step
            else:
                est = np.zeros(S)
                est[p[i]] = u_now[i] / scale[i] / probs[i][p[i]]
                logw[i] += eta * est
            rows.append(_row(game, t, i, int(p[i]), float(u_now[i])))
        if progress is not None:
            progress(t + 1, rounds)
        if tol is not None and max(_rel_regret(cum_cf[i], cum_play[i]) for i in L) <= tol:
            status, played = "grid-cce", t + 1
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            status, played = "time-limit", t + 1
            break
    dist = {k: c / played for k, c in counts.items()}
    modal = np.array(max(dist, key=dist.get), dtype=int)
    regret = {i: float((cum_cf[i].max() - cum_play[i]) / played) for i in L}
    rel = {i: _rel_regret(cum_cf[i], cum_play[i]) for i in L}
    return DynamicsResult(rule, pd.DataFrame(rows), modal, status, distribution=dist, regret=regret,
                          regret_rel=rel, rounds=played, seconds=time.perf_counter() - start)  # fmt: skip


def _deviation_row(game: Game, profile: np.ndarray, agent: int) -> tuple[np.ndarray, int]:
    """Worker side of :func:`_all_deviations`: ``agent``'s counterfactual row and the runs made."""
    return game.deviations(profile, agent), game.evaluations


def _all_deviations(game: Game, p: np.ndarray, L: list[int], executor: Executor | None) -> dict[int, np.ndarray]:
    """Every learner's counterfactual TRUE utilities at ``p``, here or one task per learner on
    ``executor`` (the game is sent without its cache; the numbers are the same either way)."""
    if executor is None:
        return {i: game.deviations(p, i) for i in L}
    futures = [executor.submit(_deviation_row, game, p.copy(), i) for i in L]
    out = {}
    for i, fut in zip(L, futures, strict=True):
        out[i], runs = fut.result()
        game.evaluations += runs
    return out


def _rel_regret(cum_cf: np.ndarray, cum_play: float) -> float:
    """Cumulative external regret over cumulative TRUE utility in play (inf when that is <= 0 and
    the regret is positive)."""
    gain = max(float(cum_cf.max() - cum_play), 0.0)
    if gain == 0.0:
        return 0.0
    return gain / cum_play if cum_play > 0 else float("inf")


def hedge(
    game: FairShareGame,
    *,
    rounds: int = 300,
    eta: float = 2.0,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    optimistic: bool = False,
    tol: float | None = None,
    time_limit: float | None = None,
    executor: Executor | None = None,
) -> DynamicsResult:
    """Hedge (multiplicative weights) with full-information counterfactual TRUE utilities, each
    scaled by the tenant's whole-cluster throughput so ``eta`` is dimensionless.

    ``optimistic``: optimistic Hedge (the last round's counterfactuals count twice in the weights),
    whose regret falls faster when every player runs it. ``tol``: stop after the first round at
    which every learner's relative regret (``regret_rel``) is <= ``tol`` (status ``grid-cce``: the
    empirical play is a ``tol``-coarse correlated equilibrium of the GRID game only; whether it is
    one against every report is :func:`market.learning.certificates.audit_play`'s to measure). ``time_limit``
    (seconds): stop after the round that exceeds it (status ``time-limit``; the number of rounds
    then depends on the machine, so results are reproducible only without it). ``executor``: a
    ``concurrent.futures`` executor (e.g. a 2-process pool, owned by the caller) that computes the
    learners' counterfactuals in parallel, one task per learner; same numbers as without it."""
    return _no_regret(game, "hedge", rounds, eta, 0.0, seed, progress, optimistic, tol, time_limit, executor)


def exp3(
    game: FairShareGame,
    *,
    rounds: int = 2000,
    eta: float = 0.05,
    gamma: float = 0.1,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> DynamicsResult:
    """EXP3: bandit feedback (only the played strategy's TRUE utility, importance-weighted) with
    ``gamma`` uniform exploration. Regret is still reported against full counterfactuals."""
    if not 0.0 < float(gamma) <= 1.0:
        raise InputError("gamma", gamma, "must be in (0, 1]")
    return _no_regret(game, "exp3", rounds, eta, float(gamma), seed, progress)


def _admissible(game: Game, values: np.ndarray) -> np.ndarray:
    """``values`` clipped to what every agent may report (an auction's validator bounds), plus the
    learning grid."""
    if isinstance(game, AuctionGame):
        dims = [d for b in game.bids for d in game.market.dimensions(b) if d.name == game.dimension]
        lo, hi = max(d.lower for d in dims), min(d.upper for d in dims)
        values = values[(values >= lo) & (values <= hi)]
    return np.union1d(values, game.grid_values)


def _regrid(game: Game, big: Game) -> Callable[[Sequence[int]], np.ndarray]:
    """Maps a profile of ``game`` to the same reports as a profile of ``big`` (a superset grid)."""
    index = {tuple(np.round(v, 12)): i for i, v in enumerate(big.strategies)}
    return lambda profile: np.array(
        [index[tuple(np.round(v, 12))] for v in game.strategies[np.asarray(profile, dtype=int)]], dtype=int
    )


def certify(game: Game, profile: Sequence[int], *, points: int = 61, low: float = 0.01,
            high: float = 100.0) -> dict[str, Any]:  # fmt: skip
    """Epsilon of pure ``profile``: for each learner, the best TRUE gain over report factors on a
    ``points``-point log grid from ``low`` to ``high`` per dimension (clipped to an auction's
    validator bounds; joint over dimensions, so keep ``points ** dims`` modest) plus the learning
    grid, others fixed. A lower bound on the exact epsilon. Returns ``eps_abs`` (utility units),
    ``eps_rel`` (relative to the learner's utility at ``profile``), the ``agent`` and its best
    ``factors``."""
    big = game.with_grid(_admissible(game, default_grid(points, low, high)))
    to_big = _regrid(game, big)
    mapped = to_big(profile)
    u0 = game.utilities(profile)
    best: dict[str, Any] = {"eps_abs": 0.0, "eps_rel": 0.0, "agent": None, "factors": None}
    for i in game.learner_ids:
        dev = big.deviations(mapped, i)
        s = int(np.argmax(dev))
        gain = float(dev[s] - u0[i])
        if gain > best["eps_abs"]:
            rel = gain / abs(u0[i]) if u0[i] != 0 else float("inf")
            best = {"eps_abs": gain, "eps_rel": float(rel), "agent": i, "factors": big.strategies[s].tolist()}
    return best


def cce_epsilon(
    game: Game,
    distribution: Mapping[tuple[int, ...], float],
    *,
    grid: Any,
    executor: Executor | None = None,
) -> dict[int, float]:
    """Relative epsilon of ``distribution`` (profile on ``game``'s grid -> probability, e.g. a Hedge
    run's empirical play) as a coarse correlated equilibrium when every learner may instead commit
    to any factor vector over ``grid`` joined with the game's own grid: per learner, (best expected
    TRUE utility of a fixed report - expected TRUE utility in play) / expected utility in play, 0 when
    no report gains. Deviations run on ``executor`` when given."""
    if not distribution:
        raise InputError("distribution", distribution, "is empty: no play to certify")
    big = game.with_grid(_admissible(game, as_float_array("grid", grid, ndim=1, positive=True)))
    to_big = _regrid(game, big)
    dev = {i: np.zeros(big.S) for i in game.learner_ids}
    play = dict.fromkeys(game.learner_ids, 0.0)
    for prof, w in distribution.items():
        u = game.utilities(prof)
        rows = _all_deviations(big, to_big(prof), game.learner_ids, executor)
        for i in game.learner_ids:
            dev[i] += w * rows[i]
            play[i] += w * float(u[i])
    game.evaluations += big.evaluations
    return {i: _rel_regret(dev[i], play[i]) for i in game.learner_ids}


@dataclass
class GapSearch:
    """Result of :func:`pure_equilibrium_search`. ``eps`` / ``eps_abs``: the smallest epsilon found
    (relative to the learner's utility / in utility units, max over the two learners) at report
    ``factors`` with TRUE ``utilities``; ``levels``: per grid level its log10 window centre and
    width and best epsilon; ``grid`` (log10 factors) and ``surface``: the first level's epsilon over
    (learner A factor, learner B factor); ``evaluations``: mechanism runs (grid search only);
    ``certificate``: epsilon at ``factors`` re-measured by the audit's own search over every
    report the validator accepts (:func:`market.learning.certificates.audit_profile`): a grid
    epsilon of 0 is only "no gain on these deviations"."""

    eps: float
    eps_abs: float
    factors: tuple[float, float]
    utilities: tuple[float, float]
    levels: list[dict[str, float]]
    grid: np.ndarray
    surface: np.ndarray
    evaluations: int
    certificate: Any = None


def pure_equilibrium_search(
    game: Game,
    *,
    low: float = 1e-3,
    high: float = 1e3,
    points: int = 25,
    deviations: int = 241,
    zooms: int = 3,
    progress: Callable[[int, int], None] | None = None,
    tol: float = 0.01,
) -> GapSearch:
    """Look for a pure profile with a small epsilon in a game with two learners and one reportable
    dimension: a ``points`` x ``points`` log grid of report factors over ``[low, high]`` for the two
    learners (the others truthful), then ``zooms`` grids of the same size over a window a quarter as
    wide around the best profile so far (kept inside ``[low, high]``; among equal epsilons the
    profile closest to truth wins). Epsilon at a profile: each learner's best TRUE gain over
    ``deviations`` log-spaced factors in ``[low, high]`` (clipped to an auction's validator bounds,
    plus the learning grid), the other fixed. The minimum over the visited profiles is evidence, not
    proof, about the exact minimum: outcomes can jump between grid points. The best profile is then
    certified by the audit's search (``certificate``; verdict at relative tolerance ``tol``)."""
    if len(game.learner_ids) != 2 or game.strategies.shape[1] != 1:
        raise InputError("game", f"{len(game.learner_ids)} learners x {game.strategies.shape[1]} dimensions",
                         "needs exactly two learners and one reportable dimension")  # fmt: skip
    low, high = check_positive("low", low), check_positive("high", high)
    if not low < high:
        raise InputError("high", high, f"must exceed low = {low}")
    points, zooms = check_int("points", points, minimum=2), check_int("zooms", zooms, minimum=0)
    dev = _admissible(game, np.geomspace(low, high, check_int("deviations", deviations, minimum=2)))
    a, b = game.learner_ids
    cache: dict[tuple[float, float], np.ndarray] = {}

    def u(fa: float, fb: float) -> np.ndarray:
        key = (float(fa), float(fb))
        if key not in cache:
            F = np.ones((game.n, 1))
            F[a, 0], F[b, 0] = fa, fb
            cache[key] = np.asarray(game._evaluate(F), dtype=float)
        return cache[key]

    lg_lo, lg_hi = float(np.log10(low)), float(np.log10(high))
    lo_a = lo_b = lg_lo
    hi_a = hi_b = lg_hi
    levels: list[dict[str, float]] = []
    best: tuple[float, float, float, float] = (np.inf, np.inf, 1.0, 1.0)
    first: tuple[np.ndarray, np.ndarray] | None = None
    for level in range(zooms + 1):
        ga, gb = np.linspace(lo_a, hi_a, points), np.linspace(lo_b, hi_b, points)
        fa, fb = 10.0**ga, 10.0**gb
        U = np.array([[u(x, y) for y in fb] for x in fa])  # (points, points, n)
        best_a = np.array([max(u(d, y)[a] for d in dev) for y in fb])  # a's best reply to each b factor
        best_b = np.array([max(u(x, d)[b] for d in dev) for x in fa])
        gain = np.maximum(np.stack([best_a[None, :] - U[:, :, a], best_b[:, None] - U[:, :, b]]), 0.0)
        base = np.abs(np.stack([U[:, :, a], U[:, :, b]]))
        rel = np.where(gain > 0, np.divide(gain, base, out=np.full_like(gain, np.inf), where=base > 0), 0.0)
        E = rel.max(axis=0)
        # ties (often several exact equilibria) go to the profile closest to truth in log factors
        ties = np.argwhere(E <= E.min() + 1e-12)
        i, j = ties[np.argmin(np.abs(ga[ties[:, 0]]) + np.abs(gb[ties[:, 1]]))]
        if first is None:
            first = (ga, E)
        if E[i, j] < best[0]:
            best = (float(E[i, j]), float(gain[:, i, j].max()), float(fa[i]), float(fb[j]))
        levels.append({"level": level, "centre_a": float(ga[i]), "centre_b": float(gb[j]),
                       "width": float(hi_a - lo_a), "eps": float(E[i, j])})  # fmt: skip
        if progress is not None:
            progress(level + 1, zooms + 1)
        ca, cb = np.log10(best[2]), np.log10(best[3])
        wa, wb = (hi_a - lo_a) / 8, (hi_b - lo_b) / 8
        # the next window, shifted back inside [low, high] where it would stick out
        lo_a, lo_b = (float(np.clip(c - w, lg_lo, lg_hi - 2 * w)) for c, w in ((ca, wa), (cb, wb)))
        hi_a, hi_b = lo_a + 2 * wa, lo_b + 2 * wb
    ub = u(best[2], best[3])
    from market.learning.certificates import audit_profile

    F = np.ones((game.n, 1))
    F[a, 0], F[b, 0] = best[2], best[3]
    cert = audit_profile(game, F, tol=tol)
    return GapSearch(best[0], best[1], (best[2], best[3]), (float(ub[a]), float(ub[b])), levels,
                     first[0], first[1], len(cache), cert)  # fmt: skip


def price_of_lying(game: Game, profile: Sequence[int]) -> dict[str, float]:
    """Metrics at truthful play (``truthful_<metric>``) and at ``profile`` (``learned_<metric>``),
    the welfare ratio ``price_of_lying`` = truthful / learned (fair share: ``total`` throughput;
    auctions: ``welfare``), and each agent's TRUE gain ``gain_<i>`` (utility units)."""
    p = np.asarray(profile, dtype=int)
    t_m, l_m = game.metrics(game.truthful_profile()), game.metrics(p)
    out = {f"truthful_{k}": v for k, v in t_m.items()} | {f"learned_{k}": v for k, v in l_m.items()}
    key = "total" if "total" in t_m else "welfare"
    out["price_of_lying"] = t_m[key] / l_m[key] if l_m[key] > 0 else float("inf")
    ut, ul = game.utilities(game.truthful_profile()), game.utilities(p)
    for i in range(game.n):
        out[f"gain_{i}"] = float(ul[i] - ut[i])
    return out
