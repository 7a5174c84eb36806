"""ledger.duck: every DuckDB connection under the ledger's memory limit, spilling into the ledger home."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ledger import duck
from ledger.cli import app

GIB = 2**30


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A ledger home (a folder; no DB needed) and no DuckDB settings in the environment."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("LEDGER_HOME", str(h))
    monkeypatch.delenv(duck.MEMORY_ENV, raising=False)
    monkeypatch.delenv(duck.THREADS_ENV, raising=False)
    return h


def _setting(con, name: str) -> str:
    return con.execute("SELECT current_setting(?)", [name]).fetchone()[0]


def test_the_settings_are_applied(home, monkeypatch):
    monkeypatch.setenv(duck.MEMORY_ENV, "512MB")
    monkeypatch.setenv(duck.THREADS_ENV, "1")
    con = duck.connect("allocate")
    try:
        # 512MB = 512,000,000 bytes = 488.28 MiB, as DuckDB shows it
        assert _setting(con, "memory_limit") == "488.2 MiB"
        assert _setting(con, "threads") == 1
        assert _setting(con, "TimeZone") == "UTC"
        assert _setting(con, "preserve_insertion_order") is False
        spill = _setting(con, "temp_directory")
        assert os.path.dirname(spill) == str(home / "tmp")
        assert re.fullmatch(rf"duckdb-allocate-{re.escape(duck._host())}-{os.getpid()}-\d+", os.path.basename(spill))
    finally:
        con.close()
    ordered = duck.connect("ingest", ordered=True)
    try:
        assert _setting(ordered, "preserve_insertion_order") is True
        assert _setting(ordered, "temp_directory") != spill  # one folder per connection
    finally:
        ordered.close()


def test_sizes_and_shares_of_the_machine(home, monkeypatch):
    monkeypatch.setattr(duck, "machine_memory", lambda: 16 * GIB)
    # unset: 25% of 16 GiB is 4 GiB, capped at 1.5 GiB; ingest at most 1200MB
    assert duck.memory_limit("allocate") == 1536 * 2**20
    assert duck.memory_limit("ingest") == 1_200_000_000
    monkeypatch.setattr(duck, "machine_memory", lambda: 4 * GIB)
    assert duck.memory_limit("allocate") == GIB  # 25% of 4 GiB, under the cap
    assert duck.memory_limit("ingest") == GIB  # and under ingest's ceiling
    monkeypatch.setattr(duck, "machine_memory", lambda: None)
    assert duck.memory_limit("allocate") == 1536 * 2**20  # memory unknown: the cap
    monkeypatch.setattr(duck, "machine_memory", lambda: 16 * GIB)
    for text, limit in [("10%", 16 * GIB // 10), ("2GB", 2 * 10**9), ("1.5GiB", 3 * 2**29), ("1500mib", 1500 * 2**20),
                        (" 300 MB ", 300 * 10**6)]:
        monkeypatch.setenv(duck.MEMORY_ENV, text)
        assert duck.memory_limit("allocate") == limit, text
        assert duck.memory_limit("ingest") == limit, text  # a value set applies to every purpose
    monkeypatch.setenv(duck.MEMORY_ENV, "25%")
    con = duck.connect("facts")
    try:
        assert _setting(con, "memory_limit") == "4.0 GiB"
    finally:
        con.close()


@pytest.mark.parametrize("text, says", [
    ("abc", "is not a memory size"),
    ("2", "is not a memory size"),
    ("2 gigs", "is not a memory size"),
    ("-1GB", "is not a memory size"),
    ("0%", "above 0% and at most 100%"),
    ("150%", "above 0% and at most 100%"),
    ("100KB", "below 1MiB"),
])
def test_a_bad_memory_limit_is_refused_with_one_line(home, monkeypatch, text, says):
    monkeypatch.setenv(duck.MEMORY_ENV, text)
    with pytest.raises(duck.SettingError) as e:
        duck.connect("facts")
    message = str(e.value)
    assert message.startswith(f"LEDGER_MEMORY_LIMIT={text!r}") and says in message and "\n" not in message
    assert not (home / "tmp").exists() or list((home / "tmp").iterdir()) == []


def test_the_command_line_refuses_a_bad_setting_before_any_command(home, monkeypatch):
    monkeypatch.setenv(duck.MEMORY_ENV, "lots")
    monkeypatch.setenv(duck.THREADS_ENV, "two")
    r = CliRunner().invoke(app, ["version"])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert lines == ["LEDGER_MEMORY_LIMIT='lots' is not a memory size: give a size such as 2GB or 1500MiB, or a share "
                     "of the machine's memory such as 25%",
                     "LEDGER_THREADS='two' is not a positive whole number of threads"]
    monkeypatch.delenv(duck.MEMORY_ENV)
    monkeypatch.delenv(duck.THREADS_ENV)
    assert CliRunner().invoke(app, ["version"]).exit_code == 0


def test_a_group_by_and_a_sort_bigger_than_the_limit_spill_into_the_home_and_are_right(home, monkeypatch):
    monkeypatch.setenv(duck.MEMORY_ENV, "40MB")
    monkeypatch.setenv(duck.THREADS_ENV, "2")
    con = duck.connect("allocate")
    spill = _setting(con, "temp_directory")
    try:
        # 6M rows in 2M groups of 3 (i, i + 2M, i + 4M): a hash table of ~100MB under a 40MB limit
        n, k = 6_000_000, 2_000_000
        con.execute(f"CREATE TEMP TABLE g AS SELECT i % {k} AS key, sum(i) AS s, count(*) AS c "
                    f"FROM range({n}) t(i) GROUP BY key")
        assert os.path.isdir(spill)  # DuckDB makes the folder on its first spill
        groups, total, smallest, largest, sizes = con.execute(
            "SELECT count(*), sum(s), min(s), max(s), count(DISTINCT c) FROM g").fetchone()
        assert groups == k and sizes == 1
        assert total == n * (n - 1) // 2  # 0 + 1 + ... + (n - 1)
        assert smallest == 0 + k + 2 * k  # key 0: 0, 2M, 4M
        assert largest == (k - 1) * 3 + 3 * k  # key 2M-1: 2M-1, 4M-1, 6M-1
        # a table bigger than the limit (6M rows of two BIGINTs: 96MB) lives in the spill folder, and
        # a sort of it (a window over the whole table) still runs and is right
        con.execute(f"CREATE TEMP TABLE s AS SELECT i, hash(i) AS h FROM range({n}) t(i)")
        assert con.execute("SELECT sum(size) FROM duckdb_temporary_files()").fetchone()[0] > 40 * 10**6
        assert any(p.is_file() for p in (home / "tmp").rglob("*"))
        assert con.execute("SELECT count(*) FILTER (WHERE h < before), count(*), sum(i) "
                           "FROM (SELECT i, h, lag(h) OVER (ORDER BY h) AS before FROM s)").fetchone() == \
            (0, n, n * (n - 1) // 2)
    finally:
        con.close()
    assert not os.path.exists(spill)  # DuckDB deletes the folder it made when the connection closes


def test_a_folder_left_by_a_dead_process_is_swept(home):
    root = home / "tmp"
    root.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    left = root / f"duckdb-allocate-{duck._host()}-{dead}-0"
    (left / "x").mkdir(parents=True)
    elsewhere = root / f"duckdb-allocate-otherhost-{dead}-0"  # another machine sharing the home: not ours to judge
    elsewhere.mkdir()
    mine = root / f"duckdb-allocate-{duck._host()}-{os.getpid()}-999999"
    mine.mkdir()
    other = root / "notes"
    other.mkdir()
    con = duck.connect("facts")
    con.close()
    assert not left.exists()
    assert elsewhere.exists() and mine.exists() and other.exists()


def test_no_home_spills_into_the_system_temp_folder_and_makes_no_home(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("LEDGER_HOME", str(missing))
    monkeypatch.delenv(duck.MEMORY_ENV, raising=False)
    con = duck.connect("demo")
    try:
        assert not str(_setting(con, "temp_directory")).startswith(str(missing))
    finally:
        con.close()
    assert not missing.exists()


def test_a_bad_thread_count_is_refused(home, monkeypatch):
    for text in ("0", "-2", "1.5", "many"):
        monkeypatch.setenv(duck.THREADS_ENV, text)
        with pytest.raises(duck.SettingError, match=r"^LEDGER_THREADS=.* is not a positive whole number of threads$"):
            duck.connect("facts")


def test_duck_is_a_shared_piece_below_every_stage():
    # it may use config and the pieces below every stage that import nothing of the ledger (its error's
    # base, the SQL quoter) only: every stage opens its connections through it
    import ast
    from pathlib import Path

    tree = ast.parse(Path(duck.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level for a in n.names}
    assert imported - {None} == {"config", "errors", "LedgerError", "sqltext", "literal"}


def test_no_module_opens_duckdb_on_its_own():
    # every connection goes through ledger.duck (its limit, its spill folder); the dashboard pages too
    from pathlib import Path

    root = Path(duck.__file__).resolve().parent.parent
    found = [f"{p.relative_to(root)}:{i}" for p in [*(root / "ledger").rglob("*.py"), *(root / "dashboards").rglob("*.py")]
             if p.name != "duck.py" or p.parent.name != "ledger"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "duckdb.connect(" in line]
    assert found == []
