"""Eris (Pang et al., IEEE TMC 2024): online posted-price auction for unbiased distributed
learning over edge networks, in the paper's global-budget mode and a topology (per-link) mode.
See ``shared/spec/eris.md``. Importing this package registers ``eris``, ``tiresias``, ``antman``
and ``liquid``."""

from market.eris.baselines import BaselineOutcome, antman, liquid, tiresias
from market.eris.mechanism import ErisAuction, ErisDecision, ErisOutcome, realised_utility, realised_value, run_eris
from market.eris.prices import CR_CONSTANT, ErisState, competitive_constant, price
from market.eris.types import (
    RESOURCES,
    ErisBid,
    ErisConfig,
    ErisJob,
    ErisSchedule,
    ErisSites,
    MenuEntry,
    NetworkSpec,
    SlotPlan,
    UDLJob,
)

__all__ = [
    "BaselineOutcome",
    "antman",
    "liquid",
    "tiresias",
    "CR_CONSTANT",
    "RESOURCES",
    "ErisAuction",
    "ErisBid",
    "ErisConfig",
    "ErisDecision",
    "ErisJob",
    "ErisOutcome",
    "ErisSchedule",
    "ErisSites",
    "ErisState",
    "MenuEntry",
    "NetworkSpec",
    "SlotPlan",
    "UDLJob",
    "competitive_constant",
    "price",
    "realised_utility",
    "realised_value",
    "run_eris",
]
