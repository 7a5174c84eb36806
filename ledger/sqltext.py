"""Text spliced into SQL, quoted one way for every engine the ledger speaks to (DuckDB, Spark SQL,
SQLite, PostgreSQL): :func:`quote_ident` for a name, :func:`literal` for a string (the plain text of
a decimal number is :func:`ledger.money.decimal_text_sql`). Below every stage: it imports nothing
of the ledger."""
from __future__ import annotations


def quote_ident(name: str) -> str:
    """A SQL identifier: `name` in double quotes, a double quote in it doubled (``a"b`` -> ``"a""b"``)."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """A SQL string literal: `text` in single quotes, a single quote in it doubled (``it's`` -> ``'it''s'``)."""
    return "'" + text.replace("'", "''") + "'"
