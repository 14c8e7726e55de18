"""PD-ORS's pricing step on exact workloads (no workload grid).

The paper's DP (Algorithm 3) enumerates the per-slot workload sample by sample. The spec's grid
(``dp="grid"``, §3.3) replaces samples by ``Q`` units of ``V/Q`` samples and credits a slot with the
largest whole number of units its workers cover, which rounds every slot's progress *down*: a job
whose workers do exactly 1 sample per slot for 3 slots is credited 3·13 = 39 of its 40 units
(``Q = 40``) and is rejected or delayed although it fits exactly (the C-P7 "counterexample" of
issue #32 was this artefact). This module removes the grid.

**Options per slot** (:func:`slot_options`). The decision in a slot is a worker count and a
placement mode; everything else follows from it:

* co-located ``D = 1..min(F, ⌈V c^(i)⌉)`` workers (and ``⌈D/γ⌉`` PSs) on the cheapest machine
  that holds them (:func:`marketsim.market.pdors.theta.colocated_costs`): progress ``D / c^(i)`` samples;
* split with covering row ``Σw >= n`` for ``n = 1..min(F, ⌈V c^(e)⌉)`` (the split LP + randomized
  rounding of Algorithm 4, :func:`marketsim.market.pdors.theta.split_candidate`): the candidate's actual
  ``Σw >= n`` workers give progress ``Σw / c^(e)``. A split covering ``n`` is only computed when its
  LP bound can beat the cheapest co-located option with at least as much progress (the same
  pruning as Algorithm 4's "cheaper of the two"; a pruned split is dominated).

Options dominated within the slot (another has at least the progress for at most the cost) are
dropped. THETA is a function of the slot's state (prices and residual capacities): slots in the same
state share one option set, so one set of rounding draws (:func:`marketsim.market.pdors.mechanism.pdors_search`;
in an empty cluster every slot is alike, which keeps the exact DP within ~3x of the grid's CPU time
on the paper workload). Progress is the planned-rate accounting of constraints (3)–(7) that the offline MILP
(:mod:`marketsim.market.pdors.offline`) and the ledger's feasibility check use: ``Σ_t nw_t / c_t >= V``.

**The DP** (:func:`exact_dp`) keys a state by the integer pair ``(A, B)`` = co-located and split
worker-slots so far, whose progress ``A/c^(i) + B/c^(e)`` is computed by the same expression for
every state (never accumulated slot by slot), so two schedules with the same pair have the same
progress bit for bit. A state whose progress reaches ``V`` (relative tolerance :data:`DONE_RTOL`,
the tolerance of the ledger's feasibility check and of :func:`marketsim.market.pdors.mechanism.pdors_realised`)
is *done*; all done states merge into one. After each slot the states are pruned to the Pareto
frontier of (progress, cost): a state is dropped only when another has at least its progress for
at most its cost, which cannot lose an optimum because the future (the remaining slots' options)
depends on a state only through its progress.

*Claim (exactness).* ``Θ[j]`` (:func:`exact_dp`) equals the minimum total cost over all sequences
of one option (or none) per slot ``a..a+j`` whose progress reaches ``V``, and the reconstructed
schedule attains it. *Proof.* By induction over slots: before slot ``j`` the frontier holds, for
every reachable progress value ``P``, a state with progress ``>= P`` and cost ``<=`` the cheapest
way to reach ``P`` (true initially: the single state ``(0, 0)``). Every one-slot extension of
every kept state is generated, so after slot ``j`` the same holds for every extension of every
reachable state (an extension of a dominated state is dominated by the same extension of its
dominator, because progress adds). The done state's cost is therefore the minimum over complete
sequences, and its parent pointers give a sequence with exactly that cost and progress ``>= V``.
*Credited progress = true progress*: a reconstructed schedule's progress is recomputed from its
placements (``Σ nw/c``) by :func:`schedule_progress`, which equals the DP's state (tested on random
instances, ``tests/test_pdors_exact_dp.py``); it can never be understated, and a schedule is
credited with completion exactly when its planned progress reaches ``V``.

Cost: the frontier is at most the number of distinct reachable progress values below ``V``; the
largest frontier of a search is in ``stats["dp_states_max"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from marketsim.market.pdors.model import EPS, PdorsJob, is_colocated
from marketsim.market.pdors.theta import Candidate, SlotProblem, SplitLP, colocated_costs, split_candidate

__all__ = ["DONE_RTOL", "SlotOptions", "slot_options", "exact_dp", "schedule_progress", "ExactDP"]

DONE_RTOL = 1e-9
"""A state is done when its progress is at least ``V (1 - DONE_RTOL)``."""


@dataclass(frozen=True)
class SlotOptions:
    """One slot's non-dominated options: ``cost`` (K,), worker-slot increments ``dA`` (co-located)
    and ``dB`` (split) (K,) ints, progress ``prog`` (K,) samples, and the placements ``cands``."""

    cost: np.ndarray
    dA: np.ndarray
    dB: np.ndarray
    prog: np.ndarray
    cands: tuple[Candidate, ...]


def slot_options(
    job: PdorsJob,
    sp: SlotProblem,
    lp: SplitLP,
    ci: float,
    ce: float,
    config,
    rng: np.random.Generator,
    stats: dict,
    cap: float = math.inf,
) -> SlotOptions:
    """The slot's options (module docstring): co-located worker counts, then split coverings in
    ascending order (the rounding draws come from ``rng`` in that order), pruned to those that no
    other option of the slot dominates (ties: the co-located option, then fewer workers). Options
    costing ``cap`` or more are dropped (``cap`` = the job's largest utility: no schedule that
    contains one has a positive payoff); a split is not computed when its LP bound reaches it."""
    V = float(job.V)
    F = int(job.global_batch)
    d_max = min(F, max(1, int(math.ceil(V * ci - EPS)))) if ci > 0 else 1
    D = np.arange(1, d_max + 1, dtype=np.int64)
    Sps = np.ceil(D / job.ratio - EPS).astype(np.int64)
    hcol, ccol = colocated_costs(sp, D, Sps)
    H = sp.pw.size
    costs: list[float] = []
    dA: list[int] = []
    dB: list[int] = []
    cands: list[Candidate] = []
    for i in np.flatnonzero((hcol >= 0) & (ccol < cap)):
        w = np.zeros(H, dtype=np.int64)
        s = np.zeros(H, dtype=np.int64)
        w[hcol[i]], s[hcol[i]] = D[i], Sps[i]
        costs.append(float(ccol[i]))
        dA.append(int(D[i]))
        dB.append(0)
        cands.append(Candidate(float(ccol[i]), "colocated", w, s))
    # cheapest co-located option with at least d workers, for every d (suffix minimum)
    suffix = np.minimum.accumulate(ccol[::-1])[::-1] if ccol.size else ccol
    n_max = min(F, max(1, int(math.ceil(V * ce - EPS)))) if ce > 0 else 1
    for n in range(1, n_max + 1):
        need = int(math.ceil(n * ci / ce - EPS)) if ce > 0 else 1  # co-located workers with >= progress
        upper = min(float(suffix[need - 1]) if 1 <= need <= suffix.size else math.inf, cap)
        sc = split_candidate(sp, lp, float(n), upper, config, rng, stats)
        if sc is None or sc.cost >= cap:
            continue
        nw = int(sc.w.sum())
        if is_colocated(sc.w, sc.s):  # a "split" that landed on one machine runs at the internal rate
            dA.append(nw)
            dB.append(0)
        else:
            dA.append(0)
            dB.append(nw)
        costs.append(float(sc.cost))
        cands.append(sc)
    cost = np.asarray(costs, dtype=float)
    a = np.asarray(dA, dtype=np.int64)
    b = np.asarray(dB, dtype=np.int64)
    prog = np.minimum(_progress(a, b, ci, ce), V)
    keep = _pareto(prog, cost, np.arange(cost.size))
    return SlotOptions(cost[keep], a[keep], b[keep], prog[keep], tuple(cands[i] for i in keep))


def _progress(A: np.ndarray, B: np.ndarray, ci: float, ce: float) -> np.ndarray:
    """Planned progress ``A/c^(i) + B/c^(e)`` in samples (the one expression every state uses)."""
    with np.errstate(divide="ignore"):
        return A / ci + B / ce


def _pareto(prog: np.ndarray, cost: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Indices (ascending by progress) of the points no other point dominates: sorted by progress
    descending, cost ascending, then ``order`` ascending, a point is kept when its cost is strictly
    below every cost before it."""
    if prog.size == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.lexsort((order, cost, -prog))
    c = cost[idx]
    prev = np.minimum.accumulate(np.r_[np.inf, c[:-1]])
    keep = idx[c < prev]
    return keep[::-1]


@dataclass
class ExactDP:
    """Result of :func:`exact_dp`: ``theta`` (nT,) the cheapest cost of completing by each slot
    (``inf`` if impossible), ``credited`` (nT,) the progress (samples) the DP credits that
    cheapest schedule with (0 where none), and per slot the kept states' parents (for
    :meth:`reconstruct`)."""

    theta: np.ndarray
    parents: list[np.ndarray]
    choice: list[np.ndarray]
    done_index: list[int]
    states_max: int
    credited: np.ndarray

    def reconstruct(self, j_end: int) -> list[int]:
        """Option index per slot ``0..j_end`` (-1 = idle) of the cheapest schedule done by ``j_end``."""
        out = [-1] * (j_end + 1)
        k = self.done_index[j_end]
        if k < 0:
            raise ValueError(f"no schedule completes by slot {j_end}")
        for j in range(j_end, -1, -1):
            out[j] = int(self.choice[j][k])
            k = int(self.parents[j][k])
        return out


def exact_dp(options: list[SlotOptions], V: float, ci: float, ce: float, cap: float = math.inf) -> ExactDP:
    """The DP over slots on exact workloads (module docstring; vectorised per slot: every kept
    state × every option (and idle), then one lexsort for the Pareto frontier). Ties: lower cost,
    then the idle / smaller-progress option in the later slot (work earlier), then the earlier
    parent state. States costing ``cap`` or more are dropped (``Θ`` is then ``inf`` where the
    exact value is ``>= cap``: with ``cap`` the job's largest utility no decision changes), and so
    is every state that costs at least the cheapest done state of its slot (dominated by it)."""
    done_at = V * (1.0 - DONE_RTOL)
    A = np.zeros(1, dtype=np.int64)
    B = np.zeros(1, dtype=np.int64)
    C = np.zeros(1)
    done = np.zeros(1, dtype=bool)
    nT = len(options)
    theta = np.full(nT, math.inf)
    credited = np.zeros(nT)
    parents: list[np.ndarray] = []
    choice: list[np.ndarray] = []
    done_index: list[int] = []
    states_max = 1
    for j, op in enumerate(options):
        K = op.cost.size
        S = A.size
        # option 0 = idle, 1..K = the slot's options (ascending progress)
        oc = np.r_[0.0, op.cost]
        oa = np.r_[0, op.dA]
        ob = np.r_[0, op.dB]
        rank = np.arange(K + 1)
        cA = (A[:, None] + oa[None, :]).ravel()
        cB = (B[:, None] + ob[None, :]).ravel()
        cC = (C[:, None] + oc[None, :]).ravel()
        cdone = np.repeat(done, K + 1)
        par = np.repeat(np.arange(S), K + 1)
        opt = np.tile(rank, S)
        if K:  # a done state only idles (more work adds cost and no progress)
            live = ~cdone | (opt == 0)
            cA, cB, cC, cdone, par, opt = cA[live], cB[live], cC[live], cdone[live], par[live], opt[live]
        prog = _progress(cA, cB, ci, ce)
        nd = cdone | (prog >= done_at)
        best_done = float(cC[nd].min()) if nd.any() else math.inf
        live = (cC < cap) & (nd | (cC < best_done))  # dominated by the cheapest done state, or too dear
        cA, cB, cC, nd, par, opt, prog = cA[live], cB[live], cC[live], nd[live], par[live], opt[live], prog[live]
        prog = np.where(nd, math.inf, prog)  # every done state has the same (top) progress
        keep = _pareto(prog, cC, opt * (S + 1) + par)
        A, B, C, done = cA[keep], cB[keep], cC[keep], nd[keep]
        parents.append(par[keep])
        choice.append(opt[keep] - 1)
        di = np.flatnonzero(done)
        done_index.append(int(di[0]) if di.size else -1)
        if di.size:
            theta[j] = float(C[di[0]])
            credited[j] = float(_progress(A[di[:1]], B[di[:1]], ci, ce)[0])
        states_max = max(states_max, int(A.size))
    return ExactDP(theta, parents, choice, done_index, states_max, credited)


def schedule_progress(job: PdorsJob, workers: dict[int, np.ndarray], ps: dict[int, np.ndarray],
                      slot_hours: float = 1.0) -> float:  # fmt: skip
    """Planned progress of a schedule in samples, ``Σ_t nw_t / c_t`` with ``c`` the internal rate
    when the slot is co-located (Fact 1) and the external one otherwise; summed in slot order."""
    ci, ce = job.c_int(slot_hours), job.c_ext(slot_hours)
    A = B = 0
    for t in sorted(workers):
        nw = int(np.asarray(workers[t]).sum())
        if is_colocated(workers[t], ps[t]):
            A += nw
        else:
            B += nw
    return float(_progress(np.array([A]), np.array([B]), ci, ce)[0])
