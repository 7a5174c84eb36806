"""Properties of allocation, with hypothesis: conservation to the micro-unit for random fleets and
usage, input order changes no line, the vectorized GPU split equals the reference split, and a
report filtered to some tenants shows exactly their unfiltered numbers."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal as D

import duckdb
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_allocate_support import facts_con, index, utc
from test_allocate_usage import HEAD, price

from ledger.allocate import Coefficient, Policy, _apply_gpu_split, allocate
from ledger.money import from_micros, split
from ledger.reports import run_data_of, unit_economics

BOOK = HEAD.format(name="prop", currency="USD") + \
    price("gpu_time", "H100", "3.7301", "gpu * hour", to="2026-10-01T03:17:00Z") + \
    price("gpu_time", "H100", "4.1903", "gpu * hour", frm="2026-10-01T03:17:00Z") + \
    price("gpu_time", "A100", "1.99", "gpu * hour") + \
    price("input_tokens", "gpt-5", "1.25", "1e6 * token") + \
    price("cached_input_tokens", "gpt-5", "0.125", "1e6 * token") + \
    price("output_tokens", "gpt-5", "10", "1e6 * token") + \
    price("egress", "internet", "0.09", "GB") + \
    price("tool_call", "search", "0.007", "call")
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
provider_requests = st.lists(st.tuples(st.integers(0, 359), st.sampled_from(TENANTS), st.integers(0, 300_000),
                                       st.integers(0, 100), st.integers(0, 9_000)), max_size=8)
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
             "cached_input_tokens": str(inp // 3), "output_tokens": str(out), "status": status}
            for i, (pool, m, s, t, prod, inp, out, status, task) in enumerate(reqs)]
    rows += [{"request_id": f"v{i}", "occurred_at": at(m), "tenant": t, "product": "chat", "model": "gpt-5",
              "pool": None, "provider": "openai", "task_id": None, "input_tokens": str(inp),
              "cached_input_tokens": str(inp * c // 100), "output_tokens": str(out), "status": "ok"}
             for i, (m, t, inp, c, out) in enumerate(prov)]
    r = pd.DataFrame(rows, columns=["request_id", "occurred_at", "tenant", "product", "model", "pool", "provider",
                                    "task_id", "input_tokens", "cached_input_tokens", "output_tokens", "status"],
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
policies = st.builds(Policy, idle=st.sampled_from(["separate", "share"]))
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(intervals, gpu_requests, provider_requests, meters, charges, outcome_lists, policies)
def test_lines_sum_to_the_priced_total_exactly(fleet, reqs, prov, mets, chs, outs, policy):
    facts = build(fleet, reqs, prov, mets, chs, outs)
    a = allocate(facts_con(**facts), start=START, end=END, prices=PRICES, policy=policy)
    assert a.lines_total == a.total
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
