"""Parameter-server training jobs: the common job description of the auction papers.

Each paper's mechanism converts a :class:`PSJob` into its own request type (work in worker-slots,
bandwidth demands, ...). Units are stated per field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from marketsim.market.errors import InputError, check_int, check_nonneg, check_positive
from marketsim.market.utility import Utility

__all__ = ["PSJob"]


@dataclass(frozen=True)
class PSJob:
    """A data-parallel training job with parameter servers (the true type or a report of a bidder).

    Fields: ``epochs`` >= 1 passes over the data; ``chunks`` >= 1 equal data chunks (also the most
    workers that can run concurrently); ``minibatches`` >= 1 per chunk; ``compute_time`` seconds
    of gradient computation per mini-batch on one worker; ``grad_mb`` MB pushed (and pulled) per
    mini-batch; ``worker_bw`` / ``ps_bw`` Gbps reserved per worker / PS; ``worker_demand`` and
    ``ps_demand`` per-resource demands (resource name -> amount); ``arrival`` time slot;
    ``utility`` value of elapsed time.

    :param job_id: the job's unique id
    :param owner: the bidder (tenant) that submits it
    :param arrival: the arrival slot, >= 0
    :param epochs: passes over the data, >= 1
    :param chunks: equal data chunks, >= 1 (also the most concurrent workers)
    :param minibatches: mini-batches per chunk, >= 1
    :param compute_time: seconds of gradient computation per mini-batch on one worker, >= 0
    :param grad_mb: MB pushed (and pulled) per mini-batch, >= 0
    :param utility: the job's value (currency) as a function of its elapsed time (:mod:`marketsim.market.utility`)
    :param worker_bw: Gbit/s reserved per worker, > 0
    :param ps_bw: Gbit/s reserved per parameter server, > 0
    :param worker_demand: resource name -> amount per worker, each >= 0
    :param ps_demand: resource name -> amount per parameter server, each >= 0
    :raises InputError: a field out of range, or a utility that is not callable
    """

    job_id: str
    owner: str
    arrival: int
    epochs: int
    chunks: int
    minibatches: int
    compute_time: float
    grad_mb: float
    utility: Utility
    worker_bw: float = 1.0
    ps_bw: float = 5.0
    worker_demand: Mapping[str, float] = field(default_factory=lambda: {"gpu": 1.0})
    ps_demand: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.job_id:
            raise InputError("PSJob.job_id", self.job_id, "must be a non-empty string")
        check_int(f"PSJob[{self.job_id}].arrival", self.arrival, minimum=0)
        check_int(f"PSJob[{self.job_id}].epochs", self.epochs, minimum=1)
        check_int(f"PSJob[{self.job_id}].chunks", self.chunks, minimum=1)
        check_int(f"PSJob[{self.job_id}].minibatches", self.minibatches, minimum=1)
        check_nonneg(f"PSJob[{self.job_id}].compute_time", self.compute_time)
        check_nonneg(f"PSJob[{self.job_id}].grad_mb", self.grad_mb)
        check_positive(f"PSJob[{self.job_id}].worker_bw", self.worker_bw)
        check_positive(f"PSJob[{self.job_id}].ps_bw", self.ps_bw)
        for name, demand in (("worker_demand", self.worker_demand), ("ps_demand", self.ps_demand)):
            for r, v in demand.items():
                check_nonneg(f"PSJob[{self.job_id}].{name}[{r}]", v)
        if not callable(self.utility):
            raise InputError(f"PSJob[{self.job_id}].utility", self.utility, "must be a utility function")

    def seconds_per_minibatch(self) -> float:
        """Compute plus push and pull time of one mini-batch on one worker, in seconds."""
        comm = 2.0 * self.grad_mb * 8.0 / (self.worker_bw * 1000.0)
        return self.compute_time + comm

    def total_minibatches(self) -> int:
        """Mini-batches over all epochs and chunks."""
        return self.epochs * self.chunks * self.minibatches
