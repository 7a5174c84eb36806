"""The budget workbook: Summary (month x scenario x category, live formulas over the detail), Plan,
Variable, Charges, Scenarios and Provenance sheets."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Font

from ..allocate import CATEGORIES
from ..budget import Budget
from ..instants import iso
from ..units import prose
from .xlsx import (saved, DEFAULT_LOCALE, INTEGER_FORMAT, QUANTITY_FORMAT, RATE_FORMAT, col, currency_format, fit_widths,
                   header, print_one_page_wide, put, put_formula, rng, unit_cost_format, write_provenance)

PLAN_COLUMNS = ("scenario", "pool", "part", "month", "from (UTC)", "to (UTC)", "device", "region", "purchase option",
                "sizing", "TPM (output tokens/min)", "serving replicas", "reserve replicas", "replicas",
                "GPUs per replica", "GPUs", "hours", "price per GPU-hour", "price currency", "FX to reporting",
                "price multiplier", "cost", "price source", "xPyD", "admission limit (requests in flight)",
                "scale out at waiting requests", "scale out at KV-cache usage", "replica tok/s",
                "headroom tok/s at util")
VARIABLE_COLUMNS = ("scenario", "month", "from (UTC)", "to (UTC)", "category", "item", "bucket", "quantity", "unit",
                    "price", "per", "price currency", "pers per unit", "FX to reporting", "price multiplier", "cost",
                    "price source")
CHARGE_COLUMNS = ("month", "category", "charge", "amount", "currency", "FX to reporting", "cost")
SCENARIO_COLUMNS = ("scenario", "traffic", "output length", "cache hit rate", "prices", "applied")


def _c(columns: tuple[str, ...], name: str) -> int:
    return columns.index(name) + 1


#: The column (1-based) of each name of the Plan, Variable and Charges sheets.
P = {n: _c(PLAN_COLUMNS, n) for n in PLAN_COLUMNS}
V = {n: _c(VARIABLE_COLUMNS, n) for n in VARIABLE_COLUMNS}
C = {n: _c(CHARGE_COLUMNS, n) for n in CHARGE_COLUMNS}
#: The column of the Scenarios sheet every detail row takes its price multiplier from.
MULT = _c(SCENARIO_COLUMNS, "prices")


def budget_as_xlsx(b: Budget, *, locale: str = DEFAULT_LOCALE, generated_at: datetime | None = None,
                   version: str = "", path: str | Path | None = None, compared=None) -> bytes:
    """The budget as an .xlsx file (bytes; also written to `path` when given). Every total is a
    formula over the detail rows, so editing a price, an FX rate, a GPU count or a scenario's price
    multiplier in the workbook updates the Summary. `compared` (a :class:`ledger.budget.Comparison`,
    ``ledger budget compare --xlsx``): the provenance names the run compared with and its month's
    close."""
    money = currency_format(b.currency, locale)
    wb = Workbook()
    summary = wb.active
    summary.title = "Summary"
    scenario_row = _scenarios_sheet(wb, b)  # first: the detail rows reference their price multiplier
    _plan_sheet(wb, b, locale=locale, money=money, scenario_row=scenario_row)
    _variable_sheet(wb, b, locale=locale, money=money, scenario_row=scenario_row)
    _charges_sheet(wb, b, locale=locale, money=money)
    _summary_sheet(summary, b, money=money)
    write_provenance(wb, budget_provenance(b, locale=locale, generated_at=generated_at, version=version,
                                           compared=compared))
    for ws in wb.worksheets:
        print_one_page_wide(ws)
    return saved(wb, path)


def _scenarios_sheet(wb: Workbook, b: Budget) -> dict[str, int]:
    """The Scenarios sheet; the row of each scenario."""
    sc = wb.create_sheet("Scenarios")
    header(sc, SCENARIO_COLUMNS)
    scenario_row = {}
    for i, s in enumerate(b.scenarios, 2):
        scenario_row[s.name] = i
        put(sc, i, 1, s.name)
        for j, v in enumerate((s.traffic, s.output_length, s.cache_hit_rate, s.prices), 2):
            put(sc, i, j, v, "0.00##")
        put(sc, i, 6, "traffic, output length and cache hit rate were applied when sizing and pricing; "
                      "prices is live: change it and every cost follows")
    fit_widths(sc, maximum=40)
    return scenario_row


def _plan_sheet(wb: Workbook, b: Budget, *, locale: str, money: str, scenario_row: dict[str, int]) -> None:
    """The Plan sheet: one row per pool, part, month segment and scenario; replicas, GPUs and cost as formulas."""
    plan = wb.create_sheet("Plan")
    header(plan, PLAN_COLUMNS, freeze="C2")
    pools = {p.name: p for p in b.plan.pools}
    for r, g in enumerate(b.gpu, 2):
        pool = pools[g.pool]
        for name, value in (("scenario", g.scenario), ("pool", g.pool), ("part", g.part), ("month", g.month),
                            ("from (UTC)", g.start), ("xPyD", g.xpyd),
                            ("to (UTC)", g.end), ("device", pool.device), ("region", pool.region),
                            ("purchase option", pool.purchase_option), ("sizing", g.status),
                            ("price source", g.price_ref), ("price currency", g.currency)):
            put(plan, r, P[name], value)
        put(plan, r, P["TPM (output tokens/min)"], g.tpm, INTEGER_FORMAT)
        put(plan, r, P["serving replicas"], g.serving, INTEGER_FORMAT)
        put(plan, r, P["reserve replicas"], g.reserve, INTEGER_FORMAT)
        put_formula(plan, r, P["replicas"], f"={col(P['serving replicas'])}{r}+{col(P['reserve replicas'])}{r}",
                    INTEGER_FORMAT)
        put(plan, r, P["GPUs per replica"], g.gpus_per_replica, INTEGER_FORMAT)
        put_formula(plan, r, P["GPUs"], f"={col(P['replicas'])}{r}*{col(P['GPUs per replica'])}{r}", INTEGER_FORMAT)
        put(plan, r, P["hours"], g.hours, QUANTITY_FORMAT)
        put(plan, r, P["price per GPU-hour"], g.price_per_gpu_hour, unit_cost_format(g.currency, locale))
        put(plan, r, P["FX to reporting"], g.fx, RATE_FORMAT)
        put_formula(plan, r, P["price multiplier"], f"=Scenarios!${col(MULT)}${scenario_row[g.scenario]}", "0.00##")
        put_formula(plan, r, P["cost"],
                    "=ROUND(" + "*".join(f"{col(P[n])}{r}" for n in ("GPUs", "hours", "price per GPU-hour",
                                                                      "FX to reporting", "price multiplier")) + ",6)",
                    money)
        for name, value, fmt_ in (("admission limit (requests in flight)", g.admission_limit, INTEGER_FORMAT),
                                  ("scale out at waiting requests", g.queue_scale_out, INTEGER_FORMAT),
                                  ("scale out at KV-cache usage", g.kv_scale_out, "0.0%"),
                                  ("replica tok/s", g.replica_tok_s, "#,##0.0"),
                                  ("headroom tok/s at util", g.headroom_tok_s, "#,##0.0")):
            if value is not None:
                put(plan, r, P[name], value, fmt_)
    fit_widths(plan)


def _variable_sheet(wb: Workbook, b: Budget, *, locale: str, money: str, scenario_row: dict[str, int]) -> None:
    """The Variable sheet: tokens and meters priced, one row per item, bucket, month segment and scenario."""
    var = wb.create_sheet("Variable")
    header(var, VARIABLE_COLUMNS, freeze="C2")
    for r, v in enumerate(b.variable, 2):
        for name, value in (("scenario", v.scenario), ("month", v.month), ("from (UTC)", v.start), ("to (UTC)", v.end),
                            ("category", v.category), ("item", v.item), ("bucket", v.bucket), ("unit", v.unit),
                            ("per", v.per), ("price currency", v.currency), ("price source", v.price_ref)):
            put(var, r, V[name], value)
        whole = v.quantity == v.quantity.to_integral()
        put(var, r, V["quantity"], v.quantity, INTEGER_FORMAT if whole else QUANTITY_FORMAT)
        put(var, r, V["price"], v.price, unit_cost_format(v.currency, locale))
        put(var, r, V["pers per unit"], v.per_factor, "0.##########")
        put(var, r, V["FX to reporting"], v.fx, RATE_FORMAT)
        put_formula(var, r, V["price multiplier"], f"=Scenarios!${col(MULT)}${scenario_row[v.scenario]}", "0.00##")
        put_formula(var, r, V["cost"],
                    "=ROUND(" + "*".join(f"{col(V[n])}{r}" for n in ("quantity", "pers per unit", "price",
                                                                      "FX to reporting", "price multiplier")) + ",6)",
                    money)
    fit_widths(var)


def _charges_sheet(wb: Workbook, b: Budget, *, locale: str, money: str) -> None:
    """The Charges sheet: the fixed charges of each month in the reporting currency."""
    ch = wb.create_sheet("Charges")
    header(ch, CHARGE_COLUMNS)
    for r, c in enumerate(b.charges, 2):
        put(ch, r, C["month"], c.month)
        put(ch, r, C["category"], c.category)
        put(ch, r, C["charge"], c.name)
        put(ch, r, C["amount"], c.amount, currency_format(c.currency, locale))
        put(ch, r, C["currency"], c.currency)
        put(ch, r, C["FX to reporting"], c.fx, RATE_FORMAT)
        put_formula(ch, r, C["cost"], f"=ROUND({col(C['amount'])}{r}*{col(C['FX to reporting'])}{r},6)", money)
    fit_widths(ch)


def _summary_sheet(summary, b: Budget, *, money: str) -> None:
    """One row per scenario and month, one column per category, all SUMPRODUCT formulas over the
    detail sheets (exact text equality: no criteria parsing, so a month such as 2026-10 is never
    read as a date); then one row per scenario and calendar quarter (SUM of its month rows); then
    each scenario over all months (the totals rows)."""
    n_plan, n_var, n_ch = len(b.gpu) + 1, len(b.variable) + 1, len(b.charges) + 1
    cols = ("scenario", "month", "sizing") + CATEGORIES + ("total",)
    header(summary, cols, freeze="C2")
    first_cat = 4
    last_cat = first_cat + len(CATEGORIES) - 1
    r = 2
    rows_of: dict[tuple[str, str], int] = {}
    for s in b.scenarios:
        for month in b.months:
            rows_of[(s.name, month)] = r
            put(summary, r, 1, s.name)
            put(summary, r, 2, month)
            put(summary, r, 3, b.status)
            for k, cat in enumerate(CATEGORIES):
                c = first_cat + k
                terms = [
                    f"SUMPRODUCT(({rng('Variable', V['scenario'], 2, n_var)}=$A{r})"
                    f"*({rng('Variable', V['month'], 2, n_var)}=$B{r})"
                    f"*({rng('Variable', V['category'], 2, n_var)}={col(c)}$1)"
                    f"*{rng('Variable', V['cost'], 2, n_var)})",
                    f"SUMPRODUCT(({rng('Charges', C['month'], 2, n_ch)}=$B{r})"
                    f"*({rng('Charges', C['category'], 2, n_ch)}={col(c)}$1)"
                    f"*{rng('Charges', C['cost'], 2, n_ch)})",
                ]
                if cat == "gpu":
                    terms.insert(0, f"SUMPRODUCT(({rng('Plan', P['scenario'], 2, n_plan)}=$A{r})"
                                    f"*({rng('Plan', P['month'], 2, n_plan)}=$B{r})"
                                    f"*{rng('Plan', P['cost'], 2, n_plan)})")
                put_formula(summary, r, c, "=" + "+".join(terms), money)
            put_formula(summary, r, last_cat + 1, f"=SUM({col(first_cat)}{r}:{col(last_cat)}{r})", money)
            r += 1
    last_detail = r - 1
    r += 1
    for s in b.scenarios:  # quarterly subtotals: a SUM over the quarter's month rows (adjacent: months in order)
        for q, months in b.quarters():
            put(summary, r, 1, s.name)
            put(summary, r, 2, q if len(months) == 3 else f"{q} ({len(months)} of 3 months)")
            put(summary, r, 3, b.status)
            a, z = rows_of[(s.name, months[0])], rows_of[(s.name, months[-1])]
            for c in range(first_cat, last_cat + 2):
                put_formula(summary, r, c, f"=SUM({col(c)}{a}:{col(c)}{z})", money)
            r += 1
    r += 1
    for s in b.scenarios:
        put(summary, r, 1, s.name)
        put(summary, r, 2, "all months")
        put(summary, r, 3, b.status)
        for c in range(first_cat, last_cat + 2):
            put_formula(summary, r, c, f"=SUMPRODUCT(($A$2:$A${last_detail}=$A{r})*{col(c)}$2:{col(c)}${last_detail})",
                        money)
            summary.cell(row=r, column=c).font = Font(bold=True)
        r += 1
    fit_widths(summary)
    for c in range(first_cat, last_cat + 2):
        summary.column_dimensions[col(c)].width = 16


def budget_provenance(b: Budget, *, locale: str, generated_at: datetime | None,
                      version: str, compared=None) -> list[tuple[str, object]]:
    """Where the budget's numbers came from, item by item; when it is `compared` with a run
    (``ledger budget compare --xlsx``), that run, its scenario and month, and the month's close as
    every surface says it ("closed by NAME at T, final run R" or "open")."""
    plan = b.plan
    items: list[tuple[str, object]] = [
        ("report", "forecast budget (ledger budget)"),
        ("plan", plan.name),
        ("plan file", Path(plan.path).name if plan.path else ""),
        ("plan SHA-256", plan.digest),
        ("reporting currency", plan.currency),
        ("locale", locale),
        ("months", f"{b.months[0]} to {b.months[-1]} ({len(b.months)} calendar months, UTC)"
         + (f" of the plan's {plan.months[0]} to {plan.months[-1]}" if b.months != plan.months else "")),
        ("growth", f"volumes are the plan's first month's ({plan.months[0]}), compounded monthly by their growth"),
        ("hours per month", "actual hours of each month" if plan.hours_per_month is None
         else f"{plan.hours_per_month} (fixed)"),
        ("sizing status", b.status),
        ("price books in force", [f"{ref} (retrieved {day}, SHA-256 {digest[:16]})"
                                  for ref, day, digest in b.book_details] or list(b.price_books)),
    ]
    for s in b.sizing:
        items.append((f"curve of pool {s.pool}", [f"{s.status}: {s.curve_label}", f"given as: {s.curve_ref}",
                                                  f"model {s.model or '?'} on {s.hardware or '?'}", *s.repairs]
                       + ([f"sized in parts: {s.mode}"] if s.mode != "plain" else [])
                       + ([f"prefill curve: {s.prefill_label}"] if s.prefill_label else [])))
    for p in plan.pools:
        r = p.reserves
        slas = (f"SLA {p.sla:g} tok/s/user" if p.sla is not None else
                "tiers " + "; ".join(f"{t.name} share {t.share} at {t.sla:g} tok/s/user"
                                     + (f", TTFT <= {t.ttft_ms:g} ms" if t.ttft_ms is not None else "")
                                     for t in p.tiers))
        items.append((f"pool {p.name}", [
            f"{p.device}, {p.region}, {p.purchase_option}; {p.gpus_per_replica} GPUs per replica"
            + (f" ({p.prefill_gpus_per_replica or p.gpus_per_replica} per prefill replica, curve "
               f"{p.prefill_curve_ref})" if p.prefill_curve is not None else ""),
            f"{slas}; TPM {p.tpm} in {plan.months[0]}, growth {p.growth} a month (compounding); "
            f"util {p.util:g}",
            f"reserves: failure {r.failure}, canary {r.canary}, warm {r.warm}; "
            f"{'interpolated (DRAFT)' if p.interpolate else 'measured points only (VERDICT)'}"
            f"{'; curve repaired to its upper envelope' if p.repair else ''}"]))
    items.append(("operations columns (Plan sheet, per replica)", [
        "admission limit = floor(c*): requests in flight a replica admits (none for prefill replicas)",
        "scale out at waiting requests = floor((TTFT limit - TTFT at the operating point) / 1000 x replica tok/s / "
        "tokens per request), at least 1 (1 without a TTFT limit)",
        "scale out at KV-cache usage = util x c* sequences of ISL + OSL over the KV cache (blank: a plan has no "
        "memory fit; ledger size --model-config gives it)",
        "headroom tok/s at util = (1 - util) x replica tok/s (output; input for prefill)"]))
    for t in plan.tokens:
        items.append((f"tokens {t.provider}/{t.model}", f"input {t.input_tokens} (cached share {t.cached_share}), "
                                                         f"output {t.output_tokens} a month; growth {t.growth}"))
    for m in plan.meters:
        items.append((f"meter {m.meter}/{m.sku}", f"{m.quantity} {m.unit} a month ({m.category}); growth {m.growth}"))
    for c in plan.charges:
        months = f"{' from ' + c.first if c.first else ''}{' to ' + c.last if c.last else ''}"
        items.append((f"charge {c.name}", f"{c.amount} {c.currency or plan.currency} a month ({c.category}){months}"))
    for s in b.scenarios:
        items.append((f"scenario {s.name}", f"traffic x{s.traffic}, output length x{s.output_length}, "
                                            f"cache hit rate x{s.cache_hit_rate}, prices x{s.prices}"))
    for ref, p in b.prices:
        until = f" to {iso(p.effective_to)}" if p.effective_to else ""
        items.append((f"price {ref}", f"{p.meter} {p.sku} {p.region} {p.purchase_option}: {p.price} {p.currency} per "
                                      f"{prose(p.per)}, from {iso(p.effective_from)}"
                                      f"{until}; {p.source_url}"))
    if compared is not None:
        items.append(("compared with run", f"{compared.run_id} ({compared.month}, scenario {compared.scenario}; "
                                           "ledger budget compare)"))
        items.append(("period close", "" if compared.closing is None else compared.closing.text))
    items.append(("generated at (UTC)", generated_at.isoformat() if generated_at else ""))
    items.append(("ledger version", version))
    return items
