"""Budget plans and their pricing, worked by hand: price changes at a month boundary and mid-month,
scenarios, growth, fixed hours, FX, and one problem per line for an invalid plan."""
from __future__ import annotations

import textwrap
from decimal import Decimal as D

import pytest

from ledger.allocate import CATEGORIES
from ledger.budget import BudgetError, budget, load_plan, month_bounds, parse_plan
from ledger.pricebook import PriceIndex, parse_book

# H100: $2.00 until 2026-11-01, then $3.00 (a change at a month boundary).
# A100: $1.00 until 2026-10-16T00:00Z, then $1.50 (a change in the middle of October).
BOOK = """
[book]
name = "fixture"
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
effective_to = 2026-11-01T00:00:00Z
source_url = "https://example.com/h100-old"

[[price]]
meter = "gpu_time"
sku = "H100"
region = "us-east-1"
purchase_option = "on_demand"
price = "3.00"
per = "gpu * hour"
effective_from = 2026-11-01T00:00:00Z
source_url = "https://example.com/h100-new"

[[price]]
meter = "gpu_time"
sku = "A100"
region = "us-east-1"
purchase_option = "on_demand"
price = "1.00"
per = "gpu * hour"
effective_from = 2026-01-01T00:00:00Z
effective_to = 2026-10-16T00:00:00Z
source_url = "https://example.com/a100-old"

[[price]]
meter = "gpu_time"
sku = "A100"
region = "us-east-1"
purchase_option = "on_demand"
price = "1.50"
per = "gpu * hour"
effective_from = 2026-10-16T00:00:00Z
source_url = "https://example.com/a100-new"

[[price]]
meter = "input_tokens"
sku = "m1"
price = "1.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/m1"

[[price]]
meter = "cached_input_tokens"
sku = "m1"
price = "0.125"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/m1"

[[price]]
meter = "output_tokens"
sku = "m1"
price = "10"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/m1"

[[price]]
meter = "tool_call"
sku = "search"
price = "10"
per = "1000 * call"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/search"

[[price]]
meter = "egress"
sku = "internet-out"
region = "us-east-1"
price = "0.09"
per = "GB"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/egress"

[[fx]]
from = "EUR"
to = "USD"
rate = "1.08"
effective_from = 2026-01-01T00:00:00Z
"""

# p1: anchors c=8 at 60 tok/s/user -> 480 output tok/s per replica (c x tok/s/user); SLA 50 picks
# c*=8 (c=32 gives only 25). util 0.5 -> 240 tok/s per replica.
# p2: one anchor c=4 at 50 tok/s/user -> 200 tok/s per replica, util 1.
PLAN = """
[plan]
name = "fixture-plan"
currency = "USD"
start = "2026-10"
months = 2

[[pool]]
name = "p1"
device = "H100"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 2
anchors = "1:100,8:60,32:25"
sla = 50
tpm = 57600
util = 0.5
failure_reserve = 1
growth = "0.5"

[[pool]]
name = "p2"
device = "A100"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 1
anchors = "4:50"
sla = 40
tpm = 12000
util = 1

[[tokens]]
provider = "prov"
model = "m1"
input_tokens = "100000000"
cached_share = "0.4"
output_tokens = "10000000"

[[meter]]
meter = "tool_call"
sku = "search"
quantity = "50000"
unit = "call"
growth = "0.1"

[[meter]]
meter = "egress"
sku = "internet-out"
region = "us-east-1"
quantity = "1000"
unit = "GiB"

[[charge]]
name = "on-call"
category = "engineering_ops"
amount = "1000.00"

[[charge]]
name = "licence in euros"
category = "tools"
amount = "500.00"
currency = "EUR"

[scenario.worst]
traffic = "1.5"
output_length = "1.2"
cache_hit_rate = "0.5"
prices = "1.1"
"""


@pytest.fixture
def index() -> PriceIndex:
    book, problems = parse_book(textwrap.dedent(BOOK), "fixture.toml")
    assert not problems, problems
    return PriceIndex([book])


def _plan(text: str = PLAN, **replace: str):
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    plan, problems = parse_plan(text, "plan.toml")
    assert not problems, problems
    return plan


def test_month_bounds_are_calendar_months_in_utc():
    assert [d.isoformat() for d in month_bounds("2026-12")] == ["2026-12-01T00:00:00+00:00",
                                                                "2027-01-01T00:00:00+00:00"]
    with pytest.raises(ValueError):
        month_bounds("2026-13")


def test_each_month_is_priced_with_its_own_price(index):
    b = budget(_plan(), index, scenarios=["base"])
    gpu = {(g.pool, g.month, g.start.day): g for g in b.gpu}
    # p1 October: TPM 57,600 = 960 tok/s; 960 / 240 = 4 serving + 1 failure reserve = 5 replicas = 10 GPUs.
    # 10 GPUs x 744 h (31 days) x $2.00 = 14,880.00
    oct1 = gpu[("p1", "2026-10", 1)]
    assert (oct1.serving, oct1.reserve, oct1.gpus, oct1.hours) == (4, 1, 10, D(744))
    assert oct1.price_per_gpu_hour == D("2.00") and oct1.cost == D("14880.000000")
    # p1 November: growth 50 % -> TPM 86,400 = 1,440 tok/s; 1,440 / 240 = 6 + 1 = 7 replicas = 14 GPUs.
    # The H100 price changed on 2026-11-01: 14 GPUs x 720 h x $3.00 = 30,240.00
    nov1 = gpu[("p1", "2026-11", 1)]
    assert (nov1.serving, nov1.gpus, nov1.hours, nov1.price_per_gpu_hour) == (6, 14, D(720), D("3.00"))
    assert nov1.cost == D("30240.000000")
    # p2 October: 12,000 TPM = 200 tok/s = 1 replica = 1 GPU; the A100 price changed on the 16th:
    # 15 days x 24 = 360 h at $1.00 = 360.00, then 16 days x 24 = 384 h at $1.50 = 576.00
    a, c = gpu[("p2", "2026-10", 1)], gpu[("p2", "2026-10", 16)]
    assert (a.hours, a.price_per_gpu_hour, a.cost) == (D(360), D("1.00"), D("360.000000"))
    assert (c.hours, c.price_per_gpu_hour, c.cost) == (D(384), D("1.50"), D("576.000000"))
    assert {g.status for g in b.gpu} == {"VERDICT"} and b.status == "VERDICT"

    oct_ = b.by_category("base", "2026-10")
    # gpu 14,880 + 360 + 576 = 15,816.00
    assert oct_["gpu"] == D("15816.000000")
    # tokens: uncached 60M x 1.25/1M = 75.00; cached 40M x 0.125/1M = 5.00; output 10M x 10/1M = 100.00
    assert oct_["provider_tokens"] == D("180.000000")
    # tool: 50,000 calls x $10/1000 = 500.00, plus the EUR licence 500 x 1.08 = 540.00
    assert oct_["tool"] == D("1040.000000")
    # egress: 1,000 GiB = 1,073.741824 GB x $0.09 = 96.63676416 -> 96.636764
    assert oct_["egress"] == D("96.636764")
    assert oct_["engineering_ops"] == D("1000.000000")
    assert sum(oct_.values()) == D("18132.636764")
    assert set(oct_) == set(CATEGORIES)
    nov = b.by_category("base", "2026-11")
    # gpu 30,240 + 720 h x $1.50 = 1,080 -> 31,320; tool 55,000 calls = 550 (+10 %) + 540
    assert (nov["gpu"], nov["tool"]) == (D("31320.000000"), D("1090.000000"))
    assert b.total("base") == D("18132.636764") + D("33686.636764")


def test_scenario_multipliers(index):
    b = budget(_plan(), index, scenarios=["worst"])
    gpu = {(g.pool, g.month, g.start.day): g for g in b.gpu}
    # worst: TPM x traffic 1.5 x output length 1.2. p1 October: 103,680 TPM = 1,728 tok/s / 240 = 7.2 ->
    # 8 + 1 = 9 replicas = 18 GPUs x 744 h x $2.00 x prices 1.1 = 29,462.40
    assert gpu[("p1", "2026-10", 1)].gpus == 18
    assert gpu[("p1", "2026-10", 1)].cost == D("29462.400000")
    # p1 November: 155,520 TPM = 2,592 tok/s / 240 = 10.8 -> 11 + 1 = 12 = 24 GPUs x 720 x $3.00 x 1.1 = 57,024.00
    assert gpu[("p1", "2026-11", 1)].cost == D("57024.000000")
    # p2 October: 21,600 TPM = 360 tok/s / 200 -> 2 GPUs: (360 x 1.00 + 384 x 1.50) x 2 x 1.1 = 2,059.20
    assert gpu[("p2", "2026-10", 1)].cost + gpu[("p2", "2026-10", 16)].cost == D("2059.200000")
    oct_ = b.by_category("worst", "2026-10")
    # tokens: input 150M, cached share 0.4 x 0.5 = 0.2 -> 30M cached, 120M uncached; output 10M x 1.5 x 1.2 = 18M
    # (120 x 1.25 + 30 x 0.125 + 18 x 10) x 1.1 = (150 + 3.75 + 180) x 1.1 = 367.125
    assert oct_["provider_tokens"] == D("367.125000")
    # tool: 75,000 calls x $0.01 x 1.1 = 825.00; the fixed EUR licence is not scaled: + 540.00
    assert oct_["tool"] == D("1365.000000")
    # egress: 1,500 GiB = 1,610.612736 GB x 0.09 x 1.1 = 159.450660864 -> 159.450661
    assert oct_["egress"] == D("159.450661")


def test_fixed_hours_split_a_mid_month_price_change_by_time(index):
    b = budget(_plan(**{'months = 2': 'months = 1\nhours_per_month = "730"'}), index, scenarios=["base"])
    p2 = [g for g in b.gpu if g.pool == "p2"]
    # 730 h split 360:384 -> 353.2258064... and 376.7741935...; at 1e-6 the left-over unit goes to the
    # larger remainder: 353.225806 + 376.774194 = 730 exactly.
    assert [g.hours for g in p2] == [D("353.225806"), D("376.774194")]
    # 353.225806 x $1.00 + 376.774194 x $1.50 = 353.225806 + 565.161291 = 918.387097
    assert sum(g.cost for g in p2) == D("918.387097")
    # p1: 10 GPUs x 730 h x $2.00
    assert [g.cost for g in b.gpu if g.pool == "p1"] == [D("14600.000000")]


def test_growth_compounds_and_traffic_resizes_the_pool(index):
    plan = _plan(**{"months = 2": "months = 3"})
    b = budget(plan, index, scenarios=["base"])
    p1 = [g for g in b.gpu if g.pool == "p1"]
    # TPM 57,600 x 1.5^m: 57,600 (4 serving), 86,400 (6), 129,600 = 2,160 tok/s / 240 = 9 serving
    assert [(g.month, g.tpm, g.serving) for g in p1] == [("2026-10", 57600.0, 4), ("2026-11", 86400.0, 6),
                                                          ("2026-12", 129600.0, 9)]
    tools = [v.quantity for v in b.variable if v.item == "tool_call/search"]
    # 50,000 x 1.1^m: 50,000, 55,000, 60,500
    assert tools == [D("50000"), D("55000.000000"), D("60500.000000")]


def test_interpolated_pool_is_a_draft(index):
    plan = _plan(**{'name = "p2"\ndevice = "A100"': 'name = "p2"\ninterpolate = true\ndevice = "A100"'})
    b = budget(plan, index, scenarios=["base"])
    assert b.status == "DRAFT"
    assert {s.pool: s.status for s in b.sizing} == {"p1": "VERDICT", "p2": "DRAFT"}


def test_missing_price_names_meter_sku_region_and_time(index):
    plan = _plan(**{'device = "A100"': 'device = "B200"'})
    with pytest.raises(BudgetError) as e:
        budget(plan, index)
    assert e.value.problems == ["no price in force for meter gpu_time, sku B200, region us-east-1, purchase option "
                                "on_demand at 2026-10-01T00:00:00+00:00"]


def test_unsizeable_pool_names_pool_month_and_scenario(index):
    plan = _plan(**{"sla = 40": "sla = 80"})
    with pytest.raises(BudgetError) as e:
        budget(plan, index, scenarios=["base"])
    # p2 does not grow: November's TPM is October's and its failure is said once
    assert e.value.problems == ["pool p2, 2026-10, scenario base (TPM 12,000): anchors 4:50: SLA 80 tok/s/user is "
                                "above the best measured point, c=4: 50 tok/s/user (anchor 1); no concurrency meets it"]


def test_unknown_scenario_is_refused(index):
    with pytest.raises(BudgetError, match="scenario 'best' is not in the plan"):
        budget(_plan(), index, scenarios=["best"])


def test_scenarios_default_to_the_plans_with_base_first_among_them(index):
    plan = _plan()
    assert [s.name for s in plan.scenarios] == ["base", "worst"]
    base = plan.scenario("base")
    assert (base.traffic, base.output_length, base.cache_hit_rate, base.prices) == (1, 1, 1, 1)


def test_an_invalid_plan_fails_with_one_line_per_problem():
    text = """
[plan]
name = "bad plan"
currency = "XYZ"
start = "2026-10"
months = 0
colour = "blue"

[[pool]]
name = "p1"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 0
anchors = "1:100"
sla = 50
tpm = 1000.5
util = "1.5"

[[tokens]]
provider = "prov"
model = "m1"
input_tokens = "100"
cached_share = "0.8"

[[charge]]
name = "x"
category = "gpus"
amount = 12.5

[scenario.worst]
cache_hit_rate = "1.5"
"""
    plan, problems = parse_plan(text, "plan.toml")
    assert plan is None
    assert problems == [
        "plan.toml: [plan]: unknown field 'colour' (known: currency, description, hours_per_month, months, name, "
        "pricebooks, start)",
        "plan.toml: [plan]: name 'bad plan': use letters, digits, '_', '.', '-' (starting with a letter or digit)",
        "plan.toml: [plan]: currency 'XYZ' is not an ISO 4217 code",
        "plan.toml: [plan]: months 0 must be a whole number >= 1",
        "plan.toml: pool[1] p1: missing required field 'device'",
        "plan.toml: pool[1] p1: gpus_per_replica 0 must be a whole number >= 1",
        "plan.toml: pool[1] p1: tpm 1000.5 is a TOML float; write it as a string (\"1000.5\") so it stays exact",
        "plan.toml: pool[1] p1: util 1.5 must be in (0, 1]",
        "plan.toml: charge[1] x: category 'gpus': expected one of gpu, provider_tokens, tool, egress, observability, "
        "storage, evaluation, engineering_ops, network, other (or tools)",
        "plan.toml: charge[1] x: amount 12.5 is a TOML float; write it as a string (\"12.5\") so it stays exact",
        "plan.toml: [scenario.worst]: cache_hit_rate 1.5 makes the cached share of tokens[1] m1 1.20, above 1",
    ]


def test_not_toml_and_missing_plan_table():
    assert parse_plan("[plan", "p.toml")[1][0].startswith("p.toml: not valid TOML: ")
    assert parse_plan("[[pool]]\nname = 'x'\n", "p.toml")[1] == [
        "p.toml: missing [plan] table (name, currency, start, months)"]


def test_curve_file_relative_to_the_plan(tmp_path, index):
    (tmp_path / "curves").mkdir()
    (tmp_path / "curves" / "c.csv").write_text("concurrency,tok_s_user,output_tok_s\n4,50,210\n16,30,480\n")
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN.replace('anchors = "4:50"', 'curve = "curves/c.csv"'))
    plan = load_plan(plan_file)
    b = budget(plan, index, scenarios=["base"])
    # SLA 40 -> c*=4 with a measured 210 tok/s: 12,000 TPM = 200 tok/s -> 1 replica
    assert {g.gpus for g in b.gpu if g.pool == "p2"} == {1}
    plan_file.write_text(PLAN.replace('anchors = "4:50"', 'curve = "curves/missing.csv"'))
    with pytest.raises(BudgetError) as e:
        load_plan(plan_file)
    assert e.value.problems == ["plan.toml: pool[2] p2: curve file 'curves/missing.csv' not found "
                                "(paths are relative to the plan's folder)"]


def test_example_plan_is_valid_and_budgets_with_the_shipped_books():
    from pathlib import Path

    from ledger.pricebook import load_books

    root = Path(__file__).resolve().parent.parent
    books, problems = load_books([root / "pricebooks"])
    assert not problems
    plan = load_plan(root / "examples" / "plan.toml")
    b = budget(plan, PriceIndex(books))
    assert [s.name for s in b.scenarios] == ["best", "base", "worst"]
    assert len(plan.months) == 12 and b.status == "VERDICT"
    # h100-chat in October, base: 6,000 TPM = 100 tok/s; the measured point serves 413.89 tok/s x 0.6 util
    # = 248.33 -> 1 replica + 1 failure reserve = 2 GPUs x 744 h x $6.88 (AWS on-demand) = 10,237.44
    first = next(g for g in b.gpu if g.scenario == "base" and g.pool == "h100-chat" and g.month == "2026-10")
    assert (first.gpus, first.cost) == (2, D("10237.440000"))
    # worst costs more than base, base more than best, every month
    assert all(b.total("worst", m) > b.total("base", m) > b.total("best", m) for m in plan.months)


def test_an_fx_change_splits_only_the_months_it_touches():
    book, problems = parse_book(textwrap.dedent("""
        [book]
        name = "eu"
        version = "2026-09-01"
        currency = "EUR"
        source = "test"
        retrieved_at = 2026-09-01

        [[price]]
        meter = "gpu_time"
        sku = "L4"
        region = "eu-west-1"
        purchase_option = "on_demand"
        price = "1.00"
        per = "gpu * hour"
        effective_from = 2026-01-01T00:00:00Z
        source_url = "https://example.com/l4"

        [[price]]
        meter = "gpu_time"
        sku = "H100"
        region = "us-east-1"
        purchase_option = "on_demand"
        price = "2.00"
        currency = "USD"
        per = "gpu * hour"
        effective_from = 2026-01-01T00:00:00Z
        source_url = "https://example.com/h100"

        [[fx]]
        from = "EUR"
        to = "USD"
        rate = "1.08"
        effective_from = 2026-01-01T00:00:00Z
        effective_to = 2026-10-11T00:00:00Z

        [[fx]]
        from = "EUR"
        to = "USD"
        rate = "1.10"
        effective_from = 2026-10-11T00:00:00Z
    """), "eu.toml")
    assert not problems, problems
    plan = _plan(textwrap.dedent("""
        [plan]
        name = "fx"
        currency = "USD"
        start = "2026-10"
        months = 1

        [[pool]]
        name = "eu"
        device = "L4"
        region = "eu-west-1"
        purchase_option = "on_demand"
        gpus_per_replica = 1
        anchors = "4:50"
        sla = 40
        tpm = 12000
        util = 1

        [[pool]]
        name = "us"
        device = "H100"
        region = "us-east-1"
        purchase_option = "on_demand"
        gpus_per_replica = 1
        anchors = "4:50"
        sla = 40
        tpm = 12000
        util = 1
    """))
    b = budget(plan, PriceIndex([book]))
    eu = [(g.hours, g.fx, g.cost) for g in b.gpu if g.pool == "eu"]
    # 10 days = 240 h x EUR 1.00 x 1.08 = 259.20, then 21 days = 504 h x EUR 1.00 x 1.10 = 554.40
    assert eu == [(D(240), D("1.08"), D("259.200000")), (D(504), D("1.10"), D("554.400000"))]
    # a USD price does not move with the EUR rate: one row, 744 h x $2.00
    assert [(g.hours, g.fx, g.cost) for g in b.gpu if g.pool == "us"] == [(D(744), D(1), D("1488.000000"))]
