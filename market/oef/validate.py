"""A0: validation and normalisation of speedup reports, capacities, weights and caps.

Every failure raises :class:`marketsim.market.errors.InputError` (a ``ValueError``) whose message names the
offending field (the LP row, or the tenant and job type when labels are given) and the value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, check_choice, check_positive
from marketsim.market.types import check_capacity_vector

__all__ = [
    "SOLVERS",
    "COMMON_OPTIONS",
    "ValidatedInput",
    "validate_inputs",
    "check_options",
    "prepare",
    "trivial_allocation",
    "cache_key",
]

SOLVERS = ("highs-ds", "highs-ipm", "highs", "auto")
MAX_WEIGHT_RATIO = 1e6
"""Largest ratio between two priority weights (like ``max_speedup``, a conditioning bound)."""

# Options every fair-share policy accepts, with defaults (A0 / A4).
COMMON_OPTIONS: dict[str, Any] = {
    "normalise": True,
    "max_speedup": 1e4,
    "require_monotone": False,
    "solver": "highs-ds",
    "cache": True,
    "row_labels": None,
}


@dataclass(frozen=True)
class ValidatedInput:
    """Checked inputs: ``W`` (n, k) float normalised so ``W[:, 0] == 1`` (unless ``normalise`` was
    off), ``m`` (k,) int, ``weights`` (n,) float > 0 (ones by default), ``weight_objs`` the
    weights as given (Fractions are kept exact), ``caps`` (n,) float in [0, inf] (inf = none),
    ``has_weights`` / ``has_caps`` whether they were supplied, ``fraction_weights`` whether a
    weight is a ``fractions.Fraction`` (kept exact)."""

    W: np.ndarray
    m: np.ndarray
    weights: np.ndarray
    weight_objs: tuple[Any, ...]
    caps: np.ndarray
    has_weights: bool
    has_caps: bool
    fraction_weights: bool = False

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    @property
    def k(self) -> int:
        return int(self.m.shape[0])


def check_options(policy: str, options: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``options`` over the defaults (common + policy ``extra``); unknown names raise."""
    known = {**COMMON_OPTIONS, **extra}
    for name in options:
        if name not in known:
            raise InputError("option", name, f"is not an option of policy {policy!r}; known: {sorted(known)}")
    opts = {**known, **options}
    check_choice("solver", opts["solver"], SOLVERS)
    check_positive("max_speedup", opts["max_speedup"])
    for flag in ("normalise", "require_monotone", "cache"):
        if not isinstance(opts[flag], (bool, np.bool_)):
            raise InputError(flag, opts[flag], "must be True or False")
    return opts


def _row_label(labels: Sequence[str] | None, l: int) -> str:
    return labels[l] if labels is not None else f"W[{l}]"


def _as_matrix(W: Any, k: int) -> np.ndarray:
    if isinstance(W, np.ndarray) and W.dtype != object:
        arr = W.astype(float)
    else:
        try:
            rows = [list(r) for r in W]
        except TypeError:
            raise InputError("W", W, "must be an (n, k) matrix of speedups") from None
        if len(rows) == 0:
            return np.zeros((0, k))
        lengths = {len(r) for r in rows}
        if len(lengths) != 1:
            for l, r in enumerate(rows):
                if len(r) != k:
                    raise InputError(f"W[{l}]", r, f"must have length k={k} (one entry per GPU type), has {len(r)}")
        try:
            arr = np.array([[float(v) for v in r] for r in rows], dtype=float)
        except (TypeError, ValueError):
            raise InputError("W", W, "must contain real numbers") from None
    if arr.size == 0:
        return np.zeros((0, k))
    if arr.ndim != 2:
        raise InputError("W", W, f"must be a 2-D (n, k) matrix, has {arr.ndim} dimension(s)")
    return arr


def validate_inputs(
    W: Any,
    m: Any,
    *,
    weights: Any = None,
    caps: Any = None,
    normalise: bool = True,
    max_speedup: float = 1e4,
    require_monotone: bool = False,
    row_labels: Sequence[str] | None = None,
) -> ValidatedInput:
    """Validate and normalise reports (spec A0).

    ``W`` (n, k) reported speedups (column 0 slowest), ``m`` (k,) whole GPUs per type,
    ``weights`` (n,) priorities > 0, ``caps`` (n,) most GPUs a row can use (>= 0, ``inf`` = none).
    ``row_labels`` name the rows in messages (e.g. ``"speedup report for ('u1', 'a')"``).

    :param W: (n, k) reported speedups, column 0 the slowest type
    :param m: (k,) whole GPUs per type
    :param weights: (n,) priorities > 0, or ``None`` for ones
    :param caps: (n,) most GPUs a row can use (>= 0, ``inf`` = none), or ``None``
    :param normalise: divide each row by its column 0
    :param max_speedup: largest normalised speedup accepted (relative to column 0)
    :param require_monotone: require speedups non-decreasing across types
    :param row_labels: names of the rows for messages
    :returns: the checked, normalised inputs
    :raises InputError: a field that is missing, of the wrong shape, non-finite, out of range
    """
    if m is None:
        raise InputError("m", m, "must be a vector of GPU counts per type")
    m_arr = np.asarray(m, dtype=object) if not isinstance(m, np.ndarray) else m
    if np.ndim(m_arr) != 1 or len(m_arr) == 0:
        raise InputError("m", m, "must be a non-empty vector (k >= 1 GPU types)")
    m_int = check_capacity_vector("m", [_num(f"m[{j}]", v) for j, v in enumerate(m_arr)])
    k = int(m_int.size)
    Wf = _as_matrix(W, k)
    n = int(Wf.shape[0])
    if row_labels is not None and len(row_labels) != n:
        raise InputError("row_labels", len(row_labels), f"must have one label per row (n={n})")
    if Wf.shape[1] != k:
        raise InputError(
            _row_label(row_labels, 0),
            tuple(Wf[0].tolist()),
            f"must have length k={k} (one entry per GPU type, as m), has {Wf.shape[1]}",
        )
    # 1. finite and > 0
    bad = ~np.isfinite(Wf) | (Wf <= 0) if n else np.zeros((0, k), dtype=bool)
    if bad.any():
        l, j = (int(v) for v in np.argwhere(bad)[0])
        raise InputError(
            _row_label(row_labels, l), tuple(Wf[l].tolist()), f"must be finite and > 0 (entry {j} is {Wf[l, j]!r})"
        )
    # 2. normalisation
    if normalise:
        Wn = Wf / Wf[:, :1] if n else Wf
    else:
        off = np.abs(Wf[:, 0] - 1.0) > 1e-9 if n else np.zeros(0, dtype=bool)
        if off.any():
            l = int(np.argmax(off))
            raise InputError(
                _row_label(row_labels, l), tuple(Wf[l].tolist()), "must have w[0] == 1 when normalise=False"
            )
        Wn = Wf.copy()
        if n:
            Wn[:, 0] = 1.0
    # 3. conditioning bound
    if n and (Wn > max_speedup).any():
        l, j = (int(v) for v in np.argwhere(Wn > max_speedup)[0])
        raise InputError(
            _row_label(row_labels, l),
            tuple(Wf[l].tolist()),
            f"has normalised speedup {float(Wn[l, j])!r} at type {j} > max_speedup={max_speedup!r}",
        )
    # 4. monotonicity (optional)
    if require_monotone and n and k > 1:
        dec = np.diff(Wn, axis=1) < 0
        if dec.any():
            l, j = (int(v) for v in np.argwhere(dec)[0])
            raise InputError(
                _row_label(row_labels, l),
                tuple(Wf[l].tolist()),
                f"has a decreasing step from type {j} to {j + 1} (require_monotone=True)",
            )
    # 5. weights and caps
    if weights is None:
        w_arr = np.ones(n)
        w_objs: tuple[Any, ...] = (1,) * n
        fractions = False
    else:
        w_arr, w_objs, fractions = _weights(weights, n)
    c_arr = np.full(n, np.inf) if caps is None else check_caps(caps, n)
    Wn = np.ascontiguousarray(Wn, dtype=float)
    return ValidatedInput(Wn, m_int, w_arr, w_objs, c_arr, weights is not None, caps is not None, fractions)


def _weights(weights: Any, n: int) -> tuple[np.ndarray, tuple[Any, ...], bool]:
    """``weights`` as an (n,) float array (finite, > 0, ratio at most :data:`MAX_WEIGHT_RATIO`),
    the objects as given, and whether one is a ``Fraction``; errors name ``weights[l]`` and the value."""
    if isinstance(weights, np.ndarray) and weights.dtype.kind in "iuf" and weights.shape == (n,):  # vectorised
        w_arr = weights.astype(float)
        bad = np.flatnonzero(~np.isfinite(w_arr) | (w_arr <= 0))
        if bad.size:
            raise InputError(f"weights[{int(bad[0])}]", weights[bad[0]].item(), "must be finite and > 0")
        w_objs: tuple[Any, ...] = tuple(weights.tolist())
        fractions = False
    else:
        w_objs = _vector("weights", weights, n)
        w_arr = np.empty(n)
        for l, v in enumerate(w_objs):
            x = _num(f"weights[{l}]", v)
            if not math.isfinite(x) or x <= 0:
                raise InputError(f"weights[{l}]", v, "must be finite and > 0")
            w_arr[l] = x
        fractions = any(isinstance(w, Fraction) for w in w_objs)
    if n and w_arr.max() / w_arr.min() > MAX_WEIGHT_RATIO:
        hi, lo = int(np.argmax(w_arr)), int(np.argmin(w_arr))
        raise InputError(f"weights[{hi}]", w_objs[hi], f"is more than {MAX_WEIGHT_RATIO:g} times weights[{lo}] = "
                         f"{w_objs[lo]!r} (outside the range the LPs solve reliably)")  # fmt: skip
    return w_arr, w_objs, fractions


def check_caps(caps: Any, n: int) -> np.ndarray:
    """``caps`` as an (n,) float array of devices in [0, inf] (``inf`` = no cap); errors name
    ``caps`` or ``caps[l]`` and the value."""
    if isinstance(caps, np.ndarray) and caps.dtype.kind in "iuf" and caps.shape == (n,):  # vectorised check
        c = caps.astype(float)
        bad = np.flatnonzero(np.isnan(c) | (c < 0))
        if bad.size:
            raise InputError(f"caps[{int(bad[0])}]", caps[bad[0]].item(), "must be >= 0 devices (inf for no cap)")
        return c
    c_objs = _vector("caps", caps, n)
    c_arr = np.empty(n)
    for l, v in enumerate(c_objs):
        x = _num(f"caps[{l}]", v)
        if math.isnan(x) or x < 0:
            raise InputError(f"caps[{l}]", v, "must be >= 0 devices (inf for no cap)")
        c_arr[l] = x
    return c_arr


def _num(field: str, v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise InputError(field, v, "must be a real number") from None


def _vector(field: str, value: Any, n: int) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Iterable, np.ndarray)):
        raise InputError(field, value, f"must be a vector of length n={n}")
    items = tuple(np.asarray(value, dtype=object).ravel().tolist()) if isinstance(value, np.ndarray) else tuple(value)
    if len(items) != n:
        raise InputError(field, value, f"must have length n={n} (one entry per row), has {len(items)}")
    return items


def prepare(
    policy: str, W: Any, m: Any, weights: Any, caps: Any, options: Mapping[str, Any], extra: Mapping[str, Any]
) -> tuple[dict[str, Any], ValidatedInput]:
    """Check ``options`` (common + ``extra``) and validate the inputs (A0) for ``policy``."""
    opts = check_options(policy, options, extra)
    v = validate_inputs(
        W,
        m,
        weights=weights,
        caps=caps,
        normalise=bool(opts["normalise"]),
        max_speedup=float(opts["max_speedup"]),
        require_monotone=bool(opts["require_monotone"]),
        row_labels=opts["row_labels"],
    )
    return opts, v


def trivial_allocation(policy: str, v: ValidatedInput) -> Allocation | None:
    """A0 steps 5-6: the zero allocation for an empty row set or an all-zero ``m``; else ``None``."""
    if v.n == 0 or not v.m.any():
        status = "empty" if v.n == 0 else "no-capacity"
        return Allocation(np.zeros((v.n, v.k)), policy, 0.0, None, status, 0.0, {"n": v.n, "k": v.k})
    return None


def cache_key(policy: str, v: ValidatedInput, opts: Mapping[str, Any]) -> tuple[Any, ...]:
    """Hashable key of a validated call (spec §8 cache)."""
    o = tuple(sorted((k, repr(val)) for k, val in opts.items() if k not in ("cache", "row_labels")))
    return (
        policy,
        v.W.shape,
        v.W.tobytes(),
        v.m.tobytes(),
        _weights_key(v) if v.has_weights else None,
        v.caps.tobytes() if v.has_caps else None,
        o,
    )


def _weights_key(v: ValidatedInput) -> Any:
    """The weights in a cache key: their float values, or, when a weight is a ``Fraction`` (kept
    exact), every weight's ``repr``."""
    return tuple(repr(w) for w in v.weight_objs) if v.fraction_weights else v.weights.tobytes()
