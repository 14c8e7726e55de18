"""BUILD_MENU (DP over slots + deadline enumeration, paper Alg. 2) and CHOOSE (spec §3.4-3.5).

``build_menu`` never reads the bid's utility. :func:`build_menu` is the vectorised version
(slot rows c[t][0..D] from one :func:`deploy_batch` call per distinct slot, (min,+) DP with numpy);
:func:`build_menu_reference` is the same algorithm with Python loops (benchmark reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from marketsim.market.eris.deploy import (
    DeployBatch,
    JobArrays,
    SlotPrep,
    deploy_batch,
    deploy_reference,
    plan_from_batch,
    prepare_slot,
)
from marketsim.market.eris.network import Links
from marketsim.market.eris.prices import ErisState
from marketsim.market.eris.sources import cumulative_sources, slot_sources, source_sequence
from marketsim.market.eris.types import ErisConfig, ErisSchedule, MenuEntry, SlotPlan
from marketsim.market.utility import Utility

__all__ = ["MenuStats", "build_menu", "build_menu_reference", "dp_table", "backtrack", "choose"]


@dataclass
class MenuStats:
    """Work counters of one BUILD_MENU call (C6): DPC_T evaluations and repair calls."""

    dpc_calls: int = 0
    repair_calls: int = 0
    distinct_slots: int = 0


def dp_table(c: np.ndarray, stop_at_zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(min,+) DP over slots: ``c`` (S, D+1) slot rows -> ``F`` (S+1, D+1) with ``F[0] = (0, inf, ...)``
    and ``arg`` (S, D+1) the smallest minimising d' (D17). Row s+1 is slot a+s.

    ``stop_at_zero``: costs are >= 0, so once ``F[s+1, D] == 0`` every later slot has ``F = 0`` and
    ``arg = 0`` in column D (d' = 0 is the smallest minimiser); only column D is filled from there on."""
    S, D1 = c.shape
    F = np.full((S + 1, D1), np.inf)
    F[0, 0] = 0.0
    arg = np.zeros((S, D1), dtype=np.int64)
    d = np.arange(D1)
    diff = d[:, None] - d[None, :]  # (d, d')
    valid = diff >= 0
    idx = np.where(valid, diff, 0)
    for s in range(S):
        prev = F[s]
        row = c[s]
        fin = np.flatnonzero(np.isfinite(row))
        top = int(fin[-1])
        head = row[: top + 1]
        if not head.any():
            # zero-cost slot (e.g. untouched): F[d] = min of prev over the window [d - top, d]; the smallest
            # minimising d' is the first minimum of the reversed window (bit-identical to the general path)
            pad = np.concatenate((np.full(top, np.inf), prev))
            win = np.lib.stride_tricks.sliding_window_view(pad, top + 1)[:, ::-1]
            a = np.argmin(win, axis=1)
            arg[s] = a
            F[s + 1] = win[d, a]
            if stop_at_zero and F[s + 1, D1 - 1] == 0.0:
                F[s + 2 :, D1 - 1] = 0.0
                break
            continue
        sub = valid[:, : top + 1]
        tot = np.where(sub, head[None, :] + prev[idx[:, : top + 1]], np.inf)
        a = np.argmin(tot, axis=1)
        arg[s] = a
        F[s + 1] = tot[d, a]
        if stop_at_zero and F[s + 1, D1 - 1] == 0.0:
            F[s + 2 :, D1 - 1] = 0.0
            break
    return F, arg


def backtrack(arg: np.ndarray, upto: int, D: int) -> list[int]:
    """d_s for s = 0..upto-1 (slot offsets) from the arg table, ending with D chunks."""
    rem = D
    ds = [0] * upto
    for s in range(upto - 1, -1, -1):
        ds[s] = int(arg[s, rem])
        rem -= ds[s]
    return ds


def build_menu(
    job: JobArrays, arrival: int, state: ErisState, cfg: ErisConfig, stats: MenuStats | None = None
) -> list[MenuEntry]:
    """BUILD_MENU at the state's current (frozen) prices; vectorised."""
    stats = stats if stats is not None else MenuStats()
    links: Links = state.links
    R = job.data.shape[0]
    D = job.D
    a, T = arrival, cfg.horizon
    seq = source_sequence(job.data)
    cum = cumulative_sources(seq, R)
    S = T - a + 1
    c = np.full((S, D + 1), np.inf)
    c[:, 0] = 0.0
    preps: dict[int, SlotPrep] = {}
    batches: dict[int, DeployBatch | None] = {}
    dmax = np.zeros(S, dtype=np.int64)
    slots = np.arange(a, T + 1)
    keys = np.where(state.version[a : T + 1] == 0, -1, slots)  # untouched slots share one signature
    uniq, first = np.unique(keys, return_index=True)
    for u, f0 in zip(uniq.tolist(), first.tolist(), strict=True):
        sp = prepare_slot(job, state.view(a + f0), links)
        top = min(D, sp.dmax)
        b = deploy_batch(job, sp, links, cum[1 : top + 1], cfg.ps_rule, cfg.overflow_moves) if top > 0 else None
        stats.dpc_calls += top
        stats.distinct_slots += 1
        rows = np.flatnonzero(keys == u)
        dmax[rows] = sp.dmax
        if b is not None:
            c[rows, 1 : top + 1] = b.cost
        for t in slots[rows] if u == -1 else (u,):
            preps[int(t)] = sp
            batches[int(t)] = b
    if int(np.minimum(dmax, D).sum()) < D:
        return []
    F, arg = dp_table(c, stop_at_zero=True)
    sigs: list[tuple[int, tuple[int, ...]]] = []
    prev_sig: tuple[int, ...] | None = None
    for s in range(S):
        if not math.isfinite(F[s + 1, D]):
            prev_sig = None
            continue
        if prev_sig is not None and arg[s, D] == 0 and F[s + 1, D] == F[s, D]:
            sig = prev_sig  # no work in slot a+s: same schedule as the previous deadline
        else:
            ds = backtrack(arg, s + 1, D)
            sig = tuple(ds[: max(i for i, v in enumerate(ds) if v > 0) + 1])
        sigs.append((a + s, sig))
        prev_sig = sig
    plans_at: dict[tuple[int, int, int], SlotPlan | None] = {}
    if cfg.repair_sources:  # exact per-site sources, one batched DPC_T call per slot (D5)
        need: dict[int, list[tuple[int, int]]] = {}
        for _, sig in dict.fromkeys(sigs):
            done = 0
            for i, dt in enumerate(sig):
                if dt:
                    need.setdefault(a + i, []).append((done, dt))
                    done += dt
        for t, rows in need.items():
            todo, Ms = [], []
            b = batches[t]
            for done, dt in dict.fromkeys(rows):
                Mt = slot_sources(cum, done, dt)
                if b is not None and dt <= len(b.cost) and np.array_equal(Mt, cum[dt]):
                    # same sources as the DP row d = dt (rows are computed independently): reuse it
                    plans_at[(t, done, dt)] = (
                        plan_from_batch(b, dt - 1, t, job) if math.isfinite(b.cost[dt - 1]) else None
                    )
                else:
                    todo.append((done, dt))
                    Ms.append(Mt)
            if not todo:
                continue
            rb = deploy_batch(job, preps[t], links, np.stack(Ms), cfg.ps_rule, cfg.overflow_moves)
            stats.repair_calls += len(todo)
            for i, (done, dt) in enumerate(todo):
                plans_at[(t, done, dt)] = plan_from_batch(rb, i, t, job) if math.isfinite(rb.cost[i]) else None
    menu: list[MenuEntry] = []
    memo: dict[tuple[int, ...], ErisSchedule | None] = {}
    for deadline, sig in sigs:
        if sig not in memo:
            plans: list[SlotPlan] = []
            ok = True
            done = 0
            for i, dt in enumerate(sig):
                if dt == 0:
                    continue
                t = a + i
                if cfg.repair_sources:
                    plan = plans_at[(t, done, dt)]
                else:
                    b = batches[t]
                    plan = plan_from_batch(b, dt - 1, t, job) if math.isfinite(b.cost[dt - 1]) else None
                done += dt
                if plan is None:
                    ok = False
                    break
                plans.append(plan)
            memo[sig] = _schedule(plans) if ok else None
        sched = memo[sig]
        if sched is not None:
            menu.append(MenuEntry(deadline, sched))
    return menu


def _schedule(plans: list[SlotPlan]) -> ErisSchedule:
    cost = 0.0
    for p in plans:
        cost += p.cost
    return ErisSchedule(tuple(plans), plans[-1].t, cost)


def build_menu_reference(job: JobArrays, arrival: int, state: ErisState, cfg: ErisConfig) -> list[MenuEntry]:
    """The same BUILD_MENU with Python loops and the literal DPC_T (no signature cache, no pruning)."""
    links = state.links
    R = job.data.shape[0]
    D = job.D
    a, T = arrival, cfg.horizon
    seq = [int(x) for x in source_sequence(job.data)]

    def A(nn: int) -> list[int]:
        v = [0] * R
        for x in seq[:nn]:
            v[x] += 1
        return v

    views = {t: state.view(t) for t in range(a, T + 1)}
    c: dict[int, list[float]] = {}
    plans0: dict[tuple[int, int], SlotPlan | None] = {}
    total = 0
    for t in range(a, T + 1):
        v = views[t]
        dmax = 0
        for r in range(R):
            cap = None
            for k in range(len(job.w)):
                if job.w[k] > 0:
                    x = math.floor(float(v.res_cap[r, k]) / float(job.w[k]) + 1e-9)
                    cap = x if cap is None else min(cap, x)
            dmax += (job.P * cap) // job.E
        row = [0.0] + [math.inf] * D
        for d in range(1, D + 1):
            if d <= dmax:
                row[d], plans0[(t, d)] = deploy_reference(job, v, links, A(d), cfg.ps_rule, cfg.overflow_moves)
        c[t] = row
        total += min(dmax, D)
    if total < D:
        return []
    F = {a - 1: [0.0] + [math.inf] * D}
    arg: dict[int, list[int]] = {}
    for t in range(a, T + 1):
        F[t] = [math.inf] * (D + 1)
        arg[t] = [0] * (D + 1)
        for d in range(D + 1):
            best = math.inf
            bi = 0
            for dp in range(d + 1):
                val = c[t][dp] + F[t - 1][d - dp]
                if val < best:
                    best, bi = val, dp
            F[t][d] = best
            arg[t][d] = bi
    menu = []
    for th in range(a, T + 1):
        if not math.isfinite(F[th][D]):
            continue
        rem = D
        ds = {}
        for t in range(th, a - 1, -1):
            ds[t] = arg[t][rem]
            rem -= ds[t]
        plans = []
        done = 0
        ok = True
        for t in range(a, th + 1):
            if ds[t] == 0:
                continue
            if cfg.repair_sources:
                Mt = [x - y for x, y in zip(A(done + ds[t]), A(done), strict=True)]
                _, plan = deploy_reference(job, views[t], links, Mt, cfg.ps_rule, cfg.overflow_moves)
            else:
                plan = plans0[(t, ds[t])]
            done += ds[t]
            if plan is None:
                ok = False
                break
            plans.append(plan)
        if ok:
            menu.append(MenuEntry(th, _schedule(plans)))
    return menu


def choose(menu: list[MenuEntry], utility: Utility, arrival: int, cfg: ErisConfig) -> tuple[float, MenuEntry | None]:
    """CHOOSE: the entry maximising ``f(completion - a + offset) - cost`` if it exceeds 0 (D17)."""
    mu = 0.0
    best = None
    if not menu:
        return mu, best
    durs = np.array([e.schedule.completion - arrival + cfg.duration_offset for e in menu], dtype=float)
    vals = np.asarray(utility(durs), dtype=float)  # 1-d evaluation: bit-identical to scalar calls
    for entry, v in zip(menu, vals.tolist(), strict=True):
        val = v - entry.schedule.cost
        if val > mu + cfg.accept_tol * max(1.0, abs(mu)):
            mu, best = val, entry
    return mu, best
