"""Stored scenario results listed and one shown again (``ledger whatif --list``, ``--show ID``), as
JSON, CSV and tables; every output says SCENARIO: these are never runs."""
from __future__ import annotations

import json
from collections.abc import Sequence

from sqlmodel import Session, select

from .. import formats
from ..instants import iso
from ..models import ScenarioRun
from ..money import fmt
from ..tables import FitTable
from .records import KIND, SCENARIO, ScenarioError

#: The listing's columns (CSV), in order.
LIST_COLUMNS = ["kind", "id", "name", "period", "created_at", "actual_run_id", "currency", "actual_total",
                "scenario_total", "difference", "status", "scenario_digest", "code_version"]
_NUMERIC = {"actual_total", "scenario_total", "difference"}


def scenario_entry(row: ScenarioRun) -> dict:
    """One stored scenario result as the listing writes it (money as decimal strings)."""
    return {"kind": KIND, "id": row.id, "name": row.name, "period": row.period, "created_at": iso(row.created_at),
            "actual_run_id": row.run_id, "currency": row.currency, "actual_total": fmt(row.actual_total),
            "scenario_total": fmt(row.scenario_total), "difference": fmt(row.scenario_total - row.actual_total),
            "status": row.status, "scenario_digest": row.scenario_digest, "code_version": row.code_version}


def scenarios_as_json(rows: Sequence[ScenarioRun], period: str | None = None) -> dict:
    return {"kind": KIND, "label": SCENARIO, "period": period,
            "note": "scenario results are stored apart from the runs: never a period's run",
            "scenarios": [scenario_entry(r) for r in rows]}


def scenarios_as_csv(rows: Sequence[ScenarioRun], period: str | None = None) -> str:
    from ..outputs import csv_text

    return csv_text(LIST_COLUMNS, [scenario_entry(r) for r in rows], numeric=_NUMERIC)


def scenarios_as_table(rows: Sequence[ScenarioRun], period: str | None = None) -> FitTable:
    """Newest first: id, name, period, when, the run it was set beside, both totals and the difference."""
    t = FitTable(title=f"{SCENARIO} results stored" + (f" · {period}" if period else "") + " (never a run)",
                 title_justify="left", caption=None if rows else f"no {SCENARIO} result is stored"
                 + (f" for {period}" if period else "") + ": ledger whatif --period P --scenario FILE")
    for col in ("id", "name", "period", "created at", "beside run"):
        t.add_column(col, numeric=False)
    for col in ("actual", SCENARIO.lower(), "difference"):
        t.add_column(col)
    t.add_column("status", numeric=False)
    for r in rows:
        t.add_row(r.id[:12], r.name, r.period, iso(r.created_at), r.run_id[:12],
                  formats.money(r.actual_total, r.currency), formats.money(r.scenario_total, r.currency),
                  formats.money(r.scenario_total - r.actual_total, r.currency, signed=True), r.status)
    return t


def stored_scenario(s: Session, ref: str) -> ScenarioRun:
    """The stored scenario result whose id is `ref` or starts with it (12 characters, as listed);
    ScenarioError when none or several do."""
    found = list(s.exec(select(ScenarioRun).where(ScenarioRun.id.startswith(ref, autoescape=True)).limit(2))) \
        if ref else []
    if len(found) != 1:
        raise ScenarioError(f"{SCENARIO} {ref!r}: " + ("no stored result has this id" if not found else
                                                     "several stored results start with it: give more of the id"))
    return found[0]


def stored_document(row: ScenarioRun) -> dict:
    """The ``whatif --json`` document stored with the result (it says SCENARIO, with its id)."""
    return json.loads(row.summary)


_PLURAL = {"tenant": "tenants", "product": "products", "model": "models"}


def document_rows(doc: dict) -> list[dict]:
    """The CSV rows of ``whatif --csv`` (:data:`ledger.whatif.render.CSV_COLUMNS`) from a stored document."""
    base = {"kind": KIND, "scenario": doc["name"], "period": doc["period"], "currency": doc["currency"]}
    out = []
    for by, plural in _PLURAL.items():
        for e in doc.get(plural, []):
            e = dict(e)
            out.append({**base, "by": by, "key": e.pop(by), **e})
    out.append({**base, "by": "total", "key": "", "actual_cost": doc["actual_total"],
                "scenario_cost": doc["scenario_total"], "difference": doc["difference"],
                "difference_share": doc["difference_share"]})
    return out


def document_as_csv(doc: dict) -> str:
    from ..outputs import csv_text
    from .render import _NUMERIC as NUMERIC, CSV_COLUMNS

    return csv_text(CSV_COLUMNS, document_rows(doc), numeric=NUMERIC)


def document_as_table(doc: dict) -> FitTable:
    """A stored result for a person: its totals, then its rows by tenant, product and model."""
    cur = doc["currency"]
    t = FitTable(title=f"{SCENARIO} · {doc['name']} · {doc['period']} · id {(doc.get('id') or '')[:12]} · beside "
                       f"run {doc['actual_run_id'][:12]} ({cur}) · stored {doc.get('created_at') or ''}",
                 title_justify="left")
    for col in ("by", "key"):
        t.add_column(col, numeric=False)
    for col in ("actual", SCENARIO.lower(), "difference"):
        t.add_column(col)
    for r in document_rows(doc):
        t.add_row(r["by"], r["key"] or ("" if r["by"] == "total" else "(none)"),
                  *(formats.money(_d(r[k])) for k in ("actual_cost", "scenario_cost")),
                  formats.money(_d(r["difference"]), signed=True))
    return t


def _d(text: str | None):
    from decimal import Decimal

    return None if text is None else Decimal(text)
