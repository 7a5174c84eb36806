"""Month over month: each month's current run, its cost, successes, both costs per successful task
and the change from the month before, by tenant, product or model (``ledger report trend``).

Pure: it takes each month's run data (or None for a month with no run) and computes from
:func:`ledger.economics.unit_economics`, so a month's figures are exactly those of its
unit-economics report. Loading the months' runs is :func:`ledger.reports.trend.load_trend`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from .economics import BY, NO_SUCCESS, RATIO_EXP, RunData, RunInfo, all_in, unit_economics
from .money import quantize

NO_RUN = "no allocation run for the month"
BEFORE_NO_RUN = "the month before has no allocation run"
NOT_BEFORE = "not in the month before's run"
BEFORE_UNDEFINED = "undefined in the month before"
NOW_UNDEFINED = "undefined in this month"
OTHER_CURRENCY = "the month before's run is in another currency"
FROM_ZERO = "the month before is zero"
#: What the change of a figure is, as every surface labels it.
CHANGE_DEFINITION = ("change = this month's figure − the month before's (the calendar month just before, "
                     "even before the first month shown); change ratio = change ÷ the month before's figure, to 1e-4")


@dataclass(frozen=True)
class Change:
    """A figure beside the same figure the month before: `amount` (this − before) and `ratio`
    (amount ÷ before, half-even to 1e-4); both None with a `reason` when there is no change to give,
    `ratio` alone None when the month before is zero."""

    amount: Decimal | None
    ratio: Decimal | None
    reason: str | None = None


def change(now: Decimal | None, before: Decimal | None, *, why_not: str | None = None) -> Change:
    """The change from `before` to `now`; `why_not` (the month before has no run, the row is new,
    ...) when either side is missing for a reason known above."""
    if why_not is not None:
        return Change(None, None, why_not)
    if now is None:
        return Change(None, None, NOW_UNDEFINED)
    if before is None:
        return Change(None, None, BEFORE_UNDEFINED)
    amount = now - before
    if before == 0:
        return Change(amount, None, FROM_ZERO)
    return Change(amount, quantize(amount / before, RATIO_EXP))


@dataclass(frozen=True)
class TrendRow:
    """One tenant, product or model in one month: `cost` (its lines, exact), `successful_tasks`
    (None by model: tasks are not a model's), `cost_per_successful_task` (own cost; None when it
    has no success), `requests`, `active_tokens`, and the `changes` of cost and cost per successful
    task from the month before (keys ``cost`` and ``cost_per_successful_task``)."""

    key: str | None
    cost: Decimal
    successful_tasks: int | None
    cost_per_successful_task: Decimal | None
    requests: int
    active_tokens: int
    changes: dict[str, Change] = field(default_factory=dict)


@dataclass(frozen=True)
class TrendMonth:
    """One month of the trend: `label` (``YYYY-MM``), ``[start, end)``, its current `run` (None: no
    run, all figures None), the run `total`, `successful_tasks` of the run, the all-in cost per
    successful task, the `rows`, and the `changes` of the total and the all-in figure."""

    label: str
    start: datetime
    end: datetime
    run: RunInfo | None
    total: Decimal | None
    successful_tasks: int | None
    cost_per_successful_task_all_in: Decimal | None
    rows: tuple[TrendRow, ...]
    changes: dict[str, Change] = field(default_factory=dict)

    def row(self, key: str | None) -> TrendRow | None:
        return next((r for r in self.rows if r.key == key), None)


@dataclass(frozen=True)
class Trend:
    """The months of a trend `by` tenant, product or model, oldest first (the month before the
    first is used for its changes only, never listed)."""

    by: str
    months: tuple[TrendMonth, ...]

    @property
    def keys(self) -> list[str | None]:
        """Every row key of any month, by name (None, the lines with no product or model, last)."""
        keys = {r.key for m in self.months for r in m.rows}
        return sorted(keys, key=lambda k: (k is None, k or ""))


@dataclass(frozen=True)
class MonthData:
    """A month handed to :func:`trend`: its `label`, ``[start, end)`` and run `data` (None: no run)."""

    label: str
    start: datetime
    end: datetime
    data: RunData | None


def _month(m: MonthData, by: str) -> TrendMonth:
    if m.data is None:
        return TrendMonth(label=m.label, start=m.start, end=m.end, run=None, total=None, successful_tasks=None,
                          cost_per_successful_task_all_in=None, rows=())
    report = unit_economics(m.data, by=by)
    rows = tuple(TrendRow(key=r.key, cost=r.cost, successful_tasks=None if r.tasks is None else r.tasks["success"],
                          cost_per_successful_task=r.cost_per_successful_task, requests=r.requests,
                          active_tokens=r.active_tokens) for r in report.rows)
    return TrendMonth(label=m.label, start=m.start, end=m.end, run=report.run, total=report.total,
                      successful_tasks=report.successful_tasks,
                      cost_per_successful_task_all_in=all_in(report.total, report.successful_tasks), rows=rows)


def _with_changes(now: TrendMonth, before: TrendMonth | None) -> TrendMonth:
    if now.run is None:
        return now
    gone = (BEFORE_NO_RUN if before is None or before.run is None else
            OTHER_CURRENCY if before.run.currency != now.run.currency else None)
    changes = {"total": change(now.total, None if gone else before.total, why_not=gone),
               "cost_per_successful_task_all_in": change(
                   now.cost_per_successful_task_all_in,
                   None if gone else before.cost_per_successful_task_all_in, why_not=gone)}
    rows = []
    for r in now.rows:
        was = None if gone else before.row(r.key)
        why = gone or (NOT_BEFORE if was is None else None)
        cps = change(r.cost_per_successful_task, None if was is None else was.cost_per_successful_task, why_not=why)
        if why is None and r.successful_tasks is None:
            cps = Change(None, None, "a model has no tasks")
        rows.append(TrendRow(key=r.key, cost=r.cost, successful_tasks=r.successful_tasks,
                             cost_per_successful_task=r.cost_per_successful_task, requests=r.requests,
                             active_tokens=r.active_tokens,
                             changes={"cost": change(r.cost, None if was is None else was.cost, why_not=why),
                                      "cost_per_successful_task": cps}))
    return TrendMonth(label=now.label, start=now.start, end=now.end, run=now.run, total=now.total,
                      successful_tasks=now.successful_tasks,
                      cost_per_successful_task_all_in=now.cost_per_successful_task_all_in, rows=tuple(rows),
                      changes=changes)


def trend(months: Sequence[MonthData], *, by: str = "tenant", before: MonthData | None = None) -> Trend:
    """The trend over `months` (consecutive calendar months, oldest first) by tenant, product or
    model; `before` is the month just before the first (its run, if any, gives the first month's
    changes; it is not listed)."""
    if by not in BY:
        raise ValueError(f"by {by!r}: expected one of {', '.join(BY)}")
    prev = None if before is None else _month(before, by)
    out = []
    for m in months:
        now = _month(m, by)
        out.append(_with_changes(now, prev))
        prev = now
    return Trend(by=by, months=tuple(out))


def undefined_reason(row: TrendRow) -> str | None:
    """Why the row's own cost per successful task is None (None when it is defined)."""
    if row.cost_per_successful_task is not None:
        return None
    return "a model has no tasks" if row.successful_tasks is None else NO_SUCCESS
