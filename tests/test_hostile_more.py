"""Real exports read right, more of them (issue 25, items 14 to 20): the workload of a day, periods
at the end of the calendar, TOML nested thousands deep, a standard output that is full or gone,
exports into FIFOs and devices, an import over a hand-written book, and facts of an unknown layout.

Each refusal is one line on stderr (the file, the line and column or the option, what is wrong), a
non-zero exit and nothing changed; commands run as a user runs them (typer's CliRunner, or a
subprocess where the process itself is the subject: its standard output).
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from test_hostile_outputs import PERIOD, hostile  # noqa: F401  (a fixture: a ledger with one allocation run)
from test_size_workload import CURVE_CSV
from test_size_workload import _requests as size_requests
from test_workload import REQUESTS

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "adapters"
UTC = timezone.utc


def run(*args: str):
    return runner.invoke(app, list(args))


def refused(*args: str, code: int = 1) -> str:
    """The one line of a command that must fail, with no traceback."""
    r = run(*args)
    assert r.exit_code == code, (args, r.output)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output, r.stderr
    return lines[0]


def ledger(*args: str, **kw) -> subprocess.CompletedProcess:
    """The `ledger` command in a process of its own (the ledger home of the test's environment)."""
    return subprocess.run([sys.executable, "-m", "ledger.cli", *args], cwd=ROOT, **kw)


def ingest(path: Path, text: str) -> None:
    path.write_text(textwrap.dedent(text).strip() + "\n", encoding="utf-8")
    r = run("ingest", "requests", str(path), "--register-new")
    assert r.exit_code == 0, r.output


# ---- 14. the workload of a window shorter than a month ---------------------------------------------

@pytest.fixture
def trace(ledger_home, tmp_path):
    ingest(tmp_path / "requests.csv", REQUESTS)
    return ledger_home


@pytest.fixture
def priced_trace(trace, tmp_path):
    """The trace, and a price book loaded (allocate reaches the facts only then)."""
    from test_allocate_support import TEST_BOOK

    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(TEST_BOOK, encoding="utf-8")
    assert run("pricebook", "load", str(tmp_path / "books")).exit_code == 0
    return trace


@pytest.mark.store
def test_a_window_of_minutes_gives_its_own_percentiles(trace):
    r = run("workload", "--from", "2025-10-01T00:00:00Z", "--to", "2025-10-01T00:15:00Z", "--pool", "p1", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # minutes 0..14 of pool p1: m0 100, m2 300, m3 400, m10 1,000, m11 1,200, m12 200, nine minutes 0;
    # sorted: 9 zeros then 100 200 300 400 1,000 1,200 (positions 9..14): p50 (7) 0, p95 (13.3)
    # 1,000 + 0.3 x 200 = 1,060, p99 (13.86) 1,000 + 0.86 x 200 = 1,172; mean 3,200 / 15
    assert (doc["period"], doc["from"], doc["to"], doc["minutes"]) == (
        "2025-10-01T00:00:00Z/2025-10-01T00:15:00Z", "2025-10-01T00:00:00Z", "2025-10-01T00:15:00Z", 15)
    assert doc["tpm"] == {"p50": 0.0, "p95": 1060.0, "p99": 1172.0, "max": 1200.0, "mean": round(3200 / 15, 3)}
    assert doc["totals"]["requests"] == 8 and doc["totals"]["output_tokens"] == 3200
    # the whole month as a window is the month: the same figures, another name
    month = json.loads(run("workload", "--period", "2025-10", "--pool", "p1", "--json").stdout)
    whole = json.loads(run("workload", "--from", "2025-10-01", "--to", "2025-11-01", "--pool", "p1", "--json").stdout)
    assert whole["period"] == "2025-10-01T00:00:00Z/2025-11-01T00:00:00Z"
    assert {**whole, "period": "2025-10"} == month
    text = run("workload", "--from", "2025-10-01T00:00:00Z", "--to", "2025-10-01T00:15:00Z", "--pool", "p1").stdout
    assert "workload 2025-10-01T00:00:00Z to 2025-10-01T00:15:00Z · pool p1" in " ".join(text.split())


@pytest.mark.store
def test_a_window_within_an_hour_is_counted_by_clock_hours(trace):
    from ledger import store
    from ledger.workload import workload

    with store.session() as s:
        w = workload(s, start=datetime(2025, 10, 1, 0, 30, tzinfo=UTC), end=datetime(2025, 10, 1, 1, 30, tzinfo=UTC),
                     pool="p1")
    # p1 from 00:30: m40 900 and m59 50 in the hour 00h (30 minutes), nothing in 01h (30 minutes)
    assert w.minutes == 60 and w.output_tokens == 950
    assert w.hourly == ((datetime(2025, 10, 1, 0, tzinfo=UTC), pytest.approx(950 / 30), 900.0),
                        (datetime(2025, 10, 1, 1, tzinfo=UTC), 0.0, 0.0))
    assert w.hour_of_week[2 * 24] == pytest.approx(950 / 30) and w.hour_of_week[2 * 24 + 1] == 0


@pytest.mark.store
def test_a_bad_window_is_one_line(trace):
    assert refused("workload", "--from", "2025-10-01T00:00:30Z", "--to", "2025-10-02") == (
        "--from 2025-10-01T00:00:30Z is not on a whole minute: the workload counts whole minutes, so give "
        "2025-10-01T00:00:00Z or the minute after")
    assert refused("workload", "--from", "2025-10-02", "--to", "2025-10-01") == (
        "--from 2025-10-02 is not before --to 2025-10-01: the window is empty (it runs from --from up to --to, "
        "a month as --to through its end)")
    assert refused("workload", "--period", "2025-10", "--from", "2025-10-01") == \
        "give either --period or --from/--to, not both"
    assert refused("workload", "--from", "2025-10-01") == "give --period YYYY-MM, or both --from and --to"
    assert refused("workload", "--from", "2025-10-01T00:00", "--to", "2025-10-02") == \
        "--from: '2025-10-01T00:00' has no UTC offset (add Z or +00:00)"
    assert refused("workload", "--from", "2025-10-02", "--to", "2025-10-03", "--pool", "p1") == \
        "no requests occurred from 2025-10-02T00:00:00Z to 2025-10-03T00:00:00Z for pool p1"


@pytest.fixture
def size_traffic(ledger_home, tmp_path):
    path = tmp_path / "requests.csv"
    path.write_text(size_requests(), encoding="utf-8")
    assert run("ingest", "requests", str(path), "--register-new").exit_code == 0
    curve = tmp_path / "curve.csv"
    curve.write_text(CURVE_CSV, encoding="utf-8")
    return curve


@pytest.mark.store
def test_size_from_a_window_of_traffic(size_traffic):
    base = ["size", "--curve", str(size_traffic), "--sla", "50", "--gpus-per-replica", "1", "--pool", "p1"]
    # over the month, p50 is an empty minute: refused with what to change
    line = refused(*base, "--workload", "2025-10", "--percentile", "p50")
    assert line.startswith("workload 2025-10 pool p1: TPM p50 is 0: the p50 minute of its 44,640 minutes served "
                           "no output tokens (120 requests in all); pick a higher --percentile (max is 20,000) or")
    # over the two busy minutes (10,000 and 20,000 TPM), p50 is their midpoint: 15,000
    r = run(*base, "--from", "2025-10-01T00:05:00Z", "--to", "2025-10-01T00:07:00Z", "--percentile", "p50", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["tpm"], doc["workload"]["minutes"], doc["workload"]["period"]) == (
        15000.0, 2, "2025-10-01T00:05:00Z/2025-10-01T00:07:00Z")
    assert refused(*base, "--from", "2025-10-01T00:05:00Z") == \
        "give both --from and --to: the window of traffic to size from, [from, to)"
    assert refused(*base, "--workload", "2025-10", "--from", "2025-10-01", "--to", "2025-10-02") == \
        "give the traffic as --workload PERIOD or --from/--to, not both"
    # an empty window is the workload's own line
    assert refused(*base, "--from", "2025-10-03", "--to", "2025-10-04") == \
        "no requests occurred from 2025-10-03T00:00:00Z to 2025-10-04T00:00:00Z for pool p1"


# ---- 15. periods at the end of the calendar ----------------------------------------------------------

OUT_OF_RANGE = ("period '9999-12' is out of range: a period is a month from 0001-01 to 9999-11 (it ends where the "
                "next month starts, and no date has the year 10000)")


@pytest.mark.store
def test_the_month_after_which_no_date_exists_is_one_line_everywhere(ledger_home, tmp_path):
    from ledger import store
    from test_budget import PLAN

    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    for command in (("workload",), ("allocate",), ("reconcile",), ("check",), ("close",), ("runs",),
                    ("report", "unit-economics"), ("report", "tenants"), ("export", "--csv"),
                    ("budget", "compare", str(plan))):
        assert refused(*command, "--period", "9999-12") == OUT_OF_RANGE, command
    # a month written another way is not a month name (a period closed as 2026-1 would not be 2026-01)
    for name in ("2026-1", " 2026-10", "2026-010", "+2026-10", "0000-05"):
        line = refused("close", "--period", name)
        assert line in (f"period {name!r} is not a month like 2026-10",
                        f"period {name!r} is out of range: a period is a month from 0001-01 to 9999-11 (it ends "
                        "where the next month starts, and no date has the year 10000)"), line
    with store.session() as s:
        assert store.closed_periods(s) == []  # nothing was closed, under any name
    assert json.loads(run("runs", "--json").stdout) == []
    # instants that have no UTC (their offset moves them out of the calendar)
    assert refused("allocate", "--from", "0001-01-01T00:00:00+01:00", "--to", "0001-01-02") == (
        "--from: '0001-01-01T00:00:00+01:00' is out of range: in UTC it falls before 0001-01-01 or after 9999-12-31")
    assert refused("check", "--from", "9999-12-31", "--to", "9999-12-31T23:00:00-05:00") == (
        "--to: '9999-12-31T23:00:00-05:00' is out of range: in UTC it falls before 0001-01-01 or after 9999-12-31")


def test_a_plan_that_runs_past_the_calendar_is_one_line(tmp_path):
    from test_budget import PLAN

    for start, months, expected in (
            ("9999-12", 1, "plan.toml: [plan]: start: '9999-12' is out of range: a month from 0001-01 to 9999-11 (it "
                           "ends where the next month starts, and no date has the year 10000)"),
            ("9999-10", 3, "plan.toml: [plan]: start 9999-10 and months 3 run to 9999-12, past 9999-11, the last "
                           "month a plan can have")):
        plan = tmp_path / "plan.toml"
        text = PLAN.replace('start = "2026-10"\nmonths = 2', f'start = "{start}"\nmonths = {months}')
        assert text != PLAN
        plan.write_text(text, encoding="utf-8")
        r = run("budget", str(plan))
        assert r.exit_code == 1 and expected in r.stderr.splitlines(), r.stderr
        assert "Traceback" not in r.output


# ---- 16. TOML nested thousands deep ------------------------------------------------------------------

DEEP = {  # (text, line, column where the nesting passes 32 levels)
    "arrays": ("a = " + "[" * 5000 + "]" * 5000 + "\n", 1, 37),
    "inline tables": ("\nx = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n", 2, 4 + 32 * 5 + 1),
    "dotted keys": ("[book]\nname" + ".a" * 5000 + " = 1\n", 2, 67),
    "table header": ("[" + ".".join(["a"] * 5000) + "]\nx = 1\n", 1, 65),
}
NESTED = "values nested more than 32 levels deep"


@pytest.mark.parametrize("shape", list(DEEP))
def test_toml_nested_5000_deep_is_one_line_in_every_file_the_ledger_reads(ledger_home, tmp_path, shape):
    text, line, column = DEEP[shape]
    f = tmp_path / "deep.toml"
    f.write_text(text, encoding="utf-8")
    at = f"not valid TOML: {NESTED} (at line {line}, column {column})"
    assert refused("pricebook", "check", str(f)) == f"{f}:{line}:{column}: {at}"
    assert refused("pricebook", "load", str(f)) == f"{f}:{line}:{column}: {at}"
    assert refused("budget", str(f)) == f"deep.toml: {at}"
    assert refused("reconcile", "--period", "2026-10", "--bill-map", str(f)) == f"{f}: {at}"
    assert refused("ingest", "requests", "--source", "litellm", str(DATA / "litellm_spend_logs.csv"), "--map",
                   str(f)) == f"{f}: {at}"
    # the dashboard's uploads read the same way
    from ledger.budget import BudgetError
    from ledger.dashboard.planning import read_plan
    from ledger.dashboard.prices import check_uploaded
    from ledger.dashboard.reconcile import read_map
    from ledger.reconcile import ReconcileError

    frame, _ = check_uploaded([("up.toml", text.encode("utf-8"))])
    assert frame[["file", "message"]].values.tolist() == [["up.toml", at]]
    with pytest.raises(BudgetError) as e:
        read_plan(text, "up.toml", base_dir=tmp_path)
    assert list(e.value.problems) == [f"up.toml: {at}"]
    with pytest.raises(ReconcileError) as e:
        read_map("up.toml", text.encode("utf-8"))
    assert [str(p) for p in e.value.problems] == [f"up.toml: {at}"]


def test_the_toml_reader_places_every_problem():
    from ledger.tomlfile import MAX_DEPTH, TomlError, loads, loads_bytes

    def problem(text, reader=loads):
        with pytest.raises(TomlError) as e:
            reader(text, "f.toml")
        return str(e.value)

    assert problem("a = [1,\nb = 2\n") == "f.toml: not valid TOML: Invalid value (at line 2, column 1)"
    assert problem(b"a = 1\nb = '\xff'\n", loads_bytes) == \
        "f.toml: not valid TOML: not UTF-8 text (byte 0xff) (at line 2, column 6)"
    assert MAX_DEPTH == 32
    assert loads("a = " + "[" * 32 + "]" * 32, "f.toml")  # 32 levels are read; 33 are not
    assert problem("a = " + "[" * 33 + "]" * 33) == f"f.toml: not valid TOML: {NESTED} (at line 1, column 37)"
    deep_ok = "[a.b]\nc.d = [" + "{e = [" * 14 + "1" + "]}" * 14 + "]\n"  # 2 + 2 + 28 = 32 levels
    assert loads(deep_ok, "f.toml")["a"]["b"]["c"]["d"]
    # one more dot: the [ of the 14th "{e = [" (column 10 + 13 x 6 + 5) is the 33rd level
    assert problem(deep_ok.replace("c.d", "c.d.e")) == f"f.toml: not valid TOML: {NESTED} (at line 2, column 93)"
    # brackets and dots inside strings and comments are text, not nesting
    text = 'a = "' + "[" * 40 + '"  # ' + "{" * 40 + "\nb = '''\n" + "[" * 40 + "'''\nc = 1.5\n"
    assert loads(text, "f.toml")["c"] == 1.5
    assert loads("\ufeffa = 1\n", "f.toml") == {"a": 1}  # a UTF-8 byte-order mark is an encoding mark


# ---- 17. a standard output that is full or gone ------------------------------------------------------

@pytest.mark.parametrize("buffered", [True, False])
def test_a_full_standard_output_is_one_line_and_a_closed_pipe_ends_quietly(ledger_home, buffered, monkeypatch):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here (Linux has it)")
    # buffered: the last flush at exit fails; unbuffered: the write itself fails inside the command
    if buffered:
        monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    else:
        monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    # each CLI start costs seconds: a short, a long and a table output in both modes, the rest in one
    commands = [["version"], ["runs"], ["pricebook", "check", str(ROOT / "pricebooks"), "--json"]]
    for args in commands + ([["--help"], ["runs", "--json"], ["batches", "--json"]] if buffered else []):
        with open("/dev/full", "w") as full:
            p = ledger(*args, stdout=full, stderr=subprocess.PIPE, text=True)
        assert (p.returncode, p.stderr) == (1, "cannot write to standard output: No space left on device; the "
                                               "output is incomplete\n"), (args, p.stderr)
        read, write = os.pipe()
        os.close(read)  # the reader is gone before anything is written: `| head -0`
        p = ledger(*args, stdout=write, stderr=subprocess.PIPE, text=True)
        os.close(write)
        assert (p.returncode, p.stderr) == (141, ""), (args, p.stderr)  # as a tool killed by SIGPIPE (128 + 13)
    p = ledger("version", stdout=subprocess.PIPE, text=True)
    assert p.returncode == 0 and p.stdout.strip()


def test_a_closed_standard_output_is_one_line_only_when_something_was_to_be_written(ledger_home):
    p = subprocess.run(f"{sys.executable} -m ledger.cli version >&-", shell=True, cwd=ROOT, stderr=subprocess.PIPE,
                       text=True)
    assert (p.returncode, p.stderr) == (1, "cannot write to standard output: standard output is closed; the output "
                                           "is incomplete\n")
    p = subprocess.run(f"{sys.executable} -m ledger.cli workload --period 2026-13 >&-", shell=True, cwd=ROOT,
                       stderr=subprocess.PIPE, text=True)
    assert (p.returncode, p.stderr) == (1, "period '2026-13' is not a month like 2026-10\n")


# ---- 18. exports into what is not a regular file -----------------------------------------------------

def _read_fifo(path: Path, got: list) -> threading.Thread:
    def reader():
        with open(path, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    return t


@pytest.mark.store
def test_an_export_into_a_fifo_writes_into_it_and_keeps_it(hostile, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / "lines.csv"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = _read_fifo(fifo, got)
    r = run("export", "--period", PERIOD, "--lines", str(fifo))
    t.join(30)
    assert r.exit_code == 0, r.output
    expected = run("export", "--period", PERIOD, "--csv").stdout.encode("utf-8")
    assert got == [expected]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(p.name for p in out.iterdir()) == ["lines.csv"]


@pytest.mark.store
def test_an_export_into_a_device_writes_into_it_and_never_replaces_it(hostile, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    out = tmp_path / "dev"
    out.mkdir()
    null = out / "null"  # a /dev/null of our own, never the system's
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    link = out / "export.csv"
    link.symlink_to(null)
    before = os.lstat(null)
    r = run("export", "--period", PERIOD, "--lines", str(null), "--focus", str(link), "--xlsx", str(out / "x.xlsx"))
    assert r.exit_code == 0, r.output
    after = os.lstat(null)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert link.is_symlink() and sorted(p.name for p in out.iterdir()) == ["export.csv", "null", "x.xlsx"]
    block = out / "disk"
    os.mknod(block, 0o600 | stat.S_IFBLK, os.makedev(7, 255))
    assert refused("export", "--period", PERIOD, "--lines", str(block)) == (
        f"refusing to write {block}: it is a block device, not a file; the ledger writes regular files, and into "
        "character devices and FIFOs (/dev/null, /dev/stdout)")
    assert stat.S_ISBLK(os.lstat(block).st_mode)


@pytest.mark.store
def test_an_export_to_dev_stdout_goes_where_standard_output_goes(hostile, tmp_path):
    expected = run("export", "--period", PERIOD, "--csv").stdout
    p = ledger("export", "--period", PERIOD, "--lines", "/dev/stdout", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
               text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(expected)  # a pipe: written into it, then the line saying what was written
    log = tmp_path / "log.csv"
    log.write_text("kept\n", encoding="utf-8")
    with open(log, "a", encoding="utf-8") as fh:  # `>> log.csv`: the file is appended to, never replaced
        p = ledger("export", "--period", PERIOD, "--lines", "/dev/stdout", stdout=fh, stderr=subprocess.PIPE)
    assert p.returncode == 0, p.stderr
    assert log.read_text(encoding="utf-8").startswith("kept\n" + expected)


def test_a_failed_write_into_a_fifo_writes_nothing(tmp_path):
    from ledger.outputs import atomic_output, write_output

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(RuntimeError):
            with atomic_output(fifo) as fh:
                fh.write(b"half")
                raise RuntimeError("stopped")
        assert os.read(reader, 100) == b""  # never opened for writing: nothing arrived
        write_output(fifo, "whole\n")  # the reader is there: written at once, whole
        assert os.read(reader, 100) == b"whole\n" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    finally:
        os.close(reader)


# ---- 19. genai-prices over a hand-written book -------------------------------------------------------

HAND_BOOK = "# my own prices\n[book]\nname = \"genai-prices-anthropic\"\n"


def test_the_import_creates_its_folder_and_never_overwrites_a_book_it_did_not_write(tmp_path):
    out = tmp_path / "new" / "books"
    imp = ("pricebook", "import", "genai-prices", "--providers", "anthropic", "--out", str(out))
    r = run(*imp)
    assert r.exit_code == 0, r.output
    book = out / "genai-prices-anthropic.toml"
    imported = book.read_text(encoding="utf-8")
    assert imported.splitlines()[-1].startswith("# ledger pricebook import genai-prices: sha256 of the lines above ")
    assert run(*imp).exit_code == 0  # its own book, unchanged: imported again without a word
    # a hand-written book of the same name, and an imported one edited since: refused, nothing written
    both = ("pricebook", "import", "genai-prices", "--providers", "anthropic,openai", "--out", str(out))
    for text in (HAND_BOOK, imported.replace('currency = "USD"', 'currency = "EUR"')):
        book.write_text(text, encoding="utf-8")
        assert refused(*both) == (
            f"refusing to overwrite {book}: it is not a book this import wrote (hand-written, or edited since it was "
            "imported); move it, or give --force to replace it")
        assert book.read_text(encoding="utf-8") == text and not (out / "genai-prices-openai.toml").exists()
    r = run(*both, "--force")
    assert r.exit_code == 0, r.output
    assert book.read_text(encoding="utf-8").startswith("# Generated from genai-prices ")
    assert (out / "genai-prices-openai.toml").is_file()
    # a book an import wrote before the seal existed (its header, no seal line) is the import's own
    legacy = imported[:imported.rindex("# ledger pricebook import genai-prices: ")]
    book.write_text(legacy, encoding="utf-8")
    assert run(*imp).exit_code == 0 and book.read_text(encoding="utf-8") != legacy
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    assert refused("pricebook", "import", "genai-prices", "--providers", "anthropic", "--out",
                   str(tmp_path / "a-file")) == f"cannot write into {tmp_path / 'a-file'}: it is a file, not a folder"


def test_the_import_seal_is_the_sha256_of_the_lines_above_it():
    from ledger.pricebook.genai_prices import SEAL, build_books, written_by_import

    (b,) = build_books(["anthropic"], on=date(2026, 11, 20))
    body, last = b.text[:b.text.rindex(SEAL)], b.text.splitlines()[-1]
    assert last == SEAL + hashlib.sha256(body.encode("utf-8")).hexdigest()
    assert written_by_import(b.text) and not written_by_import(b.text.replace("[book]", "[book]\n# note"))
    assert not written_by_import(HAND_BOOK)


# ---- 20. facts of a layout this ledger does not know -------------------------------------------------

def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.mark.store
@pytest.mark.parametrize("marker,expected", [
    ('{"version": 3, "layout": "a future one"}\n',
     "the facts are in layout version 3, which this ledger does not know (it knows 1 and 2): another version of the "
     "ledger wrote them; use that version on this home"),
    ("not json\n",
     'not a facts layout marker (JSON with a whole-number "version", such as {"version": 2}); the facts are neither '
     "read nor written without one"),
    ('{"version": "2"}\n',
     'not a facts layout marker (JSON with a whole-number "version", such as {"version": 2}); the facts are neither '
     "read nor written without one"),
])
def test_facts_of_an_unknown_layout_are_neither_read_nor_written(priced_trace, tmp_path, marker, expected):
    from ledger import store

    facts_dir = priced_trace / "facts"
    (facts_dir / ".layout").write_text(marker, encoding="utf-8")
    with store.session() as s:
        from ledger.ingest import list_batches

        batches = [b.id for b in list_batches(s)]
    before = _tree(facts_dir)
    more = tmp_path / "more.csv"  # a new request of a new tenant: neither the row nor the tenant may land
    more.write_text(REQUESTS.strip().splitlines()[0].strip() + "\n"
                    "z1,2025-10-02T00:00:00Z,newcomer,chat,llama,p1,,t9,10,0,5,ok\n", encoding="utf-8")
    line = f"{facts_dir / '.layout'}: {expected}"
    for args in (("ingest", "requests", str(more), "--register-new"), ("allocate", "--period", "2025-10"),
                 ("workload", "--period", "2025-10"), ("check", "--period", "2025-10"),
                 ("batches", "undo", batches[0]), ("init",)):
        got = refused(*args)
        assert got.endswith(line), (args, got)
    assert _tree(facts_dir) == before  # the marker and every fact file as they were
    with store.session() as s:
        from ledger.ingest import list_batches

        assert [b.id for b in list_batches(s)] == batches  # undo dropped no batch row
        assert "newcomer" not in store.dim_names(s, kind="tenant")
    assert json.loads(run("runs", "--json").stdout) == []  # allocate stored no run
    # the layout this ledger writes reads again
    (facts_dir / ".layout").write_text('{"version": 2}\n', encoding="utf-8")
    assert run("workload", "--period", "2025-10", "--json").exit_code == 0
