"""Renderers of the forecast-error drivers of `ledger budget compare`: JSON (money as decimal
strings), CSV (the comparison's rows with a column per driver, plus a row per provider model), and a
table with its notes laid out for the terminal's width (:mod:`ledger.tables`, :mod:`ledger.formats`)."""
from __future__ import annotations

from decimal import Decimal

from rich.text import Text

from ..budget import DRIVERS, Comparison, DriverRow, Drivers
from ..formats import count, figures, money, percent
from ..money import fmt
from ..tables import FitTable, paragraph
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


def _pair(planned: object, actual: object) -> tuple[str, str]:
    """A planned and an actual measure at one rule (:func:`ledger.formats.figures`: whole numbers when
    both are whole, else 1 decimal); an unknown one says so."""
    known = [v for v in (planned, actual) if v is not None]
    text = iter(figures(known))
    return tuple("unknown" if v is None else next(text) for v in (planned, actual))


def _share(ratio: object) -> str:
    """A share (0.6) as a percentage (60.0%), or unknown."""
    return "unknown" if ratio is None else percent(ratio)


def drivers_as_table(d: Drivers, currency: str) -> FitTable:
    """Why the forecast missed, one column per plan pool and provider model, then `other` (what no
    driver describes, all categories) and the total; one row per driver under the error, money at
    2 decimals grouped and signed. Every column adds up exactly to its error."""
    t = FitTable(title=f"why the forecast missed · {d.month} · {currency} · drivers substituted top to bottom "
                       f"(docs/budgets.md)", title_justify="left")
    t.add_column("driver", numeric=False)
    for r in d.items:
        t.add_column(r.key)
    t.add_column("other")
    t.add_column("total")
    other = sum((c.other for c in d.categories), Decimal(0))

    def row(values) -> list[str]:
        return [money(v, signed=True) for v in values]

    t.add_row("error", *row([*(r.error for r in d.items), other, d.total.error]), style="bold")
    for name in DRIVERS:
        t.add_row(name.replace("_", " "), *row([*(getattr(r, name) for r in d.items),
                                                other if name == "other" else Decimal(0), getattr(d.total, name)]))
    return t


def drivers_notes(d: Drivers) -> list[Text]:
    """One paragraph per item saying what was set beside the plan, one for `other`, then the notes:
    prose that wraps at the terminal's width (:func:`ledger.tables.paragraph`)."""
    out = []
    for r in d.items:
        m = {name: (p, a) for name, p, a in r.measures}
        if r.dimension == "pool":
            tpm, osl, hours = _pair(*m["tpm"]), _pair(*m["osl"]), _pair(*m["gpu_hours"])
            out.append(f"{r.key}: TPM {tpm[1]} ({d.statistic}) vs {tpm[0]} planned; output tokens per request "
                       f"{osl[1]} vs {osl[0]}; GPUs at the actual traffic {count(m['gpus'][1])} vs "
                       f"{count(m['gpus'][0])} planned; GPU-hours {hours[1]} vs {hours[0]} planned")
        else:
            inp, out_tok = _pair(*m["input_tokens"]), _pair(*m["output_tokens"])
            out.append(f"{r.key}: input tokens {inp[1]} vs {inp[0]} planned; cached share "
                       f"{_share(m['cached_share'][1])} vs {_share(m['cached_share'][0])}; output tokens "
                       f"{out_tok[1]} vs {out_tok[0]}")
    parts = [f"{c.key} {money(c.other, signed=True)}" for c in d.categories if c.other]
    if parts:
        out.append("other (no driver describes it: meters, fixed charges, pools or models not in the plan): "
                   + ", ".join(parts))
    return [paragraph(line) for line in [*out, *(f"note: {n}" for n in d.notes)]]
