"""Properties of allocation, with hypothesis: conservation to the micro-unit for random fleets and
usage, input order changes no line, the vectorized GPU split equals the reference split, and a
report filtered to some tenants shows exactly their unfiltered numbers."""
from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal as D
from fractions import Fraction

import duckdb
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_allocate_support import facts_con, index, utc
from test_allocate_usage import HEAD, price

from ledger.allocate import Coefficient, Policy, _apply_gpu_split, allocate
from ledger.allocate.charges import ChargeDay, _charge_lines
from ledger.money import from_micros, split
from ledger.reports import run_data_of, unit_economics

# provider tokens (five buckets, reasoning, a second provider, the batch tier) and meters, in both books
TOKEN_AND_METER_PRICES = (
    price("input_tokens", "gpt-5", "1.25", "1e6 * token") +
    price("cached_input_tokens", "gpt-5", "0.125", "1e6 * token") +
    price("output_tokens", "gpt-5", "10", "1e6 * token") +
    price("cache_write_tokens", "gpt-5", "1.5625", "1e6 * token") +
    price("reasoning_tokens", "gpt-5", "12", "1e6 * token", provider="azure") +
    price("input_tokens", "gpt-5", "1.375", "1e6 * token", provider="azure",
          extra='tiers = [{ above_input_tokens = 200000, price = "2.75" }]') +
    price("input_tokens", "gpt-5", "0.625", "1e6 * token", option="batch") +
    price("output_tokens", "gpt-5", "5", "1e6 * token", option="batch") +
    price("cache_write_1h_tokens", "gpt-5", "1.25", "1e6 * token", option="batch") +
    price("egress", "internet", "0.09", "GB") +
    price("tool_call", "search", "0.007", "call"))

BOOK = HEAD.format(name="prop", currency="USD") + \
    price("gpu_time", "H100", "3.7301", "gpu * hour", to="2026-10-01T03:17:00Z") + \
    price("gpu_time", "H100", "4.1903", "gpu * hour", frm="2026-10-01T03:17:00Z") + \
    price("gpu_time", "A100", "1.99", "gpu * hour") + \
    TOKEN_AND_METER_PRICES
PRICES = index(BOOK)
T0 = utc("2026-10-01T00:00:00Z")
START, END = T0, T0 + timedelta(hours=6)
TENANTS = ["a", "b", "c", "d"]
ROLES = ["serving", "serving", "failure_reserve", "warm_reserve", "canary", "maintenance"]


def at(minutes: int, seconds: int = 0) -> str:
    return (T0 + timedelta(minutes=minutes, seconds=seconds)).isoformat().replace("+00:00", "Z")


intervals = st.lists(st.tuples(st.sampled_from(["p1", "p2"]), st.integers(-60, 380), st.integers(1, 300),
                               st.integers(0, 8), st.sampled_from(["H100", "A100"]), st.sampled_from(ROLES),
                               st.one_of(st.none(), st.integers(0, 3000).map(lambda x: str(D(x) / 10)))),
                     max_size=6)
gpu_requests = st.lists(st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.integers(-30, 400), st.integers(0, 59),
                                  st.sampled_from(TENANTS), st.sampled_from(["chat", "code"]),
                                  st.integers(0, 400_000), st.integers(0, 20_000),
                                  st.sampled_from(["ok", "ok", "error"]),
                                  st.sampled_from(["t1", "t2", "t3", None])),
                        max_size=40)
# (minute, tenant, input, cached %, output, 5-minute writes % and 1-hour writes % of the rest of the input,
#  reasoning % of the output, service tier, provider): cached + writes <= input and reasoning <= output always;
# the book prices 5-minute writes for every tier and 1-hour writes only on batch (else at the input price),
# reasoning only on Azure, and Azure's input with a long-context tier
provider_requests = st.lists(st.tuples(st.integers(0, 359), st.sampled_from(TENANTS), st.integers(0, 300_000),
                                       st.integers(0, 100), st.integers(0, 9_000), st.integers(0, 100),
                                       st.integers(0, 100), st.integers(0, 100),
                                       st.sampled_from(["standard", "batch", "flex"]),
                                       st.sampled_from(["openai", "azure"])), max_size=8)
meters = st.lists(st.tuples(st.integers(0, 359), st.sampled_from(TENANTS),
                            st.sampled_from([("egress", "internet", "GiB"), ("egress", "internet", "MB"),
                                             ("tool_call", "search", "call")]),
                            st.integers(0, 10**6).map(lambda x: str(D(x) / 1000))), max_size=6)
charges = st.lists(st.tuples(st.integers(-600, 300), st.integers(1, 900), st.integers(-10**6, 10**8),
                             st.sampled_from(["even", "by_cost", "by_tokens", "tenant:z", "none"])), max_size=4)


def build(fleet, reqs, prov, mets, chs, outcomes) -> dict[str, pd.DataFrame]:
    f = pd.DataFrame([{"interval_id": f"i{i}", "pool": p, "start": at(s), "end": at(s + n), "device": dev,
                       "gpus": str(g), "region": "us-east-1", "purchase_option": "on_demand", "role": role,
                       "capacity_tokens_per_gpu_s": cap} for i, (p, s, n, g, dev, role, cap) in enumerate(fleet)],
                     columns=["interval_id", "pool", "start", "end", "device", "gpus", "region", "purchase_option",
                              "role", "capacity_tokens_per_gpu_s"], dtype=object)
    rows = [{"request_id": f"g{i}", "occurred_at": at(m, s), "tenant": t, "product": prod, "model": "llama",
             "pool": pool, "provider": None, "task_id": task, "input_tokens": str(inp),
             "cached_input_tokens": str(inp // 3), "cache_write_input_tokens": str(inp // 5),
             "cache_write_1h_input_tokens": "0", "output_tokens": str(out), "reasoning_tokens": "0",
             "service_tier": "standard", "status": status}
            for i, (pool, m, s, t, prod, inp, out, status, task) in enumerate(reqs)]
    for i, (m, t, inp, c, out, w5, w1h, rsn, tier, provider) in enumerate(prov):
        cached = inp * c // 100
        write5 = (inp - cached) * w5 // 100
        write1h = (inp - cached - write5) * w1h // 100
        rows.append({"request_id": f"v{i}", "occurred_at": at(m), "tenant": t, "product": "chat", "model": "gpt-5",
                     "pool": None, "provider": provider, "task_id": None, "input_tokens": str(inp),
                     "cached_input_tokens": str(cached), "cache_write_input_tokens": str(write5),
                     "cache_write_1h_input_tokens": str(write1h), "output_tokens": str(out),
                     "reasoning_tokens": str(out * rsn // 100), "service_tier": tier, "status": "ok"})
    r = pd.DataFrame(rows, columns=["request_id", "occurred_at", "tenant", "product", "model", "pool", "provider",
                                    "task_id", "input_tokens", "cached_input_tokens", "cache_write_input_tokens",
                                    "cache_write_1h_input_tokens", "output_tokens", "reasoning_tokens",
                                    "service_tier", "status"],
                     dtype=object)
    m = pd.DataFrame([{"event_id": f"e{i}", "occurred_at": at(mm), "tenant": t, "product": "chat", "meter": meter,
                       "sku": sku, "quantity": q, "unit": unit}
                      for i, (mm, t, (meter, sku, unit), q) in enumerate(mets)],
                     columns=["event_id", "occurred_at", "tenant", "product", "meter", "sku", "quantity", "unit"],
                     dtype=object)
    c = pd.DataFrame([{"charge_id": f"c{i}", "period_start": at(s), "period_end": at(s + n), "category": "other",
                       "amount": str(D(a) / 100), "currency": "USD", "allocate": rule}
                      for i, (s, n, a, rule) in enumerate(chs)],
                     columns=["charge_id", "period_start", "period_end", "category", "amount", "currency", "allocate"],
                     dtype=object)
    o = pd.DataFrame([{"task_id": t, "tenant": "a", "product": "chat", "outcome": oc, "decided_at": at(100 + i),
                       "criteria": "tests-pass"} for i, (t, oc) in enumerate(outcomes)],
                     columns=["task_id", "tenant", "product", "outcome", "decided_at", "criteria"], dtype=object)
    return {"fleet": f, "requests": r, "meters": m, "charges": c, "outcomes": o}


outcome_lists = st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3"]), st.sampled_from(["success", "failure"])),
                         max_size=3, unique_by=lambda x: x[0])
# requests may land on pools with no serving fleet (p3 never has any): accepted explicitly, as a run must
policies = st.builds(Policy, idle=st.sampled_from(["separate", "share"]),
                     allow_pool_without_fleet=st.just(("p1", "p2", "p3")))
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(intervals, gpu_requests, provider_requests, meters, charges, outcome_lists, policies)
def test_lines_sum_to_the_priced_total_exactly(fleet, reqs, prov, mets, chs, outs, policy):
    facts = build(fleet, reqs, prov, mets, chs, outs)
    a = allocate(facts_con(**facts), start=START, end=END, prices=PRICES, policy=policy)
    assert a.lines_total == a.total
    # the five token buckets are disjoint and cover every token: a provider line's quantity is input + output
    want = sum(inp + out for _m, _t, inp, _c, out, *_rest in prov)
    assert sum((ln.quantity for ln in a.lines if ln.category == "provider_tokens"), D(0)) == want
    assert all(ln.amount == ln.amount.quantize(D("0.000001")) for ln in a.lines)
    assert all(ln.amount >= 0 for ln in a.lines if ln.category != "other")  # only charges may be credits
    if policy.idle == "share":
        assert not [ln for ln in a.lines if ln.kind == "idle_slack" and any(
            x.pool == ln.pool and x.kind == "tenant" and x.category == "gpu" and x.amount > 0 for x in a.lines)]


@PROPS
@given(intervals, gpu_requests, provider_requests, meters, charges, outcome_lists, policies, st.randoms())
def test_shuffling_input_rows_changes_no_line(fleet, reqs, prov, mets, chs, outs, policy, rnd):
    facts = build(fleet, reqs, prov, mets, chs, outs)
    shuffled = {k: v.sample(frac=1, random_state=rnd.randint(0, 2**31)).reset_index(drop=True)
                for k, v in facts.items()}
    a = allocate(facts_con(**facts), start=START, end=END, prices=PRICES, policy=policy)
    b = allocate(facts_con(**shuffled), start=START, end=END, prices=PRICES, policy=policy)
    assert a.lines == b.lines and a.total == b.total and a.flags == b.flags and a.usage == b.usage


@PROPS
@given(intervals, gpu_requests, provider_requests, meters, charges, outcome_lists, policies,
       st.sets(st.sampled_from(TENANTS + ["z"])), st.sampled_from(["tenant", "product", "model"]))
def test_report_filtered_to_tenants_shows_their_unfiltered_numbers(fleet, reqs, prov, mets, chs, outs, policy,
                                                                    chosen, by):
    facts = build(fleet, reqs, prov, mets, chs, outs)
    a = allocate(facts_con(**facts), start=START, end=END, prices=PRICES, policy=policy)
    data = run_data_of(a, run_id="r")
    full = unit_economics(data, by="tenant")
    part = unit_economics(data, by="tenant", tenants=sorted(chosen))
    assert part.rows == tuple(r for r in full.rows if r.key in chosen)
    assert [part.share_of_gpu(r) for r in part.rows] == [full.share_of_gpu(r) for r in full.rows if r.key in chosen]
    # by product or model, the filtered rows hold exactly the chosen tenants' lines: nothing moves between tenants
    everyone = unit_economics(data, by=by)
    per_tenant = [unit_economics(data, by=by, tenants=[t]) for t in sorted(chosen)]
    filtered = unit_economics(data, by=by, tenants=sorted(chosen))
    assert sum((r.cost for r in filtered.rows), D(0)) == sum((r.cost for rep in per_tenant for r in rep.rows), D(0))
    assert sum((r.cost for r in everyone.rows), D(0)) + sum(everyone.unattributed.values(), D(0)) == a.total


weights = st.lists(st.tuples(st.sampled_from(TENANTS), st.sampled_from(["chat", "code"]),
                             st.sampled_from(["succeeded", "failed"]), st.integers(0, 10**12)),
                   min_size=1, max_size=12, unique_by=lambda x: x[:3])


@settings(max_examples=100, deadline=None)
@given(weights, st.integers(0, 10**11), st.integers(0, 10**13))
def test_vectorized_gpu_split_equals_the_reference_split(groups, c, slack):
    w = sum(g[3] for g in groups)
    if w == 0:
        return  # an hour with no weight is all slack; no split happens
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE _gpu_groups (pool VARCHAR, hour BIGINT, day DATE, tenant VARCHAR, "
                "product VARCHAR, model VARCHAR, work VARCHAR, w HUGEINT, n BIGINT, active HUGEINT)")
    con.executemany("INSERT INTO _gpu_groups VALUES ('p', 0, DATE '2026-10-01', ?, ?, 'm', ?, ?, 1, 0)",
                    [(t, p, wk, x) for t, p, wk, x in groups])
    lines, slack_parts = _apply_gpu_split(con, [Coefficient(pool="p", hour=0, c=c, w=w, slack=slack,
                                                            slack_gpu_s=D(0))])
    # the reference: money.split over the same keys; slack sorts after every request group
    keys = {(0, t, p, "m", wk): D(x) for t, p, wk, x in groups} | ({(1,): D(slack)} if slack else {})
    ref = split(from_micros(c), keys)
    got = {(0, t, p, "m", wk): g.amount for (_d, t, p, _m, _pool, wk), g in lines.items()}
    assert got == {k: v for k, v in ref.items() if k != (1,)}
    assert from_micros(slack_parts.get(("p", 0), 0)) == ref.get((1,), D(0))


# ---- FX changes and shared charges ----------------------------------------------------------------

FX_BOOK = HEAD.format(name="prop-fx", currency="USD") + \
    price("gpu_time", "H100", "3.7301", "gpu * hour") + \
    price("gpu_time", "A100", "1.83", "gpu * hour", currency="EUR") + \
    TOKEN_AND_METER_PRICES + \
    "".join(f'[[fx]]\nfrom = "EUR"\nto = "USD"\nrate = "{r}"\neffective_from = {a}\n'
            + (f"effective_to = {b}\n" if b else "")
            for r, a, b in (("1.0871", "2026-01-01T00:00:00Z", "2026-10-01T01:17:30Z"),
                            ("1.1093", "2026-10-01T01:17:30Z", "2026-10-01T04:44:44Z"),
                            ("1.0999", "2026-10-01T04:44:44Z", None)))
FX_PRICES = index(FX_BOOK)


@PROPS
@given(intervals, gpu_requests, provider_requests, meters, charges, outcome_lists, policies)
def test_lines_sum_to_the_total_with_fx_changes_inside_hours_and_days(fleet, reqs, prov, mets, chs, outs, policy):
    facts = build(fleet, reqs, prov, mets, chs, outs)
    facts["charges"]["currency"] = ["EUR" if i % 2 else "USD" for i in range(len(facts["charges"]))]
    a = allocate(facts_con(**facts), start=START, end=END, prices=FX_PRICES, policy=policy)
    assert a.lines_total == a.total
    assert all(ln.amount == ln.amount.quantize(D("0.000001")) for ln in a.lines)


CHARGE_CATS = ["tool", "observability", "evaluation", "engineering_ops", "storage", "network", "other"]
MICRO = Fraction(1, 10**6)
charge_specs = st.lists(st.tuples(st.sampled_from(["even", "by_cost", "by_tokens", "tenant:a", "none"]),
                                  st.sampled_from([1, 1, 1, -1]),
                                  st.lists(st.integers(0, 10**9), min_size=1, max_size=31)),
                        max_size=len(CHARGE_CATS))
tenant_usage = st.dictionaries(st.sampled_from(TENANTS + ["e"]),
                               st.tuples(st.integers(0, 10**9).map(lambda x: from_micros(x)), st.integers(0, 10**7)),
                               max_size=5)


@settings(max_examples=300, deadline=None)
@given(charge_specs, tenant_usage)
def test_charge_rules_are_exact_over_the_period_and_even_is_even(specs, usage):
    direct = {t: c for t, (c, _n) in usage.items()}
    tokens = {t: n for t, (_c, n) in usage.items()}
    days = [ChargeDay(charge_id=f"c{i}", day=date(2026, 10, d + 1), seconds=D(86400), category=CHARGE_CATS[i],
                      rule=rule, amount=from_micros(sign * x))
            for i, (rule, sign, amounts) in enumerate(specs) for d, x in enumerate(amounts)]
    problems: dict = {}
    lines, _notes = _charge_lines(days, direct, tokens, problems)
    assert not problems
    assert all(ln.amount == ln.amount.quantize(D("0.000001")) for ln in lines)
    even_totals: dict[bool, dict[str, Fraction]] = {}
    for i, (rule, sign, amounts) in enumerate(specs):
        mine = [ln for ln in lines if ln.category == CHARGE_CATS[i]]
        # Σ lines == the charge, day by day
        for d, x in enumerate(amounts):
            assert sum((ln.amount for ln in mine if ln.day.day == d + 1), D(0)) == from_micros(sign * x)
        weights = {"even": {t: 1 for t, c in direct.items() if c > 0},
                   "by_cost": {t: Fraction(c) for t, c in direct.items() if c > 0},
                   "by_tokens": {t: n for t, n in tokens.items() if n > 0},
                   "tenant:a": {"a": 1}, "none": {}}[rule]
        if not weights:
            assert all(ln.kind == "unallocated" for ln in mine)
            continue
        total = Fraction(sign * sum(amounts)) * MICRO
        got = {t: Fraction(sum((ln.amount for ln in mine if ln.tenant == t), D(0))) for t in weights}
        assert not [ln for ln in mine if ln.tenant not in weights]
        w_total = sum(weights.values())
        for t, w in weights.items():
            # over the period: within 1e-6 of the exact proportion
            assert abs(got[t] - total * w / w_total) <= MICRO
            # day by day: within 2e-6 of the day's exact proportion (the lines stay meaningful)
            for d, x in enumerate(amounts):
                cell = sum((Fraction(ln.amount) for ln in mine if ln.day.day == d + 1 and ln.tenant == t), Fraction(0))
                assert abs(cell - Fraction(sign * x) * MICRO * w / w_total) <= 2 * MICRO
        if rule == "even":
            assert max(got.values()) - min(got.values()) <= MICRO
            acc = even_totals.setdefault(sign < 0, dict.fromkeys(weights, Fraction(0)))
            for t in weights:
                acc[t] += got[t]
    # every even charge together (credits apart): still even, the spare micro-units rotate
    for acc in even_totals.values():
        assert max(acc.values()) - min(acc.values()) <= MICRO
