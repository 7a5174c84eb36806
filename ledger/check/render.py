"""Renderers of a check report: ``findings_as_json``, ``findings_as_csv`` and ``findings_as_table`` (rich)."""
from __future__ import annotations

from rich.text import Text

from ..formats import count, plural
from ..instants import iso
from ..outputs import csv_text
from ..tables import FitTable
from .findings import CheckReport, Finding

#: The columns of a finding in JSON and CSV, in order.
FIELDS = ("kind", "source", "meter", "sku", "region", "purchase_option", "provider", "pool", "target", "first_at",
          "last_at", "count", "nearest", "batches", "message")


def _finding_json(f: Finding) -> dict:
    return {"kind": f.kind, "source": f.source, "meter": f.meter, "sku": f.sku, "region": f.region,
            "purchase_option": f.purchase_option, "provider": f.provider, "pool": f.pool, "target": f.target,
            "first_at": iso(f.first_at) if f.first_at else None, "last_at": iso(f.last_at) if f.last_at else None,
            "count": f.count, "nearest": list(f.nearest), "batches": list(f.batches), "message": f.message}


def summary_line(report: CheckReport) -> str:
    """The short line of a check that found nothing: what was checked, against which books."""
    c = report.checked
    scope = f" from {iso(report.start)} to {iso(report.end)}" if report.start and report.end else ""
    return (f"no problems: {plural(c.get('requests', 0), 'request')}, {plural(c.get('meters', 0), 'meter event')}, "
            f"{plural(c.get('fleet', 0), 'fleet interval')} and {plural(c.get('charges', 0), 'charge')}{scope} "
            f"checked against {plural(len(report.price_books), 'price book')}")


def findings_as_json(report: CheckReport) -> dict:
    """The report as a JSON-ready dict: scope, books, rows checked, and one entry per finding."""
    return {"check": "facts against price books",
            "period": {"start": iso(report.start), "end": iso(report.end)} if report.start and report.end else None,
            "batch": report.batch, "price_books": list(report.price_books), "checked": dict(report.checked),
            "ok": report.ok, "problems": len(report.findings),
            "findings": [_finding_json(f) for f in report.findings]}


def findings_as_csv(report: CheckReport) -> str:
    """One CSV row per finding (the header alone when there is none); lists are space-separated,
    every field is quoted and text cells are neutralized against formula injection (names come
    from the input files; :func:`ledger.outputs.csv_text`)."""
    rows = []
    for f in report.findings:
        d = _finding_json(f)
        d.update(nearest=" ".join(d["nearest"]), batches=" ".join(d["batches"]))
        rows.append(d)
    return csv_text(FIELDS, rows, numeric=("count",))


def findings_as_table(report: CheckReport) -> FitTable:
    """The findings for a person, one row each; names wrap between words, never cut (they come
    from the input files, so they are never read as markup)."""
    n = len(report.findings)
    t = FitTable(title=f"ledger check: {plural(n, 'problem')}")
    for col in ("kind", "what", "first"):
        t.add_column(col, numeric=False)
    t.add_column("count")
    t.add_column("nearest", numeric=False)
    t.add_column("batches", numeric=False, fold=True)
    for f in report.findings:
        what = "/".join(x for x in (f.meter, f.sku, f.region, f.purchase_option) if x) or f.pool or f.target
        if f.provider:
            what += f" ({f.provider})"
        t.add_row(f.kind, Text(what, overflow="fold"), iso(f.first_at)[:16] if f.first_at else "", count(f.count),
                  Text(", ".join(f.nearest)), Text(", ".join(f.batches)))
    return t
