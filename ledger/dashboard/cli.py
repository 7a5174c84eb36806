"""`ledger dashboard`: run the Streamlit dashboards (dashboards/app.py) over the current ledger home."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import typer

from .. import config, console

LOCALE_ENV = "LEDGER_DASHBOARD_LOCALE"


def app_path() -> Path:
    """The dashboard's entry script in the source checkout."""
    return config.project_root() / "dashboards" / "app.py"


def streamlit_command(*, host: str, port: int) -> list[str]:
    """The `streamlit run` command line: headless, bound to `host`:`port`, no usage statistics."""
    return [sys.executable, "-m", "streamlit", "run", str(app_path()), "--server.headless", "true",
            "--server.address", host, "--server.port", str(port), "--browser.gatherUsageStats", "false"]


def dashboard_cmd(port: int = typer.Option(8501, "--port", min=1, max=65535, help="TCP port to serve on"),
                  host: str = typer.Option("127.0.0.1", "--host",
                                           help="address to bind (loopback by default: keep the ledger private)"),
                  locale: str = typer.Option("en_US", "--locale",
                                             help="locale of money and numbers (changeable in the sidebar)")) -> None:
    """Serve the dashboards (unit economics, tenants, sizing and budget, price books, forecast vs
    actual) over LEDGER_HOME / LEDGER_DATABASE_URL. Read-only: the dashboard never writes to the ledger."""
    from ..export.xlsx import LocaleError, check_locale

    try:
        check_locale(locale)
    except LocaleError as e:
        console.fail(str(e))
    script = app_path()
    if not script.is_file():
        console.fail(f"the dashboard script {script.name} is not in this installation (dashboards/ ships with the source "
                 "checkout): run `ledger dashboard` from an editable install (`pip install -e .`)")
    env = dict(os.environ)
    env["LEDGER_HOME"] = str(config.ledger_home())  # resolved here: the server must read this very home
    env[LOCALE_ENV] = locale
    console.err.print(f"ledger dashboard on http://{host}:{port} over the ledger home {env['LEDGER_HOME']} "
                  "(Ctrl+C stops it)", markup=False, highlight=False)
    raise typer.Exit(_serve(streamlit_command(host=host, port=port), env))


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
