"""Eris (Pang et al., IEEE TMC 2024) claims C1–C9 of spec §7 as measurements.

Instances: micro instances (R <= 3, K <= 2, T <= 4, D <= 6, both bandwidth modes, every option
combination) drawn from the claim's own generator, the spec's hand-made witnesses of the Thm-4/5
findings (tests/test_eris_properties.py), and study instances from
:func:`marketsim.market.eris.market.make_market`. Truthfulness (C3) is audited with the generic
:class:`~marketsim.market.audit.online.OnlineAuctionTarget` (whole-sequence replays, others truthful,
consequence model of §7 C3 for the true value). Every witness is a JSON dict that
:func:`marketsim.market.audit.claims.recheck_witness` re-evaluates from scratch.

Not claimed by the paper (so not measured): envy-freeness, sharing incentive, Pareto efficiency,
budget balance; the NP-hardness statement is not audited.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx
import numpy as np

from marketsim.market.auction.market import run_market
from marketsim.market.audit.claims import ClaimContext, Measurement, register_claim, register_witness_checker
from marketsim.market.audit.online import OnlineAuctionTarget
from marketsim.market.audit.search import AuditConfig, AuditResult, audit, evaluate_misreport, relative
from marketsim.market.eris.diagnostics import check_feasibility, normalisation, small_job
from marketsim.market.eris.exact import competitive_ratio, subroutine_check
from marketsim.market.eris.market import make_market
from marketsim.market.eris.mechanism import ErisAuction, realised_utility
from marketsim.market.eris.prices import competitive_constant, price
from marketsim.market.eris.types import ErisConfig, ErisJob, ErisSites, NetworkSpec
from marketsim.market.errors import InputError
from marketsim.market.utility import SigmoidUtility

__all__ = ["micro_instance", "instance_to_dict", "instance_from_dict", "audit_config", "C3_GROUPS"]

PAPER = "eris"
_TOL = 1e-7

Instance = tuple[ErisSites, NetworkSpec, ErisConfig, list[ErisJob]]


def _tol(scale: float) -> float:
    return _TOL * max(1.0, abs(float(scale)))


# ---------------------------------------------------------------------------------------------
# instances and their JSON form (witnesses)
# ---------------------------------------------------------------------------------------------
def micro_instance(
    rng: np.random.Generator,
    *,
    max_R: int = 3,
    max_K: int = 2,
    max_T: int = 4,
    max_I: int = 4,
    max_D: int = 6,
    topology: bool | None = None,
    options: bool = True,
) -> Instance:
    """A random micro instance (spec §7 C1/C4 ranges): capacities U{0..6}, budgets in {4, 10, 50,
    1000} MB, path or complete graphs in topology mode, gamma in {10, 1000}, and (``options``) random
    ps_rule / repair_sources / overflow_moves.

    :param rng: the draws
    :param max_R: most sites
    :param max_K: most resource types
    :param max_T: longest horizon
    :param max_I: most jobs
    :param max_D: most chunks per job
    :param topology: topology mode (``None``: drawn)
    :param options: draw the mechanism options too
    :returns: ``(sites, network, config, jobs)``
    """
    R = int(rng.integers(1, max_R + 1))
    K = int(rng.integers(1, max_K + 1))
    T = int(rng.integers(1, max_T + 1))
    cap = rng.integers(0, 7, size=(R, K)).astype(float)
    sites = ErisSites(tuple(range(1, R + 1)), cap, ("gpu", "cpu")[:K])
    topo = bool(rng.integers(2)) if topology is None else topology
    budgets = (4.0, 10.0, 50.0, 1000.0)
    if topo and R > 1:
        G = nx.path_graph(range(1, R + 1)) if rng.integers(2) else nx.complete_graph(range(1, R + 1))
        for u, v in sorted(G.edges):
            G.edges[u, v]["capacity_mb"] = float(rng.choice(budgets))
            G.edges[u, v]["latency_ms"] = float(rng.integers(0, 6))
        net = NetworkSpec(mode="topology", graph=G)
    else:
        net = NetworkSpec(budget_mb=float(rng.choice(budgets)))
    jobs = []
    for i in range(int(rng.integers(1, max_I + 1))):
        D = rng.integers(0, 4, size=R)
        if D.sum() == 0:
            D[int(rng.integers(R))] = 1
        while D.sum() > max_D:
            D[int(np.argmax(D))] -= 1
        w = rng.integers(0, 3, size=K).astype(float)
        if w.max() == 0:
            w[0] = 1.0
        s = rng.integers(0, 3, size=K).astype(float)
        tau = float(rng.uniform(0.05, 2.0))
        jobs.append(
            ErisJob(
                i + 1,
                int(rng.integers(1, T + 1)),
                SigmoidUtility(3000.0 * tau, 1 / 3, 0.0),
                {r + 1: int(D[r]) for r in range(R)},
                int(rng.integers(1, 4)),
                w,
                s,
                int(rng.integers(1, 4)),
                float(rng.choice([0.0, 1.0, 4.0, 20.0])),
            )
        )
    gamma = float(rng.choice([10.0, 1000.0]))
    kw: dict[str, Any] = {}
    if options:
        kw = {
            "ps_rule": str(rng.choice(["max_workers", "min_cost"])),
            "repair_sources": bool(rng.integers(2)),
            "overflow_moves": bool(rng.integers(2)),
        }
    return sites, net, ErisConfig(horizon=T, gamma_d=gamma, gamma_k=gamma, **kw), jobs


def instance_to_dict(inst: Instance) -> dict[str, Any]:
    """JSON-ready form of an instance with sigmoid utilities.

    :param inst: ``(sites, network, config, jobs)``
    :returns: its JSON-ready form
    :raises InputError: a utility other than a sigmoid
    """
    sites, net, cfg, jobs = inst
    out: dict[str, Any] = {
        "sites": {"ids": list(sites.ids), "capacity": sites.capacity.tolist(), "resources": list(sites.resources)},
        "network": {"mode": net.mode, "budget_mb": net.budget_mb},
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(cfg).items()},
        "jobs": [],
    }
    if net.graph is not None:
        out["network"]["edges"] = [[u, v, dict(d)] for u, v, d in sorted(net.graph.edges(data=True))]
    for j in jobs:
        u = j.utility
        if not isinstance(u, SigmoidUtility):
            raise InputError("utility", u, "only sigmoid utilities are serialised in witnesses")
        out["jobs"].append(
            {
                "job_id": j.job_id,
                "arrival": j.arrival,
                "utility": [u.gamma1, u.gamma2, u.gamma3],
                "data": [[k, v] for k, v in j.data.items()],
                "epochs": j.epochs,
                "worker_demand": j.worker_demand.tolist(),
                "ps_demand": j.ps_demand.tolist(),
                "proc_capacity": j.proc_capacity,
                "param_mb": j.param_mb,
            }
        )
    return out


def instance_from_dict(d: dict[str, Any]) -> Instance:
    """Inverse of :func:`instance_to_dict`.

    :param d: the JSON-ready form
    :returns: ``(sites, network, config, jobs)``
    """
    s = d["sites"]
    sites = ErisSites(tuple(s["ids"]), np.array(s["capacity"], float), tuple(s["resources"]))
    n = d["network"]
    if n["mode"] == "topology":
        G = nx.Graph()
        G.add_nodes_from(sites.ids)
        for u, v, attrs in n["edges"]:
            G.add_edge(u, v, **attrs)
        net = NetworkSpec(mode="topology", budget_mb=n["budget_mb"], graph=G)
    else:
        net = NetworkSpec(budget_mb=n["budget_mb"])
    c = dict(d["config"])
    if isinstance(c.get("gamma_k"), list):
        c["gamma_k"] = tuple(c["gamma_k"])
    cfg = ErisConfig(**c)
    jobs = [
        ErisJob(
            j["job_id"],
            j["arrival"],
            SigmoidUtility(*j["utility"]),
            {k: v for k, v in j["data"]},
            j["epochs"],
            np.array(j["worker_demand"], float),
            np.array(j["ps_demand"], float),
            j["proc_capacity"],
            j["param_mb"],
        )
        for j in d["jobs"]
    ]
    return sites, net, cfg, jobs


def _thm4_witness() -> Instance:
    """Spec finding (tests/test_eris_properties.py): site 1 holds 2 chunks but fits 1 worker, site 2
    is empty; at zero prices Omega(1->2) = 0, so DPC_T moves nothing and calls the slot infeasible."""
    sites = ErisSites((1, 2), np.array([[1.0], [4.0]]), ("gpu",))
    j = ErisJob(1, 1, SigmoidUtility(3000.0, 1 / 3, 0), {1: 2}, 1, np.array([1.0]), np.array([0.0]), 1, 0.0)
    return sites, NetworkSpec(), ErisConfig(horizon=1), [j]


def _thm5_witness() -> Instance:
    """Spec finding: the only chunk sits at site 2 (fits 1 worker, E/P = 2 needs 2); moving it to site
    1 is free (Omega = 0), DPC_T never moves it and Eris rejects: OPT/W = inf."""
    sites = ErisSites((1, 2), np.array([[2.0], [1.0]]), ("gpu",))
    j = ErisJob(1, 1, SigmoidUtility(3000.0, 1 / 3, 0), {2: 1}, 2, np.array([1.0]), np.array([0.0]), 1, 0.0)
    return sites, NetworkSpec(budget_mb=4.0), ErisConfig(horizon=1, gamma_d=10.0, gamma_k=10.0), [j]


def _run(inst: Instance) -> ErisAuction:
    sites, net, cfg, jobs = inst
    auc = ErisAuction(sites, net, cfg)
    auc.run(jobs)
    return auc


# ---------------------------------------------------------------------------------------------
# per-instance property measurements (shared by the claims and the witness checker)
# ---------------------------------------------------------------------------------------------
def _p_feasibility(inst: Instance) -> float:
    auc = _run(inst)
    v = check_feasibility(auc, inst[3], auc.decisions)
    if not inst[2].repair_sources:  # totals only without repair (D5)
        v.pop("conservation")
        by = {b.job_id: b for b in inst[3]}
        for d in auc.decisions:
            if d.admitted and d.plan.chunks() != by[d.job_id].total_chunks:
                return 1.0
    return max(v.values())


def _p_ir(inst: Instance) -> float:
    """Largest breach of: accepted => u = mu > 0 and 0 <= p <= f(c - a); rejected => p = u = 0; revenue >= 0."""
    auc = _run(inst)
    by = {b.job_id: b for b in inst[3]}
    worst = 0.0
    for d in auc.decisions:
        j = by[d.job_id]
        u = realised_utility(d, j, j, inst[2])
        if d.admitted:
            f = float(j.utility(d.completion - j.arrival + inst[2].duration_offset))
            worst = max(worst, -u if u <= 0 else 0.0, abs(u - d.mu) - _tol(u), -d.payment, d.payment - f - _tol(f))
        else:
            worst = max(worst, abs(d.payment), abs(u))
    return max(worst, -sum(d.payment for d in auc.decisions))


def _p_welfare_identity(inst: Instance) -> float:
    auc = _run(inst)
    by = {b.job_id: b for b in inst[3]}
    W = sum(float(by[d.job_id].utility(d.completion - by[d.job_id].arrival)) for d in auc.decisions if d.admitted)
    rhs = sum(d.mu for d in auc.decisions) + sum(d.payment for d in auc.decisions)
    return max(0.0, abs(W - rhs) - _tol(W))


def _p_lemma1(inst: Instance, assumed: bool = True) -> float:
    """Largest ``dLambda_i / gamma_CR - dGamma_i`` over the processed jobs (Lemma 1 needs <= 0); with
    ``assumed`` only over jobs meeting the proof's preconditions (D15: normalisation 1 <= nu <= gamma - 1
    and small jobs sigma_d, sigma_k <= 1); rejected jobs change neither side."""
    auc = _run(inst)
    cfg, sites, links = auc.cfg, auc.sites, auc.links
    cr = competitive_constant(cfg.gamma_d, cfg.gamma_k)
    dl = np.diff([0.0, *auc.dual_history])
    dp = np.diff([0.0, *auc.primal_history])
    worst = 0.0
    for d, a, b in zip(auc.decisions, dl, dp, strict=True):
        if assumed and d.admitted:
            sd, sk = small_job(d.plan, sites, links.cap, cfg)
            nu = normalisation(d.utility, d.plan, cfg, sites.K)
            if not (sd <= 1 and sk <= 1 and nu.ok_d and nu.ok_k):
                continue
        worst = max(worst, a / cr - b - _TOL * max(1.0, abs(a)))
    return float(worst)


def _lemma1_scope(inst: Instance) -> tuple[int, int]:
    """(accepted jobs meeting the D15 preconditions, accepted jobs) of one run."""
    auc = _run(inst)
    met = acc = 0
    for d in auc.decisions:
        if d.admitted:
            acc += 1
            sd, sk = small_job(d.plan, auc.sites, auc.links.cap, auc.cfg)
            nu = normalisation(d.utility, d.plan, auc.cfg, auc.sites.K)
            met += bool(sd <= 1 and sk <= 1 and nu.ok_d and nu.ok_k)
    return met, acc


def _p_prices_monotone(inst: Instance) -> float:
    """Largest price decrease over the job sequence (D19 says never)."""
    sites, net, cfg, jobs = inst
    auc = ErisAuction(sites, net, cfg)
    T = cfg.horizon

    def prices() -> np.ndarray:
        return np.concatenate([np.r_[auc.prices(t).alpha, auc.prices(t).beta.ravel()] for t in range(1, T + 1)])

    before = prices()
    worst = 0.0
    for j in sorted(jobs, key=lambda j: (j.arrival, j.job_id)):
        auc.step(j.arrival, [j])
        after = prices()
        worst = max(worst, float((before - after).max()))
        before = after
    return worst


def _p_empty_accept(inst: Instance) -> float:
    """1 if some job, alone at zero usage, has a non-empty menu and f > 0 but is rejected."""
    sites, net, cfg, jobs = inst
    for j in jobs:
        auc = ErisAuction(sites, net, cfg)
        menu = auc.build_menu(j)
        if menu and float(j.utility(cfg.horizon)) > 0 and not auc.step(j.arrival, [j])[0].admitted:
            return 1.0
    return 0.0


def _p_complexity(inst: Instance) -> float:
    """Excess of DPC_T calls over sum_i (T - a_i + 1)(D_i + 1) plus repair calls over the memoised bound."""
    auc = _run(inst)
    T = auc.cfg.horizon
    by = {b.job_id: b for b in inst[3]}
    worst = 0.0
    for d, st in zip(auc.decisions, auc.stats, strict=True):
        j = by[d.job_id]
        S = T - j.arrival + 1
        worst = max(worst, st.dpc_calls - S * (j.total_chunks + 1), st.repair_calls - S * (S + 1) / 2)
    return float(worst)


def _p_subroutine(inst: Instance, part: str) -> float:
    """C4 gap of the LAST job (earlier jobs set the frozen prices): ``dpc`` (count of slot/d cases where
    DPC_T and ONE_SHOT_EXACT differ), ``dp`` (|DP - DP_EXACT|), ``sa`` (mu* - mu)."""
    sites, net, cfg, jobs = inst
    auc = ErisAuction(sites, net, cfg)
    *earlier, last = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    for j in earlier:
        auc.step(j.arrival, [j])
    rep = subroutine_check(auc, last)
    if part == "dpc":
        return float(len(rep.dpc_mismatch))
    if part == "dp":
        return max(0.0, rep.dp_gap - 1e-9 * max(1.0, rep.mu_exact))
    return max(0.0, rep.mu_gap - 1e-6 * max(1.0, rep.mu_exact)) if part == "sa" else -rep.mu_gap


def _p_ratio(inst: Instance) -> float:
    """OPT_MILP / W_Eris minus the Thm-5 bound (> 0 violates the claim; inf when Eris earns nothing)."""
    sites, net, cfg, jobs = inst
    r = competitive_ratio(jobs, sites, net, cfg, time_limit=60)
    if not r.opt_optimal:
        return math.nan
    return r.ratio - r.bound


_PROPS: dict[str, Callable[[Instance], float]] = {
    "feasibility": _p_feasibility,
    "ir": _p_ir,
    "welfare_identity": _p_welfare_identity,
    "lemma1": _p_lemma1,
    "lemma1_any": lambda i: _p_lemma1(i, assumed=False),
    "prices_monotone": _p_prices_monotone,
    "empty_accept": _p_empty_accept,
    "complexity": _p_complexity,
    "dpc": lambda i: _p_subroutine(i, "dpc"),
    "dp": lambda i: _p_subroutine(i, "dp"),
    "sa": lambda i: _p_subroutine(i, "sa"),
    "ratio": _p_ratio,
}


@register_witness_checker("eris_instance")
def _check_instance(w: dict[str, Any]) -> bool:
    v = _PROPS[w["property"]](instance_from_dict(w["instance"]))
    return bool(v > w.get("tol", 1e-9))


def _property_claim(
    insts: Sequence[Instance], prop: str, tol: float = 1e-9, effect: str = "max violation"
) -> Measurement:
    fn = _PROPS[prop]
    viol, worst, witness, skipped = 0, 0.0, None, 0
    for inst in insts:
        v = fn(inst)
        if math.isnan(v):
            skipped += 1
            continue
        if v > tol:
            viol += 1
            if witness is None or v > worst:
                witness = {"kind": "eris_instance", "property": prop, "tol": tol, "instance": instance_to_dict(inst)}
            worst = max(worst, v)
    details = {"skipped_not_solved": skipped} if skipped else {}
    return Measurement(len(insts) - skipped, viol, worst, effect, witness, details)


def _micros(ctx: ClaimContext, key: str, count: tuple[int, int], **kw: Any) -> list[Instance]:
    n = ctx.pick(*count)
    return ctx.shared(f"micro:{key}:{n}", lambda rng: [micro_instance(rng, **kw) for _ in range(n)])


# ---------------------------------------------------------------------------------------------
# C1, C2, C7, C8: properties of every run
# ---------------------------------------------------------------------------------------------
@register_claim(
    PAPER,
    "C1",
    "Eris outputs a feasible solution of problem (2) (Theorem 1)",
    "Random micro instances (R <= 3, K <= 2, T <= 4, D <= 6) in both bandwidth modes with every option "
    "combination (ps_rule, repair_sources, overflow_moves); check_feasibility recomputes capacities (PS "
    "included), budgets (global or per link), (2b) per site and slot, per-site conservation, one PS per "
    "active slot, the window a..T and integrality from the accepted plans alone; violation if any > 1e-9.",
)
def c1(ctx: ClaimContext) -> Measurement:
    """Claim C1 of Eris: Eris outputs a feasible solution of problem (2) (Theorem 1).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    return _property_claim(_micros(ctx, "runs", (40, 400)), "feasibility")


@register_claim(
    PAPER,
    "C2",
    "Individual rationality: truthful users' utilities and the operator's profit are non-negative (Theorem 2)",
    "Same micro instances as C1, truthful bids: accepted => u_i = mu_i > 0 and 0 <= p_i <= f_i(c_i - a_i); "
    "rejected => p_i = u_i = 0; revenue >= 0 (relative tolerance 1e-7).",
)
def c2(ctx: ClaimContext) -> Measurement:
    """Claim C2 of Eris: Individual rationality: truthful users' utilities and the operator's profit are non-negative
    (Theorem 2).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    return _property_claim(_micros(ctx, "runs", (40, 400)), "ir")


@register_claim(
    PAPER,
    "C7",
    "Prices (6): alpha(0) = 0, alpha(B) = gamma_d - 1 (likewise beta), monotone and convex in utilisation; "
    "at zero usage every job with a feasible schedule and f > 0 is accepted; prices never decrease (§IV-B)",
    "Price function on a 201-point utilisation grid for gamma in {2, 10, 1000, 1e4}; each micro instance's "
    "jobs alone on an empty market (menu non-empty and f > 0 => accepted); all slot prices after every "
    "decision of a run compared with the prices before it.",
)
def c7(ctx: ClaimContext) -> Measurement:
    """Claim C7 of Eris: Prices (6): alpha(0) = 0, alpha(B) = gamma_d - 1 (likewise beta), monotone and convex in
    utilisation; at zero usage every job with a feasible schedule and f > 0 is accepted; prices never decrease
    (§IV-B).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    x = np.linspace(0.0, 1.0, 201)
    worst = 0.0
    for g in (2.0, 10.0, 1000.0, 1e4):
        p = price(x * 7.0, 7.0, g)
        ends = max(abs(p[0]), abs(p[-1] - (g - 1)) / (g - 1))
        mono = max(0.0, float(-np.diff(p).min()))
        convex = max(0.0, float(-np.diff(p, 2).min()) - 1e-9 * g)
        worst = max(worst, ends - 1e-9, mono, convex)
    insts = _micros(ctx, "runs", (40, 400))
    m1 = _property_claim(insts, "empty_accept")
    m2 = _property_claim(insts, "prices_monotone")
    viol = (worst > 0) + m1.violations + m2.violations
    return Measurement(
        len(insts) + 4,
        viol,
        max(worst, m1.effect_size, m2.effect_size),
        "max violation (price units)",
        m1.witness or m2.witness,
        {"price_function_violation": worst, "empty_accept_violations": m1.violations, "price_decreases": m2.violations},
    )


@register_claim(
    PAPER,
    "C8",
    "Social welfare (Definition 2): W = sum of payoffs + sum of payments = sum of v_i x_i",
    "Same micro instances as C1, truthful bids, true values: |W - (sum mu_i + sum p_i)| <= 1e-7 max(1, W).",
)
def c8(ctx: ClaimContext) -> Measurement:
    """Claim C8 of Eris: Social welfare (Definition 2): W = sum of payoffs + sum of payments = sum of v_i x_i.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    return _property_claim(_micros(ctx, "runs", (40, 400)), "welfare_identity")


@register_claim(
    PAPER,
    "C6",
    "Running time O(I T D (R^2 K + D)) (Theorem 6): at most (T - a + 1)(D + 1) DPC_T evaluations per job, "
    "plus the memoised repair calls",
    "Count DPC_T evaluations and repair calls per job (MenuStats) on the micro instances and on a study "
    "instance (R = 10, I = 20, T = 30; large: R = 50, I = 100, T = 150); violation if a job exceeds "
    "(T - a + 1)(D + 1) evaluations or (T - a + 1)(T - a + 2)/2 repairs. Timing slopes: benchmarks/bench_eris.py.",
)
def c6(ctx: ClaimContext) -> Measurement:
    """Claim C6 of Eris: Running time O(I T D (R^2 K + D)) (Theorem 6): at most (T - a + 1)(D + 1) DPC_T evaluations
    per job, plus the memoised repair calls.

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = list(_micros(ctx, "runs", (40, 400)))
    m = ctx.pick(make_market({"R": 10, "I": 20, "T": 30}, ctx.rng), make_market({}, ctx.rng))
    insts.append((m.sites, m.network, m.config, list(m.bids())))
    return _property_claim(insts, "complexity", tol=0.0, effect="max excess calls")


# ---------------------------------------------------------------------------------------------
# C4: optimality of the subroutine (Theorem 4) against brute force
# ---------------------------------------------------------------------------------------------
def _c4_instances(ctx: ClaimContext) -> list[Instance]:
    rand = _micros(ctx, "c4", (25, 200), max_R=3, max_T=3, max_I=3, max_D=5, options=False)
    return [_thm4_witness(), *rand]


@register_claim(
    PAPER,
    "C4a",
    "Alg. 3 (DPC_T) returns an optimal solution of the one-shot problem (8) (Theorem 4)",
    "The spec's finding instance plus random frozen states (earlier jobs committed; R <= 3, K <= 2, T <= 3, "
    "D <= 5, both modes): DPC_T vs ONE_SHOT_EXACT (enumerates every move matrix and PS site) for every slot "
    "and d = 1..D; a violation is an instance with a slot/d whose costs differ or where only one is feasible.",
)
def c4a(ctx: ClaimContext) -> Measurement:
    """Claim C4a of Eris: Alg. 3 (DPC_T) returns an optimal solution of the one-shot problem (8) (Theorem 4).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    return _property_claim(_c4_instances(ctx), "dpc", tol=0.0, effect="max (slot, d) cases with DPC_T != exact")


@register_claim(
    PAPER,
    "C4b",
    "Alg. 2's DP over slots returns the cheapest split of the D chunks for every deadline (Theorem 4)",
    "Same frozen states as C4a: the (min,+) DP table vs DP_EXACT (every composition of D over the slots) on the "
    "same c table; violation if a deadline's cost differs by more than 1e-9 max(1, mu*).",
)
def c4b(ctx: ClaimContext) -> Measurement:
    """Claim C4b of Eris: Alg. 2's DP over slots returns the cheapest split of the D chunks for every deadline (Theorem
    4).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    return _property_claim(_c4_instances(ctx), "dp", effect="max |DP - DP_EXACT|")


@register_claim(
    PAPER,
    "C4c",
    "Alg. 2 (SA) returns an optimal solution of the per-job problem (7): mu_i equals the exact optimum (Theorem 4)",
    "Same frozen states as C4a: SA's mu vs PER_JOB_EXACT (every per-site split of the data over the slots, each "
    "slot by ONE_SHOT_EXACT); violation if mu* - mu > 1e-6 max(1, mu*). A negative gap would be a bug (checked "
    "in details).",
)
def c4c(ctx: ClaimContext) -> Measurement:
    """Claim C4c of Eris: Alg. 2 (SA) returns an optimal solution of the per-job problem (7): mu_i equals the exact
    optimum (Theorem 4).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    insts = _c4_instances(ctx)
    m = _property_claim(insts, "sa", effect="max mu* - mu")
    neg = [_p_subroutine(i, "neg") for i in insts]
    m.details["max_negative_gap_bug"] = max(0.0, max(neg, default=0.0))
    return m


# ---------------------------------------------------------------------------------------------
# C5: competitive ratio (Theorem 5, Lemma 1)
# ---------------------------------------------------------------------------------------------
@register_claim(
    PAPER,
    "C5",
    "Eris is 2 log2(gamma_d gamma_k*)-competitive: OPT / W_Eris <= 39.86 at gamma = 1000 (Theorem 5)",
    "The spec's finding instance plus random micro instances in global mode (R <= 2, K = 1, T <= 3, I <= 3, "
    "D <= 4, gamma in {10, 1000}, repair on): OPT by the exact MILP of §2.4 (HiGHS, gap 0) over Eris' welfare "
    "with true values; violation if the ratio exceeds the bound (inf when Eris earns nothing and OPT > 0).",
)
def c5(ctx: ClaimContext) -> Measurement:
    """Claim C5 of Eris: Eris is 2 log2(gamma_d gamma_k*)-competitive: OPT / W_Eris <= 39.86 at gamma = 1000 (Theorem
    5).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    rand = _micros(ctx, "c5", (12, 80), max_R=2, max_K=1, max_T=3, max_I=3, max_D=4, topology=False, options=False)
    viol, worst, witness, n, ratios = 0, -math.inf, None, 0, []
    for k, inst in enumerate([_thm5_witness(), *rand]):
        s, net, c, j = inst
        r = competitive_ratio(j, s, net, c, time_limit=60)
        if not r.opt_optimal:
            continue
        n += 1
        if k > 0:
            ratios.append(r.ratio)
        excess = r.ratio - r.bound
        worst = max(worst, excess)
        if excess > 0:
            viol += 1
            if witness is None:
                witness = {"kind": "eris_instance", "property": "ratio", "tol": 0.0, "instance": instance_to_dict(inst)}
    fin = [r for r in ratios if math.isfinite(r)]
    details = {
        "random_instances_max_finite_ratio": max(fin, default=float("nan")),
        "random_instances_infinite_ratio": len(ratios) - len(fin),
        "random_instances": len(ratios),
    }
    return Measurement(n, viol, worst, "max ratio - bound", witness, details)


# Found by the large run of C5-L1 (400 micro instances): one job whose schedule takes most of a site
# (sigma_k > 1), outside the proof's small-job assumption; re-measured on every run.
_LEMMA1_OUTSIDE: dict[str, Any] = {
    "sites": {"ids": [1, 2, 3], "capacity": [[6.0, 5.0], [2.0, 6.0], [2.0, 6.0]], "resources": ["gpu", "cpu"]},
    "network": {"mode": "global", "budget_mb": 1000.0},
    "config": {
        "horizon": 3,
        "gamma_d": 1000.0,
        "gamma_k": 1000.0,
        "theta_mb": 2.0,
        "repair_sources": True,
        "overflow_moves": True,
        "ps_rule": "max_workers",
        "duration_offset": 0,
        "accept_tol": 1e-09,
    },
    "jobs": [
        {
            "job_id": 1,
            "arrival": 1,
            "utility": [408.2314112775269, 0.3333333333333333, 0.0],
            "data": [[1, 3], [2, 0], [3, 0]],
            "epochs": 3,
            "worker_demand": [2.0, 0.0],
            "ps_demand": [0.0, 0.0],
            "proc_capacity": 1,
            "param_mb": 4.0,
        }
    ],
}


@register_claim(
    PAPER,
    "C5-L1",
    "Lemma 1: under the normalisation and small-job assumptions, every processed job raises the primal by at "
    "least 1/gamma_CR of the dual increase (Delta Gamma_i >= Delta Lambda_i / gamma_CR)",
    "Micro instances of C1 (both modes, all options), the known instance outside the assumptions, and study "
    "instances with 10x site capacity and gamma = 10 (R = 6, I = 15, T = 20) where many jobs meet them: DualTracker "
    "values after every decision; violation if Delta Lambda_i / gamma_CR - Delta Gamma_i > 1e-7 max(1, "
    "Delta Lambda_i) for a job meeting the D15 preconditions (1 <= nu <= gamma - 1, sigma_d, sigma_k <= 1); the "
    "same check over every job is reported in details.",
)
def c5_l1(ctx: ClaimContext) -> Measurement:
    # large sites and gamma = 10 make the small-job and normalisation assumptions hold for many jobs
    """Claim C5-L1 of Eris: Lemma 1: under the normalisation and small-job assumptions, every processed job raises the
    primal by at least 1/gamma_CR of the dual increase (Delta Gamma_i >= Delta Lambda_i / gamma_CR).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    big = {"R": 6, "I": 15, "T": 20, "gamma": 10.0, "capacity": [40.0, 240.0, 320.0]}
    study = []
    for _ in range(ctx.pick(3, 20)):
        mk = make_market(big, np.random.default_rng(int(ctx.rng.integers(2**31))))
        study.append((mk.sites, mk.network, mk.config, list(mk.bids())))
    insts = [*_micros(ctx, "runs", (40, 400)), instance_from_dict(_LEMMA1_OUTSIDE), *study]
    m = _property_claim(insts, "lemma1", effect="max dLambda/gamma_CR - dGamma (assumptions met)")
    anyj = _property_claim(insts, "lemma1_any")
    scope = np.array([_lemma1_scope(i) for i in insts]).sum(axis=0)
    m.details.update(
        {
            "accepted_jobs_meeting_assumptions": int(scope[0]),
            "accepted_jobs": int(scope[1]),
            "violations_any_job": anyj.violations,
            "max_excess_any_job": anyj.effect_size,
            "witness_any_job": anyj.witness,
        }
    )
    if scope[0] == 0:
        m.verdict, m.reason = "inconclusive", "no accepted job met the D15 preconditions"
    return m


# ---------------------------------------------------------------------------------------------
# C3: truthfulness (Theorem 3) with the generic online-auction target
# ---------------------------------------------------------------------------------------------
C3_GROUPS: dict[str, tuple[str, ...]] = {
    "C3a": ("value_scale", "decay"),
    "C3b": ("arrival_delay",),
    "C3c": ("data_scale",),
    "C3d": ("epochs",),
    "C3e": ("worker_scale", "ps_scale"),
}
_C3_TEXT = {
    "C3a": ("the utility function f (scale and decay)", "UP/DOWN grids of value_scale in [0.1, 10] and decay in "),
    "C3b": ("the arrival slot (later reports only)", "arrival delays 1..5 slots"),
    "C3c": ("the data sizes D^r", "data_scale in [0.5, 2] on every D^r (rounded)"),
    "C3d": ("the number of epochs E", "epochs E-10..E+10"),
    "C3e": ("the worker and PS demands w^k, s^k", "worker_scale and ps_scale in [0.5, 2]"),
}


def audit_config(size: str) -> AuditConfig:
    """Search budget of the Eris truthfulness claims per run size.

    :param size: ``"small"`` or any other value for a large run
    :returns: the misreport search's budget
    """
    if size == "small":
        return AuditConfig(n_grid=3, n_joint=6, refine_starts=0, refine_maxfev=0, probes=False)
    return AuditConfig(n_grid=8, n_joint=24, refine_starts=1, refine_maxfev=30, probes=False)


_C3_PARAMS_SMALL = {"R": 4, "I": 6, "T": 10}
_C3_PARAMS_LARGE = {"R": 8, "I": 12, "T": 20}


def _c3_audits(ctx: ClaimContext) -> list[tuple[dict[str, Any], int, OnlineAuctionTarget, AuditResult]]:
    def compute(rng: np.random.Generator) -> list[tuple[dict[str, Any], int, OnlineAuctionTarget, AuditResult]]:
        out = []
        for mode in ("global", "topology"):
            params = {**ctx.pick(_C3_PARAMS_SMALL, _C3_PARAMS_LARGE), "mode": mode}
            seed = int(rng.integers(2**31))
            market = make_market(params, np.random.default_rng(seed))
            target = OnlineAuctionTarget(market, "eris")
            agents = list(target.agents())
            devs = rng.choice(agents, size=min(2, len(agents)), replace=False) if ctx.size == "small" else agents
            for a in sorted(int(x) for x in devs):
                res = audit(target, a, config=audit_config(ctx.size), rng=rng)
                out.append(({"params": params, "seed": seed}, a, target, res))
        return out

    return ctx.shared("c3", compute)


@register_witness_checker("eris_misreport")
def _check_misreport(w: dict[str, Any]) -> bool:
    market = make_market(w["params"], np.random.default_rng(w["seed"]))
    target = OnlineAuctionTarget(market, w["mechanism"])
    gain, _ = evaluate_misreport(target, int(w["deviator"]), w["report_params"])
    return gain > w["tol"]


# Lies found by earlier runs of these audits and a single-dimension scan of 30 seeds x 2 modes x 6
# deviators (52 of 360 deviators had a profitable lie); re-measured on every run, never trusted.
_C3_KNOWN: dict[str, tuple[tuple[int, str, int, dict[str, float]], ...]] = {
    "C3b": ((20, "global", 4, {"arrival_delay": 1}),),
    "C3c": ((21, "global", 1, {"data_scale": 1.05}),),
    "C3d": ((21, "global", 2, {"epochs": 27}),),
    "C3e": ((24, "global", 4, {"worker_scale": 0.95}), (24, "global", 4, {"ps_scale": 0.95})),
}


def _c3_known(cid: str) -> list[tuple[dict[str, Any], int, dict[str, float], float, float, float]]:
    """(instance, deviator, report params, gain, truthful utility, tol) of the known lies of ``cid``."""
    out = []
    for seed, mode, dev, rep in _C3_KNOWN.get(cid, ()):
        inst = {"params": {**_C3_PARAMS_SMALL, "mode": mode}, "seed": seed}
        target = OnlineAuctionTarget(make_market(inst["params"], np.random.default_rng(seed)), "eris")
        gain, u = evaluate_misreport(target, dev, rep)
        u0 = u - gain
        out.append((inst, dev, rep, gain, u0, _TOL * max(1.0, abs(u0))))
    return out


def _c3_measure(ctx: ClaimContext, families: Callable[[str], bool], cid: str = "") -> Measurement:
    pairs = _c3_audits(ctx)
    viol, worst, witness = 0, 0.0, None
    per_family: dict[str, dict[str, float]] = {}
    instances = {(a["seed"], a["params"]["mode"]) for a, *_ in pairs}
    known = _c3_known(cid)
    for inst, dev, rep, gain, u0, tol in known:
        if gain > tol:
            viol += 1
            if gain > worst:
                worst = gain
                witness = {
                    "kind": "eris_misreport",
                    "mechanism": "eris",
                    **inst,
                    "deviator": dev,
                    "family": "known:" + ",".join(rep),
                    "report_params": rep,
                    "truthful_utility": u0,
                    "gain": gain,
                    "relative_gain": relative(gain, u0),
                    "tol": tol,
                }
    for inst, agent, _target, r in pairs:
        best = 0.0
        best_fb = None
        for f, fb in r.families.items():
            if not families(f):
                continue
            cell = per_family.setdefault(f, {"probed": 0, "violations": 0, "max_gain": 0.0})
            cell["probed"] += 1
            if fb.gain > r.tol:
                cell["violations"] += 1
                cell["max_gain"] = max(cell["max_gain"], fb.gain)
            if fb.gain > best:
                best, best_fb = fb.gain, fb
        if best > r.tol and best_fb is not None:
            viol += 1
            if best > worst:
                worst = best
                witness = {
                    "kind": "eris_misreport",
                    "mechanism": "eris",
                    **inst,
                    "deviator": agent,
                    "family": best_fb.family,
                    "report_params": dict(best_fb.params or {}),
                    "truthful_utility": r.truthful_utility,
                    "gain": best,
                    "relative_gain": relative(best, r.truthful_utility),
                    "tol": r.tol,
                }
    details = {"per_family": per_family, "instances": len(instances), "deviators_audited": len(pairs)}
    details["known_lies_remeasured"] = [{"deviator": k[1], **k[0], "report": k[2], "gain": k[3]} for k in known]
    return Measurement(len(pairs) + len(known), viol, worst, "max true-utility gain of a lie (money)", witness, details)


def _c3_claim(cid: str) -> None:
    dims = C3_GROUPS[cid]
    what, how = _C3_TEXT[cid]
    if cid == "C3a":
        how += "[1/3, 2]"

    @register_claim(
        PAPER,
        cid,
        f"No user can raise its payoff by misreporting {what} (Theorem 3, Definition 1)",
        f"OnlineAuctionTarget on study instances (make_market, R = 4, I = 6, T = 10, both modes; large: R = 8, "
        f"I = 12, T = 20), one deviator at a time (2 per instance when small, all when large), others truthful, "
        f"whole sequence replayed: {how}, Nelder-Mead refinement when large, plus the lies found by earlier audits "
        f"(_C3_KNOWN, re-measured). True utility = realised value under the "
        f"consequence model (§7 C3) minus payment; violation if a deviator gains > 1e-7 max(1, |u|).",
    )
    def fn(ctx: ClaimContext) -> Measurement:
        return _c3_measure(ctx, lambda f: f.split("_", 1)[-1] in dims, cid)

    fn.__name__ = cid.lower()


for _cid in C3_GROUPS:
    _c3_claim(_cid)


@register_claim(
    PAPER,
    "C3f",
    "No user can raise its payoff by misreporting several dimensions jointly (Theorem 3)",
    "Same audits as C3a-e: Latin-hypercube samples of the joint inflation, deflation and mixed boxes over every "
    "reportable dimension (refined when large).",
)
def c3f(ctx: ClaimContext) -> Measurement:
    """Claim C3f of Eris: No user can raise its payoff by misreporting several dimensions jointly (Theorem 3).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    return _c3_measure(ctx, lambda f: f in ("UP_all", "DOWN_all", "MIXED"))


# ---------------------------------------------------------------------------------------------
# C9: empirical claims (welfare vs the baselines)
# ---------------------------------------------------------------------------------------------
_BASELINES = ("tiresias", "antman", "liquid")


@register_witness_checker("eris_welfare")
def _check_welfare(w: dict[str, Any]) -> bool:
    market = make_market(w["params"], np.random.default_rng(w["seed"]))
    e = market.metrics(run_market(market, "eris"), market.bids())["welfare"]
    b = market.metrics(run_market(market, w["baseline"]), market.bids())["welfare"]
    return e < b - _tol(b)


TESTBED_JOBS = (5, 10, 15)
"""Job counts of the testbed panel of ``market/eris/studies/eris.toml`` (Figs. 3-4), checked by C9a / C9b."""


def _c9_runs(ctx: ClaimContext) -> list[dict[str, Any]]:
    """Per (scenario, seed): the study params, the seed and every mechanism's metrics."""

    def compute(rng: np.random.Generator) -> list[dict[str, Any]]:
        testbed = {"scenario": "testbed", "R": 9, "T": 50, "capacity": [1.0, 12.0, 16.0], "arrival_window": 40}
        # the study's testbed panel (Figs. 3-4: I = 5, 10, 15) and a small simulator instance
        configs = [({**testbed, "I": i}, f"testbed I={i}") for i in TESTBED_JOBS]
        configs.append((ctx.pick({"R": 10, "I": 20, "T": 30}, {}), "simulator"))
        out = []
        for params, label in configs:
            for _ in range(ctx.pick(3, 10)):
                seed = int(rng.integers(2**31))
                market = make_market(params, np.random.default_rng(seed))
                met = {n: market.metrics(run_market(market, n), market.bids()) for n in market.mechanisms()}
                out.append({"label": label, "params": params, "seed": seed, "metrics": met})
        return out

    return ctx.shared("c9", compute)


@register_claim(
    PAPER,
    "C9a",
    "Eris achieves higher social welfare than Tiresias, AntMan and Liquid at every sweep point (§VI, Figs. 3, 8-11)",
    "Testbed scenario (§5.2: R = 9 sites of 1 GPU, T = 50) at the study's I = 5, 10, 15 (the Figs. 3-4 panel of "
    "market/eris/studies/eris.toml) and small simulator instances (R = 10, I = 20, T = 30; large: the paper's R = 50, "
    "I = 100, T = 150), global mode, several seeds; welfare with true values; violation = an (instance, "
    "baseline) pair where Eris' welfare is lower.",
)
def c9a(ctx: ClaimContext) -> Measurement:
    """Claim C9a of Eris: Eris achieves higher social welfare than Tiresias, AntMan and Liquid at every sweep point
    (§VI, Figs. 3, 8-11).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    viol, worst, witness, pairs = 0, 0.0, None, 0
    table: dict[str, dict[str, float]] = {}
    for run in _c9_runs(ctx):
        e = run["metrics"]["eris"]["welfare"]
        for name in _BASELINES:
            b = run["metrics"][name]["welfare"]
            pairs += 1
            cell = table.setdefault(f"{run['label']}:{name}", {"instances": 0, "eris_lower": 0})
            cell["instances"] += 1
            if e < b - _tol(b):
                viol += 1
                cell["eris_lower"] += 1
                short = (b - e) / b
                if short > worst:
                    worst = short
                    witness = {
                        "kind": "eris_welfare",
                        "params": run["params"],
                        "seed": run["seed"],
                        "baseline": name,
                        "eris_welfare": e,
                        "baseline_welfare": b,
                    }
    return Measurement(pairs, viol, worst, "max relative welfare shortfall of Eris", witness, {"per_scenario": table})


@register_claim(
    PAPER,
    "C9b",
    "Headline numbers: Eris yields up to 44% more social welfare (abstract); +44% / +50% / +20% over "
    "Tiresias / AntMan / Liquid (contributions list; setting not stated); Eris accepts more jobs (Fig. 4)",
    "Same runs as C9a: relative welfare improvement (W_Eris - W_b) / W_b pooled over the instances of each "
    "scenario (ratio of sums), and admission rates. The paper states no setting for the headline numbers, so "
    "the verdict is inconclusive by construction; the measured numbers are the evidence.",
)
def c9b(ctx: ClaimContext) -> Measurement:
    """Claim C9b of Eris: Headline numbers: Eris yields up to 44% more social welfare (abstract); +44% / +50% / +20%
    over Tiresias / AntMan / Liquid (contributions list; setting not stated); Eris accepts more jobs (Fig. 4).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    runs = _c9_runs(ctx)
    paper = {"tiresias": 0.44, "antman": 0.50, "liquid": 0.20}
    table: dict[str, dict[str, float]] = {}
    for label in sorted({r["label"] for r in runs}):
        rs = [r for r in runs if r["label"] == label]
        we = sum(r["metrics"]["eris"]["welfare"] for r in rs)
        for name in _BASELINES:
            wb = sum(r["metrics"][name]["welfare"] for r in rs)
            table[f"{label}:{name}"] = {
                "improvement": (we - wb) / wb if wb > 0 else math.inf,
                "paper": paper[name],
                "eris_admission": float(np.mean([r["metrics"]["eris"]["admission_rate"] for r in rs])),
                "baseline_admission": float(np.mean([r["metrics"][name]["admission_rate"] for r in rs])),
            }
    sim = [v["improvement"] for k, v in table.items() if k.startswith("simulator:")]
    # the same simulator instances with the baselines sizing jobs to finish in one slot (S_ref = 1,
    # the JCT-minimising size; spec §4.0 uses 8): the improvement depends on this unstated choice
    for r in [r for r in runs if r["label"] == "simulator"]:
        market = make_market({**r["params"], "baseline_slots": 1}, np.random.default_rng(r["seed"]))
        r["metrics_sref1"] = {n: market.metrics(run_market(market, n), market.bids()) for n in _BASELINES}
    sims = [r for r in runs if r["label"] == "simulator"]
    we = sum(r["metrics"]["eris"]["welfare"] for r in sims)
    for name in _BASELINES:
        wb = sum(r["metrics_sref1"][name]["welfare"] for r in sims)
        table[f"simulator S_ref=1:{name}"] = {
            "improvement": (we - wb) / wb if wb > 0 else math.inf,
            "paper": paper[name],
        }
    reason = "paper setting unstated; measured improvements: " + ", ".join(
        f"{k} {v['improvement']:+.0%} (paper {v['paper']:+.0%})" for k, v in table.items()
    )
    return Measurement(
        len(runs),
        0,
        min(sim, default=math.nan),
        "smallest pooled welfare improvement over a baseline (simulator)",
        None,
        {"per_scenario": table},
        verdict="inconclusive",
        reason=reason,
    )


_TRENDS = (  # (sweep key, metric, expected sign of the change from the smallest to the largest value, figure)
    ("R", "welfare", +1, "Fig. 8"),
    ("I", "welfare", -1, "Fig. 9"),
    ("R", "revenue", -1, "Fig. 10"),
    ("I", "revenue", +1, "Fig. 10"),
    ("gamma", "welfare", -1, "Fig. 11"),
)


@register_witness_checker("eris_trend")
def _check_trend(w: dict[str, Any]) -> bool:
    means = []
    for v in (w["values"][0], w["values"][-1]):
        vals = []
        for seed in w["seeds"]:
            market = make_market({**w["base"], w["x"]: v}, np.random.default_rng(seed))
            vals.append(market.metrics(run_market(market, "eris"), market.bids())[w["metric"]])
        means.append(float(np.mean(vals)))
    return bool(np.sign(means[1] - means[0]) != w["expected_sign"])


@register_claim(
    PAPER,
    "C9c",
    "Trends of §VI: welfare increases with R (Fig. 8) and decreases with I (Fig. 9); profit decreases with R and "
    "increases with I (Fig. 10); welfare decreases with gamma_d = gamma_k (Fig. 11)",
    "Eris on simulator instances (small: base R = 15, I = 30, T = 40, 2 seeds; large: R = 50, I = 100, T = 150, "
    "5 seeds), global mode; each trend compares the mean metric at the smallest and largest value of the sweep "
    "(R in {5, 30} / {10, 200}, I in {10, 60} / {50, 300}, gamma in {10, 10000}); violation = the sign of the "
    "change disagrees with the paper. Curves for every mechanism: market/eris/studies/eris.toml.",
)
def c9c(ctx: ClaimContext) -> Measurement:
    """Claim C9c of Eris: Trends of §VI: welfare increases with R (Fig. 8) and decreases with I (Fig. 9); profit
    decreases with R and increases with I (Fig. 10); welfare decreases with gamma_d = gamma_k (Fig. 11).

    :param ctx: the run's size, seed, own generator and the memo shared with the run's other claims
    :returns: instances measured, violations of the claim, the effect size and a witness
    """
    base = ctx.pick({"R": 15, "I": 30, "T": 40}, {"R": 50, "I": 100, "T": 150})
    sweeps = {"R": ctx.pick((5, 30), (10, 200)), "I": ctx.pick((10, 60), (50, 300)), "gamma": (10.0, 10000.0)}
    seeds = [int(s) for s in ctx.rng.integers(2**31, size=ctx.pick(2, 5))]
    cache: dict[tuple[str, float], dict[str, float]] = {}
    for x, values in sweeps.items():
        for v in values:
            mets = []
            for seed in seeds:
                market = make_market({**base, x: v}, np.random.default_rng(seed))
                mets.append(market.metrics(run_market(market, "eris"), market.bids()))
            cache[(x, v)] = {k: float(np.mean([m[k] for m in mets])) for k in ("welfare", "revenue")}
    viol, worst, witness = 0, 0.0, None
    table = {}
    for x, metric, sign, fig in _TRENDS:
        lo, hi = (cache[(x, v)][metric] for v in sweeps[x])
        rel = (hi - lo) / max(abs(lo), 1e-12)
        table[f"{fig}: {metric} vs {x}"] = {"low": lo, "high": hi, "relative_change": rel, "expected_sign": sign}
        if np.sign(hi - lo) != sign:
            viol += 1
            if abs(rel) > worst:
                worst = abs(rel)
                witness = {
                    "kind": "eris_trend",
                    "base": base,
                    "x": x,
                    "values": list(sweeps[x]),
                    "metric": metric,
                    "seeds": seeds,
                    "expected_sign": sign,
                }
    return Measurement(len(_TRENDS), viol, worst, "max relative change against the paper's direction", witness, table)
