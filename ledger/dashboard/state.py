"""The ledger the dashboard reads: its state, what to run when it is empty, read-only sessions and its runs."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlmodel import Session

from .. import config, reports, runs, store

# ---- where the dashboard reads ------------------------------------------------------------------

ABSENT, UNINITIALIZED, UNREACHABLE, NO_RUNS, READY = "absent", "uninitialized", "unreachable", "no_runs", "ready"


@dataclass(frozen=True)
class LedgerState:
    """The ledger the dashboard reads: `home` (LEDGER_HOME), `database` (the DB URL without
    credentials), `url` (the full URL, for sessions), `status` (absent: no DB file yet;
    uninitialized: a DB not migrated to the code's revision; unreachable: the DB cannot be opened;
    no_runs: initialized, no allocation run; ready) and `message`, what was found in one sentence."""

    home: Path
    database: str
    url: str
    status: str
    message: str
    runs: int = 0

    @property
    def has_runs(self) -> bool:
        return self.status == READY

    @property
    def has_store(self) -> bool:
        return self.status in (NO_RUNS, READY)


def _shown(url: str) -> str:
    return url.split("@")[-1] if "@" in url else url


def ledger_state() -> LedgerState:
    """Look at the configured ledger without creating anything (a missing SQLite file stays missing)."""
    home, url = config.ledger_home(), config.database_url()
    shown = _shown(url)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
        return LedgerState(home=home, database=shown, url=url, status=ABSENT,
                           message=f"there is no ledger in {home} yet")
    try:
        with reading(url) as s:
            store.check_initialized(s)
            n = s.execute(sa.text("SELECT count(*) FROM allocation_run")).scalar_one()
    except store.StoreError as e:
        return LedgerState(home=home, database=shown, url=url, status=UNINITIALIZED, message=str(e))
    except Exception as e:  # cannot connect, permissions, a foreign file: say so, never a traceback
        return LedgerState(home=home, database=shown, url=url, status=UNREACHABLE,
                           message=f"cannot open the ledger DB ({shown}): {e}")
    if not n:
        return LedgerState(home=home, database=shown, url=url, status=NO_RUNS,
                           message="the ledger is initialized but holds no allocation run yet")
    return LedgerState(home=home, database=shown, url=url, status=READY,
                       message=f"{n} allocation run{'s' if n != 1 else ''}", runs=n)


def guidance(state: LedgerState) -> str:
    """Markdown: what to run to get data into this ledger (the demo, or your own inputs)."""
    first = {ABSENT: "Build the demo month (October 2026, from the Azure LLM inference trace) in this ledger home:",
             UNINITIALIZED: "Initialize the store, or build the demo month in a fresh ledger home:",
             UNREACHABLE: "Check `LEDGER_DATABASE_URL`, or build the demo month in a fresh ledger home:",
             NO_RUNS: "Allocate a period whose usage you have ingested, or build the demo in a fresh home:"}
    own = ("ledger init\n"
           "ledger pricebook load                 # the dated price books (default: pricebooks/)\n"
           "ledger dims import tenant tenants.csv # and: ledger dims import product products.csv\n"
           "ledger ingest fleet fleet.csv         # and: requests, outcomes, meters, charges\n"
           "ledger allocate --period 2026-10")
    lead = first.get(state.status, "")
    return (f"**{state.message}.** {lead}\n\n```sh\nledger demo\n```\n\n"
            f"Or load your own data (docs/ingest.md lists every input file and its columns), then allocate a "
            f"period:\n\n"
            f"```sh\n{own}\n```\n\nThen reload this page. The dashboard reads `LEDGER_HOME` "
            f"(here `{state.home}`) and `LEDGER_DATABASE_URL`; it never writes to the ledger.")


@contextmanager
def reading(url: str | None = None) -> Iterator[Session]:
    """A session that never commits: whatever happens, it is rolled back at the end."""
    with Session(store.engine(url), expire_on_commit=False) as s:
        try:
            yield s
        finally:
            s.rollback()


# ---- runs ---------------------------------------------------------------------------------------

def period_name(start: datetime, end: datetime) -> str:
    """``2026-10`` for a calendar month, else ``2026-10-03 to 2026-10-10`` (end exclusive)."""
    month = store.month_of(start)
    if store.month_bounds(month) == (start.astimezone(timezone.utc), end.astimezone(timezone.utc)):
        return month
    return f"{start.astimezone(timezone.utc):%Y-%m-%d %H:%M} to {end.astimezone(timezone.utc):%Y-%m-%d %H:%M}"


def runs_frame(s: Session) -> pd.DataFrame:
    """Every run, newest first: run_id, period (name), start, end, created_at, currency, total
    (Decimal), idle_policy, basis, price_books, code_version, `current` (the run reports read: the
    final run of a signed month, else the newest of its period), `role` (current, final, after
    close, superseded or empty: :func:`ledger.runs.run_roles`), `kind` (allocation or true-up) and
    `close` (the period's close as every surface says it: "closed by NAME at T, final run R" or
    "open")."""
    found = runs.list_runs(s)
    docs = reports.runs_as_json(found, store.closings(s, {store.month_of(r.period_start) for r in found}))
    rows = [{"run_id": r.id, "period": period_name(r.period_start, r.period_end), "start": r.period_start,
             "end": r.period_end, "created_at": r.created_at, "currency": r.currency, "total": r.total,
             "idle_policy": r.idle_policy, "basis": r.basis, "price_books": ", ".join(d["price_books"]),
             "code_version": r.code_version, "current": d["role"] in ("current", "final"), "role": d["role"],
             "kind": d["kind"], "close": d["close"]["text"]} for r, d in zip(found, docs)]
    cols = ["run_id", "period", "start", "end", "created_at", "currency", "total", "idle_policy", "basis",
            "price_books", "code_version", "current", "role", "kind", "close"]
    return pd.DataFrame(rows, columns=cols)


def load_run_data(s: Session, *, run_id: str) -> reports.RunData:
    """A stored run as the reports read it (lines, usage, tasks, provenance)."""
    return reports.run_data_of_stored(runs.load_run(s, run_id=run_id))
