"""GPU server agents: one host node of the cluster topology, which fails and heals on its schedule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mesa.discrete_space import FixedAgent

from marketsim.market.types import GpuServer

if TYPE_CHECKING:
    from mesa.discrete_space import Cell

    from marketsim.agents.model import MarketModel

__all__ = ["GPUServerAgent"]


class GPUServerAgent(FixedAgent):
    """A host with ``server.count`` GPUs of type ``server.gpu_type``, fixed on its topology node.

    ``assigned`` maps job id -> GPUs of this host the job holds this round (set by :meth:`hold`);
    ``healthy=False`` removes the host's GPUs from the available capacity (``m_avail``) from the
    next round on. ``outages``: ``(fail_at_s, heal_at_s or None)`` intervals in which the host is
    down; the engine calls :meth:`update` at the start of every round (when any host has outages).

    :param model: the model it belongs to
    :param server: the host's GPU type and count
    :param cell: its topology cell
    :param outages: ``(fail_at_s, heal_at_s or None)`` intervals, s
    """

    def __init__(
        self, model: MarketModel, server: GpuServer, cell: Cell, outages: Sequence[tuple[float, float | None]] = ()
    ) -> None:
        super().__init__(model)
        self.server = server
        self.host_id = server.host_id
        self.cell = cell
        self.healthy = True
        self.assigned: dict[str, int] = {}
        self.outages = tuple(outages)
        #: times this host went down and came back (each a (time s, "fail" | "heal") entry)
        self.log: list[tuple[float, str]] = []

    @property
    def busy(self) -> int:
        """GPUs held by jobs this round."""
        return sum(self.assigned.values())

    @property
    def free(self) -> int:
        """GPUs not held this round (0 when unhealthy)."""
        return self.server.count - self.busy if self.healthy else 0

    def update(self, now: float) -> bool:
        """Fail or heal at the start of a round at ``now`` (s) by the host's outage schedule;
        returns True if its health changed (a failed host drops the leases it held).

        :param now: the round's start, s
        :returns: whether the host's health changed
        """
        down = any(at <= now and (heal is None or now < heal) for at, heal in self.outages)
        if down == (not self.healthy):
            return False
        self.healthy = not down
        self.log.append((now, "fail" if down else "heal"))
        if down:
            self.assigned = {}
        return True

    def hold(self, leases: Mapping[str, int]) -> None:
        """Hold this round's leases (job id -> GPUs on this host).

        :param leases: job id -> GPUs on this host
        """
        self.assigned = dict(leases)

    def clear(self) -> None:
        """Forget last round's assignment."""
        self.assigned = {}
