"""CLI for allocation: `allocate`, `report unit-economics`, `report tenants`, `runs`, `close`."""
from __future__ import annotations

import sys
from datetime import datetime
from decimal import Decimal
from typing import List, Optional

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import reports, runs, store
from .allocate import BASES, IDLE_POLICIES, AllocationError, Policy, parse_weights
from .money import fmt

report_app = typer.Typer(help="Unit-economics reports over the current allocation run of a period.",
                         no_args_is_help=True)


def _cli():
    from . import cli  # the main app's helpers (fail, print_json, Ledger, consoles)

    return cli


def _period(period: Optional[str], frm: Optional[str], to: Optional[str]) -> tuple[datetime, datetime]:
    cli = _cli()
    if period and (frm or to):
        cli.fail("give either --period or --from/--to, not both")
    if period:
        try:
            return store.month_bounds(period)
        except store.StoreError as e:
            cli.fail(str(e))
    if not (frm and to):
        cli.fail("give --period YYYY-MM, or both --from and --to")
    start, end = cli.parse_instant(frm, "--from"), cli.parse_instant(to, "--to")
    if not start < end:
        cli.fail(f"--from {frm} is not before --to {to} (the period is [from, to), end exclusive)")
    return start, end


def allocate_cmd(period: Optional[str] = typer.Option(None, "--period", help="calendar month, e.g. 2026-10"),
                 frm: Optional[str] = typer.Option(None, "--from", help="period start (ISO 8601 instant)"),
                 to: Optional[str] = typer.Option(None, "--to", help="period end, exclusive"),
                 idle: str = typer.Option("separate", "--idle", help="idle policy: " + " or ".join(IDLE_POLICIES)),
                 basis: str = typer.Option("active_tokens", "--basis", help="weight basis: " + " or ".join(BASES)),
                 currency: str = typer.Option("USD", "--currency", help="reporting currency (ISO 4217)"),
                 weights: Optional[List[str]] = typer.Option(None, "--weights",
                                                             help="POOL=UNCACHED,CACHED,OUTPUT token weights"),
                 as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON")) -> None:
    """Price every resource of the period, allocate it, check conservation, and write an immutable run."""
    cli = _cli()
    start, end = _period(period, frm, to)
    try:
        policy = Policy(idle=idle, basis=basis, currency=currency.upper(), weights=parse_weights(weights or []))
    except ValueError as e:
        cli.fail(str(e))
    if policy.problems():
        cli.fail(policy.problems())
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=cli.err,
                  transient=True, disable=not cli.err.is_terminal) as bar:
        task = bar.add_task("allocating", total=None)
        try:
            with cli.Ledger() as s:
                run, alloc = runs.allocate_period(s, start=start, end=end, policy=policy,
                                                  progress=lambda stage: bar.update(task, description=stage))
                doc = runs.load_summary(run)
        except AllocationError as e:
            cli.fail(e.problems)
        except runs.RunError as e:
            cli.fail(str(e))
    if as_json:
        cli.print_json(doc)
        return
    _print_summary(cli, doc)


def _print_summary(cli, doc: dict) -> None:
    p = doc["period"]
    cli.out.print(f"run {doc['run_id']} · {p['start']} to {p['end']} · {doc['currency']} · idle {doc['idle_policy']}"
                  f" · basis {doc['basis']} · price books {', '.join(doc['price_books'])}")
    cli.out.print(f"total {doc['total']} = lines {doc['lines_total']} ({doc['lines']} lines) · "
                  f"failed work {doc['failed_work']}")
    t = Table("kind / category", "amount", title="where the money went")
    for k, v in doc["by_kind"].items():
        t.add_row(k, v)
    for k, v in doc["by_category"].items():
        if Decimal(v) != 0:
            t.add_row(f"  {k}", v)
    cli.out.print(t)
    flags: dict = {}
    for f in doc["flags"]:
        flags[(f["kind"], f["pool"])] = flags.get((f["kind"], f["pool"]), 0) + 1
    for (kind, pool), n in sorted(flags.items()):
        cli.out.print(f"flag {kind}: pool {pool}, {n} hours")
    for n in doc["notes"]:
        cli.out.print(f"note: {n}", markup=False)


def _load(cli, s, period, frm, to, run_id):
    try:
        if run_id:
            stored = runs.load_run(s, run_id=run_id)
        else:
            start, end = _period(period, frm, to)
            stored = runs.load_run(s, start=start, end=end)
    except runs.RunError as e:
        cli.fail(str(e))
    return reports.run_data_of_stored(stored)


def _tenants(text: Optional[str]) -> Optional[list[str]]:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        _cli().fail("--tenants: give tenant names separated by commas")
    return names


def _check_format(as_json: bool, as_csv: bool) -> None:
    if as_json and as_csv:
        _cli().fail("give --json or --csv, not both")


@report_app.command("unit-economics")
def unit_economics_cmd(period: Optional[str] = typer.Option(None, "--period"),
                       frm: Optional[str] = typer.Option(None, "--from"),
                       to: Optional[str] = typer.Option(None, "--to"),
                       run_id: Optional[str] = typer.Option(None, "--run", help="a run id (default: current run)"),
                       by: str = typer.Option("tenant", "--by", help="tenant, product or model"),
                       tenants: Optional[str] = typer.Option(None, "--tenants", help="only these tenants: a,b"),
                       as_json: bool = typer.Option(False, "--json"),
                       as_csv: bool = typer.Option(False, "--csv")) -> None:
    """Cost, failed work, idle share, tokens, tasks and cost per success by tenant, product or model."""
    cli = _cli()
    _check_format(as_json, as_csv)
    if by not in reports.BY:
        cli.fail(f"--by {by!r}: expected one of {', '.join(reports.BY)}")
    with cli.Ledger() as s:
        data = _load(cli, s, period, frm, to, run_id)
    report = reports.unit_economics(data, by=by, tenants=_tenants(tenants))
    _unknown_tenants(cli, report, data)
    if as_json:
        cli.print_json(reports.unit_economics_as_json(report))
    elif as_csv:
        sys.stdout.write(reports.unit_economics_as_csv(report))
    else:
        cli.out.print(reports.unit_economics_as_table(report))


def _unknown_tenants(cli, report, data) -> None:
    if report.tenants is None:
        return
    known = {ln.tenant for ln in data.lines if ln.tenant} | {u.tenant for u in data.usage} | \
        {t.tenant for t in data.tasks}
    missing = sorted(set(report.tenants) - known)
    if missing:
        cli.fail([f"tenant {t}: not in run {data.info.run_id}" for t in missing])


@report_app.command("tenants")
def tenants_cmd(period: Optional[str] = typer.Option(None, "--period"),
                frm: Optional[str] = typer.Option(None, "--from"),
                to: Optional[str] = typer.Option(None, "--to"),
                run_id: Optional[str] = typer.Option(None, "--run", help="a run id (default: current run)"),
                tenants: Optional[str] = typer.Option(None, "--tenants", help="only these tenants: a,b"),
                as_json: bool = typer.Option(False, "--json"),
                as_csv: bool = typer.Option(False, "--csv")) -> None:
    """Tenants side by side: share of GPU, cost per success, failure rate, $/1M active tokens."""
    cli = _cli()
    _check_format(as_json, as_csv)
    with cli.Ledger() as s:
        data = _load(cli, s, period, frm, to, run_id)
    report = reports.unit_economics(data, by="tenant", tenants=_tenants(tenants))
    _unknown_tenants(cli, report, data)
    if as_json:
        cli.print_json(reports.unit_economics_as_json(report))
    elif as_csv:
        sys.stdout.write(reports.tenants_as_csv(report))
    else:
        cli.out.print(reports.tenants_as_table(report))


def runs_cmd(period: Optional[str] = typer.Option(None, "--period", help="only runs of this month"),
             as_json: bool = typer.Option(False, "--json"),
             as_csv: bool = typer.Option(False, "--csv")) -> None:
    """Allocation runs, newest first; the first of a period is its current run."""
    cli = _cli()
    start = end = None
    if period:
        start, end = _period(period, None, None)
    with cli.Ledger() as s:
        found = runs.list_runs(s, start=start, end=end)
    data = reports.runs_as_json(found)
    if as_json:
        cli.print_json(data)
        return
    if as_csv:
        cli.print_csv([{"run_id": d["run_id"], "period_start": d["period"]["start"], "period_end": d["period"]["end"],
                        "created_at": d["created_at"], "idle_policy": d["idle_policy"], "basis": d["basis"],
                        "total": d["total"], "currency": d["currency"], "price_books": " ".join(d["price_books"]),
                        "code_version": d["code_version"]} for d in data])
        return
    t = Table(title=f"runs ({len(data)})")
    t.add_column("run", no_wrap=True)
    for col in ("period", "created", "idle", "basis", "total", "price books", "code"):
        t.add_column(col)
    seen = set()
    for d in data:
        key = (d["period"]["start"], d["period"]["end"])
        mark = "" if key in seen else " (current)"
        seen.add(key)
        t.add_row(d["run_id"] + mark, f"{d['period']['start']} to {d['period']['end']}", d["created_at"],
                  d["idle_policy"], d["basis"], f"{d['total']} {d['currency']}", ", ".join(d["price_books"]),
                  d["code_version"])
    cli.out.print(t)


def close_cmd(period: str = typer.Option(..., "--period", help="the month to close, e.g. 2026-10")) -> None:
    """Close a month: from now on an ingest that touches it is refused (or booked with --as-adjustment)."""
    cli = _cli()
    with cli.Ledger() as s:
        try:
            newly, run = runs.close(s, period=period)
        except store.StoreError as e:
            cli.fail(str(e))
    state = "closed" if newly else "was already closed"
    which = f"its current run is {run.id} (total {fmt(run.total)} {run.currency})" if run else \
        "it has no allocation run yet: run `ledger allocate --period " + period + "`"
    cli.out.print(f"period {period} {state}; {which}")


def register(app: typer.Typer) -> None:
    app.command("allocate")(allocate_cmd)
    app.add_typer(report_app, name="report")
    app.command("runs")(runs_cmd)
    app.command("close")(close_cmd)

