"""Renderers of a reconciliation: ``reconciliation_as_json``, ``_as_csv`` and ``_as_table``.

Money as decimal strings at 1e-6 in JSON and CSV (CSV written by :mod:`ledger.outputs`: every
field quoted, text neutralized against formulas, numbers kept numbers), in the table as
:mod:`ledger.formats` has it (money at 2 decimals, grouped); shares as ratios (JSON, CSV) or
percentages (table).
"""
from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType

from rich.console import Group
from rich.text import Text

from ..instants import period_label
from ..formats import count, money, percent
from ..hints import Hint, Hinted, say_one
from ..instants import iso
from ..money import fmt
from ..outputs import csv_text
from ..tables import FitTable, paragraph
from .bills import UNMATCHED_KEYS
from .compare import Reconciliation

SHOWN_UNMATCHED = 20
CSV_COLUMNS = ("section", "kind", "name", *UNMATCHED_KEYS[:1], "model", *UNMATCHED_KEYS[1:], "priced", "billed",
               "difference", "share", "undefined_because", "billed_cost", "list_cost", "corrections", "rows",
               "hours_priced", "hours_billed", "coverage", "currency", "period_start", "period_end", "run_id", "period_close")
NUMERIC = ("priced", "billed", "difference", "share", "billed_cost", "list_cost", "corrections", "rows",
           "hours_priced", "hours_billed", "coverage")
TOTAL_DEFINITION = ("priced: the run's cost of the resources the bill covers; billed: the bill's effective cost in "
                    "the period, unmatched rows included; variance = billed − priced")


def _opt(d: Decimal | None) -> str | None:
    return None if d is None else fmt(d)


def _ratio(d: Decimal | None) -> str | None:
    return None if d is None else format(d, "f")


def _coverage(r) -> dict:
    """A resource's coverage fields: hours priced, hours of them billed, their ratio (None: not
    billed, or nothing priced)."""
    c = r.coverage
    return {"hours_priced": c.hours_priced if c else None, "hours_billed": c.hours_billed if c else None,
            "coverage": _ratio(c.ratio) if c else None}


def _coverage_cell(r) -> str:
    """The table's coverage: ``100%``, ``1.34% (10/744 h)``, ``—`` (not billed), or why undefined."""
    c = r.coverage
    if c is None:
        return "—"
    if not c.hours_priced:
        return "no hour priced"
    if not c.partial:
        return "100%"
    return f"{percent(c.ratio)} ({count(c.hours_billed)}/{count(c.hours_priced)} h)"


def reconciliation_as_json(rec: Reconciliation) -> dict:
    """The reconciliation as a JSON-ready dict (the ``ledger reconcile --json`` contract)."""
    bill = rec.bill
    return {
        "report": "reconcile", "period": period_label(rec.start, rec.end), "currency": rec.currency,
        "run_id": rec.run_id, "run_created_at": iso(rec.run_created_at), "run_true_up": rec.run_true_up,
        "bill_map": rec.bill_map, "bill_batches": list(bill.batches), "bill_rows": bill.rows,
        "resources": [{"kind": r.resource.kind, "name": r.resource.name, "priced": fmt(r.priced),
                       "billed": _opt(r.billed.effective if r.billed else None), "difference": _opt(r.difference),
                       "share": _ratio(r.share), "undefined_because": r.reason or None,
                       "billed_cost": _opt(r.billed.billed_cost if r.billed else None),
                       "list_cost": _opt(r.billed.list_cost if r.billed else None),
                       "corrections": _opt(r.billed.corrections if r.billed else None),
                       "rows": r.billed.rows if r.billed else 0, "rules": list(r.billed.rules) if r.billed else [],
                       **_coverage(r)}
                      for r in rec.rows],
        "unmatched": [{**u.as_dict(), "rows": u.rows, "effective_cost": fmt(u.effective),
                       "billed_cost": fmt(u.billed_cost), "corrections": u.corrections} for u in bill.unmatched],
        "drift": [{"provider": d.provider, "model": d.model, "currency": d.currency, "requests": d.requests,
                   "ours": fmt(d.ours), "reported": fmt(d.reported), "difference": fmt(d.difference),
                   "share": _ratio(d.share)} for d in rec.drift],
        "total": {"priced": fmt(rec.priced_billed), "billed": fmt(rec.billed_total), "variance": fmt(rec.variance),
                  "share": _ratio(rec.variance_share), "unmatched": fmt(bill.unmatched_total),
                  "not_billed": fmt(rec.not_billed), "run_total": fmt(rec.priced_total),
                  "trued_up_total": fmt(rec.trued_up_total), "definition": TOTAL_DEFINITION},
        "notes": list(rec.notes),
        "warnings": list(rec.warnings),
        "close": None if rec.closing is None else rec.closing.as_json(),
    }


def reconciliation_as_csv(rec: Reconciliation) -> str:
    """One CSV: a row per resource, unmatched group, drift (provider, model) and the totals (section
    ``total``: kind ``total`` is the total line; ``not_billed`` the resources no bill row is placed
    on; ``run`` the run total beside the trued-up total), each with the period, run, currency and
    the period's close (``period_close``: "closed by NAME at T, final run R", "open", or empty
    when not known)."""
    p = period_label(rec.start, rec.end)
    common = {"currency": rec.currency, "period_start": p["start"], "period_end": p["end"], "run_id": rec.run_id,
              "period_close": "" if rec.closing is None else rec.closing.text}
    rows = []
    for r in rec.rows:
        b = r.billed
        rows.append({"section": "resource", "kind": r.resource.kind, "name": r.resource.name, "priced": fmt(r.priced),
                     "billed": _opt(b.effective if b else None), "difference": _opt(r.difference),
                     "share": _ratio(r.share), "undefined_because": r.reason, "billed_cost": _opt(b and b.billed_cost),
                     "list_cost": _opt(b and b.list_cost), "corrections": _opt(b and b.corrections),
                     "rows": b.rows if b else 0, **_coverage(r), **common})
    for u in rec.bill.unmatched:
        rows.append({"section": "unmatched", "kind": "unmatched", **u.as_dict(), "billed": fmt(u.effective),
                     "billed_cost": fmt(u.billed_cost), "rows": u.rows, **common})
    for d in rec.drift:
        rows.append({"section": "drift", "kind": "provider", "name": d.provider, "provider": d.provider,
                     "model": d.model, "priced": fmt(d.ours), "billed": fmt(d.reported),
                     "difference": fmt(d.difference),
                     "share": _ratio(d.share), "undefined_because": "" if d.share is not None else "nothing priced",
                     "rows": d.requests, **common, "currency": d.currency})
    rows += [{"section": "total", "kind": "total", "priced": fmt(rec.priced_billed), "billed": fmt(rec.billed_total),
              "difference": fmt(rec.variance), "share": _ratio(rec.variance_share), "rows": rec.bill.rows, **common},
             {"section": "total", "kind": "not_billed", "priced": fmt(rec.not_billed), **common},
             {"section": "total", "kind": "run", "priced": fmt(rec.priced_total), "billed": fmt(rec.trued_up_total),
              "difference": fmt(rec.variance), **common}]
    return csv_text(CSV_COLUMNS, rows, numeric=NUMERIC)


def reconciliation_as_table(rec: Reconciliation, names: Mapping[str, str] = MappingProxyType({})) -> Group:
    """The reconciliation for a person: resources, unmatched rows, drift, the total line and notes
    (money and shares by :mod:`ledger.formats`; tables that fit the terminal, :mod:`ledger.tables`);
    `names` words the hints of its lines as a command's options (:mod:`ledger.hints`)."""
    p = period_label(rec.start, rec.end)
    bill = rec.bill
    head = (f"reconcile · {p['start']} to {p['end']} · run {rec.run_id[:12]}"
            f"{' (a true-up run: its variance lines left out)' if rec.run_true_up else ''} · {rec.currency} · "
            f"bill batches {', '.join(bill.batches) or 'none'} ({count(bill.rows)} rows) · map "
            f"{rec.bill_map.get('path')}" + ("" if rec.closing is None else f" · {rec.closing.text}"))
    t = FitTable(title="priced by the ledger, billed by the cloud")
    t.add_column("resource", numeric=False)
    for col in ("priced", "billed (effective)", "difference"):
        t.add_column(col)
    t.add_column("share", numeric=False, justify="right")
    for col in ("billed cost", "list cost", "corrections", "rows"):
        t.add_column(col)
    t.add_column("coverage", numeric=False, justify="right")
    for r in rec.rows:
        b = r.billed
        t.add_row(Text(r.resource.label()), money(r.priced), money(b.effective if b else None), money(r.difference),
                  percent(r.share) if r.share is not None else (r.reason if b else "not billed"),
                  money(b and b.billed_cost), money(b and b.list_cost), money(b and b.corrections),
                  count(b.rows if b else 0), _coverage_cell(r))
    parts: list = [paragraph(head), t]
    if bill.unmatched:
        u = FitTable(title=f"unmatched: {count(sum(x.rows for x in bill.unmatched))} rows no rule places, "
                           f"{money(bill.unmatched_total)}")
        for k in UNMATCHED_KEYS:
            u.add_column(k, numeric=False, fold=k == "resource_id")
        for col in ("rows", "effective cost", "billed cost"):
            u.add_column(col)
        for x in bill.unmatched[:SHOWN_UNMATCHED]:
            u.add_row(*[Text(v or "") for v in x.key], count(x.rows), money(x.effective), money(x.billed_cost))
        parts.append(u)
        if len(bill.unmatched) > SHOWN_UNMATCHED:
            parts.append(paragraph(say_one(Hinted(f"... and {count(len(bill.unmatched) - SHOWN_UNMATCHED)} more groups (",
                                                  Hint("all_rows", "the JSON and the CSV list all"), ")"), names)))
    if rec.drift:
        d = FitTable(title="reported cost vs the book, per model (requests with a reported cost)", keys=2)
        for col in ("provider", "model", "currency"):
            d.add_column(col, numeric=False)
        for col in ("requests", "ours (book)", "reported", "difference", "share"):
            d.add_column(col)
        for x in rec.drift:
            d.add_row(Text(x.provider), Text(x.model), x.currency, count(x.requests), money(x.ours), money(x.reported),
                      money(x.difference), percent(x.share))
        parts.append(d)
    parts.append(paragraph(f"total: priced {money(rec.priced_billed)} · billed {money(rec.billed_total)} · variance "
                           f"{money(rec.variance)} ({percent(rec.variance_share)}); unmatched "
                           f"{money(bill.unmatched_total)} included; not billed {money(rec.not_billed)}; run total "
                           f"{money(rec.priced_total)} → trued up {money(rec.trued_up_total)}"))
    parts += [paragraph(f"note: {n}") for n in rec.notes]
    return Group(*parts)
