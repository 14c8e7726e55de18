"""Gavel's LPs sent straight to highspy (marketsim.market.oef.highs_direct) give the vertex scipy's linprog
("highs-ds", the path they replace) gives, on seeded random instances with zeros, gang jobs,
weights and caps."""

from __future__ import annotations

import numpy as np
import pytest

import marketsim.market.oef.gavel as gv
from marketsim.market.registry import get


def _instances(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 60))
        T = rng.uniform(0.2, 5.0, (n, 3))
        T[rng.random((n, 3)) < 0.15] = 0.0
        T[T.sum(axis=1) == 0, 2] = 1.0
        m = rng.integers(0, 9, 3).astype(float)
        m[2] = max(m[2], 1.0)
        s = rng.choice([1.0, 1.0, 2.0, 4.0], n)
        w = rng.choice([0.5, 1.0, 2.0], n)
        caps = np.where(rng.random(n) < 0.3, s * rng.uniform(0.2, 1.0, n), np.inf)
        yield T, m, s, w, caps


@pytest.mark.parametrize("policy", ["gavel-max-min-perf", "gavel-max-sum-throughput"])
def test_direct_highs_gives_linprogs_vertex(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fn = get(policy, "fair-share").fn
    for T, m, s, w, caps in _instances(11, 40):
        kw = {"weights": w, "caps": caps, "scale_factors": s}
        if policy == "gavel-max-min-perf":
            kw["aggregate"] = False
        try:
            direct = fn(T, m, **kw)
        except Exception as exc:  # an instance the policy rejects is rejected the same way by both paths
            with monkeypatch.context() as mp:
                mp.setattr(gv, "_direct", lambda g: False)
                with pytest.raises(type(exc)):
                    fn(T, m, **kw)
            continue
        with monkeypatch.context() as mp:
            mp.setattr(gv, "_direct", lambda g: False)
            ref = fn(T, m, **kw)
        np.testing.assert_allclose(direct.X, ref.X, rtol=0, atol=1e-9)
        assert direct.objective == pytest.approx(ref.objective, rel=1e-12, abs=1e-12)
