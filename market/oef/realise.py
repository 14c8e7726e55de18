"""Realisations: how a policy's fractional allocation becomes whole GPUs each round.

Every fair-share policy returns fractional devices per (tenant, job type) class and GPU type. A
*realiser* turns them into integer GPUs per class and type for one scheduling round, with the
interface of :class:`market.oef.placer.DeviationRounder` (``round(ideal, min_demand, cap, m_avail)``
-> ``{class: GPUs per type (k,) int}``, attribute ``max_abs_dev``), so the round loop can use any of
them. The paper credits part of OEF's JCT gain to its rounding placer (§6.3.2), so a fair
comparison runs each baseline with its OWN realisation:

* ``"oef-rounding"``: OEF's deviation-carrying rounder (spec A6, :class:`DeviationRounder`);
* ``"gavel-lease"``: Gavel's priority-ordered greedy lease, lifted from jobs to classes. Priority of
  (class c, type j) = ``x_cj / (received share of c on j so far)`` (Gavel's allocation over the
  fraction of time received; never-served entries first). GPUs go in job-sized chunks
  (``min_demand[c]`` GPUs of ONE type, as a Gavel lease puts a job on one type) to the entry of
  highest priority, recomputed after every chunk, until no entry with ``x_cj > 0`` fits;
* ``"gandiva-lottery"``: Gandiva_fair's per-type lottery: on each type j, tickets ``x_cj``; draw a
  class with probability proportional to its tickets among those that still fit, give it a
  job-sized chunk, repeat until none fits (seeded generator; stateless across rounds).

Neither baseline realisation hands GPUs to classes with no share of that type (OEF's ``backfill``
does): idle GPUs are part of what the realisation costs. Units: GPUs (devices); no time units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market.errors import InputError, as_float_array, check_choice, check_int
from market.oef.placer import ClassKey, DeviationRounder

__all__ = ["REALISATIONS", "OWN_REALISATION", "own_realisation", "GavelLease", "GandivaLottery", "make_realiser"]

REALISATIONS = ("oef-rounding", "gavel-lease", "gandiva-lottery")
#: each policy's own realisation (policies not listed use OEF's rounding, as spec A6 does for all)
OWN_REALISATION = {"gavel": "gavel-lease", "gandiva-fair": "gandiva-lottery"}


def own_realisation(policy: str) -> str:
    """The realisation policy ``policy`` uses by itself (see :data:`OWN_REALISATION`)."""
    return OWN_REALISATION.get(policy, "oef-rounding")


def _inputs(
    ideal: Mapping[ClassKey, Any], min_demand: Mapping[ClassKey, int], cap: Mapping[ClassKey, int], m_avail: Any
) -> tuple[list[ClassKey], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    m = as_float_array("m_avail", m_avail)
    if m.ndim != 1 or m.size == 0 or (m < 0).any() or (m != np.floor(m)).any():
        raise InputError("m_avail", m_avail, "must be whole GPUs >= 0 per type")
    keys = list(ideal)
    k = m.size
    x = np.zeros((len(keys), k))
    md = np.zeros(len(keys), dtype=np.int64)
    cp = np.zeros(len(keys), dtype=np.int64)
    for i, c in enumerate(keys):
        row = as_float_array(f"ideal[{c}]", ideal[c], shape=(k,))
        if (row < -1e-9).any():
            raise InputError(f"ideal[{c}]", row.tolist(), "must be >= 0")
        x[i] = np.maximum(row, 0.0)
        if c not in min_demand or c not in cap:
            raise InputError("min_demand/cap", c, "has no entry for this class of ideal")
        md[i] = check_int(f"min_demand[{c}]", min_demand[c], minimum=1)
        cp[i] = check_int(f"cap[{c}]", cap[c], minimum=0)
    return keys, x, md, cp, m.astype(np.int64)


@dataclass(eq=False)
class GavelLease:
    """Gavel's priority-ordered greedy lease on classes (module docstring); keeps the GPU-rounds
    each class received per type, and the rounds it was present, across rounds."""

    received: dict[ClassKey, np.ndarray] = field(default_factory=dict, init=False)
    owed: dict[ClassKey, np.ndarray] = field(default_factory=dict, init=False)
    rounds: int = field(default=0, init=False)

    @property
    def max_abs_dev(self) -> float:
        """Largest ``|Σ_j (owed − received)|`` over the current classes (GPU-rounds)."""
        return max((abs(float((self.owed[c] - r).sum())) for c, r in self.received.items()), default=0.0)

    def round(
        self, ideal: Mapping[ClassKey, Any], min_demand: Mapping[ClassKey, int], cap: Mapping[ClassKey, int],
        m_avail: Any,
    ) -> dict[ClassKey, np.ndarray]:  # fmt: skip
        """Integer GPUs per type for every class of ``ideal`` (``Σ_c a[c] ≤ m_avail``, ``Σ_j a[c] ≤ cap[c]``,
        each class's GPUs on one type a multiple of its ``min_demand``)."""
        keys, x, md, cp, m = _inputs(ideal, min_demand, cap, m_avail)
        self.rounds += 1
        k = m.size
        self.received = {c: self.received.get(c, np.zeros(k)) for c in keys}
        self.owed = {c: self.owed.get(c, np.zeros(k)) + x[i] for i, c in enumerate(keys)}
        got = np.zeros((len(keys), k), dtype=np.int64)
        free = m.copy()
        left = cp.copy()
        if keys:
            rec = np.array([self.received[c] for c in keys])
            owed = np.array([self.owed[c] for c in keys])
            while True:
                # priority: share owed so far over share received (incl. this round's chunks); unserved first
                fits = (x > 1e-12) & (free[None, :] >= md[:, None]) & (left >= md)[:, None]
                if not fits.any():
                    break
                have = rec + got
                prio = np.where(have > 0, owed / np.maximum(have, 1e-300), np.inf)
                prio = np.where(fits, prio, -1.0)
                # ties: larger share, then lower class index, then faster type
                order = np.lexsort((-np.arange(k)[None, :].repeat(len(keys), 0).ravel(),
                                    np.arange(len(keys)).repeat(k), -x.ravel(), -prio.ravel()))  # fmt: skip
                i, j = divmod(int(order[0]), k)
                got[i, j] += md[i]
                free[j] -= md[i]
                left[i] -= md[i]
            for i, c in enumerate(keys):
                self.received[c] = rec[i] + got[i]
        return {c: got[i] for i, c in enumerate(keys)}


@dataclass(eq=False)
class GandivaLottery:
    """Gandiva_fair's per-type lottery (module docstring): stateless, seeded by ``rng``."""

    rng: np.random.Generator
    last_dev: float = field(default=0.0, init=False)

    @property
    def max_abs_dev(self) -> float:
        """Largest ``|Σ_j (ideal − granted)|`` over the classes of the last round (GPUs)."""
        return self.last_dev

    def round(
        self, ideal: Mapping[ClassKey, Any], min_demand: Mapping[ClassKey, int], cap: Mapping[ClassKey, int],
        m_avail: Any,
    ) -> dict[ClassKey, np.ndarray]:  # fmt: skip
        """Integer GPUs per type for every class of ``ideal`` (same guarantees as :meth:`GavelLease.round`)."""
        keys, x, md, cp, m = _inputs(ideal, min_demand, cap, m_avail)
        k = m.size
        got = np.zeros((len(keys), k), dtype=np.int64)
        left = cp.copy()
        for j in range(k):
            free = int(m[j])
            while keys:
                ok = (x[:, j] > 1e-12) & (md <= free) & (left >= md)
                if not ok.any():
                    break
                p = np.where(ok, x[:, j], 0.0)
                i = int(self.rng.choice(len(keys), p=p / p.sum()))
                got[i, j] += md[i]
                free -= int(md[i])
                left[i] -= md[i]
        self.last_dev = float(np.abs(x.sum(axis=1) - got.sum(axis=1)).max()) if keys else 0.0
        return {c: got[i] for i, c in enumerate(keys)}


def make_realiser(name: str, *, backfill: bool = True, rng: np.random.Generator | None = None) -> Any:
    """A fresh realiser ``name`` (:data:`REALISATIONS`); ``rng`` seeds the lottery (required for it)."""
    check_choice("realisation", name, list(REALISATIONS))
    if name == "oef-rounding":
        return DeviationRounder(backfill=backfill)
    if name == "gavel-lease":
        return GavelLease()
    if rng is None:
        raise InputError("rng", None, "the gandiva-lottery realisation needs a seeded generator")
    return GandivaLottery(rng)
