"""Unit-economics reports over an allocation run: one report shape, many renderers.

The report shape and the run summary are computed in :mod:`ledger.economics`; a stored run is read
back by :mod:`ledger.runs`; `render` turns a report into JSON, CSV or a rich table; `cli` holds the
`report`, `runs` and `close` commands.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: name -> the module that defines it, imported when the name is first used (``from ledger.reports
#: import unit_economics``), so that `ledger runs` (``reports.cli``, ``reports.listing``) starts
#: without the economics and the allocation (docs/scale.md, "Startup")
_WHERE = {
    **dict.fromkeys(("ALL_IN", "ALL_IN_DEFINITION", "BY", "NO_SUCCESS", "NO_TOKENS", "OWN_DEFINITION", "RATIO_EXP",
                     "Report", "Row", "RunData", "RunInfo", "lines_frame", "run_data_of", "summary",
                     "unit_economics"), "ledger.economics"),
    **dict.fromkeys(("load_report", "run_data_of_stored"), "ledger.runs"),
    **dict.fromkeys(("TENANT_METRICS", "runs_as_json", "tenants_as_csv", "tenants_as_table", "unit_economics_as_csv",
                     "unit_economics_as_json", "unit_economics_as_table"), "ledger.reports.render"),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


if TYPE_CHECKING:
    from ..economics import (ALL_IN, ALL_IN_DEFINITION, BY, NO_SUCCESS, NO_TOKENS, OWN_DEFINITION, RATIO_EXP, Report,
                             Row, RunData, RunInfo, lines_frame, run_data_of, summary, unit_economics)
    from ..runs import load_report, run_data_of_stored
    from .render import (TENANT_METRICS, runs_as_json, tenants_as_csv, tenants_as_table, unit_economics_as_csv,
                         unit_economics_as_json, unit_economics_as_table)
