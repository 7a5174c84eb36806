"""Allocation runs in the ledger DB: allocate a period and write an immutable run, read runs back.

A run is written once, in one transaction, and never updated: a new allocation of the same period
writes a new run, and the newest run of a period is its current run.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, select

from . import __version__, config, facts, store
from .allocate import Allocation, Flag, Line, Policy, Tasks, Usage, allocate
from .allocate.charges import ChargeShare
from .allocate.engines import Engine
from .economics import Report, RunData, RunInfo, summary, unit_economics
from .errors import LedgerError
from .models import AllocationLine, AllocationRun, utcnow
from .pricebook import Book, PriceIndex
from .reconcile import BillMap, read_bill, true_up
from .reconcile.coverage import priced_hours
from .reconcile.targets import known_targets, unknown_targets
from .runlist import is_true_up, newest_first, run_roles  # noqa: F401  (is_true_up, run_roles: said here too)


class RunError(LedgerError, ValueError):
    """A run that cannot be made or found, with a message a person can act on."""


@lru_cache(maxsize=1)
def code_version() -> str:
    """``ledger.__version__``, plus ``+g<short sha>`` when the code runs from a git checkout."""
    root = config.project_root()
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{__version__}+g{sha}" if sha and (root / ".git").exists() else __version__


def inputs_digest(*, batches: dict[str, list[str]], books: Sequence[Book], start: datetime, end: datetime,
                  policy: Policy, true_up: dict | None = None) -> str:
    """SHA-256 over what a run depends on: the committed batch ids of the usage (bills are not read
    by a plain run, so they are left out), the price books (ref and content digest), the period and
    the policy; for a true-up run also the bill batches it used and its map's digest (`true_up`).
    Same digest, same facts and rules."""
    doc = {"batches": {k: sorted(v) for k, v in sorted(batches.items()) if k != "bill"},
           "books": sorted(f"{b.ref}:{b.digest}" for b in books),
           "period": [start.astimezone(timezone.utc).isoformat(), end.astimezone(timezone.utc).isoformat()],
           "policy": policy.as_dict()}
    if true_up is not None:
        doc["true_up"] = true_up
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode("utf-8")).hexdigest()


def allocate_period(s: Session, *, start: datetime, end: datetime, policy: Policy = Policy(),
                    home: Path | None = None, progress: Callable[[str], None] | None = None,
                    bill_map: BillMap | None = None, engine: Engine | None = None,
                    allow_partial_bill: bool = False) -> tuple[AllocationRun, Allocation]:
    """Allocate ``[start, end)`` over the ledger's committed facts and loaded price books, and write
    the run. With a `bill_map`, the run is a true-up (``allocate --true-up``): the period's bill
    placed by the map, each resource's variance booked as variance lines (:mod:`ledger.reconcile`);
    it refuses a map rule naming a pool or provider the ledger does not know, and a bill covering a
    resource's hours in part unless `allow_partial_bill`. A signed month is refused unless the run
    is a true-up (:func:`refuse_signed`).
    `engine` runs the per-request work (default DuckDB; ``ledger.allocate.spark.SparkEngine``).
    The facts are those of the ledger home `home` (its folder; default the configured one, resolved
    here once and passed down).
    Raises :class:`~ledger.allocate.AllocationError` (nothing written), ReconcileError or RunError."""
    home = config.ledger_home() if home is None else home
    if bill_map is None:
        refuse_signed(s, start=start, end=end)
    books = store.books_from_store(s)
    if not books:
        raise RunError("no price books are loaded: run `ledger pricebook load`")
    index = PriceIndex(books)
    batches = facts.committed_batches(s)
    con = facts.connect(batches, home, period=(start, end))  # only the month partitions the period reads
    try:
        alloc = allocate(con, start=start, end=end, prices=index, policy=policy, progress=progress, engine=engine)
        hours = priced_hours(con, start, end) if bill_map is not None else None
    finally:
        con.close()
    used = None
    if bill_map is not None:
        if progress:
            progress("truing up to the bill")
        bill = read_bill(s, bill_map, start=start, end=end, currency=policy.currency, prices=index, home=home)
        alloc = true_up(alloc, bill, bill_map, hours=hours, allow_partial_bill=allow_partial_bill,
                        unknown=unknown_targets(bill_map, known_targets(s, books, hours)))
        used = {"bill_batches": list(bill.batches), "bill_map": bill_map.sha256}
    digest = inputs_digest(batches=batches, books=index.books, start=start, end=end, policy=policy, true_up=used)
    run = write_run(s, allocation=alloc, inputs_digest=digest, code_version=code_version())
    return run, alloc


def write_run(s: Session, *, allocation: Allocation, inputs_digest: str, code_version: str,
              run_id: str | None = None) -> AllocationRun:
    """Write the run and its lines (one bulk insert). Refuses when Σ lines != total."""
    if allocation.lines_total != allocation.total:
        raise RunError(f"conservation failed: lines sum to {allocation.lines_total}, the total is "
                       f"{allocation.total}; the run is not written")
    run_id = run_id or uuid.uuid4().hex
    created = utcnow()
    doc = summary(allocation, run_id=run_id, created_at=created, inputs_digest=inputs_digest,
                  code_version=code_version)
    run = AllocationRun(id=run_id, period_start=allocation.start, period_end=allocation.end, created_at=created,
                        currency=allocation.currency, idle_policy=allocation.policy.idle,
                        basis=allocation.policy.basis, inputs_digest=inputs_digest,
                        price_books=json.dumps(list(allocation.price_books)), code_version=code_version[:40],
                        total=allocation.total, summary=json.dumps(doc))
    s.add(run)
    s.flush()
    insert_lines(s, AllocationLine, {"run_id": run_id}, allocation.lines, allocation.currency)
    return run


def insert_lines(s: Session, table: type, parent: dict, lines: Sequence[Line], currency: str) -> None:
    """Store an allocation's lines as rows of `table` (:class:`~ledger.models.AllocationLine` of a run,
    or ``ScenarioLine`` of a what-if result: the same :class:`~ledger.models.LineColumns`) under
    `parent` (its key column and value), in batches of 5,000 rows."""
    rows = [{**parent, "day": ln.day, "kind": ln.kind, "tenant": ln.tenant, "product": ln.product,
             "model": ln.model, "pool": ln.pool, "provider": ln.provider, "category": ln.category, "work": ln.work,
             "shared_from": ln.shared_from, "quantity": ln.quantity, "unit": ln.unit, "amount": ln.amount,
             "currency": currency} for ln in lines]
    for i in range(0, len(rows), 5000):
        s.execute(sa.insert(table), rows[i:i + 5000])
    s.flush()


# ---- reading runs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoredRun:
    """A run as read back: the `run` row, its `lines`, the `summary` document (with usage and tasks),
    and the `closing` of its period (open, or closed and signed: :class:`ledger.store.Closing`)."""

    run: AllocationRun
    lines: tuple[Line, ...]
    summary: dict
    closing: store.Closing | None = None

    @property
    def usage(self) -> tuple[Usage, ...]:
        return tuple(Usage(**u) for u in self.summary.get("usage", []))

    @property
    def tasks(self) -> tuple[Tasks, ...]:
        return tuple(Tasks(**{**t, "criteria": tuple(t["criteria"])}) for t in self.summary.get("tasks", []))


def list_runs(s: Session, *, start: datetime | None = None, end: datetime | None = None) -> list[AllocationRun]:
    """Runs, newest first; only those of the period ``[start, end)`` when given (the order and the
    filter of :func:`ledger.runlist.list_runs`, which ``ledger runs`` reads without these classes)."""
    return list(s.exec(newest_first(select(AllocationRun), AllocationRun.__table__.c, start=start, end=end)))


def _signed(s: Session, start: datetime, end: datetime) -> store.Closing | None:
    """The sign-off of ``[start, end)`` when it is a signed month, else None."""
    name = store.month_of(start)
    try:
        if store.month_bounds(name) != (start, end):
            return None
    except store.StoreError:
        return None
    closing = store.closing(s, name)
    return closing if closing.signed else None


def current_run(s: Session, *, start: datetime, end: datetime) -> AllocationRun | None:
    """The run reports read for exactly the period ``[start, end)``: the final run of a signed
    month (it never changes, whatever runs come after it: a true-up after close is listed beside
    it), else the newest run; None when there is none."""
    signed = _signed(s, start, end)
    if signed is not None:
        return get_run(s, signed.final_run)
    runs = list_runs(s, start=start, end=end)
    return runs[0] if runs else None


def get_run(s: Session, run_id: str) -> AllocationRun:
    run = s.get(AllocationRun, run_id)
    if run is None:
        raise RunError(f"no allocation run {run_id!r}: see `ledger runs`")
    return run


def run_lines(s: Session, run_id: str) -> tuple[Line, ...]:
    """The lines of a run in their stored order (amounts exact)."""
    t = AllocationLine.__table__
    rows = s.execute(sa.select(t.c.day, t.c.kind, t.c.tenant, t.c.product, t.c.model, t.c.pool, t.c.provider,
                               t.c.category, t.c.work, t.c.shared_from, t.c.quantity, t.c.unit, t.c.amount)
                     .where(t.c.run_id == run_id).order_by(t.c.id)).all()
    return tuple(Line(**r._asdict()) for r in rows)


def load_run(s: Session, *, run_id: str | None = None, start: datetime | None = None,
             end: datetime | None = None) -> StoredRun:
    """A run with its lines: by id, or the current run of ``[start, end)``."""
    if run_id:
        run = get_run(s, run_id)
    else:
        if start is None or end is None:
            raise RunError("name a run or a period")
        run = current_run(s, start=start, end=end)
        if run is None:
            raise RunError(f"no allocation run for {start.isoformat()} to {end.isoformat()}: run `ledger allocate`")
    return StoredRun(run=run, lines=run_lines(s, run.id), summary=json.loads(run.summary),
                     closing=closing_of(s, run))


def closing_of(s: Session, run: AllocationRun) -> store.Closing | None:
    """The close of the run's period when it is a calendar month (a sign-off is of a month), else None."""
    name = store.month_of(run.period_start)
    return store.closing(s, name) if store.month_bounds(name) == (run.period_start, run.period_end) else None


def run_data_of_stored(stored) -> RunData:
    """RunData of a :class:`ledger.runs.StoredRun`."""
    run, doc = stored.run, stored.summary
    flags = tuple(Flag(f["kind"], f["pool"], datetime.fromisoformat(f["hour"].replace("Z", "+00:00")))
                  for f in doc.get("flags", []))
    info = RunInfo(run_id=run.id, start=run.period_start, end=run.period_end, currency=run.currency,
                   price_books=tuple(json.loads(run.price_books)), idle_policy=run.idle_policy, basis=run.basis,
                   created_at=run.created_at, code_version=run.code_version, inputs_digest=run.inputs_digest,
                   notes=tuple(doc.get("notes", [])), flags=flags, regions=tuple(doc.get("regions", [])),
                   closing=getattr(stored, "closing", None))
    shares = tuple(ChargeShare(charge_id=c["charge_id"], category=c["category"], rule=c["rule"], tenant=c["tenant"],
                               amount=Decimal(c["amount"])) for c in doc.get("charge_shares", []))
    return RunData(info=info, lines=stored.lines, usage=stored.usage, tasks=stored.tasks, charge_shares=shares)


def load_report(s, *, by: str = "tenant", tenants: Sequence[str] | None = None, run_id: str | None = None,
                start: datetime | None = None, end: datetime | None = None) -> Report:
    """Unit economics of a stored run: by id, or the current run of ``[start, end)``."""
    return unit_economics(run_data_of_stored(load_run(s, run_id=run_id, start=start, end=end)), by=by,
                          tenants=tenants)




def close(s: Session, *, period: str, by: str, note: str = "") -> tuple[store.Closing, AllocationRun]:
    """Close a month and sign it off (ingest into it is refused from now on): `by` signs the
    period's current run as final, with `note` (:func:`ledger.store.sign_off`). Returns the close
    and the final run. RunError when the month has no run (a sign-off signs a run: allocate it
    first); StoreError when it is signed already (a sign-off is never changed) or `by` is not a
    name. Nothing is written when it refuses."""
    start, end = store.month_bounds(period)
    signed = _signed(s, start, end)
    if signed is not None:
        store.sign_off(s, name=period, by=by, note=note, run=get_run(s, signed.final_run))  # refuses, says why
    run = current_run(s, start=start, end=end)
    if run is None:
        raise RunError(f"period {period} has no allocation run: a sign-off signs the run of its month, so "
                       f"allocate it first (`ledger allocate --period {period}`), check it, then close it")
    return store.sign_off(s, name=period, by=by, note=note, run=run), run


def refuse_signed(s: Session, *, start: datetime, end: datetime) -> None:
    """RunError when ``[start, end)`` is a signed month: its final run does not change, so a new
    run of it is refused (late usage is booked into an open month as adjustments; a difference
    with the bill is a true-up run, which is allowed and listed beside the final run)."""
    signed = _signed(s, start, end)
    if signed is not None:
        raise RunError(f"period {signed.period} is {signed.text}: a signed month's final run does not change, so "
                       "it is not allocated again (late usage is booked into an open month as adjustments; a "
                       "difference with the cloud bill is a true-up run, listed beside the final run)")


def load_summary(run: AllocationRun) -> dict:
    """The run's summary document (the ``allocate --json`` contract plus provenance, usage, tasks)."""
    return json.loads(run.summary)
