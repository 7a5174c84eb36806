"""`ledger budget PLAN` (forecast by month x scenario x category, JSON, CSV, workbook) and
`ledger budget compare PLAN --period YYYY-MM` (forecast vs the current allocation run)."""
from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import click
import typer
from typer.core import TyperGroup

from .. import console

if TYPE_CHECKING:  # the plan's stack (the pricing, the sizing, DuckDB) is imported by the commands when they
    # run, so that `ledger budget --help` starts without it (docs/scale.md, "Startup")
    from . import Budget

#: How `ledger budget` words the hints of what the library says (:mod:`ledger.hints`): key -> words.
#: A plan's pool takes `repair = true` where `ledger size` takes --repair.
NAMES = {"percentile": "--percentile", "repair": "set repair = true", "from": "--from", "to": "--to"}


class _DefaultGroup(TyperGroup):
    """A group whose first argument, when it is not a subcommand, goes to the default command:
    ``ledger budget PLAN`` runs ``ledger budget forecast PLAN``."""

    default = "forecast"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [self.default, *args]
        return super().parse_args(ctx, args)


budget_app = typer.Typer(cls=_DefaultGroup, no_args_is_help=True,
                         help="Forecast budgets from a replica plan (TOML), and forecast vs actual. "
                              "`ledger budget PLAN` prices the plan; `ledger budget compare PLAN --period M`.")


_BOOKS_HELP = "price book files or folders (default: the plan's, else the ledger's)"
_SCENARIOS_HELP = ("a scenario to budget, e.g. base; repeat it or give a comma list (best,base,worst); default: all "
                   "of the plan's")


def _check_xlsx(xlsx: Optional[Path], locale: str) -> None:
    """Refuse a workbook path or locale before any work (never the ledger's own DB or facts)."""
    if xlsx is None:
        return
    from ..export.safe import OutputError, check_output_path
    from ..export.xlsx import LocaleError, check_locale

    try:
        check_locale(locale)
        check_output_path(xlsx)
    except (LocaleError, OutputError) as e:
        console.fail(str(e))


def _index(plan, pricebooks: Optional[List[Path]]):
    from .. import pricebook, store

    paths = list(pricebooks or []) or list(plan.pricebooks)
    if not paths:
        try:
            return store.default_index()
        except ValueError as e:
            console.fail(str(e).splitlines())
    books, problems = pricebook.load_books(paths)
    if problems:
        console.fail([str(p) for p in pricebook.unlocated(problems)])
    return pricebook.PriceIndex(books)


def _version() -> str:
    from ..runs import code_version

    return code_version()


def scenario_names(values: str | List[str] | None) -> Optional[list[str]]:
    """The scenarios of --scenario: each value one name or a comma list (``--scenario best --scenario
    base`` = ``--scenario best,base``), in order, each once; None when none is given."""
    if not values:
        return None
    names: list[str] = []
    for v in [values] if isinstance(values, str) else values:
        names += [n.strip() for n in v.split(",") if n.strip() and n.strip() not in names]
    if not names:
        console.fail("--scenario: give a scenario name, such as --scenario base or --scenario best,base,worst")
    return names


def compute(plan_path: Path, scenarios: str | List[str] | None, pricebooks: Optional[List[Path]]) -> Budget:
    """Load, validate and price a plan, failing with one line per problem."""
    return _priced(plan_path, scenarios, pricebooks)[0]


def _priced(plan_path: Path, scenarios: str | List[str] | None, pricebooks: Optional[List[Path]]):
    """(the Budget, the PriceIndex it was priced with), failing with one line per problem."""
    from . import budget, load_plan

    console.words(NAMES)  # a BudgetError is printed by the root, one line per problem, in these words
    plan = load_plan(plan_path)
    names = scenario_names(scenarios)
    index = _index(plan, pricebooks)
    return budget(plan, index, scenarios=names, generated_at=datetime.now(timezone.utc)), index


@budget_app.command("forecast")
def forecast_cmd(plan: Path = typer.Argument(..., help="the plan (TOML), see docs/budgets.md"),
                 scenarios: Optional[List[str]] = typer.Option(None, "--scenario", help=_SCENARIOS_HELP),
                 old_scenarios: Optional[str] = typer.Option(None, "--scenarios", hidden=True,
                                                             help="deprecated spelling of --scenario"),
                 as_json: bool = typer.Option(False, "--json", help="print the budget as JSON (money as strings)"),
                 as_csv: bool = typer.Option(False, "--csv", help="print month x scenario x category as CSV"),
                 first: Optional[str] = typer.Option(None, "--from",
                                                     help=console.FROM_HELP + "; by month: an instant must start a "
                                                          "month (default: the plan's first month; volumes still "
                                                          "grow from the plan's start)"),
                 last: Optional[str] = typer.Option(None, "--to",
                                                    help=console.TO_HELP + "; by month: an instant must start a "
                                                         "month (default: through the plan's last month)"),
                 xlsx: Optional[Path] = typer.Option(None, "--xlsx", help="write the budget workbook to FILE"),
                 locale: str = typer.Option("en_US", "--locale", help="locale of the workbook's currency formats"),
                 pricebooks: Optional[List[Path]] = typer.Option(None, "--pricebooks",
                                                                 help=_BOOKS_HELP)) -> None:
    """Size every pool month by month, price every month with the prices in force, per scenario, with
    quarterly subtotals; --from and --to show a window of the plan's months."""
    from .render import budget_as_csv, budget_as_json, budget_as_table
    from ..export.safe import OutputError

    console.one_format(as_json, as_csv)
    first, last = console.month_window(first, last, "budget forecast")
    if old_scenarios is not None:
        console.deprecated("--scenarios", "--scenario")
        scenarios = [*(scenarios or []), old_scenarios]
    _check_xlsx(xlsx, locale)
    b = compute(plan, scenarios, pricebooks)
    if first is not None or last is not None:
        b = b.windowed(first, last)  # a BudgetError is printed by the root, one line per problem
    version = _version()
    if xlsx is not None:
        from ..export.budget_xlsx import budget_as_xlsx

        try:
            budget_as_xlsx(b, locale=locale, generated_at=b.generated_at, version=version, path=xlsx)
        except OutputError as e:
            console.fail(str(e))
        except OSError as e:
            console.fail(f"cannot write the workbook: {e}")
    if as_json:
        console.print_json(budget_as_json(b, version=version))
    elif as_csv:
        sys.stdout.write(budget_as_csv(b))
    else:
        for t in budget_as_table(b):
            console.out.print(t)
        if xlsx is not None:
            console.out.print(f"workbook written to {xlsx}", markup=False)


@budget_app.command("compare")
def compare_cmd(plan: Path = typer.Argument(..., help="the plan (TOML)"),
                period: str = typer.Option(..., "--period", help="the month to compare, e.g. 2026-10"),
                scenario: str = typer.Option("base", "--scenario", help="the one forecast scenario to compare"),
                percentile: str = typer.Option("p99", "--percentile",
                                               help="the statistic of each pool's per-minute TPM set beside the "
                                                    "plan's TPM: p50, p95, p99, max or mean"),
                as_json: bool = typer.Option(False, "--json", help="print the comparison and its drivers as JSON "
                                                                   "(money as decimal strings)"),
                as_csv: bool = typer.Option(False, "--csv", help="print one row per category, pool and the total, "
                                                                 "the error split into its drivers, as CSV"),
                xlsx: Optional[Path] = typer.Option(None, "--xlsx", help="also write the plan's budget workbook to "
                                                                         "FILE, its provenance naming the run "
                                                                         "compared with and its month's close"),
                locale: str = typer.Option("en_US", "--locale", help="locale of the workbook's currency formats"),
                pricebooks: Optional[List[Path]] = typer.Option(None, "--pricebooks",
                                                                help=_BOOKS_HELP)) -> None:
    """The month's forecast beside the current allocation run's actuals, per category and pool, and
    why it missed: the error split into traffic, output length, cache-hit rate, fleet, prices and
    other, in money, adding up exactly (docs/budgets.md)."""
    from rich.console import Group

    from .. import runs, store
    from .render import (comparison_as_json, comparison_as_table, comparison_with_drivers_as_csv, drivers_as_json,
                         drivers_as_table, drivers_notes)
    from . import compare
    from .drivers import STATISTICS
    from .usage import month_actuals

    console.one_format(as_json, as_csv)
    if len(scenario_names(scenario)) != 1:
        console.fail(f"--scenario {scenario}: compare takes one scenario (run it once per scenario)")
    scenario = scenario_names(scenario)[0]
    try:
        start, end = store.month_bounds(period)
    except store.StoreError as e:
        console.fail(str(e))
    if percentile not in STATISTICS:
        console.fail(f"--percentile {percentile!r}: expected one of {', '.join(STATISTICS)}")
    _check_xlsx(xlsx, locale)
    b, index = _priced(plan, scenario, pricebooks)
    with console.Ledger() as s:
        try:
            stored = runs.load_run(s, start=start, end=end)
        except runs.RunError as e:
            console.fail(str(e))
        actuals = month_actuals(s, b, month=period, scenario=scenario, statistic=percentile) \
            if period in b.plan.months else None
        c = compare(b, month=period, lines=stored.lines, run_id=stored.run.id,
                    run_currency=stored.run.currency, price_books=stored.summary.get("price_books", []),
                    scenario=scenario, actuals=actuals, index=index)
        c = replace(c, closing=stored.closing)  # the compared run's month: open, or who signed it off
    for line in c.matching.warnings():  # what only the plan or only the ledger has (docs/budgets.md)
        console.err.print(f"warning: {line}", markup=False)
    if xlsx is not None:
        from ..export.budget_xlsx import budget_as_xlsx
        from ..export.safe import OutputError

        try:
            budget_as_xlsx(b, locale=locale, generated_at=b.generated_at, version=_version(), path=xlsx, compared=c)
        except OutputError as e:
            console.fail(str(e))
        except OSError as e:
            console.fail(f"cannot write the workbook: {e}")
        console.err.print(f"workbook written to {xlsx}", markup=False)

    def tables(c):
        return Group(comparison_as_table(c), drivers_as_table(c.drivers, c.currency), *drivers_notes(c.drivers))

    console.emit(c, as_json=as_json, as_csv=as_csv,
                 json_of=lambda c: {**comparison_as_json(c), "drivers": drivers_as_json(c.drivers)},
                 csv_of=comparison_with_drivers_as_csv, table_of=tables)


def register(app: typer.Typer) -> None:
    """Add `ledger budget` (forecast, compare) to the main app."""
    app.add_typer(budget_app, name="budget")
