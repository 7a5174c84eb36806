"""Test support for the allocation engine: DuckDB facts and price books built from text.

`facts_con(requests=CSV, fleet=CSV, ...)` gives a connection with the relations the engine reads
(``requests, meters, outcomes, fleet, charges``), each with the columns and types of
:mod:`ledger.facts` plus ``booked_at`` (the row's dating column unless given). The few tests at
the bottom check the helper itself, so that a typo in a test's CSV can never become a silent NULL.
"""
from __future__ import annotations

import io
import textwrap
from datetime import datetime, timezone

import duckdb
import pandas as pd
import pytest

from ledger.allocate import Policy, allocate
from ledger.facts import BOOKKEEPING, KINDS, empty_select
from ledger.pricebook import PriceIndex, parse_book

BOOKED_BY = {"requests": "occurred_at", "meters": "occurred_at", "outcomes": "decided_at"}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(textwrap.dedent(text).strip()), dtype=str, keep_default_na=False,
                       na_values=[""], skipinitialspace=True)


def facts_con(**texts: str | pd.DataFrame) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose relations hold the given facts (CSV text or a frame of strings)."""
    unknown = set(texts) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown fact kinds {sorted(unknown)}")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for kind, spec in KINDS.items():
        if kind not in texts:
            con.execute(f"CREATE TABLE {kind} AS {empty_select(kind)}")
            continue
        df = texts[kind] if isinstance(texts[kind], pd.DataFrame) else frame(texts[kind])
        extra = set(df.columns) - set(spec.names) - {"booked_at"}
        if extra:
            raise ValueError(f"{kind}: unknown columns {sorted(extra)}")
        missing = [c.name for c in spec.columns if c.required and c.name not in df.columns]
        if missing:
            raise ValueError(f"{kind}: missing required columns {missing}")
        con.register("_src", df)
        cols = []
        for c in spec.columns:
            src = f'CAST("{c.name}" AS {c.type})' if c.name in df.columns else f"CAST({c.default} AS {c.type})"
            cols.append(f'{src} AS "{c.name}"')
        dated = BOOKED_BY.get(kind)
        booked = "booked_at" if "booked_at" in df.columns else (f'"{dated}"' if dated else "NULL")
        cols.append(f"CAST({booked} AS TIMESTAMPTZ) AS booked_at")
        cols += [f"CAST(NULL AS {t}) AS \"{n}\"" for n, t in BOOKKEEPING if n != "booked_at"]
        con.execute(f"CREATE TABLE {kind} AS SELECT {', '.join(cols)} FROM _src")
        con.unregister("_src")
    return con


def index(*books: str) -> PriceIndex:
    """A PriceIndex of TOML book texts (each must validate)."""
    parsed = []
    for i, text in enumerate(books):
        book, problems = parse_book(textwrap.dedent(text), f"book{i}.toml")
        assert not problems, problems
        parsed.append(book)
    return PriceIndex(parsed)


def run(books: PriceIndex, start: str, end: str, policy: Policy = Policy(), **facts: str):
    return allocate(facts_con(**facts), start=utc(start), end=utc(end), prices=books, policy=policy)


# ---- the helper itself --------------------------------------------------------------------------

def test_facts_con_types_columns_and_books_rows():
    con = facts_con(requests="""
        request_id,occurred_at,tenant,product,model,pool,input_tokens,output_tokens,status,latency_ms
        r1,2026-10-01T10:15:00Z,a,chat,m,p1,100,20,ok,1500.5
    """)
    row = con.execute("SELECT input_tokens + output_tokens, cached_input_tokens, provider, latency_ms, "
                      "booked_at = occurred_at, typeof(booked_at) FROM requests").fetchone()
    assert row == (120, 0, None, 1500.5, True, "TIMESTAMP WITH TIME ZONE")
    assert con.execute("SELECT count(*) FROM fleet").fetchone() == (0,)


def test_facts_con_refuses_unknown_and_missing_columns():
    with pytest.raises(ValueError, match="unknown columns"):
        facts_con(meters="event_id,occured_at\ne1,2026-10-01T00:00:00Z")
    with pytest.raises(ValueError, match="missing required"):
        facts_con(outcomes="task_id,tenant\nt1,a")


# A small book for end-to-end tests: H100 on-demand at $3.60 per GPU-hour in us-east-1, and
# gpt-5 tokens at $1.25 / $0.125 (cached) / $10 per 1M.
TEST_BOOK = """
[book]
name = "test-book"
version = "2026-10-01"
currency = "USD"
source = "test"
retrieved_at = 2026-10-01

[[price]]
meter = "gpu_time"
sku = "H100"
region = "us-east-1"
purchase_option = "on_demand"
price = "3.60"
per = "gpu * hour"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/h100"

[[price]]
meter = "input_tokens"
sku = "gpt-5"
price = "1.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5"

[[price]]
meter = "cached_input_tokens"
sku = "gpt-5"
price = "0.125"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5"

[[price]]
meter = "output_tokens"
sku = "gpt-5"
price = "10"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5"
"""
