"""Finance exports: the budget workbook, allocation workbooks, CSV and FinOps FOCUS rows (1.2 and 1.0).

Every exporter is ``<report>_as_<format>`` over an immutable report (a :class:`ledger.budget.Budget`
or a :class:`ledger.reports.RunData`), writes a provenance sheet or provenance columns, and passes
every text value through :func:`safe_text` so that no cell can run as a formula. Files are written
by :func:`write_output`: never onto the ledger's own DB or facts, and whole or not at all.

The names below are imported from their module when first used, and so is a submodule
(``ledger.export.xlsx``), so that ``ledger export --help`` (its ``cli``) starts without openpyxl,
the runs and the ledger DB (docs/scale.md, "Startup").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".allocation": ("allocation_as_csv", "allocation_as_xlsx"),
    ".budget_xlsx": ("budget_as_xlsx",),
    ".focus": ("allocation_as_focus",),
    ".focus12": ("allocation_as_focus12",),
    ".safe": ("FORMULA_TRIGGERS", "OutputError", "atomic_output", "check_output_path", "csv_text", "safe_text",
              "write_output"),
    ".xlsx": ("currency_format", "write_provenance"),
}, modules=("allocation", "allocation_summary", "budget_xlsx", "cli", "focus", "focus12", "safe", "statement",
            "whatif_xlsx", "xlsx"))


if TYPE_CHECKING:
    from .allocation import allocation_as_csv, allocation_as_xlsx
    from .budget_xlsx import budget_as_xlsx
    from .focus import allocation_as_focus
    from .focus12 import allocation_as_focus12
    from .safe import FORMULA_TRIGGERS, OutputError, atomic_output, check_output_path, csv_text, safe_text, write_output
    from .xlsx import currency_format, write_provenance
