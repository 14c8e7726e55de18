"""``proportional-share``: every GPU type ``j`` is split among the tenants in proportion to
``weight_l * W_lj``, their (weighted) reported speedup on it, rows normalised so that column 0
(the slowest type) is 1. Tenants that value a type more get more of it, so the rule rewards
inflating one's speedups: it is a deliberately manipulable example for the auditor."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, as_float_array
from marketsim.market.registry import register


@register(
    "proportional-share",
    "fair-share",
    "Example plugin: split each GPU type in proportion to (weighted) reported speedup",
    paper="proportional",
    caps=False,  # no row caps: `marketsim run` calls it without them (marketsim.market.registry.register)
)
def proportional_share(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Allocation ``X[l, j] = m_j * pi_l W_lj / sum_i pi_i W_ij`` in GPUs; ``W`` (n, k) reported
    speedups (rows normalised by column 0), ``m`` (k,) GPUs per type, ``weights`` (n,) priorities."""
    if caps is not None:  # only a caller given caps passes them (FairShareTarget(caps=...))
        raise InputError("caps", caps, "are not supported by proportional-share")
    if options:
        raise InputError("options", sorted(options), "proportional-share takes no options")
    Wa = as_float_array("W", W, ndim=2, positive=True)
    n, k = Wa.shape
    if n == 0:
        raise InputError("W", W, "needs at least one tenant")
    ma = as_float_array("m", m, shape=(k,), nonneg=True)
    pi = np.ones(n) if weights is None else as_float_array("weights", weights, shape=(n,), positive=True)
    R = Wa / Wa[:, :1] * pi[:, None]
    X = R / R.sum(axis=0, keepdims=True) * ma[None, :]
    return Allocation(X, "proportional-share", float((Wa / Wa[:, :1] * X).sum()))
