"""Learning agents and equilibrium analysis: strategic populations that adapt their reports.

* :mod:`marketsim.market.learning.bayesian`: evolution-strategy learning of bid functions in Bayesian
  sealed-bid auctions (symmetric or bidder classes), with the registries of
  :mod:`marketsim.market.learning.payments` (first, second, all-pay, posted price; reserve) and
  :mod:`marketsim.market.learning.distributions` (uniform, power, scipy.stats), and BNE references from
  :mod:`marketsim.market.learning.bne` (quadrature; asymmetric first price by shooting).
* :mod:`marketsim.market.learning.dynamics`: best-response, Hedge and EXP3 dynamics over report-factor grids
  for fair-share allocators, with an epsilon-equilibrium certificate and price-of-lying metrics.
* :mod:`marketsim.market.learning.continuous`: best responses in continuous report space (the audit's best lie).
* :mod:`marketsim.market.learning.certificates`: epsilon re-measured at a reported profile (or against
  no-regret play) by the audit's own search; "certified" only when it is within the tolerance.
"""

from marketsim.market.learning.bayesian import (
    BidFunction,
    BidLearningResult,
    batch_utilities,
    bne_first_price,
    expected_revenue,
    learn_bid_function,
)

__all__ = [
    "BidFunction",
    "BidLearningResult",
    "batch_utilities",
    "bne_first_price",
    "expected_revenue",
    "learn_bid_function",
]
