"""Commands over stored runs: `report unit-economics`, `report tenants`, `runs` and `close` (sign-off)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import console, store
from ..money import fmt

# The reports' stack (the economics, the runs, the allocation, the budgets) is imported by the commands
# that use it, not with this module: `ledger runs` and `ledger report --help` start without it
# (docs/scale.md, "Startup"; tests/test_cli_startup.py).

report_app = typer.Typer(help="Unit-economics reports over the current allocation run of a period.",
                         no_args_is_help=True)


def _load(s, period, frm, to, run_id):
    from .. import runs
    from . import run_data_of_stored

    if run_id:
        stored = runs.load_run(s, run_id=run_id)
    else:
        start, end = console.period_bounds(period, frm, to)
        stored = runs.load_run(s, start=start, end=end)
    return run_data_of_stored(stored)


_PERIOD = "calendar month, e.g. 2026-10 (its current run)"
_FROM = console.FROM_HELP
_TO = console.TO_HELP
#: What a command that goes by month adds to --from and --to's help.
_BY_MONTH = "; by month: an instant must start a month"
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
                       spread_shared: bool = typer.Option(False, "--spread-shared",
                                                          help="with --by product: each tenant's shared charges "
                                                               "spread over its products by the rule they were "
                                                               "shared over tenants with"),
                       as_json: bool = typer.Option(False, "--json", help=_JSON),
                       as_csv: bool = typer.Option(False, "--csv", help=_CSV)) -> None:
    """Cost, failed work, shared idle (under idle policy share), tokens, tasks and cost per success by tenant,
    product or model."""
    from ..guardrails.book import budget_books
    from . import BY, unit_economics, unit_economics_as_csv, unit_economics_as_json, unit_economics_as_table
    from .budgets import with_budgets

    console.one_format(as_json, as_csv)
    if by not in BY:
        console.fail(f"--by {by!r}: expected one of {', '.join(BY)}")
    if spread_shared and by != "product":
        console.fail(f"--spread-shared spreads the shared charges over products: give it with --by product, not "
                     f"--by {by}")
    with console.Ledger() as s:
        data = _load(s, period, frm, to, run_id)
        books = budget_books(s)  # the budgets in force for the month, beside the actuals (issue 31)
    if spread_shared:  # the view says so: its JSON's `view`, its CSV's column, its title
        from ..drilldown import spread_by_product

        report = spread_by_product(data, tenants=_tenants(tenants))
    else:
        report = unit_economics(data, by=by, tenants=_tenants(tenants))
    _unknown_tenants(report, data)
    report = with_budgets(report, books)
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
    from ..guardrails.book import budget_books
    from . import tenants_as_csv, tenants_as_table, unit_economics, unit_economics_as_json
    from .budgets import with_budgets

    console.one_format(as_json, as_csv)
    with console.Ledger() as s:
        data = _load(s, period, frm, to, run_id)
        books = budget_books(s)  # the budgets in force for the month, beside the actuals (issue 31)
    report = with_budgets(unit_economics(data, by="tenant", tenants=_tenants(tenants)), books)
    _unknown_tenants(report, data)
    console.emit(report, as_json=as_json, as_csv=as_csv, json_of=unit_economics_as_json, csv_of=tenants_as_csv,
                 table_of=tenants_as_table)


@report_app.command("lines")
def lines_cmd(tenant: str = typer.Option(..., "--tenant", help="the tenant whose lines to list"),
              period: Optional[str] = typer.Option(None, "--period", help=_PERIOD),
              frm: Optional[str] = typer.Option(None, "--from", help=_FROM),
              to: Optional[str] = typer.Option(None, "--to", help=_TO),
              run_id: Optional[str] = typer.Option(None, "--run", help=_RUN),
              product: Optional[str] = typer.Option(None, "--product",
                                                    help="only this product ('shared charges': its lines with no "
                                                         "product)"),
              model: Optional[str] = typer.Option(None, "--model", help="only this model"),
              category: Optional[str] = typer.Option(None, "--category", help="only this category, e.g. gpu"),
              by: str = typer.Option("line", "--by", help="line (every line), product, or model (product and model)"),
              as_json: bool = typer.Option(False, "--json", help=_JSON),
              as_csv: bool = typer.Option(False, "--csv", help="print one row per line (or group) as CSV")) -> None:
    """A tenant's lines of a run, filtered by product, model and category, with a totals row: the
    drill-down under the unit-economics report (its total is the tenant's cost there)."""
    from .lines import GROUPS, lines_as_csv, lines_as_json, lines_as_table, tenant_lines_of

    console.one_format(as_json, as_csv)
    if by not in GROUPS:
        console.fail(f"--by {by!r}: expected one of {', '.join(GROUPS)}")
    with console.Ledger() as s:
        data = _load(s, period, frm, to, run_id)
    if not any(ln.tenant == tenant for ln in data.lines):
        console.fail(f"--tenant {tenant}: not in run {data.info.run_id}")
    found = tenant_lines_of(data, tenant, product=product, model=model, category=category, group=by)
    console.emit(found, as_json=as_json, as_csv=as_csv, json_of=lines_as_json, csv_of=lines_as_csv,
                 table_of=lines_as_table)


@report_app.command("trend")
def trend_cmd(frm: str = typer.Option(..., "--from", help=_FROM + _BY_MONTH),
              to: str = typer.Option(..., "--to", help=_TO + _BY_MONTH),
              by: str = typer.Option("tenant", "--by", help="tenant, product or model"),
              as_json: bool = typer.Option(False, "--json", help=_JSON),
              as_csv: bool = typer.Option(False, "--csv", help="print one row per month and tenant, product or "
                                                               "model as CSV")) -> None:
    """Month over month: each month's current run, cost, successes, both costs per successful task and
    the change from the month before; a month with no run is listed as such."""
    from . import BY
    from .trend import load_trend, trend_as_csv, trend_as_json, trend_as_table

    console.one_format(as_json, as_csv)
    if by not in BY:
        console.fail(f"--by {by!r}: expected one of {', '.join(BY)}")
    first, last = console.month_window(frm, to, "report trend")
    with console.Ledger() as s:
        found = load_trend(s, first=first, last=last, by=by)  # a bad range is a LedgerError: one line, exit 1
    console.emit(found, as_json=as_json, as_csv=as_csv, json_of=trend_as_json, csv_of=trend_as_csv,
                 table_of=trend_as_table)


def runs_cmd(period: Optional[str] = typer.Option(None, "--period", help="only runs of this month, e.g. 2026-10"),
             as_json: bool = typer.Option(False, "--json", help="print the runs as JSON (totals as decimal strings)"),
             as_csv: bool = typer.Option(False, "--csv", help="print one row per run as CSV")) -> None:
    """Allocation runs, newest first, each with its period's close (open, or closed by whom, final run)."""
    from ..runlist import list_runs
    from .listing import runs_as_json, runs_as_table

    console.one_format(as_json, as_csv)
    start = end = None
    if period:
        start, end = console.period_bounds(period, None, None)
    with console.Reading() as conn:  # Core over the tables: no SQLModel, no allocation to start
        found = list_runs(conn, start=start, end=end)
        closings = store.closings(conn, {store.month_of(r.period_start) for r in found})
    data = runs_as_json(found, closings)
    if as_json:
        console.print_json(data)
        return
    if as_csv:
        console.print_csv([{"run_id": d["run_id"], "period_start": d["period"]["start"], "period_end": d["period"]["end"],
                        "created_at": d["created_at"], "kind": d["kind"], "role": d["role"],
                        "idle_policy": d["idle_policy"], "basis": d["basis"],
                        "total": d["total"], "currency": d["currency"], "price_books": " ".join(d["price_books"]),
                        "code_version": d["code_version"], "period_close": d["close"]["text"],
                        "closed_by": d["close"]["closed_by"] or "", "closed_at": d["close"]["closed_at"] or "",
                        "final_run": d["close"]["final_run"] or ""} for d in data], numeric=("total",))
        return
    console.out.print(runs_as_table(data))


def close_cmd(period: str = typer.Option(..., "--period", help="the month to close, e.g. 2026-10"),
              by: Optional[str] = typer.Option(None, "--by", help="who signs the month off (required): a name, "
                                               "kept with the close"),
              note: str = typer.Option("", "--note", help="why, or what was checked: kept with the sign-off")) -> None:
    """Close a month and sign it off: who, when, why, and the run signed as final (never changed after).

    From then on an ingest that touches the month is refused (or booked into an open month with
    --as-adjustment), the month is not allocated again (a difference with the bill is a true-up run,
    listed beside the final run), and every report, workbook and dashboard page says who closed it."""
    from .. import runs

    store.month_bounds(period)  # a period that is no month is refused first, as every command does
    if by is None:
        console.fail("--by: who signs the month off is required (e.g. --by 'Dana Reyes'): the close records "
                     "who signed it, when, and the run signed as final", 2)
    if problems := store.signoff_problems(by, note):
        console.fail([f"--{'by' if p.startswith('the name') else 'note'}: {p}" for p in problems], 2)
    with console.Ledger() as s:
        closing, run = runs.close(s, period=period, by=by, note=note)
    console.out.print(f"period {period} {closing.text} (total {fmt(run.total)} {run.currency}, inputs digest "
                      f"{run.inputs_digest[:12]})" + (f"; note: {note}" if note else ""), markup=False, highlight=False)


def statement_cmd(period: Optional[str] = typer.Option(None, "--period", help=_PERIOD),
                  run_id: Optional[str] = typer.Option(None, "--run", help=_RUN),
                  pdf: Optional[Path] = typer.Option(None, "--pdf", help="write the statement as one PDF page to FILE"),
                  map_path: Optional[Path] = typer.Option(
                      None, "--bill-map", help="bill map to reconcile with; default: bill-map.toml in the ledger home "
                                               "(none: the statement says it is not reconciled)"),
                  as_json: bool = typer.Option(False, "--json", help="print the statement as JSON (money as decimal "
                                                                     "strings)"),
                  as_csv: bool = typer.Option(False, "--csv", help="print one row per figure of the statement as CSV")
                  ) -> None:
    """The month-end statement to sign: total, categories, idle, failed work, tenants, run, books, bill, close.

    One page (--pdf FILE): the total; by category; idle, unallocated and failed work; each tenant's
    cost and cost per successful task beside the all-in figure; the run, its price books and inputs
    digest; the reconciliation with the bill; and who closed the period (or that it is open)."""
    from .. import config, runs
    from ..outputs import check_outputs
    from .statement import statement_as_csv, statement_as_json, statement_as_table, statement_for

    console.one_format(as_json, as_csv)
    if bool(period) == bool(run_id):
        console.fail("give either --period YYYY-MM or --run ID")
    check_outputs([pdf])  # before any work: the statement never lands on the ledger itself
    home = config.ledger_home()
    with console.Ledger() as s:
        stored = runs.load_run(s, run_id=run_id, start=None, end=None) if run_id else \
            runs.load_run(s, start=store.month_bounds(period)[0], end=store.month_bounds(period)[1])
        st = statement_for(s, stored, home=home, map_path=map_path)
    if pdf:
        from datetime import datetime, timezone

        from ..export.statement import write_statement

        try:
            write_statement(st, pdf, generated_at=datetime.now(timezone.utc).replace(microsecond=0),
                            version=runs.code_version())
        except OSError as e:
            console.fail(f"cannot write the statement: {e}")
        (console.err if as_json or as_csv else console.out).print(
            f"statement of run {st.run_id} ({st.close_text}): {pdf}", markup=False, highlight=False)
        if not (as_json or as_csv):
            return
    console.emit(st, as_json=as_json, as_csv=as_csv, json_of=statement_as_json, csv_of=statement_as_csv,
                 table_of=statement_as_table)


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")
    app.command("runs")(runs_cmd)
    app.command("close")(close_cmd)
    app.command("statement")(statement_cmd)
