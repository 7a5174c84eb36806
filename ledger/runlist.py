"""Allocation runs listed without the allocation: what ``ledger runs`` reads (docs/scale.md, "Startup").

:func:`list_runs` reads the ``allocation_run`` table through SQLAlchemy Core (:data:`ledger.schema.ALLOCATION_RUN`),
so the command starts without SQLModel, the allocation or the economics; :func:`run_roles` and
:func:`is_true_up` say what each run is. :mod:`ledger.runs` (which writes, loads and closes runs)
takes them from here, and lists its SQLModel rows in the same order (:func:`newest_first`).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from .schema import ALLOCATION_RUN
from .store.periods import month_bounds, month_of


def newest_first(q: sa.Select, c, *, start: datetime | None = None, end: datetime | None = None) -> sa.Select:
    """`q`, a select of runs, limited to the period ``[start, end)`` when given (each end as given),
    newest first (by creation, then id); `c`: the columns of the ``allocation_run`` table it selects."""
    if start is not None:
        q = q.where(c.period_start == start)
    if end is not None:
        q = q.where(c.period_end == end)
    return q.order_by(c.created_at.desc(), c.id.desc())


def list_runs(s, *, start: datetime | None = None, end: datetime | None = None) -> list[sa.Row]:
    """Runs, newest first; only those of the period ``[start, end)`` when given. Rows of the
    ``allocation_run`` table (a session or a Core connection `s`), each field an attribute as on
    :class:`ledger.models.AllocationRun` (:func:`ledger.runs.list_runs` gives those)."""
    return list(s.execute(newest_first(sa.select(ALLOCATION_RUN), ALLOCATION_RUN.c, start=start, end=end)))


def is_true_up(run) -> bool:
    """Whether the run is a true-up (``allocate --true-up``: its summary has a ``true_up`` part)."""
    return bool(json.loads(run.summary).get("true_up"))


def run_roles(runs: Sequence, closings: dict) -> dict[str, str]:
    """What each run is in its period, by run id: ``final`` (the run a sign-off names), ``after
    close`` (made after its period was signed: a true-up), ``superseded`` (any other run of a signed
    period), ``current`` (the newest run of a period not signed) or ``""`` (an older run of such a
    period). `closings` by month name (:func:`ledger.store.closings`)."""
    roles: dict[str, str] = {}
    seen: set[tuple[datetime, datetime]] = set()
    for r in sorted(runs, key=lambda r: (r.created_at, r.id), reverse=True):
        c = closings.get(month_of(r.period_start))
        month = c is not None and month_bounds(c.period) == (r.period_start, r.period_end)
        if month and c.signed:
            roles[r.id] = ("final" if r.id == c.final_run else
                           "after close" if r.created_at > c.closed_at else "superseded")
        else:
            key = (r.period_start, r.period_end)
            roles[r.id] = "" if key in seen else "current"
            seen.add(key)
    return roles
