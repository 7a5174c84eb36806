"""`ledger workload (--period P | --from T --to T) [--pool X] [--product Y] [--ramp-minutes N] [--json | --csv]`:
the traffic of a month, or of any window of whole minutes, from the request facts (per-minute TPM
percentiles, bursts, request lengths, cache hits, hour of week, the largest rise over N minutes)."""
from __future__ import annotations

from typing import Optional

import typer

from .. import console

#: How `ledger workload` words the hints of what the library says (:mod:`ledger.hints`): key -> words.
NAMES = {"window_start": "--from", "window_end": "--to", "ramp_minutes": "--ramp-minutes",
         "month": " (--period YYYY-MM)", "window": " (--from and --to)", "window_bounds": "--from and --to"}


def workload_cmd(period: Optional[str] = typer.Option(None, "--period", help="the month, e.g. 2026-10 (or --from and --to)"),
                 frm: Optional[str] = typer.Option(None, "--from", help=console.FROM_HELP + "; an instant "
                                                                                        "on a whole minute"),
                 to: Optional[str] = typer.Option(None, "--to", help=console.TO_HELP + "; an instant on a whole "
                                                                                    "minute"),
                 pool: Optional[str] = typer.Option(None, "--pool", help="only the requests served by this pool"),
                 product: Optional[str] = typer.Option(None, "--product", help="only this product's requests"),
                 ramp_minutes: int = typer.Option(10, "--ramp-minutes",
                                                  help="window of the largest rise of TPM, in minutes (>= 1)"),
                 as_json: bool = typer.Option(False, "--json", help="print the workload as JSON"),
                 as_csv: bool = typer.Option(False, "--csv", help="print one row per figure as CSV")) -> None:
    """The traffic a fleet served in a month (or a window: --from and --to), per minute: TPM
    p50/p95/p99/max/mean, peak-to-average, bursts above p95, input and output tokens per request,
    cache hits, the hour-of-week profile and the largest rise of TPM over --ramp-minutes. Method:
    docs/workload.md."""
    from .render import workload_as_csv, workload_as_json, workload_as_table
    from . import workload

    console.words(NAMES)
    console.one_format(as_json, as_csv)
    start, end = console.period_bounds(period, frm, to)  # one line per mistake, before the ledger is opened
    window = {} if period else {"start": start, "end": end}
    with console.Ledger() as s:
        w = workload(s, period, **window, pool=pool, product=product, ramp_minutes=ramp_minutes)
    console.emit(w, as_json=as_json, as_csv=as_csv, json_of=workload_as_json, csv_of=workload_as_csv,
                 table_of=lambda x: _tables(workload_as_table(x)))


def _tables(tables):
    from rich.console import Group

    return Group(*tables)


def register(app: typer.Typer) -> None:
    """Add `ledger workload` to the main app."""
    app.command("workload")(workload_cmd)
