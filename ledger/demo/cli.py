"""CLI: `ledger demo`, a realistic month in a fresh ledger home, allocated and summarized."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Optional

import typer

from .. import config, console, demo
from ..formats import count, display_column, display_groups, money, percent, plural, unit_costs
from ..tables import FitTable

KIND_LABELS = {"fleet": "fleet intervals", "requests": "requests", "outcomes": "task outcomes",
               "meters": "meter events", "charges": "invoice charges"}


def _all_in_line(doc: dict) -> str:
    """The run-wide cost per successful task, with its definition (the `allocate --json` keys); the
    figure takes the unit-cost rule applied to itself (:func:`ledger.formats.unit_costs`)."""
    key = "cost_per_successful_task_all_in"
    figure = doc[key]
    head = (f"all-in cost per successful task: {unit_costs([Decimal(figure)])[0]} = run total "
            f"{money(Decimal(doc[key + '_numerator']))} ÷ {plural(doc[key + '_denominator'], 'successful task')}"
            if figure is not None else f"all-in cost per successful task: undefined ({doc['reasons'][key]})")
    return f"{head}; all-in = {doc['definitions'][key]}; per tenant: {doc['definitions']['cost_per_successful_task']}"


def _table(title: str, first: str, *numbers: str, caption: str | None = None) -> FitTable:
    t = FitTable(title=title, caption=caption)
    t.add_column(first, numeric=False)
    for n in numbers:
        t.add_column(n)
    return t


def _tables(doc: dict) -> list[FitTable]:
    """Where the demo month's money went, for a person: by category, on tenants or not, and by
    tenant with tasks and the cost per success (one rule for the column). Every table carries a
    totals row, and its amounts are display-rounded (:func:`ledger.formats.display_column`): the
    printed parts add up to the printed total, which is the run total rounded."""
    cur = doc["currency"]
    t = _table(f"by category ({cur})", "category", "amount")
    cats = [(c, Decimal(v)) for c, v in doc["by_category"].items()]
    shown, total_shown = display_column([v for _, v in cats])
    for (c, v), s in zip(cats, shown):
        if v:
            t.add_row(c, money(s))
    t.add_row("total", money(total_shown), style="bold")
    tables = [t]

    by_kind, total = doc["by_kind"], Decimal(doc["total"])
    tenants = [Decimal(r["cost"]) for r in doc["tenants"]]
    # the run total in four parts (the tenants', idle slack, idle reserve, unallocated), the tenants'
    # part adding up in the tenants table below to the same printed amount
    kinds = [("idle slack (unused serving capacity)", Decimal(by_kind["idle_slack"])),
             ("idle reserve (failure, canary, warm, maintenance)", Decimal(by_kind["idle_reserve"])),
             ("unallocated (charges with rule none)", Decimal(by_kind["unallocated"]))]
    groups, subtotals, grand = display_groups([tenants, *([v] for _, v in kinds)])
    t = _table(f"where the money went ({cur})", "on tenants, or not", "amount", "of total")
    parts = [sum(tenants, Decimal(0)), *(v for _, v in kinds)]
    # the shares too add up to 100.0% as printed (a ratio at 3 decimals is a percentage at 1)
    shares, _ = display_column([p / total for p in parts] if total else [None] * len(parts), 3)
    for label, s, share in zip(["tenants (failed work included)", *(k for k, _ in kinds)], subtotals, shares):
        t.add_row(label, money(s), percent(share))
    t.add_row("total", money(grand), percent(Decimal(1) if total else None), style="bold")
    tables.append(t)

    pers = [None if r["cost_per_successful_task"] is None else Decimal(r["cost_per_successful_task"])
            for r in doc["tenants"]]
    why = sorted({r.get("reasons", {}).get("cost_per_successful_task", "no successful task") for r in doc["tenants"]
                  if r["cost_per_successful_task"] is None})
    t = _table(f"tenants ({cur}; success criteria: {', '.join(doc['success_criteria'])})", "tenant", "cost",
               "failed work", "tasks ok", "tasks failed", "cost per success (own cost)",
               caption="; ".join([*([f"undefined: {'; '.join(why)}"] if why else []),
                                  f"failed work is part of cost; {FAILED_NOTE}"]))
    failed, failed_total = display_column([Decimal(r["failed_work"]) for r in doc["tenants"]])
    tasks = [r["tasks"] or {"success": 0, "failure": 0, "unknown": 0} for r in doc["tenants"]]
    for r, cost, fail, tk, per in zip(doc["tenants"], groups[0], failed, tasks, unit_costs(pers)):
        t.add_row(r["tenant"], money(cost), money(fail), count(tk["success"]), count(tk["failure"]),
                  "undefined" if r["cost_per_successful_task"] is None else per)
    ok = sum(tk["success"] for tk in tasks)
    t.add_row("total", money(subtotals[0]), money(failed_total), count(ok), count(sum(tk["failure"] for tk in tasks)),
              unit_costs([sum(tenants, Decimal(0)) / ok if ok else None])[0] if ok else "undefined", style="bold")
    tables.append(t)
    return tables


#: What the tenants table's totals row means in its last column.
FAILED_NOTE = ("the total's cost per success is the tenants' cost over their successful tasks (the all-in "
               "figure below also counts idle and unallocated)")


def _dashboard_command(home: Path, home_given: bool) -> str:
    return f"LEDGER_HOME={demo.display_path(home)} ledger dashboard" if home_given else "ledger dashboard"


def _as_json(result: demo.DemoResult, home_given: bool) -> dict:
    run = {k: v for k, v in result.summary.items() if k not in ("usage", "tasks")}
    return {"home": demo.display_path(result.home), "seconds": round(result.seconds, 2),
            "inputs": {k: {"file": demo.display_path(result.inputs.paths[k]), "rows": result.inputs.rows[k]}
                       for k in demo.KINDS},
            "inputs_sha256": result.inputs.digest, "ingested": result.ingested,
            "price_books_loaded": list(result.books),
            "conserved": Decimal(run["lines_total"]) == Decimal(run["total"]), "run": run,
            "dashboard": _dashboard_command(result.home, home_given)}


def _print(result: demo.DemoResult, home_given: bool) -> None:
    out = console.out  # prose wraps at the terminal width; names and paths are never markup
    doc, cur = result.summary, result.summary["currency"]
    p = doc["period"]
    built = ", ".join(f"{count(result.inputs.rows[k])} {KIND_LABELS[k]}" for k in demo.KINDS)
    out.print("[bold]ledger demo[/bold]: October 2026 (after August and September) replayed from the Azure LLM "
              "inference trace 2023 "
              "(CC-BY-4.0, Microsoft Azure; see ledger/data/ATTRIBUTION.md)")
    out.print(f"built {built} in {demo.display_path(result.inputs.folder)}/", markup=False)
    out.print(f"period {p['start']} to {p['end']} · run {doc['run_id']} · {cur} · idle policy {doc['idle_policy']} "
              f"· basis {doc['basis']}", markup=False)
    out.print(f"price books: {', '.join(doc['price_books'])}", markup=False)
    conserved = Decimal(doc["lines_total"]) == Decimal(doc["total"])
    out.print(f"total {money(Decimal(doc['total']), cur)} = lines {money(Decimal(doc['lines_total']))} "
              f"({plural(doc['lines'], 'line')}) {'(conserved: lines == total)' if conserved else '(NOT CONSERVED)'}",
              markup=False)
    for t in _tables(doc):
        out.print(t)
    out.print(_all_in_line(doc), markup=False)
    for f in doc["flags"]:
        out.print(f"flag: pool {f['pool']} {f['kind'].replace('_', ' ')} in the hour of {f['hour']}", markup=False)
    if not result.fx_in_books:
        out.print("note: no shipped price book has an FX rate, so every demo charge is in USD", markup=False)
    home = demo.display_path(result.home)
    out.print(f"ledger home: {home} · built, ingested and allocated in {result.seconds:.1f} s", markup=False)
    out.print(f"More: ledger report unit-economics --period {demo.PERIOD}; ledger report tenants --period "
              f"{demo.PERIOD}; ledger report trend --from {demo.MONTHS[0].label} --to {demo.PERIOD}"
              + (f" (with LEDGER_HOME={home})" if home_given else ""), markup=False)
    out.print(f"Open the dashboard: {_dashboard_command(result.home, home_given)}", markup=False)


def demo_cmd(home: Optional[Path] = typer.Option(None, "--home", help="ledger home to build the demo in "
                                                 "(default: LEDGER_HOME, else ./.ledger)"),
             force: bool = typer.Option(False, "--force", help="wipe the ledger in that home first (its SQLite DB, "
                                                               "facts and demo files; nothing else); a folder that "
                                                               "is not a ledger home is never wiped"),
             as_json: bool = typer.Option(False, "--json", help="print the summary as JSON (money as decimal "
                                                                 "strings)"),
             as_csv: bool = typer.Option(False, "--csv", help="print where the money went as CSV, as `allocate "
                                                              "--csv` does: one row per kind, category and tenant")
             ) -> None:
    """Build realistic months (August to October 2026, and November open up to the 12th) from the Azure
    LLM inference trace in a fresh ledger home: tenants, products, two GPU pools, a provider model,
    meters, outcomes, charges and budgets; ingest, allocate and print where October's money went. Refuses a home that already holds data unless --force, and a
    folder that is neither empty nor a ledger home, --force or not."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console.one_format(as_json, as_csv)
    ledger = config.home(home)  # --home, else LEDGER_HOME: resolved once and passed down (the environment unchanged)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console.err,
                  transient=True, disable=not console.err.is_terminal or as_json or as_csv) as bar:
        task = bar.add_task("demo", total=None)
        result = demo.run_demo(home=ledger, force=force, on_step=lambda m: bar.update(task, description=m))
    if as_json:
        console.print_json(_as_json(result, home is not None))
    elif as_csv:
        from ..allocate.cli import SUMMARY_COLUMNS, summary_rows

        console.print_csv(summary_rows(result.summary), header=list(SUMMARY_COLUMNS), numeric=("amount",))
    else:
        _print(result, home is not None)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
