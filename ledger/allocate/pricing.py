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
from .records import HOUR_US, TOKEN_BUCKETS, _at, _seconds, _us

@lru_cache(maxsize=256)
def _per_factor(per: str, to: str) -> Decimal:
    """How many `to` make one `per` (``gpu * hour`` -> 3600 ``gpu * second``)."""
    return units.factor(per, to)


def meter_category(meter: str) -> str:
    """Category of a meter: tool_call / tool* -> tool, egress, observability, storage, evaluation,
    network by name, anything else other."""
    m = meter.lower()
    if m.startswith("tool"):
        return "tool"
    if m in ("egress", "observability", "storage", "evaluation", "network"):
        return m
    return "other"


class _Pricer:
    """Price and FX lookups over a PriceIndex, collecting problems instead of stopping at the first."""

    def __init__(self, index: PriceIndex, currency: str):
        self.index = index
        self.currency = currency
        self.problems: dict[tuple, str] = {}

    def price(self, *, meter: str, sku: str, region: str, purchase_option: str, at: datetime) -> Price | None:
        try:
            return self.index.price_at(meter=meter, sku=sku, region=region, purchase_option=purchase_option, at=at)
        except NoPriceError as e:
            self.problems.setdefault(("price", meter, sku, region, purchase_option), str(e))
            return None

    def fx(self, from_: str, at: datetime) -> Decimal | None:
        try:
            return self.index.fx_rate(from_, self.currency, at)
        except NoPriceError as e:
            self.problems.setdefault(("fx", from_), str(e))
            return None

    def instants(self, start: datetime, end: datetime) -> list[datetime]:
        """Every instant in (start, end) at which any price or FX rate starts or ends."""
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
    ``gpu_time`` price in force (segments split where the price changes), at the FX rate of the hour."""
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
                    rate = pricer.fx(p.currency, _at(h))
                    if rate is None:
                        continue
                    cost += gpus * _seconds(y - x) * p.price / _per_factor(p.per, "gpu * second") * rate
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


def price_provider(con: duckdb.DuckDBPyConnection, pricer: _Pricer) -> dict[tuple, _Group]:
    """§4.1 provider tokens: non-overlapping buckets (uncached input, cached input, output with
    reasoning) × the price in force at booked_at for (meter, model, region or ``*``), with the
    long-context tier of the request's input tokens applied to every token of the bucket.

    Returns exact amounts per line group (day, tenant, product, model, provider, work)."""
    rows = con.execute("""
        SELECT hour, tenant, product, model, provider, work, region, epoch, band, sum(uncached), sum(cached),
               sum(output), sum(n), min(first_us)
        FROM _groups WHERE pool IS NULL GROUP BY ALL ORDER BY ALL""").fetchall()
    out: dict[tuple, _Group] = defaultdict(_Group)
    cache: dict[tuple, Price | None] = {}
    with localcontext() as ctx:
        ctx.prec = 60
        for hour, tenant, product, model, provider, work, region, epoch, band, unc, cac, outp, n, first_us in rows:
            at = _at(first_us)
            g = out[(_at(hour).date(), tenant, product, model, provider, work)]
            g.quantity += int(unc) + int(cac) + int(outp)
            g.requests += int(n)
            for (_bucket, meter), tokens in zip(TOKEN_BUCKETS, (unc, cac, outp)):
                if not tokens:
                    continue
                key = (meter, model, region, epoch)
                if key not in cache:
                    cache[key] = pricer.price(meter=meter, sku=model, region=region, purchase_option="*", at=at)
                p = cache[key]
                rate = pricer.fx(p.currency, at) if p is not None else None
                if p is None or rate is None:
                    continue
                unit_price = p.price_for_request(0 if band < 0 else band + 1)
                g.amount += Decimal(int(tokens)) * unit_price / _per_factor(p.per, "token") * rate
    return out


def price_meters(con: duckdb.DuckDBPyConnection, pricer: _Pricer) -> dict[tuple, _Group]:
    """§4.1 meters: quantity converted from its unit to the price's `per` (GB and GiB differ),
    × the price in force at booked_at, at its FX rate. Returns exact amounts per line group
    (day, tenant, product, category, work, unit)."""
    rows = con.execute("""
        SELECT m.day, m.tenant, m.product, m.meter, m.sku, m.unit, coalesce(m.region, '*') AS region, m.work, m.epoch,
               sum(m.quantity) AS qty, min(epoch_us(m.booked_at)) AS first_us
        FROM _met m GROUP BY ALL ORDER BY ALL""").fetchall()
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

