"""What the dashboards show, as DataFrames: read-only views of the ledger over ledger.* functions.

Submodules: ``state`` (the ledger read, read-only sessions, its runs), ``economics`` (a run's unit
economics and exports), ``tenants`` (tenants side by side), ``drill`` (a tenant's products, models and
lines, the tenant x product matrix, shared charges spread, the month-over-month trend), ``prices`` (price books) and
``planning`` (sizing, budgets, forecast vs actual). Sessions are rolled back, never committed;
money stays exact ``Decimal``; formatting happens in the pages.

The names below are imported from their module when first used, and so is a submodule
(``ledger.dashboard.state``), so that ``ledger dashboard --help`` (its ``cli``) starts without
pandas, SQLModel and the ledger's stages (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    "ledger.allocate": ("CATEGORIES",),
    "ledger.guardrails": ("budget_books",),
    ".drill": ("SHARED_CHARGES", "SHARED_CHARGES_NOTE", "TREND_MONTH_COLUMNS", "TREND_ROW_COLUMNS", "matrix_frame",
               "run_months", "spread_frame", "spread_parts_frame", "tenant_lines_frame", "tenant_models_frame",
               "tenant_products_frame", "trend_frames"),
    ".economics": ("ALL_IN_DEFINITION", "BUDGET_COLUMNS", "NO_PRODUCT_PARTS", "OWN_DEFINITION", "RATIO_EXP",
                   "UNIT_COLUMNS", "allocation_lines_csv", "allocation_workbook", "category_daily_frame", "fleet_row",
                   "headline_frame", "provenance_frame", "unattributed_frame", "unit_economics_csv",
                   "unit_economics_frame", "without_product"),
    ".planning": ("EXAMPLES_DIR", "SIZING_COLUMNS", "budget_months_frame", "budget_pools_frame", "budget_totals_frame",
                  "budget_workbook", "comparison_frame", "curve_from_anchors", "curve_from_files", "curve_points_frame",
                  "drivers_frame", "drivers_notes", "example_plans", "forecast_vs_actual", "gpu_prices_frame",
                  "plan_books", "read_plan", "size_fleet", "sizing_context", "sizing_defaults", "sizing_frame"),
    ".prices": ("MAX_BOOK_BYTES", "PRICE_COLUMNS", "PriceBooks", "books_frame", "check_books", "check_frame",
                "check_uploaded", "price_books", "price_history_frame", "price_keys", "prices_in_force_frame"),
    ".state": ("ABSENT", "NO_RUNS", "READY", "UNINITIALIZED", "UNREACHABLE", "LedgerState", "guidance", "ledger_state",
               "load_run_data", "period_name", "reading", "runs_frame"),
    ".tenants": ("TENANT_METRICS", "tenant_daily_frame", "tenant_names", "tenants_frame"),
}, modules=("cli", "drill", "economics", "guardrails", "planning", "prices", "reconcile", "serve", "state", "tenants",
            "whatif", "workload"))


if TYPE_CHECKING:
    from ..allocate import CATEGORIES
    from ..guardrails import budget_books
    from .drill import (SHARED_CHARGES, SHARED_CHARGES_NOTE, TREND_MONTH_COLUMNS, TREND_ROW_COLUMNS, matrix_frame,
                        run_months, spread_frame, spread_parts_frame, tenant_lines_frame, tenant_models_frame,
                        tenant_products_frame, trend_frames)
    from .economics import (ALL_IN_DEFINITION, BUDGET_COLUMNS, NO_PRODUCT_PARTS, OWN_DEFINITION, RATIO_EXP,
                            UNIT_COLUMNS, allocation_lines_csv, allocation_workbook, category_daily_frame, fleet_row,
                            headline_frame, provenance_frame, unattributed_frame, unit_economics_csv,
                            unit_economics_frame, without_product)
    from .planning import (EXAMPLES_DIR, SIZING_COLUMNS, budget_months_frame, budget_pools_frame, budget_totals_frame,
                           budget_workbook, comparison_frame, curve_from_anchors, curve_from_files,
                           curve_points_frame, drivers_frame, drivers_notes, example_plans, forecast_vs_actual,
                           gpu_prices_frame, plan_books, read_plan, size_fleet, sizing_context, sizing_defaults,
                           sizing_frame)
    from .prices import (MAX_BOOK_BYTES, PRICE_COLUMNS, PriceBooks, books_frame, check_books, check_frame,
                         check_uploaded, price_books, price_history_frame, price_keys, prices_in_force_frame)
    from .state import (ABSENT, NO_RUNS, READY, UNINITIALIZED, UNREACHABLE, LedgerState, guidance, ledger_state,
                        load_run_data, period_name, reading, runs_frame)
    from .tenants import TENANT_METRICS, tenant_daily_frame, tenant_names, tenants_frame
