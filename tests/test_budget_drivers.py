"""Why the forecast missed (`budget compare`): the error split into traffic, output length, cache-hit
rate, fleet, prices and other, worked by hand, every split adding up exactly (Decimal ==)."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from decimal import Decimal as D
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ledger.budget import (DRIVERS, Actuals, PoolActual, TokenActual, budget, compare, parse_plan)
from ledger.cli import app
from ledger.pricebook import PriceIndex, parse_book

OCT = (datetime(2026, 10, 1, tzinfo=timezone.utc), datetime(2026, 11, 1, tzinfo=timezone.utc))  # 744 h

BOOK = """
[book]
name = "drivers"
version = "2026-09-01"
currency = "USD"
source = "test fixture"
retrieved_at = 2026-09-01

[[price]]
meter = "gpu_time"
sku = "H100"
region = "us-east-1"
purchase_option = "on_demand"
price = "2.00"
per = "gpu * hour"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/h100"

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
"""

PLAN = """
[plan]
name = "drivers"
currency = "USD"
start = "2026-10"
months = 1

[[pool]]
name = "chat"
device = "H100"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 1
anchors = "1:200"           # one replica serves 200 output tok/s at the SLA
sla = 100
tpm = 9000                  # 150 tok/s: 1 replica + 1 failure reserve = 2 GPUs
util = 1
failure_reserve = 1
osl = 100                   # planned output tokens per request
{extra}

[[tokens]]
provider = "openai"
model = "gpt-5"
input_tokens = "10000000"
cached_share = "0.5"
output_tokens = "2000000"

[[charge]]
name = "on-call"
category = "engineering_ops"
amount = "1000.00"
"""


def _budget(extra: str = ""):
    plan, problems = parse_plan(PLAN.format(extra=extra), "plan.toml")
    assert not problems, problems
    book, problems = parse_book(BOOK, "drivers.toml")
    assert not problems, problems
    index = PriceIndex([book])
    return budget(plan, index), index


def line(category: str, amount: str, *, pool=None, provider=None, model=None):
    return SimpleNamespace(category=category, amount=D(amount), pool=pool, provider=provider, model=model)


# What the month's run booked: the pool's fleet at $2.10 (the price rose), gpt-5, the on-call invoice,
# storage the plan never forecast and a pool it does not have.
LINES = [line("gpu", "6552.000000", pool="chat"), line("provider_tokens", "38.400000", provider="openai", model="gpt-5"),
         line("engineering_ops", "1100.000000"), line("storage", "50.000000"), line("gpu", "200.000000", pool="batch")]


def _actuals(tpm=27000.0, osl=150.0, gpu_hours=3120):
    return Actuals(statistic="p99",
                   pools=(PoolActual(pool="chat", tpm=tpm, osl=osl, requests=1000,
                                     gpu_seconds=((OCT, D(gpu_hours * 3600)),)),),
                   tokens=(TokenActual(provider="openai", model="gpt-5", input_tokens=12_000_000,
                                       cached_input_tokens=7_200_000, output_tokens=3_000_000),))


def _split(b, index, actuals, lines=LINES):
    c = compare(b, month="2026-10", lines=lines, run_id="r", run_currency="USD", actuals=actuals, index=index)
    return c, {r.key: r for r in c.drivers.items}, {r.key: r for r in c.drivers.categories}


def test_a_pool_and_a_provider_model_split_by_hand():
    b, index = _budget()
    c, items, cats = _split(b, index, _actuals())
    # pool chat. Forecast: 2 GPUs x 744 h x $2 = 2,976. Actual p99 TPM 27,000 = 3 x planned, output
    # tokens per request 150 = 1.5 x planned 100, so traffic (requests) is 3 / 1.5 = 2 x planned:
    #   traffic:       TPM 18,000 = 300 tok/s -> 2 replicas + 1 = 3 GPUs: 3 x 744 x 2 = 4,464  (+1,488)
    #   output length: TPM 27,000 = 450 tok/s -> 3 replicas + 1 = 4 GPUs: 5,952                (+1,488)
    #   cache hit:     the pool's sizing is output-bound: no change                             (0)
    #   fleet:         the fleet ran 3,120 GPU-h, at the plan's $2: 6,240                        (+288)
    #   prices:        the run booked 6,552 ($2.10 per GPU-hour)                                 (+312)
    chat = items["chat"]
    assert (chat.forecast, chat.actual, chat.error) == (D("2976"), D("6552"), D("3576"))
    assert chat.amounts() == {"traffic": D("1488"), "output_length": D("1488"), "cache_hit_rate": 0,
                              "fleet": D("288"), "prices": D("312"), "other": 0}
    m = {name: (p, a) for name, p, a in chat.measures}
    assert m["gpus_at_traffic"] == (2, 3) and m["gpus"] == (2, 4) and m["gpu_hours"] == (D("1488"), D("3120"))
    assert m["tpm"] == (9000.0, 27000.0) and m["osl"] == (100, 150.0)
    # gpt-5. Forecast: 5M uncached x 1.25 + 5M cached x 0.125 + 2M output x 10 (per 1M) = 26.875.
    # Actual: 12M input (7.2M cached, share 0.6), 3M output; the run booked 38.40.
    #   traffic: input 1.2 x planned, every bucket x 1.2: 7.5 + 0.75 + 24 = 32.25        (+5.375)
    #   output length: output 3M: 7.5 + 0.75 + 30 = 38.25                                  (+6)
    #   cache hit: 4.8M uncached, 7.2M cached: 6.0 + 0.9 + 30 = 36.9                      (-1.35)
    #   fleet: none for provider tokens (0); prices: 38.40 - 36.90                         (+1.50)
    gpt = items["openai/gpt-5"]
    assert (gpt.forecast, gpt.actual, gpt.error) == (D("26.875"), D("38.4"), D("11.525"))
    assert gpt.amounts() == {"traffic": D("5.375"), "output_length": D("6"), "cache_hit_rate": D("-1.35"),
                             "fleet": 0, "prices": D("1.5"), "other": 0}
    assert dict((n, (p, a)) for n, p, a in gpt.measures)["cached_share"] == (D("0.5"), D("0.6"))
    # other: the on-call invoice (+100), storage never forecast (+50), pool batch not in the plan (+200)
    assert (cats["gpu"].other, cats["engineering_ops"].other, cats["storage"].other) == (200, 100, 50)
    assert cats["gpu"].amounts() == {"traffic": D("1488"), "output_length": D("1488"), "cache_hit_rate": 0,
                                     "fleet": D("288"), "prices": D("312"), "other": D("200")}
    # the total: 7,940.40 - 4,002.875 = 3,937.525, exactly the sum of the drivers
    t = c.drivers.total
    assert (t.forecast, t.actual, t.error) == (D("4002.875"), D("7940.4"), D("3937.525")) == \
        (c.total.forecast, c.total.actual, c.total.error)
    assert t.amounts() == {"traffic": D("1493.375"), "output_length": D("1494"), "cache_hit_rate": D("-1.35"),
                           "fleet": D("288"), "prices": D("313.5"), "other": D("350")}
    for r in (*c.drivers.items, *c.drivers.categories, t):
        assert sum(r.amounts().values(), D(0)) == r.error
    assert sum((r.error for r in c.drivers.categories), D(0)) == t.error
    assert c.drivers.notes == ()


def test_a_pool_without_requests_is_sized_with_its_reserves_only():
    b, index = _budget()
    _, items, _ = _split(b, index, _actuals(tpm=0.0, osl=None, gpu_hours=744))
    # traffic: no serving replica, the failure reserve alone: 1 x 744 x 2 = 1,488 (-1,488); fleet: 744 GPU-h
    # at $2 = 1,488 (0); prices: the run booked 6,552 (+5,064)
    chat = items["chat"]
    assert (chat.traffic, chat.output_length, chat.fleet, chat.prices) == (D("-1488"), 0, 0, D("5064"))


def test_without_a_planned_output_length_the_whole_tpm_change_is_traffic():
    b, index = _budget()
    plan = b.plan
    from dataclasses import replace

    b = replace(b, plan=replace(plan, pools=(replace(plan.pools[0], osl=None),)))  # anchors carry no OSL
    c, items, _ = _split(b, index, _actuals())
    # 27,000 TPM = 450 tok/s at once: 3 replicas + 1 = 4 GPUs, 5,952 (+2,976); output length 0
    assert (items["chat"].traffic, items["chat"].output_length) == (D("2976"), 0)
    assert c.drivers.notes == ("pool chat: no planned output length (neither the pool's osl nor its curve's): "
                               "the whole change of TPM counts as traffic",)


def test_a_price_change_inside_the_month_prices_each_part_of_the_fleet():
    # a second price from 2026-10-16: H100 at $3 for the last 16 days (384 h of 744)
    book, _ = parse_book(BOOK.replace('price = "2.00"\nper = "gpu * hour"\neffective_from = 2026-01-01T00:00:00Z',
                                      'price = "2.00"\nper = "gpu * hour"\neffective_from = 2026-01-01T00:00:00Z\n'
                                      'effective_to = 2026-10-16T00:00:00Z')
                         + '\n[[price]]\nmeter = "gpu_time"\nsku = "H100"\nregion = "us-east-1"\n'
                           'purchase_option = "on_demand"\nprice = "3.00"\nper = "gpu * hour"\n'
                           'effective_from = 2026-10-16T00:00:00Z\nsource_url = "https://example.com/h100-new"\n',
                         "drivers.toml")
    index = PriceIndex([book])
    plan, _ = parse_plan(PLAN.format(extra=""), "plan.toml")
    b = budget(plan, index)
    mid = datetime(2026, 10, 16, tzinfo=timezone.utc)
    # forecast: 2 GPUs x (360 h x $2 + 384 h x $3) = 2 x 1,872 = 3,744
    assert sum(g.cost for g in b.gpu) == D("3744")
    # the fleet: 3 GPUs for the first part (1,080 GPU-h), 5 for the second (1,920 GPU-h)
    actuals = Actuals(statistic="p99", pools=(PoolActual(pool="chat", tpm=9000.0, osl=100.0, requests=1,
                                                         gpu_seconds=(((OCT[0], mid), D(1080 * 3600)),
                                                                      ((mid, OCT[1]), D(1920 * 3600)))),),
                      tokens=())
    _, items, _ = _split(b, index, actuals, lines=[line("gpu", "8000", pool="chat")])
    # traffic and output length as planned (0); fleet: 1,080 x 2 + 1,920 x 3 = 7,920 (+4,176); prices +80
    chat = items["chat"]
    assert (chat.traffic, chat.output_length, chat.fleet, chat.prices) == (0, 0, D("4176"), D("80"))


# The demo fleet's two pools and its gpt-5 usage, as tests/test_budget_compare.py plans them (priced
# with the shipped books: H100 on-demand $6.88, H200 $7.912 per GPU-hour).
DEMO_PLAN = """
[plan]
name = "demo-drivers"
currency = "USD"
start = "2026-10"
months = 1

[[pool]]
name = "h100-chat"
device = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 1
anchors = "1:200"
sla = 100
tpm = 6000
util = 1
failure_reserve = 1

[[pool]]
name = "h200-code"
device = "H200-SXM-141GB"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 4
anchors = "8:70"
sla = 60
tpm = 12000
util = 1

[[tokens]]
provider = "openai"
model = "gpt-5"
input_tokens = "60000000"
cached_share = "0.6"
output_tokens = "11000000"
"""


@pytest.mark.store
def test_budget_compare_splits_the_demo_month(demo_ledger, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(DEMO_PLAN)
    runner = CliRunner()
    r = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    d = doc["drivers"]
    assert d["order"] == list(DRIVERS) and d["tpm_statistic"] == "p99"
    items = {x["key"]: x for x in d["items"]}
    # The demo's traffic needs no more replicas than planned (anchors: the TPM change is all traffic);
    # the fleet had more GPU-hours than the plan (test_budget_compare works them by hand), at the
    # plan's prices: h100-chat 9 GPU-h x $6.88 = 61.92; h200-code 288 GPU-h x $7.912 = 2,278.656.
    assert {k: items["h100-chat"][k] for k in DRIVERS} == {"traffic": "0.000000", "output_length": "0.000000",
                                                           "cache_hit_rate": "0.000000", "fleet": "61.920000",
                                                           "prices": "0.000000", "other": "0.000000"}
    assert (items["h200-code"]["traffic"], items["h200-code"]["fleet"], items["h200-code"]["prices"]) == \
        ("0.000000", "2278.656000", "0.000000")
    assert items["h200-code"]["measures"]["gpu_hours"] == {"planned": "2976", "actual": "3264"}
    # gpt-5: every bucket scaled by actual input / 60M, priced at the plan's 144.50 for 60M input
    gpt = items["openai/gpt-5"]
    got_input = D(gpt["measures"]["input_tokens"]["actual"])
    assert D(gpt["traffic"]) == (D("144.5") * got_input / D("60000000")).quantize(D("0.000001")) - D("144.5")
    # every row adds up exactly, and the total is compare's total error
    for row in (*d["items"], *d["categories"], d["total"]):
        assert sum(D(row[k]) for k in DRIVERS) == D(row["error"])
    assert d["total"]["error"] == doc["total"]["error"]
    assert {c["key"]: c["error"] for c in d["categories"]} == {c["key"]: c["error"] for c in doc["categories"]}
    assert any("no planned output length" in n for n in d["notes"])

    r = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10", "--csv"])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    total = next(x for x in rows if x["dimension"] == "total")
    assert sum(D(total[k]) for k in DRIVERS) == D(total["error"])
    assert [x["key"] for x in rows if x["dimension"] == "model"] == ["openai/gpt-5"]
    r = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10"], terminal_width=200)
    assert r.exit_code == 0 and "why the forecast missed" in r.stdout and "61.92" in r.stdout
    bad = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10", "--percentile", "p42"])
    assert bad.exit_code == 1 and bad.stderr.strip() == "--percentile 'p42': expected one of p50, p95, p99, max, mean"


def _text(renderable, width=200) -> str:
    from rich.console import Console

    con = Console(width=width, record=True, file=io.StringIO())
    con.print(renderable)
    return con.export_text()


def test_the_text_names_the_gpus_as_the_json_does():
    # Issue 28: the text said "GPUs at the actual traffic" beside the GPUs at the actual TPM (JSON
    # `gpus`) while JSON's `gpus_at_traffic` is the traffic step's. pool chat: 2 planned, 3 at the
    # actual traffic (2 x the requests at the planned 100 tokens), 4 at the actual TPM (27,000).
    from ledger.budget.render import drivers_as_json, drivers_notes

    b, index = _budget()
    c, items, _ = _split(b, index, _actuals())
    measures = {x["key"]: x["measures"] for x in drivers_as_json(c.drivers)["items"]}["chat"]
    assert (measures["gpus"], measures["gpus_at_traffic"]) == ({"planned": 2, "actual": 4},
                                                               {"planned": 2, "actual": 3})
    chat = next(n.plain for n in drivers_notes(c.drivers) if n.plain.startswith("chat:"))
    assert (f"GPUs {measures['gpus']['planned']} planned, {measures['gpus_at_traffic']['actual']} at the actual "
            f"traffic") in chat
    assert f"{measures['gpus']['actual']} at the actual TPM" in chat


def test_printed_drivers_add_up_to_the_printed_error_of_the_printed_totals():
    from ledger.budget.render import comparison_as_table, drivers_as_table

    b, index = _budget()
    # fractions of a cent everywhere: the run's lines at odd micro-amounts
    lines = [line("gpu", "6552.004999", pool="chat"), line("provider_tokens", "38.405001", provider="openai",
                                                           model="gpt-5"),
             line("engineering_ops", "1100.003333"), line("storage", "50.006667"), line("gpu", "200.000001",
                                                                                      pool="batch")]
    c, _, _ = _split(b, index, _actuals(), lines)
    table = _text(comparison_as_table(c))
    total = next(ln for ln in table.splitlines() if "│ total" in ln)
    forecast, actual, error = (D(x.replace(",", "")) for x in total.split("│")[3:6])
    assert actual - forecast == error
    drivers = _text(drivers_as_table(c.drivers, "USD"))
    rows = {ln.split("│")[1].strip(): [D(x.strip().replace(",", "")) for x in ln.split("│")[2:-1]]
            for ln in drivers.splitlines() if ln.startswith("│")}
    assert rows["error"][-1] == error  # the total column's error is the comparison's printed error
    named = [rows[n.replace("_", " ")] for n in DRIVERS]
    for j, err in enumerate(rows["error"]):  # every column adds up to its printed error
        assert sum(r[j] for r in named) == err
    for r in [rows["error"], *named]:  # every row to its printed total
        assert sum(r[:-1]) == r[-1]
