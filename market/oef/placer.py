"""OEF placer: deviation rounding (spec A6), job assignment (A7) and host packing (A8).

The allocation policies return fractional devices per (tenant, job type) class and GPU type. Each scheduling round:

1. :class:`DeviationRounder` turns them into whole GPUs per class and type, carrying the rounding error across rounds
   (``dev``, the paper's per-user deviation, and ``tdev``, the type-mix deviation) so that the time average of the
   integral counts approaches the fractional share;
2. :func:`assign_class` (spec A7; :func:`assign_jobs` is its form on :class:`RunnableJob` objects) picks which
   runnable jobs of a class start on those GPUs (longest starvation first);
3. :func:`pack_hosts` puts the chosen jobs' workers on concrete hosts (largest job first, best fit) with the round
   engine's placer, :class:`marketsim.market.hosts.HostPlacer`.

The round engine (:mod:`marketsim.agents.trace_rounds`) calls :class:`DeviationRounder` and :func:`assign_class` when a
run's realisation is ``"oef-rounding"``; there is no second implementation of these steps.

Units: GPU counts are devices; ``starved_s`` and ``arrival`` are seconds. Pure numpy, no randomness.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_choice, check_finite, check_int
from marketsim.market.types import GpuServer, check_capacity_vector

__all__ = [
    "ClassKey",
    "PLACEMENTS",
    "round_half_up",
    "waterfill",
    "DeviationRounder",
    "RunnableJob",
    "assign_class",
    "assign_jobs",
    "Placement",
    "pack_hosts",
]

ClassKey = tuple[str, str]  # (tenant_id, job_type)
PLACEMENTS = ("oef", "naive")

_DECIMALS = 9  # residuals are compared after rounding to this many decimals (spec A6)
_NEG_TOL = 1e-9  # LP noise below zero that is clipped instead of rejected


def round_half_up(x: float) -> int:
    """``floor(x + 0.5 + 1e-9)``: literal round-half-up, never banker's rounding (spec A6 step 2)."""
    return math.floor(x + 0.5 + 1e-9)


def waterfill(ideal: np.ndarray, cap: np.ndarray, total: float) -> np.ndarray:
    """Work-conserving redistribution of share a class cannot use (spec A6 step 1).

    Start from ``eff = min(ideal, cap)``; then repeatedly spread ``min(total, Σcap, Σideal) − Σeff`` over the classes
    still below their cap, in proportion to ``ideal``, clipping at ``cap``. ``ideal`` and ``cap`` are GPUs per class,
    shape (C,); ``total`` is the number of GPUs ``G``. Returns ``eff`` (GPUs per class, float).
    """
    ideal = np.asarray(ideal, dtype=float)
    cap = np.asarray(cap, dtype=float)
    eff = np.minimum(ideal, cap)
    target = min(float(total), float(cap.sum()), float(ideal.sum()))
    for _ in range(ideal.size + 1):  # every pass saturates a class or finishes
        rest = target - float(eff.sum())
        if rest <= 1e-12 * max(1.0, target):
            break
        open_ = (eff < cap - 1e-12) & (ideal > 0)
        weight = float(ideal[open_].sum())
        if weight <= 0:
            break
        eff[open_] = np.minimum(eff[open_] + rest * ideal[open_] / weight, cap[open_])
    return eff


@dataclass(eq=False)
class DeviationRounder:
    """Capacity-aware deviation-carrying rounding placer (spec A6); keeps its state across rounds.

    ``backfill``: hand GPUs left idle by the zeroing rule to other classes (work-conserving; ``False`` is the
    paper-literal behaviour). ``dev_clip``: optional bound on ``|dev_c|`` (GPUs). ``tdev_clip``: bound on
    ``|tdev[c, j]|`` (GPUs). ``debug``: check the P5 invariants at the end of every :meth:`round`.

    Class index (used by every tie rule) = position of the class in the ``ideal`` mapping of that round.
    State: ``dev[c]`` (GPUs, scalar) and ``tdev[c]`` (GPUs per type); classes absent from ``ideal`` are dropped,
    new classes start at 0. Diagnostics: ``max_abs_dev`` (now), ``max_abs_dev_seen`` (over all rounds),
    ``last_unused`` (GPUs not handed out in the last round), ``unused_gpu_rounds`` (cumulative), ``rounds``,
    ``last_eff[c]`` (water-filled share of the last round, GPUs) and, for claim C13(c), ``zero_run[c]`` /
    ``longest_zero_run[c]``: current and longest run of consecutive rounds in which ``c`` had ``eff_c > 0`` and
    ``min_demand_c ≤ G`` but got 0 GPUs (rounds; a departed class's entries are dropped with its state).
    """

    backfill: bool = True
    dev_clip: float | None = None
    tdev_clip: float = 2.0
    debug: bool = False
    dev: dict[ClassKey, float] = field(default_factory=dict, init=False)
    tdev: dict[ClassKey, np.ndarray] = field(default_factory=dict, init=False)
    rounds: int = field(default=0, init=False)
    last_unused: int = field(default=0, init=False)
    unused_gpu_rounds: int = field(default=0, init=False)
    max_abs_dev_seen: float = field(default=0.0, init=False)
    last_eff: dict[ClassKey, float] = field(default_factory=dict, init=False)
    zero_run: dict[ClassKey, int] = field(default_factory=dict, init=False)
    longest_zero_run: dict[ClassKey, int] = field(default_factory=dict, init=False)
    _k: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.dev_clip is not None:
            self.dev_clip = check_finite("dev_clip", self.dev_clip)
            if self.dev_clip < 0:
                raise InputError("dev_clip", self.dev_clip, "must be >= 0 or None")
        self.tdev_clip = check_finite("tdev_clip", self.tdev_clip)
        if self.tdev_clip < 0:
            raise InputError("tdev_clip", self.tdev_clip, "must be >= 0")

    @property
    def max_abs_dev(self) -> float:
        """Largest ``|dev_c|`` over the current classes (GPUs); 0 without classes."""
        return max((abs(v) for v in self.dev.values()), default=0.0)

    def reset(self) -> None:
        """Forget all deviations and diagnostics."""
        for state in (self.dev, self.tdev, self.last_eff, self.zero_run, self.longest_zero_run):
            state.clear()
        self.rounds = self.last_unused = self.unused_gpu_rounds = 0
        self.max_abs_dev_seen = 0.0
        self._k = None

    # ------------------------------------------------------------------------------------------------------------
    def _validate(
        self,
        ideal: Mapping[ClassKey, np.ndarray],
        min_demand: Mapping[ClassKey, int],
        cap: Mapping[ClassKey, int],
        m_avail: np.ndarray,
    ) -> tuple[list[ClassKey], np.ndarray, np.ndarray, list[int], list[int]]:
        m = check_capacity_vector("m_avail", m_avail)
        k = int(m.size)
        if k == 0:
            raise InputError("m_avail", m_avail, "must list at least one GPU type")
        if self._k is not None and k != self._k:
            raise InputError("m_avail", m_avail, f"must keep length {self._k} (the number of GPU types) across rounds")
        keys = list(ideal.keys())
        for name, other in (("min_demand", min_demand), ("cap", cap)):
            missing = [c for c in keys if c not in other]
            if missing:
                raise InputError(name, missing, "has no entry for these classes of ideal")
            extra = [c for c in other if c not in ideal]
            if extra:
                raise InputError(name, extra, "has entries for classes absent from ideal")
        x = np.zeros((len(keys), k))
        md: list[int] = []
        cp: list[int] = []
        for i, c in enumerate(keys):
            row = as_float_array(f"ideal[{c}]", ideal[c], shape=(k,))
            if (row < -_NEG_TOL).any():
                j = int(np.argmax(row < -_NEG_TOL))
                raise InputError(f"ideal[{c}][{j}]", float(row[j]), "must be >= 0")
            x[i] = np.maximum(row, 0.0)
            md.append(check_int(f"min_demand[{c}]", min_demand[c], minimum=1))
            cp.append(check_int(f"cap[{c}]", cap[c], minimum=0))
        return keys, m, x, md, cp

    def round(
        self,
        ideal: Mapping[ClassKey, np.ndarray],
        min_demand: Mapping[ClassKey, int],
        cap: Mapping[ClassKey, int],
        m_avail: np.ndarray,
    ) -> dict[ClassKey, np.ndarray]:
        """One scheduling round of spec A6.

        ``ideal[c]``: fractional GPUs per type, shape (k,); ``min_demand[c]``: fewest workers of a runnable job of
        ``c``; ``cap[c]``: total workers of its runnable jobs; ``m_avail``: healthy GPUs per type, shape (k,).
        Returns integer GPUs per type, shape (k,), for every class of ``ideal``, with ``Σ_c a[c] ≤ m_avail``,
        ``Σ_j a[c, j] ≤ cap[c]`` and ``Σ_j a[c, j]`` either 0 or ``≥ min_demand[c]``.
        """
        keys, m, x, md, cp = self._validate(ideal, min_demand, cap, m_avail)
        k = int(m.size)
        self._k = k
        self.dev = {c: self.dev.get(c, 0.0) for c in keys}
        self.tdev = {c: self.tdev.get(c, np.zeros(k)) for c in keys}
        self.zero_run = {c: self.zero_run.get(c, 0) for c in keys}
        self.longest_zero_run = {c: self.longest_zero_run.get(c, 0) for c in keys}
        n = len(keys)
        g_total = int(m.sum())
        if n == 0:
            self.last_eff = {}
            self.rounds += 1
            self.last_unused = g_total
            self.unused_gpu_rounds += g_total
            return {}

        # 0. per-class totals and type shares
        ideal_c = x.sum(axis=1)
        share = np.full((n, k), 1.0 / k)
        pos = ideal_c > 0
        share[pos] = x[pos] / ideal_c[pos, None]
        # 1. water-fill share beyond the runnable demand
        eff = waterfill(ideal_c, np.asarray(cp, dtype=float), g_total)
        # 2. target and literal rounding, capped by demand
        t_arr = eff + np.array([self.dev[c] for c in keys])
        target = t_arr.tolist()
        r = [min(round_half_up(max(t, 0.0)), cp[i]) for i, t in enumerate(target)]
        # 3. zeroing rule: a class below its smallest job's size gets nothing
        r = [0 if 0 < r[i] < md[i] else r[i] for i in range(n)]
        # 4. capacity repair
        total = sum(r)
        while total > g_total:
            cand = [i for i in range(n) if r[i] > 0]
            free_ok = [i for i in cand if r[i] - 1 >= md[i]]
            pool = free_ok or cand
            # argmin of the rounded residual, ties -> higher class index
            star = min(pool, key=lambda i: (round(target[i] - r[i], _DECIMALS), -i))
            if free_ok:
                r[star] -= 1
                total -= 1
            else:
                total -= r[star]
                r[star] = 0
        # 5. backfill (work-conserving)
        if self.backfill:
            while total < g_total:
                free = g_total - total
                best, best_key, best_need = -1, (0.0, 0), 0
                for i in range(n):
                    need = max(1, md[i] - r[i])
                    if need <= free and r[i] + need <= cp[i]:
                        key = (round(target[i] - r[i], _DECIMALS), -i)  # residual descending, ties -> lower index
                        if best < 0 or key > best_key:
                            best, best_key, best_need = i, key, need
                if best < 0:
                    break
                r[best] += best_need
                total += best_need
        # 6. deviation update
        for i, c in enumerate(keys):
            d = self.dev[c] + float(eff[i]) - r[i]
            if self.dev_clip is not None:
                d = min(max(d, -self.dev_clip), self.dev_clip)
            self.dev[c] = d
        # 7. type mix
        r_arr = np.asarray(r, dtype=np.int64)
        tdev = np.stack([self.tdev[c] for c in keys])
        a = self._type_mix(share * r_arr[:, None] + tdev, r_arr, m.astype(np.int64))
        tdev = np.clip(tdev + share * r_arr[:, None] - a, -self.tdev_clip, self.tdev_clip)
        for i, c in enumerate(keys):
            self.tdev[c] = tdev[i]

        if self.debug:
            _check_invariants(keys, a, r_arr, m, md, cp)
        self.last_eff = {c: float(eff[i]) for i, c in enumerate(keys)}
        for i, c in enumerate(keys):
            if r[i] == 0 and eff[i] > 0 and md[i] <= g_total:
                self.zero_run[c] += 1
                self.longest_zero_run[c] = max(self.longest_zero_run[c], self.zero_run[c])
            else:
                self.zero_run[c] = 0
        self.rounds += 1
        self.last_unused = g_total - total
        self.unused_gpu_rounds += self.last_unused
        self.max_abs_dev_seen = max(self.max_abs_dev_seen, self.max_abs_dev)
        return {c: a[i].copy() for i, c in enumerate(keys)}

    @staticmethod
    def _type_mix(want: np.ndarray, r: np.ndarray, m: np.ndarray) -> np.ndarray:
        """Hand out ``r[c]`` units per class one at a time to the (class, type) with the largest ``want − a``.

        Ties -> lower class index, then faster type: the score matrix is kept with its type columns reversed, so
        ``np.argmax`` (first maximum in row-major order) implements the tie rule exactly.
        """
        n, k = want.shape
        a = np.zeros((n, k), dtype=np.int64)
        left = r.tolist()
        free = m.tolist()
        want_rev = want[:, ::-1].tolist()
        # one scalar rounding function (Python's correctly rounded round) for every score, so equal residuals tie
        score = np.array([[round(v, _DECIMALS) for v in row] for row in want_rev])
        score[r == 0, :] = -np.inf
        score[:, m[::-1] == 0] = -np.inf
        taken = [[0] * k for _ in range(n)]
        for _ in range(int(r.sum())):
            idx = int(score.argmax())
            c, jj = divmod(idx, k)
            taken[c][jj] += 1
            left[c] -= 1
            free[k - 1 - jj] -= 1
            score[c, jj] = round(want_rev[c][jj] - taken[c][jj], _DECIMALS)
            if left[c] == 0:
                score[c, :] = -np.inf
            if free[k - 1 - jj] == 0:
                score[:, jj] = -np.inf
        a[:, ::-1] = np.asarray(taken, dtype=np.int64).reshape(n, k)
        return a


def _check_invariants(
    keys: Sequence[ClassKey], a: np.ndarray, r: np.ndarray, m: np.ndarray, md: Sequence[int], cp: Sequence[int]
) -> None:
    """Raise ``AssertionError`` if a round's output breaks a hard invariant of spec §6.3 P5."""
    if (a < 0).any():
        raise AssertionError(f"negative allocation {a.tolist()}")
    over = a.sum(axis=0) > m
    if over.any():
        raise AssertionError(f"types {np.flatnonzero(over).tolist()} over capacity: {a.sum(axis=0).tolist()} > {m}")
    for i, c in enumerate(keys):
        got = int(a[i].sum())
        if got != int(r[i]):
            raise AssertionError(f"class {c}: type mix gave {got} GPUs, count step gave {int(r[i])}")
        if got > cp[i]:
            raise AssertionError(f"class {c}: {got} GPUs > cap {cp[i]}")
        if 0 < got < md[i]:
            raise AssertionError(f"class {c}: {got} GPUs < min_demand {md[i]} (zeroing rule)")


# ----------------------------------------------------------------------------------------------------------------------
# A7 job assignment


@dataclass(frozen=True)
class RunnableJob:
    """A runnable job of one class: ``workers`` GPUs (gang), ``arrival`` and ``starved_s`` (seconds since it last
    ran; ``math.inf`` is allowed for "never ran") in seconds."""

    job_id: str
    workers: int
    arrival: float
    starved_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.job_id, str) or not self.job_id:
            raise InputError("RunnableJob.job_id", self.job_id, "must be a non-empty string")
        object.__setattr__(self, "workers", check_int(f"RunnableJob[{self.job_id}].workers", self.workers, minimum=1))
        arrival = check_finite(f"RunnableJob[{self.job_id}].arrival", self.arrival)
        if arrival < 0:
            raise InputError(f"RunnableJob[{self.job_id}].arrival", self.arrival, "must be >= 0")
        object.__setattr__(self, "arrival", arrival)
        try:
            starved = float(self.starved_s)
        except (TypeError, ValueError):
            raise InputError(f"RunnableJob[{self.job_id}].starved_s", self.starved_s, "must be a real number") from None
        if math.isnan(starved) or starved < 0:
            raise InputError(f"RunnableJob[{self.job_id}].starved_s", self.starved_s, "must be >= 0 (inf allowed)")
        object.__setattr__(self, "starved_s", starved)


def _counts_vector(field_name: str, value: object) -> np.ndarray:
    """A 1-D vector of whole GPU counts >= 0 (int64)."""
    arr = as_float_array(field_name, value, ndim=1, nonneg=True)
    if (arr != np.floor(arr)).any():
        j = int(np.argmax(arr != np.floor(arr)))
        raise InputError(f"{field_name}[{j}]", float(arr[j]), "must be a whole number of GPUs")
    return arr.astype(np.int64)


def _check_unique_ids(field_name: str, ids: Sequence[str]) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise InputError(field_name, i, "is duplicated")
        seen.add(i)


def assign_class(
    rem: Sequence[int], sizes: Sequence[int], rule: str = "oef", feasible: Sequence[Sequence[bool]] | None = None
) -> list[list[int] | None]:
    """Spec A7 on plain lists (the round engine's job assignment): the GPUs ``rem`` (per type, slowest
    first) of one class go to its jobs of ``sizes`` workers, taken in the given (queue) order; a job
    that does not fit in what is left is skipped. ``rule = "oef"`` takes all workers from one type
    when one has room (the one with the most units left, ties -> faster), else starts at the type
    with the most units left and extends to the nearest ranks (faster first on equal distance);
    ``"naive"`` takes units in rank order, slowest first. ``feasible[i][j]``: job ``i`` can run on
    type ``j`` (default: every type); the job only takes GPUs of its feasible types. Returns per job
    its GPUs per type (a list of k ints) or None when skipped."""
    left = [int(x) for x in rem]
    k = len(left)
    out: list[list[int] | None] = []
    for i, g in enumerate(sizes):
        ok = range(k) if feasible is None else [j for j in range(k) if feasible[i][j]]
        if sum(left[j] for j in ok) < g:
            out.append(None)
            continue
        take = [0] * k
        if rule == "oef":
            fits = [j for j in ok if left[j] >= g]
            if fits:
                best = max(fits, key=lambda j: (left[j], j))  # most left, ties -> faster
                take[best] = g
            else:
                start = max(ok, key=lambda j: (left[j], j))
                need = g
                for j in sorted(ok, key=lambda j: (abs(j - start), -j)):  # nearest ranks, faster first on ties
                    t = min(left[j], need)
                    take[j] = t
                    need -= t
                    if need == 0:
                        break
        else:
            need = g
            for j in ok:
                t = min(left[j], need)
                take[j] = t
                need -= t
                if need == 0:
                    break
        for j in range(k):
            left[j] -= take[j]
        out.append(take)
    return out


def assign_jobs(
    a: np.ndarray, jobs: Sequence[RunnableJob], placement: str = "oef"
) -> tuple[list[tuple[RunnableJob, np.ndarray]], np.ndarray]:
    """Start runnable jobs of one class on its GPUs ``a`` (units per type, shape (k,)) — spec A7.

    Jobs are tried longest-starved first (then earlier arrival, then ``job_id``); a job that does not fit in the
    remaining units is skipped; the rule is :func:`assign_class` (the round engine's own step).
    Returns ``[(job, GPUs per type (k,) int)]`` in start order and the leftover (idle) units per type.
    """
    check_choice("placement", placement, PLACEMENTS)
    rem = _counts_vector("a", a)
    k = int(rem.size)
    if k == 0:
        raise InputError("a", a, "must list at least one GPU type")
    for job in jobs:
        if not isinstance(job, RunnableJob):
            raise InputError("jobs", job, "must be RunnableJob instances")
    _check_unique_ids("jobs job_id", [job.job_id for job in jobs])
    queue = sorted(jobs, key=lambda job: (-job.starved_s, job.arrival, job.job_id))
    takes = assign_class(rem.tolist(), [job.workers for job in queue], placement)
    started: list[tuple[RunnableJob, np.ndarray]] = []
    for job, take in zip(queue, takes, strict=True):
        if take is not None:
            vec = np.asarray(take, dtype=np.int64)
            rem -= vec
            started.append((job, vec))
    return started, rem


# ----------------------------------------------------------------------------------------------------------------------
# A8 host packing


@dataclass(frozen=True)
class Placement:
    """Where one job runs: ``hosts`` lists ``(host_id, gpu type, count)`` in placement order."""

    job_id: str
    hosts: tuple[tuple[str, int, int], ...]
    cross_type: bool
    cross_host: bool

    @property
    def n_hosts(self) -> int:
        """Number of distinct hosts the job spans."""
        return len({h for h, _, _ in self.hosts})

    def counts(self, k: int) -> np.ndarray:
        """GPUs per type, shape (k,), int."""
        out = np.zeros(k, dtype=np.int64)
        for _, j, g in self.hosts:
            out[j] += g
        return out


def _host_key(host_id: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order of host ids ("h2" < "h10"); ties of equal free capacity resolve by this key."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", host_id) if p)


def pack_hosts(
    chosen: Sequence[tuple[RunnableJob, np.ndarray]], servers: Sequence[GpuServer], placement: str = "oef"
) -> dict[str, Placement]:
    """Place the workers of the jobs started this round on hosts — spec A8, by the round engine's own
    placer (:class:`marketsim.market.hosts.HostPlacer`, fresh: no job ran before, one rack).

    Jobs go largest first (then longer starvation, then ``job_id``). ``placement="oef"``: per GPU type of the job,
    the host with the smallest sufficient free count (best fit, ties -> lower host id in natural order); if none can
    hold all of them, spread over that type's hosts in descending free count (fewest hosts). ``"naive"``: first fit
    in host-id order, spilling to the next host. Raises :class:`InputError` if the jobs need more GPUs of a type than
    the servers hold. Returns ``{job_id: Placement}``.
    """
    from marketsim.market.hosts import HostPlacer

    check_choice("placement", placement, PLACEMENTS)
    _check_unique_ids("servers host_id", [s.host_id for s in servers])
    _check_unique_ids("chosen job_id", [job.job_id for job, _ in chosen])
    hosts = sorted(servers, key=lambda s: _host_key(s.host_id))
    items: list[tuple[RunnableJob, np.ndarray]] = []
    k: int | None = None
    for job, counts in chosen:
        vec = _counts_vector(f"chosen[{job.job_id}] counts", counts)
        if k is not None and vec.size != k:
            raise InputError(f"chosen[{job.job_id}] counts", counts, f"must have length {k} like the other jobs")
        k = int(vec.size)
        items.append((job, vec))
    demand = np.sum([vec for _, vec in items], axis=0) if items else np.zeros(0, dtype=np.int64)
    for j, need in enumerate(np.asarray(demand).tolist()):
        have = sum(int(s.count) for s in hosts if int(s.gpu_type) == j)
        if need > have:
            raise InputError(f"chosen GPUs of type {j}", need, f"exceed the {have} GPUs of that type on the servers")
    items = [it for it in items if int(it[1].sum()) > 0]
    items.sort(key=lambda it: (-int(it[1].sum()), -it[0].starved_s, it[0].job_id))
    if not items:
        return {}
    placer = HostPlacer(np.array([int(s.gpu_type) for s in hosts]), np.array([int(s.count) for s in hosts]),
                        placement, len(items))  # fmt: skip
    typ = np.array([int(np.flatnonzero(vec)[0]) for _, vec in items], dtype=np.int64)
    size = np.array([int(vec.sum()) for _, vec in items], dtype=np.int64)
    parts = {i: tuple((int(j), int(vec[j])) for j in np.flatnonzero(vec).tolist())
             for i, (_, vec) in enumerate(items) if np.count_nonzero(vec) > 1}  # fmt: skip
    pl = placer.place(np.arange(len(items)), typ, size, parts=parts)
    out: dict[str, Placement] = {}
    for i, (job, _vec) in enumerate(items):
        sel = pl.part_lease == i
        hp = [(hosts[h].host_id, int(hosts[h].gpu_type), g)
              for h, g in zip(pl.part_host[sel].tolist(), pl.part_gpus[sel].tolist(), strict=True)]  # fmt: skip
        n_types = len({j for _, j, _ in hp})
        out[job.job_id] = Placement(job.job_id, tuple(hp), cross_type=n_types > 1, cross_host=len(hp) > 1)
    return out
