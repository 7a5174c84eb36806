"""Forecast budgets: replica plans (TOML) priced month by month under scenarios, and forecast vs actual.

Submodules by stage: `plan` (the plan's records, BudgetError, calendar months), `reader` (reading one
TOML table), `parse` (load_plan / parse_plan), `forecast` (the priced lines and the Budget), `pricing`
(budget: sizing and pricing each month and scenario), `actuals` (compare: forecast vs actual),
`matching` (what the plan and the run share: pools, provider models, categories),
`drivers` (why the forecast missed: the error split into drivers) and `usage` (the month's usage from
the facts, for the drivers).
The rules are in ``docs/budgets.md``.
"""
from __future__ import annotations

from .actuals import RATIO_EXP, CompareRow, Comparison, compare
from .drivers import DRIVERS, STATISTICS, Actuals, DriverRow, Drivers, PoolActual, TokenActual, explain
from .forecast import Budget, ChargeRow, GpuRow, PoolSizing, PriceUse, VariableRow
from .parse import load_plan, parse_plan
from .plan import (SCENARIO_KNOBS, BudgetError, FixedCharge, MeterForecast, Plan, PoolPlan, Scenario, TokenForecast,
                   month_bounds)
from .pricing import QUANTITY_EXP, TOKEN_BUCKETS, budget
