"""The `ledger` command leaves without the interpreter's teardown (``ledger.console._leave``), and
that changes nothing a caller can see: the same exit status, standard output and standard error as
the interpreter's own exit (``LEDGER_FULL_EXIT=1``), the ledger DB closed as that exit closes it
(SQLite's WAL checkpointed and removed), a thread still running allowed to finish.

Each case runs the real command in a process of its own (``python -m ledger.cli``), in the test's
ledger home. What is checked is what the command leaves behind, never a time (bench/ingest.py
``--cli`` times the whole command)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ledger(*args: str, full: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_FULL_EXIT"}
    if full:
        env["LEDGER_FULL_EXIT"] = "1"
    return subprocess.run([sys.executable, "-m", "ledger.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)


@pytest.mark.store
def test_every_outcome_is_the_same_as_the_interpreters_own_exit(ledger_home):
    """Success with 20 kB of JSON (more than a pipe's write buffer, so the last part is flushed by the
    exit), a usage error (click's status 2), a refused input (the ledger's status and its one line)."""
    assert ledger("pricebook", "load").returncode == 0
    bad = ledger_home / "bad.csv"
    bad.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                   "r-0,2026-09-05T10:00:00Z,acme,chat,gpt-5-mini,openai,-100,20,ok\n")
    cases = [("pricebook", "show", "--json", "--at", "2026-10-15T00:00:00Z"), ("nosuch",), ("ingest", "requests", str(bad)),
             ("runs", "--period", "2026-13")]
    for args in cases:
        quick, full = ledger(*args), ledger(*args, full=True)
        assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr), args
    shown = ledger("pricebook", "show", "--json", "--at", "2026-10-15T00:00:00Z")
    assert shown.returncode == 0 and len(shown.stdout) > 16384
    json.loads(shown.stdout)  # whole: the last buffer was written
    assert ledger("nosuch").returncode == 2
    refused = ledger("ingest", "requests", str(bad))
    assert refused.returncode == 1 and "bad.csv:2" in refused.stderr and refused.stdout == ""


@pytest.mark.store
@pytest.mark.skipif(bool(os.environ.get("LEDGER_TEST_DATABASE_URL")), reason="the WAL is SQLite's")
def test_the_ledger_db_is_closed_as_at_any_exit(ledger_home):
    """Without its pooled connections closed, os._exit would leave SQLite's WAL and shared-memory
    files beside the DB (their last close checkpoints and removes them)."""
    from ledger import store

    store.dispose_engines()  # this process's own connection (the fixture's) is not the command's
    row = ledger_home / "one.csv"
    row.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                   "r-0,2026-09-05T10:00:00Z,acme,chat,gpt-5-mini,openai,100,20,ok\n")
    r = ledger("ingest", "requests", str(row), "--register-new")
    assert r.returncode == 0, r.stderr
    db = ledger_home / "ledger.db"
    assert db.exists()
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    spill = ledger_home / "tmp"
    assert not spill.exists() or not any(spill.iterdir())  # DuckDB's spill folders gone
    batches = ledger("batches", "--json")
    assert [b["rows_new"] for b in json.loads(batches.stdout)] == [1]


def test_a_thread_still_running_is_waited_for(tmp_path):
    """With another thread alive the interpreter's own exit runs (it waits for a non-daemon thread):
    the thread's file is written although the command returned first. The status is the command's."""
    mark = tmp_path / "written"
    code = textwrap.dedent(f"""
        import threading, time
        from pathlib import Path
        from ledger.console import run

        def late():
            time.sleep(0.3)
            Path({str(mark)!r}).write_text("done")

        def app():
            threading.Thread(target=late).start()
            raise SystemExit(3)

        run(app)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert mark.read_text() == "done"


@pytest.mark.parametrize("code, status, said", [("None", 0, ""), ("0", 0, ""), ("4", 4, ""),
                                                ("'a message'", 1, "a message\n")])
def test_the_status_is_systemexits(code, status, said):
    """SystemExit's rules: None is 0, a number is itself, any other value is printed and is 1."""
    r = subprocess.run([sys.executable, "-c", "from ledger.console import run\n"
                        f"def app():\n    print('out')\n    raise SystemExit({code})\nrun(app)"],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (status, "out\n", said)
