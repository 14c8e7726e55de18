"""Host placement of whole-GPU leases, round by round (the round engine's step 6; no Mesa, no randomness).

A lease is the GPUs one job holds in a round: ``size`` GPUs of one GPU type, or, for a lease that
spans GPU types (a realisation that splits a job over types, OEF spec A7), one part per type.
:class:`HostPlacer` puts the leases of a round on concrete hosts, each host holding ``cap[h]`` GPUs
of type ``host_type[h]`` in rack ``host_rack[h]``:

1. **Sticky.** A lease whose job ran in the previous round with the same GPU types and sizes
   keeps exactly that round's hosts when every one of them still has room (largest lease first,
   then lease order; a host that went down has none). Gavel's ``_schedule_jobs_on_workers`` keeps
   jobs on their current workers the same way; here it also avoids a restart (migration cost).
2. **Packing** of the other leases, largest first (ties: lease order; a multi-type lease packs
   its parts in type order), by the rule of OEF spec A8: ``"oef"``: the host of the type with the
   smallest sufficient free count (best fit, ties -> lower host index); if none can hold the whole
   part, it is spread **inside one rack** when a rack has room for it (the rack with the smallest
   sufficient free count of the type, ties -> lower rack), over that rack's hosts in descending
   free count (fewest hosts, ties -> lower index); only when no rack can hold it does it spread
   over every host of the type the same way (and span racks). ``"naive"``: first fit in host
   order, spilling to the next host (no rack awareness; with racks dealt round-robin the host
   order is rack-major, so it spills across racks wherever the order does).

**Moved** (``HostPlacement.moved``): the job ran in the previous round and its set of hosts
changed. (The round engine charges a restart for it, and also for a lease that resumes after a
pause, see ``docs/trace_simulation.md``.)

Host indices follow the order the hosts are given in (the model passes the natural order of the
host ids, ``"h2" < "h10"``). Cost per round: the sticky step is numpy over the leases and hosts
(per-job state in arrays; the sequential rule runs only when some host is asked for more than it
has, e.g. after a failure); packing costs O(gpus_per_host · log hosts) per packed lease (best fit
keeps one heap of hosts per type and free count, with lazy deletion; first fit one pointer per
type, since free counts only fall within a round).

The caller guarantees that each type's leases fit in its free GPUs (the lease step checks this);
a violation raises :class:`RuntimeError`, never an over-full host.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from marketsim.market.errors import InputError, check_choice

__all__ = ["HostPlacer", "HostPlacement", "HOST_PLACEMENTS"]

#: host placement rules of :class:`HostPlacer`
HOST_PLACEMENTS = ("oef", "naive")

#: ``last_type`` of a job whose last lease spanned GPU types (its parts: ``HostPlacer.multi_types``)
MULTI_TYPE = -2

Parts = tuple[tuple[int, int], ...]


@dataclass
class HostPlacement:
    """Where the leases of one round run, as flat arrays over their parts (one part = some GPUs of
    one lease on one host), sorted by lease then host: ``part_lease`` (lease position),
    ``part_host`` (host index), ``part_gpus`` (GPUs); ``n_hosts`` (L,) distinct hosts per lease;
    ``n_racks`` (L,) distinct racks per lease; ``moved`` (L,): the job ran in the previous round
    on another set of hosts."""

    part_lease: np.ndarray
    part_host: np.ndarray
    part_gpus: np.ndarray
    n_hosts: np.ndarray
    moved: np.ndarray
    n_racks: np.ndarray | None = None


class HostPlacer:
    """Places the leases of every round on hosts (module docstring) and remembers each job's last
    hosts. ``host_type`` (H,) GPU type index per host, ``host_cap`` (H,) GPUs per host (>= 0),
    ``rule`` "oef" | "naive", ``n_jobs`` the number of jobs of the trace (job indices 0..n-1),
    ``host_rack`` (H,) rack index per host (default: one rack)."""

    def __init__(
        self, host_type: np.ndarray, host_cap: np.ndarray, rule: str, n_jobs: int, host_rack: np.ndarray | None = None
    ) -> None:
        self.rule = check_choice("placement", rule, HOST_PLACEMENTS)
        self.host_type = np.asarray(host_type, dtype=np.int64)
        self.cap = np.asarray(host_cap, dtype=np.int64)
        if self.host_type.shape != self.cap.shape or self.cap.ndim != 1:
            raise InputError("host_cap", self.cap.shape, f"must match host_type {self.host_type.shape}")
        if (self.cap < 0).any():
            raise InputError("host_cap", self.cap.tolist()[:10], "must be >= 0")
        self.H = int(self.cap.size)
        rack = np.zeros(self.H, dtype=np.int64) if host_rack is None else np.asarray(host_rack, dtype=np.int64)
        if rack.shape != self.cap.shape or (rack < 0).any():
            raise InputError("host_rack", rack.tolist()[:10], f"must give a rack index >= 0 per host ({self.H})")
        self.host_rack = rack
        self.racks = int(rack.max()) + 1 if rack.size else 1
        n = int(n_jobs)
        # each job's last lease: placement round, GPU type (MULTI_TYPE: several), size, number of
        # hosts, first host; the (host, GPUs) parts of leases on several hosts in ``multi``, the
        # (type, GPUs) parts of leases over several types in ``multi_types``
        self.last_round = np.full(n, -2, dtype=np.int64)
        self.last_type = np.full(n, -1, dtype=np.int64)
        self.last_size = np.zeros(n, dtype=np.int64)
        self.last_nh = np.zeros(n, dtype=np.int64)
        self.last_first = np.zeros(n, dtype=np.int64)
        self.multi: dict[int, Parts] = {}
        self.multi_types: dict[int, Parts] = {}
        self.rounds = 0  # calls of :meth:`place` so far
        self.migrations = 0  # leases that moved (module docstring), whole run

    def _last_parts(self, j: int) -> Parts:
        if self.last_nh[j] > 1:
            return self.multi[j]
        return ((int(self.last_first[j]), int(self.last_size[j])),)

    def place(
        self,
        jobs: np.ndarray,
        typ: np.ndarray,
        size: np.ndarray,
        cap: np.ndarray | None = None,
        parts: Mapping[int, Parts] | None = None,
    ) -> HostPlacement:
        """Place leases ``jobs`` (L,) job indices, ``typ`` (L,) GPU types, ``size`` (L,) GPUs, on
        hosts with ``cap`` (H,) usable GPUs this round (default: every host full; 0 for a host
        that is down). ``parts``: lease position -> ``((type, GPUs), ...)`` (ascending types) for
        the leases that span GPU types (their ``typ`` is ignored, their ``size`` is the total).
        One call per round: a job leased in the previous call ran in the previous round. Updates
        each job's last hosts."""
        jobs = np.asarray(jobs, dtype=np.int64)
        typ = np.array(typ, dtype=np.int64)
        size = np.asarray(size, dtype=np.int64)
        parts = dict(parts or {})
        L = int(jobs.size)
        free_a = np.array(self.cap if cap is None else cap, dtype=np.int64)
        r = self.rounds
        if parts:
            typ[list(parts)] = MULTI_TYPE
        cont = self.last_round[jobs] == r - 1
        same = cont & (self.last_type[jobs] == typ) & (self.last_size[jobs] == size)
        for i, p in parts.items():  # a multi-type lease is the same lease when its type parts are
            if same[i] and self.multi_types.get(int(jobs[i])) != tuple(p):
                same[i] = False
        kept = np.zeros(L, dtype=bool)
        # 1. sticky: vectorised when no host is asked for more than it has (then the sequential
        # rule keeps every candidate too); otherwise the sequential rule, largest lease first
        cand = np.flatnonzero(same)
        if cand.size:
            nh = self.last_nh[jobs[cand]]
            one = cand[nh == 1]
            demand = np.bincount(self.last_first[jobs[one]], weights=size[one], minlength=self.H)
            for i in cand[nh > 1].tolist():
                for h, g in self.multi[int(jobs[i])]:
                    demand[h] += g
            if (demand <= free_a).all():
                kept[cand] = True
                free_a -= demand.astype(np.int64)
            else:
                free_l = free_a.tolist()
                for i in cand[np.argsort(-size[cand], kind="stable")].tolist():
                    prev = self._last_parts(int(jobs[i]))
                    if all(free_l[h] >= g for h, g in prev):
                        for h, g in prev:
                            free_l[h] -= g
                        kept[i] = True
                free_a = np.asarray(free_l, dtype=np.int64)
        # 2. pack the others, largest first (stable: lease order on ties): multi-GPU leases (and
        # every part of a multi-type lease) one by one, then the 1-GPU leases at once (they come last)
        packed: dict[int, Parts] = {}
        big = np.flatnonzero(~kept & (size > 1))
        if big.size:
            big = big[np.argsort(-size[big], kind="stable")]
            open_ = np.flatnonzero(free_a > 0)
            ht = self.host_type[open_]
            by_type = {int(t): open_[ht == t].tolist() for t in np.unique(ht).tolist()}
            free = free_a.tolist()
            T_l, S_l = typ.tolist(), size.tolist()
            rest: list[int] = []
            owner: dict[int, int] = {}  # pseudo index (a part of a multi-type lease) -> lease
            for i in big.tolist():
                if i not in parts:
                    rest.append(i)
                    continue
                for t, g in parts[i]:
                    q = len(T_l)
                    T_l.append(t)
                    S_l.append(g)
                    owner[q] = i
                    rest.append(q)
            fill = self._best_fit if self.rule == "oef" else self._first_fit
            got: dict[int, Parts] = {}
            fill(rest, T_l, S_l, free, by_type, got)
            for q, p in got.items():
                if q in owner:  # one type part of a multi-type lease: its hosts join the lease's
                    i = owner[q]
                    packed[i] = tuple(sorted(packed.get(i, ()) + p))
                else:
                    packed[q] = p
            free_a = np.asarray(free, dtype=np.int64)
        first = self.last_first[jobs]  # right for kept leases
        ones = np.flatnonzero(~kept & (size == 1))
        if ones.size:
            first[ones] = self._pack_ones(typ[ones], free_a)
        # where each lease runs; moves; the jobs' last leases
        n_hosts = np.ones(L, dtype=np.int64)
        moved = cont & ~kept & ~same  # another GPU type or size: other hosts
        if ones.size:  # a 1-GPU lease pushed off its host (a host went down)
            o = ones[same[ones]]
            moved[o] = first[o] != self.last_first[jobs[o]]
        extra_lease: list[int] = []
        extra_host: list[int] = []
        extra_gpus: list[int] = []
        for i, p in packed.items():
            j = int(jobs[i])
            if cont[i] and same[i]:  # kept off its hosts (a host went down): moved if the set changed
                old = self._last_parts(j)
                moved[i] = [h for h, _ in old] != [h for h, _ in p]
            first[i] = p[0][0]
            n_hosts[i] = len({h for h, _ in p})
            if len(p) > 1:
                self.multi[j] = p
                for h, g in p:
                    extra_lease.append(i)
                    extra_host.append(h)
                    extra_gpus.append(g)
        kept_multi = np.flatnonzero(kept & (self.last_nh[jobs] > 1))
        for i in kept_multi.tolist():
            p = self.multi[int(jobs[i])]
            n_hosts[i] = len(p)
            for h, g in p:
                extra_lease.append(i)
                extra_host.append(h)
                extra_gpus.append(g)
        for i, p in parts.items():
            self.multi_types[int(jobs[i])] = tuple(p)
        self.last_round[jobs] = r
        self.last_type[jobs] = typ
        self.last_size[jobs] = size
        self.last_nh[jobs] = n_hosts
        self.last_first[jobs] = first
        self.rounds = r + 1
        self.migrations += int(moved.sum())
        single = n_hosts == 1
        part_lease = np.flatnonzero(single)
        part_host = first[single]
        part_gpus = size[single]
        if extra_lease:
            part_lease = np.concatenate([part_lease, np.asarray(extra_lease, dtype=np.int64)])
            part_host = np.concatenate([part_host, np.asarray(extra_host, dtype=np.int64)])
            part_gpus = np.concatenate([part_gpus, np.asarray(extra_gpus, dtype=np.int64)])
            o = np.lexsort((part_host, part_lease))
            part_lease, part_host, part_gpus = part_lease[o], part_host[o], part_gpus[o]
        n_racks = None
        if self.racks > 1:
            n_racks = np.ones(L, dtype=np.int64)
            multi = n_hosts > 1
            if multi.any():
                sel = np.isin(part_lease, np.flatnonzero(multi))
                pr = np.unique(np.column_stack([part_lease[sel], self.host_rack[part_host[sel]]]), axis=0)
                n_racks = np.bincount(pr[:, 0], minlength=L).astype(np.int64)
                n_racks[~multi] = 1
        return HostPlacement(part_lease, part_host, part_gpus, n_hosts, moved, n_racks)

    def _pack_ones(self, typ: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Hosts of 1-GPU leases of types ``typ`` (in packing order) given the hosts' ``free``
        GPUs, vectorised. First fit takes the GPUs in host order; best fit drains the host with the
        fewest free GPUs first (ties -> lower index): after taking one GPU from the host with the
        smallest free count it still has the smallest, so one-by-one best fit does exactly this."""
        out = np.empty(typ.size, dtype=np.int64)
        for t in np.unique(typ).tolist():
            sel = np.flatnonzero(typ == t)
            hs = np.flatnonzero((self.host_type == t) & (free > 0))
            if self.rule == "oef":
                hs = hs[np.argsort(free[hs], kind="stable")]
            slots = np.repeat(hs, free[hs])
            if slots.size < sel.size:
                raise self._short(t, int(sel.size - slots.size))
            out[sel] = slots[: sel.size]
        return out

    @staticmethod
    def _short(t: int, need: int) -> RuntimeError:
        return RuntimeError(f"host placement: {need} GPU(s) of type {t} left over; the leases exceed the free GPUs")

    def _spread_hosts(self, hs: list[int], free: list[int], need: int) -> list[int]:
        """Best fit's spread (module docstring): the hosts ``hs`` of one type to spread ``need`` GPUs
        over, in the order to take them: inside the rack with the smallest sufficient free count if
        one has room, else over all of them; descending free count, ties -> lower index."""
        cands = [h for h in hs if free[h] > 0]
        if self.racks > 1:
            tot: dict[int, int] = {}
            for h in cands:
                rk = int(self.host_rack[h])
                tot[rk] = tot.get(rk, 0) + free[h]
            fit = [rk for rk, f in tot.items() if f >= need]
            if fit:
                best = min(fit, key=lambda rk: (tot[rk], rk))
                cands = [h for h in cands if int(self.host_rack[h]) == best]
        return sorted(cands, key=lambda h: (-free[h], h))

    def _best_fit(
        self,
        rest: list[int],
        T: list[int],
        S: list[int],
        free: list[int],
        by_type: dict[int, list[int]],
        parts: dict[int, Parts],
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
            got: list[tuple[int, int]] = []  # 2b. spread: rack-local if a rack has room, fewest hosts
            need = g
            for h in self._spread_hosts(by_type[t], free, g):
                take = min(free[h], need)
                free[h] -= take
                need -= take
                got.append((h, take))
                if free[h] > 0:
                    heapq.heappush(hp[free[h]], h)  # the old entry is stale (lazy deletion)
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
        parts: dict[int, Parts],
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
