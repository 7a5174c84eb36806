"""One alerts run: the open month's provisional spend to date per budget, its projection and run-out
day, and the spend anomalies per tenant and model per day (docs/alerts.md).

Spend is the allocation's: :func:`ledger.allocate.allocate` over ``[month start - weeks, as-of)``
with the ledger's committed facts and loaded price books, the same rules as a run (GPU split, idle,
shared charges, conservation checked), in the budgets' currency. Nothing is written: the result is
provisional, and the month's allocation run replaces it when the month is allocated."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from sqlmodel import Session

from .. import facts, store
from ..allocate import Policy, allocate
from ..money import ZERO
from ..pricebook import PriceIndex
from ..vocab import LineKind
from .anomalies import find_anomalies
from .book import budget_books, budgets_in_force
from .projection import elapsed_fraction, project, weekday_profile
from .records import Alerts, Budget, BudgetStatus, GuardrailError, Rule

#: Daily spend of the tenant lines by (tenant, product, model): the one grain budgets and anomalies read.
Daily = dict[tuple[str, str | None, str | None], dict[date, Decimal]]


def compute_alerts(s: Session, *, home: Path, as_of: datetime, rule: Rule = Rule(), currency: str | None = None,
                   days: int | None = None, progress: Callable[[str], None] | None = None) -> Alerts:
    """The alerts as of `as_of` (aware UTC) for its month, over the ledger whose DB session is `s`
    and whose folder is `home`. `currency`: the alerts' currency (default: the budgets' one, else
    USD); `days`: judge anomalies on the last `days` days only (default: every day of the month so
    far). Raises GuardrailError (a bad rule, budgets in several currencies) or the allocation's
    AllocationError (a usage with no price, ...), with one problem each."""
    say = progress or (lambda _m: None)
    if problems := rule.problems() + ([] if days is None or days >= 1 else [f"days {days}: at least 1"]):
        raise GuardrailError(problems)
    month_start, _ = store.month_bounds(as_of.strftime("%Y-%m"))
    books = budget_books(s)
    budgets = budgets_in_force(books, as_of)
    currency = _currency(budgets, currency)
    price_books = store.books_from_store(s)
    if not price_books:
        raise GuardrailError("no price books are loaded: load them first (ledger pricebook load)")
    say("allocating the month so far and the weeks before it (provisional)")
    start = month_start - timedelta(weeks=rule.weeks)
    con = facts.connect(facts.committed_batches(s), home, period=(start, as_of))
    try:
        daily, data_from, refs = spend_by_day(con, start=start, end=as_of, prices=PriceIndex(price_books),
                                              currency=currency)
    finally:
        con.close()
    say("projecting the budgets and looking for spend anomalies")
    used = {f"{x.book}@{x.version}" for x in budgets}
    return alerts_from(daily, data_from, budgets=budgets, as_of=as_of, rule=rule, currency=currency, days=days,
                       budget_books=tuple(b.ref for b in books if b.ref in used), price_books=refs)


def alerts_from(daily: Daily, data_from: date | None, *, budgets: Sequence[Budget], as_of: datetime, rule: Rule,
                currency: str, days: int | None = None, budget_books: tuple[str, ...] = (),
                price_books: tuple[str, ...] = ()) -> Alerts:
    """The alerts of `budgets` as of `as_of`, from the daily spend of the tenant lines (`daily`,
    :func:`spend_by_day` over ``[month start - rule.weeks, as_of)``) and the first day of usage."""
    month_start, month_end = store.month_bounds(as_of.strftime("%Y-%m"))
    today = as_of.date()
    statuses = tuple(_status(b, daily, as_of=as_of, month_start=month_start.date(), month_end=month_end.date(),
                             rule=rule, data_from=data_from) for b in budgets)
    partial = today if elapsed_fraction(as_of) > 0 else None  # the as-of day, when some of it is gone
    judged = _days(month_start.date(), today if partial else today - timedelta(days=1))
    if days is not None:
        judged = judged[-days:]
    pairs: dict[tuple[str, str], dict[date, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    for (tenant, _product, model), series in daily.items():
        if model is not None:
            for d, amount in series.items():
                pairs[(tenant, model)][d] += amount
    anomalies = find_anomalies(pairs, days=judged, partial=partial, data_from=data_from, rule=rule, currency=currency)
    notes = []
    if data_from is None:
        notes.append("no usage facts before the as-of instant: nothing is spent, no baseline")
    elif data_from > (month_start - timedelta(weeks=rule.min_weeks)).date():
        notes.append(f"usage starts on {data_from}: days with fewer than {rule.min_weeks} weeks of history before "
                     "them cannot be judged for anomalies")
    return Alerts(as_of=as_of, month_start=month_start, month_end=month_end, currency=currency, rule=rule,
                  budget_books=budget_books, price_books=price_books, budgets=statuses, anomalies=tuple(anomalies),
                  data_from=data_from, notes=tuple(notes))


def _currency(budgets: Sequence[Budget], asked: str | None) -> str:
    found = sorted({b.currency for b in budgets})
    if asked is not None:
        others = [c for c in found if c != asked]
        if others:
            raise GuardrailError(f"budgets in force are in {', '.join(found)}: the alerts are in one currency; "
                                 f"ask for {found[0]} or give those budgets in {asked}")
        return asked
    if len(found) > 1:
        raise GuardrailError(f"budgets in force are in several currencies ({', '.join(found)}): the alerts are in one")
    return found[0] if found else "USD"


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def spend_by_day(con: duckdb.DuckDBPyConnection, *, start: datetime, end: datetime, prices: PriceIndex,
                 currency: str) -> tuple[Daily, date | None, tuple[str, ...]]:
    """The tenant lines of the allocation of ``[start, end)`` over the facts of `con`, summed per
    (tenant, product, model) and day; the first day with request facts; the price books used."""
    first = con.execute("SELECT min(booked_at) FROM requests WHERE booked_at < ?", [end]).fetchone()[0]
    if first is None:
        return {}, None, tuple(prices.refs)
    alloc = allocate(con, start=start, end=end, prices=prices, policy=Policy(currency=currency))
    daily: Daily = defaultdict(lambda: defaultdict(lambda: ZERO))
    for line in alloc.lines:
        if line.kind == LineKind.TENANT:
            daily[(line.tenant, line.product, line.model)][line.day] += line.amount
    return daily, first.date(), tuple(alloc.price_books)


def scope_daily(budget: Budget, daily: Daily) -> dict[date, Decimal]:
    """The spend per day of the lines in a budget's scope (every field it sets matches)."""
    out: dict[date, Decimal] = defaultdict(lambda: ZERO)
    for (tenant, product, model), series in daily.items():
        if all(want is None or want == got for want, got in zip(budget.scope, (tenant, product, model))):
            for d, amount in series.items():
                out[d] += amount
    return out


def _status(budget: Budget, daily: Daily, *, as_of: datetime, month_start: date, month_end: date, rule: Rule,
            data_from: date | None) -> BudgetStatus:
    series = scope_daily(budget, daily)
    today = as_of.date()
    month = {d: series.get(d, ZERO) for d in _days(month_start, today)}
    spent = sum(month.values(), ZERO)
    elapsed = Decimal((today - month_start).days) + elapsed_fraction(as_of)
    profile, basis = weekday_profile(series, today=today, weeks=rule.weeks, data_from=data_from, spent=spent,
                                     elapsed_days=elapsed)
    projected, runs_out = project(month, profile, as_of=as_of, month_start=month_start, month_end=month_end,
                                  monthly=budget.monthly)
    alerts = ("exhausted",) if spent >= budget.monthly else ("runs_out",) if runs_out is not None else ()
    return BudgetStatus(budget=budget, spent_to_date=spent, daily=tuple(sorted(month.items())), profile=profile,
                        profile_basis=basis, projected_month_end=projected, runs_out_on=runs_out, alerts=alerts)
