"""Forecast vs actual: a month's forecast set beside an allocation run's lines, per category, per pool and in total."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

from ..allocate import CATEGORIES
from ..money import ZERO, quantize
from ..store import Closing
from .drivers import Actuals, Drivers, explain
from .forecast import Budget
from .matching import Matching, match
from .plan import BudgetError

RATIO_EXP = Decimal("0.0001")


@dataclass(frozen=True)
class CompareRow:
    """One line of forecast vs actual: `dimension` (category | pool), `key`, `forecast` and `actual`
    in the plan currency, `error` = actual - forecast (positive: spent more than forecast), and
    `relative` = error / forecast (rounded to 1e-4; None with `reason` when the forecast is zero)."""

    dimension: str
    key: str
    forecast: Decimal
    actual: Decimal
    error: Decimal
    relative: Decimal | None
    reason: str = ""


@dataclass(frozen=True)
class Comparison:
    """A month's base forecast beside an allocation run: rows per category and per pool, and the
    totals; `drivers`, when the month's actual usage was given, splits the error (drivers.Drivers);
    `matching` says which pools, provider models and categories the plan and the run share;
    `closing`, the close of the run's month (open, or who signed it off: :class:`ledger.store.Closing`)
    when the caller read it with the run."""

    month: str
    scenario: str
    run_id: str
    currency: str
    rows: tuple[CompareRow, ...]
    total: CompareRow
    status: str
    price_books: tuple[str, ...] = field(default=())
    drivers: Drivers | None = None
    matching: Matching | None = None
    closing: Closing | None = None


def _row(dimension: str, key: str, forecast: Decimal, actual: Decimal) -> CompareRow:
    err = actual - forecast
    if forecast == 0:
        return CompareRow(dimension=dimension, key=key, forecast=forecast, actual=actual, error=err, relative=None,
                          reason="no forecast for it" if actual else "no forecast and no actual")
    with localcontext() as ctx:
        ctx.prec = 60
        return CompareRow(dimension=dimension, key=key, forecast=forecast, actual=actual, error=err,
                          relative=quantize(err / forecast, RATIO_EXP))


def compare(b: Budget, *, month: str, lines: Iterable, run_id: str, run_currency: str,
            price_books: Sequence[str] = (), scenario: str = "base", actuals: Actuals | None = None,
            index=None) -> Comparison:
    """The `scenario` forecast of `month` beside the actual `lines` of an allocation run of that
    month (objects with `category`, `pool` and `amount`; `provider` and `model` for the drivers):
    per category (all of them), per pool (the plan's and any other pool with GPU cost), and in total.
    The run's currency must be the plan's, and the run must share something with the plan: when no
    pool or provider model of the plan is in the run, or no category the plan forecasts for the
    month was booked, BudgetError says what each side has and how to fix it
    (:meth:`ledger.budget.matching.Matching.refusal`); what only one side has is in `matching`.
    With the month's `actuals` (and the PriceIndex `index` the budget was priced with), the error is
    split into drivers (:func:`ledger.budget.drivers.explain`)."""
    if month not in b.plan.months:
        raise BudgetError(f"month {month} is not in the plan ({b.plan.months[0]} to {b.plan.months[-1]})")
    if run_currency != b.currency:
        raise BudgetError(f"the run is in {run_currency}, the plan in {b.currency}: compare like with like")
    if scenario not in {s.name for s in b.scenarios}:
        raise BudgetError(f"scenario {scenario} was not budgeted")
    forecast = b.by_category(scenario, month)
    lines = list(lines)
    matching = match(plan=b.plan.name, run_id=run_id, month=month, plan_pools=[p.name for p in b.plan.pools],
                     plan_models=[f"{t.provider}/{t.model}" for t in b.plan.tokens], forecast=forecast, lines=lines)
    if matching.refusal():
        raise BudgetError(matching.refusal())
    actual = {c: ZERO for c in CATEGORIES}
    pool_actual: dict[str, Decimal] = defaultdict(Decimal)
    for ln in lines:
        actual[ln.category] = actual.get(ln.category, ZERO) + ln.amount
        if ln.category == "gpu" and ln.pool:
            pool_actual[ln.pool] += ln.amount
    pool_forecast: dict[str, Decimal] = {p.name: ZERO for p in b.plan.pools}
    for g in b.gpu:
        if g.scenario == scenario and g.month == month:
            pool_forecast[g.pool] += g.cost
    rows = [_row("category", c, forecast.get(c, ZERO), actual.get(c, ZERO)) for c in actual]
    for pool in list(pool_forecast) + sorted(set(pool_actual) - set(pool_forecast)):
        rows.append(_row("pool", pool, pool_forecast.get(pool, ZERO), pool_actual.get(pool, ZERO)))
    total = _row("total", "total", sum(forecast.values(), ZERO), sum(actual.values(), ZERO))
    drivers = None
    if actuals is not None:
        drivers = explain(b, month=month, scenario=scenario, lines=lines, actuals=actuals, index=index)
    return Comparison(month=month, scenario=scenario, run_id=run_id, currency=b.currency, rows=tuple(rows), total=total,
                      status=b.status, price_books=tuple(price_books), drivers=drivers, matching=matching)
