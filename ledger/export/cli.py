"""`ledger export --period P (--xlsx FILE | --lines FILE | --focus FILE | --csv)`: an allocation run for finance."""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class FocusVersion(str, Enum):
    """The FOCUS version `--focus` writes: 1.2 (the default) or 1.0."""

    v1_0 = "1.0"
    v1_2 = "1.2"


def export_cmd(ctx: typer.Context,
               period: Optional[str] = typer.Option(None, "--period", help="calendar month, e.g. 2026-10"),
               run_id: Optional[str] = typer.Option(None, "--run", help="a run id (default: the period's current run)"),
               xlsx: Optional[Path] = typer.Option(None, "--xlsx", help="write the workbook (live totals) to FILE"),
               lines_file: Optional[Path] = typer.Option(None, "--lines", help="write the lines as CSV to FILE"),
               as_csv: bool = typer.Option(False, "--csv", help="print the lines as CSV on stdout (what --lines "
                                                                "writes)"),
               focus: Optional[Path] = typer.Option(None, "--focus", help="write FinOps FOCUS rows (CSV) to FILE"),
               focus_version: FocusVersion = typer.Option(FocusVersion.v1_2, "--focus-version",
                                                          help="the FOCUS version of --focus"),
               locale: str = typer.Option("en_US", "--locale", help="locale of the workbook's currency formats"),
               billing_account: str = typer.Option("inference-ledger", "--billing-account",
                                                   help="FOCUS BillingAccountId"),
               billing_account_name: str = typer.Option("Inference platform", "--billing-account-name",
                                                        help="FOCUS BillingAccountName and InvoiceIssuerName")
               ) -> None:
    """Export an allocation run (the period's current run) as a workbook, CSV lines or FOCUS rows.
    A file that is the ledger's own DB or inside its facts folder is refused; each file is written
    whole or not at all. With --csv the lines go to stdout, and what was written to stderr."""
    from .. import console, reports, runs, store
    from .safe import check_outputs
    from .xlsx import check_locale

    stray = ctx.args  # words no option takes (allow_extra_args): a file after --csv, as it once took one
    if stray:
        console.fail(f"unexpected {' '.join(stray)}: --csv takes no file (it prints the lines on stdout); write them "
                     f"to a file with --lines {stray[0]}" if as_csv else f"unexpected {' '.join(stray)}: name each "
                     "file after its option (--xlsx FILE, --lines FILE, --focus FILE)")
    if not (xlsx or lines_file or focus or as_csv):
        console.fail("give at least one of --xlsx FILE, --lines FILE, --focus FILE, or --csv (the lines on stdout)")
    if bool(period) == bool(run_id):
        console.fail("give either --period YYYY-MM or --run ID")
    check_outputs([xlsx, lines_file, focus])  # before any work: no export lands on the ledger itself
    if xlsx:
        check_locale(locale)
    with console.Ledger() as s:
        if run_id:
            stored = runs.load_run(s, run_id=run_id)
        else:
            start, end = store.month_bounds(period)
            stored = runs.load_run(s, start=start, end=end)
    data = reports.run_data_of_stored(stored)
    try:
        written = _write(data, xlsx, lines_file, (focus, focus_version.value), locale, billing_account,
                         billing_account_name)
    except OSError as e:
        console.fail(f"cannot write the export: {e}")
    if as_csv:
        from . import allocation_as_csv

        sys.stdout.write(allocation_as_csv(data))
    if written:
        (console.err if as_csv else console.out).print(
            f"run {data.info.run_id} ({console.plural(len(data.lines), 'line')}): " + ", ".join(written), markup=False)


def _write(data, xlsx, lines_file, focus_to, locale, billing_account, billing_account_name) -> list[str]:
    from .. import runs
    from . import allocation_as_csv, allocation_as_focus, allocation_as_focus12, allocation_as_xlsx
    from .safe import write_output

    focus, version = focus_to
    written = []
    if xlsx:
        allocation_as_xlsx(data, locale=locale, generated_at=datetime.now(timezone.utc), version=runs.code_version(),
                           path=xlsx)
        written.append(f"workbook {xlsx}")
    if lines_file:
        write_output(lines_file, allocation_as_csv(data))
        written.append(f"lines CSV {lines_file}")
    if focus:
        writer = allocation_as_focus12 if version == "1.2" else allocation_as_focus
        write_output(focus, writer(data, billing_account_id=billing_account, billing_account_name=billing_account_name))
        written.append(f"FOCUS {version} CSV {focus}")
    return written


def register(app: typer.Typer) -> None:
    """Add `ledger export` to the main app."""
    app.command("export", context_settings={"allow_extra_args": True})(export_cmd)
