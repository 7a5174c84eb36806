"""The ledger DB: engines per URL, sessions that commit or roll back, checked Core connections that
only read (:func:`reading`) or write in one transaction (:func:`writing`: SQLAlchemy Core, no
SQLModel), Alembic migrations."""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from typing import TYPE_CHECKING

from .. import config
from ..errors import LedgerError

if TYPE_CHECKING:  # Alembic is imported by what migrates the store, not by every command that reads it;
    # SQLModel (pydantic, the ORM) by what opens a session, not by what reads through Core (`reading`)
    from alembic.config import Config
    from sqlmodel import Session


class StoreError(LedgerError, ValueError):
    """A refused store operation, with a message a person can act on."""


def migrations_dir() -> Path:
    return config.project_root() / "migrations"


_ENGINES: dict[str, sa.Engine] = {}


def _engine(url: str) -> sa.Engine:
    if url not in _ENGINES:
        _ENGINES[url] = _make_engine(url)
    return _ENGINES[url]


def dispose_engines() -> None:
    """Close every pooled connection (tests, and before a process forks)."""
    while _ENGINES:
        _ENGINES.popitem()[1].dispose()


def _make_engine(url: str) -> sa.Engine:
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        eng = sa.create_engine(url, connect_args={"timeout": 60})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(dbapi_conn, _):  # WAL: readers (the dashboard) never block an ingest
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return eng
    return sa.create_engine(url, pool_pre_ping=True)


def engine(url: str | None = None) -> sa.Engine:
    """The engine for `url` (default: the configured ledger DB), cached per URL."""
    return _engine(config.normalize_url(url) if url else config.database_url())


@contextmanager
def session(url: str | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error."""
    from sqlmodel import Session

    with Session(engine(url), expire_on_commit=False) as s:
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise


@contextmanager
def reading(url: str | None = None) -> Iterator[sa.Connection]:
    """A connection to an initialized ledger DB (:func:`check_initialized`) for what only reads it
    through SQLAlchemy Core (the tables of :mod:`ledger.schema`): no SQLModel, no ORM. Nothing it
    does is committed: the transaction is rolled back when the block ends."""
    with engine(url).connect() as conn:
        try:
            check_initialized(conn)
            yield conn
        finally:
            conn.rollback()


@contextmanager
def writing(url: str | None = None) -> Iterator[sa.Connection]:
    """A connection to an initialized ledger DB (:func:`check_initialized`) for what writes it through
    SQLAlchemy Core (the tables of :mod:`ledger.schema`: the ingest, an undo), without SQLModel: its
    work is one transaction, committed when the block ends well (or by ``conn.commit()`` in it) and
    rolled back on any error."""
    with engine(url).connect() as conn:
        try:
            check_initialized(conn)
            yield conn
            conn.commit()
        except BaseException:
            conn.rollback()
            raise


def alembic_config(url: str | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", (config.normalize_url(url) if url else config.database_url()).replace("%", "%%"))
    return cfg


def init_store(url: str | None = None, *, connection: sa.Connection | None = None,
               home: Path | None = None) -> tuple[str | None, str]:
    """Create or upgrade the store to the newest revision (Alembic ``upgrade head``), and move the
    fact files of the ledger home `home` (its folder; default the configured one, ``LEDGER_HOME``) to
    the current layout (:func:`ledger.facts_layout.migrate`, under the ingest lock; nothing when the
    home has no facts folder yet).

    Returns (revision before, revision after); running it twice changes nothing. LayoutError
    (:mod:`ledger.facts`), before the DB is touched, when the home's facts are in a layout this
    ledger does not know.
    """
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from .. import facts_layout

    home = config.ledger_home() if home is None else home  # resolved once, here at the top
    facts_layout.layout_version(home)
    cfg = alembic_config(url)
    head = ScriptDirectory.from_config(cfg).get_current_head()

    def current(conn) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    if connection is not None:
        before = current(connection)
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")
        facts_layout.migrate(home)
        return before, head
    with engine(url).connect() as conn:
        before = current(conn)
    if before != head:
        command.upgrade(cfg, "head")
    facts_layout.migrate(home)
    return before, head


_REVISION = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*['\"]?([^'\"\n]*?)['\"]?\s*$", re.MULTILINE)


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision of the migrations shipped with this code: the one revision no other
    names as its ``down_revision``. Read from the migration files' text (``revision = '...'``,
    ``down_revision = '...'``) rather than by loading Alembic's script directory, which imports its
    migration runtime and every script: a command that only reads the ledger checks the store's
    revision without them. ``tests/test_cli_startup.py`` checks it equals Alembic's own head."""
    revisions, downs = set(), set()
    for path in sorted(migrations_dir().joinpath("versions").glob("*.py")):
        found = dict(m.groups() for m in _REVISION.finditer(path.read_text(encoding="utf-8")))
        if "revision" in found:
            revisions.add(found["revision"])
            downs.add(found.get("down_revision") or "")
    heads = revisions - downs
    if len(heads) != 1:  # a branch in the migrations: let Alembic say what it is
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(alembic_config()).get_current_head()
    return heads.pop()


def current_revision(s: Session | sa.Connection) -> str | None:
    """The revision the ledger DB is at: the row Alembic keeps in ``alembic_version`` (None when the
    table is missing or empty: the store was never migrated). Read with one query, so a command that
    only reads the ledger does not import Alembic's migration runtime. `s`: a session or a Core
    connection."""
    conn = s if isinstance(s, sa.Connection) else s.connection()
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(rows) > 1:
        raise StoreError(f"the ledger store has {len(rows)} Alembic heads ({', '.join(sorted(rows))}): run `ledger init`")
    return rows[0] if rows else None


def check_initialized(s: Session | sa.Connection) -> None:
    """Raise StoreError when the ledger DB has not been migrated to the newest revision."""
    rev = current_revision(s)
    head = head_revision() if rev is not None else None
    if rev is None:
        raise StoreError("the ledger is not initialized here: run `ledger init` (or `ledger demo`)")
    if rev != head:
        raise StoreError(f"the ledger store is at revision {rev}, the code needs {head}: run `ledger init`")
