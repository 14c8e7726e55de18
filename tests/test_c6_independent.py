"""Independent re-derivation of OEF claim C6 ("users are allocated adjacent GPU types", Theorem 5.2).

Shares no code with the ledger's face LPs (``marketsim.market.oef.claims._no_contiguous_optimum``) nor with
``marketsim.market.oef.lp``: the LPs are built here densely from the paper's formulas (LP (9): max total
throughput s.t. capacity and equal throughput across users; LP (10) with (10c) read as envy-freeness
``W_l.x_l >= W_l.x_i``), and a row "has a contiguous optimum" is decided by a MILP (HiGHS through
highspy, gap tolerances 0, feasibility 1e-9) with binary support indicators ``y_j`` of the row:
``eps·y_j <= x_rj <= m_j·y_j``, contiguity ``y_a + y_c - 1 <= y_b`` for ``a < b < c``, and the total
throughput within ``delta·f*`` of the optimum ``f*`` (feasibility form). The optimisation form maximises
the total over contiguous supports: ``g = (f* - f_c(eps)) / eps`` is the throughput lost per GPU that
contiguity forces. ``f* - f_c(eps)`` is piecewise linear and convex in ``eps`` with value 0 at ``eps = 0``
(an optimum is in the closure of the contiguous allocations: add ``eps`` on the gap types), so a row with
no contiguous optimum loses at a finite rate ``g > 0`` that is constant in small ``eps`` (the feasibility form
flips once ``delta·f*`` exceeds ``g·eps``: delta means something only next to eps), while a row with a
contiguous optimum (a tie) has ``g = 0``. Verdicts are confirmed in exact rational arithmetic: the float
basis re-solved with :class:`fractions.Fraction` (primal and dual feasibility and strictly positive
reduced costs off the basis prove the optimum unique), or, when the optimum is not unique, every vertex
of the optimal face enumerated (R·k <= 6).

``python tests/test_c6_independent.py`` prints the delta/eps table of ``docs/c6_independent.md``.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import highspy
import numpy as np
import pytest

from marketsim.market import registry
from marketsim.market.oef.claims import measure

INF = highspy.kHighsInf


def paper_lp(mode: str, W: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Dense LP ``max c.x`` s.t. ``lo <= A x <= hi``, ``x >= 0`` (row-major ``x[l*k + j]``):
    capacity rows, then envy-freeness ``W_l.x_i - W_l.x_l <= 0`` (``"coop"``) or equal throughput
    ``W_l.x_l - W_{l+1}.x_{l+1} = 0`` (``"noncoop"``). Returns ``(c, A, lo, hi)``."""
    R, k = W.shape
    rows, lo, hi = [], [], []
    for j in range(k):
        r = np.zeros(R * k)
        r[j::k] = 1.0
        rows.append(r)
        lo.append(-INF)
        hi.append(float(m[j]))
    if mode == "coop":
        for l, i in itertools.permutations(range(R), 2):
            r = np.zeros(R * k)
            r[i * k : (i + 1) * k] += W[l]
            r[l * k : (l + 1) * k] -= W[l]
            rows.append(r)
            lo.append(-INF)
            hi.append(0.0)
    elif mode == "noncoop":
        for l in range(R - 1):
            r = np.zeros(R * k)
            r[l * k : (l + 1) * k] = W[l]
            r[(l + 1) * k : (l + 2) * k] = -W[l + 1]
            rows.append(r)
            lo.append(0.0)
            hi.append(0.0)
    else:
        raise ValueError(f"mode: unknown {mode!r}")
    return W.ravel().astype(float), np.array(rows), np.array(lo), np.array(hi)


def _highs(
    c: np.ndarray,
    A: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    integrality: list | None = None,
) -> highspy.Highs:
    """Solve ``max c.x`` s.t. ``lo <= A x <= hi``, ``col_lo <= x <= col_hi`` (dense ``A``) with HiGHS."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for opt, v in (("primal_feasibility_tolerance", 1e-9), ("dual_feasibility_tolerance", 1e-9),
                   ("mip_feasibility_tolerance", 1e-9), ("mip_rel_gap", 0.0), ("mip_abs_gap", 0.0),
                   ("random_seed", 0), ("threads", 1)):  # fmt: skip
        # threads = 1 like marketsim.market.oef.lp: HiGHS's task scheduler is global, and a solver started with
        # more threads makes every later single-threaded Highs in the process fail (status Not Set)
        h.setOptionValue(opt, v)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.asarray(col_lo, dtype=float), np.asarray(col_hi, dtype=float)
    lp.row_lower_, lp.row_upper_ = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    lp.sense_ = highspy.ObjSense.kMaximize
    cols = [np.flatnonzero(A[:, j]) for j in range(A.shape[1])]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.r_[0, np.cumsum([len(ix) for ix in cols])].astype(np.int32)
    lp.a_matrix_.index_ = np.concatenate(cols).astype(np.int32) if cols else np.zeros(0, np.int32)
    lp.a_matrix_.value_ = np.concatenate([A[ix, j] for j, ix in enumerate(cols)]) if cols else np.zeros(0)
    if integrality is not None:
        lp.integrality_ = integrality
    h.passModel(lp)
    h.run()
    return h


def lp_optimum(mode: str, W: np.ndarray, m: np.ndarray) -> tuple[float, np.ndarray, highspy.Highs]:
    """``(f*, x, solver)``: the paper LP's optimum total throughput and a vertex solution."""
    c, A, lo, hi = paper_lp(mode, W, m)
    n = c.size
    h = _highs(c, A, lo, hi, np.zeros(n), np.full(n, INF))
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    x = np.array(h.getSolution().col_value)
    return float(h.getInfo().objective_function_value), x.reshape(W.shape), h


def best_contiguous(
    mode: str, W: np.ndarray, m: np.ndarray, row: int, eps: float, floor: float | None = None
) -> float | None:
    """MILP: the largest total throughput of the paper LP over allocations whose row ``row`` has a
    contiguous support with every used entry ``>= eps`` GPUs (the empty support included); with
    ``floor`` a feasibility problem (total ``>= floor``, objective 0). ``None`` when infeasible."""
    c, A, lo, hi = paper_lp(mode, W, m)
    R, k = W.shape
    n = R * k
    big = np.zeros((0, n + k))
    extra, elo, ehi = [], [], []
    for j in range(k):  # x_rj - m_j y_j <= 0 and eps y_j - x_rj <= 0
        r = np.zeros(n + k)
        r[row * k + j], r[n + j] = 1.0, -float(m[j])
        extra.append(r)
        elo.append(-INF)
        ehi.append(0.0)
        r = np.zeros(n + k)
        r[row * k + j], r[n + j] = -1.0, eps
        extra.append(r)
        elo.append(-INF)
        ehi.append(0.0)
    for a, b, cc in itertools.combinations(range(k), 3):  # y_a + y_c - y_b <= 1
        r = np.zeros(n + k)
        r[n + a], r[n + cc], r[n + b] = 1.0, 1.0, -1.0
        extra.append(r)
        elo.append(-INF)
        ehi.append(1.0)
    if floor is not None:
        extra.append(np.r_[c, np.zeros(k)])
        elo.append(floor)
        ehi.append(INF)
    big = np.vstack([np.hstack([A, np.zeros((A.shape[0], k))]), np.array(extra)])
    cost = np.zeros(n + k) if floor is not None else np.r_[c, np.zeros(k)]
    integ = [highspy.HighsVarType.kContinuous] * n + [highspy.HighsVarType.kInteger] * k
    h = _highs(cost, big, np.r_[lo, elo], np.r_[hi, ehi], np.zeros(n + k), np.r_[np.full(n, INF), np.ones(k)], integ)
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kInfeasible:
        return None
    assert st == highspy.HighsModelStatus.kOptimal, h.modelStatusToString(st)
    sol = np.array(h.getSolution().col_value)
    return float(c @ sol[:n])


def contiguity_loss(mode: str, W: np.ndarray, m: np.ndarray, eps: float) -> tuple[float, np.ndarray]:
    """``(f*, g)``: per row, ``g = (f* - f_c(eps)) / eps``, the total throughput lost per GPU that a
    contiguous support with entries ``>= eps`` forces (``inf`` when none is feasible). A row whose
    support can be made contiguous only by putting mass on types no optimum uses loses at a finite
    rate ``g > 0`` that does not depend on ``eps``; a row with a contiguous optimum loses nothing."""
    f, _, _ = lp_optimum(mode, W, m)
    out = []
    for r in range(W.shape[0]):
        fc = best_contiguous(mode, W, m, r, eps)
        out.append(np.inf if fc is None else (f - fc) / eps)
    return f, np.array(out)


TAU = 1e-6
"""Independent verdict: a row has no contiguous optimum when its loss rate exceeds ``TAU · max W``
throughput per GPU (the solvers' noise is ~1e-9 absolute, i.e. ~1e-6 per GPU at eps = 1e-3)."""


def independent_count(mode: str, W: np.ndarray, m: np.ndarray, eps: float = 1e-3) -> int:
    """Rows with no contiguous optimum by the loss-rate criterion (:data:`TAU`)."""
    _, g = contiguity_loss(mode, W, m, eps)
    return int((g > TAU * float(W.max())).sum())


def no_contiguous_optimum_rows(mode: str, W: np.ndarray, m: np.ndarray, delta: float, eps: float) -> int:
    """Feasibility form: rows for which no allocation within ``delta·f*`` of the optimum (relative)
    has a contiguous support with entries ``>= eps`` GPUs. A structural row flips to "contiguous" once
    ``delta·f*`` exceeds ``g·eps`` (its loss rate times eps), so delta only means something next to eps."""
    f, _, _ = lp_optimum(mode, W, m)
    return sum(best_contiguous(mode, W, m, r, eps, floor=f * (1 - delta)) is None for r in range(W.shape[0]))


# ---------------------------------------------------------------------------------------------
# exact certificate: unique optimum from a float basis re-solved in rationals
# ---------------------------------------------------------------------------------------------
def _solve_exact(M: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction]:
    n = len(M)
    A = [row[:] + [rhs[i]] for i, row in enumerate(M)]
    for col in range(n):
        piv = next(r for r in range(col, n) if A[r][col] != 0)
        A[col], A[piv] = A[piv], A[col]
        for r in range(n):
            if r != col and A[r][col] != 0:
                f = A[r][col] / A[col][col]
                A[r] = [a - f * b for a, b in zip(A[r], A[col], strict=True)]
    return [A[i][n] / A[i][i] for i in range(n)]


def exact_unique_optimum(mode: str, W: np.ndarray, m: np.ndarray) -> list[list[Fraction]] | None:
    """The paper LP's optimum as exact fractions of the float instance, if HiGHS's optimal basis is
    certified in rational arithmetic to be primal feasible, optimal, and the UNIQUE optimum (every
    non-basic column, slacks included, has a strictly positive reduced cost); ``None`` otherwise."""
    R, k = W.shape
    c, A, lo, hi = paper_lp(mode, W, m)
    _, _, h = lp_optimum(mode, W, m)
    basis = h.getBasis()
    basic = highspy.HighsBasisStatus.kBasic
    nrow, n = A.shape
    # standard form: A x + s = b with s >= 0 for <= rows (hi finite, lo -inf), no slack for equalities
    Af = [[Fraction(float(v)) for v in row] for row in A]
    b = [Fraction(float(v)) for v in hi]
    is_ineq = [lo[i] == -INF for i in range(nrow)]
    # columns: x_0..x_{n-1}, then one slack per inequality row
    slack_of = {}
    for i in range(nrow):
        if is_ineq[i]:
            slack_of[i] = n + len(slack_of)
    ncol = n + len(slack_of)

    def column(j: int) -> list[Fraction]:
        if j < n:
            return [Af[i][j] for i in range(nrow)]
        i = next(r for r, s in slack_of.items() if s == j)
        return [Fraction(int(r == i)) for r in range(nrow)]

    cost = [Fraction(float(v)) for v in c] + [Fraction(0)] * len(slack_of)  # maximise
    B = [j for j in range(n) if basis.col_status[j] == basic]
    B += [slack_of[i] for i in range(nrow) if basis.row_status[i] == basic and is_ineq[i]]
    if len(B) != nrow:
        return None
    cols = [column(j) for j in B]
    Bm = [[cols[q][i] for q in range(nrow)] for i in range(nrow)]
    try:
        zB = _solve_exact(Bm, b)
        y = _solve_exact([[cols[q][i] for i in range(nrow)] for q in range(nrow)], [cost[j] for j in B])
    except StopIteration:  # singular basis
        return None
    if any(v < 0 for v in zB):
        return None
    for j in range(ncol):
        if j in B:
            continue
        red = sum((yi * ai for yi, ai in zip(y, column(j), strict=True)), Fraction(0)) - cost[j]
        if red <= 0:  # maximisation: > 0 everywhere off the basis means a unique optimum
            return None
    x = [Fraction(0)] * n
    for q, j in enumerate(B):
        if j < n:
            x[j] = zB[q]
    return [x[l * k : (l + 1) * k] for l in range(R)]


def exact_face_vertices(mode: str, W: np.ndarray, m: np.ndarray) -> list[list[Fraction]]:
    """Every vertex of the paper LP's optimal face, in exact rational arithmetic of the float instance,
    by brute force over all choices of ``R·k`` tight constraints (small instances only: R·k <= 6)."""
    R, k = W.shape
    n = R * k
    if n > 6:
        raise ValueError(f"W: {R}x{k} is too large for exact vertex enumeration (R·k <= 6)")
    c, A, lo, hi = paper_lp(mode, W, m)
    cons = []  # a.x <= b
    for i in range(A.shape[0]):
        a = [Fraction(float(v)) for v in A[i]]
        if hi[i] != INF:
            cons.append((a, Fraction(float(hi[i]))))
        if lo[i] != -INF:
            cons.append(([-v for v in a], -Fraction(float(lo[i]))))
    cons += [([Fraction(-int(q == j)) for q in range(n)], Fraction(0)) for j in range(n)]
    verts = set()
    for sub in itertools.combinations(range(len(cons)), n):
        try:
            x = _solve_exact([cons[i][0] for i in sub], [cons[i][1] for i in sub])
        except StopIteration:
            continue
        if all(sum((ai * xi for ai, xi in zip(a, x, strict=True)), Fraction(0)) <= b for a, b in cons):
            verts.add(tuple(x))
    cf = [Fraction(float(v)) for v in c]
    val = {v: sum((ci * xi for ci, xi in zip(cf, v, strict=True)), Fraction(0)) for v in verts}
    best = max(val.values())
    return [list(v) for v in verts if val[v] == best]


def exact_contiguous_optimum_exists(mode: str, W: np.ndarray, m: np.ndarray, row: int) -> bool:
    """Whether some optimum gives ``row`` a contiguous support, exactly: a point of the optimal face is
    a convex combination of its vertices with positive weights, and its row support is the union of
    theirs, so try every non-empty set of face vertices."""
    k = W.shape[1]
    sup = [[v[row * k + j] > 0 for j in range(k)] for v in exact_face_vertices(mode, W, m)]
    return any(_contiguous([any(s[j] for s in comb) for j in range(k)])
               for r in range(1, len(sup) + 1) for comb in itertools.combinations(sup, r))  # fmt: skip


def _contiguous(support: list[bool]) -> bool:
    idx = [j for j, s in enumerate(support) if s]
    return not idx or idx[-1] - idx[0] + 1 == len(idx)


# ---------------------------------------------------------------------------------------------
# stored witnesses
# ---------------------------------------------------------------------------------------------
W_GAP = np.array([[1.0, 1.51, 1.86], [1.0, 1.30, 1.82]])  # README
M_GAP = np.array([3.0, 2.0, 1.0])
W_NC = np.array([[1.0, 1.5019, 1.6983], [1.0, 1.4480, 2.0830]])  # ledger's unrestricted non-coop instance
M_NC = np.array([2.0, 2.0, 1.0])
W_ORD = np.array([[1.0, 1.0258, 1.2204, 1.4705, 1.515], [1.0, 1.1384, 1.5004, 1.9299, 2.7699],
                  [1.0, 1.2254, 1.7451, 2.2626, 3.3813], [1.0, 1.321, 2.0114, 2.6209, 3.9311]])  # fmt: skip
M_ORD = np.array([7.0, 1.0, 5.0, 5.0, 4.0])
W_SLACK = np.array([[1.0, 1.51, 1.87], [1.0, 1.33, 1.72]])  # once misread as a tie
M_SLACK = np.array([3.0, 2.0, 3.0])
# a true tie: identical rows, every equal split of the total is optimal; the vertex need not be contiguous
W_TIE = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
M_TIE = np.ones(3)

# two instances of the ledger's own unrestricted set (numbers 43 and 86) whose cooperative optimum is NOT
# unique (the optimal face is an edge), so the uniqueness certificate does not apply; exact enumeration of
# the face's vertices decides (row 0 of the first, row 1 of the second keep types {0, 2} all along the edge)
W_EDGE1 = np.array([[1.0, 1.433492320924529, 2.0694245464948637], [1.0, 1.5402882111619904, 1.845565076424141]])
M_EDGE1 = np.array([6.0, 3.0, 3.0])
W_EDGE2 = np.array([[1.0, 1.156596912866031, 1.1795836455154973], [1.0, 1.1351608542772973, 1.6689474244247802]])
M_EDGE2 = np.array([5.0, 2.0, 1.0])

WITNESSES = [
    ("readme-coop", "coop", W_GAP, M_GAP, 1),
    ("readme-noncoop", "noncoop", W_GAP, M_GAP, 1),
    ("noncoop-2row", "noncoop", W_NC, M_NC, 1),
    ("slack-tie-coop", "coop", W_SLACK, M_SLACK, 1),
    ("ordered-coop", "coop", W_ORD, M_ORD, 1),
    ("ordered-noncoop", "noncoop", W_ORD, M_ORD, 0),
    ("edge1-coop", "coop", W_EDGE1, M_EDGE1, 1),
    ("edge2-coop", "coop", W_EDGE2, M_EDGE2, 1),
]


@pytest.mark.parametrize(("name", "mode", "W", "m", "expected"), WITNESSES, ids=[w[0] for w in WITNESSES])
def test_ledger_verdict_equals_the_independent_milp(name: str, mode: str, W, m, expected: int) -> None:
    assert measure("structural_noncontiguous", f"oef-{mode}", W, m) == expected
    # the loss rate per GPU is the same at eps = 1e-5 and 1e-3 (structure, not tolerance) ...
    f, g5 = contiguity_loss(mode, W, m, 1e-5)
    _, g3 = contiguity_loss(mode, W, m, 1e-3)
    assert (g5 > TAU * W.max()).sum() == (g3 > TAU * W.max()).sum() == expected
    bad = g3 > TAU * W.max()
    assert g5[bad] == pytest.approx(g3[bad], rel=1e-3) and (g3[bad] > 1e-4).all()
    assert (np.abs(g3[~bad]) < 1e-9).all()
    # ... and the feasibility form agrees wherever delta·f* stays below g·eps
    for delta, eps in ((1e-12, 1e-5), (1e-9, 1e-3)):
        assert no_contiguous_optimum_rows(mode, W, m, delta, eps) == expected, (delta, eps)


@pytest.mark.parametrize(("W", "m", "mode", "row"), [(W_GAP, M_GAP, "coop", 1), (W_GAP, M_GAP, "noncoop", 1),
                                                     (W_NC, M_NC, "noncoop", 1), (W_SLACK, M_SLACK, "coop", 1),
                                                     (W_ORD, M_ORD, "coop", 2)])  # fmt: skip
def test_witnesses_are_certified_in_exact_arithmetic(W, m, mode: str, row: int) -> None:
    """The optimum is unique (rational dual certificate) and the row's support is not contiguous, so
    no optimum at all gives that row adjacent GPU types; every other row is contiguous there."""
    X = exact_unique_optimum(mode, W, m)
    assert X is not None
    for r, x in enumerate(X):
        assert _contiguous([v > 0 for v in x]) == (r != row), (r, x)


@pytest.mark.parametrize(("W", "m", "mode", "verdicts"), [(W_GAP, M_GAP, "coop", [True, False]),
                                                          (W_NC, M_NC, "noncoop", [True, False]),
                                                          (W_SLACK, M_SLACK, "coop", [True, False]),
                                                          (W_EDGE1, M_EDGE1, "coop", [False, True]),
                                                          (W_EDGE2, M_EDGE2, "coop", [True, False]),
                                                          (W_TIE, M_TIE, "coop", [True, True]),
                                                          (W_TIE, M_TIE, "noncoop", [True, True])])  # fmt: skip
def test_k3_verdicts_by_exact_enumeration_of_the_optimal_face(W, m, mode: str, verdicts: list[bool]) -> None:
    """Per row, whether a contiguous optimum exists, from every vertex of the optimal face in rationals;
    the MILP and the ledger give the same verdict."""
    assert [exact_contiguous_optimum_exists(mode, W, m, r) for r in range(W.shape[0])] == verdicts
    n_bad = verdicts.count(False)
    assert independent_count(mode, W, m, 1e-3) == n_bad
    assert measure("structural_noncontiguous", f"oef-{mode}", W, m) == n_bad
    if W is W_EDGE1 or W is W_EDGE2:
        assert len(exact_face_vertices(mode, W, m)) == 2 and exact_unique_optimum(mode, W, m) is None


def test_a_tie_with_a_contiguous_optimum_is_not_counted() -> None:
    """Identical rows: the vertex X = [[1, 0, 2/3], [0, 1, 1/3]] is optimal (total 6) with row 0 on
    types {0, 2}, but X' = [[1, 1, 0], [0, 0, 1]] is optimal too and contiguous. Neither the MILP nor
    the ledger counts it, at any delta and eps; the exact certificate refuses uniqueness."""
    X = np.array([[1.0, 0.0, 2 / 3], [0.0, 1.0, 1 / 3]])
    f, _, _ = lp_optimum("noncoop", W_TIE, M_TIE)
    assert f == pytest.approx(float(np.einsum("lj,lj->", W_TIE, X))) == pytest.approx(6.0)
    assert not _contiguous([v > 0 for v in X[0]])
    for mode in ("coop", "noncoop"):
        assert independent_count(mode, W_TIE, M_TIE, 1e-3) == independent_count(mode, W_TIE, M_TIE, 1e-1) == 0
        assert no_contiguous_optimum_rows(mode, W_TIE, M_TIE, 1e-12, 1e-1) == 0
        assert exact_unique_optimum(mode, W_TIE, M_TIE) is None
    from marketsim.market.oef.claims import _no_contiguous_optimum

    assert not _no_contiguous_optimum("oef-noncoop", W_TIE, M_TIE, X, 0)
    assert not _no_contiguous_optimum("oef-coop", W_TIE, M_TIE, X, 0)
    # the same calls do count a structural row (the check can fail)
    assert independent_count("noncoop", W_GAP, M_GAP, 1e-3) == 1
    assert no_contiguous_optimum_rows("noncoop", W_GAP, M_GAP, 1e-12, 1e-1) == 1


def test_mechanism_vertices_agree_with_the_independent_optimum() -> None:
    for mode, (W, m) in itertools.product(("coop", "noncoop"), ((W_GAP, M_GAP), (W_NC, M_NC), (W_ORD, M_ORD))):
        f, _, _ = lp_optimum(mode, W, m)
        X = registry.get(f"oef-{mode}", "fair-share").fn(W, m).X
        assert float(np.einsum("lj,lj->", W, X)) == pytest.approx(f, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# the ledger's 200 instances at --size large
# ---------------------------------------------------------------------------------------------
def ledger_instances() -> dict[str, list]:
    """The C6 instances of ``marketsim claims --paper oef --size large --seed 0``: the claim's rng is
    seeded by (seed, 'oef', 'C6'); 100 unrestricted instances are drawn first, then 100 ordered."""
    from marketsim.market.audit.claims import _seq
    from marketsim.market.audit.instances import SIZES, random_instance

    rng = np.random.default_rng(_seq(0, "oef", "C6"))
    p = SIZES["large"]
    return {kind: [random_instance(rng, kind, n=p["n"], k=p["k"], m_max=int(p["m_max"])) for _ in range(100)]
            for kind in ("unrestricted", "ordered")}  # fmt: skip


@pytest.mark.slow
def test_ledger_counts_equal_the_independent_counts() -> None:
    """Per instance and mode, the ledger's structural count equals the MILP's loss-rate count, and the
    loss rates leave a wide empty band (no row between 1e-8 and 1e-3 per GPU), so the verdict does not
    depend on where the tie threshold is put; on instances small enough (R·k <= 6) the verdict of every
    row equals the exact one. Instance totals: 55/100 (unrestricted) and 12/100 (ordered, all coop)."""
    totals = {}
    for kind, insts in ledger_instances().items():
        bad = np.zeros(len(insts), dtype=bool)
        for mode in ("coop", "noncoop"):
            for t, inst in enumerate(insts):
                W, m = inst.W, inst.m
                _, g = contiguity_loss(mode, W, m, 1e-3)
                counted = g > TAU * W.max()
                assert not ((g > 1e-8) & (g < 1e-3)).any(), (kind, mode, t, g)
                assert measure("structural_noncontiguous", f"oef-{mode}", W, m) == counted.sum(), (kind, mode, t)
                if W.size <= 6:
                    exact = [not exact_contiguous_optimum_exists(mode, W, m, r) for r in range(W.shape[0])]
                    assert exact == counted.tolist(), (kind, mode, t)
                bad[t] |= counted.any()
        totals[kind] = int(bad.sum())
    assert totals == {"unrestricted": 55, "ordered": 12}


def _main() -> None:  # pragma: no cover - the figures of docs/c6_independent.md
    """Print the tables of docs/c6_independent.md and write them to benchmarks/results/c6_independent.json
    (``PYTHONPATH=. python tests/test_c6_independent.py``; the docs read their figures from that file)."""
    import json
    import os
    import subprocess
    import time
    from pathlib import Path

    t0 = time.perf_counter()
    load_start = os.getloadavg()
    deltas, epss = (1e-12, 1e-9, 1e-7, 1e-5, 1e-3), (1e-9, 1e-7, 1e-5, 1e-3)
    # counts are constant along delta/eps (eps >= 1e-7): one cell per ratio, as "rows (instances)"
    ratio_cells = {"<= 1e-5": (1e-12, 1e-7), "1e-4": (1e-7, 1e-3), "1e-2": (1e-5, 1e-3), ">= 1": (1e-3, 1e-3)}
    counted: dict = {}
    old: dict = {}
    out: dict = {"modes": [], "instances": {}, "witnesses": []}
    for kind, insts in ledger_instances().items():
        for mode in ("coop", "noncoop"):
            rates, ledger, exact = [], 0, [0, 0, 0]
            table = {(d, e): [0, 0] for d in deltas for e in epss}  # rows, instances
            for t, inst in enumerate(insts):
                W, m = inst.W, inst.m
                f = None
                for e in epss:
                    f, g = contiguity_loss(mode, W, m, e)
                    if e == 1e-3:
                        rates.append(g)
                        counted[(kind, mode, t)] = int((g > TAU * W.max()).sum())
                        # the former face slack 1e-9·f* against s > 1e-7 only caught rates g > 1e-9·f*/1e-7
                        old[(kind, mode, t)] = int((g > 1e-2 * f).sum())
                    for d in deltas:  # feasibility form: no contiguous point within d·f* <=> g·e > d·f*
                        n = int((g * e > d * f).sum())
                        table[(d, e)][0] += n
                        table[(d, e)][1] += n > 0
                ledger += int(measure("structural_noncontiguous", f"oef-{mode}", W, m))
                X = exact_unique_optimum(mode, W, m) if W.shape[1] == 3 else None
                ex = None
                if X is not None:  # exact verdict per row vs the MILP's
                    ex = [not _contiguous([v > 0 for v in x]) for x in X]
                elif W.shape[1] == 3 and W.size <= 6:  # not unique: enumerate the optimal face
                    ex = [not exact_contiguous_optimum_exists(mode, W, m, r) for r in range(W.shape[0])]
                if ex is not None:
                    exact[0] += 1
                    exact[1] += sum(ex)
                    exact[2] += ex == list(rates[-1] > TAU * W.max())
            g = np.concatenate(rates)
            pos, zero = g[g > TAU * 4], g[g <= TAU * 4]
            n_milp = sum(counted[(kind, mode, t)] for t in range(100))
            print(f"## {kind} {mode}: ledger rows {ledger}, MILP rows (eps 1e-3, loss rate > tau) {n_milp}")
            lo, hi = (pos.min(), pos.max()) if pos.size else (np.nan, np.nan)
            between = int(((g > 1e-9) & (g < 1e-3)).sum())
            print(f"   loss rate of counted rows: min {lo:.3g} max {hi:.3g}; uncounted rows: max |g| "
                  f"{np.abs(zero).max():.3g}; rows in (1e-9, 1e-3): {between}")
            print(f"   k = 3 instances decided exactly (unique optimum, or face vertices): {exact[0]}, "
                  f"non-contiguous rows there: {exact[1]}, rows all as the MILP's: {exact[2]}")
            print("   feasibility form, rows (instances) by delta (down) x eps (across):", epss)
            for d in deltas:
                print(f"   delta={d:g}: " + "  ".join(f"{table[(d, e)][0]:4d} ({table[(d, e)][1]:3d})" for e in epss))
            out["modes"].append({
                "generator": kind, "mode": mode, "ledger_rows": ledger, "milp_rows": n_milp,
                "g_counted_min": None if np.isnan(lo) else float(lo),
                "g_counted_max": None if np.isnan(hi) else float(hi),
                "g_other_max_abs": float(np.abs(zero).max()), "rows_between_1e-9_and_1e-3": between,
                "exact_instances": exact[0], "exact_noncontiguous_rows": exact[1], "exact_agree": exact[2],
                "feasibility": [{"delta": d, **{f"eps {e:g}": f"{table[(d, e)][0]} ({table[(d, e)][1]})" for e in epss}}
                                for d in deltas],
                **{f"delta/eps {r}": f"{table[c][0]} ({table[c][1]})" for r, c in ratio_cells.items()},
            })  # fmt: skip
    for kind in ("unrestricted", "ordered"):
        n = sum(counted[(kind, "coop", t)] > 0 or counted[(kind, "noncoop", t)] > 0 for t in range(100))
        n_old = sum(old[(kind, "coop", t)] > 0 or old[(kind, "noncoop", t)] > 0 for t in range(100))
        print(f"{kind}: instances with a row with no contiguous optimum {n}/100 "
              f"(with a loss rate > 1% of f* per GPU: {n_old})")
        out["instances"][kind] = {"noncontiguous": n, "of": 100, "loss_rate_over_1pct_of_fstar": n_old}
    for name, mode, W, m, _expected in WITNESSES:  # the stored witnesses' loss rates (eps 1e-3)
        _, g = contiguity_loss(mode, W, m, 1e-3)
        out["witnesses"].append({"name": name, "mode": mode, "rows": int((g > TAU * W.max()).sum()),
                                 "g_max": float(g.max()), "g": [float(x) for x in g]})  # fmt: skip
    seconds = time.perf_counter() - t0
    print(f"{seconds:.0f} s")
    root = Path(__file__).resolve().parents[1]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    out.update({"command": "PYTHONPATH=. python tests/test_c6_independent.py", "commit": commit,
                "seconds": seconds, "load_start": list(load_start), "load_end": list(os.getloadavg())})  # fmt: skip
    path = root / "benchmarks" / "results" / "c6_independent.json"
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(root)}")


if __name__ == "__main__":
    _main()
