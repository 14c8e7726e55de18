"""The claims ledger: each paper's claims as registered measurements with verdicts.

A claim is registered with :func:`register_claim` (paper key, claim id, statement as the paper
states it, how it is tested, kind) on a function ``fn(ctx: ClaimContext) -> Measurement``. The
verdict is derived from the measurement, never written by hand:

* ``kind="universal"`` ("for all instances ..."): ``violated`` if ``violations > 0``, ``holds`` if
  instances were measured without a violation, else ``inconclusive``;
* ``kind="existential"`` (impossibility theorems: "some instance admits a profitable lie"):
  ``holds`` if a witness instance was found (``found > 0``), otherwise ``inconclusive``;
* a measurement may set ``verdict="inconclusive"`` with a ``reason`` when it could not measure.

:func:`run_claims` runs them with per-claim seeds derived from ``(seed, paper, claim id)``, so a
claim's numbers do not depend on which other claims run. Witnesses are JSON-ready dicts that
:func:`recheck_witness` re-evaluates from scratch. A paper (or any plugin, see
:mod:`marketsim.market.plugins`) adds claims by registering functions in a module it lists in its
``Plugin.claims``; the ledger imports those modules on first use.
"""

from __future__ import annotations

import json
import math
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from marketsim.market.audit.search import jsonable
from marketsim.market.errors import InputError, check_choice, check_int

__all__ = [
    "VERDICTS",
    "WEAK_N",
    "SIZES",
    "verdict_label",
    "ClaimContext",
    "Measurement",
    "ClaimSpec",
    "Claim",
    "ClaimResult",
    "register_claim",
    "claims",
    "papers",
    "run_claims",
    "to_frame",
    "to_markdown",
    "to_records",
    "hunt_cell",
    "register_witness_checker",
    "recheck_witness",
    "flips_verdict",
    "confirm_entry",
]

VERDICTS = ("holds", "violated", "inconclusive")
WEAK_N = 20
"""A universal claim that ``holds`` on fewer instances than this is labelled ``weak``."""


def verdict_label(verdict: str, n_instances: int, kind: str = "universal") -> str:
    """Verdict with its sample size, e.g. ``holds (n=40)``; a universal ``holds`` on fewer than
    :data:`WEAK_N` instances reads ``holds (n=6, weak)``: too few instances to trust a "for all".

    :param verdict: ``"holds"``, ``"violated"`` or ``"inconclusive"``
    :param n_instances: instances measured
    :param kind: ``"universal"`` or ``"existential"``
    :returns: the label
    """
    if verdict == "holds" and kind == "universal" and n_instances < WEAK_N:
        return f"holds (n={n_instances}, weak)"
    return f"{verdict} (n={n_instances})"


SIZES = ("small", "large")

_CLAIMS: dict[tuple[str, str], ClaimSpec] = {}
_CHECKERS: dict[str, Callable[[dict[str, Any]], bool]] = {}


@dataclass
class ClaimContext:
    """What a claim function gets: ``size`` (``"small"``/``"large"``), the run ``seed``, its own
    seeded ``rng`` / ``seq`` and a ``memo`` shared by the claims of one :func:`run_claims` call (so
    e.g. C1 and C1-ext reuse one set of audits, which then use a seed derived from the memo key).

    :param size: ``"small"`` or ``"large"``
    :param seed: the run's seed
    :param rng: the claim's own generator
    :param seq: the claim's own seed sequence
    :param memo: values shared by the claims of one run
    """

    size: str
    seed: int
    rng: np.random.Generator
    seq: np.random.SeedSequence
    memo: dict[str, Any] = field(default_factory=dict)

    def pick(self, small: Any, large: Any) -> Any:
        """``small`` or ``large`` by the run size.

        :param small: the value for a small run
        :param large: the value for a large run
        :returns: one of them
        """
        return small if self.size == "small" else large

    def shared(self, key: str, compute: Callable[[np.random.Generator], Any]) -> Any:
        """Memoised ``compute(rng)`` with ``rng`` seeded by ``(seed, key)`` only.

        :param key: the memo key (also seeds ``rng``)
        :param compute: computes the value from a generator
        :returns: the (memoised) value
        """
        if key not in self.memo:
            self.memo[key] = compute(np.random.default_rng(_seq(self.seed, "memo", key)))
        return self.memo[key]


@dataclass
class Measurement:
    """What a claim function returns. ``effect_size`` is described by ``effect`` (e.g. "max
    relative gain"). ``found`` counts witness instances of existential claims. ``details`` is
    JSON-ready extra data (per-family tables, rates).

    :param n_instances: instances measured
    :param violations: instances that violate the claim (universal claims)
    :param effect_size: the measured effect
    :param effect: what ``effect_size`` is
    :param witness: a JSON-ready witness (a violating or an example instance), or ``None``
    :param details: extra JSON-ready data
    :param found: witness instances of an existential claim
    :param verdict: a verdict that overrides the derived one, or ``None``
    :param reason: why (with ``verdict``, or for inconclusive results)
    """

    n_instances: int
    violations: int = 0
    effect_size: float = 0.0
    effect: str = ""
    witness: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    found: int = 0
    verdict: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class ClaimSpec:
    """A registered claim (see :func:`register_claim`).

    :param paper: the paper's key
    :param claim_id: the claim's id within the paper
    :param statement: the claim as the paper states it
    :param how_tested: how it is measured
    :param kind: ``"universal"`` or ``"existential"``
    :param fn: ``fn(ctx) -> Measurement``
    """

    paper: str
    claim_id: str
    statement: str
    how_tested: str
    kind: str
    fn: Callable[[ClaimContext], Measurement]


@dataclass
class Claim:
    """One ledger entry: the claim, how it was tested, the verdict and its evidence.

    :param paper: the paper's key
    :param claim_id: the claim's id
    :param statement: the claim
    :param how_tested: how it was measured
    :param verdict: ``"holds"``, ``"violated"`` or ``"inconclusive"``
    :param effect_size: the measured effect
    :param effect: what ``effect_size`` is
    :param witness: the deciding witness, or ``None``
    :param n_instances: instances measured
    :param violations: violating instances
    :param seed: the run's seed
    :param size: ``"small"`` or ``"large"``
    :param seconds: wall time of the measurement, seconds
    :param reason: why, for overridden or inconclusive verdicts
    :param details: extra JSON-ready data
    :param kind: ``"universal"`` or ``"existential"``
    :param hunt: the counterexample hunt's summary, or ``None``
    :param found_by: ``"search"`` when only the hunt found the violation
    :param oracle: the independent oracle's re-check of the witness, or ``None``
    """

    paper: str
    claim_id: str
    statement: str
    how_tested: str
    verdict: str
    effect_size: float
    effect: str
    witness: dict[str, Any] | None
    n_instances: int
    violations: int
    seed: int
    size: str
    seconds: float
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    kind: str = "universal"
    hunt: dict[str, Any] | None = None
    found_by: str = ""
    oracle: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """The verdict with its sample size (:func:`verdict_label`); ``violated (found by search)``
        when only the hunt (:func:`marketsim.market.audit.hunt.hunt_claims`) found the violation."""
        if self.found_by == "search":
            return "violated (found by search)"
        return verdict_label(self.verdict, self.n_instances, self.kind)

    @property
    def weak(self) -> bool:
        """A universal ``holds`` on fewer than :data:`WEAK_N` instances."""
        return self.verdict == "holds" and self.kind == "universal" and self.n_instances < WEAK_N

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "paper": self.paper,
            "claim_id": self.claim_id,
            "statement": self.statement,
            "how_tested": self.how_tested,
            "verdict": self.verdict,
            "label": self.label,
            "kind": self.kind,
            "effect_size": _num(self.effect_size),
            "effect": self.effect,
            "witness": jsonable(self.witness),
            "n_instances": self.n_instances,
            "violations": self.violations,
            "seed": self.seed,
            "size": self.size,
            "seconds": self.seconds,
            "reason": self.reason,
            "details": jsonable(self.details),
            **({"hunt": jsonable(self.hunt)} if self.hunt is not None else {}),
            **({"found_by": self.found_by} if self.found_by else {}),
            **({"oracle": jsonable(self.oracle)} if self.oracle is not None else {}),
        }


ClaimResult = Claim


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def register_claim(
    paper: str, claim_id: str, statement: str, how_tested: str, *, kind: str = "universal"
) -> Callable[[Callable[[ClaimContext], Measurement]], Callable[[ClaimContext], Measurement]]:
    """Decorator registering ``fn(ctx) -> Measurement`` as claim ``claim_id`` of ``paper``.

    :param paper: the paper's key (a plugin's name)
    :param claim_id: the claim's id, unique within the paper
    :param statement: the claim as the paper states it
    :param how_tested: how the function measures it
    :param kind: ``"universal"`` (a violation refutes it) or ``"existential"`` (an example proves it)
    :returns: the decorator; it returns ``fn`` unchanged
    :raises InputError: an unknown kind, or (when decorating) an id already registered
    """
    check_choice("kind", kind, ("universal", "existential"))

    def deco(fn: Callable[[ClaimContext], Measurement]) -> Callable[[ClaimContext], Measurement]:
        key = (paper, claim_id)
        if key in _CLAIMS and _CLAIMS[key].fn is not fn:
            raise InputError("claim", key, "is already registered")
        _CLAIMS[key] = ClaimSpec(paper, claim_id, statement, how_tested, kind, fn)
        return fn

    return deco


def register_witness_checker(
    kind: str,
) -> Callable[[Callable[[dict[str, Any]], bool]], Callable[[dict[str, Any]], bool]]:
    """Decorator registering ``check(witness) -> bool`` (True = the witness reproduces) for
    witnesses whose ``"kind"`` is ``kind``.

    :param kind: the witness kind it checks
    :returns: the decorator; it returns the checker unchanged
    """

    def deco(fn: Callable[[dict[str, Any]], bool]) -> Callable[[dict[str, Any]], bool]:
        _CHECKERS[kind] = fn
        return fn

    return deco


def _load() -> None:
    """Import every plugin's claim modules (each once)."""
    from marketsim.market import plugins

    plugins.import_modules(plugins.modules("claims"))


def papers() -> list[str]:
    """Paper keys with registered claims."""
    _load()
    return sorted({p for p, _ in _CLAIMS})


def claims(paper: str | None = None) -> list[ClaimSpec]:
    """Registered claims (of one paper), in registration order.

    :param paper: a paper key; ``None``: every paper
    :returns: the claim specs
    :raises InputError: a paper without registered claims
    """
    _load()
    if paper is not None and paper not in papers():
        raise InputError("paper", paper, f"has no registered claims; known: {papers()}")
    return [c for (p, _), c in _CLAIMS.items() if paper is None or p == paper]


def _seq(seed: int, *parts: str) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=tuple(zlib.crc32(p.encode()) for p in parts))


def _verdict(spec: ClaimSpec, m: Measurement) -> tuple[str, str]:
    if m.verdict is not None:
        check_choice("Measurement.verdict", m.verdict, VERDICTS)
        return m.verdict, m.reason
    if spec.kind == "existential":
        if m.found > 0:
            return "holds", m.reason
        return "inconclusive", m.reason or f"no witness found on {m.n_instances} instances"
    if m.violations > 0:
        return "violated", m.reason
    if m.n_instances > 0:
        return "holds", m.reason
    return "inconclusive", m.reason or "no instance measured"


def flips_verdict(kind: str, verdict: str) -> bool:
    """Whether a witness decides the verdict: a universal claim's violation or an existential
    claim's example.

    :param kind: ``"universal"`` or ``"existential"``
    :param verdict: the verdict
    :returns: ``True`` when the witness decides it
    """
    return (kind == "universal" and verdict == "violated") or (kind == "existential" and verdict == "holds")


def confirm_entry(c: Claim) -> Claim:
    """Re-check the witness that decides ``c``'s verdict with an independent oracle
    (:func:`marketsim.market.audit.oracles.confirm_witness`) and record it in ``c.oracle``. A witness the
    oracle rejects is an artefact, not a finding: the verdict becomes ``inconclusive`` with the
    reason "witness is an artefact, not confirmed by <oracle>" (other violating instances of the
    sample were not re-checked). Returns ``c``.

    :param c: a ledger entry (modified in place)
    :returns: ``c``
    """
    from marketsim.market.audit.oracles import confirm_witness

    if c.witness is None or not flips_verdict(c.kind, c.verdict):
        return c
    res = confirm_witness(c.witness)
    c.oracle = res.to_dict()
    if res.confirmed is False:
        c.verdict = "inconclusive"
        c.reason = (c.reason + "; " if c.reason else "") + (
            f"witness is an {res.label} (the ledger's own checker reproduced it; other violating instances of "
            "the sample were not re-checked)"
        )
    return c


def run_claims(
    paper: str | None = None,
    *,
    size: str = "small",
    seed: int = 0,
    ids: Iterable[str] | None = None,
    confirm: bool = True,
) -> list[Claim]:
    """Measure the registered claims (of ``paper``; only ``ids`` when given) and return ledger
    entries. ``size="small"`` keeps each paper's ledger fast (default test run);
    ``size="large"`` uses the spec's instance ranges and more instances. With ``confirm`` (default)
    the witness that decides a verdict is re-checked by an independent oracle
    (:func:`confirm_entry`).

    :param paper: a paper key; ``None``: every paper
    :param size: ``"small"`` or ``"large"``
    :param seed: the run's seed, >= 0 (each claim gets its own stream)
    :param ids: the claim ids to run; ``None``: all of the paper
    :param confirm: re-check deciding witnesses with an independent oracle
    :returns: one ledger entry per claim
    :raises InputError: a bad size or seed, an unknown paper or claim id
    """
    check_choice("size", size, SIZES)
    seed = check_int("seed", seed, minimum=0)
    specs = claims(paper)
    if ids is not None:
        wanted = list(ids)
        known = {c.claim_id for c in specs}
        for i in wanted:
            if i not in known:
                raise InputError("claim id", i, f"is not registered; known: {sorted(known)}")
        specs = [c for c in specs if c.claim_id in wanted]
    memo: dict[str, Any] = {}
    out = []
    for spec in specs:
        seq = _seq(seed, spec.paper, spec.claim_id)
        ctx = ClaimContext(size, seed, np.random.default_rng(seq), seq, memo)
        t0 = time.perf_counter()
        m = spec.fn(ctx)
        verdict, reason = _verdict(spec, m)
        out.append(
            Claim(
                paper=spec.paper,
                claim_id=spec.claim_id,
                statement=spec.statement,
                how_tested=spec.how_tested,
                verdict=verdict,
                effect_size=float(m.effect_size) + 0.0,  # + 0.0: a negative zero is stored (and printed) as 0
                effect=m.effect,
                witness=m.witness,
                n_instances=m.n_instances,
                violations=m.violations,
                seed=seed,
                size=size,
                seconds=time.perf_counter() - t0,
                reason=reason,
                details={**m.details, **({"found": m.found} if spec.kind == "existential" else {})},
                kind=spec.kind,
            )
        )
        if confirm:
            t1 = time.perf_counter()
            confirm_entry(out[-1])
            out[-1].seconds += time.perf_counter() - t1
    return out


def to_records(results: Iterable[Claim]) -> list[dict[str, Any]]:
    """JSON-ready dicts (``json.dumps`` works on them).

    :param results: ledger entries from :func:`run_claims`
    :returns: one dict per entry
    """
    recs = [r.to_dict() for r in results]
    json.dumps(recs)  # fail here, not in the caller, if something is not serialisable
    return recs


def to_frame(results: Iterable[Claim]) -> pd.DataFrame:
    """Tidy table: one row per claim (witness and details as JSON strings).

    :param results: ledger entries from :func:`run_claims`
    :returns: the table
    """
    rows = []
    for r in results:
        d = r.to_dict()
        d["witness"] = json.dumps(d["witness"]) if d["witness"] is not None else None
        d["details"] = json.dumps(d["details"])
        d["hunt"] = json.dumps(d["hunt"]) if "hunt" in d else None
        rows.append(d)
    cols = [
        "paper",
        "claim_id",
        "verdict",
        "label",
        "effect_size",
        "effect",
        "n_instances",
        "violations",
        "seed",
        "size",
        "seconds",
        "reason",
        "statement",
        "how_tested",
        "witness",
        "details",
        "hunt",
    ]
    return pd.DataFrame(rows, columns=cols)


def hunt_cell(h: dict[str, Any] | None) -> str:
    """Short text of a claim's hunt: ``best 0.93 vs random 0.41 (120 evals, cma)`` (plus an
    artefact the oracle rejected, a witness left on the box's edge, a hunt the seconds cap stopped),
    ``-`` without one, ``no space`` when the claim has no hunt space.

    :param h: the entry's ``hunt`` dict, or ``None``
    :returns: the text
    """
    if h is None:
        return "-"
    if not h.get("available", True):
        return "no space"

    def f(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, (int, float)) else str(v)

    best, rnd = f(h["best_effect"]), f(h["random_best_effect"])
    art = "; artefact: " + ", ".join(a["arm"] for a in h["artefacts"]) if h.get("artefacts") else ""
    edge = h.get("edge") or {}
    if edge and not edge.get("interior", True):
        art += f"; witness on the box's edge ({edge.get('status')})"
    cap = "; stopped by the seconds cap" if h.get("stopped_by") == "seconds cap" else ""
    return f"best {best} vs random {rnd} ({h['evaluations']} evals, {h['optimiser']}{art}{cap})"


def to_markdown(results: Iterable[Claim]) -> str:
    """A Markdown table: claim, verdict, effect, instances, violations, statement (and the hunt
    beside the sample when some entry was hunted).

    :param results: ledger entries from :func:`run_claims`
    :returns: the Markdown table
    """
    results = list(results)
    hunted = any(r.hunt is not None for r in results)
    lines = [
        "| paper | claim | verdict | effect | n | violations |" + (" hunt |" if hunted else "") + " statement |",
        "|---|---|---|---|---|---|" + ("---|" if hunted else "") + "---|",
    ]
    for r in results:
        eff = f"{r.effect_size:.4g} ({r.effect})" if r.effect else f"{r.effect_size:.4g}"
        stmt = r.statement.replace("|", "\\|")
        if r.reason:
            stmt += f" — *{r.reason}*".replace("|", "\\|")
        h = f" {hunt_cell(r.hunt)} |" if hunted else ""
        orc = f" ({r.oracle['label']})" if r.oracle else ""
        lines.append(
            f"| {r.paper} | {r.claim_id} | **{r.label}**{orc} | {eff} | {r.n_instances} | {r.violations} |{h} {stmt} |"
        )
    return "\n".join(lines) + "\n"


def recheck_witness(witness: dict[str, Any]) -> bool:
    """Re-evaluate a witness from scratch; True when it reproduces (the violation, or the existence
    of a profitable lie for existential claims). Unknown kinds raise :class:`InputError`.

    :param witness: a witness dict with a ``"kind"``
    :returns: ``True`` when it reproduces
    :raises InputError: not such a dict, or an unknown kind
    """
    _load()
    if not isinstance(witness, dict) or "kind" not in witness:
        raise InputError("witness", witness, "must be a dict with a 'kind'")
    fn = _CHECKERS.get(witness["kind"])
    if fn is None:
        raise InputError("witness kind", witness["kind"], f"has no checker; known: {sorted(_CHECKERS)}")
    return bool(fn(witness))
