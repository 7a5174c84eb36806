"""Unit-economics reports over an allocation run: one report shape, many renderers.

The report shape and the run summary are computed in :mod:`ledger.economics`; a stored run is read
back by :mod:`ledger.runs`; `render` turns a report into JSON, CSV or a rich table; `cli` holds the
`report`, `runs` and `close` commands.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used (``from ledger.reports
# import unit_economics``), so that `ledger runs` (``reports.cli``, ``reports.listing``) starts
# without the economics and the allocation (docs/scale.md, "Startup")
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    "ledger.economics": ("ALL_IN", "ALL_IN_DEFINITION", "BY", "NO_SUCCESS", "NO_TOKENS", "OWN_DEFINITION",
                         "RATIO_EXP", "Report", "Row", "RunData", "RunInfo", "lines_frame", "run_data_of", "summary",
                         "unit_economics"),
    "ledger.runs": ("load_report", "run_data_of_stored"),
    "ledger.reports.render": ("TENANT_METRICS", "runs_as_json", "tenants_as_csv", "tenants_as_table",
                              "unit_economics_as_csv", "unit_economics_as_json", "unit_economics_as_table"),
})


if TYPE_CHECKING:
    from ..economics import (ALL_IN, ALL_IN_DEFINITION, BY, NO_SUCCESS, NO_TOKENS, OWN_DEFINITION, RATIO_EXP, Report,
                             Row, RunData, RunInfo, lines_frame, run_data_of, summary, unit_economics)
    from ..runs import load_report, run_data_of_stored
    from .render import (TENANT_METRICS, runs_as_json, tenants_as_csv, tenants_as_table, unit_economics_as_csv,
                         unit_economics_as_json, unit_economics_as_table)
