"""`ledger budget PLAN --from M --to M`: a window of the plan's months with quarterly subtotals, and
why moving a plan's start month moves January (growth compounds from the plan's first month)."""
from __future__ import annotations

import csv
import io
import json
from decimal import Decimal as D
from pathlib import Path

from typer.testing import CliRunner

from ledger.cli import app

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "examples" / "plan.toml"
BOOKS = ROOT / "pricebooks"
runner = CliRunner()


def _budget(plan: Path, *args: str) -> str:
    r = runner.invoke(app, ["budget", str(plan), "--pricebooks", str(BOOKS), "--scenario", "base", *args])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_a_window_keeps_the_growth_of_the_plan_and_its_quarter_adds_up(tmp_path):
    doc = json.loads(_budget(PLAN, "--from", "2027-01", "--to", "2027-03", "--json"))
    assert doc["months"] == ["2027-01", "2027-02", "2027-03"] and doc["window"] == {"from": "2027-01", "to": "2027-03"}
    jan = doc["summary"][0]
    # January is the plan's fourth month: 3 months of growth after 2026-10 (x1.08^3 = 1.259712)
    assert (jan["month"], jan["months_after_start"], jan["total"]) == ("2027-01", 3, "52441.357499")
    (q1,) = doc["quarters"]
    assert q1["quarter"] == "2027-Q1" and q1["complete"] and q1["months"] == doc["months"]
    # Q1 = 52,441.357499 + 49,295.45... + 52,698.12...: the exact sum of its months, and the window's total
    assert D(q1["total"]) == sum(D(s["total"]) for s in doc["summary"]) == D(doc["totals"]["base"]["total"])

    # The same plan moved to start in January: January is now its first month, with the volumes as
    # written (October's): 52,122.882. The difference, 318.475499, is the growth of the variable
    # usage alone (the GPUs are the same: 2 + 4, the replicas do not step at 1.26x the TPM):
    #   tokens 144.50 -> 182.028384, tool calls 900 -> 1,133.7408 (+ the 1,500 licence), egress
    #   2.88 -> 3.627971, observability 168.75 -> 212.5764 (+ 199 Langfuse Pro), storage 43.00 at 2%
    #   a month -> 45.631944 (+ 318.40 weights): +37.528384 +233.7408 +0.747971 +43.8264 +2.631944
    moved = tmp_path / "plan.toml"
    moved.write_text(PLAN.read_text().replace('start = "2026-10"', 'start = "2027-01"'))
    first = json.loads(_budget(moved, "--to", "2027-01", "--json"))["summary"][0]
    assert (first["month"], first["months_after_start"], first["total"]) == ("2027-01", 0, "52122.882000")
    assert first["by_category"]["gpu"] == jan["by_category"]["gpu"] == "33783.552000"
    assert D(jan["total"]) - D(first["total"]) == D("318.475499") == \
        D("37.528384") + D("233.7408") + D("0.747971") + D("43.8264") + D("2.631944")

    # the table: the quarter's subtotal under its months, each column adding up as printed, and the
    # note that says where the volumes grow from
    text = _budget(PLAN, "--from", "2027-01", "--to", "2027-03")
    rows: dict[str, D] = {}
    for ln in text.splitlines():  # the first table's rows (the GPU table repeats the months)
        if ln.startswith("│") and ln.split("│")[1].strip()[:4] == "2027":
            rows.setdefault(ln.split("│")[1].strip(), D(ln.split("│")[2].strip().replace(",", "")))
    assert rows["2027-Q1"] == rows["2027-01"] + rows["2027-02"] + rows["2027-03"] == D("154434.93")
    words = " ".join(text.split())
    assert "volumes are those of the plan's first month, 2026-10" in words
    assert "2027-01 is 3 months after it (8.0% a month: x1.259712, 2.0% a month: x1.061208)" in words

    rows = list(csv.DictReader(io.StringIO(_budget(PLAN, "--from", "2026-11", "--to", "2027-01", "--csv"))))
    assert [(r["month"], r["quarter"], r["row"]) for r in rows] == [
        ("2026-11", "2026-Q4", "month"), ("2026-12", "2026-Q4", "month"), ("2027-01", "2027-Q1", "month"),
        ("", "2026-Q4", "quarter"), ("", "2027-Q1", "quarter")]
    assert D(rows[3]["total"]) == D(rows[0]["total"]) + D(rows[1]["total"])


def test_a_window_outside_the_plan_is_refused_one_line_per_problem():
    r = runner.invoke(app, ["budget", str(PLAN), "--pricebooks", str(BOOKS), "--from", "2026-01", "--to", "2028-01"])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.splitlines() == ["--from 2026-01: not a month of the plan (2026-10 to 2027-09)",
                                     "--to 2028-01: not a month of the plan (2026-10 to 2027-09)"]
    # --from and --to are the window of every command (console.month_window): a month name checked first
    r = runner.invoke(app, ["budget", str(PLAN), "--pricebooks", str(BOOKS), "--from", "2027-13", "--to", "2027-1"])
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        "--from: period '2027-13' is not a month like 2026-10",
        "--to: '2027-1' is neither a month such as 2026-10 nor an ISO 8601 instant such as 2026-10-15T00:00:00Z"]
    r = runner.invoke(app, ["budget", str(PLAN), "--pricebooks", str(BOOKS), "--from", "2027-03", "--to", "2027-01"])
    assert r.stderr.strip() == ("--from 2027-03 is not before --to 2027-01: the window is empty (it runs from --from "
                                "up to --to, a month as --to through its end)")
