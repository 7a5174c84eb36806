"""`ledger size --workload`: TPM at a percentile, mean ISL and OSL and the largest rise from the ledger's
own traffic; a curve measured at another shape warned about (beyond 25 %) with both shapes reported."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.hints import say
from ledger.sizing.cli import NAMES as SIZE_NAMES
from ledger.sizing import CurveContext, CurvePoint, SizingError, SizingRequest, make_curve, size
from ledger.sizing.traffic import workload_inputs
from ledger.workload import Bursts, Percentiles, Workload

runner = CliRunner()

CURVE_CSV = ("concurrency,tok_s_user,output_tok_s,ttft_ms,isl,osl\n"
             "1,100,100,50,2000,500\n2,80,160,60,2000,500\n4,50,200,100,2000,500\n")


def _hand_workload(**kw) -> Workload:
    """A workload written by hand: 60 minutes, TPM p99 12,000 and max 20,000, ISL 2,000, OSL 250."""
    lens = Percentiles(p50=0, p95=0, p99=0, max=0, mean=0)
    base = dict(period="2025-10", pool="p1", product=None, start=datetime(2025, 10, 1, tzinfo=timezone.utc),
                end=datetime(2025, 10, 1, 1, tzinfo=timezone.utc), minutes=60, requests=120, failed_requests=0,
                input_tokens=240000, cached_input_tokens=0, output_tokens=30000,
                tpm={"p50": 0.0, "p95": 9000.0, "p99": 12000.0, "max": 20000.0, "mean": 500.0},
                rpm={"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 80.0, "mean": 2.0}, peak_to_average=40.0,
                bursts=Bursts(threshold=9000, count=1, longest=2, minutes=2, tokens=30000, excess_tokens=0),
                input_len=lens, output_len=lens, isl_mean=2000.0, osl_mean=250.0, cache_hit=0.0,
                hour_of_week=[None] * 168, ramp_minutes=10, ramp=20000.0)
    return Workload(**{**base, **kw})


def _curve(isl: float, osl: float):
    pts = [CurvePoint(1, 100, 100, 50), CurvePoint(2, 80, 160, 60), CurvePoint(4, 50, 200, 100)]
    return make_curve(pts, CurveContext(source="hand.csv", isl=isl, osl=osl))


def test_workload_inputs_take_the_percentile_and_the_means():
    wi = workload_inputs(_hand_workload(), "p99", time_to_ready_min=10)
    assert (wi.tpm, wi.isl, wi.osl, wi.rise_tpm, wi.percentile) == (12000.0, 2000.0, 250.0, 20000.0, "p99")
    assert workload_inputs(_hand_workload(), "max").tpm == 20000.0
    assert workload_inputs(_hand_workload(), "max").rise_tpm is None  # no time to ready, no rise
    with pytest.raises(SizingError, match="^percentile 'p90': one of p50, p95, p99, max, mean") as bad:
        workload_inputs(_hand_workload(), "p90")
    assert say(bad.value.problems, SIZE_NAMES) == ["--percentile 'p90': one of p50, p95, p99, max, mean"]
    # traffic, but the p50 minute is an empty one: the error says what to change
    with pytest.raises(SizingError) as empty:
        workload_inputs(_hand_workload(), "p50")
    assert list(empty.value.problems) == [
        "workload 2025-10 pool p1: TPM p50 is 0: the p50 minute of its 60 minutes served no output tokens (120 "
        "requests in all); pick a higher percentile (max is 20,000) or a window with traffic throughout "
        "(over the busy hours)"]
    # as `ledger size` says it: its options named (ledger.hints)
    assert say(empty.value.problems, SIZE_NAMES) == [
        "workload 2025-10 pool p1: TPM p50 is 0: the p50 minute of its 60 minutes served no output tokens (120 "
        "requests in all); pick a higher --percentile (max is 20,000) or a window with traffic throughout "
        "(--from/--to over the busy hours)"]
    with pytest.raises(SizingError, match="no output tokens to size from .* TPM p50 0.0"):
        workload_inputs(_hand_workload(requests=0, output_tokens=0), "p50")
    with pytest.raises(SizingError, match="the rise was measured over 10 min, not the time to ready 15 min"):
        workload_inputs(_hand_workload(), "p99", time_to_ready_min=15)


def test_a_curve_at_another_shape_is_warned_about_beyond_25_percent():
    wi = workload_inputs(_hand_workload(), "p99")
    req = SizingRequest(tpm=wi.tpm, slas=(50,), gpus_per_replica=1, isl=wi.isl, osl=wi.osl, workload_shape=True)
    # OSL 500 against the workload's 250: +100 %, warned, both reported, and the sizing still runs
    res = size(_curve(2000, 500), req)
    assert res.warnings == ("warning: hand.csv: the curve was measured at OSL 500, the workload's mean OSL is 250 "
                            "(+100%): a curve measured at another shape is the most common sizing error",)
    # 12,000 TPM = 200 tok/s; c* 4 serves 200 tok/s, x 0.7 = 140: 1.43 -> 2 replicas
    assert res.rows[0].replicas == 2 and (res.isl, res.osl) == (2000.0, 250.0)
    # 20 % apart: neither refused (a typed ISL/OSL is refused beyond 10 %) nor warned
    assert size(_curve(2400, 250), req).warnings == ()
    with pytest.raises(SizingError, match="the curve was measured at ISL 2,400, the workload has 2,000"):
        size(_curve(2400, 250), SizingRequest(tpm=12000, slas=(50,), gpus_per_replica=1, isl=2000, osl=250))
    # exactly 25 % is within the tolerance; a hair more is not
    assert size(_curve(2500, 250), req).warnings == ()
    assert len(size(_curve(2501, 250), req).warnings) == 1


def _requests() -> str:
    """Pool p1: 40 requests at 00:05 and 80 at 00:06 on 1 October 2025, each 2,000 in and 250 out
    (10,000 then 20,000 TPM); pool p2: 10 requests at 00:05 of 100 in, 1,000 out."""
    head = "request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens," \
           "output_tokens,status"
    rows = [f"a{i},2025-10-01T00:05:{i % 60:02d}Z,t,chat,llama,p1,,k{i},2000,0,250,ok" for i in range(40)]
    rows += [f"b{i},2025-10-01T00:06:{i % 60:02d}Z,t,chat,llama,p1,,k{i},2000,0,250,ok" for i in range(80)]
    rows += [f"c{i},2025-10-01T00:05:{i:02d}Z,t,search,llama,p2,,s{i},100,0,1000,ok" for i in range(10)]
    return "\n".join([head, *rows]) + "\n"


@pytest.fixture
def traffic(ledger_home, tmp_path):
    path = tmp_path / "requests.csv"
    path.write_text(_requests(), encoding="utf-8")
    r = runner.invoke(app, ["ingest", "requests", str(path), "--register-new"])
    assert r.exit_code == 0, r.output
    curve = tmp_path / "curve.csv"
    curve.write_text(CURVE_CSV, encoding="utf-8")
    return curve


@pytest.mark.store
def test_size_from_the_ledgers_own_traffic(traffic):
    args = ["size", "--workload", "2025-10", "--pool", "p1", "--percentile", "max", "--curve", str(traffic),
            "--sla", "50", "--gpus-per-replica", "1", "--time-to-ready-min", "10"]
    r = runner.invoke(app, args + ["--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    w = doc["workload"]
    # p1's busiest minute: 80 x 250 = 20,000 TPM; every request 2,000 in and 250 out; the largest rise
    # over 10 minutes is 20,000 - 0 (the minutes before 00:05 are empty)
    assert (w["tpm"], w["isl"], w["osl"], w["rise_tpm"], w["requests"]) == (20000.0, 2000.0, 250.0, 20000.0, 120)
    assert (doc["tpm"], doc["isl"], doc["osl"]) == (20000.0, 2000.0, 250.0)
    (row,) = doc["rows"]
    # 20,000 / 60 = 333.3 tok/s over 200 x 0.7 = 140: 2.38 -> 3 serving; the rise needs as many warm: 3
    assert (row["replicas_serving"], row["reserves"]["warm"], row["replicas"]) == (3, 3, 6)
    assert row["reserves"]["warm_reason"] == ("largest rise over 10 min +20,000 output TPM = 333.3 output tok/s / "
                                              "(200 x 0.7) = 2.38 -> 3")
    assert doc["warnings"] == ["warning: curve.csv: the curve was measured at OSL 500, the workload's mean OSL is "
                               "250 (+100%): a curve measured at another shape is the most common sizing error"]
    out = runner.invoke(app, args, terminal_width=200).stdout
    assert "workload 2025-10, pool p1: 120 requests over 44,640 minutes; TPM max 20,000" in out
    assert "the curve was measured at ISL/OSL 2,000/500 tokens" in out
    assert "warning: curve.csv: the curve was measured at OSL 500" in out
    assert "reserves at SLA 50: failure 0, canary 0, warm 3 (largest rise over 10 min" in out


@pytest.mark.store
def test_size_workload_refusals_one_line_each(traffic):
    base = ["size", "--curve", str(traffic), "--sla", "50", "--gpus-per-replica", "1"]
    # a finished month of 44,640 minutes with two busy ones: its p99 minute is an empty one; the line
    # says what to change (a higher percentile, or a window over the traffic: --from/--to)
    r = runner.invoke(app, base + ["--workload", "2025-10", "--pool", "p1"])
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        "workload 2025-10 pool p1: TPM p99 is 0: the p99 minute of its 44,640 minutes served no output tokens (120 "
        "requests in all); pick a higher --percentile (max is 20,000) or a window with traffic throughout "
        "(--from/--to over the busy hours)"]
    r = runner.invoke(app, base + ["--workload", "2025-10", "--tpm", "1000"])
    assert r.exit_code == 1 and "give the traffic as exactly one of --tpm, --workload PERIOD or --from/--to" in r.stderr
    r = runner.invoke(app, base + ["--workload", "2025-10", "--isl", "100"])
    assert r.exit_code == 1 and "--isl and --osl come from --workload" in r.stderr
    r = runner.invoke(app, base + ["--tpm", "1000", "--pool", "p1"])
    assert r.exit_code == 1 and "also give --workload" in r.stderr
    r = runner.invoke(app, base + ["--workload", "2025-10", "--pool", "p9", "--percentile", "max"])
    assert r.exit_code == 1 and r.stderr.strip() == "no requests occurred in 2025-10 for pool p9"
