"""Hostile input meets every output: names that look like formulas, exports aimed at the ledger
itself, a write that fails half way, and `ledger demo --force` pointed at a folder that is not a
ledger home (docs/exports.md, "Safe outputs").

Names such as ``=1+1``, ``@SUM(A1)``, ``+1`` and ``-1+2`` enter through the real ingest and leave
through the real CLI; names with a tab, CR or LF (which ingest refuses) are given to the writers
directly. Every CSV is then opened by LibreOffice headless (its own profile per run), and the
converted workbook must hold no formula, the names as text with their leading quote, one row per
record, and the amounts as numbers.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import sqlite3
import subprocess
import textwrap
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal as D
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.outputs import NUMBER, OutputError, atomic_output, csv_cell, csv_text, safe_text, write_output
from test_allocate_support import TEST_BOOK

runner = CliRunner()
PERIOD = "2026-10"
HYPERLINK = '=HYPERLINK("http://x","y")'
#: Names the ingest accepts: each would run as a formula in a spreadsheet without the escape.
TENANTS = ("=1+1", "@SUM(A1)", "+1", "-1+2", HYPERLINK)
PRODUCT, MODEL, LATE_MODEL = "-2+3", "@model", "=9+9"
#: Names with control characters (ingest refuses them): given to the writers directly.
CONTROL = ("\t=1+1", '\r=HYPERLINK("http://x","y")', "\n=2+3", "two\nlines", " =3+4")
TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")

FILES = {
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,H100,2,us-east-1,on_demand,serving,1
    """,
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status
        q1,2026-10-01T10:05:00Z,=1+1,-2+3,llama,p1,,t1,1000,0,800,ok
        q2,2026-10-01T10:10:00Z,@SUM(A1),chat,llama,p1,,t2,1000,0,800,ok
        q3,2026-10-01T10:15:00Z,+1,chat,llama,p1,,t3,1000,0,800,ok
        q4,2026-10-01T10:20:00Z,-1+2,chat,llama,p1,,t4,1000,0,800,ok
        q5,2026-10-01T10:25:00Z,"=HYPERLINK(""http://x"",""y"")",chat,@model,p1,,t5,1000,0,800,ok
    """,
    "charges": """
        charge_id,period_start,period_end,category,description,amount,currency,allocate
        c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Grafana,310.00,USD,even
    """,
    # after the run: a provider model no book prices, so `ledger check` names it in a finding
    "late": """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status
        q9,2026-10-01T12:30:00Z,=1+1,chat,=9+9,,openai,t9,100,0,10,ok
    """,
}


def cli(*args: str, code: int = 0) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == code, (args, r.output)
    return r.stdout


def check(*args: str) -> str:
    """`ledger check`: exit 1 when it finds something (here it always does)."""
    return cli("check", "--period", PERIOD, *args, code=1)


def refused(*args: str) -> str:
    """The one-line error of a command that must fail."""
    r = runner.invoke(app, list(args))
    assert r.exit_code == 1, (args, r.output)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@dataclass
class Hostile:
    home: Path
    run: dict       # `allocate --json`
    findings: int   # `check --json` problems after the late batch


@pytest.fixture
def hostile(ledger_home, tmp_path) -> Hostile:
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(TEST_BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "books"))
    for kind in ("fleet", "requests", "charges"):
        path = tmp_path / f"{kind}.csv"
        path.write_text(textwrap.dedent(FILES[kind]).strip() + "\n", encoding="utf-8")
        cli("ingest", kind, str(path), "--register-new")
    run = json.loads(cli("allocate", "--period", PERIOD, "--json"))
    late = tmp_path / "late.csv"
    late.write_text(textwrap.dedent(FILES["late"]).strip() + "\n", encoding="utf-8")
    cli("ingest", "requests", str(late), "--register-new")
    findings = json.loads(check("--json"))["problems"]
    assert findings >= 1
    return Hostile(ledger_home, run, findings)


# ---- LibreOffice ---------------------------------------------------------------------------------

def libreoffice(files: list[Path], outdir: Path) -> dict[str, openpyxl.Workbook]:
    """Each CSV opened by LibreOffice headless (comma, double quote, UTF-8, en-US numbers, formulas
    evaluated: as a person double-clicking it would) and saved as .xlsx; the workbooks by file name."""
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not installed: apt-get install libreoffice-calc-nogui")
    outdir.mkdir(parents=True, exist_ok=True)
    profile = (outdir / ".lo-profile").as_uri()
    proc = subprocess.run([soffice, "--headless", "--norestore", "--nolockcheck", f"-env:UserInstallation={profile}",
                           "--infilter=CSV:44,34,76,1,,1033,false,true,false,false,false,-1,true",
                           "--convert-to", "xlsx", "--outdir", str(outdir), *map(str, files)],
                          capture_output=True, text=True, timeout=300)
    out = {}
    for f in files:
        converted = outdir / (f.stem + ".xlsx")
        assert converted.is_file(), proc.stdout + proc.stderr
        out[f.name] = openpyxl.load_workbook(converted)
    return out


def cells(wb: openpyxl.Workbook) -> list:
    return [c for ws in wb for row in ws.iter_rows() for c in row if c.value is not None]


def test_the_libreoffice_harness_sees_a_formula_when_there_is_one(tmp_path):
    # without the escape, LibreOffice runs a quoted =1+1 as a formula: the checks below can fail
    raw = tmp_path / "raw.csv"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([["name", "amount"], ["=1+1", "-3.2"]])
    raw.write_text(buf.getvalue(), encoding="utf-8")
    wb = libreoffice([raw], tmp_path / "lo")["raw.csv"]
    assert [c.data_type for c in wb.active[2]] == ["f", "n"]


def assert_inert(wb: openpyxl.Workbook, names, *, rows: int) -> None:
    """No formula anywhere; every name present as text with its leading quote; `rows` rows."""
    found = cells(wb)
    assert not [c.coordinate for c in found if c.data_type == "f"]
    texts = {c.value for c in found if c.data_type == "s"}
    for name in names:
        assert "'" + name in texts, name
    assert wb.active.max_row == rows


# ---- the rule itself -----------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1+2", "'-1+2"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1+1", "'\t=1+1"),
    ("\r=1", "'\r=1"), ("\n=2+3", "'\n=2+3"), (" =3+4", "' =3+4"), ("\u00a0+1", "'\u00a0+1"),
    ("two\nlines", "two\nlines"), ("acme", "acme"), ("a=b", "a=b"), ("", ""), (None, None),
])
def test_safe_text_prefixes_a_quote_to_text_a_spreadsheet_would_run(value, expected):
    assert safe_text(value) == expected


@pytest.mark.parametrize("value,numeric,expected", [
    (D("-3.2"), False, "-3.2"), (D("-12.500000"), False, "-12.500000"), (-7, False, "-7"), (D("0E-6"), False,
                                                                                            "0.000000"),
    (2.5, False, "2.5"), ("-12.500000", True, "-12.500000"), ("324.400000", True, "324.400000"),
    ("-12.5", False, "'-12.5"),            # a text that happens to look like a number, in a text column
    ("-1+2", True, "'-1+2"), ("+1", True, "'+1"), ("=1", True, "'=1"),  # not a plain decimal: text
    ("", True, ""), (None, False, ""), (D("NaN"), False, "NaN"), (D("-Infinity"), False, "'-Infinity"),
    (True, False, "True"),
])
def test_csv_cell_keeps_numbers_numbers_and_neutralizes_text(value, numeric, expected):
    assert csv_cell(value, numeric=numeric) == expected
    if expected.startswith(TRIGGERS):
        assert NUMBER.fullmatch(expected)


def test_csv_text_quotes_every_field_header_included_and_keeps_line_breaks_in_their_row():
    text = csv_text(["=head", "amount"], [["two\nlines", D("-3.2")], {"=head": "\r=1", "amount": "-1.5"}],
                    numeric=("amount",))
    assert text == '"\'=head","amount"\n"two\nlines","-3.2"\n"\'\r=1","-1.5"\n'
    assert list(csv.reader(io.StringIO(text))) == [["'=head", "amount"], ["two\nlines", "-3.2"], ["'\r=1", "-1.5"]]


# ---- end to end: ingest -> CLI -> CSV -> LibreOffice ---------------------------------------------

def _fields_are_safe(text: str) -> None:
    for row in csv.reader(io.StringIO(text)):
        for f in row:
            assert not f.startswith(TRIGGERS) or NUMBER.fullmatch(f), f


@pytest.mark.store
def test_formula_names_from_ingest_are_inert_text_in_every_csv_the_cli_writes(hostile, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cli("export", "--period", PERIOD, "--lines", str(out / "lines.csv"), "--focus", str(out / "focus.csv"))
    stdout = {"unit_economics.csv": ("report", "unit-economics", "--period", PERIOD, "--csv"),
              "by_product.csv": ("report", "unit-economics", "--period", PERIOD, "--by", "product", "--csv"),
              "by_model.csv": ("report", "unit-economics", "--period", PERIOD, "--by", "model", "--csv"),
              "tenants.csv": ("report", "tenants", "--period", PERIOD, "--csv"),
              "runs.csv": ("runs", "--csv"),
              }
    for name, args in stdout.items():
        (out / name).write_text(cli(*args), encoding="utf-8")
    (out / "check.csv").write_text(check("--csv"), encoding="utf-8")
    report = {by: json.loads(cli("report", "unit-economics", "--period", PERIOD, "--by", by, "--json"))["rows"]
              for by in ("tenant", "product", "model")}
    lines = hostile.run["lines"]
    records = {"lines.csv": lines, "focus.csv": lines, "unit_economics.csv": len(report["tenant"]),
               "by_product.csv": len(report["product"]), "by_model.csv": len(report["model"]), "runs.csv": 1,
               "check.csv": hostile.findings}
    names = {"lines.csv": TENANTS + (PRODUCT, MODEL), "focus.csv": TENANTS + (PRODUCT, MODEL),
             "unit_economics.csv": TENANTS, "by_product.csv": (PRODUCT,), "by_model.csv": (MODEL,),
             "tenants.csv": TENANTS, "runs.csv": (), "check.csv": (LATE_MODEL,)}
    files = sorted(out.iterdir())
    for f in files:
        text = f.read_text(encoding="utf-8")
        _fields_are_safe(text)
        fields = {x for row in csv.reader(io.StringIO(text)) for x in row}
        assert {"'" + n for n in names[f.name]} <= fields, f.name
        assert all(line.startswith('"') for line in text.splitlines()), f"{f.name}: every field is quoted"

    books = libreoffice(files, tmp_path / "lo")
    side = list(csv.reader(io.StringIO((out / "tenants.csv").read_text(encoding="utf-8"))))
    assert len(side[0]) == 1 + len(TENANTS) == books["tenants.csv"].active.max_column  # a column per tenant
    records["tenants.csv"] = len(side) - 1  # a row per metric and provenance item
    for f in files:
        assert_inert(books[f.name], names[f.name], rows=1 + records[f.name])
    # the amounts stay numbers through the quoting: LibreOffice adds them up to the run total
    ws = books["lines.csv"].active
    head = [c.value for c in ws[1]]
    amounts = [r[head.index("amount")] for r in ws.iter_rows(min_row=2, values_only=True)]
    assert all(isinstance(a, (int, float)) for a in amounts)
    assert sum(D(str(a)) for a in amounts) == D(hostile.run["total"])
    focus = books["focus.csv"].active
    head = [c.value for c in focus[1]]
    billed = [r[head.index("BilledCost")] for r in focus.iter_rows(min_row=2, values_only=True)]
    assert all(isinstance(b, (int, float)) for b in billed) and len(billed) == lines


@pytest.mark.store
def test_formula_names_are_text_in_the_workbook_and_its_own_formulas_stay_formulas(hostile, tmp_path):
    from ledger.export.xlsx import recalculate

    path = tmp_path / "run.xlsx"
    cli("export", "--period", PERIOD, "--xlsx", str(path))
    wb = openpyxl.load_workbook(path)
    found = cells(wb)
    for name in TENANTS + (PRODUCT, MODEL):
        assert any(c.value == "'" + name and c.data_type == "s" for c in found), name
    formulas = [c for c in found if c.data_type == "f"]
    assert formulas and all(c.value.startswith(("=SUM", "=IF", "=B")) for c in formulas)
    recalc = openpyxl.load_workbook(recalculate(path, tmp_path / "recalc"), data_only=True)
    values = [c.value for c in cells(recalc)]
    assert "'" + HYPERLINK in values and "y" not in values
    ws = recalc["Lines"]
    head = [c.value for c in ws[1]]
    tenants = {r[head.index("tenant")] for r in ws.iter_rows(min_row=2, values_only=True) if r[1] == "tenant"}
    assert tenants == {"'" + t for t in TENANTS}  # =1+1 never became 2, nor +1 the number 1


# ---- control characters: the writers themselves --------------------------------------------------

def _control_run():
    from ledger.allocate import Line
    from ledger.economics import RunData, RunInfo

    amounts = (D("10.500000"), D("-3.200000"), D("-12.500000"), D("7.000000"), D("1.000000"))
    lines = tuple(Line(day=date(2026, 10, 1), kind="tenant", tenant=name, product="\t@product", model="\n-model",
                       pool=None, provider=None, category="observability", work="succeeded", shared_from=None,
                       quantity=D("3600"), unit="second", amount=amount)
                  for name, amount in zip(CONTROL, amounts, strict=True))
    info = RunInfo(run_id="r-control", start=datetime(2026, 10, 1, tzinfo=timezone.utc),
                   end=datetime(2026, 11, 1, tzinfo=timezone.utc), currency="USD", price_books=("b@1",),
                   idle_policy="separate", basis="active_tokens")
    return RunData(info=info, lines=lines, usage=(), tasks=()), amounts


def test_tabs_returns_and_line_breaks_never_make_a_formula_or_a_broken_row(tmp_path):
    from ledger.export import allocation_as_csv, allocation_as_focus, allocation_as_xlsx
    from ledger.reports import tenants_as_csv, unit_economics, unit_economics_as_csv

    data, amounts = _control_run()
    report = unit_economics(data, by="tenant")
    out = tmp_path / "out"
    out.mkdir()
    texts = {"lines.csv": allocation_as_csv(data), "focus.csv": allocation_as_focus(data),
             "unit_economics.csv": unit_economics_as_csv(report), "tenants.csv": tenants_as_csv(report)}
    for name, text in texts.items():
        write_output(out / name, text)
        _fields_are_safe(text)
    records = {"lines.csv": len(data.lines), "focus.csv": len(data.lines), "unit_economics.csv": len(report.rows)}
    books = libreoffice(sorted(out.iterdir()), tmp_path / "lo")
    for name, wb in books.items():
        found = cells(wb)
        assert not [c.coordinate for c in found if c.data_type == "f"], name
        texts_in = [c.value for c in found if c.data_type == "s"]
        for tenant in CONTROL:
            want = safe_text(tenant)
            # LibreOffice keeps the text (a lone CR may come back as a line feed) behind its quote
            assert any(t.replace("\r\n", "\n").replace("\r", "\n") == want.replace("\r", "\n") for t in texts_in), \
                (name, tenant)
        if name in records:
            assert wb.active.max_row == 1 + records[name], name
        else:
            assert wb.active.max_column == 1 + len(CONTROL)
    ws = books["lines.csv"].active
    head = [c.value for c in ws[1]]
    got = [r[head.index("amount")] for r in ws.iter_rows(min_row=2, values_only=True)]
    assert got == [pytest.approx(float(a)) for a in amounts]  # -3.2 and -12.5 are numbers, not text

    wb = openpyxl.load_workbook(io.BytesIO(allocation_as_xlsx(data)))
    found = cells(wb)
    for tenant in CONTROL:  # (XML reads a CR as a line feed)
        assert any(c.value == safe_text(tenant).replace("\r", "\n") and c.data_type == "s" for c in found), \
            repr(tenant)
    assert not [c for c in found if c.data_type == "f" and any(t.strip() in c.value for t in CONTROL)]
    lines_ws = wb["Lines"]
    head = [c.value for c in lines_ws[1]]
    got = [r[head.index("amount")] for r in lines_ws.iter_rows(min_row=2, values_only=True)]
    assert all(isinstance(a, (int, float)) for a in got) and [D(str(a)) for a in got] == list(amounts)


# ---- outputs that would destroy the ledger -------------------------------------------------------

def _sqlite_db(home: Path) -> Path:
    from ledger import config

    url = config.database_url()
    if not url.startswith("sqlite"):
        pytest.skip("the ledger DB is not SQLite here (LEDGER_TEST_DATABASE_URL): no DB file to protect")
    return home / "ledger.db"


def _report() -> str:
    return cli("report", "unit-economics", "--period", PERIOD, "--json")


@pytest.mark.store
def test_an_export_onto_the_ledger_db_is_refused_and_the_ledger_still_works(hostile, tmp_path):
    db = _sqlite_db(hostile.home)
    before = _report()
    link = tmp_path / "innocent.csv"
    link.symlink_to(db)
    dotted = hostile.home / "facts" / ".." / "ledger.db"
    for target in (db, Path(str(db) + "-wal"), Path(str(db) + "-shm"), Path(str(db) + "-journal"), link, dotted):
        for option in ("--lines", "--focus", "--xlsx"):
            msg = refused("export", "--period", PERIOD, option, str(target))
            assert msg.startswith(f"refusing to write {target}: it is the ledger's own database file"), msg
    assert db.read_bytes()[:16] == b"SQLite format 3\x00"
    assert _report() == before  # the same run, the same numbers
    # nothing is written when one of several outputs is refused, checked before any work
    ok = tmp_path / "ok.xlsx"
    refused("export", "--period", PERIOD, "--xlsx", str(ok), "--lines", str(db))
    assert not ok.exists()
    assert "are the same file" in refused("export", "--period", PERIOD, "--lines", str(ok), "--focus", str(ok))


@pytest.mark.store
def test_an_export_onto_a_fact_file_is_refused_and_the_facts_stay(hostile, tmp_path):
    facts = hostile.home / "facts"
    fact = sorted((facts / "requests").glob("month=*/*.parquet"))[0]
    digest = hashlib.sha256(fact.read_bytes()).hexdigest()
    before = _report()
    for target in (fact, facts / "requests" / "new.csv", facts / "lines.csv"):
        msg = refused("export", "--period", PERIOD, "--focus", str(target))
        assert "it is inside the ledger's facts folder" in msg
    assert hashlib.sha256(fact.read_bytes()).hexdigest() == digest
    assert not (facts / "requests" / "new.csv").exists() and not (facts / "lines.csv").exists()
    assert _report() == before
    assert json.loads(check("--json"))["problems"] == hostile.findings


def test_the_budget_workbook_and_the_library_writers_refuse_the_ledger_too(ledger_home, tmp_path):
    from test_budget import BOOK, PLAN

    from ledger.export import allocation_as_xlsx

    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "fixture.toml").write_text(textwrap.dedent(BOOK), encoding="utf-8")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    (ledger_home / "facts").mkdir(exist_ok=True)
    target = ledger_home / "facts" / "budget.xlsx"
    msg = refused("budget", str(plan), "--pricebooks", str(tmp_path / "books"), "--xlsx", str(target))
    assert "inside the ledger's facts folder" in msg and not target.exists()
    data, _ = _control_run()
    with pytest.raises(OutputError, match="facts folder"):
        allocation_as_xlsx(data, path=target)
    with pytest.raises(OutputError, match="is a folder"):
        write_output(tmp_path, "x")
    with pytest.raises(OutputError, match="does not exist"):
        write_output(tmp_path / "missing" / "x.csv", "x")


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as fh:
            fh.write(b"half a fi")
            raise RuntimeError("the disk went away")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no temporary file left
    write_output(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    # through a symlink, the file it points to is the one replaced
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_output(link, "via link\n")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "via link\n"


@pytest.mark.store
def test_an_export_that_fails_while_writing_leaves_nothing_behind(hostile, tmp_path, monkeypatch):
    import ledger.outputs

    out = tmp_path / "out"
    out.mkdir()
    (out / "focus.csv").write_text("the previous export\n", encoding="utf-8")

    def full(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ledger.outputs.os, "fsync", full)
    r = runner.invoke(app, ["export", "--period", PERIOD, "--lines", str(out / "lines.csv")])
    assert r.exit_code == 1 and "cannot write the export" in r.stderr and "No space left" in r.stderr
    r = runner.invoke(app, ["export", "--period", PERIOD, "--focus", str(out / "focus.csv")])
    assert r.exit_code == 1
    monkeypatch.undo()
    assert sorted(p.name for p in out.iterdir()) == ["focus.csv"]
    assert (out / "focus.csv").read_text(encoding="utf-8") == "the previous export\n"


# ---- ledger demo --force only in a ledger home ---------------------------------------------------

def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def _other_app_db(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE accounts (name TEXT, balance TEXT)")
    con.execute("INSERT INTO accounts VALUES ('savings', '1200.00')")
    con.commit()
    con.close()


@pytest.mark.parametrize("layout", ["plain folder", "foreign facts", "another app's ledger.db"])
def test_demo_refuses_a_folder_that_is_not_a_ledger_home_and_deletes_nothing(tmp_path, monkeypatch, layout):
    from ledger import store

    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "unused"))  # restored after the test (--home sets it)
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "project"
    (project / "demo").mkdir(parents=True)
    (project / "demo" / "fleet.csv").write_text("my own fleet file\n", encoding="utf-8")
    (project / "notes.txt").write_text("mine\n", encoding="utf-8")
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print('hi')\n", encoding="utf-8")
    if layout == "foreign facts":
        (project / "facts").mkdir()
        (project / "facts" / "research.md").write_text("facts of my own\n", encoding="utf-8")
    if layout == "another app's ledger.db":
        _other_app_db(project / "ledger.db")
    before = _tree(project)
    try:
        for force in ([], ["--force"]):
            r = runner.invoke(app, ["demo", "--home", "project", *force])
            assert r.exit_code == 1, r.output
            msg = " ".join(r.stderr.split())
            assert "the demo changes nothing there (--force included)" in msg, msg
            assert {"plain folder": "project is not a ledger home (it holds demo/, notes.txt, src/",
                    "foreign facts": "project/facts holds entries the ledger did not write (research.md)",
                    "another app's ledger.db": "project/ledger.db is not a ledger database"}[layout] in msg, msg
            assert _tree(project) == before
    finally:
        store.dispose_engines()


# `ledger demo --force` in a ledger home deletes only the ledger's own entries: that test,
# test_demo_force_in_a_ledger_home_deletes_only_the_ledgers_own_entries, is in test_demo.py, where
# it shares one --force run of the whole demo with the refusal of a home that holds data.
