"""Scenario results in the ledger DB, apart from the runs: written once, listed, read back; never a period's run."""
from __future__ import annotations

import json
import uuid

import sqlalchemy as sa
from sqlmodel import Session, select

from ..models import ScenarioLine, ScenarioRun, utcnow
from ..runs import insert_lines
from .records import ScenarioError, ScenarioResult
from .render import whatif_as_json
from .run import with_id


def write_scenario(s: Session, result: ScenarioResult, *, code_version: str) -> ScenarioResult:
    """Store `result` and its lines (the scenario tables only: no run is written or changed);
    refused when its lines do not add up to its total. Returns it with its id."""
    alloc = result.allocation
    if alloc.lines_total != alloc.total:
        raise ScenarioError(f"conservation failed: the scenario's lines sum to {alloc.lines_total}, its total is "
                            f"{alloc.total}; nothing is stored")
    result = with_id(result, uuid.uuid4().hex, utcnow())
    doc = whatif_as_json(result)
    row = ScenarioRun(id=result.id, name=result.scenario.name[:200], period=result.period,
                      period_start=result.start, period_end=result.end, created_at=result.created_at,
                      run_id=result.run_id, currency=result.currency, actual_total=result.actual_total,
                      scenario_total=result.scenario_total, status=result.status,
                      scenario_digest=result.scenario.digest, scenario_text=result.scenario.text,
                      price_books=json.dumps(list(result.scenario_books)), summary=json.dumps(doc),
                      code_version=code_version[:40])
    s.add(row)
    s.flush()
    insert_lines(s, ScenarioLine, {"scenario_id": result.id}, alloc.lines, result.currency)
    return result


def list_scenarios(s: Session, *, period: str | None = None) -> list[ScenarioRun]:
    """Stored scenario results, newest first (of one period when given)."""
    q = select(ScenarioRun)
    if period is not None:
        q = q.where(ScenarioRun.period == period)
    return list(s.exec(q.order_by(ScenarioRun.created_at.desc(), ScenarioRun.id.desc())))


def scenario_lines(s: Session, scenario_id: str) -> list[dict]:
    """The stored lines of a scenario, in order, as dicts of their columns (amounts exact)."""
    t = ScenarioLine.__table__
    cols = [c for c in t.c if c.name not in ("id", "scenario_id")]
    return [r._asdict() for r in s.execute(sa.select(*cols).where(t.c.scenario_id == scenario_id).order_by(t.c.id))]
