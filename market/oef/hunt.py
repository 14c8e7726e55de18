"""Hunt spaces of the OEF claims (:mod:`marketsim.market.audit.hunt`): the realistic fair-share box
(:data:`marketsim.market.audit.hunt_spaces.REALISTIC`: 2-6 tenants, 2-4 GPU types, 1-8 GPUs per type, a
fastest/slowest speed ratio up to 12x per tenant, grown where a witness sits on its edge) with
each claim's own effect measure; C8's slowest-user generator keeps the ledger's step box.

* C1 / C1-ext: row 0's largest relative gain of a misreport against ``oef-noncoop`` (in-scope
  inflation families / every other family), inner search
  :data:`marketsim.market.audit.hunt_spaces.HUNT_CONFIG` on the warm-started screen, the final figure from
  ``marketsim audit``'s own audit.
* C2, C3 (weighted), C2-noncoop, C3-noncoop, C5, C7, C8: the largest violation amount of the
  property the claim measures (:func:`marketsim.market.oef.claims.measure`), with the claim's tolerance.

Claims without a space (C1b, C4, C6, C9–C16) are listed with the reason in ``docs/hunt.md``.
"""

from __future__ import annotations

from typing import Any

from marketsim.market.audit.hunt import register_hunt_space
from marketsim.market.audit.hunt_spaces import REALISTIC, MisreportSpace, PropertySpace
from marketsim.market.audit.instances import SIZES, FairShareInstance

PAPER = "oef"


def _ranges(size: str, kind: str = "unrestricted") -> dict[str, Any]:
    """The realistic box (both sizes); the ledger generator's ranges for the ordered generators."""
    if kind == "unrestricted":
        return dict(REALISTIC)
    p = SIZES[size]
    return {"n": tuple(p["n"]), "k": tuple(p["k"]), "m_max": int(p["m_max"])}


@register_hunt_space(PAPER, "C1")
def _c1(size: str, claim: Any = None) -> MisreportSpace:
    return MisreportSpace("oef:C1", mechanism="oef-noncoop", scope="in", **_ranges(size))


@register_hunt_space(PAPER, "C1-ext")
def _c1_ext(size: str, claim: Any = None) -> MisreportSpace:
    return MisreportSpace("oef:C1-ext", mechanism="oef-noncoop", scope="out", **_ranges(size))


def _property_space(name: str, mechs: tuple[str, ...], props: tuple[str, ...], size: str, kind: str = "unrestricted",
                    weighted: bool = False) -> PropertySpace:  # fmt: skip
    from marketsim.market.oef.claims import _prop_tol, _prop_witness, measure

    def meas(inst: FairShareInstance) -> tuple[float, float, dict[str, Any]]:
        worst, tol_w, wit = -1.0, 0.0, None
        w = None if inst.weights is None else inst.weights.tolist()
        for mech in mechs:
            for prop in props:
                v = measure(prop, mech, inst.W, inst.m, w)
                tol = _prop_tol(prop, inst.W, inst.m)
                if wit is None or v - tol > worst - tol_w:
                    worst, tol_w, wit = v, tol, _prop_witness(prop, mech, inst, v, tol, w)
        return worst, tol_w, wit  # type: ignore[return-value]

    return PropertySpace(name, kind=kind, weighted=weighted, measure=meas, **_ranges(size, kind))


_PROPERTY_CLAIMS = {
    "C2": (("oef-coop",), ("envy",), "unrestricted", True),
    "C2-noncoop": (("oef-noncoop",), ("envy",), "unrestricted", False),
    "C3-noncoop": (("oef-noncoop",), ("si",), "unrestricted", False),
    "C3": (("oef-coop",), ("si", "full_allocation"), "unrestricted", True),
    "C5": (("oef-coop", "oef-noncoop"), ("pe",), "unrestricted", False),
    "C7": (("oef-coop", "oef-noncoop"), ("nnz_excess", "single_type_shortfall"), "unrestricted", False),
    "C8": (("oef-coop", "oef-noncoop", "si-constrained"), ("lemma31",), "slowest", False),
}


def _register_property(cid: str, mechs: tuple[str, ...], props: tuple[str, ...], kind: str, weighted: bool) -> None:
    @register_hunt_space(PAPER, cid)
    def _space(size: str, claim: Any = None) -> PropertySpace:
        return _property_space(f"oef:{cid}", mechs, props, size, kind, weighted)


for _cid, (_m, _p, _k, _w) in _PROPERTY_CLAIMS.items():
    _register_property(_cid, _m, _p, _k, _w)
