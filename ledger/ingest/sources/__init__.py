"""Bring your own data: `ledger ingest KIND --source SOURCE FILE... --map MAP.toml` (docs/adapters.md).

An adapter (one module per source: `litellm`) turns each source file into a file of the ledger's
own format (Parquet, in the ledger home's scratch folder ``facts/_adapters/``) with DuckDB SQL
alone, one row per source record, in the source's order; the plain :func:`ledger.ingest.ingest`
then validates and commits those files, so every rule of docs/ingest.md applies. Its problems are
told back in the source's terms: the source file, the record's line, the source field (``spend.csv:17:
prompt_tokens (input_tokens): '-1' is negative``). The batch lists the source files (``origins`` of
the plain ingest), in the same commit.
"""
from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from ... import config, duck, facts
from ...config import Home
from ...errors import Problem
from ...sqltext import literal as lit, quote_ident as q
from ..commit import ingest
from ..opening import file_sha256
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
        converted, fields, sources = [], {}, []
        problems, total = [], 0
        for i, p in enumerate(paths):
            step(f"converting {p} from {source}")
            opener = getattr(adapter, "open_file", None)
            src = opener(con, Path(p), fmt, work / "links", m) if opener else open_source(con, Path(p), fmt, work / "links")
            cols = adapter.columns(src, m)
            fields = {c: f for c, (_, f) in cols.items()}
            found, n = _convert(con, kind, src, cols, m, adapter, work / f"{i}.parquet", f"_lines{i}")
            problems += found
            total += n
            converted.append(work / f"{i}.parquet")
            sources.append(src)
        if problems:
            raise IngestError(problems, total)
        origins = [Origin(path=x.label, sha256=file_sha256(x.path), format=f"{source}:{x.fmt}{'.gz' * x.compressed}",
                          bytes=x.path.stat().st_size) for x in sources]
        try:
            return ingest(kind, converted, fmt="parquet", register_new=register_new, dry_run=dry_run,
                          as_adjustment=as_adjustment, on_step=on_step, on_progress=on_progress, origins=origins,
                          home=ledger, on_commit=on_commit)
        except IngestError as e:
            raise _translate(con, e, converted, sources, fields) from None
    finally:
        con.close()
        shutil.rmtree(work, ignore_errors=True)


def _convert(con, kind: str, src: SourceFile, cols: dict[str, tuple[str, str]], m, adapter, out: Path,
             lines: str) -> tuple[list[Problem], int]:
    """Write the ledger-format file `out` (rows in source order) and keep its row -> line map in table
    `lines`; returns the map's own problems: a required column with nothing at its path and no default."""
    spec = facts.KINDS[kind]
    own, own_checks = _path_checks(src, cols)
    cols = {**cols, **own}
    present = [c.name for c in spec.columns if c.name in cols]  # an optional column not given takes its default
    hidden = [c for c in cols if c.startswith("_")]  # the adapter's own: for its checks, and `_where` for problems
    try:
        # in _line order without a sort: the relation numbers the records in the order it reads them, and
        # this connection keeps insertion order (``duck.connect(ordered=True)``: DuckDB's
        # preserve_insertion_order), so the table is made in that order (a sort would move every column)
        con.execute(f"CREATE TEMP TABLE {lines} AS {_layered(src.rows(), cols, present + hidden)}")
    except duckdb.Error as e:
        return [unreadable(src.label, src.fmt, src.read_path or src.path, e, src.shape)], 1
    checks = own_checks + (adapter.checks(m, src) if hasattr(adapter, "checks") else [])
    if checks:
        where = " OR ".join(f"coalesce({flag}, false)" for flag, _, _ in checks)
        said = ", ".join(f"CASE WHEN coalesce({flag}, false) THEN {msg} END" for flag, _, msg in checks)
        rows = con.execute(f"SELECT _line, [{said}] FROM {lines} WHERE {where} ORDER BY _line "
                           f"LIMIT {MAX_PROBLEMS}").fetchall()
        if rows:
            n = con.execute(f"SELECT count(*) FROM {lines} WHERE {where}").fetchone()[0]
            at = _file_lines(con, src, lines, [r[0] for r in rows])
            found = [Problem(file=src.label, line=at.get(line, line), entry=field, message=text)
                     for line, said_row in rows for (_, field, _), text in zip(checks, said_row) if text is not None]
            return found, max(n, len(found))
    mapped = [c.name for c in spec.columns
              if c.required and c.name in cols and (c.name not in m.columns or m.columns[c.name].default is None)]
    if mapped:
        flags = [f"({q(c)} IS NULL OR CAST({q(c)} AS VARCHAR) = '')" for c in mapped]
        where = " OR ".join(flags)
        rows = con.execute(f"SELECT _line, [{', '.join(flags)}] FROM {lines} WHERE {where} "
                           f"ORDER BY _line LIMIT {MAX_PROBLEMS}").fetchall()
        if rows:
            n = con.execute(f"SELECT count(*) FROM {lines} WHERE {where}").fetchone()[0]
            at = _file_lines(con, src, lines, [r[0] for r in rows])
            found = [Problem(file=src.label, line=at.get(line, line), entry=f"{cols[c][1]} ({c})",
                             message="missing, and the map gives no default")
                     for line, hit in rows for c, h in zip(mapped, hit) if h]
            return found, max(n, len(found))
    names = ", ".join(q(c) for c in present)
    # `lines` was made in _line order and this connection keeps insertion order: a scan of it is in
    # that order already (no second and third sort of every row)
    con.execute(f"COPY (SELECT {names} FROM {lines}) TO {lit(str(out))} ({PARQUET_OPTIONS})")
    keep = ", _where" if "_where" in cols else ""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {lines} AS SELECT _line{keep} FROM {lines}")
    return [], 0


def _layered(relation: str, cols: dict[str, tuple[str, str]], names: list[str]) -> str:
    """SQL: `relation`'s ``_line`` and the columns `names` (``cols[name][0] AS name``), each computed
    once per row: a column that reads another hidden one by its name (a check's message reads its
    flag) is computed in a layer above it, not inlined where it is named (DuckDB would compute the
    flag again in each column naming it). In the layers a column has a name of its own (a source
    field may be called as a ledger column is: LiteLLM's ``status``)."""
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
    return f"SELECT _line, {', '.join(f'{inner[c]} AS {q(c)}' for c in names)} FROM ({rel})"


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
