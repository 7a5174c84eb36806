"""Why the forecast missed: each month's forecast error split into drivers (traffic, output length,
cache-hit rate, fleet, prices, and what no driver describes), in money, adding up exactly.

The split is a chain of substitutions, in the order of :data:`DRIVERS`: starting from the forecast,
one input at a time is replaced by what happened, the item is costed again at the plan's prices,
and each driver is the change in cost its substitution makes. Every cost is rounded once at the
ledger precision, so the drivers telescope to actual - forecast exactly. The method and a worked
example are in ``docs/budgets.md`` (Why the forecast missed).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal, localcontext

from ..allocate import CATEGORIES
from ..money import ZERO, quantize
from .forecast import Budget, GpuRow, VariableRow
from .plan import BudgetError, month_bounds
from .pricing import _pool_month, _Prices

#: The drivers, in the order they are substituted; `other` is what no driver describes.
DRIVERS = ("traffic", "output_length", "cache_hit_rate", "fleet", "prices", "other")
STATISTICS = ("p50", "p95", "p99", "max", "mean")


@dataclass(frozen=True)
class PoolActual:
    """What a pool served in the month, from the facts: `tpm` at the chosen statistic of the
    per-minute series [output token/min] (0: no request), `osl` the mean output tokens per request
    (None: no request), `requests`, and `gpu_seconds` of the fleet (every role) in each forecast
    segment, as ``((start, end), GPU-seconds)`` pairs."""

    pool: str
    tpm: float
    osl: float | None
    requests: int
    gpu_seconds: tuple[tuple[tuple[datetime, datetime], Decimal], ...]


@dataclass(frozen=True)
class TokenActual:
    """A provider model's tokens in the month, from the facts: `input_tokens` (cached included),
    `cached_input_tokens`, `output_tokens` [token]."""

    provider: str
    model: str
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Actuals:
    """The month's measured usage the drivers need: the TPM `statistic` (p50 | p95 | p99 | max |
    mean) the plan's TPM is set beside, per `pools` and per provider `tokens`."""

    statistic: str
    pools: tuple[PoolActual, ...]
    tokens: tuple[TokenActual, ...]


@dataclass(frozen=True)
class DriverRow:
    """One item's error split: `dimension` (pool | model | category | total), `key`, `forecast`,
    `actual`, `error` = actual - forecast, then one amount per driver (:data:`DRIVERS`), all in the
    plan currency; Σ drivers == error. `measures`: (name, planned, actual) pairs the split used."""

    dimension: str
    key: str
    forecast: Decimal
    actual: Decimal
    error: Decimal
    traffic: Decimal
    output_length: Decimal
    cache_hit_rate: Decimal
    fleet: Decimal
    prices: Decimal
    other: Decimal
    measures: tuple[tuple[str, object, object], ...] = ()

    def amounts(self) -> dict[str, Decimal]:
        return {d: getattr(self, d) for d in DRIVERS}


@dataclass(frozen=True)
class Drivers:
    """The error split of a month: `items` (a row per plan pool and per planned provider model),
    `categories` (every category: the sum of its items plus its `other`), the `total`, the TPM
    `statistic` used and `notes` (one line each: what a driver could not measure)."""

    month: str
    scenario: str
    statistic: str
    items: tuple[DriverRow, ...]
    categories: tuple[DriverRow, ...]
    total: DriverRow
    notes: tuple[str, ...] = ()


def _row(dimension: str, key: str, forecast: Decimal, actual: Decimal, steps: Sequence[Decimal], *,
         measures: tuple = ()) -> DriverRow:
    """A plan item's row from its chain: C0 (the forecast), C1 .. C4 (after traffic, output length,
    cache hit, fleet) and the actual; each driver the difference of two successive costs, prices the
    last (so they add up to actual - forecast exactly), other 0."""
    chain = [forecast, *steps, actual]
    d = [b - a for a, b in zip(chain, chain[1:])]
    return DriverRow(dimension=dimension, key=key, forecast=forecast, actual=actual, error=actual - forecast,
                     traffic=d[0], output_length=d[1], cache_hit_rate=d[2], fleet=d[3], prices=d[4], other=ZERO,
                     measures=measures)


def _gpu_cost(rows: Sequence[GpuRow], gpus: int) -> Decimal:
    """The forecast rows' cost with `gpus` GPUs in every segment (the plan's hours and prices)."""
    with localcontext() as ctx:
        ctx.prec = 60
        return sum((quantize(Decimal(gpus) * g.hours * g.price_per_gpu_hour * g.fx * g.price_multiplier)
                    for g in rows), ZERO)


def _segments(rows: Sequence[GpuRow]) -> list[GpuRow]:
    """The first row of each time segment: a pool with tiers or prefill/decode parts has one row per
    part in a segment, and the pool's GPUs are the sum over them."""
    seen: set = set()
    return [g for g in rows if not ((g.start, g.end) in seen or seen.add((g.start, g.end)))]


def _gpus(rows: Sequence[GpuRow]) -> int:
    """The pool's GPUs in its first segment, all parts together."""
    return sum(g.gpus for g in rows if (g.start, g.end) == (rows[0].start, rows[0].end))


def _resized(b: Budget, index, pool, month: str, scenario: str, tpm_ratio: Decimal) -> tuple[int, Decimal]:
    """(GPUs, cost) of the pool sized and priced as the budget does (its own ``_pool_month``, so
    every rule of the plan's sizing applies), at the scenario's traffic x `tpm_ratio`."""
    sc = b.plan.scenario(scenario)
    problems: list[str] = []
    start, end = month_bounds(month)
    scaled = replace(sc, traffic=sc.traffic * tpm_ratio)
    rows = _pool_month(b.plan, pool, scaled, b.plan.months.index(month), month, start, end,
                       _Prices(index, b.currency, problems), {}, {}, problems)
    if problems or not rows:
        raise BudgetError(problems or [f"pool {pool.name}: cannot size {month} at the actual traffic"])
    return _gpus(rows), sum((g.cost for g in rows), ZERO)


def _pool_row(b: Budget, index, pool, month: str, scenario: str, rows: Sequence[GpuRow], got: PoolActual | None,
              actual: Decimal, notes: list[str]) -> DriverRow:
    c0 = sum((g.cost for g in rows), ZERO)
    tpm_f = rows[0].tpm
    osl_f = pool.osl if pool.osl is not None else pool.curve.context.osl
    tpm_a = got.tpm if got else 0.0
    osl_a = got.osl if got else None
    reserve_gpus = pool.reserves.total * pool.gpus_per_replica
    if tpm_a <= 0:
        notes.append(f"pool {pool.name}: no request in {month}: sized with its reserves only at the actual traffic")
        g1 = g2 = reserve_gpus
        c1 = c2 = _gpu_cost(_segments(rows), reserve_gpus)
    else:
        with localcontext() as ctx:
            ctx.prec = 60
            whole = Decimal(repr(tpm_a)) / Decimal(repr(tpm_f))
            if osl_f and osl_a:
                r_o = Decimal(repr(osl_a)) / Decimal(repr(osl_f))
            else:
                r_o = Decimal(1)
                notes.append(f"pool {pool.name}: no planned output length (neither the pool's osl nor its curve's): "
                             "the whole change of TPM counts as traffic")
            r_t = whole / r_o
        g1, c1 = _resized(b, index, pool, month, scenario, r_t)
        g2, c2 = _resized(b, index, pool, month, scenario, whole)
    fleet = dict(got.gpu_seconds) if got else {}
    with localcontext() as ctx:
        ctx.prec = 60
        c4 = sum((quantize(Decimal(fleet.get((g.start, g.end), 0)) / 3600 * g.price_per_gpu_hour * g.fx
                           * g.price_multiplier) for g in rows), ZERO)
        hours_f = sum((g.gpus * g.hours for g in rows), ZERO)
        hours_a = Decimal(sum(fleet.values())) / 3600
    measures = (("tpm", tpm_f, tpm_a), ("osl", osl_f, osl_a), ("gpus", _gpus(rows), g2),
                ("gpu_hours", hours_f, quantize(hours_a)), ("gpus_at_traffic", _gpus(rows), g1))
    return _row("pool", pool.name, c0, actual, [c1, c2, c2, c4], measures=measures)


def _token_cost(rows: Sequence[VariableRow], target: dict[str, Decimal], planned: dict[str, Decimal]) -> Decimal:
    """The forecast rows' cost with each bucket's quantity scaled to `target` (a bucket the plan
    has no tokens in has no planned price: it costs nothing here, and its actual cost counts as prices)."""
    with localcontext() as ctx:
        ctx.prec = 60
        return sum((quantize(v.quantity * (target[v.bucket] / planned[v.bucket]) * v.per_factor * v.price * v.fx
                             * v.price_multiplier) for v in rows if planned[v.bucket]), ZERO)


def _token_row(key: str, rows: Sequence[VariableRow], got: TokenActual | None, actual: Decimal,
               notes: list[str]) -> DriverRow:
    planned = {"uncached_input": ZERO, "cached_input": ZERO, "output": ZERO}
    for v in rows:
        planned[v.bucket] += v.quantity
    c0 = sum((v.cost for v in rows), ZERO)
    i_f = planned["uncached_input"] + planned["cached_input"]
    i_a, c_a, o_a = (Decimal(got.input_tokens), Decimal(got.cached_input_tokens), Decimal(got.output_tokens)) \
        if got else (ZERO, ZERO, ZERO)
    with localcontext() as ctx:
        ctx.prec = 60
        t = i_a / i_f if i_f else (o_a / planned["output"] if planned["output"] else Decimal(1))
        step1 = {b: q * t for b, q in planned.items()}
        step2 = {**step1, "output": o_a}
        step3 = {"uncached_input": i_a - c_a, "cached_input": c_a, "output": o_a}
    for b, q in step3.items():
        if q and not planned[b]:
            notes.append(f"{key}: the plan has no {b.replace('_', ' ')} tokens, hence no planned price for them: "
                         "their actual cost counts as prices")
    c1, c2, c3 = (_token_cost(rows, s, planned) for s in (step1, step2, step3))
    share = (lambda c, i: quantize(c / i, Decimal("0.0001")) if i else None)
    measures = (("input_tokens", i_f, i_a), ("cached_share", share(planned["cached_input"], i_f), share(c_a, i_a)),
                ("output_tokens", planned["output"], o_a))
    return _row("model", key, c0, actual, [c1, c2, c3, c3], measures=measures)


def explain(b: Budget, *, month: str, scenario: str, lines: Iterable, actuals: Actuals, index) -> Drivers:
    """The forecast error of `month` (scenario `scenario`) against the run's `lines` split into
    :data:`DRIVERS` per plan pool, per planned provider model, per category and in total.
    `index` is the PriceIndex the budget was priced with (the pools are sized again with it)."""
    lines = list(lines)
    notes: list[str] = []
    by_cat_actual: dict[str, Decimal] = defaultdict(Decimal)
    pool_actual: dict[str, Decimal] = defaultdict(Decimal)
    model_actual: dict[str, Decimal] = defaultdict(Decimal)
    for ln in lines:
        by_cat_actual[ln.category] += ln.amount
        if ln.category == "gpu" and ln.pool:
            pool_actual[ln.pool] += ln.amount
        if ln.category == "provider_tokens" and ln.provider and ln.model:
            model_actual[f"{ln.provider}/{ln.model}"] += ln.amount
    pools = {p.pool: p for p in actuals.pools}
    toks = {f"{t.provider}/{t.model}": t for t in actuals.tokens}
    items: list[DriverRow] = []
    for pool in b.plan.pools:
        rows = [g for g in b.gpu if g.scenario == scenario and g.month == month and g.pool == pool.name]
        if rows:
            items.append(_pool_row(b, index, pool, month, scenario, rows, pools.get(pool.name),
                                   pool_actual.get(pool.name, ZERO), notes))
    keys = list(dict.fromkeys(f"{t.provider}/{t.model}" for t in b.plan.tokens))
    for key in keys:
        rows = [v for v in b.variable if v.scenario == scenario and v.month == month
                and v.category == "provider_tokens" and v.item == key]
        if rows:
            items.append(_token_row(key, rows, toks.get(key), model_actual.get(key, ZERO), notes))
    forecast = b.by_category(scenario, month)
    cats = []
    for c in CATEGORIES:
        mine = [r for r in items if (c, r.dimension) in (("gpu", "pool"), ("provider_tokens", "model"))]
        f, a = forecast.get(c, ZERO), by_cat_actual.get(c, ZERO)
        sums = {d: sum((getattr(r, d) for r in mine), ZERO) for d in DRIVERS}
        sums["other"] = (a - f) - sum((r.error for r in mine), ZERO)
        cats.append(DriverRow(dimension="category", key=c, forecast=f, actual=a, error=a - f, **sums))
    total = DriverRow(dimension="total", key="total", forecast=sum((r.forecast for r in cats), ZERO),
                      actual=sum((r.actual for r in cats), ZERO), error=sum((r.error for r in cats), ZERO),
                      **{d: sum((getattr(r, d) for r in cats), ZERO) for d in DRIVERS})
    for r in (*items, *cats, total):
        if sum(r.amounts().values(), ZERO) != r.error:  # by construction; never a silent mismatch
            raise BudgetError(f"internal: the drivers of {r.dimension} {r.key} do not add up to its error")
    return Drivers(month=month, scenario=scenario, statistic=actuals.statistic, items=tuple(items),
                   categories=tuple(cats), total=total, notes=tuple(dict.fromkeys(notes)))
