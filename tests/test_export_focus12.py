"""FOCUS 1.2: the export of the demo month passes focus-validator 2.2.1 offline, the harness fails a
broken file, and the row mapping checked by hand.

focus-validator 2.2.1 (its bundled rules are FOCUS 1.2, model 1.2.0.1) needs Python 3.12 and
``pyarrow<15`` (its numpy pin breaks newer pyarrow), so it runs in a virtual environment of its own:
the one named by LEDGER_FOCUS12_VENV (created there when missing, as .ci/run does), else a fresh one
for this session, made with a Python 3.12 found on the machine (``python3.12`` on PATH or under
``pyenv root``). Only when there is none are the validator tests skipped. It runs offline
(``--block-download``) from its site-packages folder.

The validator exits 0 whatever it finds: the harness reads its summary line and the rules it marks
FAIL. One rule fails on every file that has an InvoiceId column (see KNOWN_CONTRADICTION); the
tests allow exactly that one and check that the rule stating InvoiceId's real requirement passes.
2.2.1 lets a single row with a value off FOCUS's lists through, so the harness also applies the
model's own lists of allowed values to every row (:func:`allowed_value_problems`).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from datetime import date, datetime, timezone
from decimal import Decimal as D
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.allocate import Line
from ledger.cli import app
from ledger.economics import RunData, RunInfo
from ledger.export.focus12 import (APPLICABILITY_CRITERIA, COLUMNS, FOCUS12_COLUMNS, NULL_COLUMNS,
                                   allocated_ratios, allocation_as_focus12, focus12_csv, focus12_row, focus_unit)

runner = CliRunner()

VALIDATOR = ("focus-validator==2.2.1", "pyarrow<15")
#: focus-validator 2.2.1's model states InvoiceId's nullability as an OR (InvoiceId-C-003-C) of
#: "MUST be null" (C-004-C) and "MUST NOT be null" (C-005-C), neither with a condition (whether a
#: charge belongs to an invoice is not in the data), and reports each branch as a rule of its own:
#: with InvoiceId set C-004-C fails on every row, with it null C-005-C does, without the column both
#: do. The export sets InvoiceId (the run is the period's chargeback statement), so C-004-C fails.
KNOWN_CONTRADICTION = frozenset({"InvoiceId-C-004-C"})
SUMMARY = re.compile(r"^Total: (\d+) \| Pass: (\d+) \| Fail: (\d+) \| Skipped: (\d+)$", re.M)
RULE = re.compile(r"^(?:✅|❌|⏭️|\[PASS\]|\[FAIL\]|\[SKIP\]) (\S+): (PASS|FAIL|SKIPPED)\b", re.M)


# ---- the validator's environment ----------------------------------------------------------------

def python312() -> str | None:
    """A Python 3.12 interpreter, found as .ci/run finds one: ``python3.12`` on PATH, else the
    newest 3.12 under ``pyenv root``; each candidate is asked for its version (a pyenv shim may
    name a version that is not installed)."""
    candidates = [sys.executable] if sys.version_info[:2] == (3, 12) else []
    if which := shutil.which("python3.12"):
        candidates.append(which)
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        root = ""
    if root:
        found = Path(root, "versions").glob("3.12*/bin/python3.12")
        candidates += [str(p) for p in sorted(found, key=lambda p: [int(x) for x in re.findall(r"\d+", p.parts[-3])],
                                              reverse=True)]
    for exe in candidates:
        probe = subprocess.run([exe, "-c", "import sys; sys.exit(sys.version_info[:2] != (3, 12))"],
                               capture_output=True, timeout=60)
        if probe.returncode == 0:
            return exe
    return None


@pytest.fixture(scope="session")
def focus12_validator(tmp_path_factory) -> tuple[Path, Path]:
    """(the focus-validator 2.2.1 executable, the site-packages folder to run it from)."""
    given = os.environ.get("LEDGER_FOCUS12_VENV")
    venv = Path(given) if given else tmp_path_factory.mktemp("focus12-venv")
    exe, python = venv / "bin" / "focus-validator", venv / "bin" / "python"
    if not exe.exists():
        py312 = python312()
        if py312 is None:
            pytest.skip("focus-validator 2.2.1 needs Python 3.12, and none was found (python3.12 on PATH or "
                        "under `pyenv root`)")
        subprocess.run([py312, "-m", "venv", "--clear", str(venv)], check=True)
        pip = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              *VALIDATOR], capture_output=True, text=True)
        assert pip.returncode == 0, pip.stderr[-2000:]
    site = subprocess.run([str(python), "-c", "import focus_validator, os; "
                           "print(os.path.dirname(os.path.dirname(focus_validator.__file__)))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return exe, Path(site)


def validate(validator, path: Path, criteria=()) -> dict[str, set[str]]:
    """Run focus-validator 2.2.1 on `path` (FOCUS 1.2, offline) and return the rule ids by status
    (PASS, FAIL, SKIPPED); fails when it crashes or prints no summary, or when the summary's counts
    and the rules it lists disagree."""
    return validate_all(validator, [(path, criteria)])[0]


def validate_all(validator, files) -> list[dict[str, set[str]]]:
    """:func:`validate` of each (path, applicability criteria) in `files`, in order: one run of the
    validator's command line per file, all in one process of its environment (its start and imports
    paid once: ``focus_support.run_validator``)."""
    from focus_support import run_validator

    exe, site = validator
    runs = []
    for path, criteria in files:
        args = ["--data-file", str(path), "--validate-version", "1.2.0.1", "--block-download"]
        if criteria:
            args += ["--applicability-criteria", ",".join(criteria)]
        runs.append(args)
    return [_by_status(run) for run in run_validator(exe, site, runs)]


def _by_status(run: subprocess.CompletedProcess) -> dict[str, set[str]]:
    """The rule ids of one validator run by status, its summary line checked against them."""
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    summary = SUMMARY.search(run.stdout)
    assert summary, out[-3000:]
    by_status: dict[str, set[str]] = defaultdict(set)
    for rule, status in RULE.findall(run.stdout):
        by_status[status].add(rule)
    total, passed, failed, skipped = (int(x) for x in summary.groups())
    assert (len(by_status["PASS"]), len(by_status["FAIL"]), len(by_status["SKIPPED"])) == (passed, failed, skipped)
    assert total == passed + failed + skipped and total > 500, run.stdout[:500]
    return by_status


def allowed_value_problems(validator, path: Path) -> list[str]:
    """The validator's own lists of allowed values, applied to every row of `path`: its bundled
    model states them as an OR of one CheckValue per value (ChargeCategory, ChargeFrequency,
    ServiceCategory, ServiceSubcategory, PricingCategory, ...) and the ServiceCategory of each
    ServiceSubcategory as an OR of pairs. 2.2.1 lets a row with a value off the list through when
    the other rows hold listed values, so the harness checks each row itself. One line per problem."""
    _exe, site = validator
    model = json.loads((site / "focus_validator" / "rules" / "model-1.2.0.1.json").read_text(encoding="utf-8"))
    allowed: dict[str, set] = {}
    pairs: set[frozenset] = set()
    for rule in model["ModelRules"].values():
        req = rule["ValidationCriteria"].get("Requirement") or {}
        items = req.get("Items") or []
        if req.get("CheckFunction") != "OR" or not items:
            continue
        if all(i.get("CheckFunction") == "CheckValue" for i in items) and len({i["ColumnName"] for i in items}) == 1:
            allowed[items[0]["ColumnName"]] = {i["Value"] for i in items}
        elif all(i.get("CheckFunction") == "AND" and {j.get("CheckFunction") for j in i["Items"]} == {"CheckValue"}
                 for i in items):
            pairs |= {frozenset((j["ColumnName"], j["Value"]) for j in i["Items"]) for i in items}
    assert {"ChargeCategory", "ServiceSubcategory"} <= set(allowed) and pairs  # the model still says it this way
    problems = []
    for n, row in enumerate(read(path.read_text(encoding="utf-8")), start=2):
        for column, values in allowed.items():
            if row.get(column) and row[column] not in values:
                problems.append(f"{path.name}, line {n}, {column}: {row[column]!r} is not an allowed value")
        if row.get("ServiceSubcategory") and frozenset({("ServiceSubcategory", row["ServiceSubcategory"]),
                                                        ("ServiceCategory", row["ServiceCategory"])}) not in pairs:
            problems.append(f"{path.name}, line {n}, ServiceSubcategory: {row['ServiceSubcategory']!r} is not a "
                            f"subcategory of {row['ServiceCategory']!r}")
    return problems


def assert_passes(result: dict[str, set[str]]) -> None:
    """Nothing fails but the validator's own contradiction, and the rule that states InvoiceId's
    requirement (the OR) passes, as do both nullability branches' neighbours that can."""
    assert result["FAIL"] == KNOWN_CONTRADICTION, sorted(result["FAIL"])
    assert {"InvoiceId-C-003-C", "InvoiceId-C-005-C", "InvoiceId-C-000-O"} <= result["PASS"]


def read(text: str) -> list[dict[str, str]]:
    """The rows of a FOCUS CSV (a null reads as "")."""
    return list(csv.DictReader(io.StringIO(text)))


# ---- the demo month through the CLI, validated ----------------------------------------------------

def test_focus12_export_of_the_demo_month_passes_focus_validator_2_2_1(demo_ledger, tmp_path, focus12_validator):
    result = demo_ledger
    out = tmp_path / "focus.csv"
    r = runner.invoke(app, ["export", "--period", "2026-10", "--focus", str(out)])  # 1.2 is the default
    assert r.exit_code == 0, r.output
    assert "FOCUS 1.2 CSV" in r.output

    text = out.read_text(encoding="utf-8")
    rows = read(text)
    assert list(rows[0]) == list(COLUMNS) and len(rows) == result.summary["lines"]
    assert sum(D(r["BilledCost"]) for r in rows) == D(result.summary["total"])  # exactly, in Decimal
    assert all(r["BilledCost"] == r["EffectiveCost"] == r["ListCost"] == r["ContractedCost"] for r in rows)
    assert all(r[c] == "" for r in rows for c in NULL_COLUMNS)
    # a null is an empty unquoted field: every line ends with no ChargeClass value between two commas
    assert all(line.startswith('"') and ',,' in line for line in text.splitlines()[1:])
    assert {r["InvoiceId"] for r in rows} == {r["x_RunId"] for r in rows} == {result.summary["run_id"]}
    assert {r["ConsumedUnit"] for r in rows if r["x_Unit"] == "token"} == {"Tokens"}
    assert {r["PricingUnit"] for r in rows if r["x_Unit"] == "token"} == {"1000000 Tokens"}
    models = {r["x_Model"] for r in rows if r["x_Model"]}
    assert {json.loads(r["SkuPriceDetails"])["x_ModelId"] for r in rows if r["SkuPriceDetails"]} == models
    # every origin charge (a pool's GPU time of a day, a day's shared charges of a category) is split
    # into ratios that add up to 1
    sums: dict[tuple, D] = defaultdict(D)
    for r in rows:
        if r["x_AllocatedMethodDetails"]:
            ratio = json.loads(r["x_AllocatedMethodDetails"], parse_float=D)["Elements"][0]["AllocatedRatio"]
            sums[(r["ChargePeriodStart"], r["x_Pool"] or r["x_Category"])] += D(str(ratio))
    assert sums and set(sums.values()) == {D(1)}
    assert {r["x_AllocatedMethodId"] for r in rows} == {"gpu-by-active_tokens", "charge-by-rule", ""}

    plain, with_criteria = validate_all(focus12_validator, [(out, ()), (out, APPLICABILITY_CRITERIA)])
    assert_passes(plain)
    assert allowed_value_problems(focus12_validator, out) == []
    assert_passes(with_criteria)
    # the criteria switch on rules the plain run skips, and they pass
    assert {"SubAccountName-C-005-C", "Tags-C-001-M", "ConsumedUnit-C-006-C", "ResourceType-C-005-C",
            "PricingCategory-C-007-M"} <= with_criteria["PASS"]


# ---- a small run by hand ----------------------------------------------------------------------------

DAY = date(2026, 10, 1)


def line(**kw) -> Line:
    """A Line of 2026-10-01 with the defaults of a tenant's succeeded work."""
    base = dict(day=DAY, kind="tenant", tenant=None, product=None, model=None, pool=None, provider=None,
                category="gpu", work="succeeded", shared_from=None, unit="token")
    return Line(**(base | kw))


def small_run(lines, *, idle_policy="separate") -> RunData:
    info = RunInfo(run_id="r-1", start=datetime(2026, 10, 1, tzinfo=timezone.utc),
                   end=datetime(2026, 11, 1, tzinfo=timezone.utc), currency="USD", price_books=("book@2026-10-01",),
                   idle_policy=idle_policy, basis="active_tokens")
    return RunData(info=info, lines=tuple(lines), usage=(), tasks=())


#: The allocation guide's pool p1 on October 1 (docs/allocation.md, "GPU share, idle slack"): tenant
#: a 9.00 for 10,800 active tokens, b 3.60 for 3,600, idle slack 9.00 (9,000 GPU-s), idle reserve 7.20
#: (7,200 GPU-s); then a's provider tokens, an observability charge split 6.00 / 2.00 and half a day
#: of an unallocated charge.
LINES = (
    line(tenant="a", product="chat", model="m8b", pool="p1", quantity=D(10800), amount=D("9.000000")),
    line(tenant="b", product="chat", model="m8b", pool="p1", quantity=D(3600), amount=D("3.600000")),
    line(kind="idle_slack", pool="p1", quantity=D(9000), unit="gpu * second", amount=D("9.000000")),
    line(kind="idle_reserve", pool="p1", quantity=D(7200), unit="gpu * second", amount=D("7.200000")),
    line(tenant="a", product="agent", model="gpt-5", provider="openai", category="provider_tokens",
         quantity=D(1234567), amount=D("2.469134")),
    line(tenant="a", category="observability", quantity=D(86400), unit="second", amount=D("6.000000")),
    line(tenant="b", category="observability", quantity=D(86400), unit="second", amount=D("2.000000")),
    line(kind="unallocated", category="other", quantity=D(43200), unit="second", amount=D("3.000000")),
)


def rows_of(data: RunData) -> list[dict[str, str | None]]:
    ratios = allocated_ratios(data.lines)
    return [focus12_row(ln, data, billing_account_id="acct", billing_account_name="Platform", ratio=ratios.get(i))
            for i, ln in enumerate(data.lines)]


def test_ratios_split_each_origin_charge_into_parts_that_add_up_to_one():
    # p1's day: 9.00 + 3.60 + 9.00 + 7.20 = 28.80 -> 0.3125, 0.125, 0.3125, 0.25; observability's
    # day: 8.00 -> 0.75, 0.25; the unallocated charge is all of its own day: 1. Provider tokens: no split.
    assert allocated_ratios(LINES) == {0: D("0.3125"), 1: D("0.125"), 2: D("0.3125"), 3: D("0.25"),
                                       5: D("0.75"), 6: D("0.25"), 7: D(1)}
    # thirds by largest remainder at 1e-9: the spare unit goes to the first key of the tie
    thirds = [line(tenant=t, category="network", quantity=D(86400), unit="second", amount=D("1.000000"))
              for t in "abc"]
    assert allocated_ratios(thirds) == {0: D("0.333333334"), 1: D("0.333333333"), 2: D("0.333333333")}
    # a credit and a cost in one origin: each its own share of the net 4.00 (1.5 and -0.5)
    mixed = [line(tenant="a", category="tool", quantity=D(86400), unit="second", amount=D("6.000000")),
             line(tenant="b", category="tool", quantity=D(86400), unit="second", amount=D("-2.000000"))]
    assert allocated_ratios(mixed) == {0: D("1.5"), 1: D("-0.5")}


def test_a_gpu_line_by_hand():
    row = rows_of(small_run(LINES))[0]
    assert row["BilledCost"] == row["EffectiveCost"] == row["ListCost"] == row["ContractedCost"] == "9.000000"
    assert row["PricingCurrencyEffectiveCost"] == "9.000000"
    assert row["PricingCurrency"] == row["BillingCurrency"] == "USD"
    assert (row["ChargeCategory"], row["ChargeFrequency"], row["ChargeClass"]) == ("Usage", "Usage-Based", None)
    assert (row["ChargePeriodStart"], row["ChargePeriodEnd"]) == ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z")
    assert (row["BillingPeriodStart"], row["BillingPeriodEnd"]) == ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
    # 10,800 tokens consumed; priced per million: 10,800 / 1,000,000 = 0.0108
    assert (row["ConsumedQuantity"], row["ConsumedUnit"]) == ("10800.0", "Tokens")
    assert (row["PricingQuantity"], row["PricingUnit"]) == ("0.0108", "1000000 Tokens")
    assert (row["ResourceId"], row["ResourceName"], row["ResourceType"]) == ("p1", "p1", "GPU pool")
    assert (row["ServiceCategory"], row["ServiceSubcategory"], row["ServiceName"]) == (
        "AI and Machine Learning", "Generative AI", "Self-hosted LLM inference")
    assert (row["SkuId"], row["SkuPriceId"], row["SkuMeter"]) == ("gpu:p1", "gpu:p1:m8b", "GPU Time")
    assert row["SkuPriceDetails"] == '{"x_ModelId":"m8b"}'
    assert (row["PricingCategory"], row["InvoiceId"], row["ProviderName"], row["PublisherName"]) == (
        "Other", "r-1", "Platform", "Platform")
    assert (row["SubAccountId"], row["SubAccountName"], row["SubAccountType"]) == ("a", "a", "Tenant")
    assert row["Tags"] == ('{"ledger/kind":"tenant","ledger/work":"succeeded","model":"m8b","pool":"p1",'
                           '"product":"chat","tenant":"a"}')
    # 9.00 of p1's 28.80 that day: 0.3125, weighed by its 10,800 active tokens
    assert row["x_AllocatedMethodId"] == "gpu-by-active_tokens"
    assert row["x_AllocatedMethodDetails"] == (
        '{"Elements":[{"AllocatedRatio":0.3125,"UsageUnit":"Tokens","UsageQuantity":10800}]}')
    assert (row["x_AllocatedResourceId"], row["x_AllocatedResourceName"]) == ("a/chat/m8b", "tenant a, product chat, "
                                                                                         "model m8b")
    assert row["x_AllocatedTags"] == '{"ledger/origin":"pool/p1"}'
    assert all(row[c] is None for c in NULL_COLUMNS)


def test_a_provider_token_line_by_hand():
    row = rows_of(small_run(LINES))[4]
    assert row["BilledCost"] == "2.469134" and row["PricingCategory"] == "Standard"
    # 1,234,567 tokens = 1.234567 million
    assert (row["ConsumedQuantity"], row["ConsumedUnit"], row["PricingQuantity"], row["PricingUnit"]) == (
        "1234567.0", "Tokens", "1.234567", "1000000 Tokens")
    # the platform provides and invoices; openai publishes the model
    assert (row["ProviderName"], row["InvoiceIssuerName"], row["PublisherName"]) == ("Platform", "Platform", "openai")
    assert (row["ServiceName"], row["ServiceSubcategory"]) == ("openai API", "Generative AI")
    assert (row["ResourceId"], row["ResourceName"], row["ResourceType"]) == ("openai/gpt-5", "gpt-5", "Model endpoint")
    assert (row["SkuId"], row["SkuPriceId"], row["SkuMeter"], row["SkuPriceDetails"]) == (
        "provider_tokens:openai:gpt-5", "provider_tokens:openai:gpt-5", "Tokens", '{"x_ModelId":"gpt-5"}')
    # a's own usage, not a split: no allocation columns
    assert all(row[c] is None for c in ("x_AllocatedMethodId", "x_AllocatedMethodDetails", "x_AllocatedResourceId",
                                        "x_AllocatedResourceName", "x_AllocatedTags"))


def test_a_shared_charge_line_and_its_unallocated_rest_by_hand():
    rows = rows_of(small_run(LINES))
    a = rows[5]
    assert (a["BilledCost"], a["ChargeFrequency"], a["PricingCategory"]) == ("6.000000", "Recurring", "Other")
    # a whole day of the charge: 86,400 seconds, 1 day
    assert (a["ConsumedQuantity"], a["ConsumedUnit"], a["PricingQuantity"], a["PricingUnit"]) == (
        "86400.0", "Seconds", "1.0", "Days")
    assert (a["ServiceCategory"], a["ServiceSubcategory"], a["ServiceName"]) == (
        "Management and Governance", "Observability", "Observability")
    assert (a["SkuId"], a["SkuMeter"], a["SkuPriceDetails"], a["ResourceId"]) == (
        "observability:charge", "Shared Charge", None, None)
    # 6.00 of the day's 8.00 of observability charges
    assert (a["x_AllocatedMethodId"], a["x_AllocatedMethodDetails"]) == (
        "charge-by-rule", '{"Elements":[{"AllocatedRatio":0.75}]}')
    assert (a["x_AllocatedResourceId"], a["x_AllocatedResourceName"]) == ("a", "tenant a")
    assert a["x_AllocatedTags"] == '{"ledger/origin":"charges/observability"}'
    assert rows[6]["x_AllocatedMethodDetails"] == '{"Elements":[{"AllocatedRatio":0.25}]}'
    rest = rows[7]
    # half a day: 43,200 s = 0.5 day; all of its own origin; allocated to nobody
    assert (rest["PricingQuantity"], rest["PricingUnit"], rest["ServiceSubcategory"]) == ("0.5", "Days",
                                                                                          "Other (Other)")
    assert (rest["x_AllocatedMethodId"], rest["x_AllocatedMethodDetails"]) == (
        "charge-by-rule", '{"Elements":[{"AllocatedRatio":1}]}')
    assert rest["x_AllocatedResourceId"] is rest["x_AllocatedTags"] is rest["SubAccountId"] is None


def test_idle_lines_by_hand_separate_and_shared():
    slack, reserve = rows_of(small_run(LINES))[2:4]
    # 9,000 idle GPU-seconds = 2.5 GPU-hours; 7,200 = 2
    assert (slack["ConsumedQuantity"], slack["ConsumedUnit"], slack["PricingQuantity"], slack["PricingUnit"]) == (
        "9000.0", "GPU-Seconds", "2.5", "GPU-Hours")
    assert (slack["SkuId"], slack["SkuMeter"], reserve["SkuId"], reserve["SkuMeter"]) == (
        "gpu:p1:idle_slack", "Idle GPU Time", "gpu:p1:idle_reserve", "Reserve GPU Time")
    assert reserve["PricingQuantity"] == "2.0"
    # the unallocated rest of p1's split: a method and a ratio, allocated to nobody
    assert (slack["x_AllocatedMethodId"], slack["x_AllocatedMethodDetails"]) == (
        "gpu-by-active_tokens", '{"Elements":[{"AllocatedRatio":0.3125}]}')
    assert reserve["x_AllocatedMethodDetails"] == '{"Elements":[{"AllocatedRatio":0.25}]}'
    assert slack["x_AllocatedResourceId"] is slack["SubAccountId"] is slack["x_AllocatedTags"] is None
    assert slack["Tags"] == '{"ledger/kind":"idle_slack","ledger/work":"succeeded","pool":"p1"}'

    # policy share (docs/allocation.md): a's share of the slack, 6.428571 for 6,428.571 GPU-s
    share = line(tenant="a", pool="p1", shared_from="idle_slack", quantity=D("6428.571429"), unit="gpu * second",
                 amount=D("6.428571"))
    [row] = rows_of(small_run([share], idle_policy="share"))
    assert (row["SkuId"], row["SkuMeter"], row["PricingQuantity"]) == ("gpu:p1:idle_slack", "Idle GPU Time",
                                                                       "1.785714286")  # 6428.571429 / 3600
    assert (row["x_AllocatedMethodId"], row["x_AllocatedResourceId"], row["x_AllocatedResourceName"]) == (
        "idle-by-direct-gpu-cost", "a", "tenant a")
    assert row["x_AllocatedTags"] == '{"ledger/origin":"pool/p1","ledger/shared-from":"idle_slack"}'
    assert row["x_AllocatedMethodDetails"] == '{"Elements":[{"AllocatedRatio":1}]}'


def test_the_csv_writes_nulls_bare_and_everything_else_quoted_and_inert():
    evil = line(tenant="=1+1", product="-2+3", model="@m", pool="p1", quantity=D(100), amount=D("1.000000"))
    text = allocation_as_focus12(small_run([*LINES, evil]))
    head, first = text.splitlines()[:2]
    assert head == ",".join(f'"{c}"' for c in COLUMNS)
    assert first.startswith('"9.000000","inference-ledger","Inference platform","Chargeback","USD",')
    # Tags, the 17 null columns (bare), then the method
    assert len(NULL_COLUMNS) == 17 and '"tenant"":""a""}"' + "," * 18 + '"gpu-by-active_tokens"' in first
    rows = read(text)
    assert sum(D(r["BilledCost"]) for r in rows) == D("43.269134")
    assert rows[-1]["x_Tenant"] == "'=1+1" and rows[-1]["x_AllocatedResourceId"] == "'=1+1/-2+3/@m"
    assert json.loads(rows[-1]["Tags"])["tenant"] == "=1+1"  # inside JSON it is data, not a cell
    assert list(rows[0])[:len(FOCUS12_COLUMNS)] == list(FOCUS12_COLUMNS)


@pytest.mark.parametrize("unit,expected", [
    ("token", "Tokens"), ("GB", "GB"), ("GiB * day", "GiB-Days"), ("gpu * second", "GPU-Seconds"),
    ("span", "Spans"), ("call", "Calls"), ("second", "Seconds"), ("byte", "B"), ("1e6 * token", "1000000 Tokens"),
    ("kWh", "KWh"), ("2.5 * GB", "Units"), ("GB / month", "Units"),
])
def test_ledger_units_as_focus_units(unit, expected):
    assert focus_unit(unit) == expected


# ---- the harness can fail ---------------------------------------------------------------------------

def test_the_harness_passes_a_good_file_and_fails_broken_ones(tmp_path, focus12_validator):
    rows = rows_of(small_run(LINES))
    good = tmp_path / "good.csv"
    good.write_text(focus12_csv(rows), encoding="utf-8")

    def broken(column: str, value: str | None) -> Path:
        bad_rows = [dict(r) for r in rows]
        bad_rows[1][column] = value  # None is written bare (a null), "" quoted (an empty string)
        bad = tmp_path / f"bad-{column}.csv"
        bad.write_text(focus12_csv(bad_rows), encoding="utf-8")
        return bad

    cases = (("BilledCost-C-003-M", "BilledCost", None),  # a blank mandatory cost
             ("ChargeClass-C-005-C", "ChargeClass", ""),  # an empty string is not a null
             ("BillingCurrency-C-006-M", "BillingCurrency", "XYZ"))  # not ISO 4217
    # the good file and each broken one validated on its own, in one process of the validator
    good_result, *results = validate_all(focus12_validator,
                                         [(good, ()), *((broken(column, value), ()) for _, column, value in cases)])
    assert_passes(good_result)
    assert allowed_value_problems(focus12_validator, good) == []
    for (rule, _column, _value), result in zip(cases, results, strict=True):
        assert rule in result["FAIL"], (rule, sorted(result["FAIL"]))
        with pytest.raises(AssertionError):
            assert_passes(result)
    # values off the model's lists, which 2.2.1 itself lets through in a single row
    bad = broken("ChargeCategory", "Usage-ish")
    assert allowed_value_problems(focus12_validator, bad) == [
        "bad-ChargeCategory.csv, line 3, ChargeCategory: 'Usage-ish' is not an allowed value"]
    bad = broken("ServiceSubcategory", "Observability")  # allowed, but under Management and Governance
    assert allowed_value_problems(focus12_validator, bad) == [
        "bad-ServiceSubcategory.csv, line 3, ServiceSubcategory: 'Observability' is not a subcategory of "
        "'AI and Machine Learning'"]
