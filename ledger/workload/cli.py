"""`ledger workload --period P [--pool X] [--product Y] [--ramp-minutes N] [--json | --csv]`: the
traffic of a month from the request facts (per-minute TPM percentiles, bursts, request lengths,
cache hits, hour of week, the largest rise over N minutes)."""
from __future__ import annotations

from typing import Optional

import typer

from .. import console


def workload_cmd(period: str = typer.Option(..., "--period", help="the month, e.g. 2026-10"),
                 pool: Optional[str] = typer.Option(None, "--pool", help="only the requests served by this pool"),
                 product: Optional[str] = typer.Option(None, "--product", help="only this product's requests"),
                 ramp_minutes: int = typer.Option(10, "--ramp-minutes",
                                                  help="window of the largest rise of TPM, in minutes (>= 1)"),
                 as_json: bool = typer.Option(False, "--json", help="print the workload as JSON"),
                 as_csv: bool = typer.Option(False, "--csv", help="print one row per figure as CSV")) -> None:
    """The traffic a fleet served in a month, per minute: TPM p50/p95/p99/max/mean, peak-to-average,
    bursts above p95, input and output tokens per request, cache hits, the hour-of-week profile and
    the largest rise of TPM over --ramp-minutes. Method: docs/workload.md."""
    from .render import workload_as_csv, workload_as_json, workload_as_table
    from . import WorkloadError, workload

    console.one_format(as_json, as_csv)
    with console.Ledger() as s:
        try:
            w = workload(s, period, pool=pool, product=product, ramp_minutes=ramp_minutes)
        except WorkloadError as e:
            console.fail(e.problems)
    console.emit(w, as_json=as_json, as_csv=as_csv, json_of=workload_as_json, csv_of=workload_as_csv,
                 table_of=lambda x: _tables(workload_as_table(x)))


def _tables(tables):
    from rich.console import Group

    return Group(*tables)


def register(app: typer.Typer) -> None:
    """Add `ledger workload` to the main app."""
    app.command("workload")(workload_cmd)
