"""The budget's terminal, JSON and CSV renderers: a budget (``ledger budget PLAN``), a forecast-vs-actual
comparison and its error drivers (``ledger budget compare``).

JSON keeps money as decimal strings; CSV quotes every field and neutralizes text
(:func:`ledger.outputs.csv_text`); tables are laid out for the terminal's width
(:class:`ledger.tables.FitTable`, numbers as :mod:`ledger.formats` writes them). The budget
workbook, a file, is an export: :mod:`ledger.export.budget_xlsx`."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from rich.text import Text

from ..allocate import CATEGORIES
from ..formats import (MISSING, count, display_column, display_difference, display_groups, display_table, figures,
                       money, percent)
from ..instants import iso
from ..money import fmt
from ..outputs import csv_text
from ..tables import FitTable, paragraph
from .actuals import CompareRow, Comparison
from .drivers import DRIVERS, DriverRow, Drivers
from .forecast import Budget, quarter_of
from .matching import DIMENSIONS, Matching


def _num(x: Decimal) -> str:
    """A quantity or rate as plain decimal text, without trailing zeros."""
    s = format(x, "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def budget_as_json(b: Budget, *, version: str = "") -> dict:
    """The budget's JSON contract: per scenario and month the cost by category and its total
    (money as decimal strings), totals per scenario, every detail row, and the provenance."""
    summary = []
    for s in b.scenarios:
        for m in b.months:
            cats = b.by_category(s.name, m)
            summary.append({"scenario": s.name, "month": m, "quarter": quarter_of(m),
                            "months_after_start": b.months_after_start(m),
                            "by_category": {c: fmt(v) for c, v in cats.items()},
                            "total": fmt(sum(cats.values(), Decimal(0)))})
    quarters = []
    for s in b.scenarios:
        for q, months in b.quarters():
            cats = _sum_categories(b, s.name, months)
            quarters.append({"scenario": s.name, "quarter": q, "months": list(months), "complete": len(months) == 3,
                             "by_category": {c: fmt(v) for c, v in cats.items()},
                             "total": fmt(sum(cats.values(), Decimal(0)))})
    totals = {}
    for s in b.scenarios:
        cats = _sum_categories(b, s.name, b.months)
        totals[s.name] = {"by_category": {c: fmt(v) for c, v in cats.items()},
                          "total": fmt(sum(cats.values(), Decimal(0)))}
    return {
        "report": "budget",
        "plan": b.plan.name,
        "currency": b.currency,
        "months": list(b.months),
        "window": {"from": b.months[0], "to": b.months[-1]},
        "plan_months": {"from": b.plan.months[0], "to": b.plan.months[-1],
                        "growth_from": b.plan.months[0]},
        "hours_per_month": "actual" if b.plan.hours_per_month is None else _num(b.plan.hours_per_month),
        "status": b.status,
        "scenarios": [{"name": s.name, "traffic": _num(s.traffic), "output_length": _num(s.output_length),
                       "cache_hit_rate": _num(s.cache_hit_rate), "prices": _num(s.prices)} for s in b.scenarios],
        "summary": summary,
        "quarters": quarters,
        "totals": totals,
        "pools": [{"scenario": g.scenario, "pool": g.pool, "month": g.month, "from": iso(g.start), "to": iso(g.end),
                   "status": g.status, "tpm": g.tpm, "replicas_serving": g.serving, "replicas_reserve": g.reserve,
                   "replicas": g.replicas, "gpus_per_replica": g.gpus_per_replica, "gpus": g.gpus,
                   "hours": _num(g.hours), "price_per_gpu_hour": _num(g.price_per_gpu_hour),
                   "price_currency": g.currency,
                   "fx": _num(g.fx), "price_multiplier": _num(g.price_multiplier), "cost": fmt(g.cost),
                   "price_source": g.price_ref, "part": g.part, "xpyd": g.xpyd or None,
                   "ops": {"admission_limit": g.admission_limit, "queue_scale_out": g.queue_scale_out,
                           "kv_scale_out": g.kv_scale_out, "replica_tok_s": g.replica_tok_s,
                           "headroom_tok_s": g.headroom_tok_s}} for g in b.gpu],
        "variable": [{"scenario": v.scenario, "month": v.month, "from": iso(v.start), "to": iso(v.end),
                      "category": v.category, "item": v.item, "bucket": v.bucket, "quantity": _num(v.quantity),
                      "unit": v.unit, "price": _num(v.price), "per": v.per, "price_currency": v.currency,
                      "fx": _num(v.fx), "price_multiplier": _num(v.price_multiplier), "cost": fmt(v.cost),
                      "price_source": v.price_ref} for v in b.variable],
        "charges": [{"month": c.month, "category": c.category, "charge": c.name, "amount": fmt(c.amount),
                     "currency": c.currency, "fx": _num(c.fx), "cost": fmt(c.cost)} for c in b.charges],
        "provenance": {
            "plan_file": Path(b.plan.path).name if b.plan.path else "", "plan_sha256": b.plan.digest,
            "price_books": list(b.price_books),
            "price_book_details": [{"ref": ref, "retrieved_at": day, "sha256": digest}
                                   for ref, day, digest in b.book_details],
            "curves": [{"pool": s.pool, "status": s.status, "curve": s.curve_label, "given_as": s.curve_ref,
                        "repairs": list(s.repairs)} for s in b.sizing],
            "prices": [{"ref": ref, "meter": p.meter, "sku": p.sku, "region": p.region,
                        "purchase_option": p.purchase_option, "price": str(p.price), "currency": p.currency,
                        "per": p.per, "effective_from": iso(p.effective_from), "effective_to": iso(p.effective_to),
                        "source_url": p.source_url} for ref, p in b.prices],
            "generated_at": iso(b.generated_at),
            "ledger_version": version,
        },
    }


def _sum_categories(b: Budget, scenario: str, months) -> dict[str, Decimal]:
    """The cost per category of `scenario` over `months`, exactly."""
    cats = {c: Decimal(0) for c in CATEGORIES}
    for m in months:
        for c, v in b.by_category(scenario, m).items():
            cats[c] += v
    return cats


def growth_note(b: Budget) -> str:
    """Why a month's numbers depend on the plan's start: every volume (TPM, tokens, meters) is the
    plan's first month's and compounds monthly by its growth from there (docs/budgets.md)."""
    first = b.months[0]
    n = b.months_after_start(first)
    rates = sorted({x.growth for x in (*b.plan.pools, *b.plan.tokens, *b.plan.meters) if x.growth}, reverse=True)
    factors = ", ".join(f"{percent(g)} a month: x{_num((1 + g) ** n)}" for g in rates)
    head = f"volumes are those of the plan's first month, {b.plan.months[0]}, grown monthly from there (compounding)"
    if n:
        head += f"; {first} is {count(n)} month{'s' if n != 1 else ''} after it" + (f" ({factors})" if factors else "")
    return head + "; moving the plan's start moves every month's volumes (a window of months leaves it where it is)"


def _csv(rows: list[dict]) -> str:
    """Every field quoted, text neutralized, the money and ratio columns kept numbers (ledger.outputs)."""
    return csv_text(list(rows[0]), rows, numeric=_NUMERIC) if rows else ""


_NUMERIC = frozenset(CATEGORIES) | {"total", "forecast", "actual", "error", "relative_error"}


def budget_as_csv(b: Budget) -> str:
    """One row per scenario and month: the cost of every category and the total, plus provenance."""
    doc = budget_as_json(b)
    rows = []
    for s in doc["summary"]:
        rows.append({"plan": b.plan.name, "currency": b.currency, "status": b.status, "scenario": s["scenario"],
                     "month": s["month"], **s["by_category"], "total": s["total"],
                     "price_books": " ".join(b.price_books), "quarter": s["quarter"], "row": "month"})
    for q in doc["quarters"]:  # the quarterly subtotals, after the months
        rows.append({"plan": b.plan.name, "currency": b.currency, "status": b.status, "scenario": q["scenario"],
                     "month": "", **q["by_category"], "total": q["total"],
                     "price_books": " ".join(b.price_books), "quarter": q["quarter"], "row": "quarter"})
    return _csv(rows)


def budget_as_table(b: Budget) -> list[FitTable]:
    """Three tables (:class:`ledger.tables.FitTable`, laid out for the terminal's width, money at 2
    decimals grouped): the total per month and scenario, the total per category and scenario over
    all months, and the GPUs of every pool per month (scenarios side by side)."""
    names = [s.name for s in b.scenarios]
    head = f"budget {b.plan.name} · {b.currency} · sizing {b.status}"
    quarters = b.quarters()
    cut = "; ".join(f"{q} has {count(len(ms))} of its 3 months here" for q, ms in quarters if len(ms) != 3)
    by_month = FitTable(title=f"{head} · total by month and quarter", title_justify="left",
                        caption=growth_note(b) + (f"\n{cut}" if cut else ""))
    by_month.add_column("month", numeric=False)
    for n in names:
        by_month.add_column(n)
    # display rounding: each quarter's months add up to its subtotal, the subtotals to the total
    shown = {n: display_groups([[b.total(n, m) for m in months] for _, months in quarters]) for n in names}
    for k, (q, months) in enumerate(quarters):
        for i, m in enumerate(months):
            by_month.add_row(m, *(money(shown[n][0][k][i]) for n in names))
        by_month.add_row(q, *(money(shown[n][1][k]) for n in names), style="bold")
    by_month.add_row("total", *(money(shown[n][2]) for n in names), style="bold")

    by_cat = FitTable(title=f"{head} · total by category, {b.months[0]} to {b.months[-1]}",
                      title_justify="left")
    by_cat.add_column("category", numeric=False)
    for n in names:
        by_cat.add_column(n)
    sums = {n: _sum_categories(b, n, b.months) for n in names}
    cat_shown = {n: display_column([sums[n][c] for c in CATEGORIES]) for n in names}
    for i, c in enumerate(CATEGORIES):
        if any(sums[n][c] for n in names):
            by_cat.add_row(c, *(money(cat_shown[n][0][i]) for n in names))
    by_cat.add_row("total", *(money(cat_shown[n][1]) for n in names), style="bold")

    gpus = FitTable(title=f"GPUs per pool ({' / '.join(names)})", title_justify="left")
    gpus.add_column("month", numeric=False)
    pools = [p.name for p in b.plan.pools]
    for p in pools:
        gpus.add_column(p)
    first: dict[tuple, object] = {}
    for g in b.gpu:  # a pool in parts has a row per part; a price change cuts a month into segments of equal GPUs
        key = (g.scenario, g.pool, g.month)
        first[key] = min(first.get(key, g.start), g.start)
    n_gpus: dict[tuple, int] = {}
    for g in b.gpu:
        key = (g.scenario, g.pool, g.month)
        if g.start == first[key]:
            n_gpus[key] = n_gpus.get(key, 0) + g.gpus
    for m in b.months:
        gpus.add_row(m, *(" / ".join(count(n_gpus[(n, p, m)]) if (n, p, m) in n_gpus else MISSING for n in names)
                          for p in pools))
    return [by_month, by_cat] + ([gpus] if pools else [])


def _cmp_row(r: CompareRow) -> dict:
    return {"dimension": r.dimension, "key": r.key, "forecast": fmt(r.forecast), "actual": fmt(r.actual),
            "error": fmt(r.error), "relative_error": None if r.relative is None else format(r.relative, "f"),
            "reason": r.reason or None}


def comparison_as_json(c: Comparison) -> dict:
    """Forecast vs actual: error = actual - forecast; relative_error = error / forecast (None with a reason)."""
    return {"report": "budget-compare", "month": c.month, "scenario": c.scenario, "run_id": c.run_id,
            "currency": c.currency, "sizing_status": c.status, "price_books": list(c.price_books),
            "categories": [_cmp_row(r) for r in c.rows if r.dimension == "category"],
            "pools": [_cmp_row(r) for r in c.rows if r.dimension == "pool"],
            "total": _cmp_row(c.total), **({"matching": matching_as_json(c.matching)} if c.matching else {}),
            "close": None if c.closing is None else c.closing.as_json()}


def _close(c: Comparison) -> str:
    """The compared run's month as every surface says its close ("" when not known)."""
    return "" if c.closing is None else c.closing.text


def matching_as_json(m: Matching) -> dict:
    """What the plan and the run share: per dimension the keys in both (`matched`), in the plan only
    and in the ledger only; `complete` when nothing is on one side only; `warnings` as on stderr."""
    return {"complete": m.complete,
            **{attr: {"matched": list(s.matched), "plan_only": list(s.plan_only), "ledger_only": list(s.ledger_only)}
               for attr, s in (("pools", m.pools), ("provider_models", m.provider_models),
                               ("categories", m.categories))},
            "warnings": m.warnings()}


def matching_note(m: Matching) -> str:
    """The comparison table's caption: what matched, and what only one side has."""
    both = "; ".join(f"{words} {', '.join(getattr(m, attr).matched)}" for attr, words in DIMENSIONS
                     if getattr(m, attr).matched)
    if m.complete:
        return f"plan and ledger match: {both}"
    return "\n".join([f"matched: {both}", *(f"warning: {w}" for w in m.warnings())])


def comparison_as_csv(c: Comparison) -> str:
    rows = [{"month": c.month, "scenario": c.scenario, "run_id": c.run_id, "currency": c.currency,
             "period_close": _close(c), **_cmp_row(r)} for r in (*c.rows, c.total)]
    for r in rows:
        r["reason"] = r["reason"] or ""
        r["relative_error"] = r["relative_error"] or ""
    return _csv(rows)


def comparison_as_table(c: Comparison) -> FitTable:
    """Forecast, actual and error per category, pool and the total (money at 2 decimals grouped, the
    error signed, the error % with 1 decimal); the matching note as its caption."""
    t = FitTable(title=f"forecast ({c.scenario}) vs actual · {c.month} · run {c.run_id[:12]} · {c.currency}"
                       + (f" · {c.closing.text}" if c.closing is not None else ""),
                 title_justify="left", caption=matching_note(c.matching) if c.matching else None, keys=2)
    t.add_column("by", numeric=False)
    t.add_column("", numeric=False)
    for name in ("forecast", "actual", "error", "error %"):
        t.add_column(name)
    shown = comparison_display(c)
    for r in (*c.rows, c.total):
        if r.dimension == "category" and not r.forecast and not r.actual:
            continue
        f, a = shown[(r.dimension, r.key)]
        t.add_row(r.dimension, r.key, money(f), money(a), money(a - f, signed=True),
                  percent(r.relative, signed=True), style="bold" if r.dimension == "total" else None)
    return t


def comparison_display(c: Comparison, places: int = 2) -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    """The forecast and actual of every row as printed (display rounding, :mod:`ledger.formats`):
    the categories' columns add up to the total row, the pools' are a column of their own; a row's
    error is printed as its printed actual minus its printed forecast, so an error beside two
    totals is their printed difference."""
    out = {}
    for dim in ("category", "pool"):
        rows = [r for r in c.rows if r.dimension == dim]
        fs, f_total = display_column([r.forecast for r in rows], places)
        as_, a_total = display_column([r.actual for r in rows], places)
        out.update({(dim, r.key): (f, a) for r, f, a in zip(rows, fs, as_)})
        if dim == "category":
            out[(c.total.dimension, c.total.key)] = (f_total, a_total)
    return out


# ---- the forecast-error drivers of `ledger budget compare` -------------------------------------

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
        row = {"month": c.month, "scenario": c.scenario, "run_id": c.run_id, "currency": c.currency,
               "period_close": _close(c), **_cmp_row(r)}
        s = split.get((r.dimension, r.key))
        rows.append({**row, **{k: fmt(v) if s else "" for k, v in (s.amounts() if s else dict.fromkeys(DRIVERS)).items()}})
    for r in (d.items if d else ()):
        if r.dimension == "model":
            rows.append({"month": c.month, "scenario": c.scenario, "run_id": c.run_id, "currency": c.currency,
                         "period_close": _close(c), "dimension": "model", "key": r.key, "forecast": fmt(r.forecast), "actual": fmt(r.actual),
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

    def row(values) -> list[str]:
        return [money(v, signed=True) for v in values]

    for i, (name, values) in enumerate(drivers_display(d)):
        t.add_row(name, *row(values), style="bold" if i == 0 else None)
    return t


def drivers_display(d: Drivers, places: int = 2) -> list[tuple[str, list[Decimal]]]:
    """The drivers table as printed, on every surface (this table, the dashboard's): the `error`
    row then one row per driver, each with a cell per item (plan pools and provider models), `other`
    and the total. Display rounding both ways (:func:`ledger.formats.display_table`): each column's
    drivers add up to its printed error, each driver's row to its printed total, and the total error
    is the comparison's, the printed actual minus the printed forecast."""
    other = sum((c.other for c in d.categories), Decimal(0))
    exact = [[*(getattr(r, name) for r in d.items), other if name == "other" else Decimal(0)] for name in DRIVERS]
    total_error = display_difference(d.total.actual, d.total.forecast, places)[2]
    cells, by_driver, errors, total = display_table(exact, places, total=total_error)
    return [("error", [*errors, total]),
            *((name.replace("_", " "), [*shown, t]) for name, shown, t in zip(DRIVERS, cells, by_driver))]


def drivers_notes(d: Drivers) -> list[Text]:
    """One paragraph per item saying what was set beside the plan, one for `other`, then the notes:
    prose that wraps at the terminal's width (:func:`ledger.tables.paragraph`)."""
    out = []
    for r in d.items:
        m = {name: (p, a) for name, p, a in r.measures}
        if r.dimension == "pool":
            tpm, osl, hours = _pair(*m["tpm"]), _pair(*m["osl"]), _pair(*m["gpu_hours"])
            out.append(f"{r.key}: TPM {tpm[1]} ({d.statistic}) vs {tpm[0]} planned; output tokens per request "
                       f"{osl[1]} vs {osl[0]}; GPUs {count(m['gpus'][0])} planned, "
                       f"{count(m['gpus_at_traffic'][1])} at the actual traffic (the month's requests at the "
                       f"planned output length), {count(m['gpus'][1])} at the actual TPM (traffic and output "
                       f"length); GPU-hours {hours[1]} vs {hours[0]} planned")
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
