"""Allocation of a period: the numbered order of operations of DESIGN §4, over DuckDB facts.

Submodules by stage: `records` (policy, lines, flags, usage, tasks, constants), `pricing` (price and
FX lookups; fleet, provider tokens, meters), `period` (the period's facts in DuckDB), `gpu` (weights,
coefficients, the GPU split), `idle`, `charges` (charge days and their rules), `lines` (direct
lines, merge, conservation) and `engine` (:func:`allocate`, the steps in order). The per-request SQL is
`sql`, run by an engine (`engines`, `spark`) into the temp tables declared once in `tables`.

The names below are imported from their module when first used (``from ledger.allocate import
allocate``), and so is a submodule (``ledger.allocate.pricing``), so that what needs only the
allocation's lookups (``ledger check``, the check of an ingested batch: ``allocate.records``) starts
without the engine, its SQL and DuckDB's relations (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".charges": ("ChargeDay", "price_charges"),
    ".engine": ("allocate",),
    ".gpu": ("Coefficient", "_apply_gpu_split", "gpu_coefficients"),
    ".period": ("Inputs", "given", "inputs_in_place"),
    ".pricing": ("PoolHour", "meter_category", "price_fleet", "price_meters", "price_provider"),
    ".records": ("BASES", "CATEGORIES", "CHARGE_CATEGORY", "DAY_US", "EPOCH", "FLAG_KINDS", "HOUR_US",
                 "IDLE_POLICIES", "KINDS", "LINE_KINDS", "TOKEN_BUCKETS", "TOKEN_METERS", "VARIANCE", "WORK",
                 "Allocation", "AllocationError", "Flag", "Line", "Policy", "Tasks", "Usage", "Weights",
                 "parse_weights"),
}, modules=("charges", "cli", "engine", "engines", "gpu", "idle", "lines", "period", "pricing", "records", "spark",
            "sql", "tables"))


if TYPE_CHECKING:
    from .charges import ChargeDay, price_charges
    from .engine import allocate
    from .gpu import Coefficient, _apply_gpu_split, gpu_coefficients
    from .period import Inputs, given, inputs_in_place
    from .pricing import PoolHour, meter_category, price_fleet, price_meters, price_provider
    from .records import (BASES, CATEGORIES, CHARGE_CATEGORY, DAY_US, EPOCH, FLAG_KINDS, HOUR_US, IDLE_POLICIES,
                          KINDS, LINE_KINDS, TOKEN_BUCKETS, TOKEN_METERS, VARIANCE, WORK, Allocation,
                          AllocationError, Flag, Line, Policy, Tasks, Usage, Weights, parse_weights)
