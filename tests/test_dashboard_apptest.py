"""The dashboard pages under Streamlit's AppTest, on the demo month (October 2026) built once per module.

Every page is opened, widgets are found by their `key=`, and the numbers shown are checked against
the CLI's ``--json`` for the same run, plan or date: a number shown with d decimals must be the CLI's
exact decimal rounded half-even to d decimals (``$54,486.23`` for ``54486.225218``). An empty ledger
must show how to load data or run the demo on every page, never a traceback, and stay empty.
"""
from __future__ import annotations

import csv
import io
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from dashboard_support import (APP, PERIOD, PLAN, ROOT, assert_near, assert_shows, cli, decimals, demo_month, metrics,
                               page, shown, table)
from typer.testing import CliRunner

from ledger.formats import UNIT_COST_PLACES

__all__ = ["APP", "assert_shows", "cli", "metrics", "page", "shown", "table"]  # test_dashboard_reconcile reads them
PAGES = ("pages/unit_economics.py", "pages/reconcile.py", "pages/tenants.py", "pages/trend.py", "pages/workload.py",
         "pages/sizing_budget.py", "pages/forecast_actual.py", "pages/price_books.py", "pages/whatif.py",
         "pages/budgets.py")


# ---- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> Path:
    """The demo month, built once per test session by the demo's Python API (`ledger demo`)."""
    return demo_month(tmp_path_factory)


@pytest.fixture
def demo(demo_home, monkeypatch) -> Path:
    """Point the dashboard (and the CLI) at the demo home for one test."""
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(demo_home))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    monkeypatch.delenv("LEDGER_DASHBOARD_LOCALE", raising=False)
    yield demo_home
    store.dispose_engines()


def budget_tab(at):
    """The sizing page with its budget tab open (only the open tab runs)."""
    at.session_state["sz_tab"] = "Budget from a plan"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


# ---- an empty ledger ----------------------------------------------------------------------------

@pytest.mark.parametrize("initialized", [False, True], ids=["no-ledger", "initialized-no-runs"])
def test_an_empty_ledger_shows_guidance_on_every_page_and_stays_empty(tmp_path, monkeypatch, initialized):
    from ledger import store

    home = tmp_path / "home"
    monkeypatch.setenv("LEDGER_HOME", str(home))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    if initialized:
        store.init_store()
        store.dispose_engines()
    before = sorted(p.name for p in home.rglob("*")) if home.exists() else None
    for name in PAGES:
        at = page(name)
        if name in ("pages/unit_economics.py", "pages/reconcile.py", "pages/tenants.py", "pages/forecast_actual.py"):
            guide = at.info[0].value
            assert "ledger demo" in guide and "ledger allocate --period" in guide
            assert ("no ledger in" in guide) != initialized
        assert not at.error, [e.value for e in at.error]
    # The pages that need no run still work: prices from the shipped books, sizing, budgets.
    at = page("pages/price_books.py")
    assert shown(metrics(at, "pb_tiles")["Prices in force"]) > 0
    at = page("pages/sizing_budget.py")
    assert at.get_by_key("sz_tiles").metric
    assert budget_tab(at).get_by_key("bg_tiles").metric
    store.dispose_engines()
    after = sorted(p.name for p in home.rglob("*")) if home.exists() else None
    assert after == before, "the dashboard wrote into the ledger home"


# ---- unit economics -----------------------------------------------------------------------------

def test_unit_economics_tiles_are_the_cli_numbers(demo):
    rep = cli(demo, "report", "unit-economics", "--period", PERIOD)
    at = page("pages/unit_economics.py")
    tiles = metrics(at, "ue_tiles")
    total = Decimal(rep["run_total"])
    # en_US, USD: the run total at the currency's two decimals, grouped
    assert tiles["Total cost"] == f"${total.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"
    assert_shows(tiles["Total cost"], total)
    successes = sum(r["tasks"]["success"] for r in rep["rows"])
    # all-in cost per successful task: the run total over every successful task of the period
    assert rep["cost_per_successful_task_all_in_denominator"] == successes
    assert Decimal(rep["cost_per_successful_task_all_in"]) == (total / successes).quantize(Decimal("0.000001"))
    assert_shows(tiles["All-in cost per successful task"], rep["cost_per_successful_task_all_in"])
    failed = sum(Decimal(r["failed_work"]) for r in rep["rows"])
    assert_shows(tiles["Failed-work share"], (failed / total).quantize(Decimal("0.0001")))
    un = rep["unattributed"]
    assert_shows(tiles["Idle reserve share"], (Decimal(un["idle_reserve"]) / total).quantize(Decimal("0.0001")))
    assert_shows(tiles["Idle slack share"], (Decimal(un["idle_slack"]) / total).quantize(Decimal("0.0001")))
    assert_shows(tiles["Unallocated"], un["unallocated"])
    kinds = table(at, "ue_kinds").set_index("kind")
    for kind in ("idle slack", "idle reserve", "unallocated"):
        assert_near(kinds.loc[kind, "amount"], un[kind.replace(" ", "_")])
    assert_near(kinds.loc["tenants", "amount"], total - sum(Decimal(v) for v in un.values()))
    # a totals row, the run total as the tile shows it; the kinds and their shares add up to it as shown
    assert kinds.loc["total", "amount"] == tiles["Total cost"] and kinds.loc["total", "share"] == "100.0%"
    for col in ("amount", "share"):
        assert sum(shown(v) for v in kinds[col].drop("total")) == shown(kinds.loc["total", col]), col


@pytest.mark.parametrize("by", ["tenant", "product"])
def test_cost_per_successful_task_tables_are_the_cli_rows(demo, by):
    rep = cli(demo, "report", "unit-economics", "--period", PERIOD, "--by", by)
    at = page("pages/unit_economics.py")
    # the table in two parts, side by side or one under the other (pages/_layout.py), each with the row's name
    first, second = table(at, f"ue_by_{by}"), table(at, f"ue_by_{by}_2")
    assert list(first[by]) == list(second[by])
    frame = first.join(second.drop(columns=[by]))
    assert list(frame.columns) == [by, "cost", "own cost per success", "successes", "failures", "success rate",
                                   "failed work", "per 1M tokens", "active tokens"]
    # the rows, then a totals row: its cost the tenants' part of "Who carries it", the costs display-
    # rounded to add up to it as shown (docs/exports.md), its counts the rows' sums
    totals, frame = frame.iloc[-1], frame.iloc[:-1]
    assert len(frame) == len(rep["rows"]) and totals[by] == "total"
    assert totals["cost"] == table(at, "ue_kinds").set_index("kind").loc["tenants", "amount"]
    assert sum(shown(v) for v in frame["cost"]) == shown(totals["cost"])
    for col, key in (("successes", "success"), ("failures", "failure")):
        assert shown(totals[col]) == sum(r["tasks"][key] for r in rep["rows"]), col
    assert shown(totals["active tokens"]) == sum(r["active_tokens"] for r in rep["rows"])
    notes = at.get_by_key(f"ue_by_{by}_notes").caption[0].value
    for row, want in zip(frame.to_dict("records"), rep["rows"], strict=True):
        # the demo run keeps idle on its own lines (policy separate): the lines with no product are the
        # charges shared over tenants, so that row is named for them
        assert row[by] == (want[by] or "shared charges")
        assert_near(row["cost"], want["cost"])
        assert_shows(row["successes"], want["tasks"]["success"])
        assert_shows(row["failures"], want["tasks"]["failure"])
        assert_shows(row["active tokens"], want["active_tokens"])
        own = row["own cost per success"]
        if want["cost_per_successful_task"] is None:
            reason = want["reasons"]["cost_per_successful_task"]
            assert own == "undefined" and f"undefined for {row[by]}: {reason}" in notes
        else:
            assert_shows(own, want["cost_per_successful_task"])
        if want["success_rate"] is not None:
            assert_shows(row["success rate"], want["success_rate"])
        if want["cost_per_1m_active_tokens"] is not None:
            assert_shows(row["per 1M tokens"], want["cost_per_1m_active_tokens"])
    # one rule per column: the own costs per success (all below $1 in the demo) at the unit-cost
    # decimals each (6, as the CLI's tables: ledger.formats), money at 2, percentages at 1
    defined = [v for v in frame["own cost per success"] if v != "undefined"]
    assert all(Decimal(r["cost_per_successful_task"]) < 1 for r in rep["rows"] if r["cost_per_successful_task"])
    assert {decimals(v) for v in defined} == {UNIT_COST_PLACES} == {6}
    assert {decimals(v) for v in frame["cost"]} == {2} and {decimals(v) for v in frame["success rate"] if v != "—"} == {1}
    if by == "product":
        none_row = next(r for r in rep["rows"] if r["product"] is None)
        assert "shared charges: what tenants carry on lines with no product: shared charges " in notes
        assert_shows(notes.split("shared charges \\$", 1)[1].split(" ")[0], none_row["cost"])


def test_both_costs_per_successful_task_are_named_with_their_definitions(demo):
    from ledger.reports import ALL_IN_DEFINITION, OWN_DEFINITION

    rep = cli(demo, "report", "unit-economics", "--period", PERIOD)
    all_in, total = rep["cost_per_successful_task_all_in"], rep["cost_per_successful_task_all_in_numerator"]
    at = page("pages/unit_economics.py")
    assert "All-in cost per successful task" in metrics(at, "ue_tiles")
    all_in_text, own_text = (m.value for m in at.get_by_key("ue_per_success_definitions").markdown)
    # "**All-in cost per successful task**: \$26.20 = run total \$131.00 ÷ 5 successful tasks. *All-in* = ..."
    assert all_in_text.startswith("**All-in cost per successful task**: ") and ALL_IN_DEFINITION in all_in_text
    shown_all_in, rest = all_in_text.split(": ", 1)[1].split(" = run total ", 1)
    assert_shows(shown_all_in, all_in)
    assert_shows(rest.split(" ÷ ")[0], total)
    assert f" ÷ {rep['cost_per_successful_task_all_in_denominator']:,} successful tasks" in rest
    assert own_text.startswith("**Cost per successful task (own cost)**") and OWN_DEFINITION in own_text

    at = page("pages/tenants.py")
    assert_shows(metrics(at, "tn_per_success")["All-in cost per successful task (whole run)"], all_in)
    texts = [m.value for m in at.get_by_key("tn_per_success_definitions").markdown]
    assert ALL_IN_DEFINITION in texts[0] and OWN_DEFINITION in texts[1]
    assert "cost per successful task (own cost)" in list(table(at, "tn_table")["metric"])


def test_period_and_run_selectors_and_provenance_name_the_run(demo):
    runs = cli(demo, "runs")
    rep = cli(demo, "report", "unit-economics", "--period", PERIOD)
    at = page("pages/unit_economics.py")
    assert at.selectbox(key="ue_period").value == PERIOD
    assert at.selectbox(key="ue_run").value == runs[0]["run_id"] == rep["run_id"]
    prov = dict(table(at, "ue_provenance").values.tolist())
    assert prov["run"] == rep["run_id"]
    assert prov["reporting currency"] == rep["currency"] == "USD"
    assert prov["price book versions"] == ", ".join(rep["price_books"])
    assert prov["success criteria"] == ", ".join(rep["success_criteria"])
    assert prov["period (UTC, end exclusive)"] == f"{rep['period']['start']} to {rep['period']['end']}"
    keys = {b.key for b in at.get_by_key("ue_downloads").download_button}
    assert keys == {"ue_xlsx", "ue_csv", "ue_report_csv"}


def test_the_period_close_is_said_under_the_run_picker_open_then_signed(demo, tmp_path, monkeypatch):
    """Issue 28 item 1: every run page says the period's close, "open" or "closed by NAME at T, final run R"."""
    import shutil

    from ledger import store
    from ledger.cli import app

    captions = [c.value for c in page("pages/tenants.py").caption]
    assert f"Period {PERIOD}: open" in captions
    home = tmp_path / "home"
    shutil.copytree(demo, home)
    monkeypatch.setenv("LEDGER_HOME", str(home))
    result = CliRunner().invoke(app, ["close", "--period", PERIOD, "--by", "Dana Reyes"],
                                env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    store.dispose_engines()
    [run] = [r for r in cli(home, "runs") if r["period"]["start"].startswith(PERIOD)]
    assert run["role"] == "final" and run["close"]["text"].startswith("closed by Dana Reyes at ")
    for path in ("pages/unit_economics.py", "pages/tenants.py", "pages/forecast_actual.py"):  # (reconcile: a map first)
        at = page(path)
        assert f"Period {PERIOD}: {run['close']['text']}" in [c.value for c in at.caption], path
    store.dispose_engines()


def test_a_superseded_run_can_be_picked_and_shows_its_own_numbers(demo, tmp_path, monkeypatch):
    """A second allocation of the period (idle shared) is the current run; the first stays readable."""
    import shutil

    from ledger import store
    from ledger.cli import app

    home = tmp_path / "home"
    shutil.copytree(demo, home)
    monkeypatch.setenv("LEDGER_HOME", str(home))
    result = CliRunner().invoke(app, ["allocate", "--period", PERIOD, "--idle", "share"],
                                env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    store.dispose_engines()
    runs = cli(home, "runs", "--period", PERIOD)
    assert len(runs) == 2
    newest, first = runs[0]["run_id"], runs[1]["run_id"]
    at = page("pages/unit_economics.py")
    assert at.selectbox(key="ue_run").value == newest and at.selectbox(key="ue_run").options[0].startswith(newest[:12])
    # idle policy share: no idle line of its own; the tiles say how much idle was shared over tenants
    shared = cli(home, "report", "unit-economics", "--run", newest)
    assert Decimal(shared["unattributed"]["idle_slack"]) == Decimal(shared["unattributed"]["idle_reserve"]) == 0
    lines = run_lines(home, newest)
    total = Decimal(shared["run_total"])
    assert sum(Decimal(ln["amount"]) for ln in lines) == total
    tiles = metrics(at, "ue_tiles")
    assert "Idle slack share" not in tiles and "Idle reserve share" not in tiles
    for kind in ("slack", "reserve"):
        amount = sum(Decimal(ln["amount"]) for ln in lines if ln["shared_from"] == f"idle_{kind}")
        assert amount > 0
        assert_shows(tiles[f"Idle {kind} share (shared over tenants)"], (amount / total).quantize(Decimal("0.0001")))
    own = at.get_by_key("ue_per_success_definitions").markdown[1].value
    assert "Under idle policy `share` idle slack and idle reserve are shared over the tenants" in own
    assert "stay on their own lines" not in own
    # the product-less row holds the shared charges and the shared idle, and is named for both
    no_product = [ln for ln in lines if ln["kind"] == "tenant" and not ln["product"]]
    charges = sum(Decimal(ln["amount"]) for ln in no_product if not ln["shared_from"])
    idle = sum(Decimal(ln["amount"]) for ln in no_product if ln["shared_from"])
    by_product = cli(home, "report", "unit-economics", "--run", newest, "--by", "product")
    none_row = next(r for r in by_product["rows"] if r["product"] is None)
    assert charges > 0 and idle > 0 and charges + idle == Decimal(none_row["cost"])
    frame = table(at, "ue_by_product").set_index("product")
    assert_near(frame.loc["shared charges", "cost"], none_row["cost"])
    notes = at.get_by_key("ue_by_product_notes").caption[0].value
    held = notes.split("what tenants carry on lines with no product: ", 1)[1]
    assert held.startswith("shared charges \\$") and " and shared idle \\$" in held
    assert_shows(held.split("shared charges \\$")[1].split(" ")[0], charges)
    assert_shows(held.split("shared idle \\$")[1].split(" ")[0], idle)
    # the first run (idle separate) stays readable, with its own numbers and words
    at.selectbox(key="ue_run").set_value(first).run()
    assert not at.exception
    old = cli(home, "report", "unit-economics", "--run", first)
    tiles = metrics(at, "ue_tiles")
    assert_shows(tiles["Total cost"], old["run_total"])
    assert_shows(tiles["Idle slack share"],
                 (Decimal(old["unattributed"]["idle_slack"]) / Decimal(old["run_total"])).quantize(Decimal("0.0001")))
    assert dict(table(at, "ue_provenance").values.tolist())["idle policy"] == "separate"
    assert "idle slack, idle reserve and unallocated charges stay on their own lines" in \
        at.get_by_key("ue_per_success_definitions").markdown[1].value
    store.dispose_engines()


def run_lines(home: Path, run_id: str) -> list[dict]:
    """The run's lines as `ledger export --run ID --csv` prints them."""
    from ledger.cli import app

    result = CliRunner().invoke(app, ["export", "--run", run_id, "--csv"],
                                env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_downloads_are_the_cli_exports(demo, tmp_path):
    """The download buttons serve ledger.dashboard's exports: the same bytes as `ledger export`."""
    from openpyxl import load_workbook

    from ledger import dashboard as dd
    from ledger.cli import app

    run_id = cli(demo, "runs")[0]["run_id"]
    out = tmp_path / "lines.csv"
    result = CliRunner().invoke(app, ["export", "--run", run_id, "--lines", str(out)],
                                env={"LEDGER_HOME": str(demo), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    with dd.reading() as s:
        data = dd.load_run_data(s, run_id=run_id)
    assert dd.allocation_lines_csv(data) == out.read_text(encoding="utf-8")
    wb = load_workbook(io.BytesIO(dd.allocation_workbook(data, locale="de_DE")))
    assert {"Lines", "By tenant", "By category", "Provenance"} <= set(wb.sheetnames)
    prov = {r[0]: r[1] for r in wb["Provenance"].iter_rows(min_row=2, values_only=True) if r[0]}
    assert prov["run"] == run_id and prov["locale"] == "de_DE"


def test_the_locale_chosen_in_the_sidebar_formats_money(demo):
    rep = cli(demo, "report", "unit-economics", "--period", PERIOD)
    at = page()  # the app as served: the sidebar of app.py around its default page, unit economics
    at.selectbox(key="locale").set_value("de_DE").run()
    assert not at.exception
    total = Decimal(rep["run_total"]).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    whole, cents = f"{total:,.2f}".split(".")
    assert metrics(at, "ue_tiles")["Total cost"] == f"{whole.replace(',', '.')},{cents}\xa0$"


def test_the_locale_given_to_ledger_dashboard_comes_first(demo, monkeypatch):
    monkeypatch.setenv("LEDGER_DASHBOARD_LOCALE", "fr_FR")  # what `ledger dashboard --locale fr_FR` passes on
    at = page()
    assert at.selectbox(key="locale").value == "fr_FR"
    share = metrics(at, "ue_tiles")["Failed-work share"]
    assert "," in share and share.endswith("\xa0%")  # French writes 2,7 % (comma, no-break space)


# ---- tenants ------------------------------------------------------------------------------------

def test_tenants_side_by_side_are_the_cli_numbers(demo):
    at = page("pages/tenants.py")
    picked = at.multiselect(key="tn_pick").value
    assert len(picked) == 3
    rep = cli(demo, "report", "tenants", "--period", PERIOD, "--tenants", ",".join(picked))
    rows = {r["tenant"]: r for r in rep["rows"]}
    frame = table(at, "tn_table").set_index("metric")
    for tenant in picked:
        want = rows[tenant]
        card = metrics(at, f"tn_card_{tenant}")
        assert_shows(card["Cost"], want["cost"])
        assert_shows(card["Cost per successful task (own cost)"], want["cost_per_successful_task"])
        assert_shows(card["Cost per 1M active tokens"], want["cost_per_1m_active_tokens"])
        assert_shows(card["Share of GPU"], want["share_of_gpu"])
        tasks = want["tasks"]
        failure_rate = (Decimal(tasks["failure"]) / (tasks["success"] + tasks["failure"])).quantize(Decimal("0.0001"))
        assert_shows(card["Task failure rate"], failure_rate)
        assert_shows(frame.loc["active tokens", tenant], want["active_tokens"])
        assert_shows(frame.loc["requests", tenant], want["requests"])
        assert_shows(frame.loc["success rate", tenant], want["success_rate"])
    # the biggest tenants by cost come first
    costs = sorted(rep["rows"], key=lambda r: -Decimal(r["cost"]))
    all_rows = cli(demo, "report", "tenants", "--period", PERIOD)["rows"]
    assert picked == [r["tenant"] for r in sorted(all_rows, key=lambda r: -Decimal(r["cost"]))][:3]
    assert [r["tenant"] for r in costs] == picked


def test_tenants_needs_two_and_compares_any_two(demo):
    at = page("pages/tenants.py")
    at.multiselect(key="tn_pick").set_value(["acme"]).run()
    assert not at.exception and "two or more" in at.info[0].value
    at.multiselect(key="tn_pick").set_value(["umbrella", "acme"]).run()
    assert not at.exception
    rep = cli(demo, "report", "tenants", "--period", PERIOD, "--tenants", "umbrella,acme")
    assert list(table(at, "tn_table").columns) == ["metric", "umbrella", "acme", "total (these tenants)"]
    for r in rep["rows"]:
        assert_shows(metrics(at, f"tn_card_{r['tenant']}")["Cost"], r["cost"])


def test_drill_down_from_a_tenant_to_its_products_models_and_lines_adds_up(demo):
    at = page("pages/tenants.py")
    at.selectbox(key="tn_drill_tenant").set_value("acme").run()
    assert not at.exception, [e.message for e in at.exception]
    cost = next(r["cost"] for r in cli(demo, "report", "tenants", "--period", PERIOD)["rows"] if r["tenant"] == "acme")
    products = table(at, "tn_drill_products")
    assert list(products["product"]) == ["agent", "chat", "code-assist", "search", "shared charges", "total"]
    assert_shows(products["cost"].iloc[-1], cost)  # the total row is acme's cost; the rows add up to it as printed
    assert sum(shown(v) for v in products["cost"].iloc[:-1]) == shown(products["cost"].iloc[-1])
    at.selectbox(key="tn_drill_product").set_value("agent").run()
    at.selectbox(key="tn_drill_model").set_value("gpt-5").run()
    assert not at.exception
    agent = next(r["cost"] for r in cli(demo, "report", "unit-economics", "--period", PERIOD, "--by", "product",
                                        "--tenants", "acme")["rows"] if r["product"] == "agent")
    models = table(at, "tn_drill_models")
    assert set(models["product"][:-1]) == {"agent"} and "gpt-5" in set(models["model"])
    assert_shows(models["cost"].iloc[-1], agent)
    lines = table(at, "tn_drill_lines")
    assert set(lines["model"]) == {"gpt-5"} and set(lines["product"]) == {"agent"}


def test_tenant_by_product_matrix_and_the_spread_add_up_to_the_tenants(demo):
    at = page("pages/tenants.py")
    rep = cli(demo, "report", "tenants", "--period", PERIOD)
    tenants_total = sum(Decimal(r["cost"]) for r in rep["rows"])
    grid = table(at, "tn_matrix")
    assert "shared charges" in grid.columns or "shared charges" in table(at, "tn_matrix_2").columns
    assert_near(grid.set_index("tenant").loc["all tenants", "agent"], sum(
        Decimal(r["cost"]) for r in cli(demo, "report", "unit-economics", "--period", PERIOD, "--by",
                                        "product")["rows"] if r["product"] == "agent"))
    at.toggle(key="tn_matrix_spread").set_value(True).run()
    assert not at.exception
    spread = cli(demo, "report", "unit-economics", "--period", PERIOD, "--by", "product", "--spread-shared")
    assert all(r["product"] is not None for r in spread["rows"])
    assert sum(Decimal(r["cost"]) for r in spread["rows"]) == tenants_total  # exactly, not to the cent
    shown_grid = table(at, "tn_matrix").set_index("tenant")
    for r in spread["rows"]:
        if r["product"] in shown_grid.columns:
            assert_near(shown_grid.loc["all tenants", r["product"]], r["cost"])  # display-rounded, adds up
    at = page("pages/unit_economics.py")
    at.toggle(key="ue_spread").set_value(True).run()
    assert not at.exception
    frame = table(at, "ue_by_product_spread").set_index("product")
    for r in spread["rows"]:
        assert_near(frame.loc[r["product"], "cost"], r["cost"])
    assert sum(shown(v) for v in frame["cost"].drop("total")) == shown(frame.loc["total", "cost"])
    assert "by the same rule" in at.get_by_key("ue_by_product_spread_notes").caption[0].value


def test_trend_page_is_the_cli_trend(demo):
    doc = cli(demo, "report", "trend", "--from", "2026-08", "--to", PERIOD)
    at = page("pages/trend.py")
    assert at.selectbox(key="tr_from").value == "2026-08" and at.selectbox(key="tr_to").value == PERIOD
    months = table(at, "tr_months")
    assert list(months["month"]) == ["2026-08", "2026-09", "2026-10"]
    for row, m in zip(months.to_dict("records"), doc["months"], strict=True):
        assert_shows(row["run total"], m["total"])
        assert_shows(row["all-in per success"], m["cost_per_successful_task_all_in"])
    assert_shows(metrics(at, "tr_tiles")[f"Run total {PERIOD}"], doc["months"][-1]["total"])
    parts = [table(at, "tr_tenants"), table(at, "tr_tenants_2")]  # the table in parts, whole at 1024 px
    per_tenant = parts[0].set_index("tenant").join([p.set_index("tenant") for p in parts[1:]])
    for m in doc["months"]:
        for r in m["rows"]:
            assert_near(per_tenant.loc[r["tenant"], m["month"]], r["cost"])  # each month's column adds up
    assert per_tenant.loc["hooli", "2026-08"] == "not in run"  # first seen in September
    # a range with a month that has no run says so
    at.selectbox(key="tr_from").set_value("2026-09").run()
    assert not at.exception and list(table(at, "tr_months")["month"]) == ["2026-09", "2026-10"]


# ---- sizing and budget --------------------------------------------------------------------------

def _curve_csv(curve, path: Path) -> Path:
    """A plan pool's curve as a curve CSV the CLI reads (same points, same workload shape)."""
    c = curve.context
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["concurrency", "tok_s_user", "output_tok_s", "ttft_ms", "isl", "osl", "gpus_per_replica"])
        for p in curve.points:
            w.writerow([repr(p.concurrency), repr(p.tok_s_user), "" if p.output_tok_s is None else repr(p.output_tok_s),
                        "" if p.ttft_ms is None else repr(p.ttft_ms), c.isl or "", c.osl or "",
                        c.gpus_per_replica or ""])
    return path


def test_sizing_of_each_plan_pool_is_the_cli_sizing(demo, tmp_path):
    """Picking a plan's pool takes its parameters; the table and tiles are `ledger size` on its curve."""
    from ledger.budget import load_plan

    at = page("pages/sizing_budget.py")
    assert at.radio(key="sz_source").value == "a plan's pool"
    at.selectbox(key="sz_plan").set_value(PLAN.name).run()
    pools = load_plan(PLAN).pools
    assert at.selectbox(key="sz_pool").options == [p.name for p in pools]
    for pool in pools:
        at.selectbox(key="sz_pool").set_value(pool.name).run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        state = {k: at.session_state[k] for k in ("sz_tpm", "sz_slas", "sz_gpr", "sz_util", "sz_failure", "sz_canary",
                                                  "sz_warm", "sz_device", "sz_region", "sz_option")}
        assert (state["sz_tpm"], state["sz_gpr"], state["sz_device"]) == \
            (float(pool.tpm), pool.gpus_per_replica, pool.device)
        day = at.date_input(key="sz_at").value
        doc = cli(demo, "size", "--curve", str(_curve_csv(pool.curve, tmp_path / f"{pool.name}.csv")),
                  "--tpm", f"{state['sz_tpm']}", "--sla", state["sz_slas"], "--gpus-per-replica", str(state["sz_gpr"]),
                  "--util", f"{state['sz_util']}", "--failure-reserve", str(state["sz_failure"]),
                  "--canary", str(state["sz_canary"]), "--warm", str(state["sz_warm"]), "--device", state["sz_device"],
                  "--region", state["sz_region"], "--purchase-option", state["sz_option"], "--at", day.isoformat(),
                  *(["--interpolate"] if pool.interpolate else []), *(["--repair"] if pool.repair else []))
        assert doc["status"] in at.get_by_key("sz_status").markdown[0].value
        frame = table(at, "sz_table")
        assert len(frame) == len(doc["rows"])
        for row, want in zip(frame.to_dict("records"), doc["rows"], strict=True):
            assert_shows(row["SLA tok/s/user"], Decimal(repr(want["sla_tok_s_user"])))
            assert_shows(row["GPUs"], want["gpus"])
            assert_shows(row["USD/month"], want["monthly_cost"])
        at_sla = next(r for r in doc["rows"] if r["sla_tok_s_user"] == pool.sla)
        tiles = metrics(at, "sz_tiles")
        assert_shows(tiles[f"GPUs at {pool.sla:g} tok/s/user"], at_sla["gpus"])
        assert_shows(tiles[f"USD/month at {pool.sla:g} tok/s/user"], at_sla["monthly_cost"])


def test_sizing_from_anchors_verdict_then_draft(demo):
    anchors = "1:215.5,10:122.2,256:41.8"
    at = page("pages/sizing_budget.py")
    at.radio(key="sz_source").set_value("anchors").run()
    at.text_input(key="sz_anchors").set_value(anchors).run()
    at.text_input(key="sz_slas").set_value("40,100,150").run()
    at.number_input(key="sz_tpm").set_value(1_000_000.0).run()
    at.number_input(key="sz_gpr").set_value(2).run()
    at.selectbox(key="sz_device").set_value("(not priced)").run()
    assert not at.exception and not at.error
    for interpolate in (False, True):
        at.checkbox(key="sz_interpolate").set_value(interpolate).run()
        args = ["size", "--anchors", anchors, "--tpm", "1000000", "--sla", "40,100,150", "--gpus-per-replica", "2",
                "--util", f"{at.session_state['sz_util']}", "--failure-reserve", str(at.session_state["sz_failure"]),
                "--canary", str(at.session_state["sz_canary"]), "--warm", str(at.session_state["sz_warm"])]
        doc = cli(demo, *args, *(["--interpolate"] if interpolate else []))
        assert doc["status"] == ("DRAFT" if interpolate else "VERDICT")
        assert doc["status"] in at.get_by_key("sz_status").markdown[0].value
        frame = table(at, "sz_table")
        assert [int(shown(g)) for g in frame["GPUs"]] == [r["gpus"] for r in doc["rows"]]
        assert list(frame["USD/month"]) == ["not priced"] * 3


def test_sizing_from_an_uploaded_load_test_file(demo, shared_data):
    path = shared_data / "loadtest" / "sglang_bench_serving_llama33_70b_h200_online.jsonl"
    at = page("pages/sizing_budget.py")
    at.radio(key="sz_source").set_value("upload result files").run()
    at.file_uploader(key="sz_upload").set_value((path.name, path.read_bytes(), "application/json")).run()
    # the file holds two workloads: the page lists them, as `ledger size` does, and waits for a pick
    assert not at.exception and "2 curves found" in at.error[0].value
    at.text_input(key="sz_select").set_value("random").run()
    at.text_input(key="sz_slas").set_value("20,50").run()
    at.number_input(key="sz_gpr").set_value(4).run()
    at.selectbox(key="sz_device").set_value("(not priced)").run()
    at.checkbox(key="sz_repair").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    doc = cli(demo, "size", "--curve", str(path), "--curve-select", "random", "--repair",
              "--tpm", f"{at.session_state['sz_tpm']}",
              "--sla", "20,50", "--gpus-per-replica", "4", "--util", f"{at.session_state['sz_util']}",
              "--failure-reserve", str(at.session_state["sz_failure"]), "--canary", str(at.session_state["sz_canary"]),
              "--warm", str(at.session_state["sz_warm"]))
    assert [int(shown(g)) for g in table(at, "sz_table")["GPUs"]] == [r["gpus"] for r in doc["rows"]]


def test_sizing_refusals_are_messages_not_tracebacks(demo):
    at = page("pages/sizing_budget.py")
    at.radio(key="sz_source").set_value("anchors").run()
    at.text_input(key="sz_anchors").set_value("1:200,10:120").run()
    at.text_input(key="sz_slas").set_value("500").run()  # above the best measured point
    assert not at.exception
    assert any("500" in e.value for e in at.error)
    at.text_input(key="sz_slas").set_value("fast").run()
    assert not at.exception and any("'fast' is not a number" in e.value for e in at.error)
    at.text_input(key="sz_anchors").set_value("not a curve").run()
    assert not at.exception and at.error


def test_budget_of_the_example_plan_is_the_cli_budget(demo):
    doc = cli(demo, "budget", str(PLAN))
    at = budget_tab(page("pages/sizing_budget.py"))
    at.selectbox(key="bg_plan").set_value(PLAN.name).run()
    tiles = metrics(at, "bg_tiles")
    n = len(doc["months"])
    for name, total in doc["totals"].items():
        assert_shows(tiles[f"{name}: total over {n} months"], total["total"])
    months = table(at, "bg_months").set_index("month")
    for s in doc["summary"]:
        assert_near(months.loc[s["month"], s["scenario"]], s["total"])
    # the quarterly subtotals of `ledger budget forecast` (its `quarters`), then the total; the months
    # add up to their quarter and the quarters to the total as shown (display rounding)
    for q in doc["quarters"]:
        label = q["quarter"] if q["complete"] else f"{q['quarter']} ({len(q['months'])} of 3 months)"
        assert_near(months.loc[label, q["scenario"]], q["total"])
        assert sum(shown(months.loc[m, q["scenario"]]) for m in q["months"]) == shown(months.loc[label, q["scenario"]])
    for name in doc["totals"]:
        labels = [q["quarter"] if q["complete"] else f"{q['quarter']} ({len(q['months'])} of 3 months)"
                  for q in doc["quarters"] if q["scenario"] == name]
        assert sum(shown(months.loc[label, name]) for label in labels) == shown(months.loc["total", name])
        assert months.loc["total", name] == tiles[f"{name}: total over {n} months"]
    # the base scenario by category: categories down, the months across, six months a table
    detail = table(at, "bg_detail").set_index("category").join(table(at, "bg_detail_2").set_index("category"))
    base = [s for s in doc["summary"] if s["scenario"] == "base"]
    assert list(detail.columns) == [s["month"] for s in base] and len(base) == 12
    used = [c for c in base[0]["by_category"] if any(Decimal(s["by_category"][c]) for s in base)]
    assert list(detail.index) == [*(c.replace("_", " ") for c in used), "total"]
    for s in base:
        for cat in used:
            assert_near(detail.loc[cat.replace("_", " "), s["month"]], s["by_category"][cat])
        # each month's categories add up to the month as the table above shows it
        assert detail.loc["total", s["month"]] == months.loc[s["month"], "base"]
        assert sum(shown(v) for v in detail[s["month"]].drop("total")) == shown(detail.loc["total", s["month"]])
    assert {b.key for b in at.get_by_key("bg_downloads").download_button} == {"bg_xlsx", "bg_csv"}
    at.multiselect(key="bg_scenarios").set_value(["base"]).run()
    assert list(metrics(at, "bg_tiles")) == [f"base: total over {n} months"]


# ---- price books --------------------------------------------------------------------------------

def in_parts(at, key: str):
    """A table laid out in parts (keys `key`, `key_2`, ...: pages/_layout.table_in_parts) as one frame."""
    import pandas as pd

    frames = [table(at, key)]
    while True:
        try:
            part = table(at, f"{key}_{len(frames) + 1}")
        except KeyError:
            return pd.concat(frames, axis=1)
        frames.append(part.drop(columns=[part.columns[0]]))


def test_price_books_in_force_history_and_check_are_the_cli(demo):
    from ledger.cli import app

    at = page("pages/price_books.py")
    at.date_input(key="pb_at").set_value(date(2026, 10, 15)).run()
    assert not at.exception
    doc = cli(demo, "pricebook", "show", "--at", "2026-10-15")
    assert_shows(metrics(at, "pb_tiles")["Prices in force"], len(doc["prices"]))
    meters = sorted({p["meter"] for p in doc["prices"]})
    # one table per meter; a column every row of it leaves at `*` (any) is left out and named above it
    # (each in two parts, the price, then when and where from: pages/_layout.py)
    assert [d.value for d in at.get_by_key("pb_in_force").dataframe] and len(at.get_by_key("pb_in_force").dataframe) \
        == 2 * len(meters)
    for meter in meters:
        frame = in_parts(at, f"pb_in_force_{meter}")
        wants = [p for p in doc["prices"] if p["meter"] == meter]
        assert len(frame) == len(wants)
        for row, want in zip(frame.to_dict("records"), wants, strict=True):
            assert (row["sku"], row.get("region", "*"), row.get("option", "*"), row.get("provider", "*")) == \
                (want["sku"], want["region"], want["purchase_option"], want["provider"])
            assert shown(row["price"]) == Decimal(want["price"])  # prices keep every decimal
            assert row["book"] == want["book"] and row["per"] == want["per"]
            start = want["effective_from"][:10]
            assert row["in force"] == f"{start} →" + (f" {want['effective_to'][:10]}" if want["effective_to"] else "")
        # an upfront amount (a reserved instance) is said under its table, with the price it was written at
        notes = " ".join(c.value for c in at.get_by_key("pb_in_force").caption)
        for want in wants:
            if want["upfront"]:
                said = notes.split(f"{want['sku']} {want['region']} {want['purchase_option']}: ", 1)[1]
                assert_shows(said.split(" per ")[0], want["price"])
                assert_shows(said.split("written as ")[1].split(" per ")[0], want["list_price"])
                assert said.split(" upfront for ")[1].startswith(want["term"])
                assert_shows(said.split(" + ")[1].split(" upfront")[0], want["upfront"])
    at.selectbox(key="pb_meter").set_value("gpu_time").run()
    gpu = cli(demo, "pricebook", "show", "--at", "2026-10-15", "--meter", "gpu_time")
    assert len(at.get_by_key("pb_in_force").dataframe) == 2
    assert len(in_parts(at, "pb_in_force_gpu_time")) == len(gpu["prices"])
    key = ("gpu_time", "H100-SXM-80GB", "us-east-1", "on_demand", "*")   # meter, sku, region, option, provider
    at.selectbox(key="pb_key").set_value(key).run()
    history = table(at, "pb_history")
    assert list(history["in force"]) == sorted(history["in force"]) and len(history) >= 2
    for day in ("2025-01-01", "2026-10-15"):  # each dated price is the one `show --at` finds
        want = cli(demo, "pricebook", "show", "--at", day, "--meter", "gpu_time", "--sku", key[1], "--region", key[2])
        price = next(p for p in want["prices"] if p["purchase_option"] == key[3])
        assert Decimal(price["price"]) in {shown(p) for p in history["price"]}
    check = CliRunner().invoke(app, ["pricebook", "check"])
    assert check.exit_code == 0
    assert at.radio(key="pb_check_source").value == "the shipped price books"  # the default
    assert at.get_by_key("pb_check").success[0].value == check.stdout.strip()


def test_price_book_check_opens_no_typed_path_only_known_books_and_uploads(demo, tmp_path):
    from ledger.cli import app

    at = page("pages/price_books.py")
    assert not at.text_input, "a path typed on the page would be opened on the server"
    assert at.radio(key="pb_check_source").options == ["the shipped price books", "the books loaded in the ledger",
                                                       "price book files I upload"]
    # the books loaded in the ledger: the demo loaded the shipped folder and its own openai account
    # book, so the check is the CLI's on those
    from ledger.demo import DEMO_BOOK

    shipped = CliRunner().invoke(app, ["pricebook", "check", str(ROOT / "pricebooks"), str(DEMO_BOOK)])
    at.radio(key="pb_check_source").set_value("the books loaded in the ledger").run()
    assert not at.exception and at.get_by_key("pb_check").success[0].value == shipped.stdout.strip()

    at.radio(key="pb_check_source").set_value("price book files I upload").run()
    assert "Upload one or more price book files" in at.get_by_key("pb_check").info[0].value
    good = ROOT / "pricebooks" / "gcp.toml"
    at.file_uploader(key="pb_check_upload").set_value((good.name, good.read_bytes(), "application/toml")).run()
    want = CliRunner().invoke(app, ["pricebook", "check", str(good)])
    assert want.exit_code == 0 and at.get_by_key("pb_check").success[0].value == want.stdout.strip()

    # a broken book: the same problems `ledger pricebook check FILE` prints, named by the upload's name
    bad = tmp_path / "broken.toml"
    bad.write_text(good.read_text(encoding="utf-8").replace("retrieved_at", "fetched_at", 1), encoding="utf-8")
    at.file_uploader(key="pb_check_upload").set_value((bad.name, bad.read_bytes(), "application/toml")).run()
    cli_check = CliRunner().invoke(app, ["pricebook", "check", str(bad)])
    lines = cli_check.stderr.strip().splitlines()
    assert cli_check.exit_code == 1 and lines
    box = at.get_by_key("pb_check")
    assert not at.exception and box.warning[0].value.startswith(f"{len(lines)} problem")
    frame = box.table[0].value
    assert set(frame["file"]) == {"broken.toml"}
    assert [m for m in frame["message"]] == [ln.rsplit(": ", 1)[-1] for ln in lines]

    # the name of an upload is only a name: the bytes are checked, never the server file it names
    at.file_uploader(key="pb_check_upload").set_value((str(good), b"this is = not [ toml", "application/toml")).run()
    frame = at.get_by_key("pb_check").table[0].value
    assert list(frame["file"]) == ["gcp.toml"] and frame["message"][0].startswith("not valid TOML")


# ---- forecast vs actual -------------------------------------------------------------------------

def test_forecast_vs_actual_is_the_cli_comparison(demo):
    doc = cli(demo, "budget", "compare", str(PLAN), "--period", PERIOD)
    at = page("pages/forecast_actual.py")
    at.selectbox(key="fa_plan").set_value(PLAN.name).run()
    assert at.selectbox(key="fa_scenario").value == "base" and at.selectbox(key="fa_period").value == PERIOD
    tiles = metrics(at, "fa_tiles")
    assert_shows(tiles["Forecast"], doc["total"]["forecast"])
    assert_shows(tiles["Actual"], doc["total"]["actual"])
    # the error shown is the shown actual - the shown forecast (display rounding): 2,363.35, not 2,363.34
    assert shown(tiles["Error (actual − forecast)"]) == shown(tiles["Actual"]) - shown(tiles["Forecast"])
    assert_shows(tiles["Error relative to forecast"], doc["total"]["relative_error"])
    frame = table(at, "fa_categories")
    rows = frame.to_dict("records")
    for row, want in zip(rows, [*doc["categories"], {**doc["total"], "key": "total"}], strict=True):
        assert row["category"] == want["key"].replace("_", " ")
        assert_near(row["forecast"], want["forecast"])
        assert_near(row["actual"], want["actual"])
        assert shown(row["error"]) == shown(row["actual"]) - shown(row["forecast"])
        if want["relative_error"] is None:
            assert row["error %"].startswith("undefined")
        else:
            assert_shows(row["error %"], want["relative_error"])
    for col in ("forecast", "actual", "error"):  # the totals row: the categories add up to it as shown
        assert sum(shown(r[col]) for r in rows[:-1]) == shown(rows[-1][col])
    assert rows[-1]["actual"] == tiles["Actual"] and rows[-1]["error"] == tiles["Error (actual − forecast)"]
    # why the forecast missed: the CLI's drivers table, cell for cell (both display-rounded)
    from ledger.cli import app

    text = CliRunner().invoke(app, ["budget", "compare", str(PLAN), "--period", PERIOD], terminal_width=250,
                              env={"LEDGER_HOME": str(demo), "LEDGER_DATABASE_URL": None}).stdout
    printed = {ln.split("│")[1].strip(): [c.strip().lstrip("+") for c in ln.split("│")[2:-1]]
               for ln in text.splitlines() if ln.startswith("│") and len(ln.split("│")) > 3}
    drivers = table(at, "fa_drivers")
    assert list(drivers.columns) == ["driver", *(i["key"] for i in doc["drivers"]["items"]), "other", "total"]
    for r in drivers.to_dict("records"):
        assert [str(shown(r[c])) for c in drivers.columns[1:]] == \
            [str(shown("$" + v)) for v in printed[r["driver"]]], r["driver"]
    notes = [c.value for c in at.get_by_key("fa_drivers_notes").caption]
    assert any(n.startswith("h200-code: TPM") and "at the actual traffic" in n for n in notes)
    pools = table(at, "fa_pools")
    assert [r["pool"] for r in pools.to_dict("records")] == [p["key"].replace("_", " ") for p in doc["pools"]]
    # the demo's plan names the demo's pools, models and categories: the page says they all match
    said = at.get_by_key("fa_matching").caption[0].value
    assert said.startswith("The plan and the run name the same things. In both: pools: h100-chat, h200-code")


def test_tenants_side_by_side_has_a_totals_column_that_adds_up_as_printed(demo):
    """Issue 28 item 7: the side-by-side table's totals column; money (and shares of GPU) add up to it
    as printed, and its cost is the Σ of the tenants' exact costs rounded."""
    at = page("pages/tenants.py")
    picked = at.multiselect(key="tn_pick").value
    rep = cli(demo, "report", "tenants", "--period", PERIOD, "--tenants", ",".join(picked))
    frame = table(at, "tn_table").set_index("metric")
    total = "total (these tenants)"
    assert list(frame.columns) == [*picked, total]
    cost = sum(Decimal(r["cost"]) for r in rep["rows"])
    assert_shows(frame.loc["cost", total], cost)
    assert sum(shown(frame.loc["cost", t]) for t in picked) == shown(frame.loc["cost", total])
    assert sum(shown(frame.loc["share of GPU", t]) for t in picked) == shown(frame.loc["share of GPU", total])
    assert shown(frame.loc["requests", total]) == sum(r["requests"] for r in rep["rows"])
