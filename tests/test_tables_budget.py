"""The budget's tables (`ledger budget PLAN`, `ledger budget compare PLAN --period M` with its
drivers table, notes and matching note) at 100 and 80 columns: no line wider than the terminal,
nothing cut (no ``…``), money as :func:`ledger.formats.money` writes the JSON's exact decimals,
percentages at 1 decimal, prose wrapped rather than run past the edge."""
from __future__ import annotations

import json
from decimal import Decimal as D
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console, Group
from typer.testing import CliRunner

from ledger.cli import app
from ledger.formats import count, money, percent
from test_budget_drivers import DEMO_PLAN
from test_tables import invoke

runner = CliRunner()
PLAN = Path(__file__).resolve().parent.parent / "examples" / "plan.toml"
DRIVERS = ("traffic", "output length", "cache hit rate", "fleet", "prices", "other")


def num(text: str) -> D:
    """A printed amount as a Decimal: ``+2,278.66`` is 2278.66, ``—`` is 0."""
    return D(0) if text == "—" else D(text.replace(",", "").replace("+", ""))


def assert_fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if cell_len(line.rstrip()) > width]
    assert not long, f"{len(long)} lines wider than {width}: {long[:3]}"
    assert "…" not in text, [line for line in text.splitlines() if "…" in line][:3]


def cells(text: str) -> list[list[str]]:
    """The cells of every table row (lines between │ borders), in order."""
    return [[c.strip() for c in line.strip().strip("│").split("│")] for line in text.splitlines()
            if line.startswith("│")]


def by_key(text: str, keys: int = 1) -> dict[tuple[str, ...], list[str]]:
    """Every table row's cells by its first `keys` cells; a table split in parts repeats its keys in
    each part, so a row's cells are those of all its parts, left to right."""
    out: dict[tuple[str, ...], list[str]] = {}
    for row in cells(text):
        out.setdefault(tuple(row[:keys]), []).extend(row[keys:])
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def m(value: str, signed: bool = False) -> str:
    return money(D(value), signed=signed)


# ---- ledger budget PLAN --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def forecast(tmp_path_factory) -> dict:
    """examples/plan.toml priced with the shipped books (no ledger needed): its JSON, and its tables
    at 100 and 80 columns."""
    home = tmp_path_factory.mktemp("budget-tables") / "home"
    doc = json.loads(invoke(home, "budget", str(PLAN), "--json"))
    return {"doc": doc, **{w: invoke(home, "budget", str(PLAN), width=w) for w in (100, 80)}}


@pytest.mark.slow
@pytest.mark.parametrize("width", [100, 80])
def test_budget_tables_fit_and_show_the_json_money(forecast, width):
    doc, text = forecast["doc"], forecast[width]
    assert_fits(text, width)
    names = [s["name"] for s in doc["scenarios"]]
    assert names == ["best", "base", "worst"]
    rows = by_key(text)
    total = {(s["scenario"], s["month"]): s["total"] for s in doc["summary"]}
    gpus = by_key(gpu_rows(doc))
    cent = D("0.01")
    for month in doc["months"]:  # the month's totals (display-rounded: within a cent), then its pools' GPUs
        shown = rows[(month,)]
        assert shown[len(names):] == gpus[(month,)], month
        assert all(abs(num(x) - D(total[(n, month)])) < cent for x, n in zip(shown, names)), month
    # by quarter: each quarter's months add up to its printed subtotal, the quarters to the printed total
    quarters = {q["quarter"] for q in doc["quarters"]}
    assert quarters == {"2026-Q4", "2027-Q1", "2027-Q2", "2027-Q3"}
    for i, n in enumerate(names):
        for q in quarters:
            months = next(x["months"] for x in doc["quarters"] if x["quarter"] == q)
            assert sum(num(rows[(mo,)][i]) for mo in months) == num(rows[(q,)][i]), (n, q)
        assert sum(num(rows[(q,)][i]) for q in quarters) == num(rows[("total",)][i])
    assert rows[("total",)][:len(names)] == [m(doc["totals"][n]["total"]) for n in names]
    for c in doc["totals"]["base"]["by_category"]:
        if any(D(doc["totals"][n]["by_category"][c]) for n in names):
            assert all(abs(num(x) - D(doc["totals"][n]["by_category"][c])) < cent
                       for x, n in zip(rows[(c,)], names)), c
    # by hand from the JSON: base over the year 696,270.636660 -> 696,270.64; worst in 2027-09
    # 109,117.156232 -> 109,117.16 (half to even at the cent)
    assert doc["totals"]["base"]["total"] == "696270.636660" and rows[("total",)][1] == "696,270.64"
    assert total[("worst", "2027-09")] == "109117.156232" and rows[("2027-09",)][2] in ("109,117.16", "109,117.15")
    # the plan's fixed charges, 12 months each: evaluation 2,450.00 x 12 = 29,400.00, on-call 7,200.00
    # x 12 = 86,400.00, the audit 5,000.00 x 12 = 60,000.00, NAT 412.80 x 12 = 4,953.60
    assert rows[("evaluation",)] == ["29,400.00"] * 3 and rows[("engineering_ops",)] == ["86,400.00"] * 3
    assert rows[("other",)] == ["60,000.00"] * 3 and rows[("network",)] == ["4,953.60"] * 3
    # the titles, wrapped at 80 (the category title is 85 wide), every word kept
    words = flat(text)
    assert "budget demo-fleet-fy27 · USD · sizing" in words
    assert "total by category, 2026-10 to 2027-09" in words and "GPUs per pool (best / base / worst)" in words


def gpu_rows(doc: dict) -> str:
    """The GPU table's rows as the JSON's pools give them: per month and pool `best / base / worst`,
    the GPUs of each scenario's first segment of the month (a pool in parts adds its parts), as a
    bordered text by_key reads."""
    first: dict[tuple, str] = {}
    for g in doc["pools"]:
        key = (g["scenario"], g["pool"], g["month"])
        first[key] = min(first.get(key, g["from"]), g["from"])
    n: dict[tuple, int] = {}
    for g in doc["pools"]:
        key = (g["scenario"], g["pool"], g["month"])
        if g["from"] == first[key]:
            n[key] = n.get(key, 0) + g["gpus"]
    pools = list(dict.fromkeys(g["pool"] for g in doc["pools"]))
    names = [s["name"] for s in doc["scenarios"]]
    return "\n".join("│ " + " │ ".join([month, *(" / ".join(count(n[(s, p, month)]) for s in names) for p in pools)])
                     + " │" for month in doc["months"])


@pytest.mark.slow
def test_budget_gpu_table_by_hand(forecast):
    rows = by_key(forecast[80])
    # October by hand from plan.toml: h100-chat 6,000 TPM = 100 tok/s, one replica serves 413.89 tok/s
    # x util 0.6 = 248.3 at its one measured point (166.15 tok/s/user, above the SLA of 100): 1 replica
    # + 1 failure reserve = 2 GPUs; h200-code 12,000 TPM = 200 tok/s, one 4-GPU replica serves between
    # 537.4 and 987.3 tok/s x 0.7 at the SLA of 70 (between the points at 73.32 and 67.43): 4 GPUs;
    # in every scenario (best, base and worst all fit in one replica in October)
    assert rows[("2026-10",)][-2:] == ["2 / 2 / 2", "4 / 4 / 4"]
    # a month where the scenarios differ, as the JSON has it, and a count of 12 GPUs in the cell
    assert rows[("2027-09",)][-2:] == ["2 / 2 / 3", "4 / 8 / 12"]


# ---- ledger budget compare PLAN --period M (with its drivers) ------------------------------------

@pytest.fixture(scope="module")
def compare(tmp_path_factory) -> dict:
    """The demo month and test_budget_drivers' plan of it (its pools and gpt-5; no charges, so the
    ledger's other categories are warned about): `budget compare` as JSON and at 100 and 80 columns."""
    from conftest import copy_demo

    root = tmp_path_factory.mktemp("budget-compare-tables")
    home = root / "home"
    copy_demo(tmp_path_factory, home)  # the session's demo, copied
    plan = root / "plan.toml"
    plan.write_text(DEMO_PLAN)
    args = ("budget", "compare", str(plan), "--period", "2026-10")
    return {"doc": json.loads(invoke(home, *args, "--json")), **{w: invoke(home, *args, width=w) for w in (100, 80)}}


@pytest.mark.slow
@pytest.mark.parametrize("width", [100, 80])
def test_budget_compare_fits_and_shows_the_json_money(compare, width):
    doc, text = compare["doc"], compare[width]
    assert_fits(text, width)
    rows = by_key(text, keys=2)
    cent = D("0.01")
    for r in (*doc["categories"], *doc["pools"], doc["total"]):
        if r["dimension"] == "category" and not D(r["forecast"]) and not D(r["actual"]):
            assert (r["dimension"], r["key"]) not in rows
            continue
        pct = "—" if r["relative_error"] is None else percent(D(r["relative_error"]), signed=True)
        f, a, e, shown_pct = rows[(r["dimension"], r["key"])]
        # display rounding (docs/exports.md): each amount within a cent of the JSON's exact one, the
        # error the printed actual minus the printed forecast
        assert abs(num(f) - D(r["forecast"])) < cent and abs(num(a) - D(r["actual"])) < cent, r
        assert num(e) == num(a) - num(f) and shown_pct == pct, r
    for col in range(3):  # the categories add up to the total row as printed
        assert sum(num(v[col]) for k, v in rows.items() if k[0] == "category") == num(rows[("total", "total")][col])
    # by hand (test_budget_compare): h100-chat 2 GPUs x 744 h x $6.88 = 10,237.44 forecast, 1,497 GPU-h
    # x $6.88 = 10,299.36 actual, +61.92 = +0.6%; h200-code 23,546.112 -> 23,546.11, 25,824.768 ->
    # 25,824.77, +2,278.656 -> +2,278.66, 0.0968 -> +9.7%; the run's total 54,486.225218 -> 54,486.23
    assert rows[("pool", "h100-chat")] == ["10,237.44", "10,299.36", "+61.92", "+0.6%"]
    assert rows[("pool", "h200-code")] == ["23,546.11", "25,824.77", "+2,278.66", "+9.7%"]
    assert doc["total"]["actual"] == "54486.225218" and rows[("total", "total")][1] == "54,486.23"

    d = doc["drivers"]
    drivers = {k: [num(v) for v in vs] for k, vs in by_key(text).items() if k in {("error",), *((n,) for n in DRIVERS)}}
    other = sum((D(c["other"]) for c in d["categories"]), D(0))
    exact = {"error": [D(x["error"]) for x in d["items"]] + [other, D(d["total"]["error"])],
             **{n: [D(x[n.replace(" ", "_")]) for x in d["items"]] + [other if n == "other" else D(0),
                                                                        D(d["total"][n.replace(" ", "_")])]
                for n in DRIVERS}}
    for name, values in exact.items():  # within two cents of the exact (one cent, plus the total's own)
        assert all(abs(p - x) < 2 * cent for p, x in zip(drivers[(name,)], values)), name
        assert sum(drivers[(name,)][:-1]) == drivers[(name,)][-1], name  # each row adds up to its total
    for j in range(len(drivers[("error",)])):  # each column's drivers add up to its printed error
        assert sum(drivers[(n,)][j] for n in DRIVERS) == drivers[("error",)][j]
    assert drivers[("error",)][-1] == num(rows[("total", "total")][2])  # the comparison's printed error
    # by hand (test_budget_drivers): the fleet's extra GPU-hours at the plan's prices, h100-chat 9 x
    # $6.88 = +61.92 and h200-code 288 x $7.912 = +2,278.656 -> +2,278.66; gpt-5's prices +0.000004 -> 0.00
    items = [x["key"] for x in d["items"]]
    assert items == ["h100-chat", "h200-code", "openai/gpt-5"]
    assert drivers[("fleet",)][:2] == [D("61.92"), D("2278.66")] and drivers[("prices",)][2] == 0
    if width == 80:  # the drivers do not fit side by side (83 wide): two tables, the driver names in each
        assert sum(1 for row in cells(text) if row[0] == "fleet") == 2

    words = flat(text)
    assert f"forecast (base) vs actual · 2026-10 · run {doc['run_id'][:12]} · USD" in words
    assert "why the forecast missed · 2026-10 · USD · drivers substituted top to bottom (docs/budgets.md)" in words
    # the matching note under the comparison, every warning whole
    assert "matched: pools h100-chat, h200-code; provider models openai/gpt-5; categories gpu, provider_tokens" \
        in words
    assert doc["matching"]["warnings"] and all(f"warning: {w}" in words for w in doc["matching"]["warnings"])
    # the notes: measures at one rule per pair, shares as percentages, GPUs counted, money signed
    gpt = d["items"][2]["measures"]
    assert (gpt["cached_share"], gpt["input_tokens"]) == ({"planned": "0.6", "actual": "0.6113"},
                                                          {"planned": "60000000", "actual": "57547884"})
    assert ("openai/gpt-5: input tokens 57,547,884 vs 60,000,000 planned; cached share 61.1% vs 60.0%; "
            "output tokens 10,624,864 vs 11,000,000") in words
    h200 = d["items"][1]["measures"]
    assert h200["gpu_hours"] == {"planned": "2976", "actual": "3264"}
    # GPUs named as the JSON names them (issue 28): gpus_at_traffic at the traffic step, gpus at the actual TPM
    assert (f"GPUs {h200['gpus']['planned']} planned, {h200['gpus_at_traffic']['actual']} at the actual traffic "
            f"(the month's requests at the planned output length), {h200['gpus']['actual']} at the actual TPM "
            "(traffic and output length); GPU-hours 3,264 vs 2,976 planned") in words
    parts = ", ".join(f"{c['key']} {m(c['other'], True)}" for c in d["categories"] if D(c["other"]))
    assert "tool +2,378.87" in parts and "other +5,054.35" in parts  # the Q4 audit's 31 days of 92
    assert f"other (no driver describes it: meters, fixed charges, pools or models not in the plan): {parts}" in words
    assert all(f"note: {n}" in words for n in d["notes"])
    assert "0.61 vs" not in words and "cached share 0.6" not in words


def test_a_long_note_wraps_at_the_terminal_width():
    """The drivers' notes are prose: wrapped between words at the width printed at, never one long
    line (the CLI's console does not wrap by itself); their measures at one rule per pair."""
    from ledger.budget.drivers import DriverRow, Drivers
    from ledger.budget.render import drivers_notes

    row = DriverRow(dimension="model", key="openai/gpt-5", forecast=D("144.5"), actual=D("138.608725"),
                    error=D("-5.891275"), traffic=D("-5.891275"), output_length=D(0), cache_hit_rate=D(0),
                    fleet=D(0), prices=D(0), other=D(0),
                    measures=(("input_tokens", D("60000000"), D("57547884.5")), ("cached_share", D("0.6"), None),
                              ("output_tokens", D("11000000"), D("10624864"))))
    d = Drivers(month="2026-10", scenario="base", statistic="p99", items=(row,), categories=(), total=row,
                notes=("pool h100-chat: no planned output length (neither the pool's osl nor its curve's): "
                       "the whole change of TPM counts as traffic",))
    notes = drivers_notes(d)
    # input tokens: 57,547,884.5 is not whole, so the pair takes 1 decimal; an unknown share says so
    assert notes[0].plain == ("openai/gpt-5: input tokens 57,547,884.5 vs 60,000,000.0 planned; cached share "
                              "unknown vs 60.0%; output tokens 10,624,864 vs 11,000,000")
    c = Console(width=40, record=True, soft_wrap=True, color_system=None)
    c.print(Group(*notes))  # as `budget compare` prints them, under its tables
    text = c.export_text()
    assert_fits(text, 40)
    assert flat(text) == " ".join(flat(n.plain) for n in notes)
    assert len(text.splitlines()) > len(notes)
