"""Baselines of the OEF paper (spec §4): Gavel max-min, Gandiva_fair trading, max-min (equal split /
progressive filling) and pure throughput maximisation (LP 4). Registered under ``gavel``,
``gandiva-fair``, ``maxmin`` and ``max-throughput`` with the fair-share signature
``fn(W, m, *, weights=None, caps=None, **options) -> Allocation`` (``X`` in fractional devices,
``objective`` = ``sum_l W_l . x_l`` under the reported normalised ``W``).
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, SolveError, check_choice, check_int
from marketsim.market.oef import lp
from marketsim.market.oef.maxmin import solve_maxmin_live
from marketsim.market.oef.roundlp import check_aggregate, row_classes, use_aggregation
from marketsim.market.oef.validate import ValidatedInput, cache_key, prepare, trivial_allocation
from marketsim.market.registry import register

__all__ = ["gavel_maxmin", "gandiva_fair", "equal_split", "max_throughput"]

_RESID_FAIL = 1e-5


def _finish(policy: str, v: ValidatedInput, X: np.ndarray, seconds: float, info: dict[str, Any]) -> Allocation:
    return Allocation(X, policy, float(np.einsum("lj,lj->", v.W, X)), None, "optimal", seconds, info)


# ---------------------------------------------------------------------------------------------- 4.1 Gavel


def _gavel_targets(v: ValidatedInput) -> tuple[np.ndarray, np.ndarray]:
    """Proportional shares ``p_l = (m/n) min(1, d_l / sum_j m_j/n)`` and normalisers ``N_l = W_l.p_l``."""
    n = v.n
    eq = v.m.astype(float) / n
    scale = np.minimum(1.0, v.caps / eq.sum())
    P = scale[:, None] * eq[None, :]
    return P, np.einsum("lj,lj->l", v.W, P)


def _gavel_maxmin(
    policy: str, W: np.ndarray, m: np.ndarray, caps: np.ndarray, targets: np.ndarray, solver: str
) -> tuple[np.ndarray, float, float, dict[str, int], str, dict[str, Any]]:
    """The max-min stage ``max s`` s.t. ``W_l.x_l >= s targets_l``, capacity, caps: ``(X, s*, seconds,
    full program sizes, path, decomposition info)``. With ``solver="auto"`` a program large enough for interior point is
    first solved exactly by price decomposition (:mod:`marketsim.market.oef.maxmin`, path ``"decomposition"``;
    rows capped at 0 get nothing), else (or when it gives up) the full LP (path ``"full"``)."""
    R = W.shape[0]
    ka, capped = int((m > 0).sum()), int(np.isfinite(caps).sum())
    sizes = {"variables": R * ka + 1, "ineq_rows": R + ka + capped, "eq_rows": 0,
             "nonzeros": 2 * R * ka + R + ka * capped}  # fmt: skip
    if solver == "auto" and lp.choose_solver("auto", sizes["nonzeros"]) == "highs-ipm":
        t0 = time.perf_counter()
        C = W / np.where(targets > 0, targets, 1.0)[:, None]  # targets are 0 exactly on rows capped at 0
        got = solve_maxmin_live(C, m, d=caps, policy=policy)
        if got is not None:
            return got[0], got[1], time.perf_counter() - t0, sizes, "decomposition", got[2]
    X, extra, dt, sizes, _ = lp.solve_rows(
        policy, lambda W0, m0: lp.build_gavel(W0, m0, caps, targets), W, m, solver
    )
    return X, float(extra[0]), dt, sizes, "full", {}


def _gavel(v: ValidatedInput, opts: dict[str, Any]) -> Allocation:
    policy = "gavel"
    P, N = _gavel_targets(v)
    targets = v.weights * N
    if not (targets > 0).any():  # every row capped at 0 GPUs: nothing to share, s is unbounded
        return _finish(policy, v, np.zeros((v.n, v.k)), 0.0, {"s_star": None, "normalisers": N.tolist()})
    first, cls, counts = row_classes(v.W, v.caps, targets)
    full_nnz = 2 * v.n * v.k + v.n + v.k * int(np.isfinite(v.caps).sum())
    agg = use_aggregation(opts["aggregate"], opts["solver"], first.size, v.n, full_nnz)
    # identical jobs solved once (marketsim.market.oef.roundlp): n_c W_c-rows with n_c times the targets and caps
    if agg:
        W_, caps_, targets_ = v.W[first], v.caps[first] * counts, targets[first] * counts
    else:
        W_, caps_, targets_ = v.W, v.caps, targets
    X, s_star, dt, sizes, path, dec = _gavel_maxmin(policy, W_, v.m, caps_, targets_, opts["solver"])
    info: dict[str, Any] = {"s_star": s_star, "normalisers": N.tolist(), "lp_sizes": sizes, "tiebreak": "none",
                            "aggregated_classes": int(first.size) if agg else None, "lp_path": path,
                            "decomposition": dec}  # fmt: skip
    if opts["tiebreak"] == "max_total":
        floor = s_star * (1.0 - 1e-9)
        X, _, dt2, sizes2, _ = lp.solve_rows(
            policy, lambda W0, m0: lp.build_gavel(W0, m0, caps_, targets_, total_floor=floor), W_, v.m, opts["solver"]
        )
        dt += dt2
        info.update(tiebreak="max_total", lp_sizes_stage2=sizes2)
    if agg:
        X = X[cls] / counts[cls][:, None]
    X = lp.clip_solution(policy, X)
    u = np.einsum("lj,lj->l", v.W, X)
    resid = float(max(0.0, (s_star * targets - u).max()) if opts["tiebreak"] == "none" else 0.0)
    over = max(float((X.sum(axis=0) - v.m).max()), float((X.sum(axis=1) - v.caps).max()))
    if resid > _RESID_FAIL * max(1.0, float(u.sum())) or over > _RESID_FAIL * max(1.0, float(v.m.max())):
        raise SolveError(policy, "residual", f"fairness residual {resid!r}, capacity/cap excess {over!r}")
    return _finish(policy, v, X, dt, info)


_GAVEL_OPTIONS: dict[str, Any] = {"tiebreak": "none", "solver": "auto", "aggregate": "auto"}


@register("gavel", "fair-share", "Gavel heterogeneity-aware max-min fairness with row caps d_l (spec §4.1)")
def gavel_maxmin(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gavel (spec §4.1): ``max s`` s.t. ``W_l.x_l >= s pi_l N_l``, capacity, ``sum_j x_l^j <= d_l``.

    ``caps`` are the row caps ``d_l`` (``None`` = no cap; the paper's toy examples use ``d = 1``).
    ``N_l = W_l.p_l`` with the proportional share ``p_l`` rescaled to ``d_l``. ``info["s_star"]``
    holds ``s*``. Option ``tiebreak``: ``"none"`` (single LP, default) or ``"max_total"``. Option
    ``aggregate`` (``"auto"`` default, ``True``, ``False``): solve identical rows (same speedups,
    cap and weight) once and give them equal shares (:mod:`marketsim.market.oef.roundlp`; same ``s*``);
    ``"auto"`` does so when rows repeat and ``solver="auto"`` would pick interior point. With
    ``solver="auto"`` a program still that large is solved by exact price decomposition
    (:mod:`marketsim.market.oef.maxmin`; ``info["lp_path"]`` is ``"decomposition"`` or ``"full"``).

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    opts, v = prepare("gavel", W, m, weights, caps, options, _GAVEL_OPTIONS)
    check_choice("tiebreak", opts["tiebreak"], ("none", "max_total"))
    check_aggregate(opts["aggregate"])
    triv = trivial_allocation("gavel", v)
    if triv is not None:
        return triv
    return lp.CACHE.get_or_compute(cache_key("gavel", v, opts), lambda: _gavel(v, opts), bool(opts["cache"]))


# ---------------------------------------------------------------------------------------------- 4.2 Gandiva_fair


def _is_exact(*groups: Any) -> bool:
    for g in groups:
        if g is None:
            continue
        for item in np.asarray(g, dtype=object).ravel():
            if isinstance(item, Fraction):
                return True
    return False


def gandiva_trades(
    W: list[list[Any]],
    m: list[Any],
    weights: list[Any],
    *,
    tol: Any = 1e-12,
    max_trades: int | None = None,
    two_party_price: str = "midpoint",
) -> tuple[list[list[Any]], list[dict[str, Any]], str]:
    """Gandiva_fair trading (spec §4.2), generic over the number type (``Fraction`` or ``float``).

    ``W`` normalised speedups (n lists of k), ``m`` capacities, ``weights`` priorities. Returns
    ``(X, trades, stop_reason)``; each trade records ``p, q, buyer, seller, gap, price, rule, qty``
    where ``qty`` is the type-``p`` share paid and ``qty / price`` the type-``q`` share bought.

    :param W: normalised speedups, n lists of k numbers (column 0 = 1)
    :param m: GPUs per type, k numbers
    :param weights: n priorities > 0
    :param tol: the gain a trade must exceed (relative), in the number type of ``W``
    :param max_trades: most trades before stopping (default ``100·n·k²``)
    :param two_party_price: how a trade's price is set between the two parties' rates (``"midpoint"`` or ``"seller"``)
    :returns: ``(X, trades, stop_reason)``: n lists of k GPU shares, the trades made, why trading stopped
    """
    n, k = len(W), len(m)
    if max_trades is None:
        max_trades = 100 * n * k * k
    total = sum(weights)
    X = [[weights[l] * m[j] / total for j in range(k)] for l in range(n)]
    one_plus = 1 + tol if tol != 0 else 1
    trades: list[dict[str, Any]] = []
    for _ in range(max_trades):
        best = None
        for p in range(k):
            for q in range(p + 1, k):
                s = [W[l][q] / W[l][p] for l in range(n)]
                B = [l for l in range(n) if X[l][p] > tol]
                if not B:
                    continue
                buyer = max(B, key=lambda l: (s[l], -l))
                S = [l for l in range(n) if X[l][q] > tol and l != buyer]
                if not S:
                    continue
                seller = min(S, key=lambda l: (s[l], l))
                gap = s[buyer] / s[seller]
                if best is None or gap > best[0]:
                    best = (gap, p, q, buyer, seller, s, B)
        if best is None:
            return X, trades, "no_pair"
        gap, p, q, buyer, seller, s, B = best
        if gap <= one_plus:
            return X, trades, "no_gain"
        C = [s[l] for l in B if l not in (buyer, seller)]
        if C and max(C) >= s[seller]:
            price, rule = max(C), "second_price"
        elif two_party_price == "midpoint":
            price, rule = (s[buyer] + s[seller]) / 2, "midpoint"
        elif two_party_price == "seller":
            price, rule = s[seller], "seller"
        else:
            price, rule = s[buyer], "buyer"
        # qty = min(x_buyer^p, price * x_seller^q); the side that empties is set to exactly 0
        if X[buyer][p] <= price * X[seller][q]:
            qty = X[buyer][p]
            bought = qty / price
        else:
            bought = X[seller][q]
            qty = price * bought
        if qty <= tol:
            return X, trades, "qty_below_tol"
        zero = 0 * qty
        X[buyer][p] = zero if qty == X[buyer][p] else X[buyer][p] - qty
        X[seller][q] = zero if bought == X[seller][q] else max(X[seller][q] - bought, zero)
        X[seller][p] += qty
        X[buyer][q] += bought
        trades.append(
            {"p": p, "q": q, "buyer": buyer, "seller": seller, "gap": gap, "price": price, "rule": rule, "qty": qty}
        )
    return X, trades, "max_trades"


def _gandiva(v: ValidatedInput, opts: dict[str, Any], W_in: Any, m_in: Any) -> Allocation:
    policy = "gandiva-fair"
    t0 = time.perf_counter()
    exact = opts["exact"]
    if exact is None:
        exact = _is_exact(W_in, m_in)
    if exact:
        Wr = [[Fraction(x) if not isinstance(x, Fraction) else x for x in row] for row in _rows(W_in)]
        if opts["normalise"]:
            Wr = [[x / row[0] for x in row] for row in Wr]
        else:
            Wr = [[Fraction(1)] + row[1:] for row in Wr]
        mm = [Fraction(int(x)) for x in v.m]
        ww = [w if isinstance(w, Fraction) else Fraction(w) for w in v.weight_objs]
        tol: Any = Fraction(0)
    else:
        Wr = v.W.tolist()
        mm = [float(x) for x in v.m]
        ww = v.weights.tolist()
        tol = 1e-12
    Xg, trades, reason = gandiva_trades(
        Wr, mm, ww, tol=tol, max_trades=opts["max_trades"], two_party_price=opts["two_party_price"]
    )
    X = np.array([[float(x) for x in row] for row in Xg], dtype=float)
    if not exact:
        X[np.abs(X) < 1e-12] = 0.0
    info: dict[str, Any] = {
        "trades": trades,
        "n_trades": len(trades),
        "stop_reason": reason,
        "exact": bool(exact),
        "prices": [t["price"] for t in trades],
    }
    if exact:
        info["X_exact"] = Xg
    return _finish(policy, v, X, time.perf_counter() - t0, info)


def _rows(W: Any) -> list[list[Any]]:
    if isinstance(W, np.ndarray):
        return [list(r) for r in W.tolist()] if W.dtype != object else [list(r) for r in W]
    return [list(r) for r in W]


@register(
    "gandiva-fair",
    "fair-share",
    "Gandiva_fair: equal split, then greedy second-price trades of slow for fast GPU share (spec §4.2)",
)
def gandiva_fair(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Gandiva_fair (spec §4.2): start from the (weighted) equal split; repeatedly the user with the
    largest speedup ratio on the pair of types with the greatest ratio gap buys fast share from the
    lowest-ratio holder at the second price (two-party fallback ``two_party_price``).

    Exact when ``W`` or ``m`` holds ``fractions.Fraction`` entries (``info["X_exact"]``; weights
    are then used exactly too); floats use ``tol=1e-12``.
    ``info["trades"]`` is the trade log, ``info["stop_reason"]`` why trading stopped. Options:
    ``two_party_price`` in ``{"midpoint", "seller", "buyer"}``, ``max_trades`` (default
    ``100 n k^2``), ``exact`` (``None`` = auto-detect Fractions).

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    extra = {"two_party_price": "midpoint", "max_trades": None, "exact": None}
    opts, v = prepare("gandiva-fair", W, m, weights, caps, options, extra)
    check_choice("two_party_price", opts["two_party_price"], ("midpoint", "seller", "buyer"))
    if opts["max_trades"] is not None:
        check_int("max_trades", opts["max_trades"], minimum=0)
    if opts["exact"] not in (None, True, False):
        raise InputError("exact", opts["exact"], "must be None, True or False")
    triv = trivial_allocation("gandiva-fair", v)
    if triv is not None:
        return triv
    if opts["exact"] or (opts["exact"] is None and _is_exact(W, m)):
        return _gandiva(v, opts, W, m)  # exact results are cheap to recompute; not cached
    return lp.CACHE.get_or_compute(
        cache_key("gandiva-fair", v, opts), lambda: _gandiva(v, opts, W, m), bool(opts["cache"])
    )


# ---------------------------------------------------------------------------------------------- 4.3 Max-Min


def progressive_filling(m: np.ndarray, weights: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Spec §4.3: weighted equal split of ``m`` with per-row caps ``d`` (progressive filling).

    :param m: (k,) GPUs per type
    :param weights: (n,) priorities > 0
    :param caps: (n,) most GPUs each row can use (``inf`` = none)
    :returns: (n, k) fractional GPUs per row and type
    """
    n, k = weights.size, m.size
    X = np.zeros((n, k))
    rem = m.astype(float).copy()
    active = np.ones(n, dtype=bool)
    while active.any() and rem.sum() > 1e-12:
        share = np.zeros((n, k))
        share[active] = (weights[active] / weights[active].sum())[:, None] * rem[None, :]
        row_sum = X.sum(axis=1)
        froze = active & (row_sum + share.sum(axis=1) >= caps)
        if not froze.any():
            X[active] += share[active]
            break
        for l in np.flatnonzero(froze):
            tot = share[l].sum()
            if tot > 0:
                X[l] += share[l] * (caps[l] - row_sum[l]) / tot
        rem = np.maximum(m - X.sum(axis=0), 0.0)
        active &= ~froze
    return X


def _maxmin(v: ValidatedInput, opts: dict[str, Any]) -> Allocation:
    t0 = time.perf_counter()
    if v.has_caps and np.isfinite(v.caps).any():
        X = progressive_filling(v.m, v.weights, v.caps)
        mode = "progressive_filling"
    else:
        X = (v.weights / v.weights.sum())[:, None] * v.m.astype(float)[None, :]
        mode = "equal_split"
    return _finish("maxmin", v, X, time.perf_counter() - t0, {"mode": mode})


@register("maxmin", "fair-share", "Max-min: (weighted) equal split of every GPU type; progressive filling with caps")
def equal_split(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Max-Min (spec §4.3): ``x_l = (pi_l / sum pi) m``; with ``caps`` progressive filling.

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    opts, v = prepare("maxmin", W, m, weights, caps, options, {})
    triv = trivial_allocation("maxmin", v)
    return triv if triv is not None else _maxmin(v, opts)


# ---------------------------------------------------------------------------------------------- 4.4 LP (4)


def _maxthr(v: ValidatedInput, opts: dict[str, Any]) -> Allocation:
    policy = "max-throughput"
    if v.has_caps and np.isfinite(v.caps).any():
        X, _, dt, sizes, _ = lp.solve_rows(
            policy, lambda W_, m_: lp.build_capped_throughput(W_, m_, v.caps), v.W, v.m, opts["solver"]
        )
        X = lp.clip_solution(policy, X)
        return _finish(policy, v, X, dt, {"mode": "lp_with_caps", "lp_sizes": sizes})
    t0 = time.perf_counter()
    X = np.zeros((v.n, v.k))
    winners = np.argmax(v.W, axis=0)  # ties -> lowest row index
    X[winners, np.arange(v.k)] = v.m
    return _finish(policy, v, X, time.perf_counter() - t0, {"mode": "closed_form", "winners": winners.tolist()})


@register(
    "max-throughput",
    "fair-share",
    "Pure throughput maximisation, LP (4): each GPU type to its fastest row (ties -> lowest index)",
)
def max_throughput(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """LP (4) (spec §4.4): closed form (all of ``m_j`` to ``argmax_l w_l^j``, ties to the lowest
    index); with finite ``caps`` an LP with ``sum_j x_l^j <= d_l``. ``weights`` are ignored.

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    opts, v = prepare("max-throughput", W, m, weights, caps, options, {})
    triv = trivial_allocation("max-throughput", v)
    if triv is not None:
        return triv
    return lp.CACHE.get_or_compute(cache_key("max-throughput", v, opts), lambda: _maxthr(v, opts), bool(opts["cache"]))
