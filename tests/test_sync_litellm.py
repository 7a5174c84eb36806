"""`ledger sync`, kind litellm-postgres: LiteLLM's `LiteLLM_SpendLogs` read from the real PostgreSQL server.

The table is created as LiteLLM's Prisma schema declares it (model `LiteLLM_SpendLogs` of
`schema.prisma`, BerriAI/litellm,
https://github.com/BerriAI/litellm/blob/main/schema.prisma; Prisma's PostgreSQL types: String
TEXT, Int INTEGER, Float DOUBLE PRECISION, DateTime TIMESTAMP(3), Json JSONB), in a fresh schema of
the `test` database per test, with rows in the shapes LiteLLM writes (metadata a JSON object with its
`usage_object`, request_tags a JSON list, NULL where LiteLLM leaves a column empty). The four rows are
the adapter sample's (tests/data/adapters/litellm_spend_logs.csv, README there), so the sync must give
exactly the rows `ingest requests --source litellm` gives (tests/test_adapters.py's EXPECTED).
Runs with the ledger DB on SQLite, and on PostgreSQL when LEDGER_TEST_DATABASE_URL is set.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
import typer
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.sync import cli as sync_cli
from ledger.sync import run as sync_run
from ledger.sync import state
from ledger.sync.config import load

pytestmark = pytest.mark.store
ROOT = Path(__file__).resolve().parent
MAP = ROOT / "data" / "adapters" / "litellm_map.toml"
PG = os.environ.get("LEDGER_TEST_DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/test"

# model LiteLLM_SpendLogs of schema.prisma (BerriAI/litellm), every field, in its order, as Prisma
# creates it on PostgreSQL; the two indexes LiteLLM declares for reads by time.
CREATE = '''
CREATE TABLE "LiteLLM_SpendLogs" (
    "request_id" TEXT NOT NULL,
    "call_type" TEXT NOT NULL,
    "api_key" TEXT NOT NULL DEFAULT '',
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    "total_tokens" INTEGER NOT NULL DEFAULT 0,
    "prompt_tokens" INTEGER NOT NULL DEFAULT 0,
    "completion_tokens" INTEGER NOT NULL DEFAULT 0,
    "startTime" TIMESTAMP(3) NOT NULL,
    "endTime" TIMESTAMP(3) NOT NULL,
    "request_duration_ms" INTEGER,
    "completionStartTime" TIMESTAMP(3),
    "model" TEXT NOT NULL DEFAULT '',
    "model_id" TEXT DEFAULT '',
    "model_group" TEXT DEFAULT '',
    "custom_llm_provider" TEXT DEFAULT '',
    "api_base" TEXT DEFAULT '',
    "user" TEXT DEFAULT '',
    "metadata" JSONB DEFAULT '{}',
    "cache_hit" TEXT DEFAULT '',
    "cache_key" TEXT DEFAULT '',
    "request_tags" JSONB DEFAULT '[]',
    "team_id" TEXT,
    "organization_id" TEXT,
    "end_user" TEXT,
    "requester_ip_address" TEXT,
    "messages" JSONB DEFAULT '{}',
    "response" JSONB DEFAULT '{}',
    "session_id" TEXT,
    "status" TEXT,
    "mcp_namespaced_tool_name" TEXT,
    "agent_id" TEXT,
    "proxy_server_request" JSONB DEFAULT '{}',
    CONSTRAINT "LiteLLM_SpendLogs_pkey" PRIMARY KEY ("request_id")
);
CREATE INDEX "LiteLLM_SpendLogs_startTime_idx" ON "LiteLLM_SpendLogs"("startTime");
CREATE INDEX "LiteLLM_SpendLogs_startTime_request_id_idx" ON "LiteLLM_SpendLogs"("startTime", "request_id");
'''

INSERT = sa.text('''INSERT INTO "LiteLLM_SpendLogs" (request_id, call_type, api_key, spend, total_tokens, prompt_tokens,
  completion_tokens, "startTime", "endTime", "completionStartTime", model, model_group, custom_llm_provider, api_base,
  "user", metadata, request_tags, team_id, end_user, session_id, status, messages, response)
VALUES (:id, 'acompletion', '88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b', :spend, :total, :prompt,
  :completion, :start, :end, :first, :model, :model, :provider, :base, :user, CAST(:metadata AS JSONB),
  CAST(:tags AS JSONB), :team, NULL, :session, :status, '{}', '{}')''')


def _row(i: str, start: str, end: str, first: str | None, model: str, provider: str, base: str, team: str,
         usage: dict, tags: list, status: str = "success", spend: float = 0.0) -> dict:
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {"id": i, "spend": spend, "total": prompt + completion, "prompt": prompt, "completion": completion,
            "start": start, "end": end, "first": first, "model": model, "provider": provider, "base": base,
            "user": "u1", "metadata": json.dumps({"user_api_key_team_alias": team, "usage_object": usage,
                                                  "user_api_key_hash": "88dc28d0"}),
            "tags": json.dumps(tags), "team": f"team-{team}", "session": f"t{i[-1]}", "status": status}


# The adapter sample's four requests (tests/data/adapters/litellm_spend_logs.csv), as LiteLLM writes them.
ROWS = [
    _row("chatcmpl-a1", "2026-10-01 10:05:00", "2026-10-01 10:05:02.310", "2026-10-01 10:05:00.420", "gpt-5", "openai",
         "https://api.openai.com/v1", "acme",
         {"prompt_tokens": 1000, "completion_tokens": 211, "total_tokens": 1211,
          "prompt_tokens_details": {"cached_tokens": 400}, "completion_tokens_details": {"reasoning_tokens": 64}},
         ["chat"], spend=1.2345678901234567e-05),
    _row("chatcmpl-a2", "2026-10-01 10:06:00", "2026-10-01 10:06:03", "2026-10-01 10:06:00.500", "claude-sonnet-4-5",
         "anthropic", "https://api.anthropic.com", "acme",
         {"prompt_tokens": 3000, "completion_tokens": 150, "total_tokens": 3150, "cache_read_input_tokens": 1200,
          "cache_creation_input_tokens": 1500,
          "cache_creation_token_details": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 500},
          "prompt_tokens_details": {"cached_tokens": 1200}}, ["code-assist"], spend=0.0123),
    _row("chatcmpl-a3", "2026-10-01 10:07:00", "2026-10-01 10:07:01.500", "2026-10-01 10:07:00.200", "llama-3.1-8b",
         "hosted_vllm", "http://vllm-h100:8000/v1", "beta",
         {"prompt_tokens": 2000, "completion_tokens": 100, "total_tokens": 2100,
          "prompt_tokens_details": {"cached_tokens": 512}}, []),
    _row("chatcmpl-a4", "2026-10-01 10:08:00", "2026-10-01 10:08:30", None, "gpt-5", "openai",
         "https://api.openai.com/v1", "beta", {}, ["chat"], status="failure"),
]


@pytest.fixture
def litellm_db():
    """LiteLLM's database: a fresh schema of the real PostgreSQL server's `test` database, with the
    table created from schema.prisma; yields (URL of it, engine to write rows as LiteLLM does)."""
    from ledger.config import normalize_url

    schema = f"litellm_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(normalize_url(PG), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        c.execute(sa.text(f'SET search_path TO "{schema}"'))
        c.exec_driver_sql(CREATE)
    url = f"{PG.split('?')[0]}?options=-csearch_path%3D{schema}"
    eng = sa.create_engine(normalize_url(url))
    yield url, eng
    eng.dispose()
    with admin.connect() as c:
        c.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


def write_rows(eng, rows) -> None:
    with eng.begin() as c:
        c.execute(INSERT, rows)


def sync_file(tmp_path: Path, url: str, extra: str = "") -> Path:
    p = tmp_path / "sync.toml"
    p.write_text(f'[[source]]\nname = "gateway"\nkind = "litellm-postgres"\nurl = "{url}"\nmap = "{MAP}"\n'
                 f'register_new = true\n{extra}', encoding="utf-8")
    return p


def requests(home: Path) -> list[tuple]:
    from test_adapters import COLS

    with store.session() as s:
        con = facts.open_ledger_facts(s, home)
        return con.execute(f"SELECT {COLS} FROM requests ORDER BY request_id").fetchall()


def batch_ids() -> list[str]:
    with store.session() as s:
        return sorted(b for ids in facts.committed_batches(s).values() for b in ids)


def cli(*args: str):
    app = typer.Typer(add_completion=False)
    sync_cli.register(app)
    app.command("noop")(lambda: None)  # a group of two, so that `sync` is a subcommand as under `ledger`
    return CliRunner().invoke(app, list(args))


def test_sync_gives_the_adapters_rows_and_a_second_sync_adds_nothing(ledger_home, litellm_db, tmp_path):
    from test_adapters import EXPECTED

    url, eng = litellm_db
    write_rows(eng, ROWS)
    cfg = sync_file(tmp_path, url)
    r = cli("sync", "--config", str(cfg), "--json")
    assert r.exit_code == 0, r.output
    [rep] = json.loads(r.stdout)
    assert (rep["status"], rep["read"], rep["new"], rep["duplicate"]) == ("synced", 4, 4, 0)
    # the last row by (startTime, request_id): a4 at 10:08:00 UTC
    assert (rep["watermark"]["startTime"], rep["watermark"]["request_id"]) == ("2026-10-01T10:08:00Z",
                                                                             "chatcmpl-a4")
    assert requests(ledger_home) == EXPECTED  # exactly the rows of `ingest requests --source litellm`
    [batch] = batch_ids()
    assert rep["batches"] == [batch]
    with store.session() as s:  # the watermark was committed with that batch
        from ledger.models import SyncWatermark

        assert s.get(SyncWatermark, "gateway").batch_id == batch
    # again: the lookback (1h) reads the four rows again; all duplicates; no batch row, no fact added
    r = cli("sync", "--config", str(cfg), "--json")
    [rep] = json.loads(r.stdout)
    assert (r.exit_code, rep["status"], rep["read"], rep["new"], rep["duplicate"], rep["batches"]) == \
        (0, "nothing new", 4, 0, 4, [])
    assert batch_ids() == [batch] and requests(ledger_home) == EXPECTED
    # and the table: one line per source
    r = cli("sync", "--config", str(cfg))
    assert r.exit_code == 0 and "gateway" in r.stdout and "nothing new" in r.stdout


def test_late_rows_inside_the_lookback_are_read_and_older_ones_wait_for_no_one(ledger_home, litellm_db, tmp_path):
    url, eng = litellm_db
    write_rows(eng, ROWS)
    home = config.home()
    sources = load(sync_file(tmp_path, url, 'lookback = "15m"\n'))
    [first] = sync_run(sources, home)
    assert first.new == 4
    # written after the sync: a5 started at 10:07:30 (before the watermark 10:08:00, inside 15 minutes),
    # a6 at 09:40 (28 minutes before it: outside the window), a7 after the watermark
    late = [dict(ROWS[0], id="chatcmpl-a5", start="2026-10-01 10:07:30", end="2026-10-01 10:07:31",
                 first="2026-10-01 10:07:30.100", session="t5"),
            dict(ROWS[0], id="chatcmpl-a6", start="2026-10-01 09:40:00", end="2026-10-01 09:40:01",
                 first="2026-10-01 09:40:00.100", session="t6"),
            dict(ROWS[0], id="chatcmpl-a7", start="2026-10-01 10:09:00", end="2026-10-01 10:09:01",
                 first="2026-10-01 10:09:00.100", session="t7")]
    write_rows(eng, late)
    [rep] = sync_run(sources, home)
    # read from 10:08 - 15m = 09:53: a1..a5 and a7 (6 rows), a5 and a7 new
    assert (rep.read, rep.new, rep.duplicate) == (6, 2, 4)
    assert rep.watermark["request_id"] == "chatcmpl-a7"
    ids = [r[0] for r in requests(home.path)]
    assert "chatcmpl-a5" in ids and "chatcmpl-a7" in ids and "chatcmpl-a6" not in ids


def test_rows_of_a_closed_month_are_booked_as_adjustments(ledger_home, litellm_db, tmp_path):
    url, eng = litellm_db
    write_rows(eng, ROWS)
    home = config.home()
    sources = load(sync_file(tmp_path, url))
    sync_run(sources, home)
    with store.session() as s:
        store.close_period(s, name="2026-10")
        open_period = store.current_open_period(s)
    write_rows(eng, [dict(ROWS[0], id="chatcmpl-a8", start="2026-10-01 10:07:50", end="2026-10-01 10:07:51",
                          first="2026-10-01 10:07:50.100", session="t8")])
    [rep] = sync_run(sources, home)
    assert (rep.status, rep.new, rep.adjustments) == ("synced", 1, (open_period,))
    with store.session() as s:
        from ledger.models import IngestBatch

        b = s.get(IngestBatch, rep.batches[0])
        assert (b.as_adjustment, b.booked_period) == (True, open_period)


def test_a_second_sync_exits_0_saying_one_is_running(ledger_home, litellm_db, tmp_path):
    url, _ = litellm_db
    cfg = sync_file(tmp_path, url)
    with state.locked(config.home().path):
        r = cli("sync", "--config", str(cfg))
    assert r.exit_code == 0, r.output
    assert "a sync of this ledger home is running (pid " in r.output
    assert batch_ids() == []


def test_an_unreachable_database_is_one_line_and_nothing_moves(ledger_home, tmp_path):
    cfg = sync_file(tmp_path, "postgresql://nobody@127.0.0.1:1/none")
    r = cli("sync", "--config", str(cfg), "--json")
    assert r.exit_code == 1
    [rep] = json.loads(r.stdout)
    assert rep["status"] == "failed" and rep["watermark"] == {}
    assert "gateway: gateway: LiteLLM_SpendLogs: cannot read LiteLLM's database" in r.stderr
