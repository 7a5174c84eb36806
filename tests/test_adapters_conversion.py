"""How the adapters convert (issue 27): the flat conversion of a CSV or Parquet source, the messages
made only for the refused records, and the same rows as the conversion that follows every path.

A CSV or Parquet source is converted first without following JSON text held inside the JSON of a
field (``sources._flat``); a row with such text where a path goes sends the file to the conversion
that follows it (``Documents.deeper``). The checks keep one flag per row; their messages are made by
a second statement over the refused records alone (``sources._refusals``). Each is checked against
rows and problems worked by hand, and against the conversion that follows every path, on the real
LiteLLM files under tests/data.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from ledger import config, duck, facts, store
from ledger.ingest import IngestError, ingest
from ledger.ingest.records import Origin
from ledger.ingest.sources import HIDDEN, _convert, _flat, ingest_from, litellm, mapfile
from ledger.ingest.sources.reading import open_source

pytestmark = pytest.mark.store
DATA = Path(__file__).parent / "data"
SPEND, LITELLM_MAP = DATA / "adapters" / "litellm_spend_logs.csv", DATA / "adapters" / "litellm_map.toml"
COLS = ("request_id, tenant, product, input_tokens, cached_input_tokens, cache_write_input_tokens, "
        "cache_write_1h_input_tokens, output_tokens, reasoning_tokens, status, reported_cost")


def rows() -> list[tuple]:
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
        return con.execute(f"SELECT {COLS} FROM requests ORDER BY 1").fetchall()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_refused_rows_of_the_flat_conversion_are_told_with_file_line_and_field(ledger_home, tmp_path):
    # line 2 (chatcmpl-a1): its team alias written twice in metadata; line 3 (chatcmpl-a2): its cache
    # reads written as 1300 in prompt_tokens_details.cached_tokens and 1200 in cache_read_input_tokens
    text = lines(SPEND)
    text[1] = text[1].replace('""user_api_key_team_alias"": ""acme""',
                              '""user_api_key_team_alias"": ""acme"", ""user_api_key_team_alias"": ""beta""', 1)
    assert '""cached_tokens"": 1200' in text[2]
    text[2] = text[2].replace('""cached_tokens"": 1200', '""cached_tokens"": 1300', 1)
    bad = tmp_path / "spend.csv"
    bad.write_text("".join(text))
    with pytest.raises(IngestError) as e:
        ingest_from("litellm", "requests", [bad], LITELLM_MAP, register_new=True)
    assert e.value.lines() == [
        f"{bad}:2: metadata.user_api_key_team_alias (tenant): the key user_api_key_team_alias is written twice in "
        "one object: which value counts would be a guess",
        f"{bad}:3: metadata.usage_object.prompt_tokens_details.cached_tokens (cached_input_tokens): "
        "metadata.usage_object.prompt_tokens_details.cached_tokens 1300 and "
        "metadata.usage_object.cache_read_input_tokens 1200 disagree: the same cache reads cannot be two values"]
    assert e.value.total == 2


def test_json_text_inside_a_cells_json_in_one_row_is_followed(ledger_home, tmp_path):
    # chatcmpl-a1's usage object written as JSON text inside the metadata cell's JSON: the flat
    # conversion finds the string there and the file is converted again, following it
    text = lines(SPEND)
    meta = {"user_api_key_team_alias": "acme",
            "usage_object": json.dumps({"prompt_tokens": 1000, "completion_tokens": 211, "total_tokens": 1211,
                                        "prompt_tokens_details": {"cached_tokens": 400},
                                        "completion_tokens_details": {"reasoning_tokens": 64}})}
    start = text[1].index(',"{""user_api_key_team_alias""')
    end = text[1].index('}}}"', start) + len('}}}"')
    text[1] = text[1][:start] + ',"' + json.dumps(meta).replace('"', '""') + '"' + text[1][end:]
    nested = tmp_path / "spend.csv"
    nested.write_text("".join(text))
    ingest_from("litellm", "requests", [nested], LITELLM_MAP, register_new=True)
    got = {r[0]: r for r in rows()}
    # worked by hand from the row: 1000 prompt tokens of which 400 cached reads, 211 output of which 64 reasoning
    assert got["chatcmpl-a1"][:9] == ("chatcmpl-a1", "acme", "chat", 1000, 400, 0, 0, 211, 64)
    assert len(got) == 4


@pytest.mark.parametrize("source", [SPEND, DATA / "shapes" / "litellm_spend_logs_lowercase.csv",
                                    DATA / "shapes" / "litellm_spend_logs.csv.gz"], ids=lambda p: p.name)
def test_the_flat_conversion_writes_the_rows_of_the_one_that_follows_every_path(tmp_path, source):
    m = mapfile.load(LITELLM_MAP, litellm.MAPPABLE, litellm.TABLES, ())
    out = {}
    for how in ("deep", "flat"):
        con = duck.connect("ingest_source", home=tmp_path, ordered=True)
        src = open_source(con, source, None, tmp_path / how)
        flat = _flat(src) if how == "flat" else None
        cols = litellm.columns(src, m)
        kw = {"flat": (flat, litellm.columns(flat, m))} if flat else {}
        out[how] = tmp_path / f"{how}.parquet"
        assert _convert(con, "requests", src, cols, m, litellm, out[how], "_lines0", **kw) == ([], 0)
        con.close()
    con = duckdb.connect()
    deep, flat = (f"read_parquet('{out[h]}')" for h in ("deep", "flat"))
    assert con.execute(f"SELECT count(*) FROM {flat}").fetchone()[0] == 4
    # the same rows in the same order, every ledger column (the conversion's own, ``HIDDEN``, begin with _)
    ledger_cols = "COLUMNS('^[^_]')"
    assert (con.execute(f"SELECT {ledger_cols} FROM {deep}").fetchall()
            == con.execute(f"SELECT {ledger_cols} FROM {flat}").fetchall())
    assert len(con.execute(f"DESCRIBE SELECT {ledger_cols} FROM {flat}").fetchall()) > 10
    # beside them, no record refused and none with JSON text the flat conversion missed
    assert con.execute(f"SELECT bool_or(_refused) FROM {deep}").fetchone()[0] is False
    assert con.execute(f"SELECT bool_or(_refused OR _deeper) FROM {flat}").fetchone()[0] is False


def test_the_conversions_own_columns_are_left_unread_only_in_its_own_files(ledger_home, tmp_path):
    # The conversion writes its flags beside the ledger's columns (``sources.HIDDEN``). The ingest leaves
    # them unread only in a file converted from a source (``Origin.hidden``); in a user's own Parquet
    # file the same column is judged as any other (a BOOLEAN column is refused), and nothing is written.
    assert not {c for k in facts.KINDS.values() for c in k.names} & set(HIDDEN)  # never a column of a kind
    m = mapfile.load(LITELLM_MAP, litellm.MAPPABLE, litellm.TABLES, ())
    con = duck.connect("ingest_source", home=tmp_path, ordered=True)
    src = open_source(con, SPEND, None, tmp_path / "links")
    out = tmp_path / "converted.parquet"
    assert _convert(con, "requests", src, litellm.columns(src, m), m, litellm, out, "_lines0") == ([], 0)
    con.close()
    assert "_refused" in [r[0] for r in duckdb.connect().execute(f"DESCRIBE FROM '{out}'").fetchall()]
    with pytest.raises(IngestError) as e:
        ingest("requests", [out], register_new=True)
    assert [(p.entry, p.message) for p in e.value.problems] == [
        ("_refused", "is a BOOLEAN column: expected text, a number or an instant, one value per row")]
    assert rows() == []
    origin = Origin(path=str(SPEND), sha256="ab" * 32, format="litellm:csv", bytes=SPEND.stat().st_size,
                    hidden=HIDDEN)
    r = ingest("requests", [out], register_new=True, origins=[origin])
    assert r.rows_new == 4
    assert [(f.path, f.sha256, f.format) for f in r.files] == [(str(SPEND), "ab" * 32, "litellm:csv")]


def test_the_batch_records_the_sha256_of_each_source_file(ledger_home, tmp_path):
    # the sources are hashed in a thread while DuckDB converts them: the batch says what sha256sum says
    second = tmp_path / "second.csv"
    text = lines(SPEND)
    second.write_text("".join([text[0]] + [t.replace("chatcmpl-", "chatcmpl-second-") for t in text[1:]]))
    r = ingest_from("litellm", "requests", [SPEND, second], LITELLM_MAP, register_new=True)
    assert r.rows_new == 8
    assert [(f.path, f.sha256) for f in r.files] == [
        (str(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in (SPEND, second)]
