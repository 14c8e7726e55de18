"""argparse ``type`` functions shared by every command line of marketsim (``marketsim``, ``marketsim
gavel-sim``, ``explore_lying``): numbers in ASCII digits only, finite reals."""

from __future__ import annotations

import argparse
import math

__all__ = ["int_arg", "float_arg"]


def int_arg(text: str) -> int:
    """argparse ``type`` of every integer flag: ASCII digits only (``int`` also reads full-width
    ``２`` and ``1_000``), so ``--reps ２`` is refused with one line naming the flag."""
    t = text.strip()
    if not t.isascii() or not t.lstrip("+-").isdigit() or t.count("-") + t.count("+") > 1:
        raise argparse.ArgumentTypeError(f"must be an integer written in ASCII digits (0-9), got {text!r}")
    return int(t)


def float_arg(text: str) -> float:
    """argparse ``type`` of every real-number flag: ASCII only (``float`` also reads full-width
    digits and ``1_0``); a finite number."""
    t = text.strip()
    try:
        if not t.isascii() or "_" in t:
            raise ValueError
        v = float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number written in ASCII digits (0-9), got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return v
