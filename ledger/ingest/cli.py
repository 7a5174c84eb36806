"""CLI: `ledger ingest KIND FILE...` and `ledger batches [undo ID]`."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from .. import store
from ..check import check_ledger
from ..console import Ledger, err, fail, out, print_csv, print_json
from . import IngestError, ingest, list_batches, undo_batch

KINDS_HELP = {
    "requests": "per-request usage (one row per LLM call)",
    "meters": "metered events: tool calls, egress, observability, storage, evaluation",
    "outcomes": "task outcomes (success | failure) with their criteria",
    "fleet": "GPU fleet intervals per pool and role",
    "charges": "invoice charges with their allocation rule",
    "bill": "a cloud bill's cost-and-usage rows in FinOps FOCUS 1.0 to 1.3 (CSV or Parquet; docs/reconcile.md)",
}


def _run(kind: str, files: List[Path], fmt: Optional[str], register_new: bool, dry_run: bool, as_adjustment: bool,
         as_json: bool, source: Optional[str] = None, map_path: Optional[Path] = None) -> None:
    if source is not None and map_path is None:
        fail(f"--from {source} needs --map MAP.toml: the map says which {source} field gives each ledger column "
             "(docs/adapters.md)")
    if map_path is not None and source is None:
        fail("--map is read only with --from SOURCE (the files are in the ledger's own format otherwise)")
    from rich.progress import BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn

    show = sys.stderr.isatty() and not as_json
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                        TimeElapsedColumn(), console=err, transient=True, disable=not show)
    with progress:
        task = progress.add_task(f"ingest {kind}", total=100)

        def on_step(message: str) -> None:
            progress.update(task, description=f"ingest {kind}: {message}", total=None, completed=0)

        try:
            opts = dict(fmt=fmt, register_new=register_new, dry_run=dry_run, as_adjustment=as_adjustment,
                        on_step=on_step, on_progress=lambda pct: progress.update(task, total=100, completed=pct))
            if kind == "bill" and source is not None:
                fail("--from and --map do not apply to a bill: it is read as FOCUS (docs/reconcile.md)")
            if kind == "bill":
                from .bill import ingest_bill

                result = ingest_bill(files, **opts)
            elif source is None:
                result = ingest(kind, files, **opts)
            else:
                from .sources import ingest_from

                result = ingest_from(source, kind, files, map_path, **opts)
        except IngestError as e:
            progress.stop()
            fail(e.lines())
        except store.StoreError as e:
            progress.stop()
            fail(str(e))
    warnings = _batch_warnings(result)
    if as_json:
        print_json({**result.as_dict(), "warnings": warnings})
        return
    for f in result.files:
        out.print(f"{f.path}: {f.rows} rows read ({f.format}, sha256 {f.sha256[:12]})", markup=False)
    for d, names in result.registered.items():
        if names:
            out.print(f"{'would register' if dry_run else 'registered'} {d}s: {', '.join(names)}", markup=False)
    if result.dry_run:
        out.print(f"dry run: {result.rows_read} rows valid; nothing written")
        return
    note = f" (booked into {result.booked_period} as an adjustment)" if result.booked_period else ""
    if result.rows_new == 0:
        out.print(f"{result.rows_read} rows read, 0 new, {result.rows_duplicate} duplicate: already in the ledger, "
                  f"nothing added (batch {result.batch_id})")
    else:
        out.print(f"{result.rows_read} rows read, {result.rows_new} new, {result.rows_duplicate} duplicate; "
                  f"batch {result.batch_id}{note}")
    for w in warnings:
        err.print(f"warning: {w}", markup=False)


def _batch_warnings(result) -> list[str]:
    """`ledger check` restricted to the batch just written: a SKU with no price, a pool with no fleet,
    an unknown charge target show up now, not at month end. Warnings only: the batch is valid data
    and stays (the price may be loaded later), so they never change the exit code (docs/check.md)."""
    if result.dry_run or not result.batch_id or not result.rows_new:
        return []
    try:
        with Ledger() as s:
            report = check_ledger(s, batch=result.batch_id)
    except Exception as e:  # the batch is committed: a failing check must not turn it into a failure
        return [f"batch {result.batch_id} was not checked against the price books ({e}); run `ledger check`"]
    return [f.message for f in report.findings]


def register(app: typer.Typer) -> None:
    ingest_app = typer.Typer(help="Ingest usage files (CSV, Parquet, JSON Lines) as one atomic batch.",
                             no_args_is_help=True)
    app.add_typer(ingest_app, name="ingest")

    def make(kind: str):
        def command(files: List[Path] = typer.Argument(..., help="CSV, Parquet or JSON Lines files"),
                    fmt: Optional[str] = typer.Option(None, "--format", help="csv | parquet | jsonl (default: by extension)"),
                    register_new: bool = typer.Option(False, "--register-new", help="register unknown tenants and products"),
                    dry_run: bool = typer.Option(False, "--dry-run", help="validate only; write nothing"),
                    as_adjustment: bool = typer.Option(False, "--as-adjustment",
                                                       help="book rows of closed periods into the current open period"),
                    as_json: bool = typer.Option(False, "--json"),
                    source: Optional[str] = typer.Option(None, "--from",
                                                         help="read another tool's export (needs --map): litellm, langfuse or otel "
                                                              "for requests; langfuse-scores for outcomes"),
                    map_path: Optional[Path] = typer.Option(None, "--map",
                                                            help="TOML map of source fields to ledger columns "
                                                                 "(with --from; docs/adapters.md)")) -> None:
            _run(kind, files, fmt, register_new, dry_run, as_adjustment, as_json, source, map_path)
        command.__doc__ = f"Ingest {KINDS_HELP[kind]}."
        return command

    for kind in KINDS_HELP:
        ingest_app.command(kind)(make(kind))

    batches_app = typer.Typer(help="Ingest batches: list them, or undo one whose period is open.",
                              invoke_without_command=True)
    app.add_typer(batches_app, name="batches")

    @batches_app.callback()
    def batches(ctx: typer.Context, as_json: bool = typer.Option(False, "--json"),
                as_csv: bool = typer.Option(False, "--csv")) -> None:
        """List ingest batches."""
        if ctx.invoked_subcommand:
            return
        with Ledger() as s:
            rows = list_batches(s)
        data = [{"id": b.id, "kind": b.kind, "created_at": b.created_at.isoformat(), "rows_read": b.rows_read,
                 "rows_new": b.rows_new, "rows_duplicate": b.rows_duplicate,
                 "first_at": b.first_at.isoformat() if b.first_at else None,
                 "last_at": b.last_at.isoformat() if b.last_at else None, "booked_period": b.booked_period,
                 "files": json.loads(b.files)} for b in rows]
        if as_json:
            print_json(data)
            return
        if as_csv:
            print_csv([{**{k: v for k, v in d.items() if k != "files"},
                        "files": " ".join(f["path"] for f in d["files"])} for d in data])
            return
        t = Table("batch", "kind", "created", "read", "new", "dup", "first", "last", "files", title=f"batches ({len(data)})")
        for d in data:
            t.add_row(d["id"], d["kind"], d["created_at"][:19], str(d["rows_read"]), str(d["rows_new"]),
                      str(d["rows_duplicate"]), (d["first_at"] or "")[:16], (d["last_at"] or "")[:16],
                      ", ".join(f["path"] for f in d["files"]))
        out.print(t)

    @batches_app.command("undo")
    def undo(batch_id: str = typer.Argument(...)) -> None:
        """Remove a batch whose period is open."""
        with Ledger() as s:
            try:
                b = undo_batch(s, batch_id)
            except store.StoreError as e:
                fail(str(e))
        out.print(f"batch {b.id} ({b.kind}, {b.rows_new} rows) removed")
