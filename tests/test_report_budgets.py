"""The budget in force for the month beside actual cost (issue 31, item 1): `report unit-economics`,
`report tenants` and the dashboard's readers, by hand.

The month of October 2026 over the fixture of tests/test_reports.py: tenant a costs 9.00, b 3.60;
product chat 1.80, code 7.20, search 3.60; model llama 12.60 (run total 28.80 with idle)."""
from __future__ import annotations

import csv
import io
import json
from decimal import Decimal as D

import pytest
from rich.console import Console
from test_allocate_gpu import FLEET, GPU_BOOK
from test_allocate_support import index, run
from test_reports import OUTCOMES, REQUESTS

from ledger.guardrails import parse_budget_book
from ledger.reports import (run_data_of, tenants_as_csv, tenants_as_table, unit_economics, unit_economics_as_csv,
                            unit_economics_as_json, unit_economics_as_table)
from ledger.reports.budgets import with_budgets

MONTH = ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
BOOK = """
[book]
name = "team"
version = "2026-09-01"
currency = "USD"

[[budget]]                      # superseded on 2026-10-15 by the next: the month shows 12.00
tenant = "a"
monthly = "10.00"
owner = "f@x"
effective_from = 2026-09-01T00:00:00Z

[[budget]]
tenant = "a"
monthly = "12.00"
owner = "f@x"
effective_from = 2026-10-15T00:00:00Z

[[budget]]
tenant = "b"
monthly = "2.40"
owner = "f@x"
effective_from = 2026-10-01T00:00:00Z

[[budget]]                      # starts after the month: not beside October
tenant = "b"
monthly = "99.00"
owner = "f@x"
effective_from = 2026-11-01T00:00:00Z

[[budget]]
product = "chat"
monthly = "1.00"
owner = "f@x"
effective_from = 2026-10-01T00:00:00Z

[[budget]]
model = "llama"
monthly = "100.00"
owner = "f@x"
effective_from = 2026-10-01T00:00:00Z

[[budget]]                      # two scope fields: beside no row of one field
tenant = "a"
product = "code"
monthly = "5.00"
owner = "f@x"
effective_from = 2026-10-01T00:00:00Z
"""


def _book(text: str = BOOK):
    book, problems = parse_budget_book(text, "team.toml")
    assert problems == []
    return book


@pytest.fixture(scope="module")
def month():
    return run_data_of(run(index(GPU_BOOK), *MONTH, fleet=FLEET, requests=REQUESTS, outcomes=OUTCOMES), run_id="r1")


def _rows(report) -> dict:
    return {r[report.by]: (r["cost"], r.get("budget", "absent"), r.get("of_budget", "absent"))
            for r in unit_economics_as_json(report)["rows"]}


def test_each_scope_gets_the_budget_in_force_at_the_months_end(month):
    by_tenant = with_budgets(unit_economics(month, by="tenant"), [_book()])
    # a: 9.00 / 12.00 (the budget of 2026-10-15, not 10.00) = 0.75; b: 3.60 / 2.40 = 1.5 (not the November 99)
    assert _rows(by_tenant) == {"a": ("9.000000", "12.000000", "0.7500"), "b": ("3.600000", "2.400000", "1.5000")}
    assert unit_economics_as_json(by_tenant)["budget_books"] == ["team@2026-09-01"]
    # chat 1.80 / 1.00 = 1.8; code and search have no product budget (the tenant a + product code one is no
    # product's budget)
    assert _rows(with_budgets(unit_economics(month, by="product"), [_book()])) == {
        "chat": ("1.800000", "1.000000", "1.8000"), "code": ("7.200000", None, None),
        "search": ("3.600000", None, None)}
    assert _rows(with_budgets(unit_economics(month, by="model"), [_book()])) == {
        "llama": ("12.600000", "100.000000", "0.1260")}                     # 12.60 / 100


def test_no_budget_in_force_changes_nothing(month):
    plain = unit_economics(month, by="tenant")
    assert with_budgets(plain, []) is plain
    assert "budget" not in unit_economics_as_csv(plain) and "budget_books" not in unit_economics_as_json(plain)
    # a budget in another currency, a period that is not one calendar month, a filtered report by product
    eur = _book(BOOK.replace('currency = "USD"', 'currency = "EUR"'))
    assert with_budgets(plain, [eur]) is plain
    day = run_data_of(run(index(GPU_BOOK), "2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z", fleet=FLEET,
                          requests=REQUESTS, outcomes=OUTCOMES), run_id="r2")
    assert with_budgets(unit_economics(day, by="tenant"), [_book()]).budgets is None
    assert with_budgets(unit_economics(month, by="product", tenants=["a"]), [_book()]).budgets is None
    # by model with only tenant budgets: nothing of that scope, nothing shown
    tenants_only = _book(BOOK.split('[[budget]]\nproduct = "chat"')[0])
    assert with_budgets(unit_economics(month, by="model"), [tenants_only]).budgets is None


def _text(renderable) -> str:
    c = Console(width=250, record=True, color_system=None)
    c.print(renderable)
    return c.export_text()


def test_csv_and_tables_show_the_budget_beside_the_cost(month):
    report = with_budgets(unit_economics(month, by="product"), [_book()])
    rows = list(csv.DictReader(io.StringIO(unit_economics_as_csv(report))))
    assert [(r["product"], r["cost"], r["budget"], r["of_budget"]) for r in rows] == [
        ("chat", "1.800000", "1.000000", "1.8000"), ("code", "7.200000", "", ""), ("search", "3.600000", "", "")]
    text = _text(unit_economics_as_table(report))
    assert "of budget" in text
    chat = next(line for line in text.splitlines() if line.strip().startswith("│ chat") or " chat " in line)
    assert "1.00" in chat and "180.0%" in chat
    assert "of budget" not in _text(unit_economics_as_table(unit_economics(month, by="product")))

    tenants = with_budgets(unit_economics(month, by="tenant"), [_book()])
    table = {r[0]: r[1:] for r in csv.reader(io.StringIO(tenants_as_csv(tenants)))}
    assert table["metric"] == ["a", "b"] and table["budget"] == ["12.000000", "2.400000"]
    assert table["of budget"] == ["0.7500", "1.5000"]
    assert "budget" not in {r[0] for r in csv.reader(io.StringIO(tenants_as_csv(unit_economics(month, by="tenant"))))}
    shown = _text(tenants_as_table(tenants))
    budget_line = next(line for line in shown.splitlines() if line.lstrip("│ ").startswith("budget"))
    assert "12.00" in budget_line and "2.40" in budget_line
    of_line = next(line for line in shown.splitlines() if line.lstrip("│ ").startswith("of budget"))
    assert "75.0%" in of_line and "150.0%" in of_line


def test_the_dashboards_readers_carry_the_budget_columns(month):
    from ledger.dashboard import tenants_frame, unit_economics_frame

    frame = unit_economics_frame(month, by="tenant", books=[_book()])
    assert list(frame["budget"]) == [D("12.000000"), D("2.400000")] and list(frame["of_budget"]) == [D("0.75"),
                                                                                                    D("1.5")]
    assert "budget" not in unit_economics_frame(month, by="tenant").columns
    side = tenants_frame(month, ["b", "a"], [_book()])
    assert list(side["tenant"]) == ["b", "a"] and list(side["budget"]) == [D("2.40"), D("12.00")]
    assert "budget" not in tenants_frame(month, ["b", "a"]).columns


@pytest.mark.store
def test_the_report_commands_read_the_loaded_budgets(ledger_home, tmp_path):
    from typer.testing import CliRunner

    from ledger import runs, store
    from ledger.cli import app
    from ledger.guardrails import store_budget_book

    alloc = run(index(GPU_BOOK), *MONTH, fleet=FLEET, requests=REQUESTS, outcomes=OUTCOMES)
    with store.session() as s:
        runs.write_run(s, allocation=alloc, inputs_digest="d" * 64, code_version="test")
    invoke = lambda *a: CliRunner().invoke(app, ["report", *a, "--period", "2026-10"])  # noqa: E731
    before = invoke("unit-economics", "--json")
    assert before.exit_code == 0, before.output
    assert "budget" not in before.stdout                               # no budgets book: as it was
    with store.session() as s:
        for kind, names in (("tenant", ("a", "b")), ("product", ("chat", "code", "search"))):
            for name in names:
                store.add_dim(s, kind=kind, name=name)
        assert store_budget_book(s, book=_book()) == "loaded"
    doc = json.loads(invoke("unit-economics", "--json").stdout)
    assert [(r["tenant"], r["budget"], r["of_budget"]) for r in doc["rows"]] == [
        ("a", "12.000000", "0.7500"), ("b", "2.400000", "1.5000")]
    doc = json.loads(invoke("unit-economics", "--by", "model", "--json").stdout)
    assert [(r["model"], r["budget"], r["of_budget"]) for r in doc["rows"]] == [("llama", "100.000000", "0.1260")]
    rows = list(csv.DictReader(io.StringIO(invoke("unit-economics", "--by", "product", "--csv").stdout)))
    assert [r["budget"] for r in rows] == ["1.000000", "", ""]
    r = invoke("tenants")
    assert r.exit_code == 0 and "of budget" in r.stdout
    doc = json.loads(invoke("tenants", "--json").stdout)
    assert [r["budget"] for r in doc["rows"]] == ["12.000000", "2.400000"]
