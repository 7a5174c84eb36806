"""Stage 5, commit: the ingest under its lock, the atomic batch commit, orphan sweeping, batch listing and undo."""
from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import duckdb
from sqlmodel import select

from .. import config, duck, facts, facts_layout, store
from ..models import IngestBatch, Pool
from . import enums, opening
from .checks import cast_checks, checks, jsonl_checks, lit, q
from .dedupe import _already_ingested, _dedupe
from .opening import _digests_in_background, _open_sources, _read_select
from .records import (ADJUSTABLE, MAX_LINE_BYTES, MAX_PROBLEMS, FileReport, IngestError, IngestResult, Problem,
                      _first_line, _reject_problem, _Source)
from .rows import (_any_bad, _row_problems, _summary, _value_checks, closed_period_problem, lines_at_bytes,
                   unknown_name_problems)
from .staging import _booked_sql, _copy, _pass_sql, _typed_cols, _watch


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
           origins: Sequence[dict] | None = None) -> IngestResult:
    """Validate and ingest `paths` of one `kind` as one atomic batch. Raises IngestError (nothing written).

    `on_step(message)` is told each stage; `on_progress(percent)` how far DuckDB is through the
    long pass over the current file (for a progress bar). `origins`, one per path, are the files
    the batch records instead when `paths` were converted from them (the adapters of
    ``ledger.ingest.sources``): ``{"path", "sha256", "format", "bytes"}``."""
    if kind not in facts.KINDS:
        raise IngestError([Problem(kind, None, None, f"unknown kind (one of {', '.join(facts.KINDS)})")])
    if as_adjustment and kind not in ADJUSTABLE:
        why = "a charge carries its own invoice period" if kind == "charges" else "intervals are capacity in time"
        raise IngestError([Problem(str(paths[0]) if paths else kind, None, None,
                                   f"--as-adjustment applies to {', '.join(ADJUSTABLE)}, not {kind} ({why}): book a "
                                   "late cost as a charge in an open period")])
    if not paths:
        raise IngestError([Problem(kind, None, None, "no files given")])
    step = on_step or (lambda _m: None)
    home = config.ledger_home()
    with _lock(home), store.session() as s:
        store.check_initialized(s)
        sweep_orphans(s, home)
        facts_layout.migrate(home, locked=True)  # a home of the flat layout moves to month partitions
        con = _connect(home)
        try:
            return _ingest(con, s, home, kind, [Path(p) for p in paths], fmt, register_new, dry_run, as_adjustment,
                           step, on_progress, origins)
        finally:
            con.close()
            shutil.rmtree(home / "facts" / "_tmp", ignore_errors=True)


def _ingest(con, s, home, kind, paths, fmt, register_new, dry_run, as_adjustment, step, on_progress,
            origins) -> IngestResult:
    spec = facts.KINDS[kind]
    sources = _open_sources(con, kind, paths, fmt, link_dir=home / "facts" / "_tmp" / "links")
    for src, origin in zip(sources, origins or ()):
        src.origin = origin
    if _already_ingested(s, kind, sources):
        # Every file is byte for byte one whose rows a committed batch holds in full: nothing to add.
        rows = sum(x.rows for x in sources)
        files = tuple(_report(x) for x in sources)
        batch_id = None if dry_run else _new_batch_id()
        if batch_id:
            s.add(IngestBatch(id=batch_id, kind=kind, status="committed", files=_files_json(sources),
                              rows_read=rows, rows_new=0, rows_duplicate=rows))
            s.commit()
        return IngestResult(kind=kind, batch_id=batch_id, files=files, rows_read=rows, rows_new=0, rows_duplicate=rows,
                            dry_run=dry_run)
    closed = set(store.closed_periods(s))
    known = {d: store.dim_names(s, kind=d) for d in ("tenant", "product")}
    expected = enums.expected_names(s, known)
    base_checks = checks(kind)
    batch_id = _new_batch_id()
    staging = home / "facts" / "_staging" / batch_id
    staging.mkdir(parents=True, exist_ok=True)
    typed_cols = _typed_cols(kind)
    open_period = store.current_open_period(s) if as_adjustment else None
    booked = _booked_sql(kind, sorted(closed), open_period)

    # One pass per file: parse, check every row, convert, write the staging Parquet.
    problems, total_bad, staged = [], 0, []
    digests = _digests_in_background([x.path for x in sources])
    for i, src in enumerate(sources):
        step(f"reading {src.label}")
        row_checks = cast_checks(kind, src.fmt) + base_checks + (jsonl_checks(kind) if src.fmt == "jsonl" else [])
        bad = _any_bad(row_checks)
        out = staging / f"{i}.parquet"
        rejects = None
        domains = enums.domains(kind, src.read_path, src.columns, expected) if src.fmt == "csv" else {}
        if domains:  # the fast pass (see .enums): names read as ENUMs; any surprise and the careful pass decides
            try:
                types = enums.create_enums(con, f"_e{i}", domains)
                body = _read_select(kind, src, None, with_line=False, enum_types=types)
                as_enum = frozenset(domains)
                all_names = as_enum >= set(spec.categories) & set(src.columns)
                with _watch(con, on_progress):
                    _copy(con, _pass_sql(body, _typed_cols(kind, as_enum),
                                         _any_bad(cast_checks(kind, "csv") + checks(kind, as_enum)), booked),
                          out, text_dictionaries=not all_names)
                rejects = []
            except duckdb.Error:
                out.unlink(missing_ok=True)
                step(f"reading {src.label} again, value by value (a value the fast pass did not expect)")
        if rejects is None:
            if src.fmt == "parquet":  # columns typed in the file are taken as they are (no text round trip)
                direct = opening.parquet_direct(kind, src.types)
                instants = frozenset(c.name for c in spec.columns if c.name in direct and c.type == "TIMESTAMPTZ")
                body = _read_select(kind, src, None, with_line=False, direct=direct)
                pass_typed, pass_bad = (_typed_cols(kind, instants),
                                        _any_bad(cast_checks(kind, "parquet") + checks(kind, instants)))
            else:
                body, pass_typed, pass_bad = _read_select(kind, src, f"rej{i}", with_line=False), typed_cols, bad
            try:
                with _watch(con, on_progress):
                    _copy(con, _pass_sql(body, pass_typed, pass_bad, booked), out)
                rejects = con.execute(f"SELECT line_byte_position, column_name, error_type, error_message FROM rej{i} "
                                      "ORDER BY line_byte_position").fetchall() if src.fmt == "csv" else []
            except duckdb.Error as e:
                problems.append(opening.unreadable_json(src.read_path, src.label, src.shape, MAX_LINE_BYTES, e)
                                if src.fmt == "jsonl" else
                                Problem(src.label, None, None, f"cannot read: {_first_line(e)}"))
                continue
        if rejects:  # the file does not parse: say where; other checks wait until it does
            total_bad += len(rejects)
            shown = rejects[:MAX_PROBLEMS]  # DuckDB's byte positions count from 1
            at = lines_at_bytes(src.read_path, [max(int(r[0] or 1) - 1, 0) for r in shown])
            problems += [_reject_problem(src.label, at[max(int(r[0] or 1) - 1, 0)], *r[1:]) for r in shown]
            continue
        src.rows, n_bad, src.values, src.months = _summary(con, kind, out)
        if src.rows == 0:
            problems.append(Problem(src.label, None, None,
                                    "no data rows (header only)" if src.fmt == "csv" else "no rows"))
            continue
        value_checks = _value_checks(kind, src.values)
        if n_bad or value_checks:
            found, n = _row_problems(con, kind, src, row_checks + value_checks)
            problems += found
            total_bad += n
        staged.append(out)
    for src, digest in zip(sources, digests.result()):
        src.sha256 = digest
    if problems:
        shutil.rmtree(staging, ignore_errors=True)
        raise IngestError(problems, max(total_bad, len(problems)))

    seen = {d: set().union(*(set(x.values.get(d) or []) for x in sources)) for d in ("tenant", "product")}
    if kind == "charges":
        seen["tenant"] |= {v[len("tenant:"):] for x in sources for v in x.values.get("allocate") or []
                           if v.startswith("tenant:")}
    unknown = {d: sorted(v - known[d]) for d, v in seen.items() if v - known[d]}
    touched = set().union(*(x.months for x in sources))
    hit = sorted(touched & closed)
    problems = []
    if unknown and not register_new:  # at the first row holding one (for charges: the column allocate)
        problems += unknown_name_problems(con, kind, sources, unknown)
    if hit and not as_adjustment:  # at the first row dated in a closed month
        problems.append(closed_period_problem(con, kind, sources, hit))
    if problems:
        shutil.rmtree(staging, ignore_errors=True)
        raise IngestError(problems)
    booked_period = open_period if hit else None
    rows_read = sum(x.rows for x in sources)
    files = tuple(_report(x) for x in sources)

    step("checking keys")
    existing = facts.committed_files(s, kind, home)
    try:
        new_rows, dup_rows = _dedupe(con, kind, sources, staged, existing, s)
    except IngestError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if dry_run:
        shutil.rmtree(staging, ignore_errors=True)
        return IngestResult(kind=kind, batch_id=None, files=files, rows_read=rows_read, rows_new=new_rows,
                            rows_duplicate=dup_rows, dry_run=True,
                            as_adjustment=bool(booked_period), booked_period=booked_period, registered=unknown)

    # Into the month partitions of booked_at (facts_layout): nothing is read until the commit below
    moved: list[Path] = []
    try:
        if new_rows and dup_rows == 0:  # every staged row is new: the staging files become the facts
            moved = facts_layout.place_files(con, kind, batch_id, staged, home, staging / "months")
        elif new_rows:
            step("writing facts")
            moved = facts_layout.write_select(con, kind, batch_id, "SELECT * FROM _new", home, staging / "months",
                                              within=staged)
    except BaseException:
        for m in facts_layout.batch_paths(kind, batch_id, home):
            m.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    step("committing")
    try:
        registered = {d: store.add_dims(s, kind=d, names=names) for d, names in unknown.items()}
        if kind == "fleet" and moved:
            written = ", ".join(lit(str(m)) for m in moved)
            for (pool,) in con.execute(f"SELECT DISTINCT pool FROM read_parquet([{written}], hive_partitioning=false)"
                                       ).fetchall():
                if s.get(Pool, pool) is None:
                    s.add(Pool(name=pool, display_name=pool))
        first, last = _extent(con, kind, moved)
        s.add(IngestBatch(id=batch_id, kind=kind, status="committed",
                          files=_files_json(sources),
                          rows_read=rows_read, rows_new=new_rows, rows_duplicate=dup_rows, first_at=first, last_at=last,
                          booked_period=booked_period, as_adjustment=bool(booked_period)))
        s.commit()  # the commit point of the batch
    except BaseException:
        s.rollback()
        for m in moved:
            m.unlink(missing_ok=True)
        raise
    return IngestResult(kind=kind, batch_id=batch_id, files=files, rows_read=rows_read, rows_new=new_rows,
                        rows_duplicate=dup_rows, as_adjustment=bool(booked_period),
                        booked_period=booked_period, registered=registered)


def _report(x: _Source) -> FileReport:
    """What the batch says of a file: the file itself, or the source it was converted from."""
    o = x.origin
    return (FileReport(o["path"], o["sha256"], o["format"], x.rows) if o else
            FileReport(x.label, x.sha256, x.recorded_format, x.rows))


def _files_json(sources: list[_Source]) -> str:
    """The batch's files: path as given, the SHA-256 and size of the file's own bytes (a gzip file's
    compressed bytes: what ``sha256sum`` of it says), format (``csv.gz`` for a compressed one), rows."""
    return json.dumps([{**_report(x).__dict__, "bytes": x.origin["bytes"] if x.origin else x.path.stat().st_size}
                       for x in sources])


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

def list_batches(s) -> list[IngestBatch]:
    return list(s.exec(select(IngestBatch).order_by(IngestBatch.created_at)))


def undo_batch(s, batch_id: str) -> IngestBatch:
    """Remove a committed batch whose period(s) are open: the DB row first (the commit point), then its
    files in every month partition (and a flat one of a home not yet migrated), under the ingest lock."""
    home = config.ledger_home()
    with _lock(home):
        return _undo(s, batch_id, home)


def _undo(s, batch_id: str, home: Path) -> IngestBatch:
    b = s.get(IngestBatch, batch_id)
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
    s.delete(b)
    s.commit()
    for f in facts_layout.batch_paths(b.kind, batch_id, home):
        f.unlink(missing_ok=True)
    facts_layout.remove_empty_partitions(b.kind, home)
    return b
