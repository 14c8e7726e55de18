"""Hunting for counterexamples: a derivative-free optimiser over a claim's *instance space*.

The claims ledger tests a claim on a few seeded random instances; :func:`hunt` instead searches
the instances themselves for the largest value of the claim's own effect measure (a lie's
relative gain, a property's violation amount, ...). Each *evaluation* is one instance together
with its inner search (e.g. the misreport audit of one deviator).

A claim becomes huntable by registering a :class:`HuntSpace` factory with
:func:`register_hunt_space` (``paper``, ``claim id``). A space has

* ``variants()``: the discrete part (e.g. ``(n tenants, k GPU types)`` pairs), each with the
  dimension of its continuous part; the optimiser runs one instance per variant (restarts over
  the discrete part, round-robin);
* ``decode(variant, x)``: the instance at ``x`` in the unit box ``[0, 1]^d``;
* ``sample(rng)``: one instance from the ledger's own seeded random sampler (the baseline);
* ``evaluate(instance, rng)``: the inner search, an :class:`Evaluation` (effect, whether it is a
  violation beyond the claim's tolerance, a JSON-ready witness in the ledger's witness shape);
* ``shrink(instance)``: smaller / rounder candidates (fewer agents and types, rounder numbers);
* ``confirm(instance, rng)``: the figure that is reported for the final instance (e.g. the full
  audit that ``marketsim audit`` runs), default :meth:`evaluate`;
* ``encode(witness)`` (optional): a ledger witness as ``(variant, x)``, a warm start.

The optimiser (scipy's differential evolution by default, CMA-ES from ``cma`` as ``"cma"``,
uniform points as ``"random"``; ``docs/hunt.md`` and ``benchmarks/results/hunt.md`` give the
measured comparison that chose the default) and the baseline (the same number of evaluations
drawn from ``sample``) run interleaved batch by batch. The budget is a number of evaluations, so
the result depends only on the seed; a CPU-time cap may end it early (``stopped_by``). The best
instance is then shrunk while its effect stays within 1% (:data:`SHRINK_KEEP`), and confirmed.
A space that reports the bounds a witness sits on (``edges``) and can widen them (``grow``) is
grown and hunted again until the witness is interior or a stated limit is hit (``edge``).
"""

from __future__ import annotations

import math
import queue
import threading
import time
import zlib
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from marketsim.market.errors import InputError, check_choice, check_int

__all__ = [
    "OPTIMISERS",
    "SHRINK_KEEP",
    "Evaluation",
    "HuntSpace",
    "HuntResult",
    "hunt",
    "register_hunt_space",
    "hunt_space",
    "hunt_spaces",
    "hunt_claims",
]

OPTIMISERS = ("cma", "de", "random")
SHRINK_KEEP = 0.99
"""A shrunk instance replaces the best one when its effect is at least this fraction of it."""
CONFIRM_TOP = 3
"""The best instance (after shrinking) and the runners-up up to this many in all are confirmed; the
largest confirmed effect is reported."""
EFFECT_CAP = 1e6
"""Effects above this (e.g. an infinite relative gain from a truthful utility of 0) are capped for
the optimiser; the reported figure keeps the true value."""


@dataclass
class Evaluation:
    """One instance's figure: ``effect`` (the claim's effect measure; larger = worse for the
    claim), ``violated`` (beyond the claim's tolerance), ``witness`` (JSON-ready, the ledger's
    witness shape; ``None`` when nothing was found) and ``instance`` (what was evaluated).

    :param effect: the claim's effect measure (larger = worse for the claim)
    :param violated: beyond the claim's tolerance
    :param witness: the JSON-ready witness, or ``None``
    :param instance: what was evaluated
    """

    effect: float
    violated: bool = False
    witness: dict[str, Any] | None = None
    instance: Any = None


class HuntSpace(Protocol):
    """A claim's instance space (see the module docstring)."""

    name: str

    def variants(self) -> Sequence[tuple[Hashable, int]]: ...

    def decode(self, variant: Hashable, x: np.ndarray) -> Any:
        """The instance of ``variant`` at the continuous point ``x``.

        :param variant: the discrete part
        :param x: the point in the unit box ``[0, 1]^d``
        :returns: the instance
        """

    def sample(self, rng: np.random.Generator) -> Any:
        """One instance from the ledger's own seeded sampler (the random baseline).

        :param rng: the draws
        :returns: the instance
        """

    def evaluate(self, instance: Any, rng: np.random.Generator) -> Evaluation:
        """The inner search on ``instance``.

        :param instance: an instance
        :param rng: the draws
        :returns: its evaluation
        """

    def shrink(self, instance: Any) -> Iterable[Any]:
        """Smaller or rounder candidates derived from ``instance`` (fewer agents and types, rounder numbers).

        :param instance: an instance
        :returns: the candidates
        """

    def confirm(self, instance: Any, rng: np.random.Generator) -> Evaluation:
        """The figure reported for the final instance (e.g. the full audit ``marketsim audit`` runs).

        :param instance: an instance
        :param rng: the draws
        :returns: its evaluation
        """


@dataclass
class HuntResult:
    """Outcome of :func:`hunt`. ``best_effect`` / ``random_best_effect`` are the confirmed figures
    of the best instance found by the optimiser / by the baseline; ``search_effect`` the
    optimiser's best inner figure before shrinking; ``history`` / ``random_history`` the best
    inner figure after each evaluation (convergence curves); ``evaluations`` counts the
    optimiser's evaluations made (growth rounds included; the baseline made as many as the first
    round), ``budget`` the evaluations asked per round and ``stopped_by`` whether the budget
    (``"evaluations"``) or the CPU-time cap (``"seconds cap"``) ended it; ``seconds`` is the whole
    call's wall time, ``hunt_seconds`` / ``random_seconds`` the CPU seconds of the optimiser's and
    the baseline's evaluations; ``edge`` the growth rounds (spaces with ``edges``/``grow``).

    :param space: the hunt space
    :param optimiser: ``de``, ``cma`` or ``random``
    :param evaluations: the optimiser's evaluations
    :param best_effect: confirmed figure of the optimiser's best instance
    :param random_best_effect: confirmed figure of the baseline's best
    :param search_effect: the optimiser's best inner figure
    :param violated: whether a confirmed instance violates the claim
    :param witness: the optimiser's witness, or ``None``
    :param random_witness: the baseline's witness, or ``None``
    :param seconds: wall time of the call, s
    :param hunt_seconds: CPU time of the optimiser's evaluations, s
    :param random_seconds: CPU time of the baseline's evaluations, s
    :param seed: the seed
    :param shrink_steps: shrinking steps applied
    :param history: best inner figure after each evaluation
    :param random_history: the baseline's curve
    :param best_instance: the optimiser's best instance
    :param random_instance: the baseline's best instance
    :param stopped_by: ``evaluations`` or ``seconds cap``
    :param budget: evaluations asked per round
    :param edge: the growth rounds, or ``None``
    """

    space: str
    optimiser: str
    evaluations: int
    best_effect: float
    random_best_effect: float
    search_effect: float
    violated: bool
    witness: dict[str, Any] | None
    random_witness: dict[str, Any] | None
    seconds: float
    hunt_seconds: float
    random_seconds: float
    seed: int
    shrink_steps: int = 0
    history: list[float] = field(default_factory=list)
    random_history: list[float] = field(default_factory=list)
    best_instance: Any = None
    random_instance: Any = None
    stopped_by: str = "evaluations"
    budget: int = 0
    edge: dict[str, Any] | None = None

    def to_dict(self, history: bool = False) -> dict[str, Any]:
        """JSON-ready summary (with the convergence curves when ``history``).

        :param history: include the convergence curves
        :returns: the summary
        """
        from marketsim.market.audit.search import jsonable

        out = {
            "evaluations": self.evaluations,
            "best_effect": _num(self.best_effect),
            "random_best_effect": _num(self.random_best_effect),
            "search_effect": _num(self.search_effect),
            "violated": self.violated,
            "witness": jsonable(self.witness),
            "random_witness": jsonable(self.random_witness),
            "seconds": self.seconds,
            "hunt_seconds": self.hunt_seconds,
            "random_seconds": self.random_seconds,
            "evaluations_per_cpu_second": self.evaluations / self.hunt_seconds if self.hunt_seconds > 0 else None,
            "optimiser": self.optimiser,
            "space": self.space,
            "seed": self.seed,
            "shrink_steps": self.shrink_steps,
            "budget_evaluations": self.budget,
            "stopped_by": self.stopped_by,
        }
        if self.edge is not None:
            out["edge"] = jsonable(self.edge)
        if history:
            out["history"] = [_num(v) for v in self.history]
            out["random_history"] = [_num(v) for v in self.random_history]
        return out


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def _seed(seed: int, *parts: str) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=tuple(zlib.crc32(p.encode()) for p in parts))


def _capped(e: float) -> float:
    return EFFECT_CAP if not e <= EFFECT_CAP else float(e)  # nan and inf -> cap


# ---------------------------------------------------------------------------------------------
# optimisers: ask/tell per variant
# ---------------------------------------------------------------------------------------------
class _CMA:
    """CMA-ES (``cma``) on ``[0, 1]^d`` with restarts from a random mean when it stops."""

    def __init__(self, dim: int, rng: np.random.Generator, x0: np.ndarray | None) -> None:
        self.dim, self.rng = dim, rng
        self._start(x0 if x0 is not None else np.full(dim, 0.5))

    def _start(self, x0: np.ndarray) -> None:
        import cma

        opts = {
            "bounds": [0.0, 1.0],
            "seed": int(self.rng.integers(1, 2**31 - 1)),
            "verbose": -9,
            "verb_log": 0,
            "verb_disp": 0,
            "CMA_diagonal": False,
        }
        if self.dim == 1:  # cma needs d >= 2: pad with a dummy coordinate
            x0 = np.r_[x0, 0.5]
        self.es = cma.CMAEvolutionStrategy(np.clip(x0, 0.0, 1.0).tolist(), 0.3, opts)

    def ask(self) -> list[np.ndarray]:
        if self.es.stop():
            self._start(self.rng.uniform(0.0, 1.0, self.dim))
        self._asked = self.es.ask()
        return [np.asarray(x[: self.dim], dtype=float) for x in self._asked]

    def tell(self, values: Sequence[float]) -> None:
        self.es.tell(self._asked, [-_capped(v) for v in values])


class _Stop(Exception):
    pass


class _DE:
    """scipy's ``differential_evolution`` turned into ask/tell: it runs in a thread whose
    ``workers`` map hands each population to :meth:`ask` and waits for :meth:`tell` (the thread
    only computes while the caller waits, so results stay deterministic)."""

    def __init__(self, dim: int, rng: np.random.Generator, x0: np.ndarray | None) -> None:
        self.dim = dim
        self._seed = int(rng.integers(1, 2**31 - 1))
        self._x0 = x0
        self._asks: queue.Queue = queue.Queue(maxsize=1)
        self._tells: queue.Queue = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        from scipy.optimize import differential_evolution

        def workers(func: Callable[[np.ndarray], float], pop: Iterable[np.ndarray]) -> list[float]:
            xs = [np.asarray(p, dtype=float) for p in pop]
            self._asks.put(xs)
            vals = self._tells.get()
            if vals is None:
                raise _Stop
            return [-_capped(v) for v in vals]

        seed = self._seed
        try:
            while True:  # restart when it converges before the budget ends
                differential_evolution(
                    lambda x: 0.0,
                    [(0.0, 1.0)] * max(self.dim, 1),
                    popsize=max(2, int(math.ceil(10 / max(self.dim, 1)))),
                    maxiter=10**6,
                    tol=1e-8,
                    polish=False,
                    init="latinhypercube",
                    rng=seed,
                    updating="deferred",
                    workers=workers,
                    x0=self._x0,
                )
                seed += 1
                self._x0 = None
        except _Stop:
            pass
        except BaseException as exc:  # hand scipy's error to the waiting caller instead of hanging it
            self._asks.put(exc)

    def ask(self) -> list[np.ndarray]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        got = self._asks.get()
        if isinstance(got, BaseException):
            raise got
        return [x[: self.dim] for x in got]

    def tell(self, values: Sequence[float]) -> None:
        self._tells.put(list(values))

    def close(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            try:
                self._tells.put_nowait(None)
            except queue.Full:
                pass
            self._thread.join(timeout=5)


class _Random:
    """Uniform points of the unit box (the "optimiser" of the ablation)."""

    def __init__(self, dim: int, rng: np.random.Generator, x0: np.ndarray | None) -> None:
        self.dim, self.rng = dim, rng

    def ask(self) -> list[np.ndarray]:
        return [self.rng.uniform(0.0, 1.0, self.dim) for _ in range(8)]

    def tell(self, values: Sequence[float]) -> None:
        pass


_OPT = {"cma": _CMA, "de": _DE, "random": _Random}


# ---------------------------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------------------------
def hunt(
    space: HuntSpace,
    *,
    evals: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    optimiser: str = "de",
    warm: Sequence[Any] = (),
    baseline: bool = True,
    shrink: bool = True,
    max_shrink: int = 60,
    grow: bool = True,
    max_grow: int = 3,
) -> HuntResult:
    """Search ``space`` for the instance with the largest effect (module docstring).

    Budget: ``evals`` optimiser evaluations (required: the result then depends only on ``seed``);
    ``seconds`` is only a cap on the optimiser's CPU time in this process (``time.process_time``,
    checked after every evaluation): when it ends the hunt first, ``stopped_by`` says so and
    ``evaluations`` how many were made. ``warm`` witnesses (e.g. the ledger's) that the space's
    ``encode`` places in it are evaluated first, as part of the optimiser's budget, and start the
    optimiser of their variant; ``baseline`` runs the ledger's sampler on as many evaluations;
    ``max_shrink`` bounds the shrinking evaluations.

    Edges: when the space says which of its bounds the confirmed witness sits on (``edges``) and can
    grow them (``grow``), the hunt is repeated on the grown box (``evals`` more evaluations,
    warm-started from the witness, no baseline) until the witness is interior, a bound's limit is
    hit, or ``max_grow`` rounds; ``edge`` records every round (box, figure, edges) and the status.

    :param space: what to search (instances, the effect, the shrinker)
    :param evals: the optimiser's evaluation budget
    :param seconds: a CPU-time cap in seconds; ``None``: none
    :param seed: the seed of the optimiser and the baseline
    :param optimiser: ``"de"`` (scipy's differential evolution) or ``"cma"`` (CMA-ES)
    :param warm: witnesses to evaluate first
    :param baseline: also run the ledger's random sampler on as many evaluations
    :param shrink: shrink a violating witness to a smaller instance
    :param max_shrink: the most shrinking evaluations
    :param grow: grow the box when the witness sits on a growable bound
    :param max_grow: the most growing rounds
    :returns: the best instance, its effect and witness, the baseline's, and the budget used
    :raises InputError: no ``evals`` budget, or ``seconds`` not finite and > 0
    """
    check_choice("optimiser", optimiser, OPTIMISERS)
    if evals is None:
        raise InputError("hunt budget", None, "give evals (a number of evaluations); seconds is only a cap on them")
    evals = check_int("evals", evals, minimum=1)
    if seconds is not None and not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise InputError("seconds", seconds, "must be a finite number > 0")
    seed = check_int("seed", seed, minimum=0)
    t_start = time.perf_counter()
    res = _hunt_box(space, evals, seconds, seed, optimiser, warm, baseline, shrink, max_shrink)
    edges_fn = getattr(space, "edges", None)
    if not grow or edges_fn is None or res.best_instance is None or not res.violated:
        res.seconds = time.perf_counter() - t_start
        return res
    rounds = [_edge_round(space, res)]
    cur, best = space, res
    status = "interior"
    for r in range(1, max_grow + 1):
        e = rounds[-1]["edges"]
        growable = {key: v for key, v in e.items() if key in ("speed_ratio", "capacity")}
        if not any(growable.values()):
            break
        nxt = cur.grow(e) if hasattr(cur, "grow") else None
        if nxt is None:
            status = "limit hit: " + ", ".join(k for k, v in growable.items() if v)
            break
        cur = nxt
        more = _hunt_box(cur, evals, seconds, int(_seed(seed, "grow", str(r)).generate_state(1)[0]), optimiser,
                         [best.witness] if best.witness else [], False, shrink, max_shrink)  # fmt: skip
        if more.violated and _capped(more.best_effect) > _capped(best.best_effect):
            best = _merge(best, more)
        else:
            best.evaluations += more.evaluations
            best.hunt_seconds += more.hunt_seconds
        rounds.append(_edge_round(cur, more, best))
    else:
        if any(v for key, v in rounds[-1]["edges"].items() if key in ("speed_ratio", "capacity")):
            status = f"edge after {max_grow} growth rounds"
    final_edges = cur.edges(best.best_instance) if best.best_instance is not None else {}
    if status == "interior" and any(final_edges.get(key) for key in ("speed_ratio", "capacity")):
        status = "edge"
    best.edge = {"rounds": rounds, "status": status, "box": cur.box() if hasattr(cur, "box") else None,
                 "witness_edges": final_edges,
                 "interior": not any(final_edges.get(key) for key in ("speed_ratio", "capacity")),
                 "range_limits": {key: bool(final_edges.get(key)) for key in ("tenants", "types")}}  # fmt: skip
    best.seconds = time.perf_counter() - t_start
    return best


def _edge_round(space: Any, res: HuntResult, best: HuntResult | None = None) -> dict[str, Any]:
    """One growth round's record: the box, that round's confirmed figure and evaluations, and the
    edges of the best witness so far (``best``, default ``res``) in this box."""
    best = best or res
    e = space.edges(best.best_instance) if best.best_instance is not None else {}
    return {"box": space.box() if hasattr(space, "box") else None, "best_effect": _num(res.best_effect),
            "evaluations": res.evaluations, "edges": e}  # fmt: skip


def _merge(old: HuntResult, new: HuntResult) -> HuntResult:
    """``new``'s witness and figure with ``old``'s baseline, histories and totals."""
    new.evaluations += old.evaluations
    new.hunt_seconds += old.hunt_seconds
    new.random_best_effect, new.random_witness, new.random_instance = (old.random_best_effect, old.random_witness,
                                                                       old.random_instance)  # fmt: skip
    new.random_history, new.random_seconds = old.random_history, old.random_seconds
    new.history = old.history + [max(_capped(old.history[-1]) if old.history else 0.0, _capped(v))
                                 for v in new.history]  # fmt: skip
    new.search_effect = max(old.search_effect, new.search_effect, key=_capped)
    new.stopped_by = "seconds cap" if "seconds cap" in (old.stopped_by, new.stopped_by) else new.stopped_by
    new.seed = old.seed
    return new


def _hunt_box(
    space: HuntSpace,
    evals: int,
    seconds: float | None,
    seed: int,
    optimiser: str,
    warm: Sequence[Any],
    baseline: bool,
    shrink: bool,
    max_shrink: int,
) -> HuntResult:
    """One hunt on one box (:func:`hunt` without the growth rounds)."""
    t_start = time.perf_counter()
    variants = list(space.variants())
    if not variants:
        raise InputError("hunt space", space.name, "has no variants")
    root = _seed(seed, "hunt", space.name)
    opt_seq, rnd_seq, conf_seq = root.spawn(3)
    opt_rng = np.random.default_rng(opt_seq)
    rnd_rng = np.random.default_rng(rnd_seq)
    counter = {"hunt": 0, "random": 0, "shrink": 0}

    def eval_rng(kind: str) -> np.random.Generator:
        counter[kind] += 1
        return np.random.default_rng(_seed(seed, "eval", space.name, kind, str(counter[kind])))

    warm_x: dict[Hashable, np.ndarray] = {}
    warm_inst: list[Any] = []
    enc = getattr(space, "encode", None)
    for w in warm if enc is not None else ():
        e = enc(w)
        if e is not None:  # a witness that fits the space; others are ignored
            warm_x.setdefault(e[0], np.asarray(e[1], dtype=float))
            warm_inst.append(space.decode(e[0], np.asarray(e[1], dtype=float)))
    opts = {v: _OPT[optimiser](d, np.random.default_rng(opt_rng.integers(2**63)), warm_x.get(v)) for v, d in variants}
    best: Evaluation | None = None
    rbest: Evaluation | None = None
    history: list[float] = []
    rhistory: list[float] = []
    hunt_t = rand_t = 0.0
    n = 0

    capped = [False]

    def budget_left() -> bool:
        if seconds is not None and hunt_t >= seconds and n < evals:
            capped[0] = True
        return n < evals and (seconds is None or hunt_t < seconds)

    tops: dict[int, list[Evaluation]] = {id(history): [], id(rhistory): []}

    def record(ev: Evaluation, cur: Evaluation | None, hist: list[float]) -> Evaluation:
        if cur is None or _capped(ev.effect) > _capped(cur.effect) or (ev.violated and not cur.violated):
            cur = ev
        hist.append(cur.effect)
        top = tops[id(hist)]  # the best CONFIRM_TOP evaluations (the runners-up are confirmed too)
        top.append(ev)
        top.sort(key=lambda e: -_capped(e.effect))
        del top[CONFIRM_TOP:]
        return cur

    def random_batch(size: int) -> None:
        nonlocal rbest, rand_t
        if not baseline:
            return
        t0 = time.process_time()
        for _ in range(size):
            inst = space.sample(rnd_rng)
            rbest = record(_eval(space, inst, eval_rng("random")), rbest, rhistory)
        rand_t += time.process_time() - t0

    # warm starts first
    t0 = time.process_time()
    for inst in warm_inst:
        if not budget_left():
            break
        best = record(_eval(space, inst, eval_rng("hunt")), best, history)
        n += 1
    hunt_t += time.process_time() - t0
    random_batch(n)
    try:
        i = 0
        while budget_left():
            v, _ = variants[i % len(variants)]
            i += 1
            t0 = time.process_time()
            xs = opts[v].ask()
            vals = []
            for x in xs:
                if not budget_left() and vals:
                    break
                ev = _eval(space, space.decode(v, x), eval_rng("hunt"))
                best = record(ev, best, history)
                vals.append(ev.effect)
                n += 1
                hunt_t = hunt_t + (time.process_time() - t0)
                t0 = time.process_time()
            if len(vals) == len(xs):
                opts[v].tell(vals)
            random_batch(len(vals))
    finally:
        for o in opts.values():
            close = getattr(o, "close", None)
            if close is not None:
                close()
    assert best is not None
    search_effect, search_best = best.effect, best
    steps = 0
    if shrink and best.instance is not None and (best.violated or best.effect > 0):
        best, steps = _shrink(space, best, max_shrink, lambda: eval_rng("shrink"))
    c_hunt, c_rand = conf_seq.spawn(2)
    final = _confirm_best(space, [best] + [e for e in tops[id(history)] if e is not search_best], c_hunt)
    rfinal = _confirm_best(space, tops[id(rhistory)], c_rand) if rbest else None
    return HuntResult(
        space=space.name,
        optimiser=optimiser,
        evaluations=n,
        best_effect=final.effect,
        random_best_effect=rfinal.effect if rfinal is not None else float("nan"),
        search_effect=search_effect,
        violated=final.violated,
        witness=final.witness,
        random_witness=rfinal.witness if rfinal is not None else None,
        seconds=time.perf_counter() - t_start,
        hunt_seconds=hunt_t,
        random_seconds=rand_t,
        seed=seed,
        shrink_steps=steps,
        history=history,
        random_history=rhistory,
        best_instance=final.instance,
        random_instance=None if rfinal is None else rfinal.instance,
        stopped_by="seconds cap" if capped[0] else "evaluations",
        budget=evals,
    )


def _eval(space: HuntSpace, inst: Any, rng: np.random.Generator) -> Evaluation:
    ev = space.evaluate(inst, rng)
    if ev.instance is None:
        ev.instance = inst
    return ev


def _confirm(space: HuntSpace, inst: Any, rng: np.random.Generator) -> Evaluation:
    fn = getattr(space, "confirm", None)
    ev = fn(inst, rng) if fn is not None else space.evaluate(inst, rng)
    if ev.instance is None:
        ev.instance = inst
    return ev


def _confirm_best(space: HuntSpace, cands: Sequence[Evaluation], seq: np.random.SeedSequence) -> Evaluation:
    """Confirm each candidate (the shrunk best first, then the runners-up) and keep the largest
    confirmed effect (the first on ties): the inner figure can exceed the confirming one (e.g. a
    lucky random probe), so the reported figure is the best that confirms."""
    out: Evaluation | None = None
    for ev, s in zip(cands, seq.spawn(len(cands)), strict=True):
        if ev.instance is None:
            continue
        c = _confirm(space, ev.instance, np.random.default_rng(s))
        if out is None or _capped(c.effect) > _capped(out.effect) or (c.violated and not out.violated):
            out = c
    assert out is not None
    return out


def _shrink(
    space: HuntSpace, best: Evaluation, budget: int, rng: Callable[[], np.random.Generator]
) -> tuple[Evaluation, int]:
    """Greedy: take the first candidate of ``space.shrink`` whose effect stays within 1% of the
    best's (and that stays a violation when the best is one); repeat until none or the budget."""
    used = steps = 0
    target = best.effect
    improved = True
    while improved and used < budget:
        improved = False
        for cand in space.shrink(best.instance):
            if used >= budget:
                break
            used += 1
            ev = _eval(space, cand, rng())
            if _capped(ev.effect) >= SHRINK_KEEP * _capped(target) and (ev.violated or not best.violated):
                best, improved, steps = ev, True, steps + 1
                break
    return best, steps


# ---------------------------------------------------------------------------------------------
# claim registry and the ledger integration
# ---------------------------------------------------------------------------------------------
HuntFactory = Callable[[str, Any], HuntSpace]
_SPACES: dict[tuple[str, str], HuntFactory] = {}


def register_hunt_space(paper: str, claim_id: str) -> Callable[[HuntFactory], HuntFactory]:
    """Decorator registering ``factory(size, claim) -> HuntSpace`` for claim ``claim_id`` of
    ``paper`` (``size`` is the ledger's run size, ``claim`` its :class:`~marketsim.market.audit.claims.Claim`
    entry, e.g. for the witness as a warm start).

    :param paper: the paper key
    :param claim_id: the claim
    :returns: the decorator (returns the factory unchanged)
    """

    def deco(fn: HuntFactory) -> HuntFactory:
        _SPACES[(paper, claim_id)] = fn
        return fn

    return deco


def hunt_spaces() -> list[tuple[str, str]]:
    """``(paper, claim id)`` of every claim with a registered hunt space."""
    from marketsim.market import plugins

    plugins.import_modules(plugins.modules("claims"))  # every plugin's claim modules register their spaces
    return sorted(_SPACES)


def hunt_space(paper: str, claim_id: str, size: str = "small", claim: Any = None) -> HuntSpace | None:
    """The hunt space of a claim, or ``None`` when it has none.

    :param paper: the paper key
    :param claim_id: the claim
    :param size: the run size
    :param claim: the ledger entry (e.g. its witness as a warm start)
    :returns: the space, or ``None``
    """
    hunt_spaces()
    fn = _SPACES.get((paper, claim_id))
    return None if fn is None else fn(size, claim)


def hunt_claims(
    results: Sequence[Any],
    *,
    evals: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    optimiser: str = "de",
) -> list[Any]:
    """Hunt every ledger entry of ``results`` that has a hunt space (each gets ``evals``
    evaluations; ``seconds`` caps each hunt's optimiser CPU time) and attach ``hunt``
    (:meth:`HuntResult.to_dict`, or ``{"available": False, "reason": ...}``) to it.

    Every violating witness the hunt reports is re-checked by the ledger's checker
    (:func:`~marketsim.market.audit.claims.recheck_witness`: ``rechecked`` / ``random_rechecked``) and by an
    independent oracle (:func:`marketsim.market.audit.oracles.confirm_witness`: ``oracle`` /
    ``random_oracle`` say which oracle and what it found). A universal claim that ``holds``
    becomes ``violated`` with ``found_by = "search"`` and the hunt's witness (the optimiser's, else
    the random baseline's: ``hunt["flipped_by"]`` says which) only when both re-checks pass (an
    oracle that does not apply, ``confirmed = None``, is recorded as such); a witness the oracle
    rejects is listed in ``hunt["artefacts"]`` ("artefact, not confirmed by <oracle>") and flips
    nothing. Returns ``results``.

    :param results: the ledger's entries
    :param evals: evaluations per hunt
    :param seconds: optimiser CPU seconds per hunt (a cap)
    :param seed: the seed
    :param optimiser: ``de``, ``cma`` or ``random``
    :returns: ``results``
    :raises InputError: ``seconds`` without ``evals``
    """
    from marketsim.market.audit.claims import recheck_witness
    from marketsim.market.audit.oracles import confirm_witness

    if evals is None:
        raise InputError("--hunt-evals", None, "give the hunt's budget in evaluations; seconds only cap it")
    for c in results:
        space = hunt_space(c.paper, c.claim_id, c.size, c)
        if space is None:
            c.hunt = {"available": False, "reason": "no hunt space registered for this claim"}
            continue
        warm = [c.witness] if c.witness is not None else []
        res = hunt(space, evals=evals, seconds=seconds, seed=int(_seed(seed, c.paper, c.claim_id).generate_state(1)[0]),
                   optimiser=optimiser, warm=warm)  # fmt: skip
        d = res.to_dict()
        d["ledger_effect"] = _num(float(c.effect_size))
        if hasattr(space, "skipped"):  # evaluations the space skipped (e.g. an offline MILP at its time limit)
            d["skipped_evaluations"] = int(space.skipped)
        d["rechecked"] = None
        if res.violated and res.witness is not None:
            d["rechecked"] = bool(recheck_witness(res.witness))
        d["random_rechecked"] = None
        if res.random_witness is not None:
            d["random_rechecked"] = bool(recheck_witness(res.random_witness))
        for key, wit, ok in (("oracle", res.witness, d["rechecked"]),
                             ("random_oracle", res.random_witness, d["random_rechecked"])):  # fmt: skip
            d[key] = confirm_witness(wit).to_dict() if wit is not None and ok else None
        d["artefacts"] = [{"arm": arm, "label": d[key]["label"]} for arm, key in
                          (("optimiser", "oracle"), ("random", "random_oracle"))
                          if d[key] is not None and d[key]["confirmed"] is False]  # fmt: skip
        c.hunt = d
        if c.kind == "universal" and c.verdict == "holds":
            # the optimiser's witness first; else the baseline's (the hunt's own extra sample)
            arms = (("optimiser", res.witness, d["rechecked"], res.best_effect, d["oracle"]),
                    ("random", res.random_witness, d["random_rechecked"], res.random_best_effect,
                     d["random_oracle"]))  # fmt: skip
            for arm, wit, ok, eff, orc in arms:
                if wit is not None and ok and orc is not None and orc["confirmed"] is not False:
                    c.verdict, c.found_by = "violated", "search"
                    c.violations = max(c.violations, 1)
                    c.witness, c.effect_size = wit, float(eff)
                    c.oracle = orc
                    d["flipped_by"] = arm
                    break
    return list(results)
