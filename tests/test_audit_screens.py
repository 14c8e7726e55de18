"""The audit's linprog-free screens (marketsim.market.audit.screens) return the registered mechanism's
allocation bit for bit, so a hunt evaluation's figures do not change when the screen is used."""

from __future__ import annotations

import numpy as np
import pytest

import marketsim.market.audit.screens as screens
from marketsim.market import registry
from marketsim.market.audit.fairshare import FairShareTarget
from marketsim.market.audit.hunt_spaces import MisreportSpace
from marketsim.market.audit.instances import random_instance


@pytest.mark.parametrize("policy", screens.SCREENED)
def test_screen_equals_registered_mechanism_bit_for_bit(policy: str) -> None:
    fn = registry.get(policy, "fair-share").fn
    rng = np.random.default_rng(7)
    for it in range(12):
        inst = random_instance(rng, n=(2, 6), k=(2, 4), m_max=4)
        w = None if it % 2 else rng.integers(1, 4, inst.W.shape[0]).astype(float)
        scr = screens.audit_screen(policy, fn, inst.W / inst.W[:, :1], inst.m.astype(float), w, None, {})
        assert scr is not None
        for _ in range(5):
            l = int(rng.integers(inst.W.shape[0]))
            row = inst.W[l].copy()
            row[1:] *= np.exp(rng.uniform(np.log(0.25), np.log(4.0), row.size - 1))
            Wr = inst.W.copy()
            Wr[l] = row
            X = fn(Wr, inst.m, weights=w, cache=False).X
            assert np.array_equal(scr.allocation(l, row), X)


def test_screen_applies_only_to_the_plain_builtin_call() -> None:
    W, m = [[1.0, 2.0], [1.0, 3.0]], [1.0, 2.0]
    assert FairShareTarget("gavel", W=W, m=m, fast=True).screening
    assert FairShareTarget("si-constrained", W=W, m=m, weights=[1, 2], fast=True).screening
    assert not FairShareTarget("gavel", W=W, m=m).screening  # fast=False: the mechanism itself
    assert not FairShareTarget("gavel", W=W, m=m, caps=[1, 1], fast=True).screening
    assert not FairShareTarget("gavel", W=W, m=m, options={"tiebreak": "max_total"}, fast=True).screening
    assert not FairShareTarget("gavel", W=W, m=[1.0, 500.0], fast=True).screening  # column scaling
    # a function that is not the built-in one gets no screen, even under a screened name
    fn = registry.get("gavel", "fair-share").fn
    assert screens.audit_screen("gavel", lambda *a, **k: fn(*a, **k), np.array(W), np.array(m), None, None, {}) is None
    assert screens.audit_screen("maxmin", fn, np.array(W), np.array(m), None, None, {}) is None


@pytest.mark.parametrize("policy", screens.SCREENED)
def test_hunt_evaluation_is_unchanged_by_the_screen(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sp = MisreportSpace("t", n=(3, 3), k=(3, 3), mechanism=policy, confirm_full=False)
    rng = np.random.default_rng(3)
    insts = [sp.sample(rng) for _ in range(3)]

    def run() -> list[tuple[float, object]]:
        out = []
        for i, inst in enumerate(insts):
            ev = sp.evaluate(inst, np.random.default_rng(i))
            out.append((ev.effect, None if ev.witness is None else (ev.witness["family"], ev.witness["report"])))
        return out

    fast = run()
    monkeypatch.setattr(screens, "audit_screen", lambda *a, **k: None)
    assert FairShareTarget(policy, W=insts[0].W, m=insts[0].m, fast=True).screening is False
    assert run() == fast
    assert any(e > 0 for e, _ in fast)
