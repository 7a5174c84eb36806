"""Units: one pint registry where tokens, requests, calls, spans and GPUs never convert into each other."""
from __future__ import annotations

from decimal import Decimal
from itertools import combinations

import pytest

from ledger import units
from ledger.units import UnitError

D = Decimal

#: One unit of each dimension the ledger meters; no two may ever convert into each other.
DISTINCT = ["token", "request", "call", "span", "gpu", "byte", "second", "gpu * hour"]


@pytest.mark.parametrize("a, b", list(combinations(DISTINCT, 2)))
def test_resources_are_their_own_dimensions(a, b):
    assert not units.is_dimension(a, b)
    with pytest.raises(UnitError, match="cannot convert"):
        units.factor(a, b)
    with pytest.raises(UnitError, match="cannot convert"):
        units.factor(b, a)


@pytest.mark.parametrize("expr, dims", [
    ("token", "[token]"), ("request", "[request]"), ("call", "[call]"), ("span", "[span]"), ("gpu", "[gpu]"),
    ("GB", "[information]"), ("GiB", "[information]"), ("bit", "[information]"),
    ("gpu * hour", "[gpu] * [time]"),
])
def test_dimensionality(expr, dims):
    assert units.dimensionality(expr) == dims


@pytest.mark.parametrize("alias, unit", [("tokens", "token"), ("tok", "token"), ("requests", "request"),
                                         ("req", "request"), ("calls", "call"), ("spans", "span"),
                                         ("gpus", "gpu")])
def test_plural_and_short_names(alias, unit):
    assert units.factor(alias, unit) == 1


def test_gb_and_gib_are_distinct_and_convert_exactly():
    # 1 GB = 1e9 bytes, 1 GiB = 2**30 bytes: 1e9 / 2**30 = 0.931322574615478515625 exactly
    assert units.factor("GB", "GiB") == D("0.931322574615478515625")
    assert units.factor("GiB", "GB") == D("1.073741824")
    assert units.convert(D("3"), "GiB", "GB") == D("3.221225472")
    assert units.factor("GB", "GiB") != 1


def test_information_is_not_dimensionless():
    # pint itself counts bits as dimensionless; a GB price must never apply to a count of calls
    with pytest.raises(UnitError, match=r"cannot convert 'GB' \(\[information\]\) to 'call' \(\[call\]\)"):
        units.factor("GB", "call")


@pytest.mark.parametrize("a, b, f", [
    ("1e6 * token", "token", D(1_000_000)),
    ("token", "1e6 * token", D("0.000001")),
    ("gpu * hour", "gpu * second", D(3600)),
    ("8 * gpu * hour", "gpu * hour", D(8)),
    ("TB", "GB", D(1000)),
    ("byte", "GB", D("1e-9")),
])
def test_factor_is_an_exact_decimal(a, b, f):
    got = units.factor(a, b)
    assert isinstance(got, Decimal)
    assert got == f


def test_converted_quantities_are_rounded_only_when_asked():
    assert units.convert(D("1"), "GB", "GiB") == D("0.931322574615478515625")
    assert units.convert(D("1"), "GB", "GiB", exp=D("0.000001")) == D("0.931323")
    # 1/60 is not a finite decimal: rounding is explicit, and exact multiples come out exact
    assert units.convert(D("1"), "gpu * minute", "gpu * hour", exp=D("0.000001")) == D("0.016667")
    assert units.convert(D("90"), "gpu * minute", "gpu * hour", exp=D("0.000001")) == D("1.500000")
    # 2.5000005 million tokens = 2500000.5 tokens; to whole tokens, half to even: 2500000
    assert units.convert(D("2.5000005"), "1e6 * token", "token", exp=D("1")) == D("2500000")


def test_parse_keeps_the_scale_written():
    q = units.parse("1e6 * token")
    assert q.magnitude == D(1_000_000)
    assert str(q.dimensionality) == "[token]"


@pytest.mark.parametrize("expr, message", [
    ("", "empty unit expression"),
    ("   ", "empty unit expression"),
    ("furlongz", "unknown unit 'furlongz'"),
    ("token +", "cannot parse unit 'token \\+'"),
    ("3", "unit '3' has no dimension"),
])
def test_parse_refuses(expr, message):
    with pytest.raises(UnitError, match=message):
        units.parse(expr)


def test_unit_error_is_a_value_error():
    assert issubclass(UnitError, ValueError)


def test_one_registry():
    assert units.registry() is units.registry()
