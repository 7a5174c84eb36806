"""The demo: October 2026 of a small inference fleet (and August and September before it, for the
trend), built from the Azure LLM inference trace.

Submodules: ``month`` (the settings of the month), ``traffic`` (requests and tasks replayed from the
trace), ``writers`` (the usage CSVs), ``inputs`` (fleet and charge rows, :func:`build_inputs`),
``home`` (what a ledger home holds; ``--force`` wipes only that) and ``runner`` (:func:`run_demo`:
a fresh ledger home, books, dimensions, ingest, allocation).

The names below are imported from their module when first used, and so is a submodule
(``ledger.demo.traffic``), so that ``ledger demo --help`` (its ``cli``) starts without pandas and
the trace (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".home": ("check_home", "is_ledger_db"),
    ".inputs": ("CANARY_HOURS", "CANARY_START", "CHARGES", "QUARTER_END", "DemoInputs", "build_inputs", "charge_rows",
                "fleet_rows"),
    ".month": ("BATCHES", "CONV_PRODUCTS", "DATA_DIR", "GROWTH", "HOUR_US", "HOURS", "KINDS", "LOG_BYTES_PER_REQUEST",
               "MONTH_END", "MONTH_START", "MONTHS", "NEW_TENANT", "OCTOBER", "OVERLOAD_TIMEOUT", "OVERLOADED_SUNDAY",
               "PAYLOAD_BYTES", "PERIOD", "POOLS", "PRODUCT_NAMES", "PRODUCTS", "PROVIDER", "PROVIDER_MODEL", "RATE",
               "REGION", "ROUTES", "SEED", "SPANS", "STATUS", "STREAM_BYTES_PER_TOKEN", "STREAM_TENANTS", "SUCCESS",
               "SUNDAYS", "TASKS", "TENANT_NAMES", "TENANTS", "TRACE_FILES", "WEEKDAYS", "WEEKEND", "Batch", "Month",
               "Pool"),
    ".runner": ("DEMO_BOOK", "DemoError", "DemoResult", "display_path", "existing_data", "run_demo", "wipe_home"),
    ".traffic": ("DECIDED", "DELAY", "OUTCOME", "PRODUCT", "SELECT", "STATUS_U", "TASK", "TENANT", "Trace",
                 "hourly_rate", "load_traces", "uniform"),
}, modules=("cli", "guardrails", "home", "inputs", "month", "runner", "traffic", "writers"))


if TYPE_CHECKING:
    from .home import check_home, is_ledger_db
    from .inputs import (CANARY_HOURS, CANARY_START, CHARGES, QUARTER_END, DemoInputs, build_inputs, charge_rows,
                         fleet_rows)
    from .month import (BATCHES, CONV_PRODUCTS, DATA_DIR, GROWTH, HOUR_US, HOURS, KINDS, LOG_BYTES_PER_REQUEST,
                        MONTH_END, MONTH_START, MONTHS, NEW_TENANT, OCTOBER, OVERLOAD_TIMEOUT, OVERLOADED_SUNDAY,
                        PAYLOAD_BYTES, PERIOD, POOLS, PRODUCT_NAMES, PRODUCTS, PROVIDER, PROVIDER_MODEL, RATE, REGION,
                        ROUTES, SEED, SPANS, STATUS, STREAM_BYTES_PER_TOKEN, STREAM_TENANTS, SUCCESS, SUNDAYS, TASKS,
                        TENANT_NAMES, TENANTS, TRACE_FILES, WEEKDAYS, WEEKEND, Batch, Month, Pool)
    from .runner import DEMO_BOOK, DemoError, DemoResult, display_path, existing_data, run_demo, wipe_home
    from .traffic import (DECIDED, DELAY, OUTCOME, PRODUCT, SELECT, STATUS_U, TASK, TENANT, Trace, hourly_rate,
                          load_traces, uniform)
