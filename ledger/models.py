"""SQLModel tables of the ledger DB: dimensions, price books, batches, periods, allocation runs and lines.

Money columns use :class:`Money`: NUMERIC on PostgreSQL, a canonical decimal string on SQLite
(which has no exact decimal type), and always ``Decimal`` in Python. Times use :class:`UTCDateTime`.
Both are declared in :mod:`ledger.schema`, beside the Core descriptions of the tables that commands
read without these classes (a test keeps them in step with the classes here).
"""
from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Optional

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from .schema import Money, UTCDateTime, one_of, utcnow  # noqa: F401  (the column types, declared there)
from .vocab import Category, LineKind

class DimensionBase(SQLModel):
    name: str = Field(primary_key=True, max_length=200)
    display_name: str = Field(default="", max_length=200)
    owner: str = Field(default="", max_length=200)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Tenant(DimensionBase, table=True):
    """A customer of the fleet (internal team or external account)."""

    __tablename__ = "tenant"


class Product(DimensionBase, table=True):
    """A product or feature that sends requests."""

    __tablename__ = "product"


class Pool(DimensionBase, table=True):
    """A self-hosted serving pool (registered when fleet intervals name it)."""

    __tablename__ = "pool"


class PriceBookRow(SQLModel, table=True):
    """One loaded version of a price book; `content` is the TOML as loaded (immutable), `digest` its SHA-256."""

    __tablename__ = "price_book"
    __table_args__ = (sa.UniqueConstraint("name", "version", name="uq_price_book_name_version"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, index=True)
    version: str = Field(max_length=100)
    currency: str = Field(max_length=3)
    source: str = Field(default="")
    retrieved_at: date
    digest: str = Field(max_length=64)
    path: str = Field(default="")
    content: str = Field(sa_type=sa.Text)
    loaded_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class PriceEntryRow(SQLModel, table=True):
    """A price of a loaded book, for queries; the book's `content` remains the source of truth.
    `provider` is the provider a token price applies to (``*``: any)."""

    __tablename__ = "price_entry"
    id: Optional[int] = Field(default=None, primary_key=True)
    book_id: int = Field(foreign_key="price_book.id", index=True)
    entry: int
    meter: str = Field(max_length=100, index=True)
    sku: str = Field(max_length=200)
    region: str = Field(max_length=100)
    purchase_option: str = Field(max_length=100)
    provider: str = Field(default="*", max_length=200, sa_column_kwargs={"server_default": "*"})
    price: Decimal = Field(sa_type=Money)
    list_price: Decimal = Field(sa_type=Money)
    currency: str = Field(max_length=3)
    per: str = Field(max_length=100)
    effective_from: datetime = Field(sa_type=UTCDateTime)
    effective_to: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    source_url: str = Field(default="")
    tiers: str = Field(default="[]", sa_type=sa.Text)
    upfront: Optional[Decimal] = Field(default=None, sa_type=Money)
    term: Optional[str] = Field(default=None, max_length=100)


class FxRateRow(SQLModel, table=True):
    """A dated FX rate of a loaded book: `rate` units of `to_currency` per unit of `from_currency`."""

    __tablename__ = "fx_rate"
    id: Optional[int] = Field(default=None, primary_key=True)
    book_id: int = Field(foreign_key="price_book.id", index=True)
    from_currency: str = Field(max_length=3)
    to_currency: str = Field(max_length=3)
    rate: Decimal = Field(sa_type=Money)
    effective_from: datetime = Field(sa_type=UTCDateTime)
    effective_to: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class BudgetBookRow(SQLModel, table=True):
    """One loaded version of a budgets book (guardrails, migration 0007); `content` is the TOML as
    loaded (immutable, the source of truth), `digest` its SHA-256."""

    __tablename__ = "budget_book"
    __table_args__ = (sa.UniqueConstraint("name", "version", name="uq_budget_book_name_version"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, index=True)
    version: str = Field(max_length=100)
    currency: str = Field(max_length=3)
    digest: str = Field(max_length=64)
    path: str = Field(default="")
    content: str = Field(sa_type=sa.Text)
    loaded_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class BudgetEntryRow(SQLModel, table=True):
    """A budget of a loaded budgets book, for queries: its scope (`tenant`, `product`, `model`, null
    for any), `monthly` amount in `currency`, `owner`, and when it is in force (end exclusive)."""

    __tablename__ = "budget_entry"
    id: Optional[int] = Field(default=None, primary_key=True)
    book_id: int = Field(foreign_key="budget_book.id", index=True)
    entry: int
    tenant: Optional[str] = Field(default=None, max_length=200)
    product: Optional[str] = Field(default=None, max_length=200)
    model: Optional[str] = Field(default=None, max_length=200)
    monthly: Decimal = Field(sa_type=Money)
    currency: str = Field(max_length=3)
    owner: str = Field(default="", max_length=200)
    effective_from: datetime = Field(sa_type=UTCDateTime)
    effective_to: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class IngestBatch(SQLModel, table=True):
    """One ingest invocation. `files` is JSON: [{path, sha256, rows}]. Facts of a batch are visible
    only once its row exists with status ``committed`` (the commit point of the batch)."""

    __tablename__ = "ingest_batch"
    id: str = Field(primary_key=True, max_length=40)
    kind: str = Field(max_length=20, index=True)
    status: str = Field(default="committed", max_length=20)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    files: str = Field(default="[]", sa_type=sa.Text)
    rows_read: int = 0
    rows_new: int = 0
    rows_duplicate: int = 0
    first_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    last_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    booked_period: Optional[str] = Field(default=None, max_length=7)
    as_adjustment: bool = False


class SyncWatermark(SQLModel, table=True):
    """Where a live source (``ledger sync``, ``ledger otlp serve``: migration 0005) was read up to.
    `source` is the name the sync file gives it (the key), `kind` its kind (``litellm-postgres``,
    ``bill-folder``, ``otlp``), `position` the JSON of how far it was read (its shape is the kind's:
    docs/sync.md), `batch_id` the batch committed with it (null when the run added no row),
    `updated_at` when it moved. Written in the transaction of the batch it describes."""

    __tablename__ = "sync_watermark"
    source: str = Field(primary_key=True, max_length=200)
    kind: str = Field(max_length=40)
    position: str = Field(default="{}", sa_type=sa.Text)
    batch_id: Optional[str] = Field(default=None, max_length=40)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Period(SQLModel, table=True):
    """An accounting period ``[start, end)`` in UTC, named ``YYYY-MM``; `status` open or closed."""

    __tablename__ = "period"
    name: str = Field(primary_key=True, max_length=7)
    start: datetime = Field(sa_type=UTCDateTime)
    end: datetime = Field(sa_type=UTCDateTime)
    status: str = Field(default="open", max_length=10)
    closed_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class SignOff(SQLModel, table=True):
    """A closed period's sign-off (migration 0004): who closed it (`signed_by`), when (`signed_at`,
    UTC, whole seconds), why (`note`, may be empty), and the run signed as final (`run_id`) with its
    `total` in `currency` and its `inputs_digest` as they were at the close. One per period (the
    key), written once and never changed: triggers refuse an UPDATE or DELETE."""

    __tablename__ = "period_signoff"
    period: str = Field(primary_key=True, foreign_key="period.name", max_length=7)
    signed_by: str = Field(max_length=200)
    signed_at: datetime = Field(sa_type=UTCDateTime)
    note: str = Field(default="", sa_type=sa.Text)
    run_id: str = Field(foreign_key="allocation_run.id", max_length=40)
    total: Decimal = Field(sa_type=Money)
    currency: str = Field(max_length=3)
    inputs_digest: str = Field(max_length=64)


class AllocationRun(SQLModel, table=True):
    """An immutable allocation of ``[period_start, period_end)``. `price_books` is a JSON list of
    ``name@version``; `summary` the JSON report; `total` the sum of priced resources."""

    __tablename__ = "allocation_run"
    id: str = Field(primary_key=True, max_length=40)
    period_start: datetime = Field(sa_type=UTCDateTime, index=True)
    period_end: datetime = Field(sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    currency: str = Field(max_length=3)
    idle_policy: str = Field(max_length=20)
    basis: str = Field(max_length=30)
    inputs_digest: str = Field(max_length=64)
    price_books: str = Field(default="[]", sa_type=sa.Text)
    code_version: str = Field(max_length=40)
    total: Decimal = Field(sa_type=Money)
    summary: str = Field(default="{}", sa_type=sa.Text)


class LineColumns(SQLModel):
    """The columns of an allocation line, declared once: an official run's (:class:`AllocationLine`)
    and a what-if scenario's (:class:`ScenarioLine`) are the same line under another parent."""

    day: date
    kind: str = Field(max_length=20)
    tenant: Optional[str] = Field(default=None, max_length=200)
    product: Optional[str] = Field(default=None, max_length=200)
    model: Optional[str] = Field(default=None, max_length=200)
    pool: Optional[str] = Field(default=None, max_length=200)
    provider: Optional[str] = Field(default=None, max_length=200)
    category: str = Field(max_length=30)
    work: str = Field(max_length=10)
    shared_from: Optional[str] = Field(default=None, max_length=20)
    quantity: Decimal = Field(sa_type=Money)
    unit: str = Field(max_length=50)
    amount: Decimal = Field(sa_type=Money)
    currency: str = Field(max_length=3)


class AllocationLine(LineColumns, table=True):
    """One line of a run. `kind` is tenant, idle_slack, idle_reserve, unallocated or (a true-up run
    only) variance (an explicit column, never a name suffix); `work` succeeded or failed;
    `shared_from` is idle_slack or idle_reserve on a tenant line that carries its share of idle
    (policy ``share``), on a variance line the idle or unallocated kind it was spread over, else null;
    `quantity` in `unit` (GPU-seconds, tokens, the meter's unit); `amount` in `currency`, exact.
    `kind` and `category` are CHECKed against :class:`~ledger.vocab.LineKind` and
    :class:`~ledger.vocab.Category` (migration 0003)."""

    __tablename__ = "allocation_line"
    __table_args__ = (sa.CheckConstraint(one_of("kind", LineKind), name="ck_allocation_line_kind"),
                      sa.CheckConstraint(one_of("category", Category), name="ck_allocation_line_category"))
    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="allocation_run.id", index=True, max_length=40)


class ScenarioRun(SQLModel, table=True):
    """A what-if scenario's result (migration 0006, ``ledger whatif``), stored apart from the runs:
    never a period's run, never its current run. `name`, `period` (``YYYY-MM``) and its bounds, the
    actual run it was set beside (`run_id`), `currency`, `actual_total` and `scenario_total`,
    `status` (VERDICT, DRAFT, or ``-`` when nothing was sized), the scenario file's `scenario_digest`
    and `scenario_text`, the `price_books` it priced with (JSON), the ``whatif --json`` document
    (`summary`) and the `code_version`."""

    __tablename__ = "scenario_run"
    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(max_length=200)
    period: str = Field(max_length=7, index=True)
    period_start: datetime = Field(sa_type=UTCDateTime)
    period_end: datetime = Field(sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    run_id: str = Field(foreign_key="allocation_run.id", max_length=40)
    currency: str = Field(max_length=3)
    actual_total: Decimal = Field(sa_type=Money)
    scenario_total: Decimal = Field(sa_type=Money)
    status: str = Field(max_length=10)
    scenario_digest: str = Field(max_length=64)
    scenario_text: str = Field(default="", sa_type=sa.Text)
    price_books: str = Field(default="[]", sa_type=sa.Text)
    summary: str = Field(default="{}", sa_type=sa.Text)
    code_version: str = Field(max_length=40)


class ScenarioLine(LineColumns, table=True):
    """One line of a scenario's allocation: the columns of :class:`AllocationLine`, under its
    `scenario_id` (kind and category CHECKed the same way)."""

    __tablename__ = "scenario_line"
    __table_args__ = (sa.CheckConstraint(one_of("kind", LineKind), name="ck_scenario_line_kind"),
                      sa.CheckConstraint(one_of("category", Category), name="ck_scenario_line_category"))
    id: Optional[int] = Field(default=None, primary_key=True)
    scenario_id: str = Field(foreign_key="scenario_run.id", index=True, max_length=40)
