"""The online-auction vocabulary shared by OASiS, PD-ORS, their baselines (and later Astraea, Eris).

A mechanism receives *reports* slot by slot through ``step(now, new_reports)`` and returns one
:class:`Decision` per job whose outcome became final in that call (posted-price mechanisms decide
every report at once; slot-simulated baselines decide a job when it finishes, is dropped, or the
horizon ends, which :meth:`OnlineMechanism.finish` flushes). :meth:`OnlineMechanism.run` feeds a
list of reports by arrival slot.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from marketsim.market.errors import InputError, check_int

__all__ = ["Report", "Schedule", "Decision", "OnlineMechanism", "PostedPriceMechanism", "ResourceSpace"]


class Report(Protocol):
    """Anything with a ``job_id`` and an ``arrival`` slot (the mechanism's own job/request types)."""

    job_id: int
    arrival: int


@dataclass(frozen=True)
class ResourceSpace:
    """Resource types, e.g. ``("gpu", "cpu", "mem", "disk", "bw")`` with units; ``R = len(names)``.

    :param names: the resource names, unique
    :param units: one unit label per resource, or empty
    :raises InputError: no names, duplicates, or a units list of another length
    """

    names: tuple[str, ...]
    units: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.names) == 0:
            raise InputError("ResourceSpace.names", self.names, "must name at least one resource")
        if len(set(self.names)) != len(self.names):
            raise InputError("ResourceSpace.names", self.names, "must be unique")
        if self.units and len(self.units) != len(self.names):
            raise InputError("ResourceSpace.units", self.units, f"must have {len(self.names)} entries")

    @property
    def R(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int | None:
        """Position of resource ``name`` or ``None``.

        :param name: a resource name
        :returns: its index, or ``None`` when absent
        """
        return self.names.index(name) if name in self.names else None


@dataclass(frozen=True)
class Schedule:
    """A job's reserved (or realised) bundle.

    ``workers[t]`` / ``ps[t]`` are integer arrays of worker / parameter-server counts per server of
    the worker / PS pool in slot ``t`` (one pool for PD-ORS: both index the same machines);
    ``modes[t]`` is a placement label (PD-ORS: "colocated", "split", "split-repaired");
    ``completion`` the last slot with workers; ``work_unit`` the DP coarsening (1 = exact).

    :param job_id: the job
    :param completion: the last slot with workers
    :param workers: slot -> worker count per server of the worker pool
    :param ps: slot -> parameter-server count per server of the PS pool
    :param modes: slot -> placement label
    :param work_unit: the DP coarsening (1 = exact)
    """

    job_id: int
    completion: int
    workers: dict[int, np.ndarray]
    ps: dict[int, np.ndarray]
    modes: dict[int, str] = field(default_factory=dict)
    work_unit: float = 1

    @property
    def slots(self) -> list[int]:
        return sorted(self.workers)

    def total_workers(self, t: int) -> int:
        """Workers in slot ``t``.

        :param t: a slot
        :returns: the count (0 when the job has none then)
        """
        return int(self.workers[t].sum()) if t in self.workers else 0

    def total_ps(self, t: int) -> int:
        """Parameter servers in slot ``t``.

        :param t: a slot
        :returns: the count (0 when the job has none then)
        """
        return int(self.ps[t].sum()) if t in self.ps else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": int(self.job_id),
            "completion": int(self.completion),
            "workers": {str(t): [int(v) for v in self.workers[t]] for t in sorted(self.workers)},
            "ps": {str(t): [int(v) for v in self.ps[t]] for t in sorted(self.ps)},
            "modes": {str(t): self.modes[t] for t in sorted(self.modes)},
            "work_unit": self.work_unit,
        }

    def same_as(self, other: Schedule | None) -> bool:
        """Exact equality of completion, slots and per-server counts.

        :param other: another schedule, or ``None``
        :returns: ``True`` when identical (``False`` against ``None``)
        """
        if other is None:
            return False
        return self.to_dict() == other.to_dict()


@dataclass(frozen=True)
class Decision:
    """The outcome for one report.

    ``payment`` (currency) is the posted cost charged (0 when rejected); ``payoff`` the mechanism's
    reported surplus (utility at the planned completion minus payment, ``μ``/``λ`` of the papers);
    ``completion`` the planned (posted-price) or realised (baselines) completion slot, ``None`` if
    none; ``utility`` the reported utility earned at that completion (0 when not completed).

    :param job_id: the report's job
    :param admitted: whether it was admitted
    :param schedule: its reserved or realised schedule, or ``None``
    :param payment: what it is charged, currency
    :param completion: the completion slot, or ``None``
    :param payoff: the reported surplus, currency
    :param utility: the reported utility earned, currency
    :param log: mechanism-specific details (e.g. ``"income"`` of an income division)
    """

    job_id: int
    admitted: bool
    schedule: Schedule | None
    payment: float
    completion: int | None
    payoff: float
    utility: float = 0.0
    log: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": int(self.job_id),
            "admitted": bool(self.admitted),
            "schedule": None if self.schedule is None else self.schedule.to_dict(),
            "payment": float(self.payment),
            "completion": None if self.completion is None else int(self.completion),
            "payoff": float(self.payoff),
            "utility": float(self.utility),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


class OnlineMechanism(ABC):
    """Base of every online mechanism: ``step(now, new_reports) -> decisions``; time never goes back.

    :param T: the horizon in slots, >= 1
    :raises InputError: ``T < 1``
    """

    name: str = "online"

    def __init__(self, T: int) -> None:
        self.T = check_int("T", T, minimum=1)
        self.now = -1

    def _advance(self, now: int, new_reports: Sequence[Report]) -> list[Report]:
        now = check_int("now", now, minimum=0)
        if now < self.now:
            raise InputError("now", now, f"must not go back in time (last step was {self.now})")
        if now >= self.T:
            raise InputError("now", now, f"must be < T = {self.T}")
        for rep in new_reports:
            if int(rep.arrival) != now:
                raise InputError(f"report[{rep.job_id}].arrival", rep.arrival, f"must equal the current slot {now}")
        self.now = now
        return sorted(new_reports, key=lambda r: (int(r.arrival), int(r.job_id)))

    @abstractmethod
    def step(self, now: int, new_reports: Sequence[Report]) -> list[Decision]:
        """Process slot ``now`` with the reports that arrive in it (processed in job-id order).

        :param now: the slot, ``0 <= now < T``, never earlier than the last step
        :param new_reports: the reports arriving in slot ``now``
        :returns: the decisions made in this slot
        """

    def finish(self) -> list[Decision]:
        """Flush decisions still pending at the end of the horizon (none for posted-price mechanisms)."""
        return []

    def run(self, reports: Iterable[Report]) -> list[Decision]:
        """Feed ``reports`` slot by slot (every slot ``0..T-1``) and return all decisions in job-id order.

        :param reports: every report of the run (unique job ids, arrivals in ``[0, T)``)
        :returns: the decisions, in job-id order
        :raises InputError: duplicate job ids or an arrival outside the horizon
        """
        reps = list(reports)
        ids = [int(r.job_id) for r in reps]
        if len(set(ids)) != len(ids):
            raise InputError("reports.job_id", ids, "must be unique")
        by_slot: dict[int, list[Report]] = {}
        for r in reps:
            a = check_int(f"report[{r.job_id}].arrival", r.arrival, minimum=0)
            if a >= self.T:
                raise InputError(f"report[{r.job_id}].arrival", a, f"must be < T = {self.T}")
            by_slot.setdefault(a, []).append(r)
        out: list[Decision] = []
        for t in range(max(self.now + 1, 0), self.T):
            out.extend(self.step(t, by_slot.get(t, [])))
        out.extend(self.finish())
        return sorted(out, key=lambda d: d.job_id)


class PostedPriceMechanism(OnlineMechanism):
    """An online mechanism that decides each report on arrival (``decide``) and commits it."""

    def step(self, now: int, new_reports: Sequence[Report]) -> list[Decision]:
        """Decide each report arriving in slot ``now`` with :meth:`decide`, in job-id order.

        :param now: the slot, ``0 <= now < T``, never earlier than the last step
        :param new_reports: the reports arriving in slot ``now``
        :returns: the decisions made in this slot
        """
        return [self.decide(r) for r in self._advance(now, new_reports)]

    @abstractmethod
    def decide(self, report: Report) -> Decision:
        """Admit or reject one report, reserve its schedule and update prices.

        :param report: the arriving report
        :returns: its decision
        """
