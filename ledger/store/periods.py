"""Accounting periods: month bounds, closing a month, the open period adjustments go to."""
from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone

from typing import TYPE_CHECKING

import sqlalchemy as sa

from ..schema import PERIOD, pending_written
from .db import StoreError

if TYPE_CHECKING:
    from sqlmodel import Session


#: A month as the ledger names it: four digits, a dash, two digits (``2026-10``).
_MONTH = re.compile(r"(\d{4})-(\d{2})")
#: The first and last months a period can be: [0001-01-01, 9999-12-01) is what a date holds (a
#: period ends where the next month starts, and no date has the year 10000).
FIRST_MONTH, LAST_MONTH = "0001-01", "9999-11"


def month_bounds(name: str) -> tuple[datetime, datetime]:
    """``2026-10`` -> [2026-10-01T00:00Z, 2026-11-01T00:00Z). StoreError (one line) for anything
    but ``YYYY-MM`` with a month 01 to 12 (``2026-1`` and `` 2026-10`` are not month names: a
    period closed under one name must be the period ingest checks under another), and for a month
    outside :data:`FIRST_MONTH` .. :data:`LAST_MONTH`."""
    m = _MONTH.fullmatch(name) if isinstance(name, str) else None
    if m is None or not 1 <= int(m.group(2)) <= 12:
        raise StoreError(f"period {name!r} is not a month like 2026-10")
    y, mo = int(m.group(1)), int(m.group(2))
    if not FIRST_MONTH <= name <= LAST_MONTH:
        raise StoreError(f"period {name!r} is out of range: a period is a month from {FIRST_MONTH} to {LAST_MONTH} "
                         "(it ends where the next month starts, and no date has the year 10000)")
    start = datetime(y, mo, 1, tzinfo=timezone.utc)
    end = datetime(y + (mo == 12), mo % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def month_of(at: datetime) -> str:
    at = at.astimezone(timezone.utc)
    return f"{at.year:04d}-{at.month:02d}"


def months_between(start: datetime, end: datetime) -> list[str]:
    """Names of the months touched by ``[start, end]`` (both instants included)."""
    out = []
    y, m = start.astimezone(timezone.utc).year, start.astimezone(timezone.utc).month
    e = end.astimezone(timezone.utc)
    while (y, m) <= (e.year, e.month):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def closed_periods(s: Session | sa.Connection, names: Sequence[str] | None = None) -> list[str]:
    """The names of the closed periods (of `names` when given), sorted; read through Core."""
    pending_written(s)
    q = sa.select(PERIOD.c.name).where(PERIOD.c.status == "closed")
    if names is not None:
        q = q.where(PERIOD.c.name.in_(list(names)))
    return sorted(s.execute(q).scalars())


def close_period(s: Session, *, name: str) -> bool:
    """Close a month; returns False when it was already closed."""
    from ..models import Period

    start, end = month_bounds(name)
    p = s.get(Period, name)
    if p is None:
        p = Period(name=name, start=start, end=end)
        s.add(p)
    if p.status == "closed":
        return False
    p.status = "closed"
    p.closed_at = datetime.now(timezone.utc)
    s.add(p)
    s.flush()
    return True


def current_open_period(s: Session, *, now: datetime | None = None) -> str:
    """The period adjustments are booked into: now's month, or the first open month after it."""
    closed = set(closed_periods(s))
    name = month_of(now or datetime.now(timezone.utc))
    while name in closed:
        name = month_of(month_bounds(name)[1])
    return name
