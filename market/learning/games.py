"""The games the learning dynamics play: a registered mechanism, the TRUE types, a grid of report
factors and the TRUE utility of every profile (:class:`FairShareGame`, :class:`AuctionGame`).

They live apart from :mod:`marketsim.market.learning.dynamics` (which re-exports them) so that
:mod:`marketsim.market.learning.certificates` can use them without an import cycle between the two.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from marketsim.market.audit.fairshare import resolve_fair_share
from marketsim.market.audit.metrics import envy_violation, si_violation
from marketsim.market.errors import InputError, as_float_array, check_int, check_positive

__all__ = ["Game", "FairShareGame", "AuctionGame", "default_grid"]


def default_grid(points: int = 13, low: float = 0.25, high: float = 4.0) -> np.ndarray:
    """Log-spaced report factors from ``low`` to ``high`` that always include 1 (truth).

    :param points: grid points, >= 2 (1 is added when missing)
    :param low: the smallest factor, in (0, 1)
    :param high: the largest factor, > 1
    :returns: the sorted factors
    :raises InputError: a bad count or ``not low < 1 < high``
    """
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
        """Welfare / revenue / fairness figures at ``profile`` (TRUE types).

        :param profile: one strategy index per agent
        :returns: figure name -> value
        """

    @abstractmethod
    def with_grid(self, grid: Any) -> Game:
        """The same game over another factor grid.

        :param grid: report factors (must contain 1); ``None``: :func:`default_grid`
        :returns: the new game
        """

    @property
    def S(self) -> int:
        """Strategies per learner."""
        return int(len(self.strategies))

    def truthful_profile(self) -> np.ndarray:
        """Everyone truthful."""
        return np.full(self.n, self.truth_index, dtype=int)

    def utilities(self, profile: Sequence[int]) -> np.ndarray:
        """TRUE utility of every agent at ``profile`` (cached).

        :param profile: one strategy index per agent
        :returns: (n,) utilities
        """
        key = tuple(int(s) for s in profile)
        hit = self._cache.get(key)
        if hit is None:
            hit = np.asarray(self._evaluate(self.strategies[np.asarray(key, dtype=int)]), dtype=float)
            self._cache[key] = hit
            self.evaluations += 1
        return hit

    def deviations(self, profile: Sequence[int], agent: int) -> np.ndarray:
        """TRUE utility of ``agent`` for each of its strategies, others fixed at ``profile``.

        :param profile: one strategy index per agent
        :param agent: the deviating agent's index
        :returns: (S,) utilities
        """
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

    :param mechanism: a registered fair-share name or callable
    :param W: (n, k) TRUE speedups, k >= 2
    :param m: (k,) GPUs per type
    :param weights: (n,) priorities, or ``None``
    :param caps: (n,) most GPUs per row, or ``None``
    :param options: extra keywords of the mechanism
    :param grid: report factors (must contain 1); ``None``: :func:`default_grid`
    :param learners: the adapting tenants' indices; ``None``: all
    :raises InputError: bad ``W``/``m``, a grid without 1 or bad learner indices
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
        """The same game over another factor grid.

        :param grid: report factors (must contain 1)
        :returns: the new game
        """
        return replace(self, grid=grid)

    def reported(self, profile: Sequence[int]) -> np.ndarray:
        """Reported speedup matrix of ``profile`` (rows scaled on columns ``1..k-1``).

        :param profile: one strategy index per agent
        :returns: (n, k) reported speedups
        """
        return self._reported(self.strategies[np.asarray(profile, dtype=int)])

    def _reported(self, factors: np.ndarray) -> np.ndarray:
        F = np.ones((self.n, self.k))
        F[:, 1:] = factors
        return self.Wt * F

    def _alloc(self, factors: np.ndarray) -> np.ndarray:
        out = self._fn(self._reported(factors), self.ma, weights=self.weights, caps=self.caps, **self.options)
        return np.asarray(out.X, dtype=float)

    def allocation(self, profile: Sequence[int]) -> np.ndarray:
        """Allocation matrix X (n, k) in devices at ``profile``.

        :param profile: one strategy index per agent
        :returns: (n, k) GPUs per row and type
        """
        return self._alloc(self.strategies[np.asarray(profile, dtype=int)])

    def _evaluate(self, factors: np.ndarray) -> np.ndarray:
        return np.einsum("lj,lj->l", self.Wt, self._alloc(factors))

    def scales(self) -> np.ndarray:
        """TRUE throughput of owning every GPU (an upper bound on each tenant's utility)."""
        return self.Wt @ self.ma

    def metrics(self, profile: Sequence[int]) -> dict[str, float]:
        """``total`` TRUE throughput, max ``envy`` and ``si`` shortfall (throughput units), ``jain``.

        :param profile: one strategy index per agent
        :returns: figure name -> value
        """
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
    """Game of an online/batch auction instance (:class:`~marketsim.market.auction.market.AuctionMarket`):
    each bid is an agent reporting ``dimension`` (default ``value_scale``) times a grid factor;
    payoffs are TRUE surpluses. ``seed`` fixes randomised mechanisms' draws across profiles.

    :param market: the auction instance
    :param mechanism: one of ``market.mechanisms()``
    :param dimension: the misreport dimension the factors scale
    :param grid: report factors (must contain 1); ``None``: :func:`default_grid`
    :param learners: the adapting bids' indices; ``None``: all
    :param seed: the mechanism's seed
    :raises InputError: not an auction market, an unknown mechanism or dimension, no bids
    """

    market: Any = None
    mechanism: str = ""
    dimension: str = "value_scale"
    grid: Any = None
    learners: Sequence[int] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        from marketsim.market.auction.market import AuctionMarket

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
        """The same game over another factor grid.

        :param grid: report factors (must contain 1)
        :returns: the new game
        """
        return replace(self, grid=grid)

    def _run(self, factors: np.ndarray) -> tuple[list[Any], list[Any]]:
        from marketsim.market.auction.market import run_market

        reports = [
            b if f[0] == 1.0 else self.market.misreport(b, {self.dimension: float(f[0])})
            for b, f in zip(self.bids, factors, strict=True)
        ]
        return reports, run_market(self.market, self.mechanism, reports, self.seed)

    def _evaluate(self, factors: np.ndarray) -> np.ndarray:
        from marketsim.market.auction.market import decisions_by_id

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
        """The market's own run metrics (``welfare``, ``revenue``, ``utility``, ``admission_rate``...).

        :param profile: one strategy index per agent
        :returns: metric name -> value
        """
        reports, decs = self._run(self.strategies[np.asarray(profile, dtype=int)])
        return {k: float(v) for k, v in self.market.metrics(decs, reports).items()}
