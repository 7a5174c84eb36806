"""The What if page under Streamlit's AppTest on the demo month: the shipped scenario and one built in the
page, each beside the run, with the numbers of ``ledger whatif --json`` (nothing stored)."""
from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import pytest
from dashboard_support import ROOT, cli, demo_month, metrics, page, shown, table

SCENARIO = ROOT / "scenarios" / "2026-10-agent.toml"


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory):
    return demo_month(tmp_path_factory)


@pytest.fixture
def demo(demo_home, monkeypatch):
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(demo_home))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    monkeypatch.delenv("LEDGER_DASHBOARD_LOCALE", raising=False)
    yield demo_home
    store.dispose_engines()


def test_the_shipped_scenario_shows_the_clis_numbers_and_stores_nothing(demo):
    doc = cli(demo, "whatif", "--period", "2026-10", "--scenario", str(SCENARIO), "--no-store")
    at = page("pages/whatif.py")
    assert at.title[0].value == "What if · SCENARIO"
    tiles = metrics(at, "wi_tiles")
    assert shown(tiles["Actual (the run)"]) == Decimal(doc["actual_total"]).quantize(Decimal("0.01"))
    assert shown(tiles["SCENARIO"]) == Decimal(doc["scenario_total"]).quantize(Decimal("0.01"))
    assert tiles["Sizing"] == doc["status"] == "VERDICT"
    rows = table(at, "wi_table")
    assert list(rows["tenant"]) == [r["tenant"] for r in doc["tenants"]]
    assert [shown(x) for x in rows["SCENARIO"]] == \
        [Decimal(r["scenario_cost"]).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN) for r in doc["tenants"]]
    assert "difference %" in list(table(at, "wi_table_2").columns) or "successes" in list(table(at, "wi_table_2").columns)
    assert at.get_by_key("wi_chart")
    from ledger import store
    from ledger.whatif.store import list_scenarios

    with store.session() as s:
        assert list_scenarios(s) == []


def test_a_scenario_built_in_the_page_reroutes(demo):
    at = page("pages/whatif.py")
    at.radio(key="wi_source").set_value("build one here").run()
    assert not at.exception, [e.message for e in at.exception]
    tiles = metrics(at, "wi_tiles")
    # every agent gpt-5 request at claude-sonnet-4-5 (list prices 3 / 0.30 / 15 against 1.25 / 0.125 / 10): dearer
    assert shown(tiles["SCENARIO"]) > shown(tiles["Actual (the run)"])
    at.radio(key="wi_by").set_value("model").run()
    assert "claude-sonnet-4-5" in list(table(at, "wi_table")["model"])


def test_an_empty_ledger_shows_guidance(tmp_path, monkeypatch):
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    store.init_store()
    store.dispose_engines()
    at = page("pages/whatif.py")
    assert "ledger demo" in at.info[0].value and not at.error
    store.dispose_engines()
