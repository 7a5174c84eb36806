"""Pricing of resources: price and FX lookups, the fleet's GPU-hours, provider tokens and meters (§4.1)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext
from functools import lru_cache

import duckdb

from .. import units
from ..facts import RESERVE_ROLES
from ..money import ZERO, quantize
from ..pricebook import NoPriceError, Price, PriceIndex
from ..vocab import Category
from .records import FALLBACK_METERS, HOUR_US, REASONING_METER, TOKEN_BUCKETS, _at, _seconds, _us
from .tables import GROUPS, METERS

#: The line categories a meter books under its own name (any meter whose name starts with ``tool``
#: books ``tool``; any other, ``other``).
METER_CATEGORIES = frozenset({Category.EGRESS, Category.OBSERVABILITY, Category.STORAGE, Category.EVALUATION,
                              Category.NETWORK})


@lru_cache(maxsize=256)
def _per_factor(per: str, to: str) -> Decimal:
    """How many `to` make one `per` (``gpu * hour`` -> 3600 ``gpu * second``)."""
    return units.factor(per, to)


def meter_category(meter: str) -> Category:
    """Category of a meter: tool_call / tool* -> tool, egress, observability, storage, evaluation,
    network by name (:data:`METER_CATEGORIES`), anything else other."""
    m = meter.lower()
    if m.startswith("tool"):
        return Category.TOOL
    if m in METER_CATEGORIES:
        return Category(m)
    return Category.OTHER


class _Pricer:
    """Price and FX lookups over a PriceIndex, collecting problems instead of stopping at the first."""

    def __init__(self, index: PriceIndex, currency: str):
        self.index = index
        self.currency = currency
        self.problems: dict[tuple, str] = {}
        self._fx_cuts: dict[str, list[int]] = {}

    def price(self, *, meter: str, sku: str, region: str, purchase_option: str, at: datetime,
              provider: str = "*") -> Price | None:
        try:
            return self.index.price_at(meter=meter, sku=sku, region=region, purchase_option=purchase_option,
                                       provider=provider, at=at)
        except NoPriceError as e:
            self.problems.setdefault(("price", meter, sku, region, purchase_option, provider), str(e))
            return None

    def fx(self, from_: str, at: datetime) -> Decimal | None:
        try:
            return self.index.fx_rate(from_, self.currency, at)
        except NoPriceError as e:
            self.problems.setdefault(("fx", from_), str(e))
            return None

    def fx_changes(self, from_: str) -> list[int]:
        """Instants (µs) at which the rate `from_` -> the reporting currency may change: every start
        and end of a rate of that pair, either way round (an inverse rate counts). Sorted."""
        if from_ == self.currency:
            return []
        cached = self._fx_cuts.get(from_)
        if cached is None:
            pair = {(from_, self.currency), (self.currency, from_)}
            cached = self._fx_cuts[from_] = sorted({_us(t) for b in self.index.books for r in b.fx
                                                    if (r.from_, r.to) in pair
                                                    for t in (r.effective_from, r.effective_to) if t is not None})
        return cached

    def fx_segments(self, from_: str, lo: int, hi: int) -> list[tuple[int, int, Decimal]] | None:
        """``[lo, hi)`` (µs) cut where the `from_` rate changes: ``(start, end, rate)`` per piece, each
        piece at the rate in force at its start (DESIGN §4: the rate at the usage time). None when a
        rate is missing (the problem is recorded)."""
        cuts = [t for t in self.fx_changes(from_) if lo < t < hi]
        out = []
        for x, y in zip([lo] + cuts, cuts + [hi]):
            rate = self.fx(from_, _at(x))
            if rate is None:
                return None
            out.append((x, y, rate))
        return out

    def instants(self, start: datetime, end: datetime) -> list[datetime]:
        """Every instant in (start, end) at which any price or FX rate starts or ends (provider
        requests and meters are grouped between these, so each group has one price and one rate)."""
        out = set()
        for p in self.index.prices():
            out.update(t for t in (p.effective_from, p.effective_to) if t is not None)
        for b in self.index.books:
            for r in b.fx:
                out.update(t for t in (r.effective_from, r.effective_to) if t is not None)
        return sorted(t for t in out if start < t < end)


# ---- 1. price resources ------------------------------------------------------------------------

@dataclass
class PoolHour:
    """Priced fleet of one pool in one hour: `c_serve`, `c_reserve` (quantized, in the reporting
    currency), `serving_gpu_s`, `reserve_gpu_s`, capacity `k` in active tokens (None when unknown),
    `serving` (any serving interval overlaps the hour)."""

    pool: str
    hour: int
    c_serve: Decimal = ZERO
    c_reserve: Decimal = ZERO
    serving_gpu_s: Decimal = ZERO
    reserve_gpu_s: Decimal = ZERO
    k: Decimal | None = ZERO
    serving: bool = False


def price_fleet(con: duckdb.DuckDBPyConnection, pricer: _Pricer, start: datetime,
                end: datetime) -> dict[tuple[str, int], PoolHour]:
    """§4.1 GPU: GPU-seconds of every fleet interval in every hour it overlaps, priced with the
    ``gpu_time`` price in force, each segment (cut where the price or the FX rate of its currency
    changes) converted at the FX rate in force at its start."""
    rows = con.execute("""
        SELECT interval_id, pool, epoch_us("start"), epoch_us("end"), device, gpus, region, purchase_option, role,
               capacity_tokens_per_gpu_s
        FROM fleet WHERE "start" < $end AND "end" > $start ORDER BY interval_id""",
                       {"start": start, "end": end}).fetchall()
    s_us, e_us = _us(start), _us(end)
    exact_serve: dict[tuple[str, int], Decimal] = defaultdict(Decimal)
    exact_reserve: dict[tuple[str, int], Decimal] = defaultdict(Decimal)
    out: dict[tuple[str, int], PoolHour] = {}
    with localcontext() as ctx:
        ctx.prec = 60
        for _iid, pool, a, b, device, gpus, region, option, role, capacity in rows:
            a, b = max(a, s_us), min(b, e_us)
            cuts = sorted({_us(t) for t in pricer.index.changes(meter="gpu_time", sku=device, region=region,
                                                                  purchase_option=option)})
            serving = role == "serving"
            if not serving and role not in RESERVE_ROLES:
                pricer.problems.setdefault(("role", role), f"fleet interval {_iid}: role {role!r} is not serving or "
                                                           f"one of {', '.join(RESERVE_ROLES)}")
                continue
            h = a - a % HOUR_US
            while h < b:
                lo, hi = max(a, h), min(b, h + HOUR_US)
                ph = out.get((pool, h))
                if ph is None:
                    ph = out[(pool, h)] = PoolHour(pool=pool, hour=h)
                secs = _seconds(hi - lo)
                gpu_s = gpus * secs
                inner = [t for t in cuts if lo < t < hi]
                cost = ZERO
                for x, y in zip([lo] + inner, inner + [hi]):
                    p = pricer.price(meter="gpu_time", sku=device, region=region, purchase_option=option, at=_at(x))
                    if p is None:
                        continue
                    pieces = pricer.fx_segments(p.currency, x, y)  # cut again where the FX rate changes
                    if pieces is None:
                        continue
                    rated_s = sum((_seconds(v - u) * rate for u, v, rate in pieces), ZERO)
                    cost += gpus * rated_s * p.price / _per_factor(p.per, "gpu * second")
                if serving:
                    ph.serving = True
                    ph.serving_gpu_s += gpu_s
                    exact_serve[(pool, h)] += cost
                    if capacity is None or ph.k is None:
                        ph.k = None
                    else:
                        ph.k += gpu_s * Decimal(capacity)
                else:
                    ph.reserve_gpu_s += gpu_s
                    exact_reserve[(pool, h)] += cost
                h += HOUR_US
    for key, ph in out.items():
        ph.c_serve = quantize(exact_serve.get(key, ZERO))
        ph.c_reserve = quantize(exact_reserve.get(key, ZERO))
        if not ph.serving:
            ph.k = None
    return out


@dataclass
class _Group:
    """An exact (unquantized) amount and a quantity accumulating into one line group."""

    amount: Decimal = ZERO
    quantity: Decimal = ZERO
    requests: int = 0


def price_provider(con: duckdb.DuckDBPyConnection, pricer: _Pricer,
                   fallbacks: set[tuple[str, str, str]] | None = None) -> dict[tuple, _Group]:
    """§4.1 provider tokens: non-overlapping buckets (uncached input, cached reads, 5-minute and
    1-hour cache writes, output) × the price in force at booked_at for (meter, model, region,
    service tier as purchase option, provider), each falling back to ``*``, with the long-context
    tier of the request's input tokens applied to every token of the bucket.

    Reasoning tokens are billed at the model's ``reasoning_tokens`` price when one is in force, and
    the rest of the output at the output price; without one, all output at the output price. Cache
    writes with no price of their own in force are billed at the model's ``input_tokens`` price, and
    ``(meter, model, provider)`` is added to `fallbacks` for the run's notes.

    Returns exact amounts per line group (day, tenant, product, model, provider, work)."""
    rows = con.execute(f"""
        SELECT hour, tenant, product, model, provider, work, region, tier, epoch, band, sum(uncached), sum(cached),
               sum(cache_write), sum(cache_write_1h), sum(output), sum(reasoning), sum(n), min(first_us)
        FROM {GROUPS} WHERE pool IS NULL GROUP BY ALL ORDER BY ALL""").fetchall()
    out: dict[tuple, _Group] = defaultdict(_Group)
    cache: dict[tuple, Price | None] = {}

    def find(meter: str, model: str, region: str, tier: str, provider: str, epoch: int, at: datetime,
             optional: bool) -> Price | None:
        """The price in force for the bucket's meter; an optional meter's absence is no problem."""
        key = (meter, model, region, tier, provider, epoch)
        if key not in cache:
            if optional:
                try:
                    cache[key] = pricer.index.price_at(meter=meter, sku=model, region=region, purchase_option=tier,
                                                       provider=provider, at=at)
                except NoPriceError:
                    cache[key] = None
            else:
                cache[key] = pricer.price(meter=meter, sku=model, region=region, purchase_option=tier, at=at,
                                          provider=provider)
        return cache[key]

    with localcontext() as ctx:
        ctx.prec = 60
        for (hour, tenant, product, model, provider, work, region, tier, epoch, band, unc, cac, cw, cw1h, outp, rsn,
             n, first_us) in rows:
            at = _at(first_us)
            g = out[(_at(hour).date(), tenant, product, model, provider, work)]
            g.quantity += int(unc) + int(cac) + int(cw) + int(cw1h) + int(outp)
            g.requests += int(n)
            tokens = dict(zip((m for _, m in TOKEN_BUCKETS), (int(unc), int(cac), int(cw), int(cw1h), int(outp))))
            if int(rsn) and find(REASONING_METER, model, region, tier, provider, epoch, at, True) is not None:
                tokens[REASONING_METER] = int(rsn)          # reasoning at its own price ...
                tokens["output_tokens"] -= int(rsn)         # ... and the rest of the output at the output price
            for meter, count in tokens.items():
                if not count:
                    continue
                p = find(meter, model, region, tier, provider, epoch, at, meter in FALLBACK_METERS)
                if p is None and meter in FALLBACK_METERS:
                    if fallbacks is not None:
                        fallbacks.add((meter, model, provider))
                    p = find(FALLBACK_METERS[meter], model, region, tier, provider, epoch, at, False)
                rate = pricer.fx(p.currency, at) if p is not None else None
                if p is None or rate is None:
                    continue
                unit_price = p.price_for_request(0 if band < 0 else band + 1)
                g.amount += Decimal(count) * unit_price / _per_factor(p.per, "token") * rate
    return out


def cache_write_notes(fallbacks: set[tuple[str, str, str]]) -> list[str]:
    """The run's notes on cache writes priced at the input price: one per meter, naming the models."""
    what = {"cache_write_tokens": "5-minute", "cache_write_1h_tokens": "1-hour"}
    by_meter: dict[str, list[str]] = defaultdict(list)
    for meter, model, provider in sorted(fallbacks):
        by_meter[meter].append(f"{model} ({provider})")
    return [f"no {meter} price in force for {', '.join(models)}: their {what.get(meter, meter)} cache writes are "
            "priced at their input_tokens price" for meter, models in sorted(by_meter.items())]


def price_meters(con: duckdb.DuckDBPyConnection, pricer: _Pricer) -> dict[tuple, _Group]:
    """§4.1 meters: quantity converted from its unit to the price's `per` (GB and GiB differ),
    × the price in force at booked_at, at its FX rate. Returns exact amounts per line group
    (day, tenant, product, category, work, unit)."""
    rows = con.execute(f"""
        SELECT m.day, m.tenant, m.product, m.meter, m.sku, m.unit, coalesce(m.region, '*') AS region, m.work, m.epoch,
               sum(m.quantity) AS qty, min(epoch_us(m.booked_at)) AS first_us
        FROM {METERS} m GROUP BY ALL ORDER BY ALL""").fetchall()
    out: dict[tuple, _Group] = defaultdict(_Group)
    with localcontext() as ctx:
        ctx.prec = 60
        for day, tenant, product, meter, sku, unit, region, work, _epoch, qty, first_us in rows:
            at = _at(first_us)
            g = out[(day, tenant, product, meter_category(meter), work, unit)]
            g.quantity += qty
            p = pricer.price(meter=meter, sku=sku, region=region, purchase_option="*", at=at)
            if p is None:
                continue
            try:
                f = _per_factor(unit, p.per)
            except units.UnitError as e:
                pricer.problems.setdefault(("unit", meter, sku, unit),
                                           f"meter {meter}, sku {sku}: quantity in {unit!r} cannot be priced per "
                                           f"{p.per!r} ({e})")
                continue
            rate = pricer.fx(p.currency, at)
            if rate is None:
                continue
            g.amount += qty * f * p.price * rate
    return out

