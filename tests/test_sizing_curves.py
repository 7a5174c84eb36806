"""Curves: anchors, CSV and the real load-tester result files; validation that names the points."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.hints import say_one
from ledger.sizing.cli import NAMES as SIZE_NAMES

from ledger.sizing import (Curve, SizingError, SizingRequest, curve_problems, detect_format, load_curve,
                           load_curves, merge_curves, parse_anchors, parse_curves, size, validate_curve)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOADTEST = DATA / "loadtest"
PUBLISHED = DATA / "curves" / "published_curves.csv"

VLLM = LOADTEST / "vllm_benchmark_serving_lambdalabs_llama31_8b_fp8_1xH100.json"
SGLANG = LOADTEST / "sglang_bench_serving_llama33_70b_h200_online.jsonl"
GUIDELLM = LOADTEST / "guidellm_0.8.1_mock_concurrent_sweep_trimmed.json"
AIPERF = LOADTEST / "aiperf_0.13.0_mock_c4_profile_export_aiperf.json"


def test_the_real_data_is_there():
    # Required, never skipped: the real files live beside the checkout.
    assert LOADTEST.is_dir(), f"missing {LOADTEST}"
    assert {VLLM, SGLANG, GUIDELLM, AIPERF} <= set(LOADTEST.iterdir())
    assert PUBLISHED.is_file()


def test_every_loadtest_file_loads_with_auto_detection():
    formats = {}
    for path in sorted(LOADTEST.iterdir()):
        curves = load_curves(path)
        assert curves, path.name
        for c in curves:
            assert c.points and c.context.source == path.name
            assert all(p.concurrency > 0 and p.tok_s_user > 0 for p in c.points)
        formats[path.name] = detect_format(path.read_text(), path.name)
    assert formats == {VLLM.name: "vllm", SGLANG.name: "sglang", GUIDELLM.name: "guidellm", AIPERF.name: "aiperf"}
    assert len(list(LOADTEST.iterdir())) == 4  # a new file here must get its own expectations above


def test_vllm_benchmark_serving_file():
    # request_rate inf, no max_concurrency: concurrency by Little's law =
    # request_throughput 9.3641 req/s x mean_latency 290.35 ms = 2.7189; tok/s/user = 1000 / mean_tpot 6.0185 = 166.15.
    (c,) = load_curves(VLLM)
    (p,) = c.points
    assert p.concurrency == pytest.approx(9.364124289561836 * 0.29035341650014743)
    assert p.tok_s_user == pytest.approx(1000 / 6.018531635219421)
    assert (p.output_tok_s, p.ttft_ms) == (pytest.approx(413.894, abs=1e-3), pytest.approx(44.1618, abs=1e-4))
    ctx = c.context
    assert (ctx.model, ctx.engine, ctx.format, ctx.date) == ("neuralmagic/Meta-Llama-3.1-8B-FP8", "vllm", "vllm",
                                                             "2024-09-07T08:26:34")
    # ISL/OSL = total tokens / completed = 1,369 / 10 and 442 / 10.
    assert (ctx.isl, ctx.osl) == (pytest.approx(136.9), pytest.approx(44.2))
    assert "mean_tpot_ms" in ctx.metrics and "Little's law" in ctx.metrics
    assert validate_curve(c) == (c, ())


def test_a_one_point_curve_sizes_only_at_slas_it_meets():
    # vLLM point: 166.15 tok/s/user, 413.89 output tok/s. 60,000 TPM = 1,000 tok/s; / (413.89 x 0.7) = 3.45 -> 4.
    c = load_curve(VLLM)
    r = size(c, SizingRequest(tpm=60_000, slas=(100,), gpus_per_replica=1))
    assert (r.rows[0].replicas, r.rows[0].throughput_basis) == (4, "measured")
    with pytest.raises(SizingError, match="SLA 200 tok/s/user is above the best measured point"):
        size(c, SizingRequest(tpm=60_000, slas=(200,), gpus_per_replica=1))


def test_sglang_jsonl_one_curve_per_workload():
    # 7 runs: 5 random 1024/1024 (request rates 1, 2, 4, 8, 16) and 2 ShareGPT (rates 4, 8).
    random, sharegpt = load_curves(SGLANG)
    assert "dataset_name=random" in random.context.workload and "random_input_len=1024" in random.context.workload
    assert sharegpt.context.workload == "dataset_name=sharegpt"
    assert (len(random.points), len(sharegpt.points)) == (5, 2)
    first = random.points[0]
    # Little's law on the achieved rate: 300 completed / 298.37 s x 7,840.6 ms = 7.8835 in flight
    # (the published CSV's 7.8 used the offered 1.0 rps). tok/s/user = 1000 / median ITL 13.639 ms = 73.32.
    assert first.concurrency == pytest.approx(300 / 298.3675805060193 * 7.840616212638561)
    assert first.tok_s_user == pytest.approx(73.3194, abs=1e-4)
    assert first.output_tok_s == pytest.approx(537.414, abs=1e-3)
    assert first.ttft_ms == pytest.approx(85.745, abs=1e-3)  # median: this SGLang version writes no mean TTFT
    assert [round(p.tok_s_user, 2) for p in random.points] == [73.32, 67.43, 51.49, 14.13, 5.58]
    # random_range_ratio 0.0 draws lengths up to 1024: the measured mean ISL is 510, not 1024.
    assert random.context.isl == pytest.approx(3_929_457 / 7_700, abs=1e-6)
    assert random.context.engine == "sglang" and "median_itl_ms" in random.context.metrics
    assert curve_problems(random) == [] and curve_problems(sharegpt) == []
    with pytest.raises(SizingError, match="2 curves found"):
        load_curve(SGLANG)
    assert load_curve(SGLANG, select="sharegpt") == sharegpt


def test_guidellm_v2_sweep_is_per_user_from_itl_and_aggregate_from_output_tps():
    (c,) = load_curves(GUIDELLM)
    # streams 1, 4, 16; tok/s/user = 1000 / inter_token_latency_ms (successful mean);
    # aggregate = output_tokens_per_second (server total): 8 requests x 64 tokens / 6 s = 85.33 at c=1.
    assert [p.concurrency for p in c.points] == [1, 4, 16]
    assert c.points[0].tok_s_user == pytest.approx(1000 / 10.630060282964553)
    assert [round(p.output_tok_s, 2) for p in c.points] == [85.33, 341.33, 1365.33]
    assert c.points[2].output_tok_s > 16 * 60  # the aggregate is the server's, far above one user's ~95 tok/s
    assert (c.context.model, c.context.tool, c.context.isl, c.context.osl) == (
        "llama-3.1-8b-instruct", "guidellm 0.8.1", 221, 64)
    assert c.context.date == "2026-11-21T19:22:46+00:00"
    # The mock server is faster per user at c=4 (96.99) than at c=1 (94.07): validation names c=1.
    (problem,) = curve_problems(c)
    assert "c=1: 94.07 tok/s/user" in problem and "below c=4: 96.99" in problem
    fixed, notes = validate_curve(c, repair=True)
    assert [p.concurrency for p in fixed.points] == [4, 16] and [p.concurrency for p in fixed.dropped] == [1]
    # the library's words; `ledger size` names its option (ledger.hints)
    assert "the repair dropped c=1: 94.07 tok/s/user" in notes[0]
    assert "--repair dropped c=1: 94.07 tok/s/user" in say_one(notes[0], SIZE_NAMES)


def test_aiperf_export_is_a_one_point_curve():
    (c,) = load_curves(AIPERF)
    (p,) = c.points
    # concurrency 4 from the profiling phase; output_token_throughput_per_user avg 97.087 (= 1000 / ITL 10.30 ms).
    assert (p.concurrency, round(p.tok_s_user, 3), round(p.output_tok_s, 3), round(p.ttft_ms, 3)) == (
        4.0, 97.087, 358.178, 57.083)
    assert (c.context.model, c.context.tool, c.context.isl, c.context.osl) == (
        "llama-3.1-8b-instruct", "aiperf 0.13.0", 211.0, 64.0)


def test_aiperf_files_merge_into_one_curve(tmp_path):
    # One AIPerf export per load level: a second run at concurrency 8 (same format, slower per user).
    data = json.loads(AIPERF.read_text())
    data["input_config"]["phases"][0]["concurrency"] = 8
    data["output_token_throughput_per_user"]["avg"] = 90.0
    data["output_token_throughput"]["avg"] = 700.0
    second = tmp_path / "aiperf_c8.json"
    second.write_text(json.dumps(data))
    c = load_curve([AIPERF, second])
    assert [(p.concurrency, p.tok_s_user) for p in c.points] == [(4, pytest.approx(97.087, abs=1e-3)), (8, 90.0)]
    assert c.context.source == f"{AIPERF.name} + aiperf_c8.json"
    with pytest.raises(SizingError, match="different model"):
        merge_curves([load_curve(AIPERF), load_curve(VLLM)])


def test_published_curves_hold_two_curves_selected_by_source_or_model():
    vultr, datacrunch = load_curves(PUBLISHED)
    assert (vultr.context.model, len(vultr.points)) == ("Nemotron Nano 30B", 9)
    assert (datacrunch.context.model, len(datacrunch.points)) == ("Llama-3.3-70B-Instruct", 5)
    assert (vultr.context.gpus_per_replica, vultr.context.isl, vultr.context.osl) == (2, 2048, 512)
    assert vultr.context.precision == "fp8" and vultr.context.hardware == "B200 (HGX)"
    assert load_curve(PUBLISHED, select="vultr") == vultr
    assert load_curve(PUBLISHED, select="llama-3.3") == datacrunch
    with pytest.raises(SizingError, match="no curve matches 'mixtral'"):
        load_curve(PUBLISHED, select="mixtral")
    assert curve_problems(datacrunch) == []


def test_vultr_curve_fails_naming_its_concurrency_32_point():
    vultr = load_curve(PUBLISHED, select="vultr")
    with pytest.raises(SizingError) as e:
        validate_curve(vultr)
    (problem,) = e.value.problems
    # 127.23 tok/s/user at c=32 is below 148.37 at c=64 (real noise).
    assert "c=32: 127.23 tok/s/user (published_curves.csv:5)" in problem
    assert "below c=64: 148.37 tok/s/user" in problem and "(repair the curve to keep the upper envelope)" in problem
    assert "(use --repair to keep the upper envelope)" in say_one(problem, SIZE_NAMES)  # as `ledger size` says it
    with pytest.raises(SizingError, match="c=32"):
        size(vultr, SizingRequest(tpm=3_000_000, slas=(100,), gpus_per_replica=2))


def test_vultr_curve_passes_with_repair_which_says_what_it_dropped():
    vultr = load_curve(PUBLISHED, select="vultr")
    fixed, notes = validate_curve(vultr, repair=True)
    assert [p.concurrency for p in fixed.dropped] == [32]
    assert len(fixed.points) == 8 and curve_problems(fixed) == []
    (note,) = notes
    assert note.endswith("the repair dropped c=32: 127.23 tok/s/user (published_curves.csv:5): its tok/s/user "
                         "is below c=64: 148.37 tok/s/user (published_curves.csv:6) at a higher concurrency")
    assert say_one(note, SIZE_NAMES) == note.replace("the repair dropped", "--repair dropped")
    # TPM 3,000,000 = 50,000 tok/s. SLA 100: c* = 128 (112.23 >= 100 > 84.96 at 256), measured 11,556 tok/s;
    # 50,000 / (11,556 x 0.7 = 8,089.2) = 6.18 -> 7 replicas x 2 GPUs = 14.
    # SLA 140: c* = 64 (148.37), 8,120 tok/s; 50,000 / 5,684 = 8.80 -> 9 replicas -> 18 GPUs. The dropped c=32
    # point never was c* for any SLA: a repair changes no measured answer.
    # capacity at SLA 100 = 11,556 x (2,048 + 512) / 512 / 2 = 28,890 active tokens per GPU-second.
    r = size(vultr, SizingRequest(tpm=3_000_000, slas=(100, 140), gpus_per_replica=2, repair=True))
    assert [(row.c_star, row.replica_output_tok_s, row.replicas, row.gpus) for row in r.rows] == [
        (128, 11_556, 7, 14), (64, 8_120, 9, 18)]
    assert r.rows[0].capacity_tokens_per_gpu_s == pytest.approx(28_890)
    assert r.repairs == notes and r.status == "VERDICT"


def test_anchor_errors_name_the_entry():
    with pytest.raises(SizingError) as e:
        parse_anchors("1:215.5,10,x:3")
    assert e.value.problems == ("anchors: entry 2 '10' is not concurrency:tok_s_user",
                                "anchors: entry 3 'x:3' is not two numbers")
    with pytest.raises(SizingError, match="the curve has no points"):
        validate_curve(parse_anchors(""))


def test_duplicate_and_non_positive_points_fail_even_with_repair():
    with pytest.raises(SizingError, match="concurrency 10 appears twice"):
        validate_curve(parse_anchors("1:200,10:120,10:110"), repair=True)
    with pytest.raises(SizingError, match="tok/s/user 0.0; it must be > 0"):
        validate_curve(parse_anchors("1:200,10:0"), repair=True)


def test_falling_throughput_is_past_the_knee():
    # c=16 serves 16 x 30 = 480 tok/s, less than c=8's 8 x 70 = 560 with more tok/s/user: never the operating point.
    c = parse_anchors("1:100,8:70,16:30")
    (problem,) = curve_problems(c)
    assert "output tok/s falls as concurrency rises: c=16: 30 tok/s/user" in problem and "560" in problem
    fixed, notes = validate_curve(c, repair=True)
    assert [p.concurrency for p in fixed.points] == [1, 8] and "less than c=8" in notes[0]


CSV_TEXT = """concurrency,tok_s_user,output_tok_s,ttft_ms
1,215.5,210,40
10,122.2,1200,85
256,41.8,,900
"""


def test_simple_csv_with_optional_columns():
    (c,) = parse_curves(CSV_TEXT, source="mine.csv")
    assert [(p.concurrency, p.tok_s_user, p.output_tok_s, p.ttft_ms) for p in c.points] == [
        (1, 215.5, 210, 40), (10, 122.2, 1200, 85), (256, 41.8, None, 900)]
    assert c.points[1].label == "mine.csv:3" and c.context.source == "mine.csv"
    assert detect_format(CSV_TEXT, "curve.txt") == "csv"


def test_csv_row_order_does_not_matter():
    lines = CSV_TEXT.splitlines()
    shuffled = "\n".join([lines[0], lines[3], lines[1], lines[2]])
    a, = parse_curves(CSV_TEXT, source="x.csv")
    b, = parse_curves(shuffled, source="x.csv")
    assert [(p.concurrency, p.tok_s_user) for p in a.points] == [(p.concurrency, p.tok_s_user) for p in b.points]


@pytest.mark.parametrize("text, needle", [
    ("concurrency,tok_s_usr\n1,200\n", "x.csv:1: unknown column 'tok_s_usr'"),
    ("concurrency,ttft_ms\n1,20\n", "no 'tok_s_user' column"),
    ("concurrency,tok_s_user\n1,abc\n", "x.csv:2: tok_s_user 'abc' is not a number"),
    ("concurrency,tok_s_user\n,200\n", "x.csv:2: concurrency is missing"),
    ("concurrency,tok_s_user,itl_or_tpot_ms\n1,200,10\n", "x.csv:2: tok_s_user 200.0 disagrees with 1000 / 10.0 ms"),
    ("concurrency,tok_s_user\n1,200,5\n", "x.csv:2: more fields than columns"),
    ("concurrency,tok_s_user,gpus\n1,200,2.5\n", "x.csv:2: gpus '2.5' must be a positive whole number"),
])
def test_csv_errors_name_file_and_line(text, needle):
    with pytest.raises(SizingError) as e:
        parse_curves(text, source="x.csv", fmt="csv")
    assert any(needle in p for p in e.value.problems), e.value.problems


def test_tpot_column_gives_tok_s_user():
    (c,) = parse_curves("concurrency,itl_or_tpot_ms\n1,4\n8,5\n", source="x.csv")
    assert [p.tok_s_user for p in c.points] == [250.0, 200.0]


def test_unknown_format_and_missing_file_fail_loudly(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    with pytest.raises(SizingError, match="cannot tell the curve format"):
        load_curves(f)
    with pytest.raises(SizingError, match="no such file"):
        load_curves("nowhere.json")
    with pytest.raises(SizingError, match="unknown curve format 'excel'"):
        load_curves(f, fmt="excel")


def test_sglang_line_that_is_not_json_is_named(tmp_path):
    lines = SGLANG.read_text().splitlines()
    bad = tmp_path / "runs.jsonl"
    bad.write_text("\n".join(lines[:2] + ["{oops"] + lines[2:]) + "\n")
    with pytest.raises(SizingError, match="runs.jsonl:3: not JSON"):
        load_curves(bad, fmt="sglang")


def test_a_curve_is_immutable():
    c = parse_anchors("1:200,10:100")
    assert isinstance(c, Curve)
    with pytest.raises(AttributeError):
        c.points = ()  # type: ignore[misc]
