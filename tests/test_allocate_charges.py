"""DESIGN §4.6 shared charges, worked by hand: proration by overlap, days that sum exactly, FX,
and each rule (even, by_cost, by_tokens, tenant:X, none, and a rule with nobody eligible)."""
from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest
from test_allocate_support import index, run
from test_allocate_usage import HEAD, PROVIDER, price

from ledger.allocate import AllocationError

BOOK = HEAD.format(name="tokens", currency="USD") + \
    price("input_tokens", "gpt-5", "1", "1e6 * token") + price("output_tokens", "gpt-5", "1", "1e6 * token") + \
    "[[fx]]\nfrom = \"EUR\"\nto = \"USD\"\nrate = \"1.10\"\neffective_from = 2026-01-01T00:00:00Z\n"
# direct cost: a 3M tokens = 3.00, b 1M tokens = 1.00 (c has none)
REQUESTS = PROVIDER + """
    q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,,3000000,0,0,0,ok
    q2,2026-10-01T09:00:00Z,b,chat,gpt-5,openai,,500000,0,500000,0,ok
"""
CHARGES = "charge_id,period_start,period_end,category,description,amount,currency,allocate\n"
TWO_DAYS = ("2026-10-01T00:00:00Z", "2026-10-03T00:00:00Z")


def charge_lines(alloc):
    return sorted((ln.day.isoformat(), ln.kind, ln.tenant, ln.category, ln.amount)
                  for ln in alloc.lines if ln.category != "provider_tokens")


def test_monthly_charge_prorated_to_the_period_by_day_even_rule():
    charges = CHARGES + "c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Grafana,310.00,USD,even\n"
    a = run(index(BOOK), *TWO_DAYS, requests=REQUESTS, charges=charges)
    # 310.00 over 31 days; 2 days overlap the period: 20.00, 10.00 a day; even over a and b: 5.00 each
    assert charge_lines(a) == [("2026-10-01", "tenant", "a", "observability", D("5.00")),
                               ("2026-10-01", "tenant", "b", "observability", D("5.00")),
                               ("2026-10-02", "tenant", "a", "observability", D("5.00")),
                               ("2026-10-02", "tenant", "b", "observability", D("5.00"))]
    assert a.total == D("24.00") == a.lines_total


def test_partial_days_and_largest_remainder_over_days():
    charges = CHARGES + "c1,2026-10-01T12:00:00Z,2026-10-03T12:00:00Z,engineering_ops,on-call,100.00,USD,none\n" \
                        "c2,2026-09-30T00:00:00Z,2026-10-03T00:00:00Z,other,misc,100.00,USD,none\n"
    a = run(index(BOOK), *TWO_DAYS, charges=charges)
    # c1: 36 h of its 48 h fall in the period: 75.00; 10-01 has 12 h -> 25.00, 10-02 has 24 h -> 50.00
    # c2: 2 of its 3 days: 100 × 2/3 = 66.666666...6 -> 66.666667; split over 2 equal days:
    #     33.3333335 each: floors 33.333333 + 33.333333, one micro-unit left; tie on remainder and weight:
    #     the earlier day (key order) gets it
    assert charge_lines(a) == [("2026-10-01", "unallocated", None, "engineering_ops", D("25.00")),
                               ("2026-10-01", "unallocated", None, "other", D("33.333334")),
                               ("2026-10-02", "unallocated", None, "engineering_ops", D("50.00")),
                               ("2026-10-02", "unallocated", None, "other", D("33.333333"))]
    assert a.total == D("141.666667") == a.lines_total


def test_by_cost_by_tokens_tenant_and_fx():
    charges = CHARGES + """
        c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,storage,S3,10.00,USD,by_cost
        c2,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,tools,search API,10.00,EUR,by_tokens
        c3,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,network,VPN,7.00,USD,tenant:c
    """
    a = run(index(BOOK), *TWO_DAYS, requests=REQUESTS, charges=charges)
    # c1 by direct cost 3.00 : 1.00 -> a 7.50, b 2.50
    # c2 10.00 EUR × 1.10 = 11.00 USD by active tokens 3,000,000 : 1,000,000 -> a 8.25, b 2.75 (category tool)
    # c3 all to tenant c, even though c has no usage
    assert charge_lines(a) == [("2026-10-01", "tenant", "a", "storage", D("7.50")),
                               ("2026-10-01", "tenant", "a", "tool", D("8.25")),
                               ("2026-10-01", "tenant", "b", "storage", D("2.50")),
                               ("2026-10-01", "tenant", "b", "tool", D("2.75")),
                               ("2026-10-01", "tenant", "c", "network", D("7.00"))]
    assert a.total == D("32.00") == a.lines_total  # 4.00 tokens + 10 + 11 + 7


def test_rule_with_no_eligible_tenant_books_unallocated_with_a_note():
    charges = CHARGES + "c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,evaluation,judges,9.00,USD,by_cost\n"
    a = run(index(BOOK), *TWO_DAYS, charges=charges)
    assert charge_lines(a) == [("2026-10-01", "unallocated", None, "evaluation", D("9.00"))]
    assert "charge c1 (allocate by_cost): no eligible tenant in the period; booked unallocated" in a.notes


def test_even_split_that_does_not_divide_goes_by_largest_remainder():
    charges = CHARGES + "c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,other,x,0.000001,USD,even\n"
    a = run(index(BOOK), *TWO_DAYS, requests=REQUESTS, charges=charges)
    # one micro-unit over two equal weights: the tie goes to the first key in order (a)
    assert charge_lines(a) == [("2026-10-01", "tenant", "a", "other", D("0.000001"))]


def test_unknown_rule_and_missing_fx_fail_the_run():
    charges = CHARGES + "c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,other,x,1.00,USD,by_magic\n"
    with pytest.raises(AllocationError, match="charge c1: allocate 'by_magic' is not even"):
        run(index(BOOK), *TWO_DAYS, requests=REQUESTS, charges=charges)
    charges = CHARGES + "c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,other,x,1.00,GBP,none\n"
    with pytest.raises(AllocationError, match="no FX rate in force for GBP->USD"):
        run(index(BOOK), *TWO_DAYS, charges=charges)


def test_charge_outside_the_period_is_ignored_and_days_are_dated():
    charges = CHARGES + "c1,2026-09-01T00:00:00Z,2026-10-01T00:00:00Z,other,september,30.00,USD,none\n" \
                        "c2,2026-10-02T06:00:00Z,2026-10-02T18:00:00Z,other,half day,6.00,USD,none\n"
    a = run(index(BOOK), *TWO_DAYS, charges=charges)
    assert [(ln.day, ln.amount, ln.quantity, ln.unit) for ln in a.lines] == \
        [(date(2026, 10, 2), D("6.00"), D(43200), "second")]


OCTOBER = ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")


def tenant_totals(alloc, category):
    out: dict[str, D] = {}
    for ln in alloc.lines:
        if ln.category == category:
            out[ln.tenant] = out.get(ln.tenant, D(0)) + ln.amount
    return out


def test_even_charge_over_a_month_is_even_over_the_period_and_by_cost_does_not_drift():
    charges = CHARGES + """
        c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Grafana,199.00,USD,even
        c2,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,storage,S3,199.00,USD,by_cost
    """
    a = run(index(BOOK), *OCTOBER, requests=REQUESTS, charges=charges)
    # each charge: 199.00 over 31 days = 6.419354838... a day: floors 6.419354 × 31 = 198.999974 leave 26
    # micro-units, which go to the first 26 days (equal remainders and weights): days 1-26 6.419355, 27-31 6.419354.
    # c1 even over a and b, split once over the period: 199.00 / 2 = 99.50 each, exactly
    # (split day by day with a always winning the tie, a got 99.500013 and b 99.499987).
    assert tenant_totals(a, "observability") == {"a": D("99.50"), "b": D("99.50")}
    # on the days: the running total of the days split in proportion to 99.50 : 99.50, one day at a time;
    # day 1: 6.419355 -> a 3.209678, b 3.209677; day 2: running 12.838710 -> 6.419355 each, so the day's lines are
    # a 3.209677, b 3.209678; ... day 27 (6.419354, running 173.322584 -> 86.661292 each): 3.209677 each
    c1 = {(ln.day.day, ln.tenant): ln.amount for ln in a.lines if ln.category == "observability"}
    assert (c1[(1, "a")], c1[(1, "b")], c1[(2, "a")], c1[(2, "b")]) == \
        (D("3.209678"), D("3.209677"), D("3.209677"), D("3.209678"))
    assert (c1[(27, "a")], c1[(27, "b")]) == (D("3.209677"), D("3.209677"))
    assert all(c1[(d, "a")] + c1[(d, "b")] == (D("6.419355") if d <= 26 else D("6.419354")) for d in range(1, 32))
    # c2 by direct cost a 3.00 : b 1.00: 199 × 3/4 = 149.25, 199 × 1/4 = 49.75 exactly
    # (day by day, a's remainder of .25 lost every odd day: 149.249996 and 49.750004)
    assert tenant_totals(a, "storage") == {"a": D("149.25"), "b": D("49.75")}
    assert a.total == a.lines_total == D("402.00")  # 4.00 of tokens + 199.00 + 199.00


def test_even_spare_micro_units_rotate_over_charges():
    charges = CHARGES + """
        c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,other,x,0.000001,USD,even
        c2,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,other,y,0.000001,USD,even
        c3,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,other,z,0.000001,USD,even
    """
    a = run(index(BOOK), *TWO_DAYS, requests=REQUESTS, charges=charges)
    # even charges run one total in charge_id order: after c1 1 micro-unit (a 1, b 0): c1 -> a;
    # after c2 2 (a 1, b 1): c2 -> b; after c3 3 (a 2, b 1): c3 -> a. So a 0.000002, b 0.000001, not a 0.000003.
    assert tenant_totals(a, "other") == {"a": D("0.000002"), "b": D("0.000001")}


def test_charge_day_with_an_fx_change_is_converted_at_each_rate():
    book = HEAD.format(name="tokens", currency="USD") + \
        "[[fx]]\nfrom = \"EUR\"\nto = \"USD\"\nrate = \"1.10\"\neffective_from = 2026-01-01T00:00:00Z\n" \
        "effective_to = 2026-10-01T12:30:00Z\n" \
        "[[fx]]\nfrom = \"EUR\"\nto = \"USD\"\nrate = \"1.20\"\neffective_from = 2026-10-01T12:30:00Z\n"
    charges = CHARGES + "c1,2026-10-01T00:00:00Z,2026-10-03T00:00:00Z,tools,search API,200.00,EUR,tenant:c\n"
    a = run(index(book), *TWO_DAYS, charges=charges)
    # 100.00 EUR a day. October 1: 12.5 h at 1.10 and 11.5 h at 1.20:
    #   100 × (12.5 × 1.10 + 11.5 × 1.20) / 24 = 100 × 27.55 / 24 = 114.7916666... -> 114.791667
    #   (at the rate of the start of the day it was 110.00)
    # October 2: all at 1.20 -> 120.00
    assert charge_lines(a) == [("2026-10-01", "tenant", "c", "tool", D("114.791667")),
                               ("2026-10-02", "tenant", "c", "tool", D("120.00"))]
    assert a.total == a.lines_total == D("234.791667")
