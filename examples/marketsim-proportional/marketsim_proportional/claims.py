"""Claims of the example plugin, run by ``marketsim claims --paper proportional``: the verdicts come
from measurements (the auditor and a capacity check), never from this file."""

from __future__ import annotations

import numpy as np

from marketsim.market.audit import (
    AuditConfig,
    ClaimContext,
    FairShareTarget,
    Measurement,
    audit,
    random_instance,
    register_claim,
)
from marketsim.market.audit.hunt_spaces import misreport_witness

PAPER = "proportional"
FAST = AuditConfig(n_grid=6, n_zoom=2, n_tail=2, edge_steps=6, n_joint=12, refine_starts=1, refine_maxfev=30)


@register_claim(
    PAPER,
    "P1",
    "Proportional share is strategy-proof: no tenant raises its true throughput by misreporting",
    "Audit every tenant of random instances (others truthful); violation if a lie gains > 1e-7 relative.",
)
def p1(ctx: ClaimContext) -> Measurement:
    n_inst = ctx.pick(4, 20)
    bad, best, witness = 0, 0.0, None
    for _ in range(n_inst):
        inst = random_instance(ctx.rng, n=int(ctx.rng.integers(2, 5)), k=int(ctx.rng.integers(2, 4)))
        t = FairShareTarget("proportional-share", W=inst.W, m=inst.m)
        results = [audit(t, a, config=FAST, rng=ctx.rng) for a in t.agents()]
        if any(r.violated for r in results):
            bad += 1
            r = max(results, key=lambda r: r.relative_gain)
            if r.relative_gain > best:
                best = float(r.relative_gain)
                # the ledger's "misreport" witness: the independent oracles re-check it (2x and 4x resolution)
                witness = misreport_witness(t, r, reaudit=False)
    return Measurement(n_instances=n_inst, violations=bad, effect_size=best, effect="max relative gain",
                       witness=witness)  # fmt: skip


@register_claim(
    PAPER,
    "P2",
    "Proportional share is work-conserving: every GPU of every type is allocated",
    "Random instances; violation if sum_l X[l, j] differs from m_j by more than 1e-9 m_j.",
)
def p2(ctx: ClaimContext) -> Measurement:
    from marketsim.market.registry import get

    fn = get("proportional-share").fn
    n_inst = ctx.pick(20, 200)
    bad, worst = 0, 0.0
    for _ in range(n_inst):
        inst = random_instance(ctx.rng, n=int(ctx.rng.integers(1, 6)), k=int(ctx.rng.integers(1, 4)))
        X = fn(inst.W, inst.m).X
        gap = float(np.max(np.abs(X.sum(axis=0) - inst.m) / np.maximum(inst.m, 1e-12)))
        worst = max(worst, gap)
        bad += gap > 1e-9
    return Measurement(n_instances=n_inst, violations=bad, effect_size=worst, effect="max relative capacity gap")
