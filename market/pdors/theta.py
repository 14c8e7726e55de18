"""Per-slot cost θ(t, v) of PD-ORS (Algorithm 4, spec pdors.md §3.2): co-located candidate,
split placement by LP relaxation (HiGHS, warm-started per slot state) + randomized rounding
(+ repair), cheaper of the two (ties → co-located)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint

from marketsim.market.milp import milp, new_highs
from marketsim.market.pdors.rounding import G_thm3, G_thm4, draw_roundings_reference, repair

__all__ = [
    "SplitLP",
    "SlotProblem",
    "Candidate",
    "DiscardJob",
    "colocated_costs",
    "feasible_rows",
    "rounding_G",
    "slot_W2",
    "split_candidate",
]

EPS = 1e-9
INF = math.inf


class DiscardJob(Exception):
    """Rounding failed ``max_attempts`` times with ``on_rounding_failure="discard_job"``."""


@dataclass(frozen=True)
class Candidate:
    cost: float
    mode: str  # "colocated" | "split" | "split-repaired" | "split-exact"
    w: np.ndarray  # (H,) int
    s: np.ndarray  # (H,) int


@dataclass(frozen=True)
class SlotProblem:
    """One job in one slot: aggregated per-unit prices (H,), residual (H, R), demands (R,), F, γ."""

    pw: np.ndarray
    ps: np.ndarray
    resid: np.ndarray
    prices: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    F: int
    gamma: int


def colocated_costs(sp: SlotProblem, D: np.ndarray, Sps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For worker counts ``D`` (U,) and PS counts ``Sps`` (U,): the cheapest machine that holds the
    whole bundle (ties: lowest id) and its cost; ``(-1, inf)`` when none fits or ``D > F``."""
    use = D[:, None] * sp.alpha[None, :] + Sps[:, None] * sp.beta[None, :]  # (U, R)
    cost = (use[:, None, :] * sp.prices[None, :, :]).sum(axis=2)  # (U, H); sequential sum over r
    fits = (use[:, None, :] <= sp.resid[None, :, :] + EPS * np.maximum(1.0, sp.resid[None, :, :])).all(axis=2)
    fits &= (D <= sp.F)[:, None]
    masked = np.where(fits, cost, INF)
    h = np.argmin(masked, axis=1)
    c = masked[np.arange(D.size), h]
    return np.where(np.isfinite(c), h, -1), c


def feasible_rows(sp: SlotProblem, Wm: np.ndarray, Sm: np.ndarray, W1: float) -> np.ndarray:
    """FEASIBLE for integer rows ``Wm``, ``Sm`` (B, H): capacity (24), cap (25), covering (26), ratio, Σw ≥ 1."""
    use = Wm[:, :, None] * sp.alpha + Sm[:, :, None] * sp.beta
    ok = (use <= sp.resid[None] + EPS * np.maximum(1.0, sp.resid[None])).all(axis=(1, 2))
    nw = Wm.sum(axis=1)
    ok &= (nw <= sp.F) & (nw >= W1 - EPS * max(1.0, W1)) & (nw >= 1)
    ok &= Sm.sum(axis=1) >= nw / sp.gamma - EPS
    return ok


class SplitLP:
    """The split LP (24)–(26) + ratio row on 2H variables, built once per slot state and
    re-solved for each covering RHS ``W1`` with HiGHS warm starts; results cached per ``W1``."""

    def __init__(self, sp: SlotProblem) -> None:
        H, R = sp.resid.shape
        rows, cols, vals, lo, up = [], [], [], [], []
        r = 0
        for h in range(H):
            for k in range(R):
                if sp.alpha[k] > 0 or sp.beta[k] > 0:
                    cs = [c for c, v in ((h, sp.alpha[k]), (H + h, sp.beta[k])) if v > 0]
                    rows += [r] * len(cs)
                    cols += cs
                    vals += [sp.alpha[k] if c < H else sp.beta[k] for c in cs]
                    lo.append(-highspy.kHighsInf)
                    up.append(max(0.0, float(sp.resid[h, k])))
                    r += 1
        self.cover_row = r
        rows += [r] * H
        cols += list(range(H))
        vals += [1.0] * H
        lo.append(0.0)
        up.append(float(sp.F))
        r += 1
        rows += [r] * (2 * H)
        cols += list(range(2 * H))
        vals += [-1.0 / sp.gamma] * H + [1.0] * H
        lo.append(0.0)
        up.append(highspy.kHighsInf)
        r += 1
        A = sparse.csc_matrix((vals, (rows, cols)), shape=(r, 2 * H))
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = 2 * H, r
        lp.col_cost_ = np.concatenate([sp.pw, sp.ps])
        lp.col_lower_ = np.zeros(2 * H)
        lp.col_upper_ = np.full(2 * H, highspy.kHighsInf)
        lp.row_lower_ = np.array(lo)
        lp.row_upper_ = np.array(up)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr
        lp.a_matrix_.index_ = A.indices
        lp.a_matrix_.value_ = A.data
        self.h = new_highs()
        self.h.setOptionValue("output_flag", False)
        self.h.passModel(lp)
        self.H = H
        self.F = sp.F
        self.cache: dict[float, tuple[float, np.ndarray] | None] = {}
        self.solves = 0
        self.seconds = 0.0  # wall time in HiGHS solves (benchmark bookkeeping)

    def solve(self, W1: float) -> tuple[float, np.ndarray] | None:
        """``(value, x̄ (2H,))`` of the LP with covering RHS ``W1``, or ``None`` if infeasible."""
        if W1 in self.cache:
            return self.cache[W1]
        t0 = time.perf_counter()
        self.h.changeRowBounds(self.cover_row, float(W1), float(self.F))
        self.h.run()
        self.solves += 1
        out = None
        if self.h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            x = np.clip(np.array(self.h.getSolution().col_value), 0.0, None)
            xr = np.rint(x)
            x = np.where(np.abs(x - xr) < 1e-9, xr, x)
            out = (float(self.h.getInfo().objective_function_value), x)
        self.cache[W1] = out
        self.seconds += time.perf_counter() - t0
        return out


def _split_exact(sp: SlotProblem, W1: float) -> Candidate | None:
    """The per-slot integer program with the same rows (``per_slot_solver="milp_exact"``)."""
    H, R = sp.resid.shape
    need = int(math.ceil(W1 - EPS))
    rows = [np.concatenate([np.eye(H) * sp.alpha[k], np.eye(H) * sp.beta[k]], axis=1) for k in range(R)]
    A = np.vstack(
        [
            *rows,
            np.concatenate([np.ones(H), np.zeros(H)])[None],
            np.concatenate([-np.ones(H) / sp.gamma, np.ones(H)])[None],
        ]
    )
    lb = np.concatenate([np.full(H * R, -np.inf), [max(need, 1)], [-EPS]])
    ub = np.concatenate([np.concatenate([np.maximum(sp.resid[:, k], 0) for k in range(R)]) + EPS, [sp.F], [np.inf]])
    res = milp(
        np.concatenate([sp.pw, sp.ps]),
        integrality=np.ones(2 * H),
        bounds=Bounds(0, np.inf),
        constraints=LinearConstraint(A, lb, ub),
        options={"time_limit": 10.0, "mip_rel_gap": 1e-9},
    )
    if res.x is None:
        return None
    x = np.rint(res.x).astype(np.int64)
    return Candidate(float(np.dot(sp.pw, x[:H]) + np.dot(sp.ps, x[H:])), "split-exact", x[:H], x[H:])


def slot_W2(sp: SlotProblem) -> float:
    """``W_2 = min{F, Ĉ_h^r/α^r, Ĉ_h^r/β^r : α^r > 0 resp. β^r > 0, Ĉ_h^r > 0}`` (machines with zero
    residual in a demanded resource are excluded, spec §3.4)."""
    W2 = float(sp.F)
    for k in range(sp.alpha.size):
        for dem in (sp.alpha[k], sp.beta[k]):
            if dem > 0:
                pos = sp.resid[:, k][sp.resid[:, k] > 0]
                if pos.size:
                    W2 = min(W2, float(pos.min()) / dem)
    return W2


def rounding_G(sp: SlotProblem, W1: float, G_mode: str, G: float, delta: float) -> float:
    """The rounding scale of one THETA call: ``G`` (fixed), (29) with ``W_2`` (thm3) or (30) with ``W_1`` (thm4)."""
    if G_mode == "fixed":
        return G
    if G_mode == "thm4":
        return G_thm4(W1, delta)
    return G_thm3(slot_W2(sp), sp.alpha.size, sp.pw.size, delta)


def split_candidate(
    sp: SlotProblem,
    lp: SplitLP,
    W1: float,
    upper: float,
    config,
    rng: np.random.Generator,
    stats: dict,
    reference: bool = False,
) -> Candidate | None:
    """Split candidate for covering RHS ``W1``; skipped (``None``) when its LP lower bound cannot beat
    ``upper`` (the co-located cost): any feasible integer split costs at least the LP value.
    ``reference=True`` draws the roundings one at a time in plain Python (benchmark baseline)."""
    H = sp.pw.size
    prune = config.on_rounding_failure != "discard_job"  # the paper profile runs every rounding (it may discard)
    lb = W1 * float(sp.pw.min()) + (W1 / sp.gamma) * float(sp.ps.min())
    if prune and lb >= upper:
        return None
    if config.per_slot_solver == "milp_exact":
        c = _split_exact(sp, W1)
        return c if c is not None and c.cost < upper else None
    sol = lp.solve(W1)
    if sol is None:
        return None
    val, xbar = sol
    if prune and val >= upper:
        return None
    stats["rounding_calls"] = stats.get("rounding_calls", 0) + 1
    G = rounding_G(sp, W1, config.G_mode, config.G, config.delta)
    stats["G_max"] = max(stats.get("G_max", 0.0), G)
    xp = G * xbar
    xr = np.rint(xp)
    xp = np.where(np.abs(xp - xr) < 1e-9, xr, xp)
    # Entries with x' = 0 always round to 0: work on the machines in the support only. Uniforms are
    # drawn for the fractional entries of x' only (workers then PSs, machines ascending).
    M = np.flatnonzero((xp[:H] > 0) | (xp[H:] > 0))
    sub = SlotProblem(sp.pw[M], sp.ps[M], sp.resid[M], sp.prices[M], sp.alpha, sp.beta, sp.F, sp.gamma)
    xs = np.concatenate([xp[M], xp[H + M]])
    m = M.size
    base = np.floor(xs)
    frac_idx = np.flatnonzero(xs > base)
    fr = (xs - base)[frac_idx]

    def full(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = np.zeros(H, dtype=np.int64)
        s_ = np.zeros(H, dtype=np.int64)
        w[M], s_[M] = row[:m], row[m:]
        return w, s_

    def cost_of(X: np.ndarray) -> np.ndarray:
        return X[:, :m] @ sub.pw + X[:, m:] @ sub.ps

    def repaired(X: np.ndarray) -> list[Candidate]:
        out = []
        for row in X:
            w0, s0 = full(row)
            rep = repair(w0, s0, sp.alpha, sp.beta, sp.resid, sp.pw, sp.ps, sp.F, W1, sp.gamma)
            if rep is not None:
                stats["repairs"] = stats.get("repairs", 0) + 1
                out.append(Candidate(float(rep[0] @ sp.pw + rep[1] @ sp.ps), "split-repaired", rep[0], rep[1]))
        return out

    # Capacity row per machine depends only on (round-up of w_h?, round-up of s_h?): a 2x2 table.
    tol = EPS * np.maximum(1.0, sub.resid)
    bw, bs = base[:m], base[m:]
    table = np.empty((m, 2, 2), dtype=bool)
    for dw in (0, 1):
        for ds in (0, 1):
            use = np.outer(bw + dw, sub.alpha) + np.outer(bs + ds, sub.beta)
            table[:, dw, ds] = (use <= sub.resid + tol).all(axis=1)
    rows_m = np.arange(m)

    def feasible_fast(Xb: np.ndarray) -> np.ndarray:
        dW = Xb[:, :m] - bw.astype(np.int64)
        dS = Xb[:, m:] - bs.astype(np.int64)
        ok = table[rows_m, dW, dS].all(axis=1)
        nw = Xb[:, :m].sum(axis=1)
        ok &= (nw <= sub.F) & (nw >= W1 - EPS * max(1.0, W1)) & (nw >= 1)
        ok &= Xb[:, m:].sum(axis=1) >= nw / sub.gamma - EPS
        return ok

    if frac_idx.size == 0:  # deterministic rounding: no draws
        X = base[None].astype(np.int64)
    else:
        base_i = base.astype(np.int64)
        if reference:
            X, ok, draws = draw_roundings_reference(sub, base_i, frac_idx, fr, W1, config, rng)
        else:
            X, ok, draws = draw_roundings(table, sub, base_i, frac_idx, fr, W1, config, rng, feasible_fast)
        stats["draws"] = stats.get("draws", 0) + draws
        if config.repair == "always":
            cands = repaired(X)
            return min(cands, key=lambda c: c.cost) if cands else None
        if not ok.any():
            stats["rounding_failures"] = stats.get("rounding_failures", 0) + 1
            if config.repair == "on_failure":
                cands = repaired(X[-1:])
                return cands[0] if cands else _fail(config)
            return _fail(config)
        X = X[ok]
        costs = cost_of(X)
        i = int(np.argmin(costs))
        w, s_ = full(X[i])
        return Candidate(float(costs[i]), "split", w, s_)
    ok = feasible_rows(sub, X[:, :m], X[:, m:], W1)
    if ok[0]:
        w, s_ = full(X[0])
        return Candidate(float(cost_of(X)[0]), "split", w, s_)
    if config.repair != "never":
        cands = repaired(X)
        return cands[0] if cands else _fail(config)
    return _fail(config)


def _skip_rows(rng: np.random.Generator, rows: int, k: int) -> None:
    """Consume ``rows`` rounding draws of ``k`` uniforms each without materialising them."""
    bg = rng.bit_generator
    if hasattr(bg, "advance"):  # PCG64 (the job streams): one 64-bit output per double
        bg.advance(rows * k)
    else:
        for lo in range(0, rows, 4096):
            rng.random((min(4096, rows - lo), k))


def _surely_infeasible(table: np.ndarray, base: np.ndarray, frac_idx: np.ndarray, sub: SlotProblem, W1: float) -> bool:
    """True when no rounding of ``base`` + Bernoulli round-ups of the ``frac_idx`` entries can be
    FEASIBLE: some machine has no capacity-feasible (round-up worker?, round-up PS?) pair that occurs
    with positive probability, or even the largest reachable Σŵ misses the covering row / Σŵ >= 1,
    the smallest exceeds F, or the ratio row cannot hold. Sound (only proves infeasibility)."""
    m = table.shape[0]
    can = np.zeros(2 * m, dtype=bool)
    can[frac_idx] = True
    ok = table.copy()  # (m, dw, ds)
    ok[~can[:m], 1, :] = False
    ok[~can[m:], :, 1] = False
    if not ok.any(axis=(1, 2)).all():
        return True
    bw, bs = base[:m], base[m:]
    dw_max = np.where(ok[:, 1, :].any(axis=1), 1, 0)
    dw_min = np.where(ok[:, 0, :].any(axis=1), 0, 1)
    n_max, n_min = int((bw + dw_max).sum()), int((bw + dw_min).sum())
    if not (n_max >= W1 - EPS * max(1.0, W1) and n_max >= 1) or n_min > sub.F:
        return True
    # ratio row: Σŝ - Σŵ/γ <= Σ_h max over allowed pairs of (ŝ_h - ŵ_h/γ)
    vals = np.where(
        ok,
        (bs[:, None, None] + np.arange(2)[None, None, :])
        - (bw[:, None, None] + np.arange(2)[None, :, None]) / sub.gamma,
        -np.inf,
    )
    return bool(vals.max(axis=(1, 2)).sum() < -EPS - 1e-9)


def draw_roundings(
    table: np.ndarray,
    sub: SlotProblem,
    base: np.ndarray,
    frac_idx: np.ndarray,
    fr: np.ndarray,
    W1: float,
    config,
    rng: np.random.Generator,
    feasible: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, int]:
    """The draws of Step 13 (``while draws < S or (no feasible draw and draws < max_attempts)``;
    exactly ``S`` with ``repair="always"``), vectorised in growing blocks; the generator ends exactly
    where the one-at-a-time loop would. Returns ``(X, ok, draws)``: every draw and its feasibility,
    or, when none can be feasible (:func:`_surely_infeasible`), only the last draw."""
    k = frac_idx.size
    S, cap = config.S, config.max_attempts
    if config.repair != "always" and _surely_infeasible(table, base, frac_idx, sub, W1):
        _skip_rows(rng, cap - 1, k)
        X = base[None].copy()
        X[:, frac_idx] += rng.random((1, k)) < fr
        return X, np.zeros(1, dtype=bool), cap
    state = rng.bit_generator.state
    X_all, ok_all = [], []
    draws, first_ok, block = 0, None, S
    while True:
        b = min(block, cap - draws)
        Xb = np.broadcast_to(base, (b, base.size)).copy()
        Xb[:, frac_idx] += rng.random((b, k)) < fr
        okb = feasible(Xb)
        if first_ok is None and okb.any():
            first_ok = draws + int(np.argmax(okb))
        X_all.append(Xb)
        ok_all.append(okb)
        draws += b
        if config.repair == "always" or (first_ok is not None and draws >= S) or draws >= cap:
            break
        block = max(256, 4 * block)
    X, ok = np.concatenate(X_all), np.concatenate(ok_all)
    used = draws if config.repair == "always" or first_ok is None else max(S, first_ok + 1)
    if used < draws:  # rewind the stream to where the one-at-a-time loop stops
        rng.bit_generator.state = state
        _skip_rows(rng, used, k)
    return X[:used], ok[:used], used


def _fail(config) -> None:
    if config.on_rounding_failure == "discard_job":
        raise DiscardJob()
    return None
