"""Incentive audit layer: misreport auditor, property metrics, controls and the claims ledger.

* :mod:`market.audit.target` — the adapter protocol (:class:`AuditTarget`, :class:`Dimension`,
  :class:`Probe`, :class:`BaseTarget`).
* :mod:`market.audit.search` — :func:`audit`, :func:`audit_all`, :func:`audit_instances`,
  :func:`summarize`, :func:`wilson_interval`.
* :mod:`market.audit.fairshare` — adapters for fair-share allocators (rows and tenants).
* :mod:`market.audit.controls` — first-price / second-price / posted-price auctions, the
  max-throughput control and :class:`SealedBidTarget`.
* :mod:`market.audit.metrics` — IR, budget balance, EF, SI, PE, gain-as-you-contribute.
* :mod:`market.audit.claims` — the claims ledger (:func:`run_claims`, :func:`to_frame`,
  :func:`to_markdown`, :func:`to_records`, :func:`recheck_witness`); OEF claims in
  :mod:`market.oef.claims`.
* :mod:`market.audit.instances` — :func:`random_instance`, :class:`FairShareInstance`.

This package is the stable public API for plugin authors (``docs/plugins.md``): import what a
claim or an auction adapter needs from ``market.audit`` itself — :func:`register_claim`,
:class:`ClaimContext`, :class:`Measurement`, :class:`FairShareTarget`, :func:`random_instance`,
:class:`AuditConfig`, :func:`audit`, :class:`Dimension` — not from its submodules, whose layout
may change.
"""

from __future__ import annotations

from market.audit.claims import (
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
from market.audit.controls import SealedBidTarget, first_price, max_throughput, posted_price, second_price
from market.audit.fairshare import FairShareTarget, TenantTarget
from market.audit.instances import SIZES, FairShareInstance, random_instance
from market.audit.metrics import (
    budget_balance_violation,
    contribution_violation,
    envy_violation,
    fair_share_report,
    ir_violation,
    pe_violation,
    si_violation,
)
from market.audit.search import (
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
from market.audit.target import AuditTarget, BaseTarget, Dimension, Probe

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
