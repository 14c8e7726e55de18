"""A structured interior-point method for the max-min program (P) of :mod:`marketsim.market.oef.maxmin`:
near-optimal capacity prices in a few dozen ``O(n k)`` numpy passes.

(P) has ``n`` rows (jobs) and ``k`` GPU types (``k`` small)::

    max t  s.t.  C_l . x_l - w_l = t        (w_l >= 0 the throughput slack; none for LP (9), ``equal``)
                 sum_l s_l x_lj + sigma_j = m_j
                 sum_j x_lj + zeta_l = d_l  (rows with a finite cap)
                 x, w, sigma, zeta >= 0,  x_lj = 0 where C_lj = 0

A primal-dual path-following method (Mehrotra's predictor-corrector with Gondzio's centrality
correctors) solves it. Each Newton system has ``2 n + k`` constraints, but only the ``k`` capacity
rows and the free variable ``t`` couple the rows: every row's two local constraints (throughput,
cap) are eliminated in closed form, which leaves one dense ``(k + 1) x (k + 1)`` system for the
capacity prices and ``t``. The per-row quantities are written as sums of non-negative terms where
a textbook elimination would subtract nearly equal numbers (the 2 x 2 determinant by Lagrange's
identity; the Schur complement ``Theta - Theta A^T K^{-1} A Theta`` entry by entry): rows with two
nearly equal throughputs on two types (near ties) otherwise wreck the dense system long before the
method converges. An iteration is a few dozen vectorised passes over ``(k, n)`` arrays, with no sparse
factorisation (``cvxpy`` + ECOS, an interior-point method too, factorises the whole KKT system).

The method is used for its *duals*: :func:`maxmin_prices` stops at a relative duality gap of
``gap_tol`` (1e-7 by default), where the capacity prices are accurate enough for the price
decomposition (:func:`marketsim.market.oef.maxmin.solve_maxmin`) to fix all but the rows within a small margin
of a tie, solve those exactly by dual simplex and certify the result by LP duality. The interior
point itself is never returned as an allocation. Deterministic: no randomness, fixed operation order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["IpmPrices", "maxmin_prices"]

STEP = 0.995
"""Fraction of the step to the boundary taken (primal and dual separately)."""

CORRECTORS = 2
"""Gondzio centrality correctors tried per iteration (each kept only if it lengthens the step)."""


@dataclass
class IpmPrices:
    """Result of :func:`maxmin_prices`: capacity prices ``p`` (k,) per unit of ``t`` (the duals of
    the capacity rows when the objective is ``max t``), the level ``t`` (primal) and its dual bound
    ``t_dual``, the relative duality gap reached, the iterations used, and the primal iterate ``x``
    (n, k) (near-feasible: residuals below the thresholds of :func:`maxmin_prices`)."""

    prices: np.ndarray
    t: float
    t_dual: float
    gap: float
    iterations: int
    x: np.ndarray | None = None


def _ratio(v: np.ndarray, dv: np.ndarray) -> float:
    """Largest step in [0, 1] keeping ``v + a dv >= 0`` (entries with ``dv < 0``)."""
    if v.ndim == 0 or v.size == 0:
        return 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = float(np.fmax.reduce((-dv / v).ravel()))  # NaN (0 / 0 on unused entries) ignored
    return 1.0 / worst if worst > 1.0 else 1.0


class _Newton:
    """One iteration's Newton system, eliminated down to the ``(k + 1) x (k + 1)`` system in the
    capacity duals and ``t`` (module docstring); :meth:`solve` returns a direction for any
    complementarity right-hand side, with or without the residuals."""

    def __init__(self, it: _Iterate) -> None:
        p = it.p
        CT, cap, Uf = p.CT, p.cap, p.Uf
        k, n = CT.shape
        self.it = it
        self.thX = thX = Uf * it.X / it.RX
        self.thw = thw = p.wm * it.w / np.where(it.rw > 0, it.rw, 1.0)
        self.ths = it.sig / it.rs
        self.thz = thz = p.capf * it.zeta / it.rz
        Cth = CT * thX
        sC2 = (CT * Cth).sum(axis=0)
        a = sC2 + thw
        b = p.capf * Cth.sum(axis=0)
        sth = thX.sum(axis=0)
        c = np.where(cap, sth + thz, 1.0)
        pair = np.zeros(n)  # sum_{i<j} th_i th_j (C_i - C_j)^2
        for i, j in p.pairs:
            pair += thX[i] * thX[j] * (CT[i] - CT[j]) ** 2
        tiny = np.finfo(float).tiny
        det = np.maximum(np.where(cap, pair + thw * c + sC2 * thz, a), tiny)
        self.k00, self.k01, self.k11 = c / det, -b / det, a / det
        # G0 = K^{-1}_{0.} B, G1 = K^{-1}_{1.} B in cancellation-free form:
        # c C_j - b = sum_i th_i (C_j - C_i) + th_z C_j,  a - b C_j = sum_i C_i th_i (C_i - C_j) + th_w
        e0 = np.empty((k, n))
        e1 = np.empty((k, n))
        for j in range(k):
            dj = CT[j] - CT
            e0[j] = (thX * dj).sum(axis=0) + thz * CT[j]
            e1[j] = thw - (Cth * dj).sum(axis=0)
        sv = p.s
        self.G0 = np.where(cap, thX * e0 * sv / det, Cth * sv / det)
        self.G1 = p.capf * thX * e1 * sv / det
        # Schur complement of the capacity rows: sum_l s_l^2 P_l + diag(th_sigma) with
        # P_l = Theta - Theta A^T K^{-1} A Theta (per row, k x k), entry by entry:
        # P_jj = th_j det_{-j} / det, P_jj' = -th_j th_j' Q_jj' / det
        s2d = sv * sv / det
        S = np.empty((k + 1, k + 1))
        for j in range(k):
            # det without column j (capped) / the 1 x 1 system without column j (uncapped)
            pj = pair - sum(thX[i] * thX[j] * (CT[i] - CT[j]) ** 2 for i in range(k) if i != j)
            sthj, sC2j = sth - thX[j], sC2 - CT[j] * Cth[j]
            dmj = np.where(cap, pj + thw * (sthj + thz) + sC2j * thz, sC2j + thw)
            S[j, j] = float((s2d * thX[j] * dmj).sum()) + self.ths[j]
            for jj in range(j + 1, k):
                dd = (CT - CT[j]) * (CT - CT[jj])
                Q = np.where(cap, (thX * dd).sum(axis=0) + thw + thz * CT[j] * CT[jj], CT[j] * CT[jj])
                S[j, jj] = S[jj, j] = -float((s2d * thX[j] * thX[jj] * Q).sum())
        S[:k, k] = S[k, :k] = self.G0.sum(axis=1)
        S[k, k] = -float(self.k00.sum())
        self.S = S

    def solve(self, rc: list[np.ndarray], resid: bool = True) -> _Direction:
        """Direction for complementarity targets ``rc`` (X, w, sigma, zeta), including the
        primal and dual residuals (``resid``) or not (a centrality corrector)."""
        it, p = self.it, self.it.p
        CT, sv, Uf, capf, wm = p.CT, p.s, p.Uf, p.capf, p.wm
        k = CT.shape[0]
        rcX, rcw, rcs, rcz = rc
        f = 1.0 if resid else 0.0
        thX, thw, ths, thz = self.thX, self.thw, self.ths, self.thz
        gX = Uf * (rcX / it.RX - f * thX * it.rdX)
        gw = wm * (rcw / np.where(it.rw > 0, it.rw, 1.0) - f * thw * it.rdw)
        gs = rcs / it.rs - f * ths * it.rds
        gz = capf * (rcz / it.rz - f * thz * it.rdz)
        fT = f * it.rpT - ((CT * gX).sum(axis=0) - gw)
        fM = f * it.rpM - ((gX * sv).sum(axis=1) + gs)
        fD = capf * (f * it.rpD - (gX.sum(axis=0) + gz))
        u0 = self.k00 * fT + self.k01 * fD
        u1 = self.k01 * fT + self.k11 * fD
        rhs = np.empty(k + 1)
        rhs[:k] = fM - ((CT * u0 + u1) * thX * sv).sum(axis=1)
        rhs[k] = f * it.rdt + float(u0.sum())
        sol = np.linalg.solve(self.S, rhs)
        dq, dt = sol[:k], float(sol[k])
        dy = u0 - dq @ self.G0 + self.k00 * dt
        dz = capf * (u1 - dq @ self.G1 + self.k01 * dt)
        dX = Uf * (thX * (CT * dy + dq[:, None] * sv + dz) + gX)
        dw = wm * (gw - thw * dy)
        ds = ths * dq + gs
        dzeta = capf * (thz * dz + gz)
        dRX = Uf * (rcX - it.RX * dX) / np.where(p.U, it.X, 1.0)
        drw = wm * (rcw - it.rw * dw) / np.where(it.w > 0, it.w, 1.0)
        drs = (rcs - it.rs * ds) / it.sig
        drz = capf * (rcz - it.rz * dzeta) / it.zeta
        return _Direction([dX, dw, ds, dzeta], [dRX, drw, drs, drz], dt, dy, dq, dz)


@dataclass
class _Problem:
    """(P) in the IPM's layout: ``CT`` (k, n), masks of usable entries and capped rows."""

    CT: np.ndarray
    m: np.ndarray
    s: np.ndarray
    dd: np.ndarray
    cap: np.ndarray
    equal: bool

    def __post_init__(self) -> None:
        k, n = self.CT.shape
        self.U = self.CT > 0
        self.Uf = self.U.astype(float)
        self.capf = self.cap.astype(float)
        self.wm = 0.0 if self.equal else 1.0
        self.pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        self.masks = [self.Uf, np.full(n, self.wm), np.ones(k), self.capf]
        self.N = int(self.U.sum()) + (0 if self.equal else n) + k + int(self.cap.sum())
        self.om = float(n)  # objective max om * t: duals of order one


@dataclass
class _Direction:
    primal: list[np.ndarray]  # dX, dw, dsigma, dzeta
    dual: list[np.ndarray]  # dRX, drw, drs, drz (reduced costs)
    dt: float
    dy: np.ndarray
    dq: np.ndarray
    dz: np.ndarray

    def plus(self, o: _Direction) -> _Direction:
        return _Direction([a + b for a, b in zip(self.primal, o.primal, strict=True)],
                          [a + b for a, b in zip(self.dual, o.dual, strict=True)], self.dt + o.dt, self.dy + o.dy,
                          self.dq + o.dq, self.dz + o.dz)  # fmt: skip


class _Iterate:
    """Primal ``X (k, n), w, sigma, zeta, t``, duals ``y, q (= -p), zD (= -z)`` and reduced costs
    ``RX, rw, rs, rz``; :meth:`residuals` sets the residuals and the measures of progress."""

    def __init__(self, p: _Problem) -> None:
        self.p = p
        k, n = p.CT.shape
        # infeasible start: every variable positive, of the order of its final value
        nu = np.maximum(p.U.sum(axis=0), 1)
        self.X = p.Uf * (0.5 * np.minimum(np.where(p.cap, p.dd, 1.0), 1.0) / nu)[None, :]
        CX = (p.CT * self.X).sum(axis=0)
        self.t = 0.5 * float(CX.min())
        self.w = p.wm * np.maximum(CX - self.t, 1.0)
        self.sig = np.maximum(p.m - (self.X * p.s).sum(axis=1), 1.0)
        self.zeta = np.where(p.cap, np.maximum(p.dd - self.X.sum(axis=0), 1.0), 1.0)
        self.y = np.ones(n)
        self.q = -np.ones(k)
        self.zD = -p.capf
        self.RX = np.ones((k, n))
        self.rw = np.full(n, p.wm)
        self.rs = np.ones(k)
        self.rz = np.ones(n)

    @property
    def primal(self) -> list[np.ndarray]:
        return [self.X, self.w, self.sig, self.zeta]

    @property
    def dual(self) -> list[np.ndarray]:
        return [self.RX, self.rw, self.rs, self.rz]

    def residuals(self) -> tuple[float, float, float, float]:
        """Set the residuals; return ``(mu, relative gap, primal and dual infeasibility)``."""
        p = self.p
        CT, capf = p.CT, p.capf
        self.rpT = self.w + self.t - (CT * self.X).sum(axis=0)
        self.rpM = p.m - (self.X * p.s).sum(axis=1) - self.sig
        self.rpD = capf * (p.dd - self.X.sum(axis=0) - self.zeta)
        self.rdX = p.Uf * (-(CT * self.y + self.q[:, None] * p.s + capf * self.zD) - self.RX)
        self.rdw = p.wm * (self.y - self.rw)
        self.rds = -self.q - self.rs
        self.rdz = capf * (-self.zD - self.rz)
        self.rdt = float(self.y.sum()) - p.om
        mu = sum(float((v * r * mk).sum()) for v, r, mk in zip(self.primal, self.dual, p.masks, strict=True)) / p.N
        self.pobj, self.dobj = p.om * self.t, -(float(p.m @ self.q) + float(p.dd @ self.zD))
        gap = abs(self.pobj - self.dobj) / (1.0 + abs(self.pobj))
        pinf = max(float(np.abs(self.rpT).max()), float(np.abs(self.rpM).max()) / (1.0 + float(p.m.max())),
                   float(np.abs(self.rpD).max()))  # fmt: skip
        dinf = max(float(np.abs(self.rdX).max()), float(np.abs(self.rdw).max()), float(np.abs(self.rds).max()),
                   float(np.abs(self.rdz).max()), abs(self.rdt) / p.om)  # fmt: skip
        return mu, gap, pinf, dinf

    def steps(self, D: _Direction) -> tuple[float, float]:
        """Largest primal and dual steps in [0, 1] that keep the iterate non-negative."""
        return (min(_ratio(v, dv) for v, dv in zip(self.primal, D.primal, strict=True)),
                min(_ratio(r, dr) for r, dr in zip(self.dual, D.dual, strict=True)))  # fmt: skip

    def products(self, ap: float, ad: float, D: _Direction) -> list[np.ndarray]:
        """Complementarity products after steps ``ap`` (primal) and ``ad`` (dual) along ``D``."""
        rows = zip(self.primal, D.primal, self.dual, D.dual, self.p.masks, strict=True)
        return [(v + ap * dv) * (r + ad * dr) * mk for v, dv, r, dr, mk in rows]

    def move(self, ap: float, ad: float, D: _Direction) -> None:
        dX, dw, ds, dzeta = D.primal
        dRX, drw, drs, drz = D.dual
        self.X = self.X + ap * dX
        self.w = self.w + ap * dw
        self.sig = self.sig + ap * ds
        self.zeta = self.zeta + ap * dzeta
        self.t += ap * D.dt
        self.y = self.y + ad * D.dy
        self.q = self.q + ad * D.dq
        self.zD = self.zD + ad * D.dz
        self.RX = self.RX + ad * dRX
        self.rw = self.rw + ad * drw
        self.rs = self.rs + ad * drs
        self.rz = self.rz + ad * drz


def maxmin_prices(
    C: np.ndarray,
    m: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    *,
    equal: bool = False,
    gap_tol: float = 1e-7,
    max_iter: int = 40,
    early: Callable[[np.ndarray, float], bool] | None = None,
) -> IpmPrices | None:
    """Near-optimal prices of (P) (module docstring) by a primal-dual interior-point method.

    ``C`` (n, k) >= 0 throughputs relative to each row's target (in units of order one, as
    :func:`marketsim.market.oef.maxmin.solve_maxmin` passes them); ``m`` (k,) > 0 capacities; ``s`` (n,) > 0
    scale factors; ``d`` (n,) caps on ``sum_j x_lj`` (``inf``: none); ``equal``: the throughput rows
    are equalities (LP (9)). Stops when the relative duality gap is at most ``gap_tol`` with the
    primal residual below 1e-4 and the dual one below 1e-6 (the prices come from the dual). After
    ``max_iter`` iterations, or when the steps stall (e.g. when every price is 0 at the optimum and
    the iterates drift), returns the best such iterate seen if its gap is within ``1000 gap_tol``,
    else ``None``. ``early(x, t)``, if given, is called with each iterate whose primal residual is
    below 1e-3 (``x`` (n, k)); when it returns ``True`` the method stops there and returns that
    iterate (the caller found what it needed in it, e.g. :func:`marketsim.market.oef.maxmin._pinned`)."""
    cap = np.isfinite(d)
    p = _Problem(np.ascontiguousarray(np.asarray(C, dtype=float).T), np.asarray(m, dtype=float),
                 np.asarray(s, dtype=float), np.where(cap, d, 0.0), cap, equal)  # fmt: skip
    it = _Iterate(p)
    best: IpmPrices | None = None
    stalls = 0
    for i in range(max_iter + 1):
        mu, gap, pinf, dinf = it.residuals()
        if early is not None and pinf < 1e-3 and early(it.X.T, it.t):
            return IpmPrices(np.maximum(-it.q, 0.0) / p.om, it.t, it.dobj / p.om, gap, i, it.X.T)
        if pinf < 1e-4 and dinf < 1e-6:
            cand = IpmPrices(np.maximum(-it.q, 0.0) / p.om, it.t, it.dobj / p.om, gap, i, it.X.T)
            if best is None or gap < best.gap:
                best = cand
            if gap <= gap_tol:
                return cand
        if i == max_iter or stalls >= 2:
            break
        nt = _Newton(it)
        # predictor (affine scaling), then Mehrotra's centring and second-order corrector
        aff = nt.solve([-v * r * mk for v, r, mk in zip(it.primal, it.dual, p.masks, strict=True)])
        ap, ad = it.steps(aff)
        mua = sum(float(x.sum()) for x in it.products(ap, ad, aff)) / p.N
        sm = min(1.0, (mua / mu) ** 3) * mu
        rows = zip(it.primal, it.dual, aff.primal, aff.dual, p.masks, strict=True)
        D = nt.solve([(sm - v * r - dv * dr) * mk for v, r, dv, dr, mk in rows])
        ap, ad = it.steps(D)
        # Gondzio's correctors: move the products of a longer trial step into [0.1, 10] x the target
        for _ in range(CORRECTORS):
            trial = it.products(min(1.0, 1.5 * ap + 0.1), min(1.0, 1.5 * ad + 0.1), D)
            rc = [mk * np.maximum(np.clip(x, 0.1 * sm, 10.0 * sm) - x, -10.0 * sm)
                  for x, mk in zip(trial, p.masks, strict=True)]
            D2 = D.plus(nt.solve(rc, resid=False))
            ap2, ad2 = it.steps(D2)
            if ap2 + ad2 < 1.01 * (ap + ad):
                break
            D, ap, ad = D2, ap2, ad2
        stalls = stalls + 1 if max(ap, ad) < 1e-6 else 0
        it.move(STEP * ap, STEP * ad, D)
    return best if best is not None and best.gap <= 1e3 * gap_tol else None
