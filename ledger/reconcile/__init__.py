"""Reconciliation with cloud bills (docs/reconcile.md): a stage between economics and runs.

`billmap` (the TOML map from bill rows to pools, providers and categories), `bills` (a period's
bill rows placed on resources, in the run's currency), `drift` (requests' reported cost beside the
ledger's price, per provider and model), `compare` (the reconciliation of a run's lines with the
bill), `trueup` (variance lines: ``allocate --true-up``), `render` (JSON, CSV, table) and `cli`
(``ledger reconcile``). It reads runs as lines handed to it, so :mod:`ledger.runs` can use the
true-up when it writes a run.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import lazy
from ..hints import Hint, Hinted

# each name is imported from its module when first used, so that
# ``ledger reconcile --help`` (``reconcile.cli``) starts without DuckDB and the runs (docs/scale.md, "Startup")
__getattr__, __dir__, _ = lazy.attach(__name__, {
    ".billmap": ("MAPPED_CATEGORIES", "MATCH", "SECTIONS", "BillMap", "ReconcileError", "Rule", "load_map",
                 "map_from_bytes"),
    ".bills": ("RESOURCE_KINDS", "Bill", "Billed", "Resource", "Unmatched", "read_bill"),
    ".compare": ("Reconciliation", "Row", "priced_by_resource", "reconcile", "reconcile_run", "resource_of"),
    ".drift": ("Drift", "reported_drift"),
    ".trueup": ("BILL_ROW", "true_up"),
})


if TYPE_CHECKING:
    from .billmap import (MAPPED_CATEGORIES, MATCH, SECTIONS, BillMap, ReconcileError, Rule, load_map,
                          map_from_bytes)
    from .bills import RESOURCE_KINDS, Bill, Billed, Resource, Unmatched, read_bill
    from .compare import Reconciliation, Row, priced_by_resource, reconcile, reconcile_run, resource_of
    from .drift import Drift, reported_drift
    from .trueup import BILL_ROW, true_up

MAP_NAME = "bill-map.toml"


def default_map_path(home: Path) -> Path:
    """The bill map used when none is named: ``bill-map.toml`` in the ledger home `home` (its folder)."""
    return home / MAP_NAME


def map_for(path: str | Path | None, home: Path) -> BillMap:
    """The map at `path`, or when none is named the ``bill-map.toml`` of the ledger home `home` (its
    folder); ReconcileError when there is none or it is not valid."""
    from .billmap import ReconcileError, load_map

    if path is None:
        path = default_map_path(home)
        if not path.is_file():
            raise ReconcileError(Hinted("no bill map: ", Hint("bill_map", "name one"), f" (or keep it as {path}); "
                                        "docs/reconcile.md shows how to write one"))
    return load_map(path)


__all__ = ["BILL_ROW", "MAPPED_CATEGORIES", "MAP_NAME", "MATCH", "RESOURCE_KINDS", "SECTIONS", "Bill", "BillMap",
           "Billed", "Drift", "Reconciliation", "ReconcileError", "Resource", "Row", "Rule", "Unmatched",
           "default_map_path", "load_map", "map_for", "map_from_bytes", "priced_by_resource", "read_bill",
           "reconcile", "reconcile_run", "reported_drift", "resource_of", "true_up"]
