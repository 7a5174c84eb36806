"""The last tables moved to :class:`ledger.tables.FitTable` and :mod:`ledger.formats`: `ledger
batches`, `ledger demo` and `ledger dims list` at 100 and 80 columns (no line wider, no ``…``, ids
whole, paths and names folded but every character there, money as the JSON's exact decimals at 2
places, one unit-cost rule per column); the check's summary line in the number its counts take
("1 request"); and the console: prose wraps at a known terminal width, stays one line in a pipe,
and JSON and CSV are never wrapped."""
from __future__ import annotations

import csv
import io
import json
from decimal import Decimal as D

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from ledger import console, formats
from ledger.check.findings import CheckReport, Finding
from ledger.check.render import findings_as_table, summary_line
from ledger.cli import app
from ledger.formats import count, money, percent, plural, unit_costs
from test_tables import invoke, rows_of

runner = CliRunner()
WIDTHS = (100, 80)


def assert_fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if cell_len(line.rstrip()) > width]
    assert not long, f"{len(long)} lines wider than {width}: {long[:3]}"
    assert "…" not in text, [line for line in text.splitlines() if "…" in line][:3]


def flat(text: str) -> str:
    return " ".join(text.split())


def column(text: str, header: str) -> str:
    """The text of the column `header` in the tables of `text` that have it, top to bottom, its
    lines joined without spaces: a path or a name folded over several lines comes back whole."""
    parts: list[str] = []
    idx = None
    for line in text.splitlines():
        if line.startswith("┏"):  # a table begins: find the column in its (first) header line
            idx = None
        elif line.startswith("┃") and idx is None:
            heads = [c.strip() for c in line.strip().strip("┃").split("┃")]
            idx = heads.index(header) if header in heads else None
        elif line.startswith("│") and idx is not None:
            parts.append([c.strip() for c in line.strip().strip("│").split("│")][idx])
    return "".join(parts).replace(" ", "")


def printed(width: int | None, fn, *args, **kwargs) -> str:
    """What `fn` prints through ``console.out`` at a terminal `width` columns wide (None: no width
    known, as in a pipe), without colours."""
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(console.out, "_file", buf)
        mp.setattr(console.out, "_width", width)
        mp.setattr(console.out, "_color_system", None)
        mp.delenv("COLUMNS", raising=False)
        fn(*args, **kwargs)
    return buf.getvalue()


# ---- plural and the check's summary line ---------------------------------------------------------

def test_plural_takes_the_number_of_its_count():
    assert plural(1, "request") == "1 request" and plural(0, "request") == "0 requests"
    assert plural(1024, "point") == "1,024 points" and plural(2, "batch", "batches") == "2 batches"
    assert plural(1, "batch", "batches") == "1 batch"
    assert console.plural is formats.plural  # one rule, for the commands and the stages alike
    for not_a_count in (1.0, D("1")):
        with pytest.raises(TypeError):
            plural(not_a_count, "hour")


def test_the_check_summary_says_1_request_and_2_requests():
    one = CheckReport(start=None, end=None, batch=None, price_books=("aws@2026-11-09",), findings=(),
                      checked={"requests": 1, "meters": 1, "fleet": 1, "charges": 1})
    assert summary_line(one) == ("no problems: 1 request, 1 meter event, 1 fleet interval and 1 charge checked against "
                                 "1 price book")
    many = CheckReport(start=None, end=None, batch=None, price_books=("a@1", "b@2"), findings=(),
                       checked={"requests": 450787, "meters": 0, "fleet": 2, "charges": 7})
    assert summary_line(many) == ("no problems: 450,787 requests, 0 meter events, 2 fleet intervals and 7 charges "
                                  "checked against 2 price books")
    f = Finding(kind="no_price", source="requests", message="no price", sku="gpt-x", count=1)
    title = CheckReport(start=None, end=None, batch=None, price_books=(), findings=(f,))
    assert "ledger check: 1 problem" in printed(100, console.out.print, findings_as_table(title))


# ---- the console: prose wraps at a known width; JSON and CSV never --------------------------------

SENTENCE = ("no problems: 450,787 requests, 13,359 meter events, 7 fleet intervals and 7 charges checked "
            "against 8 price books")


def test_prose_wraps_between_words_at_a_known_width_and_stays_one_line_in_a_pipe():
    text = printed(40, console.out.print, SENTENCE, markup=False)
    assert_fits(text, 40)
    # 113 characters: three lines of 37, each broken between words, none past 40
    assert [line.rstrip() for line in text.splitlines()] == ["no problems: 450,787 requests, 13,359",
                                                              "meter events, 7 fleet intervals and 7",
                                                              "charges checked against 8 price books"]
    assert printed(None, console.out.print, SENTENCE, markup=False) == SENTENCE + "\n"  # no width: one line


# ---- the demo month ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo month built once (:func:`ledger.demo.run_demo`: what `ledger demo` runs), its result
    and its home."""
    from conftest import copy_demo

    return copy_demo(tmp_path_factory, tmp_path_factory.mktemp("tables-more") / "home")  # the session's demo


def cli(demo, *args: str, width: int = 100) -> str:
    """A command's stdout over the demo home at a terminal `width` columns wide."""
    return invoke(demo.home, *args, width=width)


def num(text: str) -> D:
    """A printed amount or percentage as a Decimal (``16,664.00`` -> 16664.00, ``30.6%`` -> 30.6)."""
    return D(text.replace(",", "").rstrip("%"))


def tables_of(text: str) -> dict[str, list[list[str]]]:
    """Every table of the text by its title (the line above its top border): its rows' cells, a row
    wrapped over several lines joined (a key cell on its first line only)."""
    out: dict[str, list[list[str]]] = {}
    lines = text.splitlines()
    title, rows = None, None
    for i, line in enumerate(lines):
        if line.startswith("┏"):
            title, rows = lines[i - 1].strip(), []
            out[title] = rows
        elif line.startswith("┡"):  # the header above it is not a row
            out[title] = rows = []
        elif line.startswith("│") and title is not None:
            cells = [c.strip() for c in line.strip("│").split("│")]
            if cells[0] or not rows:
                rows.append(cells)
            else:
                rows[-1] = [a + (" " + b if b else "") if a else b for a, b in zip(rows[-1], cells)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_demo_prints_fitting_tables_in_the_one_format(demo, width):
    from ledger.demo.cli import _print

    run = demo.summary
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(demo.home.parent)
        text = printed(width, _print, demo, False)
    assert_fits(text, width)  # the tables, and the prose around them wrapped between words
    rows, words = rows_of(text), flat(text)
    total = D(run["total"])
    tables = tables_of(text)
    # Display rounding (docs/exports.md): in every table the printed parts add up to the printed
    # total row, which is the exact total rounded; each part within a cent of its exact amount.
    by_cat, where, tenants = tables["by category (USD)"], tables["where the money went (USD)"], \
        next(v for k, v in tables.items() if k.startswith("tenants (USD"))
    for table, col in ((by_cat, 0), (where, 0), (tenants, 0), (tenants, 1)):
        *parts, last = table
        assert last[0] == "total"
        assert sum(num(p[col + 1]) for p in parts) == num(last[col + 1]), (table, col)
    assert num(by_cat[-1][1]) == num(where[-1][1]) == D("54486.23")  # the run total 54,486.225218
    # the shares too: 30.6 + 46.5 + 13.6 + 9.3 = 100.0 (idle slack's 46.563% alone would print 46.6%)
    assert [r[2] for r in where] == ["30.6%", "46.5%", "13.6%", "9.3%", "100.0%"]
    # the tenants' part of where the money went is the tenants table's total: 16,664.00, where each
    # tenant alone rounds to 2,909.27 + 4,350.32 + 2,165.49 + 6,310.28 + 928.65 = 16,664.01; umbrella's
    # 928.645829 has the smallest remainder and prints 928.64
    assert where[0][1] == tenants[-1][1] == "16,664.00"
    assert [r[1] for r in tenants[:-1]] == ["2,909.27", "4,350.32", "2,165.49", "6,310.28", "928.64"]
    # by category: test_demo's hand-worked GPU, 36,124.128, at 2 decimals; the others within a cent
    assert rows["gpu"] == ["36,124.13"]
    assert all(abs(num(rows[c][0]) - D(v)) < D("0.01") for c, v in run["by_category"].items() if D(v))
    # idle reserve 7,397.376 (test_demo) and the Q4 audit's 5,054.347826 unallocated
    assert rows["idle reserve (failure, canary, warm, maintenance)"][0] == "7,397.38"
    assert rows["unallocated (charges with rule none)"][0] == "5,054.35"
    # tenants: one rule for the cost-per-success column (all below 1: 6 decimals, never 4); acme's
    # 2,909.268234 and 0.09666 hand-checked in test_tables; failed work adds up to the run's
    per = unit_costs(D(t["cost_per_successful_task"]) for t in run["tenants"])
    for t, p, r in zip(run["tenants"], per, tenants):
        assert r[0] == t["tenant"] and r[3:] == [count(t["tasks"]["success"]), count(t["tasks"]["failure"]), p]
        assert abs(num(r[1]) - D(t["cost"])) < D("0.01") and abs(num(r[2]) - D(t["failed_work"])) < D("0.01")
    assert tenants[-1][2] == money(D(run["failed_work"]))
    assert rows["acme"][0] == "2,909.27" and rows["acme"][-1] == "0.096660"
    key = "cost_per_successful_task_all_in"
    assert (f"all-in cost per successful task: {unit_costs([D(run[key])])[0]} = run total "
            f"{money(D(run[key + '_numerator']))} ÷ {count(run[key + '_denominator'])} successful tasks") in words
    assert (f"total {money(total)} USD = lines {money(D(run['lines_total']))} ({count(run['lines'])} lines) "
            "(conserved: lines == total)") in words
    assert f"built 22 fleet intervals, {count(demo.inputs.rows['requests'])} requests," in words  # August to October


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_batches_fit_with_ids_whole_paths_folded_and_counts_grouped(demo, width):
    data = json.loads(cli(demo, "batches", "--json"))
    text = cli(demo, "batches", width=width)
    assert_fits(text, width)
    # the demo's five kinds, and the five of its open month (ledger.demo.guardrails)
    assert f"batches ({len(data)}; times UTC)" in flat(text) and len(data) == 10
    rows = rows_of(text)
    for d in data:  # an id on one line, to copy into `ledger batches undo ID`
        assert d["kind"] in rows[d["id"]] and count(d["rows_read"]) in rows[d["id"]], (d["id"], rows[d["id"]])
        assert count(d["rows_new"]) in rows[d["id"]]
    requests = next(d for d in data if d["kind"] == "requests")
    assert requests["rows_read"] == demo.inputs.rows["requests"] and count(requests["rows_read"]) == "1,241,112"
    # every path there to the last character, folded rather than cut
    assert column(text, "files") == "".join(", ".join(f["path"] for f in d["files"]) for d in data).replace(" ", "")


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_dims_list_fits(demo, width):
    text = cli(demo, "dims", "list", "tenant", width=width)
    assert_fits(text, width)
    rows = rows_of(text)
    assert rows["acme"] == ["Acme Corp", "finance@acme.example"]  # the demo's tenants (ledger/demo/month.py)
    assert set(rows) == {"acme", "globex", "hooli", "initech", "umbrella"}


@pytest.mark.slow
def test_json_and_csv_are_never_wrapped(demo):
    text = cli(demo, "batches", "--json", width=40)
    assert text == json.dumps(json.loads(text), indent=2) + "\n"  # byte for byte what json.dumps writes
    assert max(map(len, text.splitlines())) > 64  # a SHA-256 line, left whole at 40 columns
    text = cli(demo, "batches", "--csv", width=40)
    batches = json.loads(cli(demo, "batches", "--json", width=200))
    assert len(text.splitlines()) == 1 + len(batches) and all(len(r) == 10 for r in csv.reader(io.StringIO(text)))
    text = cli(demo, "dims", "list", "tenant", "--csv", width=20)
    assert text.splitlines()[1] == '"acme","Acme Corp","finance@acme.example"'


@pytest.mark.store
@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_name_and_owner_fold_and_keep_every_character(ledger_home, width):
    name, owner = "tenant-" + "x" * 150, "finance-operations-team@" + "a" * 60 + ".example"
    r = runner.invoke(app, ["dims", "add", "tenant", name, "--display-name", "Acme Corporation of the Long Name",
                            "--owner", owner])
    assert r.exit_code == 0, r.output
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(console.out, "_width", width)
        r = runner.invoke(app, ["dims", "list", "tenant"], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    assert_fits(r.stdout, width)
    assert column(r.stdout, "name") == name and column(r.stdout, "owner") == owner
