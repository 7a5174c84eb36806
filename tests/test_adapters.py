"""`ledger ingest requests --source litellm FILE --map MAP.toml`: LiteLLM spend logs as ledger requests.

The sample under tests/data/adapters/ (see its README) ingests to hand-worked rows; the token buckets
sum to LiteLLM's own totals and cached tokens are counted once; a bad source row is one line with the
source file, its line and the source field, and changes nothing; the same requests from LiteLLM and
from the ledger's CSV allocate to the same lines. Runs on SQLite, and on PostgreSQL when set.
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
SPEND = DATA / "litellm_spend_logs.csv"
MAP = DATA / "litellm_map.toml"
ROOT = Path(__file__).resolve().parents[1]
COLS = ("request_id, tenant, product, model, pool, provider, task_id, input_tokens, cached_input_tokens, "
        "cache_write_input_tokens, cache_write_1h_input_tokens, output_tokens, reasoning_tokens, status, ttft_ms, "
        "latency_ms, reported_cost, reported_currency")


def run(*args: str):
    return runner.invoke(app, list(args))


def rows() -> list[tuple]:
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
        return con.execute(f"SELECT {COLS} FROM requests ORDER BY request_id").fetchall()


def batch_count() -> int:
    with store.session() as s:
        return sum(len(v) for v in facts.committed_batches(s).values())


def leftovers(home: Path) -> list[Path]:
    """Files an ingest may leave: facts of any kind, scratch and staging."""
    return [p for p in (home / "facts").rglob("*") if p.is_file() and p.name != ".ingest.lock"]


# Worked by hand from the sample (LiteLLM's prompt_tokens includes cache reads and writes):
# a1: openai, prompt 1000 of which 400 cached reads, completion 211 of which 64 reasoning;
#     ttft 10:05:00.420 - 10:05:00.000 = 420 ms, latency 2310 ms; spend 1.2345678901234567e-05 -> 12 places
# a2: anthropic, prompt 3000 = uncached 300 + reads 1200 + writes 1500 (1h: 500, so 5m: 1000); never 3000 + 1200
# a3: api_base http://vllm-h100:8000/v1 is the pool h100-chat (no provider); request_tags [] -> default product
# a4: status failure -> error, no completionStartTime -> no ttft
EXPECTED = [
    ("chatcmpl-a1", "acme", "chat", "gpt-5", None, "openai", "t1", 1000, 400, 0, 0, 211, 64, "ok", 420.0, 2310.0,
     D("0.000012345679"), "USD"),
    ("chatcmpl-a2", "acme", "code-assist", "claude-sonnet-4-5", None, "anthropic", "t2", 3000, 1200, 1000, 500, 150,
     0, "ok", 500.0, 3000.0, D("0.0123"), "USD"),
    ("chatcmpl-a3", "beta", "untagged", "llama-3.1-8b", "h100-chat", None, "t3", 2000, 512, 0, 0, 100, 0, "ok",
     200.0, 1500.0, D("0"), "USD"),
    ("chatcmpl-a4", "beta", "chat", "gpt-5", None, "openai", "t4", 0, 0, 0, 0, 0, 0, "error", None, 30000.0, D("0"),
     "USD"),
]


def test_litellm_csv_ingests_to_the_hand_worked_rows_and_the_batch_names_the_source(ledger_home):
    r = run("ingest", "requests", "--source", "litellm", str(SPEND), "--map", str(MAP), "--register-new")
    assert r.exit_code == 0, r.output
    assert "4 rows read, 4 new" in r.output
    assert rows() == EXPECTED
    batch = json.loads(run("batches", "--json").stdout)[0]
    assert [(f["path"], f["format"], f["rows"]) for f in batch["files"]] == [(str(SPEND), "litellm:csv", 4)]
    assert not (ledger_home / "facts" / "_adapters").exists() or not any((ledger_home / "facts" / "_adapters").iterdir())
    again = run("ingest", "requests", "--source", "litellm", str(SPEND), "--map", str(MAP))
    assert again.exit_code == 0 and "0 new, 4 duplicate" in again.output, again.output


def test_buckets_sum_to_litellm_totals_and_cached_tokens_count_once(ledger_home):
    ingest_from("litellm", "requests", [SPEND], MAP, register_new=True)
    source = duckdb.sql(f"SELECT request_id, total_tokens::BIGINT, prompt_tokens::BIGINT FROM read_csv('{SPEND}', "
                        "all_varchar=true) ORDER BY 1").fetchall()
    for (rid, total, prompt), row in zip(source, rows()):
        inp, cached, w5, w1h, out = row[7], row[8], row[9], row[10], row[11]
        assert inp + out == total, rid  # nothing added to, nothing lost from, LiteLLM's total
        assert inp == prompt, rid  # the cached reads and writes are inside prompt_tokens: never added again
        assert cached + w5 + w1h <= inp, rid  # disjoint parts of the input


def test_a_map_for_logs_whose_prompt_tokens_exclude_the_cache_adds_reads_and_writes(ledger_home, tmp_path):
    # Anthropic's raw convention: prompt_tokens = 300 uncached; reads 1200 and writes 1500 beside it.
    text = SPEND.read_text().replace("3150,3000,150", "3000,300,150").replace('""prompt_tokens"": 3000', '""prompt_tokens"": 300')
    src = tmp_path / "spend.csv"
    src.write_text(text)
    m = tmp_path / "map.toml"
    m.write_text(MAP.read_text() + "[tokens]\nprompt_includes_cache = false\n")
    ingest_from("litellm", "requests", [src], m, register_new=True)
    got = {r[0]: (r[7], r[8], r[9], r[10]) for r in rows()}
    assert got["chatcmpl-a2"] == (3000, 1200, 1000, 500)  # 300 + 1200 + 1500
    assert got["chatcmpl-a1"] == (1400, 400, 0, 0)  # the rule is the map's, for every row of the file


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_jsonl_and_parquet_exports_give_the_same_rows(ledger_home, tmp_path, fmt):
    out = tmp_path / f"spend.{fmt}"
    if fmt == "jsonl":  # JSON columns as JSON objects, numbers as JSON numbers
        duckdb.sql(f"COPY (SELECT * REPLACE (metadata::JSON AS metadata, request_tags::JSON AS request_tags, "
                   f"spend::DOUBLE AS spend, prompt_tokens::BIGINT AS prompt_tokens) FROM read_csv('{SPEND}', "
                   f"all_varchar=true)) TO '{out}' (FORMAT json)")
    else:  # typed columns: DOUBLE spend, integer tokens, metadata as JSON text
        duckdb.sql(f"COPY (SELECT * REPLACE (spend::DOUBLE AS spend, prompt_tokens::BIGINT AS prompt_tokens, "
                   f"completion_tokens::BIGINT AS completion_tokens) FROM read_csv('{SPEND}', all_varchar=true)) "
                   f"TO '{out}' (FORMAT parquet)")
    ingest_from("litellm", "requests", [out], MAP, register_new=True)
    assert rows() == EXPECTED


def test_a_bad_source_row_is_one_line_with_file_line_and_field_and_changes_nothing(ledger_home, tmp_path):
    bad = tmp_path / "spend.csv"
    bad.write_text(SPEND.read_text().replace(",2000,100,2026-10-01 10:07", ",-1,100,2026-10-01 10:07"))
    r = run("ingest", "requests", "--source", "litellm", str(bad), "--map", str(MAP), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"{bad}:4: prompt_tokens (input_tokens): '-1' is negative"]
    assert batch_count() == 0 and leftovers(ledger_home) == []


def test_source_lines_are_physical_lines_after_a_blank_line_and_a_quoted_line_break(ledger_home, tmp_path):
    """The first data row's metadata gains a line break inside its quotes, and a blank line follows
    it: the bad row of the sample, on line 4, is now on line 6 of the file, and says so."""
    text = SPEND.read_text().replace('{""', '{\n""', 1)
    lines = text.split("\n")
    assert lines[1].endswith("{")  # the break sits inside the first row's quoted metadata
    text = "\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:])
    bad = tmp_path / "spend.csv"
    bad.write_text(text.replace(",2000,100,2026-10-01 10:07", ",-1,100,2026-10-01 10:07"))
    r = run("ingest", "requests", "--source", "litellm", str(bad), "--map", str(MAP), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"{bad}:6: prompt_tokens (input_tokens): '-1' is negative"]
    assert batch_count() == 0 and leftovers(ledger_home) == []


def test_a_required_column_missing_in_a_row_without_default_is_the_maps_problem(ledger_home, tmp_path):
    bad = tmp_path / "spend.csv"
    bad.write_text(SPEND.read_text().replace('""user_api_key_team_alias"": ""beta"", ', ""))
    with pytest.raises(IngestError) as e:
        ingest_from("litellm", "requests", [bad], MAP, register_new=True)
    assert e.value.lines() == [
        f"{bad}:4: metadata.user_api_key_team_alias (tenant): missing, and the map gives no default",
        f"{bad}:5: metadata.user_api_key_team_alias (tenant): missing, and the map gives no default"]
    assert batch_count() == 0 and leftovers(ledger_home) == []


def test_a_map_that_leaves_out_a_required_column_or_names_an_unknown_one_is_refused(ledger_home, tmp_path):
    m = tmp_path / "map.toml"
    m.write_text('[columns]\ntenant = "metadata.team"\nproduct_x = "model"\n')
    with pytest.raises(IngestError) as e:
        ingest_from("litellm", "requests", [SPEND], m)
    lines = e.value.lines()
    assert lines[0].startswith(f"{m}: columns.product_x: not a column this source's map may set")
    assert lines[1] == (f"{m}: columns.product: required ledger column is not mapped "
                        "(give it a path, or a table with a default)")
    assert batch_count() == 0


def test_source_needs_map_and_map_needs_source(ledger_home):
    r = run("ingest", "requests", "--source", "litellm", str(SPEND))
    assert r.exit_code == 1 and "--source litellm needs --map MAP.toml" in r.output
    r = run("ingest", "requests", str(SPEND), "--map", str(MAP))
    assert r.exit_code == 1 and "--map is read only with --source SOURCE" in r.output
    r = run("ingest", "requests", "--source", "langsmith", str(SPEND), "--map", str(MAP))
    assert r.exit_code == 1 and "unknown source (one of litellm, langfuse, otel, langfuse-scores)" in r.output
    r = run("ingest", "requests", "--help")
    assert "--source" in r.output and "--map" in r.output


def test_reported_cost_is_a_decimal_of_12_places_never_rounded_at_plain_ingest(ledger_home, tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status,"
                 "reported_cost,reported_currency\n"
                 "r1,2026-10-01T00:00:00Z,acme,chat,gpt-5,openai,10,5,ok,0.0000000000001,USD\n"
                 "r2,2026-10-01T00:00:00Z,acme,chat,gpt-5,openai,10,5,ok,-1,USD\n")
    r = run("ingest", "requests", str(f), "--register-new")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"{f}:2: reported_cost: '0.0000000000001' has more than 12 decimal places (the ledger keeps 12; it never rounds)",
        f"{f}:3: reported_cost: '-1' is negative"]


def test_facts_written_before_reported_cost_existed_read_it_as_null(tmp_path):
    old = tmp_path / "old.parquet"
    cols = [c for c in facts.KINDS["requests"].columns if not c.name.startswith("reported_")]
    sel = ", ".join(f"CAST(NULL AS {c.type}) AS \"{c.name}\"" for c in cols)
    duckdb.sql(f"COPY (SELECT {sel}, TIMESTAMPTZ '2026-10-01 00:00:00+00' AS booked_at) TO '{old}' (FORMAT parquet)")
    con = duckdb.connect()
    got = con.sql(f"SELECT reported_cost, reported_currency FROM ({facts.files_sql('requests', [old], con=con)})"
                  ).fetchall()
    assert got == [(None, None)]


PLAIN = """request_id,occurred_at,tenant,product,model,provider,task_id,input_tokens,cached_input_tokens,\
cache_write_input_tokens,cache_write_1h_input_tokens,output_tokens,reasoning_tokens,status,ttft_ms,latency_ms
chatcmpl-a1,2026-10-01T10:05:00Z,acme,chat,gpt-5,openai,t1,1000,400,0,0,211,64,ok,420,2310
chatcmpl-a2,2026-10-01T10:06:00Z,acme,code-assist,claude-sonnet-4-5,anthropic,t2,3000,1200,1000,500,150,0,ok,500,3000
"""


def test_the_same_requests_from_litellm_and_from_the_ledger_csv_allocate_to_the_same_lines(ledger_home, tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(ROOT / "pricebooks" / "provider-tokens.toml", books)
    assert run("pricebook", "load", str(books)).exit_code == 0
    plain = tmp_path / "plain.csv"
    plain.write_text(PLAIN)
    spend = tmp_path / "spend.csv"  # the two provider requests a1 and a2 of the sample
    spend.write_text("".join(SPEND.read_text().splitlines(keepends=True)[:3]))

    def allocate() -> dict:
        r = run("allocate", "--period", "2026-10", "--json")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        return {k: doc[k] for k in ("total", "by_kind", "by_category", "tenants")}

    r = run("ingest", "requests", str(plain), "--register-new", "--json")
    assert r.exit_code == 0, r.output
    from_csv = allocate()
    assert run("batches", "undo", json.loads(r.stdout)["batch_id"]).exit_code == 0
    r = run("ingest", "requests", "--source", "litellm", str(spend), "--map", str(MAP), "--json")
    assert r.exit_code == 0, r.output
    from_litellm = allocate()
    assert D(from_csv["total"]) > 0
    assert from_litellm == from_csv
