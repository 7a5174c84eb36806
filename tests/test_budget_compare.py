"""`ledger budget compare` on the demo month (October 2026), forecast and GPU actuals worked by hand."""
from __future__ import annotations

import json
from decimal import Decimal as D

import pytest
from typer.testing import CliRunner

from ledger.cli import app

runner = CliRunner()

# Priced with the shipped books (the demo loads them): H100 on-demand us-east-1 $6.88, H200 $7.912,
# gpt-5 $1.25 / $0.125 / $10 per 1M, web search $10 per 1,000 calls.
PLAN = """
[plan]
name = "demo-check"
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

[[meter]]
meter = "tool_call"
sku = "openai-web-search"
quantity = "75000"
unit = "call"

[[charge]]
name = "licence"
category = "tools"
amount = "1500.00"

[[charge]]
name = "evaluation"
category = "evaluation"
amount = "2450.00"

[[charge]]
name = "on-call"
category = "engineering_ops"
amount = "7200.00"

[[charge]]
name = "network"
category = "network"
amount = "412.80"

[[charge]]
name = "security audit, a third of the quarter"
category = "other"
amount = "5000.00"
"""


@pytest.mark.store
def test_compare_on_the_demo_month(ledger_home, tmp_path):
    from ledger import demo

    run = demo.run_demo().summary
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    r = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["month"], doc["scenario"], doc["run_id"], doc["currency"]) == ("2026-10", "base", run["run_id"], "USD")
    cat = {c["key"]: c for c in doc["categories"]}
    pools = {p["key"]: p for p in doc["pools"]}

    # Forecast, by hand:
    #   h100-chat: 6,000 TPM = 100 tok/s; one replica serves 200 -> 1 + 1 failure reserve = 2 GPUs
    #              2 x 744 h x $6.88 = 10,237.44
    #   h200-code: 12,000 TPM = 200 tok/s; one replica serves 8 x 70 = 560 -> 1 replica = 4 GPUs
    #              4 x 744 h x $7.912 = 23,546.112
    # Actual GPU, by hand from the demo's fleet:
    #   h100-chat: 744 h serving + 3 Sundays x 3 h pre-scaled + 744 h failure reserve = 1,497 GPU-h x $6.88 = 10,299.36
    #   h200-code: 4 x 744 h serving + 4 x 72 h canary = 3,264 GPU-h x $7.912 = 25,824.768
    assert pools["h100-chat"] == {"dimension": "pool", "key": "h100-chat", "forecast": "10237.440000",
                                  "actual": "10299.360000", "error": "61.920000",
                                  "relative_error": "0.0060", "reason": None}  # 61.92 / 10,237.44 = 0.00605
    assert pools["h200-code"] == {"dimension": "pool", "key": "h200-code", "forecast": "23546.112000",
                                  "actual": "25824.768000", "error": "2278.656000",
                                  "relative_error": "0.0968", "reason": None}  # 2,278.656 / 23,546.112 = 0.09677
    # gpu: 33,783.552 forecast, 36,124.128 actual: +2,340.576, 2,340.576 / 33,783.552 = 0.06928
    assert (cat["gpu"]["forecast"], cat["gpu"]["actual"], cat["gpu"]["error"], cat["gpu"]["relative_error"]) == \
        ("33783.552000", "36124.128000", "2340.576000", "0.0693")
    assert cat["gpu"]["actual"] == run["by_category"]["gpu"]
    # provider tokens: 24M x 1.25/1M + 36M x 0.125/1M + 11M x 10/1M = 30.00 + 4.50 + 110.00 = 144.50
    tok = cat["provider_tokens"]
    assert tok["forecast"] == "144.500000" and tok["actual"] == run["by_category"]["provider_tokens"]
    assert D(tok["error"]) == D(tok["actual"]) - D("144.50")
    assert D(tok["relative_error"]) == (D(tok["error"]) / D("144.50")).quantize(D("0.0001"))
    # tool: 75,000 x $0.01 = 750.00 + the 1,500.00 licence = 2,250.00
    assert cat["tool"]["forecast"] == "2250.000000" and cat["tool"]["actual"] == run["by_category"]["tool"]
    assert D(cat["tool"]["error"]) == D(cat["tool"]["actual"]) - D("2250")
    # fixed charges as invoiced in the demo: no error
    for key, amount in (("evaluation", "2450.000000"), ("engineering_ops", "7200.000000"), ("network", "412.800000")):
        assert (cat[key]["forecast"], cat[key]["actual"], cat[key]["error"], cat[key]["relative_error"]) == \
            (amount, amount, "0.000000", "0.0000")
    # other: the Q4 audit, 15,000 x 31/92 days in October = 5,054.347826; forecast 5,000: +54.347826, 0.0109
    assert (cat["other"]["actual"], cat["other"]["error"], cat["other"]["relative_error"]) == \
        ("5054.347826", "54.347826", "0.0109")
    # storage was not forecast: the error is the actual, the relative error undefined, and said why
    assert cat["storage"]["forecast"] == "0.000000" and cat["storage"]["relative_error"] is None
    assert cat["storage"]["reason"] == "no forecast for it" and cat["storage"]["error"] == cat["storage"]["actual"]
    # the total forecast error is the sum of the category errors
    assert D(doc["total"]["actual"]) == D(run["total"])
    assert D(doc["total"]["error"]) == sum(D(c["error"]) for c in doc["categories"])

    table = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10"])
    assert table.exit_code == 0 and "h200-code" in table.stdout and "+9.7%" in table.stdout
    assert runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-11"]).exit_code == 1
