"""What the ledger knows: controlled dimensions (tenants, products) and the loaded price books."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, select

from .. import config
from ..models import FxRateRow, PriceBookRow, PriceEntryRow, Product, Tenant
from ..pricebook import Book, PriceIndex, default_paths, load_books, parse_book
from .db import StoreError, session

DIM_MODELS = {"tenant": Tenant, "product": Product}


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


def default_index() -> PriceIndex:
    """The books loaded into the ledger store if any, else the shipped ``pricebooks/`` folder."""
    books = loaded_books()  # [] when no ledger exists here; a broken DB is an error, not a fallback
    if books:
        return PriceIndex(books)
    books, problems = load_books(default_paths())
    if problems:
        raise ValueError("price books have problems:\n" + "\n".join(map(str, problems)))
    return PriceIndex(books)
