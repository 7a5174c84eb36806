"""The tables the CLI prints, over the demo month: they fit 100 (and 80) columns, cut nothing, and
show every money value of the JSON in the one format of :mod:`ledger.formats`; and that format,
hand-worked (half-even rounding, grouping, negatives, zero, unit costs below 1, percentages)."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from decimal import Decimal as D
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from ledger import console
from ledger.check.findings import CheckReport, Finding
from ledger.check.render import findings_as_table
from ledger.cli import app
from ledger.formats import MISSING, count, figures, money, number, percent, unit_cost, unit_cost_places, unit_costs
from ledger.tables import FitTable

runner = CliRunner()
DATA = Path(__file__).parent / "data"
BILL, BILL_MAP = DATA / "bills" / "aws-focus-2026-10.csv", DATA / "bills" / "bill-map.toml"
PLAN = Path(__file__).resolve().parent.parent / "examples" / "plan.toml"
ANCHORS = ["--anchors", "1:215.5,10:122.2,256:41.8"]
PRICED = ["--device", "H100-SXM-80GB", "--region", "us-east-1", "--purchase-option", "on_demand"]


# ---- the format, hand-worked ---------------------------------------------------------------------

def test_money_rounds_half_to_even_at_two_decimals_and_groups_thousands():
    assert money(D("2909.268234")) == "2,909.27"  # .268 rounds up
    assert money(D("0.125")) == "0.12" and money(D("0.135")) == "0.14"  # half to the even cent
    assert money(D("1234567.005")) == "1,234,567.00" and money(D("1234567.015")) == "1,234,567.02"
    assert money(D("-9917.0836")) == "-9,917.08" and money(D("-1000")) == "-1,000.00"
    assert money(D("0")) == "0.00" and money(D("-0.004")) == "0.00"  # never "-0.00"
    assert money(D("54486.225218"), "USD") == "54,486.23 USD" and money(None, "USD") == MISSING == "—"
    assert money(D("34654.56"), signed=True) == "+34,654.56" and money(D("-5"), signed=True) == "-5.00"
    assert money(D("0"), signed=True) == "0.00"


def test_unit_costs_below_one_take_six_decimals_and_a_column_takes_one_rule():
    assert unit_cost(D("0.09666")) == "0.096660" and unit_cost(D("0.0000005")) == "0.000000"  # half-even: 0
    assert unit_cost(D("0.0000015")) == "0.000002" and unit_cost(D("1234.5")) == "1,234.500000"
    assert unit_cost_places([D("0.5"), None, D("-0.999999")]) == 6
    assert unit_cost_places([D("0.5"), D("1")]) == 2 and unit_cost_places([None]) == 2
    # one rule per column: 0.46 sits beside 20.03, so both at 2 decimals; all below 1: all at 6
    assert unit_costs([D("0.460155"), D("20.033333"), None]) == ["0.46", "20.03", "—"]
    assert unit_costs([D("0.460155"), D("0.039205")]) == ["0.460155", "0.039205"]


def test_percentages_counts_and_figures():
    assert percent(D("0.0815")) == "8.2%" and percent(D("0.0825")) == "8.2%"  # 8.15 -> 8.2, 8.25 -> 8.2
    assert percent(D("-0.2956")) == "-29.6%" and percent(D("2.4914")) == "249.1%" and percent(D("12.5")) == "1,250.0%"
    assert percent(D("0")) == "0.0%" and percent(None) == "—" and percent(D("0.069"), signed=True) == "+6.9%"
    assert count(450787) == "450,787" and count(0) == "0" and count(-6, signed=False) == "-6"
    assert count(6, signed=True) == "+6"
    with pytest.raises(TypeError):
        count(D("1.5"))
    assert number(27.19, 2) == "27.19" and number(1055.0, 1) == "1,055.0" and number(0.125, 2) == "0.12"
    # a column of figures: whole when every value is whole, else one decimal for all
    assert figures([20, 50.0, 100]) == ["20", "50", "100"]
    assert figures([10700.8, 1222, None]) == ["10,700.8", "1,222.0", "—"]


# ---- the layout ----------------------------------------------------------------------------------

def render(renderable, width: int) -> str:
    c = Console(width=width, record=True, soft_wrap=True, color_system=None)
    c.print(renderable)
    return c.export_text()


def assert_fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if cell_len(line.rstrip()) > width]
    assert not long, f"{len(long)} lines wider than {width}: {long[:3]}"
    assert "…" not in text, [line for line in text.splitlines() if "…" in line][:3]


def test_a_wide_table_splits_repeating_its_key_and_a_narrow_one_prints_blocks():
    t = FitTable(title="wide")
    t.add_column("tenant", numeric=False)
    for n in range(12):
        t.add_column(f"category {n}")
    t.add_row("acme", *(money(D("1234567.891")) for _ in range(12)))
    wide = render(t, 100)
    assert_fits(wide, 100)
    # 6 + 6 x 12 cells + 7 x 3 padding and borders + 1 = 100: two tables of six, the key in each
    assert wide.count("1,234,567.89") == 12 and wide.count("│ acme ") == 2
    narrow = render(t, 24)  # a key and one 12-wide money column need 31: one block per row
    assert_fits(narrow, 24)
    assert "acme" in narrow and narrow.count("1,234,567.89") == 12 and "┃" not in narrow


def test_names_are_never_markup():
    t = FitTable(title="[bold]tenants")
    t.add_column("tenant", numeric=False)
    t.add_column("cost")
    t.add_row("[red]acme", money(D("1")))
    text = render(t, 100)
    assert "[bold]tenants" in text and "│ [red]acme │ 1.00 │" in text


def test_check_findings_never_cut_a_name():
    f = Finding(kind="no_price", source="fleet", message="no price", meter="gpu_time", sku="H100-SXM-80GB",
                region="us-east-1", purchase_option="on_demand", first_at=datetime(2026, 10, 1, tzinfo=timezone.utc),
                count=1234, nearest=("H100-SXM-80GB-spot", "H200-SXM-141GB"),
                batches=("20261126T131020-0e962d6c", "20261126T131021-1f962d6c"))
    report = CheckReport(start=None, end=None, batch=None, price_books=("aws@2026-11-09",), findings=(f, f))
    for width in (100, 80):
        text = render(findings_as_table(report), width)
        assert_fits(text, width)
        assert "gpu_time/H100-SXM-80GB/us-east-1/on_demand" in text and "1,234" in text
        assert "ledger check: 2 problems" in text


# ---- the CLI over the demo month -----------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """The demo month (the session's build, copied; its run under "run"), with the test bill ingested."""
    from conftest import copy_demo

    from ledger import store

    home = tmp_path_factory.mktemp("tables-demo") / "home"
    doc = {"run": copy_demo(tmp_path_factory, home).summary}  # the session's demo, copied
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEDGER_HOME", str(home))
        mp.delenv("LEDGER_DATABASE_URL", raising=False)
        mp.chdir(home.parent)
        r = runner.invoke(app, ["ingest", "bill", str(BILL)])
        assert r.exit_code == 0, r.output
        store.dispose_engines()
    return {**doc, "home": home}


def cli(demo: dict, *args: str, width: int = 100) -> str:
    """A command's stdout over the demo home at a terminal `width` columns wide."""
    return invoke(demo["home"], *args, width=width)


def invoke(home, *args: str, width: int = 100) -> str:
    """A command's stdout over the ledger `home` at a terminal `width` columns wide (the CLI's console
    and the sizing's)."""
    from ledger import store

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEDGER_HOME", str(home))
        mp.delenv("LEDGER_DATABASE_URL", raising=False)
        mp.setattr(console.out, "_width", width)
        r = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
        store.dispose_engines()
    assert r.exit_code == 0, (args, r.output)
    return r.stdout


def rows_of(text: str) -> dict[str, list[str]]:
    """The cells of every table row by its first cell, all tables of the text together (a split
    table repeats its key in each part)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if cells[0]:
                out.setdefault(cells[0], []).extend(cells[1:])
    return out


def m(value: str | None) -> str:
    return money(None if value is None else D(value))


REPORTS = [("report", "unit-economics", "--period", "2026-10"),
           ("report", "unit-economics", "--period", "2026-10", "--by", "product"),
           ("report", "unit-economics", "--period", "2026-10", "--by", "model"),
           ("report", "tenants", "--period", "2026-10"),
           ("runs",), ("workload", "--period", "2026-10"), ("workload", "--period", "2026-10", "--pool", "h100-chat"),
           ("reconcile", "--period", "2026-10", "--bill-map", str(BILL_MAP)),
           ("pricebook", "show", "--at", "2026-10-15"), ("dims", "list", "tenant"),
           ("size", "--tpm", "3000000", "--sla", "20,50,100", *ANCHORS, "--gpus-per-replica", "4",
            "--failure-reserve", "1", *PRICED),
           ("size", "--tpm", "3000000", "--tier", "interactive:0.3:100", "--tier", "batch:0.7:20", *ANCHORS,
            "--gpus-per-replica", "4", *PRICED)]


@pytest.mark.slow
@pytest.mark.parametrize("width", [100, 80])
def test_every_table_fits_and_cuts_nothing(demo, width):
    # the budget's tables too (ledger/budget/render.py; tests/test_tables_budget.py checks their money)
    for args in REPORTS + [("budget", str(PLAN))]:
        text = cli(demo, *args, width=width)
        assert text.strip(), args
        assert_fits(text, width)


def near(text: str, value: str) -> bool:
    """A printed amount is its exact amount rounded down or up (display rounding, docs/exports.md)."""
    return abs(D(text.replace(",", "")) - D(value)) < D("0.01")


@pytest.mark.slow
def test_unit_economics_shows_every_money_value_of_its_json(demo):
    for by in ("tenant", "product", "model"):
        doc = json.loads(cli(demo, "report", "unit-economics", "--period", "2026-10", "--by", by, "--json"))
        text = cli(demo, "report", "unit-economics", "--period", "2026-10", "--by", by)
        cells = rows_of(text)
        keyed = [r for r in doc["rows"] if r[by] is not None]
        per_1m = unit_costs(None if r["cost_per_1m_active_tokens"] is None else D(r["cost_per_1m_active_tokens"])
                            for r in doc["rows"])
        per_task = unit_costs(None if r.get("cost_per_successful_task") is None else D(r["cost_per_successful_task"])
                              for r in doc["rows"])
        used = [c for c in doc["rows"][0].get("by_category", {}) if any(D(x["by_category"][c]) for x in doc["rows"])]
        for r in keyed:
            i = doc["rows"].index(r)
            got = cells[r[by]]
            expected = [count(r["requests"]), count(r["active_tokens"]), per_1m[i]]
            if by == "model":
                expected += [percent(D(r["share_of_gpu"]))]
                money_at = {0: r["cost"], 1: r["gpu_cost"], 2: r["provider_tokens_cost"]}
            else:
                expected += [per_task[i], percent(D(r["success_rate"])), percent(D(r["failed_work_share"]))]
                # cost, failed work, shared idle; then the categories and the cost again (the last table)
                money_at = {0: r["cost"], 1: r["failed_work"], 3: r["idle_share"], len(got) - 1: r["cost"],
                            **{len(got) - 1 - len(used) + j: r["by_category"][c] for j, c in enumerate(used)}}
            missing = [v for v in expected if v not in got]
            assert not missing, (by, r[by], missing, got)
            off = {k: (got[k], v) for k, v in money_at.items() if not near(got[k], v)}
            assert not off, (by, r[by], off)
        for k, v in doc.get("unattributed", {}).items():
            assert f"{k} {m(v)}" in " ".join(text.split())
        assert f"run total {m(doc['run_total'])}" in " ".join(text.split())
    # hand-checked: acme's cost 2,909.268234 and its cost per successful task 0.09666 (all below 1: 6
    # decimals); nothing is shared idle under the policy `separate`, and the column says money
    tenants = rows_of(cli(demo, "report", "unit-economics", "--period", "2026-10"))
    acme = next(r for r in json.loads(cli(demo, "report", "unit-economics", "--period", "2026-10", "--json"))["rows"]
                if r["tenant"] == "acme")
    assert (acme["cost"], acme["cost_per_successful_task"]) == ("2909.268234", "0.096660")
    assert {"2,909.27", "0.096660"} <= set(tenants["acme"])
    text = cli(demo, "report", "unit-economics", "--period", "2026-10")
    assert "idle share" not in text and "shared" in text
    # test_demo's hand-worked figures: initech's licence 1,500.00; idle reserve 7,397.376; the Q4 audit's
    # 31 days of 92 unallocated: 5,054.347826
    assert "1,500.00" in tenants["initech"]
    assert "idle_reserve 7,397.38, unallocated 5,054.35" in " ".join(text.split())


@pytest.mark.slow
def test_tenants_side_by_side_one_format_per_row(demo):
    doc = json.loads(cli(demo, "report", "unit-economics", "--period", "2026-10", "--json"))
    rows = {r[0]: r[1:] for r in tables_in(cli(demo, "report", "tenants", "--period", "2026-10"))[0]}
    n = len(doc["rows"])  # a column per tenant, then the totals column
    assert all(near(c, r["cost"]) for c, r in zip(rows["cost"], doc["rows"])) and len(rows["cost"]) == n + 1
    assert all(near(c, r["idle_share"]) for c, r in zip(rows["shared idle"], doc["rows"]))
    # one rule for the row, the totals column's figure the tenants' cost over their successful tasks
    ok = sum(r["tasks"]["success"] for r in doc["rows"])
    per_task = unit_costs([*(D(r["cost_per_successful_task"]) for r in doc["rows"]),
                           (sum(D(r["cost"]) for r in doc["rows"]) / ok).quantize(D("0.000001"))])
    assert rows["cost per successful task (own cost)"] == per_task
    for metric in ("share of GPU", "success rate", "task failure rate", "failed work share"):
        assert rows[metric] and all(v.endswith("%") for v in rows[metric]), (metric, rows[metric])
    assert rows["requests"] == [count(r["requests"]) for r in doc["rows"]] + [count(sum(r["requests"]
                                                                                        for r in doc["rows"]))]


@pytest.mark.slow
def test_runs_reconcile_prices_and_sizing_show_their_json_money(demo):
    runs = json.loads(cli(demo, "runs", "--json"))
    text = " ".join(cli(demo, "runs").split())
    assert all(f"{m(r['total'])} {r['currency']}" in text for r in runs)

    args = ("reconcile", "--period", "2026-10", "--bill-map", str(BILL_MAP))
    doc = json.loads(cli(demo, *args, "--json"))
    text = cli(demo, *args)
    flat = " ".join(text.split())
    for r in doc["resources"]:
        got = rows_of(text)[f"{r['kind']} {r['name']}"]
        want = [m(r[k]) for k in ("priced", "billed", "difference", "billed_cost", "list_cost", "corrections")]
        want.append("not billed" if r["billed"] is None else percent(D(r["share"])))
        assert [v for v in want if v not in got] == [], (r, got)
    t = doc["total"]
    assert (f"total: priced {m(t['priced'])} · billed {m(t['billed'])} · variance {m(t['variance'])} "
            f"({percent(D(t['share']))}); unmatched {m(t['unmatched'])} included") in flat
    assert all(m(u["effective_cost"]) in flat and m(u["billed_cost"]) in flat for u in doc["unmatched"])

    prices = json.loads(cli(demo, "pricebook", "show", "--at", "2026-10-15", "--json"))["prices"]
    flat = " ".join(cli(demo, "pricebook", "show", "--at", "2026-10-15").split())
    assert all(f"{unit_cost(D(p['price']))} {p['currency']}" in flat for p in prices)
    assert "6.880000 USD" in flat and "on_demand" in flat and "on_dema " not in flat  # H100 on-demand, aws

    size = ("size", "--tpm", "3000000", "--sla", "20,50,100", *ANCHORS, "--gpus-per-replica", "4", *PRICED)
    doc = json.loads(cli(demo, *size, "--json"))
    flat = " ".join(cli(demo, *size).split())
    # 7 replicas x 4 GPUs x 6.88 x 730 hours = 140,627.20 a month at SLA 20
    assert [r["monthly_cost"] for r in doc["rows"]][0] == "140627.200000" and "140,627.20" in flat
    assert all(m(r["monthly_cost"]) in flat for r in doc["rows"])


@pytest.mark.slow
def test_the_allocate_summary_is_grouped_money_with_shares(demo):
    run = demo["run"]
    text = cli(demo, "allocate", "--period", "2026-10")
    assert_fits(text, 100)
    rows = rows_of(text)
    total = D(run["total"])
    for k, v in [*run["by_kind"].items(), *((k, v) for k, v in run["by_category"].items() if D(v))]:
        assert near(rows[k][0], v) and abs(D(rows[k][1].rstrip("%")) - D(v) / total * 100) < D("0.1"), (k, rows[k])
    # test_demo's hand-worked GPU: 36,124.128 -> 36,124.13; two totals rows (by kind, by category)
    assert rows["gpu"][0] == "36,124.13"
    assert rows["total"] == [m(run["total"]), "100.0%"] * 2
    assert f"total {m(run['total'])} USD = lines {m(run['lines_total'])} ({count(run['lines'])} lines)" in \
        " ".join(text.split())


def tables_in(text: str) -> list[list[list[str]]]:
    """The tables of `text` in order, each its rows' cells (a row wrapped over several lines joined);
    a table split in parts (one right under the other) as one, its parts' columns side by side, the
    key column once."""
    out: list[list[list[str]]] = []
    rows: list[list[str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("┏"):
            rows = []
        elif line.startswith("┡"):
            rows.clear()
        elif line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if rows and (not cells[0] or not any(cells[1:])):  # a row wrapped: its next line
                rows[-1] = [a + (" " + b if b else "") if a else b for a, b in zip(rows[-1], cells)]
            else:
                rows.append(cells)
        elif line.startswith("└"):
            if out and _split_part(lines, i):
                out[-1] = [a + b[1:] for a, b in zip(out[-1], rows)]
            else:
                out.append(rows)
    return out


def _split_part(lines: list[str], end: int) -> bool:
    """Whether the table ending at line `end` starts right under the bottom of the one before."""
    j = end
    while j > 0 and not lines[j].startswith("┏"):
        j -= 1
    return j > 0 and lines[j - 1].startswith("└")


def adds_up(table: list[list[str]], first: int = 1) -> list:
    """The columns from `first` on whose printed parts do not add up to the printed totals row (the last)."""
    *parts, last = table
    bad = []
    for j in range(first, len(last)):
        try:
            values = [D(p[j].replace(",", "").rstrip("%")) for p in parts if p[j] not in ("—", "undefined")]
            want = D(last[j].replace(",", "").rstrip("%"))
        except ArithmeticError:
            continue
        if sum(values) != want:
            bad.append((j, sum(values), want))
    return bad


@pytest.mark.slow
def test_every_printed_money_column_adds_up_to_its_printed_total(demo):
    """Display rounding (docs/exports.md): in `ledger report unit-economics` (by tenant, product,
    model), `ledger report tenants` and `ledger allocate`'s summary, every money column (and share
    of a whole) adds up to its printed totals row, each row of the categories to its printed cost,
    and the rows' total with the lines on no tenant to the printed run total: the issue's 16,664.01
    against 16,664.00 and acme's categories 2,909.26 against 2,909.27 are gone."""
    run_total = m(demo["run"]["total"])  # 54,486.23
    for by in ("tenant", "product", "model"):
        text = cli(demo, "report", "unit-economics", "--period", "2026-10", "--by", by)
        tables = tables_in(text)
        main = tables[0]
        assert main[-1][0] == "total" and main[-1][1] == "16,664.00", main[-1]
        money_cols = [1, 2, 3] if by == "model" else [1, 2, 4]  # cost, GPU, provider tokens / failed work, idle
        bad = [b for b in adds_up(main) if b[0] in money_cols]
        assert not bad, (by, bad)
        if by == "model":
            assert not [b for b in adds_up(main) if b[0] == 7], by  # shares of GPU
            continue
        vol, cats = tables[1], tables[2]
        assert not adds_up(cats), (by, adds_up(cats))
        costs = {r[0]: r[1] for r in main}
        for r in cats:  # each row's categories add up to its cost, as printed in both tables
            assert sum(D(c.replace(",", "")) for c in r[1:-1]) == D(r[-1].replace(",", "")), (by, r)
            assert costs[r[0]] == r[-1], (by, r[0], costs[r[0]], r[-1])
        assert not [b for b in adds_up(vol) if b[0] in (1, 2, 3, 4, 5)], by
        flat = " ".join(text.split())
        # the rows' total and the lines on no tenant (the caption) add up to the printed run total
        unattributed = [D(x.split()[-1].replace(",", "")) for x in
                        flat.split("not on tenants: ")[1].split(" all-in")[0].split(", ")]
        assert D(main[-1][1].replace(",", "")) + sum(unattributed) == D(run_total.replace(",", "")), by
        if by == "tenant":
            acme = next(r for r in cats if r[0] == "acme")
            assert acme[-1] == "2,909.27" and [r[1] for r in main[:-1]] == \
                ["2,909.27", "4,350.32", "2,165.49", "6,310.28", "928.64"]
    # the tenants side by side: each money row adds up to its total column
    by_metric = {r[0]: r for r in tables_in(cli(demo, "report", "tenants", "--period", "2026-10"))[0]}
    for metric in ("cost", "shared idle", "share of GPU", "requests", "active tokens", "tasks success"):
        row = by_metric[metric]
        assert sum(D(c.replace(",", "").rstrip("%")) for c in row[1:-1]) == D(row[-1].replace(",", "").rstrip("%")), row
    assert by_metric["cost"][-1] == "16,664.00"
    # the allocate summary: by kind and by category, amounts and shares
    text = cli(demo, "allocate", "--period", "2026-10")
    assert "where the money went (USD)" in text and "by category (USD)" in text
    for t in tables_in(text):  # by kind, then by category
        assert t[-1] == ["total", run_total, "100.0%"] and not adds_up(t), (t, adds_up(t))


@pytest.mark.slow
def test_reconcile_drift_table_fits(demo):
    """The drift table (the demo's requests carry no reported cost: one drift row added here)."""
    from ledger import runs, store
    from ledger.reconcile import load_map
    from ledger.reconcile.compare import reconcile_run
    from ledger.reconcile.drift import Drift
    from ledger.reconcile.render import reconciliation_as_table

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEDGER_HOME", str(demo["home"]))
        mp.delenv("LEDGER_DATABASE_URL", raising=False)
        with store.session() as s:
            stored = runs.load_run(s, start=datetime(2026, 10, 1, tzinfo=timezone.utc),
                                   end=datetime(2026, 11, 1, tzinfo=timezone.utc))
            rec = reconcile_run(s, run_id=stored.run.id, lines=stored.lines, currency=stored.run.currency,
                                start=stored.run.period_start, end=stored.run.period_end,
                                bill_map=load_map(BILL_MAP), created_at=stored.run.created_at,
                                home=Path(demo["home"]))
        store.dispose_engines()
    drift = Drift(provider="openai", model="gpt-5-mini-2025-08-07", currency="USD", requests=1234567,
                  ours=D("1234.5"), reported=D("1300.25"))
    for width in (100, 80):
        text = render(reconciliation_as_table(replace(rec, drift=(drift,))), width)
        assert_fits(text, width)
        flat = " ".join(text.split())
        assert all(v in flat for v in ("1,234,567", "1,234.50", "1,300.25", "65.75", "5.3%")), flat
