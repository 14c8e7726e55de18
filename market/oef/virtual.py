"""A1: virtual users, weights by replication, and the tenant-level entry point.

A tenant ``u`` with priority ``pi_u`` and active job types ``T_u`` becomes one class per
``(u, job type)`` with weight ``omega_c = pi_u / |T_u|`` (paper §4.2.3-4.2.4). The LP sees
``copies_c`` identical rows per class (lcm of the weight denominators, gcd-reduced), or, when
that would exceed ``max_rows``, one row per class with the direct weighted constraints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, check_int
from marketsim.market.oef.types import ClassKey, SpeedupReport, TenantAllocation, VirtualUserTable

__all__ = [
    "SpeedupReport",
    "weight_fractions",
    "replication_copies",
    "build_virtual_users",
    "allocate_tenants",
]

DEFAULT_MAX_ROWS = 5000
DEFAULT_DENOMINATOR_LIMIT = 1000


def weight_fractions(weights: Sequence[Any], limit: int = DEFAULT_DENOMINATOR_LIMIT) -> list[Fraction]:
    """Weights as exact fractions: ``Fraction`` inputs are kept, others become
    ``Fraction(w).limit_denominator(limit)``.

    **Decision (beyond the spec):** if a weight would round to 0 (``w < 1/(2*limit)``), all
    non-Fraction weights are first divided by the smallest weight; the allocation depends only on
    weight ratios, so this changes nothing but keeps tiny weights usable.

    :param weights: priorities > 0 (``Fraction`` kept exact)
    :param limit: largest denominator of a converted weight, >= 1
    :returns: the weights as exact fractions
    :raises InputError: a weight <= 0 or ``limit`` < 1
    """
    check_int("weight_denominator_limit", limit, minimum=1)
    vals = list(weights)
    if not vals:
        return []
    out = [v if isinstance(v, Fraction) else Fraction(float(v)).limit_denominator(limit) for v in vals]
    if any(f <= 0 for f in out):
        scale = min(float(v) for v in vals)
        out = [v if isinstance(v, Fraction) else Fraction(float(v) / scale).limit_denominator(limit) for v in vals]
    for l, f in enumerate(out):
        if f <= 0:
            raise InputError(f"weights[{l}]", vals[l], "must be > 0")
    return out


def replication_copies(omegas: Sequence[Fraction]) -> list[int]:
    """A1 step 2: ``n_c = omega_c * lcm(denominators)``, divided by their gcd.

    :param omegas: the classes' exact weights
    :returns: rows per class (integers with gcd 1)
    """
    if not omegas:
        return []
    L = math.lcm(*(f.denominator for f in omegas))
    nums = [int(f * L) for f in omegas]
    g = math.gcd(*nums)
    return [v // g for v in nums]


def _group_reports(reports: Sequence[SpeedupReport]) -> tuple[list[str], list[ClassKey], dict[ClassKey, SpeedupReport]]:
    tenants: dict[str, None] = {}
    by_class: dict[ClassKey, SpeedupReport] = {}
    order: list[ClassKey] = []
    for r in reports:
        if not isinstance(r, SpeedupReport):
            raise InputError("reports", r, "must contain SpeedupReport objects")
        if r.key in by_class:
            raise InputError("speedup report", r.key, "is a duplicate (tenant_id, job_type) report")
        by_class[r.key] = r
        tenants.setdefault(r.tenant_id, None)
    for u in tenants:
        order.extend(c for c in by_class if c[0] == u)  # tenant order, then job-type order (first appearance)
    return list(tenants), order, by_class


def _class_weights(
    tenants: list[str], classes: list[ClassKey], weights: Mapping[str, Any] | None, limit: int
) -> dict[ClassKey, Fraction]:
    if weights is not None and not isinstance(weights, Mapping):
        raise InputError("weights", weights, "must be a mapping tenant_id -> priority")
    raw = []
    for u in tenants:
        if weights is None:
            raw.append(1)
        elif u not in weights:
            raise InputError("weights", u, "has no entry for this tenant")
        else:
            v = weights[u]
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise InputError(f"weights[{u!r}]", v, "must be a real number") from None
            if not math.isfinite(x) or x <= 0:
                raise InputError(f"weights[{u!r}]", v, "must be finite and > 0")
            raw.append(v)
    pis = dict(zip(tenants, weight_fractions(raw, limit), strict=True))
    n_types = {u: sum(1 for c in classes if c[0] == u) for u in tenants}
    return {c: pis[c[0]] / n_types[c[0]] for c in classes}


def build_virtual_users(
    reports: Sequence[SpeedupReport],
    weights: Mapping[str, Any] | None = None,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    weight_denominator_limit: int = DEFAULT_DENOMINATOR_LIMIT,
) -> VirtualUserTable:
    """A1: one class per ``(tenant, job type)`` with ``omega_c = pi_u / |T_u|``; ``copies_c``
    replicated rows when ``sum copies <= max_rows``, else one row per class and
    ``direct_weights = omega`` (float). ``W`` holds the reports as given (not normalised).

    :param reports: one speedup report per ``(tenant, job type)``
    :param weights: tenant -> priority (default 1)
    :param max_rows: most replicated rows before switching to weighted rows
    :param weight_denominator_limit: largest denominator when a weight is made exact
    :returns: the LP rows, their classes, weights and copies
    :raises InputError: reports of unequal length or non-numeric, ``max_rows`` < 1
    """
    check_int("max_rows", max_rows, minimum=1)
    tenants, classes, by_class = _group_reports(reports)
    omega = _class_weights(tenants, classes, weights, weight_denominator_limit)
    copies_list = replication_copies([omega[c] for c in classes])
    copies = dict(zip(classes, copies_list, strict=True))
    k = len(by_class[classes[0]].w) if classes else 0
    for c in classes:
        if len(by_class[c].w) != k:
            raise InputError(f"speedup report for {c}", by_class[c].w, f"must have length k={k}")
    if sum(copies_list) <= max_rows:
        row_class = tuple(c for c in classes for _ in range(copies[c]))
        direct = None
    else:
        row_class = tuple(classes)
        direct = np.array([float(omega[c]) for c in classes])
    try:
        W = np.array([[float(v) for v in by_class[c].w] for c in row_class], dtype=float).reshape(len(row_class), k)
    except (TypeError, ValueError):
        raise InputError("speedup report", [by_class[c].w for c in classes], "must contain real numbers") from None
    return VirtualUserTable(W, row_class, omega, copies, direct, tuple(classes))


def allocate_tenants(
    policy_name: str,
    reports: Sequence[SpeedupReport],
    m: Any,
    weights: Mapping[str, float] | None = None,
    caps: Mapping[Any, float] | None = None,
    **options: Any,
) -> TenantAllocation:
    """Run the fair-share policy ``policy_name`` (a registry name) on tenant reports.

    Each ``(tenant, job type)`` class is one row with weight ``pi_u / |T_u|`` (exact fractions;
    the policy replicates internally). ``m`` (k,) GPUs per type; ``weights`` maps tenant ->
    priority (default 1); ``caps`` maps a class ``(tenant, job_type)`` -- or a tenant with one
    job type -- to the most GPUs it can use at once. Returns per-class and per-tenant devices.

    :param policy_name: a registered fair-share policy
    :param reports: the tenants' speedup reports, one per ``(tenant, job type)``
    :param m: (k,) GPUs per type
    :param weights: tenant -> priority (default 1)
    :param caps: ``(tenant, job_type)`` (or a tenant with one job type) -> most GPUs it can use at once
    :param options: passed to the policy
    :returns: per-class and per-tenant fractional devices
    :raises InputError: ``caps`` not a mapping or naming an unknown class or tenant, bad reports or weights
    """
    from marketsim.market import registry

    info = registry.get(policy_name, "fair-share")
    limit = options.get("weight_denominator_limit", DEFAULT_DENOMINATOR_LIMIT)
    tenants, classes, by_class = _group_reports(reports)
    omega = _class_weights(tenants, classes, weights, limit)
    cap_vec = None
    if caps is not None:
        if not isinstance(caps, Mapping):
            raise InputError("caps", caps, "must be a mapping (tenant_id, job_type) or tenant_id -> GPUs")
        n_types = {u: sum(1 for c in classes if c[0] == u) for u in tenants}
        for key in caps:
            if isinstance(key, tuple):
                if key not in by_class:
                    raise InputError("caps", key, "names a class without a speedup report")
            elif key not in n_types:
                raise InputError("caps", key, "names a tenant without a speedup report")
            elif n_types[key] > 1:
                raise InputError("caps", key, "is a tenant with several job types; give caps per (tenant, job_type)")
        cap_vec = [caps.get(c, caps.get(c[0], np.inf)) for c in classes]
    labels = [f"speedup report for {c!r}" for c in classes]
    W_rows = [by_class[c].w for c in classes]
    m_len = len(np.atleast_1d(np.asarray(m, dtype=object)))
    for c, w in zip(classes, W_rows, strict=True):
        if len(w) != m_len:
            raise InputError(f"speedup report for {c!r}", w, f"must have length k={m_len} (one entry per GPU type)")
    alloc = info.fn(
        W_rows if classes else np.zeros((0, m_len)),
        m,
        weights=[omega[c] for c in classes],
        caps=cap_vec,
        row_labels=labels,
        **options,
    )
    X = alloc.X
    X_class = {c: X[i].copy() for i, c in enumerate(classes)}
    X_tenant: dict[str, np.ndarray] = {u: np.zeros(X.shape[1]) for u in tenants}
    for c, x in X_class.items():
        X_tenant[c[0]] = X_tenant[c[0]] + x
    W_used = np.array([[float(v) for v in w] for w in W_rows], dtype=float).reshape(len(classes), m_len)
    if options.get("normalise", True) and len(classes):
        W_used = W_used / W_used[:, :1]
    return TenantAllocation(tuple(classes), X_class, X_tenant, alloc, W_used, omega)
