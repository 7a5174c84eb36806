"""The `reconcile` command: a period's priced cost beside the cloud bill (docs/reconcile.md)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from .. import config, console
from ..hints import say

# The reconciliation's stack (the runs, DuckDB, the bill readers) is imported by the command when it
# runs, so that `ledger reconcile --help` starts without it (docs/scale.md, "Startup").

#: How `ledger reconcile` words the hints of what the library says (:mod:`ledger.hints`): key -> words.
NAMES = {"bill_map": "name one with --bill-map MAP.toml", "true_up": "`allocate --true-up`",
         "all_rows": "--json or --csv lists all"}


def reconcile_cmd(period: Optional[str] = typer.Option(None, "--period", help="calendar month, e.g. 2026-10"),
                  frm: Optional[str] = typer.Option(None, "--from", help=console.FROM_HELP),
                  to: Optional[str] = typer.Option(None, "--to", help=console.TO_HELP),
                  map_path: Optional[Path] = typer.Option(
                      None, "--bill-map", help="bill map (TOML: bill rows to pools, providers, categories); default: "
                                               "bill-map.toml in the ledger home"),
                  old_map: Optional[Path] = typer.Option(None, "--map", hidden=True,
                                                         help="deprecated spelling of --bill-map"),
                  run_id: Optional[str] = typer.Option(None, "--run", help="a run id (default: the period's current "
                                                                            "run)"),
                  as_json: bool = typer.Option(False, "--json", help="print the reconciliation as JSON (money as "
                                                                         "decimal strings)"),
                  as_csv: bool = typer.Option(False, "--csv", help="print one row per resource, unmatched group, "
                                                                   "drift and total as CSV")) -> None:
    """Set the ledger's priced cost beside the cloud bill: per pool, provider and category, the
    unmatched bill cost, reported-cost drift per model, and one total line (priced, billed, variance)."""
    from .. import runs
    from . import map_for, reconcile_run
    from .render import reconciliation_as_csv, reconciliation_as_json, reconciliation_as_table

    console.words(NAMES)
    console.one_format(as_json, as_csv)
    if old_map is not None:
        if map_path is not None:
            console.fail("give --bill-map once (--map is its old spelling)")
        console.deprecated("--map", "--bill-map")
        map_path = old_map
    start = end = None
    if run_id is None or period or frm or to:
        start, end = console.period_bounds(period, frm, to)
    home = config.ledger_home()  # resolved once, passed down
    bill_map = map_for(map_path, home)
    with console.Ledger() as s:
        stored = runs.load_run(s, run_id=run_id, start=start, end=end)
        run = stored.run
        if start is not None and (run.period_start != start or run.period_end != end):
            console.fail(f"run {run.id} covers {run.period_start.isoformat()} to {run.period_end.isoformat()}, "
                         "not the period asked for")
        rec = reconcile_run(s, run_id=run.id, lines=stored.lines, currency=run.currency,
                            start=run.period_start, end=run.period_end, bill_map=bill_map,
                            created_at=run.created_at, home=home)
    # the hints as this command words them (ledger.hints), and the month's close, as every report says it
    rec = replace(rec, warnings=tuple(say(rec.warnings, NAMES)), closing=stored.closing)
    for w in rec.warnings:  # a partial bill, a rule naming what the ledger does not have (also in --json)
        console.err.print(f"warning: {w}", markup=False)
    console.emit(rec, as_json=as_json, as_csv=as_csv, json_of=reconciliation_as_json, csv_of=reconciliation_as_csv,
                 table_of=lambda r: reconciliation_as_table(r, names=NAMES))


def register(app: typer.Typer) -> None:
    app.command("reconcile")(reconcile_cmd)
