"""`ledger report lines` (issue 28 item 5): a tenant's lines of a run on the command line, filtered,
with a totals row, over the hand-worked month of tests/test_reconcile.py (run total 560.325000)."""
from __future__ import annotations

import csv
import io
import json
from decimal import Decimal as D

import pytest
from test_reconcile import cli, cli_fails, month  # noqa: F401 (the fixture)

pytestmark = pytest.mark.store


def test_a_tenants_lines_add_up_to_its_cost_in_the_report(month):
    report = json.loads(cli("report", "unit-economics", "--period", "2026-10", "--json"))
    costs = {r["tenant"]: D(r["cost"]) for r in report["rows"]}
    assert costs
    for tenant, cost in costs.items():
        doc = json.loads(cli("report", "lines", "--period", "2026-10", "--tenant", tenant, "--json"))
        assert doc["tenant"] == tenant and doc["by"] == "line" and doc["run_id"] == month["run_id"]
        assert sum(D(r["amount"]) for r in doc["rows"]) == D(doc["total"]) == cost  # exact, ==
        assert doc["line_count"] == len(doc["rows"])
        for by in ("product", "model"):
            grouped = json.loads(cli("report", "lines", "--period", "2026-10", "--tenant", tenant, "--by", by,
                                     "--json"))
            assert sum(D(r["amount"]) for r in grouped["rows"]) == cost
            assert sum(r["lines"] for r in grouped["rows"]) == doc["line_count"]
        # filtered by category: the parts add up to the whole
        cats = {r["category"] for r in doc["rows"]}
        parts = [D(json.loads(cli("report", "lines", "--period", "2026-10", "--tenant", tenant, "--category", c,
                                  "--json"))["total"]) for c in cats]
        assert sum(parts) == cost
        rows = list(csv.DictReader(io.StringIO(cli("report", "lines", "--period", "2026-10", "--tenant", tenant,
                                                   "--csv"))))
        assert sum(D(r["amount"]) for r in rows) == cost and {r["tenant"] for r in rows} == {tenant}
        table = " ".join(cli("report", "lines", "--period", "2026-10", "--tenant", tenant).split())
        assert f"lines of tenant {tenant}" in table and "total" in table and "open" in table
    # a product filter: only its lines; an unknown tenant is refused
    tenant = next(iter(costs))
    doc = json.loads(cli("report", "lines", "--period", "2026-10", "--tenant", tenant, "--by", "product", "--json"))
    product = doc["rows"][0]["product"]
    only = json.loads(cli("report", "lines", "--period", "2026-10", "--tenant", tenant, "--product", product,
                          "--json"))
    assert {r["product"] for r in only["rows"]} == {product}
    assert D(only["total"]) == D(doc["rows"][0]["amount"])
    assert "not in run" in cli_fails("report", "lines", "--period", "2026-10", "--tenant", "nobody")
    assert "--by 'tenant'" in cli_fails("report", "lines", "--period", "2026-10", "--tenant", tenant, "--by", "tenant")
