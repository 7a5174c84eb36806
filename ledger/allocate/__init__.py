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

import importlib
from typing import TYPE_CHECKING

#: name -> the module of this package that defines it
_WHERE = {
    **dict.fromkeys(("ChargeDay", "price_charges"), "charges"),
    "allocate": "engine",
    **dict.fromkeys(("Coefficient", "_apply_gpu_split", "gpu_coefficients"), "gpu"),
    **dict.fromkeys(("Inputs", "given", "inputs_in_place"), "period"),
    **dict.fromkeys(("PoolHour", "meter_category", "price_fleet", "price_meters", "price_provider"), "pricing"),
    **dict.fromkeys(("BASES", "CATEGORIES", "CHARGE_CATEGORY", "DAY_US", "EPOCH", "FLAG_KINDS", "HOUR_US",
                     "IDLE_POLICIES", "KINDS", "LINE_KINDS", "TOKEN_BUCKETS", "TOKEN_METERS", "VARIANCE", "WORK",
                     "Allocation", "AllocationError", "Flag", "Line", "Policy", "Tasks", "Usage", "Weights",
                     "parse_weights", "period_label"), "records"),
}
#: the submodules, imported when first named as attributes of the package
_MODULES = ("charges", "cli", "engine", "engines", "gpu", "idle", "lines", "period", "pricing", "records", "spark",
            "sql", "tables")

__all__ = sorted(n for n in _WHERE if not n.startswith("_"))


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE, *_MODULES})


if TYPE_CHECKING:
    from .charges import ChargeDay, price_charges
    from .engine import allocate
    from .gpu import Coefficient, _apply_gpu_split, gpu_coefficients
    from .period import Inputs, given, inputs_in_place
    from .pricing import PoolHour, meter_category, price_fleet, price_meters, price_provider
    from .records import (BASES, CATEGORIES, CHARGE_CATEGORY, DAY_US, EPOCH, FLAG_KINDS, HOUR_US, IDLE_POLICIES,
                          KINDS, LINE_KINDS, TOKEN_BUCKETS, TOKEN_METERS, VARIANCE, WORK, Allocation,
                          AllocationError, Flag, Line, Policy, Tasks, Usage, Weights, parse_weights, period_label)
