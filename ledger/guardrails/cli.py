"""`ledger budgets load FILE...`, `ledger budgets show` and `ledger alerts`: the guardrails between
month-ends (docs/alerts.md). Exit status of `alerts`: 0 none fired, 3 some fired, 4 the webhook was
not delivered, 1 the run was refused."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

import typer

from .. import console

#: The exit status of `ledger alerts` when an alert fires (cron tells it from a failure, 1).
FIRED = 3

budgets_app = typer.Typer(help="Budgets per tenant, product or model (guardrails): load a budgets book, show them.",
                          no_args_is_help=True)


@budgets_app.command("load")
def budgets_load(paths: List[Path] = typer.Argument(..., help="budgets books (TOML) to check and store")) -> None:
    """Check budgets books, then store them in the ledger. A loaded version is immutable; the
    greatest version of a book's name is the one in force."""
    from .. import config, facts
    from .book import read_budget_book, store_budget_book
    from .records import GuardrailError

    books, problems = [], []
    for p in paths:
        try:
            books.append(read_budget_book(p))
        except GuardrailError as e:
            problems += e.problems
    if problems:
        console.fail(problems)
    with console.Ledger() as s:
        models = _models(s, config.ledger_home(), facts)
        results = [(b.ref, store_budget_book(s, book=b, models=models)) for b in books]
    for ref, status in results:
        console.out.print(f"{ref}: {status}", markup=False)


def _models(s, home: Path, facts) -> set[str] | None:
    """The models the ledger's request facts name (None when there are no request facts yet)."""
    batches = facts.committed_batches(s)
    if not batches.get("requests"):
        return None
    con = facts.connect(batches, home)
    try:
        return {m for (m,) in con.execute("SELECT DISTINCT model FROM requests").fetchall()}
    finally:
        con.close()


@budgets_app.command("show")
def budgets_show(at: Optional[str] = typer.Option(None, "--at", help="the instant (ISO 8601, e.g. 2026-11-12T00:00:00Z;"
                                                                     " a date is its 00:00 UTC); default now"),
                 as_json: bool = typer.Option(False, "--json", help="print the budgets as JSON (amounts as decimal "
                                                                    "strings)"),
                 as_csv: bool = typer.Option(False, "--csv", help="print one row per budget as CSV")) -> None:
    """The budgets in force at an instant, over the budgets books loaded in the ledger."""
    from .book import budget_books, budgets_in_force
    from .render import budgets_as_csv, budgets_as_json, budgets_as_table

    console.one_format(as_json, as_csv)
    instant = console.parse_instant(at, "--at") if at else datetime.now(timezone.utc)
    with console.Ledger() as s:
        budgets = budgets_in_force(budget_books(s), instant)
    console.emit(budgets, as_json=as_json, as_csv=as_csv, json_of=lambda b: budgets_as_json(b, instant),
                 csv_of=budgets_as_csv, table_of=lambda b: budgets_as_table(b, instant))


def alerts_cmd(as_of: Optional[str] = typer.Option(None, "--as-of", help="the instant the alerts are as of (ISO 8601,"
                                                                         " e.g. 2026-11-12T12:00:00Z); default now"),
               as_json: bool = typer.Option(False, "--json", help="print the budgets, anomalies and alerts as JSON "
                                                                  "(amounts as decimal strings)"),
               as_csv: bool = typer.Option(False, "--csv", help="print one row per budget and per anomaly as CSV"),
               webhook: Optional[str] = typer.Option(None, "--webhook", help="POST the alerts as one JSON body (Slack "
                                                                            "text plus the structured alerts) to this "
                                                                            "http(s) URL"),
               webhook_timeout: float = typer.Option(10.0, "--webhook-timeout", min=0.1,
                                                     help="seconds each webhook attempt may take (3 attempts)"),
               weeks: int = typer.Option(8, "--weeks", help="weeks of history for the baseline and the profile"),
               min_weeks: int = typer.Option(4, "--min-weeks", help="fewest same-weekday days a baseline needs"),
               mad_k: str = typer.Option("5", "--mad-k", help="fire above median + K x 1.4826 x MAD"),
               min_ratio: str = typer.Option("1.5", "--min-ratio", help="and at least this multiple of the median"),
               min_increase: str = typer.Option("5", "--min-increase", help="and at least this much above the median "
                                                                           "(in the alerts' currency)"),
               days: Optional[int] = typer.Option(None, "--days", help="judge anomalies on the last N days only "
                                                                       "(default: every day of the month so far)"),
               currency: Optional[str] = typer.Option(None, "--currency", help="the alerts' currency (default: the "
                                                                              "budgets', else USD)")) -> None:
    """Budgets beside the open month's provisional spend, burn-rate projections and spend anomalies: exit 0 when none fire, 3 when any does.

    Spend to date per budget (the month's usage priced and allocated by the run's rules, never
    written as a run), its projection to month end and the day it runs out, and the spend
    anomalies per tenant and model per day against the same weekday of the last weeks. Exit 4:
    the webhook was not delivered. Method: docs/alerts.md."""
    from .. import config
    from ..money import MoneyError, to_decimal
    from .alerts import compute_alerts
    from .records import Rule
    from .render import alerts_as_csv, alerts_as_json, alerts_as_table, webhook_body
    from .webhook import check_url, post

    console.one_format(as_json, as_csv)
    instant = console.parse_instant(as_of, "--as-of") if as_of else datetime.now(timezone.utc)
    try:
        rule = Rule(weeks=weeks, min_weeks=min_weeks, mad_k=to_decimal(mad_k, what="--mad-k"),
                    min_ratio=to_decimal(min_ratio, what="--min-ratio"),
                    min_increase=to_decimal(min_increase, what="--min-increase"))
    except MoneyError as e:
        console.fail(str(e))
    if webhook is not None:
        check_url(webhook)
    with console.Ledger() as s:
        alerts = compute_alerts(s, home=config.ledger_home(), as_of=instant, rule=rule, currency=currency, days=days)
    console.emit(alerts, as_json=as_json, as_csv=as_csv, json_of=alerts_as_json, csv_of=alerts_as_csv,
                 table_of=alerts_as_table)
    if webhook is not None:
        post(webhook, webhook_body(alerts), timeout=webhook_timeout)
    if alerts.fired:
        raise typer.Exit(FIRED)


def register(app: typer.Typer) -> None:
    """Add `ledger budgets` and `ledger alerts` to the main app."""
    app.add_typer(budgets_app, name="budgets")
    app.command("alerts")(alerts_cmd)
