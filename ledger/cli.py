"""The `ledger` command line: the root app. Each feature keeps its commands in its package's
``cli.py``, which exposes ``register(app)``; shared helpers (consoles, failures, JSON and CSV) are in
:mod:`ledger.console`. Commands parse and print only; the work is done by ledger.* functions."""
from __future__ import annotations

import typer

from . import __version__
from .allocate import cli as allocate_cli
from .budget import cli as budget_cli
from .check import cli as check_cli
from .console import RootGroup, out, run
from .dashboard import cli as dashboard_cli
from .demo import cli as demo_cli
from .export import cli as export_cli
from .ingest import cli as ingest_cli
from .pricebook import cli as pricebook_cli
from .reconcile import cli as reconcile_cli
from .reports import cli as reports_cli
from .sizing import cli as sizing_cli
from .store import cli as store_cli
from .workload import cli as workload_cli

app = typer.Typer(help="The inference unit-economics ledger: what LLM inference really costs, and who it costs for.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=RootGroup)


@app.callback()
def _settings() -> None:
    """Refuse a bad LEDGER_MEMORY_LIMIT or LEDGER_THREADS before any command starts (one line each)."""
    from .console import fail
    from .duck import check_settings

    if problems := check_settings():
        fail(problems, 2)


@app.command()
def version() -> None:
    """Print the ledger version."""
    out.print(__version__)


# The order of registration is the order of `ledger --help`.
for _feature in (store_cli, pricebook_cli, ingest_cli, workload_cli, sizing_cli, allocate_cli, check_cli, reconcile_cli,
                 reports_cli, budget_cli, export_cli, demo_cli, dashboard_cli):
    _feature.register(app)


def main() -> None:
    """The ``ledger`` command: the app, with standard output that fails handled (:func:`ledger.console.run`)."""
    run(app)


if __name__ == "__main__":
    main()
