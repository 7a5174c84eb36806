"""The fast pass over CSV: the columns that name things read as DuckDB ENUMs.

DuckDB's Parquet writer spends most of its time on text columns: each value is hashed into the
column chunk's dictionary and compared into its min/max statistics. The columns that name
things (tenant, product, model, pool, status, ...) hold a handful of distinct values in
millions of rows; read as an ENUM, each value is looked up once while parsing and written as
its index, which halves the cost of the whole pass on a large file. An ENUM needs its values in
advance: they come from what the ledger knows (registered tenants and products, pools, the price
books' meters, SKUs and regions, the fixed statuses, outcomes, roles and categories) and a sample
of the file. A value outside them is not an error: the fast pass stops at it and the careful pass
(every name read as text) reads the file again and judges every value. The sample is a guess
that can cost time, never a different answer.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import sqlalchemy as sa

from .. import facts
from ..schema import POOL, PRICE_ENTRY
from ..sqltext import literal as lit, quote_ident as q

SAMPLE_WINDOWS = 16  # spread over the file
SAMPLE_BYTES = 1 << 17  # per window; a file up to 16 x 128 KiB is read whole
MAX_SAMPLED_VALUES = 1000  # a column showing more distinct values than this in the sample stays text
MAX_ENUM_VALUES = 60000
FIXED_VALUES = {("requests", "status"): facts.REQUEST_STATUSES, ("requests", "service_tier"): facts.SERVICE_TIERS,
                ("outcomes", "outcome"): facts.OUTCOMES,
                ("fleet", "role"): facts.FLEET_ROLES, ("charges", "category"): facts.CHARGE_CATEGORIES}


def expected_names(s, known: dict[str, set[str]]) -> dict[str, set[str]]:
    """Names the ledger knows, by column: registered tenants and products, pools, and the meters,
    SKUs (models, devices) and regions of the loaded price books (read through Core: a session or a
    connection `s`)."""
    c = PRICE_ENTRY.c
    entries = list(s.execute(sa.select(c.meter, c.sku, c.region).distinct()))
    skus = {e[1] for e in entries}
    return {**known, "pool": set(s.execute(sa.select(POOL.c.name)).scalars()), "model": skus, "sku": skus, "device": skus,
            "meter": {e[0] for e in entries}, "region": {e[2] for e in entries} - {"*"}}


def domains(kind: str, path: Path, columns: list[str], known: dict[str, set[str]]) -> dict[str, list[str]]:
    """The ENUM members for each name column of a CSV file's fast pass ({} when there is none):
    `columns` are the file's header names."""
    cats = [c for c in facts.KINDS[kind].categories if c in columns]
    sampled = sample_rows(path, len(columns)) if cats else None
    if not sampled:
        return {}
    out = {}
    for c in cats:
        fixed = FIXED_VALUES.get((kind, c))
        if fixed:
            out[c] = list(fixed)
            continue
        i = columns.index(c)
        seen = {r[i] for r in sampled} - {""}
        if not seen or len(seen) > MAX_SAMPLED_VALUES:
            continue
        domain = seen | known.get(c, set())
        if len(domain) <= MAX_ENUM_VALUES:
            out[c] = sorted(domain)
    return out


def sample_rows(path: Path, width: int) -> list[list[str]]:
    """Rows of `width` fields from windows spread over a CSV file (the whole file when it is
    small); lines cut by a window's edge, or misread because a window began inside a quoted
    field, are dropped or add a value that is never used. [] when nothing can be read."""
    size = path.stat().st_size
    if size <= SAMPLE_WINDOWS * SAMPLE_BYTES:
        starts, length = [0], size
    else:
        starts, length = [size * k // SAMPLE_WINDOWS for k in range(SAMPLE_WINDOWS)], SAMPLE_BYTES
    rows = []
    try:
        with path.open("rb") as fh:
            for start in starts:
                fh.seek(start)
                chunk = fh.read(length)
                first = chunk.find(b"\n")  # window 0: skip the header; others: skip a partial line
                end = len(chunk) if start + len(chunk) >= size else chunk.rfind(b"\n") + 1
                if first < 0 or end <= first:
                    continue
                text = chunk[first + 1:end].decode("utf-8", "replace")
                rows += [r for r in csv.reader(io.StringIO(text, newline="")) if len(r) == width]
    except (OSError, csv.Error):  # e.g. a field over the csv module's limit: no fast pass
        return []
    return rows


def create_enums(con, prefix: str, members: dict[str, list[str]]) -> dict[str, str]:
    """Create one ENUM type per column on `con`; returns {column: type name}."""
    names = {c: f"{prefix}_{c}" for c in members}
    for c, values in members.items():
        con.execute(f"CREATE TYPE {q(names[c])} AS ENUM ({', '.join(lit(v) for v in values)})")
    return names
