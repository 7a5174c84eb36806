"""Bring your own data: `ledger ingest KIND --source SOURCE FILE... --map MAP.toml` (docs/adapters.md).

An adapter (one module per source: `litellm`) turns each source file into a file of the ledger's
own format (Parquet, in the ledger home's scratch folder ``facts/_adapters/``) with DuckDB SQL
alone, one row per source record, in the source's order, written by the conversion's one statement
with the conversion's own columns beside the ledger's (``HIDDEN``: left unread by the ingest); the
plain :func:`ledger.ingest.ingest` then validates and commits those files, so every rule of
docs/ingest.md applies. Its problems are told back in the source's terms: the source file, the
record's line, the source field (``spend.csv:17: prompt_tokens (input_tokens): '-1' is negative``).
The batch lists the source files (``origins`` of the plain ingest), in the same commit.
"""
from __future__ import annotations

import copy
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import duckdb

from ... import config, duck, facts
from ...config import Home
from ...errors import Problem
from ...sqltext import literal as lit, quote_ident as q
from ..commit import ingest
from ..opening import digests_in_background
from ..records import MAX_PROBLEMS, PARQUET_OPTIONS, CommitHook, IngestError, IngestResult, OpenFile, Origin
from ..rows import physical_lines
from . import langfuse, langfuse_scores, litellm, mapfile, otel
from .reading import SourceFile, open_source, unreadable

#: source name -> its adapter module: KIND, TABLES, MAPPABLE, BUILT_IN, columns(src, m), table_problems(m); and
#: optionally open_file (its own reader), prepare(con, m, home) (before any file), checks(m, src) (row problems of
#: its own, over hidden ``_`` columns), LOOKED_UP (required columns it can find without the map).
SOURCES = {"litellm": litellm, "langfuse": langfuse, "otel": otel, "langfuse-scores": langfuse_scores}
SCRATCH = "_adapters"
STALE_SECONDS = 24 * 3600


def ingest_from(source: str, kind: str, paths: Sequence[str | Path], map_path: str | Path, *,
                fmt: str | None = None, register_new: bool = False, dry_run: bool = False,
                as_adjustment: bool = False, on_step: Callable[[str], None] | None = None,
                on_progress: Callable[[float], None] | None = None, home: Home | None = None,
                on_commit: CommitHook | None = None) -> IngestResult:
    """Convert `paths` of `source` with the map at `map_path`, then ingest them as one batch of `kind`
    into the ledger `home` (``ledger.config.Home``; default: the configured one, resolved here once).
    Raises IngestError (nothing written) with problems in the source files' terms. `on_commit` is
    committed with the batch (``ledger.ingest.ingest``)."""
    adapter = SOURCES.get(source)
    if adapter is None:
        raise IngestError([Problem(file=source, message=f"unknown source (one of {', '.join(SOURCES)})")])
    if adapter.KIND != kind:
        raise IngestError([Problem(file=source, message=f"{source} gives {adapter.KIND}, not {kind}")])
    if not paths:
        raise IngestError([Problem(file=kind, message="no files given")])
    must = tuple(c.name for c in facts.KINDS[kind].columns
                 if c.required and c.name in adapter.MAPPABLE and c.name not in adapter.BUILT_IN
                 and c.name not in getattr(adapter, "LOOKED_UP", ()))
    m = mapfile.load(Path(map_path), adapter.MAPPABLE, adapter.TABLES, must)
    bad = adapter.table_problems(m)
    if bad:
        raise IngestError([Problem(file=str(map_path), entry=k, message=msg) for k, msg in bad])
    step = on_step or (lambda _m: None)
    ledger = config.home() if home is None else home
    root = ledger.facts / SCRATCH
    _sweep_stale(root)
    work = root / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    con = duck.connect("ingest_source", home=ledger.path, ordered=True)
    try:
        prepare = getattr(adapter, "prepare", None)
        if prepare:
            prepare(con, m, ledger)
        converted, fields, sources, digests = [], {}, [], []
        problems, total = [], 0
        for i, p in enumerate(paths):
            step(f"converting {p} from {source}")
            opener = getattr(adapter, "open_file", None)
            src = opener(con, Path(p), fmt, work / "links", m) if opener else open_source(con, Path(p), fmt, work / "links")
            digests.append(digests_in_background([src.path]))  # a thread hashes it while DuckDB converts
            flat = _flat(src)
            cols = adapter.columns(src, m)
            fields = {c: f for c, (_, f) in cols.items()}
            found, n = _convert(con, kind, src, cols, m, adapter, work / f"{i}.parquet", f"_lines{i}",
                                flat=flat and (flat, adapter.columns(flat, m)))
            problems += found
            total += n
            converted.append(work / f"{i}.parquet")
            sources.append(src)
        if problems:
            raise IngestError(problems, total)
        origins = [Origin(path=x.label, sha256=d.result()[0], format=f"{source}:{x.fmt}{'.gz' * x.compressed}",
                          bytes=x.path.stat().st_size, hidden=HIDDEN) for x, d in zip(sources, digests)]
        try:
            return ingest(kind, converted, fmt="parquet", register_new=register_new, dry_run=dry_run,
                          as_adjustment=as_adjustment, on_step=on_step, on_progress=on_progress, origins=origins,
                          home=ledger, on_commit=on_commit)
        except IngestError as e:
            raise _translate(con, e, converted, sources, fields) from None
    finally:
        con.close()
        shutil.rmtree(work, ignore_errors=True)


def _flat(src: SourceFile) -> SourceFile | None:
    """For a CSV or Parquet source, a copy of `src` whose paths do not follow JSON text inside the
    JSON of its fields (``Documents.depth`` 1), to be converted first (:func:`_convert`); None for
    JSON, whose records' own fields are where such text is (LiteLLM's payload ``metadata``)."""
    if src.fmt not in ("csv", "parquet"):
        return None
    docs = copy.deepcopy(src.docs)  # what opening it asked already (a filter's paths: ``reading.kept``)
    docs.depth = 1
    return replace(src, docs=docs)


def _convert(con, kind: str, src: SourceFile, cols: dict[str, tuple[str, str]], m, adapter, out: Path,
             lines: str, flat: tuple[SourceFile, dict[str, tuple[str, str]]] | None = None
             ) -> tuple[list[Problem], int]:
    """Write the ledger-format file `out` (rows in source order) and keep its row -> line map in table
    `lines`; returns the map's own problems: a required column with nothing at its path and no default.

    The conversion is one statement, written to `out` as it is computed: the ledger's columns and
    the conversion's own (``HIDDEN``: the records' lines where the source is numbered by a window,
    the adapter's ``_where``, whether a check refuses the record, whether a flat conversion missed a
    value), which the ingest leaves unread (``Origin.hidden``) and the checks below read from the file.

    With `flat` (:func:`_flat`: the source and its columns, paths not followed into JSON text held
    in the JSON of a field), that conversion is made first; when no row has such text where a path
    goes (``Documents.deeper``: nearly always, and then every value is the same), it is the
    conversion; else the conversion is made again with `src` and `cols`."""
    spec = facts.KINDS[kind]
    given = cols
    own, own_checks = _path_checks(src, cols)
    cols = {**cols, **own}
    present = [c.name for c in spec.columns if c.name in cols]  # an optional column not given takes its default
    hidden = [c for c in cols if c.startswith("_")]  # the adapter's own: for its checks, and `_where` for problems
    checks = own_checks + (adapter.checks(m, src) if hasattr(adapter, "checks") else [])
    kept = [q(c) for c in present] + (["_where"] if "_where" in cols else [])
    # The records are numbered by their place in `out` when the source can be read without its window
    # (``SourceFile.unnumbered``: a window runs on one thread): the statement writes them in the order
    # they are read, so a row's place in the file is its record's (`num`: its ``_line``).
    unnumbered = src.unnumbered()
    num = "_line" if unnumbered is None else f"(file_row_number + {unnumbered[1]})"
    written = f"{lines}_written"  # the view of `out` the checks read

    def table(s: SourceFile, c: dict[str, tuple[str, str]], deeper: bool) -> None:
        # The conversion keeps, of the checks, one flag per row (``_refused``: any check true) and no
        # message: the messages (one per check, NULL in every row but a refused one) are made by a second
        # statement over the refused records alone, which computes the columns again for them (:func:`_refusals`).
        own_c, own_k = _path_checks(s, c)
        c = {**c, **own_c}
        k = own_k + (adapter.checks(m, s) if hasattr(adapter, "checks") else [])
        said = {msg for _, _, msg in k if msg in c}
        refused = " OR ".join(f"coalesce({flag}, false)" for flag, _, _ in k) or "false"
        if deeper:
            c[DEEPER] = (s.docs.deeper(), "")
        more = f", {DEEPER}" if deeper else ""
        # in _line order without a sort: the relation numbers the records in the order it reads them, and
        # this connection keeps insertion order (``duck.connect(ordered=True)``: DuckDB's
        # preserve_insertion_order), so COPY writes them in that order (a sort would move every column)
        names = present + [h for h in c if h.startswith("_") and h not in said]
        converted = (_layered(s.rows(), c, names) if unnumbered is None else
                     _layered(s.docs.select(unnumbered[0]), c, names, line=False))
        line = "_line, " if unnumbered is None else ""
        con.execute(f"COPY (SELECT {line}{', '.join(kept)}, ({refused}) AS {REFUSED}{more} FROM ({converted})) "
                    f"TO {lit(str(out))} ({PARQUET_OPTIONS})")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {written} AS "
                    f"SELECT * FROM read_parquet({lit(str(out))}, file_row_number = true)")

    try:
        if flat is None:
            table(src, given, False)
        else:
            table(*flat, True)
            if con.execute(f"SELECT count(*) FROM {written} WHERE {DEEPER}").fetchone()[0]:
                table(src, given, False)
    except duckdb.Error as e:
        return [unreadable(src.label, src.fmt, src.read_path or src.path, e, src.shape)], 1
    if checks:
        n = con.execute(f"SELECT count(*) FROM {written} WHERE {REFUSED}").fetchone()[0]
        if n:
            return _refusals(con, src, cols, present + hidden, checks, written, n, num)
    mapped = [c.name for c in spec.columns
              if c.required and c.name in cols and (c.name not in m.columns or m.columns[c.name].default is None)]
    if mapped:
        flags = [f"({q(c)} IS NULL OR CAST({q(c)} AS VARCHAR) = '')" for c in mapped]
        where = " OR ".join(flags)
        rows = con.execute(f"SELECT {num} AS _line, [{', '.join(flags)}] FROM {written} WHERE {where} "
                           f"ORDER BY _line LIMIT {MAX_PROBLEMS}").fetchall()
        if rows:
            n = con.execute(f"SELECT count(*) FROM {written} WHERE {where}").fetchone()[0]
            at = _file_lines(con, src, written, [r[0] for r in rows])
            found = [Problem(file=src.label, line=at.get(line, line), entry=f"{cols[c][1]} ({c})",
                             message="missing, and the map gives no default")
                     for line, hit in rows for c, h in zip(mapped, hit) if h]
            return found, max(n, len(found))
    keep = ", _where" if "_where" in cols else ""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {lines} AS SELECT {num} AS _line{keep} FROM {written}")
    return [], 0


#: The conversion's column that is true for a record some check of the adapter's refuses, and the
#: flat conversion's that is true where JSON text inside a field's JSON may hold a value (:func:`_flat`).
REFUSED, DEEPER = "_refused", "_deeper"
#: The columns a conversion may write into its file for itself, beside the ledger's (:func:`_convert`):
#: none is a ledger column (none begins with ``_``), and the ingest leaves them unread (``Origin.hidden``).
HIDDEN = ("_line", "_where", REFUSED, DEEPER)


def _refusals(con, src: SourceFile, cols: dict[str, tuple[str, str]], names: list[str], checks: list,
              lines: str, n: int, num: str = "_line") -> tuple[list[Problem], int]:
    """The problems of the `n` records the converted file's view `lines` flags (``_refused``), the first
    MAX_PROBLEMS of them in line order: the columns `names` computed again for those records alone
    (read again from the source, numbered as before), each check's flag and message. `num` is the
    SQL of a row's ``_line`` in `lines`."""
    first = f"_line IN (SELECT {num} FROM {lines} WHERE {REFUSED} ORDER BY 1 LIMIT {MAX_PROBLEMS})"
    where = " OR ".join(f"coalesce({flag}, false)" for flag, _, _ in checks)
    said = ", ".join(f"CASE WHEN coalesce({flag}, false) THEN {msg} END" for flag, _, msg in checks)
    rows = con.execute(f"SELECT _line, [{said}] FROM ({_layered(src.rows(first), cols, names)}) WHERE {where} "
                       f"ORDER BY _line").fetchall()
    at = _file_lines(con, src, lines, [r[0] for r in rows])
    found = [Problem(file=src.label, line=at.get(line, line), entry=field, message=text)
             for line, said_row in rows for (_, field, _), text in zip(checks, said_row) if text is not None]
    return found, max(n, len(found))


def _layered(relation: str, cols: dict[str, tuple[str, str]], names: list[str], line: bool = True) -> str:
    """SQL: `relation`'s ``_line`` and the columns `names` (``cols[name][0] AS name``), each computed
    once per row: a column that reads another hidden one by its name (a check's message reads its
    flag) is computed in a layer above it, not inlined where it is named (DuckDB would compute the
    flag again in each column naming it). In the layers a column has a name of its own (a source
    field may be called as a ledger column is: LiteLLM's ``status``). Without `line`, no ``_line``
    (`relation` has none: the records are numbered by the table they are written to)."""
    tag = uuid.uuid4().hex[:8]
    inner = {c: f"_col{k}_{tag}" for k, c in enumerate(names)}
    # a hidden column named bare, as the adapters write them (a source field is always quoted: "_x")
    word = {h: re.compile(rf"(?<![A-Za-z0-9_\"]){re.escape(h)}(?![A-Za-z0-9_\"])") for h in names if h.startswith("_")}
    reads = {c: {h for h, w in word.items() if h != c and w.search(cols[c][0])} for c in names}
    depth: dict[str, int] = {}

    def level(c: str, seen: tuple = ()) -> int:
        if c not in depth:
            if c in seen:
                raise ValueError(f"columns read each other: {' -> '.join(seen + (c,))}")
            depth[c] = 1 + max((level(h, seen + (c,)) for h in reads[c]), default=0)
        return depth[c]

    def sql(c: str) -> str:
        text = cols[c][0]
        for h in reads[c]:
            text = word[h].sub(inner[h], text)
        return text

    for c in names:
        level(c)
    rel = relation
    for n in sorted(set(depth.values())):
        here = ", ".join(f"{sql(c)} AS {inner[c]}" for c in names if depth[c] == n)
        rel = f"SELECT *, {here} FROM ({rel})"  # the columns no layer reads are pruned by DuckDB
    return f"SELECT {'_line, ' * line}{', '.join(f'{inner[c]} AS {q(c)}' for c in names)} FROM ({rel})"


def _path_checks(src: SourceFile, cols: dict[str, tuple[str, str]]) -> tuple[dict[str, tuple[str, str]], list]:
    """The problems the map's and the adapter's paths can find in a row (a key written twice in one
    JSON object, an object or a list where one value goes: ``sources.jsondocs``), as hidden columns
    of their own and the checks over them; the field is named with the ledger columns it gives."""
    extra, checks = {}, []
    where = " || coalesce(' (' || _where || ')', '')" if "_where" in cols else ""
    for i, (flag, path, msg) in enumerate(src.problems()):
        users = [c for c, (_, f) in cols.items() if f == path and not c.startswith("_")]
        extra[f"_path{i}"] = (f"coalesce({flag}, false)", path)
        extra[f"_path{i}_said"] = (f"(CASE WHEN _path{i} THEN ({msg}){where} END)", path)  # the flag just above
        checks.append((f"_path{i}", f"{path} ({', '.join(users)})" if users else path, f"_path{i}_said"))
    return extra, checks


def _translate(con, e: IngestError, converted: list[Path], sources: list[SourceFile],
               fields: dict[str, str]) -> IngestError:
    """The plain ingest's problems about the converted files, told of the source files: file, line, field."""
    labels = {str(c): s.label for c, s in zip(converted, sources)}
    index = {str(c): i for i, c in enumerate(converted)}

    def relabel(text: str | None) -> str | None:
        for conv, label in labels.items():
            text = text.replace(conv, label) if text else text
        return text

    records = []  # (problem, source index, record number in the source, where in the record)
    for p in e.problems:
        i, line, where = index.get(p.file), p.line, None
        if i is not None and line is not None:
            got = con.execute(f"SELECT * FROM _lines{i} LIMIT 1 OFFSET {int(line) - 1}").fetchone()
            line, where = (got[0], got[1] if len(got) > 1 else None) if got else (line, None)
        records.append((p, i, line, where))
    at = {i: _file_lines(con, sources[i], f"_lines{i}", [n for _, j, n, _ in records if j == i and n is not None])
          for i in {j for _, j, _, _ in records if j is not None}}
    out = []
    for p, i, line, where in records:
        if i is not None and line is not None:
            line = at[i].get(line, line)
        column = f"{fields[p.entry]} ({p.entry})" if p.entry in fields else p.entry
        message = relabel(p.message)
        out.append(Problem(file=relabel(p.file), line=line, entry=column,
                           message=f"{message} ({where})" if where else message))
    return IngestError(out, e.total)


def _file_lines(con, src: SourceFile, table: str, numbers: list[int]) -> dict[int, int]:
    """Record numbers of a source (as its relation counts them) -> the file's physical lines, as the
    plain ingest reports them (blank lines and quoted line breaks counted)."""
    if src.fmt == "parquet" or not numbers:
        return {n: n for n in numbers}
    rows = con.execute(f"SELECT count(*) FROM ({src.base})" if src.base else f"SELECT count(*) FROM {table}").fetchone()[0]
    return physical_lines(OpenFile(path=src.path, label=src.label, fmt=src.fmt, read_path=src.read_path or src.path,
                                   shape=src.shape), rows, numbers)


def _sweep_stale(root: Path) -> None:
    """Remove scratch folders a killed conversion left (older than a day; a running one is younger)."""
    if not root.is_dir():
        return
    for d in root.iterdir():
        try:
            if time.time() - d.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass
