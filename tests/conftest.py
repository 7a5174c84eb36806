"""Fixtures: a fresh ledger per test (SQLite in a temp home, or PostgreSQL via LEDGER_TEST_DATABASE_URL)."""
from __future__ import annotations

import contextlib
import dataclasses
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


#: The empty SQLite ledger DB that Alembic migrated to head in this worker (made once, then only copied).
_MIGRATED: list[Path] = []


def migrated_sqlite(tmp_path_factory) -> Path:
    """An empty SQLite ledger DB migrated to head by ``store.init_store`` (Alembic's ``upgrade head``),
    made once per worker: migrating a fresh database takes about 0.25 s, copying this file 1 ms. Its
    only row is Alembic's revision (no id, path or time of its own), so a copy is the database a
    migration of a new file gives. Read-only: copy it."""
    if not _MIGRATED:
        from ledger import store

        folder = tmp_path_factory.mktemp("migrated")
        db = folder / "ledger.db"
        store.init_store(f"sqlite:///{db}", home=folder / "home")
        store.dispose_engines()
        _MIGRATED.append(db)
    return _MIGRATED[0]


@pytest.fixture
def ledger_home(tmp_path, db_url, monkeypatch, tmp_path_factory):
    """A fresh ledger home in a temp folder, its DB migrated to head; env vars point the CLI at it.

    On SQLite the DB is a copy of the worker's migrated one (:func:`migrated_sqlite`), and
    ``init_store`` still runs on it (Alembic finds it at head and changes nothing); on PostgreSQL
    every test's schema is migrated from empty."""
    import shutil

    from ledger import store

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("LEDGER_HOME", str(home))
    if db_url.startswith("sqlite"):
        monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
        url = f"sqlite:///{home / 'ledger.db'}"
        shutil.copyfile(migrated_sqlite(tmp_path_factory), home / "ledger.db")
    else:
        monkeypatch.setenv("LEDGER_DATABASE_URL", db_url)
        url = db_url
    store.init_store(url)
    yield home
    store.dispose_engines()


# ---- the demo, built once per run ----------------------------------------------------------------
# `ledger demo` builds three months and an open one (about 10 s on a quiet machine); a dozen test
# modules read it. It is built once per run, by a real `ledger demo --json` run in a fresh, migrated
# SQLite home, from the folder that holds the home (as test_demo.py's end-to-end test needs it), and
# nothing changes it afterwards. The first pytest-xdist worker that needs it builds it under a lock,
# in the temp folder the workers share; the others wait for it and read the same build. A test or
# module that needs the demo in a ledger it may change gets a copy of that folder (the ledger DB,
# the facts and the demo's inputs), which is the same ledger, run ids included. On PostgreSQL (the
# store tests' second run) the demo is built afresh in the test's own schema, so the store tests
# still run it on the real server.
_DEMO: dict[str, object] = {}


def _run_folder(tmp_path_factory) -> Path:
    """The temp folder of this pytest run that every worker sees (a worker's own is one level below)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def demo_template(tmp_path_factory) -> tuple[Path, object]:
    """(home, DemoResult) of the demo built once this run; read-only (copy it to change it)."""
    if "built" not in _DEMO:
        import fcntl
        import pickle
        import shutil

        from typer.testing import CliRunner

        from ledger import demo, store
        from ledger.cli import app
        from ledger.demo import run_demo

        shared = _run_folder(tmp_path_factory)
        folder = shared / "demo-template"
        home, done = folder / "home", folder / "result.pickle"
        with open(shared / "demo-template.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the worker dies)
            if not done.exists():
                if folder.exists():  # a build that failed half-way
                    shutil.rmtree(folder)
                folder.mkdir(parents=True)
                home.mkdir()
                made: list = []

                def run_and_keep(*args, **kwargs):
                    made.append(run_demo(*args, **kwargs))
                    return made[-1]

                with pytest.MonkeyPatch.context() as mp:  # as a user runs it: test_demo.py's `demo_run`
                    mp.setenv("LEDGER_HOME", str(home))
                    mp.delenv("LEDGER_DATABASE_URL", raising=False)
                    mp.chdir(folder)
                    mp.setattr(demo, "run_demo", run_and_keep)  # the DemoResult the command printed
                    store.init_store(f"sqlite:///{home / 'ledger.db'}")
                    r = CliRunner().invoke(app, ["demo", "--json"])
                    store.dispose_engines()
                if r.exit_code != 0 or not made:
                    raise RuntimeError(f"ledger demo --json failed ({r.exit_code}): {r.output}")
                part = done.with_suffix(".part")
                part.write_bytes(pickle.dumps((made[0], DemoCommand(r.exit_code, r.stdout, r.output))))
                part.rename(done)  # the result last: its presence says the build is whole
            result, command = pickle.loads(done.read_bytes())
        _DEMO["built"] = (home, result)
        _DEMO["command"] = command
    return _DEMO["built"]


@dataclasses.dataclass(frozen=True)
class DemoCommand:
    """What the run of ``ledger demo --json`` that built the session's demo said (a CliRunner result's
    fields that tests read)."""

    exit_code: int
    stdout: str
    output: str


def demo_command(tmp_path_factory) -> DemoCommand:
    """The ``ledger demo --json`` run that built the session's demo (:func:`demo_template`)."""
    demo_template(tmp_path_factory)
    return _DEMO["command"]


def copy_demo(tmp_path_factory, dest: Path):
    """The session's demo copied into the folder `dest` (created, or emptied of a fresh ledger's
    files first); returns its DemoResult with `home` set to `dest`."""
    import dataclasses
    import shutil

    home, result = demo_template(tmp_path_factory)
    if dest.exists():
        for p in dest.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    # a reader in another worker (the dashboard's server) may hold the template's SQLite DB open: its
    # shared-memory index is that reader's, and SQLite makes the copy its own
    shutil.copytree(home, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*-shm"))
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
