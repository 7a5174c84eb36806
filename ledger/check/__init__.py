"""`ledger check`: a pre-flight of the committed facts against the loaded price books, as hledger's
`check`. It finds every usage an allocation could not price (with the nearest SKUs that exist),
fleet devices with no `gpu_time` price, pools with requests and no fleet, and unknown charge
targets. `findings` computes the report (one DuckDB pass per kind of facts), `render` shows it,
`views` holds the facts it reads; `ledger ingest` prints the same findings for the batch it wrote."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: name -> the module of this package that defines it, imported when the name is first used, so that
#: `ledger check --help` (``check.cli``) starts without DuckDB and the allocation (docs/scale.md, "Startup")
_WHERE = {
    **dict.fromkeys(("BUCKET_SQL", "CHARGE_RULES", "FINDING_KINDS", "CheckReport", "Finding", "check_facts",
                     "check_ledger"), "findings"),
    **dict.fromkeys(("FIELDS", "findings_as_csv", "findings_as_json", "findings_as_table", "summary_line"), "render"),
    "connect": "views",
}

__all__ = sorted(_WHERE)


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
    from .findings import BUCKET_SQL, CHARGE_RULES, FINDING_KINDS, CheckReport, Finding, check_facts, check_ledger
    from .render import FIELDS, findings_as_csv, findings_as_json, findings_as_table, summary_line
    from .views import connect
