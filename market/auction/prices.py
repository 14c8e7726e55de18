"""Exponential posted prices and the price ledger (usage as numpy arrays).

``price = L · (U/L)^(usage/capacity)`` per (slot, server, resource): ``L`` on an empty resource,
``U`` when full (OASiS eq. (22), PD-ORS eq. (12); Astraea and Eris use the same form). ``U`` and
``L`` are fixed **before** the auction from the workload's declared bounds (calibration data) and
never from the current bidder's report; they are stored in log space because ``L`` can be far
below the float64 range.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_int

__all__ = ["exp_price", "log_exp_price", "PriceLedger"]

_EPS = 1e-9


def log_exp_price(usage: np.ndarray, capacity: np.ndarray, log_L: np.ndarray | float, log_U: np.ndarray | float):
    """``log(L·(U/L)^(usage/capacity))``, broadcasting over the last axis (resources).

    A zero-capacity resource is priced as full (``U``); the fraction is clipped to [0, 1].

    :param usage: used amounts
    :param capacity: capacities (0: priced as full)
    :param log_L: log of the lower bound
    :param log_U: log of the upper bound
    :returns: the log prices
    """
    usage = np.asarray(usage, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(capacity > 0, usage / np.where(capacity > 0, capacity, 1.0), 1.0)
    frac = np.clip(frac, 0.0, 1.0)
    log_L = np.asarray(log_L, dtype=float)
    log_U = np.asarray(log_U, dtype=float)
    return log_L + frac * (log_U - log_L)


def exp_price(usage, capacity, L: float | np.ndarray, U: float | np.ndarray):
    """``L·(U/L)^(usage/capacity)`` (currency per resource unit per slot); needs ``U > L > 0``.

    :param usage: used amounts
    :param capacity: capacities
    :param L: the price at zero usage, > 0
    :param U: the price at full usage, > L
    :returns: the prices
    :raises InputError: ``U <= L`` or a bound <= 0
    """
    L_arr = as_float_array("L", L, positive=True)
    U_arr = as_float_array("U", U, positive=True)
    if (U_arr <= L_arr).any():
        raise InputError("U", U, f"must be > L = {L}")
    return np.exp(log_exp_price(usage, capacity, np.log(L_arr), np.log(U_arr)))


class PriceLedger:
    """Usage and exponential prices of one server pool over a horizon.

    ``capacity``: (S, R) per server and resource; ``usage``: (T, S, R), indexed [slot, server,
    resource]; ``log_L``: scalar or (R,); ``log_U``: (R,). Prices are recomputed lazily for the
    slots whose usage changed. ``copy()`` gives an independent ledger (copy-on-write callers).

    :param capacity: (S, R) per server and resource
    :param T: slots
    :param log_L: log of the lower price bound, scalar or (R,)
    :param log_U: (R,) log of the upper bounds
    :raises InputError: no server, ``U < L``
    """

    def __init__(self, capacity, T: int, log_L, log_U) -> None:
        cap = as_float_array("capacity", capacity, ndim=2, nonneg=True)
        if cap.shape[0] == 0:
            raise InputError("capacity", cap.shape, "must have at least one server")
        self.T = check_int("T", T, minimum=1)
        R = cap.shape[1]
        self.capacity = cap
        self.log_U = as_float_array("log_U", np.broadcast_to(np.asarray(log_U, dtype=float), (R,)), shape=(R,))
        self.log_L = as_float_array("log_L", np.broadcast_to(np.asarray(log_L, dtype=float), (R,)), shape=(R,))
        if (self.log_U < self.log_L).any():  # U == L is a flat price (a resource no job uses)
            r = int(np.argmax(self.log_U < self.log_L))
            raise InputError(f"U[{r}]", float(np.exp(self.log_U[r])), f"must be >= L = {float(np.exp(self.log_L[r]))}")
        self.usage = np.zeros((self.T, *cap.shape))
        self._log_prices = np.broadcast_to(self.log_L, (self.T, *cap.shape)).copy()
        self._prices = np.exp(self._log_prices)

    @property
    def S(self) -> int:
        return self.capacity.shape[0]

    @property
    def R(self) -> int:
        return self.capacity.shape[1]

    def copy(self) -> PriceLedger:
        new = PriceLedger.__new__(PriceLedger)
        new.T, new.capacity, new.log_U, new.log_L = self.T, self.capacity, self.log_U, self.log_L
        new.usage = self.usage.copy()
        new._log_prices = self._log_prices.copy()
        new._prices = self._prices.copy()
        return new

    def prices(self) -> np.ndarray:
        """(T, S, R) current prices (read-only view)."""
        v = self._prices.view()
        v.flags.writeable = False
        return v

    def log_prices(self) -> np.ndarray:
        v = self._log_prices.view()
        v.flags.writeable = False
        return v

    def residual(self) -> np.ndarray:
        """(T, S, R) capacity minus usage (>= 0 up to float noise)."""
        return self.capacity[None, :, :] - self.usage

    def unit_capacity(self, demand: np.ndarray, slots: slice | np.ndarray = slice(None)) -> np.ndarray:
        """(T', S) how many more units of per-unit ``demand`` (R,) fit per slot and server.

        :param demand: (R,) resources per unit
        :param slots: the slots (a slice or an index array)
        :returns: (T', S) units that fit
        """
        demand = np.asarray(demand, dtype=float)
        res = self.residual()[slots]
        need = demand > 0
        if not need.any():
            return np.full(res.shape[:2], np.iinfo(np.int64).max // 4, dtype=np.int64)
        per = np.floor(res[..., need] / demand[need] + _EPS)
        return np.maximum(per.min(axis=-1), 0).astype(np.int64)

    def unit_prices(self, demand: np.ndarray, slots: slice | np.ndarray = slice(None)) -> np.ndarray:
        """(T', S) posted price of one unit of ``demand`` (R,) per slot and server.

        :param demand: (R,) resources per unit
        :param slots: the slots (a slice or an index array)
        :returns: (T', S) prices, currency
        """
        return (self._prices[slots] * np.asarray(demand, dtype=float)).sum(axis=-1)

    def reserve(self, t: int, amounts: np.ndarray, tol: float = 1e-7) -> None:
        """Add ``amounts`` (S, R) to slot ``t``'s usage and update its prices; raises beyond capacity.

        :param t: the slot
        :param amounts: (S, R) usage to add
        :param tol: relative slack allowed beyond capacity
        :raises InputError: usage beyond capacity
        """
        new = self.usage[t] + amounts
        over = new > self.capacity * (1 + tol) + tol
        if over.any():
            s, r = (int(i) for i in np.argwhere(over)[0])
            raise InputError(f"usage[{t},{s},{r}]", float(new[s, r]), f"exceeds capacity {self.capacity[s, r]}")
        self.usage[t] = new
        self._log_prices[t] = log_exp_price(new, self.capacity, self.log_L, self.log_U)
        self._prices[t] = np.exp(self._log_prices[t])

    def override_prices(self, prices: np.ndarray) -> None:
        """Set the (T, S, R) prices directly, decoupled from usage (fixtures and audits of arbitrary
        price states only; the next ``reserve`` of a slot recomputes that slot from usage).

        :param prices: (T, S, R) prices, >= 0
        """
        p = as_float_array("prices", prices, shape=self._prices.shape, nonneg=True)
        self._prices = p.copy()
        with np.errstate(divide="ignore"):
            self._log_prices = np.log(p)

    def total_value(self) -> float:
        """``Σ_{t,s,r} p·C`` (the price part of the dual objective)."""
        return float((self._prices * self.capacity[None]).sum())
