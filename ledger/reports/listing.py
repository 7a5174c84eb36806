"""`ledger runs`: the allocation runs, newest first, each with its role and its period's close, as
JSON and as a table, rendered without the reports' stack (the economics, the allocation): the
command starts with what it reads (docs/scale.md, "Startup"). :mod:`ledger.reports.render` says
them too."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from decimal import Decimal

from rich.text import Text

from ..formats import count, money
from ..instants import iso, period_label
from ..money import fmt
from ..runlist import is_true_up, run_roles
from ..store.periods import month_bounds, month_of
from ..store.signoff import Closing
from ..tables import FitTable


def runs_as_table(data: list[dict]) -> FitTable:
    """`ledger runs` for a person, from :func:`runs_as_json` (newest first): each run's kind
    (allocation or true-up) and role (the current run of an open period, the final run of a signed
    one, a true-up after close, superseded), totals as money with the run's currency; the caption
    says each period's close: "closed by NAME at T, final run R" or "open"."""
    closes = {}
    for d in data:
        closes.setdefault(f"{d['period']['start']} to {d['period']['end']}", d["close"]["text"])
    caption = "\n".join(f"{p}: {c}" for p, c in closes.items()) or None
    t = FitTable(title=f"runs ({count(len(data))})", split=1, caption=caption)
    t.add_column("run", numeric=False)
    for col, numeric in (("period", False), ("created", False), ("kind", False), ("idle", False), ("basis", False),
                         ("total", True), ("price books", False), ("code", False)):
        t.add_column(col, numeric=numeric)
    for d in data:
        mark = f" ({d['role']})" if d["role"] else ""
        t.add_row(Text(d["run_id"] + mark), f"{d['period']['start']} to {d['period']['end']}", d["created_at"],
                  d["kind"], d["idle_policy"], d["basis"], money(Decimal(d["total"]), d["currency"]),
                  Text(", ".join(d["price_books"])), Text(d["code_version"]))
    return t


def runs_as_json(runs: Iterable, closings: Mapping[str, Closing] | None = None) -> list[dict]:
    """`ledger runs --json`: one entry per run, newest first, with its `kind` (``allocation`` or
    ``true-up``), its `role` in its period (``current``, ``final``, ``after close``, ``superseded`` or
    empty: :func:`ledger.runs.run_roles`) and its period's `close` (:meth:`ledger.store.Closing.as_json`;
    `closings` by month name, default every period open)."""
    runs = list(runs)
    closings = dict(closings or {})
    roles = run_roles(runs, closings)
    out = []
    for r in runs:
        month = month_of(r.period_start)
        closing = closings.get(month) if month_bounds(month) == (r.period_start, r.period_end) else None
        out.append({"run_id": r.id, "period": period_label(r.period_start, r.period_end),
                    "created_at": iso(r.created_at), "kind": "true-up" if is_true_up(r) else "allocation",
                    "role": roles[r.id], "currency": r.currency, "idle_policy": r.idle_policy, "basis": r.basis,
                    "total": fmt(r.total), "price_books": json.loads(r.price_books), "code_version": r.code_version,
                    "inputs_digest": r.inputs_digest, "close": (closing or Closing(period=month)).as_json()})
    return out
