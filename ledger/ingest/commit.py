"""Stages 5 and 6, stage and commit, and the ingest itself: under the home's lock, the stages of a
batch in order (open, read, check, key, stage, commit), each handing the next a frozen record of
``records``; the workspace that cleans up after them; orphan sweeping, batch listing and undo."""
from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import sqlalchemy as sa

from .. import config, duck, facts, facts_layout, store
from ..config import Home
from ..errors import Problem
from ..schema import INGEST_BATCH, POOL, pending_written, utcnow
from ..sqltext import literal as lit, quote_ident as q
from . import enums
from .dedupe import _already_ingested, key
from .opening import digests_in_background, open_files
from .passes import read_file
from .records import (ADJUSTABLE, Batch, Checked, CommitHook, FileReport, IngestError, IngestResult, Keyed,
                      MAX_PROBLEMS, LedgerState, OpenFile, Origin, Read, Workspace)
from .rows import batch_problems, check_batch, check_file
from .staging import _booked_sql


_lock = facts_layout.lock  # one writer of a home's facts at a time: ingests, undos, the migration


def _connect(home: Path) -> duckdb.DuckDBPyConnection:
    """The ingest's connection (ledger.duck: at most 1200MB unless LEDGER_MEMORY_LIMIT says, spilling
    into the home), rows kept in file order so that problems name lines in order."""
    con = duck.connect("ingest", home=home, ordered=True)
    con.execute("SET enable_progress_bar = true")  # tracked for on_progress, never printed by DuckDB
    con.execute("SET enable_progress_bar_print = false")
    return con


def sweep_orphans(s, home: Path) -> list[Path]:
    """Delete fact files whose batch is not committed (flat or in any month), and leftover staging;
    returns what it removed. Call under the lock."""
    committed = {b for ids in facts.committed_batches(s).values() for b in ids}
    removed = []
    root = home / "facts"
    for kind in facts.KINDS:
        flat, parted = facts.listing(kind, home)
        for f in flat + parted:
            if facts.batch_of(f) not in committed:
                f.unlink(missing_ok=True)
                removed.append(f)
        if parted:
            facts_layout.remove_empty_partitions(kind, home)
    for d in (root / "_staging", root / "_tmp"):
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def ingest(kind: str, paths: Sequence[str | Path], *, fmt: str | None = None, register_new: bool = False,
           dry_run: bool = False, as_adjustment: bool = False,
           on_step: Callable[[str], None] | None = None,
           on_progress: Callable[[float], None] | None = None,
           origins: Sequence[Origin] = (), home: Home | None = None,
           on_commit: CommitHook | None = None,
           after: Callable[[IngestResult, object, duckdb.DuckDBPyConnection], None] | None = None) -> IngestResult:
    """Validate and ingest `paths` of one `kind` as one atomic batch. Raises IngestError (nothing written).

    `on_step(message)` is told each stage; `on_progress(percent)` how far DuckDB is through the
    long pass over the current file (for a progress bar). `origins`, one per path, are the files
    the batch records instead when `paths` were converted from them (the adapters of
    ``ledger.ingest.sources``, the bill). `home` is the ledger to ingest into (``ledger.config.Home``:
    its folder and DB); without one, the configured ledger (LEDGER_HOME, LEDGER_DATABASE_URL),
    resolved here once: nothing below reads the environment. `on_commit` (a ``CommitHook``) is
    written in the transaction of the batch row (a sync's watermark). `after(result, s, con)` is
    called once the batch is committed (or found held already), still under the lock, with the
    ledger DB's Core connection `s` and the batch's DuckDB connection `con` (its workspace's, open
    until `after` returns): ``ledger ingest`` checks the batch with them, so that the ingest and the
    check of its batch share one DuckDB database and one DB connection. It must not raise: the batch
    is committed already (an error would still be raised to the caller)."""
    if kind not in facts.KINDS:
        raise IngestError([Problem(file=kind, message=f"unknown kind (one of {', '.join(facts.KINDS)})")])
    if as_adjustment and kind not in ADJUSTABLE:
        why = "a charge carries its own invoice period" if kind == "charges" else "intervals are capacity in time"
        raise IngestError([Problem(file=str(paths[0]) if paths else kind,
                                   message=f"--as-adjustment applies to {', '.join(ADJUSTABLE)}, not {kind} ({why}): "
                                           "book a late cost as a charge in an open period")])
    if not paths:
        raise IngestError([Problem(file=kind, message="no files given")])
    ledger = config.home() if home is None else home
    batch = Batch(kind=kind, paths=tuple(Path(p) for p in paths), fmt=fmt, register_new=register_new,
                  dry_run=dry_run, as_adjustment=as_adjustment, origins=tuple(origins or ()), on_commit=on_commit)
    # one Core connection, one transaction: the batch row, the names and pools it registers and a
    # caller's hook (a sync's watermark) are committed together, without SQLModel (docs/scale.md, "Startup")
    with _lock(ledger.path), store.writing(ledger.database_url) as s:
        sweep_orphans(s, ledger.path)
        facts_layout.migrate(ledger.path, locked=True)  # a home of the flat layout moves to month partitions
        with workspace(s, ledger.path, kind, on_step, on_progress) as ws:
            result = _ingest(ws, s, batch)
            if after is not None:
                after(result, s, ws.con)
            return result


@contextmanager
def workspace(s, home: Path, kind: str, on_step: Callable[[str], None] | None = None,
              on_progress: Callable[[float], None] | None = None) -> Iterator[Workspace]:
    """The workspace of one batch of `kind` in the ledger home `home` (its folder; `s`: a Core
    connection to its DB, :func:`ledger.store.writing`), and all its clean-up, in one place, whatever
    happens: the DuckDB connection is closed (its temp tables, views and ENUM types go with it), the
    staging folder and the scratch folder (links, the unpacked copies of gzip files) are removed; and
    on a failure the fact files written for the batch go too, unless its row was committed (the commit
    point)."""
    batch_id = _new_batch_id()
    root = home / "facts"
    ws = Workspace(con=_connect(home), home=home, kind=kind, batch_id=batch_id, staging=root / "_staging" / batch_id,
                   scratch=root / "_tmp" / "links", step=on_step or (lambda _m: None), progress=on_progress)
    try:
        yield ws
    except BaseException:
        _drop_uncommitted(ws, s)
        raise
    finally:
        ws.con.close()
        shutil.rmtree(ws.staging, ignore_errors=True)
        shutil.rmtree(root / "_tmp", ignore_errors=True)


def _drop_uncommitted(ws: Workspace, s) -> None:
    """After a failure: the transaction rolled back, and the batch's fact files removed unless the store
    holds its row (committed just before the failure). Should the store not say, they stay: files of
    no committed batch are never read, and the next ingest sweeps them (:func:`sweep_orphans`)."""
    try:
        s.rollback()
        if _batch_row(s, ws.batch_id) is None:
            for f in facts_layout.batch_paths(ws.kind, ws.batch_id, ws.home):
                f.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - the failure being raised is the one to tell
        pass


def _ingest(ws: Workspace, s, batch: Batch) -> IngestResult:
    """The stages of one batch, in order, each handing the next a frozen record (or refusing with
    IngestError: nothing is written)."""
    files = open_files(ws.con, batch.kind, batch.paths, batch.fmt, ws.scratch, batch.origins)  # 1, open
    held = _already_ingested(s, batch.kind, files)
    if held is not None:  # every file is byte for byte one whose rows a committed batch holds in full
        return _nothing_new(ws, s, batch, files, held)
    state = _ledger_state(s, batch)
    read = _read(ws, state, files, batch)  # 2, read; 3, check (each file)
    checked = check_batch(ws.con, batch, state, read.files)  # 3, check (the batch)
    ws.step("checking keys")
    keyed = key(ws.con, s, batch.kind, read.files, ws.home)  # 4, key
    if batch.dry_run:
        return IngestResult(kind=batch.kind, batch_id=None, files=read.reports, rows_read=read.rows,
                            rows_new=keyed.new_rows, rows_duplicate=keyed.duplicate_rows, dry_run=True,
                            as_adjustment=bool(checked.booked_period), booked_period=checked.booked_period,
                            registered=dict(checked.unknown))
    placed = stage(ws, read, keyed)  # 5, stage
    return commit_batch(ws, s, batch, read, checked, keyed, placed)  # 6, commit


def _nothing_new(ws: Workspace, s, batch: Batch, files: Sequence[OpenFile],
                 reports: tuple[FileReport, ...]) -> IngestResult:
    """A batch whose files a committed batch took in full: recorded (unless a dry run) with no new row."""
    rows = sum(r.rows for r in reports)
    batch_id = None if batch.dry_run or not _keeps_empty(batch) else ws.batch_id
    if batch_id:
        _insert_batch(s, id=batch_id, kind=batch.kind, files=_files_json(files, reports), rows_read=rows, rows_new=0,
                      rows_duplicate=rows)
    if not batch.dry_run:
        _hooked(s, batch, batch_id)
        s.commit()
    return IngestResult(kind=batch.kind, batch_id=batch_id, files=reports, rows_read=rows, rows_new=0,
                        rows_duplicate=rows, dry_run=batch.dry_run)


def _ledger_state(s, batch: Batch) -> LedgerState:
    """What the ledger holds as the batch starts: its closed months, its names, the open month an
    adjustment books into, and so the SQL of ``booked_at``."""
    closed = frozenset(store.closed_periods(s))
    names = {d: store.dim_names(s, kind=d) for d in ("tenant", "product")}
    expected = enums.expected_names(s, names)
    open_period = store.current_open_period(s) if batch.as_adjustment else None
    return LedgerState(closed=closed, names=names, expected=expected, open_period=open_period,
                       booked=_booked_sql(batch.kind, sorted(closed), open_period))


def _read(ws: Workspace, state: LedgerState, files: Sequence[OpenFile], batch: Batch) -> Read:
    """Stages 2 and 3 file by file: each file's one pass (``passes.read_file``), then its rows checked
    (``rows.check_file``), while a thread computes the files' SHA-256. IngestError with every file's
    problems, in file order, then the batch's (``rows.batch_problems``: unknown names, closed months),
    so that one run names them all."""
    ws.staging.mkdir(parents=True, exist_ok=True)
    digests = digests_in_background([f.path for f in files if f.origin is None])  # an origin has its own
    reads, problems, total = [], [], 0
    for i, f in enumerate(files):
        r = read_file(ws, i, f, state)
        found, n = check_file(ws.con, ws.kind, r)
        problems += found
        total += n
        reads.append(r)
    own = iter(digests.result())
    shas = [f.origin.sha256 if f.origin is not None else next(own) for f in files]
    if problems:
        more, _ = batch_problems(ws.con, batch, state, reads)  # every problem in one run: names, closed months
        kept = problems[:max(0, MAX_PROBLEMS - len(more))]  # the batch's lines are never cut off by the rows'
        raise IngestError(kept + more, max(total, len(problems)) + len(more))
    return Read(files=tuple(reads), reports=tuple(FileReport.of(r.file, sha, r.rows) for r, sha in zip(reads, shas)))


def stage(ws: Workspace, read: Read, keyed: Keyed) -> tuple[Path, ...]:
    """Stage 5, stage: the batch's new rows into the month partitions of ``booked_at``
    (``ledger.facts_layout``) as files of the batch, which nothing reads until the commit: the staged
    files as they are when every row is new, else the new rows (``keyed.new_sql``) written again."""
    staged = [f.staged for f in read.files]
    if keyed.new_rows and keyed.new_sql is None:
        return tuple(facts_layout.place_files(ws.con, ws.kind, ws.batch_id, staged, ws.home, ws.staging / "months"))
    if keyed.new_rows:
        ws.step("writing facts")
        return tuple(facts_layout.write_select(ws.con, ws.kind, ws.batch_id, keyed.new_sql, ws.home,
                                               ws.staging / "months", within=staged))
    return ()


def commit_batch(ws: Workspace, s, batch: Batch, read: Read, checked: Checked, keyed: Keyed,
                 placed: tuple[Path, ...]) -> IngestResult:
    """Stage 6, commit: the unknown names registered (as asked), a fleet's new pools, then the batch
    row, the commit point: from it on, readers read the `placed` files. A failure before it leaves
    nothing (``workspace`` removes the files)."""
    ws.step("committing")
    registered = {d: store.add_dims(s, kind=d, names=names) for d, names in checked.unknown.items()}
    if batch.kind == "fleet" and placed:
        written = ", ".join(lit(str(m)) for m in placed)
        pools = {p for (p,) in ws.con.execute(f"SELECT DISTINCT pool FROM read_parquet([{written}], "
                                              "hive_partitioning=false)").fetchall()}
        new_pools = sorted(pools - set(s.execute(sa.select(POOL.c.name)).scalars()))
        if new_pools:
            now = utcnow()
            s.execute(sa.insert(POOL), [{"name": p, "display_name": p, "owner": "", "created_at": now}
                                        for p in new_pools])
    first, last = _extent(ws.con, batch.kind, list(placed))
    booked_period = checked.booked_period
    batch_id = ws.batch_id if keyed.new_rows or any(registered.values()) or _keeps_empty(batch) else None
    if batch_id:
        _insert_batch(s, id=batch_id, kind=batch.kind, files=_files_json([f.file for f in read.files], read.reports),
                      rows_read=read.rows, rows_new=keyed.new_rows, rows_duplicate=keyed.duplicate_rows,
                      first_at=first, last_at=last, booked_period=booked_period, as_adjustment=bool(booked_period))
    _hooked(s, batch, batch_id)
    s.commit()  # the commit point of the batch
    return IngestResult(kind=batch.kind, batch_id=batch_id, files=read.reports, rows_read=read.rows,
                        rows_new=keyed.new_rows, rows_duplicate=keyed.duplicate_rows,
                        as_adjustment=bool(booked_period), booked_period=booked_period, registered=registered)


def _insert_batch(s, **fields) -> None:
    """The batch row, through Core (:data:`ledger.schema.INGEST_BATCH`), with the defaults of
    :class:`ledger.models.IngestBatch` for the fields not given."""
    row = {"status": "committed", "created_at": utcnow(), "first_at": None, "last_at": None, "booked_period": None,
           "as_adjustment": False, **fields}
    s.execute(sa.insert(INGEST_BATCH), [row])


def _batch_row(s, batch_id: str) -> sa.Row | None:
    """The row of a batch (a session or a connection `s`), or None."""
    return s.execute(sa.select(INGEST_BATCH).where(INGEST_BATCH.c.id == batch_id)).first()


def _keeps_empty(batch: Batch) -> bool:
    """A batch that adds no row is recorded, unless its caller's hook says not to (a sync)."""
    return batch.on_commit is None or batch.on_commit.keep_empty


def _hooked(s, batch: Batch, batch_id: str | None) -> None:
    """The caller's rows (a sync's watermark) added to the batch's transaction, before its commit."""
    if batch.on_commit is not None:
        batch.on_commit.write(s, batch_id)


def _files_json(files: Sequence[OpenFile], reports: Sequence[FileReport]) -> str:
    """The batch's files: path as given, the SHA-256 and size of the file's own bytes (a gzip file's
    compressed bytes: what ``sha256sum`` of it says), format (``csv.gz`` for a compressed one), rows."""
    return json.dumps([{**r.__dict__, "bytes": f.origin.bytes if f.origin else f.path.stat().st_size}
                       for f, r in zip(files, reports)])


def _new_batch_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def _extent(con, kind: str, files: list[Path]) -> tuple[datetime | None, datetime | None]:
    """First and last instant the batch's rows count at (for ranges: first start, last end - 1 µs)."""
    if not files:
        return None, None
    spec = facts.KINDS[kind]
    lst = ", ".join(lit(str(f)) for f in files)
    last = "max(booked_at)" if len(spec.dated_by) == 1 else f"max({q(spec.dated_by[1])}) - INTERVAL 1 MICROSECOND"
    return con.execute(f"SELECT min(booked_at), {last} FROM read_parquet([{lst}], hive_partitioning=false)").fetchone()


# ---- batches ------------------------------------------------------------------------------------

def undo_batch(s, batch_id: str, *, home: Home | None = None) -> sa.Row:
    """Remove a committed batch whose period(s) are open: the DB row first (the commit point), then its
    files in every month partition (and a flat one of a home not yet migrated), under the ingest lock.
    `s` is a session or a Core connection (:func:`ledger.store.writing`) on the DB of the ledger `home`
    (default: the configured one, resolved here); the removal is committed on it. Returns the batch's
    row as it was (fields as on :class:`ledger.models.IngestBatch`)."""
    folder = (config.home() if home is None else home).path
    with _lock(folder):
        return _undo(s, batch_id, folder)


def _undo(s, batch_id: str, home: Path) -> sa.Row:
    pending_written(s)
    b = _batch_row(s, batch_id)
    if b is None:
        raise store.StoreError(f"no batch {batch_id}")
    months = set()  # the month it was booked into and every month its rows count in
    if b.booked_period:
        months.add(b.booked_period)
    if b.first_at and b.last_at:
        months.update(store.months_between(b.first_at, b.last_at))
    closed = store.closed_periods(s, sorted(months))
    if closed:
        raise store.StoreError(f"batch {batch_id} touches closed period{'s' if len(closed) > 1 else ''} "
                               f"{', '.join(closed)}: it cannot be undone")
    s.execute(sa.delete(INGEST_BATCH).where(INGEST_BATCH.c.id == batch_id))
    s.commit()
    for f in facts_layout.batch_paths(b.kind, batch_id, home):
        f.unlink(missing_ok=True)
    facts_layout.remove_empty_partitions(b.kind, home)
    return b
