"""`ledger whatif --period P --scenario FILE [--json | --csv] [--xlsx FILE] [--no-store]`: a past month
repriced, rerouted or self-hosted, allocated by the same rules, beside its run (SCENARIO)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import console

#: How `ledger whatif` words the hints of what the library says (:mod:`ledger.hints`).
NAMES = {"percentile": "percentile", "repair": "repair = true"}


def whatif_cmd(period: str = typer.Option(..., "--period", help="the month, e.g. 2026-10 (it needs an allocation run)"),
               scenario: Path = typer.Option(..., "--scenario", help="the scenario file (TOML; docs/whatif.md)"),
               as_json: bool = typer.Option(False, "--json", help="print the comparison as JSON"),
               as_csv: bool = typer.Option(False, "--csv", help="print one row per tenant, product and model as CSV"),
               xlsx: Optional[Path] = typer.Option(None, "--xlsx", help="also write the comparison workbook (live "
                                                                         "formulas) to this file"),
               locale: str = typer.Option("en_US", "--locale", help="the workbook's number and currency formats"),
               no_store: bool = typer.Option(False, "--no-store", help="compute and print only: store nothing")) -> None:
    """A past month repriced, rerouted or self-hosted, allocated by the same rules beside its run (SCENARIO,
    never a run). Other price books, a share of provider traffic moved to another model or provider, or
    provider traffic served by a pool sized from its own workload: per tenant, product and model, actual
    against scenario. Scenario format and method: docs/whatif.md."""
    from .. import config, runs
    from ..outputs import check_output_path
    from .parse import load_scenario
    from .render import whatif_as_csv, whatif_as_json, whatif_as_table
    from .run import run_scenario
    from .store import write_scenario

    console.words(NAMES)
    console.one_format(as_json, as_csv)
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


def _tables(tables):
    from rich.console import Group

    return Group(*tables)


def register(app: typer.Typer) -> None:
    """Add `ledger whatif` to the main app."""
    app.command("whatif")(whatif_cmd)
