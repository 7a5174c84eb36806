"""The SLA-first sizing engine: the reference worked example by hand, and every fail-loud rule."""
from __future__ import annotations

import math
from decimal import Decimal

import pytest

from ledger.sizing import (DRAFT, VERDICT, CurveContext, CurvePoint, Reserves, SizingError, SizingRequest,
                           capacity_tokens_per_gpu_s, make_curve, monthly_cost, operating_point, parse_anchors,
                           price_per_gpu_hour, replicas_for, size, size_pool)

ANCHORS = "1:215.5,10:122.2,256:41.8"
SLAS = (20, 50, 100, 150, 215)


def worked(interpolate: bool = False, **kw):
    """The reference text's tool call: TPM 3,000,000, SLAs 20/50/100/150/215, 4 GPUs per replica, util 0.70."""
    req = SizingRequest(tpm=3_000_000, slas=SLAS, gpus_per_replica=4, util=0.70, interpolate=interpolate, **kw)
    return size(parse_anchors(ANCHORS), req)


def test_worked_example_measured_is_a_verdict():
    # TPM 3,000,000 / 60 = 50,000 output tok/s to serve.
    # SLA  20: c* = 256 (41.8 >= 20, the highest point): replica = 256 x 41.8 = 10,700.8 tok/s;
    #          50,000 / (10,700.8 x 0.70 = 7,490.56) = 6.675 -> 7 replicas -> 28 GPUs.
    # SLA  50: c* = 10 (122.2 >= 50 > 41.8): 10 x 122.2 = 1,222; 50,000 / 855.4 = 58.45 -> 59 -> 236 GPUs.
    # SLA 100: c* = 10 again (122.2 >= 100): 59 replicas, 236 GPUs (the knee plateau).
    # SLA 150: c* = 1 (215.5 >= 150 > 122.2): 215.5; 50,000 / 150.85 = 331.46 -> 332 -> 1,328 GPUs.
    # SLA 215: c* = 1 (215.5 >= 215): 332 replicas, 1,328 GPUs.
    r = worked()
    assert r.status == VERDICT
    got = [(row.sla_tok_s_user, row.c_star, row.tok_s_user, row.replica_output_tok_s, row.replicas, row.gpus)
           for row in r.rows]
    assert got == [
        (20, 256, 41.8, pytest.approx(10_700.8), 7, 28),
        (50, 10, 122.2, pytest.approx(1_222.0), 59, 236),
        (100, 10, 122.2, pytest.approx(1_222.0), 59, 236),
        (150, 1, 215.5, pytest.approx(215.5), 332, 1_328),
        (215, 1, 215.5, pytest.approx(215.5), 332, 1_328),
    ]
    assert all(row.throughput_basis == "derived" and row.c_star_measured for row in r.rows)
    assert [row.limited_by for row in r.rows] == ["curve_end", "sla", "sla", "sla", "sla"]
    assert all(row.capacity_tokens_per_gpu_s is None and row.monthly_cost is None for row in r.rows)


def test_worked_example_interpolated_is_a_draft():
    # Linear in log c between the bracketing anchors; the throughput is c* x SLA (anchors carry no aggregate).
    # SLA  20: below every point: c* = 256 (the curve's end), as measured: 7 replicas, 28 GPUs.
    # SLA  50: u = (122.2-50)/(122.2-41.8) = 0.898010; c* = 10 x 25.6^u = 183.91; 183.91 x 50 = 9,195.67;
    #          50,000 / (9,195.67 x 0.7 = 6,436.97) = 7.77 -> 8 replicas -> 32 GPUs.
    # SLA 100: u = 22.2/80.4 = 0.276119; c* = 10 x 25.6^u = 24.48; 2,448.17 x 0.7 = 1,713.72; 29.18 -> 30 -> 120.
    # SLA 150: u = (215.5-150)/(215.5-122.2) = 0.702036; c* = 10^u = 5.0354; 755.31 x 0.7 = 528.72; 94.57 -> 95 -> 380.
    # SLA 215: u = 0.5/93.3 = 0.005359; c* = 10^u = 1.0124; 217.67 x 0.7 = 152.37; 328.15 -> 329 -> 1,316.
    r = worked(interpolate=True)
    assert r.status == DRAFT
    assert [row.c_star for row in r.rows] == [256, pytest.approx(183.9135, abs=1e-4), pytest.approx(24.4817, abs=1e-4),
                                             pytest.approx(5.0354, abs=1e-4), pytest.approx(1.0124, abs=1e-4)]
    assert [row.tok_s_user for row in r.rows] == [41.8, 50, 100, 150, 215]
    assert [round(row.replica_output_tok_s, 2) for row in r.rows] == [10_700.8, 9_195.67, 2_448.17, 755.31, 217.67]
    assert [row.replicas for row in r.rows] == [7, 8, 30, 95, 329]
    assert [row.gpus for row in r.rows] == [28, 32, 120, 380, 1_316]
    assert [row.c_star_measured for row in r.rows] == [True, False, False, False, False]


def test_reserves_and_capacity_per_gpu():
    # SLA 50, measured: 59 serving replicas + failure 2 + canary 1 + warm 1 = 63 replicas = 252 GPUs.
    # ISL 1,000 / OSL 250: each request is 1,250 active tokens for 250 output tokens, so
    # capacity = 1,222 x 1,250 / 250 / 4 GPUs = 1,527.5 active tokens per GPU-second.
    r = worked(reserves=Reserves(failure=2, canary=1, warm=1), isl=1000, osl=250)
    row = r.rows[1]
    assert (row.replicas_serving, row.replicas_reserve, row.replicas, row.gpus) == (59, 4, 63, 252)
    assert row.capacity_tokens_per_gpu_s == pytest.approx(1_527.5)
    assert capacity_tokens_per_gpu_s(1_222.0, 1000, 250, 4) == pytest.approx(1_527.5)


def test_measured_aggregate_beats_c_times_tok_s_user():
    # The point's measured aggregate (300 tok/s) is used, not 4 x 100 = 400; 6,000 TPM = 100 tok/s;
    # 100 / (300 x 0.5) = 0.67 -> 1 replica. A point without an aggregate derives c x tok/s/user.
    curve = make_curve([CurvePoint(1, 120.0, 110.0), CurvePoint(4, 100.0, 300.0), CurvePoint(8, 60.0)],
                       CurveContext(source="t"))
    row = size_pool(curve, tpm=6_000, sla=100, gpus_per_replica=1, util=0.5)
    assert (row.c_star, row.replica_output_tok_s, row.throughput_basis, row.replicas) == (4, 300.0, "measured", 1)
    row = size_pool(curve, tpm=6_000, sla=50, gpus_per_replica=1, util=0.5)
    # c* = 8, derived 8 x 60 = 480 tok/s; 100 / 240 -> 1 replica
    assert (row.c_star, row.replica_output_tok_s, row.throughput_basis) == (8, 480.0, "derived")


def test_replicas_ceil_ignores_float_noise():
    # 42,000 TPM = 700 tok/s; a replica of 1,000 tok/s at util 0.7 serves exactly 700: one replica, not two.
    assert replicas_for(42_000, 1_000.0, 0.7) == 1
    assert replicas_for(42_001, 1_000.0, 0.7) == 2
    assert replicas_for(3_000_000, 10_700.8, 0.7) == 7


@pytest.mark.parametrize("kw, needle", [
    (dict(tpm=0), "TPM must be > 0"),
    (dict(tpm=-5), "TPM must be > 0"),
    (dict(util=0), "util must be in (0, 1]"),
    (dict(util=1.2), "util must be in (0, 1]"),
    (dict(gpus_per_replica=0), "GPUs per replica"),
    (dict(slas=(50, 50)), "given twice"),
    (dict(slas=(0,)), "SLA must be > 0"),
    (dict(reserves=Reserves(failure=-1)), "failure reserve"),
])
def test_bad_requests_fail_loudly(kw, needle):
    base = dict(tpm=3_000_000, slas=(50,), gpus_per_replica=4, util=0.7)
    base.update(kw)
    with pytest.raises(SizingError) as e:
        size(parse_anchors(ANCHORS), SizingRequest(**base))
    assert needle in str(e.value)


def test_util_one_is_allowed():
    # util 1.0 is inside (0, 1]: SLA 50 -> 50,000 / 1,222 = 40.9 -> 41 replicas.
    r = size(parse_anchors(ANCHORS), SizingRequest(tpm=3_000_000, slas=(50,), gpus_per_replica=4, util=1.0))
    assert r.rows[0].replicas == 41


def test_sla_above_the_best_point_names_it():
    with pytest.raises(SizingError) as e:
        size(parse_anchors(ANCHORS), SizingRequest(tpm=3_000_000, slas=(50, 216), gpus_per_replica=4,
                                                   interpolate=True))
    msg = str(e.value)
    assert "SLA 216 tok/s/user is above the best measured point" in msg and "c=1: 215.50" in msg


def test_every_failing_sla_is_reported():
    with pytest.raises(SizingError) as e:
        size(parse_anchors(ANCHORS), SizingRequest(tpm=1, slas=(300, 216, 50), gpus_per_replica=1))
    assert len(e.value.problems) == 2
    assert "SLA 216" in e.value.problems[0] and "SLA 300" in e.value.problems[1]


TTFT_CURVE = make_curve([CurvePoint(1, 200.0, 190.0, 40.0, "a"), CurvePoint(8, 150.0, 1_150.0, 80.0, "b"),
                         CurvePoint(32, 100.0, 3_000.0, 400.0, "c"), CurvePoint(64, 60.0, 3_600.0, 900.0, "d")],
                        CurveContext(source="ttft-curve"))


def test_ttft_limit_lowers_c_star():
    # SLA 60: every point meets it; without a TTFT limit c* = 64. With TTFT <= 500 ms: c=64 (900 ms) fails,
    # c* = 32, limited by ttft.
    assert operating_point(TTFT_CURVE, 60).c_star == 64
    op = operating_point(TTFT_CURVE, 60, ttft_limit_ms=500)
    assert (op.c_star, op.limited_by) == (32, "ttft")
    # Interpolated: TTFT 400 -> 900 between c=32 and c=64 crosses 500 at u = 100/500 = 0.2:
    # c* = 32 x 2^0.2 = 36.76; throughput interpolated 3,000 + 0.2 x 600 = 3,120.
    op = operating_point(TTFT_CURVE, 60, ttft_limit_ms=500, interpolate=True)
    assert op.c_star == pytest.approx(32 * 2 ** 0.2)
    assert op.replica_output_tok_s == pytest.approx(3_120.0)
    assert (op.throughput_basis, op.limited_by) == ("interpolated", "ttft")


def test_ttft_limit_that_nothing_meets_names_the_points():
    with pytest.raises(SizingError) as e:
        operating_point(TTFT_CURVE, 140, ttft_limit_ms=30)
    msg = str(e.value)
    assert "c=1 (TTFT 40 ms > 30 ms)" in msg and "c=8 (TTFT 80 ms > 30 ms)" in msg


def test_ttft_limit_needs_ttft_everywhere():
    with pytest.raises(SizingError) as e:
        operating_point(parse_anchors(ANCHORS), 50, ttft_limit_ms=500)
    assert "needs TTFT at every point" in str(e.value) and "c=1, c=10, c=256" in str(e.value)


def test_kv_cap_bounds_c_star():
    # KV holds 100 sequences: measured c* for SLA 20 falls from 256 to 10; interpolated it stops at 100:
    # u = ln(100/10)/ln(25.6) = 0.710; t = 122.2 - 0.710 x 80.4 = 65.1 >= 20; 100 x 65.1 = 6,510 tok/s.
    assert operating_point(parse_anchors(ANCHORS), 20, kv_cap=100).c_star == 10
    op = operating_point(parse_anchors(ANCHORS), 20, kv_cap=100, interpolate=True)
    u = math.log(10) / math.log(25.6)
    assert op.c_star == pytest.approx(100)
    assert op.tok_s_user == pytest.approx(122.2 - u * 80.4)
    assert op.limited_by == "kv_cap"
    with pytest.raises(SizingError, match="KV cap of 0.5"):
        operating_point(parse_anchors(ANCHORS), 20, kv_cap=0.5)


def test_interpolation_stops_at_the_throughput_peak():
    # 1:100 -> 100:10, no aggregates: c t(c) peaks inside the segment where t = slope = 90 / ln 100 = 19.54;
    # u = (100 - 19.54) / 90 = 0.894, c = 100^0.894 = 61.7, 61.7 x 19.54 = 1,206 tok/s > 100 x 10 = 1,000 at c=100.
    curve = parse_anchors("1:100,100:10")
    op = operating_point(curve, 5, interpolate=True)
    slope = 90 / math.log(100)
    assert op.tok_s_user == pytest.approx(slope)
    assert op.c_star == pytest.approx(100 ** ((100 - slope) / 90))
    assert op.limited_by == "throughput_peak"
    # ... and the measured answer at the curve end is what a VERDICT gives.
    assert operating_point(curve, 5).c_star == 100


def test_curve_must_match_replica_and_workload():
    curve = make_curve([CurvePoint(1, 100.0), CurvePoint(8, 50.0)],
                       CurveContext(source="c", gpus_per_replica=2, isl=2048, osl=512))
    with pytest.raises(SizingError, match="measured on 2 GPUs per replica, not 4"):
        size(curve, SizingRequest(tpm=1000, slas=(50,), gpus_per_replica=4))
    with pytest.raises(SizingError, match="measured at ISL 2,048, the workload has 1,000"):
        size(curve, SizingRequest(tpm=1000, slas=(50,), gpus_per_replica=2, isl=1000, osl=512))
    r = size(curve, SizingRequest(tpm=1000, slas=(50,), gpus_per_replica=2, isl=2000, osl=500))
    assert (r.isl, r.osl) == (2000, 500)  # within 10%: the workload's own lengths are used
    r = size(curve, SizingRequest(tpm=1000, slas=(50,), gpus_per_replica=2))
    # 8 x 50 = 400 tok/s x (2048 + 512) / 512 / 2 GPUs = 1,000 active tokens per GPU-second
    assert (r.isl, r.osl, r.rows[0].capacity_tokens_per_gpu_s) == (2048, 512, pytest.approx(1_000.0))


def test_monthly_cost_is_exact_decimal():
    # 28 GPUs x 730 h x $6.88 = $140,627.20 exactly; a price per GPU-second of 0.00019 is 0.684 per GPU-hour.
    assert monthly_cost(28, Decimal("6.88"), Decimal("730")) == Decimal("140627.200000")
    assert price_per_gpu_hour(Decimal("0.00019"), "gpu * second") == Decimal("0.684")
    assert price_per_gpu_hour(Decimal("55.04"), "8 * gpu * hour") == Decimal("6.88")
    assert monthly_cost(1, Decimal("0.684"), Decimal("730.5")) == Decimal("499.662000")
    with pytest.raises(SizingError, match="a GPU price must be per GPU-time"):
        price_per_gpu_hour(Decimal("1.25"), "1e6 * token")
