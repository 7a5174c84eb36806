"""Source ``litellm-postgres``: the rows of LiteLLM's ``LiteLLM_SpendLogs`` table read where the LiteLLM
proxy writes them, its PostgreSQL database, incrementally, and ingested through the same adapter as
``ledger ingest requests --source litellm`` (its map, token rule and checks: docs/adapters.md).

The table is LiteLLM's Prisma model ``LiteLLM_SpendLogs`` (``schema.prisma`` of BerriAI/litellm:
``request_id String @id``, ``startTime DateTime``, ``metadata Json?``, ``request_tags Json?``,
``spend Float``, ... and ``@@index([startTime, request_id])``); Prisma keeps a ``DateTime`` as
``TIMESTAMP(3)`` without a zone, in UTC, a ``Json`` as ``JSONB`` and a ``Float`` as ``DOUBLE
PRECISION``. A read is one ``COPY (SELECT ...) TO STDOUT (FORMAT csv, HEADER)`` in a read-only
REPEATABLE READ transaction, streamed by psycopg into a CSV file in the ledger home (no row passes
through Python): the CSV a ``psql \\copy`` export writes, instants written with their ``Z``, JSONB as
JSON text, which the adapter follows.

Incremental: rows ordered by (``startTime``, ``request_id``), the index LiteLLM declares for it; the
watermark is the last row read. Each read starts again `lookback` before the watermark's
``startTime`` (LiteLLM writes spend logs in batches, so a row can land after rows that started
later): the rows read again are duplicates by ``request_id`` and add nothing; a late row within the
window is new. With a lookback of 0, a read takes the rows after the watermark by the key
(``startTime``, ``request_id``) alone.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..instants import iso
from ..config import Home
from ..errors import LedgerError, Problem
from ..ingest import IngestError, IngestResult
from ..ingest.sources import ingest_from
from . import state
from .config import Source

#: Columns of the table never read: the request and response bodies LiteLLM keeps when
#: ``store_prompts_in_spend_logs`` is on (large, and no ledger column comes from them).
CONTENT = ("messages", "response", "proxy_server_request")
INSTANTS = ("startTime", "endTime", "completionStartTime")


class SourceError(LedgerError):
    """A live source could not be read (its database, its folder): nothing was ingested from it."""


@dataclass(frozen=True)
class Pulled:
    """One read of the table: `path` (the CSV written, None when no row was there to read) and `last`
    (``startTime`` ISO, ``request_id``) of the greatest row read."""

    path: Path | None
    last: tuple[str, str] | None


def connection_url(src: Source) -> str:
    """The source's PostgreSQL URL (from the file, or the environment variable it names), as libpq
    takes it (a SQLAlchemy ``postgresql+psycopg://`` is accepted too)."""
    url = src.url if src.url is not None else os.environ.get(src.url_env or "")
    if not url:
        raise SourceError([Problem(file=src.name, entry="url_env", message=f"the environment variable {src.url_env} "
                                                                           "is not set")])
    for driver in ("postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(driver):
            url = "postgresql://" + url[len(driver):]
    return url


def _ident(sql, table: str):
    parts = table.split(".")
    return sql.Identifier(*parts)


def pull(src: Source, mark: state.Mark, out: Path) -> Pulled:
    """Read the rows after the watermark `mark` (less the lookback) into the CSV file `out`."""
    import psycopg
    from psycopg import sql

    table = _ident(sql, src.table)
    try:
        with psycopg.connect(connection_url(src), connect_timeout=15, autocommit=False) as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            conn.execute("SET TIME ZONE 'UTC'")
            types = _columns(conn, src.table)
            where, params = _since(sql, mark.position, src.lookback)
            last = conn.execute(sql.SQL('SELECT "startTime", request_id FROM {} {} ORDER BY "startTime" DESC, '
                                        'request_id DESC LIMIT 1').format(table, where), params).fetchone()
            if last is None:
                return Pulled(path=None, last=None)
            cols = sql.SQL(", ").join(_column(sql, c, t) for c, t in types.items() if c not in CONTENT)
            query = sql.SQL('SELECT {} FROM {} {} ORDER BY "startTime", request_id').format(cols, table, where)
            with conn.cursor() as cur, open(out, "wb") as fh:
                with cur.copy(sql.SQL("COPY ({}) TO STDOUT (FORMAT csv, HEADER)").format(query), params) as cp:
                    for block in cp:
                        fh.write(block)
            conn.rollback()
    except psycopg.Error as e:
        raise SourceError([Problem(file=src.name, entry=src.table,
                                   message=f"cannot read LiteLLM's database: {str(e).strip().splitlines()[0]}")]) \
            from None
    start = last[0].replace(tzinfo=timezone.utc) if last[0].tzinfo is None else last[0].astimezone(timezone.utc)
    return Pulled(path=out, last=(iso(start), last[1]))  # to the microsecond, as LiteLLM stores it


def _columns(conn, table: str) -> dict[str, str]:
    """The table's columns and their types, in the table's order; SourceError when it is not there."""
    found = conn.execute("SELECT to_regclass(%s)", (".".join(f'"{p}"' for p in table.split(".")),)).fetchone()[0]
    if found is None:
        raise SourceError([Problem(file=table, message="no such table in LiteLLM's database (kind litellm-postgres "
                                                       "reads LiteLLM_SpendLogs; `table` names another)")])
    rows = conn.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                        "to_regclass(%s) AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                        (".".join(f'"{p}"' for p in table.split(".")),)).fetchall()
    cols = dict(rows)
    missing = [c for c in ("request_id", "startTime") if c not in cols]
    if missing:
        raise SourceError([Problem(file=table, message=f"has no column {', '.join(missing)}: not LiteLLM's "
                                                       "LiteLLM_SpendLogs")])
    return cols


def _column(sql, name: str, typ: str):
    """A column as the CSV has it: an instant as ISO 8601 in UTC with its ``Z`` (a ``timestamp``
    column holds UTC, as Prisma writes it; a ``timestamptz`` is converted), anything else as it is."""
    if name in INSTANTS and typ.startswith("timestamp"):
        utc = sql.SQL("{} AT TIME ZONE 'UTC'").format(sql.Identifier(name)) if "with time zone" in typ \
            else sql.Identifier(name)
        return sql.SQL("""to_char({}, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS {}""").format(utc, sql.Identifier(name))
    return sql.Identifier(name)


def _since(sql, position: dict, lookback: timedelta):
    """The WHERE clause (and its parameters) of the rows after the watermark `position`."""
    if not position.get("startTime"):
        return sql.SQL(""), ()
    at = datetime.fromisoformat(position["startTime"].replace("Z", "+00:00")).astimezone(timezone.utc)
    naive = at.replace(tzinfo=None)
    if lookback:
        return sql.SQL('WHERE "startTime" >= %s'), (naive - lookback,)
    return sql.SQL('WHERE ("startTime", request_id) > (%s, %s)'), (naive, position.get("request_id", ""))


def sync(src: Source, home: Home) -> tuple[IngestResult | None, Pulled, dict]:
    """Read what is new in the source's table and ingest it as one batch (the litellm adapter, with
    the source's map), the watermark moved in the batch's transaction. Returns the ingest's result
    (None when nothing was read), the read and the watermark now. IngestError (nothing written,
    the watermark kept) names the extract's lines; the extract is kept (``<home>/sync/extracts/``)."""
    mark = state.read(home, src.name)
    work = home.path / state.FOLDER / "extracts"
    work.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = work / f"{src.name}-{stamp}-{uuid.uuid4().hex[:6]}.csv"
    keep = False
    try:
        pulled = pull(src, mark, out)
        if pulled.path is None:
            return None, pulled, mark.position
        position = {"startTime": pulled.last[0], "request_id": pulled.last[1]}
        moved = state.hook(src.name, src.kind, lambda before, _batch: {**before, **position})
        try:
            result = ingest_from("litellm", "requests", [out], src.map, register_new=src.register_new,
                                 as_adjustment=src.as_adjustment, home=home, on_commit=moved)
        except IngestError:
            keep = True  # the problems name its lines
            raise
        return result, pulled, position
    finally:
        if not keep:
            out.unlink(missing_ok=True)
