"""The marketsim pytest plugin (entry point ``pytest11``: loaded automatically wherever marketsim
is installed).

* ``--marketsim-budget {fast,default,thorough}``: the misreport-search budget of the ``incentive``
  fixture (default ``fast``).
* ``incentive`` fixture: the assertions of :mod:`marketsim.market.testing` with that budget bound, e.g.
  ``incentive.assert_strategyproof("my-rule", [(W, m)])``.
* ``registered_mechanisms`` fixture: ``family -> sorted names`` of every installed plugin.

Importing this module is cheap (it sits outside :mod:`marketsim.market.testing`): marketsim is imported
only when a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_BUDGETS = ("fast", "default", "thorough")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--marketsim-budget`` (pytest hook).

    :param parser: pytest's option parser
    """
    group = parser.getgroup("marketsim", "marketsim incentive checks")
    group.addoption(
        "--marketsim-budget",
        choices=_BUDGETS,
        default="fast",
        help="misreport search budget of the `incentive` fixture (default: fast)",
    )


class IncentiveChecks:
    """What the ``incentive`` fixture gives a test: the :mod:`marketsim.market.testing` assertions, with this
    run's misreport-search ``budget`` (``--marketsim-budget``) as the default of
    :meth:`assert_strategyproof`.

    Attributes: ``budget`` (``"fast"``, ``"default"`` or ``"thorough"``), ``IncentiveViolation``
    (the exception every assertion raises). Also forwarded unchanged from :mod:`marketsim.market.testing`:
    ``assert_envy_free``, ``assert_sharing_incentive``, ``assert_individually_rational``,
    ``assert_budget_balanced``, ``assert_no_counterexample``, ``auction_instance``,
    ``FairShareInstance`` and ``AuctionInstance``.

    :param budget: the default search budget: ``"fast"``, ``"default"`` or ``"thorough"``
    """

    def __init__(self, budget: str) -> None:
        import marketsim.market.testing as mt

        self.budget = budget
        self._mt = mt
        self.IncentiveViolation = mt.IncentiveViolation

    def assert_strategyproof(self, mechanism: str | Callable[..., Any], instances: Any, **kw: Any) -> Any:
        """:func:`marketsim.market.testing.assert_strategyproof` with this run's budget (a ``budget=`` keyword
        overrides it). ``mechanism``: a registered name or a fair-share callable; ``instances``: an
        iterable of ``(W, m)`` pairs, :class:`marketsim.market.testing.FairShareInstance` or
        :class:`marketsim.market.testing.AuctionInstance`; ``kw``: ``dims`` (``["weight"]`` searches the
        weight), ``direction``, ``rel_tol``, ``agents``, ``seed``. Returns every audit result;
        raises ``IncentiveViolation`` naming the lie and the gain.

        :param mechanism: a registered name or a fair-share callable
        :param instances: the instances to audit
        :param kw: keywords of :func:`marketsim.market.testing.assert_strategyproof`
        :returns: every audit result
        """
        __tracebackhide__ = True  # pytest: show the violation, not this library's source
        kw.setdefault("budget", self.budget)
        return self._mt.assert_strategyproof(mechanism, instances, **kw)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("assert_") or name in ("auction_instance", "FairShareInstance", "AuctionInstance"):
            return getattr(self._mt, name)
        raise AttributeError(name)


@pytest.fixture(scope="session")
def incentive(request: pytest.FixtureRequest) -> IncentiveChecks:
    """Incentive-property assertions (strategy-proofness, IR, envy-freeness, sharing incentive,
    budget balance) using ``--marketsim-budget``: an :class:`IncentiveChecks`. Session-scoped and
    stateless, so it can be used in hypothesis ``@given`` tests::

        def test_my_rule_is_strategyproof(incentive):
            incentive.assert_strategyproof("my-rule", [([[1, 2], [1, 5]], [1, 1])])

    :param request: pytest's fixture request (pytest passes it)
    :returns: the assertions with this run's budget
    """
    return IncentiveChecks(request.config.getoption("--marketsim-budget"))


@pytest.fixture(scope="session")
def registered_mechanisms() -> dict[str, list[str]]:
    """``{"fair-share": [...], "auction": [...]}``: every mechanism the installed plugins register."""
    from marketsim.market import registry

    return {fam: registry.names(fam) for fam in registry.FAMILIES}
