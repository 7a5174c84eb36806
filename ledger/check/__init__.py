"""`ledger check`: a pre-flight of the committed facts against the loaded price books, as hledger's
`check`. It finds every usage an allocation could not price (with the nearest SKUs that exist),
fleet devices with no `gpu_time` price, pools with requests and no fleet, and unknown charge
targets. `findings` computes the report (one DuckDB pass per kind of facts), `render` shows it,
`views` holds the facts it reads; `ledger ingest` prints the same findings for the batch it wrote."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used, so that
# `ledger check --help` (``check.cli``) starts without DuckDB and the allocation (docs/scale.md, "Startup")
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".findings": ("BUCKET_SQL", "CHARGE_RULES", "FINDING_KINDS", "CheckReport", "Finding", "check_facts",
                  "check_ledger"),
    ".render": ("FIELDS", "findings_as_csv", "findings_as_json", "findings_as_table", "summary_line"),
    ".views": ("connect",),
})


if TYPE_CHECKING:
    from .findings import BUCKET_SQL, CHARGE_RULES, FINDING_KINDS, CheckReport, Finding, check_facts, check_ledger
    from .render import FIELDS, findings_as_csv, findings_as_json, findings_as_table, summary_line
    from .views import connect
