"""Safe outputs for the exports: the formula escape and the guarded, atomic file writes.

The code lives in :mod:`ledger.outputs` (below every stage, so that reports, checks and the
console share it); this module re-exports it for the exporters and for callers of
``ledger.export.safe``."""
from __future__ import annotations

from ..outputs import (FORMULA_TRIGGERS, NUMBER, OutputError, atomic_output, check_output_folder, check_output_path,
                       check_outputs, csv_cell, csv_text, csv_writer, safe_text, write_output)

__all__ = ["FORMULA_TRIGGERS", "NUMBER", "OutputError", "atomic_output", "check_output_folder", "check_output_path",
           "check_outputs",
           "csv_cell", "csv_text", "csv_writer", "safe_text", "write_output"]
