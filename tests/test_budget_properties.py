"""Properties of budget pricing: a month split at any price change still has exactly its hours, each
part is priced with the price in force in it, and every total is the exact sum of its rows."""
from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from decimal import Decimal as D

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.budget import budget, parse_plan
from ledger.pricebook import PriceIndex, parse_book

OCT = datetime(2026, 10, 1, tzinfo=timezone.utc)
OCT_SECONDS = 31 * 86400


def _book(change: datetime, old: str, new: str):
    text = textwrap.dedent(f"""
        [book]
        name = "prop"
        version = "2026-09-01"
        currency = "USD"
        source = "property test"
        retrieved_at = 2026-09-01

        [[price]]
        meter = "gpu_time"
        sku = "G"
        region = "r"
        purchase_option = "on_demand"
        price = "{old}"
        per = "gpu * hour"
        effective_from = 2026-01-01T00:00:00Z
        effective_to = {change.strftime('%Y-%m-%dT%H:%M:%SZ')}
        source_url = "https://example.com/old"

        [[price]]
        meter = "gpu_time"
        sku = "G"
        region = "r"
        purchase_option = "on_demand"
        price = "{new}"
        per = "gpu * hour"
        effective_from = {change.strftime('%Y-%m-%dT%H:%M:%SZ')}
        source_url = "https://example.com/new"

        [[price]]
        meter = "tool_call"
        sku = "t"
        price = "{old}"
        per = "1000 * call"
        effective_from = 2026-01-01T00:00:00Z
        effective_to = {change.strftime('%Y-%m-%dT%H:%M:%SZ')}
        source_url = "https://example.com/t-old"

        [[price]]
        meter = "tool_call"
        sku = "t"
        price = "{new}"
        per = "1000 * call"
        effective_from = {change.strftime('%Y-%m-%dT%H:%M:%SZ')}
        source_url = "https://example.com/t-new"
    """)
    book, problems = parse_book(text, "prop.toml")
    assert not problems, problems
    return PriceIndex([book])


def _plan(hours: str | None, tpm: int, calls: str):
    text = f"""
[plan]
name = "prop"
currency = "USD"
start = "2026-10"
months = 2
{'hours_per_month = "' + hours + '"' if hours else ''}

[[pool]]
name = "p"
device = "G"
region = "r"
purchase_option = "on_demand"
gpus_per_replica = 2
anchors = "4:50"
sla = 40
tpm = {tpm}
util = 1

[[meter]]
meter = "tool_call"
sku = "t"
quantity = "{calls}"
unit = "call"
"""
    plan, problems = parse_plan(text, "prop.toml")
    assert not problems, problems
    return plan


prices = st.decimals(min_value=D("0.01"), max_value=D("99"), places=4)


@settings(max_examples=60, deadline=None)
@given(offset=st.integers(min_value=1, max_value=OCT_SECONDS - 1), old=prices, new=prices,
       hours=st.sampled_from([None, "730", "720.5"]), tpm=st.integers(min_value=1, max_value=200_000),
       calls=st.decimals(min_value=D(0), max_value=D("1e9"), places=3))
def test_a_split_month_keeps_its_hours_and_prices_each_part_with_its_price(offset, old, new, hours, tpm, calls):
    change = OCT + timedelta(seconds=offset)
    b = budget(_plan(hours, tpm, str(calls)), _book(change, str(old), str(new)))
    oct_rows = [g for g in b.gpu if g.month == "2026-10"]
    month_hours = D(hours) if hours else D(744)
    assert sum(g.hours for g in oct_rows) == month_hours
    assert [g.start for g in oct_rows][0] == OCT and oct_rows[-1].end == OCT + timedelta(days=31)
    for g in oct_rows:
        assert g.price_per_gpu_hour == (old if g.end <= change else new)
        assert g.cost == (D(g.gpus) * g.hours * g.price_per_gpu_hour).quantize(D("0.000001"))
    # two price entries (even of the same amount) are two sources: the month is cut at the change
    assert len(oct_rows) == 2 and oct_rows[0].end == change
    nov = [g for g in b.gpu if g.month == "2026-11"]
    assert [(g.hours, g.price_per_gpu_hour) for g in nov] == [(D(hours) if hours else D(720), new)]
    tools = [v for v in b.variable if v.month == "2026-10"]
    assert sum(v.quantity for v in tools) == calls
    for m in ("2026-10", "2026-11"):
        cats = b.by_category("base", m)
        assert cats["gpu"] == sum(g.cost for g in b.gpu if g.month == m)
        assert cats["tool"] == sum(v.cost for v in b.variable if v.month == m)
    assert b.total("base") == sum(g.cost for g in b.gpu) + sum(v.cost for v in b.variable)
