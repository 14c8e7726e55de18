"""The marketsim pytest plugin (entry point ``pytest11``: loaded automatically wherever marketsim
is installed).

* ``--marketsim-budget {fast,default,thorough}``: the misreport-search budget of the ``incentive``
  fixture (default ``fast``).
* ``incentive`` fixture: the assertions of :mod:`market.testing` with that budget bound, e.g.
  ``incentive.assert_strategyproof("my-rule", [(W, m)])``.
* ``registered_mechanisms`` fixture: ``family -> sorted names`` of every installed plugin.

Importing this module is cheap (it sits outside :mod:`market.testing`): marketsim is imported
only when a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_BUDGETS = ("fast", "default", "thorough")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--marketsim-budget``."""
    group = parser.getgroup("marketsim", "marketsim incentive checks")
    group.addoption(
        "--marketsim-budget",
        choices=_BUDGETS,
        default="fast",
        help="misreport search budget of the `incentive` fixture (default: fast)",
    )


class IncentiveChecks:
    """The :mod:`market.testing` assertions with a fixed search ``budget``."""

    def __init__(self, budget: str) -> None:
        import market.testing as mt

        self.budget = budget
        self._mt = mt
        self.IncentiveViolation = mt.IncentiveViolation

    def assert_strategyproof(self, mechanism: str | Callable[..., Any], instances: Any, **kw: Any) -> Any:
        """:func:`market.testing.assert_strategyproof` with this run's budget (overridable)."""
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
    budget balance) using ``--marketsim-budget``. Session-scoped and stateless, so it can be used
    in hypothesis ``@given`` tests."""
    return IncentiveChecks(request.config.getoption("--marketsim-budget"))


@pytest.fixture(scope="session")
def registered_mechanisms() -> dict[str, list[str]]:
    """``{"fair-share": [...], "auction": [...]}``: every mechanism the installed plugins register."""
    from market import registry

    return {fam: registry.names(fam) for fam in registry.FAMILIES}
