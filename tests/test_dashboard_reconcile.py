"""The bill reconciliation page under Streamlit's AppTest, on the hand-worked month of test_reconcile:
the tiles and tables show `ledger reconcile --json`'s figures (rounded half-even to the cents shown);
an empty ledger shows what to run."""
from __future__ import annotations

import json
import shutil
from decimal import Decimal as D

import pytest
from streamlit.testing.v1 import AppTest

from dashboard_support import app
from test_dashboard_apptest import assert_shows, metrics, table
from test_reconcile import BILL, MAP, build_month, cli

pytestmark = pytest.mark.store
PAGE = "pages/reconcile.py"


@pytest.fixture
def month(ledger_home, tmp_path) -> dict:
    return build_month(tmp_path)


def open_page() -> AppTest:
    at = app()  # Streamlit's component registry shared with the session's other AppTests
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_page_shows_the_reconcile_figures(month, ledger_home):
    cli("ingest", "bill", str(BILL))
    shutil.copy(MAP, ledger_home / "bill-map.toml")
    doc = json.loads(cli("reconcile", "--period", "2026-10", "--json"))
    at = open_page()
    tiles = metrics(at, "rc_tiles")
    total = doc["total"]
    assert_shows(tiles["Priced"], total["priced"])
    assert_shows(tiles["Billed"], total["billed"])
    assert_shows(tiles["Variance (billed − priced)"], total["variance"])
    assert tiles["Variance (billed − priced)"].startswith("-")
    assert_shows(tiles["Unmatched bill cost"], total["unmatched"])
    assert_shows(tiles["Trued-up total"], total["trued_up_total"])
    shown = table(at, "rc_resources")
    rows = dict(zip(shown["resource"], shown["difference"], strict=True))
    assert set(rows) == {"pool h100-chat", "provider openai", "category egress", "total"}
    # a totals row: each money column adds up to it as shown (docs/exports.md, "Display rounding")
    assert list(shown["resource"])[-1] == "total"
    for col in ("priced", "billed", "difference"):
        *parts, last = shown[col]
        assert sum(_amount(v) for v in parts if v != "—") == _amount(last), (col, parts, last)
    assert _amount(shown["priced"].iloc[-1]) == sum(D(r["priced"]) for r in doc["resources"]).quantize(D("0.01"))
    assert_shows(rows["pool h100-chat"], "-168.12")
    assert rows["provider openai"] == "—"
    unmatched = table(at, "rc_unmatched")
    assert sorted(unmatched["service_name"]) == ["Amazon Simple Storage Service", "Savings Plans for AWS Compute usage"]
    drift = table(at, "rc_drift")
    mini = drift[drift["model"] == "gpt-5-mini"].iloc[0]
    assert_shows(mini["difference"], "0.05") and assert_shows(mini["ours (book)"], D("0.45"))


def _amount(text: str) -> D:
    """``-$168.12`` as -168.12."""
    return D("".join(ch for ch in text if ch.isdigit() or ch in ".-"))


def test_without_a_map_the_page_asks_for_one(month, ledger_home):
    at = open_page()
    assert any("Upload a bill map (TOML), or keep one as `bill-map.toml` in the ledger home" in i.value
               for i in at.info)


def test_an_empty_ledger_shows_guidance(tmp_path, monkeypatch):
    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    at = open_page()
    assert at.info and "ledger demo" in at.info[0].value
    assert not (tmp_path / "home").exists()
