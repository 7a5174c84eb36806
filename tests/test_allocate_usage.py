"""DESIGN §4.1 and §4.5 for provider tokens and meters, worked by hand: token buckets, a
long-context tier, a dated price change, GB vs GiB, FX conversion, failed requests and failed tasks."""
from __future__ import annotations

from decimal import Decimal as D

import pytest
from test_allocate_support import index, run

from ledger.allocate import AllocationError, Policy

HEAD = """
    [book]
    name = "{name}"
    version = "2026-10-01"
    currency = "{currency}"
    source = "test"
    retrieved_at = 2026-10-01
"""


def price(meter, sku, value, per, *, frm="2026-01-01T00:00:00Z", to=None, currency=None, extra=""):
    lines = ['[[price]]', f'meter = "{meter}"', f'sku = "{sku}"', 'region = "*"', 'purchase_option = "*"',
             f'price = "{value}"', f'per = "{per}"', f'effective_from = {frm}', 'source_url = "https://example.com"']
    if to:
        lines.append(f"effective_to = {to}")
    if currency:
        lines.append(f'currency = "{currency}"')
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


TOKENS = HEAD.format(name="tokens", currency="USD") + \
    price("input_tokens", "gpt-5", "1.25", "1e6 * token") + \
    price("cached_input_tokens", "gpt-5", "0.125", "1e6 * token") + \
    price("output_tokens", "gpt-5", "10", "1e6 * token") + \
    price("input_tokens", "gemini", "1.25", "1e6 * token",
          extra='tiers = [{ above_input_tokens = 200000, price = "2.50" }]') + \
    price("output_tokens", "gemini", "10", "1e6 * token",
          extra='tiers = [{ above_input_tokens = 200000, price = "15" }]')

DAY = ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z")
PROVIDER = "request_id,occurred_at,tenant,product,model,provider,task_id,input_tokens,cached_input_tokens," \
           "output_tokens,reasoning_tokens,status\n"


def by_tenant(alloc, **match):
    out = {}
    for ln in alloc.lines:
        if all(getattr(ln, k) == v for k, v in match.items()):
            out[(ln.tenant, ln.work)] = out.get((ln.tenant, ln.work), D(0)) + ln.amount
    return out


def test_provider_token_buckets_and_long_context_tier():
    requests = PROVIDER + """
        q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,,100000,40000,2000,500,ok
        q2,2026-10-01T09:01:00Z,b,chat,gemini,google,,250000,0,1000,0,ok
        q3,2026-10-01T09:02:00Z,b,chat,gemini,google,,100000,0,1000,0,ok
    """
    a = run(index(TOKENS), *DAY, requests=requests)
    # a: uncached 60,000 × 1.25/1M = 0.075 + cached 40,000 × 0.125/1M = 0.005
    #    + output 2,000 (reasoning included) × 10/1M = 0.020  -> 0.100
    # b: q2 has 250,000 > 200,000 input tokens: the tier applies to every token of the request:
    #    250,000 × 2.50/1M = 0.625 + 1,000 × 15/1M = 0.015 -> 0.640
    #    q3 below the tier: 100,000 × 1.25/1M = 0.125 + 1,000 × 10/1M = 0.010 -> 0.135
    assert by_tenant(a) == {("a", "succeeded"): D("0.100"), ("b", "succeeded"): D("0.775")}
    assert {ln.category for ln in a.lines} == {"provider_tokens"}
    line_a = [ln for ln in a.lines if ln.tenant == "a"][0]
    assert (line_a.provider, line_a.model, line_a.pool, line_a.quantity, line_a.unit) == \
        ("openai", "gpt-5", None, D(102000), "token")
    assert a.total == D("0.875") == a.lines_total


def test_provider_price_change_mid_period():
    book = HEAD.format(name="tokens", currency="USD") + \
        price("input_tokens", "gpt-5", "1.25", "1e6 * token", to="2026-10-01T12:00:00Z") + \
        price("input_tokens", "gpt-5", "1.00", "1e6 * token", frm="2026-10-01T12:00:00Z") + \
        price("output_tokens", "gpt-5", "10", "1e6 * token")
    requests = PROVIDER + """
        q1,2026-10-01T11:59:59Z,a,chat,gpt-5,openai,,1000000,0,0,0,ok
        q2,2026-10-01T12:00:00Z,a,chat,gpt-5,openai,,1000000,0,0,0,ok
    """
    a = run(index(book), *DAY, requests=requests)
    # 1M tokens at 1.25 before noon, 1M at 1.00 from noon (ranges are end-exclusive): 2.25
    assert a.total == D("2.25") == a.lines_total


def test_missing_cached_price_fails_naming_meter_sku_region_time():
    book = HEAD.format(name="tokens", currency="USD") + \
        price("input_tokens", "gpt-5", "1.25", "1e6 * token") + price("output_tokens", "gpt-5", "10", "1e6 * token")
    requests = PROVIDER + "q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,,1000,10,10,0,ok\n" \
                          "q2,2026-10-01T09:00:00Z,a,chat,o9,openai,,1000,0,10,0,ok\n"
    with pytest.raises(AllocationError) as e:
        run(index(book), *DAY, requests=requests)
    assert e.value.problems == [
        "no price in force for meter cached_input_tokens, sku gpt-5, region *, purchase option * at "
        "2026-10-01T09:00:00+00:00",
        "no price in force for meter input_tokens, sku o9, region *, purchase option * at 2026-10-01T09:00:00+00:00",
        "no price in force for meter output_tokens, sku o9, region *, purchase option * at 2026-10-01T09:00:00+00:00"]
    # with no cached tokens, no cached price is needed
    ok = run(index(book), *DAY, requests=PROVIDER + "q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,,1000,0,10,0,ok\n")
    assert ok.total == D("0.00135")  # 1,000 × 1.25/1M + 10 × 10/1M


METERS = HEAD.format(name="meters", currency="USD") + \
    price("egress", "internet", "0.09", "GB") + \
    price("tool_call", "web-search", "5", "1000 * call") + \
    price("evaluation", "judge", "0.50", "call", currency="EUR") + \
    "[[fx]]\nfrom = \"EUR\"\nto = \"USD\"\nrate = \"1.08\"\neffective_from = 2026-01-01T00:00:00Z\n"
METER_ROWS = "event_id,occurred_at,tenant,product,task_id,meter,sku,quantity,unit\n"


def test_meters_gb_vs_gib_tool_calls_and_fx():
    meters = METER_ROWS + """
        e1,2026-10-01T01:00:00Z,a,chat,,egress,internet,10,GB
        e2,2026-10-01T02:00:00Z,b,chat,,egress,internet,10,GiB
        e3,2026-10-01T03:00:00Z,a,chat,,tool_call,web-search,3,call
        e4,2026-10-01T04:00:00Z,b,chat,,evaluation,judge,4,call
    """
    a = run(index(METERS), *DAY, meters=meters)
    cats = {(ln.tenant, ln.category): (ln.amount, ln.quantity, ln.unit) for ln in a.lines}
    # 10 GB × 0.09 = 0.90
    assert cats[("a", "egress")] == (D("0.90"), D(10), "GB")
    # 10 GiB = 10 × 2^30 / 10^9 = 10.73741824 GB × 0.09 = 0.9663676416 -> 0.966368 (7.4% more than GB)
    assert cats[("b", "egress")] == (D("0.966368"), D(10), "GiB")
    # 3 calls at 5 per 1,000 calls = 0.015
    assert cats[("a", "tool")][0] == D("0.015")
    # 4 calls × 0.50 EUR = 2.00 EUR × 1.08 USD/EUR = 2.16 USD
    assert cats[("b", "evaluation")][0] == D("2.16")
    assert a.total == D("4.041368") == a.lines_total


def test_reporting_currency_uses_the_inverse_rate():
    meters = METER_ROWS + "e1,2026-10-01T01:00:00Z,a,chat,,egress,internet,12,GB\n"
    a = run(index(METERS), *DAY, policy=Policy(currency="EUR"), meters=meters)
    # 12 GB × 0.09 USD = 1.08 USD; USD -> EUR at 1 / 1.08: 1.00 EUR
    assert a.total == D("1.000000") and a.currency == "EUR"


def test_meter_unit_of_another_dimension_is_an_error_naming_the_meter():
    meters = METER_ROWS + "e1,2026-10-01T01:00:00Z,a,chat,,egress,internet,3,call\n"
    with pytest.raises(AllocationError, match=r"meter egress, sku internet: quantity in 'call' cannot be priced "
                                              r"per 'GB'"):
        run(index(METERS), *DAY, meters=meters)


def test_failed_requests_and_failed_tasks_are_tagged_failed_work():
    requests = PROVIDER + """
        q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,t1,1000000,0,0,0,ok
        q2,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,t2,1000000,0,0,0,ok
        q3,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,t3,1000000,0,0,0,timeout
        q4,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,t4,1000000,0,0,0,ok
    """
    outcomes = """
        task_id,tenant,product,outcome,decided_at,criteria
        t1,a,chat,failure,2026-10-01T10:00:00Z,tests-pass
        t2,a,chat,failure,2026-10-01T10:00:00Z,tests-pass
        t2,a,chat,success,2026-10-01T11:00:00Z,tests-pass
        t4,a,chat,failure,2026-10-05T00:00:00Z,tests-pass
    """
    meters = METER_ROWS + "e1,2026-10-01T01:00:00Z,a,chat,t1,egress,internet,10,GB\n"
    a = run(index(TOKENS, METERS), *DAY, requests=requests, outcomes=outcomes, meters=meters)
    # each request: 1M input tokens × 1.25 = 1.25
    # t1: latest outcome failure -> q1 and its egress (0.90) are failed work
    # t2: failure then success: the latest (success) counts -> succeeded
    # q3: status timeout -> failed, whatever its task
    # t4: its failure is decided after the period end -> not (yet) failed in this run
    assert by_tenant(a) == {("a", "failed"): D("3.40"),      # 1.25 + 0.90 + 1.25
                            ("a", "succeeded"): D("2.50")}   # q2 + q4
    t = {(x.tenant, x.product): (x.success, x.failure, x.unknown, x.criteria) for x in a.tasks}
    # decided in the period (latest per task): t1 failure, t2 success; t3 and t4 have no outcome by period end
    assert t == {("a", "chat"): (1, 1, 2, ("tests-pass",))}
