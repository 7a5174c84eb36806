"""The one read of a staged file (`ingest.rows._summary`): its counts, months and the distinct names
stage 3 judges, read with one GROUP BY GROUPING SETS rather than a DISTINCT aggregate per column,
which said the same and cost most of a small batch's summary (docs/scale.md, "Startup")."""
from __future__ import annotations

import duckdb
import pytest

from ledger import facts
from ledger.ingest.rows import _distinct_columns, _summary
from ledger.sqltext import literal, quote_ident as q

NAMES = ["acme", "globex", "", " spaced ", "o'brien", "naïve", "a,b", "NULL", "x" * 300]


def _staged(con, path, kind: str, rows: int, seed: int) -> None:
    """A staged file of `kind`: each name column a value of NAMES or NULL, drawn per row and column by
    a hash of (seed, column, row); the other columns NULL but the instants (an hour apart); `_bad` on
    every third row."""
    spec = facts.KINDS[kind]
    cols = []
    for k, c in enumerate(spec.columns):
        if c.name in spec.categories:
            cols.append(f"$names[1 + (hash({seed}, {k}, i) % {len(NAMES) + 1})::BIGINT] AS {q(c.name)}")
        elif c.type == "TIMESTAMPTZ":
            cols.append(f"TIMESTAMPTZ '2026-10-01 00:00:00+00' + to_hours(i) AS {q(c.name)}")
        else:
            cols.append(f"CAST(NULL AS {c.type}) AS {q(c.name)}")
    con.execute(f"COPY (SELECT {', '.join(cols)}, i % 3 = 0 AS _bad FROM range({rows}) r(i)) "
                f"TO {literal(str(path))} (FORMAT parquet)", {"names": [*NAMES, None]})


@pytest.mark.parametrize("kind", list(facts.KINDS))
@pytest.mark.parametrize("rows", [0, 1, 40])
def test_the_summary_lists_each_columns_distinct_names_as_list_distinct_does(tmp_path, kind, rows):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    path = tmp_path / "0.parquet"
    _staged(con, path, kind, rows, seed=rows)
    n, bad, values, months = _summary(con, kind, path)
    assert n == rows and bad == len([i for i in range(rows) if i % 3 == 0])
    dist = _distinct_columns(kind)
    lists = ", ".join(f"list(DISTINCT {q(c)}::VARCHAR) FILTER (WHERE {q(c)} IS NOT NULL)" for c in dist)
    plain = con.execute(f"SELECT {lists} FROM read_parquet({literal(str(path))})").fetchone()
    assert values == {c: sorted(v or []) for c, v in zip(dist, plain)}
    assert bool(months) == bool(rows > bad)
