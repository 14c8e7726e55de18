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
  :mod:`marketsim.market.learning.certificates` re-measures profiles and play with the audit's search over
  every report the validator accepts, the number a certificate must rest on).
* :func:`pure_equilibrium_search`: two learners, one dimension: the smallest epsilon over zoomed
  grids of pure profiles (does a pure approximate equilibrium exist at all?).
* :func:`price_of_lying`: welfare and fairness at a profile against truthful play.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from marketsim.market.errors import InputError, as_float_array, check_int, check_positive
from marketsim.market.learning.games import AuctionGame, FairShareGame, Game, default_grid

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
    equilibrium of the grid game. ``rounds`` played and wall ``seconds`` (no-regret only).

    :param rule: the dynamics (``best-response``, ``hedge``, ``exp3``)
    :param trajectory: one row per step
    :param profile: the final (or modal) profile
    :param status: how the run ended
    :param period: a cycle's period
    :param cycle: the profiles of the cycle
    :param distribution: empirical frequency of profiles (no-regret)
    :param regret: average external regret per learner, TRUE units
    :param regret_rel: regret over mean utility in play
    :param rounds: rounds played
    :param seconds: wall time, s
    """

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
    beats its current one by more than ``tol`` relative (ties keep the current report).

    :param game: the game (its learners and strategy grid)
    :param max_passes: most passes
    :param tol: relative improvement needed to switch
    :returns: the run
    """
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
    one against every report is :func:`marketsim.market.learning.certificates.audit_play`'s to measure). ``time_limit``
    (seconds): stop after the round that exceeds it (status ``time-limit``; the number of rounds
    then depends on the machine, so results are reproducible only without it). ``executor``: a
    ``concurrent.futures`` executor (e.g. a 2-process pool, owned by the caller) that computes the
    learners' counterfactuals in parallel, one task per learner; same numbers as without it.

    :param game: the game (its learners and strategy grid)
    :param rounds: rounds
    :param eta: learning rate (dimensionless)
    :param seed: the draws' seed
    :param progress: called with (done, total) rounds
    :param optimistic: optimistic Hedge
    :param tol: stop at this relative regret, or ``None``
    :param time_limit: seconds, or ``None``
    :param executor: computes the counterfactuals, or ``None``
    :returns: the run
    """
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
    ``gamma`` uniform exploration. Regret is still reported against full counterfactuals.

    :param game: the game (its learners and strategy grid)
    :param rounds: rounds
    :param eta: learning rate
    :param gamma: uniform exploration, in (0, 1]
    :param seed: the draws' seed
    :param progress: called with (done, total) rounds
    :returns: the run
    :raises InputError: ``gamma`` outside (0, 1]
    """
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
    ``factors``.

    :param game: the game (its learners and strategy grid)
    :param profile: strategy indices
    :param points: grid points per dimension
    :param low: lowest factor
    :param high: highest factor
    :returns: ``eps_abs``, ``eps_rel``, ``agent`` and ``factors``
    """
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
    no report gains. Deviations run on ``executor`` when given.

    :param game: the game (its learners and strategy grid)
    :param distribution: profile -> probability
    :param grid: factor values each learner may commit to
    :param executor: runs the deviations, or ``None``
    :returns: learner -> relative epsilon
    :raises InputError: an empty distribution
    """
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
    report the validator accepts (:func:`marketsim.market.learning.certificates.audit_profile`): a grid
    epsilon of 0 is only "no gain on these deviations".

    :param eps: smallest relative epsilon found
    :param eps_abs: the same in utility units
    :param factors: the two learners' factors there
    :param utilities: their TRUE utilities
    :param levels: per grid level its window and best epsilon
    :param grid: log10 factors of the first level
    :param surface: epsilon over the first level's grid
    :param evaluations: mechanism runs
    :param certificate: the audit's re-measurement, or ``None``
    """

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
    certified by the audit's search (``certificate``; verdict at relative tolerance ``tol``).

    :param game: the game (its learners and strategy grid)
    :param low: lowest factor
    :param high: highest factor
    :param points: grid points per learner
    :param deviations: deviation factors per learner
    :param zooms: refined grids
    :param progress: called with (done, total)
    :param tol: relative tolerance of the certificate
    :returns: the best profile and its epsilon
    :raises InputError: not two learners with one dimension, ``high <= low``
    """
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
    from marketsim.market.learning.certificates import audit_profile

    F = np.ones((game.n, 1))
    F[a, 0], F[b, 0] = best[2], best[3]
    cert = audit_profile(game, F, tol=tol)
    return GapSearch(best[0], best[1], (best[2], best[3]), (float(ub[a]), float(ub[b])), levels,
                     first[0], first[1], len(cache), cert)  # fmt: skip


def price_of_lying(game: Game, profile: Sequence[int]) -> dict[str, float]:
    """Metrics at truthful play (``truthful_<metric>``) and at ``profile`` (``learned_<metric>``),
    the welfare ratio ``price_of_lying`` = truthful / learned (fair share: ``total`` throughput;
    auctions: ``welfare``), and each agent's TRUE gain ``gain_<i>`` (utility units).

    :param game: the game (its learners and strategy grid)
    :param profile: strategy indices
    :returns: metric name -> value
    """
    p = np.asarray(profile, dtype=int)
    t_m, l_m = game.metrics(game.truthful_profile()), game.metrics(p)
    out = {f"truthful_{k}": v for k, v in t_m.items()} | {f"learned_{k}": v for k, v in l_m.items()}
    key = "total" if "total" in t_m else "welfare"
    out["price_of_lying"] = t_m[key] / l_m[key] if l_m[key] > 0 else float("inf")
    ut, ul = game.utilities(game.truthful_profile()), game.utilities(p)
    for i in range(game.n):
        out[f"gain_{i}"] = float(ul[i] - ut[i])
    return out
