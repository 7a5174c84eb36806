"""`ledger size`: the table, the JSON, pricing from a price book, the what-if, the memory fit, errors."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ledger.sizing.cli import register

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PUBLISHED = DATA / "curves" / "published_curves.csv"
SGLANG = DATA / "loadtest" / "sglang_bench_serving_llama33_70b_h200_online.jsonl"

runner = CliRunner()
app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    """A bare app with `size` registered, as ledger.cli does."""


register(app)

WORKED = ["size", "--tpm", "3000000", "--sla", "20,50,100,150,215", "--anchors", "1:215.5,10:122.2,256:41.8",
          "--gpus-per-replica", "4", "--util", "0.70"]

# 0.002 per GPU-second = 7.2 per GPU-hour; x 730 h = 5,256 per GPU-month.
BOOK = """
[book]
name = "test-cloud"
version = "2026-10-01"
currency = "USD"
source = "written by hand for the tests"
retrieved_at = 2026-10-01

[[price]]
meter = "gpu_time"
sku = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
price = "0.002"
per = "gpu * second"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/prices"
"""


@pytest.fixture
def book(tmp_path) -> list[str]:
    f = tmp_path / "books" / "test.toml"
    f.parent.mkdir()
    f.write_text(BOOK)
    return ["--device", "H100-SXM-80GB", "--region", "us-east-1", "--purchase-option", "on_demand",
            "--at", "2026-11-01T00:00:00Z", "--pricebooks", str(f.parent)]


def run(args: list[str], code: int = 0):
    r = runner.invoke(app, args, env={"COLUMNS": "160"})
    assert r.exit_code == code, (r.stdout, r.stderr)
    return r


def test_worked_example_table_reads_sla_first():
    out = run(WORKED).stdout
    assert "SLA-first sizing, VERDICT: measured points only" in out
    assert "TPM 3,000,000 output tokens/min = 50,000 tok/s, util 0.7, 4 GPUs per replica" in out
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    # one rule per column: replica tok/s has 10,700.8, so 1,222 reads 1,222.0
    assert [(c[0], c[1], c[3], c[6], c[7]) for c in cells] == [
        ("20", "256", "10,700.8", "7", "28"), ("50", "10", "1,222.0", "59", "236"),
        ("100", "10", "1,222.0", "59", "236"),
        ("150", "1", "215.5", "332", "1,328"), ("215", "1", "215.5", "332", "1,328")]


def test_worked_example_json():
    data = json.loads(run(WORKED + ["--json"]).stdout)
    assert data["status"] == "VERDICT"
    assert (data["tpm"], data["util"], data["gpus_per_replica"]) == (3_000_000, 0.7, 4)
    assert (data["curve"]["source"], data["curve"]["points"], data["curve"]["format"]) == ("anchors", 3, "anchors")
    first = data["rows"][0]
    assert set(first) >= {"sla_tok_s_user", "c_star", "tok_s_user", "replica_output_tok_s", "throughput_basis",
                          "replicas_serving", "replicas_reserve", "replicas", "gpus", "monthly_cost",
                          "capacity_tokens_per_gpu_s"}
    assert [(r["sla_tok_s_user"], r["c_star"], r["replicas"], r["gpus"]) for r in data["rows"]] == [
        (20, 256, 7, 28), (50, 10, 59, 236), (100, 10, 59, 236), (150, 1, 332, 1328), (215, 1, 332, 1328)]
    assert first["replica_output_tok_s"] == pytest.approx(10_700.8)
    assert first["monthly_cost"] is None and first["capacity_tokens_per_gpu_s"] is None


def test_interpolated_json_is_a_draft():
    data = json.loads(run(WORKED + ["--interpolate", "--json"]).stdout)
    assert data["status"] == "DRAFT" and data["interpolate"] is True
    assert [r["gpus"] for r in data["rows"]] == [28, 32, 120, 380, 1316]
    assert "c* with ~ lies between measured points" in run(WORKED + ["--interpolate"]).stdout


def test_monthly_cost_from_the_price_in_force(book):
    # 28 GPUs x 730 h x 7.2 = 147,168; 236 x 5,256 = 1,240,416; 1,328 x 5,256 = 6,979,968.
    data = json.loads(run(WORKED + book + ["--json"]).stdout)
    assert [r["monthly_cost"] for r in data["rows"]] == [
        "147168.000000", "1240416.000000", "1240416.000000", "6979968.000000", "6979968.000000"]
    p = data["pricing"]
    assert (p["price"], p["per"], p["price_per_gpu_hour"], p["hours_per_month"], p["currency"]) == (
        "0.002", "gpu * second", "7.2", "730", "USD")
    assert (p["book"], p["version"], p["at"]) == ("test-cloud", "2026-10-01", "2026-11-01T00:00:00+00:00")
    table = run(WORKED + book).stdout
    assert "USD/month" in table and "147,168.00" in table and "test-cloud@2026-10-01" in table


def test_hours_per_month_is_decimal(book):
    # 28 GPUs x 730.5 h x 7.2 = 147,268.8
    data = json.loads(run(WORKED + book + ["--hours-per-month", "730.5", "--json"]).stdout)
    assert data["rows"][0]["monthly_cost"] == "147268.800000"


def test_no_price_in_force_is_an_error_naming_the_key(book):
    args = WORKED + book
    args[args.index("--at") + 1] = "2025-12-31T23:00:00Z"
    r = run(args, code=1)
    assert "no price in force for meter gpu_time, sku H100-SXM-80GB, region us-east-1" in r.stderr
    assert "2025-12-31T23:00:00+00:00" in r.stderr
    r = run(WORKED + ["--device", "H100-SXM-80GB"], code=1)
    assert "pricing needs all of --device, --region and --purchase-option" in r.stderr


def test_what_if_prints_delta_gpus_and_money(tmp_path, book):
    better = tmp_path / "tuned.csv"
    better.write_text("concurrency,tok_s_user\n1,215.5\n10,150\n256,60\n")
    # SLA 50: base 236 GPUs; tuned c* = 256 (60 >= 50), 15,360 tok/s: 50,000 / 10,752 = 4.65 -> 5 -> 20 GPUs: -216.
    # SLA 100: tuned c* = 10 (150), 1,500 tok/s: 50,000 / 1,050 = 47.6 -> 48 -> 192 GPUs: -44.
    # SLA 150: tuned c* = 10 (150 >= 150): 192 GPUs vs 1,328: -1,136.  Money: delta GPUs x 5,256.
    args = ["size", "--tpm", "3000000", "--sla", "50,100,150", "--anchors", "1:215.5,10:122.2,256:41.8",
            "--gpus-per-replica", "4", "--compare-curve", str(better)] + book
    data = json.loads(run(args + ["--json"]).stdout)
    deltas = [(d["sla_tok_s_user"], d["gpus_base"], d["gpus_compare"], d["delta_gpus"], d["delta_monthly_cost"])
              for d in data["compare"]["deltas"]]
    assert deltas == [(50, 236, 20, -216, "-1135296.000000"), (100, 236, 192, -44, "-231264.000000"),
                      (150, 1328, 192, -1136, "-5970816.000000")]
    assert data["compare"]["curve"]["source"] == "tuned.csv" and data["compare"]["status"] == "VERDICT"
    out = run(args).stdout
    assert "what-if: tuned.csv (VERDICT) vs anchors (VERDICT)" in out
    assert "-216" in out and "-1,135,296.00" in out


def test_vultr_fails_naming_c32_and_repair_says_what_it_dropped():
    args = ["size", "--tpm", "3000000", "--sla", "100", "--curve", str(PUBLISHED), "--curve-select", "vultr",
            "--gpus-per-replica", "2"]
    r = run(args, code=1)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "c=32: 127.23 tok/s/user (published_curves.csv:5)" in lines[0]
    r = run(args + ["--repair"])
    assert "--repair dropped c=32: 127.23 tok/s/user" in r.stdout
    data = json.loads(run(args + ["--repair", "--json"]).stdout)
    assert [p["concurrency"] for p in data["curve"]["dropped_points"]] == [32]
    # c* = 128: 11,556 tok/s x (2,048 + 512) / 512 / 2 GPUs = 28,890 active tokens per GPU-second.
    row = data["rows"][0]
    assert (row["c_star"], row["gpus"], row["capacity_tokens_per_gpu_s"]) == (128, 14, pytest.approx(28_890))
    assert "its tok/s/user is below c=64: 148.37 tok/s/user" in data["repairs"][0]


def test_a_multi_curve_file_needs_a_selection():
    r = run(["size", "--tpm", "1000000", "--sla", "50", "--curve", str(PUBLISHED), "--gpus-per-replica", "2"], code=1)
    assert "2 curves found; pick one with --curve-select" in r.stderr


def test_real_sglang_file_sizes_with_its_own_shape():
    # ShareGPT curve (4 GPUs, H200): SLA 60 -> c* = 12.63 (72.25 >= 60 > 56.60), measured 746.08 tok/s.
    # 1,000,000 TPM = 16,666.7 tok/s; / (746.08 x 0.7 = 522.25) = 31.9 -> 32 replicas -> 128 GPUs.
    # ISL/OSL from the file (224.96 / 191.33): capacity = 746.08 x 416.29 / 191.33 / 4 = 405.8 per GPU-second.
    args = ["size", "--tpm", "1000000", "--sla", "60", "--curve", str(SGLANG), "--curve-select", "sharegpt",
            "--gpus-per-replica", "4", "--json"]
    data = json.loads(run(args).stdout)
    row = data["rows"][0]
    assert (round(row["c_star"], 2), row["replicas"], row["gpus"]) == (12.63, 32, 128)
    assert row["capacity_tokens_per_gpu_s"] == pytest.approx(746.075 * (224.961 + 191.326) / 191.326 / 4, rel=1e-4)
    assert data["curve"]["engine"] == "sglang" and data["isl"] == pytest.approx(224.961, abs=1e-3)


def test_memory_fit_caps_c_star(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                               "hidden_size": 4096}))
    base = ["size", "--tpm", "3000000", "--sla", "20", "--anchors", "1:215.5,10:122.2,256:41.8",
            "--gpus-per-replica", "1", "--isl", "1024", "--osl", "1024", "--model-config", str(cfg),
            "--gpu-mem-gib", "79.18", "--weights-gib", "14.99"]
    r = run(base, code=1)
    assert "the memory fit (--model-config) also needs --workspace-gib" in r.stderr
    data = json.loads(run(base + ["--workspace-gib", "4.89", "--json"]).stdout)
    m = data["memory"]
    assert (m["kv_bytes_per_token"], m["tokens_fit"], m["concurrency_cap"]) == (131_072, 420_921, 205)
    assert (data["kv_cap"], data["rows"][0]["c_star"], data["rows"][0]["limited_by"]) == (205, 10, "kv_cap")
    assert "KV cap 205 sequences" in run(base + ["--workspace-gib", "4.89"]).stdout


@pytest.mark.parametrize("change, needle", [
    ({"--tpm": "0"}, "--tpm must be > 0"),
    ({"--util": "1.5"}, "util must be in (0, 1] (got 1.5)"),
    ({"--util": "0"}, "util must be in (0, 1] (got 0.0)"),
    ({"--sla": "20,abc"}, "--sla: 'abc' is not a list of tok/s/user numbers"),
    ({"--sla": "500"}, "SLA 500 tok/s/user is above the best measured point, c=1: 215.50 tok/s/user"),
    ({"--anchors": "1:215.5,10:300"}, "tok/s/user rises with concurrency: c=1: 215.50 tok/s/user (anchor 1)"),
    ({"--anchors": "1:215.5,10"}, "anchors: entry 2 '10' is not concurrency:tok_s_user"),
])
def test_errors_are_one_line_each_and_exit_1(change, needle):
    args = list(WORKED)
    for k, v in change.items():
        args[args.index(k) + 1] = v
    r = run(args, code=1)
    assert needle in r.stderr and r.stdout == ""


def test_curve_source_is_exactly_one_of_anchors_or_curve():
    r = run(WORKED + ["--curve", str(PUBLISHED)], code=1)
    assert "exactly one of --anchors or --curve" in r.stderr
    r = run(["size", "--tpm", "1", "--sla", "1", "--gpus-per-replica", "1"], code=1)
    assert "exactly one of --anchors or --curve" in r.stderr


@pytest.mark.parametrize("extra, needle", [
    (["--curve-select", "vultr"], "--curve-select and --curve-format apply to --curve"),
    (["--compare-select", "x"], "--compare-select needs --compare-curve"),
    (["--weights-gib", "15"], "also give --model-config"),
    (["--at", "2026-11-01T00:00:00Z"], "--at and --pricebooks price the rows"),
])
def test_options_that_would_be_ignored_are_errors(extra, needle):
    r = run(WORKED + extra, code=1)
    assert needle in r.stderr


def test_the_ledger_cli_has_the_size_command():
    from ledger.cli import app as ledger_app

    r = runner.invoke(ledger_app, WORKED + ["--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows"][0]["gpus"] == 28
    assert re.search(r"--gpus-per-replica", runner.invoke(ledger_app, ["size", "--help"], env={"COLUMNS": "200"}).stdout)
