"""The one rule for names, shared by every store (SQLite, PostgreSQL) and every way a name comes in.

A *name* is any text that identifies something the ledger keeps or reports: tenants, products,
models, pools, providers, regions, devices, purchase options, meters, SKUs, units, criteria and
the ids of rows (request, event, task, interval and charge ids). The rule is the same everywhere,
so a file SQLite accepts is a file PostgreSQL accepts:

- at most :data:`MAX_NAME` (200) characters (PostgreSQL's ``VARCHAR(200)`` counts characters, not
  bytes; SQLite does not enforce a length at all, which is why the ledger checks it itself);
- no control characters: no NUL (PostgreSQL cannot store it in text at all), no tab, CR or line
  feed (they break CSV rows and hide formulas), nothing else of Unicode's C0 and C1 ranges or DEL;
- no white space around it, and not empty (checked where names are read: ingest, dims, price books).

:func:`name_problem` checks one value in Python; :func:`sql_name_bad` and :func:`sql_name_problem`
are the same rule as SQL over a column, for the ingest's vectorized checks.
"""
from __future__ import annotations

import re

MAX_NAME = 200

#: C0 controls (NUL, tab, LF, CR, ...), DEL and the C1 controls.
CONTROL_CLASS = "[\\x00-\\x1f\\x7f-\\x9f]"
_CONTROL = re.compile(CONTROL_CLASS)


def describe_control(ch: str) -> str:
    """A control character as people name it: NUL, tab, line feed, carriage return, or U+XXXX."""
    return {"\x00": "a NUL byte", "\t": "a tab", "\n": "a line break (LF)", "\r": "a carriage return (CR)"}.get(
        ch, f"the control character U+{ord(ch):04X}")


def name_problem(value: str, *, max_length: int = MAX_NAME) -> str | None:
    """What is wrong with `value` as a name, in plain words, or None when it is a good name."""
    if not isinstance(value, str):
        return f"is {type(value).__name__}, not text"
    if value == "" or not value.strip():
        return "is empty"
    p = _unstorable(value)
    if p:
        return p
    if value != value.strip():
        return "has white space around it"
    if len(value) > max_length:
        return f"is {len(value)} characters long (at most {max_length})"
    return None


def text_problem(value: str, *, max_length: int = MAX_NAME) -> str | None:
    """What stops free text (a display name, an owner) from being stored the same on every store:
    a control character, a lone surrogate, more than `max_length` characters. Empty text is fine."""
    if not isinstance(value, str):
        return f"is {type(value).__name__}, not text"
    p = _unstorable(value)
    if p:
        return p
    if len(value) > max_length:
        return f"is {len(value)} characters long (at most {max_length})"
    return None


def _unstorable(value: str) -> str | None:
    """A control character (breaks rows, PostgreSQL refuses NUL) or a lone surrogate (bytes that were
    not UTF-8, e.g. in argv: no database can encode it)."""
    m = _CONTROL.search(value)
    if m:
        return f"contains {describe_control(m.group())} (at character {m.start() + 1})"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        return (f"is not valid Unicode: a lone surrogate U+{ord(value[e.start]):04X} at character {e.start + 1} "
                "(bytes that were not UTF-8)")
    return None


def unsafe(value: str, *, max_length: int = MAX_NAME) -> bool:
    """True when `value` breaks the rule :func:`sql_name_bad` checks (length, control characters)."""
    return len(value) > max_length or bool(_CONTROL.search(value))


def sql_name_bad(col: str, *, max_length: int = MAX_NAME) -> str:
    """SQL (DuckDB) true when the text column `col` (already quoted) breaks the length or control
    character rule. Emptiness and white space are judged by the callers' own checks."""
    return f"(length({col}) > {max_length} OR regexp_matches({col}, '{CONTROL_CLASS}'))"


def sql_name_problem(col: str, *, max_length: int = MAX_NAME) -> str:
    """SQL (DuckDB) message for a value that :func:`sql_name_bad` flags."""
    return (f"(CASE WHEN regexp_matches({col}, '{CONTROL_CLASS}') "
            f"THEN 'contains a control character (NUL, tab, line break or another)' "
            f"ELSE 'is ' || length({col}) || ' characters long (at most {max_length})' END)")
