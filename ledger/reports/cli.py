"""Commands over stored runs: `report unit-economics`, `report tenants`, `runs` and `close`."""
from __future__ import annotations

from typing import Optional

import typer

from .. import console, runs
from ..money import fmt
from . import (BY, run_data_of_stored, runs_as_json, tenants_as_csv, tenants_as_table, unit_economics,
               unit_economics_as_csv, unit_economics_as_json, unit_economics_as_table)
from .render import runs_as_table

report_app = typer.Typer(help="Unit-economics reports over the current allocation run of a period.",
                         no_args_is_help=True)


def _load(s, period, frm, to, run_id):
    if run_id:
        stored = runs.load_run(s, run_id=run_id)
    else:
        start, end = console.period_bounds(period, frm, to)
        stored = runs.load_run(s, start=start, end=end)
    return run_data_of_stored(stored)


_PERIOD = "calendar month, e.g. 2026-10 (its current run)"
_FROM = "period start (ISO 8601 instant), with --to"
_TO = "period end, exclusive"
_RUN = "a run id (default: the period's current run)"
_JSON = "print the report as JSON (money as decimal strings)"
_CSV = "print one row per tenant, product or model as CSV"


def _tenants(text: Optional[str]) -> Optional[list[str]]:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        console.fail("--tenants: give tenant names separated by commas")
    return names


@report_app.command("unit-economics")
def unit_economics_cmd(period: Optional[str] = typer.Option(None, "--period", help=_PERIOD),
                       frm: Optional[str] = typer.Option(None, "--from", help=_FROM),
                       to: Optional[str] = typer.Option(None, "--to", help=_TO),
                       run_id: Optional[str] = typer.Option(None, "--run", help=_RUN),
                       by: str = typer.Option("tenant", "--by", help="tenant, product or model"),
                       tenants: Optional[str] = typer.Option(None, "--tenants", help="only these tenants: a,b"),
                       as_json: bool = typer.Option(False, "--json", help=_JSON),
                       as_csv: bool = typer.Option(False, "--csv", help=_CSV)) -> None:
    """Cost, failed work, shared idle (under idle policy share), tokens, tasks and cost per success by tenant,
    product or model."""
    console.one_format(as_json, as_csv)
    if by not in BY:
        console.fail(f"--by {by!r}: expected one of {', '.join(BY)}")
    with console.Ledger() as s:
        data = _load(s, period, frm, to, run_id)
    report = unit_economics(data, by=by, tenants=_tenants(tenants))
    _unknown_tenants(report, data)
    console.emit(report, as_json=as_json, as_csv=as_csv, json_of=unit_economics_as_json,
                 csv_of=unit_economics_as_csv, table_of=unit_economics_as_table)


def _unknown_tenants(report, data) -> None:
    if report.tenants is None:
        return
    known = {ln.tenant for ln in data.lines if ln.tenant} | {u.tenant for u in data.usage} | \
        {t.tenant for t in data.tasks}
    missing = sorted(set(report.tenants) - known)
    if missing:
        console.fail([f"tenant {t}: not in run {data.info.run_id}" for t in missing])


@report_app.command("tenants")
def tenants_cmd(period: Optional[str] = typer.Option(None, "--period", help=_PERIOD),
                frm: Optional[str] = typer.Option(None, "--from", help=_FROM),
                to: Optional[str] = typer.Option(None, "--to", help=_TO),
                run_id: Optional[str] = typer.Option(None, "--run", help=_RUN),
                tenants: Optional[str] = typer.Option(None, "--tenants", help="only these tenants: a,b"),
                as_json: bool = typer.Option(False, "--json", help=_JSON),
                as_csv: bool = typer.Option(False, "--csv",
                                            help="print one row per metric, a column per tenant, as CSV")
                ) -> None:
    """Tenants side by side: share of GPU, cost per success, failure rate, $/1M active tokens."""
    console.one_format(as_json, as_csv)
    with console.Ledger() as s:
        data = _load(s, period, frm, to, run_id)
    report = unit_economics(data, by="tenant", tenants=_tenants(tenants))
    _unknown_tenants(report, data)
    console.emit(report, as_json=as_json, as_csv=as_csv, json_of=unit_economics_as_json, csv_of=tenants_as_csv,
                 table_of=tenants_as_table)


def runs_cmd(period: Optional[str] = typer.Option(None, "--period", help="only runs of this month, e.g. 2026-10"),
             as_json: bool = typer.Option(False, "--json", help="print the runs as JSON (totals as decimal strings)"),
             as_csv: bool = typer.Option(False, "--csv", help="print one row per run as CSV")) -> None:
    """Allocation runs, newest first; the first of a period is its current run."""
    console.one_format(as_json, as_csv)
    start = end = None
    if period:
        start, end = console.period_bounds(period, None, None)
    with console.Ledger() as s:
        found = runs.list_runs(s, start=start, end=end)
    data = runs_as_json(found)
    if as_json:
        console.print_json(data)
        return
    if as_csv:
        console.print_csv([{"run_id": d["run_id"], "period_start": d["period"]["start"], "period_end": d["period"]["end"],
                        "created_at": d["created_at"], "idle_policy": d["idle_policy"], "basis": d["basis"],
                        "total": d["total"], "currency": d["currency"], "price_books": " ".join(d["price_books"]),
                        "code_version": d["code_version"]} for d in data], numeric=("total",))
        return
    console.out.print(runs_as_table(data))


def close_cmd(period: str = typer.Option(..., "--period", help="the month to close, e.g. 2026-10")) -> None:
    """Close a month: from now on an ingest that touches it is refused (or booked with --as-adjustment)."""
    with console.Ledger() as s:
        newly, run = runs.close(s, period=period)
    state = "closed" if newly else "was already closed"
    which = f"its current run is {run.id} (total {fmt(run.total)} {run.currency})" if run else \
        "it has no allocation run yet: run `ledger allocate --period " + period + "`"
    console.out.print(f"period {period} {state}; {which}")


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")
    app.command("runs")(runs_cmd)
    app.command("close")(close_cmd)
