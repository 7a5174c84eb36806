"""`ledger dashboard`: serve the Streamlit dashboards (the installed `dashboards` package) over the ledger home."""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import typer

from .. import config, console
from ..errors import LedgerError

LOCALE_ENV = "LEDGER_DASHBOARD_LOCALE"
PORT_ENV = "STREAMLIT_SERVER_PORT"
DEFAULT_PORT = 8501


class NotInstalled(LedgerError, LookupError):
    """The `dashboards` package is not importable from this installation."""


def app_path() -> Path:
    """The dashboard's entry script, ``app.py`` of the installed ``dashboards`` package (it ships
    in the wheel beside ``ledger``; an editable install maps it to the checkout's ``dashboards/``)."""
    spec = importlib.util.find_spec("dashboards")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        script = Path(folder) / "app.py"
        if script.is_file():
            return script
    raise NotInstalled("the `dashboards` package (the dashboard's pages) is not installed beside `ledger`: "
                       "reinstall the ledger (`pip install .`, or `pip install -e .` in a checkout)")


def streamlit_command(*, host: str, port: int, script: Path | None = None) -> list[str]:
    """The server's command line: ``ledger.dashboard.serve`` (the heavy imports done before the
    server accepts a session, then ``streamlit run``), headless, bound to `host`:`port`, no usage
    statistics, the toolbar without developer options (no Deploy button), no file watching."""
    return [sys.executable, "-m", "ledger.dashboard.serve", "run", str(script or app_path()),
            "--server.headless", "true", "--server.address", host, "--server.port", str(port),
            "--browser.gatherUsageStats", "false", "--client.toolbarMode", "viewer",
            "--server.fileWatcherType", "none"]


def dashboard_cmd(port: int = typer.Option(DEFAULT_PORT, "--port", min=1, max=65535, envvar=PORT_ENV,
                                           help=f"TCP port to serve on (default: {PORT_ENV}, else {DEFAULT_PORT})"),
                  host: str = typer.Option("127.0.0.1", "--host",
                                           help="address to bind (loopback by default: keep the ledger private)"),
                  locale: str = typer.Option("en_US", "--locale",
                                             help="locale of money and numbers (changeable in the sidebar)")) -> None:
    """Serve the dashboards (unit economics, bill reconciliation, tenants, workload, sizing and
    budget, forecast vs actual, price books) over LEDGER_HOME / LEDGER_DATABASE_URL. Read-only: the
    dashboard never writes to the ledger."""
    from ..export.xlsx import check_locale

    check_locale(locale)
    script = app_path()
    env = dict(os.environ)
    env["LEDGER_HOME"] = str(config.ledger_home())  # resolved here: the server must read this very home
    env[LOCALE_ENV] = locale
    console.err.print(f"ledger dashboard on http://{host}:{port} over the ledger home {env['LEDGER_HOME']} "
                      "(Ctrl+C stops it)", markup=False, highlight=False)
    raise typer.Exit(_serve(streamlit_command(host=host, port=port, script=script), env))


def _serve(command: list[str], env: dict[str, str]) -> int:
    """Run the server until it exits; SIGTERM and Ctrl+C are passed on to it, so that stopping
    `ledger dashboard` always stops the server too (never an orphaned Streamlit)."""
    proc = subprocess.Popen(command, env=env)

    def forward(signum, _frame):
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            try:
                return proc.wait(timeout=None)
            except KeyboardInterrupt:  # the handler was not installed in time: stop the server ourselves
                forward(signal.SIGINT, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    """Add `ledger dashboard` to the main app."""
    app.command("dashboard")(dashboard_cmd)
