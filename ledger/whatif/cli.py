"""`ledger whatif --period P --scenario FILE [--json | --csv] [--xlsx FILE] [--no-store]`: a past month
repriced, rerouted or self-hosted, allocated by the same rules, beside its run (SCENARIO); `ledger whatif
--list [--period P]` and `--show ID`: the stored results."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import console

#: How `ledger whatif` words the hints of what the library says (:mod:`ledger.hints`).
NAMES = {"percentile": "percentile", "repair": "repair = true"}


def whatif_cmd(period: Optional[str] = typer.Option(None, "--period",
                                                    help="the month, e.g. 2026-10 (it needs an allocation run); "
                                                         "with --list, only that month's results"),
               scenario: Optional[Path] = typer.Option(None, "--scenario",
                                                       help="the scenario file (TOML; docs/whatif.md)"),
               listing: bool = typer.Option(False, "--list", help="list the stored SCENARIO results, newest first"),
               show: Optional[str] = typer.Option(None, "--show", help="show one stored SCENARIO result again "
                                                                        "(its id, or the 12 characters listed)"),
               as_json: bool = typer.Option(False, "--json", help="print the comparison as JSON"),
               as_csv: bool = typer.Option(False, "--csv", help="print one row per tenant, product and model as CSV"),
               xlsx: Optional[Path] = typer.Option(None, "--xlsx", help="also write the comparison workbook (live "
                                                                         "formulas) to this file"),
               locale: str = typer.Option("en_US", "--locale", help="the workbook's number and currency formats"),
               no_store: bool = typer.Option(False, "--no-store", help="compute and print only: store nothing")) -> None:
    """A past month repriced, rerouted or self-hosted, allocated by the same rules beside its run (SCENARIO,
    never a run). Other price books, a share of provider traffic moved to another model or provider, or
    provider traffic served by a pool sized from its own workload: per tenant, product and model, actual
    against scenario. Scenario format and method: docs/whatif.md. `--list` lists the stored results and
    `--show ID` shows one again."""
    from .. import config, runs
    from ..outputs import check_output_path
    from .parse import load_scenario
    from .render import whatif_as_csv, whatif_as_json, whatif_as_table
    from .run import run_scenario
    from .store import write_scenario

    console.words(NAMES)
    console.one_format(as_json, as_csv)
    if listing or show is not None:
        return _stored(period=period, scenario=scenario, listing=listing, show=show, as_json=as_json, as_csv=as_csv,
                       xlsx=xlsx, no_store=no_store)
    if period is None or scenario is None:
        console.fail("give --period and --scenario to run a scenario, or --list to list the stored results")
    if xlsx is not None:
        check_output_path(xlsx)
    sc = load_scenario(scenario)
    with console.Ledger() as s:
        result = run_scenario(s, period=period, scenario=sc, home=config.ledger_home())
        if not no_store:
            result = write_scenario(s, result, code_version=runs.code_version())
    if xlsx is not None:
        from datetime import datetime, timezone

        from ..export.whatif_xlsx import whatif_as_xlsx

        try:
            whatif_as_xlsx(result, locale=locale, generated_at=datetime.now(timezone.utc), version=runs.code_version(),
                           path=xlsx)
        except OSError as e:
            console.fail(f"{xlsx}: cannot write the workbook ({e.strerror or e})")
    console.emit(result, as_json=as_json, as_csv=as_csv, json_of=whatif_as_json, csv_of=whatif_as_csv,
                 table_of=lambda r: _tables(whatif_as_table(r)))
    if xlsx is not None and not (as_json or as_csv):
        console.out.print(f"{'SCENARIO'} workbook written to {xlsx}")


def _stored(*, period, scenario, listing, show, as_json, as_csv, xlsx, no_store) -> None:
    """`--list [--period P]` and `--show ID`: stored SCENARIO results, read only."""
    from . import listing as ls
    from .store import list_scenarios

    if listing and show is not None:
        console.fail("--list and --show: give one")
    extra = [n for n, v in (("--scenario", scenario), ("--xlsx", xlsx), ("--no-store", no_store or None)) if v]
    if show is not None and period is not None:
        extra.insert(0, "--period")
    if extra:
        console.fail(f"{' and '.join(extra)}: not with {'--list' if listing else '--show'}")
    if period is not None:
        from ..store import month_bounds

        month_bounds(period)  # a bad month is one line (StoreError)
    with console.Ledger() as s:
        if listing:
            rows = list_scenarios(s, period=period)
            console.emit(rows, as_json=as_json, as_csv=as_csv, json_of=lambda r: ls.scenarios_as_json(r, period),
                         csv_of=lambda r: ls.scenarios_as_csv(r, period),
                         table_of=lambda r: ls.scenarios_as_table(r, period))
            return
        doc = ls.stored_document(ls.stored_scenario(s, show))
    console.emit(doc, as_json=as_json, as_csv=as_csv, json_of=lambda d: d, csv_of=ls.document_as_csv,
                 table_of=ls.document_as_table)


def _tables(tables):
    from rich.console import Group

    return Group(*tables)


def register(app: typer.Typer) -> None:
    """Add `ledger whatif` to the main app."""
    app.command("whatif")(whatif_cmd)
