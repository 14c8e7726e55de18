"""Slow checks of the paper's empirical claims (C9) on the resolved scenarios (spec §5), a few seeds.

Findings are kept as strict xfails with the measured reason, never by changing the mechanism."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from marketsim.market.eris import run_eris
from marketsim.market.eris.baselines import antman, liquid, tiresias
from marketsim.market.eris.workload import eris_simulator, eris_testbed

BASELINES = (tiresias, antman, liquid)


def _welfare(inst, overflow: bool = False):
    cfg = dataclasses.replace(inst.config, overflow_moves=overflow)
    e = run_eris(list(inst.jobs), inst.sites, inst.network, cfg)
    base = {fn.__name__: fn(list(inst.jobs), inst.sites, inst.network, inst.config) for fn in BASELINES}
    return e, base


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="finding: on the testbed scenario (1 GPU per site) spec-default Eris never moves data at Omega >= 0, "
    "so jobs whose data sits on few sites are infeasible and Eris accepts 0-3 of 10 jobs; baselines win on some seeds",
)
def test_c9_testbed_eris_beats_every_baseline():
    for seed in range(5):
        inst = eris_testbed(np.random.default_rng(seed))
        e, base = _welfare(inst)
        for name, b in base.items():
            assert e.welfare(inst.jobs) >= b.welfare, (seed, name)


@pytest.mark.slow
def test_c9_testbed_with_overflow_moves_beats_every_baseline():
    """Sensitivity (D21 extension on): Eris then accepts most jobs and beats every baseline."""
    for seed in range(5):
        inst = eris_testbed(np.random.default_rng(seed))
        e, base = _welfare(inst, overflow=True)
        for name, b in base.items():
            assert e.welfare(inst.jobs) >= b.welfare, (seed, name)


@pytest.mark.slow
def test_c9_simulator_eris_beats_every_baseline():
    for seed in range(2):
        inst = eris_simulator(np.random.default_rng(seed))
        e, base = _welfare(inst)
        for name, b in base.items():
            assert e.welfare(inst.jobs) >= b.welfare, (seed, name)
