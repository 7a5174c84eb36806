"""Renderers of the forecast-error drivers of `ledger budget compare`: JSON (money as decimal
strings), CSV (the comparison's rows with a column per driver, plus a row per provider model) and a
rich table."""
from __future__ import annotations

from decimal import Decimal

from babel.numbers import format_decimal
from rich.table import Table

from ..budget import DRIVERS, Comparison, DriverRow, Drivers
from ..money import fmt
from .budget_report import _cmp_row
from .safe import csv_text


def _plain(x: object) -> object:
    """A measure for JSON: a float at 3 decimals (a TPM, a mean length), a Decimal as plain text."""
    if isinstance(x, float):
        return round(x, 3)
    if isinstance(x, Decimal):
        s = format(x, "f")
        return s.rstrip("0").rstrip(".") if "." in s else s
    return x


def _driver_row(r: DriverRow) -> dict:
    out = {"dimension": r.dimension, "key": r.key, "forecast": fmt(r.forecast), "actual": fmt(r.actual),
           "error": fmt(r.error), **{d: fmt(v) for d, v in r.amounts().items()}}
    if r.measures:
        out["measures"] = {name: {"planned": _plain(p), "actual": _plain(a)} for name, p, a in r.measures}
    return out


def drivers_as_json(d: Drivers) -> dict:
    """The split: `order` of the drivers, `tpm_statistic`, `items` (plan pools and provider models,
    with the measures used), `categories` (every category), `total` and `notes`. In every row the
    drivers add up exactly to `error`."""
    return {"order": list(DRIVERS), "tpm_statistic": d.statistic,
            "items": [_driver_row(r) for r in d.items],
            "categories": [_driver_row(r) for r in d.categories],
            "total": _driver_row(d.total), "notes": list(d.notes)}


def comparison_with_drivers_as_csv(c: Comparison) -> str:
    """The comparison's rows (category, pool, total) with one column per driver, then one row per
    planned provider model (dimension ``model``); driver cells are empty where nothing was split."""
    d = c.drivers
    split = {}
    if d is not None:
        split = {("category", r.key): r for r in d.categories}
        split.update({("pool", r.key): r for r in d.items if r.dimension == "pool"})
        split[("total", "total")] = d.total
    rows = []
    for r in (*c.rows, c.total):
        row = {"month": c.month, "scenario": c.scenario, "run_id": c.run_id, "currency": c.currency, **_cmp_row(r)}
        s = split.get((r.dimension, r.key))
        rows.append({**row, **{k: fmt(v) if s else "" for k, v in (s.amounts() if s else dict.fromkeys(DRIVERS)).items()}})
    for r in (d.items if d else ()):
        if r.dimension == "model":
            rows.append({"month": c.month, "scenario": c.scenario, "run_id": c.run_id, "currency": c.currency,
                         "dimension": "model", "key": r.key, "forecast": fmt(r.forecast), "actual": fmt(r.actual),
                         "error": fmt(r.error), "relative_error": "", "reason": "",
                         **{k: fmt(v) for k, v in r.amounts().items()}})
    for r in rows:
        r["reason"] = r["reason"] or ""
        r["relative_error"] = r["relative_error"] or ""
    numeric = {"forecast", "actual", "error", "relative_error", *DRIVERS}
    return csv_text(list(rows[0]), rows, numeric=numeric)


def _money(x: Decimal) -> str:
    return format_decimal(x, format="#,##0.00;-#,##0.00", locale="en_US")


def _num(x: object) -> str:
    if x is None:
        return "unknown"
    if isinstance(x, (int, float, Decimal)):
        return format_decimal(round(Decimal(repr(x)) if isinstance(x, float) else Decimal(x), 2), format="#,##0.##",
                              locale="en_US")
    return str(x)


def drivers_as_table(d: Drivers, currency: str) -> Table:
    """Why the forecast missed, one column per plan pool and provider model, then `other` (what no
    driver describes, all categories) and the total; one row per driver under the error. Every
    column adds up exactly to its error."""
    t = Table(title=f"why the forecast missed · {d.month} · {currency} · drivers substituted top to bottom "
                    f"(docs/budgets.md)", title_justify="left")
    t.add_column("driver", no_wrap=True)
    for r in d.items:
        t.add_column(r.key, justify="right")
    t.add_column("other", justify="right")
    t.add_column("total", justify="right")
    other = sum((c.other for c in d.categories), Decimal(0))
    t.add_row("error", *(_money(r.error) for r in d.items), _money(other), _money(d.total.error), style="bold")
    for name in DRIVERS:
        t.add_row(name.replace("_", " "), *(_money(getattr(r, name)) for r in d.items),
                  _money(other if name == "other" else Decimal(0)), _money(getattr(d.total, name)))
    return t


def drivers_notes(d: Drivers) -> list[str]:
    """One line per item saying what was set beside the plan, one for `other`, then the notes."""
    out = []
    for r in d.items:
        m = {name: (p, a) for name, p, a in r.measures}
        if r.dimension == "pool":
            out.append(f"{r.key}: TPM {_num(m['tpm'][1])} ({d.statistic}) vs {_num(m['tpm'][0])} planned; "
                       f"output tokens per request {_num(m['osl'][1])} vs {_num(m['osl'][0])}; GPUs at the actual "
                       f"traffic {m['gpus'][1]} vs {m['gpus'][0]} planned; GPU-hours {_num(m['gpu_hours'][1])} vs "
                       f"{_num(m['gpu_hours'][0])} planned")
        else:
            out.append(f"{r.key}: input tokens {_num(m['input_tokens'][1])} vs {_num(m['input_tokens'][0])} planned; "
                       f"cached share {_num(m['cached_share'][1])} vs {_num(m['cached_share'][0])}; output tokens "
                       f"{_num(m['output_tokens'][1])} vs {_num(m['output_tokens'][0])}")
    parts = [f"{c.key} {_money(c.other)}" for c in d.categories if c.other]
    if parts:
        out.append("other (no driver describes it: meters, fixed charges, pools or models not in the plan): "
                   + ", ".join(parts))
    return out + [f"note: {n}" for n in d.notes]
