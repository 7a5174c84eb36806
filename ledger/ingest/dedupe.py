"""Stage 4, key: files ingested before, key hashes, duplicates and conflicting keys (:func:`key`)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa

from .. import facts
from ..errors import Problem
from ..schema import INGEST_BATCH
from ..sqltext import literal as lit, quote_ident as q
from .opening import _read_select, file_sha256
from .records import MAX_PROBLEMS, FileReport, IngestError, Keyed, OpenFile, ReadFile
from .staging import _typed_cols


def _already_ingested(s, kind: str, files: Sequence[OpenFile]) -> tuple[FileReport, ...] | None:
    """The reports of the files (SHA-256, and the rows the batch that held them read) when each file
    has the bytes (size, then SHA-256) and format of a file of a committed batch whose rows were all
    new: then every row of it is in the ledger already; else None. The size is compared first so
    that a new file costs no extra pass."""
    held: dict[int, list[dict]] = {}
    c = INGEST_BATCH.c
    for b in s.execute(sa.select(c.files).where(c.kind == kind, c.status == "committed", c.rows_duplicate == 0,
                                                c.rows_new > 0)):
        for f in json.loads(b.files):
            if "bytes" in f:
                held.setdefault(f["bytes"], []).append(f)
    if not held or any(x.path.stat().st_size not in held for x in files):
        return None
    reports = []
    for x in files:
        sha256 = file_sha256(x.path)
        match = [f for f in held[x.path.stat().st_size] if f["sha256"] == sha256 and f["format"] == x.recorded_format]
        if not match:
            return None
        reports.append(FileReport.of(x, sha256, match[0]["rows"]))
    return tuple(reports)


def key(con, s, kind: str, files: Sequence[ReadFile], home: Path) -> Keyed:
    """Stage 4, key: the staged rows of `files` matched by key against each other and the committed
    facts of the ledger home `home` (:func:`_dedupe`). IngestError names each conflicting key."""
    existing = facts.committed_files(s, kind, home)
    new, duplicate = _dedupe(con, kind, files, existing, s)
    return Keyed(new_rows=new, duplicate_rows=duplicate, new_sql=None if duplicate == 0 else "SELECT * FROM _new")


def _dedupe(con, kind: str, files: Sequence[ReadFile], existing: list[Path], s) -> tuple[int, int]:
    """Counts (new, duplicate); creates view ``_new`` with the rows to write when some are duplicates.

    The same key with the same content counts once; with other content it is a conflict
    (IngestError naming both sources). Content is compared only where keys repeat: first the keys
    alone are counted and matched, then the rows of repeated keys are compared column by column
    (through a hash of all their columns)."""
    spec = facts.KINDS[kind]
    key = ", ".join(q(k) for k in spec.key)
    cols = ", ".join(q(c) for c in spec.names)
    stage_list = ", ".join(lit(str(x.staged)) for x in files)
    con.execute(f"CREATE OR REPLACE TEMP VIEW _stage AS SELECT {cols}, booked_at, _bad, filename "
                f"FROM read_parquet([{stage_list}], filename=true)")
    if existing:
        # through facts.files_sql: a fact file older than a column reads it as its default
        con.execute(f"CREATE OR REPLACE TEMP VIEW _existing AS SELECT {cols}, filename FROM "
                    f"({facts.files_sql(kind, existing, filename=True, con=con)})")
    else:
        con.execute(f"CREATE OR REPLACE TEMP VIEW _existing AS SELECT {cols}, filename FROM _stage WHERE false")
    # Distinct 64-bit hashes of the key prove the keys distinct (see hashes_repeat). Only when
    # hashes repeat (a duplicate, or rarely a collision) are the keys themselves counted.
    total = sum(x.rows for x in files)
    distinct = total
    if hashes_repeat(con, f"SELECT hash({key}) AS h FROM _stage", total):
        distinct = con.execute(f"SELECT count(DISTINCT ({key})) FROM _stage").fetchall()[0][0]
    internal_conflicts = internal_dups = 0
    if distinct < total:
        internal_conflicts, internal_dups = con.execute(
            f"SELECT count(*) FILTER (WHERE h > 1), coalesce(sum(c - 1), 0) FROM (SELECT count(*) c, "
            f"count(DISTINCT hash({cols})) h FROM _stage GROUP BY {key} HAVING count(*) > 1)").fetchall()[0]
    matched = conflicts = 0
    if existing:
        con.execute(f"CREATE OR REPLACE TEMP TABLE _overlap AS SELECT DISTINCT {key} FROM _stage "
                    f"SEMI JOIN _existing USING ({key})")
        matched = con.execute("SELECT count(*) FROM _overlap").fetchone()[0]
    if matched:
        conflicts = con.execute(
            f"SELECT count(DISTINCT ({key})) FROM (SELECT {key}, hash({cols}) AS h FROM _stage SEMI JOIN _overlap "
            f"USING ({key})) n JOIN (SELECT {key}, hash({cols}) AS h FROM _existing SEMI JOIN _overlap USING ({key})) e "
            f"USING ({key}) WHERE n.h <> e.h").fetchone()[0]
    if internal_conflicts or conflicts:
        raise IngestError(_conflict_problems(con, kind, files, s), internal_conflicts + conflicts)
    if matched == 0 and internal_dups == 0:
        return total, 0
    con.execute(f"CREATE OR REPLACE TEMP VIEW _new AS SELECT * EXCLUDE (filename, _rn) FROM (SELECT *, row_number() "
                f"OVER (PARTITION BY {key} ORDER BY filename) AS _rn FROM _stage ANTI JOIN _existing USING ({key})) "
                "WHERE _rn = 1")
    new = int(distinct - matched)
    return new, total - new


NUMPY_SORT_MAX_ROWS = 30_000_000  # 240 MB of hashes; above it, DuckDB's sort (which can spill) decides
#: Up to this many rows the hashes are a Python set: fetching them costs less than importing numpy
#: (about 0.1 s of a small batch's command: docs/scale.md, "Startup")
SET_MAX_ROWS = 20_000
#: ... and up to this many, DuckDB counts them distinct: at 1M and 2M rows it takes less than numpy's
#: import alone (0.07-0.09 s and 0.14 s against 0.14-0.23 s with the import; docs/scale.md); from
#: there numpy's sort, once imported, costs less CPU (at 10M about 1.3 against 1.5-1.9 CPU-seconds)
DISTINCT_MAX_ROWS = 2_000_000


def hashes_repeat(con, hashes_sql: str, rows: int) -> bool:
    """True when some value of the one UBIGINT column of `hashes_sql` (`rows` rows) appears twice.

    Up to SET_MAX_ROWS the values are fetched into a Python set, which is smaller than the list
    when one repeats; up to DISTINCT_MAX_ROWS DuckDB counts them distinct, in the engine. Sorted, a
    repeat sits next to its twin: up to NUMPY_SORT_MAX_ROWS the values are fetched into an array and
    sorted by numpy (:func:`sorted_repeat`, in two halves at once where the connection runs two threads;
    its docstring has the times, against 0.5 s for DuckDB's sort of 10M values); above it, DuckDB sorts
    them and compares neighbours."""
    if rows <= SET_MAX_ROWS:
        values = [h for (h,) in con.execute(hashes_sql).fetchall()]
        return len(set(values)) < len(values)
    if rows <= DISTINCT_MAX_ROWS:
        return bool(con.execute(f"SELECT count(DISTINCT h) < count(h) FROM ({hashes_sql})").fetchall()[0][0])
    if rows <= NUMPY_SORT_MAX_ROWS:
        import numpy as np

        threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]  # LEDGER_THREADS, or a core each
        return sorted_repeat(np.asarray(con.execute(hashes_sql).fetchnumpy()["h"], dtype=np.uint64), int(threads))
    return bool(con.execute(f"SELECT count(*) FILTER (WHERE h = p) FROM (SELECT h, lag(h) OVER (ORDER BY h) AS p "
                            f"FROM ({hashes_sql}))").fetchone()[0])


def sorted_repeat(h, threads: int) -> bool:
    """True when a value of the numpy array `h` appears twice: `h` sorted in place (no second copy),
    then each value compared with its neighbour. With two `threads` or more, `h` is first partitioned
    around its middle value (``ndarray.partition``: every value before the middle place is no larger
    than every value after it) and the two halves are sorted at once, each on a thread (numpy's sort
    lets go of the GIL), which leaves the whole array sorted: at 10M values 0.41 to 0.44 s against
    0.64 to 0.66 s for one sort on a 2-core machine, the partition itself 0.09 s; where numpy's
    vectorized sort applies, 0.065 s against 0.098 s, the partition 0.012 s (docs/scale.md).
    `threads`: those the ingest's DuckDB connection runs (``LEDGER_THREADS``, else one per core)."""
    if h.size < 2:
        return False
    if threads < 2 or h.size < PARALLEL_SORT_MIN_ROWS:
        h.sort()
    else:
        import threading

        mid = h.size // 2
        h.partition(mid)
        upper = threading.Thread(target=lambda: h[mid:].sort())
        upper.start()
        h[:mid].sort()
        upper.join()
    return bool((h[1:] == h[:-1]).any())


#: From this many values the halves are sorted at once (every batch that reaches numpy's sort: above
#: DISTINCT_MAX_ROWS); a small array is sorted whole, where a thread and a partition would gain nothing
PARALLEL_SORT_MIN_ROWS = 1_000_000


def _conflict_problems(con, kind: str, files: Sequence[ReadFile], s) -> list[Problem]:
    """Name both sources of each conflicting key: the new file and line, and the line or batch it
    clashes with. Lines are found by reading the new files again, numbered, for the keys in conflict."""
    spec = facts.KINDS[kind]
    key = [q(k) for k in spec.key]
    keyl = ", ".join(key)
    cols = ", ".join(q(c) for c in spec.names)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _clash AS
        SELECT {keyl} FROM _stage GROUP BY {keyl} HAVING count(DISTINCT hash({cols})) > 1
        UNION
        SELECT {keyl} FROM (SELECT {keyl}, hash({cols}) AS h FROM _stage) n
          JOIN (SELECT {keyl}, hash({cols}) AS h, filename FROM _existing) e USING ({keyl}) WHERE n.h <> e.h""")
    parts = [f"SELECT {i} AS src, _line, {keyl}, hash({cols}) AS h FROM (SELECT _line, {_typed_cols(kind)} FROM "
             f"({_read_select(kind, x.file, None, with_line=True)})) SEMI JOIN _clash USING ({keyl})"
             for i, x in enumerate(files)]
    con.execute(f"CREATE OR REPLACE TEMP TABLE _lines AS {' UNION ALL '.join(parts)}")
    c = INGEST_BATCH.c
    batch_files = {b.id: ", ".join(f["path"] for f in json.loads(b.files))
                   for b in s.execute(sa.select(c.id, c.files).where(c.kind == kind))}
    rows = con.execute(f"""
        WITH firsts AS (SELECT *, row_number() OVER (PARTITION BY {keyl} ORDER BY src, _line) AS k FROM _lines)
        SELECT a.{key[0]}, a.src, a._line, b.src, b._line, NULL FROM firsts a JOIN firsts b USING ({keyl})
          WHERE b.k = 1 AND a.k > 1 AND a.h <> b.h
        UNION ALL
        SELECT n.{key[0]}, n.src, n._line, NULL, NULL, e.filename FROM _lines n
          JOIN (SELECT {keyl}, hash({cols}) AS h, filename FROM _existing) e USING ({keyl}) WHERE n.h <> e.h
        ORDER BY 2, 3 LIMIT {MAX_PROBLEMS}""").fetchall()
    from .rows import physical_lines  # records -> the file's lines (blank lines, quoted breaks, JSON objects)

    wanted: dict[int, set[int]] = {}
    for _, i, line, other_i, other_line, _ in rows:
        wanted.setdefault(i, set()).add(int(line))
        if other_i is not None:
            wanted.setdefault(other_i, set()).add(int(other_line))
    at = {i: physical_lines(files[i].file, files[i].rows, sorted(ns)) for i, ns in wanted.items()}
    out = []
    for keyval, i, line, other_i, other_line, existing_file in rows:
        line = at[i].get(int(line), int(line))
        if other_i is not None:
            other_line = at[other_i].get(int(other_line), int(other_line))
        if existing_file:
            bid = facts.batch_of(Path(existing_file))
            message = (f"{keyval!r} is already in batch {bid} (from {batch_files.get(bid, 'an earlier file')}) with "
                       f"different content (a key must not change): to correct that row, undo its batch with "
                       f"`ledger batches undo {bid}` and ingest the corrected file again")
        else:
            message = (f"{keyval!r} is already in {files[other_i].file.label}:{other_line} with different content "
                       "(a key must not change): keep one of the two rows")
        out.append(Problem(file=files[i].file.label, line=int(line), entry=spec.key[0], message=message))
    return out
