"""DESIGN §4.1-4.4 for self-hosted pools, worked by hand: capacity known and unknown, over-capacity,
an hour with no usage, reserve roles, both idle policies, dated price changes, kv_token_seconds,
pool weights, and usage on a pool with no fleet."""
from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest
from test_allocate_support import index, run, utc

from ledger.allocate import AllocationError, Flag, Policy, Weights
from ledger.allocate.cli import NAMES as ALLOCATE_NAMES
from ledger.hints import say

GPU_BOOK = """
    [book]
    name = "gpus"
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
"""

# Pool p1 on 2026-10-01, hours 10, 11, 12 UTC. Serving: 2 GPUs, capacity 1 token per GPU-second,
# so per hour K = 2 × 3600 × 1 = 7,200 tokens and C_serve = 2 × $3.60 = $7.20.
# Reserve: 1 GPU, failure_reserve, hours 10 and 11: C_reserve = $3.60 per hour.
FLEET = """
    interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
    s1,p1,2026-10-01T10:00:00Z,2026-10-01T13:00:00Z,H100,2,us-east-1,on_demand,serving,1
    r1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,H100,1,us-east-1,on_demand,failure_reserve,
"""
# Hour 10: a 1,000 + 800 = 1,800 tokens, b 3,000 + 600 = 3,600; W = 5,400 < K.
# Hour 11: a 6,000 + 3,000 = 9,000 > K = 7,200: over capacity.
# Hour 12: no request at all.
REQUESTS = """
    request_id,occurred_at,tenant,product,model,pool,input_tokens,output_tokens,status
    q1,2026-10-01T10:05:00Z,a,chat,llama,p1,1000,800,ok
    q2,2026-10-01T10:59:59Z,b,chat,llama,p1,3000,600,ok
    q3,2026-10-01T11:30:00Z,a,chat,llama,p1,6000,3000,ok
"""
DAY = ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z")


def amounts(alloc, **match):
    """{(kind, tenant, shared_from): amount} of the lines matching the given field values."""
    out = {}
    for ln in alloc.lines:
        if all(getattr(ln, k) == v for k, v in match.items()):
            key = (ln.kind, ln.tenant, ln.shared_from)
            out[key] = out.get(key, D(0)) + ln.amount
    return out


def test_capacity_known_over_capacity_idle_hour_and_reserve_separate():
    a = run(index(GPU_BOOK), *DAY, fleet=FLEET, requests=REQUESTS)
    # hour 10: r = 7.20 / max(7200, 5400) = 0.001 $/token: a 1,800 × r = 1.80, b 3,600 × r = 3.60,
    #          idle slack (7,200 - 5,400) × r = 1.80
    # hour 11: W = 9,000 > K: r = 7.20 / 9,000; a gets all 7.20, no negative idle, flagged
    # hour 12: W = 0: all 7.20 is idle slack
    # reserve: 3.60 + 3.60 = 7.20
    assert amounts(a) == {("tenant", "a", None): D("9.00"),      # 1.80 + 7.20
                          ("tenant", "b", None): D("3.60"),
                          ("idle_slack", None, None): D("9.00"),  # 1.80 + 7.20
                          ("idle_reserve", None, None): D("7.20")}
    assert a.total == D("28.80") == a.lines_total                 # 3 × 7.20 + 2 × 3.60
    assert a.flags == (Flag("over_capacity", "p1", utc("2026-10-01T11:00:00Z")),)
    reserve = [ln for ln in a.lines if ln.kind == "idle_reserve"]
    assert [(ln.pool, ln.category, ln.quantity, ln.unit, ln.day) for ln in reserve] == \
        [("p1", "gpu", D(7200), "gpu * second", date(2026, 10, 1))]  # 1 GPU × 2 h
    slack = [ln for ln in a.lines if ln.kind == "idle_slack"][0]
    # unused GPU-seconds: hour 10 7,200 × 1,800 / 7,200 = 1,800; hour 12 all 7,200
    assert slack.quantity == D(9000)
    tenant_a = [ln for ln in a.lines if ln.tenant == "a"][0]
    assert (tenant_a.quantity, tenant_a.unit, tenant_a.model, tenant_a.pool) == (D(10800), "token", "llama", "p1")


def test_idle_policy_share_spreads_idle_by_direct_gpu_cost():
    a = run(index(GPU_BOOK), *DAY, policy=Policy(idle="share"), fleet=FLEET, requests=REQUESTS)
    # direct GPU cost in p1 over the period: a 9.00, b 3.60 (sum 12.60)
    # idle slack 9.00: a 9 × 9/12.6 = 6.4285714..., b 9 × 3.6/12.6 = 2.5714285...
    #   floors 6.428571 + 2.571428 = 8.999999; the last micro-unit goes to the larger remainder: b
    # idle reserve 7.20: a 5.1428571..., b 2.0571428... floors sum to 7.199999; b has the larger remainder
    assert amounts(a) == {("tenant", "a", None): D("9.00"), ("tenant", "b", None): D("3.60"),
                          ("tenant", "a", "idle_slack"): D("6.428571"),
                          ("tenant", "b", "idle_slack"): D("2.571429"),
                          ("tenant", "a", "idle_reserve"): D("5.142857"),
                          ("tenant", "b", "idle_reserve"): D("2.057143")}
    assert a.lines_total == a.total == D("28.80")
    assert all(ln.kind == "tenant" for ln in a.lines)


def test_idle_policy_share_keeps_idle_of_a_pool_nobody_used():
    fleet = FLEET + "    s2,p2,2026-10-01T10:00:00Z,2026-10-01T11:00:00Z,H100,1,us-east-1,on_demand,serving,1\n"
    a = run(index(GPU_BOOK), *DAY, policy=Policy(idle="share"), fleet=fleet, requests=REQUESTS)
    # p2 had no request: its 3.60 stays idle slack of p2
    assert [(ln.kind, ln.pool, ln.amount) for ln in a.lines if ln.pool == "p2"] == [("idle_slack", "p2", D("3.60"))]
    assert a.total == D("32.40") == a.lines_total


def test_capacity_unknown_all_serving_cost_goes_to_requests():
    fleet = FLEET.replace("serving,1", "serving,")
    a = run(index(GPU_BOOK), *DAY, fleet=fleet, requests=REQUESTS)
    # hour 10: K unknown: r = 7.20 / 5,400: a 1,800 × r = 2.40, b 3,600 × r = 4.80, no slack
    # hour 11: a 7.20; hour 12: no requests: 7.20 idle slack
    assert amounts(a) == {("tenant", "a", None): D("9.60"), ("tenant", "b", None): D("4.80"),
                          ("idle_slack", None, None): D("7.20"), ("idle_reserve", None, None): D("7.20")}
    assert [f.kind for f in a.flags] == ["capacity_unknown", "capacity_unknown"]  # hours 10, 11 (12 has W = 0)


def test_dated_gpu_price_change_mid_hour_and_mid_period():
    book = GPU_BOOK.replace('effective_from = 2026-01-01T00:00:00Z',
                            'effective_from = 2026-01-01T00:00:00Z\n    effective_to = 2026-10-01T10:30:00Z')
    book += """
    [[price]]
    meter = "gpu_time"
    sku = "H100"
    region = "us-east-1"
    purchase_option = "on_demand"
    price = "4.80"
    per = "gpu * hour"
    effective_from = 2026-10-01T10:30:00Z
    source_url = "https://example.com/h100-new"
    """
    fleet = "    interval_id,pool,start,end,device,gpus,region,purchase_option,role\n" \
            "    s1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,H100,2,us-east-1,on_demand,serving\n"
    a = run(index(book), *DAY, fleet=fleet)
    # hour 10: 2 GPUs × (0.5 h × 3.60 + 0.5 h × 4.80) = 1.80×2 + 2.40×2 = 8.40; hour 11: 2 × 4.80 = 9.60
    assert a.total == D("18.00")
    assert amounts(a) == {("idle_slack", None, None): D("18.00")}


def test_no_fleet_requests_carry_no_gpu_cost_and_are_flagged():
    requests = REQUESTS + "    q4,2026-10-01T12:10:00Z,b,chat,llama,p9,500,500,ok\n"
    # without fleet, p9's GPU cost would be a silent $0: accepted here explicitly (see the test below)
    a = run(index(GPU_BOOK), *DAY, fleet=FLEET, requests=requests, policy=Policy(allow_pool_without_fleet=("p9",)))
    assert Flag("no_fleet", "p9", utc("2026-10-01T12:00:00Z")) in a.flags
    assert not [ln for ln in a.lines if ln.pool == "p9"]
    assert a.total == D("28.80")  # unchanged: nothing priced for p9
    assert any(n.startswith("pool p9: 1 request in hours 2026-10-01T12:00:00Z to 2026-10-01T12:00:00Z with no "
                            "serving fleet interval") and "no GPU cost exists" in n for n in a.notes)
    usage = {(u.tenant, u.model): (u.requests, u.active_tokens) for u in a.usage}
    assert usage[("b", "llama")] == (2, 4600)  # the p9 request still counts as usage: 3,600 + 1,000


def test_missing_gpu_price_fails_the_run_naming_meter_sku_region_time():
    fleet = FLEET.replace("s1,p1,2026-10-01T10:00:00Z,2026-10-01T13:00:00Z,H100,2,us-east-1",
                          "s1,p1,2026-10-01T10:00:00Z,2026-10-01T13:00:00Z,H100,2,eu-west-1")
    with pytest.raises(AllocationError) as e:
        run(index(GPU_BOOK), *DAY, fleet=fleet, requests=REQUESTS)
    assert e.value.problems == ["no price in force for meter gpu_time, sku H100, region eu-west-1, purchase option "
                                "on_demand at 2026-10-01T10:00:00+00:00"]


def test_kv_token_seconds_basis():
    fleet = "    interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s\n" \
            "    s1,p1,2026-10-01T10:00:00Z,2026-10-01T11:00:00Z,H100,2,us-east-1,on_demand,serving,1\n"
    requests = """
        request_id,occurred_at,tenant,product,model,pool,input_tokens,output_tokens,status,ttft_ms,latency_ms
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,1000,100,ok,500,2000
        q2,2026-10-01T10:06:00Z,b,chat,llama,p1,500,400,ok,,4000
    """
    a = run(index(GPU_BOOK), *DAY, policy=Policy(basis="kv_token_seconds"), fleet=fleet, requests=requests)
    # a: 1,000 × 2 s + 100 × (2 - 0.5)/2 = 2,075 token-s; b: 500 × 4 + 400 × (4 - 0)/2 = 2,800; W = 4,875
    # capacity does not apply: a 7.20 × 2,075/4,875 = 3.0646153..., b 7.20 × 2,800/4,875 = 4.1353846...
    # floors 3.064615 + 4.135384 = 7.199999: the last micro-unit to b (remainder .846 > .615)
    assert amounts(a) == {("tenant", "a", None): D("3.064615"), ("tenant", "b", None): D("4.135385")}
    assert a.flags == ()
    with pytest.raises(AllocationError, match=r"pool p1: 1 requests have no latency_ms"):
        run(index(GPU_BOOK), *DAY, policy=Policy(basis="kv_token_seconds"), fleet=fleet,
            requests=requests.replace("ok,,4000", "ok,,"))


def test_pool_weights_for_uncached_cached_and_output_tokens():
    fleet = "    interval_id,pool,start,end,device,gpus,region,purchase_option,role\n" \
            "    s1,p1,2026-10-01T10:00:00Z,2026-10-01T11:00:00Z,H100,2,us-east-1,on_demand,serving\n"
    requests = """
        request_id,occurred_at,tenant,product,model,pool,input_tokens,cached_input_tokens,output_tokens,status
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,1000,800,200,ok
        q2,2026-10-01T10:06:00Z,b,chat,llama,p1,1000,0,200,ok
    """
    pol = Policy(weights=(("p1", Weights(D(1), D("0.1"), D(1))),))
    a = run(index(GPU_BOOK), *DAY, policy=pol, fleet=fleet, requests=requests)
    # a: 200 × 1 + 800 × 0.1 + 200 × 1 = 480; b: 1,000 + 200 = 1,200; capacity unknown: r = 7.20 / 1,680
    # a 2.0571428..., b 5.1428571...: floors sum to 7.199999, a has the larger remainder (.857)
    assert amounts(a) == {("tenant", "a", None): D("2.057143"), ("tenant", "b", None): D("5.142857")}
    # without weights both weigh 1,000 + 200 = 1,200 tokens (cached input included): 3.60 each
    plain = run(index(GPU_BOOK), *DAY, fleet=fleet, requests=requests)
    assert amounts(plain) == {("tenant", "a", None): D("3.60"), ("tenant", "b", None): D("3.60")}


def test_interval_crossing_the_period_is_clipped_to_it():
    fleet = "    interval_id,pool,start,end,device,gpus,region,purchase_option,role\n" \
            "    s1,p1,2026-09-30T23:30:00Z,2026-10-01T00:30:00Z,H100,1,us-east-1,on_demand,serving\n"
    a = run(index(GPU_BOOK), *DAY, fleet=fleet)
    # only 00:00-00:30 of the period: 1 GPU × 0.5 h × 3.60 = 1.80
    assert a.total == D("1.80") == a.lines_total


def test_every_reserve_role_is_idle_reserve_and_an_unknown_role_fails():
    fleet = """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role
        f,p1,2026-10-01T00:00:00Z,2026-10-01T01:00:00Z,H100,1,us-east-1,on_demand,failure_reserve
        c,p1,2026-10-01T00:00:00Z,2026-10-01T00:30:00Z,H100,2,us-east-1,on_demand,canary
        w,p1,2026-10-01T01:00:00Z,2026-10-01T02:00:00Z,H100,3,us-east-1,on_demand,warm_reserve
        m,p2,2026-10-01T00:00:00Z,2026-10-01T00:10:00Z,H100,6,us-east-1,on_demand,maintenance
    """
    a = run(index(GPU_BOOK), *DAY, fleet=fleet)
    # failure 1 × 1 h × 3.60 = 3.60; canary 2 × 0.5 h = 3.60; warm 3 × 1 h = 10.80
    # (p1: 18.00 for 3,600 + 3,600 + 10,800 = 18,000 GPU-s)
    # maintenance 6 GPUs × 1/6 h = 1 GPU-hour = 3.60 (p2, 3,600 GPU-s)
    assert [(ln.kind, ln.pool, ln.amount, ln.quantity) for ln in a.lines] == \
        [("idle_reserve", "p1", D("18.00"), D(18000)), ("idle_reserve", "p2", D("3.60"), D(3600))]
    assert a.total == D("21.60")
    with pytest.raises(AllocationError, match="fleet interval x: role 'spare' is not serving or one of"):
        run(index(GPU_BOOK), *DAY, fleet=fleet + "    x,p1,2026-10-01T00:00:00Z,2026-10-01T01:00:00Z,H100,1,"
                                                  "us-east-1,on_demand,spare\n")


def test_requests_on_a_pool_without_fleet_fail_the_run_naming_pool_hours_and_count():
    # p9: 3 requests in hours 12 and 15, no fleet at all; p7: 1 request, only a reserve interval (no serving)
    requests = REQUESTS + """
        q4,2026-10-01T12:10:00Z,b,chat,llama,p9,500,500,ok
        q5,2026-10-01T15:59:59Z,b,chat,llama,p9,100,100,ok
        q6,2026-10-01T12:30:00Z,a,chat,llama,p9,100,100,ok
        q7,2026-10-01T09:00:00Z,a,chat,llama,p7,100,100,ok
    """
    fleet = FLEET + "    r7,p7,2026-10-01T09:00:00Z,2026-10-01T10:00:00Z,H100,1,us-east-1,on_demand,canary,\n"
    with pytest.raises(AllocationError) as e:
        run(index(GPU_BOOK), *DAY, fleet=fleet, requests=requests)
    # the library's own words; `ledger allocate` names its option (ledger.hints)
    assert e.value.problems == [
        "pool p7: 1 request in hours 2026-10-01T09:00:00Z to 2026-10-01T09:00:00Z but no serving fleet interval in "
        "the period, so their GPU cost would be $0; ingest the pool's fleet, or accept it with the policy's "
        "allow_pool_without_fleet p7",
        "pool p9: 3 requests in hours 2026-10-01T12:00:00Z to 2026-10-01T15:00:00Z but no serving fleet interval in "
        "the period, so their GPU cost would be $0; ingest the pool's fleet, or accept it with the policy's "
        "allow_pool_without_fleet p9"]
    assert say(e.value.problems, ALLOCATE_NAMES) == [
        "pool p7: 1 request in hours 2026-10-01T09:00:00Z to 2026-10-01T09:00:00Z but no serving fleet interval in "
        "the period, so their GPU cost would be $0; ingest the pool's fleet, or accept it with "
        "--allow-pool-without-fleet p7",
        "pool p9: 3 requests in hours 2026-10-01T12:00:00Z to 2026-10-01T15:00:00Z but no serving fleet interval in "
        "the period, so their GPU cost would be $0; ingest the pool's fleet, or accept it with "
        "--allow-pool-without-fleet p9"]
    # accepting p9 only: p7 still fails the run
    with pytest.raises(AllocationError) as e:
        run(index(GPU_BOOK), *DAY, fleet=fleet, requests=requests, policy=Policy(allow_pool_without_fleet=("p9",)))
    assert [p.split(":")[0] for p in e.value.problems] == ["pool p7"]
    # accepting both (and p5, which has nothing to accept): the run is p1's 28.80 + p7's canary 3.60 = 32.40,
    # the requests of p7 and p9 carry no GPU cost, and the notes say so
    pol = Policy(allow_pool_without_fleet=("p5", "p7", "p9"))
    a = run(index(GPU_BOOK), *DAY, fleet=fleet, requests=requests, policy=pol)
    assert a.total == a.lines_total == D("32.40")
    assert not [ln for ln in a.lines if ln.pool in ("p7", "p9") and ln.kind == "tenant"]
    assert [n for n in a.notes if "fleet" in n and "flagged" not in n] == [
        "pool p7: 1 request in hours 2026-10-01T09:00:00Z to 2026-10-01T09:00:00Z with no serving fleet interval in "
        "the period; accepted by the policy's allow_pool_without_fleet: no GPU cost exists for them, so none is "
        "allocated "
        "(their requests and tokens still count in unit economics)",
        "pool p9: 3 requests in hours 2026-10-01T12:00:00Z to 2026-10-01T15:00:00Z with no serving fleet interval in "
        "the period; accepted by the policy's allow_pool_without_fleet: no GPU cost exists for them, so none is "
        "allocated "
        "(their requests and tokens still count in unit economics)",
        "the policy's allow_pool_without_fleet p5: pool p5 has no request without serving fleet in the period; "
        "nothing to accept"]
    assert pol.as_dict()["allow_pool_without_fleet"] == ["p5", "p7", "p9"]
    assert "allow_pool_without_fleet" not in Policy().as_dict()  # absent when empty: older digests stay the same


# A pool priced in EUR, reported in USD: H100 at 3.00 EUR per GPU-hour; EUR->USD 1.10 until 12:30, 1.20 from 12:30.
EUR_BOOK = """
    [book]
    name = "eu-gpus"
    version = "2026-10-01"
    currency = "EUR"
    source = "test"
    retrieved_at = 2026-10-01

    [[price]]
    meter = "gpu_time"
    sku = "H100"
    region = "eu-west-1"
    purchase_option = "on_demand"
    price = "3.00"
    per = "gpu * hour"
    effective_from = 2026-01-01T00:00:00Z
    source_url = "https://example.com/h100-eu"
"""
FX_CHANGE_AT_1230 = """
    [[fx]]
    from = "EUR"
    to = "USD"
    rate = "1.10"
    effective_from = 2026-01-01T00:00:00Z
    effective_to = 2026-10-01T12:30:00Z

    [[fx]]
    from = "EUR"
    to = "USD"
    rate = "1.20"
    effective_from = 2026-10-01T12:30:00Z
"""


def test_eur_pool_whose_fx_rate_changes_at_1230_is_converted_at_the_usage_instant():
    fleet = """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role
        s1,eu,2026-10-01T12:00:00Z,2026-10-01T14:00:00Z,H100,2,eu-west-1,on_demand,serving
        r1,eu,2026-10-01T12:15:00Z,2026-10-01T12:45:00Z,H100,1,eu-west-1,on_demand,warm_reserve
    """
    requests = """
        request_id,occurred_at,tenant,product,model,pool,input_tokens,output_tokens,status
        q1,2026-10-01T12:40:00Z,a,chat,llama,eu,1000,1000,ok
    """
    a = run(index(EUR_BOOK + FX_CHANGE_AT_1230), *DAY, fleet=fleet, requests=requests)
    # hour 12, serving: 12:00-12:30 at 1.10: 2 GPUs × 0.5 h × 3.00 EUR × 1.10 = 3.30 USD
    #                   12:30-13:00 at 1.20: 2 GPUs × 0.5 h × 3.00 EUR × 1.20 = 3.60 USD -> C_serve 6.90, all to a
    #                   (converting the whole hour at its start, 1.10, would give 6.60)
    # hour 12, reserve 12:15-12:45: 1 × 0.25 h × 3.00 × 1.10 = 0.825 + 1 × 0.25 h × 3.00 × 1.20 = 0.90 -> 1.725
    # hour 13: 2 × 1 h × 3.00 × 1.20 = 7.20, no request: idle slack
    assert amounts(a) == {("tenant", "a", None): D("6.90"), ("idle_reserve", None, None): D("1.725"),
                          ("idle_slack", None, None): D("7.20")}
    assert a.total == a.lines_total == D("15.825")
    # the same rates given the other way round (USD->EUR 1/1.25 = 0.80, then 1/1.60 = 0.625) are cut the same:
    # hour 12 serving 2 × 0.5 × 3.00 × 1.25 + 2 × 0.5 × 3.00 × 1.60 = 3.75 + 4.80 = 8.55
    inverse = FX_CHANGE_AT_1230.replace('from = "EUR"\n    to = "USD"', 'from = "USD"\n    to = "EUR"') \
                               .replace('"1.10"', '"0.80"').replace('"1.20"', '"0.625"')
    b = run(index(EUR_BOOK + inverse), *DAY, fleet=fleet, requests=requests)
    assert amounts(b)[("tenant", "a", None)] == D("8.55")
