"""SLA tiers, worked by hand: each tier's share of the traffic sized SLA-first on the same curve, the
reserves of the pool, the sum; `ledger size --tier`; a plan pool with [[pool.tier]] priced by month."""
from __future__ import annotations

import json
import textwrap
from datetime import datetime, timezone
from decimal import Decimal as D

import pytest
import typer
from typer.testing import CliRunner

from ledger.budget import budget, parse_plan
from ledger.pricebook import PriceIndex, parse_book
from ledger.sizing import Reserves, SizingError, load_curve, make_curve, CurveContext, CurvePoint
from ledger.sizing.cli import register
from ledger.sizing.tiers import PoolRequest, Tier, parse_tier, priced_parts, size_parts, tier_problems
from test_sizing_disagg import BOOK  # the one H100 on-demand book of the sizing tests

ANCHORS = "1:215.5,10:122.2,256:41.8"
TIERS = (Tier("interactive", D("0.3"), 100), Tier("batch", D("0.7"), 20))

runner = CliRunner()
app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    """A bare app with `size` registered."""


register(app)


class _Price:
    """A price book entry: 0.002 per GPU-second = 7.2 per GPU-hour."""

    price, per, currency, book, version, source_url = D("0.002"), "gpu * second", "USD", "hand", "1", "https://x"


def test_a_tier_spec_reads_name_share_sla_and_ttft():
    assert parse_tier("interactive:0.3:100:500") == Tier("interactive", D("0.3"), 100.0, 500.0)
    assert parse_tier("batch:0.7:20") == Tier("batch", D("0.7"), 20.0, None)
    with pytest.raises(SizingError, match="NAME:SHARE:SLA"):
        parse_tier("batch:0.7")
    with pytest.raises(SizingError) as e:
        parse_tier("batch:seventy:fast")
    assert len(e.value.problems) == 2  # the share and the SLA, one line each


def test_tier_problems_one_line_each():
    assert tier_problems(TIERS) == []
    probs = tier_problems((Tier("a", D("0.3"), 100), Tier("a", D("0.6"), 0), Tier("b c", D("0.1"), 20, -5)))
    assert "tier a is given twice" in probs
    assert "tier a: SLA 0 must be > 0 tok/s/user" in probs
    assert "tier 'b c': a name uses letters, digits, '_', '.', '-'" in probs
    assert "tier b c: TTFT limit -5 must be > 0 ms" in probs
    # shares add up exactly: 0.3 + 0.6 + 0.1 = 1.0, no float 0.9999999
    assert not any("add up" in p for p in probs)
    assert tier_problems((Tier("a", D("0.3"), 100), Tier("b", D("0.6"), 20))) == [
        "the tiers' shares add up to 0.9, not 1: a 0.3 + b 0.6"]


def test_the_tiered_worked_example():
    req = PoolRequest(tpm=3_000_000, tiers=TIERS, gpus_per_replica=4, util=0.7, reserves=Reserves(failure=1, canary=1))
    res = size_parts(load_curve(ANCHORS, "anchors"), req)
    inter, batch = res.parts
    # interactive: 0.3 x 3,000,000 = 900,000 TPM = 15,000 tok/s; SLA 100 -> c* 10, 1,222 tok/s;
    # 15,000 / (1,222 x 0.7 = 855.4) = 17.54 -> 18 replicas = 72 GPUs
    assert (inter.tpm, inter.rate_tok_s, inter.c_star, inter.replica_tok_s) == (900000.0, 15000.0, 10, 1222)
    assert (inter.replicas, inter.gpus) == (18, 72)
    # batch: 2,100,000 TPM = 35,000 tok/s; SLA 20 -> c* 256, 10,700.8 tok/s; 35,000 / 7,490.56 = 4.67 -> 5 = 20 GPUs
    assert (batch.tpm, batch.c_star, batch.replicas, batch.gpus) == (2100000.0, 256, 5, 20)
    assert [(r.kind, r.replicas, r.gpus) for r in res.reserves] == [("failure", 1, 4), ("canary", 1, 4)]
    assert (res.replicas(), res.gpus) == (25, 100)  # 18 + 5 + 2, against 59 + 2 replicas all at SLA 100
    priced = priced_parts(res, _Price, device="H100", region="r", purchase_option="on_demand",
                          at=datetime(2026, 11, 1, tzinfo=timezone.utc), hours_per_month=D("730"))
    # 7.2 x 730 = 5,256 per GPU-month: 72 -> 378,432; 20 -> 105,120; 4 -> 21,024 each reserve
    assert [p.monthly_cost for p in priced.parts] == [D("378432.000000"), D("105120.000000")]
    assert [r.monthly_cost for r in priced.reserves] == [D("21024.000000"), D("21024.000000")]
    assert priced.monthly_cost == D("525600.000000") == 100 * D("5256")


def test_a_tier_ttft_limit_moves_only_its_own_c_star():
    ctx = CurveContext(source="hand", isl=1000, osl=200)
    curve = make_curve([CurvePoint(1, 100, None, 50), CurvePoint(8, 60, None, 150), CurvePoint(32, 30, None, 800)],
                       ctx)
    tiers = (Tier("chat", D("0.5"), 25, 200), Tier("bulk", D("0.5"), 25))
    res = size_parts(curve, PoolRequest(tpm=60000, tiers=tiers, gpus_per_replica=1, util=0.5))
    chat, bulk = res.parts
    # chat: TTFT <= 200 ms stops at c* 8 (32 has 800 ms): 480 tok/s; 500 tok/s / 240 = 2.08 -> 3
    assert (chat.c_star, chat.limited_by, chat.replicas, chat.ttft_limit_ms) == (8, "ttft", 3, 200)
    # bulk has no TTFT limit: c* 32, 960 tok/s; 500 / 480 = 1.04 -> 2
    assert (bulk.c_star, bulk.limited_by, bulk.replicas) == (32, "curve_end", 2)
    # the chat tier's queue budget: (200 - 150) / 1000 x 480 / 200 = 0.12 -> 1 waiting request
    assert chat.ops.queue_scale_out == 1 and chat.ops.admission_limit == 8


def test_tiers_share_the_warm_reserve_by_traffic_share():
    req = PoolRequest(tpm=3_000_000, tiers=TIERS, gpus_per_replica=4, util=0.7, rise_tpm=120000.0,
                      time_to_ready_min=10)
    res = size_parts(load_curve(ANCHORS, "anchors"), req)
    (warm,) = res.reserves
    # interactive: 0.3 x 2,000 = 600 tok/s / 855.4 = 0.70 -> 1; batch: 1,400 / 7,490.56 = 0.19 -> 1
    assert (warm.kind, warm.replicas, warm.gpus) == ("warm", 2, 8)
    assert warm.reason.startswith("interactive: largest rise over 10 min +120,000 output TPM x share 0.3")


def test_size_tier_cli_table_and_json():
    args = ["size", "--tpm", "3000000", "--tier", "interactive:0.3:100", "--tier", "batch:0.7:20", "--anchors",
            ANCHORS, "--gpus-per-replica", "4", "--failure-reserve", "1", "--canary", "1"]
    out = runner.invoke(app, args, env={"COLUMNS": "200"}).stdout
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    assert [(c[0], c[1], c[8], c[9]) for c in cells] == [
        ("interactive", "30.0%", "18", "72"), ("batch", "70.0%", "5", "20"), ("failure reserve", "", "1", "4"),
        ("canary reserve", "", "1", "4"), ("sum", "100.0%", "25", "100")]
    assert "tiers: interactive 30 % at 100 tok/s/user; batch 70 % at 20 tok/s/user" in out
    doc = json.loads(runner.invoke(app, args + ["--json"]).stdout)
    assert doc["mode"] == "tiers" and doc["xpyd"] is None
    assert [(p["tier"], p["share"], p["replicas"]) for p in doc["parts"]] == [("interactive", "0.3", 18),
                                                                              ("batch", "0.7", 5)]
    assert doc["totals"] == {"by_role": {"serving": {"serving": 23, "reserve": 2, "replicas": 25}}, "replicas": 25,
                             "gpus": 100, "monthly_cost": None}


@pytest.mark.parametrize("extra, message", [
    (["--tier", "a:0.5:100", "--tier", "b:0.4:20"], "the tiers' shares add up to 0.9, not 1: a 0.5 + b 0.4"),
    (["--tier", "a:1:100", "--sla", "50"], "--sla and --tier: each tier carries its own SLA"),
    (["--tier", "a:1:100", "--compare-curve", "x.csv"], "--compare-curve compares plain sizings"),
    ([], "give the SLA: --sla 20,50,100, or tiers with --tier"),
])
def test_bad_tier_options_fail_one_line_each(extra, message):
    r = runner.invoke(app, ["size", "--tpm", "3000000", "--anchors", ANCHORS, "--gpus-per-replica", "4", *extra])
    assert r.exit_code == 1 and message in r.stderr
    assert not r.stdout



PLAN = textwrap.dedent("""
    [plan]
    name = "tiers"
    currency = "USD"
    start = "2026-10"
    months = 2

    [[pool]]
    name = "chat"
    device = "H100"
    region = "us-east-1"
    purchase_option = "on_demand"
    gpus_per_replica = 1
    anchors = "1:100,8:60,32:25"
    tpm = 60000
    growth = "1"
    failure_reserve = 1

    [[pool.tier]]
    name = "fast"
    share = "0.25"
    sla = 60

    [[pool.tier]]
    name = "slow"
    share = "0.75"
    sla = 25
""")


def _budget(text: str):
    plan, problems = parse_plan(text, "plan.toml")
    assert not problems, problems
    book, book_problems = parse_book(BOOK, "fixture.toml")
    assert not book_problems
    return budget(plan, PriceIndex([book]))


def test_a_tiered_plan_pool_prices_every_tier_and_the_reserve():
    b = _budget(PLAN)
    rows = {(g.month, g.part): g for g in b.gpu}
    # October: 60,000 TPM = 1,000 tok/s. fast: 250 tok/s at c* 8 (480 tok/s, x 0.7 = 336) -> 1 replica;
    # slow: 750 tok/s at c* 32 (800 tok/s, x 0.7 = 560) -> 2 replicas; reserve 1. 744 h x $2 = $1,488 a GPU.
    assert [(p, rows[("2026-10", p)].serving, rows[("2026-10", p)].reserve, rows[("2026-10", p)].cost)
            for p in ("fast", "slow", "reserve")] == [("fast", 1, 0, D("1488.000000")),
                                                     ("slow", 2, 0, D("2976.000000")),
                                                     ("reserve", 0, 1, D("1488.000000"))]
    assert rows[("2026-10", "fast")].tpm == 15000.0 and rows[("2026-10", "slow")].tpm == 45000.0
    # November, growth 100 %: 2,000 tok/s. fast 500 / 336 = 1.49 -> 2; slow 1,500 / 560 = 2.68 -> 3; 720 h
    assert [rows[("2026-11", p)].gpus for p in ("fast", "slow", "reserve")] == [2, 3, 1]
    assert b.total("base", "2026-11") == 6 * 720 * D(2) == D("8640")
    assert b.total("base", "2026-10") == D("5952.000000")  # 4 GPUs x 744 h x $2, the parts add up exactly
    assert b.sizing[0].mode == "tiers"


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('share = "0.75"', 'share = "0.7"'),
     "plan.toml: pool[1] chat: the tiers' shares add up to 0.95, not 1: fast 0.25 + slow 0.7"),
    (lambda t: t.replace("tpm = 60000", "tpm = 60000\nsla = 50"),
     "plan.toml: pool[1] chat: give sla or [[pool.tier]] tables, not both"),
    (lambda t: t.replace("sla = 25", "sla = 25\nttft = 3"),
     "plan.toml: pool[1] chat: tier[2] slow: unknown field 'ttft'"),
    (lambda t: t.replace('share = "0.25"', "share = 0.25"),
     "plan.toml: pool[1] chat: tier[1] fast: share 0.25 is a TOML float"),
])
def test_bad_plan_tiers_fail_one_line_each(edit, message):
    plan, problems = parse_plan(edit(PLAN), "plan.toml")
    assert plan is None
    assert any(p.startswith(message) for p in problems), problems
