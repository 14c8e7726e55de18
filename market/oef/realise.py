"""Realisations: how a policy's fractional allocation becomes whole GPUs each round.

Every fair-share policy returns fractional devices (time fractions) per row and GPU type. The round
engine (:mod:`marketsim.agents.trace_rounds`) realises them in one of three ways (``ModelConfig.realisation``):

* ``"gavel-lease"``: Gavel's priority-ordered greedy lease, per job (the engine's own lease step:
  priority = time fraction / share of the time received, every job on one GPU type);
* ``"oef-rounding"``: OEF's deviation-carrying rounder (spec A6, :class:`DeviationRounder`) turns
  the classes' fractional devices into whole GPUs per class and type, then spec A7 assigns jobs
  (a job may span GPU types: a straggler);
* ``"gandiva-lottery"``: Gandiva_fair's per-type lottery (:class:`GandivaLottery`): on each type j,
  tickets ``x_cj``; draw a class with probability proportional to its tickets among those that
  still fit, give it a job-sized chunk, repeat until none fits (seeded generator; stateless across
  rounds); then spec A7 as for the rounding.

A class realiser has the interface of :class:`marketsim.market.oef.placer.DeviationRounder`
(``round(ideal, min_demand, cap, m_avail)`` -> ``{class: GPUs per type (k,) int}``, attribute
``max_abs_dev``). The paper credits part of OEF's JCT gain to its rounding placer (§6.3.2), so a
fair comparison runs each policy with its OWN realisation (:func:`own_realisation`). The lottery
never hands GPUs to classes with no share of that type (OEF's ``backfill`` does): idle GPUs are part
of what it costs. Units: GPUs (devices); no time units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_choice, check_int
from marketsim.market.oef.placer import ClassKey, DeviationRounder

__all__ = ["REALISATIONS", "OWN_REALISATION", "own_realisation", "GandivaLottery", "make_realiser"]

REALISATIONS = ("oef-rounding", "gavel-lease", "gandiva-lottery")
#: each policy's own realisation (policies not listed use OEF's rounding, as spec A6 does for all)
OWN_REALISATION = {
    "gavel": "gavel-lease",
    "gavel-max-min-perf": "gavel-lease",
    "gavel-max-sum-throughput": "gavel-lease",
    "gavel-isolated": "gavel-lease",
    "gavel-fifo": "gavel-lease",
    "gandiva-fair": "gandiva-lottery",
}


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
        """Integer GPUs per type for every class of ``ideal`` (``Σ_c a[c] ≤ m_avail``, ``Σ_j a[c] ≤ cap[c]``,
        each class's GPUs on one type a multiple of its ``min_demand``)."""
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
    """A fresh class realiser ``name`` (:data:`REALISATIONS`); None for ``"gavel-lease"`` (the round
    engine's own per-job lease); ``rng`` seeds the lottery (required for it)."""
    check_choice("realisation", name, list(REALISATIONS))
    if name == "oef-rounding":
        return DeviationRounder(backfill=backfill)
    if name == "gavel-lease":
        return None
    if rng is None:
        raise InputError("rng", None, "the gandiva-lottery realisation needs a seeded generator")
    return GandivaLottery(rng)
