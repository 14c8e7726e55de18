"""``marketsim learn``: strategic populations from a ``kind = "learning"`` TOML.

A learning scenario names one family and a list of mechanisms; each mechanism's population learns
from truthful play with one rule, then the end state is certified (epsilon of the final profile)
and compared with truthful play (the price-of-lying table)::

    kind = "learning"
    name = "learn_oef"
    description = "..."
    [learning]
    family = "fair-share"          # "fair-share" | "auction" | "bayesian"
    rule = "best-response"          # fair-share/auction: "best-response" | "hedge" | "exp3"; fair-share:
                                    # "continuous"; auction: "episodes" (Hedge bidders in Mesa AuctionModel
                                    # runs); bayesian: "es"
    mechanisms = ["oef-noncoop", "oef-coop"]
    seed = 0
    rounds = 300                    # hedge/exp3 rounds, best-response passes, episodes or ES rounds
    grid = {points = 13, low = 0.25, high = 4.0}   # report-factor grid (contains 1)
    learners = [0, 1]               # optional: who adapts (default: everyone)
    options = {eta = 2.0}           # hedge: eta, optimistic = true, tol = 0.01 (stop at a 1%-CCE of the grid);
                                    # exp3: eta, gamma; episodes: eta; every fair-share/auction rule: tol, the
                                    # certificate tolerance (default 1%; continuous: 1e-3, also its move
                                    # threshold); continuous: report_tol (cycle/chase detection, default 1e-6)
    [learning.instance]             # fair-share: W, m (weights, caps optional)
    W = [[1, 2], [1, 5]]            # auction: paper, params (+ dimension, default "value_scale")
    m = [1, 1]                      # bayesian: n, values, classes, options, seeds (frontends/learn_bayesian.py)

Outputs in ``--out``: ``trajectories.parquet`` (every step, every mechanism), ``price_of_lying.csv``,
``convergence.png`` and ``report.md``. Every fair-share/auction row carries ``eps_grid`` (a wide
grid) beside ``eps_audit`` (the audit's own search at the reported profile), the deviation found
and a ``certificate`` verdict (docs/learning_certificates.md).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marketsim.analysis.engine.run_status import guard, write_atomic
from marketsim.market.errors import InputError, check_int, check_name, slug
from marketsim.market.learning.dynamics import (
    AuctionGame,
    DynamicsResult,
    FairShareGame,
    Game,
    best_response_dynamics,
    certify,
    default_grid,
    exp3,
    hedge,
    price_of_lying,
)
from marketsim.scenarios.catalog import embedded

__all__ = ["LearningScenario", "learning_names", "load_learning", "run_learning", "write_learning"]

FAMILIES = ("fair-share", "auction", "bayesian")
RULES = {"fair-share": ("best-response", "hedge", "exp3", "continuous"),
         "auction": ("best-response", "hedge", "exp3", "episodes"), "bayesian": ("es",)}  # fmt: skip


@dataclass(frozen=True)
class LearningScenario:
    """A parsed ``kind = "learning"`` TOML (module docstring)."""

    name: str
    description: str
    family: str
    rule: str
    mechanisms: tuple[str, ...]
    seed: int
    rounds: int
    grid: np.ndarray
    learners: tuple[int, ...] | None
    instance: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)


def learning_names() -> list[str]:
    """Embedded learning scenarios (``scenarios/*.toml`` with ``kind = "learning"``)."""
    out = []
    for p in embedded().values():
        if p.name.endswith(".toml"):
            try:
                if tomllib.loads(p.read_text(encoding="utf-8")).get("kind") == "learning":
                    out.append(p.name[:-5])
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
    return sorted(out)


def _safe_name(name: Any) -> str:
    return check_name("name", name)


#: Most points of a report-factor grid: each learner's strategies are the grid's points to the power
#: of its reported dimensions, so a huge grid fails at once (exit 2) instead of in a MemoryError.
MAX_GRID_POINTS = 10_000
MAX_STRATEGIES = 1_000_000
#: most learning rounds (``learning.rounds``, ``learn --rounds``): rounds / passes / episodes. Measured
#: on learn_oef_hedge (loaded machine): about 1.4 ms of CPU and 5 KB of memory per round, so 100,000
#: rounds take minutes and about 0.5 GB; 10^12 grew by 11 MB/s until killed.
MAX_LEARN_ROUNDS = 100_000


def check_rounds(field: str, rounds: int) -> int:
    """``rounds`` within :data:`MAX_LEARN_ROUNDS` (``field`` names the key or flag in the error)."""
    if rounds > MAX_LEARN_ROUNDS:
        raise InputError(field, rounds, f"must be at most {MAX_LEARN_ROUNDS:,} (size limit)")
    return rounds


def parse_learning(doc: Mapping[str, Any], default_name: str) -> LearningScenario:
    """Validate a learning TOML document; errors name the offending key."""
    if doc.get("kind") != "learning":
        raise InputError("kind", doc.get("kind"), "must be 'learning' for `marketsim learn`")
    sec = doc.get("learning")
    if not isinstance(sec, Mapping):
        raise InputError("learning", sec, "must be a [learning] table")
    known = {"family", "rule", "mechanisms", "seed", "rounds", "grid", "learners", "instance", "options"}
    extra = sorted(set(sec) - known)
    if extra:
        raise InputError("learning", extra, f"has unknown keys; known: {sorted(known)}")
    family = sec.get("family", "fair-share")
    if family not in FAMILIES:
        raise InputError("learning.family", family, f"must be one of {list(FAMILIES)}")
    rule = sec.get("rule", RULES[family][0])
    if rule not in RULES[family]:
        raise InputError("learning.rule", rule, f"must be one of {list(RULES[family])} for family {family!r}")
    mechs = sec.get("mechanisms")
    if not isinstance(mechs, list) or not mechs or not all(isinstance(m, str) and m for m in mechs):
        raise InputError("learning.mechanisms", mechs, "must be a non-empty list of mechanism names")
    seed = check_int("learning.seed", sec.get("seed", 0), minimum=0)
    rounds = check_int("learning.rounds", sec.get("rounds", 300 if rule != "best-response" else 50), minimum=1)
    check_rounds("learning.rounds", rounds)
    g = sec.get("grid", {})
    if not isinstance(g, Mapping):
        raise InputError("learning.grid", g, "must be a table {points, low, high}")
    points = g.get("points", 13)
    if isinstance(points, int) and not isinstance(points, bool) and points > MAX_GRID_POINTS:
        raise InputError("learning.grid.points", points, f"must be at most {MAX_GRID_POINTS:,} (size limit)")
    try:
        grid = default_grid(points, g.get("low", 0.25), g.get("high", 4.0))
    except InputError as exc:
        raise InputError(f"learning.grid.{exc.field}", exc.value, exc.reason) from None
    learners = sec.get("learners")
    if learners is not None:
        if not isinstance(learners, list) or not learners:
            raise InputError("learning.learners", learners, "must be a non-empty list of agent indices")
        learners = tuple(check_int("learning.learners", i, minimum=0) for i in learners)
    inst = sec.get("instance", {})
    if not isinstance(inst, Mapping):
        raise InputError("learning.instance", inst, "must be a table")
    W = inst.get("W")
    if family == "fair-share" and isinstance(W, list) and W and isinstance(W[0], list):
        dims = max(len(W[0]) - 1, 1)  # one report factor per GPU type above the slowest
        if len(grid) ** dims > MAX_STRATEGIES:
            raise InputError("learning.grid.points", points, f"gives {len(grid)}^{dims} = {len(grid) ** dims:,} "
                             f"report vectors per learner; at most {MAX_STRATEGIES:,} (size limit)")  # fmt: skip
    opts = sec.get("options", {})
    if not isinstance(opts, Mapping):
        raise InputError("learning.options", opts, "must be a table")
    if rule == "hedge" and not isinstance(opts.get("optimistic", False), bool):
        raise InputError("learning.options.optimistic", opts["optimistic"], "must be true or false")
    if family != "bayesian":
        for key, strict in (("tol", True), ("report_tol", False)):
            v = opts.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < math.inf or strict and v == 0:
                need = "> 0 (relative gain)" if strict else ">= 0 (max |log factor| difference)"
                raise InputError(f"learning.options.{key}", v, f"must be a number {need}")
    return LearningScenario(
        _safe_name(doc.get("name", slug(default_name))), str(doc.get("description", "")), family, rule, tuple(mechs),
        seed, rounds, grid, learners, dict(inst), dict(opts),
    )  # fmt: skip


def load_learning(name_or_path: str | Path) -> LearningScenario:
    """An embedded learning scenario by name or a TOML file by path."""
    text = str(name_or_path)
    if "/" not in text and not text.endswith(".toml"):
        if text not in learning_names():
            raise InputError("scenario", text, f"is not an embedded learning scenario {learning_names()}")
        raw = embedded()[text].read_text(encoding="utf-8")
        return parse_learning(tomllib.loads(raw), text)
    path = Path(text).expanduser()
    if path.is_dir():
        raise InputError("scenario", text, "is a directory, not a TOML file")
    if not path.is_file():
        raise InputError("scenario", text, "does not exist")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"scenario file {path}", "", f"is not valid TOML: {exc}") from None
    return parse_learning(doc, path.stem)


def _game(sc: LearningScenario, mechanism: str) -> Game:
    inst = sc.instance
    if sc.family == "fair-share":
        for key in ("W", "m"):
            if key not in inst:
                raise InputError(f"learning.instance.{key}", None, "is required for the fair-share family")
        return FairShareGame(mechanism=mechanism, W=inst["W"], m=inst["m"], weights=inst.get("weights"),
                             caps=inst.get("caps"), grid=sc.grid, learners=sc.learners)  # fmt: skip
    from marketsim.analysis.engine.studies import build_market

    paper = inst.get("paper")
    if not isinstance(paper, str):
        raise InputError("learning.instance.paper", paper, "must name the auction paper (oasis, pdors, eris, astraea)")
    params = inst.get("params", {})
    market = build_market(paper, params, np.random.default_rng(sc.seed))
    return AuctionGame(market=market, mechanism=mechanism, dimension=inst.get("dimension", "value_scale"),
                       grid=sc.grid, learners=sc.learners, seed=sc.seed)  # fmt: skip


def _dynamics(sc: LearningScenario, game: Game, progress: Callable[[int, int], None] | None) -> DynamicsResult:
    if sc.rule == "best-response":
        return best_response_dynamics(game, max_passes=sc.rounds)
    if sc.rule == "hedge":
        eta = float(sc.options.get("eta", math.sqrt(8 * math.log(game.S) / sc.rounds)))
        tol = sc.options.get("tol")
        return hedge(game, rounds=sc.rounds, eta=eta, seed=sc.seed, progress=progress,
                     optimistic=bool(sc.options.get("optimistic", False)),
                     tol=None if tol is None else float(tol))  # fmt: skip
    return exp3(game, rounds=sc.rounds, eta=float(sc.options.get("eta", 0.05)),
                gamma=float(sc.options.get("gamma", 0.1)), seed=sc.seed, progress=progress)  # fmt: skip


def _bayesian_one(
    sc: LearningScenario, mech: str, n: int, progress: Callable[[int, int], None] | None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    from marketsim.analysis.frontends.learn_bayesian import bayesian_row

    return bayesian_row(sc, mech, n, progress)


def _tol(sc: LearningScenario) -> float:
    """Certificate tolerance (relative gain): option ``tol``; default 1e-3 for ``continuous`` (its move
    threshold), else 1%."""
    return float(sc.options.get("tol", 1e-3 if sc.rule == "continuous" else 0.01))


def _verdict(eps: float, tol: float) -> str:
    return "certified" if eps <= tol else "not certified"


def _certificate_cols(sc: LearningScenario, game: Game, profile: Any, grid: dict[str, Any] | None) -> dict[str, Any]:
    """Epsilon of the reported pure ``profile``: the grid certificate's (``eps_grid``, if any) beside
    the audit's search at that profile (``eps_audit``, every report the validator accepts);
    ``eps_rel`` / ``eps_abs`` the larger (any deviation found is real), ``certificate`` whether that
    is within the tolerance, ``deviator`` / ``deviation`` who gains how, from which report to which."""
    from marketsim.market.learning.certificates import audit_profile

    tol = _tol(sc)
    cert = audit_profile(game, profile, tol=tol, seed=sc.seed)
    g_rel = math.nan if grid is None else float(grid["eps_rel"])
    out: dict[str, Any] = {"eps_grid": g_rel, "eps_audit": cert.eps_rel,
                           "eps_rel": max(cert.eps_rel, 0.0 if grid is None else g_rel),
                           "eps_abs": max(cert.eps_abs, 0.0 if grid is None else float(grid["eps_abs"])),
                           "deviator": cert.agent, "deviation": cert.describe()}  # fmt: skip
    if grid is not None and g_rel > cert.eps_rel:  # the audit missed a grid deviation: report that one
        out["deviator"] = grid["agent"]
        out["deviation"] = f"agent {grid['agent']}: grid report {grid['factors']} gains {g_rel:.1%}"
    out["certificate"] = _verdict(out["eps_rel"], tol)
    out["tol"] = tol
    return out


def _cce_cols(sc: LearningScenario, game: Game, res: DynamicsResult) -> dict[str, Any]:
    """No-regret play as a coarse correlated equilibrium: ``max_regret_rel`` (grid) beside
    ``cce_eps_audit`` (the audit's search for the best fixed report against the empirical play;
    measured only when the grid epsilon is within the tolerance, since it can only be larger)."""
    from marketsim.market.learning.certificates import audit_play

    tol = _tol(sc)
    grid = max(res.regret_rel.values())
    if grid > tol:
        return {"cce_eps_audit": math.nan, "cce_deviation": "", "cce_certificate": "not certified"}
    cert = audit_play(game, res.distribution, tol=tol, seed=sc.seed)
    return {"cce_eps_audit": cert.eps_rel, "cce_deviation": cert.describe(),
            "cce_certificate": _verdict(max(grid, cert.eps_rel), tol)}  # fmt: skip


def _moves_text(moves: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"pass {mv['pass']} agent {mv['agent']}: {[round(x, 6) for x in mv['from']]} -> "
        f"{[round(x, 6) for x in mv['to']]} (max |log step| {mv['step']:.2g}) +{mv['gain']:.1%}"
        for mv in moves
    )


def _continuous_one(
    sc: LearningScenario, mech: str, progress: Callable[[int, int], None] | None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rule ``continuous``: the audit's best lie against the others' current reports, no grid
    (:func:`marketsim.market.learning.continuous.continuous_best_response`; ``rounds`` = passes, option
    ``tol``). The price-of-lying metrics come from a game whose grid contains the final factors."""
    from marketsim.market.learning.continuous import continuous_best_response

    inst = sc.instance
    tol = _tol(sc)
    res = continuous_best_response(mech, inst["W"], inst["m"], weights=inst.get("weights"), caps=inst.get("caps"),
                                   learners=sc.learners, passes=sc.rounds, tol=tol, seed=sc.seed,
                                   report_tol=float(sc.options.get("report_tol", 1e-6)),
                                   progress=progress)  # fmt: skip
    vals = np.unique(np.concatenate([sc.grid, res.factors.ravel()]))
    game = FairShareGame(mechanism=mech, W=inst["W"], m=inst["m"], weights=inst.get("weights"),
                         caps=inst.get("caps"), grid=vals, learners=sc.learners)  # fmt: skip
    profile = [int(np.flatnonzero(np.all(game.strategies == f, axis=1))[0]) for f in res.factors]
    cert = res.certificate
    assert cert is not None
    row: dict[str, Any] = {"mechanism": mech, "rule": "continuous", "status": res.status, "period": res.period,
                           "eps_grid": math.nan, "eps_audit": res.eps_rel, "eps_rel": res.eps_rel,
                           "eps_abs": res.eps_abs, "deviator": cert.agent, "deviation": cert.describe(),
                           "certificate": cert.verdict, "tol": tol, "eps_last_pass": res.eps_last_pass,
                           "moves": _moves_text(res.moves), "passes": res.passes,
                           "final_factors": res.factors.round(6).tolist()}  # fmt: skip
    row.update(price_of_lying(game, profile))
    traj = res.trajectory.assign(step=np.arange(1, len(res.trajectory) + 1), mechanism=mech)
    traj["utility"] = traj["utility_after"]
    return traj, row


def _episodes_one(
    sc: LearningScenario, mech: str, progress: Callable[[int, int], None] | None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rule ``episodes`` (auctions): Hedge bidders inside Mesa ``AuctionModel`` runs, one run per
    episode (:func:`marketsim.agents.learning.learn_in_episodes`; ``rounds`` = episodes, option ``eta``).
    The end state is each learner's modal factor, certified and scored like the other rules."""
    from marketsim.agents.learning import learn_in_episodes

    game = _game(sc, mech)
    assert isinstance(game, AuctionGame)
    ids = [int(game.bids[i].job_id) for i in game.learner_ids]
    frame, learner = learn_in_episodes(game.market, mech, episodes=sc.rounds, grid=game.grid_values,
                                       dimension=game.dimension, eta=float(sc.options.get("eta", 1.0)),
                                       learners=ids, seed=sc.seed, progress=progress)  # fmt: skip
    final = frame[frame["episode"] == frame["episode"].max()].set_index("job_id")["mode_factor"]
    profile = game.truthful_profile()
    values = game.strategies[:, 0]
    for i, jid in zip(game.learner_ids, ids, strict=True):
        profile[i] = int(np.flatnonzero(np.isclose(values, final[jid]))[0])
    cert = certify(game, profile, points=21)
    row: dict[str, Any] = {"mechanism": mech, "rule": "episodes", "status": "finished", "period": 0,
                           **_certificate_cols(sc, game, profile, cert),
                           "final_factors": game.strategies[profile].round(4).tolist()}  # fmt: skip
    row.update(price_of_lying(game, profile))
    index = {jid: i for i, jid in zip(game.learner_ids, ids, strict=True)}
    traj = pd.DataFrame({"step": frame["episode"] + 1, "agent": frame["job_id"].map(index), "f1": frame["factor"],
                         "utility": frame["surplus"], "best_factor": frame["best_factor"],
                         "mode_factor": frame["mode_factor"], "mechanism": mech})  # fmt: skip
    return traj, row


def _dynamics_one(
    sc: LearningScenario, mech: str, progress: Callable[[int, int], None] | None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    if sc.rule == "continuous":
        return _continuous_one(sc, mech, progress)
    if sc.rule == "episodes":
        return _episodes_one(sc, mech, progress)
    game = _game(sc, mech)
    res = _dynamics(sc, game, progress)
    cert = certify(game, res.profile, points=21 if isinstance(game, AuctionGame) else 41)
    pol = price_of_lying(game, res.profile)
    row: dict[str, Any] = {"mechanism": mech, "rule": res.rule, "status": res.status, "period": res.period,
                           **_certificate_cols(sc, game, res.profile, cert),
                           "final_factors": game.strategies[res.profile].round(4).tolist()}  # fmt: skip
    if res.regret:
        row["max_regret"] = max(res.regret.values())
        row["max_regret_rel"] = max(res.regret_rel.values())
        row.update(_cce_cols(sc, game, res))
        row["rounds"] = res.rounds
    row.update(pol)
    return res.trajectory.assign(mechanism=mech), row


@dataclass(frozen=True)
class LearnTask:
    """One independent unit of a learning run: a mechanism (and, for Bayesian auctions, a number of
    bidders ``n``). Runs in any executor; ``failure`` is what a crashed task becomes."""

    scenario: LearningScenario
    mechanism: str
    n: int = 0

    @property
    def run_id(self) -> str:
        return f"{self.mechanism}/n{self.n}" if self.n else self.mechanism

    def failure(self, message: str) -> LearnOutcome:
        return LearnOutcome(self.run_id, self.mechanism, self.n, None, None, message)


@dataclass
class LearnOutcome:
    """A task's trajectory and table row, or its ``error``."""

    run_id: str
    mechanism: str
    n: int
    trajectory: pd.DataFrame | None
    row: dict[str, Any] | None
    error: str | None = None


def run_task(task: LearnTask, progress: Callable[[int, int], None] | None = None) -> LearnOutcome:
    """Run one :class:`LearnTask`; never raises (the error text comes back in the outcome)."""
    try:
        if task.scenario.family == "bayesian":
            traj, row = _bayesian_one(task.scenario, task.mechanism, task.n, progress)
        else:
            traj, row = _dynamics_one(task.scenario, task.mechanism, progress)
        return LearnOutcome(task.run_id, task.mechanism, task.n, traj, row)
    except Exception as exc:  # one failing mechanism must not lose the others
        return task.failure(f"{type(exc).__name__}: {exc}")


def learn_tasks(sc: LearningScenario) -> list[LearnTask]:
    """The scenario's independent tasks, in output order (mechanism, then n)."""
    if sc.family != "bayesian":
        _game(sc, sc.mechanisms[0])  # bad instances fail here, as an InputError naming the field
        return [LearnTask(sc, m) for m in sc.mechanisms]
    from marketsim.analysis.frontends.learn_bayesian import parse_bayesian

    return [LearnTask(sc, m, n) for m in sc.mechanisms for n in parse_bayesian(sc).ns]


def run_learning(
    sc: LearningScenario,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    executor: str = "local",
    workers: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every mechanism of ``sc``: ``(trajectories, table)``; the table has one price-of-lying
    row per mechanism (status, cycle period, epsilon certificate, truthful vs learned metrics) or,
    for Bayesian auctions, per (mechanism, n). ``executor`` ("local" or "process" with ``workers``)
    runs the independent tasks; every task is seeded by the scenario alone, so the results are
    identical with every executor. Per-round ``progress(label, i, n)`` is reported with the local
    executor; the process executor reports each finished task (``i = n = 1``). A failed task
    becomes a row with ``status = "error"`` and its message; the others are kept."""
    from marketsim.analysis.engine.runner import make_executor

    tasks = learn_tasks(sc)
    out: dict[str, LearnOutcome] = {}
    if executor == "local" and progress is not None:
        for t in tasks:
            out[t.run_id] = run_task(t, lambda i, n, label=t.run_id: progress(label, i, n))
    else:
        for res in make_executor(executor, workers).map(run_task, tasks):  # type: ignore[arg-type]
            out[res.run_id] = res
            if progress is not None:
                progress(res.run_id, 1, 1)
    trajs, rows = [], []
    for t in tasks:
        res = out.get(t.run_id) or t.failure("no result returned")
        if res.error is not None or res.trajectory is None or res.row is None:
            rows.append({"mechanism": t.mechanism, **({"n": t.n} if t.n else {}), "status": "error",
                         "error": res.error or "no result"})  # fmt: skip
            continue
        trajs.append(res.trajectory)
        rows.append(res.row)
    traj = pd.concat(trajs, ignore_index=True) if trajs else pd.DataFrame()
    return traj, pd.DataFrame(rows)


def _plot(sc: LearningScenario, traj: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if sc.family == "bayesian":
        from marketsim.analysis.frontends.learn_bayesian import plot_convergence

        fig, axes = plt.subplots(1, 2, figsize=(11, 4), squeeze=False)
        if len(traj):
            plot_convergence(traj, axes[0])
        axes[0, 0].set_ylabel("E[b(V)] / E[V] (1 = truthful; mean over seeds)")
        axes[0, 1].set_ylabel("a learner's TRUE utility (20-round mean)")
        for ax in axes[0]:
            ax.set_xlabel("round")
        axes[0, 0].legend(fontsize=6, ncol=3)
    else:
        mechs = list(dict.fromkeys(traj["mechanism"]))
        fig, axes = plt.subplots(2, len(mechs), figsize=(2.8 * len(mechs) + 1, 5.5), squeeze=False, sharex="col")
        moved = traj[traj["agent"] >= 0]
        for c, mech in enumerate(mechs):
            g = moved[moved["mechanism"] == mech]
            for agent, ga in g.groupby("agent"):
                axes[0, c].plot(ga["step"], ga["f1"], drawstyle="steps-post", marker="o", ms=3, label=f"agent {agent}")
                axes[1, c].plot(ga["step"], ga["utility"], marker="o", ms=3, label=f"agent {agent}")
            axes[0, c].set_yscale("log")
            axes[0, c].axhline(1.0, color="grey", lw=0.6, ls=":")
            axes[0, c].set_title(mech, fontsize=9)
            axes[1, c].set_xlabel("step")
        axes[0, 0].set_ylabel("report factor (1 = truthful)")
        axes[1, 0].set_ylabel("TRUE utility")
        if len(moved["agent"].unique()) <= 8:
            axes[0, 0].legend(fontsize=6)
    fig.suptitle(f"{sc.name}: {sc.rule} learning")
    fig.tight_layout()
    write_atomic(path, lambda p: fig.savefig(p, dpi=110))
    plt.close(fig)


def _md(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_learning(sc: LearningScenario, traj: pd.DataFrame, table: pd.DataFrame, out: Path) -> list[Path]:
    """Write trajectories.parquet, price_of_lying.csv, convergence.png and report.md into ``out``
    (Bayesian auctions: also bids.png, learned bids against the BNE); an earlier run in ``out`` that this
    process does not hold is moved aside first (:func:`marketsim.analysis.engine.run_status.guard`)."""
    guard(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "trajectories.parquet", out / "price_of_lying.csv", out / "convergence.png", out / "report.md"]
    write_atomic(paths[0], lambda p: traj.to_parquet(p, index=False))  # each file whole or not at all
    write_atomic(paths[1], lambda p: table.to_csv(p, index=False))
    _plot(sc, traj, paths[2])
    if sc.family == "bayesian":
        from marketsim.analysis.frontends.learn_bayesian import plot_bids, report_table

        shown, expl = report_table(table)
        paths.append(out / "bids.png")
        plot_bids(sc, table, paths[-1])
    else:
        key = "total" if "truthful_total" in table.columns else "welfare"
        show = ["mechanism", "status", "period", "eps_grid", "eps_audit", "certificate", f"truthful_{key}",
                f"learned_{key}", "price_of_lying"]  # fmt: skip
        show += [c for c in ("truthful_revenue", "learned_revenue", "truthful_envy", "learned_envy",
                             "truthful_jain", "learned_jain", "max_regret", "max_regret_rel", "cce_eps_audit",
                             "cce_certificate", "rounds")
                 if c in table.columns]  # fmt: skip
        show = [c for c in show if c in table.columns]
        expl = ("Every learner starts truthful and adapts with TRUE utilities only. The reported profile is the "
                "final one (the most-played one for no-regret rules). `eps_grid`: the largest unilateral relative "
                "gain there on a wider, finer grid; `eps_audit`: the same re-measured by the audit's own search "
                "(`marketsim audit`'s, out to the validator's limits); `certificate` says `certified` only when "
                "both are within the tolerance (option `tol`: 1e-3 for `continuous`, else 1%), and a search finds "
                "lies, it cannot prove there are none. `price_of_lying` = truthful / learned welfare (>1: lying "
                "destroys welfare). No-regret rules: `max_regret` the CCE gap of the empirical play over the grid "
                "(TRUE utility units), `max_regret_rel` that gap over the learner's mean utility, "
                "`cce_eps_audit` the audit's best fixed report against the same play (measured when the grid gap "
                "is within the tolerance) and `cce_certificate` the verdict on the play as a coarse correlated "
                "equilibrium.")  # fmt: skip
    text = [f"# {sc.name}: {sc.rule} learning ({sc.family})", "", sc.description, "", expl, "",
            _md(shown if sc.family == "bayesian" else table[show]), ""]  # fmt: skip
    if sc.family != "bayesian" and "deviation" in table.columns:
        text += ["Deviations the audit found at each reported profile (who gains, from which report to which):", ""]
        for r in table.itertuples(index=False):
            dev = getattr(r, "deviation", None)
            if not isinstance(dev, str):
                continue  # a failed task
            text.append(f"* {r.mechanism}: {dev}")
            moves = getattr(r, "moves", "")
            if isinstance(moves, str) and moves:
                text.append(f"  moves of the last pass (or of the repeat): {moves}")
            cce = getattr(r, "cce_deviation", "")
            if isinstance(cce, str) and cce:
                text.append(f"  against the empirical play: {cce}")
        text.append("")
    text += ["![convergence](convergence.png)", ""]
    if sc.family == "bayesian":
        text += ["![learned bids vs BNE](bids.png)", ""]
    write_atomic(paths[3], lambda p: p.write_text("\n".join(text), encoding="utf-8"))
    return paths
