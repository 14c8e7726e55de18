"""Independent oracles that confirm a witness before it becomes a finding (issue #32).

A witness that flips a verdict (a universal claim's violation, an existential claim's example, a
hunt's counterexample) is produced by one evaluation path: a search, a discretised DP, a MILP
stopped at a gap, an LP solver's vertex. :func:`confirm_witness` re-checks it through an
*independent* path and says which one; a witness that does not survive is an artefact, not a
finding ("artefact, not confirmed by <oracle>").

Oracles, by witness kind (registered with :func:`register_oracle`; the first that applies wins):

* ``exact-best-response`` — fair-share ``misreport`` witnesses against the LP allocators: the
  certified best response of the deviator on the instance (bilevel program solved to global
  optimality, :mod:`marketsim.market.audit.exact`, built by another branch). Confirmed when the certified
  largest gain is at least the witness's gain (less the audit tolerance) and above the
  tolerance. Used as soon as :func:`exact_hook` finds the module; until then the next oracle.
* ``resolution-2x-4x`` — fair-share ``misreport`` and ``property`` witnesses: the same
  evaluation on the same instance expressed at 2x and 4x resolution (capacities counted in half
  and quarter GPUs, i.e. ``m`` and per-row caps times 2 and 4, Gavel's one-job bound included:
  :data:`ONE_JOB_BOUND`; an LP allocation scales with them,
  so a real violation persists at every resolution while one that lives in the solver's
  tolerance or in a rounding step does not). Confirmed when the violation persists at both.
* ``exact-dp+milp-zero-gap`` — PD-ORS ledger witnesses (kind ``pdors``): re-measured with the
  exact-workload pricing DP (:mod:`marketsim.market.pdors.pricing`) and, where the claim uses the offline
  optimum, the MILP at zero relative gap; a witness produced on the spec's workload grid is also
  re-measured at 2x and 4x ``dp_units`` (reported, not decisive: the grid's artefact can recur at
  any resolution, issue #32).
* ``milp-zero-gap`` — OASiS tiny-instance witnesses whose check uses the offline optimum
  (``ratio``, ``d0``, ``weak_duality``): the MILP re-solved at zero relative gap. OASiS's DP is
  exact in worker-slots (no grid), so nothing else is re-derived.

Witness kinds without an independent oracle get ``confirmed = None`` and ``independent = False``
(:meth:`OracleResult.label`: "not independently confirmed"): the report says so instead of
claiming more than was checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.errors import InputError

__all__ = ["OracleResult", "register_oracle", "confirm_witness", "exact_hook", "oracle_kinds", "RESOLUTIONS"]

RESOLUTIONS = (2, 4)
"""The resolutions (multiples of the witness's own) of the ``resolution-2x-4x`` oracle."""


@dataclass
class OracleResult:
    """What an oracle said about a witness: ``oracle`` (its name), ``confirmed`` (``True`` /
    ``False``; ``None`` when no independent oracle applies), ``independent`` and a JSON-ready
    ``detail`` (the re-derived figures).

    :param oracle: the oracle's name
    :param confirmed: ``True``/``False``, ``None`` when no oracle applies
    :param independent: whether it shares no code with the search
    :param detail: the re-derived figures (JSON-ready)
    """

    oracle: str
    confirmed: bool | None
    independent: bool = True
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``confirmed by <oracle>``, ``artefact, not confirmed by <oracle>`` or ``not independently
        confirmed (<oracle>)``."""
        if self.confirmed is None:
            return f"not independently confirmed ({self.oracle})"
        return f"confirmed by {self.oracle}" if self.confirmed else f"artefact, not confirmed by {self.oracle}"

    def to_dict(self) -> dict[str, Any]:
        from marketsim.market.audit.search import jsonable

        return {"oracle": self.oracle, "confirmed": self.confirmed, "independent": self.independent,
                "label": self.label, "detail": jsonable(self.detail)}  # fmt: skip


Oracle = Callable[[dict[str, Any]], "OracleResult | None"]
_ORACLES: dict[str, list[tuple[str, Oracle]]] = {}


def register_oracle(kind: str, name: str) -> Callable[[Oracle], Oracle]:
    """Decorator registering ``fn(witness) -> OracleResult | None`` for witnesses of ``kind``
    (``None``: does not apply to this witness; the next oracle of the kind is tried).

    :param kind: the witness kind
    :param name: the oracle's name
    :returns: the decorator (returns ``fn`` unchanged)
    """

    def deco(fn: Oracle) -> Oracle:
        lst = _ORACLES.setdefault(kind, [])
        lst[:] = [(n, f) for n, f in lst if n != name] + [(name, fn)]
        return fn

    return deco


def oracle_kinds() -> dict[str, list[str]]:
    """Witness kind -> names of its registered oracles, in the order they are tried."""
    _load()
    return {k: [n for n, _ in v] for k, v in sorted(_ORACLES.items())}


def _load() -> None:
    from marketsim.market import plugins

    # the paper modules register their oracles beside their checkers (the ledger's plugin modules)
    plugins.import_modules(plugins.modules("claims"))


def confirm_witness(witness: dict[str, Any]) -> OracleResult:
    """Re-check ``witness`` with the first applicable independent oracle of its kind (module
    docstring); ``confirmed = None`` when there is none.

    :param witness: a ledger witness (a dict with ``kind``)
    :returns: what the oracle found
    :raises InputError: a witness that is not a dict with a kind
    """
    if not isinstance(witness, dict):
        raise InputError("witness", witness, "must be a dict with a 'kind'")
    if "kind" not in witness:
        # a plugin's own witness format: said, not guessed at (marketsim.market.audit.hunt_spaces.misreport_witness
        # builds one the oracles re-check)
        return OracleResult("no independent oracle (the witness has no 'kind')", None, False)
    _load()
    for _name, fn in _ORACLES.get(str(witness["kind"]), []):
        res = fn(witness)
        if res is not None:
            return res
    return OracleResult("no independent oracle for witness kind " + repr(witness["kind"]), None, False)


# ---------------------------------------------------------------------------------------------
# fair share: exact best response (hook) and the resolution oracle
# ---------------------------------------------------------------------------------------------
EXACT_MECHANISMS = ("oef-noncoop", "oef-coop", "gavel", "gavel-max-min-perf", "maxmin", "si-constrained",
                    "max-throughput")  # fmt: skip
"""The LP allocators the exact best response covers (issue #32 item 1)."""


def exact_hook() -> Callable[..., Any] | None:
    """The exact best-response function of :mod:`marketsim.market.audit.exact` when that module exists
    (``best_response(policy, W, m, i, *, weights=None, caps=None)`` returning an object with the
    attained ``gain`` / ``relative_gain`` of the registered mechanism at the optimal report, the
    proven ``upper_bound`` on the relative gain over the report box and ``certified``); ``None``
    until it is merged."""
    try:
        from marketsim.market.audit import exact  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(exact, "best_response", None)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def _exact_misreport(w: dict[str, Any]) -> OracleResult | None:
    """Confirmed when the certified best response (a) attains a gain above the audit tolerance and
    (b) proves that a gain at least the witness's is possible (its upper bound is not below the
    witness's relative gain, up to 1e-6 relative); a witness above a proven upper bound is an
    artefact."""
    fn = exact_hook()
    W = np.asarray(w["W"], dtype=float)
    if fn is None or w.get("mechanism") not in EXACT_MECHANISMS or W.shape[0] > 4 or W.shape[1] > 3:
        return None
    res = fn(w["mechanism"], W, np.asarray(w["m"], dtype=float), int(w["deviator"]), weights=w.get("weights"),
             caps=w.get("caps"))  # fmt: skip
    tol = float(w.get("tol", 0.0))
    gain = float(_get(res, "gain"))
    rel_w = float(w.get("relative_gain", math.inf)) if not isinstance(w.get("relative_gain"), str) else math.inf
    ub = _get(res, "upper_bound")
    ub = math.inf if ub is None else float(ub)
    ok = gain > tol and (not math.isfinite(rel_w) or ub >= rel_w - 1e-6 * max(1.0, abs(rel_w)))
    return OracleResult("exact-best-response", bool(ok), True,
                        {"certified_gain": gain, "relative_gain": _get(res, "relative_gain"), "upper_bound": ub,
                         "certified": bool(_get(res, "certified", False)), "witness_gain": float(w["gain"]),
                         "witness_relative_gain": rel_w})  # fmt: skip


ONE_JOB_BOUND = ("gavel-max-sum-throughput", "gavel-max-min-perf", "gavel-isolated", "gavel-fifo")
"""Gavel's own policies: without caps each row is one job, bounded by ``sum_j x[l, j] <= 1`` (its
scale factor's devices, :mod:`marketsim.market.oef.gavel`), a bound that does not grow with ``m``. At
resolution ``s`` that bound is passed as ``caps = s`` devices per row, so the scaled instance is
the same market counted in 1/s GPUs (without it, doubling ``m`` would double the GPUs but not the
jobs' demand: another market, where a real gain can vanish)."""


def _scaled_target(w: dict[str, Any], s: int) -> Any:
    from marketsim.market.audit.fairshare import FairShareTarget

    caps = w.get("caps")
    if caps is None and w.get("mechanism") in ONE_JOB_BOUND and not w.get("options"):
        caps = np.ones(len(w["W"]))  # the one-job bound (scale factor 1 per row), scaled below
    return FairShareTarget(w["mechanism"], W=w["W"], m=np.asarray(w["m"], dtype=float) * s, weights=w.get("weights"),
                           caps=None if caps is None else np.asarray(caps, dtype=float) * s)  # fmt: skip


def _resolution_misreport(w: dict[str, Any]) -> OracleResult:
    """The lie's gain at capacities x2 and x4 (the same instance in half / quarter GPUs)."""
    from marketsim.market.audit.search import relative

    per: dict[str, Any] = {}
    ok = True
    dev = int(w["deviator"])
    for s in RESOLUTIONS:
        t = _scaled_target(w, s)
        u0 = float(t.evaluate(dev, t.report(dev, {})))
        u1 = float(t.evaluate(dev, (tuple(float(v) for v in w["report"]), w.get("weight"))))
        tol = 1e-7 * max(1.0, abs(u0))
        per[f"x{s}"] = {"truthful_utility": u0, "lie_utility": u1, "relative_gain": relative(u1 - u0, u0), "tol": tol}
        ok &= u1 - u0 > tol
    return OracleResult("resolution-2x-4x", bool(ok), True, per)


def resolution_property_oracle(measure: Callable[..., float], tolerance: Callable[..., float]) -> Oracle:
    """The oracle of a property witness: the property's violation at capacities x2 and x4, each
    against its own tolerance. ``measure(property, mechanism, W, m, weights, caps)`` gives the
    violation and ``tolerance(property, W, m)`` its tolerance (the paper module that owns the
    properties registers it: :mod:`marketsim.market.oef.claims`)."""

    def _resolution_property(w: dict[str, Any]) -> OracleResult:
        per: dict[str, Any] = {}
        ok = True
        caps = w.get("caps")
        for s in RESOLUTIONS:
            m = np.asarray(w["m"], dtype=float) * s
            v = float(measure(w["property"], w["mechanism"], w["W"], m, w.get("weights"),
                              None if caps is None else (np.asarray(caps, dtype=float) * s).tolist()))  # fmt: skip
            tol = float(tolerance(w["property"], np.asarray(w["W"], dtype=float), m))
            per[f"x{s}"] = {"value": v, "tol": tol}
            ok &= v > tol
        return OracleResult("resolution-2x-4x", bool(ok), True, per)

    return _resolution_property


register_oracle("misreport", "exact-best-response")(_exact_misreport)
register_oracle("misreport", "resolution-2x-4x")(_resolution_misreport)


def finite(x: float) -> float | str:
    """JSON-ready number (``inf`` / ``nan`` as strings)."""
    return x if math.isfinite(x) else str(x)
