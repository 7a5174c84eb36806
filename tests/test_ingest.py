"""Ingest: every kind, every format, the bad-input corpus, idempotency, atomicity, closed periods.

Runs on SQLite, and on PostgreSQL when LEDGER_TEST_DATABASE_URL is set (the facts are Parquet
either way; the batches, dims and periods live in the ledger DB).
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.cli import app
from ledger.ingest import IngestError, enums, ingest

pytestmark = pytest.mark.store
runner = CliRunner()

REQ_HEADER = "request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status"


def run(*args: str):
    return runner.invoke(app, list(args))


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def ledger_facts():
    with store.session() as s:
        return facts.open_ledger_facts(s, config.ledger_home())


def count(kind: str) -> int:
    return ledger_facts().execute(f"SELECT count(*) FROM {kind}").fetchone()[0]


def batches() -> list:
    with store.session() as s:
        return [b.id for b in __import__("ledger.ingest", fromlist=["list_batches"]).list_batches(s)]


def fact_files(home: Path) -> list[Path]:
    return sorted(p for p in (home / "facts").rglob("*.parquet") if "_staging" not in p.parts)


def register(*tenants: str, products=("chat",)) -> None:
    with store.session() as s:
        for t in tenants:
            store.add_dim(s, kind="tenant", name=t)
        for p in products:
            store.add_dim(s, kind="product", name=p)


# ---- real-looking files -------------------------------------------------------------------------

def azure_requests_csv(shared_data: Path, out: Path, n: int) -> tuple[Path, int, int]:
    """The first `n` rows of the Azure conversation trace as a requests file (timestamps are UTC:
    the trace has no offset, its README says so, so we add Z). Returns the path and the token sums
    worked out here with the csv module, independently of the ingest."""
    rows, s_in, s_out = [], 0, 0
    with (shared_data / "traces" / "AzureLLMInferenceTrace_conv.csv").open() as fh:
        for i, r in enumerate(csv.DictReader(fh)):
            if i == n:
                break
            ts = r["TIMESTAMP"].replace(" ", "T")[:26] + "Z"
            tenant = ("acme", "globex", "initech")[i % 3]
            s_in += int(r["ContextTokens"])
            s_out += int(r["GeneratedTokens"])
            rows.append(f"az-{i},{ts},{tenant},chat,llama-3.1-8b,h100-pool,,t{i // 2},{r['ContextTokens']},0,"
                        f"{r['GeneratedTokens']},ok")
    write(out, REQ_HEADER + "\n" + "\n".join(rows) + "\n")
    return out, s_in, s_out


def test_requests_from_the_azure_trace(ledger_home, shared_data, tmp_path):
    path, s_in, s_out = azure_requests_csv(shared_data, tmp_path / "azure.csv", 2000)
    r = run("ingest", "requests", str(path), "--register-new", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["rows_read"], out["rows_new"], out["rows_duplicate"]) == (2000, 2000, 0)
    assert sorted(out["registered"]["tenant"]) == ["acme", "globex", "initech"]
    con = ledger_facts()
    assert con.execute("SELECT count(*), sum(input_tokens), sum(output_tokens) FROM requests").fetchone() == (2000, s_in, s_out)
    # the first trace row, 2023-11-16 18:15:46.6805900 UTC, kept to the microsecond
    first = con.execute("SELECT occurred_at, booked_at FROM requests WHERE request_id = 'az-0'").fetchone()
    assert first[0].isoformat() == "2023-11-16T18:15:46.680590+00:00" and first[1] == first[0]
    # the whole trace, then again: the second time adds nothing and says so
    full, _, _ = azure_requests_csv(shared_data, tmp_path / "azure_full.csv", 10**9)
    r = run("ingest", "requests", str(full))
    assert r.exit_code == 0, r.output
    assert "19,366 rows read, 17,366 new, 2,000 duplicate" in r.output
    r = run("ingest", "requests", str(full))
    assert "0 new, 19,366 duplicate: already in the ledger, nothing added" in r.output
    assert count("requests") == 19366


def test_every_kind_roundtrips_exact_values(ledger_home, tmp_path):
    register("acme", "globex")
    write(tmp_path / "m.csv", "event_id,occurred_at,tenant,product,task_id,meter,sku,quantity,unit,region\n"
                              "e1,2026-10-03T10:00:00+02:00,acme,chat,t1,egress,internet,1.000000001,GiB,us-east-1\n"
                              "e2,2026-10-03T10:00:00Z,acme,chat,,tool_call,web_search,3,call,\n")
    write(tmp_path / "o.csv", "task_id,tenant,product,outcome,decided_at,criteria\n"
                              "t1,acme,chat,success,2026-10-03T11:00:00Z,tests-pass\n"
                              "t1,acme,chat,failure,2026-10-04T11:00:00Z,tests-pass\n")
    write(tmp_path / "f.csv", "interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s\n"
                              "i1,h100-pool,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,H100-SXM-80GB,8,us-east-1,on_demand,serving,2500.5\n"
                              "i2,h100-pool,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,H100-SXM-80GB,1,us-east-1,on_demand,canary,\n")
    write(tmp_path / "c.csv", "charge_id,period_start,period_end,category,description,amount,currency,allocate\n"
                              "c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Langfuse,1234.567891,USD,by_cost\n"
                              "c2,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,engineering_ops,on-call,900,EUR,tenant:globex\n")
    for kind, f in [("meters", "m"), ("outcomes", "o"), ("fleet", "f"), ("charges", "c")]:
        r = run("ingest", kind, str(tmp_path / f"{f}.csv"))
        assert r.exit_code == 0, (kind, r.output)
    con = ledger_facts()
    # +02:00 is stored as the UTC instant 08:00; the decimal is exact to 1e-9
    assert con.execute("SELECT occurred_at, quantity FROM meters WHERE event_id='e1'").fetchone() == (
        __import__("datetime").datetime(2026, 10, 3, 8, 0, tzinfo=__import__("datetime").timezone.utc), Decimal("1.000000001"))
    assert con.execute("SELECT task_id, region FROM meters WHERE event_id='e2'").fetchone() == (None, None)
    assert con.execute("SELECT count(*) FROM outcomes").fetchone() == (2,)  # key is (task_id, decided_at)
    assert con.execute("SELECT capacity_tokens_per_gpu_s FROM fleet WHERE interval_id='i1'").fetchone() == (Decimal("2500.5"),)
    assert con.execute("SELECT capacity_tokens_per_gpu_s FROM fleet WHERE interval_id='i2'").fetchone() == (None,)
    assert con.execute("SELECT amount, currency FROM charges ORDER BY charge_id").fetchall() == [
        (Decimal("1234.567891"), "USD"), (Decimal("900"), "EUR")]
    with store.session() as s:  # the fleet registered its pool
        assert s.get(__import__("ledger.models", fromlist=["Pool"]).Pool, "h100-pool") is not None


def test_cache_writes_reasoning_and_service_tier_roundtrip_with_their_defaults(ledger_home, tmp_path):
    register("acme")
    f = write(tmp_path / "r.csv", CACHE_HEADER + ",reasoning_tokens,service_tier\n"
              "r1,2026-10-01T00:00:00Z,acme,chat,m,,openai,100,40,10,5,20,ok,8,batch\n"
              "r2,2026-10-01T00:00:00Z,acme,chat,m,,openai,100,,,,20,ok,,\n")
    r = run("ingest", "requests", str(f))
    assert r.exit_code == 0, r.output
    rows = ledger_facts().execute("SELECT request_id, cached_input_tokens, cache_write_input_tokens, "
                                  "cache_write_1h_input_tokens, reasoning_tokens, service_tier FROM requests "
                                  "ORDER BY 1").fetchall()
    # blanks take the defaults: 0 tokens, the standard tier
    assert rows == [("r1", 40, 10, 5, 8, "batch"), ("r2", 0, 0, 0, 0, "standard")]


NEW_REQUEST_COLUMNS = ("cache_write_input_tokens", "cache_write_1h_input_tokens", "service_tier")


def test_fact_files_written_before_the_new_columns_read_them_as_defaults(ledger_home, tmp_path):
    register("acme")
    r = run("ingest", "requests", str(write(tmp_path / "old.csv", REQ_HEADER + "\n" + OK_ROW + "\n")), "--json")
    old_batch = json.loads(r.stdout)["batch_id"]
    # make the batch's fact file look like one written before the columns existed
    [path] = facts.batch_files("requests", old_batch, config.ledger_home())
    tmp = path.with_suffix(".tmp")
    duckdb.execute(f"COPY (SELECT * EXCLUDE ({', '.join(NEW_REQUEST_COLUMNS)}) FROM read_parquet('{path}')) "
                   f"TO '{tmp}' (FORMAT parquet)")
    os.replace(tmp, path)
    assert not set(NEW_REQUEST_COLUMNS) & {c for (c,) in duckdb.execute(
        f"SELECT name FROM parquet_schema('{path}')").fetchall()}
    want = ("r1", 10, 0, 0, 0, 0, "standard")
    query = ("SELECT request_id, input_tokens, cached_input_tokens, cache_write_input_tokens, "
             "cache_write_1h_input_tokens, reasoning_tokens, service_tier FROM requests ORDER BY 1")
    # only old files: the columns are filled with their defaults
    assert facts.connect({"requests": [old_batch]}, config.ledger_home()).execute(query).fetchall() == [want]
    # old and new files together: the old rows take the defaults, the new ones keep their values
    f = write(tmp_path / "new.csv", CACHE_HEADER + ",service_tier\n"
              "r2,2026-10-01T00:00:00Z,acme,chat,m,,openai,100,40,10,5,20,ok,flex\n")
    assert run("ingest", "requests", str(f)).exit_code == 0
    assert ledger_facts().execute(query).fetchall() == [want, ("r2", 100, 40, 10, 5, 0, "flex")]
    # the old row sent again with the new columns written out is a duplicate, not a conflict
    again = write(tmp_path / "again.csv", REQ_HEADER + ",cache_write_input_tokens,service_tier\n" + OK_ROW
                  + ",0,standard\n")
    r = run("ingest", "requests", str(again))
    assert r.exit_code == 0 and "1 row read, 0 new, 1 duplicate" in r.output, r.output


def test_csv_jsonl_and_parquet_are_the_same_facts(ledger_home, tmp_path):
    register("acme")
    rows = [{"request_id": "r1", "occurred_at": "2026-10-01T00:00:00Z", "tenant": "acme", "product": "chat",
             "model": "gpt-5", "provider": "openai", "input_tokens": 100, "cached_input_tokens": 40,
             "output_tokens": 7, "status": "ok", "latency_ms": 812.5},
            {"request_id": "r2", "occurred_at": "2026-10-01T01:00:00-05:00", "tenant": "acme", "product": "chat",
             "model": "llama", "pool": "p", "input_tokens": 5, "output_tokens": 1, "status": "timeout"}]
    write(tmp_path / "a.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    r = run("ingest", "requests", str(tmp_path / "a.jsonl"))
    assert r.exit_code == 0 and "2 new" in r.output, r.output
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.execute(f"COPY (SELECT * FROM read_json('{tmp_path / 'a.jsonl'}', format='newline_delimited', "
                f"columns={{request_id:'VARCHAR', occurred_at:'TIMESTAMPTZ', tenant:'VARCHAR', product:'VARCHAR', "
                f"model:'VARCHAR', pool:'VARCHAR', provider:'VARCHAR', input_tokens:'BIGINT', cached_input_tokens:'BIGINT', "
                f"output_tokens:'BIGINT', status:'VARCHAR', latency_ms:'DOUBLE'}})) TO '{tmp_path / 'a.parquet'}' (FORMAT parquet)")
    csv_text = ("request_id,occurred_at,tenant,product,model,pool,provider,input_tokens,cached_input_tokens,output_tokens,status,latency_ms\n"
                "r1,2026-10-01T00:00:00Z,acme,chat,gpt-5,,openai,100,40,7,ok,812.5\n"
                "r2,2026-10-01T06:00:00Z,acme,chat,llama,p,,5,,1,timeout,\n")
    write(tmp_path / "a.csv", csv_text)
    for f in ("a.parquet", "a.csv"):  # same content in another format: duplicates, not conflicts
        r = run("ingest", "requests", str(tmp_path / f))
        assert r.exit_code == 0 and "0 new, 2 duplicate" in r.output, (f, r.output)
    assert ledger_facts().execute("SELECT cached_input_tokens, reasoning_tokens FROM requests WHERE request_id='r2'"
                                  ).fetchone() == (0, 0)


def test_parquet_with_naive_timestamps_is_refused(ledger_home, tmp_path):
    con = duckdb.connect()
    con.execute(f"COPY (SELECT 'r1' request_id, TIMESTAMP '2026-10-01 00:00:00' occurred_at, 'acme' tenant, 'chat' product, "
                f"'m' model, 'p' pool, 1 input_tokens, 1 output_tokens, 'ok' status) TO '{tmp_path / 'n.parquet'}' (FORMAT parquet)")
    r = run("ingest", "requests", str(tmp_path / "n.parquet"))
    assert r.exit_code == 1
    assert r.output.strip() == f"{tmp_path / 'n.parquet'}: occurred_at: timestamp column has no UTC offset (naive timestamps)"



@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_parquet_timestamps_of_every_unit_naive_refused_zoned_taken(ledger_home, tmp_path, unit):
    """Naive Parquet timestamps are refused at every unit; zoned ones (UTC-adjusted) are instants."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    register("acme")
    when = [1790812800]  # 2026-10-01T00:00:00Z in seconds
    scale = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    cols = {"request_id": ["r1"], "tenant": ["acme"], "product": ["chat"], "model": ["m"], "pool": ["p"],
            "input_tokens": [1], "output_tokens": [1], "status": ["ok"]}
    naive, zoned = tmp_path / "naive.parquet", tmp_path / "zoned.parquet"
    pq.write_table(pa.table({**cols, "occurred_at": pa.array([w * scale for w in when], pa.timestamp(unit))}), naive)
    pq.write_table(pa.table({**cols, "occurred_at": pa.array([w * scale for w in when], pa.timestamp(unit, "UTC"))}),
                   zoned)
    with pytest.raises(IngestError) as e:
        ingest("requests", [naive])
    assert e.value.lines() == [f"{naive}: occurred_at: timestamp column has no UTC offset (naive timestamps)"]
    ingest("requests", [zoned])
    assert ledger_facts().execute("SELECT occurred_at FROM requests").fetchone()[0].isoformat() == "2026-10-01T00:00:00+00:00"

# ---- the bad-input corpus: each case, its exact message, and nothing written -------------------

OK_ROW = "r1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,10,0,5,ok"
CACHE_HEADER = ("request_id,occurred_at,tenant,product,model,pool,provider,input_tokens,cached_input_tokens,"
                "cache_write_input_tokens,cache_write_1h_input_tokens,output_tokens,status")
CORPUS = [
    ("naive timestamp", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00,acme,chat,m,p,,t1,10,0,5,ok\n",
     ["{f}:2: occurred_at: '2026-10-01T00:00:00' has no UTC offset (naive timestamp); write e.g. 2026-10-01T12:00:00Z"]),
    ("negative tokens", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,-10,0,5,ok\n",
     ["{f}:2: input_tokens: '-10' is negative"]),
    ("cached > input", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,10,11,5,ok\n",
     ["{f}:2: cached_input_tokens: cached_input_tokens 11 is more than input_tokens 10"]),
    ("unknown column", "requests", REQ_HEADER + ",inptu_tokens\n" + OK_ROW + ",3\n",
     ["{f}:1: inptu_tokens: unknown column (expected: request_id, occurred_at, tenant, product, model, pool, provider, "
      "task_id, input_tokens, cached_input_tokens, output_tokens, cache_write_input_tokens, cache_write_1h_input_tokens, "
      "reasoning_tokens, service_tier, status, ttft_ms, latency_ms, region, "
      "reported_cost, reported_currency)"]),
    ("unknown tenant", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,nobody,chat,m,p,,t1,10,0,5,ok\n",
     ["{f}:2: tenant: unknown tenant: nobody (register with `ledger dims add tenant nobody` or `ledger dims import`, "
      "or ingest with --register-new)"]),
    ("pool and provider", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,p,openai,t1,10,0,5,ok\n",
     ["{f}:2: pool: pool and provider are both set; a request is served by one of them"]),
    ("neither pool nor provider", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,,,t1,10,0,5,ok\n",
     ["{f}:2: pool: one of pool or provider is required"]),
    ("fractional tokens and a bad status", "requests",
     REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,1.5,0,5,ok\nr2,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,1,0,5,fine\n",
     ["{f}:2: input_tokens: '1.5' is not a whole number", "{f}:3: status: 'fine' is not one of ok, error, timeout, cancelled"]),
    ("unknown unit", "meters", "event_id,occurred_at,tenant,product,meter,sku,quantity,unit\n"
                               "e1,2026-10-01T00:00:00Z,acme,chat,egress,internet,1.5,bananas\n",
     ["{f}:2: unit: 'bananas' is not a unit pint knows (e.g. call, GB, GiB, span, token)"]),
    ("unknown currency", "charges", "charge_id,period_start,period_end,category,amount,currency,allocate\n"
                                    "c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,storage,10.00,XYZ,even\n",
     ["{f}:2: currency: 'XYZ' is not an ISO 4217 currency code"]),
    ("end before start", "fleet", "interval_id,pool,start,end,device,gpus,region,purchase_option,role\n"
                                  "i1,p,2026-10-02T00:00:00Z,2026-10-01T00:00:00Z,H100,8,us,on_demand,serving\n",
     ["{f}:2: end: end 2026-10-01T00:00:00Z is not after start 2026-10-02T00:00:00Z"]),
    ("zero gpus", "fleet", "interval_id,pool,start,end,device,gpus,region,purchase_option,role\n"
                           "i1,p,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,H100,0,us,on_demand,serving\n",
     ["{f}:2: gpus: '0' must be at least 1"]),
    ("non-UTF-8 bytes", "requests", (REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,ch").encode() + b"\xff\xfe" + b"at,m,p,,t1,10,0,5,ok\n",
     ["{f}:2: product: bytes that are not UTF-8"]),
    ("empty file", "requests", "", ["{f}: file is empty: expected a header line and rows"]),
    ("header only", "requests", REQ_HEADER + "\n", ["{f}: no data rows (header only)"]),
    ("a 10 MB single field", "requests", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat," + "m" * 10_000_000 + ",p,,t1,10,0,5,ok\n",
     ["{f}:2: line longer than 1048576 bytes (10000050 bytes)"]),
    ("missing required column", "requests", "request_id,occurred_at,tenant,product,model,pool,input_tokens,status\n"
                                            "r1,2026-10-01T00:00:00Z,acme,chat,m,p,1,ok\n",
     ["{f}:1: output_tokens: required column is missing"]),
    ("unterminated quote", "requests", REQ_HEADER + '\nr1,"2026-10-01T00:00:00Z,acme,chat,m,p,,t1,10,0,5,ok\n',
     ["{f}:2: occurred_at: a quote that is never closed"]),
    # cached reads and both kinds of cache writes are disjoint parts of input: 4 + 5 + 2 = 11 > 10 (on the
    # 5-minute column), 0 + 0 + 11 > 10 (on the 1-hour column, the row has no 5-minute writes); r3's
    # 4 + 3 + 3 = 10 is exactly the input and fine
    ("cache writes beyond the input", "requests", CACHE_HEADER + """
r1,2026-10-01T00:00:00Z,acme,chat,m,,openai,10,4,5,2,5,ok
r2,2026-10-01T00:00:00Z,acme,chat,m,,openai,10,0,,11,5,ok
r3,2026-10-01T00:00:00Z,acme,chat,m,,openai,10,4,3,3,5,ok
""", ["{f}:2: cache_write_input_tokens: cached_input_tokens 4 + cache_write_input_tokens 5 + cache_write_1h_input_tokens"
      " 2 = 11 is more than input_tokens 10 (cached reads and cache writes are disjoint parts of the input)",
      "{f}:3: cache_write_1h_input_tokens: cached_input_tokens 0 + cache_write_input_tokens 0 + "
      "cache_write_1h_input_tokens 11 = 11 is more than input_tokens 10 (cached reads and cache writes are disjoint "
      "parts of the input)"]),
    ("negative cache writes", "requests", CACHE_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,,openai,10,0,-1,0,5,ok\n",
     ["{f}:2: cache_write_input_tokens: '-1' is negative"]),
    ("unknown service tier", "requests", REQ_HEADER + ",service_tier\n" + OK_ROW + ",bacth\n",
     ["{f}:2: service_tier: 'bacth' is not one of standard, batch, flex, priority"]),
]


@pytest.mark.parametrize("name,kind,content,expected", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_input_corpus(ledger_home, tmp_path, name, kind, content, expected):
    register("acme")
    f = write(tmp_path / ("bad.csv"), content)
    r = run("ingest", kind, str(f))
    assert r.exit_code == 1, r.output
    assert r.output.strip().splitlines() == [e.format(f=f) for e in expected]
    assert batches() == [] and fact_files(ledger_home) == []


def test_many_problems_print_the_first_50_then_a_count(ledger_home, tmp_path):
    register("acme")
    rows = [f"r{i},2026-10-01T00:00:00Z,acme,chat,m,p,,t1,-1,0,5,ok" for i in range(120)]
    f = write(tmp_path / "many.csv", REQ_HEADER + "\n" + "\n".join(rows) + "\n")
    r = run("ingest", "requests", str(f))
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 51
    assert lines[0] == f"{f}:2: input_tokens: '-1' is negative" and lines[49].startswith(f"{f}:51:")
    assert lines[50] == "... and 70 more problems (120 in all)"


# ---- idempotency --------------------------------------------------------------------------------

def test_conflicting_duplicate_names_both_sources(ledger_home, tmp_path):
    register("acme")
    a = write(tmp_path / "a.csv", REQ_HEADER + "\n" + OK_ROW + "\n")
    r = run("ingest", "requests", str(a))
    assert r.exit_code == 0
    batch = batches()[0]
    b = write(tmp_path / "b.csv", REQ_HEADER + "\nr0,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,1,0,1,ok\n"
                                               "r1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,999,0,5,ok\n")
    r = run("ingest", "requests", str(b))
    assert r.exit_code == 1
    assert r.output.strip() == (f"{b}:3: request_id: 'r1' is already in batch {batch} (from {a}) with different "
                                "content (a key must not change): to correct that row, undo its batch with "
                                f"`ledger batches undo {batch}` and ingest the corrected file again")
    assert count("requests") == 1 and len(batches()) == 1


def test_duplicates_inside_one_file(ledger_home, tmp_path):
    register("acme")
    same = write(tmp_path / "same.csv", REQ_HEADER + "\n" + OK_ROW + "\n" + OK_ROW + "\n")
    r = run("ingest", "requests", str(same))
    assert r.exit_code == 0 and "2 rows read, 1 new, 1 duplicate" in r.output, r.output
    other = write(tmp_path / "other.csv", REQ_HEADER + "\nr9,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,1,0,1,ok\n"
                                                      "r9,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,2,0,1,ok\n")
    r = run("ingest", "requests", str(other))
    assert r.exit_code == 1
    assert r.output.strip() == (f"{other}:3: request_id: 'r9' is already in {other}:2 with different content "
                                "(a key must not change): keep one of the two rows")


def test_dry_run_writes_nothing(ledger_home, tmp_path):
    f = write(tmp_path / "a.csv", REQ_HEADER + "\n" + OK_ROW + "\n")
    r = run("ingest", "requests", str(f), "--dry-run", "--register-new")
    assert r.exit_code == 0 and "dry run: 1 row valid; nothing written" in r.output
    assert batches() == [] and fact_files(ledger_home) == []
    with store.session() as s:
        assert store.dim_names(s, kind="tenant") == set()


# ---- batches, periods, adjustments --------------------------------------------------------------

def test_closed_period_is_refused_unless_booked_as_adjustment(ledger_home, tmp_path):
    register("acme")
    with store.session() as s:
        store.close_period(s, name="2026-10")
    f = write(tmp_path / "late.csv", REQ_HEADER + "\n" + OK_ROW + "\nr2,2026-11-02T00:00:00Z,acme,chat,m,p,,t1,1,0,1,ok\n")
    r = run("ingest", "requests", str(f))
    assert r.exit_code == 1
    assert r.output.strip() == (f"{f}:2: occurred_at: touches closed period 2026-10: refused (ingest with "
                                "--as-adjustment to book it into the current open period)")
    from datetime import datetime, timezone
    with store.session() as s:
        open_period = store.current_open_period(s)
    r = run("ingest", "requests", str(f), "--as-adjustment")
    assert r.exit_code == 0 and f"booked into {open_period} as an adjustment" in r.output, r.output
    con = ledger_facts()
    start, _ = store.month_bounds(open_period)
    # the October row keeps when it happened and counts in the open period; the November row is untouched
    assert con.execute("SELECT request_id, occurred_at, booked_at FROM requests ORDER BY 1").fetchall() == [
        ("r1", datetime(2026, 10, 1, tzinfo=timezone.utc), start),
        ("r2", datetime(2026, 11, 2, tzinfo=timezone.utc), datetime(2026, 11, 2, tzinfo=timezone.utc))]
    fleet = write(tmp_path / "fleet.csv", "interval_id,pool,start,end,device,gpus,region,purchase_option,role\n"
                                          "i1,p,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,H100,8,us,on_demand,serving\n")
    r = run("ingest", "fleet", str(fleet), "--as-adjustment")
    assert r.exit_code == 1 and "--as-adjustment applies to requests, meters, outcomes" in r.output


def test_batches_list_and_undo(ledger_home, tmp_path):
    register("acme")
    f = write(tmp_path / "a.csv", REQ_HEADER + "\n" + OK_ROW + "\n")
    run("ingest", "requests", str(f))
    r = run("batches", "--json")
    listed = json.loads(r.output)
    assert len(listed) == 1 and listed[0]["files"][0]["path"] == str(f) and listed[0]["rows_new"] == 1
    assert len(listed[0]["files"][0]["sha256"]) == 64
    bid = listed[0]["id"]
    with store.session() as s:
        store.close_period(s, name="2026-10")
    r = run("batches", "undo", bid)
    assert r.exit_code == 1 and r.output.strip() == f"batch {bid} touches closed period 2026-10: it cannot be undone"
    with store.session() as s:
        from ledger.models import Period
        s.get(Period, "2026-10").status = "open"
    r = run("batches", "undo", bid)
    assert r.exit_code == 0, r.output
    assert count("requests") == 0 and fact_files(ledger_home) == []
    r = run("ingest", "requests", str(f))  # and it can come back
    assert "1 new" in r.output


# ---- atomicity: kill -9 mid-ingest --------------------------------------------------------------

def _big_requests(path: Path, n: int) -> Path:
    import numpy as np  # noqa: F401 (bench's generator needs it)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from synth import generate_requests, write_requests

    write_requests(generate_requests(n, seed=3), str(path), "csv")
    return path


@pytest.mark.slow
def test_kill_9_mid_ingest_leaves_the_ledger_unchanged(ledger_home, tmp_path):
    big = _big_requests(tmp_path / "big.csv", 300_000)
    env = dict(os.environ)
    code = ("import sys; from ledger.ingest import ingest; "
            f"ingest('requests', [{str(big)!r}], register_new=True)")
    staging = ledger_home / "facts" / "_staging"
    killed_mid_way = []
    # Kill once the ingest has started writing its staging Parquet, then a little later, and later
    # still (by then it may have committed: that is allowed too, as long as it is whole).
    for extra in (0.0, 0.15, 0.6):
        proc = subprocess.Popen([sys.executable, "-c", code], env=env)
        deadline = time.monotonic() + 120
        while proc.poll() is None and not any(staging.glob("*/*")) and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(extra)
        if proc.poll() is None:
            writing = any(staging.glob("*/*"))
            proc.send_signal(signal.SIGKILL)
            killed_mid_way.append(writing)
        proc.wait()
        # whatever the instant: the whole batch (300,000 rows) or nothing at all
        held = batches()
        assert (held, count("requests")) in (([], 0), (held[:1], 300_000)) and len(held) <= 1
        if held:  # it committed before the kill landed: undo, to try the next instant on an empty ledger
            with store.session() as s:
                from ledger.ingest import undo_batch
                undo_batch(s, held[0])
        assert count("requests") == 0
    assert any(killed_mid_way), "no ingest was killed while writing: the file is too small for this machine"
    store.dispose_engines()
    res = ingest("requests", [big], register_new=True)  # the next run succeeds, whole
    assert res.rows_new == 300_000 and count("requests") == 300_000
    assert not any((ledger_home / "facts" / "_staging").glob("*/*.parquet"))


def test_names_with_white_space_around_them_are_refused(ledger_home, tmp_path):
    register("acme")
    f = write(tmp_path / "ws.csv", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z, acme,chat,m,p,,t1,10,0,5,ok\n"
                                                 "r2,2026-10-01T00:00:00Z,acme,  ,m,p,,t1,10,0,5,ok\n")
    r = run("ingest", "requests", str(f), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{f}:2: tenant: ' acme' has white space around it (or is only white space)",
        f"{f}:3: product: '  ' has white space around it (or is only white space)"]
    assert batches() == []


def test_batches_as_csv(ledger_home, tmp_path):
    register("acme")
    f = write(tmp_path / "a.csv", REQ_HEADER + "\n" + OK_ROW + "\n")
    run("ingest", "requests", str(f))
    r = run("batches", "--csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(r.output.splitlines()))
    assert len(rows) == 1 and rows[0]["kind"] == "requests" and rows[0]["rows_new"] == "1"
    assert rows[0]["files"] == str(f) and rows[0]["first_at"] == "2026-10-01T00:00:00+00:00"


# ---- the fast pass: names read as ENUMs, the careful pass when a name surprises it --------------

def _facts_rows() -> list[tuple]:
    return ledger_facts().execute("SELECT * FROM requests ORDER BY request_id").fetchall()


def _ingest_outcome(path: Path, steps: list[str]):
    """(rows new, rows duplicate, facts) of an ingest, or its problem lines; the batch is undone after."""
    from ledger.ingest import undo_batch

    try:
        res = ingest("requests", [path], register_new=True, on_step=steps.append)
    except IngestError as e:
        return e.lines()
    got = (res.rows_new, res.rows_duplicate, _facts_rows())
    with store.session() as s:
        undo_batch(s, res.batch_id)
    return got


def _careful_only(monkeypatch):
    monkeypatch.setattr(enums, "domains", lambda *a, **k: {})


def test_fast_pass_writes_the_same_facts_as_the_careful_pass(ledger_home, shared_data, tmp_path, monkeypatch):
    path, s_in, s_out = azure_requests_csv(shared_data, tmp_path / "azure.csv", 3000)
    fast_steps, careful_steps = [], []
    fast = _ingest_outcome(path, fast_steps)
    assert fast_steps == [f"reading {path}", "checking keys", "committing"]  # no second reading
    _careful_only(monkeypatch)
    careful = _ingest_outcome(path, careful_steps)
    assert fast == careful and fast[0] == 3000
    assert sum(r[8] for r in fast[2]) == s_in and sum(r[10] for r in fast[2]) == s_out
    # names come back as text, whichever pass wrote them
    res = ingest("requests", [path])
    con = duckdb.connect()
    f = facts.batch_files("requests", res.batch_id, config.ledger_home())[0]
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('{f}'))").fetchall())
    assert types["tenant"] == types["model"] == types["status"] == "VARCHAR"


def test_a_name_the_sample_missed_sends_the_file_to_the_careful_pass(ledger_home, tmp_path, monkeypatch):
    ing = enums
    rows = [f"r{i},2026-10-01T00:00:{i % 60:02d}Z,acme,chat,m,p,,t{i},10,0,5,ok" for i in range(4000)]
    rows.append("r9999,2026-10-01T01:00:00Z,rare-tenant,chat,m-rare,p,,t1,7,0,3,error")
    f = write(tmp_path / "tail.csv", REQ_HEADER + "\n" + "\n".join(rows) + "\n")
    monkeypatch.setattr(ing, "SAMPLE_WINDOWS", 2)
    monkeypatch.setattr(ing, "SAMPLE_BYTES", 4096)  # two small windows: the last line is not in them
    steps = []
    res = ingest("requests", [f], register_new=True, on_step=steps.append)
    assert steps[:2] == [f"reading {f}", f"reading {f} again, value by value (a value the fast pass did not expect)"]
    assert (res.rows_new, res.registered["tenant"]) == (4001, ["acme", "rare-tenant"])
    assert ledger_facts().execute("SELECT tenant, model, input_tokens, status FROM requests WHERE request_id = 'r9999'"
                                  ).fetchone() == ("rare-tenant", "m-rare", 7, "error")


def test_names_the_ledger_knows_need_no_sample(ledger_home, tmp_path, monkeypatch):
    """Registered tenants and products, pools, and the price books' models and regions are ENUM
    members even when the sample never shows them."""
    from ledger import pricebook

    ing = enums
    register("acme", "late", products=("chat",))
    with store.session() as s:
        books, problems = pricebook.load_books([Path(__file__).resolve().parent.parent / "pricebooks"])
        assert not problems
        for b in books:
            store.store_book(s, book=b)
        s.add(__import__("ledger.models", fromlist=["Pool"]).Pool(name="h100-pool", display_name="h100-pool"))
        s.commit()
        known = ing.expected_names(s, {"tenant": {"acme", "late"}, "product": {"chat"}})
    assert {"gpt-5", "o3"} <= known["model"] and "h100-pool" in known["pool"] and "us-east-1" in known["region"]
    rows = [f"r{i},2026-10-01T00:00:00Z,acme,chat,gpt-5,,openai,t{i},10,0,5,ok" for i in range(3000)]
    rows.append("r9999,2026-10-01T00:00:00Z,late,chat,o3,,openai,t1,10,0,5,ok")
    f = write(tmp_path / "known.csv", REQ_HEADER + "\n" + "\n".join(rows) + "\n")
    monkeypatch.setattr(ing, "SAMPLE_WINDOWS", 1)
    monkeypatch.setattr(ing, "SAMPLE_BYTES", 2048)
    steps = []
    assert ingest("requests", [f], on_step=steps.append).rows_new == 3001
    assert steps == [f"reading {f}", "checking keys", "committing"]


GOOD_NAMES = ["acme", "globex", "a,b", 'q"uote', "ünï"]
BAD_NAMES = [" acme", "", "acme "]


@pytest.mark.slow
def test_property_fast_and_careful_passes_agree(ledger_home, tmp_path):
    """For random request files (odd names, quotes, blanks, bad statuses, naive instants, repeated
    keys) and random sample sizes, the fast pass gives the careful pass's answer: the same facts and
    counts, or the same problem lines."""
    from unittest import mock

    from hypothesis import HealthCheck, example, given, settings
    from hypothesis import strategies as st

    ing = enums
    ok_ts, ok_pool = "2026-10-01T00:00:00Z", ("p1", "")
    row = st.tuples(st.integers(0, 30),
                    st.sampled_from([ok_ts, "2026-10-02T03:04:05.123456+02:00", ok_ts, "2026-10-03T00:00:00"]),
                    st.sampled_from(GOOD_NAMES * 3 + BAD_NAMES), st.sampled_from(["chat", "search"]),
                    st.sampled_from(["m1", "m2", "m1", "m2", ""]),
                    st.sampled_from([ok_pool, ("", "openai"), ok_pool, ("", "openai"), ("p1", "openai")]),
                    st.integers(0, 99), st.sampled_from(["ok", "error", "ok", "error", "ok", "fine", ""]))
    plain = [(i, ok_ts, "acme", "chat", "m1", ok_pool, 5, "ok") for i in range(12)]
    seen = set()

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(rows=st.lists(row, min_size=1, max_size=60), sample=st.sampled_from([(1, 256), (2, 200), (16, 1 << 17)]))
    @example(rows=plain, sample=(16, 1 << 17))  # the whole file sampled: the fast pass alone
    @example(rows=plain + [(99, ok_ts, "globex", "chat", "m2", ok_pool, 5, "ok")], sample=(1, 256))  # a late name
    def check(rows, sample):
        path = tmp_path / "h.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(REQ_HEADER.split(","))
            for rid, ts, tenant, product, model, (pool, prov), tokens, status in rows:
                w.writerow([f"r{rid}", ts, tenant, product, model, pool, prov, "t1", tokens, 0, 1, status])
        steps = []
        with mock.patch.object(ing, "SAMPLE_WINDOWS", sample[0]), mock.patch.object(ing, "SAMPLE_BYTES", sample[1]):
            fast = _ingest_outcome(path, steps)
        with mock.patch.object(ing, "domains", lambda *a, **k: {}):
            careful = _ingest_outcome(path, [])
        assert fast == careful
        seen.add(("refused" if isinstance(fast, list) else "ingested",
                  "fast, then careful" if any("again" in m for m in steps) else "one pass"))

    check()
    assert {("ingested", "one pass"), ("ingested", "fast, then careful")} <= seen, seen


def test_hash_repeats_found_by_a_set_by_numpy_and_by_duckdb_alike():
    """The key check's four ways (a Python set up to SET_MAX_ROWS, DuckDB's count of distinct values
    up to DISTINCT_MAX_ROWS, numpy's sort up to NUMPY_SORT_MAX_ROWS, whole or in two halves sorted at
    once, DuckDB's sort above) find a repeated value exactly when there is one: hand-made cases, then
    random lists with and without repeats."""
    from unittest import mock

    from hypothesis import given, settings
    from hypothesis import strategies as st

    import numpy as np

    import ledger.ingest as li
    from ledger.ingest import dedupe

    con = duckdb.connect()

    def each(values: list[int]) -> tuple[bool, bool, bool]:
        con.execute("CREATE OR REPLACE TEMP TABLE v AS SELECT unnest(?::UBIGINT[]) AS h", [values])
        sql = "SELECT h FROM v"
        assert len(values) <= dedupe.SET_MAX_ROWS
        by_set = li.hashes_repeat(con, sql, len(values))
        with mock.patch.object(dedupe, "SET_MAX_ROWS", 0):
            by_distinct = li.hashes_repeat(con, sql, len(values))
            with mock.patch.object(dedupe, "DISTINCT_MAX_ROWS", 0):
                by_numpy = li.hashes_repeat(con, sql, len(values))
                # numpy's sort in two halves at once (partitioned around the middle value), and in one
                with mock.patch.object(dedupe, "PARALLEL_SORT_MIN_ROWS", 0):
                    halves = [dedupe.sorted_repeat(np.array(values, dtype=np.uint64), t) for t in (1, 2, 4)]
                    for threads in (1, 2):  # the connection's threads (LEDGER_THREADS, or a core each) decide
                        con.execute(f"SET threads = {threads}")
                        assert li.hashes_repeat(con, sql, len(values)) == by_numpy
                with mock.patch.object(dedupe, "NUMPY_SORT_MAX_ROWS", 0):
                    by_duckdb = li.hashes_repeat(con, sql, len(values))
        assert by_distinct == by_set
        assert halves == [by_numpy] * 3
        return by_set, by_numpy, by_duckdb

    assert each([7]) == (False, False, False)
    assert each([1, 2, 3, 2**64 - 1]) == (False, False, False)
    assert each([2**64 - 1, 5, 2**64 - 1]) == (True, True, True)  # the largest value, not adjacent in input order
    assert each([0, 0]) == (True, True, True)
    # the middle value written twice: one on each side of the partition's middle place
    assert each([5, 1, 5, 9]) == (True, True, True)
    assert each([9, 5, 1, 5, 7]) == (True, True, True)
    assert each([3, 1, 2, 4]) == (False, False, False)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=200), st.data())
    def agree(values, data):
        if data.draw(st.booleans()):  # plant a repeat
            values = values + [data.draw(st.sampled_from(values))]
        expected = len(set(values)) < len(values)
        assert each(values) == (expected, expected, expected)

    agree()


@pytest.mark.parametrize("way", ["distinct", "sort"])
def test_duplicates_inside_one_file_on_the_duckdb_sort(ledger_home, tmp_path, monkeypatch, way):
    """A batch above SET_MAX_ROWS has its key hashes counted distinct by DuckDB, and one above
    NUMPY_SORT_MAX_ROWS sorted by DuckDB: same counts, same conflict, either way."""
    from ledger.ingest import dedupe

    monkeypatch.setattr(dedupe, "SET_MAX_ROWS", 0)
    if way == "sort":
        monkeypatch.setattr(dedupe, "DISTINCT_MAX_ROWS", 0)
        monkeypatch.setattr(dedupe, "NUMPY_SORT_MAX_ROWS", 0)
    register("acme")
    same = write(tmp_path / "same.csv", REQ_HEADER + "\n" + OK_ROW + "\n" + OK_ROW + "\n")
    r = ingest("requests", [same])
    assert (r.rows_read, r.rows_new, r.rows_duplicate) == (2, 1, 1)
    other = write(tmp_path / "other.csv", REQ_HEADER + "\nr9,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,1,0,1,ok\n"
                                                      "r9,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,2,0,1,ok\n")
    with pytest.raises(IngestError) as e:
        ingest("requests", [other])
    assert [str(p) for p in e.value.problems] == [
        f"{other}:3: request_id: 'r9' is already in {other}:2 with different content (a key must not change): "
        "keep one of the two rows"]


@pytest.mark.slow
def test_property_parquet_typed_columns_read_as_the_text_way_reads_them(ledger_home, tmp_path):
    """Parquet columns typed in the file (instants with a time zone, integers, DOUBLEs, DECIMALs,
    text) are taken in their own type; for random files (negative and null tokens, cached above
    input, NaN and infinite latencies, instants in other zones, FLOAT and text-typed numbers that
    must go the text way) that gives exactly what the text round trip gives: the same facts, or
    the same problem lines."""
    from datetime import datetime, timedelta, timezone
    from decimal import Decimal as D
    from unittest import mock

    import pyarrow as pa
    import pyarrow.parquet as pq
    from hypothesis import HealthCheck, example, given, settings
    from hypothesis import strategies as st

    from ledger.ingest import opening

    zones = [timezone.utc, timezone(timedelta(hours=-5)), timezone(timedelta(hours=5, minutes=30))]
    tokens = st.one_of(st.none(), st.integers(-3, 2**40), st.sampled_from([0, 1, 2**53, 2**53 + 2]))
    latency = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.1, 812.5]))
    row = st.fixed_dictionaries({
        "rid": st.integers(0, 40), "sec": st.integers(0, 86_400 * 40), "zone": st.sampled_from(zones),
        "tenant": st.sampled_from(["acme", "globex", "", None]), "input": tokens, "cached": tokens,
        "output": tokens, "latency": latency, "status": st.sampled_from(["ok", "error", "fine", None])})
    seen = set()

    good = [{"rid": i, "sec": 977 * i, "zone": zones[i % 3], "tenant": "acme", "input": 100 + i, "cached": i,
             "output": 7, "latency": 812.5 + i / 10, "status": "ok"} for i in range(8)]

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @example(rows=good, token_type="int64", latency_type="float64", zone="UTC")
    @example(rows=good, token_type="decimal", latency_type="decimal", zone="America/New_York")
    @example(rows=good, token_type="string", latency_type="float32", zone="UTC")
    @given(rows=st.lists(row, min_size=1, max_size=40), token_type=st.sampled_from(["int64", "int32", "decimal", "string"]),
           latency_type=st.sampled_from(["float64", "float32", "decimal"]), zone=st.sampled_from(["UTC", "America/New_York"]))
    def check(rows, token_type, latency_type, zone):
        def tok(v):
            if v is None:
                return None
            if token_type == "int32":
                return max(min(v, 2**31 - 1), -(2**31))
            return D(v) if token_type == "decimal" else str(v) if token_type == "string" else v

        def lat(v):
            if v is None or latency_type != "decimal":
                return v
            return D(repr(v)).quantize(D("0.001")) if v == v and abs(v) < 1e20 else None

        ttype = {"int64": pa.int64(), "int32": pa.int32(), "decimal": pa.decimal128(20, 0), "string": pa.string()}[token_type]
        ltype = {"float64": pa.float64(), "float32": pa.float32(), "decimal": pa.decimal128(30, 3)}[latency_type]
        base = datetime(2026, 10, 1, tzinfo=timezone.utc)
        table = pa.table({
            "request_id": pa.array([f"r{r['rid']}" for r in rows]),
            "occurred_at": pa.array([(base + timedelta(seconds=r["sec"])).astimezone(r["zone"]) for r in rows],
                                    pa.timestamp("us", tz=zone)),
            "tenant": pa.array([r["tenant"] for r in rows]), "product": pa.array(["chat"] * len(rows)),
            "model": pa.array(["m"] * len(rows)), "pool": pa.array(["p"] * len(rows)),
            "input_tokens": pa.array([tok(r["input"]) for r in rows], ttype),
            "cached_input_tokens": pa.array([tok(r["cached"]) for r in rows], ttype),
            "output_tokens": pa.array([tok(r["output"]) for r in rows], ttype),
            "latency_ms": pa.array([lat(r["latency"]) for r in rows], ltype),
            "status": pa.array([r["status"] for r in rows])})
        path = tmp_path / "h.parquet"
        pq.write_table(table, path)
        direct = _ingest_outcome(path, [])
        with mock.patch.object(opening, "parquet_direct", lambda *a, **k: set()):
            text_way = _ingest_outcome(path, [])
        assert direct == text_way
        seen.add("refused" if isinstance(direct, list) else "ingested")

    check()
    assert seen == {"refused", "ingested"}, seen


def test_parquet_direct_columns():
    """Which Parquet column types are read as they are, and which go the text way."""
    from ledger.ingest import parquet_direct

    types = {"request_id": "VARCHAR", "occurred_at": "TIMESTAMP WITH TIME ZONE", "tenant": "VARCHAR",
             "input_tokens": "BIGINT", "output_tokens": "UINTEGER", "cached_input_tokens": "VARCHAR",
             "ttft_ms": "FLOAT", "latency_ms": "DOUBLE", "reasoning_tokens": "DECIMAL(18,0)", "task_id": "BIGINT"}
    assert parquet_direct("requests", types) == {"request_id", "occurred_at", "tenant", "input_tokens",
                                                 "output_tokens", "latency_ms", "reasoning_tokens"}
    assert parquet_direct("meters", {"quantity": "DECIMAL(18,6)", "occurred_at": "TIMESTAMP"}) == {"quantity"}
    assert parquet_direct("charges", {"amount": "DECIMAL(38,6)"}) == set()  # 32 whole digits do not fit (38,12)
    assert parquet_direct("charges", {"amount": "DECIMAL(30,4)", "period_start": "TIMESTAMP WITH TIME ZONE"}) == {
        "amount", "period_start"}


def test_two_homes_in_one_process_each_get_their_own_batch(tmp_path, db_url, monkeypatch):
    # the ledger is passed down (ledger.config.Home), never read from the environment below the API:
    # two ledgers used in one process, one after the other, the environment pointing at neither
    from ledger.config import Home
    from ledger.ingest import list_batches, undo_batch

    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("LEDGER_HOME", str(elsewhere))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    a, b = Home.at(tmp_path / "a", db_url), Home.at(tmp_path / "b")  # b: SQLite in its folder
    for h in (a, b):
        store.init_store(h.database_url, home=h.path)
    f = write(tmp_path / "r.csv", REQ_HEADER + "\nr1,2026-10-01T00:00:00Z,acme,chat,m,p,,,10,0,5,ok\n"
                                               "r2,2026-10-01T00:01:00Z,acme,chat,m,p,,,20,0,7,ok\n")
    try:
        first = ingest("requests", [f], register_new=True, home=a)
        second = ingest("requests", [f], register_new=True, home=b)  # the same file: new in the other ledger
        again = ingest("requests", [f], home=a)  # ... and all duplicates in its own
        assert (first.rows_new, second.rows_new, again.rows_new, again.rows_duplicate) == (2, 2, 0, 2)
        for h, ids in ((a, [first.batch_id, again.batch_id]), (b, [second.batch_id])):
            with store.session(h.database_url) as s:
                assert [x.id for x in list_batches(s)] == ids
                con = facts.open_ledger_facts(s, h.path)
                assert con.execute("SELECT request_id FROM requests ORDER BY 1").fetchall() == [("r1",), ("r2",)]
                con.close()
            assert {facts.batch_of(p) for p in fact_files(h.path)} == {ids[0]}  # each batch in its own home
        with store.session(b.database_url) as s:
            undo_batch(s, second.batch_id, home=b)
        assert fact_files(b.path) == [] and len(fact_files(a.path)) == 1
        assert not elsewhere.exists()  # nothing looked at the environment's home
    finally:
        store.dispose_engines()
