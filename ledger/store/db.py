"""The ledger DB: engines per URL, sessions that commit or roll back, Alembic migrations."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlmodel import Session, create_engine

from .. import config
from ..errors import LedgerError


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
        eng = create_engine(url, connect_args={"timeout": 60})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(dbapi_conn, _):  # WAL: readers (the dashboard) never block an ingest
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return eng
    return create_engine(url, pool_pre_ping=True)


def engine(url: str | None = None) -> sa.Engine:
    """The engine for `url` (default: the configured ledger DB), cached per URL."""
    return _engine(config.normalize_url(url) if url else config.database_url())


@contextmanager
def session(url: str | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error."""
    with Session(engine(url), expire_on_commit=False) as s:
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise


def alembic_config(url: str | None = None) -> Config:
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


def check_initialized(s: Session) -> None:
    """Raise StoreError when the ledger DB has not been migrated to the newest revision."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    rev = MigrationContext.configure(s.connection()).get_current_revision()
    if rev is None:
        raise StoreError("the ledger is not initialized here: run `ledger init` (or `ledger demo`)")
    if rev != head:
        raise StoreError(f"the ledger store is at revision {rev}, the code needs {head}: run `ledger init`")
