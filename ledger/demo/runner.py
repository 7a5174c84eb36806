"""Running the demo: a fresh ledger home, the shipped price books, dimensions, ingest and allocation."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from ..config import Home
from ..outputs import sqlite_path
from .home import DEMO_FILES, DemoError, check_home, display_path, wipe_home
from .inputs import DemoInputs, build_inputs
from .month import DATA_DIR, KINDS, MONTHS, PERIOD, PRODUCTS, TENANTS

#: The demo's own price book (the openai account's August rate), loaded beside the shipped books.
DEMO_BOOK = DATA_DIR / "demo-openai-account.toml"

__all__ = ["DemoError", "DemoResult", "display_path", "existing_data", "run_demo", "wipe_home"]


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` did: the ledger `home`, the `inputs` it built, rows ingested per kind
    (`ingested`), October's allocation run's `summary` (the ``allocate --json`` document,
    conserved), every month's summary by label in `months` (August to October, oldest first),
    the price books it loaded (`books`, ``name@version``), whether any of them has an FX rate
    (`fx_in_books`; the demo's charges are all in USD either way) and the wall time in `seconds`."""

    home: Path
    inputs: DemoInputs
    ingested: dict[str, int]
    summary: dict
    books: tuple[str, ...]
    fx_in_books: bool
    seconds: float
    months: dict[str, dict] | None = None


def existing_data(home: Path, url: str) -> list[str]:
    """What the ledger at `home` / `url` already holds (empty: nothing, the demo may run). Looks
    without creating anything: a missing SQLite file or an unmigrated DB holds nothing."""
    import sqlalchemy as sa

    found = []
    facts_dir = home / "facts"
    if facts_dir.is_dir() and any(p.is_file() and not p.name.startswith(".") for p in facts_dir.rglob("*")):
        found.append("facts/ has files")
    if any((home / "demo" / name).is_file() for name in DEMO_FILES):
        found.append("demo/ has files")
    db = sqlite_path(url)
    if db is not None and not db.exists():
        return found
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            for table in sorted(sa.inspect(c).get_table_names()):
                if table != "alembic_version" and c.execute(sa.text(f'SELECT 1 FROM "{table}" LIMIT 1')).first():
                    found.append(f"table {table} has rows")
    finally:
        eng.dispose()
    return found


def run_demo(*, home: Home | None = None, force: bool = False, on_step=None) -> DemoResult:
    """Build the demo month in the ledger `home` (default the configured one, LEDGER_HOME and
    LEDGER_DATABASE_URL, resolved here once and passed down: nothing reads the environment below):
    initialize the store, load the shipped price books (and the demo's own, :data:`DEMO_BOOK`),
    register tenants and products, write and ingest the inputs of August to October 2026, allocate
    each month (October last, so the newest run is October's) and check that every run's lines add
    up to its total.
    Refuses (DemoError) a folder that is neither empty nor a ledger home (``force`` or not, nothing
    is deleted), and a ledger that already holds data unless `force` wipes it first (the ledger's
    own entries only: :func:`ledger.demo.home.wipe_home`)."""
    import time

    from .. import config, runs, store
    from ..allocate import AllocationError, Policy
    from ..ingest import IngestError, ingest
    from ..pricebook import load_books, unlocated

    step = on_step or (lambda _m: None)
    t0 = time.perf_counter()
    ledger = config.home() if home is None else home
    home, url = ledger.path, ledger.database_url
    check_home(home, url)
    found = existing_data(home, url)
    if found and not force:
        shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
        raise DemoError(f"the ledger home {display_path(home)} already holds data ({shown}): the demo needs a "
                        "fresh one; use --home PATH for another, or --force to wipe this one")
    if found:
        step("wiping the ledger home")
        wipe_home(home, url)
    home.mkdir(parents=True, exist_ok=True)
    step("initializing the store")
    store.init_store(url, home=home)
    ledger.facts.mkdir(parents=True, exist_ok=True)

    step("loading the shipped price books")
    books, problems = load_books([config.project_root() / "pricebooks", DEMO_BOOK])
    if problems:
        raise DemoError("the shipped price books have problems:\n" + "\n".join(map(str, unlocated(problems))))
    with store.session(url) as s:
        for b in books:
            store.store_book(s, book=b)
        for kind, dims in (("tenant", TENANTS), ("product", PRODUCTS)):
            for name, display, owner in dims:
                store.add_dim(s, kind=kind, name=name, display_name=display, owner=owner)

    step("building the demo months from the Azure trace")
    inputs = build_inputs(home / "demo", home=home)
    ingested = {}
    for kind in KINDS:
        step(f"ingesting {kind} ({inputs.rows[kind]:,} rows)")
        try:
            ingested[kind] = ingest(kind, [inputs.paths[kind]], home=ledger).rows_new
        except IngestError as e:
            raise DemoError(f"ingest {kind} failed:\n" + "\n".join(e.lines())) from e

    months: dict[str, dict] = {}
    for month in MONTHS:
        step(f"allocating {month.label}")
        start, end = store.month_bounds(month.label)
        try:
            with store.session(url) as s:
                run, alloc = runs.allocate_period(s, start=start, end=end, policy=Policy(), home=home)
                summary = runs.load_summary(run)
        except AllocationError as e:
            raise DemoError(f"allocation of {month.label} failed:\n" + "\n".join(map(str, e.problems))) from e
        if alloc.lines_total != alloc.total or Decimal(summary["lines_total"]) != Decimal(summary["total"]):
            raise DemoError(f"conservation failed in {month.label}: lines {summary['lines_total']} != total "
                            f"{summary['total']}")
        months[month.label] = summary
    step("the open month for the guardrails: November 2026 so far, budgets and one planted anomaly")
    from .guardrails import build_open_month  # ledger alerts --as-of 2026-11-12T12:00:00Z (docs/alerts.md)

    build_open_month(ledger, step)
    return DemoResult(home=home, inputs=inputs, ingested=ingested, summary=months[PERIOD],
                      books=tuple(b.ref for b in books), fx_in_books=any(b.fx for b in books),
                      seconds=time.perf_counter() - t0, months=months)
