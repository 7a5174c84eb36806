"""The `check` command: a pre-flight of the facts against the price books; exit 1 when it finds anything."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from .. import console


def check_cmd(period: Optional[str] = typer.Option(None, "--period", help="calendar month, e.g. 2026-10 (default: "
                                                                          "every committed fact)"),
              frm: Optional[str] = typer.Option(None, "--from", help=console.FROM_HELP),
              to: Optional[str] = typer.Option(None, "--to", help=console.TO_HELP),
              as_json: bool = typer.Option(False, "--json", help="the findings as JSON on stdout"),
              as_csv: bool = typer.Option(False, "--csv", help="the findings as CSV on stdout"),
              as_table: bool = typer.Option(False, "--table", help="the findings as a table on stdout")) -> None:
    """Pre-flight of the facts against the price books (usages with no price, pools without fleet...): exit 1 if any."""
    from .findings import check_ledger  # the check's stack (DuckDB, the allocation's lookups) when it runs
    from .render import findings_as_csv, findings_as_json, findings_as_table, summary_line

    console.one_format(as_json, as_csv)
    if as_table and (as_json or as_csv):
        console.fail("give one of --json, --csv or --table")
    start = end = None
    if period or frm or to:
        start, end = console.period_bounds(period, frm, to)
    with console.Ledger() as s:
        report = check_ledger(s, start=start, end=end)
    code = 0 if report.ok else 1
    if as_json:
        console.print_json(findings_as_json(report))
    elif as_csv:
        sys.stdout.write(findings_as_csv(report))
    elif as_table and not report.ok:
        console.out.print(findings_as_table(report))
    elif report.ok:
        console.out.print(summary_line(report), markup=False)
    else:
        console.fail([f.problem for f in report.findings])
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("check")(check_cmd)
