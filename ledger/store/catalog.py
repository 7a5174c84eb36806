"""What the ledger knows: controlled dimensions (tenants, products) and the loaded price books."""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

import sqlalchemy as sa

from .. import config
from ..names import name_problem, text_problem
from ..pricebook import Book, PriceIndex, default_paths, load_books, parse_book, unlocated
from ..schema import DIMENSIONS, PRICE_BOOK, pending_written, utcnow
from .db import StoreError, engine

if TYPE_CHECKING:  # what registers names and reads books (the ingest, its check) does it through Core
    # (the tables of ledger.schema); the SQLModel classes are imported by what writes them otherwise
    from sqlmodel import Session


def __getattr__(name: str):
    """``DIM_MODELS`` (tenant, product -> their SQLModel classes), imported when first asked for."""
    if name == "DIM_MODELS":
        from ..models import Product, Tenant

        return {"tenant": Tenant, "product": Product}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Rows per INSERT of :func:`add_dims` (one executemany each): bounds the memory of a million names.
DIM_CHUNK = 50_000
_NEWLINE = re.compile("\r\n|\r|\n")


def shown(value: object, limit: int = 40) -> str:
    """A value as an error line may print it: quoted, control characters and lone surrogates
    escaped, cut after `limit` characters (a 10,000-character name is not repeated in full)."""
    if not isinstance(value, str):
        return repr(value)
    return repr(value[:limit]) + (f"… ({len(value)} characters)" if len(value) > limit else "")


def dim_problems(*, name: object, display_name: str = "", owner: str = "") -> list[tuple[str, str]]:
    """(field, problem) for each field of a dimension row that the store would refuse or change."""
    out = []
    p = name_problem(name)
    if p:
        out.append(("name", p))
    for field, value in (("display_name", display_name), ("owner", owner)):
        p = text_problem(value)
        if p:
            out.append((field, p))
    return out


def add_dim(s: Session, *, kind: str, name: str, display_name: str = "", owner: str = "") -> bool:
    """Register a tenant or product; returns False when it already exists (unchanged).

    A name that breaks the names rule (empty, white space around it, a control character, more
    than 200 characters), or a display name or owner with a control character or more than 200
    characters, is refused with a :class:`StoreError` before the database sees it."""
    from ..models import Product, Tenant

    model = {"tenant": Tenant, "product": Product}[kind]
    bad = dim_problems(name=name, display_name=display_name, owner=owner)
    if bad:
        given = {"name": name, "display_name": display_name, "owner": owner}
        raise StoreError("; ".join(f"{kind} name {shown(name)}: {p}" if f == "name" else
                                   f"{kind} {shown(name)}: {f} {shown(given[f])}: {p}" for f, p in bad))
    if s.get(model, name) is not None:
        return False
    s.add(model(name=name, display_name=display_name or name, owner=owner))
    s.flush()
    return True


def add_dims(s: Session | sa.Connection, *, kind: str, names: Iterable[str]) -> list[str]:
    """Register many tenants or products at once (display name = name, no owner); returns the
    names it added, sorted. Names already registered are left as they are, and so is a name given
    twice. One SELECT of the registered names, then INSERTs of :data:`DIM_CHUNK` rows each (an
    executemany, ``ON CONFLICT DO NOTHING`` so a name registered meanwhile by another session is no
    error). A name that breaks the names rule refuses the whole call (:class:`StoreError`, nothing
    added)."""
    return _insert_new(s, kind, {n: ("", "") for n in names})


def _insert_new(s: Session | sa.Connection, kind: str, rows: dict[str, tuple[str, str]]) -> list[str]:
    """Insert the rows (name -> (display_name, owner)) whose name is not registered yet, through Core
    (a session or a connection `s`)."""
    table = DIMENSIONS[kind]
    bad = [(n, p) for n in rows if (p := name_problem(n))]
    if bad:
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise StoreError(f"{len(bad)} {kind} names refused: "
                         + "; ".join(f"{shown(n)}: {p}" for n, p in bad[:5]) + more)
    for n, (display, owner) in rows.items():
        bad = [(f, p) for f, v in (("display_name", display), ("owner", owner)) if (p := text_problem(v))]
        if bad:
            raise StoreError(f"{kind} {shown(n)} " + "; ".join(f"{f}: {p}" for f, p in bad))
    existing = dim_names(s, kind=kind)
    new = sorted(set(rows) - existing)
    if not new:
        return []
    dialect = (s.dialect if isinstance(s, sa.Connection) else s.get_bind().dialect).name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        stmt = pg_insert(table).on_conflict_do_nothing(index_elements=["name"])
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        stmt = sqlite_insert(table).on_conflict_do_nothing(index_elements=["name"])
    else:
        stmt = sa.insert(table)
    now = utcnow()
    for i in range(0, len(new), DIM_CHUNK):
        s.execute(stmt, [{"name": n, "display_name": rows[n][0] or n, "owner": rows[n][1], "created_at": now}
                         for n in new[i:i + DIM_CHUNK]])
    return new


def add_dim_rows(s: Session, *, kind: str, rows: Iterable[dict]) -> int:
    """Register the rows of :func:`read_dims_csv` (the first row of a name wins); returns how many
    names were added."""
    first: dict[str, tuple[str, str]] = {}
    for r in rows:
        first.setdefault(r["name"], (r.get("display_name", ""), r.get("owner", "")))
    return len(_insert_new(s, kind, first))


def list_dims(s: Session, *, kind: str) -> list:
    from sqlmodel import select

    from ..models import Product, Tenant

    model = {"tenant": Tenant, "product": Product}[kind]
    return list(s.exec(select(model).order_by(model.name)))


def dim_names(s: Session | sa.Connection, *, kind: str) -> set[str]:
    """The registered names of a dimension (``tenant``, ``product``), read through Core."""
    pending_written(s)
    table = DIMENSIONS[kind]
    return set(s.execute(sa.select(table.c.name)).scalars())


def read_dims_csv(path: str | Path) -> tuple[list[dict], list[str]]:
    """Rows of a dims CSV (columns name, display_name, owner; only name required) and errors, one
    line each naming file, line and column. A name must pass the names rule as written (white space
    around it is an error, not trimmed); display_name and owner are trimmed, then must have no
    control character and at most 200 characters. A UTF-8 byte order mark is allowed."""
    errors: list[str] = []
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")  # no newline translation: CR stays CR
    except (OSError, UnicodeDecodeError) as e:
        return [], [f"{path}: cannot read: {e}"]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    allowed = ("name", "display_name", "owner")
    try:
        cols = reader.fieldnames or []
    except csv.Error as e:
        return [], [f"{path}:1: not a CSV header: {e}"]
    for c in cols:
        if c not in allowed:
            errors.append(f"{path}:1: {shown(c) if text_problem(c) else c}: unknown column "
                          "(expected name, display_name, owner)")
    if "name" not in cols:
        errors.append(f"{path}:1: name: missing required column")
        return [], errors  # not one more "name: empty" line per row
    rows = []
    try:
        for row in reader:
            # the line the record starts on: a quoted field may span lines, blank lines are skipped
            fields = [v for v in row.values() if isinstance(v, str)] + (row.get(None) or [])
            line = reader.line_num - sum(len(_NEWLINE.findall(v)) for v in fields)
            if None in row:
                errors.append(f"{path}:{line}: {len(cols) + len(row[None])} fields, the header has {len(cols)}")
            value = row.get("name") or ""
            p = "empty" if not value.strip() else name_problem(value)
            if p:
                errors.append(f"{path}:{line}: name: {p}" + ("" if p == "empty" else f" ({shown(value)})"))
            clean = {k: (row.get(k) or "").strip() for k in allowed if k != "name"}
            for k, v in clean.items():
                q = text_problem(v)
                if q:
                    errors.append(f"{path}:{line}: {k}: {q} ({shown(v)})")
            if not p:
                rows.append({"name": value, **clean})
    except csv.Error as e:
        errors.append(f"{path}:{reader.line_num}: not valid CSV: {e}")
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
    from sqlmodel import select

    from ..models import FxRateRow, PriceBookRow, PriceEntryRow

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
                            purchase_option=p.purchase_option, provider=p.provider, price=p.price, list_price=p.list_price,
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


def books_from_store(s: Session | sa.Connection) -> list[Book]:
    """Every loaded book version, rebuilt from the TOML content stored at load time (read through
    Core: a session or a connection)."""
    pending_written(s)
    out = []
    c = PRICE_BOOK.c
    for row in s.execute(sa.select(c.name, c.version, c.path, c.content).order_by(c.name, c.version)):
        book, problems = parse_book(row.content, row.path or f"{row.name}@{row.version}")
        if book is None:  # cannot happen for content that validated at load; say so loudly if it does
            raise StoreError(f"stored book {row.name}@{row.version} no longer validates: "
                             + "; ".join(map(str, unlocated(problems))))
        out.append(book)
    return out


def loaded_books(url: str | None = None) -> list[Book]:
    """Books loaded in the configured ledger (empty when the ledger DB does not exist yet)."""
    url = url or config.database_url()
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
        return []
    with engine(url).connect() as conn:
        if not sa.inspect(conn).has_table("price_book"):
            return []
        return books_from_store(conn)


def default_index() -> PriceIndex:
    """The books loaded into the ledger store if any, else the shipped ``pricebooks/`` folder."""
    books = loaded_books()  # [] when no ledger exists here; a broken DB is an error, not a fallback
    if books:
        return PriceIndex(books)
    books, problems = load_books(default_paths())
    if problems:
        raise ValueError("price books have problems:\n" + "\n".join(map(str, unlocated(problems))))
    return PriceIndex(books)
