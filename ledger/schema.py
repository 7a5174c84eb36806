"""The ledger DB's column types, and the tables a command reads or writes without the SQLModel classes.

:class:`Money` and :class:`UTCDateTime` are the column types of :mod:`ledger.models` (which imports
them from here). The tables below are SQLAlchemy Core descriptions of tables of :mod:`ledger.models`:
what ``ledger batches``, ``ledger runs`` and a period's close read (``ingest_batch``,
``allocation_run``, ``period``, ``period_signoff``), and what ``ledger ingest`` and the check of its
batch read and write (``tenant``, ``product``, ``pool``, ``price_book``, ``price_entry``, and a
sync's ``sync_watermark``), so that these commands start without SQLModel, pydantic and the ORM
(docs/scale.md, "Startup"). The migrations make the tables; the SQLModel classes write what the
other commands write. A Core table declares no defaults: who inserts through one gives every column.
``tests/test_schema.py`` checks that each agrees with its SQLModel class, column by column (name,
order, type, length, nullability, key, foreign keys), so the two cannot drift.
"""
from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal, localcontext

import sqlalchemy as sa
from sqlalchemy.types import TypeDecorator

_PG_SCALE = Decimal("1e-12")


class Money(TypeDecorator):
    """An exact decimal: NUMERIC(38, 12) on PostgreSQL, TEXT on SQLite, never a float."""

    impl = sa.String(64)
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "postgresql":
            return dialect.type_descriptor(sa.Numeric(38, 12, asdecimal=True))
        return dialect.type_descriptor(sa.String(64))

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if not isinstance(value, Decimal):
            if isinstance(value, float):
                raise TypeError("Money columns refuse floats")
            value = Decimal(value)
        if not value.is_finite():
            raise ValueError(f"Money columns refuse {value}")
        if dialect.name == "postgresql":
            # NUMERIC(38, 12) would round a 13th decimal place silently: refuse rather than lose it.
            with localcontext() as ctx:
                ctx.prec = 80
                if value != value.quantize(_PG_SCALE):
                    raise ValueError(f"Money column: {value} has more than 12 decimal places")
            return value
        return format(value, "f")

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        d = value if isinstance(value, Decimal) else Decimal(str(value))
        if dialect.name == "postgresql":
            # NUMERIC(38, 12) pads to 12 places: give back the number as it was written (with
            # precision for all 38 digits: the default context's 28 would round them).
            with localcontext() as ctx:
                ctx.prec = 80
                d = d.normalize() if d != d.to_integral_value() else d.quantize(Decimal(1))
        return d


class UTCDateTime(TypeDecorator):
    """A timezone-aware instant stored in UTC; always returned aware (SQLite drops the offset)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def one_of(column: str, values) -> str:
    """The SQL of a CHECK that `column` holds one of `values` (texts of a closed set: no quote in them)."""
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def pending_written(s) -> None:
    """Flush the changes a session holds (when it flushes before its queries), so that a Core read
    through it (the tables below, which the ORM does not flush for) sees them; a Core connection has
    nothing pending."""
    if getattr(s, "autoflush", False):
        s.flush()


#: The Core tables below, apart from SQLModel's metadata (they are never created from here).
METADATA = sa.MetaData()


def _col(name: str, type_, *args, nullable: bool = False, **kwargs) -> sa.Column:
    return sa.Column(name, type_, *args, nullable=nullable, **kwargs)


def _dimension(name: str) -> sa.Table:
    """A dimension table (``tenant``, ``product``, ``pool``): :class:`ledger.models.DimensionBase`."""
    return sa.Table(name, METADATA, _col("name", sa.String(200), primary_key=True),
                    _col("display_name", sa.String(200)), _col("owner", sa.String(200)),
                    _col("created_at", UTCDateTime()))


#: ``tenant``, ``product``, ``pool``: :class:`ledger.models.Tenant`, ``Product``, ``Pool``.
TENANT, PRODUCT, POOL = (_dimension(n) for n in ("tenant", "product", "pool"))
#: The dimensions a batch's names are registered in, by the name of their column.
DIMENSIONS = {"tenant": TENANT, "product": PRODUCT}

#: ``price_book``: :class:`ledger.models.PriceBookRow` (the check rebuilds the books from `content`).
PRICE_BOOK = sa.Table(
    "price_book", METADATA,
    _col("id", sa.Integer(), primary_key=True),
    _col("name", sa.String(200)),
    _col("version", sa.String(100)),
    _col("currency", sa.String(3)),
    _col("source", sa.String()),
    _col("retrieved_at", sa.Date()),
    _col("digest", sa.String(64)),
    _col("path", sa.String()),
    _col("content", sa.Text()),
    _col("loaded_at", UTCDateTime()),
)

#: ``price_entry``: :class:`ledger.models.PriceEntryRow` (the names the ingest expects: meters, SKUs, regions).
PRICE_ENTRY = sa.Table(
    "price_entry", METADATA,
    _col("id", sa.Integer(), primary_key=True),
    _col("book_id", sa.Integer(), sa.ForeignKey("price_book.id")),
    _col("entry", sa.Integer()),
    _col("meter", sa.String(100)),
    _col("sku", sa.String(200)),
    _col("region", sa.String(100)),
    _col("purchase_option", sa.String(100)),
    _col("provider", sa.String(200)),
    _col("price", Money()),
    _col("list_price", Money()),
    _col("currency", sa.String(3)),
    _col("per", sa.String(100)),
    _col("effective_from", UTCDateTime()),
    _col("effective_to", UTCDateTime(), nullable=True),
    _col("source_url", sa.String()),
    _col("tiers", sa.Text()),
    _col("upfront", Money(), nullable=True),
    _col("term", sa.String(100), nullable=True),
)

#: ``sync_watermark``: :class:`ledger.models.SyncWatermark` (written in the transaction of a sync's batch).
SYNC_WATERMARK = sa.Table(
    "sync_watermark", METADATA,
    _col("source", sa.String(200), primary_key=True),
    _col("kind", sa.String(40)),
    _col("position", sa.Text()),
    _col("batch_id", sa.String(40), nullable=True),
    _col("updated_at", UTCDateTime()),
)

#: ``ingest_batch``: :class:`ledger.models.IngestBatch`.
INGEST_BATCH = sa.Table(
    "ingest_batch", METADATA,
    _col("id", sa.String(40), primary_key=True),
    _col("kind", sa.String(20)),
    _col("status", sa.String(20)),
    _col("created_at", UTCDateTime()),
    _col("files", sa.Text()),
    _col("rows_read", sa.Integer()),
    _col("rows_new", sa.Integer()),
    _col("rows_duplicate", sa.Integer()),
    _col("first_at", UTCDateTime(), nullable=True),
    _col("last_at", UTCDateTime(), nullable=True),
    _col("booked_period", sa.String(7), nullable=True),
    _col("as_adjustment", sa.Boolean()),
)

#: ``allocation_run``: :class:`ledger.models.AllocationRun`.
ALLOCATION_RUN = sa.Table(
    "allocation_run", METADATA,
    _col("id", sa.String(40), primary_key=True),
    _col("period_start", UTCDateTime()),
    _col("period_end", UTCDateTime()),
    _col("created_at", UTCDateTime()),
    _col("currency", sa.String(3)),
    _col("idle_policy", sa.String(20)),
    _col("basis", sa.String(30)),
    _col("inputs_digest", sa.String(64)),
    _col("price_books", sa.Text()),
    _col("code_version", sa.String(40)),
    _col("total", Money()),
    _col("summary", sa.Text()),
)

#: ``period``: :class:`ledger.models.Period`.
PERIOD = sa.Table(
    "period", METADATA,
    _col("name", sa.String(7), primary_key=True),
    _col("start", UTCDateTime()),
    _col("end", UTCDateTime()),
    _col("status", sa.String(10)),
    _col("closed_at", UTCDateTime(), nullable=True),
)

#: ``period_signoff``: :class:`ledger.models.SignOff`.
PERIOD_SIGNOFF = sa.Table(
    "period_signoff", METADATA,
    _col("period", sa.String(7), sa.ForeignKey("period.name"), primary_key=True),
    _col("signed_by", sa.String(200)),
    _col("signed_at", UTCDateTime()),
    _col("note", sa.Text()),
    _col("run_id", sa.String(40), sa.ForeignKey("allocation_run.id")),
    _col("total", Money()),
    _col("currency", sa.String(3)),
    _col("inputs_digest", sa.String(64)),
)
