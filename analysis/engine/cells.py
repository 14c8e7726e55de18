"""The unit of work of a study: :class:`CellSpec` (one workload on which every mechanism and variant of the
study runs) and its :class:`CellResult` (metric rows, tenant rows, or the error), shared by the auction cells
(:mod:`marketsim.analysis.engine.studies`) and the fair-share cells (:mod:`marketsim.analysis.engine.fairshare_study`),
and by the executors that run them. ``TRUTHFUL`` names the variant in which everyone reports the truth."""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from marketsim.market.errors import InputError

if TYPE_CHECKING:
    from marketsim.analysis.engine.studies import Study

__all__ = ["TRUTHFUL", "CellSpec", "CellResult"]

TRUTHFUL = "truthful"


@dataclass(frozen=True)
class CellSpec:
    """One workload: panel ``panel`` at its ``xi``-th value, replication ``rep``; every mechanism and
    variant of the study runs on it. Seeded by ``SeedSequence(seed, spawn_key=(panel, xi, rep))``
    (``xi`` = 0 for every value of a ``common_workload`` panel)."""

    run_id: str
    study: Study
    panel: int
    xi: int
    rep: int
    mechanisms: tuple[str, ...]

    @property
    def x(self) -> Any:
        return self.study.panels[self.panel].values[self.xi]

    def failure(self, message: str) -> CellResult:
        """The result of a cell whose task crashed."""
        return CellResult(self.run_id, [], [], message)


@dataclass
class CellResult:
    """Metric rows, tenant rows and the error (if the cell failed)."""

    run_id: str
    rows: list[dict[str, Any]]
    tenant_rows: list[dict[str, Any]]
    error: str | None = None

    @classmethod
    def failed(cls, run_id: str, exc: BaseException) -> CellResult:
        """A failure row for a cell that raised: user errors in one line, anything else with a short traceback
        (the study goes on; call from inside the ``except`` block)."""
        if isinstance(exc, InputError):
            return cls(run_id, [], [], f"InputError: {exc}")
        return cls(run_id, [], [], f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
