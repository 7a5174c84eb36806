"""The guardrails on the demo (issue 31): the demo's open month (November 2026 up to
2026-11-12T12:00Z) has one planted anomaly, hooli's gpt-5 spend tripled on 2026-11-11, and a budgets
book of which initech's runs out; `ledger alerts` finds exactly those, October's run is unchanged, and
the dashboard shows them: a banner on every page and the Budgets page with a burn-down per budget."""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from dashboard_support import assert_shows, demo_month, metrics, page, table
from typer.testing import CliRunner

AS_OF = "2026-11-12T12:00:00Z"


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> Path:
    return demo_month(tmp_path_factory)


@pytest.fixture(scope="module")
def demo_alerts(demo_home) -> dict:
    from ledger.cli import app

    r = CliRunner().invoke(app, ["alerts", "--as-of", AS_OF, "--json"],
                           env={"LEDGER_HOME": str(demo_home), "LEDGER_DATABASE_URL": None})
    assert r.exit_code == 3, (r.stdout, r.stderr)
    return json.loads(r.stdout)


@pytest.fixture
def demo(demo_home, monkeypatch) -> Path:
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(demo_home))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    monkeypatch.delenv("LEDGER_DASHBOARD_LOCALE", raising=False)
    yield demo_home
    store.dispose_engines()


def test_the_demos_planted_anomaly_is_the_one_found(demo_alerts):
    assert [(a["tenant"], a["model"], a["day"], a["partial_day"]) for a in demo_alerts["anomalies"]] == [
        ("hooli", "gpt-5", "2026-11-11", False)]
    (a,) = demo_alerts["anomalies"]
    assert Decimal(a["spend"]) > 3 * Decimal(a["baseline"]) and a["weeks"] == 8
    fired = {(b["tenant"], b["product"], b["model"]): b for b in demo_alerts["budgets"] if b["alerts"]}
    assert list(fired) == [("initech", None, None)] and fired[("initech", None, None)]["alerts"] == ["runs_out"]
    assert demo_alerts["fired"] == 2 and demo_alerts["status"] == "PROVISIONAL"


def test_the_demo_before_the_planted_day_is_quiet_for_anomalies(demo_home):
    from ledger.cli import app

    r = CliRunner().invoke(app, ["alerts", "--as-of", "2026-11-11T00:00:00Z", "--json"],
                           env={"LEDGER_HOME": str(demo_home), "LEDGER_DATABASE_URL": None})
    assert json.loads(r.stdout)["anomalies"] == []


def test_octobers_run_is_unchanged_by_the_open_month(demo_home):
    from ledger import store
    from ledger.runs import current_run

    with store.session(f"sqlite:///{demo_home / 'ledger.db'}") as s:
        start, end = store.month_bounds("2026-10")
        assert current_run(s, start=start, end=end).total == Decimal("54486.225218")


def test_the_budgets_page_shows_the_cli_numbers_and_a_burn_down_per_budget(demo, demo_alerts):
    at = page("pages/budgets.py")
    tiles = metrics(at, "bu_tiles")
    assert tiles == {"Budgets": str(len(demo_alerts["budgets"])), "Alerts fired": "2", "Anomalies": "1"}
    frame = table(at, "bu_budgets").set_index("budget")
    for b in demo_alerts["budgets"]:
        label = " ".join(f"{k}={b[k]}" for k in ("tenant", "product", "model") if b[k])
        assert_shows(frame.loc[label, "spent"], b["spent_to_date"])
        assert_shows(frame.loc[label, "projected"], b["projected_month_end"])
        assert frame.loc[label, "runs out"] == (b["runs_out_on"] or "—")
    assert all(at.get_by_key(f"bu_burndown_{i}") is not None for i in range(len(demo_alerts["budgets"])))
    anomalies = table(at, "bu_anomalies")
    assert list(anomalies["day"]) == ["2026-11-11"] and list(anomalies["tenant"]) == ["hooli"]


def test_every_page_shows_the_alerts_banner(demo):
    at = page("pages/unit_economics.py")
    (banner,) = at.get_by_key("alerts_banner").warning
    assert "2 alerts (provisional, 2026-11 as of 2026-11-12 12:00 UTC)" in banner.value
    assert "initech runs out on 2026-11-25" in banner.value and "hooli on gpt-5" in banner.value


def test_an_empty_ledger_has_no_banner_and_a_hint_on_the_budgets_page(tmp_path, monkeypatch):
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    store.init_store()
    store.dispose_engines()
    at = page("pages/budgets.py")
    assert "ledger budgets load" in at.info[0].value and not at.warning
    store.dispose_engines()
