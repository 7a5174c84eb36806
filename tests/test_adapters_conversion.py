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

import json
from pathlib import Path

import duckdb
import pytest

from ledger import config, duck, facts, store
from ledger.ingest import IngestError
from ledger.ingest.sources import _convert, _flat, ingest_from, litellm, mapfile
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
    # the same rows in the same order, every column
    assert con.execute(f"SELECT * FROM {deep}").fetchall() == con.execute(f"SELECT * FROM {flat}").fetchall()
