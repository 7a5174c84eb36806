"""Bill reconciliation for the dashboard: a run beside the cloud bill, as ``ledger reconcile`` shows it.

The map is the ledger home's ``bill-map.toml`` (the one ``ledger reconcile`` reads by default) or
one the page was given; the figures are :func:`ledger.reconcile.reconcile_run`'s, money exact.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlmodel import Session

from .. import config, reconcile, runs
from ..reconcile import BillMap, Reconciliation

RESOURCE_COLUMNS = ["kind", "name", "priced", "billed", "difference", "share", "undefined_because", "billed_cost",
                    "list_cost", "corrections", "rows", "hours_priced", "hours_billed", "coverage"]
UNMATCHED_COLUMNS = ["provider", "service_name", "service_category", "resource_id", "charge_category", "rows",
                     "effective_cost", "billed_cost"]
DRIFT_COLUMNS = ["provider", "model", "currency", "requests", "ours", "reported", "difference", "share"]


def home_map(home: Path | None = None) -> tuple[str, bytes] | None:
    """(path, bytes) of the ``bill-map.toml`` of the ledger home `home` (its folder; default the
    configured one), or None when there is none."""
    path = reconcile.default_map_path(config.ledger_home() if home is None else home)
    return (str(path), path.read_bytes()) if path.is_file() else None


def read_map(name: str, raw: bytes) -> BillMap:
    """A map from its bytes; ReconcileError naming `name` and each bad rule otherwise."""
    return reconcile.map_from_bytes(raw, name)


def reconciliation(s: Session, run_id: str, bill_map: BillMap, home: Path | None = None) -> Reconciliation:
    """Run `run_id` reconciled with the committed bill placed by `bill_map` (ReconcileError if it cannot be),
    over the facts of the ledger home `home` (its folder; default the configured one, resolved here)."""
    home = config.ledger_home() if home is None else home
    stored = runs.load_run(s, run_id=run_id)
    run = stored.run
    return reconcile.reconcile_run(s, run_id=run.id, lines=stored.lines, currency=run.currency,
                                   start=run.period_start, end=run.period_end, bill_map=bill_map,
                                   created_at=run.created_at, home=home)


def resources_frame(rec: Reconciliation) -> pd.DataFrame:
    """One row per pool, provider and category: priced, billed (None: not billed), difference, share."""
    rows = [{"kind": r.resource.kind, "name": r.resource.name, "priced": r.priced,
             "billed": r.billed.effective if r.billed else None, "difference": r.difference, "share": r.share,
             "undefined_because": r.reason, "billed_cost": r.billed.billed_cost if r.billed else None,
             "list_cost": r.billed.list_cost if r.billed else None,
             "corrections": r.billed.corrections if r.billed else None, "rows": r.billed.rows if r.billed else 0,
             "hours_priced": r.coverage.hours_priced if r.coverage else None,
             "hours_billed": r.coverage.hours_billed if r.coverage else None,
             "coverage": r.coverage.ratio if r.coverage else None}
            for r in rec.rows]
    return pd.DataFrame(rows, columns=RESOURCE_COLUMNS)


def unmatched_frame(rec: Reconciliation) -> pd.DataFrame:
    """The bill rows no rule places, grouped (largest effective cost first)."""
    rows = [{**u.as_dict(), "rows": u.rows, "effective_cost": u.effective, "billed_cost": u.billed_cost}
            for u in rec.bill.unmatched]
    return pd.DataFrame(rows, columns=UNMATCHED_COLUMNS)


def drift_frame(rec: Reconciliation) -> pd.DataFrame:
    """Reported cost beside the book, per provider and model."""
    rows = [{"provider": d.provider, "model": d.model, "currency": d.currency, "requests": d.requests,
             "ours": d.ours, "reported": d.reported, "difference": d.difference, "share": d.share}
            for d in rec.drift]
    return pd.DataFrame(rows, columns=DRIFT_COLUMNS)


def totals(rec: Reconciliation) -> dict:
    """The total line and what it rests on (money as Decimal)."""
    return {"priced": rec.priced_billed, "billed": rec.billed_total, "variance": rec.variance,
            "share": rec.variance_share, "unmatched": rec.bill.unmatched_total, "not_billed": rec.not_billed,
            "run_total": rec.priced_total, "trued_up_total": rec.trued_up_total, "currency": rec.currency,
            "run_id": rec.run_id, "run_true_up": rec.run_true_up, "bill_batches": list(rec.bill.batches),
            "bill_rows": rec.bill.rows, "map": rec.bill_map.get("path"), "notes": list(rec.notes),
            "warnings": list(rec.warnings)}
