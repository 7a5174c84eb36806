"""`ledger check`: the facts against the price books, with the allocation's lookups (region then *,
purchase option then *), the nearest SKUs that exist, and the same warnings at ingest."""
from __future__ import annotations

import csv
import io
import json
import textwrap

import pytest
from typer.testing import CliRunner

from ledger import facts, store
from ledger.check import FIELDS, check_facts
from ledger.cli import app
from ledger.pricebook import PriceIndex, parse_book

pytestmark = pytest.mark.store
runner = CliRunner()

BOOK = """
[book]
name = "check-book"
version = "2026-10-01"
currency = "USD"
source = "test"
retrieved_at = 2026-10-01

[[price]]
meter = "gpu_time"
sku = "H100"
region = "us-east-1"
purchase_option = "on_demand"
price = "3.60"
per = "gpu * hour"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/h100"

# A100 on demand in any region, until 12:00 on October 1 (nothing after it)
[[price]]
meter = "gpu_time"
sku = "A100"
region = "*"
purchase_option = "on_demand"
price = "2.00"
per = "gpu * hour"
effective_from = 2026-01-01T00:00:00Z
effective_to = 2026-10-01T12:00:00Z
source_url = "https://example.com/a100"

[[price]]
meter = "input_tokens"
sku = "gpt-5"
price = "1.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5"

[[price]]
meter = "cached_input_tokens"
sku = "gpt-5"
price = "0.125"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5"

[[price]]
meter = "output_tokens"
sku = "gpt-5"
price = "10"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5"

[[price]]
meter = "input_tokens"
sku = "gpt-5-mini"
price = "0.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5-mini"

[[price]]
meter = "output_tokens"
sku = "gpt-5-mini"
price = "2"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5-mini"

# gpt-5-nano on the standard tier only
[[price]]
meter = "input_tokens"
sku = "gpt-5-nano"
purchase_option = "standard"
price = "0.05"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5-nano"

[[price]]
meter = "output_tokens"
sku = "gpt-5-nano"
purchase_option = "standard"
price = "0.40"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5-nano"

# egress from us-east-1 only
[[price]]
meter = "egress"
sku = "internet"
region = "us-east-1"
price = "0.09"
per = "GB"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/egress"
"""

REQ_HEADER = ("request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,"
              "output_tokens,status")

CLEAN = {
    # p1 serves 10:00-13:00 on H100 (priced); its failure reserve 10:00-12:00 on A100 (priced until 12:00)
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s1,p1,2026-10-01T10:00:00Z,2026-10-01T13:00:00Z,H100,2,us-east-1,on_demand,serving,1
        r1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,A100,1,us-west-2,on_demand,failure_reserve,
    """,
    # q3 has no cached tokens, so gpt-5-mini needs no cached_input_tokens price
    "requests": f"""
        {REQ_HEADER}
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,,t1,1000,0,800,ok
        q2,2026-10-01T12:59:59Z,b,search,llama,p1,,t2,3000,0,600,ok
        q3,2026-10-01T11:00:00Z,a,chat,gpt-5-mini,,openai,t1,1000,0,200,ok
        q4,2026-10-01T12:00:00Z,b,chat,gpt-5,,openai,t2,100000,40000,2000,ok
    """,
    "meters": """
        event_id,occurred_at,tenant,product,task_id,meter,sku,quantity,unit,region
        e1,2026-10-01T10:00:00Z,a,chat,t1,egress,internet,2,GB,us-east-1
    """,
    "charges": """
        charge_id,period_start,period_end,category,description,amount,currency,allocate
        c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Grafana,310.00,USD,even
        c2,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,tools,licence,10.00,USD,tenant:b
    """,
}


def invoke(*args: str):
    return runner.invoke(app, list(args))


def ingest(tmp_path, kind: str, text: str, name: str | None = None):
    path = tmp_path / f"{name or kind}.csv"
    path.write_text(textwrap.dedent(text).strip() + "\n", encoding="utf-8")
    r = invoke("ingest", kind, str(path), "--register-new")
    assert r.exit_code == 0, r.output
    return r


def batch_of(r) -> str:
    """The batch an ingest wrote, from its summary line (`...; batch ID`)."""
    return r.stdout.rsplit("batch ", 1)[1].split()[0]


@pytest.fixture
def clean(ledger_home, tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "check.toml").write_text(BOOK, encoding="utf-8")
    assert invoke("pricebook", "load", str(tmp_path / "books")).exit_code == 0
    for kind, text in CLEAN.items():
        ingest(tmp_path, kind, text)
    return tmp_path


def test_a_clean_small_ledger_finds_nothing(clean):
    r = invoke("check")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == ("no problems: 4 requests, 1 meter event, 2 fleet intervals and 2 charges checked "
                                "against 1 price book")
    r = invoke("check", "--period", "2026-10")
    assert r.exit_code == 0 and "from 2026-10-01T00:00:00Z to 2026-11-01T00:00:00Z" in r.stdout
    doc = json.loads(invoke("check", "--json").stdout)
    assert (doc["ok"], doc["problems"], doc["findings"]) == (True, 0, [])
    assert doc["checked"] == {"requests": 4, "meters": 1, "fleet": 2, "charges": 2}
    # the header alone, every field quoted (ledger.outputs.csv_text)
    assert invoke("check", "--csv").stdout == ",".join(f'"{f}"' for f in FIELDS) + "\n"


def test_a_mistyped_sku_names_the_sku_the_batch_and_the_nearest_sku(clean, tmp_path):
    r = ingest(tmp_path, "requests", f"""
        {REQ_HEADER}
        m1,2026-10-01T09:00:00Z,a,chat,gpt5-mini,,openai,t5,1000,0,100,ok
        m2,2026-10-01T10:30:00Z,a,chat,gpt5-mini,,openai,t5,500,0,50,ok
    """, name="typo")
    batch = batch_of(r)
    # input and output have tokens; the cached bucket is empty and needs no price. Of the books' SKUs
    # for those meters, difflib finds gpt-5-mini (ratio 18/19) and gpt-5-nano (12/19) close, gpt-5 not (8/14)
    expected = [f"requests: no price in force for meter {m}, sku gpt5-mini, region *, purchase option standard, "
                f"provider openai: 2 requests from 2026-10-01T09:00:00Z to 2026-10-01T10:30:00Z, batch {batch}; "
                f"nearest SKUs: gpt-5-mini, gpt-5-nano" for m in ("input_tokens", "output_tokens")]
    # at ingest: warnings on stderr, and the ingest still succeeds (exit 0)
    assert r.stderr.splitlines() == [f"warning: {line}" for line in expected]
    assert f"2 rows read, 2 new, 0 duplicate; batch {batch}" in r.stdout

    r = invoke("check")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == expected and r.stdout == ""
    doc = json.loads(invoke("check", "--json").stdout)
    f = doc["findings"][0]
    assert {k: f[k] for k in ("kind", "source", "meter", "sku", "region", "purchase_option", "provider", "count",
                              "first_at", "last_at", "nearest", "batches")} == {
        "kind": "no_price", "source": "requests", "meter": "input_tokens", "sku": "gpt5-mini", "region": "*",
        "purchase_option": "standard", "provider": "openai", "count": 2, "first_at": "2026-10-01T09:00:00Z",
        "last_at": "2026-10-01T10:30:00Z", "nearest": ["gpt-5-mini", "gpt-5-nano"], "batches": [batch]}


def test_service_tiers_cache_writes_and_reasoning_are_looked_up_as_the_allocation_does(clean, tmp_path):
    # w1: gpt-5 with 5-minute cache writes and reasoning: no cache-write or reasoning price, so the
    #     writes fall back to the input price and the reasoning is output: nothing missing;
    # w2: gpt-5-nano on the standard tier: priced; w3, w4: on the batch tier: no price for that tier
    r = ingest(tmp_path, "requests", """
        request_id,occurred_at,tenant,product,model,provider,input_tokens,cached_input_tokens,\
cache_write_input_tokens,output_tokens,reasoning_tokens,service_tier,status
        w1,2026-10-01T11:00:00Z,a,chat,gpt-5,openai,1000,100,500,300,200,standard,ok
        w2,2026-10-01T11:00:00Z,a,chat,gpt-5-nano,openai,1000,0,0,300,0,standard,ok
        w3,2026-10-01T11:00:00Z,a,chat,gpt-5-nano,openai,1000,0,0,300,0,batch,ok
        w4,2026-10-01T11:30:00Z,a,chat,gpt-5-nano,openai,1000,0,0,0,0,batch,ok
    """, name="tiers")
    batch = batch_of(r)
    r = invoke("check")
    assert r.exit_code == 1
    # w3 and w4 need the input price on the batch tier, only w3 the output price
    assert r.stderr.splitlines() == [
        f"requests: no price in force for meter {m}, sku gpt-5-nano, region *, purchase option batch, provider "
        f"openai: {n}, batch {batch}; gpt-5-nano has {m} prices for */standard, none in force for this key at that "
        "time" for m, n in (("input_tokens", "2 requests from 2026-10-01T11:00:00Z to 2026-10-01T11:30:00Z"),
                            ("output_tokens", "1 request at 2026-10-01T11:00:00Z"))]


def test_a_meter_in_a_region_the_book_does_not_price(clean, tmp_path):
    # egress is priced in us-east-1 only: eu-west-1 has no price, and neither has a row with no region (*)
    r = ingest(tmp_path, "meters", """
        event_id,occurred_at,tenant,product,task_id,meter,sku,quantity,unit,region
        e2,2026-10-02T00:00:00Z,a,chat,,egress,internet,1,GB,eu-west-1
        e3,2026-10-03T00:00:00Z,a,chat,,egress,internet,1,GB,
        e4,2026-10-03T00:00:00Z,a,chat,,egres,internet,1,GB,us-east-1
    """, name="egress")
    batch = batch_of(r)
    r = invoke("check", "--period", "2026-10")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        f"meters: no price in force for meter egres, sku internet, region us-east-1, purchase option *: 1 event at "
        f"2026-10-03T00:00:00Z, batch {batch}; no price book prices meter egres (nearest meters: egress)",
        f"meters: no price in force for meter egress, sku internet, region *, purchase option *: 1 event at "
        f"2026-10-03T00:00:00Z, batch {batch}; internet has egress prices for us-east-1/*, none in force for this "
        "key at that time",
        f"meters: no price in force for meter egress, sku internet, region eu-west-1, purchase option *: 1 event at "
        f"2026-10-02T00:00:00Z, batch {batch}; internet has egress prices for us-east-1/*, none in force for this "
        "key at that time"]


def test_a_fleet_device_with_no_price(clean, tmp_path):
    # s2: H100 on spot has no price (the book has on_demand only, no * option);
    # r2: A100 on demand is priced until 12:00, so 12:00-14:00 of 10:00-14:00 is unpriced;
    # s3: the same A100 in September is priced all along
    r = ingest(tmp_path, "fleet", """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s2,p1,2026-10-01T10:00:00Z,2026-10-01T13:00:00Z,H100,1,us-east-1,spot,serving,
        r2,p2,2026-10-01T10:00:00Z,2026-10-01T14:00:00Z,A100,1,eu-west-1,on_demand,canary,
        s3,p2,2026-09-30T10:00:00Z,2026-09-30T14:00:00Z,A100,1,eu-west-1,on_demand,serving,
    """, name="fleet2")
    batch = batch_of(r)
    r = invoke("check")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        f"fleet: no gpu_time price in force for device A100, region eu-west-1, purchase option on_demand: 1 interval "
        f"from 2026-10-01T12:00:00Z until 2026-10-01T14:00:00Z, batch {batch} (pools p2); A100 has gpu_time prices "
        "for */on_demand, none in force for this key at that time",
        f"fleet: no gpu_time price in force for device H100, region us-east-1, purchase option spot: 1 interval from "
        f"2026-10-01T10:00:00Z until 2026-10-01T13:00:00Z, batch {batch} (pools p1); H100 has gpu_time prices for "
        "us-east-1/on_demand, none in force for this key at that time"]
    assert invoke("check", "--period", "2026-09").exit_code == 0  # s3 alone: priced
    # a period that ends at 12:00 sees only the priced part of r2
    assert [f["sku"] for f in json.loads(invoke("check", "--from", "2026-10-01", "--to", "2026-10-01T12:00:00Z",
                                                "--json").stdout)["findings"]] == ["H100"]


def test_pools_with_requests_and_no_fleet(clean, tmp_path):
    # p1 serves 10:00-13:00: a request at 15:20 is in an hour with no serving interval; pool p10 has no
    # fleet at all (p1 is its nearest pool: difflib ratio 2 x 2 / 5 = 0.8)
    r = ingest(tmp_path, "requests", f"""
        {REQ_HEADER}
        n1,2026-10-01T15:20:00Z,a,chat,llama,p1,,,10,0,5,ok
        n2,2026-10-02T08:00:00Z,a,chat,llama,p10,,,10,0,5,ok
        n3,2026-10-02T09:30:00Z,b,chat,llama,p10,,,10,0,5,ok
        n4,2026-10-02T09:45:00Z,b,chat,llama,p10,,,10,0,5,ok
    """, name="pools")
    batch = batch_of(r)
    r = invoke("check")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        f"requests: pool p1 has 1 hour of requests with no serving fleet interval (flagged no_fleet): 1 request at "
        f"2026-10-01T15:20:00Z, batch {batch}; their GPU cost would be $0",
        f"requests: pool p10 has requests and no serving fleet interval: 3 requests from 2026-10-02T08:00:00Z to "
        f"2026-10-02T09:45:00Z, batch {batch}; their GPU cost would be $0; nearest pools: p1"]


def test_unknown_charge_targets():
    # ingest refuses an unregistered tenant and an unknown rule; facts written otherwise (an older
    # ledger, a tenant removed from the DB) are still checked, as the allocation reads them (stripped)
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for kind in facts.KINDS:
        con.execute(f"CREATE TABLE {kind} AS SELECT *, CAST(NULL AS VARCHAR) AS batch "
                    f"FROM ({facts.empty_select(kind)})")
    october = "'2026-10-01T00:00:00Z', '2026-11-01T00:00:00Z'"
    september = "'2026-09-01T00:00:00Z', '2026-10-01T00:00:00Z'"
    con.execute(f"""INSERT INTO charges (charge_id, period_start, period_end, category, amount, currency, allocate,
                                         batch)
                    VALUES ('c1', {october}, 'other', 1, 'USD', 'tenant:acmee', 'b1'),
                           ('c2', {october}, 'other', 1, 'USD', 'by_costs', 'b1'),
                           ('c3', {october}, 'other', 1, 'USD', ' tenant: acme ', 'b2'),
                           ('c4', {october}, 'other', 1, 'USD', 'tenant:acmee', 'b2'),
                           ('c5', {september}, 'other', 1, 'USD', 'tenant:zeta', 'b2')""")
    index = PriceIndex([parse_book(BOOK, "check.toml")[0]])
    start, end = store.month_bounds("2026-10")
    report = check_facts(con, index=index, tenants={"acme", "globex"}, start=start, end=end)
    assert [f.message for f in report.findings] == [
        "charges: allocate 'by_costs' of charge c2: not even, by_cost, by_tokens, tenant:<name> or none (nearest: "
        "by_cost); batch b1",
        "charges: allocate 'tenant:acmee' of charges c1, c4: acmee is not a registered tenant (nearest: acme); "
        "batches b1, b2"]
    assert [(f.kind, f.target, f.count, f.nearest) for f in report.findings] == [
        ("unknown_charge_target", "by_costs", 1, ("by_cost",)),  # by_tokens: ratio 10/17 < 0.6
        ("unknown_charge_target", "tenant:acmee", 2, ("acme",))]
    # c5 (September) is out of the period; without a period it is found
    assert len(check_facts(con, index=index, tenants={"acme"}).findings) == 3


def test_json_and_csv_shapes(clean, tmp_path):
    r = ingest(tmp_path, "requests", f"""
        {REQ_HEADER}
        m1,2026-10-01T09:00:00Z,a,chat,gpt5-mini,,openai,t5,1000,0,0,ok
    """, name="typo")
    batch = batch_of(r)
    r = invoke("check", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert list(doc) == ["check", "period", "batch", "price_books", "checked", "ok", "problems", "findings"]
    assert (doc["period"], doc["batch"], doc["price_books"], doc["ok"], doc["problems"]) == (
        None, None, ["check-book@2026-10-01"], False, 1)
    assert list(doc["findings"][0]) == list(FIELDS)
    r = invoke("check", "--csv", "--period", "2026-10")
    assert r.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 1 and list(rows[0]) == list(FIELDS)
    assert {k: rows[0][k] for k in ("kind", "meter", "sku", "count", "nearest", "batches", "first_at")} == {
        "kind": "no_price", "meter": "input_tokens", "sku": "gpt5-mini", "count": "1",
        "nearest": "gpt-5-mini gpt-5-nano",
        "batches": batch, "first_at": "2026-10-01T09:00:00Z"}
    r = invoke("check", "--table")
    assert r.exit_code == 1 and "no_price" in r.stdout and "ledger check: 1 problem" in r.stdout


def test_ingest_json_carries_the_warnings_and_a_clean_batch_has_none(clean, tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text(f"{REQ_HEADER}\nk1,2026-10-01T11:00:00Z,a,chat,gpt-5,,openai,,10,0,5,ok\n", encoding="utf-8")
    r = invoke("ingest", "requests", str(path), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["warnings"] == [] and r.stderr == ""
    path.write_text(f"{REQ_HEADER}\nk2,2026-10-01T11:00:00Z,a,chat,llama,p7,,,10,0,5,ok\n", encoding="utf-8")
    r = invoke("ingest", "requests", str(path), "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and r.stderr == ""
    # only this batch's rows: the earlier gpt-5 batch and the clean ones say nothing
    assert doc["warnings"] == [f"requests: pool p7 has requests and no serving fleet interval: 1 request at "
                               f"2026-10-01T11:00:00Z, batch {doc['batch_id']}; their GPU cost would be $0"]


def test_no_price_books_loaded(ledger_home, tmp_path):
    r = ingest(tmp_path, "requests", f"{REQ_HEADER}\nq1,2026-10-01T11:00:00Z,a,chat,gpt-5,,openai,,10,0,5,ok")
    assert "warning: no price books are loaded: 1 usage cannot be priced (run `ledger pricebook load`)" in r.stderr
    r = invoke("check")
    assert r.exit_code == 1 and "no price books are loaded" in r.stderr


# ---- the check's lookups are the allocation's --------------------------------------------------

import re  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402

from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ledger.allocate import AllocationError, allocate  # noqa: E402
from ledger.allocate.records import FALLBACK_METERS  # noqa: E402
from test_allocate_support import facts_con, index  # noqa: E402

T0 = datetime(2026, 9, 30, tzinfo=timezone.utc)  # instants are hours after T0, September 30 to October 4
TOKEN = ["input_tokens", "cached_input_tokens", "cache_write_tokens", "cache_write_1h_tokens", "output_tokens",
         "reasoning_tokens"]
PER = {"gpu_time": "gpu * hour", "egress": "GB", **{m: "1e6 * token" for m in TOKEN}}


def at(hour: int) -> str:
    return (T0 + timedelta(hours=hour)).isoformat().replace("+00:00", "Z")


@st.composite
def price_entries(draw):
    """Prices that never overlap for one key: each key gets consecutive windows, some with gaps."""
    keys = draw(st.sets(st.one_of(
        st.tuples(st.just("gpu_time"), st.sampled_from(["H100", "A100"]), st.sampled_from(["us", "eu", "*"]),
                  st.sampled_from(["on_demand", "spot", "*"]), st.just("*")),
        st.tuples(st.sampled_from(TOKEN), st.sampled_from(["m1", "m2"]), st.sampled_from(["us", "*"]),
                  st.sampled_from(["standard", "batch", "*"]), st.sampled_from(["x", "y", "*"])),
        st.tuples(st.just("egress"), st.sampled_from(["s1", "s2"]), st.sampled_from(["us", "*"]), st.just("*"),
                  st.just("*"))), max_size=14))
    out = []
    for key in sorted(keys):
        t = draw(st.integers(0, 60))
        for _ in range(draw(st.integers(1, 2))):
            end = draw(st.one_of(st.none(), st.integers(t + 1, t + 60)))
            out.append((*key, t, end))
            if end is None:
                break
            t = end + draw(st.integers(0, 10))
    return out


def toml(entries) -> str:
    body = "".join(
        f'\n[[price]]\nmeter = "{m}"\nsku = "{s}"\nregion = "{r}"\npurchase_option = "{o}"\nprovider = "{pv}"\n'
        f'price = "1"\nper = "{PER[m]}"\neffective_from = {at(a)}\n'
        + (f"effective_to = {at(b)}\n" if b is not None else "") + 'source_url = "https://example.com"\n'
        for m, s, r, o, pv, a, b in entries)
    return ('[book]\nname = "p"\nversion = "1"\ncurrency = "USD"\nsource = "t"\nretrieved_at = 2026-09-01\n'
            + body)


hours = st.integers(0, 100)
fleet_rows = st.lists(st.tuples(hours, st.integers(1, 30), st.sampled_from(["H100", "A100"]),
                                st.sampled_from(["us", "eu"]), st.sampled_from(["on_demand", "spot"])), max_size=4)
# (hour, model, region, tier, provider, uncached, cached, 5-minute writes, 1-hour writes, output rest, reasoning)
request_rows = st.lists(st.tuples(hours, st.sampled_from(["m1", "m2"]), st.sampled_from(["us", "eu", ""]),
                                  st.sampled_from(["standard", "batch"]), st.sampled_from(["x", "y"]),
                                  *[st.integers(0, 1)] * 6), max_size=6)
meter_rows = st.lists(st.tuples(hours, st.sampled_from(["s1", "s2"]), st.sampled_from(["us", "eu", ""])),
                      max_size=4)
NO_PRICE = re.compile(r"no price in force for meter (\S+), sku (\S+), region (\S+), purchase option ([^\s,]+)"
                      r"(?:, provider (\S+))? at ")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(price_entries(), fleet_rows, request_rows, meter_rows, st.integers(0, 48), st.integers(1, 72))
def test_property_check_finds_exactly_the_prices_the_allocation_misses(prices, fleet, requests, meters, lo, length):
    fleet_csv = "interval_id,pool,start,end,device,gpus,region,purchase_option,role\n" + "".join(
        f"f{i},p,{at(a)},{at(a + n)},{d},1,{r},{o},serving\n" for i, (a, n, d, r, o) in enumerate(fleet))
    req_csv = ("request_id,occurred_at,tenant,product,model,provider,region,service_tier,input_tokens,"
               "cached_input_tokens,cache_write_input_tokens,cache_write_1h_input_tokens,output_tokens,"
               "reasoning_tokens,status\n") + "".join(
        f"q{i},{at(a)},t,p,{m},{pv},{r},{tier},{u + c + w + w1},{c},{w},{w1},{o + rs},{rs},ok\n"
        for i, (a, m, r, tier, pv, u, c, w, w1, o, rs) in enumerate(requests))
    met_csv = "event_id,occurred_at,tenant,product,meter,sku,quantity,unit,region\n" + "".join(
        f"e{i},{at(a)},t,p,egress,{s},1,GB,{r}\n" for i, (a, s, r) in enumerate(meters))
    con = facts_con(fleet=fleet_csv, requests=req_csv, meters=met_csv)
    for kind in facts.KINDS:
        con.execute(f"ALTER TABLE {kind} ADD COLUMN batch VARCHAR DEFAULT 'b1'")
    books = index(toml(prices))
    start, end = T0 + timedelta(hours=lo), T0 + timedelta(hours=lo + length)
    try:
        allocate(con, start=start, end=end, prices=books)
        missed = set()
    except AllocationError as e:
        keys = [NO_PRICE.match(p) for p in e.problems]
        assert all(keys), e.problems  # nothing but missing prices
        missed = {(*k.groups()[:4], k.group(5) or "*") for k in keys}
    report = check_facts(con, index=books, tenants=(), start=start, end=end)
    # a cache write with no price of its own nor an input price: the allocation names the input price
    found = {(FALLBACK_METERS.get(f.meter, f.meter), f.sku, f.region, f.purchase_option, f.provider or "*")
             for f in report.findings}
    event(f"prices missed: {len(missed) if len(missed) < 3 else '3+'}")
    assert found == missed
    assert all(f.kind in ("no_price", "no_gpu_price") and f.batches == ("b1",) for f in report.findings)


def test_the_check_of_a_batch_reads_its_own_files_and_finds_what_the_whole_ledger_says_of_it(clean, tmp_path,
                                                                                               monkeypatch):
    """`check_ledger(batch=B)` (the check `ledger ingest` runs) reads B's own fact files and the whole
    fleet, not every fact of the ledger, and finds what a check over every committed fact finds of B's
    rows: for each batch of each kind, with an unpriced SKU and pools without fleet."""
    from ledger.check import findings

    ingest(tmp_path, "requests", f"""
        {REQ_HEADER}
        m1,2026-10-01T09:00:00Z,a,chat,gpt5-mini,,openai,t5,1000,0,100,ok
        n1,2026-10-01T15:20:00Z,a,chat,llama,p1,,,10,0,5,ok
        n2,2026-10-02T08:00:00Z,b,chat,llama,p10,,,10,0,5,ok
    """, name="more")
    with store.session() as s:
        committed = facts.committed_batches(s)
        batches = [(kind, b) for kind, ids in committed.items() for b in ids]
        assert len(batches) >= 5
        whole = {b: findings.check_ledger(s, batch=b) for _, b in batches}
        read = []
        real = findings._read_for
        monkeypatch.setattr(findings, "_read_for", lambda c, b: read.append(real(c, b)) or c)
        everything = {b: findings.check_ledger(s, batch=b) for _, b in batches}
    assert whole == everything
    assert any(r.findings for r in whole.values())
    for (kind, b), r in zip(batches, read):
        assert r == {k: ids if k == "fleet" else [b] if k == kind else [] for k, ids in committed.items()}
