"""Per-kind row checks as SQL over read-typed columns: each check is (column, bad-condition, message).

Every value is judged as it is written, never after a lossy conversion:

- whole numbers (token counts, GPUs) are read as text and must be digits (``12``, or ``12.0`` as
  pandas writes a column with gaps); they are then exact integers (BIGINT), so ``1.5``,
  ``1e-400``, ``NaN`` and ``2**63`` are refused, and anything above 2**53 is refused as too large
  (every reader of the facts, DuckDB, pandas and JSON, holds whole numbers up to 2**53 exactly);
- decimals (quantities, amounts) are read as text, their decimal places counted on the text
  (``1.5e-10`` has 10), and then cast to DECIMAL(38,12): more places than the store keeps are
  refused, never rounded;
- latencies are DOUBLE measurements: finite, >= 0 and at most a week;
- instants are text in the full ISO 8601 form with a real UTC offset (-14:00 to +14:00), between
  the years 1900 and 9998 (a date alone, ``2026-10-15``, is not an instant);
- names (text columns) follow :mod:`ledger.names`: at most 200 characters, no control characters.

CSV is parsed by DuckDB into those read types (only latencies as DOUBLE; a value that does not
parse is a reject with its line and column); every other text-read value is cast in SQL with a
``<col>__castfail`` flag of its own. The checks below then judge ranges, enums and cross-column
rules on the typed values, in one vectorized pass.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..facts import (BILL_CHARGE_CATEGORIES, BILL_CHARGE_CLASSES, CHARGE_CATEGORIES, FLEET_ROLES, KINDS, OUTCOMES,
                     REQUEST_STATUSES, SERVICE_TIERS)
from ..money import MAX_DECIMAL_EXPONENT

from ..names import CONTROL_CLASS, MAX_NAME, sql_name_bad, sql_name_problem
from ..sqltext import literal as lit, quote_ident as q
from ..vocab import TENANT_RULE, ChargeRule

#: An instant as ISO 8601 writes it: date, time (seconds and fraction optional), UTC offset.
INSTANT_RE = (r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?"
              r"(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)")
OFFSET_RE = r"(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$"
MAX_OFFSET_MINUTES = 14 * 60  # the widest offset in use (Kiribati, +14:00)
FIRST_INSTANT, END_INSTANT = "1900-01-01 00:00:00+00", "9999-01-01 00:00:00+00"
NUM = "DECIMAL(38,12)"
WHOLE = "BIGINT"
EXACT_INT_MAX = 2**53  # the largest whole number a DOUBLE (pandas, JSON) holds exactly
MAX_MS = 7 * 24 * 3600 * 1000  # a latency of more than a week is a broken clock, not a request
WHOLE_RE = r"\s*[+-]?[0-9]+(\.0*)?\s*"
DECIMAL_RE = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"


def read_type(kind: str, col: str) -> str:
    """The type a column's value is judged in: VARCHAR (text, instants), BIGINT (whole numbers),
    DECIMAL(38,12) (decimals) or DOUBLE (latencies)."""
    t = {c.name: c.type for c in KINDS[kind].columns}[col]
    if t in ("VARCHAR", "TIMESTAMPTZ"):
        return "VARCHAR"
    if t == "BIGINT":
        return WHOLE
    if t == "DOUBLE":
        return "DOUBLE"
    return NUM


def file_type(kind: str, col: str) -> str:
    """The type DuckDB's CSV reader reads a column in: DOUBLE for latencies, text for the rest
    (whole numbers and decimals are judged on their text, see the module's docstring)."""
    return "DOUBLE" if read_type(kind, col) == "DOUBLE" else "VARCHAR"


def cast_sql(kind: str, col: str, text: str) -> tuple[str, str]:
    """(value, failed) SQL for a column read as text (`text`, quoted): its value in the read type,
    and a flag that is true when the text is present but not a value of that type."""
    rt = read_type(kind, col)
    present = f"({text} IS NOT NULL AND trim({text}) <> '')"
    if rt == WHOLE:
        ok = f"regexp_full_match({text}, {lit(WHOLE_RE)})"  # digits: the cast below cannot round
        # A number that prints back as its own text (digits, no sign but a minus, no leading zero)
        # matches WHOLE_RE: the regular expression is evaluated only for the other values, at half
        # the cost of the pass's conversions (DuckDB computes the repeated cast once).
        cast = f"TRY_CAST({text} AS {WHOLE})"
        plain = f"CAST({cast} AS VARCHAR) = {text}"
        return (f"(CASE WHEN {plain} THEN {cast} WHEN {ok} THEN {cast} END)",
                f"(CASE WHEN {plain} THEN false ELSE ({present} AND NOT {ok}) END)")
    value = f"TRY_CAST(trim({text}) AS {rt})"
    if rt == NUM:
        ok = f"regexp_full_match(trim({text}), {lit(DECIMAL_RE)})"
        return f"(CASE WHEN {ok} THEN {value} END)", f"({present} AND (NOT {ok} OR {value} IS NULL))"
    return value, f"({present} AND {value} IS NULL)"


def places_sql(text: str) -> str:
    """SQL: the decimal places of a number written as text (`text` matches DECIMAL_RE): the digits
    after the point without trailing zeros, less the exponent (``1.50e-9`` has 10, ``1200e-3`` 1)."""
    t = f"lower(trim({text}))"
    mant = f"split_part({t}, 'e', 1)"
    exp = f"coalesce(TRY_CAST(nullif(split_part({t}, 'e', 2), '') AS BIGINT), 0)"
    ip = f"regexp_replace(split_part({mant}, '.', 1), '^[+-]', '')"
    digits = f"rtrim({ip} || split_part({mant}, '.', 2), '0')"
    return f"(length({digits}) - length({ip}) - {exp})"


def cast_flag(col: str) -> str:
    """Name of the flag column that is true when a text value did not cast to its read type."""
    return f"{col}__castfail"


_NUMERIC = {c.name for k in KINDS.values() for c in k.columns if c.type not in ("VARCHAR", "TIMESTAMPTZ")}


def said(col: str, text: str) -> str:
    """SQL message: the value shown, then `text` (plain words, may contain quotes)."""
    return f"{show(col)} || {lit(' ' + text)}"


def said_as_written(col: str, text: str) -> str:
    """SQL message: the value as the file wrote it (its text, when it was read as text), then `text`."""
    t = q(col + "__text")
    return f"(CASE WHEN {t} IS NOT NULL THEN {show(col + '__text')} ELSE {show(col)} END) || {lit(' ' + text)}"


def show(col: str) -> str:
    """SQL rendering a value for a message: quoted, cut at 60 characters, control characters as '?'
    (a message is one line)."""
    c = f"regexp_replace(CAST({q(col)} AS VARCHAR), '{CONTROL_CLASS}', '?', 'g')"
    if col in _NUMERIC:  # DECIMAL(38,12) prints 12 places: show the number as written
        c = f"(CASE WHEN contains({c}, '.') THEN rtrim(rtrim({c}, '0'), '.') ELSE {c} END)"
    return f"'''' || (CASE WHEN length({c}) > 60 THEN left({c}, 57) || '...' ELSE {c} END) || ''''"


@dataclass(frozen=True)
class Check:
    """A row check: `column` it concerns, `bad` SQL condition, `message` SQL expression, and `gate`:
    None, or a cheap SQL condition under which `bad` is certainly not true (a value plainly good:
    a whole number in range, an instant of the common shape in range), so that the pass evaluates
    `bad` only for the rows the gate does not pass (:func:`pass_bad`)."""

    column: str | None
    bad: str
    message: str
    gate: str | None = None


def pass_bad(row_checks: list[Check]) -> str:
    """SQL true for a row that fails any of `row_checks`, else false (never NULL): the same answer as
    ``rows._any_bad``, for the one pass over a file. Checks that share a gate are evaluated as one
    ``CASE WHEN gate THEN false ELSE (their OR) END``: DuckDB evaluates a CASE's branches only for
    the rows that reach them, while every term of a plain OR is computed for every row. On a large
    file nearly every value is plainly good, so the costly parts (regular expressions, text trims,
    HUGEINT sums) run for the few rows that need them."""
    plain: list[str] = []
    gated: dict[str, list[str]] = {}
    for c in row_checks:
        if c.gate is None:
            plain.append(f"({c.bad})")
        else:
            gated.setdefault(c.gate, []).append(f"({c.bad})")
    parts = plain + [f"(CASE WHEN {g} THEN false ELSE ({' OR '.join(bads)}) END)" for g, bads in gated.items()]
    return "coalesce(" + " OR ".join(parts) + ", false)"


def blank(c: str, valid: frozenset[str] = frozenset()) -> str:
    """SQL: the value is missing (NULL or empty). White space around tenant and product names is
    judged on their distinct values instead (see the ingest's value checks): trimming every value
    of every text column costs more than all the other checks together on a large file.

    A column in `valid` was read in a type that admits only valid values (an ENUM of the allowed
    names, an instant from a typed Parquet column): its empty value is NULL (an empty string is never
    an ENUM member), and the plain NULL test costs a tenth of the text test."""
    if c in _NUMERIC or c in valid:
        return f"({q(c)} IS NULL)"
    return f"({q(c)} IS NULL OR {q(c)} = '')"


def typed(kind: str, col: str, valid: frozenset[str] = frozenset()) -> str:
    """SQL converting a read-typed column to its fact type (default when blank). Numbers convert with
    TRY_CAST: a value that does not fit is a refused row already, and must not stop the pass."""
    spec = {c.name: c for c in KINDS[kind].columns}[col]
    c = q(col)
    if spec.type == "VARCHAR":
        if spec.required or (col in valid and spec.default == "NULL"):
            return c
        return f"(CASE WHEN {blank(col, valid)} THEN {spec.default} ELSE {c} END)"
    if spec.type == "TIMESTAMPTZ":  # TRY_CAST, as in the check: DuckDB then parses each value once
        return f"TRY_CAST({c} AS TIMESTAMPTZ)"
    return f"TRY_CAST(coalesce({c}, {spec.default}) AS {spec.type})"


def _required(c: str, valid: frozenset[str] = frozenset(), gate: str | None = None) -> Check:
    if c in _NUMERIC:  # a number read as text that did not cast is its own problem, not a missing one
        t = q(c + "__text")
        return Check(c, f"({q(c)} IS NULL AND ({t} IS NULL OR trim({t}) = ''))", "'required value is missing'", gate)
    return Check(c, blank(c, valid), "'required value is missing'", gate)


_NAIVE_RE = INSTANT_RE[:INSTANT_RE.rindex("(Z|z")]
_OFFSET_PARTS = r"([+-])([0-9]{2}):?([0-9]{2})?$"


def _in_range(c: str) -> Check:
    v = f"TRY_CAST({q(c)} AS TIMESTAMPTZ)"
    return Check(c, f"({v} < TIMESTAMPTZ {lit(FIRST_INSTANT)} OR {v} >= TIMESTAMPTZ {lit(END_INSTANT)})",
                 said(c, "is outside the years 1900 to 9998 (UTC)"))


def _timestamp(c: str, required: bool = True, valid: frozenset[str] = frozenset()) -> list[Check]:
    """An instant as text: one check of its form (naive, not ISO 8601, an offset no place uses), one
    that it exists (no 31 November) and one of its range. The form costs no regular expression in
    the common case (``...T..:..:..Z``); the message, only for bad rows, tells which it is."""
    x = q(c)
    if c in valid:  # an instant read from a typed column (with its time zone): missing or out of range
        return ([_required(c, valid)] if required else []) + [_in_range(c)]
    present = f"NOT {blank(c)}"
    t = f"trim({x})"
    shaped = f"regexp_full_match({t}, {lit(INSTANT_RE)})"
    hours = f"TRY_CAST(regexp_extract({t}, {lit(_OFFSET_PARTS)}, 2) AS INTEGER)"
    minutes = f"coalesce(TRY_CAST(nullif(regexp_extract({t}, {lit(_OFFSET_PARTS)}, 3), '') AS INTEGER), 0)"
    # UTC written as Z or +00:00 (as converters write it) needs no regular expression to be in range
    offset_ok = (f"(ends_with({t}, 'Z') OR ends_with({t}, 'z') OR ends_with({t}, '+00:00') OR "
                 f"({minutes} <= 59 AND {hours} * 60 + {minutes} <= {MAX_OFFSET_MINUTES}))")
    # The common shape without a regular expression: separators where ISO 8601 puts them and a Z;
    # the cast below then judges every digit (a value it cannot read is refused there). LIKE's `_`
    # is one character, as substr counts them: one pattern test instead of seven substrings.
    common = f"{x} LIKE '____-__-__T__:__:%Z' AND strlen({x}) BETWEEN 20 AND 30 AND NOT contains({x}, ' ')"
    good = f"(CASE WHEN {common} THEN true ELSE {shaped} AND {offset_ok} END)"
    v = f"TRY_CAST({x} AS TIMESTAMPTZ)"
    # Plainly good: well formed (so present: the common shape costs no regular expression, another
    # one) and an instant in range (so one that exists): none of the checks below is true, and the
    # form is judged once a row, not once per check.
    gate = f"({good} AND {v} >= TIMESTAMPTZ {lit(FIRST_INSTANT)} AND {v} < TIMESTAMPTZ {lit(END_INSTANT)})"
    message = (f"(CASE WHEN regexp_full_match({t}, {lit(_NAIVE_RE)}) THEN "
               f"{said(c, 'has no UTC offset (naive timestamp); write e.g. 2026-10-01T12:00:00Z')} "
               f"WHEN NOT {shaped} THEN "
               f"{said(c, 'is not an ISO 8601 instant (date, time and UTC offset, e.g. 2026-10-01T12:00:00Z)')} "
               f"ELSE {said(c, 'has a UTC offset that no place uses (offsets run from -14:00 to +14:00)')} END)")
    out = [_required(c, gate=gate)] if required else []
    out += [
        Check(c, f"{present} AND NOT {good}", message, gate),
        Check(c, f"{present} AND {good} AND TRY_CAST({x} AS TIMESTAMPTZ) IS NULL",
              said(c, "is not a date and time that exists"), gate),
        replace(_in_range(c), gate=gate),
    ]
    return out


def _int(c: str, required: bool, minimum: int = 0) -> list[Check]:
    x, t = q(c), q(c + "__text")
    # Plainly good: a whole number in range (when read as text, it matched WHOLE_RE: not a failed
    # cast); an optional one may also be absent, with no text at all.
    in_range = f"{x} BETWEEN {minimum} AND {EXACT_INT_MAX}"
    gate = f"({in_range})" if required else f"({in_range} OR ({x} IS NULL AND {t} IS NULL))"
    out = [_required(c, gate=gate)] if required else []
    out += [
        Check(c, f"{x} < {minimum}", said_as_written(c, "is negative") if minimum == 0 else said_as_written(c, f"must be at least {minimum}"),
              gate),
        # beyond 2^63 the digits do not cast at all: the value is missing though the text is there
        Check(c, f"({x} > {EXACT_INT_MAX} OR ({x} IS NULL AND {t} IS NOT NULL "
                 f"AND NOT {q(cast_flag(c))} AND trim({t}) <> ''))",
              said_as_written(c, f"is too large (at most 2^53 = {EXACT_INT_MAX})"), gate),
    ]
    return out


def _decimal(c: str, required: bool, scale: int, signed: bool = False) -> list[Check]:
    """Decimal places counted on the text as written (a typed Parquet DECIMAL, read without text,
    on its value: its scale is at most 12, so the value is exact). Negative values are refused
    unless `signed` (a bill's credits and corrections)."""
    x, t = q(c), q(c + "__text")
    out = [_required(c)] if required else []
    out += [] if signed else [Check(c, f"{x} < 0", said_as_written(c, "is negative"))]
    # No more places than characters after the point, when there is no exponent: plainly at most `scale`
    few = (f"({t} IS NOT NULL AND NOT contains({t}, 'e') AND NOT contains({t}, 'E') AND "
           f"(strpos({t}, '.') = 0 OR strlen({t}) - strpos({t}, '.') <= {scale}))")
    out += [
        Check(c, f"(CASE WHEN {t} IS NULL THEN {x} <> round({x}, {scale}) ELSE {places_sql(t)} > {scale} END)",
              said_as_written(c, f"has more than {scale} decimal places (the ledger keeps {scale}; it never rounds)"),
              few),
        Check(c, f"abs({x}) >= 1e{38 - scale - 1}", said_as_written(c, "is too large")),
    ]
    return out


def _number(c: str) -> list[Check]:
    x = q(c)
    return [Check(c, f"({x} < 0 OR NOT isfinite({x}) OR {x} > {MAX_MS})",
                  said(c, f"must be a number of milliseconds from 0 to {MAX_MS} (a week)"))]


def _enum(c: str, values: tuple[str, ...], valid: frozenset[str] = frozenset(),
          required: bool = True) -> list[Check]:
    req = [_required(c, valid)] if required else []
    if c in valid:  # read as an ENUM of exactly these values: any other value did not parse
        return req
    allowed = ", ".join(lit(v) for v in values)
    return req + [Check(c, f"NOT {blank(c)} AND {q(c)} NOT IN ({allowed})",
                        said(c, f"is not one of {', '.join(values)}"))]


def _le(small: str, big: str) -> Check:
    s, b = q(small), q(big)
    return Check(small, f"{s} > {b} AND {b} >= 0", f"'{small} ' || CAST({s} AS VARCHAR) || ' is more than {big} ' || CAST({b} AS VARCHAR)")


#: Cached reads and both kinds of cache writes are disjoint parts of a request's input tokens.
INPUT_PARTS = ("cached_input_tokens", "cache_write_input_tokens", "cache_write_1h_input_tokens")


def _input_parts() -> list[Check]:
    """cached + 5-minute writes + 1-hour writes <= input, one problem per row: on the 5-minute writes
    column when the row has some, else on the 1-hour writes column (cached > input alone is the
    cached column's own check). Rows where a part is negative or input is missing are judged by
    those checks, not this one (a fractional or negative count is its own problem)."""
    parts = [f"coalesce({q(c)}, 0)" for c in INPUT_PARTS]
    total = " + ".join(f"{p}::HUGEINT" for p in parts)  # three BIGINTs may overflow one
    inp = q("input_tokens")
    sane = " AND ".join(f"{x} >= 0 AND {x} <= {EXACT_INT_MAX}" for x in (inp, *parts))
    over = f"{total} > {inp} AND {sane} AND {parts[0]} <= {inp}"  # rarely true first: the rest is seldom evaluated
    msg = ("'" + " + ".join(f"{c} ' || CAST({p} AS VARCHAR) || '" for c, p in zip(INPUT_PARTS, parts))
           + f" = ' || CAST({total} AS VARCHAR) || ' is more than input_tokens ' || CAST({inp} AS VARCHAR) || "
           "' (cached reads and cache writes are disjoint parts of the input)'")
    w5, w1h = parts[1], parts[2]
    gate = f"({w5} <= 0 AND {w1h} <= 0)"  # no cache writes (nearly every request): neither check is true
    return [Check("cache_write_input_tokens", f"{over} AND {w5} > 0", msg, gate),
            Check("cache_write_1h_input_tokens", f"{over} AND {w5} = 0 AND {w1h} > 0", msg, gate)]


#: A decimal number in the one plain form a bill's quantity is kept in (ledger.money.decimal_text_sql).
PLAIN_DECIMAL_RE = r"-?[0-9]+(\.[0-9]+)?"


def _decimal_text(c: str) -> list[Check]:
    """A quantity kept as exact decimal text (a bill's ConsumedQuantity): any number of places is
    kept; only text that is not a decimal number, or one written with an exponent too wide to keep as
    plain text, is refused."""
    x = q(c)
    number = f"regexp_full_match(lower(trim({x})), {lit(DECIMAL_RE.replace('[eE]', 'e'))})"
    wide = said(c, f"has an exponent beyond ±{MAX_DECIMAL_EXPONENT}: the ledger keeps a quantity as its plain digits")
    return [Check(c, f"NOT {blank(c)} AND NOT regexp_full_match({x}, {lit(PLAIN_DECIMAL_RE)})",
                  f"(CASE WHEN {number} THEN {wide} ELSE {said(c, 'is not a decimal number')} END)")]


def _json_object(c: str) -> Check:
    """A JSON object written as text (a bill's Tags: ``{"team": "ml"}``), when present."""
    x = q(c)
    return Check(c, f"NOT {blank(c)} AND (CASE WHEN json_valid({x}) THEN json_type({x}) <> 'OBJECT' ELSE true END)",
                 said(c, "is not a JSON object (FOCUS writes tags as {\"key\": \"value\", ...})"))


def _ts_order(start: str, end: str) -> Check:
    return Check(end, f"TRY_CAST({q(end)} AS TIMESTAMPTZ) <= TRY_CAST({q(start)} AS TIMESTAMPTZ)",
                 f"'{end} ' || trim({q(end)}) || ' is not after {start} ' || trim({q(start)})")


def cast_checks(kind: str, fmt: str) -> list[Check]:
    """A value read as text that is not a number of its column's type (CSV reads latencies as DOUBLE
    itself: a bad one is a reject there)."""
    what = {WHOLE: "a whole number", NUM: "a decimal number", "DOUBLE": "a number"}
    out = []
    for c in KINDS[kind].columns:
        rt = read_type(kind, c.name)
        if rt != "VARCHAR" and not (fmt == "csv" and file_type(kind, c.name) != "VARCHAR"):
            out.append(Check(c.name, q(cast_flag(c.name)), f"{show(c.name + '__text')} || ' is not {what[rt]}'"))
    return out


def jsonl_checks(kind: str) -> list[Check]:
    """JSON Lines only: the object's own problems (see opening.jsonl_row_problem) and values of the
    wrong JSON type (an object, a list or true/false where text or a number goes; a fractional
    number where text goes, whose digits DuckDB would rewrite; a whole number is taken as its digits)."""
    out = [Check(None, "_jsonl_problem IS NOT NULL", "_jsonl_problem")]
    kinds = "(CASE {j} WHEN 'OBJECT' THEN 'an object' WHEN 'ARRAY' THEN 'a list' WHEN 'BOOLEAN' THEN 'true/false' " \
            "ELSE 'a number' END)"
    for c in KINDS[kind].columns:
        j = q(c.name + "__jtype")
        text = read_type(kind, c.name) == "VARCHAR"
        wrong = ("'OBJECT', 'ARRAY', 'BOOLEAN', 'DOUBLE'" if text
                 else "'OBJECT', 'ARRAY', 'BOOLEAN'")
        out.append(Check(c.name, f"{j} IN ({wrong})",
                         f"'is ' || {kinds.format(j=j)} || ' in JSON: expected {'text' if text else 'a number'}'"))
    return out


#: Text columns longer than a name may be: free text, a bill's resource ids (an AWS ARN may have
#: 2048 characters), its tags and extras (JSON objects) and its quantity (exact decimal text).
LONG_TEXT = {"description": 1000, "resource_id": 2048, "tags": 65536, "extras": 65536, "consumed_quantity": 1000}


def name_checks(kind: str) -> list[Check]:
    """The name rule for the text columns not judged on their distinct values (ids, descriptions):
    the categories are (see the ingest's value checks)."""
    spec = KINDS[kind]
    out = []
    for c in spec.columns:
        if c.type == "VARCHAR" and c.name not in spec.categories:
            limit = LONG_TEXT.get(c.name, MAX_NAME)
            out.append(Check(c.name, sql_name_bad(q(c.name), max_length=limit),
                             f"{show(c.name)} || ' ' || {sql_name_problem(q(c.name), max_length=limit)}"))
    return out


def checks(kind: str, valid: frozenset[str] = frozenset()) -> list[Check]:
    """The row checks of a kind (DESIGN §3), on read-typed columns; `valid` are the columns read in a
    type that admits only valid values (ENUMs of the allowed names, instants from a typed Parquet
    column): only a missing value needs a check there."""
    def b(c: str) -> str:
        return blank(c, valid)

    def req(c: str) -> Check:
        return _required(c, valid)

    if kind == "requests":
        out = [req("request_id"), *_timestamp("occurred_at", True, valid), req("tenant"), req("product"),
               req("model"),
               Check("pool", f"NOT {b('pool')} AND NOT {b('provider')}",
                     "'pool and provider are both set; a request is served by one of them'"),
               Check("pool", f"{b('pool')} AND {b('provider')}", "'one of pool or provider is required'"),
               *_int("input_tokens", True), *_int("cached_input_tokens", False), *_int("output_tokens", True),
               *_int("cache_write_input_tokens", False), *_int("cache_write_1h_input_tokens", False),
               *_int("reasoning_tokens", False), _le("cached_input_tokens", "input_tokens"), *_input_parts(),
               _le("reasoning_tokens", "output_tokens"), *_enum("service_tier", SERVICE_TIERS, valid, required=False),
               *_enum("status", REQUEST_STATUSES, valid), *_number("ttft_ms"), *_number("latency_ms"),
               *_decimal("reported_cost", False, 12)]
    elif kind == "meters":
        out = [req("event_id"), *_timestamp("occurred_at", True, valid), req("tenant"), req("product"),
               req("meter"), req("sku"), *_decimal("quantity", True, 9), req("unit")]
    elif kind == "outcomes":
        out = [req("task_id"), req("tenant"), req("product"), *_enum("outcome", OUTCOMES, valid),
               *_timestamp("decided_at", True, valid), req("criteria")]
    elif kind == "fleet":
        out = [req("interval_id"), req("pool"), *_timestamp("start", True, valid), *_timestamp("end", True, valid),
               _ts_order("start", "end"), req("device"), *_int("gpus", True, 1), req("region"),
               req("purchase_option"), *_enum("role", FLEET_ROLES, valid),
               *_decimal("capacity_tokens_per_gpu_s", False, 9)]
    elif kind == "charges":
        out = [req("charge_id"), *_timestamp("period_start", True, valid), *_timestamp("period_end", True, valid),
               _ts_order("period_start", "period_end"), *_enum("category", CHARGE_CATEGORIES, valid),
               *_decimal("amount", True, 6), req("currency"), req("allocate"),
               Check("allocate", f"NOT {b('allocate')} AND {q('allocate')} NOT IN ({', '.join(map(lit, ChargeRule))}) "
                     f"AND NOT (starts_with({q('allocate')}, {lit(TENANT_RULE)}) AND length({q('allocate')}) > "
                     f"{len(TENANT_RULE)})",
                     said("allocate", f"is not one of {', '.join([*ChargeRule, TENANT_RULE + '<name>'])}"))]
    elif kind == "bill":
        out = [req("line_id"), *_timestamp("charge_period_start", True, valid),
               *_timestamp("charge_period_end", True, valid), _ts_order("charge_period_start", "charge_period_end"),
               *_timestamp("billing_period_start", False, valid),
               *_enum("charge_category", BILL_CHARGE_CATEGORIES, valid),
               *_enum("charge_class", BILL_CHARGE_CLASSES, valid, required=False), req("provider"),
               req("service_name"), *_decimal_text("consumed_quantity"),
               *_decimal("billed_cost", True, 12, signed=True), *_decimal("effective_cost", True, 12, signed=True),
               *_decimal("list_cost", True, 12, signed=True), req("billing_currency"), _json_object("tags")]
    else:
        raise KeyError(kind)
    return out + name_checks(kind)
