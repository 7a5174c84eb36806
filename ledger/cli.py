"""The `ledger` command line: the root app. Each feature keeps its commands in its package's
``cli.py``, which exposes ``register(app)``; shared helpers (consoles, failures, JSON and CSV) are in
:mod:`ledger.console`. Commands parse and print only; the work is done by ledger.* functions.

The root answers at once: it knows its commands from :data:`COMMANDS` (name, module, one line of
help) and imports a feature's ``cli.py`` only when one of its commands runs (or its own ``--help``
is asked for). ``ledger --help`` imports typer and rich, nothing of the ledger's stages; a command
imports what it uses. ``tests/test_cli_startup.py`` checks the table against the commands each
module registers, and that ``import ledger.cli`` pulls in none of pandas, Altair, Streamlit or
PySpark; ``bench/startup.py`` times each command beside its floor."""
from __future__ import annotations

import importlib
import inspect
from contextvars import ContextVar
from dataclasses import dataclass
from difflib import get_close_matches

import click
import typer
import typer.main

from . import __version__
from .console import RootGroup, out, run


@dataclass(frozen=True)
class Lazy:
    """A command the root lists without importing it: its name, the module whose ``register(app)``
    defines it, and the first sentence of its help (what ``ledger --help`` shows)."""

    name: str
    module: str
    help: str


#: Every command of ``ledger``, in the order ``ledger --help`` lists them. A new command is a line
#: here and its ``register(app)`` in the module named.
COMMANDS: tuple[Lazy, ...] = (
    Lazy("init", "ledger.store.cli", "Create or upgrade the ledger store (Alembic upgrade head)."),
    Lazy("dims", "ledger.store.cli", "Tenants and products (controlled dimensions)."),
    Lazy("pricebook", "ledger.pricebook.cli", "Dated price books: check, load, show, import."),
    Lazy("ingest", "ledger.ingest.cli", "Ingest usage files (CSV, Parquet, JSON Lines) as one atomic batch."),
    Lazy("batches", "ledger.ingest.cli", "Ingest batches: list them, or undo one whose period is open."),
    Lazy("workload", "ledger.workload.cli",
         "The traffic a fleet served in a month (or a window: --from and --to), per minute: TPM "
         "p50/p95/p99/max/mean, peak-to-average, bursts above p95, input and output tokens per request, cache "
         "hits, the hour-of-week profile and the largest rise of TPM over --ramp-minutes."),
    Lazy("size", "ledger.sizing.cli",
         "Size a pool SLA-first: the SLA picks c*, c* the replica throughput, that the GPU count."),
    Lazy("allocate", "ledger.allocate.cli",
         "Price every resource of the period, allocate it, check conservation, and write an immutable run."),
    Lazy("check", "ledger.check.cli",
         "Pre-flight of the facts against the price books (usages with no price, pools without fleet...): "
         "exit 1 if any."),
    Lazy("reconcile", "ledger.reconcile.cli",
         "Set the ledger's priced cost beside the cloud bill: per pool, provider and category, the unmatched "
         "bill cost, reported-cost drift per model, and one total line (priced, billed, variance)."),
    Lazy("report", "ledger.reports.cli", "Unit-economics reports over the current allocation run of a period."),
    Lazy("runs", "ledger.reports.cli",
         "Allocation runs, newest first, each with its period's close (open, or closed by whom, final run)."),
    Lazy("close", "ledger.reports.cli",
         "Close a month and sign it off: who, when, why, and the run signed as final (never changed after)."),
    Lazy("statement", "ledger.reports.cli",
         "The month-end statement to sign: total, categories, idle, failed work, tenants, run, books, bill, close."),
    Lazy("whatif", "ledger.whatif.cli",
         "A past month repriced, rerouted or self-hosted, allocated by the same rules beside its run (SCENARIO, "
         "never a run)."),
    Lazy("budget", "ledger.budget.cli", "Forecast budgets from a replica plan (TOML), and forecast vs actual."),
    Lazy("budgets", "ledger.guardrails.cli",
         "Budgets per tenant, product or model (guardrails): load a budgets book, show them."),
    Lazy("alerts", "ledger.guardrails.cli",
         "Budgets beside the open month's provisional spend, burn-rate projections and spend anomalies: exit 0 "
         "when none fire, 3 when any does."),
    Lazy("export", "ledger.export.cli",
         "Export an allocation run (the period's current run) as a workbook, CSV lines or FOCUS rows."),
    Lazy("demo", "ledger.demo.cli",
         "Build realistic months (August to October 2026, and November open up to the 12th) from the Azure "
         "LLM inference trace in a fresh ledger home: tenants, products, two GPU pools, a provider model, "
         "meters, outcomes, charges and budgets; ingest, allocate and print where October's money went."),
    Lazy("dashboard", "ledger.dashboard.cli",
         "Serve the dashboards (unit economics, bill reconciliation, tenants, workload, sizing and budget, "
         "forecast vs actual, price books) over LEDGER_HOME / LEDGER_DATABASE_URL."),
    Lazy("sync", "ledger.sync.cli",
         "Read the live sources of a sync file (LiteLLM's database, a folder of bills) from their watermarks."),
    Lazy("otlp", "ledger.sync.cli", "The OTLP/HTTP receiver: GenAI spans posted to /v1/traces, committed in micro-batches."),
)

_BY_NAME = {c.name: c for c in COMMANDS}
#: True while the root's help is being written: commands are listed from the table, not imported.
_LISTING: ContextVar[bool] = ContextVar("ledger_listing", default=False)


def load(name: str) -> click.Command:
    """The real click command `name`: its module imported and registered on an app of its own, its
    help (and its subcommands') made prose (:func:`prose`)."""
    lazy = _BY_NAME[name]
    scratch = typer.Typer(add_completion=False)
    importlib.import_module(lazy.module).register(scratch)
    command = typer.main.get_group(scratch).commands[name]
    _prose_all(command)
    return command


def prose(text: str) -> str:
    """A command's help as paragraphs of prose: the line breaks of its docstring inside a paragraph
    become spaces. Typer's rich help keeps them (the first paragraph in a group's list of commands,
    the others in the command's own help), and a docstring wrapped at the source's width then shows
    as ragged lines in a wider or narrower terminal. A paragraph that starts with ``\b`` (click's
    mark for text kept as written) and whatever follows ``\f`` (not shown) are left as they are."""
    head, mark, tail = inspect.cleandoc(text).partition("\f")
    paragraphs = [p if p.startswith("\b") else " ".join(p.split()) for p in head.split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p) + mark + tail


def _prose_all(command: click.Command) -> None:
    if command.help:
        command.help = prose(command.help)
    for sub in getattr(command, "commands", {}).values():
        _prose_all(sub)


def whole() -> click.Group:
    """The root group with every command loaded (for tests and tools that walk the whole tree)."""
    root = typer.main.get_command(app)
    for lazy in COMMANDS:
        root.get_command(click.Context(root), lazy.name)
    return root


class _Root(RootGroup):
    """The root group: the commands of :data:`COMMANDS` imported when used, listed from the table."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.commands, *(c.name for c in COMMANDS if c.name not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        lazy = _BY_NAME.get(cmd_name)
        if lazy is None:
            return None
        if _LISTING.get():
            return click.Command(lazy.name, help=lazy.help)
        self.commands[cmd_name] = command = load(cmd_name)
        return command

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        token = _LISTING.set(True)
        try:
            super().format_help(ctx, formatter)
        finally:
            _LISTING.reset(token)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            if args and "Did you mean" not in e.message:
                if matches := get_close_matches(args[0], self.list_commands(ctx)):
                    e.message = f"{e.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise


app = typer.Typer(help="The inference unit-economics ledger: what LLM inference really costs, and who it costs for.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=_Root)


@app.callback()
def _settings() -> None:
    """Refuse a bad LEDGER_MEMORY_LIMIT or LEDGER_THREADS before any command starts (one line each).
    With neither set there is nothing to check, and DuckDB is not imported for it."""
    import os

    if not any(os.environ.get(name, "").strip() for name in ("LEDGER_MEMORY_LIMIT", "LEDGER_THREADS")):
        return
    from .console import fail
    from .duck import check_settings

    if problems := check_settings():
        fail(problems, 2)


@app.command()
def version() -> None:
    """Print the ledger version."""
    out.print(__version__)


def main() -> None:
    """The ``ledger`` command: the app, with standard output that fails handled (:func:`ledger.console.run`).

    What the interpreter, typer, click, rich and this module made to start lives as long as the
    process: frozen (``gc.freeze``), the collector's full passes, the first of which falls among the
    command's own imports, no longer walk it (about 2% of a one-row ingest's instructions); the
    garbage a command makes is collected as before."""
    import gc

    gc.freeze()
    run(app)


if __name__ == "__main__":
    main()
