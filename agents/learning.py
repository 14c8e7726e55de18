"""Learning bidders inside the Mesa :class:`~marketsim.agents.auction.AuctionModel`.

A bidder bids once per run, so an auction population learns across repeated EPISODES of the same
instance: in every episode each learning bidder samples a misreport factor of one reportable
dimension (default ``value_scale``) from its Hedge weights, the episode runs as an ordinary
:class:`~marketsim.agents.auction.AuctionModel` (bidder agents, auctioneer agent, slot by slot), and then
every learner gets full-information feedback: for each factor of its grid the mechanism is replayed
with that bidder's report replaced (the others' reports of the episode and the episode's mechanism
seed fixed) and the bidder's TRUE surplus is read off. Weights are updated as
``w_f <- w_f · exp(eta · (u_f − max u) / max(1, max |u|))``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from marketsim.agents.auction import AuctionModel, BidStrategy
from marketsim.market.auction.market import AuctionMarket, decisions_by_id, run_market
from marketsim.market.errors import InputError, check_int, check_positive

__all__ = ["EpisodeHedge", "learn_in_episodes"]


@dataclass
class EpisodeHedge:
    """Hedge weights over report factors for the ``learners`` (job ids; default every bidder) of
    ``market`` under ``mechanism``. ``grid``: factors of ``dimension`` (must contain 1 and lie
    inside the market's bounds for every learner).

    :param market: the auction instance
    :param mechanism: one of ``market.mechanisms()``
    :param grid: report factors (> 0, 1 = truth included)
    :param dimension: the misreport dimension the factors scale, e.g. ``"value_scale"``
    :param eta: the Hedge learning rate, > 0
    :param learners: the learning bidders' job ids; ``None``: every bidder
    :param weights: job id -> initial weights over ``grid``; missing: uniform
    :raises InputError: an unknown mechanism, learner or dimension, or a grid without 1 or out of bounds
    """

    market: AuctionMarket
    mechanism: str
    grid: Sequence[float]
    dimension: str = "value_scale"
    eta: float = 1.0
    learners: Sequence[int] | None = None
    weights: dict[int, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mechanism not in self.market.mechanisms():
            raise InputError("mechanism", self.mechanism, f"must be one of {list(self.market.mechanisms())}")
        self.grid = np.asarray(sorted({float(f) for f in self.grid}), dtype=float)
        if not np.any(self.grid == 1.0) or (self.grid <= 0).any():
            raise InputError("grid", self.grid.tolist(), "must be positive factors that include 1 (truth)")
        check_positive("eta", self.eta)
        self.bids = {int(b.job_id): b for b in self.market.bids()}
        ids = list(self.bids) if self.learners is None else [int(i) for i in self.learners]
        for i in ids:
            if i not in self.bids:
                raise InputError("learners", i, "is not a job id of the instance")
            dims = {d.name: d for d in self.market.dimensions(self.bids[i])}
            if self.dimension not in dims:
                raise InputError("dimension", self.dimension, f"is not reportable for job {i}: {sorted(dims)}")
            d = dims[self.dimension]
            if self.grid.min() < d.lower - 1e-12 or self.grid.max() > d.upper + 1e-12:
                raise InputError("grid", self.grid.tolist(), f"must lie in [{d.lower}, {d.upper}] for job {i}")
        self.learners = ids
        for i in ids:
            self.weights.setdefault(i, np.full(self.grid.size, 1.0 / self.grid.size))

    def strategies(self, rng: np.random.Generator) -> dict[int, BidStrategy]:
        """This episode's strategies: a factor per learner sampled from its weights (in id order).

        :param rng: the random generator of the draws
        :returns: job id -> the learner's strategy for the episode
        """
        out = {}
        for i in self.learners:  # type: ignore[union-attr]
            f = float(self.grid[int(rng.choice(self.grid.size, p=self.weights[i]))])
            out[i] = BidStrategy({} if f == 1.0 else {self.dimension: f}, name=f"hedge:{f:g}")
        return out

    def counterfactuals(self, model: AuctionModel, job_id: int) -> np.ndarray:
        """TRUE surplus of ``job_id`` for every grid factor, the others' episode reports fixed.

        :param model: the finished episode
        :param job_id: a learner
        :returns: (len(grid),) TRUE surplus per factor, currency
        """
        others = [b.report for b in model.bidders.values() if b.report is not None and b.job_id != job_id]
        bid = self.bids[job_id]
        out = []
        for f in self.grid:
            rep = bid if f == 1.0 else self.market.misreport(bid, {self.dimension: float(f)})
            dec = decisions_by_id(run_market(self.market, self.mechanism, [*others, rep], seed=model.mechanism_seed))
            out.append(float(self.market.true_surplus(bid, rep, dec.get(job_id))))
        return np.array(out)

    def update(self, model: AuctionModel) -> dict[int, np.ndarray]:
        """Hedge step for every learner after an episode; returns the counterfactual surpluses.

        :param model: the finished episode
        :returns: job id -> its surplus per grid factor
        """
        cf = {}
        for i in self.learners:  # type: ignore[union-attr]
            u = self.counterfactuals(model, i)
            w = self.weights[i] * np.exp(self.eta * (u - u.max()) / max(1.0, float(np.abs(u).max())))
            self.weights[i] = w / w.sum()
            cf[i] = u
        return cf


def _argmax_truth_first(values: np.ndarray, truth: int) -> int:
    """Index of the largest value; the truthful index wins ties (uniform weights read as truth)."""
    return truth if values[truth] >= values.max() - 1e-12 else int(np.argmax(values))


def learn_in_episodes(
    market: AuctionMarket,
    mechanism: str,
    *,
    episodes: int = 50,
    grid: Sequence[float] = (0.5, 0.71, 1.0, 1.41, 2.0),
    dimension: str = "value_scale",
    eta: float = 1.0,
    learners: Sequence[int] | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, EpisodeHedge]:
    """Run ``episodes`` AuctionModels of ``market`` under ``mechanism`` with Hedge-learning bidders.
    Returns one row per (episode, learner): the factor played, its TRUE surplus in the episode (and
    the same from the replay), the best factor in hindsight and its surplus, the truthful
    surplus, and the learner's modal factor and weight after the update (truth wins ties); and
    the learner.

    :param market: the auction instance
    :param mechanism: one of ``market.mechanisms()``
    :param episodes: the number of episodes, >= 1
    :param grid: report factors (> 0, 1 included)
    :param dimension: the misreport dimension the factors scale
    :param eta: the Hedge learning rate, > 0
    :param learners: the learning bidders' job ids; ``None``: every bidder
    :param seed: the seed of the factor draws and of the episodes' models, >= 0
    :param progress: called as ``progress(episode, episodes)`` after each episode; ``None``: silent
    :returns: ``(frame, learner)``: the per-(episode, learner) rows and the :class:`EpisodeHedge`
    """
    episodes = check_int("episodes", episodes, minimum=1)
    learner = EpisodeHedge(market, mechanism, grid, dimension, eta, learners)
    seeds = np.random.SeedSequence(check_int("seed", seed, minimum=0)).spawn(2)
    pick = np.random.default_rng(seeds[0])
    model_seeds = seeds[1].spawn(episodes)
    rows: list[dict[str, Any]] = []
    for e in range(episodes):
        strategies = learner.strategies(pick)
        model = AuctionModel(market, mechanism, strategies, rng=model_seeds[e]).run()
        cf = learner.update(model)
        truth = int(np.flatnonzero(learner.grid == 1.0)[0])
        for i in learner.learners:  # type: ignore[union-attr]
            played = float(strategies[i].params.get(dimension, 1.0))
            rows.append(
                {"episode": e, "job_id": i, "factor": played, "surplus": model.bidders[i].surplus,
                 "played_counterfactual": float(cf[i][int(np.flatnonzero(learner.grid == played)[0])]),
                 "best_factor": float(learner.grid[_argmax_truth_first(cf[i], truth)]),
                 "best_surplus": float(cf[i].max()),
                 "mode_factor": float(learner.grid[_argmax_truth_first(learner.weights[i], truth)]),
                 "mode_weight": float(learner.weights[i].max()),
                 "truthful_surplus": float(cf[i][truth])}
            )  # fmt: skip
        if progress is not None:
            progress(e + 1, episodes)
    return pd.DataFrame(rows), learner
