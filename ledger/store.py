"""The ledger DB: engine, migrations, and keyword-only functions over a session (dims, books, periods)."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlmodel import Session, create_engine, select

from . import config
from .models import FxRateRow, Period, PriceBookRow, PriceEntryRow, Product, Tenant
from .pricebook import Book, parse_book

DIM_MODELS = {"tenant": Tenant, "product": Product}


class StoreError(ValueError):
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


def init_store(url: str | None = None, *, connection: sa.Connection | None = None) -> tuple[str | None, str]:
    """Create or upgrade the store to the newest revision (Alembic ``upgrade head``).

    Returns (revision before, revision after); running it twice changes nothing.
    """
    cfg = alembic_config(url)
    head = ScriptDirectory.from_config(cfg).get_current_head()

    def current(conn) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    if connection is not None:
        before = current(connection)
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")
        return before, head
    with engine(url).connect() as conn:
        before = current(conn)
    if before != head:
        command.upgrade(cfg, "head")
    return before, head


def check_initialized(s: Session) -> None:
    """Raise StoreError when the ledger DB has not been migrated to the newest revision."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    rev = MigrationContext.configure(s.connection()).get_current_revision()
    if rev is None:
        raise StoreError("the ledger is not initialized here: run `ledger init` (or `ledger demo`)")
    if rev != head:
        raise StoreError(f"the ledger store is at revision {rev}, the code needs {head}: run `ledger init`")


# ---- dimensions -------------------------------------------------------------------------------

def add_dim(s: Session, *, kind: str, name: str, display_name: str = "", owner: str = "") -> bool:
    """Register a tenant or product; returns False when it already exists (unchanged)."""
    model = DIM_MODELS[kind]
    name = name.strip()
    if not name:
        raise StoreError(f"a {kind} needs a name")
    if s.get(model, name) is not None:
        return False
    s.add(model(name=name, display_name=display_name or name, owner=owner))
    s.flush()
    return True


def list_dims(s: Session, *, kind: str) -> list:
    model = DIM_MODELS[kind]
    return list(s.exec(select(model).order_by(model.name)))


def dim_names(s: Session, *, kind: str) -> set[str]:
    model = DIM_MODELS[kind]
    return set(s.exec(select(model.name)))


def read_dims_csv(path: str | Path) -> tuple[list[dict], list[str]]:
    """Rows of a dims CSV (columns name, display_name, owner; only name required) and errors."""
    errors: list[str] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [], [f"{path}: cannot read: {e}"]
    reader = csv.DictReader(io.StringIO(text))
    cols = reader.fieldnames or []
    allowed = {"name", "display_name", "owner"}
    for c in cols:
        if c not in allowed:
            errors.append(f"{path}:1: {c}: unknown column (expected name, display_name, owner)")
    if "name" not in cols:
        errors.append(f"{path}:1: name: missing required column")
        return [], errors  # not one more "name: empty" line per row
    rows = []
    for i, row in enumerate(reader, start=2):
        if not (row.get("name") or "").strip():
            errors.append(f"{path}:{i}: name: empty")
            continue
        rows.append({k: (row.get(k) or "").strip() for k in allowed})
    if not rows and not errors:
        errors.append(f"{path}: no rows")
    return rows, errors


# ---- price books ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LoadResult:
    """What loading a book did: ``loaded`` (new version stored) or ``unchanged`` (same bytes)."""

    ref: str
    status: str


def store_book(s: Session, *, book: Book) -> LoadResult:
    """Store a validated book. A loaded version is immutable: the same content again is a no-op,
    different content under the same (name, version) is refused."""
    existing = s.exec(select(PriceBookRow).where(PriceBookRow.name == book.name,
                                                 PriceBookRow.version == book.version)).first()
    if existing is not None:
        if existing.digest == book.digest:
            return LoadResult(book.ref, "unchanged")
        raise StoreError(f"{book.path}: book {book.ref} is already loaded with different content "
                         f"(sha256 {existing.digest[:12]} vs {book.digest[:12]}); a loaded version is immutable: "
                         "give the changed book a new version")
    row = PriceBookRow(name=book.name, version=book.version, currency=book.currency, source=book.source,
                       retrieved_at=book.retrieved_at, digest=book.digest, path=book.path, content=book.text)
    s.add(row)
    s.flush()
    for p in book.prices:
        s.add(PriceEntryRow(book_id=row.id, entry=p.entry, meter=p.meter, sku=p.sku, region=p.region,
                            purchase_option=p.purchase_option, price=p.price, list_price=p.list_price,
                            currency=p.currency, per=p.per, effective_from=p.effective_from,
                            effective_to=p.effective_to, source_url=p.source_url,
                            tiers=json.dumps([{"above_input_tokens": t.above_input_tokens, "price": str(t.price)}
                                              for t in p.tiers]),
                            upfront=p.upfront, term=p.term))
    for r in book.fx:
        s.add(FxRateRow(book_id=row.id, from_currency=r.from_, to_currency=r.to, rate=r.rate,
                        effective_from=r.effective_from, effective_to=r.effective_to))
    s.flush()
    return LoadResult(book.ref, "loaded")


def books_from_store(s: Session) -> list[Book]:
    """Every loaded book version, rebuilt from the TOML content stored at load time."""
    out = []
    for row in s.exec(select(PriceBookRow).order_by(PriceBookRow.name, PriceBookRow.version)):
        book, problems = parse_book(row.content, row.path or f"{row.name}@{row.version}")
        if book is None:  # cannot happen for content that validated at load; say so loudly if it does
            raise StoreError(f"stored book {row.name}@{row.version} no longer validates: "
                             + "; ".join(map(str, problems)))
        out.append(book)
    return out


def loaded_books(url: str | None = None) -> list[Book]:
    """Books loaded in the configured ledger (empty when the ledger DB does not exist yet)."""
    url = url or config.database_url()
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
        return []
    with session(url) as s:
        if not sa.inspect(s.connection()).has_table("price_book"):
            return []
        return books_from_store(s)


# ---- periods ----------------------------------------------------------------------------------

def month_bounds(name: str) -> tuple[datetime, datetime]:
    """``2026-10`` -> [2026-10-01T00:00Z, 2026-11-01T00:00Z)."""
    try:
        y, m = (int(x) for x in name.split("-"))
        start = datetime(y, m, 1, tzinfo=timezone.utc)
    except (ValueError, TypeError):
        raise StoreError(f"period {name!r} is not a month like 2026-10") from None
    end = datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def month_of(at: datetime) -> str:
    at = at.astimezone(timezone.utc)
    return f"{at.year:04d}-{at.month:02d}"


def months_between(start: datetime, end: datetime) -> list[str]:
    """Names of the months touched by ``[start, end]`` (both instants included)."""
    out = []
    y, m = start.astimezone(timezone.utc).year, start.astimezone(timezone.utc).month
    e = end.astimezone(timezone.utc)
    while (y, m) <= (e.year, e.month):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def closed_periods(s: Session, names: Sequence[str] | None = None) -> list[str]:
    q = select(Period.name).where(Period.status == "closed")
    if names is not None:
        q = q.where(Period.name.in_(list(names)))
    return sorted(s.exec(q))


def close_period(s: Session, *, name: str) -> bool:
    """Close a month; returns False when it was already closed."""
    start, end = month_bounds(name)
    p = s.get(Period, name)
    if p is None:
        p = Period(name=name, start=start, end=end)
        s.add(p)
    if p.status == "closed":
        return False
    p.status = "closed"
    p.closed_at = datetime.now(timezone.utc)
    s.add(p)
    s.flush()
    return True


def current_open_period(s: Session, *, now: datetime | None = None) -> str:
    """The period adjustments are booked into: now's month, or the first open month after it."""
    closed = set(closed_periods(s))
    name = month_of(now or datetime.now(timezone.utc))
    while name in closed:
        name = month_of(month_bounds(name)[1])
    return name
