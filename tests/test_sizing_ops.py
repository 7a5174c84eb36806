"""What a sizing emits for operations, worked by hand: the admission limit, the scale-out thresholds on
waiting requests and on KV-cache usage, the headroom, the warm reserve from a rise, in the text, the
JSON and the budget workbook."""
from __future__ import annotations

import io
import json
import textwrap
from decimal import Decimal as D
from pathlib import Path
from types import SimpleNamespace

import openpyxl
import pytest
import typer
from typer.testing import CliRunner

from ledger.budget import budget, parse_plan
from ledger.export.budget_xlsx import budget_as_xlsx
from ledger.pricebook import PriceIndex, parse_book
from ledger.sizing import Reserves, SizingError, SizingRequest, load_curve, size
from ledger.sizing.cli import register
from ledger.sizing.ops import admission_limit, queue_threshold, replica_ops, warm_replicas
from test_sizing_disagg import BOOK  # the one H100 on-demand book of the sizing tests

PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "data" / "curves" / "published_curves.csv"
ANCHORS = "1:215.5,10:122.2,256:41.8"

runner = CliRunner()
app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    """A bare app with `size` registered."""


register(app)


def test_the_admission_limit_is_the_whole_requests_at_or_below_c_star():
    assert admission_limit(64.0) == 64
    assert admission_limit(7.88) == 7  # Little's law gives fractional c*
    assert admission_limit(183.9) == 183  # an interpolated c*
    assert admission_limit(0.5) == 1  # a replica admits at least one request
    assert admission_limit(2.9999999999999996) == 3  # float noise never drops a request


def test_the_queue_threshold_is_what_still_meets_the_ttft_limit():
    # vultr Nemotron at SLA 140: c* = 64, 8,120 output tok/s, TTFT 324 ms there, OSL 512, limit 600 ms:
    # 8,120 / 512 = 15.859375 requests complete a second; (600 - 324) / 1000 x 15.859375 = 4.377 -> 4
    q, why = queue_threshold(ttft_limit_ms=600, ttft_ms=324, capacity_tok_s=8120, tokens_per_request=512)
    assert q == 4 and "4.38 waiting -> 4" in why
    # at SLA 100: c* = 128, 11,556 tok/s, TTFT 520 ms: 0.08 x 22.57 = 1.81 -> 1
    assert queue_threshold(ttft_limit_ms=600, ttft_ms=520, capacity_tok_s=11556, tokens_per_request=512)[0] == 1
    # no TTFT limit: no time to wait at all
    q, why = queue_threshold(ttft_limit_ms=None, ttft_ms=324, capacity_tok_s=8120, tokens_per_request=512)
    assert q == 1 and "no TTFT limit" in why
    # the operating point already breaks the limit: still 1, never 0 or negative
    assert queue_threshold(ttft_limit_ms=300, ttft_ms=324, capacity_tok_s=8120, tokens_per_request=512)[0] == 1


def test_kv_thresholds_from_a_dense_and_a_hybrid_memory_fit():
    dense = SimpleNamespace(tokens_per_sequence=2048, tokens_fit=420921, num_blocks=None, blocks_per_sequence=None)
    o = replica_ops(c_star=64, capacity_tok_s=3200, util=0.7, rate_tok_s=10000, replicas=4, ttft_limit_ms=None,
                    ttft_ms=None, tokens_per_request=250, memory=dense)
    # planned load: 0.7 x 64 sequences x 2,048 tokens / 420,921 tokens = 91,750.4 / 420,921
    assert o.kv_scale_out == pytest.approx(0.7 * 64 * 2048 / 420921, rel=1e-12)
    assert round(o.kv_scale_out, 6) == 0.217975
    # at the admission limit: 64 x 2,048 = 131,072 tokens of 420,921
    assert o.kv_at_admission == pytest.approx(131072 / 420921, rel=1e-12)
    assert round(o.kv_at_admission, 6) == 0.311393
    # the hybrid reference: 5 blocks per sequence of 208; c* 10 at util 0.5 -> 25 / 208
    hybrid = SimpleNamespace(tokens_per_sequence=2048, tokens_fit=302921, num_blocks=208, blocks_per_sequence=5)
    o = replica_ops(c_star=10, capacity_tok_s=500, util=0.5, rate_tok_s=600, replicas=3, ttft_limit_ms=None,
                    ttft_ms=None, tokens_per_request=512, memory=hybrid)
    assert o.kv_scale_out == pytest.approx(25 / 208, rel=1e-12) and o.kv_at_admission == pytest.approx(50 / 208)
    # no memory fit: the KV figures are unknown, and say why
    o = replica_ops(c_star=10, capacity_tok_s=500, util=0.5, rate_tok_s=600, replicas=3, ttft_limit_ms=None,
                    ttft_ms=None, tokens_per_request=512)
    assert o.kv_scale_out is None and "no memory fit" in o.kv_basis


def test_headroom_and_load_per_replica():
    # SLA 100 of the reference example: 1,222 tok/s per replica, util 0.7, 50,000 tok/s on 59 replicas
    o = replica_ops(c_star=10, capacity_tok_s=1222, util=0.7, rate_tok_s=50000, replicas=59, ttft_limit_ms=None,
                    ttft_ms=None, tokens_per_request=None)
    assert o.admission_limit == 10
    assert o.headroom_tok_s == pytest.approx(366.6)  # (1 - 0.7) x 1,222
    assert o.load_tok_s == pytest.approx(50000 / 59)  # 847.46 tok/s per replica as sized
    assert o.utilisation_as_sized == pytest.approx(50000 / 59 / 1222)  # 69.35 %, under the planned 70 %
    assert o.utilisation_as_sized <= 0.7


def test_the_warm_reserve_carries_the_largest_rise():
    # +120,000 TPM over 10 minutes = 2,000 tok/s; one replica carries 1,222 x 0.7 = 855.4: 2.34 -> 3
    n, why = warm_replicas(rise_tpm=120000, minutes=10, capacity_tok_s=1222, util=0.7)
    assert n == 3 and "2,000.0 output tok/s" in why and "2.34 -> 3" in why
    # exactly two replicas' worth never becomes three through float noise: 2 x 855.4 x 60 = 102,648 TPM
    assert warm_replicas(rise_tpm=102648, minutes=10, capacity_tok_s=1222, util=0.7)[0] == 2
    # prefill: an output rise x ISL/OSL (2,000 / 250 = 8) = 16,000 input tok/s over 60,000 x 0.8 = 48,000
    n, why = warm_replicas(rise_tpm=120000, minutes=10, capacity_tok_s=60000, util=0.8, input_per_output=8.0,
                           what="input")
    assert n == 1 and "16,000.0 input tok/s" in why
    # a tier's share of the rise: 0.3 x 120,000 = 36,000 TPM = 600 tok/s over 855.4 -> 1
    assert warm_replicas(rise_tpm=120000, minutes=10, capacity_tok_s=1222, util=0.7, share=0.3)[0] == 1
    assert warm_replicas(rise_tpm=0, minutes=10, capacity_tok_s=1222, util=0.7)[0] == 0


def test_each_sla_row_gets_the_warm_reserve_its_own_throughput_needs():
    req = SizingRequest(tpm=3_000_000, slas=(20, 100), gpus_per_replica=4, util=0.7, reserves=Reserves(failure=1),
                        rise_tpm=120000, time_to_ready_min=10)
    rows = {r.sla_tok_s_user: r for r in size(load_curve(ANCHORS, "anchors"), req).rows}
    # SLA 20: 2,000 / (10,700.8 x 0.7 = 7,490.56) = 0.27 -> 1 warm; 7 serving + 1 failure + 1 warm
    assert (rows[20].reserves.warm, rows[20].replicas_serving, rows[20].replicas, rows[20].gpus) == (1, 7, 9, 36)
    # SLA 100: 2,000 / 855.4 = 2.34 -> 3 warm; 59 + 1 + 3 = 63 replicas
    assert (rows[100].reserves.warm, rows[100].replicas, rows[100].gpus) == (3, 63, 252)
    assert "2.34 -> 3" in rows[100].warm_reason


def test_a_warm_count_and_a_rise_together_are_refused():
    req = SizingRequest(tpm=3_000_000, slas=(20,), gpus_per_replica=4, reserves=Reserves(warm=2), rise_tpm=1000.0)
    with pytest.raises(SizingError, match="not both"):
        size(load_curve(ANCHORS, "anchors"), req)
    r = runner.invoke(app, ["size", "--tpm", "3000000", "--sla", "20", "--anchors", ANCHORS, "--gpus-per-replica",
                            "4", "--warm", "2", "--time-to-ready-min", "10"])
    assert r.exit_code == 1
    assert "read the traffic: also give --workload" in r.stderr and "not both" in r.stderr


def test_size_json_and_text_carry_the_ops_of_a_real_curve():
    args = ["size", "--tpm", "3000000", "--sla", "100,140", "--curve", str(PUBLISHED), "--curve-select", "vultr",
            "--gpus-per-replica", "2", "--repair", "--ttft-ms", "600", "--failure-reserve", "1"]
    doc = json.loads(runner.invoke(app, args + ["--json"]).stdout)
    r140 = next(r for r in doc["rows"] if r["sla_tok_s_user"] == 140)
    assert r140["ttft_ms"] == 324
    assert r140["ops"]["admission_limit"] == 64 and r140["ops"]["queue_scale_out"] == 4
    assert r140["ops"]["headroom_tok_s"] == pytest.approx(2436.0)  # 0.3 x 8,120
    assert r140["ops"]["load_tok_s"] == pytest.approx(50000 / 9)  # 9 serving replicas
    assert r140["reserves"] == {"failure": 1, "canary": 0, "warm": 0, "warm_reason": None}
    out = runner.invoke(app, args, env={"COLUMNS": "200"}).stdout
    assert "per replica, for operations" in out
    assert "SLA 140: scale out at waiting: (TTFT limit 600 ms - 324 ms at the operating point)" in out
    assert "reserves at SLA 140: failure 1, canary 0, warm 0" in out



PLAN = textwrap.dedent("""
    [plan]
    name = "ops"
    currency = "USD"
    start = "2026-10"
    months = 1

    [[pool]]
    name = "chat"
    device = "H100"
    region = "us-east-1"
    purchase_option = "on_demand"
    gpus_per_replica = 1
    sla = 60
    tpm = 60000
    failure_reserve = 1
    ttft_ms = 500
    isl = 1000
    osl = 200
    [pool.curve]
    source = "hand-made"
    isl = 1000
    osl = 200
    points = [{ concurrency = 1, tok_s_user = 100, ttft_ms = 100 },
              { concurrency = 8, tok_s_user = 60, ttft_ms = 200 },
              { concurrency = 32, tok_s_user = 25, ttft_ms = 900 }]
""")


def test_the_budget_workbook_shows_the_ops_per_replica():
    plan, problems = parse_plan(PLAN, "plan.toml")
    assert not problems
    book, book_problems = parse_book(BOOK, "fixture.toml")
    assert not book_problems
    b = budget(plan, PriceIndex([book]))
    (g,) = b.gpu
    # c* = 8 (60 tok/s/user), derived 480 tok/s; 60,000 TPM = 1,000 tok/s / (480 x 0.7 = 336) = 2.98 -> 3 + 1
    assert (g.serving, g.reserve, g.gpus, g.cost) == (3, 1, 4, D("5952.000000"))  # 4 x 744 h x $2
    # waiting: (500 - 200) / 1000 x 480 / 200 = 0.72 -> 1; headroom 0.3 x 480 = 144
    assert (g.admission_limit, g.queue_scale_out, g.kv_scale_out) == (8, 1, None)
    assert g.headroom_tok_s == pytest.approx(144.0) and g.replica_tok_s == 480
    ws = openpyxl.load_workbook(io.BytesIO(budget_as_xlsx(b)))["Plan"]
    head = [c.value for c in ws[1]]
    row = [c.value for c in ws[2]]
    assert row[head.index("admission limit (requests in flight)")] == 8
    assert row[head.index("scale out at waiting requests")] == 1
    assert row[head.index("scale out at KV-cache usage")] is None
    assert row[head.index("headroom tok/s at util")] == pytest.approx(144.0)
    assert row[head.index("part")] is None or row[head.index("part")] == ""
    prov = [c.value for c in openpyxl.load_workbook(io.BytesIO(budget_as_xlsx(b)))["Provenance"]["A"]]
    assert "operations columns (Plan sheet, per replica)" in prov
