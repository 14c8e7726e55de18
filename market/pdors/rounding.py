"""G_δ formulas (eqs. (29), (30), (35), (38)), randomized rounding and the repair step (spec §3.2, §3.4);
:func:`draw_roundings_reference` is Step 13 as written, one draw at a time (the oracle of the vectorised
:func:`marketsim.market.pdors.theta.draw_roundings`)."""

from __future__ import annotations

import math

import numpy as np

from marketsim.market.errors import InputError, check_positive

__all__ = [
    "G_lemma1",
    "G_lemma2",
    "G_thm3",
    "G_thm4",
    "remark1_rhs",
    "round_draws",
    "repair",
    "draw_roundings_reference",
]

EPS = 1e-9


def _check_delta(delta: float) -> float:
    d = check_positive("delta", delta)
    if d > 1:
        raise InputError("delta", delta, "must be in (0, 1]")
    return d


def G_lemma1(W_b: float, r: int, delta: float) -> float:
    """(35): the smaller root of ``(1-G)²/G = 3 ln(3r/δ)/W_b`` (0 < G <= 1)."""
    A = 3.0 * math.log(3.0 * r / _check_delta(delta)) / check_positive("W_b", W_b)
    return 1.0 + A / 2.0 - math.sqrt((A / 2.0) ** 2 + A)


def G_lemma2(W_a: float, m: int, delta: float) -> float:
    """(38): the larger root of ``(1-1/G)²·G = 2 ln(3m/δ)/W_a`` (G > 1)."""
    B = math.log(3.0 * m / _check_delta(delta)) / check_positive("W_a", W_a)
    return 1.0 + B + math.sqrt(B * B + 2.0 * B)


def G_thm3(W_2: float, R: int, H: int, delta: float) -> float:
    """(29): (35) with ``r = R·H + 1``."""
    return G_lemma1(W_2, R * H + 1, delta)


def G_thm4(W_1: float, delta: float) -> float:
    """(30): (38) with ``m = 1``."""
    return G_lemma2(W_1, 1, delta)


def remark1_rhs(W_a: float, W_b: float, r: int, delta: float, m: int = 1) -> float:
    """Remark 1: ``3m / exp(G·W_a/2)`` with G from (35)."""
    return 3.0 * m / math.exp(G_lemma1(W_b, r, delta) * W_a / 2.0)


def round_draws(xp: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """(27)–(28): ``floor(x') + 1[U < x' - floor(x')]`` row-wise for uniforms (B, n)."""
    fl = np.floor(xp)
    return (fl[None, :] + (uniforms < (xp - fl)[None, :])).astype(np.int64)


def repair(
    w: np.ndarray,
    s: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
    resid: np.ndarray,
    pw: np.ndarray,
    ps: np.ndarray,
    F: int,
    W1: float,
    gamma: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """REPAIR (framework addition, deterministic): fix capacity, cap, covering and ratio rows of an
    integer split ``(w, s)`` (H,); ``None`` if it cannot."""
    w = np.array(w, dtype=np.int64)
    s = np.array(s, dtype=np.int64)
    H = w.size
    over = ((np.outer(w, alpha) + np.outer(s, beta)) > resid + EPS).any(axis=1)
    for h in np.flatnonzero(over):  # ascending; machines within capacity need no change
        while True:
            exc = alpha * w[h] + beta * s[h] - resid[h]
            if not (exc > EPS).any():
                break
            r = int(np.argmax(exc))
            if w[h] > 0 and (alpha[r] >= beta[r] or s[h] == 0):
                w[h] -= 1
            elif s[h] > 0:
                s[h] -= 1
            else:
                return None
    while w.sum() > F:
        cand = np.flatnonzero(w > 0)
        key = np.lexsort((-cand, -pw[cand]))  # highest price, ties highest id
        w[cand[key[0]]] -= 1

    def room(h: int, dw: int, ds: int) -> bool:
        return bool((alpha * (w[h] + dw) + beta * (s[h] + ds) <= resid[h] + EPS).all())

    need = int(math.ceil(W1 - EPS))
    order_w = np.lexsort((np.arange(H), pw))
    while w.sum() < need:
        if w.sum() >= F:
            return None
        for h in order_w:
            if room(h, 1, 0):
                w[h] += 1
                break
        else:
            return None
    order_s = np.lexsort((np.arange(H), ps))
    while s.sum() < int(math.ceil(w.sum() / gamma - EPS)):
        for h in order_s:
            if room(h, 0, 1):
                s[h] += 1
                break
        else:
            return None
    return w, s


def draw_roundings_reference(sub, base, frac_idx, fr, W1, config, rng):
    """Step 13 as written: draw one rounding (27)-(28) at a time until ``S`` draws and a feasible
    one, or ``max_attempts`` (exactly ``S`` with ``repair="always"``); FEASIBLE by plain loops."""
    H, R = sub.resid.shape
    resid = sub.resid.tolist()
    alpha, beta = sub.alpha.tolist(), sub.beta.tolist()
    fidx, frs = frac_idx.tolist(), fr.tolist()
    b0 = base.tolist()
    need = W1 - EPS * max(1.0, W1)
    rows, oks = [], []
    found = False
    draws = 0
    while draws < config.S or (not found and draws < config.max_attempts):
        u = rng.random(len(fidx)).tolist()
        row = list(b0)
        for i, j in enumerate(fidx):
            if u[i] < frs[i]:
                row[j] += 1
        ok = True
        for h in range(H):
            for r in range(R):
                if row[h] * alpha[r] + row[H + h] * beta[r] > resid[h][r] + EPS * max(1.0, resid[h][r]):
                    ok = False
                    break
            if not ok:
                break
        nw, ns = sum(row[:H]), sum(row[H:])
        ok = ok and nw <= sub.F and nw >= need and nw >= 1 and ns >= nw / sub.gamma - EPS
        rows.append(row)
        oks.append(ok)
        found = found or ok
        draws += 1
        if config.repair == "always" and draws >= config.S:
            break
    return np.array(rows, dtype=np.int64), np.array(oks, dtype=bool), draws
