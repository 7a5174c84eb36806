"""What a sync keeps between runs and how runs keep out of each other's way: the watermark of each
source (a row of ``sync_watermark`` in the ledger DB, written by a ``CommitHook`` in the transaction
of the batch it describes), and the sync lock (an OS file lock in the ledger home)."""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa

from .. import store
from ..config import Home
from ..errors import LedgerError
from ..ingest import CommitHook
from ..schema import SYNC_WATERMARK

#: The sync lock and the sources' work folders are under ``<home>/sync/``.
FOLDER = "sync"
LOCK = ".sync.lock"


@dataclass(frozen=True)
class Mark:
    """A source's watermark as stored: `position` (the kind's JSON, decoded), `batch_id` (the batch
    committed with it, or None), `updated_at` (UTC); all empty for a source never read."""

    position: dict
    batch_id: str | None = None
    updated_at: datetime | None = None


def read(home: Home, source: str) -> Mark:
    """The watermark of `source` in the ledger `home` (an empty one when it was never read)."""
    with store.reading(home.database_url) as conn:
        row = _row(conn, source)
        if row is None:
            return Mark(position={})
        return Mark(position=json.loads(row.position), batch_id=row.batch_id, updated_at=row.updated_at)


def _row(s, source: str) -> sa.Row | None:
    return s.execute(sa.select(SYNC_WATERMARK).where(SYNC_WATERMARK.c.source == source)).first()


def hook(source: str, kind: str, change: Callable[[dict, str | None], dict], *,
         keep_empty: bool = False) -> CommitHook:
    """The ``CommitHook`` that moves the watermark of `source` (of `kind`) in the batch's transaction:
    `change` takes the position stored (read in that transaction) and the batch's id (None when the
    batch adds no row and so writes none), and returns the new position. It writes through Core
    (:data:`ledger.schema.SYNC_WATERMARK`) on the ingest's connection, or on any connection or session."""

    def write(s, batch_id: str | None) -> None:
        row = _row(s, source)
        before = json.loads(row.position) if row is not None and row.position else {}
        values = {"position": json.dumps(change(before, batch_id), sort_keys=True),
                  "updated_at": datetime.now(timezone.utc)}
        if batch_id is not None:
            values["batch_id"] = batch_id
        if row is None:
            s.execute(sa.insert(SYNC_WATERMARK), [{"source": source, "kind": kind, "batch_id": None, **values}])
        else:
            s.execute(sa.update(SYNC_WATERMARK).where(SYNC_WATERMARK.c.source == source).values(**values))

    return CommitHook(write=write, keep_empty=keep_empty)


def touch(home: Home, source: str, kind: str, change: Callable[[dict, str | None], dict]) -> None:
    """Move a watermark with no batch (a read that found nothing: its time, for the schedule hint)."""
    with store.writing(home.database_url) as conn:
        hook(source, kind, change).write(conn, None)


class Busy(LedgerError):  # noqa: N818 - a state, not a failure: the run exits 0 saying so
    """Another sync holds the lock of this ledger home: `holder` is what it wrote (its pid)."""

    code = 0

    def __init__(self, holder: str):
        super().__init__(f"a sync of this ledger home is running ({holder}): nothing done")
        self.holder = holder


@contextmanager
def locked(home: Path, *, wait: bool = False) -> Iterator[None]:
    """Hold the sync lock of the ledger home `home` (``sync/.sync.lock``, an flock: released by the
    OS when the process ends, however it ends). Raises Busy when another process holds it, unless
    `wait`, which waits for it."""
    d = home / FOLDER
    d.mkdir(parents=True, exist_ok=True)
    with open(d / LOCK, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            fh.seek(0)
            raise Busy(fh.read().strip() or "?") from None
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()}")
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
