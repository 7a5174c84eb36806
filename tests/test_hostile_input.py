"""Hostile input: every refusal names file, line and column, nothing is lost, rounded or crashed on,
and the ledger is unchanged. Runs on SQLite and on PostgreSQL (LEDGER_TEST_DATABASE_URL).

The cases are our own corpus by class (issue 14): rows lost or values changed, tracebacks and
lines without a place, what the contract refuses, names both stores accept, closed periods and
the scale of refusals. A hypothesis test at the end plants random bad values among good rows.
"""
from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.cli import app

pytestmark = pytest.mark.store
runner = CliRunner()

REQ = "request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status"
FLEET = "interval_id,pool,start,end,device,gpus,region,purchase_option,role"


def row(i: int, *, at: str = "2026-10-01T00:00:00Z", tenant: str = "acme", model: str = "m",
        tokens: str = "10", status: str = "ok") -> str:
    return f"r{i},{at},{tenant},chat,{model},p,,t{i},{tokens},0,5,{status}"


def run(*args: str):
    return runner.invoke(app, list(args))


def register(*tenants: str) -> None:
    with store.session() as s:
        for t in tenants:
            store.add_dim(s, kind="tenant", name=t)
        store.add_dim(s, kind="product", name="chat")
        s.commit()


def state(home: Path) -> tuple:
    """What an ingest may change: the fact files, the batches and the dims."""
    with store.session() as s:
        from ledger.ingest import list_batches

        batch_ids = [b.id for b in list_batches(s)]
        dims = (sorted(store.dim_names(s, kind="tenant")), sorted(store.dim_names(s, kind="product")))
    files = sorted(str(p) for p in (home / "facts").rglob("*.parquet") if "_staging" not in p.parts)
    return files, batch_ids, dims


def refused(home: Path, kind: str, path: Path, *expected: str, extra: tuple[str, ...] = ()) -> list[str]:
    """Ingest `path`: refused (exit 1), each expected text in the output (one problem a line, every
    line naming the file), no traceback, and the ledger unchanged."""
    before = state(home)
    r = run("ingest", kind, str(path), *extra)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    for e in expected:
        assert any(e.format(f=path) in line for line in lines), (e, lines)
    assert all(line.startswith(str(path)) or line.startswith("... and ") for line in lines), lines
    assert state(home) == before
    return lines


def accepted(kind: str, path: Path, *extra: str) -> dict:
    r = run("ingest", kind, str(path), "--json", *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def query(sql: str):
    with store.session() as s:
        return facts.open_ledger_facts(s, config.ledger_home()).execute(sql).fetchall()


# ---- 1. rows lost or values changed, silently ------------------------------------------------------

def test_a_line_over_32_mib_is_refused_not_dropped(ledger_home, tmp_path):
    """DuckDB's reader drops a line of 32 MiB or more without a word; the ledger refuses the file."""
    register("acme")
    f = tmp_path / "huge.csv"
    with f.open("w") as fh:
        fh.write(REQ + "\n" + row(1) + "\n")
        fh.write(f"r2,2026-10-01T00:00:00Z,acme,chat,{'m' * (33 << 20)},p,,t2,10,0,5,ok\n")
        fh.write(row(3) + "\n")
    refused(ledger_home, "requests", f, "{f}:3: line longer than 1048576 bytes (34603058 bytes)")


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_whole_numbers_are_exact_or_refused(ledger_home, tmp_path, fmt):
    """2**53 is kept exactly; 2**53 + 1 would round in a DOUBLE and is refused, in every format."""
    register("acme")
    big = 2**53

    def write(name: str, tokens: int) -> Path:
        p = tmp_path / f"{name}.{fmt}"
        csv_path = tmp_path / f"{name}.csv"
        csv_path.write_text(REQ + "\n" + row(1, tokens=str(tokens)) + "\n")
        if fmt == "csv":
            return csv_path
        con = duckdb.connect()
        rel = (f"SELECT * REPLACE (CAST(input_tokens AS BIGINT) AS input_tokens) "
               f"FROM read_csv('{csv_path}', all_varchar=true)")
        if fmt == "parquet":
            con.execute(f"COPY ({rel}) TO '{p}' (FORMAT parquet)")
        else:
            con.execute(f"COPY ({rel}) TO '{p}' (FORMAT json)")
        return p

    bad = write("bad", big + 1)
    refused(ledger_home, "requests", bad, f"{{f}}:{1 if fmt != 'csv' else 2}: input_tokens: '9007199254740993' "
                                          "is too large (at most 2^53 = 9007199254740992)")
    accepted("requests", write("ok", big))
    assert query("SELECT input_tokens FROM requests") == [(big,)]


def test_a_file_name_with_glob_characters_is_one_file(ledger_home, tmp_path):
    register("acme")
    (tmp_path / "a1.csv").write_text(REQ + "\n" + row(1) + "\n")
    (tmp_path / "ab.csv").write_text(REQ + "\n" + row(2) + "\n")
    star = tmp_path / "a*.csv"
    star.write_text(REQ + "\n" + row(3) + "\n")
    bracket = tmp_path / "a[b].csv"
    bracket.write_text(REQ + "\n" + row(4) + "\n")
    assert accepted("requests", star)["rows_new"] == 1
    assert accepted("requests", bracket)["rows_new"] == 1
    assert query("SELECT request_id FROM requests ORDER BY 1") == [("r3",), ("r4",)]


def test_fleet_from_two_files_registers_every_pool(ledger_home, tmp_path):
    a = tmp_path / "a.csv"
    a.write_text(FLEET + "\ni1,pool-a,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,H100,8,us,on_demand,serving\n")
    b = tmp_path / "b.csv"
    b.write_text(FLEET + "\ni2,pool-b,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,H100,8,us,on_demand,serving\n")
    r = run("ingest", "fleet", str(a), str(b))
    assert r.exit_code == 0, r.output
    from ledger.models import Pool
    from sqlmodel import select

    with store.session() as s:
        assert sorted(s.exec(select(Pool.name))) == ["pool-a", "pool-b"]


@pytest.mark.parametrize("quantity,ok", [("0.000000001", True), ("1.000000000000", True), ("1200e-3", True),
                                         ("0.0000000001", False), ("1.5e-10", False), ("1e-400", False),
                                         ("0.0000000000001", False)])
def test_meter_quantities_keep_nine_places_or_are_refused(ledger_home, tmp_path, quantity, ok):
    register("acme")
    f = tmp_path / "m.csv"
    f.write_text("event_id,occurred_at,tenant,product,meter,sku,quantity,unit\n"
                 f"e1,2026-10-01T00:00:00Z,acme,chat,egress,internet,{quantity},GB\n")
    if ok:
        accepted("meters", f)
        assert query("SELECT quantity FROM meters") == [(Decimal(quantity).quantize(Decimal("1e-9")),)]
    else:
        refused(ledger_home, "meters", f, f"{{f}}:2: quantity: '{quantity}' has more than 9 decimal places")


def test_charge_amounts_keep_six_places_or_are_refused(ledger_home, tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("charge_id,period_start,period_end,category,amount,currency,allocate\n"
                 "c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,storage,10.0000001,USD,even\n")
    refused(ledger_home, "charges", f, "{f}:2: amount: '10.0000001' has more than 6 decimal places")


# ---- 5. tracebacks and lines without a place -------------------------------------------------------

@pytest.mark.parametrize("at,message", [
    ("10000-01-01T00:00:00Z", "is not an ISO 8601 instant"),
    ("-2026-10-01T00:00:00Z", "is not an ISO 8601 instant"),
    ("1899-12-31T23:00:00Z", "is outside the years 1900 to 9998"),
    ("2026-10-15", "is not an ISO 8601 instant"),
    ("2026-10-15T10:00:00", "has no UTC offset"),
    ("2026-10-15T10:00:00+24:00", "has a UTC offset that no place uses"),
    ("2026-10-15T10:00:00+99:99", "has a UTC offset that no place uses"),
    ("2026-10-15T10:00:00+05:75", "has a UTC offset that no place uses"),
    ("2026-02-30T10:00:00Z", "is not a date and time that exists"),
])
def test_instants_the_contract_refuses(ledger_home, tmp_path, at, message):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_text(REQ + "\n" + row(1) + "\n" + row(2, at=at) + "\n")
    refused(ledger_home, "requests", f, f"{{f}}:3: occurred_at: '{at}' {message}")


def test_real_offsets_are_taken(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_text(REQ + "\n" + row(1, at="2026-10-15T10:00:00+14:00") + "\n" + row(2, at="2026-10-15T10:00:00-09:30")
                 + "\n" + row(3, at="2026-10-15 10:00:00.123456+0530") + "\n")
    accepted("requests", f)
    got = [str(r[0]) for r in query("SELECT occurred_at AT TIME ZONE 'UTC' FROM requests ORDER BY request_id")]
    assert got == ["2026-10-14 20:00:00", "2026-10-15 19:30:00", "2026-10-15 04:30:00.123456"]


@pytest.mark.parametrize("value", ["NaN", "inf", "-inf", "9223372036854775808", "1e-400", "1e3", "0x10", "1_000"])
def test_token_values_that_are_not_whole_numbers_name_their_line(ledger_home, tmp_path, value):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_text(REQ + "\n" + row(1) + "\n" + row(2, tokens=value) + "\n")
    lines = refused(ledger_home, "requests", f, "{f}:3: input_tokens: ")
    assert len(lines) == 1, lines


def test_latencies_must_be_real_measurements(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_text(REQ + ",latency_ms,ttft_ms\n" + row(1) + ",1e300,5\n" + row(2) + ",120,NaN\n")
    refused(ledger_home, "requests", f, "{f}:2: latency_ms: '1e+300' must be a number of milliseconds",
            "{f}:3: ttft_ms: 'nan' must be a number of milliseconds")


def test_header_problems_are_one_line_each(ledger_home, tmp_path):
    register("acme")
    wide = tmp_path / "wide.csv"
    wide.write_text("x" * 200_000 + "\n" + row(1) + "\n")
    refused(ledger_home, "requests", wide, "{f}:1: a header field is 200000 characters long")
    one_line = tmp_path / "one.csv"
    one_line.write_bytes(b"a" * (3 << 20))
    refused(ledger_home, "requests", one_line, "{f}:1: line longer than 1048576 bytes (3145728 bytes)")


def test_cr_only_line_endings_are_read_and_lines_counted(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "mac.csv"
    f.write_bytes((REQ + "\r" + row(1) + "\r" + row(2, tokens="-1") + "\r").encode())
    refused(ledger_home, "requests", f, "{f}:3: input_tokens: '-1' is negative")
    f.write_bytes((REQ + "\r" + row(1) + "\r" + row(2) + "\r").encode())
    assert accepted("requests", f)["rows_new"] == 2


def test_line_numbers_after_quoted_line_breaks_and_blank_lines(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_text(REQ + "\n" + 'r1,2026-10-01T00:00:00Z,acme,chat,m,p,,"task\nwith a break",10,0,5,ok\n'
                 + "\n" + row(2) + "\n\n" + row(3, tokens="-1") + "\n" + row(4, tokens="abc") + "\n")
    # physical lines: 1 header, 2-3 r1, 4 blank, 5 r2, 6 blank, 7 r3, 8 r4
    refused(ledger_home, "requests", f, "{f}:7: input_tokens: '-1' is negative",
            "{f}:8: input_tokens: 'abc' is not a whole number")


def test_a_parse_error_after_a_quoted_line_break_names_its_line(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_text(REQ + "\n" + 'r1,2026-10-01T00:00:00Z,acme,chat,m,p,,"a\nb",10,0,5,ok\n\n'
                 + row(2) + ",extra\n")
    refused(ledger_home, "requests", f, "{f}:5: more fields than the header has")


# ---- 6. accepted though the contract refuses it ---------------------------------------------------

@pytest.mark.parametrize("line,message", [
    ('{"request_id":"r2","occurred_at":"2026-10-01T00:00:00Z","tenant":{"a":1},"product":"chat","model":"m",'
     '"pool":"p","input_tokens":1,"output_tokens":1,"status":"ok"}', "tenant: is an object in JSON: expected text"),
    ('{"request_id":"r2","occurred_at":"2026-10-01T00:00:00Z","tenant":"acme","product":["chat"],"model":"m",'
     '"pool":"p","input_tokens":1,"output_tokens":1,"status":"ok"}', "product: is a list in JSON: expected text"),
    ('{"request_id":"r2","occurred_at":"2026-10-01T00:00:00Z","tenant":"acme","product":"chat","model":"m",'
     '"pool":"p","input_tokens":1,"output_tokens":1,"status":"ok",}', "a trailing comma (not JSON)"),
    ('{"request_id":"r2","occurred_at":"2026-10-01T00:00:00Z","tenant":"acme","product":"chat","model":"m",'
     '"pool":"p","input_tokens":1,"output_tokens":1,"status":"ok","status":"error"}', "a key appears twice"),
    ('{"request_id":"r2","occurred_at":"2026-10-01T00:00:00Z","tenant":"acme","product":"chat","model":"m",'
     '"pool":"p","input_tokens":1e-400,"output_tokens":1,"status":"ok"}', "a number with an exponent"),
])
def test_json_lines_the_contract_refuses(ledger_home, tmp_path, line, message):
    register("acme")
    good = ('{"request_id":"r1","occurred_at":"2026-10-01T00:00:00Z","tenant":"acme","product":"chat","model":"m",'
            '"pool":"p","input_tokens":1,"output_tokens":1,"status":"ok"}')
    f = tmp_path / "r.jsonl"
    f.write_text(good + "\n\n" + line + "\n")  # a blank line: the bad object is on line 3
    refused(ledger_home, "requests", f, "{f}:3: " + message)


def test_parquet_struct_where_text_goes(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "r.parquet"
    duckdb.connect().execute(
        f"COPY (SELECT 'r1' AS request_id, TIMESTAMPTZ '2026-10-01 00:00:00+00' AS occurred_at, "
        f"{{'name': 'acme'}} AS tenant, 'chat' AS product, 'm' AS model, 'p' AS pool, 1 AS input_tokens, "
        f"1 AS output_tokens, 'ok' AS status) TO '{f}' (FORMAT parquet)")
    refused(ledger_home, "requests", f, "{f}: tenant: is a STRUCT column")


# ---- 4. names: one rule on SQLite and PostgreSQL ---------------------------------------------------

@pytest.mark.parametrize("model,message", [
    ("m" * 201, "is 201 characters long (at most 200)"),
    ("é" * 250, "is 250 characters long (at most 200)"),
    ("bad\x00name", "contains a control character"),
    ("tab\tname", "contains a control character"),
])
def test_names_breaking_the_rule_are_refused_at_ingest(ledger_home, tmp_path, model, message):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_bytes((REQ + "\n" + row(1) + "\n" + row(2, model=model) + "\n").encode())
    refused(ledger_home, "requests", f, "{f}:3: model: ", message)


def test_a_control_character_in_an_id_is_refused(ledger_home, tmp_path):
    register("acme")
    f = tmp_path / "r.csv"
    f.write_bytes((REQ + "\n" + row(1).replace("r1,", "r\x001,", 1) + "\n").encode())
    refused(ledger_home, "requests", f, "{f}:2: request_id: 'r?1' contains a control character")


def test_a_200_character_name_ingests_and_allocates_on_both_stores(ledger_home, tmp_path):
    register("acme")
    name = "é" * 200
    f = tmp_path / "r.csv"
    f.write_text(REQ + "\n" + row(1, model=name) + "\n")
    accepted("requests", f)
    assert query("SELECT model FROM requests") == [(name,)]


# ---- 7. closed periods do not leak ---------------------------------------------------------------

def test_an_adjustment_batch_cannot_be_undone_once_a_month_of_its_rows_closed(ledger_home, tmp_path):
    register("acme")
    with store.session() as s:
        store.close_period(s, name="2025-01")
    f = tmp_path / "late.csv"
    f.write_text(REQ + "\n" + row(1, at="2025-01-10T00:00:00Z") + "\n" + row(2, at="2025-02-10T00:00:00Z") + "\n")
    bid = accepted("requests", f, "--as-adjustment")["batch_id"]
    with store.session() as s:
        store.close_period(s, name="2025-02")
    before = state(ledger_home)
    r = run("batches", "undo", bid)
    assert r.exit_code == 1 and "touches closed period" in r.output and "2025-02" in r.output, r.output
    assert state(ledger_home) == before


# ---- 8. scale of refusals -------------------------------------------------------------------------

def test_a_hundred_thousand_unknown_tenants_are_summarised_and_registered_in_bulk(ledger_home, tmp_path):
    register("acme")
    n = 100_000
    f = tmp_path / "many.csv"
    with f.open("w") as fh:
        fh.write(REQ + "\n")
        for i in range(n):
            fh.write(row(i, tenant=f"tenant-{i:06d}") + "\n")
    lines = refused(ledger_home, "requests", f, f"{{f}}:2: tenant: {n} unknown tenants: tenant-000000, tenant-000001")
    assert len(lines) == 1 and len(lines[0]) < 1000 and "and 99990 more" in lines[0]
    t = time.perf_counter()
    out = accepted("requests", f, "--register-new")
    assert out["rows_new"] == n and len(out["registered"]["tenant"]) == n
    with store.session() as s:
        assert len(store.dim_names(s, kind="tenant")) == n + 1
    print(f"registered {n} tenants in {time.perf_counter() - t:.1f} s")


# ---- the property: a bad row anywhere is refused whole, with its file and line --------------------

BAD_VALUES = {
    "input_tokens": ["-1", "1.5", "NaN", "inf", "1e-400", "9007199254740993", "abc", "0x1F", ""],
    "occurred_at": ["2026-10-15", "2026-10-15T10:00:00", "2026-10-15T10:00:00+24:00", "10000-01-01T00:00:00Z",
                    "yesterday", ""],
    "tenant": ["a\x00b", "x" * 201, ""],
    "model": ["tab\there", "m" * 300, ""],
    "status": ["fine", "OK", ""],
    "request_id": ["", "id\rwith cr"],
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_good=st.integers(min_value=0, max_value=30), data=st.data(),
       blanks=st.booleans(), fmt=st.sampled_from(["csv", "jsonl"]))
def test_property_a_random_bad_row_is_refused_whole_with_its_line(ledger_home, tmp_path, n_good, data, blanks, fmt):
    register("acme")
    column = data.draw(st.sampled_from(sorted(BAD_VALUES)))
    value = data.draw(st.sampled_from(BAD_VALUES[column]))
    at = data.draw(st.integers(min_value=0, max_value=n_good))
    names = REQ.split(",")
    good = [dict(zip(names, row(i).split(","))) for i in range(n_good + 1)]
    good[at][column] = value
    lines, bad_line = [], None
    if fmt == "csv":
        lines.append(REQ)
    for i, rec in enumerate(good):
        if blanks and i % 3 == 1:
            lines.append("")
        if i == at:
            bad_line = len(lines) + 1
        if fmt == "csv":
            lines.append(",".join(f'"{v}"' if any(c in v for c in ',"\r\n') else v for v in rec.values()))
        else:
            lines.append(json.dumps({k: (int(v) if k.endswith("tokens") and v.isdigit() else v)
                                     for k, v in rec.items() if v != "" or k == column}))
    f = tmp_path / f"prop-{data.draw(st.integers(0, 10**9))}.{fmt}"
    f.write_bytes(("\n".join(lines) + "\n").encode())
    out = refused(ledger_home, "requests", f)
    assert any(line.startswith(f"{f}:{bad_line}: ") for line in out), (bad_line, out)
