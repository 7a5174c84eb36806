"""CLI: `ledger ingest KIND FILE...` and `ledger batches [undo ID]`."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.text import Text

from .. import config
from ..console import Reading, Writing, err, fail, one_format, out, plural, print_csv, print_json
from ..formats import count
from ..vocab import ADJUSTABLE

if TYPE_CHECKING:  # rich's tables are imported by `ledger batches`, which prints one
    from ..tables import FitTable

# The ingest's stages (DuckDB, the checks, the adapters) are imported by the commands that run them,
# not with this module: `ledger batches` and `ledger ingest --help` start without them; the ingest,
# the check of its batch and an undo read and write the ledger DB through SQLAlchemy Core, without
# SQLModel (docs/scale.md, "Startup"; tests/test_cli_startup.py).

#: source -> the kind of rows its adapter gives (``ingest KIND --source SOURCE``), for the help
#: written without importing the adapters; tests/test_cli_startup.py checks it against
#: ``ledger.ingest.sources.SOURCES``
SOURCE_KINDS = {"litellm": "requests", "langfuse": "requests", "otel": "requests", "langfuse-scores": "outcomes"}

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
        fail(f"--source {source} needs --map MAP.toml: the map says which {source} field gives each ledger column "
             "(docs/adapters.md)")
    if map_path is not None and source is None:
        fail("--map is read only with --source SOURCE (the files are in the ledger's own format otherwise)")
    show = sys.stderr.isatty() and not as_json
    progress = _progress() if show else _NoProgress()  # rich's progress bar imported only to be shown
    checked: list[list[str]] = []  # the warnings of the batch's check, when the ingest ran it (`after`)
    with progress:
        task = progress.add_task(f"ingest {kind}", total=100)

        def on_step(message: str) -> None:
            progress.update(task, description=f"ingest {kind}: {message}", total=None, completed=0)

        from . import ingest

        home = config.home()  # the ledger, resolved once here and passed down
        opts = dict(fmt=fmt, register_new=register_new, dry_run=dry_run, as_adjustment=as_adjustment,
                    on_step=on_step, on_progress=lambda pct: progress.update(task, total=100, completed=pct),
                    home=home)
        if kind == "bill" and source is not None:
            fail("--source and --map do not apply to a bill: it is read as FOCUS (docs/reconcile.md)")
        if kind == "bill":
            from .bill import ingest_bill

            result = ingest_bill(files, **opts)
        elif source is None:
            # the batch checked in the ingest's DuckDB database and DB connection (docs/scale.md, "Startup")
            result = ingest(kind, files, **opts,
                            after=lambda done, s, con: checked.append(_batch_warnings(done, home.path, s, con)))
        else:
            from .sources import ingest_from

            result = ingest_from(source, kind, files, map_path, **opts)
    warnings = checked[0] if checked else _batch_warnings(result, home.path)
    if as_json:
        print_json({**result.as_dict(), "warnings": warnings})
        return
    for f in result.files:
        out.print(f"{f.path}: {plural(f.rows, 'row')} read ({f.format}, sha256 {f.sha256[:12]})", markup=False)
    for d, names in result.registered.items():
        if names:
            out.print(f"{'would register' if dry_run else 'registered'} {d}s: {', '.join(names)}", markup=False)
    if result.dry_run:
        out.print(f"dry run: {plural(result.rows_read, 'row')} valid; nothing written")
        return
    note = f" (booked into {result.booked_period} as an adjustment)" if result.booked_period else ""
    if result.rows_new == 0:
        out.print(f"{plural(result.rows_read, 'row')} read, 0 new, {result.rows_duplicate:,} duplicate: already in "
                  f"the ledger, nothing added (batch {result.batch_id})")
    else:
        out.print(f"{plural(result.rows_read, 'row')} read, {result.rows_new:,} new, {result.rows_duplicate:,} "
                  f"duplicate; batch {result.batch_id}{note}")
    for w in warnings:
        err.print(f"warning: {w}", markup=False)


#: The columns of `batches --csv` (`files`: the paths, separated by spaces).
BATCH_COLUMNS = ("id", "kind", "created_at", "rows_read", "rows_new", "rows_duplicate", "first_at", "last_at",
                 "booked_period", "files")


def _when(iso: str | None, length: int) -> str:
    """An ISO instant of `batches --json` as the table shows it: to the second or the minute, a space
    between date and time (where it may wrap)."""
    return iso[:length].replace("T", " ") if iso else "—"


def batches_as_table(data: list[dict]) -> FitTable:
    """The batches of `ledger batches` (the dicts of its JSON) for a person: an id whole, paths
    folded, never cut; counts grouped; instants in UTC."""
    from ..tables import FitTable

    t = FitTable(title=f"batches ({count(len(data))}; times UTC)")
    t.add_column("batch", numeric=False)  # one word: whole, to copy into `batches undo` (a narrow terminal stacks)
    for name in ("kind", "created"):
        t.add_column(name, numeric=False)
    for name in ("read", "new", "dup"):
        t.add_column(name)
    for name in ("first", "last"):
        t.add_column(name, numeric=False)
    t.add_column("files", numeric=False, fold=True)
    for d in data:  # ids, kinds and paths are data, never markup
        t.add_row(Text(d["id"]), d["kind"], _when(d["created_at"], 19), count(d["rows_read"]), count(d["rows_new"]),
                  count(d["rows_duplicate"]), _when(d["first_at"], 16), _when(d["last_at"], 16),
                  Text(", ".join(f["path"] for f in d["files"])))
    return t


def _batch_warnings(result, home: Path, s=None, con=None) -> list[str]:
    """`ledger check` restricted to the batch just written: a SKU with no price, a pool with no fleet,
    an unknown charge target show up now, not at month end. Warnings only: the batch is valid data
    and stays (the price may be loaded later), so they never change the exit code (docs/check.md).
    `s` and `con`: the ingest's DB connection (Core) and DuckDB connection, when it runs the check
    (``ingest(after=...)``); else a connection of its own and the check's DuckDB database."""
    if result.dry_run or not result.batch_id or not result.rows_new:
        return []
    from ..check import check_ledger

    try:
        if s is not None:
            report = check_ledger(s, batch=result.batch_id, home=home, con=con)
        else:
            with Reading() as s:  # Core: the books, batches and tenants read without SQLModel
                report = check_ledger(s, batch=result.batch_id, home=home)
    except Exception as e:  # the batch is committed: a failing check must not turn it into a failure
        return [f"batch {result.batch_id} was not checked against the price books ({e}); run `ledger check`"]
    return [f.message for f in report.findings]


def _progress():
    """rich's progress bar of the ingest, on stderr (shown on a terminal only, and never with --json)."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                    TimeElapsedColumn(), console=err, transient=True)


class _NoProgress:
    """What the ingest tells a progress bar that is not shown (stderr is no terminal, or --json):
    nothing, and without importing rich's progress bar (a disabled one draws nothing either)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, *args, **kwargs) -> int:
        return 0

    def update(self, *args, **kwargs) -> None:
        return None


def _one_of(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _sources_of(kind: str) -> list[str]:
    """The other tools' exports `ingest KIND --source` reads (ledger.ingest.sources: :data:`SOURCE_KINDS`)."""
    return [name for name, given in SOURCE_KINDS.items() if given == kind]


def register(app: typer.Typer) -> None:
    ingest_app = typer.Typer(help="Ingest usage files (CSV, Parquet, JSON Lines) as one atomic batch.",
                             no_args_is_help=True)
    app.add_typer(ingest_app, name="ingest")

    def make(kind: str):
        # An option a kind refuses is hidden from its help (still accepted, so that it is refused
        # with the reason): --as-adjustment where the kind is not ADJUSTABLE, --source and --map
        # where no adapter gives the kind.
        sources = _sources_of(kind)
        adjust_help = ("book rows of closed periods into the current open period" if kind in ADJUSTABLE else
                       f"not for {kind} (only {', '.join(ADJUSTABLE)}): book a late cost as a charge in an open "
                       "period")
        source_help = (f"read another tool's export (needs --map): {_one_of(sources)} (docs/adapters.md)"
                       if sources else f"no other tool's export gives {kind}")
        named = kind not in ("fleet", "bill")  # kinds with tenant or product names to register
        formats = "csv | parquet (default: by extension; gzip is read as it is)" if kind == "bill" else \
            "csv | parquet | jsonl (json: any JSON shape; default: by extension; gzip is read as it is)"

        def command(files: List[Path] = typer.Argument(..., help="CSV or Parquet files" if kind == "bill" else
                                                       "CSV, Parquet or JSON Lines files (or JSON arrays; .gz too)"),
                    fmt: Optional[str] = typer.Option(None, "--format", help=formats),
                    register_new: bool = typer.Option(False, "--register-new", hidden=not named,
                                                      help="register unknown tenants" + (
                                                          " (the tenant:NAME of allocate)" if kind == "charges" else
                                                          " and products")),
                    dry_run: bool = typer.Option(False, "--dry-run", help="validate only; write nothing"),
                    as_adjustment: bool = typer.Option(False, "--as-adjustment", help=adjust_help,
                                                       hidden=kind not in ADJUSTABLE),
                    as_json: bool = typer.Option(False, "--json", help="print what was ingested as JSON (batch, "
                                                                       "files, rows, warnings)"),
                    source: Optional[str] = typer.Option(None, "--source", help=source_help, hidden=not sources),
                    map_path: Optional[Path] = typer.Option(None, "--map", hidden=not sources,
                                                            help="TOML map of source fields to ledger columns "
                                                                 "(with --source; docs/adapters.md)")) -> None:
            _run(kind, files, fmt, register_new, dry_run, as_adjustment, as_json, source, map_path)
        command.__doc__ = f"Ingest {KINDS_HELP[kind]}."
        return command

    for kind in KINDS_HELP:
        ingest_app.command(kind)(make(kind))

    batches_app = typer.Typer(help="Ingest batches: list them, or undo one whose period is open.",
                              invoke_without_command=True)
    app.add_typer(batches_app, name="batches")

    @batches_app.callback()
    def batches(ctx: typer.Context,
                as_json: bool = typer.Option(False, "--json", help="print the batches as JSON (files with their "
                                                                   "SHA-256)"),
                as_csv: bool = typer.Option(False, "--csv", help="print one row per batch as CSV")) -> None:
        """List ingest batches."""
        if ctx.invoked_subcommand:
            return
        from .batches import list_batches

        one_format(as_json, as_csv)
        with Reading() as conn:  # Core over the table: no SQLModel, no ingest stages to start
            rows = list_batches(conn)
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
                        "files": " ".join(f["path"] for f in d["files"])} for d in data], header=list(BATCH_COLUMNS))
            return
        out.print(batches_as_table(data))

    @batches_app.command("undo")
    def undo(batch_id: str = typer.Argument(..., help="the batch id, as `ledger batches` lists it")) -> None:
        """Remove a batch whose period is open (to correct rows: undo their batch, then ingest the corrected
        file again)."""
        from . import undo_batch

        with Writing() as conn:  # Core, one transaction: the batch row removed, then its files
            b = undo_batch(conn, batch_id, home=config.home())
        out.print(f"batch {b.id} ({b.kind}, {plural(b.rows_new, 'row')}) removed")
