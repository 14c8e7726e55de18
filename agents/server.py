"""GPU server agents: one host node of the cluster topology."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mesa.discrete_space import FixedAgent

from market.types import GpuServer

if TYPE_CHECKING:
    from mesa.discrete_space import Cell

    from agents.model import MarketModel

__all__ = ["GPUServerAgent"]


class GPUServerAgent(FixedAgent):
    """A host with ``server.count`` GPUs of type ``server.gpu_type``, fixed on its topology node.

    ``assigned`` maps job id -> GPUs of this host the job holds this round; ``healthy=False``
    removes the host's GPUs from the available capacity (``m_avail``) from the next round on.
    """

    def __init__(self, model: MarketModel, server: GpuServer, cell: Cell) -> None:
        super().__init__(model)
        self.server = server
        self.host_id = server.host_id
        self.cell = cell
        self.healthy = True
        self.assigned: dict[str, int] = {}

    @property
    def busy(self) -> int:
        """GPUs held by jobs this round."""
        return sum(self.assigned.values())

    @property
    def free(self) -> int:
        """GPUs not held this round (0 when unhealthy)."""
        return self.server.count - self.busy if self.healthy else 0

    def clear(self) -> None:
        """Forget last round's assignment."""
        self.assigned = {}
