"""Disaggregated prefill/decode, worked by hand: prefill curves read from load-tester runs and CSV,
prefill replicas from the input token rate at the TTFT limit, decode replicas SLA-first, both priced,
the xPyD ratio; `ledger size --prefill-curve`; a plan pool with a prefill curve priced by month."""
from __future__ import annotations

import json
import shutil
import textwrap
from datetime import datetime, timezone
from decimal import Decimal as D
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ledger.budget import budget, load_plan, parse_plan
from ledger.pricebook import PriceIndex, parse_book
from ledger.sizing import Reserves, SizingError, load_curve
from ledger.hints import say_one
from ledger.sizing.cli import NAMES as SIZE_NAMES
from ledger.sizing.cli import register
from ledger.sizing.disagg import (load_prefill_curve, parse_prefill_curves, prefill_point, validate_prefill,
                                  xpyd)
from ledger.sizing.tiers import PoolRequest, Tier, priced_parts, size_parts

SAMPLE = Path(__file__).parent / "data" / "prefill" / "sglang_bench_serving_prefill_sweep.jsonl"
SGLANG = Path(__file__).resolve().parents[2] / "shared" / "data" / "loadtest" / \
    "sglang_bench_serving_llama33_70b_h200_online.jsonl"
DECODE = "1:120,16:80,64:50,128:30"

runner = CliRunner()
app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    """A bare app with `size` registered."""


register(app)


class _Price:
    """0.002 per GPU-second = 7.2 per GPU-hour; x 730 h = 5,256 per GPU-month."""

    price, per, currency, book, version, source_url = D("0.002"), "gpu * second", "USD", "hand", "1", "https://x"


def test_the_sample_prefill_sweep_reads_input_tok_s_against_ttft():
    c = load_prefill_curve(SAMPLE)
    # 2,000,000 input tokens in 100 s = 20,000 tok/s at request rate 10; the rest likewise
    assert [(p.input_tok_s, p.ttft_ms) for p in c.points] == [(20000.0, 150.0), (40000.0, 250.0), (60000.0, 380.0),
                                                             (80000.0, 700.0)]
    assert c.context.isl == 2000 and c.context.format == "sglang"
    assert c.context.metrics == "prefill: input tok/s = total_input_tokens / duration; TTFT = median_ttft_ms"
    assert c.points[0].label.endswith(":1 (request_rate=10.0)")


def test_a_real_sglang_file_reads_as_prefill_points():
    c = load_prefill_curve(SGLANG, select="random")
    # rate 1: 152,612 input tokens over 298.3676 s = 511.49 tok/s, median TTFT 85.75 ms
    first = c.points[0]
    assert first.input_tok_s == pytest.approx(152612 / 298.3675805060193)
    assert round(first.input_tok_s, 2) == 511.49 and round(first.ttft_ms, 2) == 85.75
    assert len(c.points) == 5 and c.context.isl == pytest.approx((152612 + 308748 + 615860 + 1222995 + 1629242)
                                                                 / (300 + 600 + 1200 + 2400 + 3200))


def test_vllm_input_throughput_comes_first(tmp_path):
    f = tmp_path / "vllm.json"
    f.write_text(json.dumps({"backend": "vllm", "model_id": "m", "request_rate": 4.0, "completed": 10,
                             "total_input_tokens": 1000, "duration": 2.0, "input_throughput": 480.0,
                             "mean_ttft_ms": 90.0, "median_ttft_ms": 80.0, "output_throughput": 10.0,
                             "mean_tpot_ms": 5.0}))
    (p,) = load_prefill_curve(f).points
    assert (p.input_tok_s, p.ttft_ms) == (480.0, 90.0)  # input_throughput and the mean TTFT


def test_prefill_csv_and_its_errors(tmp_path):
    text = "input_tok_s,ttft_ms,load,model,gpus,isl\n20000,150,rate 10,m,2,2000\n40000,250,rate 20,m,2,2000\n"
    (c,) = parse_prefill_curves(text, source="p.csv")
    assert c.context.gpus_per_replica == 2 and c.context.isl == 2000 and c.points[1].load == "rate 20"
    with pytest.raises(SizingError) as e:
        parse_prefill_curves("input_tok_s,ttft,concurrency\n1,2,3\n", source="bad.csv")
    assert e.value.problems[0].startswith("bad.csv:1: unknown column 'ttft'")
    assert "bad.csv:1: no 'ttft_ms' column" in e.value.problems
    with pytest.raises(SizingError) as e:
        parse_prefill_curves("input_tok_s,ttft_ms\n20000,150\nfast,250\n", source="p.csv")
    assert list(e.value.problems) == ["p.csv:3: input_tok_s 'fast' is not a number"]


def test_ttft_falling_with_load_fails_and_repair_drops_the_slower_point():
    (c,) = parse_prefill_curves("input_tok_s,ttft_ms\n20000,300\n40000,250\n60000,380\n", source="p.csv")
    with pytest.raises(SizingError, match="TTFT falls as the load rises: 20,000 input tok/s at TTFT 300 ms"):
        validate_prefill(c)
    fixed, notes = validate_prefill(c, repair=True)
    assert [p.input_tok_s for p in fixed.points] == [40000, 60000] and len(notes) == 1
    assert "the repair dropped 20,000 input tok/s at TTFT 300 ms" in notes[0]
    assert "--repair dropped 20,000 input tok/s at TTFT 300 ms" in say_one(notes[0], SIZE_NAMES)  # `ledger size`


def test_the_prefill_operating_point_at_a_ttft_limit():
    c = load_prefill_curve(SAMPLE)
    op = prefill_point(c, 400)
    assert (op.input_tok_s, op.ttft_ms, op.measured, op.limited_by) == (60000, 380, True, "ttft")
    # DRAFT: between 60,000 at 380 ms and 80,000 at 700 ms: 60,000 + 20 / 320 x 20,000 = 61,250
    op = prefill_point(c, 400, interpolate=True)
    assert (op.input_tok_s, op.ttft_ms, op.measured) == (61250.0, 400, False)
    assert prefill_point(c, 1000).limited_by == "curve_end"
    with pytest.raises(SizingError, match="no measured load meets TTFT <= 100 ms"):
        prefill_point(c, 100)


def test_xpyd():
    assert xpyd(2, 4) == "2P4D (1P2D)"
    assert xpyd(3, 5) == "3P5D"
    assert xpyd(1, 1) == "1P1D"


def _worked(**kw) -> PoolRequest:
    base = dict(tpm=600_000, tiers=(Tier("", D(1), 50),), gpus_per_replica=2, util=0.8, ttft_limit_ms=400,
                isl=2000, osl=250, reserves=Reserves(failure=1))
    return PoolRequest(**{**base, **kw})


def test_the_disaggregated_worked_example_adds_up_exactly():
    res = size_parts(load_curve(DECODE, "anchors"), _worked(), prefill=load_prefill_curve(SAMPLE))
    pre, dec = res.parts
    # 600,000 TPM = 10,000 output tok/s; 10,000 / 250 = 40 requests/s x 2,000 = 80,000 input tok/s
    assert (pre.role, pre.rate_tok_s, pre.replica_tok_s, pre.ttft_ms, pre.limited_by) == (
        "prefill", 80000.0, 60000.0, 380.0, "ttft")
    # prefill: 80,000 / (60,000 x 0.8 = 48,000) = 1.67 -> 2 replicas x 2 GPUs
    assert (pre.replicas, pre.gpus) == (2, 4)
    # decode: SLA 50 -> c* 64, 3,200 tok/s; 10,000 / (3,200 x 0.8 = 2,560) = 3.91 -> 4 replicas x 2 GPUs
    assert (dec.role, dec.c_star, dec.replica_tok_s, dec.replicas, dec.gpus) == ("decode", 64, 3200, 4, 8)
    assert dec.ttft_limit_ms is None  # TTFT is the prefill's: not applied to the decode curve
    assert [(r.role, r.kind, r.replicas, r.gpus) for r in res.reserves] == [("prefill", "failure", 1, 2),
                                                                           ("decode", "failure", 1, 2)]
    assert (res.ratio, res.ratio_with_reserves, res.gpus) == ("2P4D (1P2D)", "3P5D", 16)
    priced = priced_parts(res, _Price, device="H100", region="r", purchase_option="on_demand",
                          at=datetime(2026, 11, 1, tzinfo=timezone.utc), hours_per_month=D("730"))
    costs = [x.monthly_cost for x in (*priced.parts, *priced.reserves)]
    # 4 GPUs x 5,256 = 21,024; 8 -> 42,048; each reserve 2 -> 10,512
    assert costs == [D("21024.000000"), D("42048.000000"), D("10512.000000"), D("10512.000000")]
    assert priced.monthly_cost == D("84096.000000") == D("31536") + D("52560")  # prefill 3 x 2, decode 5 x 2
    # ops: a prefill replica admits by its token budget; it may queue (400 - 380) / 1000 x 60,000 / 2,000 = 0.6 -> 1
    assert (pre.ops.admission_limit, pre.ops.queue_scale_out, pre.ops.headroom_tok_s) == (None, 1, pytest.approx(12000))
    assert (dec.ops.admission_limit, dec.ops.load_tok_s, dec.ops.utilisation_as_sized) == (64, 2500, 0.78125)


def test_a_rise_needs_warm_prefill_and_decode_replicas():
    res = size_parts(load_curve(DECODE, "anchors"), _worked(rise_tpm=120000.0, time_to_ready_min=10,
                                                            reserves=Reserves()),
                     prefill=load_prefill_curve(SAMPLE))
    # decode: 2,000 tok/s / 2,560 = 0.78 -> 1; prefill: 2,000 x 8 = 16,000 input tok/s / 48,000 = 0.33 -> 1
    assert [(r.role, r.kind, r.replicas) for r in res.reserves] == [("prefill", "warm", 1), ("decode", "warm", 1)]
    assert "x ISL/OSL 8 = 16,000.0 input tok/s" in res.reserves[0].reason


def test_disaggregated_needs_a_ttft_limit_and_the_shape():
    curve, pre = load_curve(DECODE, "anchors"), load_prefill_curve(SAMPLE)
    with pytest.raises(SizingError, match="a prefill curve is sized at a TTFT limit"):
        size_parts(curve, _worked(ttft_limit_ms=None), prefill=pre)
    with pytest.raises(SizingError, match="needs the workload's ISL and OSL"):
        size_parts(curve, _worked(isl=None, osl=None), prefill=pre)
    with pytest.raises(SizingError, match="the prefill curve was measured at ISL 2,000, the workload has 4,000"):
        size_parts(curve, _worked(isl=4000), prefill=pre)


def test_size_prefill_curve_cli():
    args = ["size", "--tpm", "600000", "--sla", "50", "--anchors", DECODE, "--isl", "2000", "--osl", "250",
            "--gpus-per-replica", "2", "--util", "0.8", "--ttft-ms", "400", "--prefill-curve", str(SAMPLE),
            "--failure-reserve", "1"]
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.stderr
    assert "VERDICT: GPUs for 600,000 TPM, 2P4D (1P2D) serving" in r.stdout
    assert "disaggregated: 2P4D (1P2D) serving (prefill : decode replicas), 3P5D with the reserves" in r.stdout
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in r.stdout.splitlines() if line.startswith("│")]
    assert [(c[0], c[2], c[6], c[8], c[9]) for c in cells] == [
        ("prefill", "80,000 in", "60,000 in", "2", "4"), ("decode", "10,000", "3,200", "4", "8"),
        ("prefill failure reserve", "", "", "1", "2"), ("decode failure reserve", "", "", "1", "2"),
        ("sum", "", "", "8", "16")]
    doc = json.loads(runner.invoke(app, args + ["--json"]).stdout)
    assert doc["mode"] == "disaggregated" and doc["xpyd"] == "2P4D (1P2D)"
    assert doc["totals"]["by_role"] == {"prefill": {"serving": 2, "reserve": 1, "replicas": 3},
                                        "decode": {"serving": 4, "reserve": 1, "replicas": 5}}
    r = runner.invoke(app, [("50,60" if a == "50" else a) for a in args])
    assert r.exit_code == 1 and "a disaggregated pool is sized at one SLA (or per --tier), not a list" in r.stderr


BOOK = textwrap.dedent("""
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
    source_url = "https://example.com/h100"
""")

PLAN = textwrap.dedent("""
    [plan]
    name = "pd"
    currency = "USD"
    start = "2026-10"
    months = 1

    [[pool]]
    name = "pd"
    device = "H100"
    region = "us-east-1"
    purchase_option = "on_demand"
    gpus_per_replica = 2
    anchors = "1:120,16:80,64:50,128:30"
    prefill_curve = "prefill.jsonl"
    sla = 50
    tpm = 600000
    util = 0.8
    ttft_ms = 400
    isl = 2000
    osl = 250
    failure_reserve = 1
""")


def _book():
    book, problems = parse_book(BOOK, "fixture.toml")
    assert not problems
    return PriceIndex([book])


def test_a_disaggregated_plan_pool_prices_both_roles(tmp_path):
    shutil.copy(SAMPLE, tmp_path / "prefill.jsonl")
    (tmp_path / "plan.toml").write_text(PLAN)
    b = budget(load_plan(tmp_path / "plan.toml"), _book())
    rows = {g.part: g for g in b.gpu}
    assert list(rows) == ["prefill", "decode", "prefill reserve", "decode reserve"]
    # October has 744 h at $2 a GPU-hour: 4 GPUs 5,952; 8 GPUs 11,904; each reserve 2 GPUs 2,976
    assert [(p, g.serving, g.reserve, g.gpus, g.cost) for p, g in rows.items()] == [
        ("prefill", 2, 0, 4, D("5952.000000")), ("decode", 4, 0, 8, D("11904.000000")),
        ("prefill reserve", 0, 1, 2, D("2976.000000")), ("decode reserve", 0, 1, 2, D("2976.000000"))]
    assert rows["prefill"].xpyd == rows["decode"].xpyd == "2P4D (1P2D)"
    assert b.total("base", "2026-10") == D("23808.000000") == 16 * 744 * D(2)
    assert b.sizing[0].mode == "disaggregated" and "prefill.jsonl" in b.sizing[0].prefill_label


def test_an_inline_prefill_curve_and_its_errors():
    inline = PLAN.replace('prefill_curve = "prefill.jsonl"\n', "prefill_gpus_per_replica = 1\n") + textwrap.dedent("""
        [pool.prefill_curve]
        source = "hand-made sweep"
        isl = 2000
        points = [{ input_tok_s = 30000, ttft_ms = 190 }, { input_tok_s = 40000, ttft_ms = 600 }]
    """)
    plan, problems = parse_plan(inline, "plan.toml")
    assert not problems, problems
    b = budget(plan, _book())
    rows = {g.part: g for g in b.gpu}
    # 80,000 / (30,000 x 0.8 = 24,000) = 3.33 -> 4 prefill replicas of 1 GPU; 4P4D = 1P1D
    assert (rows["prefill"].serving, rows["prefill"].gpus, rows["prefill"].xpyd) == (4, 4, "4P4D (1P1D)")
    assert rows["prefill reserve"].gpus == 1
    bad = PLAN.replace("ttft_ms = 400\n", "").replace("prefill.jsonl", SAMPLE.name)
    plan, problems = parse_plan(bad, "plan.toml", base_dir=SAMPLE.parent)
    assert plan is None and any("a prefill curve is sized at a TTFT limit" in p for p in problems)
    plan, problems = parse_plan(PLAN.replace("prefill.jsonl", "missing.jsonl"), "plan.toml", base_dir=SAMPLE.parent)
    assert problems == ["plan.toml: pool[1] pd: prefill curve file 'missing.jsonl' not found (paths are relative "
                        "to the plan's folder)"]
