"""ES equilibrium learning in symmetric Bayesian sealed-bid auctions (issue #11).

First price with i.i.d. U[0,1] values has the BNE b(v) = (n-1)/n v and expected revenue
(n-1)/(n+1); second price and a posted price have truthful (weakly) dominant strategies. The
learner starts truthful and sees only simulated TRUE utilities, so each check below fails if the
gradient estimate, the auction simulation or the update is wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

from market.audit.controls import first_price, posted_price, second_price
from market.errors import InputError
from market.learning import BidFunction, batch_utilities, bne_first_price, expected_revenue, learn_bid_function


def test_bernstein_truthful_start_is_the_identity() -> None:
    v = np.linspace(0, 3, 31)
    assert np.allclose(BidFunction.truthful(5, vmax=3.0)(v), v)
    assert BidFunction.truthful(4).factor() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("name", "fn", "opts"),
    [("first-price", first_price, {}), ("second-price", second_price, {"reserve": 0.3}),
     ("posted-price", posted_price, {"price": 0.4})],
)  # fmt: skip
def test_batch_utilities_match_the_control_auctions(name, fn, opts) -> None:
    rng = np.random.default_rng(3)
    vals = rng.random((400, 3))
    bids = vals * rng.uniform(0.5, 1.5, vals.shape)
    got = batch_utilities(name, bids[:, 0], bids[:, 1:], vals[:, 0], opts)
    want = []
    for b, v in zip(bids, vals, strict=True):
        out = fn(b, **opts)
        want.append(v[0] * out.won[0] - out.payments[0])
    assert np.allclose(got, want)


def test_first_price_learner_reaches_the_bne_n3() -> None:
    res = learn_bid_function("first-price", 3, seed=1)
    assert res.bid.l2_distance(bne_first_price(3)) <= 0.02
    assert expected_revenue("first-price", res.bid, 3) == pytest.approx(0.5, rel=0.02)
    # it really moved: the truthful start is 1/3 * E[v] ~ 0.19 away in L2
    assert BidFunction.truthful().l2_distance(bne_first_price(3)) > 0.15
    assert res.history["factor"].iloc[0] > 0.95 and res.history["factor"].iloc[-1] < 0.7


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_first_price_learner_reaches_the_bne(n: int) -> None:
    res = learn_bid_function("first-price", n, seed=1)
    assert res.bid.l2_distance(bne_first_price(n)) <= 0.02
    assert expected_revenue("first-price", res.bid, n) == pytest.approx((n - 1) / (n + 1), rel=0.02)


@pytest.mark.parametrize(("mechanism", "opts"), [("second-price", {}), ("posted-price", {"price": 0.4})])
def test_truthful_mechanisms_keep_learners_truthful(mechanism, opts) -> None:
    res = learn_bid_function(mechanism, 3, seed=2, options=opts, rounds=300)
    assert res.bid.factor() == pytest.approx(1.0, abs=0.02)


def test_a_manipulable_start_is_corrected_in_second_price() -> None:
    """Power: start at 60% shading; in second price the learner must climb back towards truth."""
    start = BidFunction(0.6 * BidFunction.truthful().coef)
    res = learn_bid_function("second-price", 3, seed=4, init=start)
    assert res.bid.factor() > 0.9


def test_learning_is_deterministic_in_the_seed() -> None:
    a = learn_bid_function("first-price", 2, seed=5, rounds=40)
    b = learn_bid_function("first-price", 2, seed=5, rounds=40)
    c = learn_bid_function("first-price", 2, seed=6, rounds=40)
    assert np.array_equal(a.bid.coef, b.bid.coef)
    assert not np.array_equal(a.bid.coef, c.bid.coef)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"mechanism": "dutch", "n": 2}, "mechanism"), ({"mechanism": "first-price", "n": 1}, "n"),
     ({"mechanism": "posted-price", "n": 2}, "options.price"),
     ({"mechanism": "first-price", "n": 2, "population": 3}, "population"),
     ({"mechanism": "first-price", "n": 2, "sigma": float("nan")}, "sigma")],
)  # fmt: skip
def test_bad_input_names_the_field(kwargs, field) -> None:
    with pytest.raises(InputError) as err:
        learn_bid_function(**kwargs)
    assert err.value.field == field
