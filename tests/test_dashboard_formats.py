"""One number format on the dashboard: money at the currency's decimals, grouped; a column of
per-unit amounts at one rule, the CLI's (six decimals when all are below one unit, else the currency's);
percentages with one decimal; charts with the currency on their axes in the sidebar's locale; and
column widths that hold every cell where the grid's sampling would cut one."""
from __future__ import annotations

import json
import sys
from decimal import Decimal as D

import pandas as pd
import pytest
from dashboard_support import ROOT, demo_month, page

sys.path.insert(0, str(ROOT / "dashboards"))  # the pages import their helpers as `pages._...`, as Streamlit runs them

from pages._formats import chart_locale, formats  # noqa: E402
from pages._widths import autosized, column_widths, text_width  # noqa: E402


def test_money_at_the_currency_decimals_half_even_and_grouped():
    assert formats("en_US", "USD").money(D("54486.225")) == "$54,486.22"  # 0.225 -> 0.22 (half-even)
    assert formats("en_US", "USD").money(D("54486.235")) == "$54,486.24"
    assert formats("de_DE", "USD").money(D("54486.225")) == "54.486,22\xa0$"
    assert formats("en_US", "JPY").money(D("1234.5")) == "¥1,234"  # the yen has no minor unit (half-even)
    assert formats("en_US", "USD").money(None) == "—"


def test_a_column_of_unit_costs_takes_one_rule():
    f = formats("en_US", "USD")
    # all below $1: six decimals each, trailing zeros kept so the column lines up
    assert f.unit_column([D("0.05"), D("0.096655"), None]) == ["$0.050000", "$0.096655", "—"]
    # one at $1 or more: the whole column at the currency's two decimals
    assert f.unit_column([D("31.1849"), D("0.05")]) == ["$31.18", "$0.05"]
    assert f.unit_money(D("0.58772")) == "$0.587720" and f.unit_money(D("26.2")) == "$26.20"
    assert formats("de_DE", "EUR").unit_column([D("0.0967")]) == ["0,096700\xa0€"]
    # the one precision rule of unit costs on every surface: the CLI's tables write the same digits
    from ledger.formats import unit_costs

    for column in ([D("0.05"), D("0.096655"), None], [D("31.1849"), D("0.05")], [D("0.0000015")]):
        assert [c.removeprefix("$") for c in f.unit_column(column)] == unit_costs(column)


def test_percentages_and_counts():
    f = formats("en_US", "USD")
    assert (f.pct(D("0.0273")), f.pct(D("0.466")), f.count(92705)) == ("2.7%", "46.6%", "92,705")
    assert formats("de_DE", "USD").pct(D("0.0273")) == "2,7\xa0%"
    assert (f.plural(1, "hour"), f.plural(2, "hour"), f.plural(1024, "point")) == ("1 hour", "2 hours", "1,024 points")


def test_the_chart_locale_is_the_tables_locale():
    assert chart_locale("en_US", "USD") == {"decimal": ".", "thousands": ",", "grouping": [3], "currency": ["$", ""]}
    assert chart_locale("de_DE", "USD") == {"decimal": ",", "thousands": ".", "grouping": [3],
                                            "currency": ["", "\xa0$"]}
    assert chart_locale("de_DE", "EUR")["currency"] == ["", "\xa0€"]
    assert chart_locale("en_IN", "USD")["grouping"] == [3, 2]  # 12,34,567


def test_the_grid_would_cut_a_wide_cell_past_its_sample_and_gets_a_width_for_it():
    # 13 rows: the grid measures rows 0-8 and the last; row 10 is wider than all of them
    cells = ["gpu * hour"] * 13
    cells[10] = "gpu * second"
    frame = pd.DataFrame({"per": cells, "sku": ["H100-SXM-80GB"] * 13})
    need = text_width("gpu * second") + 16
    assert autosized("per", cells) < need  # what the grid would draw: 'gpu * seco…'
    widths = column_widths(frame)
    assert list(widths) == ["per"] and need <= widths["per"] <= need + 4
    # the widest cell in the sample: the grid sizes it itself, no width is set
    assert column_widths(pd.DataFrame({"per": ["gpu * second", *["gpu * hour"] * 12]})) == {}
    # among more than 5 samples, one at least twice their mean is left out by the grid: a width is set
    assert "x" in column_widths(pd.DataFrame({"x": ["a"] * 6 + ["a much, much longer cell than the others"]}))


@pytest.fixture
def demo(tmp_path_factory, monkeypatch):
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(demo_month(tmp_path_factory)))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    monkeypatch.delenv("LEDGER_DASHBOARD_LOCALE", raising=False)
    yield
    store.dispose_engines()


def chart_spec(at, key: str) -> dict:
    (element,) = at.get_by_key(key).children.values()
    assert element.type == "vega_lite_chart"
    return json.loads(element.proto.spec)


def test_money_axes_carry_the_currency_in_the_sidebar_locale(demo):
    at = page()  # the app as served: unit economics, in en_US
    spec = chart_spec(at, "ue_daily")
    assert spec["encoding"]["y"]["axis"] == {"format": "$,.2~f", "title": "cost (USD)"}
    assert spec["config"]["locale"]["number"]["currency"] == ["$", ""]
    at.selectbox(key="locale").set_value("de_DE").run()
    spec = chart_spec(at, "ue_daily")
    assert spec["config"]["locale"]["number"] == {"decimal": ",", "thousands": ".", "grouping": [3],
                                                  "currency": ["", "\xa0$"]}  # the axis reads 2.500 $
    for name, key, axis in (("pages/tenants.py", "tn_trend", "y"), ("pages/forecast_actual.py", "fa_chart", "x")):
        at = page(name)
        assert chart_spec(at, key)["encoding"][axis]["axis"]["format"] == "$,.2~f"
        assert chart_spec(at, key)["encoding"][axis]["axis"]["title"].endswith("(USD)")


def test_number_columns_are_right_aligned(demo):
    at = page("pages/unit_economics.py")
    config = {**json.loads(at.get_by_key("ue_by_tenant").dataframe[0].proto.columns),  # the table's two parts
              **json.loads(at.get_by_key("ue_by_tenant_2").dataframe[0].proto.columns)}
    aligned = {name for name, c in config.items() if c.get("alignment") == "right"}
    assert aligned == {"cost", "own cost per success", "successes", "failures", "success rate", "failed work",
                       "per 1M tokens", "active tokens"}
