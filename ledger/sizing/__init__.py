"""SLA-first sizing: measured curves, the operating point an SLA allows, replicas, GPUs and their cost.

The method (DESIGN §5): the SLA (output tok/s per user) picks the concurrency c*, c* sets the
replica throughput, the throughput sets the replicas and GPUs. Measured points only give a
VERDICT; interpolating between them gives a DRAFT. Everything here is pure functions over frozen
dataclasses; `ledger.sizing.service` is the one sizing (a SizingJob in, the sized and priced
outcome out) that `ledger.sizing.cli`, the thin `ledger size` adapter, and the dashboard call.
"""
from __future__ import annotations

from .curve import (Curve, CurveContext, CurvePoint, SizingError, curve_problems, make_curve, repair_curve,
                    validate_curve)
from .cost import ComparisonRow, PricingBasis, compare, monthly_cost, price_per_gpu_hour, priced
from .engine import (DRAFT, VERDICT, OperatingPoint, Reserves, SizingRequest, SizingResult, SizingRow, SizingSpec,
                     capacity_tokens_per_gpu_s, operating_point, replicas_for, request_problems, size, size_pool)
from .loaders import (FORMATS, detect_format, load_curve, load_curves, merge_curves, parse_anchors, parse_curves,
                      select_curve)
from .memory import KV_DTYPE_BYTES, MemoryFit, kv_bytes_per_token, kv_bytes_per_token_per_gpu, memory_fit
from .model_config import ModelKV, load_model_config, model_kv_from_config
from .report import comparison_as_table, curve_as_dict, sizing_as_dict, sizing_as_table

__all__ = [
    "Curve", "CurveContext", "CurvePoint", "SizingError", "curve_problems", "make_curve", "repair_curve",
    "validate_curve",
    "DRAFT", "VERDICT", "ComparisonRow", "OperatingPoint", "PricingBasis", "Reserves", "SizingRequest",
    "SizingResult", "SizingRow", "SizingSpec", "capacity_tokens_per_gpu_s", "compare", "monthly_cost", "operating_point",
    "price_per_gpu_hour", "priced", "replicas_for", "request_problems", "size", "size_pool",
    "FORMATS", "detect_format", "load_curve", "load_curves", "merge_curves", "parse_anchors", "parse_curves",
    "select_curve",
    "KV_DTYPE_BYTES", "MemoryFit", "ModelKV", "kv_bytes_per_token", "kv_bytes_per_token_per_gpu",
    "load_model_config", "memory_fit", "model_kv_from_config",
    "comparison_as_table", "curve_as_dict", "sizing_as_dict", "sizing_as_table",
]
