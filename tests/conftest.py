"""Fixtures: a fresh ledger per test (SQLite in a temp home, or PostgreSQL via LEDGER_TEST_DATABASE_URL)."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


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


@pytest.fixture
def db_url(tmp_path):
    """A fresh, empty database URL: a SQLite file, or a new schema on the PostgreSQL server."""
    pg = _pg_url()
    if pg is None:
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in pg else "?"
    yield f"{pg}{sep}options=-csearch_path%3D{schema}"
    from ledger import store

    store.dispose_engines()
    with admin.connect() as c:
        c.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


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
