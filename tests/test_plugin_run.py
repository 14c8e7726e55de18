"""A plugin's fair-share rule runs where the docs say (issue 34 item 3): ``marketsim run --policies``
takes any registered fair-share rule, the round engine passes row caps only to rules registered with
``caps=True`` (a rule without caps support runs, one that claims caps gets them), and the weight is a
misreportable dimension when asked for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from marketsim.analysis.frontends.cli import main
from marketsim.market import registry
from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError
from marketsim.market.testing import IncentiveViolation, assert_strategyproof

TINY = """
name = "tiny_plugin_run"
policies = ["maxmin"]
rounds = 4
replications = 1
seed = 5

[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]

[workload]
tenants = 3
jobs_per_tenant = 2
"""

CALLS: list[Any] = []


def _split(W: Any, m: Any, *, weights: Any = None, caps: Any = None, **options: Any) -> Allocation:
    """Every GPU type split equally over the rows; rejects caps like the docs' example plugin."""
    CALLS.append(caps)
    if caps is not None:
        raise InputError("caps", caps, "are not supported by test-split")
    Wa = np.asarray(W, dtype=float)
    X = np.tile(np.asarray(m, dtype=float) / Wa.shape[0], (Wa.shape[0], 1))
    return Allocation(X, "test-split", float((Wa / Wa[:, :1] * X).sum()))


@pytest.fixture
def split_rule(request: pytest.FixtureRequest) -> Iterator[str]:
    """``test-split`` registered with ``caps=request.param`` for one test, then removed."""
    name = "test-split"
    registry.register(name, "fair-share", "equal split, no caps (test)", caps=request.param)(_split)
    CALLS.clear()
    try:
        yield name
    finally:
        registry._REGISTRY.pop(name, None)


@pytest.mark.parametrize("split_rule", [False], indirect=True)
def test_rule_without_caps_runs_under_marketsim_run(split_rule: str, tmp_path: Path, capsys) -> None:
    scen = tmp_path / "tiny.toml"
    scen.write_text(TINY, encoding="utf-8")
    out = tmp_path / "out"
    # not in the scenario's own policies: --policies takes any registered fair-share rule
    assert main(["run", str(scen), "--policies", f"{split_rule},maxmin", "--quiet", "--out", str(out)]) == 0
    assert CALLS and all(c is None for c in CALLS)  # the engine never passed caps
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"| {split_rule} | truthful |" in report and "| maxmin | truthful |" in report
    assert not (out / "errors.txt").exists()


@pytest.mark.parametrize("split_rule", [True], indirect=True)
def test_rule_registered_with_caps_gets_them(split_rule: str, tmp_path: Path, capsys) -> None:
    scen = tmp_path / "tiny.toml"
    scen.write_text(TINY, encoding="utf-8")
    code = main(["run", str(scen), "--policies", split_rule, "--quiet", "--out", str(tmp_path / "out")])
    assert code == 1  # it said it takes caps, got them and rejected them: a failed run, reported
    assert CALLS and CALLS[0] is not None
    assert "caps are not supported by test-split" in capsys.readouterr().err


def test_register_rejects_a_non_bool_caps() -> None:
    with pytest.raises(InputError, match="caps must be True or False"):
        registry.register("test-bad-caps", "fair-share", "x", caps="no")(_split)  # type: ignore[arg-type]
    assert "test-bad-caps" not in registry.names("fair-share")


@pytest.mark.parametrize(
    ("policies", "needle"),
    [
        ("no-such-rule", "--policies is not a registered fair-share policy; known: ["),
        ("maxmin,maxmin", "--policies must not repeat a policy"),
        (" , ", "--policies names no policy"),
    ],
)
def test_run_policies_errors(policies: str, needle: str, tmp_path: Path, capsys) -> None:
    assert main(["run", "default", "--policies", policies, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "o").exists()  # refused before any work


def test_weight_is_a_dimension_when_asked_for() -> None:
    inst = [([[1.0, 2.0], [1.0, 5.0]], [1, 1])]
    assert_strategyproof("maxmin", inst)  # max-min ignores speedup reports: no speedup lie pays
    with pytest.raises(IncentiveViolation) as exc:
        assert_strategyproof("maxmin", inst, dims=["weight"], direction="up")
    # hand: tenant 0 gets half of each type (1/2 + 2/2 = 1.5); a weight of 4 (the search bound)
    # gives it 4/5 of each (0.8 + 1.6 = 2.4), a gain of 0.9
    msg = str(exc.value)
    assert "misreport={weight: 4}" in msg and "truthful_utility=1.5" in msg and "lying_utility=2.4" in msg, msg


def test_unknown_weight_dimension_says_how() -> None:
    from marketsim.market.audit import FairShareTarget, audit

    t = FairShareTarget("maxmin", W=[[1, 2], [1, 5]], m=[1, 1])
    with pytest.raises(InputError, match=r"weight_claims=True"):
        audit(t, 0, dimensions=["weight"])
