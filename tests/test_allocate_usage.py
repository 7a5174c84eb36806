"""DESIGN §4.1 and §4.5 for provider tokens and meters, worked by hand: token buckets, a
long-context tier, a dated price change, cache writes, reasoning at its own price, service tiers,
providers of one model, GB vs GiB, FX conversion, failed requests and failed tasks."""
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


def price(meter, sku, value, per, *, frm="2026-01-01T00:00:00Z", to=None, currency=None, extra="", option="*",
          provider=None):
    lines = ['[[price]]', f'meter = "{meter}"', f'sku = "{sku}"', 'region = "*"', f'purchase_option = "{option}"',
             f'price = "{value}"', f'per = "{per}"', f'effective_from = {frm}', 'source_url = "https://example.com"']
    if provider:
        lines.append(f'provider = "{provider}"')
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
    # the lookup names the request's service tier (standard by default) and provider
    assert e.value.problems == [
        "no price in force for meter cached_input_tokens, sku gpt-5, region *, purchase option standard, provider "
        "openai at 2026-10-01T09:00:00+00:00",
        "no price in force for meter input_tokens, sku o9, region *, purchase option standard, provider openai at "
        "2026-10-01T09:00:00+00:00",
        "no price in force for meter output_tokens, sku o9, region *, purchase option standard, provider openai at "
        "2026-10-01T09:00:00+00:00"]
    # with no cached tokens, no cached price is needed
    ok = run(index(book), *DAY, requests=PROVIDER + "q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,,1000,0,10,0,ok\n")
    assert ok.total == D("0.00135")  # 1,000 × 1.25/1M + 10 × 10/1M


# ---- the pricing rules of real providers: cache writes, reasoning, service tiers, providers --------

M = "1e6 * token"
# gpt-5 from any provider (OpenAI's list): no reasoning price, so reasoning is billed as output.
# On Azure (tier *): prices of their own, reasoning at 12.00. On Azure's batch tier: half of those.
RULES = HEAD.format(name="rules", currency="USD") + \
    price("input_tokens", "gpt-5", "1.25", M) + price("cached_input_tokens", "gpt-5", "0.125", M) + \
    price("cache_write_tokens", "gpt-5", "1.5625", M) + price("cache_write_1h_tokens", "gpt-5", "2.50", M) + \
    price("output_tokens", "gpt-5", "10", M) + \
    price("input_tokens", "gpt-5", "1.20", M, provider="azure") + \
    price("cached_input_tokens", "gpt-5", "0.12", M, provider="azure") + \
    price("cache_write_tokens", "gpt-5", "1.50", M, provider="azure") + \
    price("cache_write_1h_tokens", "gpt-5", "2.40", M, provider="azure") + \
    price("output_tokens", "gpt-5", "10", M, provider="azure") + \
    price("reasoning_tokens", "gpt-5", "12", M, provider="azure") + \
    price("input_tokens", "gpt-5", "0.60", M, provider="azure", option="batch") + \
    price("cached_input_tokens", "gpt-5", "0.06", M, provider="azure", option="batch") + \
    price("cache_write_tokens", "gpt-5", "0.75", M, provider="azure", option="batch") + \
    price("cache_write_1h_tokens", "gpt-5", "1.20", M, provider="azure", option="batch") + \
    price("output_tokens", "gpt-5", "5", M, provider="azure", option="batch") + \
    price("reasoning_tokens", "gpt-5", "6", M, provider="azure", option="batch")
RULE_REQUESTS = ("request_id,occurred_at,tenant,product,model,provider,input_tokens,cached_input_tokens,"
                 "cache_write_input_tokens,cache_write_1h_input_tokens,output_tokens,reasoning_tokens,service_tier,"
                 "status\n")


def test_one_request_with_cached_reads_both_writes_reasoning_on_the_batch_tier_of_a_second_provider():
    requests = RULE_REQUESTS + \
        "q1,2026-10-01T09:00:00Z,a,chat,gpt-5,azure,1000000,400000,100000,50000,200000,80000,batch,ok\n"
    a = run(index(RULES), *DAY, requests=requests)
    # input 1,000,000 = cached 400,000 + 5-minute writes 100,000 + 1-hour writes 50,000 + uncached 450,000;
    # output 200,000 = reasoning 80,000 + the rest 120,000. Azure's batch prices per 1M:
    #   uncached   450,000 × 0.60 = 0.27
    #   cached     400,000 × 0.06 = 0.024
    #   writes 5m  100,000 × 0.75 = 0.075
    #   writes 1h   50,000 × 1.20 = 0.06
    #   output     120,000 × 5.00 = 0.60
    #   reasoning   80,000 × 6.00 = 0.48
    #   total                     = 1.509
    [line] = a.lines
    assert (line.tenant, line.provider, line.model, line.category, line.quantity, line.amount) == \
        ("a", "azure", "gpt-5", "provider_tokens", D(1200000), D("1.509"))   # quantity: input + output
    assert a.total == D("1.509") == a.lines_total
    assert a.notes == ()   # every bucket had a price of its own


def test_the_same_request_standard_on_azure_and_from_openai():
    requests = RULE_REQUESTS + """
        q1,2026-10-01T09:00:00Z,a,chat,gpt-5,azure,1000000,400000,100000,50000,200000,80000,batch,ok
        q2,2026-10-01T09:00:00Z,b,chat,gpt-5,azure,1000000,400000,100000,50000,200000,80000,standard,ok
        q3,2026-10-01T09:00:00Z,c,chat,gpt-5,openai,1000000,400000,100000,50000,200000,80000,standard,ok
    """
    a = run(index(RULES), *DAY, requests=requests)
    # b, Azure standard (tier *): 450,000 × 1.20 = 0.54 + 400,000 × 0.12 = 0.048 + 100,000 × 1.50 = 0.15
    #    + 50,000 × 2.40 = 0.12 + 120,000 × 10 = 1.20 + 80,000 × 12 = 0.96 -> 3.018 (twice the batch 1.509)
    # c, OpenAI (provider *; no reasoning price: all 200,000 output at 10): 450,000 × 1.25 = 0.5625
    #    + 400,000 × 0.125 = 0.05 + 100,000 × 1.5625 = 0.15625 + 50,000 × 2.50 = 0.125 + 200,000 × 10 = 2.00
    #    -> 2.89375
    assert by_tenant(a) == {("a", "succeeded"): D("1.509"), ("b", "succeeded"): D("3.018"),
                            ("c", "succeeded"): D("2.89375")}
    assert a.total == D("7.42075") == a.lines_total


def test_cache_writes_without_a_price_of_their_own_take_the_input_price_and_the_run_says_so():
    book = HEAD.format(name="tokens", currency="USD") + \
        price("input_tokens", "gpt-5", "1.25", M) + price("output_tokens", "gpt-5", "10", M) + \
        price("input_tokens", "claude", "3", M) + price("cache_write_tokens", "claude", "3.75", M) + \
        price("output_tokens", "claude", "15", M)
    requests = RULE_REQUESTS + """
        q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,1000000,0,200000,100000,0,0,standard,ok
        q2,2026-10-01T09:00:00Z,b,chat,claude,anthropic,1000000,0,200000,100000,0,0,standard,ok
    """
    a = run(index(book), *DAY, requests=requests)
    # a: no write price for gpt-5: uncached 700,000 + writes 200,000 + 100,000, all at the input price 1.25 -> 1.25
    # b: claude has a 5-minute write price, no 1-hour one: 700,000 × 3 = 2.10 + 200,000 × 3.75 = 0.75
    #    + 100,000 × 3 (input price) = 0.30 -> 3.15
    assert by_tenant(a) == {("a", "succeeded"): D("1.25"), ("b", "succeeded"): D("3.15")}
    assert a.notes == (
        "no cache_write_1h_tokens price in force for claude (anthropic), gpt-5 (openai): their 1-hour cache writes "
        "are priced at their input_tokens price",
        "no cache_write_tokens price in force for gpt-5 (openai): their 5-minute cache writes are priced at their "
        "input_tokens price")
    # with no input price either, the error names the input price missing (never a silent zero)
    with pytest.raises(AllocationError) as e:
        run(index(book), *DAY, requests=RULE_REQUESTS +
            "q9,2026-10-01T09:00:00Z,a,chat,o9,openai,10,0,0,10,0,0,standard,ok\n")
    assert e.value.problems == ["no price in force for meter input_tokens, sku o9, region *, purchase option "
                                "standard, provider openai at 2026-10-01T09:00:00+00:00"]


def test_batch_at_half_price_comes_out_at_half_price():
    book = HEAD.format(name="tokens", currency="USD") + \
        price("input_tokens", "gpt-5", "1.25", M) + price("output_tokens", "gpt-5", "10", M) + \
        price("input_tokens", "gpt-5", "0.625", M, option="batch") + \
        price("output_tokens", "gpt-5", "5", M, option="batch")
    requests = RULE_REQUESTS + """
        q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,1000000,0,0,0,100000,0,standard,ok
        q2,2026-10-01T09:00:00Z,b,chat,gpt-5,openai,1000000,0,0,0,100000,0,batch,ok
        q3,2026-10-01T09:00:00Z,c,chat,gpt-5,openai,1000000,0,0,0,100000,0,flex,ok
    """
    a = run(index(book), *DAY, requests=requests)
    # a, standard (tier *): 1,000,000 × 1.25 + 100,000 × 10 = 1.25 + 1.00 = 2.25
    # b, batch: 1,000,000 × 0.625 + 100,000 × 5 = 0.625 + 0.50 = 1.125 = 2.25 / 2
    # c, flex: no flex price, so the tier-* price: 2.25
    assert by_tenant(a) == {("a", "succeeded"): D("2.25"), ("b", "succeeded"): D("1.125"),
                            ("c", "succeeded"): D("2.25")}
    assert by_tenant(a)[("b", "succeeded")] * 2 == by_tenant(a)[("a", "succeeded")]


def test_two_providers_of_one_model_at_different_prices():
    book = HEAD.format(name="tokens", currency="USD") + \
        price("input_tokens", "gpt-5", "1.25", M, provider="openai") + \
        price("output_tokens", "gpt-5", "10", M, provider="openai") + \
        price("input_tokens", "gpt-5", "1.375", M, provider="azure") + \
        price("output_tokens", "gpt-5", "11", M, provider="azure")
    requests = PROVIDER + """
        q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,,1000000,0,100000,0,ok
        q2,2026-10-01T09:00:00Z,a,chat,gpt-5,azure,,1000000,0,100000,0,ok
    """
    a = run(index(book), *DAY, requests=requests)
    # openai: 1,000,000 × 1.25 + 100,000 × 10 = 2.25; azure: 1,000,000 × 1.375 + 100,000 × 11 = 2.475
    assert {ln.provider: ln.amount for ln in a.lines} == {"openai": D("2.25"), "azure": D("2.475")}
    assert a.total == D("4.725") == a.lines_total
    # a third provider has no price of its own and there is no price for any provider: an error naming it
    with pytest.raises(AllocationError) as e:
        run(index(book), *DAY, requests=PROVIDER + "q3,2026-10-01T09:00:00Z,a,chat,gpt-5,bedrock,,10,0,0,0,ok\n")
    assert e.value.problems == ["no price in force for meter input_tokens, sku gpt-5, region *, purchase option "
                                "standard, provider bedrock at 2026-10-01T09:00:00+00:00"]


def test_reasoning_with_a_tier_and_without_an_output_price_needs_none_when_all_output_is_reasoning():
    book = HEAD.format(name="tokens", currency="USD") + \
        price("input_tokens", "o9", "2", M) + \
        price("reasoning_tokens", "o9", "8", M, extra='tiers = [{ above_input_tokens = 100000, price = "16" }]')
    requests = PROVIDER + """
        q1,2026-10-01T09:00:00Z,a,chat,o9,openai,,100000,0,50000,50000,ok
        q2,2026-10-01T09:00:00Z,b,chat,o9,openai,,200000,0,50000,50000,ok
    """
    a = run(index(book), *DAY, requests=requests)
    # a: 100,000 × 2 = 0.20 + 50,000 reasoning × 8 = 0.40 -> 0.60 (no output beyond the reasoning: no output price
    #    needed); b: 200,000 > 100,000 input tokens, so the reasoning tier: 200,000 × 2 = 0.40 + 50,000 × 16 = 0.80
    #    -> 1.20
    assert by_tenant(a) == {("a", "succeeded"): D("0.60"), ("b", "succeeded"): D("1.20")}


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
