"""Allocation of a period: the numbered order of operations of DESIGN §4, over DuckDB facts.

Submodules by stage: `records` (policy, lines, flags, usage, tasks, constants), `pricing` (price and
FX lookups; fleet, provider tokens, meters), `period` (the period's facts in DuckDB), `gpu` (weights,
coefficients, the GPU split), `idle`, `charges` (charge days and their rules), `lines` (direct
lines, merge, conservation) and `engine` (:func:`allocate`, the steps in order). The per-request SQL is
`sql`, run by an engine (`engines`, `spark`) into the temp tables declared once in `tables`.
"""
from .charges import ChargeDay, price_charges
from .engine import allocate
from .gpu import Coefficient, _apply_gpu_split, gpu_coefficients
from .period import Inputs, given, inputs_in_place
from .pricing import PoolHour, meter_category, price_fleet, price_meters, price_provider
from .records import (BASES, CATEGORIES, CHARGE_CATEGORY, DAY_US, EPOCH, FLAG_KINDS, HOUR_US, IDLE_POLICIES, KINDS,
                      LINE_KINDS, TOKEN_BUCKETS, TOKEN_METERS, VARIANCE, WORK, Allocation, AllocationError, Flag, Line,
                      Policy, Tasks, Usage, Weights, parse_weights, period_label)
