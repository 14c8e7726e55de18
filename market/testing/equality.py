"""NaN-aware structural equality for tests.

Python's ``==`` on containers compares members by identity first, then ``==``: two NaNs are equal
inside a tuple, list, dict or dataclass only when they are the SAME object (``math.nan`` read twice),
and unequal when they are two objects (``float("nan")`` twice, a NaN read back from a file or
computed). A test comparing two loads of a config with NaN members therefore passes or fails by the
luck of object identity. :func:`same` compares by value, with NaN equal to NaN.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["same"]


def same(a: Any, b: Any) -> bool:
    """``a == b`` by value, recursively, with NaN equal to NaN: floats (and numpy scalars), numpy
    arrays (same shape and values), dataclass instances (same type, every field), mappings (same keys,
    every value), lists and tuples (same type and length, every item); anything else by ``==``."""
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)):
        return (math.isnan(a) and math.isnan(b)) or bool(a == b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape:
            return False
        numeric = np.issubdtype(x.dtype, np.number) and np.issubdtype(y.dtype, np.number)
        return bool(np.array_equal(x, y, equal_nan=numeric))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return False
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
