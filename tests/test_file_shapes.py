"""Real exports read right (issue 25, items 9 to 11): gzip, the JSON shapes tools write, headers in
another case. Every shape of tests/data/shapes/ (its README says where each comes from) gives the
facts of the plain file, to hand-worked numbers; a bad one is one line naming file and line, in the
ledger's words, and changes nothing. Runs on SQLite, and on PostgreSQL when LEDGER_TEST_DATABASE_URL
is set.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest
from pyarrow import csv as pa_csv
from pyarrow.parquet import write_table as pq_write
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.cli import app
from ledger.ingest import IngestError, ingest
from ledger.ingest.bill import ingest_bill
from ledger.ingest.sources import ingest_from

pytestmark = pytest.mark.store
runner = CliRunner()
DATA = Path(__file__).parent / "data"
SHAPES = DATA / "shapes"
ADAPTERS = DATA / "adapters"
BILL = DATA / "bills" / "aws-focus-2026-10.csv"
PLAIN = SHAPES / "requests.csv"
COLS = ("request_id, strftime(occurred_at, '%Y-%m-%dT%H:%M:%SZ'), tenant, product, model, pool, provider, task_id, "
        "input_tokens, cached_input_tokens, output_tokens, status, latency_ms")
# Worked by hand from requests.csv: r-0002 at 09:00:04+02:00 is 07:00:04 UTC; its latency is empty
EXPECTED = [
    ("r-0001", "2026-10-01T09:00:03Z", "acme", "chat", "llama-3.1-8b", "h100-chat", None, "t-17", 1155, 512, 211, "ok",
     2310.5),
    ("r-0002", "2026-10-01T07:00:04Z", "acme", "code-assist", "gpt-5", None, "openai", "t-18", 2048, 0, 28, "timeout",
     None),
    ("r-0003", "2026-10-01T09:01:00Z", "globex", "chat", "gpt-5", None, "openai", None, 300, 100, 50, "ok", 800.0),
]
SHAPE_FILES = ["requests.csv", "requests.csv.gz", "requests.jsonl", "requests.json", "requests_pretty.json",
               "requests_pretty.json.gz", "requests_objects.json", "requests_snowflake.csv.gz",
               "requests_upper.parquet"]
#: A good row's object, without its closing brace.
ROW = ('{"request_id": "r1", "occurred_at": "2026-10-01T00:00:00Z", "tenant": "acme", "product": "chat", '
       '"model": "m", "pool": "p", "input_tokens": 1, "output_tokens": 1, "status": "ok"')
ENGINE_WORDS = ("Invalid Input Error", "Malformed JSON", "Binder Error", "Traceback", "duckdb")


def run(*args: str):
    return runner.invoke(app, list(args))


def register() -> None:
    with store.session() as s:
        for t in ("acme", "globex"):
            store.add_dim(s, kind="tenant", name=t)
        for p in ("chat", "code-assist"):
            store.add_dim(s, kind="product", name=p)
        s.commit()


def query(sql: str) -> list[tuple]:
    with store.session() as s:
        return facts.open_ledger_facts(s, config.ledger_home()).execute(sql).fetchall()


def batches() -> list[dict]:
    return json.loads(run("batches", "--json").stdout)


def state(home: Path) -> tuple:
    """What an ingest may change: the fact files and the batches."""
    return sorted(str(p) for p in (home / "facts").rglob("*.parquet") if "_staging" not in p.parts), \
        [b["id"] for b in batches()]


def scratch_left(home: Path) -> list[Path]:
    """Unpacked copies and links an ingest may leave in the ledger home (none, after any ingest)."""
    return [p for p in home.rglob("*") if p.name.startswith(("unpacked-", "source-", "ledger-bill-"))]


def refused(home: Path, path: Path, *expected: str, kind: str = "requests", extra: tuple[str, ...] = ()) -> list[str]:
    """Ingest `path`: exit 1, exactly the `expected` lines (``{f}`` is the file), never the engine's
    words, nothing changed, no scratch left."""
    before = state(home)
    r = run("ingest", kind, str(path), *extra)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1, r.output
    assert lines == [e.format(f=path) for e in expected], lines
    assert not any(w in r.output for w in ENGINE_WORDS), r.output
    assert state(home) == before
    assert scratch_left(home) == []
    return lines


# ---- every shape, the same facts -----------------------------------------------------------------

@pytest.mark.parametrize("name", SHAPE_FILES)
def test_every_shape_gives_the_hand_worked_facts(ledger_home, name):
    register()
    r = run("ingest", "requests", str(SHAPES / name), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["rows_read"], out["rows_new"], out["rows_duplicate"]) == (3, 3, 0)
    assert query(f"SELECT {COLS} FROM requests ORDER BY request_id") == EXPECTED
    assert query("SELECT sum(input_tokens), sum(cached_input_tokens), sum(output_tokens) FROM requests") == [
        (3503, 612, 289)]
    assert scratch_left(ledger_home) == []


def test_all_shapes_after_the_plain_file_are_duplicates_typed_value_for_value(ledger_home):
    register()
    assert ingest("requests", [PLAIN]).rows_new == 3
    for name in SHAPE_FILES[1:]:  # a conflict (same key, other content) would be refused
        result = ingest("requests", [SHAPES / name])
        assert (result.rows_new, result.rows_duplicate) == (0, 3), name
    assert query("SELECT count(*) FROM requests") == [(3,)]


# ---- 9. gzip -------------------------------------------------------------------------------------

def test_a_gzip_file_is_recorded_by_its_own_bytes_and_ingesting_it_again_adds_nothing(ledger_home):
    register()
    gz = SHAPES / "requests.csv.gz"
    first = ingest("requests", [gz])
    assert first.rows_new == 3
    [f] = batches()[0]["files"]
    # the digest and size are those of the compressed bytes (what `sha256sum requests.csv.gz` says)
    assert f == {"path": str(gz), "sha256": hashlib.sha256(gz.read_bytes()).hexdigest(), "format": "csv.gz",
                 "rows": 3, "bytes": gz.stat().st_size}
    again = run("ingest", "requests", str(gz))
    assert again.exit_code == 0 and "3 rows read, 0 new, 3 duplicate: already in the ledger" in again.output
    assert query("SELECT count(*) FROM requests") == [(3,)]
    assert not (ledger_home / "facts" / "_tmp").exists() and scratch_left(ledger_home) == []


def test_gzip_is_told_by_its_bytes_with_format_given_or_any_name(ledger_home, tmp_path):
    register()
    as_csv = tmp_path / "export.csv"  # a gzip file whose name does not say so
    shutil.copy(SHAPES / "requests.csv.gz", as_csv)
    assert ingest("requests", [as_csv]).rows_new == 3
    r = run("ingest", "requests", "--format", "csv", str(SHAPES / "requests.csv.gz"))
    assert r.exit_code == 0 and "0 new, 3 duplicate" in r.output, r.output
    r = run("ingest", "requests", "--format", "json", str(SHAPES / "requests_pretty.json.gz"))
    assert r.exit_code == 0 and "0 new, 3 duplicate" in r.output, r.output


def test_problems_in_a_gzip_file_name_the_lines_the_plain_file_names(ledger_home, tmp_path):
    register()
    text = (PLAIN.read_text().replace("t-17,1155,512", 't-17,"a\nb",512')  # a quoted line break: r-0001 is 2 lines
            .replace("timeout,", "late,") + "\n" + "r-0004,2026-10-01T09:01:00Z,acme,chat,m,,openai,,-1,0,5,ok,\n")
    plain, packed = tmp_path / "bad.csv", tmp_path / "bad.csv.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode(), mtime=0))
    # physical lines: 1 header, 2-3 r-0001, 4 r-0002, 5 r-0003, 6 blank, 7 r-0004
    expected = ["{f}:2: input_tokens: 'a?b' is not a whole number",
                "{f}:4: status: 'late' is not one of ok, error, timeout, cancelled",
                "{f}:7: input_tokens: '-1' is negative"]
    refused(ledger_home, plain, *expected)
    refused(ledger_home, packed, *expected)


def test_the_line_limit_and_the_header_check_hold_inside_gzip(ledger_home, tmp_path):
    long = tmp_path / "long.csv.gz"
    long.write_bytes(gzip.compress((PLAIN.read_text() + "r-9," + "x" * (2 << 20) + "\n").encode()))
    refused(ledger_home, long, "{f}:5: line longer than 1048576 bytes (2097156 bytes)")
    latin = tmp_path / "latin.csv.gz"
    latin.write_bytes(gzip.compress("request_id,t\xe9nant\n".encode("latin-1")))
    refused(ledger_home, latin, "{f}:1: header is not UTF-8 (invalid continuation byte at byte 12)")
    empty = tmp_path / "empty.csv.gz"
    empty.write_bytes(gzip.compress(b""))
    refused(ledger_home, empty, "{f}: file is empty: expected a header line and rows")


def test_a_broken_gzip_is_one_line_naming_the_file(ledger_home, tmp_path):
    data = (SHAPES / "requests.csv.gz").read_bytes()
    truncated = tmp_path / "truncated.csv.gz"
    truncated.write_bytes(data[: len(data) // 2])
    refused(ledger_home, truncated, "{f}: the gzip file is truncated (it ends before gzip's end-of-stream marker): "
                                    "nothing was read")
    corrupt = tmp_path / "corrupt.csv.gz"
    corrupt.write_bytes(data[:-8] + bytes(b ^ 0xFF for b in data[-8:-4]) + data[-4:])  # a wrong CRC-32
    r = run("ingest", "requests", str(corrupt))
    assert r.output.startswith(f"{corrupt}: the gzip file is corrupt (CRC check failed 0x")
    refused(ledger_home, corrupt, r.output.strip())
    garbled = tmp_path / "garbled.csv.gz"
    garbled.write_bytes(data[:12] + b"\xff" * 40 + data[52:])
    assert refused(ledger_home, garbled, *run("ingest", "requests", str(garbled)).output.strip().splitlines())[0] \
        .startswith(f"{garbled}: the gzip file is corrupt (")
    not_gz = tmp_path / "plain.csv.gz"
    shutil.copy(PLAIN, not_gz)
    refused(ledger_home, not_gz, "{f}: the name ends in .gz but the file is not gzip-compressed (it does not start "
                                 "with gzip's bytes 1f 8b)")
    zstd = tmp_path / "requests.csv.zst"
    zstd.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    refused(ledger_home, zstd, "{f}: is zstd-compressed: the ledger reads gzip (.gz) or plain files; unpack it first",
            extra=("--format", "csv"))
    refused(ledger_home, tmp_path / "x.gz", "{f}: no such file")
    nameless = tmp_path / "x.gz"
    shutil.copy(SHAPES / "requests.csv.gz", nameless)
    refused(ledger_home, nameless, "{f}: cannot tell the format from the extension '.gz'; use --format")


# ---- 10. JSON: arrays and documents --------------------------------------------------------------

def test_a_bad_value_names_the_line_its_object_starts_on(ledger_home, tmp_path):
    register()
    for name, line in (("requests_pretty.json", 32), ("requests_objects.json", 31), ("requests.json", 4),
                       ("requests.jsonl", 3)):
        bad = tmp_path / name
        bad.write_text((SHAPES / name).read_text().replace('"globex"', '"globex "'))
        refused(ledger_home, bad, f"{{f}}:{line}: tenant: 'globex ' has white space around it (or is only white space)")
    packed = tmp_path / "requests_pretty.json.gz"
    packed.write_bytes(gzip.compress((tmp_path / "requests_pretty.json").read_bytes()))
    refused(ledger_home, packed, "{f}:32: tenant: 'globex ' has white space around it (or is only white space)")
    one_line = tmp_path / "one_line.json"  # an array on one line (an API response): every element is on line 1
    one_line.write_text(json.dumps(json.loads((tmp_path / "requests_pretty.json").read_text())))
    refused(ledger_home, one_line, "{f}:1: tenant: 'globex ' has white space around it (or is only white space)")


@pytest.mark.parametrize("name,text,expected", [
    ("missing comma", '[\n  {"request_id": "r1"}\n  {"request_id": "r2"}\n]\n',
     "{f}:3: expected , or ] after element [0] of the array, found '{{' (column 3)"),
    ("missing comma in an object", '[\n  {\n    "request_id": "r1"\n    "tenant": "acme"\n  }\n]\n',
     "{f}:4: malformed JSON: a comma (or the end of the object) is expected here (column 5)"),
    ("trailing comma after the last element", '[\n  {"request_id": "r1"},\n]\n',
     "{f}:2: a trailing comma after the last element of the array (not JSON) (column 23)"),
    ("trailing comma in an object", '[\n  ' + ROW + ',\n  }\n]\n',
     f"{{f}}:2: a trailing comma (not JSON) (column {len(ROW) + 3})"),
    ("an element that is not an object", '[\n  {"request_id": "r1"},\n  "r2"\n]\n',
     "{f}:3: not a JSON object: one row is one object {{...}}"),
    ("the array never closes", '[\n  {"request_id": "r1"},\n  {"request_id": "r2"}\n',
     "{f}:4: the JSON array is not closed: the file ends before its ] (column 1)"),
    ("text after the array", '[{"request_id": "r1"}]\n[{"request_id": "r2"}]\n',
     "{f}:2: text after the end of the JSON array (a file holds one array) (column 1)"),
    ("a string never closed", '{\n  "request_id": "r1,\n  "tenant": "acme"\n}\n',
     "{f}:2: malformed JSON: a control character (a raw tab or line break) inside a string (column 21)"),
    ("not JSON at all", "request_id,tenant\nr1,acme\n",
     "{f}:1: not JSON Lines, a JSON array or JSON objects: expected a JSON object {{...}}, found 'r' (column 1)"),
    ("a JSON Lines line cut in two", '{"request_id": "r1"}\n{"request_id":\n "r2"}\n',
     "{f}:2: the JSON object does not end on its line (column 15): JSON Lines hold one whole object per line"),
    ("a JSON Lines line with text after it", '{"request_id": "r1"}\n{"request_id": "r2"} x\n',
     "{f}:2: text after the end of the object (column 22): JSON Lines hold one object per line"),
    ("bytes that are not UTF-8", '[\n  {"request_id": "r1"},\n  {"request_id": "r\xe9"}\n]\n',
     "{f}:3: bytes that are not UTF-8"),
    ("an empty array", "[]\n", "{f}: no rows: the file holds no JSON object"),
    ("a number where a row goes, in JSON Lines", '{"request_id": "r1"}\n\n5\n',
     "{f}:3: not a JSON object: one row is one object {{...}}"),
])
def test_malformed_json_is_one_line_in_the_ledgers_words(ledger_home, tmp_path, name, text, expected):
    f = tmp_path / "bad.json"
    f.write_bytes(text.encode("latin-1"))
    refused(ledger_home, f, expected)


def test_a_json_object_longer_than_a_row_may_be_is_refused_in_every_shape(ledger_home, tmp_path):
    register()
    row = json.loads(ROW + "}")
    big = {**row, "request_id": "r2", "model": "m" * (1 << 20)}
    arr = tmp_path / "big.json"
    arr.write_text("[\n" + json.dumps(row) + ",\n" + json.dumps(big) + "\n]\n")
    refused(ledger_home, arr, "{f}:3: a JSON object longer than 1048576 bytes")
    lines = tmp_path / "big.jsonl"
    lines.write_text(json.dumps(row) + "\n" + json.dumps(big) + "\n")
    refused(ledger_home, lines, f"{{f}}:2: line longer than 1048576 bytes ({len(json.dumps(big))} bytes)")


# ---- 11. headers in another case ------------------------------------------------------------------

def test_columns_differing_only_in_case_are_refused_naming_the_other(ledger_home, tmp_path):
    register()
    header, rest = PLAIN.read_text().split("\n", 1)
    both = tmp_path / "both.csv"
    both.write_text(header.replace("tenant,", "Tenant,tenant,") + "\n" + rest.replace("acme,", "acme,acme,")
                    .replace("globex,", "globex,globex,"))
    refused(ledger_home, both, "{f}:1: Tenant: the file also has the column 'tenant': names that differ only in case "
                               "are ambiguous (keep one)")
    keys = tmp_path / "keys.jsonl"
    rows = [json.loads(x) for x in (SHAPES / "requests.jsonl").read_text().splitlines()]
    rows[1]["Tenant"] = rows[1].pop("tenant")
    keys.write_text("".join(json.dumps(r) + "\n" for r in rows))
    refused(ledger_home, keys, "{f}: Tenant: the file also has the column 'tenant': names that differ only in case "
                               "are ambiguous (keep one)")
    pq = tmp_path / "both.parquet"  # pyarrow writes both names (DuckDB would write Tenant_1)
    table = pa_csv.read_csv(PLAIN)
    pq_write(table.append_column("Tenant", table.column("tenant")), pq)
    refused(ledger_home, pq, "{f}: Tenant: the file also has the column 'tenant': names that differ only in case "
                             "are ambiguous (keep one)")
    # one column in another case is that column; an unknown one is still unknown, as the file spells it
    odd = tmp_path / "odd.csv"
    odd.write_text(header.replace("tenant,", "TENANT,") + ",Colour\n" + rest.replace("\n", ",red\n"))
    expected = ", ".join(facts.KINDS["requests"].names)
    refused(ledger_home, odd, "{f}:1: Colour: unknown column (expected: " + expected + ")")
    ok = tmp_path / "ok.csv"
    ok.write_text(header.replace("tenant,", "TENANT,").replace("status", "Status") + "\n" + rest)
    assert ingest("requests", [ok]).rows_new == 3
    assert query(f"SELECT {COLS} FROM requests ORDER BY request_id") == EXPECTED


# ---- the bill ------------------------------------------------------------------------------------

BILL_COLS = ("charge_period_start, charge_period_end, charge_category, charge_class, provider, service_name, "
             "billed_cost, effective_cost, list_cost, billing_currency, tags")


def test_a_gzip_bill_and_a_bill_with_lower_case_names_give_the_bills_facts(ledger_home, tmp_path):
    plain = ingest_bill([BILL])
    assert (plain.rows_read, plain.rows_new) == (14, 14)
    want = query(f"SELECT {BILL_COLS} FROM bill ORDER BY ALL")
    assert query("SELECT sum(billed_cost), sum(effective_cost) FROM bill") == [(D("394.03"), D("394.03"))]
    packed = ingest_bill([SHAPES / "aws-focus-2026-10.csv.gz"])
    assert (packed.rows_new, packed.rows_duplicate) == (0, 14)  # the same line ids: the same rows
    assert packed.files[0].format == "focus:csv.gz"
    assert run("batches", "undo", batches()[0]["id"]).exit_code == 0
    assert run("batches", "undo", batches()[0]["id"]).exit_code == 0
    lower = ingest_bill([SHAPES / "focus-2026-10-postgres.csv"])
    assert lower.rows_new == 14
    assert query(f"SELECT {BILL_COLS} FROM bill ORDER BY ALL") == want
    extras = json.loads(query("SELECT extras FROM bill WHERE extras IS NOT NULL LIMIT 1")[0][0])
    assert set(extras) == {"x_costcategories", "x_discounts", "x_operation", "x_servicecode", "x_usagetype"}
    assert scratch_left(ledger_home) == []


def test_a_bad_value_in_a_lower_case_bill_names_the_column_as_the_file_spells_it(ledger_home, tmp_path):
    text = (SHAPES / "focus-2026-10-postgres.csv").read_text().split("\n")
    text[6] = text[6].replace("us-east-1a,0.0,", "us-east-1a,n/a,", 1)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(text))
    before = state(ledger_home)
    with pytest.raises(IngestError) as e:
        ingest_bill([bad])
    assert e.value.lines() == [f"{bad}:7: billedcost: 'n/a' is not a decimal number"]
    both = tmp_path / "both.csv"
    rows = BILL.read_text().split("\n", 1)
    both.write_text(rows[0] + ",billedcost\n" + rows[1].replace("\n", ",1\n"))
    with pytest.raises(IngestError) as e:
        ingest_bill([both])
    assert e.value.lines() == [f"{both}:1: billedcost: the file also has the column 'BilledCost': names that differ "
                               "only in case are ambiguous (keep one)"]
    assert state(ledger_home) == before


# ---- other tools' exports ------------------------------------------------------------------------

SOURCE_COLS = ("request_id, tenant, product, model, pool, provider, task_id, input_tokens, cached_input_tokens, "
               "cache_write_input_tokens, cache_write_1h_input_tokens, output_tokens, reasoning_tokens, status, "
               "ttft_ms, latency_ms, reported_cost, reported_currency")


def source_rows() -> list[tuple]:
    return query(f"SELECT {SOURCE_COLS} FROM requests ORDER BY request_id")


def undo_all() -> None:
    for b in batches():
        assert run("batches", "undo", b["id"]).exit_code == 0


@pytest.mark.parametrize("name,fmt", [("litellm_spend_logs.json", "litellm:jsonl"),
                                      ("litellm_spend_logs.csv.gz", "litellm:csv.gz"),
                                      ("litellm_spend_logs_lowercase.csv", "litellm:csv")])
def test_litellm_exports_in_other_shapes_give_the_csv_samples_facts(ledger_home, name, fmt):
    m = ADAPTERS / "litellm_map.toml"
    ingest_from("litellm", "requests", [ADAPTERS / "litellm_spend_logs.csv"], m, register_new=True)
    want = source_rows()
    # hand-worked in tests/test_adapters.py: 1000 + 3000 + 2000 + 0 input, 400 + 1200 + 512 cached
    assert [(r[0], r[7], r[8], r[16]) for r in want] == [
        ("chatcmpl-a1", 1000, 400, D("0.000012345679")), ("chatcmpl-a2", 3000, 1200, D("0.0123")),
        ("chatcmpl-a3", 2000, 512, D("0")), ("chatcmpl-a4", 0, 0, D("0"))]
    undo_all()
    result = ingest_from("litellm", "requests", [SHAPES / name], m)
    assert (result.rows_read, result.rows_new) == (4, 4)
    assert result.files[0].format == fmt
    assert source_rows() == want
    assert scratch_left(ledger_home) == []


@pytest.mark.parametrize("name", ["otel_genai_trace.json", "otel_genai_trace.json.gz"])
def test_one_pretty_printed_otlp_document_gives_the_json_lines_facts(ledger_home, name):
    m = ADAPTERS / "otel_map.toml"
    ingest_from("otel", "requests", [ADAPTERS / "otel_traces.jsonl"], m, register_new=True)
    want = source_rows()
    assert len(want) == 4 and sum(r[7] for r in want) == 6000  # 1000 + 3000 + 2000 + 0 (test_adapters_sources)
    undo_all()
    result = ingest_from("otel", "requests", [SHAPES / name], m)
    assert result.rows_new == 4
    assert result.files[0].format == ("otel:jsonl.gz" if name.endswith(".gz") else "otel:jsonl")
    assert source_rows() == want


def test_a_bad_span_of_a_pretty_document_names_the_line_the_document_starts_on_and_the_span(ledger_home, tmp_path):
    bad = tmp_path / "trace.json"
    text = (SHAPES / "otel_genai_trace.json").read_text()
    assert text.count('"intValue": "2000"') == 1
    bad.write_text(text.replace('"intValue": "2000"', '"intValue": "-5"'))
    r = run("ingest", "requests", "--source", "otel", str(bad), "--map", str(ADAPTERS / "otel_map.toml"),
            "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{bad}:1: attributes.gen_ai.usage.input_tokens (input_tokens): '-5' is negative (span 00f067aa0ba902b7)"]


def test_the_published_otlp_example_reads_as_one_document(ledger_home, tmp_path):
    from ledger.ingest.sources.reading import open_source

    con = duckdb.connect()
    src = open_source(con, SHAPES / "otel_example_trace.json", None, tmp_path / "scratch")
    assert src.shape == "documents"
    got = con.execute(f"SELECT _line, json_extract_string(_j, '$.resourceSpans[0].scopeSpans[0].spans[0].spanId'), "
                      f"json_extract_string(_j, '$.resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano') "
                      f"FROM ({src.relation})").fetchall()
    assert got == [(1, "EEE19B7EC3C1B174", "1544712660000000000")]


def test_malformed_source_json_is_one_line_in_the_ledgers_words(ledger_home, tmp_path):
    bad = tmp_path / "spend.json"
    text = (SHAPES / "litellm_spend_logs.json").read_text()
    bad.write_text(text.replace('"model":"claude-sonnet-4-5",', '"model":', 1))  # a key with no value
    r = run("ingest", "requests", "--source", "litellm", str(bad), "--map", str(ADAPTERS / "litellm_map.toml"))
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{bad}:1: malformed JSON: a comma (or the end of the object) is expected here (column 1179)"]
    lines = tmp_path / "spans.jsonl"
    first, second = (ADAPTERS / "otel_traces.jsonl").read_text().splitlines()
    lines.write_text(first + "\n" + second[:-1] + "\n")  # the second request loses its closing brace
    r = run("ingest", "requests", "--source", "otel", str(lines), "--map", str(ADAPTERS / "otel_map.toml"))
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{lines}:2: the JSON object does not end on its line (column {len(second)}): JSON Lines hold one whole "
        "object per line"]
    assert scratch_left(ledger_home) == []


def test_a_map_root_matching_two_source_columns_but_for_case_is_refused(ledger_home, tmp_path):
    both = tmp_path / "spend.csv"
    header, rest = (ADAPTERS / "litellm_spend_logs.csv").read_text().split("\n", 1)
    both.write_text(header + ",starttime\n" + rest.replace("\n", ",x\n"))
    r = run("ingest", "requests", "--source", "litellm", str(both), "--map", str(ADAPTERS / "litellm_map.toml"))
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{both}:1: startTime: the file has both 'startTime' and 'starttime': names that differ only in case are "
        "ambiguous (keep one)"]


def test_a_conflicting_key_names_the_lines_its_objects_start_on(ledger_home, tmp_path):
    register()
    rows = json.loads((SHAPES / "requests_pretty.json").read_text())
    rows[2]["request_id"] = "r-0001"  # the third element (line 32) repeats the first's key (line 2)
    conf = tmp_path / "conflict.json"
    conf.write_text(json.dumps(rows, indent=2))
    refused(ledger_home, conf, "{f}:32: request_id: 'r-0001' is already in {f}:2 with different content (a key must "
                               "not change): keep one of the two rows")


# ---- every kind ----------------------------------------------------------------------------------

KINDS = SHAPES / "kinds"


@pytest.mark.parametrize("kind,plain,shaped,check", [
    # e1 at 10:00+02:00 is 08:00 UTC; 1.000000001 GiB kept to the 1e-9
    ("meters", "meters.csv", "meters.csv.gz",
     ("SELECT strftime(min(occurred_at), '%H:%M'), sum(quantity) FROM meters", [("08:00", D("4.000000001"))])),
    ("outcomes", "outcomes.csv", "outcomes.jsonl.gz",
     ("SELECT count(*), count(*) FILTER (WHERE outcome = 'success') FROM outcomes", [(2, 1)])),
    # 8 + 1 GPUs; the JSON's Pool, Device and Region are pool, device and region
    ("fleet", "fleet.csv", "fleet.json", ("SELECT sum(gpus), min(pool), min(device) FROM fleet",
                                          [(9, "h100-pool", "H100-SXM-80GB")])),
    ("charges", "charges.csv", "charges.json.gz",
     ("SELECT sum(amount) FILTER (WHERE currency = 'USD'), sum(amount) FILTER (WHERE currency = 'EUR') FROM charges",
      [(D("1234.567891"), D("900"))])),
])
def test_every_kind_reads_gzip_json_shapes_and_other_cases_to_the_plain_files_facts(ledger_home, kind, plain, shaped,
                                                                                    check):
    register()
    first = ingest(kind, [KINDS / shaped])
    assert (first.rows_read, first.rows_new) == (2, 2)
    assert query(check[0]) == check[1]
    again = ingest(kind, [KINDS / plain])  # the plain file: the same typed rows
    assert (again.rows_new, again.rows_duplicate) == (0, 2)
    assert scratch_left(ledger_home) == []


def test_unpacking_and_walking_hold_one_buffer_never_the_file(tmp_path):
    """Memory does not grow with the file: a 48 MiB gzip is unpacked, and a 48 MiB JSON array
    walked, with a few MiB of Python memory at most."""
    import tracemalloc

    from ledger.ingest.shapes import gunzip, json_scan

    row = (SHAPES / "requests.jsonl").read_text().splitlines()[0]
    n = (48 << 20) // len(row)
    big = tmp_path / "big.json"
    with big.open("w") as fh:
        fh.write("[\n")
        for i in range(n):
            fh.write(row + (",\n" if i < n - 1 else "\n"))
        fh.write("]\n")
    packed = tmp_path / "big.json.gz"
    with big.open("rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst)
    tracemalloc.start()
    out = gunzip(packed, "big.json.gz", tmp_path / "scratch", ".json")
    _, peak_unpack = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    lines = json_scan(out, "big.json", "array", 1 << 20, {n})
    _, peak_walk = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert out.stat().st_size == big.stat().st_size and lines == {n: n + 1}
    assert peak_unpack < 8 << 20, peak_unpack  # a 1 MiB copy buffer and gzip's own
    assert peak_walk < 24 << 20, peak_walk  # the text buffer: a 4 MiB chunk and the 1 MiB an object may have


def test_a_source_or_bill_csv_that_does_not_parse_names_its_line_in_the_ledgers_words(ledger_home, tmp_path):
    spend = tmp_path / "spend.csv.gz"  # a quote never closed on line 4, inside gzip
    head = "\n".join((ADAPTERS / "litellm_spend_logs.csv").read_text().splitlines()[:3])
    spend.write_bytes(gzip.compress((head + '\nchatcmpl-a9,acompletion,"unterminated,0.0,1,1,0\n').encode()))
    r = run("ingest", "requests", "--source", "litellm", str(spend), "--map", str(ADAPTERS / "litellm_map.toml"))
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"{spend}:4: a quote that is never closed"]
    bill = tmp_path / "bill.csv"
    bill.write_text("\n".join(BILL.read_text().splitlines()[:3]) + "\nus-east-1a,0.0,123456789012\n")
    with pytest.raises(IngestError) as e:
        ingest_bill([bill])
    assert e.value.lines() == [f"{bill}:4: fewer fields than the header has"]
    assert batches() == [] and scratch_left(ledger_home) == []
