"""Finance exports: the budget workbook, allocation workbooks, CSV and FinOps FOCUS rows (1.2 and 1.0).

Every exporter is ``<report>_as_<format>`` over an immutable report (a :class:`ledger.budget.Budget`
or a :class:`ledger.reports.RunData`), writes a provenance sheet or provenance columns, and passes
every text value through :func:`safe_text` so that no cell can run as a formula. Files are written
by :func:`write_output`: never onto the ledger's own DB or facts, and whole or not at all.
"""
from __future__ import annotations

from .allocation import allocation_as_csv, allocation_as_xlsx
from .budget_xlsx import budget_as_xlsx
from .focus import allocation_as_focus
from .focus12 import allocation_as_focus12
from .safe import FORMULA_TRIGGERS, OutputError, atomic_output, check_output_path, csv_text, safe_text, write_output
from .xlsx import currency_format, write_provenance

__all__ = ["FORMULA_TRIGGERS", "OutputError", "allocation_as_csv", "allocation_as_focus", "allocation_as_focus12",
           "allocation_as_xlsx", "atomic_output", "budget_as_xlsx", "check_output_path", "csv_text", "currency_format",
           "safe_text", "write_output", "write_provenance"]
