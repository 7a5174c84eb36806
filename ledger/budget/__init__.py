"""Forecast budgets: replica plans (TOML) priced month by month under scenarios, and forecast vs actual.

Submodules by stage: `plan` (the plan's records, BudgetError, calendar months), `reader` (reading one
TOML table), `parse` (load_plan / parse_plan), `forecast` (the priced lines and the Budget), `pricing`
(budget: sizing and pricing each month and scenario), `actuals` (compare: forecast vs actual),
`matching` (what the plan and the run share: pools, provider models, categories),
`drivers` (why the forecast missed: the error split into drivers) and `usage` (the month's usage from
the facts, for the drivers).
The rules are in ``docs/budgets.md``.

The names below are imported from their module when first used, so that ``ledger budget --help``
(its ``cli``) starts without the package's stack (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".actuals": ("RATIO_EXP", "CompareRow", "Comparison", "compare"),
    ".drivers": ("DRIVERS", "STATISTICS", "Actuals", "DriverRow", "Drivers", "PoolActual", "TokenActual", "explain"),
    ".forecast": ("Budget", "ChargeRow", "GpuRow", "PoolSizing", "PriceUse", "VariableRow"),
    ".parse": ("load_plan", "parse_plan"),
    ".plan": ("SCENARIO_KNOBS", "BudgetError", "FixedCharge", "MeterForecast", "Plan", "PoolPlan", "Scenario",
              "TokenForecast", "month_bounds"),
    ".pricing": ("QUANTITY_EXP", "TOKEN_BUCKETS", "budget"),
})


if TYPE_CHECKING:
    from .actuals import RATIO_EXP, CompareRow, Comparison, compare
    from .drivers import DRIVERS, STATISTICS, Actuals, DriverRow, Drivers, PoolActual, TokenActual, explain
    from .forecast import Budget, ChargeRow, GpuRow, PoolSizing, PriceUse, VariableRow
    from .parse import load_plan, parse_plan
    from .plan import (SCENARIO_KNOBS, BudgetError, FixedCharge, MeterForecast, Plan, PoolPlan, Scenario, TokenForecast,
                       month_bounds)
    from .pricing import QUANTITY_EXP, TOKEN_BUCKETS, budget
