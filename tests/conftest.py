"""Fixtures: a fresh ledger per test (SQLite in a temp home, or PostgreSQL via LEDGER_TEST_DATABASE_URL)."""
from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

# The width of the terminal pytest runs in never reaches a test: the CLI's prose wraps at `COLUMNS` when
# it is set (``console.Out``, whose width rich reads when the console is made, at import) and typer's help
# at `TERMINAL_WIDTH`, and a test's expected text is the unwrapped line. A test that wants a width passes
# it (``runner.invoke(..., env={"COLUMNS": "160"})``). Removed here, before any test module imports ledger.
os.environ.pop("COLUMNS", None)
os.environ.pop("TERMINAL_WIDTH", None)

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"

#: The test files that take longest, longest first (from `pytest --durations`), collected before the
#: others. pytest-xdist hands a worker a whole file (`--dist loadfile`) in the order the files are
#: collected (`--no-loadscope-reorder` in pyproject.toml: its own order, by number of tests, put the
#: Spark parity file, which has few tests and takes three minutes, near the end, where it ran alone
#: while the other worker waited). Scheduling only: no test's content or outcome depends on it.
LONGEST_FIRST = ("test_spark_parity.py", "test_dashboard_browser.py", "test_export_focus12.py", "test_demo.py",
                 "test_dashboard_apptest.py", "test_ingest.py", "test_allocate_properties.py", "test_sync_otlp.py",
                 "test_windows.py", "test_hostile_outputs.py", "test_cli_surface.py", "test_hostile_more.py")


def pytest_collection_modifyitems(config, items) -> None:
    """The files of LONGEST_FIRST first, in its order; the rest after them, as collected (a stable sort:
    each file's own tests keep their order)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def _pg_url() -> str | None:
    url = os.environ.get("LEDGER_TEST_DATABASE_URL")
    if not url:
        return None
    from ledger.config import normalize_url

    return normalize_url(url)


@pytest.fixture
def shared_data() -> Path:
    """The real data beside the checkout (traces, curves, load-test files); required, never skipped."""
    assert SHARED_DATA.is_dir(), f"shared data folder missing beside the checkout: {SHARED_DATA}"
    return SHARED_DATA


@contextlib.contextmanager
def fresh_db_url(folder: Path):
    """A fresh, empty database URL while the block runs: a SQLite file in `folder`, or a new schema on
    the PostgreSQL server (LEDGER_TEST_DATABASE_URL), dropped after it: `db_url` for a test, and for
    a fixture of a wider scope (test_demo.py's module-wide `ledger demo` run)."""
    pg = _pg_url()
    if pg is None:
        yield f"sqlite:///{folder / 'ledger.db'}"
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in pg else "?"
    try:
        yield f"{pg}{sep}options=-csearch_path%3D{schema}"
    finally:
        from ledger import store

        store.dispose_engines()
        with admin.connect() as c:
            c.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def db_url(tmp_path):
    """A fresh, empty database URL: a SQLite file, or a new schema on the PostgreSQL server."""
    with fresh_db_url(tmp_path) as url:
        yield url


@pytest.fixture
def ledger_home(tmp_path, db_url, monkeypatch):
    """A fresh ledger home in a temp folder, its DB migrated to head; env vars point the CLI at it."""
    from ledger import store

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("LEDGER_HOME", str(home))
    if db_url.startswith("sqlite"):
        monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
        url = f"sqlite:///{home / 'ledger.db'}"
    else:
        monkeypatch.setenv("LEDGER_DATABASE_URL", db_url)
        url = db_url
    store.init_store(url)
    yield home
    store.dispose_engines()


# ---- the demo, built once per session ------------------------------------------------------------
# `ledger demo` builds three months and an open one (about 10 s on a quiet machine); a dozen test
# modules read it. It is built once per session in a SQLite home of its own, which nothing changes:
# a test or module that needs the demo in a ledger it may change gets a copy of that folder (the
# ledger DB, the facts and the demo's inputs), which is the same ledger, run ids included. On
# PostgreSQL (the store tests' second run) the demo is built afresh in the test's own schema, so the
# store tests still run it on the real server.
_DEMO: dict[str, tuple[Path, object]] = {}


def demo_template(tmp_path_factory) -> tuple[Path, object]:
    """(home, DemoResult) of the demo built once this session; read-only (copy it to change it)."""
    if "built" not in _DEMO:
        import shutil

        from ledger import store
        from ledger.demo import run_demo

        home = tmp_path_factory.getbasetemp() / "demo-template" / "home"
        if home.parent.exists():
            shutil.rmtree(home.parent)
        home.parent.mkdir(parents=True)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("LEDGER_HOME", str(home))
            mp.delenv("LEDGER_DATABASE_URL", raising=False)
            mp.chdir(home.parent)
            result = run_demo()
            store.dispose_engines()
        _DEMO["built"] = (home, result)
    return _DEMO["built"]


def copy_demo(tmp_path_factory, dest: Path):
    """The session's demo copied into the folder `dest` (created, or emptied of a fresh ledger's
    files first); returns its DemoResult with `home` set to `dest`."""
    import dataclasses
    import shutil

    home, result = demo_template(tmp_path_factory)
    if dest.exists():
        for p in dest.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.copytree(home, dest, dirs_exist_ok=True)
    return dataclasses.replace(result, home=dest)


@pytest.fixture
def demo_ledger(ledger_home, db_url, tmp_path_factory):
    """The demo in this test's ledger home (`ledger_home`, with the environment pointing at it): a
    copy of the session's build on SQLite, built afresh on PostgreSQL. Returns the DemoResult."""
    from ledger import demo, store

    if not db_url.startswith("sqlite"):
        return demo.run_demo()
    store.dispose_engines()
    return copy_demo(tmp_path_factory, ledger_home)
