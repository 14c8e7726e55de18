"""Honest equilibrium certificates: epsilon re-measured at the profile a learning run reports, by
the audit's own search over every report the input validator accepts.

A learning run (best responses on a grid, continuous best responses, Hedge, EXP3, Hedge bidders in
episodes) ends at a profile (the final one, or the most-played one for no-regret play) or at an
empirical distribution of play. Grid certificates only compare it with grid reports. Here each
learner instead runs :func:`marketsim.market.audit.search.audit` (default :data:`CERTIFY_SEARCH`: the
``AuditConfig()`` that ``marketsim audit`` uses: per-dimension grids, zoom next to the truth, tails
out to the validator's limits, joint Latin-hypercube samples, probes, Nelder-Mead refinement and
the boundary walk) against the others' reports at that profile:

* :class:`ProfileTarget` (fair share): the others report a given matrix;
* :class:`AuctionProfileTarget` (online auctions): the others submit given bids;
* :class:`PlayTarget`: the deviator commits to one report against a distribution of the others'
  reports (a coarse-correlated-equilibrium deviation); its utility is the expectation.

:func:`audit_profile` and :func:`audit_play` return a :class:`Certificate`: the largest gain found
(relative to the learner's utility at the profile, or in play), who deviates, from which report to
which, and ``certified`` only when that epsilon is within ``tol``. A search finds lies, it cannot
prove their absence: a certified epsilon is a lower bound on the exact one that the audit's search
could not push above ``tol``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.auction.market import decisions_by_id, run_market
from marketsim.market.audit.fairshare import FairShareTarget
from marketsim.market.audit.online import OnlineAuctionTarget
from marketsim.market.audit.search import AuditConfig, audit, relative
from marketsim.market.audit.target import BaseTarget, Dimension, Probe
from marketsim.market.errors import InputError, as_float_array, check_positive
from marketsim.market.learning.games import AuctionGame, FairShareGame

__all__ = [
    "CERTIFY_SEARCH",
    "Certificate",
    "ProfileTarget",
    "AuctionProfileTarget",
    "PlayTarget",
    "audit_profile",
    "audit_play",
    "audit_fair_share_profile",
]

#: the audit's default search (what ``marketsim audit`` runs), used for every certificate
CERTIFY_SEARCH = AuditConfig()


@dataclass
class ProfileTarget(FairShareTarget):
    """A fair-share audit target whose agents other than the deviator report ``reports`` (n, k),
    rows normalised by column 0 like ``W``; the deviator's report is its TRUE row times its factors,
    and every utility is TRUE (``W``).

    :param mechanism: a registered fair-share name or a callable with the fair-share signature
    :param W: (n, k) TRUE speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0, or ``None``
    :param caps: (n,) most GPUs a row can use at once, or ``None``
    :param options: extra keywords passed to the mechanism
    :param factor_bounds: ``(low, high)`` search box of every speedup factor
    :param weight_claims: add a ``"weight"`` factor dimension (out of the paper's scope)
    :param n_arbitrary: random report vectors tried as ``ARBITRARY`` probes
    :param copy_others: try copying every other row's report
    :param max_speedup: the largest reported normalised speedup
    :param dimension_bounds: dimension name -> ``(low, high)`` overriding ``factor_bounds``
    :param fast: search on the mechanism's registered screen and confirm family bests with the mechanism
    :param reports: (n, k) the others' reports, normalised like ``W``
    :param name: the target's name in results
    :param cache_size: the most cached report utilities
    """

    reports: Any = None

    def __post_init__(self) -> None:
        self.fast = False  # the warm-started screen assumes truthful others
        super().__post_init__()
        R = as_float_array("reports", self.reports, shape=self.Wt.shape, positive=True)
        self._R = R / R[:, :1]

    def profile(self, agent: Hashable, report: tuple[tuple[float, ...], float | None]) -> tuple[np.ndarray, Any]:
        Wr, weights = super().profile(agent, report)
        R = self._R.copy()
        R[int(agent)] = Wr[int(agent)]
        return R, weights


@dataclass
class AuctionProfileTarget(OnlineAuctionTarget):
    """An online-auction audit target whose bidders other than the deviator submit ``others``
    (``{job_id: report}``; missing ids bid truthfully).

    :param market: the auction instance
    :param mechanism: one of ``market.mechanisms()``
    :param bidders: the deviating bids' job ids; ``None``: every bid
    :param seed: the mechanism's seed
    :param others: job id -> the others' reports (missing ids bid truthfully)
    :param name: the target's name in results
    :param cache_size: the most cached report utilities
    """

    others: Mapping[int, Any] | None = None

    def outcome(self, agent: Hashable, report: Any) -> tuple[Any, Any]:
        aid = int(agent)
        given = self.others or {}
        reports = [report if jid == aid else given.get(jid, b) for jid, b in self._bids.items()]
        decs = decisions_by_id(run_market(self.market, self.mechanism, reports, self.seed))
        return report, decs.get(aid)


@dataclass
class PlayTarget(BaseTarget):
    """The deviator commits to one report against a distribution of the others' reports:
    ``targets`` is a list of ``(probability, target)``, each target holding one profile of the
    others' reports (all built for the same true types, so dimensions, reports and probes are
    those of the first). Utility: the expected TRUE utility; ``evaluations`` counts mechanism runs.

    :param targets: ``(probability, target)`` pairs, one profile of the others each
    :param name: the target's name in results
    :param cache_size: the most cached report utilities
    :raises InputError: no target
    """

    targets: Sequence[tuple[float, BaseTarget]] = ()

    def __post_init__(self) -> None:
        if not self.targets:
            raise InputError("targets", [], "is empty: no play to deviate against")
        self._first = self.targets[0][1]
        self.name = getattr(self._first, "name", "play")

    def agents(self) -> Sequence[Hashable]:
        return self._first.agents()

    def dimensions(self, agent: Hashable) -> Sequence[Dimension]:
        return self._first.dimensions(agent)

    def report(self, agent: Hashable, params: Mapping[str, float]) -> Any:
        return self._first.report(agent, params)

    def report_key(self, agent: Hashable, report: Any) -> Hashable:
        return self._first.report_key(agent, report)

    def probes(self, agent: Hashable, rng: np.random.Generator) -> Sequence[Probe]:
        return self._first.probes(agent, rng)

    def in_scope(self, family: str) -> bool:
        return self._first.in_scope(family)

    def outcome(self, agent: Hashable, report: Any) -> Any:
        return report

    def utility(self, agent: Hashable, outcome: Any) -> float:
        total = 0.0
        for w, t in self.targets:
            before = t.evaluations
            total += w * float(t.evaluate(agent, outcome))
            self.evaluations += t.evaluations - before
        self.evaluations -= 1  # BaseTarget.evaluate counts this call once more
        return total


@dataclass
class Certificate:
    """Epsilon of a profile (or of play) re-measured by the audit's search.

    ``eps_rel`` / ``eps_abs``: the largest gain found over the learners (relative to the learner's
    utility at the profile / TRUE utility units; 0 when no report gains); ``agent`` the learner
    attaining it, ``utility`` its utility there, ``from_report`` its report at the profile and
    ``to_report`` the witness (report factors, or a probe's label), ``witness_family`` the audit
    family; ``per_agent`` each learner's relative epsilon; ``certified``: ``eps_rel <= tol``;
    ``evaluations`` mechanism runs; ``seconds`` wall time.

    :param eps_rel: the largest relative gain found
    :param eps_abs: the largest gain, TRUE utility units
    :param agent: the learner attaining it, or ``None``
    :param utility: its utility at the profile
    :param from_report: its report at the profile
    :param to_report: the witness report
    :param witness_family: the audit family of the witness
    :param per_agent: each learner's relative epsilon
    :param tol: the certification tolerance
    :param evaluations: mechanism runs
    :param seconds: wall time, s
    :param at_limit: the witness sits at a dimension's hard limit (the audit result's ``at_limit``)
    :param extra: further details
    """

    eps_rel: float
    eps_abs: float
    agent: int | None
    utility: float
    from_report: Any
    to_report: Any
    witness_family: str | None
    per_agent: dict[int, float]
    tol: float
    evaluations: int
    seconds: float
    at_limit: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def certified(self) -> bool:
        """Whether the audit-measured epsilon is within ``tol``."""
        return bool(self.eps_rel <= self.tol)

    @property
    def verdict(self) -> str:
        """``"certified"`` or ``"not certified"``."""
        return "certified" if self.certified else "not certified"

    def describe(self, digits: int = 6) -> str:
        """One line: who gains how much by moving from which report to which (or that nobody does).

        :param digits: significant digits
        :returns: the line
        """
        if self.agent is None:
            return "no learner gains"
        step = ""
        if not isinstance(self.from_report, str) and not isinstance(self.to_report, str):
            a, b = np.ravel(np.asarray(self.from_report, float)), np.ravel(np.asarray(self.to_report, float))
            if a.shape == b.shape:
                step = f" (max |log step| {float(np.max(np.abs(np.log(b) - np.log(a)))):.2g})"
        return (f"agent {self.agent}: {_fmt(self.from_report, digits)} -> {_fmt(self.to_report, digits)}{step} "
                f"gains {self.eps_rel:.1%}")  # fmt: skip


def _fmt(x: Any, digits: int) -> str:
    if isinstance(x, str) or x is None:
        return str(x)
    return "[" + ", ".join(f"{float(v):.{digits}g}" for v in np.ravel(np.asarray(x, dtype=float))) + "]"


def _certify(
    target: BaseTarget,
    agents: Sequence[tuple[int, Hashable]],
    current: Callable[[int], tuple[float, Any]],
    to_factors: Callable[[int, Any, Any], Any],
    *,
    tol: float,
    config: AuditConfig | None,
    seed: int,
    dimensions: Sequence[str] | None = None,
) -> Certificate:
    """Run the audit for each ``(learner, target agent)``; ``current(learner)`` gives its utility at
    the profile and its report there; gains are measured against that utility."""
    tol = check_positive("tol", tol)
    cfg = config or CERTIFY_SEARCH
    gen = np.random.default_rng(np.random.SeedSequence(int(seed)))
    t0 = time.perf_counter()
    ev0 = target.evaluations
    per: dict[int, float] = {}
    best: dict[str, Any] = {"eps_rel": 0.0, "eps_abs": 0.0, "agent": None, "utility": math.nan, "from": None,
                            "to": None, "family": None, "at_limit": False}  # fmt: skip
    for i, a in agents:
        u, rep = current(i)
        res = audit(target, a, config=cfg, rng=gen, dimensions=dimensions)
        gain = max(res.truthful_utility + res.best_gain - u, 0.0)
        if gain <= 1e-12 * max(1.0, abs(u)):
            gain = 0.0  # the search's best is the current report itself (rounding)
        rel = relative(gain, u)
        per[i] = rel
        if rel > best["eps_rel"] or best["agent"] is None and gain > 0:
            # the search's best is its witness, or the truth itself when no lie beats the truth
            best = {"eps_rel": rel, "eps_abs": gain, "agent": i, "utility": u, "from": rep,
                    "to": to_factors(i, res.witness, res.witness_report),
                    "family": res.witness_family or "TRUTH", "at_limit": res.at_limit}  # fmt: skip
    return Certificate(best["eps_rel"], best["eps_abs"], best["agent"], best["utility"], best["from"], best["to"],
                       best["family"], per, tol, target.evaluations - ev0, time.perf_counter() - t0,
                       best["at_limit"])  # fmt: skip


def _fs_to_factors(Wt: np.ndarray) -> Callable[[int, Any, Any], Any]:
    def conv(i: int, witness: Any, report: Any) -> Any:
        if witness is None:
            return [1.0] * (Wt.shape[1] - 1)  # the truth
        if isinstance(witness, dict):
            return [float(witness.get(str(j), 1.0)) for j in range(1, Wt.shape[1])]
        if isinstance(report, tuple) and report and isinstance(report[0], tuple | list):
            row = np.asarray(report[0], dtype=float)
            return (row[1:] / row[0] / Wt[i, 1:]).tolist()  # a probe's row as factors on the truth
        return str(witness)

    return conv


def audit_fair_share_profile(
    mechanism: Any,
    W: Any,
    m: Any,
    factors: Any,
    *,
    weights: Any = None,
    caps: Any = None,
    options: Mapping[str, Any] | None = None,
    learners: Sequence[int] | None = None,
    tol: float = 0.01,
    config: AuditConfig | None = None,
    seed: int = 0,
) -> Certificate:
    """Epsilon of the fair-share profile where tenant ``l`` reports its TRUE row ``W[l]`` (normalised
    by column 0) with columns ``j >= 1`` scaled by ``factors[l, j-1]``: each learner (default: all)
    runs the audit's search against the others' reports; gains are TRUE throughput.

    :param mechanism: a registered fair-share name or callable
    :param W: (n, k) TRUE speedups
    :param m: (k,) GPUs per type
    :param factors: (n, k-1) report factors of the profile
    :param weights: (n,) priorities, or ``None``
    :param caps: (n,) caps, or ``None``
    :param options: the mechanism's options
    :param learners: the rows searched (default: all)
    :param tol: relative tolerance of the verdict
    :param config: the audit's search budget (default :data:`CERTIFY_SEARCH`)
    :param seed: the search's seed
    :returns: the certificate
    """
    Wt = as_float_array("W", W, ndim=2, positive=True)
    Wt = Wt / Wt[:, :1]
    n, k = Wt.shape
    F = as_float_array("factors", factors, shape=(n, k - 1), positive=True)
    R = Wt.copy()
    R[:, 1:] *= F
    target = ProfileTarget(mechanism, W=Wt, m=m, weights=weights, caps=caps, options=dict(options or {}), reports=R)
    ids = list(range(n)) if learners is None else [int(i) for i in learners]

    def current(i: int) -> tuple[float, Any]:
        params = {str(j): float(F[i, j - 1]) for j in range(1, k)}
        return float(target.evaluate(i, target.report(i, params))), F[i].tolist()

    return _certify(target, [(i, i) for i in ids], current, _fs_to_factors(Wt), tol=tol, config=config, seed=seed)


def _check_game(game: Any) -> None:
    if not isinstance(game, FairShareGame | AuctionGame):
        raise InputError("game", type(game).__name__, "must be a FairShareGame or an AuctionGame")


def _game_factors(game: Any, profile: Any) -> np.ndarray:
    _check_game(game)
    p = np.asarray(profile)
    if p.ndim == 1 and np.issubdtype(p.dtype, np.integer):
        return game.strategies[p]
    return as_float_array("factors", profile, shape=(game.n, game.strategies.shape[1]), positive=True)


def _auction_reports(game: Any, F: np.ndarray) -> list[Any]:
    return [b if f[0] == 1.0 else game.market.misreport(b, {game.dimension: float(f[0])})
            for b, f in zip(game.bids, F, strict=True)]  # fmt: skip


def _profile_target(game: Any, F: np.ndarray) -> BaseTarget:
    if isinstance(game, FairShareGame):
        return ProfileTarget(game.mechanism, W=game.Wt, m=game.ma, weights=game.weights, caps=game.caps,
                             options=dict(game.options), reports=game._reported(F))  # fmt: skip
    if isinstance(game, AuctionGame):
        others = {int(b.job_id): r for b, r in zip(game.bids, _auction_reports(game, F), strict=True)}
        return AuctionProfileTarget(game.market, game.mechanism, seed=game.seed, others=others)
    raise InputError("game", type(game).__name__, "must be a FairShareGame or an AuctionGame")


def _agent_id(game: Any, i: int) -> Hashable:
    return int(game.bids[i].job_id) if isinstance(game, AuctionGame) else i


def _dims(game: Any) -> list[str] | None:
    # auctions: the learners' strategy space is one reported dimension (off the grid, to the
    # validator's limits); fair share: every speedup dimension is a strategy dimension
    return [game.dimension] if isinstance(game, AuctionGame) else None


def _to_factors(game: Any) -> Callable[[int, Any, Any], Any]:
    if isinstance(game, FairShareGame):
        return _fs_to_factors(game.Wt)
    return lambda i, wit, rep: (
        [1.0] if wit is None else [float(wit[game.dimension])] if isinstance(wit, dict) else str(wit)
    )


def audit_profile(
    game: Any,
    profile: Any,
    *,
    tol: float = 0.01,
    config: AuditConfig | None = None,
    seed: int = 0,
) -> Certificate:
    """Epsilon of a pure profile of ``game`` (a :class:`~marketsim.market.learning.dynamics.FairShareGame` or
    :class:`~marketsim.market.learning.dynamics.AuctionGame`; ``profile`` = strategy indices, or factors
    (n, dims) off the grid): each learner runs the audit's search (``config``, default
    :data:`CERTIFY_SEARCH`) against the others' reports at the profile, over every report the
    validator accepts (auctions: the game's reported dimension). Gains are TRUE utilities.

    :param game: a fair-share or auction game
    :param profile: strategy indices or (n, dims) factors
    :param tol: relative tolerance of the verdict
    :param config: the audit's search budget (default :data:`CERTIFY_SEARCH`)
    :param seed: the search's seed
    :returns: the certificate
    """
    F = _game_factors(game, profile)
    target = _profile_target(game, F)
    u = np.asarray(game._evaluate(F), dtype=float)

    def current(i: int) -> tuple[float, Any]:
        return float(u[i]), F[i].tolist()

    agents = [(i, _agent_id(game, i)) for i in game.learner_ids]
    return _certify(target, agents, current, _to_factors(game), tol=tol, config=config, seed=seed,
                    dimensions=_dims(game))  # fmt: skip


def audit_play(
    game: Any,
    distribution: Mapping[tuple[int, ...], float],
    *,
    tol: float = 0.01,
    config: AuditConfig | None = None,
    seed: int = 0,
) -> Certificate:
    """Epsilon of ``distribution`` (profile of ``game`` -> probability, e.g. Hedge's empirical play)
    as a coarse correlated equilibrium against EVERY report: per learner, the audit's search for
    the one fixed report with the best expected TRUE utility against the others' play, minus its
    expected utility in play, over that expected utility (relative). Exact expectations: for each
    learner the distribution is collapsed onto the others' reports (one mechanism run per distinct
    profile of the others per report searched).

    :param game: a fair-share or auction game
    :param distribution: profile -> probability
    :param tol: relative tolerance of the verdict
    :param config: the audit's search budget (default :data:`CERTIFY_SEARCH`)
    :param seed: the search's seed
    :returns: the certificate
    :raises InputError: an empty distribution
    """
    _check_game(game)
    if not distribution:
        raise InputError("distribution", distribution, "is empty: no play to certify")
    tol = check_positive("tol", tol)
    t0 = time.perf_counter()
    per: dict[int, float] = {}
    best: Certificate | None = None
    runs = 0
    for i in game.learner_ids:
        others: dict[tuple[int, ...], float] = {}
        play = 0.0
        for prof, w in distribution.items():
            key = tuple(int(s) if j != i else game.truth_index for j, s in enumerate(prof))
            others[key] = others.get(key, 0.0) + float(w)
            play += float(w) * float(game.utilities(prof)[i])
        targets = [(w, _profile_target(game, game.strategies[np.asarray(k, dtype=int)])) for k, w in others.items()]
        cert = _certify(PlayTarget(targets=targets), [(i, _agent_id(game, i))], lambda _i, u=play: (u, "play"),
                        _to_factors(game), tol=tol, config=config, seed=seed + i,
                        dimensions=_dims(game))  # fmt: skip
        runs += cert.evaluations
        per[i] = cert.eps_rel
        if best is None or cert.eps_rel > best.eps_rel:
            best = cert
    assert best is not None
    best.per_agent, best.evaluations, best.seconds = per, runs, time.perf_counter() - t0
    return best
