"""The workload: what the request facts say about the traffic a fleet must serve, per minute, over a
month or any window of whole minutes.

Submodules: ``records`` (Percentiles, Bursts, Workload, WorkloadError), ``compute`` (the DuckDB
passes: :func:`workload`, :func:`largest_rise`), ``render`` (JSON, CSV and rich tables) and ``cli``
(``ledger workload``). Definitions and a worked example: ``docs/workload.md``.
"""
from __future__ import annotations

from .compute import check_window, largest_rise, largest_rise_of, window_label, workload, workload_of
from .records import DAYS, TPM_STATS, Bursts, Percentiles, Workload, WorkloadError

__all__ = ["DAYS", "TPM_STATS", "Bursts", "Percentiles", "Workload", "WorkloadError", "check_window", "largest_rise",
           "largest_rise_of", "window_label", "workload", "workload_of"]
