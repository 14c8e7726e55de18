"""Bad input (spec A0, §8 "Validation"): every case raises InputError naming the field and the value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from marketsim.market import registry
from marketsim.market.errors import InputError
from marketsim.market.oef import SpeedupReport, allocate_tenants, build_virtual_users
from marketsim.market.oef.baselines import gandiva_fair, gavel_maxmin
from marketsim.market.oef.mechanisms import oef_coop, oef_noncoop

POLICIES = ["oef-noncoop", "oef-coop", "max-throughput", "maxmin", "gavel", "gandiva-fair", "si-constrained"]
W = [[1.0, 2.0], [1.0, 3.0]]


def _raises(fn, *args, must_contain: tuple[str, ...], **kwargs) -> InputError:
    with pytest.raises(InputError) as exc:
        fn(*args, **kwargs)
    msg = str(exc.value)
    for part in must_contain:
        assert part in msg, f"{part!r} not in {msg!r}"
    assert isinstance(exc.value, ValueError)
    return exc.value


@pytest.mark.parametrize("policy", POLICIES)
def test_nan_speedup(policy):
    e = _raises(registry.get(policy).fn, [[1.0, 2.0], [1.0, math.nan]], [1, 1], must_contain=("W[1]", "nan", "finite"))
    assert e.field == "W[1]"


@pytest.mark.parametrize("policy", POLICIES)
def test_nonpositive_speedup(policy):
    _raises(registry.get(policy).fn, [[1.0, -2.0], [1.0, 3.0]], [1, 1], must_contain=("W[0]", "-2.0", "> 0"))


@pytest.mark.parametrize("policy", POLICIES)
def test_negative_capacity(policy):
    _raises(registry.get(policy).fn, W, [1, -1], must_contain=("m[1]", "-1", ">= 0"))


@pytest.mark.parametrize("policy", POLICIES)
def test_non_integer_capacity(policy):
    _raises(registry.get(policy).fn, W, [1, 1.5], must_contain=("m[1]", "1.5", "whole number"))


@pytest.mark.parametrize("policy", POLICIES)
def test_wrong_speedup_length(policy):
    _raises(registry.get(policy).fn, W, [1, 1, 1], must_contain=("W[0]", "length k=3", "(1.0, 2.0)"))


@pytest.mark.parametrize("policy", ["oef-noncoop", "oef-coop", "gavel", "maxmin", "si-constrained"])
def test_wrong_weight_length(policy):
    _raises(registry.get(policy).fn, W, [1, 1], weights=[1, 2, 3], must_contain=("weights", "[1, 2, 3]", "length n=2"))


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf])
@pytest.mark.parametrize("policy", ["oef-noncoop", "oef-coop", "gavel", "gandiva-fair", "maxmin"])
def test_bad_weight(policy, bad):
    _raises(registry.get(policy).fn, W, [1, 1], weights=[1, bad], must_contain=("weights[1]", repr(bad), "> 0"))


@pytest.mark.parametrize("policy", POLICIES)
def test_w0_not_one_without_normalisation(policy):
    _raises(
        registry.get(policy).fn,
        [[1.0, 2.0], [2.0, 3.0]],
        [1, 1],
        normalise=False,
        must_contain=("W[1]", "(2.0, 3.0)", "w[0] == 1"),
    )


def test_normalisation_divides_by_w0():
    a = oef_coop([[2.0, 4.0], [0.5, 2.5]], [1, 1])
    b = oef_coop([[1.0, 2.0], [1.0, 5.0]], [1, 1])
    np.testing.assert_allclose(a.X, b.X, atol=1e-9)


@pytest.mark.parametrize("policy", POLICIES)
def test_speedup_above_max(policy):
    _raises(
        registry.get(policy).fn,
        [[1.0, 2.0], [1.0, 2e4]],
        [1, 1],
        must_contain=("W[1]", "20000.0", "max_speedup=10000.0"),
    )
    # a custom bound
    _raises(registry.get(policy).fn, W, [1, 1], max_speedup=2.5, must_contain=("W[1]", "max_speedup=2.5"))


@pytest.mark.parametrize("policy", POLICIES)
def test_decreasing_step_with_require_monotone(policy):
    fn = registry.get(policy).fn
    bad = [[1.0, 2.0, 1.5], [1.0, 3.0, 4.0]]
    _raises(fn, bad, [1, 1, 1], require_monotone=True, must_contain=("W[0]", "(1.0, 2.0, 1.5)", "decreasing step"))
    fn(bad, [1, 1, 1])  # accepted by default (Decision A0.4)


def test_duplicate_report():
    reports = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "a", (1, 3)), SpeedupReport("u1", "a", (1, 4))]
    _raises(allocate_tenants, "oef-coop", reports, [1, 1], must_contain=("speedup report", "('u1', 'a')", "duplicate"))
    _raises(build_virtual_users, reports, must_contain=("('u1', 'a')", "duplicate"))


def test_tenant_level_messages_name_tenant_and_type():
    reports = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "lstm", (1, math.nan))]
    _raises(allocate_tenants, "oef-noncoop", reports, [1, 1], must_contain=("('u2', 'lstm')", "nan", "finite"))
    short = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "b", (1, 2, 3))]
    _raises(allocate_tenants, "oef-noncoop", short, [1, 1], must_contain=("('u2', 'b')", "length k=2"))


def test_tenant_weight_errors():
    reports = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "a", (1, 3))]
    _raises(allocate_tenants, "oef-noncoop", reports, [1, 1], weights={"u1": 1, "u2": 0}, must_contain=("'u2'", "0"))
    _raises(allocate_tenants, "oef-noncoop", reports, [1, 1], weights={"u1": 1}, must_contain=("weights", "u2"))


def test_unknown_mechanism_name():
    e = _raises(registry.get, "oef-magic", must_contain=("mechanism", "oef-magic", "oef-coop"))
    assert e.field == "mechanism"
    _raises(allocate_tenants, "no-such-policy", [SpeedupReport("u1", "a", (1, 2))], [1, 1], must_contain=("no-such",))


def test_unknown_option_and_bad_option_values():
    _raises(oef_noncoop, W, [1, 1], solvr="highs", must_contain=("option", "solvr"))
    _raises(oef_noncoop, W, [1, 1], solver="ecos", must_contain=("solver", "ecos"))
    _raises(gavel_maxmin, W, [1, 1], tiebreak="random", must_contain=("tiebreak", "random"))
    _raises(gandiva_fair, W, [1, 1], two_party_price="median", must_contain=("two_party_price", "median"))
    _raises(oef_coop, W, [1, 1], ef_rows="some", must_contain=("ef_rows", "some"))
    _raises(oef_coop, W, [1, 1], lazy_per_col=-1, must_contain=("lazy_per_col", "-1"))
    _raises(oef_coop, W, [1, 1], lazy_drop_after=1.5, must_contain=("lazy_drop_after", "1.5"))


def test_bad_caps():
    _raises(gavel_maxmin, W, [1, 1], caps=[1, -1], must_contain=("caps[1]", "-1"))
    _raises(gavel_maxmin, W, [1, 1], caps=[1, math.nan], must_contain=("caps[1]", "nan"))


def test_empty_m_and_ragged_w():
    _raises(oef_noncoop, W, [], must_contain=("m", "k >= 1"))
    _raises(oef_noncoop, [[1, 2], [1, 2, 3]], [1, 1], must_contain=("W[1]", "length k=2"))
    _raises(oef_noncoop, [[1, "x"]], [1, 1], must_contain=("W",))
