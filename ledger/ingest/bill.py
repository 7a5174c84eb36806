"""Cloud bills in FinOps FOCUS: ``ledger ingest bill FILE...`` (docs/reconcile.md).

A FOCUS file (the column names of FOCUS 1.0 to 1.3; CSV or Parquet, as AWS Data Exports, Azure Cost
Management and Google Cloud write them) is converted, with DuckDB SQL alone, into a file of the
ledger's ``bill`` kind (:mod:`ledger.facts`); the plain :func:`ledger.ingest.ingest` then checks,
dedupes and commits it, so a bill is one atomic, idempotent batch like every other input, with
``--dry-run`` and ``ledger batches undo``. Its problems are told back in the bill's terms: the bill
file, its line (Parquet: its row) and the FOCUS column (``aws.csv:7: BilledCost: 'n/a' is not a
decimal number``).

The conversion:

- **columns** by FOCUS name (:data:`FOCUS_COLUMNS`); the provider is ``ServiceProviderName`` (1.3)
  or else ``ProviderName`` (1.0 to 1.2), the first not blank; the region ``RegionId`` or else
  ``Region`` (0.5). The columns of :data:`MANDATORY` (and one of the provider columns) must be in
  the file; the AWS ``x_`` columns are kept together in ``extras`` (one JSON object); any other
  column is ignored.
- **instants**: FOCUS writes them in UTC, so one written without an offset
  (``2026-10-01T00:00:00``, a Parquet timestamp not marked UTC) is taken as UTC; anything else is
  judged as every ledger instant is.
- **missing values**: an empty cell, and in a CSV the unquoted text ``NULL`` (the FinOps
  Foundation's FOCUS sample data writes every missing value so), are missing; a quoted ``"NULL"`` is
  the text NULL.
- **money** (``BilledCost``, ``EffectiveCost``, ``ListCost``): text is kept as written, and the
  ingest judges it (at most 12 decimal places, never rounded; negative is fine: credits and
  corrections). A Parquet DOUBLE (AWS types its costs so) is rounded to 12 places here, explicitly: a
  double holds no decimal exactly, and 12 places is the ledger's keeping.
- **quantity** (``ConsumedQuantity``) is not money: it is kept exactly, whatever its places, as the
  plain text of its decimal value (:func:`ledger.money.decimal_text_sql`; a Parquet DOUBLE as its
  shortest text, the one AWS's CSV prints), never rounded and never refused for its precision.
- **tags**: a JSON object (text, minified; a Parquet MAP or STRUCT as its JSON).
- **line_id**: FOCUS rows have no id. A row's id is the SHA-256 of its content as the ledger stores
  it (:func:`_normal`: money and instants as their value, so ``1.50`` and ``1.5`` are one; an empty
  text as missing, as it is stored; a column the file does not have as missing, as it is stored),
  first 32 hex digits, then ``-n``: the row's occurrence among identical rows of the batch (files in
  the order given, rows in file order). The same export ingested again gives the same ids, whatever
  its shape (CSV or Parquet, an empty cell, ``""`` or a null), so it adds nothing; two identical rows
  of one export stay two rows.
"""
from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from .. import config, duck, facts
from ..config import Home
from ..errors import Problem
from ..money import decimal_text_sql
from ..sqltext import literal as lit, quote_ident as q
from .commit import ingest
from .opening import csv_header, file_sha256, format_named, match_columns, parquet_names, unreadable_csv
from .records import MAX_LINE_BYTES, PARQUET_OPTIONS, CommitHook, IngestError, IngestResult, OpenFile, Origin, first_line
from .shapes import readable
from .rows import physical_lines

#: FOCUS column -> ledger bill column (ledger.facts, kind ``bill``).
FOCUS_COLUMNS = {
    "ChargePeriodStart": "charge_period_start", "ChargePeriodEnd": "charge_period_end",
    "BillingPeriodStart": "billing_period_start", "ChargeCategory": "charge_category", "ChargeClass": "charge_class",
    "ServiceName": "service_name", "ServiceCategory": "service_category", "BillingAccountId": "billing_account_id",
    "ResourceId": "resource_id", "ResourceName": "resource_name", "SkuId": "sku_id", "SkuPriceId": "sku_price_id",
    "PricingCategory": "pricing_category", "CommitmentDiscountId": "commitment_discount_id",
    "ConsumedQuantity": "consumed_quantity", "ConsumedUnit": "consumed_unit", "BilledCost": "billed_cost",
    "EffectiveCost": "effective_cost", "ListCost": "list_cost", "BillingCurrency": "billing_currency",
    "ChargeDescription": "description", "Tags": "tags",
}
#: Columns a ledger column is taken from, the first one not blank (FOCUS 1.3 renamed ProviderName).
FIRST_OF = {"provider": ("ServiceProviderName", "ProviderName"), "region": ("RegionId", "Region")}
#: FOCUS columns every bill must have (Mandatory in FOCUS 1.0, and read by the ledger); and one of
#: the provider columns.
MANDATORY = ("BilledCost", "EffectiveCost", "ListCost", "BillingCurrency", "ChargePeriodStart", "ChargePeriodEnd",
             "ChargeCategory", "ChargeClass", "ServiceName")
MONEY = ("billed_cost", "effective_cost", "list_cost")
#: Quantities: kept exactly as decimal text (facts.BILL_QUANTITY), never refused for their places.
QUANTITIES = ("consumed_quantity",)
#: Money the digest has always shown at the store's 12 places: a quantity written with up to 12
#: places keeps the row id it had when quantities were stored as DECIMAL(38,12).
_DIGEST_PLACES = 12
INSTANTS = ("charge_period_start", "charge_period_end", "billing_period_start")
EXTRA_PREFIX = "x_"
#: A date and time with no offset: FOCUS instants are UTC, so such a value gets ``Z``.
_NAIVE = r"^\s*[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?\s*$"
_NULL = "\u2400"  # stands for a missing value in the row digest


@dataclass
class _Bill:
    """A bill file opened for conversion: `label` as given, `fmt`, its SQL `relation` (``_line`` and
    its columns), the DuckDB `types` of its columns, and its `rows` once converted."""

    path: Path
    label: str
    fmt: str
    relation: str
    types: dict[str, str]
    rows: int = 0
    #: What the readers read (the file, or its unpacked copy when gzip: ledger.ingest.shapes).
    read_path: Path | None = None
    compressed: bool = False
    #: FOCUS name -> the column's name as the file spells it, where it differs (``billedcost``).
    spelled: dict[str, str] = field(default_factory=dict)

    def source_of(self, col: str) -> str:
        """The column of this file (as it spells it) a ledger column came from."""
        if col in FIRST_OF:
            focus = next((c for c in FIRST_OF[col] if c in self.types), FIRST_OF[col][0])
        else:
            focus = next((f for f, c in FOCUS_COLUMNS.items() if c == col), "line_id" if col == "line_id" else col)
        return self.spelled.get(focus, focus)


def ingest_bill(paths: Sequence[str | Path], *, fmt: str | None = None, dry_run: bool = False,
                as_adjustment: bool = False, register_new: bool = False,
                on_step: Callable[[str], None] | None = None,
                on_progress: Callable[[float], None] | None = None, home: Home | None = None,
                on_commit: CommitHook | None = None) -> IngestResult:
    """Convert the FOCUS files `paths` and ingest them as one batch of kind ``bill`` into the ledger
    `home` (``ledger.config.Home``; default: the configured one, resolved here once). Raises
    IngestError (nothing written) naming the bill files, their lines and FOCUS columns. `on_commit`
    is committed with the batch (``ledger.ingest.ingest``)."""
    if register_new:
        raise IngestError([Problem(file="bill", message="--register-new does not apply to a bill: it names no tenant "
                                                        "or product")])
    if not paths:
        raise IngestError([Problem(file="bill", message="no files given")])
    step = on_step or (lambda _m: None)
    ledger = config.home() if home is None else home
    scratch = duck.spill_root(ledger.path)  # the ledger home's tmp folder: an unpacked bill may be large
    scratch.mkdir(parents=True, exist_ok=True)
    _sweep_stale(scratch)
    with tempfile.TemporaryDirectory(prefix="ledger-bill-", dir=scratch) as tmp:
        work = Path(tmp)
        con = duck.connect("ingest_bill", home=ledger.path, ordered=True)
        try:
            bills, problems = [], []
            for p in paths:
                try:
                    bills.append(_open(con, Path(p), fmt, work / "links"))
                except IngestError as e:
                    problems += e.problems
            for b in bills:
                problems += _missing(b)
            if problems:
                raise IngestError(problems)
            converted = []
            con.execute("CREATE TEMP TABLE _seen (_digest VARCHAR, n BIGINT)")
            for i, b in enumerate(bills):
                step(f"converting {b.label} from FOCUS")
                out = work / f"{i}.parquet"
                try:
                    _convert(con, b, out, i)
                except duckdb.Error as e:
                    problems.append(unreadable_csv(b.read_path, b.label, e) if b.fmt == "csv" else
                                    Problem(file=b.label, message=f"cannot read as {b.fmt}: {first_line(e)}"))
                    continue
                converted.append(out)
            if problems:
                raise IngestError(problems)
            origins = [Origin(path=b.label, sha256=file_sha256(b.path), format=f"focus:{b.fmt}{'.gz' * b.compressed}",
                              bytes=b.path.stat().st_size) for b in bills]
            try:
                return ingest("bill", converted, fmt="parquet", dry_run=dry_run, as_adjustment=as_adjustment,
                              on_step=on_step, on_progress=on_progress, origins=origins, home=ledger,
                              on_commit=on_commit)
            except IngestError as e:
                raise _translate(e, converted, bills) from None
        finally:
            con.close()


def _sweep_stale(scratch: Path, older: float = 24 * 3600) -> None:
    """Remove the work folders of bill ingests killed before they could (older than a day: a running
    one is younger)."""
    import shutil
    import time

    for d in scratch.glob("ledger-bill-*"):
        try:
            if time.time() - d.stat().st_mtime > older:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


def _open(con, path: Path, fmt: str | None, link_dir: Path) -> _Bill:
    """The bill at `path` as a relation with ``_line`` (CSV: the header is line 1; Parquet: rows from 1),
    gzip unpacked (ledger.ingest.shapes), its FOCUS columns under their FOCUS names whatever their case."""
    label = str(path)
    if not path.is_file():
        raise IngestError([Problem(file=label, message="no such file")])
    given, fmt = fmt, format_named(path, fmt)
    if fmt not in ("csv", "parquet"):
        told = f"--format {given}" if given else f"the extension {path.suffix!r}"
        raise IngestError([Problem(file=label, message=f"a FOCUS bill is CSV or Parquet ({told}); use --format csv "
                                                       "or --format parquet")])
    data = readable(path, label, fmt, link_dir)
    read = lit(str(data.path))
    header = None
    if fmt == "csv":
        header, bad = csv_header(data.path, label)
        if bad:
            raise IngestError(bad)
        if len(set(header)) != len(header):
            twice = sorted({c for c in header if header.count(c) > 1})
            raise IngestError([Problem(file=label, line=1, entry=c,
                                       message="the column appears twice in the header") for c in twice])
        # an unquoted NULL is a missing value (the FOCUS sample data writes them so); "NULL" quoted is text
        rel = (f"SELECT row_number() OVER () + 1 AS _line, * FROM read_csv({read}, header=true, all_varchar=true, "
               f"delim=',', quote='\"', escape='\"', strict_mode=true, max_line_size={MAX_LINE_BYTES}, "
               f"nullstr=['', 'NULL'], allow_quoted_nulls=false)")
    else:
        rel = f"SELECT row_number() OVER () AS _line, * FROM read_parquet({read})"
    try:
        types = {r[0]: r[1] for r in con.execute(f"DESCRIBE {rel}").fetchall() if r[0] != "_line"}
    except duckdb.Error as e:
        raise IngestError([unreadable_csv(data.path, label, e) if fmt == "csv" else
                           Problem(file=label, message=f"cannot read as {fmt}: {first_line(e)}")]) from None
    # FOCUS names in another case (``billedcost``, ``BILLEDCOST``): matched on the header as written
    # (DuckDB renames a second ``billedcost`` beside ``BilledCost`` to ``billedcost_1``), then renamed
    focus = sorted({*FOCUS_COLUMNS, *(c for names in FIRST_OF.values() for c in names)})
    names = (header if header and len(header) == len(types) else
             parquet_names(con, data.path, list(types)) if fmt == "parquet" else list(types))
    matched, bad = match_columns(label, 1 if fmt == "csv" else None, names, focus)
    if bad:
        raise IngestError(bad)
    duck_name = dict(zip(names, types))
    renamed = {duck_name[theirs]: ours for theirs, ours in matched.items() if duck_name[theirs] != ours}
    if renamed:
        rel = f"SELECT * RENAME ({', '.join(f'{q(a)} AS {q(b)}' for a, b in renamed.items())}) FROM ({rel})"
        types = {renamed.get(c, c): t for c, t in types.items()}
    return _Bill(path=path, label=label, fmt=fmt, relation=rel, types=types, read_path=data.path,
                 compressed=data.gzip, spelled={ours: theirs for theirs, ours in matched.items() if theirs != ours})


def _missing(b: _Bill) -> list[Problem]:
    """One problem per mandatory FOCUS column the file lacks."""
    line = 1 if b.fmt == "csv" else None
    out = [Problem(file=b.label, line=line, entry=c,
                   message="required FOCUS column is missing") for c in MANDATORY if c not in b.types]
    if not any(c in b.types for c in FIRST_OF["provider"]):
        out.append(Problem(file=b.label, line=line, entry="ServiceProviderName",
                           message="required FOCUS column is missing (ProviderName in FOCUS 1.0 to 1.2)"))
    return out


def _text(b: _Bill, col: str) -> str:
    t = b.types[col]
    return q(col) if t == "VARCHAR" else f"CAST({q(col)} AS VARCHAR)"


def _money(b: _Bill, col: str) -> str:
    """SQL text of a money column: as written, or a DOUBLE rounded to 12 places (see the module)."""
    if b.types[col] not in ("DOUBLE", "FLOAT"):
        return _text(b, col)
    x = q(col)
    exact = f"CAST(TRY_CAST(round({x}, 12) AS DECIMAL(38,12)) AS VARCHAR)"
    return f"(CASE WHEN isfinite({x}) THEN coalesce({exact}, CAST({x} AS VARCHAR)) ELSE CAST({x} AS VARCHAR) END)"


def _quantity(b: _Bill, col: str) -> str:
    """SQL text of a quantity before it is made plain (:func:`_convert`): text as written, any typed
    value as its text (a DECIMAL exactly, a DOUBLE as its shortest text)."""
    return _text(b, col)


def _instant(b: _Bill, col: str) -> str:
    """SQL text of an instant, ``Z`` added to a date and time without an offset (FOCUS is UTC)."""
    t = b.types[col]
    if t.startswith("TIMESTAMP") and "TIME ZONE" not in t:
        return f"strftime({q(col)}, '%Y-%m-%dT%H:%M:%S.%fZ')"
    x = _text(b, col)
    return f"(CASE WHEN regexp_matches({x}, {lit(_NAIVE)}) THEN trim({x}) || 'Z' ELSE {x} END)"


def _json(b: _Bill, col: str, *, parse_text: bool) -> str:
    """SQL JSON of a column: a MAP or STRUCT as its JSON; text holding a JSON object or list parsed
    (`parse_text`) and minified, other text as a JSON string; blank as NULL."""
    x, t = q(col), b.types[col]
    if t != "VARCHAR":
        return f"to_json({x})"
    parsed = (f"WHEN json_valid({x}) AND regexp_matches({x}, '^\\s*[\\[{{]') THEN json({x}) " if parse_text else "")
    return f"(CASE WHEN {x} IS NULL OR trim({x}) = '' THEN NULL::JSON {parsed}ELSE to_json({x}) END)"


def _columns(b: _Bill) -> dict[str, str]:
    """``{ledger column: SQL text over the bill row}`` for the columns this file has."""
    out: dict[str, str] = {}
    for focus, col in FOCUS_COLUMNS.items():
        if focus not in b.types:
            continue
        if col in MONEY:
            out[col] = _money(b, focus)
        elif col in QUANTITIES:
            out[col] = _quantity(b, focus)
        elif col in INSTANTS:
            out[col] = _instant(b, focus)
        elif col == "tags":
            x = q(focus)
            out[col] = (f"CAST(to_json({x}) AS VARCHAR)" if b.types[focus] != "VARCHAR" else
                        f"(CASE WHEN json_valid({x}) THEN CAST(json({x}) AS VARCHAR) ELSE {x} END)")
        else:
            out[col] = _text(b, focus)
    for col, names in FIRST_OF.items():
        present = [_text(b, c) for c in names if c in b.types]
        if present:
            firsts = [f"nullif({p}, '')" for p in present[:-1]]
            out[col] = f"coalesce({', '.join([*firsts, present[-1]])})" if firsts else present[0]
    extras = [c for c in b.types if c.lower().startswith(EXTRA_PREFIX)]  # X_SERVICECODE of an upper-case export
    if extras:
        pairs = ", ".join(f"{lit(c)}, {_json(b, c, parse_text=True)}" for c in extras)
        out["extras"] = f"CAST(json_object({pairs}) AS VARCHAR)"
    return out


#: The columns of the row digest, in its order (every one, a column the file lacks as missing).
DIGEST_COLUMNS = (*FOCUS_COLUMNS.values(), *FIRST_OF, "extras")
_SPEC = {c.name: c for c in facts.KINDS["bill"].columns}


def _normal(col: str, text: str) -> str:
    """SQL: a converted value as it goes into the row digest, normalized as the ingest stores it
    (ledger.ingest.checks.typed), so that one stored row has one id whatever file shape brought it:
    money and instants as their value; a quantity (already plain) as the DECIMAL(38,12) text it was
    digested as before quantities were text, when it has at most 12 places; an optional text
    column's empty value as missing (an empty value of an optional column is stored as NULL)."""
    spec = _SPEC[col]
    if not spec.required and spec.default == "NULL":
        text = f"nullif({text}, '')"
    if col in MONEY:
        return f"coalesce(CAST(TRY_CAST(trim({text}) AS DECIMAL(38,12)) AS VARCHAR), {text})"
    if col in QUANTITIES:
        places = f"length(split_part({text}, '.', 2))"
        return (f"coalesce(CASE WHEN {places} <= {_DIGEST_PLACES} THEN CAST(TRY_CAST({text} AS DECIMAL(38,12)) AS "
                f"VARCHAR) END, {text})")
    if col in INSTANTS:
        return f"coalesce(CAST(epoch_us(TRY_CAST(trim({text}) AS TIMESTAMPTZ)) AS VARCHAR), {text})"
    return text


def _convert(con, b: _Bill, out: Path, i: int) -> None:
    """Write the ledger-format file `out` (rows in file order, every column as text for the ingest
    to judge), with each row's `line_id` (see the module)."""
    cols = _columns(b)
    select = ", ".join(f"{expr} AS {q(c)}" for c, expr in cols.items())
    plain = [c for c in QUANTITIES if c in cols]  # made plain on the column, so its SQL is not repeated
    if plain:
        made = ", ".join(f"{decimal_text_sql(q(c))} AS {q(c)}" for c in plain)
        select = f"* REPLACE ({made}) FROM (SELECT _line, {select} FROM ({b.relation}))"
    else:
        select = f"_line, {select} FROM ({b.relation})"
    digest = " || chr(31) || ".join(f"coalesce({_normal(c, q(c))}, {lit(_NULL)})" if c in cols else lit(_NULL)
                                    for c in DIGEST_COLUMNS)
    t = f"_c{i}"
    con.execute(f"CREATE TEMP TABLE {t} AS SELECT _line, *, sha256({digest}) AS _digest FROM (SELECT {select})")
    names = ", ".join(f"c.{q(c)}" for c in cols)
    con.execute(f"COPY (SELECT left(c._digest, 32) || '-' || CAST(row_number() OVER (PARTITION BY c._digest "
                f"ORDER BY c._line) + coalesce(s.n, 0) AS VARCHAR) AS line_id, {names} FROM {t} c "
                f"LEFT JOIN _seen s ON s._digest = c._digest ORDER BY c._line) TO {lit(str(out))} ({PARQUET_OPTIONS})")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _seen AS SELECT _digest, sum(n) AS n FROM (SELECT _digest, n FROM _seen "
                f"UNION ALL SELECT _digest, count(*) FROM {t} GROUP BY _digest) GROUP BY _digest")
    b.rows = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
    con.execute(f"DROP TABLE {t}")


_LEDGER_NAMES = sorted({*FOCUS_COLUMNS.values(), *FIRST_OF}, key=len, reverse=True)


def _translate(e: IngestError, converted: list[Path], bills: list[_Bill]) -> IngestError:
    """The plain ingest's problems about the converted files, told of the bill files: file, line
    (the converted file's row n is the bill's record n), FOCUS column and FOCUS names in the message."""
    index = {str(c): i for i, c in enumerate(converted)}

    def relabel(text: str | None, b: _Bill | None) -> str | None:
        if not text:
            return text
        for conv, i in index.items():
            text = text.replace(conv, bills[i].label)
        if b is not None:
            text = re.sub(r"\b(" + "|".join(map(re.escape, _LEDGER_NAMES)) + r")\b", lambda m: b.source_of(m[1]), text)
        return text

    wanted: dict[int, list[int]] = {}
    for p in e.problems:
        i = index.get(p.file)
        if i is not None and p.line is not None and bills[i].fmt == "csv":
            wanted.setdefault(i, []).append(int(p.line) + 1)
    lines = {i: physical_lines(OpenFile(path=bills[i].path, label=bills[i].label, fmt="csv",
                                        read_path=bills[i].read_path or bills[i].path), bills[i].rows, ns)
             for i, ns in wanted.items()}
    out = []
    for p in e.problems:
        i = index.get(p.file)
        b = bills[i] if i is not None else None
        line = p.line
        if b is not None and line is not None and b.fmt == "csv":
            line = lines[i].get(int(line) + 1, int(line) + 1)
        column = b.source_of(p.entry) if b is not None and p.entry else p.entry
        out.append(Problem(file=relabel(p.file, None), line=line, entry=column, message=relabel(p.message, b)))
    return IngestError(out, e.total)
