"""`ledger ingest --source langfuse | otel | langfuse-scores`: Langfuse observations, OpenTelemetry GenAI
spans and Langfuse scores read directly (the LiteLLM adapter has tests/test_adapters.py).

The samples under tests/data/adapters/ (see its README) hold the same four requests as the LiteLLM
sample, in each source's own convention; they ingest to hand-worked rows, their token buckets sum to
the source's totals with cached tokens counted once, a bad row is one line naming file, line and
field and changes nothing, and the same requests allocate to the same lines as from the ledger's CSV.
Runs on SQLite, and on PostgreSQL when set.
"""
from __future__ import annotations

import json
import shutil
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.cli import app
from ledger.ingest import IngestError
from ledger.ingest.sources import ingest_from

pytestmark = pytest.mark.store
runner = CliRunner()
DATA = Path(__file__).parent / "data" / "adapters"
ROOT = Path(__file__).resolve().parents[1]
OBS, OBS_MAP = DATA / "langfuse_observations.jsonl", DATA / "langfuse_map.toml"
SPANS, SPANS_MAP = DATA / "otel_traces.jsonl", DATA / "otel_map.toml"
SCORES, SCORES_MAP = DATA / "langfuse_scores.csv", DATA / "langfuse_scores_map.toml"
TOKENS = ("tenant, product, model, pool, provider, task_id, input_tokens, cached_input_tokens, cache_write_input_tokens, "
          "cache_write_1h_input_tokens, output_tokens, reasoning_tokens, status, ttft_ms, latency_ms, reported_cost, "
          "reported_currency")


def run(*args: str):
    return runner.invoke(app, list(args))


def rows(kind: str = "requests", cols: str = "request_id, " + TOKENS) -> list[tuple]:
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
        return con.execute(f"SELECT {cols} FROM {kind} ORDER BY 1, 2").fetchall()


def batch_count() -> int:
    with store.session() as s:
        return sum(len(v) for v in facts.committed_batches(s).values())


# Worked by hand from langfuse_observations.jsonl. Langfuse's usage_details keys are disjoint buckets
# (it prices each key apart): input_tokens = input + cache reads + cache writes, never input alone
# and never the reads added to an input that holds them.
# obs-a1: input 600 + input_cached_tokens 400 = 1000; output 147 + output_reasoning_tokens 64 = 211;
#         total 1211 = 1000 + 211; total_cost 0.00291 USD
# obs-a2: input 300 + cache_read 1200 + cache_creation 1000 (5 min) + input_cache_creation_1h 500 = 3000
# span-t1 is a SPAN: not a request. obs-a3 is served by the pool (metadata.endpoint), no total_cost.
# obs-a4: level ERROR -> error, no completion_start_time -> no ttft
LANGFUSE = [
    ("obs-a1", "acme", "chat", "gpt-5", None, "openai", "t1", 1000, 400, 0, 0, 211, 64, "ok", 420.0, 2310.0,
     D("0.00291"), "USD"),
    ("obs-a2", "acme", "code-assist", "claude-sonnet-4-5", None, "anthropic", "t2", 3000, 1200, 1000, 500, 150, 0,
     "ok", 500.0, 3000.0, D("0.01026"), "USD"),
    ("obs-a3", "beta", "untagged", "llama-3.1-8b", "h100-chat", None, "t3", 2000, 512, 0, 0, 100, 0, "ok", 200.0,
     1500.0, None, None),
    ("obs-a4", "beta", "chat", "gpt-5", None, "openai", "t4", 0, 0, 0, 0, 0, 0, "error", None, 30000.0, D("0"), "USD"),
]
# Worked by hand from otel_traces.jsonl. gen_ai.usage.input_tokens includes cache reads and writes
# (the OTel GenAI conventions), so it is taken as it is; the invoke_agent span (which repeats its
# child's usage) and the execute_tool span are not requests. OTel gives no 1-hour split: the 1500
# cache writes are 5-minute writes. error.type / status ERROR -> error. OTel carries no cost.
T1, T2, T3, T4 = ("5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c",
                  "4bf92f3577b34da6a3ce929d0e0e4736", "8a3c60f7d188f8fa79d48a391a778fa6")
OTEL = sorted([
    (f"{T1}-eee19b7ec3c1b173", "acme", "chat-api", "gpt-5", None, "openai", T1, 1000, 400, 0, 0, 211, 64, "ok", None,
     2310.0, None, None),
    (f"{T2}-b7ad6b7169203331", "acme", "code-assist", "claude-sonnet-4-5", None, "anthropic", T2, 3000, 1200, 1500, 0,
     150, 0, "ok", None, 3000.0, None, None),
    (f"{T3}-00f067aa0ba902b7", "beta", "chat-api", "llama-3.1-8b", "h100-chat", None, T3, 2000, 512, 0, 0, 100, 0, "ok",
     None, 1500.0, None, None),
    (f"{T4}-53995c3f42cd8ad8", "beta", "chat-api", "gpt-5", None, "openai", T4, 0, 0, 0, 0, 0, 0, "error", None,
     30000.0, None, None),
])


def test_langfuse_observations_ingest_to_the_hand_worked_rows(ledger_home):
    r = run("ingest", "requests", "--source", "langfuse", str(OBS), "--map", str(OBS_MAP), "--register-new")
    assert r.exit_code == 0, r.output
    assert "4 rows read, 4 new" in r.output
    assert rows() == LANGFUSE
    batch = json.loads(run("batches", "--json").stdout)[0]
    assert [(f["path"], f["format"]) for f in batch["files"]] == [(str(OBS), "langfuse:jsonl")]
    again = run("ingest", "requests", "--source", "langfuse", str(OBS), "--map", str(OBS_MAP))
    assert again.exit_code == 0 and "0 new, 4 duplicate" in again.output, again.output


def test_langfuse_buckets_sum_to_its_totals_and_cached_tokens_count_once(ledger_home):
    ingest_from("langfuse", "requests", [OBS], OBS_MAP, register_new=True)
    got = {r[0]: r for r in rows()}
    for line in OBS.read_text().splitlines():
        obs = json.loads(line)
        if obs["type"] != "GENERATION":
            assert obs["id"] not in got
            continue
        usage, row = obs["usage_details"], got[obs["id"]]
        inp, cached, w5, w1h, out = row[7], row[8], row[9], row[10], row[11]
        if "total" in usage:
            assert inp + out == usage["total"], obs["id"]
        assert inp + out == sum(v for k, v in usage.items() if k != "total")  # every bucket once
        assert cached + w5 + w1h <= inp and inp - cached - w5 - w1h == usage["input"]  # uncached part kept


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_langfuse_csv_and_parquet_exports_give_the_same_rows(ledger_home, tmp_path, fmt):
    out = tmp_path / f"obs.{fmt}"
    read = (f"read_json('{OBS}', format='newline_delimited', records=true, columns={{id: 'VARCHAR', "
            "trace_id: 'VARCHAR', type: 'VARCHAR', start_time: 'VARCHAR', end_time: 'VARCHAR', "
            "completion_start_time: 'VARCHAR', provided_model_name: 'VARCHAR', metadata: 'JSON', level: 'VARCHAR', "
            "usage_details: 'JSON', cost_details: 'JSON', total_cost: 'DOUBLE', tags: 'JSON'})")
    if fmt == "csv":  # the export's CSV: objects and arrays as JSON text, null as an empty field
        duckdb.sql(f"COPY (SELECT * REPLACE (CAST(metadata AS VARCHAR) AS metadata, CAST(usage_details AS VARCHAR) "
                   f"AS usage_details, CAST(cost_details AS VARCHAR) AS cost_details, CAST(tags AS VARCHAR) AS tags) "
                   f"FROM {read}) TO '{out}' (HEADER, DELIMITER ',')")
    else:  # typed Parquet: timestamps, maps for metadata and usage, a list of tags
        duckdb.sql(f"COPY (SELECT id, trace_id, type, CAST(start_time AS TIMESTAMP) AS start_time, "
                   "CAST(end_time AS TIMESTAMP) AS end_time, CAST(completion_start_time AS TIMESTAMP) AS "
                   "completion_start_time, provided_model_name, CAST(metadata AS MAP(VARCHAR, VARCHAR)) AS metadata, "
                   "level, CAST(usage_details AS MAP(VARCHAR, BIGINT)) AS usage_details, total_cost, "
                   f"CAST(tags AS VARCHAR[]) AS tags FROM {read}) TO '{out}' (FORMAT parquet)")
    ingest_from("langfuse", "requests", [out], OBS_MAP, register_new=True)
    assert rows() == LANGFUSE


def test_a_langfuse_row_that_counts_cached_tokens_twice_is_refused_unless_the_map_says_inclusive(ledger_home, tmp_path):
    # langfuse/langfuse#10592: an exporter put OpenAI's inclusive prompt count (1000) in `input` and
    # the cached 400 beside it; the row's own total (1211) shows the overlap.
    bad = tmp_path / "obs.jsonl"
    bad.write_text(OBS.read_text().replace('"input": 600,', '"input": 1000,').replace('"output": 147,', '"output": 211,'))
    r = run("ingest", "requests", "--source", "langfuse", str(bad), "--map", str(OBS_MAP), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{bad}:1: usage_details.total: the disjoint usage buckets add up to 1675, not to the total 1211: the cached "
        "tokens are counted twice, or [tokens] inclusive is wrong for this export (docs/adapters.md)"]
    assert batch_count() == 0
    one = tmp_path / "one.jsonl"
    one.write_text(bad.read_text().splitlines()[0] + "\n")
    m = tmp_path / "map.toml"
    m.write_text(OBS_MAP.read_text() + "[tokens]\ninclusive = true\n")
    ingest_from("langfuse", "requests", [one], m, register_new=True)
    assert rows()[0][7:13] == (1000, 400, 0, 0, 211, 64)  # the same request, read under the right rule


def test_a_bad_langfuse_value_names_file_line_and_field(ledger_home, tmp_path):
    bad = tmp_path / "obs.jsonl"
    bad.write_text(OBS.read_text().replace('"input_cached_tokens": 512', '"input_cached_tokens": 51.5'))
    with pytest.raises(IngestError) as e:
        ingest_from("langfuse", "requests", [bad], OBS_MAP, register_new=True)
    assert e.value.lines() == [
        f"{bad}:4: usage_details.input + cache reads + cache writes (input_tokens): '51.5' is not a whole number",
        f"{bad}:4: usage_details.input_cached_tokens + usage_details.input_cache_read + "
        "usage_details.cache_read_input_tokens (cached_input_tokens): '51.5' is not a whole number"]
    assert batch_count() == 0


def test_otel_spans_ingest_to_the_hand_worked_rows(ledger_home):
    r = run("ingest", "requests", "--source", "otel", str(SPANS), "--map", str(SPANS_MAP), "--register-new")
    assert r.exit_code == 0, r.output
    assert "4 rows read, 4 new" in r.output
    assert rows() == OTEL
    batch = json.loads(run("batches", "--json").stdout)[0]
    assert [(f["path"], f["format"]) for f in batch["files"]] == [(str(SPANS), "otel:jsonl")]


def test_otel_input_already_holds_the_cache_and_the_map_can_say_it_does_not(ledger_home, tmp_path):
    ingest_from("otel", "requests", [SPANS], SPANS_MAP, register_new=True)
    for row in rows():
        assert row[8] + row[9] + row[10] <= row[7]  # reads and writes are parts of gen_ai.usage.input_tokens
    claude = [r for r in rows() if r[3] == "claude-sonnet-4-5"][0]
    assert claude[7] == 3000  # as the span said: never 3000 + 1200 + 1500
    # An instrumentation that sends Anthropic's raw input_tokens (uncached only: 300):
    raw = tmp_path / "raw.jsonl"
    raw.write_text(SPANS.read_text().replace('"gen_ai.usage.input_tokens","value":{"intValue":"3000"}',
                                             '"gen_ai.usage.input_tokens","value":{"intValue":"300"}'))
    m = tmp_path / "map.toml"
    m.write_text(SPANS_MAP.read_text() + "[tokens]\ninput_includes_cache = false\n")
    assert run("batches", "undo", json.loads(run("batches", "--json").stdout)[0]["id"]).exit_code == 0
    ingest_from("otel", "requests", [raw], m)
    claude = [r for r in rows() if r[3] == "claude-sonnet-4-5"][0]
    assert claude[7:10] == (3000, 1200, 1500)  # 300 + 1200 + 1500


def test_a_bad_otel_span_names_file_line_field_and_span(ledger_home, tmp_path):
    bad = tmp_path / "spans.jsonl"
    bad.write_text(SPANS.read_text().replace('"gen_ai.usage.input_tokens","value":{"intValue":"2000"}',
                                             '"gen_ai.usage.input_tokens","value":{"intValue":"-5"}')
                   .replace('"key":"gen_ai.response.id"', '"key":"gen_ai.request.model"'))
    r = run("ingest", "requests", "--source", "otel", str(bad), "--map", str(SPANS_MAP), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{bad}:1: attributes: an attribute key appears twice (span eee19b7ec3c1b173)"]
    bad.write_text(bad.read_text().replace('"key":"gen_ai.request.model","value":{"stringValue":"chatcmpl-a1"}',
                                           '"key":"gen_ai.response.id","value":{"stringValue":"chatcmpl-a1"}'))
    r = run("ingest", "requests", "--source", "otel", str(bad), "--map", str(SPANS_MAP), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{bad}:2: attributes.gen_ai.usage.input_tokens (input_tokens): '-5' is negative (span 00f067aa0ba902b7)"]
    assert batch_count() == 0


def test_langfuse_scores_become_outcomes_with_the_tenant_and_product_of_their_task(ledger_home):
    ingest_from("langfuse", "requests", [OBS], OBS_MAP, register_new=True)
    r = run("ingest", "outcomes", "--source", "langfuse-scores", str(SCORES), "--map", str(SCORES_MAP))
    assert r.exit_code == 0, r.output
    # sc-3 (helpfulness) and sc-5 (resolution) are other scores; t1 is decided twice, the later (0) fails
    assert rows("outcomes", "task_id, decided_at, tenant, product, outcome, criteria") == [
        ("t1", _at("10:10"), "acme", "chat", "success", "user-accepted"),
        ("t1", _at("10:20"), "acme", "chat", "failure", "user-accepted"),
        ("t2", _at("10:11"), "acme", "code-assist", "failure", "user-accepted"),
        ("t3", _at("10:12"), "beta", "untagged", "success", "user-accepted"),
    ]


def _at(hhmm: str):
    from datetime import datetime, timezone
    return datetime.fromisoformat(f"2026-10-01T{hhmm}:00").replace(tzinfo=timezone.utc)


def test_a_category_rule_and_mapped_dimensions(ledger_home, tmp_path):
    m = tmp_path / "map.toml"
    m.write_text('[columns]\ntenant = { path = "tenant", default = "beta" }\nproduct = { path = "p", default = "chat" }\n'
                 '[outcome]\nscore = "resolution"\nsuccess = ["resolved", "answered"]\n')
    ingest_from("langfuse-scores", "outcomes", [SCORES], m, register_new=True)
    assert rows("outcomes", "task_id, tenant, product, outcome, criteria") == [("t4", "beta", "chat", "failure",
                                                                                "resolution")]


def test_bad_scores_and_bad_maps_name_file_line_and_field(ledger_home, tmp_path):
    ingest_from("langfuse", "requests", [OBS], OBS_MAP, register_new=True)
    bad = tmp_path / "scores.csv"
    bad.write_text(SCORES.read_text().replace(",t3,,s3,,task_success,1,", ",t9,,s3,,task_success,abc,"))
    with pytest.raises(IngestError) as e:
        ingest_from("langfuse-scores", "outcomes", [bad], SCORES_MAP)
    assert e.value.lines() == [
        f"{bad}:5: value: 'abc' is not a number, and [outcome] success compares numbers",
        f"{bad}:5: trace_id (tenant): no request of task t9 in the ledger to take its tenant from: ingest the "
        "requests first, or map tenant",
        f"{bad}:5: trace_id (product): no request of task t9 in the ledger to take its product from: ingest the "
        "requests first, or map product"]
    m = tmp_path / "map.toml"
    m.write_text('[outcome]\nscore = 3\nsuccess = "~1"\n')
    with pytest.raises(IngestError) as e:
        ingest_from("langfuse-scores", "outcomes", [SCORES], m)
    assert e.value.lines() == [f"{m}: outcome.score: give the score's name (e.g. score = \"task_success\")",
                               f"{m}: outcome.success: '~1' is not a comparison such as \">= 1\" (>=, >, <=, <, ==, !=)"]
    r = run("ingest", "requests", "--source", "langfuse-scores", str(SCORES), "--map", str(SCORES_MAP))
    assert r.exit_code == 1 and "langfuse-scores gives outcomes, not requests" in r.output
    assert batch_count() == 1  # the requests only


PLAIN = """request_id,occurred_at,tenant,product,model,provider,task_id,input_tokens,cached_input_tokens,\
cache_write_input_tokens,cache_write_1h_input_tokens,output_tokens,reasoning_tokens,status,ttft_ms,latency_ms
r1,2026-10-01T10:05:00Z,acme,PRODUCT,gpt-5,openai,t1,1000,400,0,0,211,64,ok,420,2310
r2,2026-10-01T10:06:00Z,acme,code-assist,claude-sonnet-4-5,anthropic,t2,3000,1200,W5,W1,150,0,ok,500,3000
"""


@pytest.mark.parametrize("source", ["langfuse", "otel"])
def test_the_same_requests_from_a_source_and_from_the_ledger_csv_allocate_to_the_same_lines(ledger_home, tmp_path,
                                                                                           source):
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(ROOT / "pricebooks" / "provider-tokens.toml", books)
    assert run("pricebook", "load", str(books)).exit_code == 0
    plain = tmp_path / "plain.csv"
    product, w5, w1 = ("chat", "1000", "500") if source == "langfuse" else ("chat-api", "1500", "0")
    plain.write_text(PLAIN.replace("PRODUCT", product).replace("W5", w5).replace("W1", w1))
    path, m = (OBS, OBS_MAP) if source == "langfuse" else (SPANS, SPANS_MAP)
    part = tmp_path / "part.jsonl"  # the two provider requests of the sample (and what is not a request)
    part.write_text("".join(path.read_text().splitlines(keepends=True)[:3 if source == "langfuse" else 1]))
    if source == "otel":  # the first line has the OpenAI request; add the Anthropic one's resource
        doc = json.loads(path.read_text().splitlines()[1])
        doc["resourceSpans"] = doc["resourceSpans"][:1]
        part.write_text(part.read_text() + json.dumps(doc) + "\n")

    def allocate() -> dict:
        r = run("allocate", "--period", "2026-10", "--json")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        return {k: doc[k] for k in ("total", "by_kind", "by_category", "tenants")}

    r = run("ingest", "requests", str(plain), "--register-new", "--json")
    assert r.exit_code == 0, r.output
    from_csv = allocate()
    assert run("batches", "undo", json.loads(r.stdout)["batch_id"]).exit_code == 0
    r = run("ingest", "requests", "--source", source, str(part), "--map", str(m), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows_read"] == 2
    assert D(from_csv["total"]) > 0
    assert allocate() == from_csv
