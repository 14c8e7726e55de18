"""Hypothesis strategies for incentive tests (needs ``hypothesis``: the ``testing`` extra).

* :func:`fair_share_instances`: small fair-share instances; they shrink towards fewer tenants,
  fewer GPU types, speedups of 1 and one GPU per type, so a failing
  :func:`~marketsim.market.testing.assert_strategyproof` prints a minimal witness.
* :func:`auction_instances`: seeded ``[audit]`` instances of an embedded study.
"""

from __future__ import annotations

from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - exercised only without the dev extra
    raise ImportError(
        "marketsim.market.testing.strategies needs hypothesis: "
        "pip install 'marketsim-cluster[testing]' (or pip install hypothesis)"
    ) from exc

from marketsim.market.audit.instances import FairShareInstance
from marketsim.market.errors import InputError
from marketsim.market.testing import AuctionInstance, auction_instance

__all__ = ["fair_share_instances", "auction_instances"]


def _range(label: str, r: tuple[Any, Any], lo: float) -> tuple[Any, Any]:
    if not (isinstance(r, tuple) and len(r) == 2 and lo <= r[0] <= r[1]):
        raise InputError(label, r, f"must be a (low, high) pair with {lo} <= low <= high")
    return r


def fair_share_instances(
    *,
    tenants: tuple[int, int] = (2, 4),
    gpu_types: tuple[int, int] = (2, 3),
    speedup: tuple[float, float] = (1.0, 8.0),
    gpus: tuple[int, int] = (1, 8),
    weights: bool = False,
    ordered: bool = False,
) -> st.SearchStrategy[FairShareInstance]:
    """Fair-share instances: ``tenants`` rows and ``gpu_types`` columns (inclusive ranges), TRUE
    speedups with column 0 = 1 and the others in ``speedup`` (2 decimals), whole GPUs per type in
    ``gpus``; ``weights`` adds integer weights 1..4; ``ordered`` makes every row non-decreasing
    (the slowest type first, as the OEF papers assume).

    :param tenants: ``(low, high)`` rows, low >= 1
    :param gpu_types: ``(low, high)`` columns, low >= 1
    :param speedup: ``(low, high)`` of the speedups of columns 1.. (relative to column 0)
    :param gpus: ``(low, high)`` whole GPUs per type, low >= 0
    :param weights: draw integer weights 1..4 (else none)
    :param ordered: make every row non-decreasing
    :returns: a hypothesis strategy of :class:`FairShareInstance`
    :raises InputError: a range that is not ``(low, high)`` with low within bounds
    """
    n_lo, n_hi = _range("tenants", tenants, 1)
    k_lo, k_hi = _range("gpu_types", gpu_types, 1)
    s_lo, s_hi = _range("speedup", speedup, 1e-6)
    g_lo, g_hi = _range("gpus", gpus, 0)

    @st.composite
    def build(draw: Any) -> FairShareInstance:
        n = draw(st.integers(n_lo, n_hi))
        k = draw(st.integers(k_lo, k_hi))
        cell = st.integers(int(round(s_lo * 100)), int(round(s_hi * 100))).map(lambda v: v / 100)
        rows = []
        for _ in range(n):
            rest = draw(st.lists(cell, min_size=k - 1, max_size=k - 1))
            rows.append([1.0, *(sorted(rest) if ordered else rest)])
        m = draw(st.lists(st.integers(g_lo, g_hi), min_size=k, max_size=k))
        w = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)) if weights else None
        weights_ = None if w is None else [float(x) for x in w]
        return FairShareInstance(rows, [float(x) for x in m], "hypothesis", weights_)

    return build()


def auction_instances(study: str, *, seeds: tuple[int, int] = (0, 2**16), **overrides: Any) -> st.SearchStrategy[
    AuctionInstance
]:  # fmt: skip
    """The ``[audit]`` instance of embedded ``study`` drawn with a seed in ``seeds`` (shrinks towards
    the lowest seed), with parameter ``overrides``.

    :param study: an embedded study's name, e.g. ``"oasis"``
    :param seeds: ``(low, high)`` inclusive range of seeds, low >= 0
    :param overrides: market parameters replacing the study's ``[audit]`` ones
    :returns: a hypothesis strategy of :class:`~marketsim.market.testing.AuctionInstance`
    """
    lo, hi = _range("seeds", seeds, 0)
    return st.integers(lo, hi).map(lambda s: auction_instance(study, seed=s, **overrides))
