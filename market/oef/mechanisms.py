"""OEF allocation policies (paper §4.2, spec A2, A3, A5): matrix-level, registered by name.

All share the fair-share signature ``fn(W, m, *, weights=None, caps=None, **options)``:
``W`` (n, k) reported speedups (column 0 = slowest type), ``m`` (k,) whole GPUs per type,
``weights`` (n,) priorities > 0, ``caps`` (n,) (validated, not used by OEF's LPs). The returned
``Allocation.X`` is (n, k) in input row order, in fractional devices; ``objective`` is
``sum_l W_l . x_l`` under the reported normalised ``W`` (slowest-GPU equivalents).

Common options: ``normalise=True``, ``max_speedup=1e4``, ``require_monotone=False``,
``solver="highs-ds"``, ``cache=True``. OEF options: ``max_rows=5000``,
``weight_denominator_limit=1000``, ``replicate=None`` (auto: replicate when the rows fit in
``max_rows``; ``True``/``False`` force replication / the direct weighted form).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, SolveError, check_choice, check_int
from marketsim.market.oef import lp
from marketsim.market.oef.fast import make_screen
from marketsim.market.oef.validate import ValidatedInput, cache_key, prepare, trivial_allocation
from marketsim.market.oef.virtual import replication_copies, weight_fractions
from marketsim.market.registry import register

__all__ = ["oef_noncoop", "oef_coop", "si_constrained_lp"]

_OEF_OPTIONS: dict[str, Any] = {"max_rows": 5000, "weight_denominator_limit": 1000, "replicate": None}
_RESID_OK = 1e-7
_RESID_FAIL = 1e-5


@functools.lru_cache(maxsize=1024)
def _distinct_weights(values: tuple[float, ...], limit: int) -> tuple[tuple[Fraction, ...], np.ndarray]:
    """:func:`~marketsim.market.oef.virtual.weight_fractions` and :func:`~marketsim.market.oef.virtual.
    replication_copies` of distinct weight values (memoised: a scheduler's rounds reuse a few)."""
    fracs = tuple(weight_fractions(values, limit))
    copies = np.array(replication_copies(fracs), dtype=np.int64)
    copies.flags.writeable = False
    return fracs, copies


def _exact_weights(v: ValidatedInput, limit: int) -> tuple[Sequence[Fraction], np.ndarray, np.ndarray]:
    """The rows' exact weights (:func:`~marketsim.market.oef.virtual.weight_fractions`) as distinct fractions
    and each row's index into them, and the rows' replicas (:func:`~marketsim.market.oef.virtual.
    replication_copies`), computed once per distinct weight: a weight's fraction depends on its
    value alone, and the lcm and gcd on the set of values."""
    if v.fraction_weights:
        fracs = weight_fractions(v.weight_objs, limit)
        return fracs, np.arange(v.n), np.array(replication_copies(fracs), dtype=np.int64)
    check_int("weight_denominator_limit", limit, minimum=1)
    uniq, inv = np.unique(v.weights, return_inverse=True)
    fracs, copies = _distinct_weights(tuple(uniq.tolist()), int(limit))
    inv = inv.ravel()
    return fracs, inv, copies[inv]


class _Rows:
    """LP rows for the input rows: replicas (``omega=None``) or one row each with weights."""

    def __init__(self, v: ValidatedInput, opts: dict[str, Any]) -> None:
        limit = opts["weight_denominator_limit"]
        if not v.has_weights or (np.all(v.weights == v.weights[0]) and not v.fraction_weights):
            # equal weights: one row each, omega = 1 (only weight ratios matter)
            self.equal = True
            self._fracs: Sequence[Fraction] = (Fraction(1),)
            self._inv = np.zeros(v.n, dtype=np.int64)
            self.copies = np.ones(v.n, dtype=np.int64)
        else:
            self.equal = False
            self._fracs, self._inv, self.copies = _exact_weights(v, limit)
        replicate = opts["replicate"]
        if replicate is None:
            replicate = int(self.copies.sum()) <= int(opts["max_rows"])
        elif not isinstance(replicate, (bool, np.bool_)):
            raise InputError("replicate", replicate, "must be None, True or False")
        self.replicated = bool(replicate)
        self.n = v.n
        self._W = v.W
        self._row_of: np.ndarray | None = None
        self.omega = None if self.replicated else np.array([float(f) for f in self._fracs])[self._inv]

    @property
    def omegas(self) -> list[Fraction]:
        """Each input row's exact weight."""
        return [self._fracs[i] for i in self._inv.tolist()]

    @property
    def row_of(self) -> np.ndarray:
        """The input row of each LP row."""
        if self._row_of is None:
            self._row_of = np.repeat(np.arange(self.n), self.copies) if self.replicated else np.arange(self.n)
        return self._row_of

    @property
    def W(self) -> np.ndarray:
        """The LP rows' speedups (replicas repeated)."""
        return self._W[self.row_of] if self.replicated and self.row_of.size != self.n else self._W

    @property
    def lp_rows(self) -> int:
        """Rows of this form of the program (replicas, or one per input row)."""
        return int(self.copies.sum()) if self.replicated else self.n

    def row_weights(self) -> np.ndarray:
        """Each input row's weight in the program's equal-value rows: its replicas (replicated
        form; a replica's value is ``t``) or its exact weight (direct form)."""
        return self.copies.astype(float) if self.replicated else self.omega

    def aggregate(self, X_rows: np.ndarray) -> np.ndarray:
        """Sum the replicas of each input row."""
        if not self.replicated or self.row_of.size == self.n:  # one LP row per input row
            return X_rows
        out = np.zeros((self.n, X_rows.shape[1]))
        np.add.at(out, self.row_of, X_rows)
        return out

    def _strings(self) -> list[str]:
        strs = [str(f) for f in self._fracs]
        return [strs[i] for i in self._inv.tolist()]

    def info(self) -> dict[str, Any]:
        return {
            "form": "replicated" if self.replicated else "direct",
            "lp_rows": self.lp_rows,
            "copies": self.copies.tolist(),
            "weights_exact": ["1"] * self.n if self.equal else self._strings(),
        }


def _distinct_rows(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``W``: the first input row of each (in order of first appearance) and
    each input row's distinct row."""
    n = W.shape[0]
    order = np.lexsort(W.T[::-1])
    Ws = W[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (Ws[1:] != Ws[:-1]).any(axis=1)
    group_sorted = np.cumsum(new) - 1
    first = np.full(int(new.sum()), n, dtype=np.int64)
    np.minimum.at(first, group_sorted, order)
    rank = np.empty(first.size, dtype=np.int64)
    by_first = np.argsort(first, kind="stable")
    rank[by_first] = np.arange(first.size)
    group = np.empty(n, dtype=np.int64)
    group[order] = rank[group_sorted]
    return first[by_first], group


def _check_capacity(policy: str, X: np.ndarray, m: np.ndarray) -> float:
    over = float(np.max(X.sum(axis=0) - m)) if X.size else 0.0
    if over > _RESID_FAIL * max(1.0, float(m.max())):
        raise SolveError(policy, "residual", f"capacity exceeded by {over!r}")
    return max(over, 0.0)


def _check_residual(policy: str, what: str, resid: float, scale: float) -> None:
    if resid > _RESID_FAIL * max(1.0, scale):
        raise SolveError(policy, "residual", f"{what} residual {resid!r} > 1e-5")


def _finish(
    policy: str,
    v: ValidatedInput,
    X: np.ndarray,
    seconds: float,
    info: dict[str, Any],
    common_value: float | None = None,
) -> Allocation:
    objective = float(np.einsum("lj,lj->", v.W, X))
    info.setdefault("status_detail", "optimal")
    return Allocation(X, policy, objective, common_value, "optimal", seconds, info)


def _split(Y: np.ndarray, W: np.ndarray, group: np.ndarray, row_w: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """The devices ``Y`` (g, k) of the distinct rows ``W`` (g, k) (weights ``omega`` (g,)) handed to
    the input rows (``group`` (n,) their distinct row, ``row_w`` (n,) their weights) by the
    north-west corner rule: within a distinct row, its input rows in input order take their shares
    ``row_w / omega`` of its throughput from its types in type order (slowest first). Every input
    row gets ``row_w`` times the program's ``t``, the devices add up to ``Y``, and the result is a
    basic solution of the unmerged program, as a simplex vertex would be (identical rows are not
    given the same devices; a caller that draws which identical row gets which, as the trace engine
    does, keeps that draw)."""
    n = group.size
    order = np.argsort(group, kind="stable")  # input rows by distinct row, then input order
    share = row_w[order] / omega[group[order]]
    hi_sorted = np.cumsum(share)
    starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
    base = np.repeat(hi_sorted[starts] - share[starts], np.diff(np.r_[starts, n]))
    lo, hi = np.empty(n), np.empty(n)
    lo[order], hi[order] = hi_sorted - share - base, hi_sorted - base  # [lo, hi): the row's part of [0, 1)
    hi[order[np.r_[starts[1:] - 1, n - 1]]] = 1.0  # each distinct row's last input row ends at 1
    thr = W * Y
    tot = thr.sum(axis=1, keepdims=True)
    F = np.zeros((Y.shape[0], Y.shape[1] + 1))
    F[:, 1:] = np.cumsum(thr, axis=1) / np.where(tot > 0, tot, 1.0)  # the types' parts of [0, 1)
    F[:, -1] = 1.0
    Fg = F[group]
    overlap = np.clip(np.minimum(hi[:, None], Fg[:, 1:]) - np.maximum(lo[:, None], Fg[:, :-1]), 0.0, None)
    width = Fg[:, 1:] - Fg[:, :-1]
    return np.where(width > 0, Y[group] * overlap / np.where(width > 0, width, 1.0), 0.0)


def _noncoop(v: ValidatedInput, opts: dict[str, Any]) -> Allocation:
    """LP (9) on the distinct rows (:func:`_distinct_rows`) when rows repeat or are replicated:
    identical rows (and replicas) are interchangeable, so one program row per distinct speedup
    vector, weighted by the sum of its rows' weights (replicas or exact weights), has the same
    optimum, and :func:`_split` hands each distinct row's devices to its input rows."""
    policy = "oef-noncoop"
    rows = _Rows(v, opts)
    first, group = _distinct_rows(v.W) if v.n > 1 else (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    row_w = rows.row_weights()
    merge = first.size < v.n or rows.lp_rows > v.n
    if merge:  # one program row per distinct row, weighted by its rows' weights
        W_lp, omega = v.W[first], np.bincount(group, weights=row_w, minlength=first.size)
    else:  # one program row per input row, as given
        W_lp, omega = v.W, rows.omega
    if opts["solver"] == "highs-ds":
        warm, ids = opts["warm_start"], None
        if warm is not None:
            base = list(range(v.n)) if opts["row_ids"] is None else list(opts["row_ids"])
            # a distinct row is known across rounds by its speedups
            ids = [r.tobytes() for r in W_lp] if merge else base
        X_lp, t, dt, sizes, solve_info = lp.solve_noncoop(policy, W_lp, v.m, omega, warm=warm, ids=ids)
    else:
        X_lp, extra, dt, sizes, _ = lp.solve_rows(
            policy, lambda W_, m_: lp.build_noncoop(W_, m_, omega), W_lp, v.m, opts["solver"]
        )
        t, solve_info = float(extra[0]), {}
    X_lp = lp.clip_solution(policy, X_lp)
    X = _split(X_lp, W_lp, group, row_w, omega) if merge else X_lp
    u = np.einsum("lj,lj->l", v.W, X)
    resid = float(np.max(np.abs(u - t * row_w)))
    _check_residual(policy, "equal-value (W_l.x_l = t)", resid, t)
    cap_resid = _check_capacity(policy, X, v.m)
    per_copy = u / rows.copies
    info = {**rows.info(), "solved_rows": int(W_lp.shape[0]), "lp_sizes": sizes, "t_lp": t, "residual": resid,
            "capacity_residual": cap_resid}  # fmt: skip
    info.update(solve_info)
    info["residual_ok"] = resid <= _RESID_OK * max(1.0, t)
    return _finish(policy, v, X, dt, info, float(per_copy.mean()))


def _coop(v: ValidatedInput, opts: dict[str, Any]) -> Allocation:
    policy = "oef-coop"
    rows = _Rows(v, opts)
    R, k = rows.W.shape
    mode = opts["ef_rows"]
    if mode == "auto":
        mode = "lazy" if opts["solver"] == "highs-ds" and R > int(opts["lazy_min_rows"]) else "full"
    full_sizes = {
        "variables": R * k,
        "ineq_rows": k + R * (R - 1),
        "eq_rows": 0,
        "nonzeros": R * k + 2 * k * R * (R - 1),
    }
    if mode == "full":
        X_rows, _, dt, sizes, _ = lp.solve_rows(
            policy, lambda W_, m_: lp.build_coop(W_, m_, rows.omega), rows.W, v.m, opts["solver"]
        )
        extra: dict[str, Any] = {"ef_rows": "full"}
    else:
        X_rows, dt, extra = lp.solve_coop(
            policy,
            rows.W,
            v.m,
            rows.omega,
            opts["solver"],
            int(opts["lazy_per_row"]),
            int(opts["lazy_window"]),
            int(opts["lazy_per_col"]),
            int(opts["lazy_drop_after"]),
        )
    X_rows = lp.clip_solution(policy, X_rows)
    envy, U = lp.row_envy(rows.W, X_rows, rows.omega)
    resid = float(max(envy.max(), 0.0)) if envy.size else 0.0
    _check_residual(policy, "envy-freeness", resid, U)
    cap_resid = _check_capacity(policy, X_rows, v.m)
    X = rows.aggregate(X_rows)
    info = {**rows.info(), **extra, "lp_sizes": full_sizes, "residual": resid, "capacity_residual": cap_resid}
    info["residual_ok"] = resid <= _RESID_OK * max(1.0, U)
    return _finish(policy, v, X, dt, info)


_COOP_OPTIONS: dict[str, Any] = {
    **_OEF_OPTIONS,
    "ef_rows": "auto",
    "lazy_min_rows": 0,
    "lazy_per_row": 1,
    "lazy_window": 2,
    "lazy_per_col": 1,
    "lazy_drop_after": 2,
}


_NONCOOP_OPTIONS: dict[str, Any] = {**_OEF_OPTIONS, "warm_start": None, "row_ids": None}


def _check_warm(opts: dict[str, Any], n: int) -> None:
    warm, ids = opts["warm_start"], opts["row_ids"]
    if warm is not None and not isinstance(warm, lp.NoncoopWarmStart):
        raise InputError("warm_start", warm, "must be None or a marketsim.market.oef.lp.NoncoopWarmStart")
    if ids is not None:
        try:
            ids = list(ids)
            unique = len(set(ids)) == len(ids)
        except TypeError as exc:
            raise InputError("row_ids", opts["row_ids"], "must be a sequence of hashable ids") from exc
        if len(ids) != n or not unique:
            raise InputError("row_ids", opts["row_ids"], f"must hold {n} distinct ids, one per row")


def _run(policy: str, compute: Any, W: Any, m: Any, weights: Any, caps: Any, options: dict[str, Any]) -> Allocation:
    extra = {"oef-coop": _COOP_OPTIONS, "oef-noncoop": _NONCOOP_OPTIONS}.get(policy, _OEF_OPTIONS)
    opts, v = prepare(policy, W, m, weights, caps, options, extra)
    if policy == "oef-coop":
        check_choice("ef_rows", opts["ef_rows"], ("auto", "full", "lazy"))
        check_int("lazy_min_rows", opts["lazy_min_rows"], minimum=0)
        check_int("lazy_per_row", opts["lazy_per_row"], minimum=1)
        check_int("lazy_window", opts["lazy_window"], minimum=0)
        check_int("lazy_per_col", opts["lazy_per_col"], minimum=0)
        check_int("lazy_drop_after", opts["lazy_drop_after"], minimum=0)
    if policy == "oef-noncoop":
        _check_warm(opts, v.n)
    triv = trivial_allocation(policy, v)
    if triv is not None:
        return triv
    if not opts["cache"] or opts.get("warm_start") is not None:  # a warm start must see every round
        return compute(v, opts)
    return lp.CACHE.get_or_compute(cache_key(policy, v, opts), lambda: compute(v, opts))


@register(
    "oef-noncoop",
    "fair-share",
    "OEF non-cooperative: max total throughput s.t. equal per-row throughput (LP 9, compact form)",
    paper="oef",
    claims_truthful=True,
    screen=make_screen,
)
def oef_noncoop(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """OEF non-cooperative mode (spec A2): every (replicated) row gets the same reported throughput
    ``t*``; ``common_value`` is ``t*`` per replica (per unit of gcd-reduced integer weight).

    Rows with the same normalised speedups (and a row's replicas) are interchangeable in LP (9): the
    program is solved with one row per distinct speedup vector weighted by the sum of its rows'
    weights (the same optimum; ``info["solved_rows"]``, while ``info["lp_rows"]`` is the size of
    the replicated or direct form), and its devices go to those rows by the north-west corner rule
    (a basic solution of the unmerged program; see ``_split``).

    With the default ``solver="highs-ds"`` LP (9) is solved by :func:`marketsim.market.oef.lp.solve_noncoop`:
    the staircase vertex of paper Lemma 3.1 when its LP-duality certificate holds (``info
    ["noncoop_path"] == "staircase"``; always on ordered speedups), else, from 100 rows per GPU
    type, exact price decomposition (:mod:`marketsim.market.oef.maxmin`, ``"decomposition"``), else HiGHS's
    simplex from the staircase basis (``"highs"``); other solvers go through scipy's ``linprog`` on
    the compact LP.

    Warm start across rounds (default solver only): pass ``warm_start=``
    :class:`marketsim.market.oef.lp.NoncoopWarmStart` (one object kept across rounds) and ``row_ids`` (one
    distinct hashable id per row, e.g. job ids; default the row positions); from 64 rows the round
    is solved by the decomposition from the previous round's prices and reduced program, else HiGHS
    starts from the previous round's optimal basis mapped onto this round's rows
    (``info["warm_start"]``; docs/round_lp.md); a merged row is known across rounds by its speedups.
    The cache is bypassed for such calls.

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    return _run("oef-noncoop", _noncoop, W, m, weights, caps, options)


@register(
    "oef-coop",
    "fair-share",
    "OEF cooperative: max total throughput s.t. pairwise envy-freeness (LP 10, typo fixed)",
    paper="oef",
)
def oef_coop(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """OEF cooperative mode (spec A3/A3'): maximal total throughput among envy-free allocations
    (weighted EF ``W_l.x_l/pi_l >= W_l.x_i/pi_i`` when weighted).

    Extra options: ``ef_rows`` = ``"auto"`` (default: ``"lazy"`` with the default solver
    ``"highs-ds"`` and more than ``lazy_min_rows`` (default 0) LP rows, else ``"full"``),
    ``"full"`` (all ``R(R-1)`` sparse EF rows, as the spec builds them, solved by scipy's
    ``linprog``) or ``"lazy"`` (:func:`marketsim.market.oef.lp.solve_coop`: constraint generation in one
    warm-started HiGHS model, seeded with the EF rows of rows at most ``lazy_window`` (default 2)
    apart in speedup order, then per round the ``lazy_per_row`` (default 1) most violated EF
    rows of each envious row and the ``lazy_per_col`` (default 1) most violated of each envied row,
    deleting EF rows whose slack stayed basic over ``lazy_drop_after`` (default 2; 0: never)
    consecutive solves, until none of the ``R(R-1)`` is violated; an optimal vertex of the full
    LP 10, the same optimum). ``info["lp_sizes"]`` always reports the full LP's size.

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    return _run("oef-coop", _coop, W, m, weights, caps, options)


def _si(v: ValidatedInput, opts: dict[str, Any]) -> Allocation:
    policy = "si-constrained"
    share = v.weights / v.weights.sum()
    thresholds = share * (v.W @ v.m.astype(float))
    X, _, dt, sizes, _ = lp.solve_rows(
        policy, lambda W_, m_: lp.build_si_constrained(W_, m_, thresholds), v.W, v.m, opts["solver"]
    )
    X = lp.clip_solution(policy, X)
    u = np.einsum("lj,lj->l", v.W, X)
    resid = float(max(0.0, (thresholds - u).max()))
    _check_residual(policy, "sharing-incentive", resid, float(u.sum()))
    cap_resid = _check_capacity(policy, X, v.m)
    info = {"lp_sizes": sizes, "thresholds": thresholds.tolist(), "residual": resid, "capacity_residual": cap_resid}
    return _finish(policy, v, X, dt, info)


@register(
    "si-constrained",
    "fair-share",
    "Auxiliary: max total throughput s.t. sharing incentive W_l.x_l >= (pi_l/sum pi) W_l.m (A5)",
    paper="oef",
)
def si_constrained_lp(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """A5 ``si_constrained_lp``: maximise ``sum_l W_l.x_l`` subject to capacity and the (weighted)
    sharing-incentive thresholds ``W_l.x_l >= (pi_l / sum pi) W_l.m`` (Theorem 3.3's program).

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) GPUs per type, >= 0
    :param weights: (n,) priorities > 0; ``None``: equal
    :param caps: (n,) most GPUs a row can use at once; ``None``: no caps
    :param options: the policy's options (e.g. ``solver``); an unknown one is an error
    :returns: the allocation (``X`` in GPUs per row and type, time-averaged)
    :raises InputError: invalid ``W``, ``m``, ``weights``, ``caps`` or options
    """
    opts, v = prepare("si-constrained", W, m, weights, caps, options, {})
    triv = trivial_allocation("si-constrained", v)
    if triv is not None:
        return triv
    return lp.CACHE.get_or_compute(cache_key("si-constrained", v, opts), lambda: _si(v, opts), bool(opts["cache"]))
