"""Pricing a plan month by month under scenarios: replicas sized per pool, usage and charges priced into lines."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext

from .. import units
from ..hints import Hinted
from ..money import quantize, split
from ..pricebook import NoPriceError, Price, PriceIndex
from ..sizing import DRAFT, VERDICT, SizingError, SizingRequest, price_per_gpu_hour, size
from ..sizing.tiers import PoolRequest, Tier, size_parts
from .forecast import Budget, ChargeRow, GpuRow, PoolSizing, PriceUse, VariableRow
from .plan import BudgetError, Plan, PoolPlan, Scenario, month_bounds

#: Quantities (tokens, calls, GB, hours) are kept at this precision; money at the ledger's 1e-6.
QUANTITY_EXP = Decimal("0.000001")
TOKEN_BUCKETS = (("uncached_input", "input_tokens"), ("cached_input", "cached_input_tokens"),
                 ("output", "output_tokens"))


def _shares(total: Decimal, segments: Sequence[tuple[datetime, datetime, object]]) -> list[Decimal]:
    """`total` split over the segments in proportion to their seconds, at 1e-6 by largest remainder,
    so the parts add up to exactly `total` (one segment: all of it)."""
    if len(segments) <= 1:
        return [total] * len(segments)
    secs = [int((b - a).total_seconds()) for a, b, _ in segments]
    parts = split(quantize(total, QUANTITY_EXP), list(enumerate(secs)), QUANTITY_EXP)
    return [parts[i] for i in range(len(secs))]


def _month_hours(plan: Plan, start: datetime, end: datetime) -> Decimal:
    """The hours of a month: its actual hours (24 x days, UTC has no daylight saving) or the plan's fixed hours."""
    if plan.hours_per_month is not None:
        return plan.hours_per_month
    return Decimal(int((end - start).total_seconds())) / 3600


def _growth(g: Decimal, m: int) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return (1 + g) ** m


class _Prices:
    """Price and FX lookups in the plan currency, collecting problems instead of stopping."""

    def __init__(self, index: PriceIndex, currency: str, problems: list[str]):
        self.index, self.currency, self.problems = index, currency, problems
        self.used: dict[str, Price] = {}
        self._missing: set[tuple] = set()
        self._fx_instants = sorted({t for b in index.books for r in b.fx
                                    for t in (r.effective_from, r.effective_to) if t is not None})

    def segments(self, start: datetime, end: datetime, *, meter: str, sku: str, region: str,
                 purchase_option: str) -> list[tuple[datetime, datetime, PriceUse]]:
        """``[start, end)`` cut where the price in force (or its FX rate) changes: (from, to, price)
        for each part, adjacent parts with the same price and rate merged. Empty when no price."""
        changes = self.index.changes(meter=meter, sku=sku, region=region, purchase_option=purchase_option)
        cuts = sorted({start, end, *(t for t in changes + self._fx_instants if start < t < end)})
        out: list[tuple[datetime, datetime, PriceUse]] = []
        for a, b in zip(cuts, cuts[1:]):
            use = self.at(meter=meter, sku=sku, region=region, purchase_option=purchase_option, at=a)
            if use is None:
                return []
            if out and (out[-1][2].ref, out[-1][2].fx) == (use.ref, use.fx):
                out[-1] = (out[-1][0], b, out[-1][2])
            else:
                out.append((a, b, use))
        return out

    def at(self, *, meter: str, sku: str, region: str, purchase_option: str, at: datetime) -> PriceUse | None:
        try:
            p = self.index.price_at(meter=meter, sku=sku, region=region, purchase_option=purchase_option, at=at)
            fx = self.index.fx_rate(p.currency, self.currency, at)
        except NoPriceError as e:
            key = (meter, sku, region, purchase_option)
            if key not in self._missing:  # one line per missing price, at the first instant it is needed
                self._missing.add(key)
                self.problems.append(str(e))
            return None
        ref = f"{p.book}@{p.version} price[{p.entry}]"
        self.used[ref] = p
        return PriceUse(price=p.price, per=p.per, currency=p.currency, fx=fx, ref=ref, source_url=p.source_url,
                        effective_from=p.effective_from)


def budget(plan: Plan, index: PriceIndex, *, scenarios: Sequence[str] | None = None,
           generated_at: datetime | None = None) -> Budget:
    """Size and price `plan` for every month and scenario (all of the plan's when None).

    Raises BudgetError with one line per problem: a scenario not in the plan, a pool the sizing
    engine cannot size (naming the pool, month and scenario), a price or FX rate not in force.
    """
    chosen = tuple(plan.scenario(s) for s in (scenarios or [s.name for s in plan.scenarios]))
    problems: list[str] = []
    prices = _Prices(index, plan.currency, problems)
    gpu: list[GpuRow] = []
    variable: list[VariableRow] = []
    sizing: dict[str, PoolSizing] = {}
    cache: dict[tuple, tuple] = {}
    for sc in chosen:
        for m, month in enumerate(plan.months):
            start, end = month_bounds(month)
            for pool in plan.pools:
                row = _pool_month(plan, pool, sc, m, month, start, end, prices, cache, sizing, problems)
                gpu.extend(row)
            variable.extend(_tokens_month(plan, sc, m, month, start, end, prices))
            variable.extend(_meters_month(plan, sc, m, month, start, end, prices, problems))
    charges = _charges(plan, prices)
    if problems:
        raise BudgetError(problems)
    status = DRAFT if any(s.status == DRAFT for s in sizing.values()) else VERDICT
    return Budget(plan=plan, scenarios=chosen, gpu=tuple(gpu), variable=tuple(variable), charges=tuple(charges),
                  status=status, sizing=tuple(sizing[p.name] for p in plan.pools if p.name in sizing),
                  prices=tuple(sorted(prices.used.items())), price_books=tuple(index.refs), generated_at=generated_at,
                  book_details=tuple((bk.ref, bk.retrieved_at.isoformat(), bk.digest) for bk in index.books))


def _units(pool: PoolPlan, tpm: float) -> tuple[str, tuple[dict, ...], object]:
    """Size a pool at `tpm`: (status, one dict of GpuRow fields per group of replicas, the result).
    A plain pool is one group (serving + reserve); a pool in parts has one group per tier and role
    and one per role's reserves. Raises SizingError."""
    if not pool.in_parts:
        req = SizingRequest(tpm=tpm, slas=(pool.sla,), gpus_per_replica=pool.gpus_per_replica, util=pool.util,
                            reserves=pool.reserves, interpolate=pool.interpolate, ttft_limit_ms=pool.ttft_ms,
                            isl=pool.isl, osl=pool.osl, repair=pool.repair)
        res = size(pool.curve, req)
        row = res.rows[0]
        o = row.ops
        return res.status, ({"part": "", "tpm": tpm, "serving": row.replicas_serving, "reserve": row.replicas_reserve,
                             "gpus_per_replica": pool.gpus_per_replica, "admission_limit": o.admission_limit,
                             "queue_scale_out": o.queue_scale_out, "kv_scale_out": o.kv_scale_out,
                             "replica_tok_s": o.capacity_tok_s, "headroom_tok_s": o.headroom_tok_s},), res
    tiers = pool.tiers or (Tier(name="", share=Decimal(1), sla=pool.sla),)
    req = PoolRequest(tpm=tpm, tiers=tiers, gpus_per_replica=pool.gpus_per_replica, util=pool.util,
                      reserves=pool.reserves, interpolate=pool.interpolate, ttft_limit_ms=pool.ttft_ms, isl=pool.isl,
                      osl=pool.osl, repair=pool.repair, prefill_gpus_per_replica=pool.prefill_gpus_per_replica)
    res = size_parts(pool.curve, req, prefill=pool.prefill_curve)
    ratio = res.ratio or ""
    units = [{"part": " ".join(x for x in (p.tier, p.role if p.role != "serving" else "") if x), "tpm": p.tpm,
              "serving": p.replicas, "reserve": 0, "gpus_per_replica": p.gpus_per_replica,
              "admission_limit": p.ops.admission_limit, "queue_scale_out": p.ops.queue_scale_out,
              "kv_scale_out": p.ops.kv_scale_out, "replica_tok_s": p.ops.capacity_tok_s,
              "headroom_tok_s": p.ops.headroom_tok_s, "xpyd": ratio if p.role != "serving" else ""}
             for p in res.parts]
    for role in dict.fromkeys(r.role for r in res.reserves):
        rows = [r for r in res.reserves if r.role == role]
        units.append({"part": "reserve" if role == "serving" else f"{role} reserve", "tpm": tpm, "serving": 0,
                      "reserve": sum(r.replicas for r in rows), "gpus_per_replica": rows[0].gpus_per_replica,
                      "xpyd": ratio if role != "serving" else ""})
    return res.status, tuple(units), res


def _pool_month(plan, pool: PoolPlan, sc: Scenario, m: int, month: str, start: datetime, end: datetime,
                prices: _Prices, cache: dict, sizing: dict, problems: list[str]) -> list[GpuRow]:
    with localcontext() as ctx:
        ctx.prec = 60
        tpm = float(pool.tpm * _growth(pool.growth, m) * sc.traffic * sc.output_length)
    key = (pool.name, tpm)
    if key not in cache:
        try:
            cache[key] = _units(pool, tpm)
        except SizingError as e:
            cache[key] = None
            for p in e.problems:
                problems.append(Hinted(f"pool {pool.name}, {month}, scenario {sc.name} (TPM {tpm:,.0f}): ", p))
    if cache[key] is None:
        return []
    status, units, res = cache[key]
    if pool.name not in sizing:
        ctx_ = res.curve.context
        mode = ", ".join(x for x in ("tiers" if pool.tiers else "",
                                     "disaggregated" if pool.prefill_curve is not None else "") if x) or "plain"
        sizing[pool.name] = PoolSizing(pool=pool.name, curve_ref=pool.curve_ref, curve_label=res.curve.label,
                                       status=status, repairs=res.repairs, hardware=ctx_.hardware, model=ctx_.model,
                                       mode=mode, prefill_label=res.prefill_curve.label
                                       if getattr(res, "prefill_curve", None) is not None else "")
    segs = prices.segments(start, end, meter="gpu_time", sku=pool.device, region=pool.region,
                           purchase_option=pool.purchase_option)
    out = []
    for (a, b, use), hours in zip(segs, _shares(_month_hours(plan, start, end), segs)):
        per_hour = price_per_gpu_hour(use.price, use.per)
        for u in units:
            replicas = u["serving"] + u["reserve"]
            gpus = replicas * u["gpus_per_replica"]
            with localcontext() as ctx:
                ctx.prec = 60
                cost = quantize(Decimal(gpus) * hours * per_hour * use.fx * sc.prices)
            out.append(GpuRow(scenario=sc.name, pool=pool.name, month=month, start=a, end=b, tpm=u["tpm"],
                              status=status, serving=u["serving"], reserve=u["reserve"], replicas=replicas,
                              gpus_per_replica=u["gpus_per_replica"], gpus=gpus, hours=hours,
                              price_per_gpu_hour=per_hour, currency=use.currency, fx=use.fx,
                              price_multiplier=sc.prices, cost=cost, price_ref=use.ref, part=u["part"],
                              admission_limit=u.get("admission_limit"), queue_scale_out=u.get("queue_scale_out"),
                              kv_scale_out=u.get("kv_scale_out"), replica_tok_s=u.get("replica_tok_s"),
                              headroom_tok_s=u.get("headroom_tok_s"), xpyd=u.get("xpyd", "")))
    return out


@dataclass(frozen=True)
class _Usage:
    """One item of a month's usage to price: its `category`, `item` (provider/model, meter/sku) and
    `bucket`, the `quantity` in `unit`, the price key (`meter`, `sku`, `region`), and for a price
    tiered by request size the input tokens per request `tier_tokens` (None: not tiered)."""

    category: str
    item: str
    bucket: str
    quantity: Decimal
    unit: str
    meter: str
    sku: str
    region: str
    tier_tokens: int | None = None


def _usage_rows(sc: Scenario, month: str, span: tuple[datetime, datetime], prices: _Prices, u: _Usage,
                problems: list[str] | None = None) -> list[VariableRow]:
    """The usage `u` of `month` priced in each segment of `span` with its own price (a unit that
    the price cannot take is a problem when `problems` collects them, else skipped)."""
    if u.quantity == 0:
        return []
    start, end = span
    segs = prices.segments(start, end, meter=u.meter, sku=u.sku, region=u.region, purchase_option="*")
    out = []
    for (a, b, use), qty in zip(segs, _shares(u.quantity, segs)):
        price = use.price
        if u.tier_tokens is not None:
            p = prices.used[use.ref]
            price = p.price_for_request(u.tier_tokens)
        try:
            f = units.factor(u.unit, use.per)
        except units.UnitError as e:
            if problems is not None:
                problems.append(f"{u.item}: quantity in {u.unit!r} cannot be priced per {use.per!r} ({e})")
            continue
        with localcontext() as ctx:
            ctx.prec = 60
            cost = quantize(qty * f * price * use.fx * sc.prices)
        out.append(VariableRow(scenario=sc.name, month=month, start=a, end=b, category=u.category, item=u.item,
                               bucket=u.bucket, quantity=qty, unit=u.unit, price=price, per=use.per,
                               currency=use.currency, per_factor=f, fx=use.fx, price_multiplier=sc.prices,
                               cost=cost, price_ref=use.ref))
    return out


def _tokens_month(plan: Plan, sc: Scenario, m: int, month: str, start, end, prices: _Prices) -> list[VariableRow]:
    out = []
    for tf in plan.tokens:
        with localcontext() as ctx:
            ctx.prec = 60
            g = _growth(tf.growth, m)
            inp = quantize(tf.input_tokens * g * sc.traffic, QUANTITY_EXP)
            cached = quantize(inp * tf.cached_share * sc.cache_hit_rate, QUANTITY_EXP)
            outp = quantize(tf.output_tokens * g * sc.traffic * sc.output_length, QUANTITY_EXP)
        for (bucket, meter), qty in zip(TOKEN_BUCKETS, (inp - cached, cached, outp)):
            out += _usage_rows(sc, month, (start, end), prices, _Usage(
                category="provider_tokens", item=f"{tf.provider}/{tf.model}", bucket=bucket, quantity=qty,
                unit="token", meter=meter, sku=tf.model, region=tf.region, tier_tokens=tf.input_tokens_per_request))
    return out


def _meters_month(plan: Plan, sc: Scenario, m: int, month: str, start, end, prices: _Prices,
                  problems: list[str]) -> list[VariableRow]:
    out = []
    for mf in plan.meters:
        with localcontext() as ctx:
            ctx.prec = 60
            qty = quantize(mf.quantity * _growth(mf.growth, m) * sc.traffic, QUANTITY_EXP)
        out += _usage_rows(sc, month, (start, end), prices, _Usage(
            category=mf.category, item=f"{mf.meter}/{mf.sku}", bucket=mf.meter, quantity=qty, unit=mf.unit,
            meter=mf.meter, sku=mf.sku, region=mf.region), problems)
    return out


def _charges(plan: Plan, prices: _Prices) -> list[ChargeRow]:
    out = []
    for month in plan.months:
        start, _ = month_bounds(month)
        for c in plan.charges:
            if (c.first and month < c.first) or (c.last and month > c.last):
                continue
            currency = c.currency or plan.currency
            try:
                fx = prices.index.fx_rate(currency, plan.currency, start)
            except NoPriceError as e:
                if str(e) not in prices.problems:
                    prices.problems.append(f"charge {c.name}: {e}")
                continue
            out.append(ChargeRow(month=month, category=c.category, name=c.name, amount=c.amount, currency=currency,
                                 fx=fx, cost=quantize(c.amount * fx)))
    return out
