"""One auction *instance* of a paper behind one small adapter: the contract between a paper's
pure mechanism code and everything generic around it (the Mesa bidder model, the audit, studies).

An :class:`AuctionMarket` holds the true bids of an instance (cluster, price constants and seeds
are fixed inside it) and knows how to

* run any of its registered mechanisms on a list of reports (:meth:`AuctionMarket.mechanism`
  builds a fresh :class:`~marketsim.market.auction.base.OnlineMechanism`; the caller feeds it slot by slot),
* turn a true bid into a misreport from named parameters (:meth:`AuctionMarket.dimensions`,
  :meth:`AuctionMarket.misreport`; the same :class:`~marketsim.market.audit.target.Dimension` objects the
  auditor searches),
* measure a bidder's TRUE surplus of a decision (:meth:`AuctionMarket.true_surplus`: the true
  utility function at the realised completion, under the paper's consequence model for
  misreported sizes, minus the payment), and
* summarise a run (:meth:`AuctionMarket.metrics`).

Identities: ``bid.job_id`` (an int, unique) names a bidder everywhere; ``Decision.job_id`` refers
to it. A misreport keeps ``job_id``; it may change ``arrival`` (only later: a bidder cannot
report before it exists).

Every paper provides a ``make_market(params, rng) -> AuctionMarket`` builder in its own package;
:func:`run_market` is the plain (no-Mesa) replay used by the audit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from marketsim.market.auction.base import Decision, OnlineMechanism, Report
from marketsim.market.errors import InputError

__all__ = ["AuctionMarket", "run_market", "decisions_by_id"]


@runtime_checkable
class AuctionMarket(Protocol):
    """Adapter of one paper's auction instance (see the module docstring)."""

    paper: str
    T: int

    def bids(self) -> Sequence[Report]:
        """The TRUE bids (each with a unique int ``job_id`` and an ``arrival`` slot in ``[0, T)``)."""
        ...

    def mechanisms(self) -> tuple[str, ...]:
        """Registered mechanism names that can run on this instance (first = the paper's own)."""
        ...

    def mechanism(self, name: str, rng: np.random.Generator) -> OnlineMechanism:
        """A fresh mechanism ``name`` on this instance (randomised baselines draw from ``rng``).

        :param name: one of :meth:`mechanisms`
        :param rng: the generator of randomised mechanisms' draws
        :returns: the mechanism, ready to run
        """
        ...

    def dimensions(self, bid: Report) -> Sequence[Any]:
        """The misreportable parameters of ``bid`` (``marketsim.market.audit.target.Dimension`` objects).

        :param bid: a TRUE bid
        :returns: its dimensions
        """
        ...

    def misreport(self, bid: Report, params: Mapping[str, float]) -> Report:
        """``bid`` reported with ``params`` (``{dimension name: value}``; missing names are truthful).

        :param bid: a TRUE bid
        :param params: dimension name -> value
        :returns: the report
        """
        ...

    def true_surplus(self, bid: Report, report: Report, decision: Decision | None) -> float:
        """TRUE surplus of the bidder whose truth is ``bid`` and who reported ``report``.

        :param bid: the TRUE bid
        :param report: what it reported
        :param decision: the mechanism's decision for it, or ``None`` (never decided)
        :returns: true utility realised minus payment, currency
        """
        ...

    def metrics(self, decisions: Sequence[Decision], reports: Sequence[Report]) -> dict[str, float]:
        """Run metrics with TRUE types: at least ``welfare`` (sum of true utilities realised),
        ``revenue`` (payments), ``utility`` (welfare − revenue), ``admission_rate``,
        ``utilisation`` (fraction of capacity-slots used) and ``mean_jct`` (slots, admitted jobs).

        :param decisions: the run's decisions
        :param reports: the reports the mechanism saw
        :returns: metric name -> value
        """
        ...


def decisions_by_id(decisions: Sequence[Decision]) -> dict[int, Decision]:
    """``{job_id: decision}``; a job decided twice is an error of the mechanism.

    :param decisions: a run's decisions
    :returns: job id -> decision
    :raises InputError: a job decided twice
    """
    out: dict[int, Decision] = {}
    for d in decisions:
        if int(d.job_id) in out:
            raise InputError("decisions.job_id", d.job_id, "decided twice")
        out[int(d.job_id)] = d
    return out


def run_market(
    market: AuctionMarket, name: str, reports: Sequence[Report] | None = None, seed: int | np.random.Generator = 0
) -> list[Decision]:
    """Replay ``reports`` (default: the true bids) through a fresh mechanism ``name``; decisions in
    job-id order. ``seed`` fixes a randomised mechanism's draws, so two replays that differ in one
    report differ only through that report.

    :param market: the instance
    :param name: one of ``market.mechanisms()``
    :param reports: the reports to replay; ``None``: the TRUE bids
    :param seed: an int seed or a generator of the mechanism's draws
    :returns: the decisions, in job-id order
    :raises InputError: an unknown mechanism (or bad reports)
    """
    if name not in market.mechanisms():
        raise InputError("mechanism", name, f"must be one of {list(market.mechanisms())} for {market.paper}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    mech = market.mechanism(name, rng)
    return mech.run(list(market.bids() if reports is None else reports))
