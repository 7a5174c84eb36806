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


# ---- the table of known units (answered without pint) agrees with pint ------------------------------

def _pint_dims(expr: str) -> dict[str, int]:
    return {d: int(e) for d, e in units.parse(expr).dimensionality.items()}


def _close(exact: Decimal, pints: Decimal) -> bool:
    """The table's exact value beside pint's, which its Decimal context rounds to 28 significant
    digits on the way (a month squared is 6915848039999.999999999999999 there)."""
    return exact == pints or abs(exact - pints) <= abs(pints) * Decimal("1e-26")


@pytest.mark.parametrize("name", sorted(units.KNOWN))
def test_each_known_unit_is_pints_size_and_dimension(name):
    size, dim = units.KNOWN[name]
    q = units.parse(name)
    assert _pint_dims(name) == {dim: 1}
    assert Decimal(str(q.to_base_units().magnitude)) == size
    assert units.known(name) is not None


def _shipped_unit_texts() -> set[str]:
    """Every `per`, `unit` and `term` of the shipped price books, the examples and the scenarios."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    found = set()
    for folder in ("pricebooks", "examples", "scenarios"):
        for path in (root / folder).rglob("*.toml"):
            found |= set(re.findall(r'^\s*(?:per|unit|term)\s*=\s*"([^"]*)"', path.read_text(encoding="utf-8"), re.M))
    return found


def test_every_unit_of_the_shipped_books_and_examples_is_known_and_agrees_with_pint():
    texts = _shipped_unit_texts()
    assert {"gpu * hour", "1e6 * token", "GB * month", "8760 hour"} <= texts
    for expr in sorted(texts):
        k = units.known(expr)
        assert k is not None, f"{expr!r} goes to pint: add its names to units.KNOWN"
        q = units.parse(expr)
        assert units.dimensions(expr) == _pint_dims(expr), expr
        assert units.magnitude(expr) == q.magnitude, expr
        assert k[0] * k[2] == Decimal(str(q.to_base_units().magnitude)), expr


def test_the_known_units_answer_as_pint_on_random_products():
    """Products of scales and known names (with ``*`` or a space), any order: the same dimensions,
    scale and size as pint's, and a duration in a per-time unit equal to pint's factor."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    names = sorted(units.KNOWN)
    scale = st.sampled_from(["1", "1000", "1e6", "1e5", "2.5", "8760", "0.5"])
    part = st.one_of(st.sampled_from(names), scale)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(part, min_size=1, max_size=4), st.booleans())
    def agree(parts, spaced):
        expr = (" " if spaced else " * ").join(parts)
        k = units.known(expr)
        if not any(p in units.KNOWN for p in parts):
            assert k is None  # no name: pint says what it is
            return
        q = units.parse(expr)
        assert units.dimensions(expr) == _pint_dims(expr)
        assert units.magnitude(expr) == q.magnitude
        assert _close(k[0] * k[2], Decimal(str(q.to_base_units().magnitude)))

    agree()


@pytest.mark.parametrize("term, per", [("8760 hour", "gpu * hour"), ("8760 hour", "gpu * second"),
                                       ("365 day", "gpu * hour"), ("1 year", "gpu * hour"), ("30 day", "GB * month"),
                                       ("1 week", "1000 * gpu * hour"), ("1 minute", "gpu * hour"),
                                       ("8760 hour", "GiB * day")])
def test_a_duration_in_a_per_time_unit_is_pints_factor(term, per):
    assert _close(units.duration_in(term, per), units.factor(term, units.time_part(per)))


@pytest.mark.parametrize("expr", ["1e6 * token / hour", "token ** 2", "furlong", "1000", "* token", "token *",
                                  "gpu*hour", "USD", "1e999999999 * token", "1e99999999999999 * gpu * hour"])
def test_what_the_table_does_not_know_goes_to_pint(expr):
    if expr == "gpu*hour":  # no spaces around * is still a product of known names
        assert units.known(expr) is not None
        return
    assert units.known(expr) is None
    try:
        expected = _pint_dims(expr)
    except UnitError:
        with pytest.raises(UnitError):
            units.dimensions(expr)
        return
    assert units.dimensions(expr) == expected


@pytest.mark.parametrize("value", [None, 5, ["token"], {"a": 1}])
def test_what_is_not_text_is_refused_as_before(value):
    assert units.known(value) is None
    with pytest.raises(UnitError):
        units.dimensions(value)
