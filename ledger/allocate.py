"""Allocation of a period: the numbered order of operations of DESIGN §4, over DuckDB facts.

The engine is a pure function of the facts (DuckDB relations ``requests, meters, outcomes,
fleet, charges`` with the columns of :mod:`ledger.facts`), a :class:`~ledger.pricebook.PriceIndex`
and a :class:`Policy`. It returns an :class:`Allocation`: exact lines whose sum equals the sum
of the priced resources (checked with ``==``), plus flags, notes and usage counts.

Per-request work is done in DuckDB (group-bys, and the largest-remainder GPU split in integer
micro-units with window functions); Python only prices aggregates (fleet interval-hours, token
buckets, meter groups, charge days) and never loops over requests.

Order of operations (each step is a function below):

1. price resources: :func:`price_fleet` (C_serve, C_reserve per pool and hour),
   :func:`price_provider`, :func:`price_meters`, :func:`price_charges`;
2. active tokens: :func:`_gpu_groups` (weights per request group and pool-hour);
3. GPU share: :func:`gpu_coefficients` (rate denominators, idle slack weights, flags) apart from
   :func:`_apply_gpu_split` (the largest-remainder split);
4. idle: :func:`_idle_lines` (separate, or shared over tenants by direct GPU cost);
5. failed work: the ``work`` column of every request and meter group (:func:`_prepare`);
6. shared charges: :func:`_charge_lines`;
7. lines and conservation: :func:`allocate` asserts ``sum(lines) == total``.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal, localcontext
from functools import lru_cache

import duckdb
import pyarrow as pa
from babel.numbers import list_currencies

from . import units
from .facts import RESERVE_ROLES
from .money import ZERO, from_micros, quantize, split, to_micros
from .pricebook import NoPriceError, Price, PriceIndex

IDLE_POLICIES = ("separate", "share")
BASES = ("active_tokens", "kv_token_seconds")
KINDS = ("tenant", "idle_slack", "idle_reserve", "unallocated")
CATEGORIES = ("gpu", "provider_tokens", "tool", "egress", "observability", "storage", "evaluation",
              "engineering_ops", "network", "other")
WORK = ("succeeded", "failed")
FLAG_KINDS = ("over_capacity", "no_fleet", "capacity_unknown")
CHARGE_CATEGORY = {"tools": "tool", "observability": "observability", "evaluation": "evaluation",
                   "engineering_ops": "engineering_ops", "storage": "storage", "network": "network",
                   "other": "other"}

#: Non-overlapping token buckets of a provider request and the price meter of each.
TOKEN_BUCKETS = (("uncached", "input_tokens"), ("cached", "cached_input_tokens"), ("output", "output_tokens"))
TOKEN_METERS = frozenset(m for _, m in TOKEN_BUCKETS)

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
_CURRENCIES = frozenset(list_currencies())


class AllocationError(ValueError):
    """The run cannot be made: `problems` holds one line per problem (missing price, bad unit, ...)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Weights:
    """Per-pool token weights of the ``active_tokens`` basis: w = uncached input × `uncached` +
    cached input × `cached` + output × `output` (dimensionless decimals ≥ 0)."""

    uncached: Decimal = Decimal(1)
    cached: Decimal = Decimal(1)
    output: Decimal = Decimal(1)

    def as_text(self) -> str:
        return f"{self.uncached},{self.cached},{self.output}"


@dataclass(frozen=True)
class Policy:
    """How to allocate: `idle` (separate | share), `basis` (active_tokens | kv_token_seconds),
    reporting `currency` (ISO 4217), and per-pool `weights` as sorted ``(pool, Weights)`` pairs."""

    idle: str = "separate"
    basis: str = "active_tokens"
    currency: str = "USD"
    weights: tuple[tuple[str, Weights], ...] = ()

    def problems(self) -> list[str]:
        out = []
        if self.idle not in IDLE_POLICIES:
            out.append(f"idle policy {self.idle!r}: expected one of {', '.join(IDLE_POLICIES)}")
        if self.basis not in BASES:
            out.append(f"basis {self.basis!r}: expected one of {', '.join(BASES)}")
        if self.currency not in _CURRENCIES:
            out.append(f"currency {self.currency!r} is not an ISO 4217 code")
        if self.weights and self.basis != "active_tokens":
            out.append("pool weights apply to the active_tokens basis only")
        for pool, w in self.weights:
            if min(w.uncached, w.cached, w.output) < 0:
                out.append(f"weights for pool {pool}: negative weight in {w.as_text()}")
        return out

    def as_dict(self) -> dict:
        return {"idle_policy": self.idle, "basis": self.basis, "currency": self.currency,
                "weights": {p: w.as_text() for p, w in self.weights}}


def parse_weights(specs: Sequence[str]) -> tuple[tuple[str, Weights], ...]:
    """``["pool-a=1,0.1,1", ...]`` -> sorted ``(pool, Weights)`` pairs; ValueError on a bad spec."""
    out: dict[str, Weights] = {}
    for spec in specs:
        pool, sep, rest = spec.partition("=")
        parts = rest.split(",")
        if not sep or not pool.strip() or len(parts) != 3:
            raise ValueError(f"weights {spec!r}: expected POOL=UNCACHED,CACHED,OUTPUT such as h100-pool=1,0.1,1")
        try:
            ws = [Decimal(p.strip()) for p in parts]
        except ArithmeticError:
            raise ValueError(f"weights {spec!r}: {rest!r} is not three decimal numbers") from None
        if any(not w.is_finite() or w < 0 for w in ws):
            raise ValueError(f"weights {spec!r}: weights must be finite and >= 0")
        out[pool.strip()] = Weights(*ws)
    return tuple(sorted(out.items()))


@dataclass(frozen=True)
class Line:
    """One allocation line. `day` (UTC date), `kind` (tenant | idle_slack | idle_reserve |
    unallocated), `tenant` (None unless kind is tenant), `product`, `model`, `pool`, `provider`,
    `category` (one of CATEGORIES), `work` (succeeded | failed), `shared_from` (idle_slack or
    idle_reserve on a tenant's share of idle under policy share), `quantity` in `unit` (active
    tokens for request lines, GPU-seconds for idle, the meter's unit, seconds for charges), and
    `amount` in the run's currency, exact at 1e-6."""

    day: date
    kind: str
    tenant: str | None
    product: str | None
    model: str | None
    pool: str | None
    provider: str | None
    category: str
    work: str
    shared_from: str | None
    quantity: Decimal
    unit: str
    amount: Decimal

    def sort_key(self) -> tuple:
        return (self.day, KINDS.index(self.kind), self.tenant or "", self.product or "", self.model or "",
                self.pool or "", self.provider or "", self.category, self.work, self.shared_from or "", self.unit)


@dataclass(frozen=True)
class Flag:
    """A pool-hour to look at: `kind` (over_capacity | no_fleet | capacity_unknown), `pool`, `hour` (UTC start)."""

    kind: str
    pool: str
    hour: datetime


@dataclass(frozen=True)
class Usage:
    """Requests of the period for one (tenant, product, model): `requests`, `active_tokens`
    (input + output), `failed_requests` (tagged failed work)."""

    tenant: str
    product: str
    model: str
    requests: int
    active_tokens: int
    failed_requests: int


@dataclass(frozen=True)
class Tasks:
    """Tasks of one (tenant, product): `success` and `failure` (latest outcome decided in the period),
    `unknown` (seen in the period's requests, no outcome decided up to period end), `criteria`."""

    tenant: str
    product: str
    success: int
    failure: int
    unknown: int
    criteria: tuple[str, ...]


@dataclass(frozen=True)
class Allocation:
    """The result of :func:`allocate`: period ``[start, end)``, the policy, `price_books`
    (``name@version``), `total` (Σ priced resources), `lines` (Σ amount == total), `flags`, `notes`,
    `usage` and `tasks` (for unit economics), and the `regions` the priced usage ran in."""

    start: datetime
    end: datetime
    policy: Policy
    price_books: tuple[str, ...]
    total: Decimal
    lines: tuple[Line, ...]
    flags: tuple[Flag, ...]
    notes: tuple[str, ...]
    usage: tuple[Usage, ...]
    tasks: tuple[Tasks, ...]
    regions: tuple[str, ...] = ()

    @property
    def currency(self) -> str:
        return self.policy.currency

    @property
    def lines_total(self) -> Decimal:
        return sum((ln.amount for ln in self.lines), ZERO)


# ---- helpers -----------------------------------------------------------------------------------

def _us(at: datetime) -> int:
    d = at.astimezone(timezone.utc) - EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _at(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(us))


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _seconds(us: int) -> Decimal:
    return Decimal(us).scaleb(-6)


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


# ---- 0. facts of the period: one pass over requests, one over outcomes --------------------------

def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_period(col: str, start: datetime, end: datetime) -> str:
    return f"{col} >= TIMESTAMPTZ '{_iso(start)}' AND {col} < TIMESTAMPTZ '{_iso(end)}'"


def _scale(w: Weights) -> int:
    """The power of ten that makes the three weights integers."""
    return 10 ** max(0, *(-x.as_tuple().exponent for x in (w.uncached, w.cached, w.output)))


def _weight_sql(con: duckdb.DuckDBPyConnection, policy: Policy) -> tuple[str, str]:
    """§4.2 SQL for a request's integer weight, and the join it needs. active_tokens: input + output
    (× the pool's weights scaled to integers); kv_token_seconds: 2 × token-microseconds
    (2 × input × latency + output × (latency − ttft), so that the halving stays exact)."""
    if policy.basis == "kv_token_seconds":
        lat = "CAST(round(r.latency_ms * 1000) AS HUGEINT)"
        ttft = "CAST(round(coalesce(r.ttft_ms, 0) * 1000) AS HUGEINT)"
        return f"2 * r.input_tokens * {lat} + r.output_tokens * greatest({lat} - {ttft}, 0)", ""
    if policy.weights:
        rows = [(pool, int(ws.uncached * _scale(ws)), int(ws.cached * _scale(ws)), int(ws.output * _scale(ws)))
                for pool, ws in policy.weights]
        con.execute("CREATE OR REPLACE TEMP TABLE _pool_weights (pool VARCHAR, u BIGINT, c BIGINT, o BIGINT)")
        con.executemany("INSERT INTO _pool_weights VALUES (?, ?, ?, ?)", rows)
        return ("(r.input_tokens - r.cached_input_tokens) * coalesce(pw.u, 1)"
                " + r.cached_input_tokens * coalesce(pw.c, 1) + r.output_tokens * coalesce(pw.o, 1)",
                "LEFT JOIN _pool_weights pw ON r.pool = pw.pool")
    return "r.input_tokens + r.output_tokens", ""


def _epoch_sql(col: str, boundaries: Sequence[datetime]) -> str:
    """The index of the span between price or FX changes that `col` falls in."""
    if not boundaries:
        return "0"
    whens = " ".join(f"WHEN {col} < TIMESTAMPTZ '{_iso(b)}' THEN {i}" for i, b in enumerate(boundaries))
    return f"CASE {whens} ELSE {len(boundaries)} END"


def _band_sql(index: PriceIndex) -> str:
    """The long-context band of a request: the largest tier threshold of its model below its input
    tokens (-1: below every tier)."""
    tiers = sorted({(p.sku, t.above_input_tokens) for p in index.prices() if p.meter in TOKEN_METERS
                    for t in p.tiers}, key=lambda x: (x[0], -x[1]))
    if not tiers:
        return "-1"
    whens = " ".join(f"WHEN r.model = {_lit(sku)} AND r.input_tokens > {above} THEN {above}" for sku, above in tiers)
    return f"CASE {whens} ELSE -1 END"


def _prepare(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, policy: Policy, pricer: _Pricer) -> None:
    """Temp relations of the period, read in one pass over outcomes and one over requests:

    - `_task_state`: per task, its latest outcome decided before `end` (failed work, §4.5) and its
      latest outcome decided in the period (unit economics);
    - `_groups`: requests grouped by pool or provider, hour (day for provider requests), tenant,
      product, model, work, and for provider requests region, price span and long-context band,
      with their weight (§4.2), tokens and counts;
    - `_met`: the period's meters with their work tag and price span.
    """
    con.execute("SET TimeZone = 'UTC'")
    booked = _in_period("booked_at", start, end)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _task_state AS
        SELECT task_id,
               arg_max(outcome, decided_at) FILTER (WHERE decided_at < TIMESTAMPTZ '{_iso(end)}') AS latest,
               arg_max(outcome, decided_at) FILTER (WHERE {booked}) AS decided,
               arg_max(tenant, decided_at) FILTER (WHERE {booked}) AS tenant,
               arg_max(product, decided_at) FILTER (WHERE {booked}) AS product,
               arg_max(criteria, decided_at) FILTER (WHERE {booked}) AS criteria
        FROM outcomes WHERE decided_at < TIMESTAMPTZ '{_iso(end)}' OR ({booked})
        GROUP BY task_id""")
    con.execute("CREATE OR REPLACE TEMP TABLE _failed_tasks AS "
                "SELECT task_id FROM _task_state WHERE latest = 'failure'")
    weight, join = _weight_sql(con, policy)
    boundaries = pricer.instants(start, end)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _groups AS
        SELECT r.pool, CASE WHEN r.pool IS NULL THEN r.provider END AS provider,
               epoch_us(date_trunc(CASE WHEN r.pool IS NULL THEN 'day' ELSE 'hour' END, r.booked_at)) AS hour,
               r.tenant, r.product, r.model,
               CASE WHEN r.status <> 'ok' OR f.task_id IS NOT NULL THEN 'failed' ELSE 'succeeded' END AS work,
               CASE WHEN r.pool IS NULL THEN coalesce(r.region, '*') ELSE '' END AS region,
               CASE WHEN r.pool IS NULL THEN {_epoch_sql('r.booked_at', boundaries)} ELSE 0 END AS epoch,
               CASE WHEN r.pool IS NULL THEN {_band_sql(pricer.index)} ELSE -1 END AS band,
               CAST(coalesce(sum(CASE WHEN r.pool IS NOT NULL THEN {weight} END), 0) AS HUGEINT) AS w,
               count(*) AS n,
               CAST(sum(r.input_tokens + r.output_tokens) AS HUGEINT) AS active,
               CAST(sum(r.input_tokens - r.cached_input_tokens) AS HUGEINT) AS uncached,
               CAST(sum(r.cached_input_tokens) AS HUGEINT) AS cached,
               CAST(sum(r.output_tokens) AS HUGEINT) AS output,
               count(*) FILTER (WHERE r.latency_ms IS NULL) AS no_latency,
               min(epoch_us(r.booked_at)) AS first_us
        FROM requests r LEFT JOIN _failed_tasks f ON r.task_id = f.task_id {join}
        WHERE {_in_period('r.booked_at', start, end)}
        GROUP BY ALL""")
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW _met AS
        SELECT m.*, CAST(m.booked_at AS DATE) AS day,
               CASE WHEN f.task_id IS NOT NULL THEN 'failed' ELSE 'succeeded' END AS work,
               {_epoch_sql('m.booked_at', boundaries)} AS epoch
        FROM meters m LEFT JOIN _failed_tasks f ON m.task_id = f.task_id
        WHERE {_in_period('m.booked_at', start, end)}""")


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
                    ph = out[(pool, h)] = PoolHour(pool, h)
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


@dataclass(frozen=True)
class ChargeDay:
    """One day's share of a charge, a priced resource: `amount` in the reporting currency
    (quantized), `seconds` of the charge in that day, the charge's `category`, `rule` and `charge_id`."""

    charge_id: str
    day: date
    seconds: Decimal
    category: str
    rule: str
    amount: Decimal


def price_charges(con: duckdb.DuckDBPyConnection, pricer: _Pricer, start: datetime, end: datetime) -> list[ChargeDay]:
    """§4.1 charges: the amount prorated by the overlap of [period_start, period_end) with the
    period, split over its days by largest remainder (days sum exactly to the in-period amount),
    each day converted at the FX rate in force at the start of its piece."""
    rows = con.execute("""
        SELECT charge_id, epoch_us(period_start), epoch_us(period_end), category, amount, currency, allocate
        FROM charges WHERE period_start < $end AND period_end > $start ORDER BY charge_id""",
                       {"start": start, "end": end}).fetchall()
    s_us, e_us = _us(start), _us(end)
    out: list[ChargeDay] = []
    with localcontext() as ctx:
        ctx.prec = 60
        for cid, ps, pe, category, amount, currency, rule in rows:
            if category not in CHARGE_CATEGORY:
                pricer.problems.setdefault(("charge", cid), f"charge {cid}: category {category!r} is not one of "
                                                           f"{', '.join(CHARGE_CATEGORY)}")
                continue
            a, b = max(ps, s_us), min(pe, e_us)
            in_period = quantize(Decimal(amount) * (b - a) / (pe - ps))
            pieces: dict[int, int] = {}
            d = a - a % DAY_US
            while d < b:
                pieces[d] = min(b, d + DAY_US) - max(a, d)
                d += DAY_US
            for d, part in split(in_period, pieces).items():
                rate = pricer.fx(currency, _at(max(a, d)))
                if rate is None:
                    continue
                out.append(ChargeDay(cid, _at(d).date(), _seconds(pieces[d]), CHARGE_CATEGORY[category], rule,
                                     quantize(part * rate)))
    return out


# ---- 2. active tokens --------------------------------------------------------------------------

def _gpu_groups(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], tuple[int, int]]:
    """§4.2 Table `_gpu_groups`: per pool, hour and (tenant, product, model, work) the integer
    weight `w` (computed in the pass of :func:`_prepare`), requests `n` and active tokens.
    Returns {(pool, hour): (W, requests without latency)}."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _gpu_groups AS
        SELECT pool, hour, CAST(make_timestamp(hour) AS DATE) AS day, tenant, product, model, work,
               CAST(sum(w) AS HUGEINT) AS w, sum(n) AS n, CAST(sum(active) AS HUGEINT) AS active,
               sum(no_latency) AS no_latency
        FROM _groups WHERE pool IS NOT NULL
        GROUP BY pool, hour, tenant, product, model, work""")
    return {(pool, hour): (int(w), int(nl)) for pool, hour, w, nl in con.execute(
        "SELECT pool, hour, sum(w), sum(no_latency) FROM _gpu_groups GROUP BY ALL").fetchall()}


# ---- 3. GPU share: coefficients ----------------------------------------------------------------

@dataclass(frozen=True)
class Coefficient:
    """How C_serve of one pool-hour splits: `c` micro-units over request weights summing to `w`
    plus idle slack weight `slack` (denominator `d` = w + slack = max(K, W), or W when K is
    unknown); `slack_gpu_s` the unused serving GPU-seconds."""

    pool: str
    hour: int
    c: int
    w: int
    slack: int
    slack_gpu_s: Decimal

    @property
    def d(self) -> int:
        return self.w + self.slack


def gpu_coefficients(fleet: Mapping[tuple[str, int], PoolHour], weights: Mapping[tuple[str, int], tuple[int, int]],
                     policy: Policy) -> tuple[list[Coefficient], list[Flag], list[str]]:
    """§4.3 For each pool-hour: the split denominators and idle slack, the flags, and problems
    (kv_token_seconds basis with requests lacking latency)."""
    scale = {pool: _scale(w) for pool, w in policy.weights}
    coeffs: list[Coefficient] = []
    flags: list[Flag] = []
    problems: list[str] = []
    no_latency_n: dict[str, int] = defaultdict(int)
    no_latency_first: dict[str, int] = {}
    for key in sorted(set(fleet) | set(weights)):
        pool, hour = key
        ph = fleet.get(key)
        w, no_latency = weights.get(key, (0, 0))
        if policy.basis == "kv_token_seconds" and no_latency:
            no_latency_n[pool] += no_latency
            no_latency_first.setdefault(pool, hour)
        if ph is None or not ph.serving:
            if key in weights:
                flags.append(Flag("no_fleet", pool, _at(hour)))
            continue
        if policy.basis == "kv_token_seconds":
            k = None
        elif ph.k is None:
            k = None
            if w > 0:
                flags.append(Flag("capacity_unknown", pool, _at(hour)))
        else:
            k = int(quantize(ph.k * scale.get(pool, 1), Decimal(1)))
            if w > k:
                flags.append(Flag("over_capacity", pool, _at(hour)))
        c = to_micros(ph.c_serve)
        if w == 0:  # an hour with no usage is all slack
            coeffs.append(Coefficient(pool, hour, c, 0, 1, ph.serving_gpu_s))
            continue
        d = max(k, w) if k is not None else w
        with localcontext() as ctx:
            ctx.prec = 60
            slack_gpu_s = quantize(ph.serving_gpu_s * (d - w) / d)
        coeffs.append(Coefficient(pool, hour, c, w, d - w, slack_gpu_s))
    for pool in sorted(no_latency_n):
        problems.append(f"pool {pool}: {no_latency_n[pool]} requests have no latency_ms (first in the hour "
                        f"{_iso(_at(no_latency_first[pool]))}); the kv_token_seconds basis needs it "
                        "(use --basis active_tokens)")
    return coeffs, flags, problems


# ---- 3. GPU share: applying the coefficients ---------------------------------------------------

_SPLIT_SQL = """
WITH rows AS (
    SELECT g.pool, g.hour, g.day, 0 AS is_slack, g.tenant, g.product, g.model, g.work, g.w AS wt, g.active,
           c.c, c.d
    FROM _gpu_groups g JOIN _coeff c ON g.pool = c.pool AND g.hour = c.hour
    UNION ALL
    SELECT pool, hour, NULL, 1, NULL, NULL, NULL, NULL, slack, 0, c, d FROM _coeff WHERE slack > 0
), q AS (
    SELECT *, (c * wt) // d AS base, (c * wt) % d AS rem FROM rows
), r AS (
    SELECT *, c - sum(base) OVER (PARTITION BY pool, hour) AS left_over,
           row_number() OVER (PARTITION BY pool, hour
                              ORDER BY rem DESC, wt DESC, is_slack, tenant, product, model, work) AS rk
    FROM q
)
SELECT pool, hour, day, is_slack, tenant, product, model, work, active,
       base + CASE WHEN rk <= left_over THEN 1 ELSE 0 END AS part
FROM r
"""


def _apply_gpu_split(con: duckdb.DuckDBPyConnection,
                     coeffs: Sequence[Coefficient]) -> tuple[dict[tuple, _Group], dict[tuple[str, int], int]]:
    """Split each pool-hour's C_serve (integer micro-units) over its request groups and idle slack
    by largest remainder: part = floor(c × w / d), then the units left go one each by larger
    remainder, larger weight, request groups before slack, then (tenant, product, model, work).

    Returns tenant GPU line groups (day, tenant, product, model, pool, work) with amounts in
    micro-units as Decimal, and the idle slack in micro-units per pool-hour."""
    slack: dict[tuple[str, int], int] = {}
    split_rows = [c for c in coeffs if c.w > 0]
    for c in coeffs:
        if c.w == 0:
            slack[(c.pool, c.hour)] = c.c
    tbl = pa.table({"pool": pa.array([c.pool for c in split_rows], pa.string()),
                    "hour": pa.array([c.hour for c in split_rows], pa.int64()),
                    "c": pa.array([str(c.c) for c in split_rows], pa.string()),
                    "d": pa.array([str(c.d) for c in split_rows], pa.string()),
                    "slack": pa.array([str(c.slack) for c in split_rows], pa.string())})
    con.register("_coeff_arrow", tbl)
    con.execute("CREATE OR REPLACE TEMP TABLE _coeff AS SELECT pool, hour, CAST(c AS HUGEINT) AS c, "
                "CAST(d AS HUGEINT) AS d, CAST(slack AS HUGEINT) AS slack FROM _coeff_arrow")
    con.unregister("_coeff_arrow")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _gpu_parts AS {_SPLIT_SQL}")
    groups: dict[tuple, _Group] = {}
    for day, tenant, product, model, pool, work, part, active in con.execute("""
            SELECT day, tenant, product, model, pool, work, sum(part), sum(active) FROM _gpu_parts
            WHERE is_slack = 0 GROUP BY ALL ORDER BY ALL""").fetchall():
        groups[(day, tenant, product, model, pool, work)] = _Group(from_micros(int(part)), Decimal(int(active)))
    for pool, hour, part in con.execute("SELECT pool, hour, part FROM _gpu_parts WHERE is_slack = 1").fetchall():
        slack[(pool, hour)] = int(part)
    return groups, slack


# ---- 4. idle -----------------------------------------------------------------------------------

def _idle_lines(fleet: Mapping[tuple[str, int], PoolHour], coeffs: Sequence[Coefficient],
                slack: Mapping[tuple[str, int], int], gpu_direct: Mapping[tuple[str, str], Decimal],
                policy: Policy) -> list[Line]:
    """§4.4 Idle slack and idle reserve lines per day and pool; under policy ``share`` each is split
    over the pool's tenants in proportion to their direct GPU cost in that pool over the period."""
    per_day: dict[tuple[date, str, str], _Group] = defaultdict(_Group)
    slack_gpu_s = {(c.pool, c.hour): c.slack_gpu_s for c in coeffs}
    for (pool, hour), micros in slack.items():
        g = per_day[(_at(hour).date(), pool, "idle_slack")]
        g.amount += from_micros(micros)
        g.quantity += slack_gpu_s.get((pool, hour), ZERO)
    for (pool, hour), ph in fleet.items():
        if ph.reserve_gpu_s or ph.c_reserve:
            g = per_day[(_at(hour).date(), pool, "idle_reserve")]
            g.amount += ph.c_reserve
            g.quantity += ph.reserve_gpu_s
    tenants_of: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for (pool, tenant), cost in gpu_direct.items():
        if cost > 0:
            tenants_of[pool][tenant] = cost
    lines: list[Line] = []
    for (day, pool, kind), g in sorted(per_day.items()):
        if g.amount == 0 and g.quantity == 0:
            continue
        weights = tenants_of.get(pool)
        if policy.idle == "share" and weights:
            total_w = sum(weights.values(), ZERO)
            for tenant, part in split(g.amount, sorted(weights.items())).items():
                if part == 0:
                    continue
                with localcontext() as ctx:
                    ctx.prec = 60
                    q = quantize(g.quantity * weights[tenant] / total_w)
                lines.append(Line(day, "tenant", tenant, None, None, pool, None, "gpu", "succeeded", kind, q,
                                  "gpu * second", part))
        else:
            lines.append(Line(day, kind, None, None, None, pool, None, "gpu", "succeeded", None, g.quantity,
                              "gpu * second", g.amount))
    return lines


# ---- 6. shared charges -------------------------------------------------------------------------

def _charge_lines(days: Sequence[ChargeDay], direct: Mapping[str, Decimal], tokens: Mapping[str, int],
                  problems: dict[tuple, str]) -> tuple[list[Line], list[str]]:
    """§4.6 Each charge day goes to tenants by its rule: even (tenants with direct cost), by_cost,
    by_tokens, tenant:X, or none (unallocated). A rule with no eligible tenant books unallocated."""
    lines: list[Line] = []
    notes: dict[str, str] = {}
    for cd in days:
        rule = cd.rule.strip()
        if rule == "even":
            weights = {t: Decimal(1) for t, c in direct.items() if c > 0}
        elif rule == "by_cost":
            weights = {t: c for t, c in direct.items() if c > 0}
        elif rule == "by_tokens":
            weights = {t: Decimal(n) for t, n in tokens.items() if n > 0}
        elif rule.startswith("tenant:") and rule[len("tenant:"):].strip():
            weights = {rule[len("tenant:"):].strip(): Decimal(1)}
        elif rule == "none":
            weights = {}
        else:
            problems.setdefault(("rule", cd.charge_id),
                                f"charge {cd.charge_id}: allocate {cd.rule!r} is not even, by_cost, by_tokens, "
                                "tenant:<name> or none")
            continue
        if not weights:
            if rule != "none":
                notes[cd.charge_id] = (f"charge {cd.charge_id} (allocate {rule}): no eligible tenant in the period; "
                                       "booked unallocated")
            lines.append(Line(cd.day, "unallocated", None, None, None, None, None, cd.category, "succeeded", None,
                              cd.seconds, "second", cd.amount))
            continue
        for tenant, part in split(cd.amount, sorted(weights.items())).items():
            if part == 0:
                continue
            lines.append(Line(cd.day, "tenant", tenant, None, None, None, None, cd.category, "succeeded", None,
                              cd.seconds, "second", part))
    return lines, [notes[k] for k in sorted(notes)]


# ---- usage and tasks (for unit economics) ------------------------------------------------------

def _usage(con: duckdb.DuckDBPyConnection) -> tuple[Usage, ...]:
    rows = con.execute("""
        SELECT tenant, product, model, sum(n), sum(active), sum(n) FILTER (WHERE work = 'failed')
        FROM _groups GROUP BY ALL ORDER BY ALL""").fetchall()
    return tuple(Usage(t, p, m, int(n), int(a), int(f or 0)) for t, p, m, n, a, f in rows)


def _tasks(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> tuple[Tasks, ...]:
    """Tasks by (tenant, product): success and failure by the latest outcome decided in the period;
    unknown: tasks of the period's requests with no outcome decided up to the period end."""
    decided = con.execute("""
        SELECT tenant, product, count(*) FILTER (WHERE decided = 'success'),
               count(*) FILTER (WHERE decided = 'failure'), list_sort(list(DISTINCT criteria))
        FROM _task_state WHERE decided IS NOT NULL GROUP BY ALL""").fetchall()
    unknown = con.execute(f"""
        SELECT tenant, product, count(DISTINCT task_id) FROM requests r
        ANTI JOIN (SELECT task_id FROM _task_state WHERE latest IS NOT NULL) d ON r.task_id = d.task_id
        WHERE r.task_id IS NOT NULL AND {_in_period('r.booked_at', start, end)}
        GROUP BY ALL""").fetchall()
    acc: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0, ()])
    for tenant, product, ok, failed, crit in decided:
        acc[(tenant, product)][0:2] = [int(ok), int(failed)]
        acc[(tenant, product)][3] = tuple(c for c in crit if c is not None)
    for tenant, product, n in unknown:
        acc[(tenant, product)][2] = int(n)
    return tuple(Tasks(t, p, ok, f, u, c) for (t, p), (ok, f, u, c) in sorted(acc.items()))


def _regions(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> tuple[str, ...]:
    """Regions of the period's fleet intervals, provider requests and meters (reports state them)."""
    rows = con.execute(f"""
        SELECT DISTINCT region FROM (
            SELECT region FROM fleet WHERE "start" < TIMESTAMPTZ '{_iso(end)}' AND "end" > TIMESTAMPTZ '{_iso(start)}'
            UNION ALL SELECT region FROM _groups WHERE pool IS NULL
            UNION ALL SELECT region FROM _met)
        WHERE region IS NOT NULL AND region NOT IN ('', '*') ORDER BY 1""").fetchall()
    return tuple(r for (r,) in rows)


# ---- 7. the run --------------------------------------------------------------------------------

def _merge(lines: Sequence[Line]) -> tuple[Line, ...]:
    """Lines with the same key become one (amounts and quantities add); sorted; empty lines dropped."""
    acc: dict[tuple, list] = {}
    for ln in lines:
        key = (ln.day, ln.kind, ln.tenant, ln.product, ln.model, ln.pool, ln.provider, ln.category, ln.work,
               ln.shared_from, ln.unit)
        if key in acc:
            acc[key][0] += ln.quantity
            acc[key][1] += ln.amount
        else:
            acc[key] = [ln.quantity, ln.amount]
    out = [Line(*k[:10], q, k[10], a) for k, (q, a) in acc.items() if a != 0 or q != 0]
    return tuple(sorted(out, key=Line.sort_key))


def allocate(con: duckdb.DuckDBPyConnection, *, start: datetime, end: datetime, prices: PriceIndex,
             policy: Policy = Policy(), progress: Callable[[str], None] | None = None) -> Allocation:
    """Allocate ``[start, end)`` (end exclusive, UTC) over the facts visible in `con`.

    Raises :class:`AllocationError` listing every problem (a missing price or FX rate names meter,
    sku, region and time; a unit that cannot convert names the meter) and when Σ lines != total.
    """
    problems = policy.problems()
    if start.tzinfo is None or end.tzinfo is None:
        problems.append("the period bounds must be aware UTC instants")
    elif not start < end:
        problems.append(f"the period is empty: {_iso(start)} is not before {_iso(end)}")
    if problems:
        raise AllocationError(problems)
    say = progress or (lambda _stage: None)
    pricer = _Pricer(prices, policy.currency)

    say("reading the period's facts")                                                     # 2, 5
    _prepare(con, start, end, policy, pricer)

    say("pricing the fleet, provider tokens, meters and charges")                        # 1
    fleet = price_fleet(con, pricer, start, end)
    provider = price_provider(con, pricer)
    meters = price_meters(con, pricer)
    charge_days = price_charges(con, pricer, start, end)

    say("weighing requests")                                                              # 2
    weights = _gpu_groups(con)

    say("splitting GPU cost")                                                             # 3
    coeffs, flags, weight_problems = gpu_coefficients(fleet, weights, policy)
    problems = sorted(pricer.problems.values()) + weight_problems
    if problems:
        raise AllocationError(problems)
    gpu_groups, slack = _apply_gpu_split(con, coeffs)

    lines: list[Line] = []
    for (day, tenant, product, model, pool, work), g in gpu_groups.items():
        lines.append(Line(day, "tenant", tenant, product, model, pool, None, "gpu", work, None, g.quantity,
                          "token", g.amount))
    provider_amounts = {k: quantize(g.amount) for k, g in provider.items()}
    for (day, tenant, product, model, prov, work), g in provider.items():
        lines.append(Line(day, "tenant", tenant, product, model, None, prov, "provider_tokens", work, None,
                          g.quantity, "token", provider_amounts[(day, tenant, product, model, prov, work)]))
    meter_amounts = {k: quantize(g.amount) for k, g in meters.items()}
    for (day, tenant, product, category, work, unit), g in meters.items():
        lines.append(Line(day, "tenant", tenant, product, None, None, None, category, work, None, g.quantity,
                          unit, meter_amounts[(day, tenant, product, category, work, unit)]))

    say("booking idle")                                                                   # 4
    gpu_direct: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    direct: dict[str, Decimal] = defaultdict(Decimal)
    for ln in lines:
        direct[ln.tenant] += ln.amount
        if ln.category == "gpu":
            gpu_direct[(ln.pool, ln.tenant)] += ln.amount
    lines += _idle_lines(fleet, coeffs, slack, gpu_direct, policy)

    say("allocating shared charges")                                                      # 6
    usage = _usage(con)
    tokens: dict[str, int] = defaultdict(int)
    for u in usage:
        tokens[u.tenant] += u.active_tokens
    charge_problems: dict[tuple, str] = {}
    charge_lines, notes = _charge_lines(charge_days, direct, tokens, charge_problems)
    if charge_problems:
        raise AllocationError(sorted(charge_problems.values()))
    lines += charge_lines

    say("checking conservation")                                                          # 7
    total = (sum((ph.c_serve + ph.c_reserve for ph in fleet.values()), ZERO)
             + sum(provider_amounts.values(), ZERO) + sum(meter_amounts.values(), ZERO)
             + sum((cd.amount for cd in charge_days), ZERO))
    merged = _merge(lines)
    lines_total = sum((ln.amount for ln in merged), ZERO)
    if lines_total != total:
        raise AllocationError([f"conservation failed: lines sum to {lines_total}, priced resources to {total} "
                               f"(difference {lines_total - total}); the run is not written"])
    if any(ln.amount != quantize(ln.amount) for ln in merged):
        raise AllocationError(["a line has more precision than the ledger's 1e-6; the run is not written"])

    notes = list(notes) + _notes(fleet, weights, flags, policy)
    return Allocation(start=start, end=end, policy=policy, price_books=tuple(prices.refs), total=total,
                      lines=merged, flags=tuple(sorted(flags, key=lambda f: (f.kind, f.pool, f.hour))),
                      notes=tuple(notes), usage=usage, tasks=_tasks(con, start, end),
                      regions=_regions(con, start, end))


def _notes(fleet, weights, flags, policy: Policy) -> list[str]:
    notes = []
    if policy.basis == "kv_token_seconds":
        notes.append("basis kv_token_seconds: capacity in tokens/s does not apply, so each serving hour's cost "
                     "goes wholly to its requests (r = C_serve / W); hours without requests are idle slack")
    pools_with_fleet = {pool for pool, _ in fleet}
    for pool in sorted({pool for pool, _ in weights} - pools_with_fleet):
        notes.append(f"pool {pool} has requests but no fleet interval in the period: its requests carry no GPU cost")
    by_kind: dict[tuple[str, str], int] = defaultdict(int)
    for f in flags:
        by_kind[(f.kind, f.pool)] += 1
    for (kind, pool), n in sorted(by_kind.items()):
        notes.append(f"pool {pool}: {n} hours flagged {kind}")
    return notes


def period_label(start: datetime, end: datetime) -> dict[str, str]:
    """``{"start": ISO, "end": ISO}`` of a period (end exclusive)."""
    return {"start": _iso(start), "end": _iso(end)}
