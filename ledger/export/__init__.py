"""Finance exports: the budget workbook, allocation workbooks, CSV and FinOps FOCUS rows.

Every exporter is ``<report>_as_<format>`` over an immutable report (a :class:`ledger.budget.Budget`
or a :class:`ledger.reports.RunData`), writes a provenance sheet or provenance columns, and passes
every text value through :func:`safe_text` so that no cell can run as a formula.
"""
from __future__ import annotations

from .allocation import allocation_as_csv, allocation_as_xlsx
from .budget_xlsx import budget_as_xlsx
from .focus import allocation_as_focus
from .safe import FORMULA_TRIGGERS, safe_text
from .xlsx import currency_format, write_provenance

__all__ = ["FORMULA_TRIGGERS", "allocation_as_csv", "allocation_as_focus", "allocation_as_xlsx", "budget_as_xlsx",
           "currency_format", "safe_text", "write_provenance"]
