"""The `allocate` command: price and allocate a period, check conservation, write an immutable run."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import List, Optional

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import console, runs
from ..reconcile import ReconcileError, map_for
from . import BASES, IDLE_POLICIES, AllocationError, Policy, parse_weights


def allocate_cmd(period: Optional[str] = typer.Option(None, "--period", help="calendar month, e.g. 2026-10"),
                 frm: Optional[str] = typer.Option(None, "--from", help="period start (ISO 8601 instant)"),
                 to: Optional[str] = typer.Option(None, "--to", help="period end, exclusive"),
                 idle: str = typer.Option("separate", "--idle", help="idle policy: " + " or ".join(IDLE_POLICIES)),
                 basis: str = typer.Option("active_tokens", "--basis", help="weight basis: " + " or ".join(BASES)),
                 currency: str = typer.Option("USD", "--currency", help="reporting currency (ISO 4217)"),
                 weights: Optional[List[str]] = typer.Option(None, "--weights",
                                                             help="POOL=UNCACHED,CACHED,OUTPUT token weights"),
                 allow_no_fleet: Optional[List[str]] = typer.Option(
                     None, "--allow-pool-without-fleet", metavar="POOL",
                     help="accept requests on POOL with no serving fleet interval in the period (no GPU cost "
                          "exists for them; the run's notes say so); repeatable"),
                 true_up: bool = typer.Option(False, "--true-up",
                                              help="allocate the billed amount: each resource's variance (billed − "
                                                   "priced) spread over its lines as variance lines "
                                                   "(docs/reconcile.md)"),
                 bill_map: Optional[Path] = typer.Option(None, "--bill-map",
                                                         help="with --true-up: the bill map (TOML); default: "
                                                              "bill-map.toml in the ledger home"),
                 as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON")) -> None:
    """Price every resource of the period, allocate it, check conservation, and write an immutable run."""
    start, end = console.period_bounds(period, frm, to)
    if bill_map is not None and not true_up:
        console.fail("--bill-map is read only with --true-up")
    the_map = None
    if true_up:
        try:
            the_map = map_for(bill_map)
        except ReconcileError as e:
            console.fail(e.problems)
    try:
        policy = Policy(idle=idle, basis=basis, currency=currency.upper(), weights=parse_weights(weights or []),
                        allow_pool_without_fleet=tuple(sorted({p.strip() for p in allow_no_fleet or []})))
    except ValueError as e:
        console.fail(str(e))
    if policy.problems():
        console.fail(policy.problems())
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console.err,
                  transient=True, disable=not console.err.is_terminal) as bar:
        task = bar.add_task("allocating", total=None)
        try:
            with console.Ledger() as s:
                run, alloc = runs.allocate_period(s, start=start, end=end, policy=policy, bill_map=the_map,
                                                  progress=lambda stage: bar.update(task, description=stage))
                doc = runs.load_summary(run)
        except AllocationError as e:
            console.fail(e.problems)
        except ReconcileError as e:  # the true-up cannot be made
            console.fail(e.problems)
        except runs.RunError as e:
            console.fail(str(e))
    if as_json:
        console.print_json(doc)
        return
    _print_summary(doc)


def _print_summary(doc: dict) -> None:
    p = doc["period"]
    console.out.print(f"run {doc['run_id']} · {p['start']} to {p['end']} · {doc['currency']} · idle {doc['idle_policy']}"
                  f" · basis {doc['basis']} · price books {', '.join(doc['price_books'])}")
    console.out.print(f"total {doc['total']} = lines {doc['lines_total']} ({doc['lines']} lines) · "
                  f"failed work {doc['failed_work']}")
    key = "cost_per_successful_task_all_in"
    if doc[key] is not None:
        console.out.print(f"all-in cost per successful task {doc[key]} = total {doc[key + '_numerator']} ÷ "
                          f"{doc[key + '_denominator']} successful tasks ({doc['definitions'][key]})", markup=False)
    else:
        console.out.print(f"all-in cost per successful task: undefined ({doc['reasons'][key]})", markup=False)
    t = Table("kind / category", "amount", title="where the money went")
    for k, v in doc["by_kind"].items():
        t.add_row(k, v)
    for k, v in doc["by_category"].items():
        if Decimal(v) != 0:
            t.add_row(f"  {k}", v)
    console.out.print(t)
    tu = doc.get("true_up")
    if tu:
        console.out.print(f"true-up: priced {tu['priced_total']} · billed {tu['billed_total']} · variance "
                          f"{tu['variance_total']} (unmatched {tu['unmatched']}) · bill batches "
                          f"{', '.join(tu['bill_batches'])} · map {tu['bill_map']['path']}", markup=False)
    flags: dict = {}
    for f in doc["flags"]:
        flags[(f["kind"], f["pool"])] = flags.get((f["kind"], f["pool"]), 0) + 1
    for (kind, pool), n in sorted(flags.items()):
        console.out.print(f"flag {kind}: pool {pool}, {n} hours")
    for n in doc["notes"]:
        console.out.print(f"note: {n}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("allocate")(allocate_cmd)
