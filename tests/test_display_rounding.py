"""Display rounding: a printed column adds up to its printed total (hand-worked and properties)."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.formats import display_column, display_difference, display_groups, display_table, money_column
from ledger.money import quantize

D = Decimal

amounts = st.decimals(min_value=D("-1000000"), max_value=D("1000000"), places=6,
                      allow_nan=False, allow_infinity=False)


def test_the_five_tenants_add_up_to_the_printed_total():
    # Each alone rounds to x.xx half to even: 3332.80 + 3332.80 + 3332.80 + 3332.80 + 3332.80 = 16,664.00
    # (exact 3332.802 each, Σ 16664.01): five cents of 0.002 make one cent the total shows.
    cells, total = display_column([D("3332.802")] * 5)
    assert total == D("16664.01")
    assert sum(cells) == total
    # the first row (ties on remainder and size go to the earlier row) carries the cent
    assert cells == [D("3332.81"), D("3332.80"), D("3332.80"), D("3332.80"), D("3332.80")]


def test_a_value_at_two_places_is_shown_as_it_is_and_none_stays_none():
    cells, total = display_column([D("10.00"), None, D("0.333333"), D("0.333333"), D("0.333334")])
    assert cells == [D("10.00"), None, D("0.33"), D("0.33"), D("0.34")]  # largest remainder: .4 > .3333
    assert total == D("11.00")


def test_negative_values_round_down_toward_minus_infinity():
    cells, total = display_column([D("-1.005"), D("2.333")])  # Σ 1.328 → 1.33
    assert cells == [D("-1.00"), D("2.33")] and total == D("1.33")


def test_money_column_text():
    assert money_column([D("3333.333333")] * 3) == (["3,333.34", "3,333.33", "3,333.33"], "10,000.00")


def test_a_forecast_error_is_the_difference_of_the_printed_totals():
    # 54486.225218 prints 54,486.23, 52122.884 prints 52,122.88: the error prints 2,363.35 (not 2,363.34)
    assert display_difference(D("54486.225218"), D("52122.884")) == (D("54486.23"), D("52122.88"), D("2363.35"))


def test_a_total_given_from_above_must_be_within_reach():
    with pytest.raises(ValueError, match="not the sum"):
        display_column([D("1.001"), D("1.001")], total=D("2.50"))


@given(st.lists(st.one_of(st.none(), amounts), max_size=30), st.integers(min_value=0, max_value=4))
def test_any_column_adds_up_to_its_correctly_rounded_total(values, places):
    cells, total = display_column(values, places)
    unit = D(1).scaleb(-places)
    exact = sum((v for v in values if v is not None), D(0))
    assert total == quantize(exact, unit)
    assert sum((c for c in cells if c is not None), D(0)) == total
    for v, c in zip(values, cells):
        assert (v is None) == (c is None)
        if v is not None:
            assert abs(c - v) < unit  # rounded down or up, never further
            assert c == c.quantize(unit)
    assert display_column(values, places) == (cells, total)  # deterministic


@given(st.lists(st.lists(amounts, max_size=4), max_size=5))
def test_groups_add_up_at_every_level(groups):
    cells, subtotals, total = display_groups(groups)
    assert sum(subtotals, D(0)) == total
    assert total == quantize(sum((v for g in groups for v in g), D(0)), D("0.01"))
    for g, s in zip(cells, subtotals):
        assert sum(g, D(0)) == s


def test_acme_categories_add_up_to_its_printed_cost():
    # acme's categories of the demo month, each rounded alone, print 2,909.26 beside a cost of 2,909.27
    acme = [D("616.351736"), D("25.047907"), D("133.700000"), D("0.690564"), D("79.030684"), D("56.613030"),
            D("614.160400"), D("1280.194153"), D("103.479760")]
    assert sum(quantize(v, D("0.01")) for v in acme) == D("2909.26")
    cells, row_totals, col_totals, total = display_table([acme, [D("0.004"), D("0.004")]])
    assert row_totals[0] == D("2909.27") == sum(cells[0]) and total == D("2909.28")
    assert col_totals == [cells[0][j] + cells[1][j] for j in range(len(acme))]


def test_a_printed_difference_may_ask_one_cent_beyond_the_rounded_down_values():
    # actual 1.015 prints 1.02, forecast 0.005 prints 0.00: the error prints 1.02 where its drivers
    # (1.00 + 0.01 exactly) add up to 1.01; the value with the largest remainder takes the cent
    assert display_column([D("1.00"), D("0.01")], total=D("1.02")) == ([D("1.01"), D("0.01")], D("1.02"))


@given(st.lists(st.lists(amounts, min_size=3, max_size=3), max_size=6))
def test_any_table_adds_up_along_rows_and_columns(rows):
    cells, row_totals, col_totals, total = display_table(rows)
    unit = D("0.01")
    assert total == quantize(sum((v for r in rows for v in r), D(0)), unit)
    assert sum(row_totals, D(0)) == total == sum(col_totals, D(0))
    for r, c, t in zip(rows, cells, row_totals):
        assert sum(c, D(0)) == t and abs(t - sum(r, D(0))) < unit
        assert all(abs(a - b) < unit for a, b in zip(r, c))
    for j, t in enumerate(col_totals):
        assert sum((c[j] for c in cells), D(0)) == t
        assert abs(t - sum((r[j] for r in rows), D(0))) < unit


@given(st.lists(st.lists(amounts, min_size=2, max_size=2), min_size=1, max_size=5), st.integers(-1, 1))
def test_a_table_takes_a_total_one_cent_off(rows, off):
    want = quantize(sum((v for r in rows for v in r), D(0)), D("0.01")) + off * D("0.01")
    cells, row_totals, col_totals, total = display_table(rows, total=want)
    assert total == want == sum(row_totals, D(0)) == sum(col_totals, D(0))
    assert [sum(c, D(0)) for c in cells] == row_totals
