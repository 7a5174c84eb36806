"""Month-end sign-off: who closed a period, when, why, and the run signed as final (DESIGN §9).

A sign-off is written once, with the close, and never changed (the table's triggers refuse an
UPDATE or DELETE: migration 0004). :class:`Closing` is what every surface says of a period:
"closed by NAME at T, final run R", "open", or, for a month closed before sign-off was recorded,
"closed at T, no sign-off recorded".
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

from typing import TYPE_CHECKING

import sqlalchemy as sa

from ..errors import Problem
from ..instants import iso
from ..money import fmt
from ..names import name_problem, text_problem
from ..schema import PERIOD, PERIOD_SIGNOFF
from .db import StoreError
from .periods import month_bounds, pending_written

if TYPE_CHECKING:
    from sqlmodel import Session

    from ..models import AllocationRun

#: The longest note a sign-off keeps (characters): a sentence or two, not a document.
MAX_NOTE = 1000


@dataclass(frozen=True)
class Closing:
    """Whether a period is closed and who signed it off. Fields: `period` (``YYYY-MM``); `closed`
    (bool); `closed_at` (UTC instant of the close, None when open); `by` (who signed, None when no
    sign-off is recorded); `note` (why, may be empty); `final_run` (the run id signed as final);
    `total` (that run's total when signed, exact, in `currency`); `inputs_digest` (that run's inputs
    digest when signed)."""

    period: str
    closed: bool = False
    closed_at: datetime | None = None
    by: str | None = None
    note: str = ""
    final_run: str | None = None
    total: Decimal | None = None
    currency: str | None = None
    inputs_digest: str | None = None

    @property
    def signed(self) -> bool:
        return self.by is not None

    @property
    def text(self) -> str:
        """The one phrase every surface prints: ``closed by NAME at T, final run R``, ``open``, or
        ``closed at T, no sign-off recorded``."""
        if not self.closed:
            return "open"
        if not self.signed:
            return f"closed at {iso(self.closed_at)}, no sign-off recorded"
        return f"closed by {self.by} at {iso(self.closed_at)}, final run {self.final_run}"

    def as_json(self) -> dict:
        """The close as JSON: `status` (open or closed), `text` (:attr:`text`), and the sign-off's
        fields (null when none): `closed_by`, `closed_at`, `note`, `final_run`, `final_total`
        (decimal string), `currency`, `inputs_digest`."""
        return {"status": "closed" if self.closed else "open", "text": self.text, "closed_by": self.by,
                "closed_at": iso(self.closed_at), "note": self.note if self.signed else None,
                "final_run": self.final_run, "final_total": None if self.total is None else fmt(self.total),
                "currency": self.currency, "inputs_digest": self.inputs_digest}


def _closing(period, sign, name: str) -> Closing:
    """`period` and `sign`: rows of :data:`~ledger.schema.PERIOD` and :data:`~ledger.schema.PERIOD_SIGNOFF`
    (or None)."""
    if period is None or period.status != "closed":
        return Closing(period=name)
    if sign is None:
        return Closing(period=name, closed=True, closed_at=period.closed_at)
    return Closing(period=name, closed=True, closed_at=sign.signed_at, by=sign.signed_by, note=sign.note,
                   final_run=sign.run_id, total=sign.total, currency=sign.currency, inputs_digest=sign.inputs_digest)


def closing(s: Session | sa.Connection, name: str) -> Closing:
    """The close of one period (``YYYY-MM``): open, closed, and its sign-off when one is recorded."""
    return closings(s, [name])[name]


def closings(s: Session | sa.Connection, names: Iterable[str]) -> dict[str, Closing]:
    """The close of each named period, by name (two queries, whatever the number of periods), read
    through Core (:mod:`ledger.schema`): a session or a connection."""
    names = sorted(set(names))
    if not names:
        return {}
    pending_written(s)
    periods = {p.name: p for p in s.execute(sa.select(PERIOD).where(PERIOD.c.name.in_(names)))}
    signs = {x.period: x for x in s.execute(sa.select(PERIOD_SIGNOFF).where(PERIOD_SIGNOFF.c.period.in_(names)))}
    return {n: _closing(periods.get(n), signs.get(n), n) for n in names}


def signoff_problems(by: str | None, note: str) -> list[str]:
    """What is wrong with a signer's name and a note, in plain words (empty when both are good)."""
    out = []
    if by is None or (p := name_problem(by)) is not None:
        out.append(f"the name of who signs the period off {'is missing' if by is None else p}")
    if (p := text_problem(note, max_length=MAX_NOTE)) is not None:
        out.append(f"the note {p}")
    return out


def sign_off(s: Session, *, name: str, by: str, note: str, run: AllocationRun,
             now: datetime | None = None) -> Closing:
    """Close the period `name` and record its sign-off: `by`, the instant (now, whole seconds, UTC),
    the `note` and `run` as the final run with its total and inputs digest. `run` must be a run of
    exactly that month. StoreError (nothing written) when the period is signed already (a sign-off is
    never changed: a correction after close is a true-up run), when `by` is not a name or `note`
    not storable text. A month closed before sign-off existed (no sign-off) can be signed once; the
    instant shown from then on is the sign-off's."""
    from ..models import Period, SignOff

    start, end = month_bounds(name)
    if problems := signoff_problems(by, note):
        raise StoreError([Problem(entry=f"period {name}", message=p) for p in problems])
    if (run.period_start, run.period_end) != (start, end):
        raise StoreError(f"run {run.id} is not a run of the month {name}: a sign-off signs a run of its period")
    before = closing(s, name)
    if before.signed:
        raise StoreError(f"period {name} is already {before.text} (total {fmt(before.total)} {before.currency}): "
                         "a sign-off is never changed; a correction after close is a true-up run of the period, "
                         "listed beside the final run")
    at = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    p = s.get(Period, name)
    if p is None:
        p = Period(name=name, start=start, end=end)
    if p.status != "closed":
        p.status, p.closed_at = "closed", at
    s.add(p)
    s.add(SignOff(period=name, signed_by=by, signed_at=at, note=note, run_id=run.id, total=run.total,
                  currency=run.currency, inputs_digest=run.inputs_digest))
    s.flush()
    return closing(s, name)
