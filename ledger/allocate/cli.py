"""The `allocate` command: price and allocate a period, check conservation, write an immutable run."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .. import config, console
from ..vocab import EngineName
from .records import BASES, IDLE_POLICIES

# The allocation's stack (the engine, DuckDB, the runs, the reconciliation, the reports) is imported
# by the command when it runs, so that `ledger allocate --help` starts without it (docs/scale.md, "Startup").

#: The engines of the per-request work (`--engine`).
ENGINES = tuple(EngineName)
#: How `ledger allocate` words the hints of what the library says (:mod:`ledger.hints`): key -> words.
NAMES = {"allow_no_fleet": "with --allow-pool-without-fleet", "basis_active_tokens": "use --basis active_tokens",
         "engine_spark": "--engine spark", "bill_map": "name one with --bill-map MAP.toml",
         "allow_partial_bill": "pass --allow-partial-bill", "true_up": "`allocate --true-up`"}


def allocate_cmd(period: Optional[str] = typer.Option(None, "--period", help="calendar month, e.g. 2026-10"),
                 frm: Optional[str] = typer.Option(None, "--from", help=console.FROM_HELP),
                 to: Optional[str] = typer.Option(None, "--to", help=console.TO_HELP),
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
                 allow_partial_bill: bool = typer.Option(False, "--allow-partial-bill",
                                                         help="with --true-up: book a bill that covers only some of "
                                                              "the hours a resource is priced in (refused without "
                                                              "it; the run's notes name each such resource)"),
                 engine_name: str = typer.Option("duckdb", "--engine",
                                                 help="where the per-request work runs: duckdb (this machine) or "
                                                      # \\[ is a bracket, not rich markup
                                                      "spark (Apache Spark; pip install 'ledger\\[spark]'; "
                                                      "docs/scale.md)"),
                 spark_master: Optional[str] = typer.Option(None, "--spark-master", metavar="URL",
                                                            help="with --engine spark: the Spark master (default "
                                                                 "local[*], or spark-submit's --master)"),
                 facts_root: Optional[str] = typer.Option(None, "--facts", metavar="URL",
                                                          help="with --engine spark: where Spark reads the fact "
                                                               "files, e.g. s3a://bucket/facts (a copy of the "
                                                               "home's facts folder); default: the home's"),
                 as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON (money as "
                                                                      "decimal strings)"),
                 as_csv: bool = typer.Option(False, "--csv", help="print where the money went as CSV: one row per "
                                                                  "kind, category and tenant (docs/allocation.md)")
                 ) -> None:
    """Price every resource of the period, allocate it, check conservation, and write an immutable run."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .. import runs
    from ..reconcile import map_for
    from ..reports.render import summary_as_table
    from . import spark
    from .records import Policy, parse_weights

    console.words(NAMES)
    console.one_format(as_json, as_csv)
    start, end = console.period_bounds(period, frm, to)
    if bill_map is not None and not true_up:
        console.fail("--bill-map is read only with --true-up")
    if allow_partial_bill and not true_up:
        console.fail("--allow-partial-bill is read only with --true-up")
    home = config.ledger_home()  # resolved once, passed down
    the_map = map_for(bill_map, home) if true_up else None
    try:
        policy = Policy(idle=idle, basis=basis, currency=currency.upper(), weights=parse_weights(weights or []),
                        allow_pool_without_fleet=tuple(sorted({p.strip() for p in allow_no_fleet or []})))
    except ValueError as e:
        console.fail(str(e))
    if policy.problems():
        console.fail(policy.problems())
    if engine_name not in ENGINES:
        console.fail(f"--engine {engine_name!r}: one of {', '.join(ENGINES)}")
    if engine_name != "spark" and (spark_master or facts_root):
        console.fail("--spark-master and --facts are read only with --engine spark")
    if engine_name == "spark":
        spark.require()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console.err,
                  transient=True, disable=not console.err.is_terminal) as bar:
        task = bar.add_task("allocating", total=None)
        with console.Ledger() as s:
            engine = spark.engine_for(s, master=spark_master, root=facts_root, period=(start, end), home=home) \
                if engine_name == "spark" else None
            run, alloc = runs.allocate_period(s, start=start, end=end, policy=policy, bill_map=the_map,
                                              progress=lambda stage: bar.update(task, description=stage),
                                              engine=engine, allow_partial_bill=allow_partial_bill, home=home)
            doc = runs.load_summary(run)
    if as_json:
        console.print_json(doc)
        return
    if as_csv:
        console.print_csv(summary_rows(doc), header=list(SUMMARY_COLUMNS), numeric=("amount",))
        return
    console.out.print(summary_as_table(doc))


#: The columns of `allocate --csv` (and `demo --csv`): one row per group and name.
SUMMARY_COLUMNS = ("run_id", "period_start", "period_end", "currency", "group", "name", "amount")


def summary_rows(doc: dict) -> list[dict]:
    """Where the money of a run went, one row per (group, name): group ``kind`` (tenant, idle_slack,
    idle_reserve, unallocated) and group ``category`` each add up to the run total; group ``tenant``
    (each tenant's cost) adds up to the kind ``tenant``. Amounts are the summary's decimal strings."""
    p = doc["period"]
    head = {"run_id": doc["run_id"], "period_start": p["start"], "period_end": p["end"], "currency": doc["currency"]}
    rows = [{**head, "group": "kind", "name": k, "amount": v} for k, v in doc["by_kind"].items()]
    rows += [{**head, "group": "category", "name": k, "amount": v} for k, v in doc["by_category"].items()]
    rows += [{**head, "group": "tenant", "name": t["tenant"], "amount": t["cost"]} for t in doc["tenants"]]
    return rows


def register(app: typer.Typer) -> None:
    app.command("allocate")(allocate_cmd)
