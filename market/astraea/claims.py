"""Astraea (Wang et al., IEEE TC'22) claims of spec §7.2 as measurements on instances built by
:func:`marketsim.market.astraea.market.make_market` (the worked example and random micro instances).

Registered: batch sharing incentive (claim 13), strategy-proofness at tenant level (Theorem 4,
claim 14) and per job, Pareto efficiency (Theorem 5, claim 15), gain-as-you-contribute fairness
(Eq. 2, claim 10), budget balance (claim 11), the practical performance ratio (> 0.6, Fig. 5) and
the Theorem 1 bounds. Every witness stores the ``make_market`` parameters and seed, so
:func:`marketsim.market.audit.claims.recheck_witness` rebuilds the instance from scratch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from marketsim.market.astraea.accounting import collective_revenue
from marketsim.market.astraea.audit import DEMAND_DIMENSIONS, AstraeaTenantTarget
from marketsim.market.astraea.market import AstraeaBid, AstraeaMarket, make_market, tenant_reports
from marketsim.market.astraea.model import allowed_workers, duration, throughput
from marketsim.market.astraea.offline import opt_exact
from marketsim.market.astraea.online import run_astraea
from marketsim.market.astraea.pricing import gap_bound, ratio_bound
from marketsim.market.auction.base import Decision
from marketsim.market.auction.market import decisions_by_id, run_market
from marketsim.market.audit.claims import ClaimContext, Measurement, register_claim, register_witness_checker
from marketsim.market.audit.online import OnlineAuctionTarget
from marketsim.market.audit.search import AuditConfig, AuditResult, audit
from marketsim.market.errors import InputError

__all__ = ["pareto_moves", "instance_params"]

PAPER = "astraea"
_REL = 1e-9
TOY_ELASTIC = {"workload": "toy", "worker_count_mode": "elastic", "horizon": 64}
TOY_FIXED = {"workload": "toy", "worker_count_mode": "fixed", "horizon": 64}


def _tol(x: float) -> float:
    return _REL * max(1.0, abs(float(x)))


def _rel(gain: float, base: float) -> float:
    """``gain / max(1, |base|)``: relative to the truthful value, finite when that is 0."""
    return float(gain) / max(1.0, abs(float(base)))


def instance_params(ctx: ClaimContext, rng: np.random.Generator, **over: Any) -> dict[str, Any]:
    """Random micro-instance parameters (2–3 tenants, both worker-count modes).

    :param ctx: the claim's context (run size)
    :param rng: the draws
    :param over: parameters to override
    :returns: :func:`marketsim.market.astraea.market.make_market` parameters
    """
    U = int(rng.integers(2, 4))
    p = {
        "workload": "micro",
        "jobs": int(rng.integers(4, ctx.pick(8, 9))),
        "servers": int(rng.integers(U, U + 3)),
        "tenants": U,
        "utility": str(rng.choice(["linear", "convex", "mixed"])),
        "worker_count_mode": str(rng.choice(["elastic", "fixed"])),
        "horizon": 64,
    }
    p.update(over)
    return p


def _build(params: dict[str, Any], seed: int) -> AstraeaMarket:
    return make_market(params, np.random.default_rng(seed))


def _instances(ctx: ClaimContext, count: int, fixed: tuple[dict[str, Any], ...] = (), **over: Any) -> list[tuple]:
    """``[(params, seed, market)]``: the ``fixed`` instances (seed 0) then ``count`` random micro ones."""
    out = [(p, 0, _build(p, 0)) for p in fixed]
    for _ in range(count):
        p = instance_params(ctx, ctx.rng, **over)
        seed = int(ctx.rng.integers(0, 2**31 - 1))
        out.append((p, seed, _build(p, seed)))
    return out


# ---------------------------------------------------------------------------------------------
# claim 13: batch sharing incentive


def _si_gaps(m: AstraeaMarket) -> dict[int, tuple[float, float]]:
    """``{uid: (g_u shared, g_u exclusive)}`` with truthful reports."""
    g = m.tenant_revenue(run_market(m, "astraea"), m.bids())
    ex = m.exclusive_revenue(m.bids())
    return {u: (g[u], ex[u]) for u in g}


@register_witness_checker("astraea_si")
def _check_si(w: dict[str, Any]) -> bool:
    shared, excl = _si_gaps(_build(w["params"], w["seed"]))[int(w["tenant"])]
    return shared < excl - _tol(excl)


@register_claim(
    PAPER,
    "SI",
    "Batch sharing incentive (§4.1, abstract): the performance of each tenant in the shared cluster is at "
    "least the same as in its exclusive cluster partition",
    "g_u(Astraea) vs g_u of the Astraea core alone on u's exclusive quota partition (pass 2 off, same θ, λ, "
    "worker mode, job order), truthful reports; the worked example in both worker-count readings, then random "
    "micro instances; violation if g_u < g_u^excl − 1e-9·max(1,|g|) for some tenant.",
)
def claim_si(ctx: ClaimContext) -> Measurement:
    """Claim SI of Astraea: Batch sharing incentive (§4.1, abstract): the performance of each tenant in the shared
    cluster is at least the same as in its exclusive cluster partition.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(10, 120), (TOY_ELASTIC, TOY_FIXED))
    viol = pairs = ok_pairs = 0
    worst, witness = 0.0, None
    for p, seed, m in insts:
        bad = False
        for u, (g, ex) in _si_gaps(m).items():
            pairs += 1
            short = ex - g
            if short > _tol(ex):
                bad = True
                worst = max(worst, _rel(short, ex))
                # the first violation is kept: the worked example's u2 (elastic reading) when it fails
                witness = witness or {
                    "kind": "astraea_si",
                    "params": p,
                    "seed": seed,
                    "tenant": u,
                    "g_shared": g,
                    "g_exclusive": ex,
                }
            else:
                ok_pairs += 1
        viol += bad
    details = {"tenant_pairs": pairs, "tenant_pairs_pass_fraction": ok_pairs / pairs if pairs else math.nan}
    return Measurement(len(insts), viol, worst, "max (g_excl − g) / max(1,|g_excl|)", witness, details)


# ---------------------------------------------------------------------------------------------
# claim 14: strategy-proofness (tenant level and per job)


def _tenant_config(size: str) -> AuditConfig:
    if size == "small":
        return AuditConfig(n_grid=3, n_joint=6, refine_starts=0, probes=False)
    return AuditConfig(n_grid=6, n_joint=24, refine_starts=1, refine_maxfev=20, probes=True)


@register_witness_checker("astraea_tenant_misreport")
def _check_tenant(w: dict[str, Any]) -> bool:
    t = AstraeaTenantTarget(_build(w["params"], w["seed"]))
    u = int(w["tenant"])
    u0 = t.evaluate(u, t.report(u, {}))
    u1 = t.evaluate(u, tuple(tenant_reports(t.market, u, **_kw(w["misreport"]))))
    return u1 - u0 > w["tol"]


def _kw(params: dict[str, float]) -> dict[str, Any]:
    return {k: (int(round(v)) if k in ("hide_workers", "withhold") else float(v)) for k, v in params.items()}


@register_claim(
    PAPER,
    "SP",
    "Strategy-proofness (Theorem 4): tenants cannot make more profits by lying about their resource demands",
    "Tenant-level audit (marketsim.market.astraea.audit.AstraeaTenantTarget): the deviating tenant scales all its "
    "jobs' "
    "utilities (×0.25..4) and sizes (epochs ×0.5..2), delays them (0..4 h) or hides idle quota with phantom jobs "
    "(0..q_w workers), one dimension at a time and jointly; others truthful, θ frozen; utility = TRUE g_u "
    "(true values on the decided schedules, phantoms 0, minus payments, plus Eq. 2 income). Violation if a lie "
    "gains > 1e-7·max(1,|g_u|). Worked example (fixed) then random micro instances, every tenant.",
)
def claim_sp(ctx: ClaimContext) -> Measurement:
    """Claim SP of Astraea: Strategy-proofness (Theorem 4): tenants cannot make more profits by lying about their
    resource demands.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(3, 25), (TOY_FIXED,))
    cfg = _tenant_config(ctx.size)
    viol, worst, witness = 0, 0.0, None
    fam: dict[str, dict[str, float]] = {}
    nonneg = {"tenants": 0, "violated": 0}  # tenants whose truthful g_u >= 0 (no negative-utility jobs to shed)
    for p, seed, m in insts:
        t = AstraeaTenantTarget(m)
        bad = False
        for u in t.agents():
            r = audit(t, u, config=cfg, rng=ctx.rng, dimensions=DEMAND_DIMENSIONS)
            for f, fb in r.families.items():
                cell = fam.setdefault(f, {"probed": 0, "violations": 0, "max_rel_gain": 0.0})
                cell["probed"] += 1
                rel = _rel(max(fb.gain, 0.0), r.truthful_utility)
                cell["max_rel_gain"] = max(cell["max_rel_gain"], rel)
                if fb.gain > r.tol:
                    cell["violations"] += 1
            if r.truthful_utility >= 0:
                nonneg["tenants"] += 1
                nonneg["violated"] += r.in_scope_gain > r.tol
            if r.in_scope_gain > r.tol:
                bad = True
                rel = _rel(r.best_gain, r.truthful_utility)
                if witness is None or rel > worst:
                    worst, witness = rel, _lie_witness("astraea_tenant_misreport", p, seed, r, tenant=u)
                    witness["others_g_change"] = _others(t, u, r.witness)
        viol += bad
    details = {"per_family": fam, "tenants_with_nonnegative_truthful_g": nonneg}
    return Measurement(len(insts), viol, worst, "max gain / max(1,|truthful|)", witness, details)


def _lie_witness(kind: str, params: dict[str, Any], seed: int, r: AuditResult, **who: Any) -> dict[str, Any]:
    """JSON-ready witness of the best lie of audit ``r`` on the instance ``(params, seed)``."""
    return {
        "kind": kind,
        "params": params,
        "seed": seed,
        **who,
        "family": r.witness_family,
        "misreport": r.witness,
        "truthful": r.truthful_utility,
        "gain": r.best_gain,
        "tol": r.tol,
    }


def _others(t: AstraeaTenantTarget, u: int, params: Any) -> dict[str, float]:
    before = t.all_revenues(u, t.report(u, {}))
    after = t.all_revenues(u, t.report(u, params))
    return {str(v): after[v] - before[v] for v in before if v != u}


@register_witness_checker("astraea_job_misreport")
def _check_job(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    t = OnlineAuctionTarget(m, "astraea", bidders=[int(w["job_id"])])
    bid = next(b for b in m.bids() if b.job_id == int(w["job_id"]))
    u0 = t.evaluate(bid.job_id, bid)
    return t.evaluate(bid.job_id, m.misreport(bid, w["misreport"])) - u0 > w["tol"]


@register_claim(
    PAPER,
    "SP-job",
    "Strategy-proofness per job (Theorem 4 read per report): a job's owner cannot gain by misreporting the job's "
    "utility, size or arrival",
    "Generic OnlineAuctionTarget on the AstraeaMarket: one random job per micro instance (all when large) scales "
    "its utility (×0.25..4), size (×0.5..2) or delays its arrival; TRUE job surplus (true utility at the true "
    "completion on the decided schedule minus payment; income is tenant-level and not counted).",
)
def claim_sp_job(ctx: ClaimContext) -> Measurement:
    """Claim SP-job of Astraea: Strategy-proofness per job (Theorem 4 read per report): a job's owner cannot gain by
    misreporting the job's utility, size or arrival.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(4, 25))
    cfg = AuditConfig(n_grid=ctx.pick(3, 6), n_joint=ctx.pick(4, 16), refine_starts=0, probes=False)
    viol, worst, witness = 0, 0.0, None
    audited = 0
    for p, seed, m in insts:
        ids = [b.job_id for b in m.bids()]
        pick = [int(ctx.rng.choice(ids))] if ctx.size == "small" else ids
        t = OnlineAuctionTarget(m, "astraea", bidders=pick)
        bad = False
        for j in pick:
            r = audit(t, j, config=cfg, rng=ctx.rng)
            audited += 1
            if r.violated:
                bad = True
                rel = _rel(r.best_gain, r.truthful_utility)
                if witness is None or rel > worst:
                    worst, witness = rel, _lie_witness("astraea_job_misreport", p, seed, r, job_id=j)
        viol += bad
    return Measurement(len(insts), viol, worst, "max gain / max(1,|truthful|)", witness, {"jobs_audited": audited})


@register_claim(
    PAPER,
    "SP-ext",
    "Framework extension of SP (outside the paper's scope): a tenant gains nothing by withholding jobs or by "
    "leaving the coalition for its exclusive partition",
    "Same tenant audit as SP on its own instances, restricted to the 'withhold' dimension (that many of its jobs, "
    "largest work first, never submitted) plus the LEAVE probe (alone on its partition: the sharing-incentive gap "
    "seen as a deviation).",
)
def claim_sp_ext(ctx: ClaimContext) -> Measurement:
    """Claim SP-ext of Astraea: Framework extension of SP (outside the paper's scope): a tenant gains nothing by
    withholding jobs or by leaving the coalition for its exclusive partition.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(3, 25), (TOY_ELASTIC,))
    cfg = AuditConfig(n_grid=ctx.pick(3, 8), n_joint=0, refine_starts=0, probes=True)
    viol, worst, witness = 0, 0.0, None
    fams = {"UP_withhold": 0, "LEAVE": 0}
    for p, seed, m in insts:
        t = AstraeaTenantTarget(m)
        bad = False
        for u in t.agents():
            r = audit(t, u, config=cfg, rng=ctx.rng, dimensions=["withhold"])
            for f in fams:
                fams[f] += f in r.families and r.families[f].gain > r.tol
            if r.out_of_scope_gain > r.tol:
                bad = True
                rel = _rel(r.best_gain, r.truthful_utility)
                if witness is None or rel > worst:
                    worst, witness = rel, _lie_witness("astraea_tenant_deviation", p, seed, r, tenant=u)
        viol += bad
    details = {"tenants_gaining_by_family": fams}
    return Measurement(len(insts), viol, worst, "max gain / max(1,|truthful|)", witness, details)


@register_witness_checker("astraea_tenant_deviation")
def _check_deviation(w: dict[str, Any]) -> bool:
    t = AstraeaTenantTarget(_build(w["params"], w["seed"]))
    u = int(w["tenant"])
    u0 = t.evaluate(u, t.report(u, {}))
    lie = "LEAVE" if w["misreport"] == "LEAVE" or w["family"] == "LEAVE" else t.report(u, w["misreport"])
    return t.evaluate(u, lie) - u0 > w["tol"]


# ---------------------------------------------------------------------------------------------
# claim 16: individual rationality; claim 12: no free-riding


@register_claim(
    PAPER,
    "IR",
    "Admission control / individual rationality (Eq. 7, Fig. 12, claim 16): every admitted job's ideal revenue "
    "exceeds its posted cost (μ_j > 0)",
    "Every admitted job of truthful runs on micro instances: μ = F_j(ι*) − posted cost (Decision.payoff) > 0. "
    "Details: share of admitted jobs whose REALISED true utility (arrival clock) minus payment is < 0.",
)
def claim_ir(ctx: ClaimContext) -> Measurement:
    """Claim IR of Astraea: Admission control / individual rationality (Eq. 7, Fig. 12, claim 16): every admitted job's
    ideal revenue exceeds its posted cost (μ_j > 0).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(20, 300), (TOY_FIXED, TOY_ELASTIC))
    viol, worst, admitted, neg = 0, 0.0, 0, 0
    witness = None
    for p, seed, m in insts:
        bids = {b.job_id: b for b in m.bids()}
        bad = False
        for d in run_market(m, "astraea"):
            if not d.admitted:
                continue
            admitted += 1
            neg += m.true_surplus(bids[d.job_id], bids[d.job_id], d) < 0
            if d.payoff <= 0:
                bad = True
                worst = max(worst, -d.payoff)
                witness = witness or {"kind": "astraea_ir", "params": p, "seed": seed, "job_id": d.job_id}
        viol += bad
    details = {"admitted": admitted, "realised_surplus_negative_fraction": neg / admitted if admitted else math.nan}
    return Measurement(len(insts), viol, worst, "max −μ of an admitted job", witness, details)


@register_witness_checker("astraea_ir")
def _check_ir(w: dict[str, Any]) -> bool:
    return decisions_by_id(run_market(_build(w["params"], w["seed"]), "astraea"))[int(w["job_id"])].payoff <= 0


def _pool_arrays(d: Decision) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(unused_w, unused_p (U, d) frozen snapshot, cost_w, cost_p (d,) per-slot costs) of a pass-2 decision."""
    return tuple(np.asarray(d.log[k], float) for k in ("unused_w", "unused_p", "cost_w", "cost_p"))  # type: ignore[return-value]


def _pooled(d: Decision) -> bool:
    return d.admitted and d.log.get("pass") == 2


def _free_rides(m: AstraeaMarket, d: Decision) -> tuple[int, int, float]:
    """(slots where pass-2 job ``d`` exceeds its owner's unused quota, of those with no positive net
    transfer to the others, total net transfer to the others) — spec claim 12."""
    u = m.cluster.tenant_index(int(d.log["tenant"]))
    uw, up, cw, cp = _pool_arrays(d)
    aw, ap = uw.sum(axis=0), up.sum(axis=0)
    own = np.divide(uw[u], aw, out=np.zeros_like(cw), where=aw > 0) * cw
    own += np.divide(up[u], ap, out=np.zeros_like(cp), where=ap > 0) * cp
    net = cw + cp - own
    excess = (int(d.log["n_workers"]) > uw[u]) | (int(d.log["n_ps"]) > up[u])
    return int(excess.sum()), int((excess & (net <= 1e-12)).sum()), float(net.sum())


@register_claim(
    PAPER,
    "NFR",
    "No free-riding (§1 goal): tenants cannot use the idle resources of others for free",
    "Every pass-2 job of truthful runs (worked example, micro instances): at every slot where its workers or PSs "
    "exceed its owner's unused quota, the owner's net transfer to the others (payment − own Eq. 2 share) must be "
    "> 0. Violation = such a slot with no positive transfer (e.g. a zero posted price at an empty slot).",
)
def claim_nfr(ctx: ClaimContext) -> Measurement:
    """Claim NFR of Astraea: No free-riding (§1 goal): tenants cannot use the idle resources of others for free.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(20, 300), (TOY_FIXED,))
    viol, slots, free = 0, 0, 0
    transfer = 0.0
    witness = None
    for p, seed, m in insts:
        bad = False
        for d in filter(_pooled, run_market(m, "astraea")):
            n, f, tr = _free_rides(m, d)
            slots, free, transfer = slots + n, free + f, transfer + tr
            if f:
                bad = True
                witness = witness or {"kind": "astraea_nfr", "params": p, "seed": seed, "job_id": d.job_id}
        viol += bad
    details = {"excess_slots": slots, "free_slots": free, "total_net_transfer": transfer}
    return Measurement(len(insts), viol, free / slots if slots else 0.0, "share of free excess slots", witness, details)


@register_witness_checker("astraea_nfr")
def _check_nfr(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    return _free_rides(m, decisions_by_id(run_market(m, "astraea"))[int(w["job_id"])])[1] > 0


# ---------------------------------------------------------------------------------------------
# claim 15: Pareto efficiency


def _occupancy(m: AstraeaMarket, decisions: list[Decision]) -> tuple[np.ndarray, np.ndarray]:
    S, T = len(m.cluster.servers), m.T
    w = np.array([s.n_workers for s in m.cluster.servers])[:, None] * np.ones(T + 2, dtype=int)
    p = np.array([s.n_ps for s in m.cluster.servers])[:, None] * np.ones(T + 2, dtype=int)
    for d in decisions:
        if d.schedule is None:
            continue
        for t in d.schedule.slots:
            if t <= T:
                w[:, t] -= d.schedule.workers[t]
                p[:, t] -= d.schedule.ps[t]
    assert w.shape[0] == S
    return w, p


def pareto_moves(m: AstraeaMarket, decisions: list[Decision]) -> list[dict[str, Any]]:
    """Pareto improvements of a truthful outcome that move no other job (spec claim 15): drop an
    admitted job whose TRUE realised utility is negative (its owner keeps its transfers), or insert
    a never-admitted job centralized into capacity idle in the realised schedule (free), when its
    true utility there is positive. Each move raises one tenant's g and lowers nobody's.

    :param m: the market
    :param decisions: the truthful run's decisions
    :returns: the moves found
    """
    by_id = decisions_by_id(decisions)
    moves: list[dict[str, Any]] = []
    free_w, free_p = _occupancy(m, decisions)
    bw = m.cluster.bw_worker_mbps
    for b in m.bids():
        d = by_id.get(b.job_id)
        if d is not None and d.admitted:
            v = m.true_value(b, b, d)
            if v < -_tol(v):
                moves.append({"move": "drop", "job_id": b.job_id, "tenant": b.tenant, "gain": -v})
            continue
        best = _best_insert(m, b, free_w, free_p, bw)
        if best is not None and best[0] > _tol(best[0]):
            moves.append({"move": "insert", "job_id": b.job_id, "tenant": b.tenant, "gain": best[0], "at": best[1]})
    return moves


def _best_insert(
    m: AstraeaMarket, b: AstraeaBid, free_w: np.ndarray, free_p: np.ndarray, bw: float
) -> tuple[float, list[int]] | None:
    j = b.spec
    n_c, _ = throughput(j, bw)
    T = m.T
    t_min = math.ceil(j.arrival - 1e-12) + 1
    best = None
    for dw in allowed_workers(j, m.params):
        d = duration(j.work, n_c, dw)
        if t_min + d - 1 > T:
            continue
        for s in range(free_w.shape[0]):
            okw = free_w[s, 1 : T + 1] >= dw
            okp = free_p[s, 1 : T + 1] >= 1
            ok = okw & okp
            run = np.convolve(ok.astype(int), np.ones(d, dtype=int), "valid") == d  # run[t-1]: slots t..t+d-1
            starts = np.flatnonzero(run) + 1
            starts = starts[starts >= t_min]
            if starts.size == 0:
                continue
            t0 = int(starts[0])  # earliest start is best: utilities are non-increasing in time
            v = float(j.utility(float(t0 + d - 1 - j.arrival)))
            if best is None or v > best[0]:
                best = (v, [s, dw, t0, t0 + d - 1])
    return best


@register_witness_checker("astraea_pareto")
def _check_pareto(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    moves = pareto_moves(m, run_market(m, "astraea"))
    return any(x["job_id"] == w["move"]["job_id"] and x["gain"] > _tol(x["gain"]) for x in moves)


@register_claim(
    PAPER,
    "PE",
    "Pareto efficiency (Theorem 5): no tenant can gain more without reducing the income of others",
    "On each truthful outcome, search moves that touch no other job: drop an admitted job whose TRUE realised "
    "utility is negative (transfers kept, budget balanced), or insert a rejected job centralized into capacity "
    "idle in the final schedule at its earliest feasible start (free). Violation = some move raises a tenant's "
    "g by > 1e-9·max(1,|gain|); effect = largest improvement relative to max(1,|R|).",
)
def claim_pe(ctx: ClaimContext) -> Measurement:
    """Claim PE of Astraea: Pareto efficiency (Theorem 5): no tenant can gain more without reducing the income of
    others.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(10, 120), (TOY_FIXED, TOY_ELASTIC))
    viol, worst, witness = 0, 0.0, None
    kinds = {"drop": 0, "insert": 0}
    for p, seed, m in insts:
        decs = run_market(m, "astraea")
        moves = pareto_moves(m, decs)
        if not moves:
            continue
        viol += 1
        R = m.metrics(decs, m.bids())["welfare"]
        for mv in moves:
            kinds[mv["move"]] += 1
        top = max(moves, key=lambda x: x["gain"])
        rel = top["gain"] / max(1.0, abs(R))
        if witness is None or rel > worst:
            worst = rel
            witness = {"kind": "astraea_pareto", "params": p, "seed": seed, "move": top, "R": R}
    return Measurement(len(insts), viol, worst, "largest improvement / max(1,|R|)", witness, {"moves": kinds})


# ---------------------------------------------------------------------------------------------
# claims 10 and 11: gain-as-you-contribute fairness, budget balance


def eq2_incomes(unused_w: Any, unused_p: Any, cost_w: Any, cost_p: Any) -> np.ndarray:
    """Astraea Eq. (2) written out slot by slot, independently of :mod:`marketsim.market.income`:
    ``rho^u = sum_t unused_w^u(t) / a_w(t) * c_w(t) + unused_p^u(t) / a_p(t) * c_p(t)`` (currency);
    ``unused_*`` (U, d) units, ``cost_*`` (d,) currency per slot. A slot with a cost and no pool raises.

    :param unused_w: (U, d) unused worker quota per tenant and slot
    :param unused_p: (U, d) unused PS quota
    :param cost_w: (d,) worker cost per slot, currency
    :param cost_p: (d,) PS cost per slot, currency
    :returns: (U,) incomes, currency
    :raises InputError: a slot with a cost and no unused pool
    """
    uw, up = np.asarray(unused_w, float), np.asarray(unused_p, float)
    cw, cp = np.asarray(cost_w, float), np.asarray(cost_p, float)
    out = [0.0] * uw.shape[0]
    for t in range(cw.size):
        for pool, cost in ((uw[:, t], cw[t]), (up[:, t], cp[t])):
            a = float(sum(pool))
            if a <= 0:
                if cost > 0:
                    reason = f"is empty at slot {t} but the slot costs {cost}"
                    raise InputError("unused pool", pool.tolist(), reason)
                continue
            for u in range(len(out)):
                out[u] += float(pool[u]) / a * float(cost)
    return np.array(out)


def _snapshot_from_schedule(m: AstraeaMarket, decs: Sequence[Decision], d: Decision) -> tuple[np.ndarray, np.ndarray]:
    """The frozen post-pass-1 unused quota over ``d``'s slots, rebuilt from the logged schedule:
    ``q^u`` minus the workers / PSs of ``u``'s pass-1 jobs of the same round running at each slot."""
    t0, dur, rnd = int(d.log["t_start"]), int(d.log["d"]), d.log["round"]
    slots = np.arange(t0, t0 + dur)
    ten = m.cluster.tenants
    uw = np.array([[float(x.quota_workers)] * dur for x in ten])
    up = np.array([[float(x.quota_ps)] * dur for x in ten])
    for o in decs:
        if not (o.admitted and o.log.get("pass") == 1 and o.log.get("round") == rnd):
            continue
        u = m.cluster.tenant_index(int(o.log["tenant"]))
        run = (slots >= int(o.log["t_start"])) & (slots < int(o.log["t_start"]) + int(o.log["d"]))
        uw[u, run] -= float(o.log["n_workers"])
        up[u, run] -= float(o.log["n_ps"])
    return uw, up


def _eq2_error(m: AstraeaMarket, decs: Sequence[Decision], d: Decision) -> tuple[float, float]:
    """(largest gap between the income paid and Eq. 2 recomputed independently — the snapshot rebuilt
    from the schedule, the formula from :func:`eq2_incomes`, the slot costs checked against the
    payment —, income paid to tenants with no unused quota)."""
    _, _, cw, cp = _pool_arrays(d)
    uw, up = _snapshot_from_schedule(m, decs, d)
    inc = np.asarray(d.log["income"], float)
    ref = eq2_incomes(np.maximum(uw, 0.0), np.maximum(up, 0.0), cw, cp)
    err = float(np.max(np.abs(inc - ref)))
    err = max(err, abs(float(cw.sum() + cp.sum()) - float(d.payment)))  # the logged costs are what was paid
    zero = (np.maximum(uw, 0).sum(axis=1) + np.maximum(up, 0).sum(axis=1)) == 0
    return err, float(np.abs(inc[zero]).sum())


@register_claim(
    PAPER,
    "GAYC",
    "Gain-as-you-contribute fairness (Eq. 2): each tenant's income from a pooled job at slot t is the job's "
    "cost times the tenant's share of the unused quota; a tenant with no unused quota receives nothing",
    "Every pass-2 job of truthful runs on the worked example and random micro instances: the income the "
    "mechanism paid vs Eq. (2) recomputed independently (own slot-by-slot formula; the post-pass-1 unused "
    "quota rebuilt from the quotas and the logged pass-1 schedule of the round; slot costs summing to the "
    "payment); violation if they differ by > 1e-9·max(1, payment) or a zero-contribution tenant is paid.",
)
def claim_gayc(ctx: ClaimContext) -> Measurement:
    """Claim GAYC of Astraea: Gain-as-you-contribute fairness (Eq. 2): each tenant's income from a pooled job at slot t
    is the job's cost times the tenant's share of the unused quota; a tenant with no unused quota receives nothing.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(20, 300), (TOY_FIXED,))
    viol, worst, jobs = 0, 0.0, 0
    witness = None
    for p, seed, m in insts:
        bad = False
        decs = run_market(m, "astraea")
        for d in filter(_pooled, decs):
            jobs += 1
            err, zero = _eq2_error(m, decs, d)
            worst = max(worst, err, zero)
            if err > _tol(d.payment) or zero > _tol(d.payment):
                bad = True
                witness = witness or {"kind": "astraea_gayc", "params": p, "seed": seed, "job_id": d.job_id}
        viol += bad
    return Measurement(len(insts), viol, worst, "max |income − Eq. 2|", witness, {"pass2_jobs": jobs})


@register_witness_checker("astraea_gayc")
def _check_gayc(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    decs = run_market(m, "astraea")
    d = decisions_by_id(decs)[int(w["job_id"])]
    err, zero = _eq2_error(m, decs, d)
    return err > _tol(d.payment) or zero > _tol(d.payment)


@register_claim(
    PAPER,
    "BB",
    "Budget balance (§2.9, claim 11): incomes sum to the payments for every pooled job, and Σ_u g_u = R",
    "Truthful runs on random micro instances (default full Eq. 2 charge): per pass-2 job |Σ incomes − "
    "payment| and per run |Σ g_u − R| against 1e-9·max(1, value).",
)
def claim_bb(ctx: ClaimContext) -> Measurement:
    """Claim BB of Astraea: Budget balance (§2.9, claim 11): incomes sum to the payments for every pooled job, and Σ_u
    g_u = R.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _instances(ctx, ctx.pick(20, 300))
    viol, worst = 0, 0.0
    witness = None
    for p, seed, m in insts:
        errs = _imbalances(m, run_market(m, "astraea"))
        worst = max([worst] + [e for e, _ in errs])
        if any(e > _tol(scale) for e, scale in errs):
            viol += 1
            witness = witness or {"kind": "astraea_bb", "params": p, "seed": seed}
    return Measurement(len(insts), viol, worst, "max absolute imbalance", witness)


def _imbalances(m: AstraeaMarket, decs: list[Decision]) -> list[tuple[float, float]]:
    """(|Σ incomes − payment|, payment) per pooled job and (|Σ_u g_u − R|, R) for the run."""
    out = [(abs(math.fsum(d.log["income"]) - d.payment), d.payment) for d in filter(_pooled, decs)]
    parts = m.tenant_parts(decs, m.bids())
    R = math.fsum(parts["value"].tolist())
    return out + [(abs(math.fsum(parts["revenue"].tolist()) - R), R)]


@register_witness_checker("astraea_bb")
def _check_bb(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    return any(e > _tol(scale) for e, scale in _imbalances(m, run_market(m, "astraea")))


# ---------------------------------------------------------------------------------------------
# performance ratio (Fig. 5) and Theorem 1


def _opt_pairs(ctx: ClaimContext, utility: str) -> list[dict[str, Any]]:
    """Shared: (R_ALG, OPT-exact, bounds) on micro instances small enough for OPT-exact."""

    def compute(rng: np.random.Generator) -> list[dict[str, Any]]:
        out = []
        for _ in range(ctx.pick(3, 25)):
            p = {
                "workload": "micro",
                "jobs": int(rng.integers(3, ctx.pick(5, 7))),
                "servers": 2 if ctx.size == "small" else int(rng.integers(2, 4)),
                "tenants": 2,
                "utility": utility,
                "worker_count_mode": str(rng.choice(["elastic", "fixed"])),
                "horizon": 32,
                "arrival_span": 4.0,  # batches 1–2 (+ a retry batch 3) fit the horizon
            }
            seed = int(rng.integers(0, 2**31 - 1))
            m = _build(p, seed)
            res = run_astraea(m.cluster, m.jobs, m.params)
            opt = opt_exact(m.cluster, m.jobs, m.params, m.T, time_limit=ctx.pick(10.0, 60.0))
            out.append({"params": p, "seed": seed, "alg": collective_revenue(res), "opt": opt.value, "res": res})
        return out

    return ctx.shared(f"opt:{utility}", compute)


@register_claim(
    PAPER,
    "RATIO",
    "Practical performance ratio (§1, Fig. 5): Astraea's collective revenue is > 0.6 of the offline optimum",
    "R_ALG / OPT-exact (spec B4 MILP, arrival clock, same horizon and worker-count mode, t⁻ ≥ ⌈r⌉+1) on micro "
    "instances with 2 tenants (linear and convex utilities); violation if the ratio < 0.6 (instances with OPT ≤ 0 "
    "are skipped). Arrivals in [0, 4) h and horizon 32 so every job's batch (and one retry) fits the horizon. Note: "
    "micro instances are far smaller than the paper's (5–15 jobs, 5–45 servers).",
)
def claim_ratio(ctx: ClaimContext) -> Measurement:
    """Claim RATIO of Astraea: Practical performance ratio (§1, Fig. 5): Astraea's collective revenue is > 0.6 of the
    offline optimum.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    rows = _opt_pairs(ctx, "linear") + _opt_pairs(ctx, "convex")
    ratios = []
    viol, worst, witness = 0, math.inf, None
    for r in rows:
        if r["opt"] <= 0:
            continue
        q = r["alg"] / r["opt"]
        ratios.append(q)
        if q < 0.6:
            viol += 1
            if q < worst:
                worst = q
                witness = {"kind": "astraea_ratio", "params": r["params"], "seed": r["seed"], "ratio": q}
    n = len(ratios)
    details = {"ratios": ratios, "mean_ratio": float(np.mean(ratios)) if ratios else math.nan}
    eff = min(ratios) if ratios else math.nan
    return Measurement(n, viol, eff, "min ratio R_ALG/OPT", witness, details)


@register_witness_checker("astraea_ratio")
def _check_ratio(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    alg = collective_revenue(run_astraea(m.cluster, m.jobs, m.params))
    opt = opt_exact(m.cluster, m.jobs, m.params, m.T).value
    return opt > 0 and alg / opt < 0.6


@register_claim(
    PAPER,
    "T1",
    "Performance guarantee (Theorem 1): OPT − R_ALG ≤ gap_bound for linear utilities, R_ALG / OPT ≥ ratio_bound "
    "for convex utilities",
    "Spec A10 bound calculators (L = batches the run used) against OPT-exact on the same micro instances as RATIO, "
    "evaluated with the arrival revenue clock (the theorem is written for the absolute clock t⁺).",
)
def claim_t1(ctx: ClaimContext) -> Measurement:
    """Claim T1 of Astraea: Performance guarantee (Theorem 1): OPT − R_ALG ≤ gap_bound for linear utilities, R_ALG /
    OPT ≥ ratio_bound for convex utilities.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    viol, n = 0, 0
    slack: list[float] = []
    witness = None
    for kind, bound in (("linear", _linear_bound), ("convex", _convex_bound)):
        for r in _opt_pairs(ctx, kind):
            s = bound(r)
            if s is None:
                continue
            n += 1
            slack.append(s)
            if s < -_tol(r["opt"]):
                viol += 1
                witness = witness or {"kind": "astraea_t1", "params": r["params"], "seed": r["seed"], "slack": s}
    return Measurement(n, viol, min(slack) if slack else math.nan, "min slack of the bound", witness)


def _linear_bound(r: dict[str, Any]) -> float | None:
    res = r["res"]
    ks = [j.utility.k for j in res.jobs]
    L = max(res.batches_used, 1)
    return gap_bound(len(res.jobs), L, res.params.lam, min(ks), max(ks)) - (r["opt"] - r["alg"])


def _convex_bound(r: dict[str, Any]) -> float | None:
    if r["opt"] <= 0:
        return None
    res = r["res"]
    es = [j.utility.e for j in res.jobs]
    ks = [j.utility.kappa for j in res.jobs]
    L = max(res.batches_used, 1)
    return r["alg"] / r["opt"] - ratio_bound(res.params.lam, L, min(ks), max(ks), min(es), max(es))


@register_witness_checker("astraea_t1")
def _check_t1(w: dict[str, Any]) -> bool:
    m = _build(w["params"], w["seed"])
    res = run_astraea(m.cluster, m.jobs, m.params)
    r = {"res": res, "alg": collective_revenue(res), "opt": opt_exact(m.cluster, m.jobs, m.params, m.T).value}
    s = (_linear_bound if w["params"]["utility"] == "linear" else _convex_bound)(r)
    return s is not None and s < -_tol(r["opt"])
