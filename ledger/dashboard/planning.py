"""Sizing and budgets for the dashboard: plans, curves, GPU prices, sizing, budget frames, forecast vs actual."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pandas as pd
from sqlmodel import Session

from .. import config, runs
from ..allocate import CATEGORIES
from ..budget import Budget, BudgetError, Comparison, Plan, compare, parse_plan
from ..pricebook import Book, PriceIndex, load_books
from ..sizing import (Curve, SizingError, SizingResult, load_curve, merge_curves, parse_curves, price_per_gpu_hour,
                      select_curve, sizing_as_dict)
from ..sizing.service import PriceSpec, SizingJob, default, run
from .economics import _d
from .prices import PriceBooks
from .state import period_name

EXAMPLES_DIR = config.project_root() / "examples"

# ---- sizing -------------------------------------------------------------------------------------

def example_plans() -> list[Path]:
    """The plans shipped in ``examples/`` (TOML files with a [plan] table)."""
    if not EXAMPLES_DIR.is_dir():
        return []
    return [p for p in sorted(EXAMPLES_DIR.glob("*.toml")) if "[plan]" in p.read_text(encoding="utf-8")]


def read_plan(text: str, name: str, *, base_dir: str | Path) -> Plan:
    """A plan from its TOML text (curve files resolve against `base_dir`); BudgetError listing
    every problem otherwise."""
    plan, problems = parse_plan(text, name, base_dir=base_dir)
    if problems or plan is None:
        raise BudgetError(problems or [f"{name}: not a plan"])
    return plan


def curve_from_files(files: Sequence[tuple[str, bytes]], *, fmt: str = "auto", select: str | None = None) -> Curve:
    """One curve from uploaded result files (name, bytes): each file read in `fmt` (or detected),
    `select` picking among several curves of a file, several files merged into one curve (one
    file per load level). SizingError naming the file otherwise."""
    picked = []
    for name, content in files:
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            raise SizingError([f"{name}: not UTF-8 text"]) from None
        picked.append(select_curve(parse_curves(text, source=name, fmt=fmt), select or None, where=name))
    if not picked:
        raise SizingError(["no curve file given"])
    return merge_curves(picked)


def curve_from_anchors(text: str) -> Curve:
    return load_curve(text, "anchors")


def curve_points_frame(curve: Curve) -> pd.DataFrame:
    """The measured points: concurrency, tok_s_user, output_tok_s (None when not measured), ttft_ms."""
    rows = [{"concurrency": p.concurrency, "tok_s_user": p.tok_s_user, "output_tok_s": p.output_tok_s,
             "ttft_ms": p.ttft_ms} for p in curve.points]
    return pd.DataFrame(rows, columns=["concurrency", "tok_s_user", "output_tok_s", "ttft_ms"])


def gpu_prices_frame(books: Sequence[Book], at: datetime) -> pd.DataFrame:
    """GPU-time prices in force at `at`: device (sku), region, purchase_option, price, per,
    currency, per_gpu_hour (Decimal), book, version, source_url."""
    rows = []
    for p in PriceIndex(books).in_force(at, meter="gpu_time"):
        try:
            per_hour = price_per_gpu_hour(p.price, p.per)
        except SizingError:
            continue
        rows.append({"device": p.sku, "region": p.region, "purchase_option": p.purchase_option, "price": p.price,
                     "per": p.per, "currency": p.currency, "per_gpu_hour": per_hour, "book": p.book,
                     "version": p.version, "source_url": p.source_url})
    return pd.DataFrame(rows, columns=["device", "region", "purchase_option", "price", "per", "currency",
                                       "per_gpu_hour", "book", "version", "source_url"])


def size_fleet(job: SizingJob) -> SizingResult:
    """``ledger size``: the sizing service (:func:`ledger.sizing.service.run`) on `job`, the sized and
    priced result. Raises SizingError (or NoPriceError) with the reason."""
    return run(job).result


def sizing_defaults() -> dict:
    """What ``ledger size`` assumes when an option is not given: the sizing job's own defaults
    (:class:`~ledger.sizing.service.SizingJob`, the command's options take them too): util, the
    failure / canary / warm reserves (replicas), interpolate, repair, the TTFT limit (None: none),
    and the hours per month a price is billed for."""
    reserves = default(SizingJob, "reserves")
    return {"util": default(SizingJob, "util"), "failure": reserves.failure, "canary": reserves.canary,
            "warm": reserves.warm, "interpolate": default(SizingJob, "interpolate"),
            "repair": default(SizingJob, "repair"), "ttft_ms": default(SizingJob, "ttft_limit_ms"),
            "hours_per_month": default(PriceSpec, "hours_per_month")}


SIZING_COLUMNS = ["sla_tok_s_user", "c_star", "c_star_measured", "tok_s_user", "replica_output_tok_s",
                  "throughput_basis", "limited_by", "replicas_serving", "replicas_reserve", "replicas", "gpus",
                  "monthly_cost", "capacity_tokens_per_gpu_s"]


def sizing_frame(result: SizingResult) -> pd.DataFrame:
    """The SLA-first table (the rows of ``ledger size --json``), monthly_cost as Decimal or None."""
    doc = sizing_as_dict(result)
    rows = [{**r, "monthly_cost": _d(r["monthly_cost"])} for r in doc["rows"]]
    return pd.DataFrame(rows, columns=SIZING_COLUMNS)


def sizing_context(result: SizingResult) -> list[str]:
    """The lines ``ledger size`` prints above its table: mode, curve, workload, limits, price."""
    from ..sizing.report import context_lines

    return context_lines(result)


# ---- budgets ------------------------------------------------------------------------------------

def plan_books(plan: Plan, fallback: PriceBooks) -> PriceBooks:
    """The books a plan is priced with: the plan's own `pricebooks`, else `fallback` (the ledger's,
    else the shipped folder), as ``ledger budget`` does."""
    if not plan.pricebooks:
        return fallback
    books, problems = load_books(list(plan.pricebooks))
    if problems:
        raise BudgetError([str(p) for p in problems])
    return PriceBooks(tuple(books), "plan", f"the plan's price books ({', '.join(map(str, plan.pricebooks))})")


def budget_months_frame(b: Budget) -> pd.DataFrame:
    """Month by month per scenario (``ledger budget --json`` summary): scenario, month, one Decimal
    column per category, total."""
    from ..budget.render import budget_as_json

    doc = budget_as_json(b)
    rows = [{"scenario": s["scenario"], "month": s["month"], **{c: Decimal(v) for c, v in s["by_category"].items()},
             "total": Decimal(s["total"])} for s in doc["summary"]]
    return pd.DataFrame(rows, columns=["scenario", "month", *CATEGORIES, "total"])


def budget_totals_frame(b: Budget) -> pd.DataFrame:
    """Per scenario over the plan's months: scenario, one Decimal column per category, total."""
    from ..budget.render import budget_as_json

    doc = budget_as_json(b)
    rows = [{"scenario": name, **{c: Decimal(v) for c, v in t["by_category"].items()}, "total": Decimal(t["total"])}
            for name, t in doc["totals"].items()]
    return pd.DataFrame(rows, columns=["scenario", *CATEGORIES, "total"])


def budget_pools_frame(b: Budget) -> pd.DataFrame:
    """GPUs per pool, month and scenario (a month split where a price changes; a pool in parts, one
    row per tier / prefill / decode / reserve): scenario, pool, month, from, to, status, tpm,
    replicas_serving, replicas_reserve, gpus, hours, price_per_gpu_hour, cost (Decimal), price_source,
    part, xpyd, and per replica admission_limit, queue_scale_out, headroom_tok_s (None on reserve rows)."""
    rows = [{"scenario": g.scenario, "pool": g.pool, "month": g.month, "from": g.start, "to": g.end,
             "status": g.status, "tpm": g.tpm, "replicas_serving": g.serving, "replicas_reserve": g.reserve,
             "gpus": g.gpus, "hours": g.hours, "price_per_gpu_hour": g.price_per_gpu_hour, "currency": g.currency,
             "cost": g.cost, "price_source": g.price_ref, "part": g.part, "xpyd": g.xpyd,
             "admission_limit": g.admission_limit, "queue_scale_out": g.queue_scale_out,
             "headroom_tok_s": g.headroom_tok_s} for g in b.gpu]
    return pd.DataFrame(rows, columns=["scenario", "pool", "month", "from", "to", "status", "tpm", "replicas_serving",
                                       "replicas_reserve", "gpus", "hours", "price_per_gpu_hour", "currency", "cost",
                                       "price_source", "part", "xpyd", "admission_limit", "queue_scale_out",
                                       "headroom_tok_s"])


def budget_workbook(b: Budget, *, locale: str) -> bytes:
    """The budget workbook of ``ledger budget PLAN --xlsx`` (live formulas, provenance sheet)."""
    from ..export.budget_xlsx import budget_as_xlsx

    return budget_as_xlsx(b, locale=locale, generated_at=b.generated_at or datetime.now(timezone.utc),
                          version=runs.code_version())


def forecast_vs_actual(b: Budget, s: Session, *, run_id: str, scenario: str = "base", index: PriceIndex | None = None,
                       home: Path | None = None, statistic: str = "p99") -> Comparison:
    """``ledger budget compare``: the plan's month of the run's period beside the run's lines, with
    the error split into drivers when the PriceIndex the budget was priced with is given (the
    month's usage read from the facts of `home`, at the TPM `statistic`, as the command's
    ``--percentile``). BudgetError when the run is not a calendar month of the plan, or not in the
    plan's currency."""
    from ..budget.usage import month_actuals

    stored = runs.load_run(s, run_id=run_id)
    month = period_name(stored.run.period_start, stored.run.period_end)
    actuals = None
    if index is not None and month in b.plan.months:
        actuals = month_actuals(s, b, month=month, scenario=scenario, statistic=statistic, home=home)
    return compare(b, month=month, lines=stored.lines, run_id=stored.run.id, run_currency=stored.run.currency,
                   price_books=stored.summary.get("price_books", []), scenario=scenario, actuals=actuals,
                   index=index)


def drivers_frame(c: Comparison, places: int = 2) -> pd.DataFrame | None:
    """Why the forecast missed (``ledger budget compare``'s drivers table), as printed: a row per
    `driver` (the error first), a column per plan pool and provider model, `other` and `total`, Decimal
    cells display-rounded to `places` so that every column adds up to its error and every row to its
    total (:func:`ledger.budget.render.drivers_display`). None without drivers."""
    from ..budget.render import drivers_display

    if c.drivers is None:
        return None
    columns = [*(r.key for r in c.drivers.items), "other", "total"]
    rows = [{"driver": name, **dict(zip(columns, values))} for name, values in drivers_display(c.drivers, places)]
    return pd.DataFrame(rows, columns=["driver", *columns])


def drivers_notes(c: Comparison) -> list[str]:
    """The lines under the CLI's drivers table: what was set beside the plan per item, what `other`
    holds, and the notes."""
    from ..budget.render import drivers_notes as notes

    return [] if c.drivers is None else [t.plain for t in notes(c.drivers)]


def comparison_frame(c: Comparison, places: int = 2) -> pd.DataFrame:
    """Forecast vs actual per category, per pool and in total (``ledger budget compare --json``):
    dimension, key, forecast, actual, error = actual - forecast (Decimal), relative_error
    (Decimal or None) and the reason when it is undefined; then `forecast_shown`, `actual_shown` and
    `error_shown`, the three as printed at `places` decimals (display rounding: the categories add up
    to the total row, and an error is its printed actual minus its printed forecast,
    :func:`ledger.budget.render.comparison_display`)."""
    from ..budget.render import comparison_display

    shown = comparison_display(c, places)
    rows = [{"dimension": r.dimension, "key": r.key, "forecast": r.forecast, "actual": r.actual, "error": r.error,
             "relative_error": r.relative, "reason": r.reason, "forecast_shown": shown[(r.dimension, r.key)][0],
             "actual_shown": shown[(r.dimension, r.key)][1],
             "error_shown": shown[(r.dimension, r.key)][1] - shown[(r.dimension, r.key)][0]}
            for r in (*c.rows, c.total)]
    return pd.DataFrame(rows, columns=["dimension", "key", "forecast", "actual", "error", "relative_error", "reason",
                                       "forecast_shown", "actual_shown", "error_shown"])
