"""Incentive audit layer: misreport auditor, property metrics, controls and the claims ledger.

* :mod:`marketsim.market.audit.target` — the adapter protocol (:class:`AuditTarget`, :class:`Dimension`,
  :class:`Probe`, :class:`BaseTarget`).
* :mod:`marketsim.market.audit.search` — :func:`audit`, :func:`audit_all`, :func:`audit_instances`,
  :func:`summarize`, :func:`wilson_interval`.
* :mod:`marketsim.market.audit.fairshare` — adapters for fair-share allocators (rows and tenants).
* :mod:`marketsim.market.audit.controls` — first-price / second-price / posted-price auctions, the
  max-throughput control and :class:`SealedBidTarget`.
* :mod:`marketsim.market.audit.metrics` — IR, budget balance, EF, SI, PE, gain-as-you-contribute.
* :mod:`marketsim.market.audit.claims` — the claims ledger (:func:`run_claims`, :func:`to_frame`,
  :func:`to_markdown`, :func:`to_records`, :func:`recheck_witness`); OEF claims in
  :mod:`marketsim.market.oef.claims`.
* :mod:`marketsim.market.audit.instances` — :func:`random_instance`, :class:`FairShareInstance`.

This package is the stable public API for plugin authors (``docs/plugins.md``): import what a
claim or an auction adapter needs from ``marketsim.market.audit`` itself — :func:`register_claim`,
:class:`ClaimContext`, :class:`Measurement`, :class:`FairShareTarget`, :func:`random_instance`,
:class:`AuditConfig`, :func:`audit`, :class:`Dimension` — not from its submodules, whose layout
may change.
"""

from __future__ import annotations

from marketsim.market.audit.claims import (
    Claim,
    ClaimContext,
    ClaimResult,
    Measurement,
    recheck_witness,
    register_claim,
    register_witness_checker,
    run_claims,
    to_frame,
    to_markdown,
    to_records,
)
from marketsim.market.audit.controls import SealedBidTarget, first_price, max_throughput, posted_price, second_price
from marketsim.market.audit.fairshare import FairShareTarget, TenantTarget
from marketsim.market.audit.instances import SIZES, FairShareInstance, random_instance
from marketsim.market.audit.metrics import (
    budget_balance_violation,
    contribution_violation,
    envy_violation,
    fair_share_report,
    ir_violation,
    pe_violation,
    si_violation,
)
from marketsim.market.audit.search import (
    AuditConfig,
    AuditResult,
    agent_table,
    audit,
    audit_all,
    audit_instances,
    evaluate_misreport,
    summarize,
    wilson_interval,
)
from marketsim.market.audit.target import AuditTarget, BaseTarget, Dimension, Probe

__all__ = [
    "AuditConfig",
    "AuditResult",
    "AuditTarget",
    "BaseTarget",
    "Claim",
    "ClaimContext",
    "ClaimResult",
    "Dimension",
    "FairShareInstance",
    "FairShareTarget",
    "Measurement",
    "Probe",
    "SIZES",
    "SealedBidTarget",
    "TenantTarget",
    "agent_table",
    "audit",
    "audit_all",
    "audit_instances",
    "budget_balance_violation",
    "contribution_violation",
    "envy_violation",
    "evaluate_misreport",
    "fair_share_report",
    "first_price",
    "ir_violation",
    "max_throughput",
    "pe_violation",
    "posted_price",
    "random_instance",
    "recheck_witness",
    "register_claim",
    "register_witness_checker",
    "run_claims",
    "second_price",
    "si_violation",
    "summarize",
    "to_frame",
    "to_markdown",
    "to_records",
    "wilson_interval",
]
