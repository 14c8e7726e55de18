"""Synthetic fair-share instances for property audits (OEF spec §5.2).

* ``"unrestricted"``: ``w^0 = 1``, ``w^{j+1} = w^j * U(1, 1.6)`` per row.
* ``"ordered"``: the log step ratios ``log(w_l^{j+1} / w_l^j)`` are sorted ascending over users
  in every step column, so each step ratio is non-decreasing in the user index (the structure
  assumed by the proof of Theorem 5.2).
* ``"slowest"``: the ordered generator; row 0 is then element-wise minimal with strictly
  increasing speedups (Lemma 3.1).

Capacities ``m_j`` are integers in ``{1..m_max}``. All randomness comes from the given generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_choice, check_int

__all__ = ["FairShareInstance", "random_instance", "SIZES"]

SIZES: dict[str, dict[str, tuple[int, int] | int]] = {
    "small": {"n": (2, 4), "k": (2, 3), "m_max": 4},
    "large": {"n": (2, 8), "k": (2, 5), "m_max": 8},
}
"""Instance-size presets: ``n`` and ``k`` ranges (inclusive) and the largest ``m_j``."""


@dataclass(frozen=True)
class FairShareInstance:
    """A fair-share instance: TRUE speedups ``W`` (n, k) (column 0 = slowest type), ``m`` (k,) GPUs
    per type, optional priority ``weights`` (n,) and per-row ``caps`` (n,) in GPUs; ``kind`` names
    the generator (``"given"`` for a hand-made instance). Inputs are validated and stored as arrays.

    :param W: (n, k) TRUE speedups, > 0
    :param m: (k,) GPUs per type, >= 0
    :param kind: the generator's name
    :param weights: (n,) priorities > 0, or ``None``
    :param caps: (n,) most GPUs per row, >= 0, or ``None``
    :raises InputError: a bad shape or value
    """

    W: Any
    m: Any
    kind: str = "given"
    weights: Any = None
    caps: Any = None

    def __post_init__(self) -> None:
        W = as_float_array("W", self.W, ndim=2, positive=True)
        if W.shape[0] < 1 or W.shape[1] < 1:
            raise InputError("W", self.W, "needs at least one tenant and one GPU type")
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "m", as_float_array("m", self.m, shape=(W.shape[1],), nonneg=True))
        n = W.shape[0]
        if self.weights is not None:
            object.__setattr__(self, "weights", as_float_array("weights", self.weights, shape=(n,), positive=True))
        if self.caps is not None:
            object.__setattr__(self, "caps", as_float_array("caps", self.caps, shape=(n,), nonneg=True))

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        out: dict[str, object] = {"W": self.W.tolist(), "m": self.m.tolist(), "kind": self.kind}
        if self.weights is not None:
            out["weights"] = self.weights.tolist()
        if self.caps is not None:
            out["caps"] = self.caps.tolist()
        return out

    def describe(self) -> str:
        """One line for messages: ``W=[[...]], m=[...]`` (and weights / caps when set)."""
        return ", ".join(f"{k}={np.round(np.asarray(v, dtype=float), 6).tolist()}"
                         for k, v in self.to_dict().items() if k != "kind")  # fmt: skip


def random_instance(
    rng: np.random.Generator,
    kind: str = "unrestricted",
    *,
    n: int | tuple[int, int] = (2, 8),
    k: int | tuple[int, int] = (2, 5),
    m_max: int = 8,
    step: tuple[float, float] = (1.0, 1.6),
) -> FairShareInstance:
    """Draw one fair-share instance from ``rng`` (the only source of randomness).

    ``kind``: ``"unrestricted"``, ``"ordered"`` or ``"slowest"`` (module docstring). ``n`` tenants
    and ``k`` GPU types are fixed ints or inclusive ``(lo, hi)`` ranges; speedup rows start at 1
    (column 0 = slowest type) and grow by a factor drawn from ``step`` per type; ``m_j`` whole GPUs
    drawn from ``1..m_max``. Returns a :class:`FairShareInstance` (``.W``, ``.m``).

    :param rng: the random generator
    :param kind: ``"unrestricted"``, ``"ordered"`` or ``"slowest"``
    :param n: tenants, an int or an inclusive range, >= 1
    :param k: GPU types, an int or an inclusive range, >= 1
    :param m_max: the most GPUs of one type, >= 1
    :param step: ``(lo, hi)`` range of the ratio between adjacent types' speedups, ``0 < lo <= hi``
    :returns: the instance
    :raises InputError: an unknown kind or a bad range
    """
    check_choice("kind", kind, ("unrestricted", "ordered", "slowest"))
    check_int("m_max", m_max, minimum=1)

    def draw(name: str, v: int | tuple[int, int], minimum: int) -> int:
        if isinstance(v, tuple):
            lo, hi = (check_int(f"{name}[0]", v[0], minimum=minimum), check_int(f"{name}[1]", v[1], minimum=minimum))
            if hi < lo:
                raise InputError(name, v, "must be an increasing (lo, hi) range")
            return int(rng.integers(lo, hi + 1))
        return check_int(name, v, minimum=minimum)

    nn = draw("n", n, 1)
    kk = draw("k", k, 1)
    lo, hi = step
    if not 0 < lo <= hi:
        raise InputError("step", step, "must satisfy 0 < lo <= hi")
    if kind == "unrestricted":
        steps = rng.uniform(lo, hi, (nn, kk - 1))
    else:
        # strictly increasing rows for the slowest-user generator: steps > 1 almost surely
        steps = np.exp(np.sort(np.log(rng.uniform(lo, hi, (nn, kk - 1))), axis=0))
    W = np.cumprod(np.c_[np.ones(nn), steps], axis=1)
    m = rng.integers(1, m_max + 1, kk)
    return FairShareInstance(W, m, kind)
