"""Learning bidders inside the Mesa AuctionModel (agents/learning.py): Hedge across episodes,
full-information feedback from replays of the episode with one report changed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketsim.agents.learning import EpisodeHedge, learn_in_episodes
from marketsim.market.errors import InputError


def _market():
    from marketsim.market.eris.market import make_market

    return make_market({"R": 4, "I": 8, "T": 10}, np.random.default_rng(0))


def test_antman_bidder_learns_to_inflate_into_the_guaranteed_class() -> None:
    """AntMan classes a job 'resource-guarantee' by its REPORTED value scale: bidder 1 (tau 1.42,
    just under the 1.5 threshold) learns to report 1.41x, completes and gains; inside Mesa the
    played strategy's surplus equals the replay's (same mechanism seed), so the feedback is exact."""
    m = _market()
    first = int(m.bids()[0].job_id)
    traj, learner = learn_in_episodes(m, "antman", episodes=15, eta=2.0, learners=[first, first + 1], seed=1)
    mine = traj[traj["job_id"] == first]
    last = mine.iloc[-1]
    assert last["mode_factor"] > 1.0
    w = learner.weights[first]
    assert w[learner.grid > 1.0].sum() > 0.9  # 1.41 and 2 both cross the threshold: they tie
    assert mine["surplus"].tail(5).mean() > mine["truthful_surplus"].tail(5).mean()
    np.testing.assert_allclose(traj["surplus"], traj["played_counterfactual"], rtol=1e-9, atol=1e-9)
    tau = m.bids()[0].utility.gamma1 / 3000.0
    assert tau < 1.5 <= tau * last["mode_factor"]


def test_eris_bidders_never_find_a_better_report() -> None:
    """Eris' prices do not depend on one's own bid: in every episode truth is a best response in
    hindsight for every learner, so the learners never leave truth."""
    traj, _ = learn_in_episodes(_market(), "eris", episodes=6, eta=2.0, seed=2)
    assert (traj["best_surplus"] <= traj["truthful_surplus"] + 1e-6 * traj["truthful_surplus"].abs().clip(1)).all()
    assert (traj.groupby("job_id")["mode_factor"].last() == 1.0).all()


def test_episodes_are_deterministic() -> None:
    a, _ = learn_in_episodes(_market(), "tiresias", episodes=3, learners=[1, 2], seed=5)
    b, _ = learn_in_episodes(_market(), "tiresias", episodes=3, learners=[1, 2], seed=5)
    pd.testing.assert_frame_equal(a, b)


def test_bad_inputs_name_the_field() -> None:
    m = _market()
    with pytest.raises(InputError, match="grid"):
        EpisodeHedge(m, "eris", [0.5, 2.0])
    with pytest.raises(InputError, match="grid"):
        EpisodeHedge(m, "eris", [0.01, 1.0])
    with pytest.raises(InputError, match="learners"):
        EpisodeHedge(m, "eris", [0.5, 1.0], learners=[999])
    with pytest.raises(InputError, match="dimension"):
        EpisodeHedge(m, "eris", [0.5, 1.0], dimension="nope")
    with pytest.raises(InputError, match="episodes"):
        learn_in_episodes(m, "eris", episodes=0)
