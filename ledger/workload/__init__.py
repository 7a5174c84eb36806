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

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".compute": ("check_window", "largest_rise", "largest_rise_of", "window_label", "workload", "workload_of"),
    ".records": ("DAYS", "TPM_STATS", "Bursts", "Percentiles", "Workload", "WorkloadError"),
})


if TYPE_CHECKING:
    from .compute import check_window, largest_rise, largest_rise_of, window_label, workload, workload_of
    from .records import DAYS, TPM_STATS, Bursts, Percentiles, Workload, WorkloadError
