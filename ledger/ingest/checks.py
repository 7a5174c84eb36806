"""Per-kind row checks as SQL over read-typed columns: each check is (column, bad-condition, message).

Files are read with each column in a *read type*: text for strings and timestamps (so a missing
UTC offset can be seen), DOUBLE for whole numbers and latencies (so 1.5 tokens is caught, never
rounded; whole numbers are exact up to 2**53), DECIMAL(38,12) for decimals (quantities, amounts). CSV is parsed by DuckDB straight into those types, and a
value that does not parse is a reject with its line and column; JSON Lines and Parquet are read
as text and cast, and a failed cast is a check of its own. The checks below then judge ranges,
enums and cross-column rules on the typed values, in one vectorized pass.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..facts import CHARGE_CATEGORIES, FLEET_ROLES, KINDS, OUTCOMES, REQUEST_STATUSES, SERVICE_TIERS

OFFSET_RE = r"(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$"
NUM = "DECIMAL(38,12)"
EXACT_INT_MAX = 2**53  # the largest whole number a DOUBLE holds exactly


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def read_type(kind: str, col: str) -> str:
    """The type a column is read as (before the checks): VARCHAR, DECIMAL(38,12) or DOUBLE."""
    t = {c.name: c.type for c in KINDS[kind].columns}[col]
    if t in ("VARCHAR", "TIMESTAMPTZ"):
        return "VARCHAR"
    if t in ("DOUBLE", "BIGINT"):  # whole numbers as DOUBLE: 1.5 stays 1.5 (BIGINT would round it)
        return "DOUBLE"
    return NUM


def cast_flag(col: str) -> str:
    """Name of the flag column that is true when a text value did not cast to its read type."""
    return f"{col}__castfail"


_NUMERIC = {c.name for k in KINDS.values() for c in k.columns if c.type not in ("VARCHAR", "TIMESTAMPTZ")}


def said(col: str, text: str) -> str:
    """SQL message: the value shown, then `text` (plain words, may contain quotes)."""
    return f"{show(col)} || {lit(' ' + text)}"


def show(col: str) -> str:
    """SQL rendering a value for a message: quoted, cut at 60 characters."""
    c = f"CAST({q(col)} AS VARCHAR)"
    if col in _NUMERIC:  # DECIMAL(38,12) prints 12 places: show the number as written
        c = f"(CASE WHEN contains({c}, '.') THEN rtrim(rtrim({c}, '0'), '.') ELSE {c} END)"
    return f"'''' || (CASE WHEN length({c}) > 60 THEN left({c}, 57) || '...' ELSE {c} END) || ''''"


@dataclass(frozen=True)
class Check:
    """A row check: `column` it concerns, `bad` SQL condition, `message` SQL expression."""

    column: str
    bad: str
    message: str


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
    """SQL converting a read-typed column to its fact type (default when blank)."""
    spec = {c.name: c for c in KINDS[kind].columns}[col]
    c = q(col)
    if spec.type == "VARCHAR":
        if spec.required or (col in valid and spec.default == "NULL"):
            return c
        return f"(CASE WHEN {blank(col, valid)} THEN {spec.default} ELSE {c} END)"
    if spec.type == "TIMESTAMPTZ":  # TRY_CAST, as in the check: DuckDB then parses each value once
        return f"TRY_CAST({c} AS TIMESTAMPTZ)"
    return f"CAST(coalesce({c}, {spec.default}) AS {spec.type})"


def _required(c: str, valid: frozenset[str] = frozenset()) -> Check:
    return Check(c, blank(c, valid), "'required value is missing'")


def _timestamp(c: str, required: bool = True, valid: frozenset[str] = frozenset()) -> list[Check]:
    x = q(c)
    if c in valid:  # an instant read from a typed column (with its time zone): only missing is wrong
        return [_required(c, valid)] if required else []
    present = f"NOT {blank(c)}"
    out = [_required(c)] if required else []
    out += [
        # CASE, not OR: the regular expression runs only for values that do not end in Z.
        Check(c, f"{present} AND (CASE WHEN ends_with({x}, 'Z') THEN false "
                 f"ELSE NOT regexp_matches(trim({x}), {lit(OFFSET_RE)}) END)",
              said(c, "has no UTC offset (naive timestamp); write e.g. 2026-10-01T12:00:00Z")),
        Check(c, f"{present} AND TRY_CAST({x} AS TIMESTAMPTZ) IS NULL", said(c, "is not an ISO 8601 timestamp")),
    ]
    return out


def _int(c: str, required: bool, minimum: int = 0) -> list[Check]:
    x = q(c)
    out = [_required(c)] if required else []
    out += [
        Check(c, f"{x} < {minimum}", said(c, "is negative") if minimum == 0 else said(c, f"must be at least {minimum}")),
        Check(c, f"{x} <> floor({x})", said(c, "is not a whole number")),
        Check(c, f"{x} > {EXACT_INT_MAX}", said(c, f"is too large (more than {EXACT_INT_MAX})")),
    ]
    return out


def _decimal(c: str, required: bool, scale: int) -> list[Check]:
    x = q(c)
    out = [_required(c)] if required else []
    out += [
        Check(c, f"{x} < 0", said(c, "is negative")),
        Check(c, f"{x} <> round({x}, {scale})", said(c, f"has more than {scale} decimal places")),
        Check(c, f"abs({x}) >= 1e{38 - scale - 1}", said(c, "is too large")),
    ]
    return out


def _number(c: str) -> list[Check]:
    x = q(c)
    return [Check(c, f"({x} < 0 OR NOT isfinite({x}))", said(c, "must be a finite number >= 0"))]


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
    return Check(small, f"{s} > {b} AND {b} >= 0", f"'{small} ' || CAST({s} AS BIGINT) || ' is more than {big} ' || CAST({b} AS BIGINT)")


#: Cached reads and both kinds of cache writes are disjoint parts of a request's input tokens.
INPUT_PARTS = ("cached_input_tokens", "cache_write_input_tokens", "cache_write_1h_input_tokens")


def _input_parts() -> list[Check]:
    """cached + 5-minute writes + 1-hour writes <= input, one problem per row: on the 5-minute writes
    column when the row has some, else on the 1-hour writes column (cached > input alone is the
    cached column's own check). Rows where a part is negative or input is missing are judged by
    those checks, not this one (a fractional or negative count is its own problem)."""
    parts = [f"coalesce({q(c)}, 0)" for c in INPUT_PARTS]
    total = " + ".join(parts)
    inp = q("input_tokens")
    sane = " AND ".join(f"{x} >= 0 AND {x} = floor({x})" for x in (inp, *parts))
    over = f"{total} > {inp} AND {sane} AND {parts[0]} <= {inp}"  # rarely true first: the rest is seldom evaluated
    msg = ("'" + " + ".join(f"{c} ' || CAST({p} AS BIGINT) || '" for c, p in zip(INPUT_PARTS, parts))
           + f" = ' || CAST({total} AS BIGINT) || ' is more than input_tokens ' || CAST({inp} AS BIGINT) || "
           "' (cached reads and cache writes are disjoint parts of the input)'")
    w5, w1h = parts[1], parts[2]
    return [Check("cache_write_input_tokens", f"{over} AND {w5} > 0", msg),
            Check("cache_write_1h_input_tokens", f"{over} AND {w5} = 0 AND {w1h} > 0", msg)]


def _ts_order(start: str, end: str) -> Check:
    return Check(end, f"TRY_CAST({q(end)} AS TIMESTAMPTZ) <= TRY_CAST({q(start)} AS TIMESTAMPTZ)",
                 f"'{end} ' || trim({q(end)}) || ' is not after {start} ' || trim({q(start)})")


def cast_checks(kind: str) -> list[Check]:
    """For text-read formats (JSON Lines, Parquet): a value that is not a number where one is needed."""
    out = []
    for c in KINDS[kind].columns:
        if read_type(kind, c.name) != "VARCHAR":
            what = "a number" if read_type(kind, c.name) == "DOUBLE" else "a decimal number"
            out.append(Check(c.name, q(cast_flag(c.name)), f"'''' || {q(c.name + '__text')} || ''' is not {what}'"))
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
               *_enum("status", REQUEST_STATUSES, valid), *_number("ttft_ms"), *_number("latency_ms")]
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
               Check("allocate", f"NOT {b('allocate')} AND {q('allocate')} NOT IN ('even', 'by_cost', 'by_tokens', "
                     f"'none') AND NOT (starts_with({q('allocate')}, 'tenant:') AND length({q('allocate')}) > 7)",
                     said("allocate", "is not one of even, by_cost, by_tokens, none, tenant:<name>"))]
    else:
        raise KeyError(kind)
    return out
