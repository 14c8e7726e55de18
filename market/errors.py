"""Error types and small validators shared by every layer.

Every user-facing validation failure raises :class:`InputError` (a ``ValueError``) whose message
names the offending field and value, so a CLI or a notebook shows one clear line instead of a
traceback from deep inside numpy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "InputError",
    "SolveError",
    "check_finite",
    "check_positive",
    "check_nonneg",
    "check_int",
    "check_choice",
    "check_rows",
    "as_float_array",
    "check_name",
    "slug",
]


class InputError(ValueError):
    """Invalid input: ``field`` had ``value``, which violates ``reason``. The message reads
    ``"{field} {reason}, got {value}"`` (the value shortened to 120 characters).

    :param field: the key, flag or argument that was wrong, as the user wrote it
    :param value: the value given
    :param reason: what it must be, e.g. ``"must be > 0"``
    """

    def __init__(self, field: str, value: Any, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field} {reason}, got {_short(value)}")


class SolveError(RuntimeError):
    """A solver (HiGHS) failed on an instance that should be solvable.

    :param policy: the mechanism or LP that failed
    :param status: the solver's status code or name
    :param message: the solver's message
    """

    def __init__(self, policy: str, status: int | str, message: str) -> None:
        self.policy = policy
        self.status = status
        super().__init__(f"{policy}: solver failed (status {status}): {message}")


def _short(value: Any, limit: int = 120) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ascii_number(field: str, value: Any, what: str) -> None:
    """Text given as a number must be ASCII: Python's ``float`` and ``int`` also read other scripts'
    digits (full-width ``'１'``, Arabic-Indic ``'١'``), which a user did not mean as numbers; and an
    empty or blank text is an error, never "the default"."""
    if isinstance(value, str):
        if not value.strip():
            raise InputError(field, value, f"must be {what}, not empty")
        if not value.isascii():
            raise InputError(field, value, f"must be {what} written in ASCII digits (0-9)")


def check_finite(field: str, value: float) -> float:
    """Return ``float(value)``; raise :class:`InputError` if it is not a finite real number (text
    must use ASCII digits: :func:`_ascii_number`).

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: a number or ASCII numeric text
    :returns: ``float(value)``
    :raises InputError: not a real number, or not finite
    """
    _ascii_number(field, value, "a real number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(field, value, "must be a real number") from None
    if not math.isfinite(x):
        raise InputError(field, value, "must be finite")
    return x


def check_positive(field: str, value: float) -> float:
    """Return ``float(value)``; raise unless it is finite and > 0.

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: a number or ASCII numeric text
    :returns: ``float(value)``
    :raises InputError: not a finite number > 0
    """
    x = check_finite(field, value)
    if x <= 0:
        raise InputError(field, value, "must be > 0")
    return x


def check_nonneg(field: str, value: float) -> float:
    """Return ``float(value)``; raise unless it is finite and >= 0.

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: a number or ASCII numeric text
    :returns: ``float(value)``
    :raises InputError: not a finite number >= 0
    """
    x = check_finite(field, value)
    if x < 0:
        raise InputError(field, value, "must be >= 0")
    return x


def check_int(field: str, value: Any, minimum: int | None = None) -> int:
    """Return ``int(value)``; raise unless it is an integer (>= ``minimum`` when given).

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: an int, an integral float or ASCII numeric text (not a bool)
    :param minimum: the smallest accepted value; ``None``: no bound
    :returns: ``int(value)``
    :raises InputError: not an integer, or below ``minimum``
    """
    if isinstance(value, bool):
        raise InputError(field, value, "must be an integer")
    if isinstance(value, (int, np.integer)):
        i = int(value)
    else:
        _ascii_number(field, value, "an integer")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise InputError(field, value, "must be an integer") from None
        if not math.isfinite(x) or x != int(x):
            raise InputError(field, value, "must be an integer")
        i = int(x)
    if minimum is not None and i < minimum:
        raise InputError(field, value, f"must be >= {minimum}")
    return i


def check_choice(field: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``; otherwise raise naming the valid ones.

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: the value given
    :param choices: the accepted values
    :returns: ``value``
    :raises InputError: ``value`` is not one of ``choices``
    """
    options = list(choices)
    if value not in options:
        raise InputError(field, value, f"must be one of {options}")
    return value


def _ascii_texts(field: str, value: Any) -> None:
    """:func:`_ascii_number` on every text inside nested lists / tuples (numpy's float conversion
    reads non-ASCII digits too)."""
    if isinstance(value, str):
        _ascii_number(field, value, "a real number")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, (str, list, tuple)):
                _ascii_texts(f"{field}[{i}]", v)


def as_float_array(
    field: str,
    value: Any,
    *,
    ndim: int | None = None,
    shape: tuple[int | None, ...] | None = None,
    positive: bool = False,
    nonneg: bool = False,
) -> np.ndarray:
    """Convert ``value`` to a float ndarray and check finiteness, shape and sign.

    ``shape`` entries that are ``None`` are free. Raises :class:`InputError` naming ``field``
    and the first offending entry.

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: anything ``np.array(value, dtype=float)`` accepts (text in ASCII digits only)
    :param ndim: the required number of dimensions; ``None``: any
    :param shape: the required shape; ``None`` entries are free
    :param positive: require every entry > 0
    :param nonneg: require every entry >= 0
    :returns: the float array
    :raises InputError: not numeric, wrong dimension or shape, or an entry not finite or of the wrong sign
    """
    _ascii_texts(field, value)
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(field, value, "must be an array of real numbers") from None
    if ndim is not None and arr.ndim != ndim:
        raise InputError(field, value, f"must have {ndim} dimension(s), has {arr.ndim}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape, strict=True)):
            want = "x".join("?" if s is None else str(s) for s in shape)
            raise InputError(field, value, f"must have shape {want}, has shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{field}{list(idx)}", arr[idx], "must be finite")
    if positive and (arr <= 0).any():
        idx = tuple(int(i) for i in np.argwhere(arr <= 0)[0])
        raise InputError(f"{field}{list(idx)}", arr[idx], "must be > 0")
    if nonneg and (arr < 0).any():
        idx = tuple(int(i) for i in np.argwhere(arr < 0)[0])
        raise InputError(f"{field}{list(idx)}", arr[idx], "must be >= 0")
    return arr


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def check_name(field: str, value: Any) -> str:
    """A scenario / study / sweep name that becomes an output directory name: 1-100 characters
    from letters, digits, ``-``, ``_`` and ``.``, not starting with ``.`` (so no ``..``, no path
    separators, no hidden directories). Raises :class:`InputError` naming the field otherwise.

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param value: the name given
    :returns: ``value``
    :raises InputError: not such a name
    """
    if not isinstance(value, str) or not value:
        raise InputError(field, value, "must be a non-empty string")
    if len(value) > 100 or value.startswith(".") or not set(value) <= _NAME_CHARS:
        raise InputError(
            field, value, "must use only letters, digits, '-', '_' and '.' (not first), at most 100 characters: "
            "it names the output directory"
        )  # fmt: skip
    return value


def slug(text: str) -> str:
    """``text`` with every character :func:`check_name` rejects replaced by ``_`` (and a leading
    ``.`` dropped): turns a file stem into a default name.

    :param text: any text (converted with ``str``)
    :returns: a name :func:`check_name` accepts, at most 100 characters (``"unnamed"`` if nothing is left)
    """
    out = "".join(c if c in _NAME_CHARS else "_" for c in str(text)).lstrip(".")[:100]
    return out or "unnamed"


def check_rows(field: str, rows: Any, columns: Sequence[str]) -> np.ndarray:
    """``rows`` as a finite float array of shape (n >= 1, len(columns)), else :class:`InputError`
    naming ``field`` (e.g. one row of parameters per job).

    :param field: the input's name, as the user wrote it (shown first in the message)
    :param rows: a list of rows
    :param columns: the names of the columns, in order
    :returns: the (n, len(columns)) float array
    :raises InputError: not a non-empty 2-D array with that many columns, or not finite
    """
    a = np.asarray(rows, dtype=float)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] != len(columns):
        raise InputError(field, np.shape(a), f"must be a non-empty list of rows ({', '.join(columns)})")
    if not np.isfinite(a).all():
        raise InputError(field, a.tolist(), "must be finite")
    return a
