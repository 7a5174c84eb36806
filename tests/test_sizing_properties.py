"""Properties of SLA-first sizing over arbitrary measured curves (hypothesis)."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.sizing import (CurveContext, CurvePoint, Reserves, SizingError, curve_problems, make_curve,
                           operating_point, size_pool, validate_curve)


@st.composite
def raw_curves(draw):
    """Any curve of distinct positive concurrencies: noisy, with or without aggregates and TTFT."""
    cs = draw(st.lists(st.integers(1, 4096), min_size=1, max_size=8, unique=True))
    with_ttft = draw(st.booleans())
    pts = []
    for c in cs:
        t = draw(st.floats(1, 500, allow_nan=False))
        agg = draw(st.none() | st.floats(1, 200_000, allow_nan=False))
        ttft = draw(st.floats(1, 5_000, allow_nan=False)) if with_ttft else None
        pts.append(CurvePoint(concurrency=float(c), tok_s_user=t, output_tok_s=agg, ttft_ms=ttft, label=f"c{c}"))
    return make_curve(pts, CurveContext(source="hypothesis"))


@st.composite
def pools(draw):
    curve, _ = validate_curve(draw(raw_curves()), repair=True)
    with_ttft = all(p.ttft_ms is not None for p in curve.points)
    return dict(
        curve=curve,
        tpm=draw(st.floats(1, 1e9, allow_nan=False)),
        gpus_per_replica=draw(st.integers(1, 8)),
        util=draw(st.floats(0.05, 1.0, allow_nan=False)),
        reserves=Reserves(draw(st.integers(0, 3)), draw(st.integers(0, 2)), draw(st.integers(0, 2))),
        interpolate=draw(st.booleans()),
        ttft_limit_ms=draw(st.none() | st.floats(1, 5_000, allow_nan=False)) if with_ttft else None,
        kv_cap=draw(st.none() | st.floats(0.5, 5_000, allow_nan=False)),
    )


def _size(pool: dict, sla: float):
    try:
        return size_pool(pool["curve"], sla=sla, **{k: v for k, v in pool.items() if k != "curve"})
    except SizingError:
        return None


@settings(max_examples=300, deadline=None)
@given(pools(), st.lists(st.floats(0.5, 600, allow_nan=False), min_size=2, max_size=6, unique=True))
def test_gpu_count_rises_monotonically_as_the_sla_tightens(pool, slas):
    rows = [_size(pool, s) for s in sorted(slas)]
    # Feasibility only shrinks as the SLA tightens: once an SLA cannot be met, no tighter one can.
    met = [r is not None for r in rows]
    assert met == sorted(met, reverse=True)
    gpus = [r.gpus for r in rows if r is not None]
    assert gpus == sorted(gpus)
    for r in rows:
        if r is not None:
            assert r.gpus == r.replicas * pool["gpus_per_replica"]
            assert r.tok_s_user >= r.sla_tok_s_user * (1 - 1e-9)
            if pool["kv_cap"] is not None:
                assert r.c_star <= pool["kv_cap"]


@settings(max_examples=300, deadline=None)
@given(pools(), st.floats(0.5, 600, allow_nan=False))
def test_replicas_are_the_fewest_that_carry_the_tpm(pool, sla):
    r = _size(pool, sla)
    if r is None:
        # The only reason to fail on a valid curve: no point (or interpolated concurrency) meets the limits.
        best = max(p.tok_s_user for p in pool["curve"].points)
        assert sla > best or pool["ttft_limit_ms"] is not None or pool["kv_cap"] is not None
        return
    demand = pool["tpm"] / 60
    supply = r.replica_output_tok_s * pool["util"]
    assert r.replicas_serving * supply >= demand * (1 - 1e-9)
    assert (r.replicas_serving - 1) * supply < demand * (1 + 1e-9)
    assert r.replicas == r.replicas_serving + pool["reserves"].total


@settings(max_examples=300, deadline=None)
@given(pools(), st.floats(0.5, 600, allow_nan=False))
def test_a_draft_never_needs_more_gpus_than_the_verdict(pool, sla):
    verdict = _size({**pool, "interpolate": False}, sla)
    draft = _size({**pool, "interpolate": True}, sla)
    if verdict is not None:
        assert draft is not None and draft.gpus <= verdict.gpus
        assert draft.c_star >= pool["curve"].points[0].concurrency


@settings(max_examples=300, deadline=None)
@given(raw_curves())
def test_repair_leaves_a_clean_envelope_and_keeps_every_point_it_can(curve):
    fixed, notes = validate_curve(curve, repair=True)
    assert curve_problems(fixed) == []
    assert len(fixed.points) + len(fixed.dropped) == len(curve.points) and len(notes) == len(fixed.dropped)
    assert fixed.points  # the lowest-concurrency point with the best tok/s/user always survives
    # On the envelope tok/s/user never rises and throughput never falls with concurrency.
    ts = [p.tok_s_user for p in fixed.points]
    xs = [p.replica_output_tok_s for p in fixed.points]
    assert ts == sorted(ts, reverse=True) and xs == sorted(xs)
    # An already clean curve is left alone.
    if curve_problems(curve) == []:
        assert fixed == curve and notes == ()


@settings(max_examples=200, deadline=None)
@given(raw_curves(), st.floats(0.5, 600, allow_nan=False))
def test_repair_never_costs_gpus_against_the_naive_reading(curve, sla):
    # The naive reading of the raw curve: the highest concurrency with tok/s/user >= SLA, at its throughput.
    ok = [p for p in curve.points if p.tok_s_user >= sla]
    fixed, _ = validate_curve(curve, repair=True)
    if not ok:
        return
    naive = max(ok, key=lambda p: p.concurrency)
    op = operating_point(fixed, sla)
    assert op.replica_output_tok_s >= naive.replica_output_tok_s
    assert op.tok_s_user >= sla


@settings(max_examples=200, deadline=None)
@given(raw_curves(), st.randoms(use_true_random=False), st.floats(0.5, 600, allow_nan=False), st.booleans())
def test_point_order_does_not_change_the_answer(curve, rnd, sla, interpolate):
    pts = list(curve.points)
    rnd.shuffle(pts)
    shuffled = make_curve(pts, curve.context)
    a, _ = validate_curve(curve, repair=True)
    b, _ = validate_curve(shuffled, repair=True)
    assert a == b
    try:
        want = operating_point(a, sla, interpolate=interpolate)
    except SizingError as e:
        want = str(e)
    try:
        got = operating_point(b, sla, interpolate=interpolate)
    except SizingError as e:
        got = str(e)
    assert got == want


def test_property_strategies_reach_interpolated_and_infeasible_cases():
    # Guard against a generator that never exercises the interesting branches (a property that cannot fail).
    # Derandomized: the same 300 examples every run, so this says whether the strategies reach each branch,
    # not whether one random draw of them did (in 2 of 40 random runs no interpolated pool was drawn).
    seen = set()

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(pools(), st.floats(0.5, 600, allow_nan=False))
    def probe(pool, sla):
        r = _size(pool, sla)
        seen.add("infeasible" if r is None else ("interpolated" if not r.c_star_measured else "measured"))
        if r is not None and math.isfinite(r.c_star):
            seen.add(r.limited_by.split("+")[0])

    probe()
    assert {"infeasible", "interpolated", "measured", "sla", "curve_end"} <= seen
