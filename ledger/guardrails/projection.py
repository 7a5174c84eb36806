"""The burn rate of a budget: its weekday profile from the last weeks, the projection to month end,
and the day it runs out. Pure functions over daily spend (Decimal), worked by hand in docs/alerts.md.

The method:

- **Profile.** The expected spend of a weekday w is the mean spend of the budget's scope on the
  days of weekday w in the `weeks` weeks before the as-of day (a day with no spend counts 0; days
  before the ledger's first usage, `data_from`, do not count). A weekday with no such day takes the
  mean of all those days; with none at all, every weekday takes this month's mean day so far
  (spend to date ÷ days elapsed, the as-of day counted by its elapsed part); with no time elapsed, 0.
- **Projection.** Spend to date, plus the rest of the as-of day (its weekday's expected spend times
  the part of the day still to come), plus the expected spend of every later day of the month.
- **Run-out day.** Walking the month day by day, actual spend up to the as-of instant and then the
  projection: the first day the cumulative spend reaches the monthly amount (``>=``); None when it
  does not before the month ends.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal

from ..money import ZERO, quantize

DAY = timedelta(days=1)
_SECONDS_PER_DAY = Decimal(86_400)


def elapsed_fraction(as_of: datetime) -> Decimal:
    """The part of the as-of instant's UTC day already gone: 12:00 -> 0.5, 00:00 -> 0."""
    midnight = datetime.combine(as_of.date(), datetime.min.time(), tzinfo=as_of.tzinfo)
    seconds = Decimal((as_of - midnight) // timedelta(microseconds=1)) / Decimal(1_000_000)
    return seconds / _SECONDS_PER_DAY


def weekday_profile(daily: Mapping[date, Decimal], *, today: date, weeks: int, data_from: date | None,
                    spent: Decimal, elapsed_days: Decimal) -> tuple[tuple[Decimal, ...], str]:
    """The expected spend per weekday (index 0 = Monday) and its basis: ``weekday`` (past weeks),
    ``month_to_date`` (this month's mean day) or ``none`` (no time elapsed, no history).
    `daily` holds the scope's spend per day; history is ``[today - 7 * weeks, today)``."""
    first = today - timedelta(weeks=weeks)
    if data_from is not None:
        first = max(first, data_from)
    history = [first + timedelta(days=i) for i in range((today - first).days)] if data_from is not None else []
    if history:
        overall = sum((daily.get(d, ZERO) for d in history), ZERO) / len(history)
        profile = []
        for w in range(7):
            days = [d for d in history if d.weekday() == w]
            mean = sum((daily.get(d, ZERO) for d in days), ZERO) / len(days) if days else overall
            profile.append(quantize(mean))
        return tuple(profile), "weekday"
    if elapsed_days > 0:
        return (quantize(spent / elapsed_days),) * 7, "month_to_date"
    return (ZERO,) * 7, "none"


def project(daily: Mapping[date, Decimal], profile: tuple[Decimal, ...], *, as_of: datetime, month_start: date,
            month_end: date, monthly: Decimal) -> tuple[Decimal, date | None]:
    """(projected spend at month end, the day the spend reaches `monthly` or None). `daily` is the
    month's actual spend per day up to `as_of` (its day partial); `month_end` is exclusive."""
    today = as_of.date()
    cum, runs_out = ZERO, None
    d = month_start
    while d <= today:
        cum += daily.get(d, ZERO)
        if runs_out is None and cum >= monthly:
            runs_out = d
        d += DAY
    cum += quantize(profile[today.weekday()] * (1 - elapsed_fraction(as_of)))
    if runs_out is None and cum >= monthly:
        runs_out = today
    d = today + DAY
    while d < month_end:
        cum += profile[d.weekday()]
        if runs_out is None and cum >= monthly:
            runs_out = d
        d += DAY
    return cum, runs_out
