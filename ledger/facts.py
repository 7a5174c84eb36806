"""The columnar usage store: Parquet files per kind, month and committed batch, queried with DuckDB.

Layout (version 2, docs/facts.md): ``<home>/facts/<kind>/month=YYYY-MM/<batch_id>-<n>.parquet``,
Hive-style partitions by the UTC month of ``booked_at``, so that DuckDB, Spark and Trino read a kind
by path and prune by period. A file is part of the ledger only when the ledger DB holds a committed
batch with that id: the DB row is the commit point, so a file left by a killed ingest is never read
(and is swept by the next ingest). Homes written before the partitions (version 1, flat
``<kind>/<batch_id>-<n>.parquet``) are moved to them by :mod:`ledger.facts_layout`; until then (and
while a migration is cut short) the readers here read a flat file, and ignore the partition files
made from it, so every row is read once in either layout.

Every kind's file has the input columns of DESIGN §3 with exact types (money and quantities as
DECIMAL, instants as TIMESTAMPTZ in UTC; a bill's ``consumed_quantity`` as exact decimal text, see
:data:`BILL_QUANTITY`) plus bookkeeping columns:

- ``booked_at``: the instant the row counts at for allocation: ``occurred_at`` (requests, meters),
  ``decided_at`` (outcomes), ``charge_period_start`` (bill rows); for a row ingested
  ``--as-adjustment`` into an open period, the start of that period. Fleet intervals and charges
  (not adjustable) have their ``start`` and ``period_start`` there. It decides the file's month.

A column added to a kind after some facts were written (the requests' cache writes and service
tier, and the source's own cost, ``reported_cost`` and ``reported_currency``, kept beside ours by
the adapters of ``ledger ingest --source``) reads as its default in the older files (see :func:`files_sql`).

The batch a row came from is its file's name; the batch row in the DB lists the source files and
their digests. (Files written before 2026-11 also carry ``_hash``, a 64-bit hash of the row; it is
no longer read: a re-sent key's content is compared column by column when it is ingested.)

Every function that finds files takes the ledger home's folder, `home` (:attr:`ledger.config.Home.path`),
as a parameter: none reads the environment, so two homes can be read in one process.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

from . import duck, vocab
from .errors import LedgerError
from .money import decimal_text_sql
from .pricebook.records import SERVICE_TIERS as _SERVICE_TIERS
from .sqltext import literal, quote_ident


@dataclass(frozen=True)
class Column:
    """An input column: `name`, DuckDB `type`, `required`, and the SQL `default` when absent."""

    name: str
    type: str
    required: bool = True
    default: str = "NULL"


@dataclass(frozen=True)
class Kind:
    """An input kind: its `columns`, the `key` columns, the instant column(s) that date it, and its
    `categories`: the text columns of few distinct values (names of tenants, models, pools, ...),
    which ingest reads as DuckDB ENUMs when it can (see ``ledger.ingest``)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    dated_by: tuple[str, ...]
    categories: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


QTY = "DECIMAL(38,9)"
MONEY = "DECIMAL(38,6)"
#: Bill money and quantities: AWS types them as doubles; 12 places keep every value written with up
#: to 12 (the ingest refuses more, never rounds), as the requests' reported_cost.
BILL_MONEY = "DECIMAL(38,12)"
#: A bill's ConsumedQuantity is a quantity, not money: it is kept exactly as the decimal number it is,
#: whatever its places (Microsoft writes 15: ``0.041666666666667``), as text in its one plain form
#: (:func:`ledger.money.decimal_text_sql`: ``1.50`` and ``1.5e0`` are ``1.5``); never rounded, never
#: refused for its precision. Fact files written before 2026-12 hold it as DECIMAL(38,12):
#: :func:`files_sql` reads them as the same text.
BILL_QUANTITY = "VARCHAR"

KINDS: dict[str, Kind] = {
    "requests": Kind("requests", (
        Column("request_id", "VARCHAR"),
        Column("occurred_at", "TIMESTAMPTZ"),
        Column("tenant", "VARCHAR"),
        Column("product", "VARCHAR"),
        Column("model", "VARCHAR"),
        Column("pool", "VARCHAR", False),
        Column("provider", "VARCHAR", False),
        Column("task_id", "VARCHAR", False),
        Column("input_tokens", "BIGINT"),
        Column("cached_input_tokens", "BIGINT", False, "0"),
        Column("output_tokens", "BIGINT"),
        Column("cache_write_input_tokens", "BIGINT", False, "0"),
        Column("cache_write_1h_input_tokens", "BIGINT", False, "0"),
        Column("reasoning_tokens", "BIGINT", False, "0"),
        Column("service_tier", "VARCHAR", False, "'standard'"),
        Column("status", "VARCHAR"),
        Column("ttft_ms", "DOUBLE", False),
        Column("latency_ms", "DOUBLE", False),
        Column("region", "VARCHAR", False),
        Column("reported_cost", "DECIMAL(38,12)", False),
        Column("reported_currency", "VARCHAR", False),
    ), key=("request_id",), dated_by=("occurred_at",),
       categories=("tenant", "product", "model", "pool", "provider", "service_tier", "status", "region")),
    "meters": Kind("meters", (
        Column("event_id", "VARCHAR"),
        Column("occurred_at", "TIMESTAMPTZ"),
        Column("tenant", "VARCHAR"),
        Column("product", "VARCHAR"),
        Column("task_id", "VARCHAR", False),
        Column("meter", "VARCHAR"),
        Column("sku", "VARCHAR"),
        Column("quantity", QTY),
        Column("unit", "VARCHAR"),
        Column("region", "VARCHAR", False),
    ), key=("event_id",), dated_by=("occurred_at",),
       categories=("tenant", "product", "meter", "sku", "unit", "region")),
    "outcomes": Kind("outcomes", (
        Column("task_id", "VARCHAR"),
        Column("tenant", "VARCHAR"),
        Column("product", "VARCHAR"),
        Column("outcome", "VARCHAR"),
        Column("decided_at", "TIMESTAMPTZ"),
        Column("criteria", "VARCHAR"),
    ), key=("task_id", "decided_at"), dated_by=("decided_at",),
       categories=("tenant", "product", "outcome", "criteria")),
    "fleet": Kind("fleet", (
        Column("interval_id", "VARCHAR"),
        Column("pool", "VARCHAR"),
        Column("start", "TIMESTAMPTZ"),
        Column("end", "TIMESTAMPTZ"),
        Column("device", "VARCHAR"),
        Column("gpus", "BIGINT"),
        Column("region", "VARCHAR"),
        Column("purchase_option", "VARCHAR"),
        Column("role", "VARCHAR"),
        Column("capacity_tokens_per_gpu_s", QTY, False),
    ), key=("interval_id",), dated_by=("start", "end"),
       categories=("pool", "device", "region", "purchase_option", "role")),
    "charges": Kind("charges", (
        Column("charge_id", "VARCHAR"),
        Column("period_start", "TIMESTAMPTZ"),
        Column("period_end", "TIMESTAMPTZ"),
        Column("category", "VARCHAR"),
        Column("description", "VARCHAR", False, "''"),
        Column("amount", MONEY),
        Column("currency", "VARCHAR"),
        Column("allocate", "VARCHAR"),
    ), key=("charge_id",), dated_by=("period_start", "period_end"),
       categories=("category", "currency", "allocate")),
    # A cloud bill's cost-and-usage rows, FinOps FOCUS columns under ledger names (ledger.ingest.bill
    # converts a FOCUS file; docs/reconcile.md). Money is signed (credits, corrections) and kept at
    # 12 places, as written; a row has no id of its own: `line_id` is derived from its content.
    "bill": Kind("bill", (
        Column("line_id", "VARCHAR"),
        Column("charge_period_start", "TIMESTAMPTZ"),
        Column("charge_period_end", "TIMESTAMPTZ"),
        Column("billing_period_start", "TIMESTAMPTZ", False),
        Column("charge_category", "VARCHAR"),
        Column("charge_class", "VARCHAR", False),
        Column("provider", "VARCHAR"),
        Column("service_name", "VARCHAR"),
        Column("service_category", "VARCHAR", False),
        Column("billing_account_id", "VARCHAR", False),
        Column("resource_id", "VARCHAR", False),
        Column("resource_name", "VARCHAR", False),
        Column("region", "VARCHAR", False),
        Column("sku_id", "VARCHAR", False),
        Column("sku_price_id", "VARCHAR", False),
        Column("pricing_category", "VARCHAR", False),
        Column("commitment_discount_id", "VARCHAR", False),
        Column("consumed_quantity", BILL_QUANTITY, False),
        Column("consumed_unit", "VARCHAR", False),
        Column("billed_cost", BILL_MONEY),
        Column("effective_cost", BILL_MONEY),
        Column("list_cost", BILL_MONEY),
        Column("billing_currency", "VARCHAR"),
        Column("description", "VARCHAR", False),
        Column("tags", "VARCHAR", False),
        Column("extras", "VARCHAR", False),
    ), key=("line_id",), dated_by=("charge_period_start",),
       categories=("charge_category", "charge_class", "provider", "service_name", "service_category", "region",
                   "pricing_category", "consumed_unit", "billing_currency")),
}

REQUEST_STATUSES = ("ok", "error", "timeout", "cancelled")
#: A request's service tier, matched against a token price's purchase_option (pricebook.records).
SERVICE_TIERS = _SERVICE_TIERS
OUTCOMES = ("success", "failure")
FLEET_ROLES = ("serving", "failure_reserve", "canary", "warm_reserve", "maintenance")
RESERVE_ROLES = FLEET_ROLES[1:]
CHARGE_CATEGORIES = tuple(c.value for c in vocab.ChargeCategory)  # as files spell them: "tools" (lines: "tool")
#: FOCUS ChargeCategory (1.0 to 1.3) and ChargeClass (empty for a regular row).
BILL_CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
BILL_CHARGE_CLASSES = ("Correction",)
BOOKKEEPING = (("booked_at", "TIMESTAMPTZ"),)


#: The layout of the fact files this code writes (``facts/.layout`` says which a home is in; see
#: :mod:`ledger.facts_layout`): 2 is the month partitions.
LAYOUT_VERSION = 2
#: The layouts this code reads: 1 (flat; a home without a marker) and 2. A home in any other is refused.
KNOWN_LAYOUTS = (1, 2)
#: The marker of a home's layout, in ``<home>/facts`` (JSON, ``{"version": 2, ...}``).
MARKER = ".layout"
#: The Hive partition column of the fact folders: the UTC month of ``booked_at``, ``YYYY-MM``.
PARTITION = "month"
#: Kinds whose reads of a period are the rows booked in it (requests, meters, bill rows).
BOOKED_IN_PERIOD = ("requests", "meters", "bill")
#: Kinds a period also reads after its end: the outcomes decided before the end that an adjustment
#: booked into a later month (their column, compared with the period end).
READ_AFTER_END = {"outcomes": "decided_at"}

Period = tuple[datetime, datetime]


class LayoutError(LedgerError, ValueError):
    """The facts of a home are in a layout this ledger does not know (a newer ledger wrote them, or
    the marker is not one): nothing may read or write them. The message is one line."""


def layout_version(home: Path) -> int:
    """The layout a home's facts are in: its marker's version, or 1 (flat) without one. LayoutError
    when the marker names a version outside :data:`KNOWN_LAYOUTS` or is not a marker at all: a
    reader would read files it cannot place, and a writer would write beside them in another layout."""
    marker = home / "facts" / MARKER
    try:
        raw = marker.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 1
    except (OSError, UnicodeDecodeError) as e:
        raise LayoutError(f"{marker}: cannot read the facts layout marker ({e}); the facts are neither read nor "
                          "written without it") from None
    try:
        version = json.loads(raw)["version"]
    except (ValueError, KeyError, TypeError, IndexError):
        version = None
    if not isinstance(version, int) or isinstance(version, bool):
        raise LayoutError(f"{marker}: not a facts layout marker (JSON with a whole-number \"version\", such as "
                          f"{{\"version\": {LAYOUT_VERSION}}}); the facts are neither read nor written without one")
    if version not in KNOWN_LAYOUTS:
        known = " and ".join(map(str, KNOWN_LAYOUTS))
        raise LayoutError(f"{marker}: the facts are in layout version {version}, which this ledger does not know "
                          f"(it knows {known}): another version of the ledger wrote them; use that version on "
                          "this home")
    return version


def kind_dir(kind: str, home: Path) -> Path:
    """The folder of one kind's facts: ``<home>/facts/<kind>`` (its month partitions are inside)."""
    return home / "facts" / kind


def month_of(at: datetime) -> str:
    """The month partition of an aware instant: ``YYYY-MM`` in UTC."""
    at = at.astimezone(timezone.utc)
    return f"{at.year:04d}-{at.month:02d}"


def partition_dir(kind: str, month: str, home: Path) -> Path:
    """``<home>/facts/<kind>/month=YYYY-MM``."""
    return kind_dir(kind, home) / f"{PARTITION}={month}"


def month_of_file(path: Path) -> str | None:
    """The month of a fact file's partition, or None for a flat file (layout 1)."""
    parent = Path(path).parent.name
    prefix = PARTITION + "="
    return parent[len(prefix):] if parent.startswith(prefix) else None


def source_stem(path: Path) -> str:
    """``<batch>-<n>``: the flat file a partition file ``<batch>-<n>[_<j>].parquet`` was (or would be)
    made from. A batch's staged file n gives one file per month it holds (two when DuckDB splits
    one month's rows, ``_0`` and ``_1``)."""
    stem = Path(path).name[:-len(".parquet")]
    if "-" not in stem:
        return stem  # not a name the ledger writes
    batch, n = stem.rsplit("-", 1)
    return f"{batch}-{n.split('_')[0]}"


def listing(kind: str, home: Path) -> tuple[list[Path], list[Path]]:
    """(flat files, partition files) of one kind on disk, committed or not: a look at the kind's
    folder and its ``month=`` folders, nothing read. LayoutError when the home's facts are in a
    layout this ledger does not know (:func:`layout_version`): every reader and writer lists here."""
    layout_version(home)
    d = kind_dir(kind, home)
    flat: list[Path] = []
    parted: list[Path] = []
    if not d.is_dir():
        return flat, parted
    with os.scandir(d) as entries:
        for e in entries:
            if e.name.endswith(".parquet") and e.is_file():
                flat.append(Path(e.path))
            elif e.name.startswith(PARTITION + "=") and e.is_dir():
                with os.scandir(e.path) as inner:
                    parted += [Path(f.path) for f in inner if f.name.endswith(".parquet") and f.is_file()]
    return flat, parted


def kind_files(kind: str, batch_ids: Iterable[str], home: Path) -> list[Path]:
    """The Parquet files of the given batches of one kind, in every month partition, ordered by
    batch, month and name. A flat file (layout 1) is read in place of the partition files made
    from it, so a migration cut short between writing them and removing it reads each row once."""
    ids = set(batch_ids)
    flat, parted = listing(kind, home)
    flat = [f for f in flat if batch_of(f) in ids]
    shadowed = {f.name[:-len(".parquet")] for f in flat}
    parted = [f for f in parted if batch_of(f) in ids and source_stem(f) not in shadowed]
    return sorted(flat + parted, key=lambda f: (batch_of(f), month_of_file(f) or "", f.name))


def batch_files(kind: str, batch_id: str, home: Path) -> list[Path]:
    """The Parquet files of one batch (``month=*/<batch_id>-<n>.parquet``, or flat ones), in order."""
    return kind_files(kind, [batch_id], home)


def batch_of(path: Path) -> str:
    """The batch id a fact file belongs to."""
    return Path(path).name.rsplit("-", 1)[0]


def period_months(kind: str, start: datetime, end: datetime) -> tuple[str | None, str]:
    """(first, last) month partition that can hold rows a period ``[start, end)`` reads whole, by the
    allocation's reads (first None: every month before `last`). Exact, because a file's month is
    that of ``booked_at``:

    - requests, meters, bill: the rows booked in the period, so the months it touches;
    - fleet, charges: the intervals that overlap it (``start < end`` and ``end > start``), which may
      have started long before; ``booked_at`` is their start, so every month up to the period's last;
    - outcomes: the latest outcome of a task decided before the period end (failed work) and those
      booked in it: every month up to the last, and, after it, only rows decided before the end
      (an adjustment books an old decision into a later month): :data:`READ_AFTER_END`."""
    last = month_of(end - timedelta(microseconds=1))
    return (month_of(start) if kind in BOOKED_IN_PERIOD else None), last


def period_files(kind: str, files: Sequence[Path], period: Period) -> tuple[list[Path], list[Path]]:
    """`files` a period reads: (whole, after): the files of the months of :func:`period_months` (and
    every flat file, whose month is not known), and the outcomes files of later months, of which only
    rows decided before the period end count (empty for other kinds)."""
    first, last = period_months(kind, *period)
    whole, after = [], []
    for f in files:
        m = month_of_file(f)
        if m is None or ((first is None or m >= first) and m <= last):
            whole.append(f)
        elif m > last and kind in READ_AFTER_END:
            after.append(f)
    return whole, after


def empty_select(kind: str) -> str:
    """A SELECT with the kind's columns and no rows (a typed empty relation)."""
    cols = [f"CAST(NULL AS {c.type}) AS \"{c.name}\"" for c in KINDS[kind].columns]
    cols += [f"CAST(NULL AS {t}) AS \"{n}\"" for n, t in BOOKKEEPING]
    return f"SELECT {', '.join(cols)} WHERE false"


def source_sql(kind: str, batch_ids: Iterable[str], home: Path,
               con: duckdb.DuckDBPyConnection, period: Period | None = None) -> str:
    """SQL for the committed facts of `kind` in the ledger home `home`, to run on `con`: a read of the
    batches' Parquet files (or an empty relation).

    With a `period` (start, end), only the month partitions the period's allocation can read
    (:func:`period_files`): the relation then holds every row of `kind` that the allocation of the
    period reads, and perhaps others of the same months."""
    files = kind_files(kind, batch_ids, home)
    after: list[Path] = []
    if period is not None:
        files, after = period_files(kind, files, period)
    parts = [files_sql(kind, files, con=con)] if files else []
    if after:
        end = period[1].astimezone(timezone.utc).isoformat()
        parts.append(f"SELECT * FROM ({files_sql(kind, after, con=con)}) "
                     f"WHERE \"{READ_AFTER_END[kind]}\" < TIMESTAMPTZ '{end}'")
    if not parts:
        return empty_select(kind)
    return " UNION ALL ".join(f"({p})" for p in parts) if len(parts) > 1 else parts[0]


#: Columns kept as exact decimal text (:data:`BILL_QUANTITY`) that older fact files hold as DECIMAL.
TEXT_DECIMALS = {"bill": ("consumed_quantity",)}


def files_sql(kind: str, files: Sequence[Path], *, con: duckdb.DuckDBPyConnection, filename: bool = False) -> str:
    """SQL reading fact files of `kind`, to run on `con` (the files' footers are read on it): its
    columns and ``booked_at`` (and ``filename`` if asked).

    A file written before a column existed (``cache_write_input_tokens``, ``service_tier``, ...)
    gives that column's default (0, 'standard'), so old facts are read as the new ones are written;
    one written when a bill's quantity was a DECIMAL (:data:`TEXT_DECIMALS`) gives it as the exact
    decimal text it is now kept as. Only the files' footers are read to find that out; when every
    file has every column in its type, the read is the plain one."""
    listing = ", ".join(literal(str(f)) for f in files)
    names = KINDS[kind].names + [n for n, _ in BOOKKEEPING]
    rows = con.execute(f"SELECT file_name, list(name), list(name) FILTER (WHERE converted_type = 'DECIMAL') "
                       f"FROM parquet_schema([{listing}]) GROUP BY file_name").fetchall()
    have = [set(cols) for _, cols, _ in rows]
    everywhere = set.intersection(*have) if have else set()
    somewhere = set.union(*have) if have else set()
    as_text = {n for _, _, decimals in rows for n in decimals or [] if n in TEXT_DECIMALS.get(kind, ())}
    # hive_partitioning off: the month is in booked_at already, and a flat file beside partition
    # files (a migration cut short) must not make DuckDB refuse the list or add a column
    opts = ", hive_partitioning=false" + (", filename=true" if filename else "")
    if all(n in everywhere for n in names) and not as_text:
        cols = ", ".join(quote_ident(n) for n in names)
        return f"SELECT {cols}{', filename' if filename else ''} FROM read_parquet([{listing}]{opts})"
    types = {c.name: (c.type, c.default) for c in KINDS[kind].columns}
    exprs = []
    for n in names:
        if n in as_text:  # union_by_name reads a DECIMAL beside text as its text ('1.500000000000')
            exprs.append(f"{decimal_text_sql(f'CAST({quote_ident(n)} AS VARCHAR)')} AS {quote_ident(n)}")
            continue
        if n in everywhere:
            exprs.append(quote_ident(n))
            continue
        t, default = types.get(n, ("TIMESTAMPTZ", "NULL"))
        fill = f"CAST({default} AS {t})"
        exprs.append(f"coalesce(CAST({quote_ident(n)} AS {t}), {fill}) AS {quote_ident(n)}" if n in somewhere
                     else f"{fill} AS {quote_ident(n)}")
    return (f"SELECT {', '.join(exprs)}{', filename' if filename else ''} "
            f"FROM read_parquet([{listing}], union_by_name=true{opts})")


def connect(committed: dict[str, list[str]], home: Path,
            con: duckdb.DuckDBPyConnection | None = None, period: Period | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one view per kind (``requests``, ``meters``, ``outcomes``, ``fleet``,
    ``charges``, ``bill``) over the committed batches given as ``{kind: [batch_id, ...]}``. Timestamps are UTC.
    Without `con`, a new :func:`ledger.duck.connect` connection (the memory limit, spilling into the home).
    With a `period` (start, end), each view reads only the month partitions that can hold rows the
    allocation of that period reads (:func:`period_months`)."""
    con = con or duck.connect("facts", home=home)
    con.execute("SET TimeZone = 'UTC'")
    for kind in KINDS:
        con.execute(f"CREATE OR REPLACE VIEW {kind} AS "
                    f"{source_sql(kind, committed.get(kind, []), home, con, period=period)}")
    return con


def committed_batches(session) -> dict[str, list[str]]:
    """``{kind: [batch ids]}`` of the committed batches in the ledger DB (`session`: a session or a
    Core connection; read through Core, :data:`ledger.schema.INGEST_BATCH`)."""
    import sqlalchemy as sa

    from .schema import INGEST_BATCH, pending_written

    pending_written(session)
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    c = INGEST_BATCH.c
    for kind, batch_id in session.execute(sa.select(c.kind, c.id).where(c.status == "committed")
                                          .order_by(c.created_at, c.id)):
        out.setdefault(kind, []).append(batch_id)
    return out


def committed_files(session, kind: str, home: Path, period: Period | None = None) -> list[Path]:
    """The Parquet files of the committed batches of one kind; with a `period`, only those that can
    hold rows the period's allocation reads (:func:`period_files`: both lists, so an engine reading
    them must keep the allocation's own filters, as it does)."""
    files = kind_files(kind, committed_batches(session).get(kind, []), home)
    if period is None:
        return files
    whole, after = period_files(kind, files, period)
    return whole + after


def open_ledger_facts(session, home: Path, period: Period | None = None) -> duckdb.DuckDBPyConnection:
    """DuckDB views over every committed fact of the ledger (of the months a `period` reads, if given)."""
    return connect(committed_batches(session), home, period=period)
