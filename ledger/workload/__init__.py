"""The workload: what the request facts say about the traffic a fleet must serve, per minute, over a
month or any window of whole minutes.

Submodules: ``records`` (Percentiles, Bursts, Workload, WorkloadError), ``compute`` (the DuckDB
passes: :func:`workload`, :func:`largest_rise`), ``render`` (JSON, CSV and rich tables) and ``cli``
(``ledger workload``). Definitions and a worked example: ``docs/workload.md``.

The names below are imported from their module when first used (``from ledger.workload import
workload``), so that ``ledger workload --help`` (``workload.cli``) starts without DuckDB
(docs/scale.md, "Startup").
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: name -> the module of this package that defines it
_WHERE = {
    **dict.fromkeys(("check_window", "largest_rise", "largest_rise_of", "window_label", "workload", "workload_of"),
                    "compute"),
    **dict.fromkeys(("DAYS", "TPM_STATS", "Bursts", "Percentiles", "Workload", "WorkloadError"), "records"),
}

__all__ = ["DAYS", "TPM_STATS", "Bursts", "Percentiles", "Workload", "WorkloadError", "check_window", "largest_rise",
           "largest_rise_of", "window_label", "workload", "workload_of"]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


if TYPE_CHECKING:
    from .compute import check_window, largest_rise, largest_rise_of, window_label, workload, workload_of
    from .records import DAYS, TPM_STATS, Bursts, Percentiles, Workload, WorkloadError
