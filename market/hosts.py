"""Host placement of whole-GPU leases, round by round (trace runs; no Mesa, no randomness).

A lease is ``size`` GPUs of one GPU type for one job. :class:`HostPlacer` puts the leases of a
round on concrete hosts, each host holding ``cap[h]`` GPUs of type ``host_type[h]``:

1. **Sticky.** A lease whose job held GPUs of the same type in its last lease keeps exactly that
   lease's hosts and counts when every one of them still has room (largest lease first, then
   lease order). Gavel's ``_schedule_jobs_on_workers`` keeps jobs on their current workers the
   same way; here it also avoids the migration cost.
2. **Packing** of the other leases, largest first (ties: lease order), by the rule of
   :func:`market.oef.placer.pack_hosts` (OEF spec A8): ``"oef"``: the host of the type with the
   smallest sufficient free count (best fit, ties -> lower host index); if none can hold the whole
   lease, spread over the type's hosts in descending free count (fewest hosts, ties -> lower
   index). ``"naive"``: first fit in host order, spilling to the next host.

Host indices follow the order the hosts are given in (the model passes the natural order of the
host ids, ``"h2" < "h10"``). Cost per round: O(hosts) to reset the free counts plus, per lease,
O(gpus_per_host · log hosts) (best fit keeps one heap of hosts per type and free count, with lazy
deletion; first fit keeps one pointer per type, since free counts only fall within a round).

The caller guarantees that each type's leases fit in its free GPUs (the lease step checks this);
a violation raises :class:`RuntimeError`, never an over-full host.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from market.errors import InputError, check_choice

__all__ = ["HostPlacer", "HostPlacement", "HOST_PLACEMENTS"]

#: host placement rules of :class:`HostPlacer`
HOST_PLACEMENTS = ("oef", "naive")


@dataclass
class HostPlacement:
    """Where the leases of one round run, as flat arrays over their parts (one part = some GPUs of
    one lease on one host), sorted by lease then host: ``part_lease`` (lease position),
    ``part_host`` (host index), ``part_gpus`` (GPUs); ``n_hosts`` (L,) distinct hosts per lease;
    ``moved`` (L,): the lease's hosts differ from its job's last lease (False for a first lease)."""

    part_lease: np.ndarray
    part_host: np.ndarray
    part_gpus: np.ndarray
    n_hosts: np.ndarray
    moved: np.ndarray


class HostPlacer:
    """Places the leases of every round on hosts (module docstring) and remembers each job's last
    hosts. ``host_type`` (H,) GPU type index per host, ``host_cap`` (H,) GPUs per host (>= 0),
    ``rule`` "oef" | "naive", ``n_jobs`` the number of jobs of the trace (job indices 0..n-1)."""

    def __init__(self, host_type: np.ndarray, host_cap: np.ndarray, rule: str, n_jobs: int) -> None:
        self.rule = check_choice("placement", rule, HOST_PLACEMENTS)
        self.host_type = np.asarray(host_type, dtype=np.int64)
        self.cap = np.asarray(host_cap, dtype=np.int64)
        if self.host_type.shape != self.cap.shape or self.cap.ndim != 1:
            raise InputError("host_cap", self.cap.shape, f"must match host_type {self.host_type.shape}")
        if (self.cap < 0).any():
            raise InputError("host_cap", self.cap.tolist()[:10], "must be >= 0")
        self.H = int(self.cap.size)
        #: per job: the (host, GPUs) parts of its last lease as a tuple, None before its first lease
        self.last: list[tuple[tuple[int, int], ...] | None] = [None] * int(n_jobs)
        self.last_type = np.full(int(n_jobs), -1, dtype=np.int64)
        self.migrations = 0  # leases whose hosts differed from the job's previous lease

    def place(
        self, jobs: np.ndarray, typ: np.ndarray, size: np.ndarray, cap: np.ndarray | None = None
    ) -> HostPlacement:
        """Place leases ``jobs`` (L,) job indices, ``typ`` (L,) GPU types, ``size`` (L,) GPUs, on
        hosts with ``cap`` (H,) usable GPUs this round (default: every host full; 0 for a host
        that is down). Updates each job's last hosts."""
        free = (self.cap if cap is None else np.asarray(cap, dtype=np.int64)).tolist()
        htype = self.host_type.tolist()
        J = jobs.tolist()
        T = typ.tolist()
        S = size.tolist()
        L = len(J)
        parts: list[tuple[tuple[int, int], ...] | None] = [None] * L
        order = sorted(range(L), key=lambda i: -S[i])  # largest first, stable: lease order on ties
        rest: list[int] = []
        last, last_type = self.last, self.last_type
        for i in order:  # 1. sticky
            prev = last[J[i]]
            if (
                prev is not None
                and last_type[J[i]] == T[i]
                and sum(g for _, g in prev) == S[i]
                and all(free[h] >= g for h, g in prev)
            ):
                for h, g in prev:
                    free[h] -= g
                parts[i] = prev
            else:
                rest.append(i)
        if rest:
            by_type: dict[int, list[int]] = {}
            for h in range(self.H):
                if free[h] > 0:
                    by_type.setdefault(htype[h], []).append(h)
            if self.rule == "oef":
                self._best_fit(rest, T, S, free, by_type, parts)
            else:
                self._first_fit(rest, T, S, free, by_type, parts)
        part_lease: list[int] = []
        part_host: list[int] = []
        part_gpus: list[int] = []
        n_hosts = np.empty(L, dtype=np.int64)
        moved = np.zeros(L, dtype=bool)
        for i in range(L):
            p = parts[i]
            assert p is not None
            for h, g in p:
                part_lease.append(i)
                part_host.append(h)
                part_gpus.append(g)
            n_hosts[i] = len(p)
            j = J[i]
            old = last[j]
            if old is not None and (len(old) != len(p) or any(a[0] != b[0] for a, b in zip(old, p, strict=True))):
                moved[i] = True  # the set of hosts changed (parts are sorted by host)
            last[j] = p
            last_type[j] = T[i]
        self.migrations += int(moved.sum())
        return HostPlacement(
            np.asarray(part_lease, dtype=np.int64),
            np.asarray(part_host, dtype=np.int64),
            np.asarray(part_gpus, dtype=np.int64),
            n_hosts,
            moved,
        )

    @staticmethod
    def _short(t: int, need: int) -> RuntimeError:
        return RuntimeError(f"host placement: {need} GPU(s) of type {t} left over; the leases exceed the free GPUs")

    def _best_fit(
        self,
        rest: list[int],
        T: list[int],
        S: list[int],
        free: list[int],
        by_type: dict[int, list[int]],
        parts: list[tuple[tuple[int, int], ...] | None],
    ) -> None:
        # heaps[t][f]: hosts of type t with f free GPUs (ascending index; lazy deletion)
        heaps: dict[int, list[list[int]]] = {}
        top = max(free, default=0)
        for t, hs in by_type.items():
            hp: list[list[int]] = [[] for _ in range(top + 1)]
            for h in hs:  # ascending: each list is a valid heap
                hp[free[h]].append(h)
            heaps[t] = hp
        for i in rest:
            t, g = T[i], S[i]
            hp = heaps.get(t)
            if hp is None:
                raise self._short(t, g)
            host = -1
            for f in range(g, top + 1):  # 2a. best fit: the smallest sufficient free count
                q = hp[f]
                while q and free[q[0]] != f:
                    heapq.heappop(q)
                if q:
                    host = heapq.heappop(q)
                    break
            if host >= 0:
                free[host] -= g
                if free[host] > 0:
                    heapq.heappush(hp[free[host]], host)
                parts[i] = ((host, g),)
                continue
            got: list[tuple[int, int]] = []  # 2b. spread: descending free count, fewest hosts
            need = g
            for f in range(top, 0, -1):
                q = hp[f]
                while need and q:
                    h = heapq.heappop(q)
                    if free[h] != f:
                        continue
                    take = min(f, need)
                    free[h] -= take
                    need -= take
                    got.append((h, take))
                    if free[h] > 0:
                        heapq.heappush(hp[free[h]], h)
                if not need:
                    break
            if need:
                raise self._short(t, need)
            parts[i] = tuple(sorted(got))

    @staticmethod
    def _first_fit(
        rest: list[int],
        T: list[int],
        S: list[int],
        free: list[int],
        by_type: dict[int, list[int]],
        parts: list[tuple[tuple[int, int], ...] | None],
    ) -> None:
        ptr = dict.fromkeys(by_type, 0)  # first host of the type that may have room (free only falls)
        for i in rest:
            t, need = T[i], S[i]
            hs = by_type.get(t, [])
            p = ptr.get(t, 0)
            got: list[tuple[int, int]] = []
            while need and p < len(hs):
                h = hs[p]
                take = min(free[h], need)
                if take:
                    free[h] -= take
                    need -= take
                    got.append((h, take))
                if free[h] == 0:
                    p += 1
            ptr[t] = p
            if need:
                raise HostPlacer._short(t, need)
            parts[i] = tuple(sorted(got))
