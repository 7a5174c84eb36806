"""Real exports read right (issue 25): never a silent wrong number.

The other tools' exports as they really come: LiteLLM's spend-log payloads with ``metadata`` and
``request_tags`` as JSON text inside a JSON record, cache writes wherever LiteLLM's normalized usage
puts them, values written twice (a key twice in one object, an attribute twice, the same tokens in two
places), structured values where a name goes, numbers that a double would round, an OTLP file with no
inference span, Langfuse's public API shape, and ids in upper case. Each sample is a file under
tests/data/adapters/ (its README says where the shape comes from); the expected rows are worked by
hand below. Runs on SQLite, and on PostgreSQL when set.
"""
from __future__ import annotations

import json
import re
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
PAYLOADS, LITELLM_MAP = DATA / "litellm_spend_payloads.jsonl", DATA / "litellm_map.toml"
OBS, OBS_MAP = DATA / "langfuse_observations.jsonl", DATA / "langfuse_map.toml"
API_PAGE, API_V1 = DATA / "langfuse_api_observations.json", DATA / "langfuse_api_observations_v1.jsonl"
SCORES, API_SCORES, SCORES_MAP = DATA / "langfuse_scores.csv", DATA / "langfuse_api_scores.json", DATA / "langfuse_scores_map.toml"
SPANS, SPANS_MAP = DATA / "otel_traces.jsonl", DATA / "otel_map.toml"
COLS = ("request_id, tenant, product, model, pool, provider, task_id, input_tokens, cached_input_tokens, "
        "cache_write_input_tokens, cache_write_1h_input_tokens, output_tokens, reasoning_tokens, status, ttft_ms, "
        "latency_ms, reported_cost, reported_currency")


def run(*args: str):
    return runner.invoke(app, list(args))


def rows(kind: str = "requests", cols: str = COLS) -> list[tuple]:
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
        return con.execute(f"SELECT {cols} FROM {kind} ORDER BY 1, 2").fetchall()


def batch_count() -> int:
    with store.session() as s:
        return sum(len(v) for v in facts.committed_batches(s).values())


def refused(source: str, path: Path, m: Path, kind: str = "requests") -> list[str]:
    """The problem lines of an ingest that must be refused (and commit nothing)."""
    before = batch_count()
    with pytest.raises(IngestError) as e:
        ingest_from(source, kind, [path], m, register_new=True)
    assert batch_count() == before
    return e.value.lines()


# Worked by hand from litellm_spend_payloads.jsonl: LiteLLM's SpendLogsPayload, whose `metadata` and
# `request_tags` are JSON text (litellm/proxy/_types.py: `metadata: str  # json str`). prompt_tokens
# includes cache reads and writes (docs/adapters.md, the LiteLLM token rule).
# p1: openai, prompt 1000 of which 400 cached (prompt_tokens_details.cached_tokens), 211 out of which
#     64 reasoning; spend 1.2345678901234567e-05 -> 0.000012345679 (12 places, from the digits as written)
# p2: anthropic as LiteLLM's Usage writes it today: cache_creation_input_tokens 1500 AND
#     prompt_tokens_details.cache_creation_tokens 1500 (the same writes: counted once), split by
#     prompt_tokens_details.cache_creation_token_details into 1000 5-minute + 500 1-hour writes
#     (the split sits only there: before, all 1500 were 5-minute writes); reads 1200 in both places
# p3: bedrock: the writes only under prompt_tokens_details.cache_creation_tokens (800, no split: all
#     5-minute); before, they were dropped and priced as plain input. request_tags [] -> untagged
# p4: failure, usage_object {} -> zeros, no ttft
PAYLOAD_ROWS = [
    ("chatcmpl-p1", "acme", "chat", "gpt-5", None, "openai", "t1", 1000, 400, 0, 0, 211, 64, "ok", 420.0, 2310.0,
     D("0.000012345679"), "USD"),
    ("chatcmpl-p2", "acme", "code-assist", "claude-sonnet-4-5", None, "anthropic", "t2", 3000, 1200, 1000, 500, 150, 0,
     "ok", 500.0, 3000.0, D("0.0123"), "USD"),
    ("chatcmpl-p3", "beta", "untagged", "claude-haiku-4-5", None, "bedrock", "t3", 2000, 512, 800, 0, 100, 0, "ok",
     200.0, 1500.0, D("0.002848"), "USD"),
    ("chatcmpl-p4", "beta", "chat", "gpt-5", None, "openai", "t4", 0, 0, 0, 0, 0, 0, "error", None, 30000.0, D("0"),
     "USD"),
]


def payloads(edit=None) -> list[dict]:
    """The payload records, `metadata` parsed (and edited by `edit(record, metadata)`), for rewriting."""
    out = []
    for line in PAYLOADS.read_text().splitlines():
        rec = json.loads(line)
        meta = json.loads(rec["metadata"])
        if edit:
            edit(rec, meta)
        out.append((rec, meta))
    return out


# --- 1. JSON text inside a record is followed -------------------------------------------------------

def test_litellm_payloads_with_metadata_as_json_text_ingest_to_the_hand_worked_rows(ledger_home):
    r = run("ingest", "requests", "--source", "litellm", str(PAYLOADS), "--map", str(LITELLM_MAP), "--register-new")
    assert r.exit_code == 0, r.output
    assert "4 rows read, 4 new" in r.output
    assert rows() == PAYLOAD_ROWS
    batch = json.loads(run("batches", "--json").stdout)[0]
    assert [(f["path"], f["format"]) for f in batch["files"]] == [(str(PAYLOADS), "litellm:jsonl")]


@pytest.mark.parametrize("shape", ["csv", "parquet", "object_with_text_inside", "text_inside_text"])
def test_a_path_into_json_text_is_followed_in_every_format(ledger_home, tmp_path, shape):
    src = tmp_path / f"spend.{'parquet' if shape == 'parquet' else 'csv' if shape in ('csv', 'text_inside_text') else 'jsonl'}"
    if shape in ("csv", "parquet"):  # the payload's columns as a psql/warehouse export: metadata a text cell
        fmt = "(FORMAT parquet)" if shape == "parquet" else "(HEADER, DELIMITER ',')"
        duckdb.sql(f"COPY (SELECT * REPLACE (CAST(spend AS VARCHAR) AS spend) FROM read_json('{PAYLOADS}', "
                   f"format='newline_delimited', columns={{request_id: 'VARCHAR', spend: 'DECIMAL(38,20)', "
                   "prompt_tokens: 'BIGINT', completion_tokens: 'BIGINT', startTime: 'VARCHAR', endTime: 'VARCHAR', "
                   "completionStartTime: 'VARCHAR', model: 'VARCHAR', api_base: 'VARCHAR', metadata: 'VARCHAR', "
                   "request_tags: 'VARCHAR', custom_llm_provider: 'VARCHAR', session_id: 'VARCHAR', status: 'VARCHAR'})) "
                   f"TO '{src}' {fmt}")
    elif shape == "object_with_text_inside":  # metadata an object, its usage_object JSON text in it
        lines = []
        for rec, meta in payloads():
            meta["usage_object"] = json.dumps(meta["usage_object"])
            lines.append(json.dumps({**rec, "metadata": meta}))
        src.write_text("\n".join(lines) + "\n")
    else:  # a CSV cell of JSON text whose usage_object is JSON text again
        import csv
        with src.open("w", newline="") as f:
            w = csv.writer(f)
            recs = payloads()
            w.writerow(list(recs[0][0]))
            for rec, meta in recs:
                meta["usage_object"] = json.dumps(meta["usage_object"])
                w.writerow([json.dumps(meta) if k == "metadata" else ("" if v is None else v) for k, v in rec.items()])
    ingest_from("litellm", "requests", [src], LITELLM_MAP, register_new=True)
    assert rows() == PAYLOAD_ROWS


def test_a_key_absent_from_the_json_text_is_still_missing_and_says_so(ledger_home, tmp_path):
    bad = tmp_path / "spend.jsonl"
    bad.write_text(PAYLOADS.read_text().replace('\\"user_api_key_team_alias\\": \\"beta\\", ', ""))
    assert refused("litellm", bad, LITELLM_MAP) == [
        f"{bad}:3: metadata.user_api_key_team_alias (tenant): missing, and the map gives no default",
        f"{bad}:4: metadata.user_api_key_team_alias (tenant): missing, and the map gives no default"]


# --- 2. cache writes wherever LiteLLM's usage puts them, counted once ----------------------------------

def test_the_same_cache_tokens_in_two_places_with_two_numbers_are_refused(ledger_home, tmp_path):
    def edit(rec, meta):
        if rec["request_id"] == "chatcmpl-p2":
            meta["usage_object"]["prompt_tokens_details"]["cache_creation_tokens"] = 1400
            meta["usage_object"]["cache_read_input_tokens"] = 1100
    bad = tmp_path / "spend.jsonl"
    bad.write_text("".join(json.dumps({**rec, "metadata": json.dumps(meta)}) + "\n" for rec, meta in payloads(edit)))
    u = "metadata.usage_object"
    assert refused("litellm", bad, LITELLM_MAP) == [
        f"{bad}:2: {u}.prompt_tokens_details.cached_tokens (cached_input_tokens): {u}.prompt_tokens_details.cached_tokens "
        f"1200 and {u}.cache_read_input_tokens 1100 disagree: the same cache reads cannot be two values",
        f"{bad}:2: {u}.cache_creation_input_tokens (cache_write_input_tokens): {u}.cache_creation_input_tokens 1500 and "
        f"{u}.prompt_tokens_details.cache_creation_tokens 1400 disagree: the same cache writes cannot be two values"]


def test_cache_writes_that_are_not_their_5_minute_and_1_hour_parts_are_refused(ledger_home, tmp_path):
    def edit(rec, meta):
        if rec["request_id"] == "chatcmpl-p2":
            meta["usage_object"]["prompt_tokens_details"]["cache_creation_token_details"]["ephemeral_5m_input_tokens"] = 900
    bad = tmp_path / "spend.jsonl"
    bad.write_text("".join(json.dumps({**rec, "metadata": json.dumps(meta)}) + "\n" for rec, meta in payloads(edit)))
    assert refused("litellm", bad, LITELLM_MAP) == [
        f"{bad}:2: metadata.usage_object.cache_creation_input_tokens (cache_write_input_tokens): the cache writes 1500 "
        "are not their 5-minute part 900 + their 1-hour part 500"]


def test_writes_found_only_in_prompt_tokens_details_are_added_when_prompt_tokens_exclude_the_cache(ledger_home, tmp_path):
    m = tmp_path / "map.toml"
    m.write_text(LITELLM_MAP.read_text() + "[tokens]\nprompt_includes_cache = false\n")
    ingest_from("litellm", "requests", [PAYLOADS], m, register_new=True)
    got = {r[0]: r[7:11] for r in rows()}
    assert got["chatcmpl-p3"] == (3312, 512, 800, 0)  # 2000 + 512 reads + 800 writes, each counted once
    assert got["chatcmpl-p2"] == (5700, 1200, 1000, 500)  # 3000 + 1200 + 1500 (never 3000 + 1200 + 1500 + 1500)


# --- 4. a value written twice, or a structure where a name goes, is refused -------------------------

def test_a_key_written_twice_in_the_litellm_metadata_is_refused(ledger_home, tmp_path):
    bad = tmp_path / "spend.jsonl"
    bad.write_text(PAYLOADS.read_text().replace('\\"user_api_key_team_alias\\": \\"acme\\"',
                                                '\\"user_api_key_team_alias\\": \\"acme\\", \\"user_api_key_team_alias\\": \\"beta\\"', 1))
    assert refused("litellm", bad, LITELLM_MAP) == [
        f"{bad}:1: metadata.user_api_key_team_alias (tenant): the key user_api_key_team_alias is written twice in one "
        "object: which value counts would be a guess"]


def test_a_json_list_where_a_name_goes_is_refused(ledger_home, tmp_path):
    m = tmp_path / "map.toml"
    m.write_text(LITELLM_MAP.read_text().replace('product = { path = "request_tags[0]", default = "untagged" }',
                                                 'product = "request_tags"'))
    said = "request_tags (product): is a JSON list, not a single value: give a path into it"
    assert refused("litellm", PAYLOADS, m) == [f"{PAYLOADS}:{n}: {said}" for n in (1, 2, 3, 4)]


def test_a_key_written_twice_in_langfuse_metadata_is_refused(ledger_home, tmp_path):
    bad = tmp_path / "obs.jsonl"
    bad.write_text(OBS.read_text().replace('"metadata": {"tenant": "acme", "ls_provider": "openai"}',
                                           '"metadata": {"tenant": "acme", "ls_provider": "openai", "tenant": "beta"}', 1))
    assert refused("langfuse", bad, OBS_MAP) == [
        f"{bad}:1: metadata.tenant (tenant): the key tenant is written twice in one object: which value counts would "
        "be a guess"]


@pytest.mark.parametrize("where", ["resource", "scope"])
def test_an_otel_resource_or_scope_attribute_given_twice_is_refused(ledger_home, tmp_path, where):
    bad = tmp_path / "spans.jsonl"
    twice = '{"key":"x.team","value":{"stringValue":"a"}},{"key":"x.team","value":{"stringValue":"b"}}'
    if where == "resource":
        bad.write_text(SPANS.read_text().replace('{"key":"deployment.environment.name"', twice + ',{"key":"deployment.environment.name"'))
    else:
        bad.write_text(SPANS.read_text().replace('"version":"2.1b0"}', f'"version":"2.1b0","attributes":[{twice}]}}', 1))
    assert refused("otel", bad, SPANS_MAP) == [
        f"{bad}:1: {where}.attributes: a {where} attribute key appears twice (span eee19b7ec3c1b173)"]


def test_an_otel_key_value_list_where_a_name_goes_is_refused(ledger_home, tmp_path):
    bad = tmp_path / "spans.jsonl"
    bad.write_text(SPANS.read_text().replace(
        '{"key":"tenant.id","value":{"stringValue":"acme"}},{"key":"deployment',
        '{"key":"tenant.id","value":{"kvlistValue":{"values":[{"key":"name","value":{"stringValue":"acme"}}]}}},'
        '{"key":"deployment'))
    assert refused("otel", bad, SPANS_MAP) == [
        f"{bad}:1: resource.attributes.tenant.id (tenant): is an OTLP kvlistValue, not a single value "
        "(span eee19b7ec3c1b173)"]


def test_an_otel_span_field_written_twice_is_refused(ledger_home, tmp_path):
    bad = tmp_path / "spans.jsonl"
    bad.write_text(SPANS.read_text().replace('"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"',
                                             '"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","traceId":"8a3c60f7d188f8fa79d48a391a778fa6"'))
    assert refused("otel", bad, SPANS_MAP) == [
        f"{bad}:2: traceId (task_id): the key traceId is written twice in one object: which value counts would be a "
        "guess (span 00f067aa0ba902b7)"]


# --- 5. numbers compared and kept exactly, never through a double ------------------------------------

def test_a_score_just_below_the_rule_fails_in_every_format(ledger_home, tmp_path):
    # sc-1 (t1 at 10:10) was 1: now a hair below 1 (a double would read 1.0 and pass ">= 1"), so it fails
    ingest_from("langfuse", "requests", [OBS], OBS_MAP, register_new=True)
    csv_ = tmp_path / "scores.csv"
    csv_.write_text(SCORES.read_text().replace(",t1,,s1,,task_success,1,", ",t1,,s1,,task_success,0.99999999999999999999,"))
    page = tmp_path / "scores.json"  # the API page: its numbers read from the page's own digits
    page.write_text(API_SCORES.read_text().replace('"value": 1,\n', '"value": 0.99999999999999999999,\n', 1))
    lines = tmp_path / "scores.jsonl"  # the same scores as JSON Lines
    lines.write_text("".join(json.dumps(d).replace('"value": 1,', '"value": 0.99999999999999999999,', 1 if i == 0 else 0)
                             + "\n" for i, d in enumerate(json.loads(API_SCORES.read_text())["data"])))
    for src in (csv_, page, lines):
        r = run("ingest", "outcomes", "--source", "langfuse-scores", str(src), "--map", str(SCORES_MAP), "--json")
        assert r.exit_code == 0, r.output
        assert rows("outcomes", "task_id, decided_at, outcome")[:2] == [("t1", _at("10:10"), "failure"),
                                                                         ("t1", _at("10:20"), "failure")], src
        assert run("batches", "undo", json.loads(r.stdout)["batch_id"]).exit_code == 0


def test_a_score_that_cannot_be_compared_exactly_is_refused(ledger_home, tmp_path):
    ingest_from("langfuse", "requests", [OBS], OBS_MAP, register_new=True)
    long = "0." + "9" * 40
    bad = tmp_path / "scores.csv"
    bad.write_text(SCORES.read_text().replace(",t1,,s1,,task_success,1,", f",t1,,s1,,task_success,{long},")
                   .replace(",t3,,s3,,task_success,1,", ",t3,,s3,,task_success,1e25,"))
    assert refused("langfuse-scores", bad, SCORES_MAP, "outcomes") == [
        f"{bad}:2: value: '{long}' has more than 37 decimal places: it cannot be compared exactly (a DECIMAL holds 38 "
        "digits)",
        f"{bad}:5: value: '1e25' is too large to compare (below 10^20)"]


def test_a_cost_is_rounded_from_its_digits_as_written_and_a_fractional_token_count_is_refused(ledger_home, tmp_path):
    exact = tmp_path / "spend.jsonl"  # a double would keep ~17 digits: 12345678901234.123
    exact.write_text(PAYLOADS.read_text().replace('"spend": 0.0123,', '"spend": 12345678901234.1234567890125,'))
    ingest_from("litellm", "requests", [exact], LITELLM_MAP, register_new=True)
    assert {r[0]: r[16] for r in rows()}["chatcmpl-p2"] == D("12345678901234.123456789013")  # half up at 12 places
    bad = tmp_path / "bad.jsonl"  # a double reads 1000.0 and would pass as 1000
    bad.write_text(PAYLOADS.read_text().replace('"prompt_tokens": 1000,', '"prompt_tokens": 1000.0000000000000001,'))
    assert refused("litellm", bad, LITELLM_MAP) == [
        f"{bad}:1: prompt_tokens (input_tokens): '1000.0000000000000001' is not a whole number"]


# --- 10. an OTLP file with no inference span says so ------------------------------------------------

def test_an_otlp_file_with_no_inference_span_says_so_and_names_the_operations_read(ledger_home, tmp_path):
    m = tmp_path / "map.toml"
    m.write_text(SPANS_MAP.read_text() + '[spans]\noperations = ["embeddings"]\n')
    assert refused("otel", SPANS, m) == [  # 6 spans: 3 on line 1 (agent, chat, tool), 1 + 2 chat spans on line 2
        f"{SPANS}: no GenAI inference span (gen_ai.operation.name embeddings): 6 spans read; their operations: chat, "
        "execute_tool, invoke_agent"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"resourceSpans":[]}\n')
    assert refused("otel", empty, SPANS_MAP) == [
        f"{empty}: no GenAI inference span (gen_ai.operation.name chat, text_completion, generate_content, embeddings): "
        "0 spans read (OTLP JSON has resourceSpans[].scopeSpans[].spans[])"]


# --- 12. Langfuse's public API shape ----------------------------------------------------------------

LANGFUSE = [  # as tests/test_adapters_sources.py works them out from the export: the API holds the same
    ("obs-a1", "acme", "chat", "gpt-5", None, "openai", "t1", 1000, 400, 0, 0, 211, 64, "ok", 420.0, 2310.0,
     D("0.00291"), "USD"),
    ("obs-a2", "acme", "code-assist", "claude-sonnet-4-5", None, "anthropic", "t2", 3000, 1200, 1000, 500, 150, 0,
     "ok", 500.0, 3000.0, D("0.01026"), "USD"),
    ("obs-a3", "beta", "untagged", "llama-3.1-8b", "h100-chat", None, "t3", 2000, 512, 0, 0, 100, 0, "ok", 200.0,
     1500.0, None, None),
    ("obs-a4", "beta", "chat", "gpt-5", None, "openai", "t4", 0, 0, 0, 0, 0, 0, "error", None, 30000.0, D("0"), "USD"),
]


def test_a_langfuse_api_v2_page_ingests_as_the_export_does(ledger_home):
    r = run("ingest", "requests", "--source", "langfuse", str(API_PAGE), "--map", str(OBS_MAP), "--register-new")
    assert r.exit_code == 0, r.output
    assert "4 rows read, 4 new" in r.output
    assert rows() == LANGFUSE


def test_langfuse_api_v1_observations_as_json_lines_ingest_too(ledger_home):
    # v1 names the model `model` and the cost `calculatedTotalCost`, and has no trace tags: product untagged
    ingest_from("langfuse", "requests", [API_V1], OBS_MAP, register_new=True)
    assert rows() == [(r[0], r[1], "untagged", *r[3:]) for r in LANGFUSE]


def test_a_bad_value_in_an_api_page_names_the_line_and_the_observation(ledger_home, tmp_path):
    bad = tmp_path / "page.json"
    bad.write_text(API_PAGE.read_text().replace('"input_cached_tokens": 512', '"input_cached_tokens": 51.5'))
    assert refused("langfuse", bad, OBS_MAP) == [
        f"{bad}:1: usageDetails.input + cache reads + cache writes (input_tokens): '51.5' is not a whole number "
        "(observation obs-a3)",
        f"{bad}:1: usageDetails.input_cached_tokens + usageDetails.input_cache_read + "
        "usageDetails.cache_read_input_tokens (cached_input_tokens): '51.5' is not a whole number (observation obs-a3)"]


def test_a_file_mixing_the_export_and_the_api_shapes_is_refused(ledger_home, tmp_path):
    mixed = tmp_path / "obs.jsonl"
    mixed.write_text(OBS.read_text() + API_V1.read_text())
    assert refused("langfuse", mixed, OBS_MAP) == [
        f"{mixed}: mixes the export's fields (trace_id) and the API's (traceId): a file is one shape or the other"]


def test_langfuse_api_scores_become_the_same_outcomes(ledger_home):
    ingest_from("langfuse", "requests", [API_PAGE], OBS_MAP, register_new=True)
    r = run("ingest", "outcomes", "--source", "langfuse-scores", str(API_SCORES), "--map", str(SCORES_MAP))
    assert r.exit_code == 0, r.output
    assert rows("outcomes", "task_id, decided_at, tenant, product, outcome, criteria") == [
        ("t1", _at("10:10"), "acme", "chat", "success", "user-accepted"),
        ("t1", _at("10:20"), "acme", "chat", "failure", "user-accepted"),
        ("t2", _at("10:11"), "acme", "code-assist", "failure", "user-accepted"),
        ("t3", _at("10:12"), "beta", "untagged", "success", "user-accepted"),
    ]


# --- 13. ids in one spelling ------------------------------------------------------------------------

def _upper_ids(text: str) -> str:
    return re.sub(r'"(traceId|spanId|parentSpanId)":"([0-9a-f]*)"', lambda g: f'"{g[1]}":"{g[2].upper()}"', text)


def test_otel_ids_in_upper_case_are_kept_in_lower_case(ledger_home, tmp_path):
    up = tmp_path / "spans.jsonl"
    up.write_text(_upper_ids(SPANS.read_text()))
    assert "5B8EFFF798038103D269B633813FC60C" in up.read_text()
    ingest_from("otel", "requests", [up], SPANS_MAP, register_new=True)
    assert [(r[0], r[6]) for r in rows()] == [
        ("0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "0af7651916cd43dd8448eb211c80319c"),
        ("4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("5b8efff798038103d269b633813fc60c-eee19b7ec3c1b173", "5b8efff798038103d269b633813fc60c"),
        ("8a3c60f7d188f8fa79d48a391a778fa6-53995c3f42cd8ad8", "8a3c60f7d188f8fa79d48a391a778fa6")]


def test_otel_ids_that_are_not_hex_of_their_length_are_refused(ledger_home, tmp_path):
    bad = tmp_path / "spans.jsonl"
    bad.write_text(SPANS.read_text().replace("4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f3577b34da6a3ce929d0e0e473")
                   .replace('"spanId":"53995c3f42cd8ad8"', '"spanId":"U5lcP0LNitg="')  # base64, not OTLP/JSON's hex
                   .replace("0af7651916cd43dd8448eb211c80319c", "0" * 32))
    assert refused("otel", bad, SPANS_MAP) == [
        f"{bad}:2: traceId: '{'0' * 32}' is not a trace id (32 hex digits, not all zero) (span b7ad6b7169203331)",
        f"{bad}:2: traceId: '4bf92f3577b34da6a3ce929d0e0e473' is not a trace id (32 hex digits, not all zero) "
        "(span 00f067aa0ba902b7)",
        f"{bad}:2: spanId: 'U5lcP0LNitg=' is not a span id (16 hex digits, not all zero) (span U5lcP0LNitg=)"]


def test_langfuse_trace_ids_of_32_hex_digits_join_their_scores_in_lower_case(ledger_home, tmp_path):
    trace = "5B8EFFF798038103D269B633813FC60C"  # an OpenTelemetry trace id, as an SDK might print it
    obs = tmp_path / "obs.jsonl"
    obs.write_text(OBS.read_text().replace('"trace_id": "t1"', f'"trace_id": "{trace}"'))
    scores = tmp_path / "scores.json"
    scores.write_text(API_SCORES.read_text().replace('"traceId": "t1"', f'"traceId": "{trace.lower()}"'))
    ingest_from("langfuse", "requests", [obs], OBS_MAP, register_new=True)
    assert {r[0]: r[6] for r in rows()}["obs-a1"] == trace.lower()
    ingest_from("langfuse-scores", "outcomes", [scores], SCORES_MAP)
    assert [r for r in rows("outcomes", "task_id, decided_at, tenant, outcome") if r[0] == trace.lower()] == [
        (trace.lower(), _at("10:10"), "acme", "success"), (trace.lower(), _at("10:20"), "acme", "failure")]


def _at(hhmm: str):
    from datetime import datetime, timezone
    return datetime.fromisoformat(f"2026-10-01T{hhmm}:00").replace(tzinfo=timezone.utc)
