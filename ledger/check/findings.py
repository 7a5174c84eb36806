"""The pre-flight of the facts against the price books: every usage an allocation could not price.

Each kind of finding is one DuckDB pass over the committed facts (``ledger.facts`` views, each row
tagged with its batch), grouped by what the allocation looks a price up by and by *price span*
(the time between two instants at which any price starts or ends, so that within one span the set
of prices in force is constant). Python then asks :class:`~ledger.pricebook.PriceIndex` once per
group, with the keys and fallbacks of ``ledger/allocate/pricing.py``: never once per row.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from .. import facts
from ..allocate.records import FALLBACK_METERS, REASONING_METER, TOKEN_BUCKETS
from ..errors import Problem
from ..instants import iso
from ..pricebook import NoPriceError, PriceIndex
from ..vocab import TENANT_RULE, ChargeRule, rule_choices
from .views import Scope, at_us, connect, price_spans

#: Kinds of finding, in the order they are listed.
FINDING_KINDS = ("no_price_books", "no_price", "no_gpu_price", "no_fleet", "unknown_charge_target")
#: The rules a charge's ``allocate`` may name (ledger/allocate/charges.py); ``tenant:<name>`` besides.
CHARGE_RULES = tuple(ChargeRule)
#: The SQL of each token bucket of a provider request (allocate/records.py TOKEN_BUCKETS, summed in
#: allocate/period.py `_prepare`), and of the reasoning part of its output and the rest of it.
BUCKET_SQL = {"uncached": "input_tokens - cached_input_tokens - cache_write_input_tokens - cache_write_1h_input_tokens",
              "cached": "cached_input_tokens", "cache_write": "cache_write_input_tokens",
              "cache_write_1h": "cache_write_1h_input_tokens", "output": "output_tokens",
              "reasoning": "reasoning_tokens", "output_rest": "output_tokens - reasoning_tokens"}
_SHAPE = tuple(b for b, _ in TOKEN_BUCKETS) + ("reasoning", "output_rest")


@dataclass(frozen=True)
class Finding:
    """One problem: `kind` (one of FINDING_KINDS) and `source`, the facts it is about (requests,
    meters, fleet, charges); the price key `meter`, `sku`, `region`, `purchase_option` and the
    request's `provider`; the `pool` (no_fleet) or the charge's `target` (its allocate rule); empty
    where it does not apply. `first_at`, `last_at`: the first and last usage (UTC; for fleet, the
    start and the exclusive end of the unpriced time); `count`: requests, meter events, fleet
    intervals or charges concerned; `nearest`: the closest names that do exist (SKUs of the meter,
    pools, tenants or rules); `batches`: the ingest batches of those rows; `message`: one line."""

    kind: str
    source: str
    message: str
    meter: str = ""
    sku: str = ""
    region: str = ""
    purchase_option: str = ""
    provider: str = ""
    pool: str = ""
    target: str = ""
    first_at: datetime | None = None
    last_at: datetime | None = None
    count: int = 0
    nearest: tuple[str, ...] = ()
    batches: tuple[str, ...] = ()

    @property
    def problem(self) -> Problem:
        """The finding as the problem line `ledger check` prints: its message (a finding is about
        facts, of no one file: JSON, CSV and the table carry its key, counts and batches)."""
        return Problem(message=self.message)


@dataclass(frozen=True)
class CheckReport:
    """What a check looked at and found: the period `start`, `end` (None: the whole ledger), the
    `batch` it was restricted to (None: every committed batch), the `price_books` (``name@version``),
    `checked` (rows looked at by kind of facts) and the `findings`, in a stable order."""

    start: datetime | None
    end: datetime | None
    batch: str | None
    price_books: tuple[str, ...]
    checked: dict[str, int] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings


# ---- the allocation's lookups ---------------------------------------------------------------------

def _missing(index: PriceIndex, **key) -> bool:
    try:
        index.price_at(**key)
    except NoPriceError:
        return True
    return False


def _provider_price_missing(index: PriceIndex, *, model: str, region: str, provider: str, service_tier: str,
                            at: datetime, has: dict[str, bool]) -> list[tuple[str, str | None]]:
    """The lookups of allocate/pricing.py `price_provider` for provider requests of one shape (`has`:
    which buckets hold tokens) at `at`: sku = the model, the request's region (``*`` when it has none)
    then ``*``, its service tier as purchase option then ``*``, its provider then ``*``. Reasoning
    tokens take the ``reasoning_tokens`` price when one is in force (then only the rest of the output
    needs the output price); cache writes without a price of their own fall back to the input price.
    Returns the bucket meters with no price in force, each with the fallback meter that has none
    either (None: no fallback)."""
    def missing(meter: str) -> bool:
        return _missing(index, meter=meter, sku=model, region=region, purchase_option=service_tier,
                        provider=provider, at=at)

    needs = {meter: has[bucket] for bucket, meter in TOKEN_BUCKETS}
    if has["reasoning"] and not missing(REASONING_METER):
        needs["output_tokens"] = has["output_rest"]
    out = []
    for meter, needed in needs.items():
        if needed and missing(meter):
            fallback = FALLBACK_METERS.get(meter)
            if fallback is None or missing(fallback):
                out.append((meter, fallback))
    return out


# ---- accumulating groups into findings ------------------------------------------------------------

@dataclass
class _Acc:
    """Groups of one finding key: rows, first and last instant (µs), batches, and other names."""

    count: int = 0
    first: int | None = None
    last: int | None = None
    batches: set = field(default_factory=set)
    names: set = field(default_factory=set)

    def add(self, n: int, first: int | None, last: int | None, batches: Iterable[str] | None) -> None:
        self.count += int(n or 0)
        if first is not None:
            self.first = first if self.first is None else min(self.first, first)
        if last is not None:
            self.last = last if self.last is None else max(self.last, last)
        self.batches.update(b for b in batches or [] if b)


def _near(name: str, names: Iterable[str]) -> tuple[str, ...]:
    return tuple(difflib.get_close_matches(name, sorted(set(names) - {name}), n=3, cutoff=0.6))


def _list(names: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _where(acc: _Acc, noun: str, to: str = "to") -> str:
    """``3 requests from A to B, batch X``."""
    n = f"{acc.count} {noun}{'' if acc.count == 1 else 's'}"
    first, last = at_us(acc.first), at_us(acc.last)
    when = f" at {iso(first)}" if first == last else f" from {iso(first)} {to} {iso(last)}"
    batches = sorted(acc.batches)
    return f"{n}{when if first else ''}, batch{'es' if len(batches) > 1 else ''} {_list(batches)}"


def _explain(index: PriceIndex, meter: str, sku: str, region: str) -> tuple[str, tuple[str, ...]]:
    """Why nothing is in force, and the nearest SKUs: a meter no book prices (and the nearest
    meters), a SKU with no price for the meter (and the nearest SKUs of the meter), or a SKU priced
    only for other keys or times (then it names those keys, ``region/option[/provider]``, those of
    `region` first)."""
    prices = index.prices()
    meters = {p.meter for p in prices}
    if meter not in meters:
        close = _near(meter, meters)
        return f"; no price book prices meter {meter}" + (f" (nearest meters: {', '.join(close)})" if close else ""), ()
    own = sorted({(p.region != region, "/".join((p.region, p.purchase_option)
                                                 + ((p.provider,) if p.provider != "*" else ())))
                  for p in prices if p.meter == meter and p.sku == sku})
    own = [label for _, label in own]
    if own:
        return f"; {sku} has {meter} prices for {_list(own, 4)}, none in force for this key at that time", ()
    nearest = _near(sku, {p.sku for p in prices if p.meter == meter})
    return (f"; nearest SKUs: {', '.join(nearest)}" if nearest else f"; no {meter} SKU is close to {sku}"), nearest


def _finding(kind: str, source: str, acc: _Acc, message: str, **key) -> Finding:
    return Finding(kind=kind, source=source, message=message, first_at=at_us(acc.first), last_at=at_us(acc.last),
                   count=acc.count, batches=tuple(sorted(acc.batches)), **key)


# ---- the passes -----------------------------------------------------------------------------------

def _token_findings(con, index: PriceIndex, scope: Scope, span: str) -> list[Finding]:
    """Provider requests, grouped by what price_provider looks up, price span and shape (which of
    their buckets hold tokens): each request is in one group, so counts add up per missing price."""
    shape = ", ".join(f"({BUCKET_SQL[b]}) > 0" for b in _SHAPE)
    rows = con.execute(f"""
        SELECT model, coalesce(region, '*'), coalesce(provider, '*'), coalesce(service_tier, 'standard'), {span},
               {shape}, count(*), min(epoch_us(booked_at)), max(epoch_us(booked_at)), {scope.batches()}
        FROM requests WHERE pool IS NULL AND {scope.instant('booked_at')} GROUP BY ALL""").fetchall()
    acc: dict[tuple, _Acc] = {}
    falls: dict[tuple, str] = {}
    for model, region, provider, tier, _span, *rest in rows:
        has = dict(zip(_SHAPE, rest[:len(_SHAPE)]))
        n, first, last, batches = rest[len(_SHAPE):]
        for meter, fallback in _provider_price_missing(index, model=model, region=region, provider=provider,
                                                       service_tier=tier, at=at_us(first), has=has):
            key = (meter, model, region, tier, provider)
            acc.setdefault(key, _Acc()).add(n, first, last, batches)
            if fallback:
                falls[key] = fallback
    out = []
    for key, a in sorted(acc.items()):
        meter, sku, region, option, provider = key
        why, nearest = _explain(index, falls.get(key, meter), sku, region)
        nor = f" (nor for {falls[key]}, its fallback)" if key in falls else ""
        out.append(_finding("no_price", "requests", a, meter=meter, sku=sku, region=region, purchase_option=option,
                            provider=provider, nearest=nearest,
                            message=f"requests: no price in force for meter {meter}{nor}, sku {sku}, region {region}, "
                                    f"purchase option {option}, provider {provider}: {_where(a, 'request')}"
                                    f"{why}"))
    return out


def _meter_findings(con, index: PriceIndex, scope: Scope, span: str) -> list[Finding]:
    """Meters: price_meters looks up (meter, sku, region or ``*``, purchase option ``*``)."""
    rows = con.execute(f"""
        SELECT meter, sku, coalesce(region, '*'), {span}, count(*), min(epoch_us(booked_at)),
               max(epoch_us(booked_at)), {scope.batches()}
        FROM meters WHERE {scope.instant('booked_at')} GROUP BY ALL""").fetchall()
    acc: dict[tuple, _Acc] = {}
    for meter, sku, region, _span, n, first, last, batches in rows:
        if _missing(index, meter=meter, sku=sku, region=region, purchase_option="*", at=at_us(first)):
            acc.setdefault((meter, sku, region), _Acc()).add(n, first, last, batches)
    out = []
    for (meter, sku, region), a in sorted(acc.items()):
        why, nearest = _explain(index, meter, sku, region)
        out.append(_finding("no_price", "meters", a, meter=meter, sku=sku, region=region, purchase_option="*",
                            nearest=nearest,
                            message=f"meters: no price in force for meter {meter}, sku {sku}, region {region}, "
                                    f"purchase option *: {_where(a, 'event')}{why}"))
    return out


def _fleet_findings(con, index: PriceIndex, scope: Scope) -> list[Finding]:
    """Fleet intervals: price_fleet looks up (gpu_time, device, region, purchase option) over every
    instant of the interval in the period; each interval is cut at the price spans."""
    a, b = scope.clip("start", scope.start, "greatest"), scope.clip("end", scope.end, "least")
    rows = con.execute(f"""
        WITH f AS (SELECT *, {a} AS a, {b} AS b FROM fleet WHERE {scope.span('start', 'end')}),
             p AS (SELECT f.*, greatest(f.a, coalesce(s.lo, f.a)) AS lo, least(f.b, coalesce(s.hi, f.b)) AS hi, s.i
                   FROM f JOIN _spans s ON (s.lo IS NULL OR f.b > s.lo) AND (s.hi IS NULL OR f.a < s.hi))
        SELECT device, region, purchase_option, i, min(epoch_us(lo)), max(epoch_us(hi)), {scope.batches()},
               list(DISTINCT interval_id), list(DISTINCT pool)
        FROM p GROUP BY ALL""").fetchall()
    acc: dict[tuple, _Acc] = {}
    ids: dict[tuple, set] = {}
    for device, region, option, _span, first, last, batches, intervals, pools in rows:
        if _missing(index, meter="gpu_time", sku=device, region=region, purchase_option=option, at=at_us(first)):
            key = (device, region, option)
            acc.setdefault(key, _Acc()).add(0, first, last, batches)
            acc[key].names.update(pools)
            ids.setdefault(key, set()).update(intervals)
    out = []
    for (device, region, option), x in sorted(acc.items()):
        x.count = len(ids[(device, region, option)])
        why, nearest = _explain(index, "gpu_time", device, region)
        out.append(_finding("no_gpu_price", "fleet", x, meter="gpu_time", sku=device, region=region,
                            purchase_option=option, nearest=nearest,
                            message=f"fleet: no gpu_time price in force for device {device}, region {region}, "
                                    f"purchase option {option}: {_where(x, 'interval', 'until')} "
                                    f"(pools {_list(sorted(x.names))}){why}"))
    return out


#: The start of a request's UTC hour in epoch microseconds, in integer arithmetic: the same hour as
#: ``date_trunc('hour', booked_at)`` in UTC, without a calendar per row (a quarter of the time of the
#: group-by; the double modulo rounds instants before 1970 down too).
_HOUR_US = "epoch_us(booked_at) - (epoch_us(booked_at) % 3600000000 + 3600000000) % 3600000000"


def _pool_findings(con, scope: Scope) -> list[Finding]:
    """Requests on a pool in hours with no serving fleet interval: their GPU cost would be $0. A pool
    with no serving interval in the period at all fails the allocation (allocate/engine.py, unless
    allowed with --allow-pool-without-fleet); hours without one in a served pool are flagged no_fleet."""
    in_period = Scope(scope.start, scope.end, None).span("start", "end")  # the fleet of the whole ledger
    rows = con.execute(f"""
        WITH f AS (SELECT * FROM fleet WHERE role = 'serving' AND {in_period}),
             h AS (SELECT pool, CAST(make_timestamp(hour_us) AS TIMESTAMPTZ) AS hour, n, a, z, batches FROM (
                   SELECT pool, {_HOUR_US} AS hour_us, count(*) AS n, min(epoch_us(booked_at)) AS a,
                          max(epoch_us(booked_at)) AS z, {scope.batches()} AS batches
                   FROM requests WHERE pool IS NOT NULL AND {scope.instant('booked_at')} GROUP BY ALL))
        SELECT h.pool, sum(h.n), min(h.a), max(h.z), count(*), flatten(list(h.batches)),
               h.pool IN (SELECT pool FROM f) AS served
        FROM h ANTI JOIN f ON f.pool = h.pool AND f."start" < h.hour + INTERVAL 1 HOUR AND f."end" > h.hour
        GROUP BY h.pool ORDER BY h.pool""").fetchall()
    pools = {p for (p,) in con.execute("SELECT DISTINCT pool FROM fleet").fetchall()} if rows else set()
    out = []
    for pool, n, first, last, hours, batches, served in rows:
        a = _Acc()
        a.add(n, first, last, batches)
        nearest = () if served else _near(pool, pools)
        what = (f"has {hours} hour{'s' if hours != 1 else ''} of requests with no serving fleet interval (flagged "
                "no_fleet)" if served else "has requests and no serving fleet interval")
        near = f"; nearest pools: {', '.join(nearest)}" if nearest else ""
        out.append(_finding("no_fleet", "requests", a, pool=pool, nearest=nearest,
                            message=f"requests: pool {pool} {what}: {_where(a, 'request')}; their GPU cost would "
                                    f"be $0{near}"))
    return out


def _charge_findings(con, scope: Scope, tenants: set[str]) -> list[Finding]:
    """Charges whose rule names an unregistered tenant, or is no rule at all (allocate/charges.py
    strips the rule and the tenant name)."""
    rows = con.execute(f"""
        SELECT trim(allocate), count(*), min(epoch_us(period_start)), max(epoch_us(period_end)), {scope.batches()},
               list(DISTINCT charge_id ORDER BY charge_id)
        FROM charges WHERE {scope.span('period_start', 'period_end')} GROUP BY ALL ORDER BY 1""").fetchall()
    out = []
    for rule, n, first, last, batches, ids in rows:
        name = rule[len(TENANT_RULE):].strip() if rule.startswith(TENANT_RULE) else None
        if rule in CHARGE_RULES or (name and name in tenants):
            continue
        if name:
            nearest = _near(name, tenants)
            why = f"{name} is not a registered tenant" + (f" (nearest: {', '.join(nearest)})" if nearest else "")
        else:
            nearest = _near(rule, CHARGE_RULES + tuple(f"{TENANT_RULE}{t}" for t in tenants))
            why = f"not {rule_choices()}" + (
                f" (nearest: {', '.join(nearest)})" if nearest else "")
        a = _Acc()
        a.add(n, first, last, batches)
        out.append(_finding("unknown_charge_target", "charges", a, target=rule, nearest=nearest,
                            message=f"charges: allocate {rule!r} of charge{'s' if n > 1 else ''} {_list(ids)}: {why}; "
                                    f"batch{'es' if len(a.batches) > 1 else ''} {_list(sorted(a.batches))}"))
    return out


def _checked(con, scope: Scope) -> tuple[dict[str, int], int]:
    """The rows in scope of each kind (what the report says it checked), and of them the requests on
    no pool (what is priced by tokens; the rest are on a pool): one statement, one scan a kind."""
    rows = con.execute(f"""
        SELECT * FROM (SELECT count(*), count(*) FILTER (WHERE pool IS NULL) FROM requests
                       WHERE {scope.instant('booked_at')}),
                      (SELECT count(*) FROM meters WHERE {scope.instant('booked_at')}),
                      (SELECT count(*) FROM fleet WHERE {scope.span('start', 'end')}),
                      (SELECT count(*) FROM charges WHERE {scope.span('period_start', 'period_end')})""").fetchone()
    requests, unpooled, meters, fleet, charges = (int(n) for n in rows)
    return {"requests": requests, "meters": meters, "fleet": fleet, "charges": charges}, unpooled


def check_facts(con: duckdb.DuckDBPyConnection, *, index: PriceIndex | None, tenants: Iterable[str],
                start: datetime | None = None, end: datetime | None = None, batch: str | None = None) -> CheckReport:
    """Check the facts of `con` (views made by :func:`connect`) against `index` (None: no book is
    loaded). `start`/`end` restrict to a period (usages by booked_at, intervals and charges by
    overlap); `batch` to the rows of one batch (the fleet and tenants they are checked against stay
    the whole ledger's)."""
    scope = Scope(start, end, batch)
    checked, unpooled = _checked(con, scope)
    # each pass reads only rows the counts took in (the same scope): a pass with none (in the check
    # of a batch, every kind but the batch's own) has no finding, and its facts are not read again
    has = {k: n > 0 for k, n in checked.items()}
    found: list[Finding] = []
    if index is None or not index.books:
        priced = unpooled + checked["meters"] + checked["fleet"]
        if priced:
            found.append(Finding(kind="no_price_books", source="price books", count=int(priced),
                                 message=f"no price books are loaded: {priced} usage{'' if priced == 1 else 's'} "
                                         "cannot be priced (run `ledger pricebook load`)"))
    elif unpooled or has["meters"] or has["fleet"]:
        span = price_spans(con, index)
        if unpooled:
            found += _token_findings(con, index, scope, span)
        if has["meters"]:
            found += _meter_findings(con, index, scope, span)
        if has["fleet"]:
            found += _fleet_findings(con, index, scope)
    if checked["requests"] > unpooled:
        found += _pool_findings(con, scope)
    if has["charges"]:
        found += _charge_findings(con, scope, set(tenants))
    order = {k: i for i, k in enumerate(FINDING_KINDS)}
    found.sort(key=lambda f: (order[f.kind], f.source, f.meter, f.sku, f.region, f.purchase_option, f.provider,
                              f.pool, f.target))
    return CheckReport(start=start, end=end, batch=batch, price_books=tuple(index.refs) if index else (),
                       checked=checked, findings=tuple(found))


def _read_for(committed: dict[str, list[str]], batch: str | None) -> dict[str, list[str]]:
    """The committed batches a check reads: all of them, but for the check of one `batch` only that
    batch (every finding is about the batch's rows: :class:`Scope`), so that the check of a new batch
    reads its own files rather than every fact of the ledger; the fleet is read whole all the same,
    as requests are checked against the fleet of every batch (no_fleet)."""
    if batch is None:
        return committed
    return {kind: ids if kind == "fleet" else [b for b in ids if b == batch] for kind, ids in committed.items()}


def check_ledger(session, *, start: datetime | None = None, end: datetime | None = None, batch: str | None = None,
                 home: Path | None = None, con: duckdb.DuckDBPyConnection | None = None) -> CheckReport:
    """Check the ledger's committed facts against its loaded price books and registered tenants. The
    facts are those of the ledger home `home` (its folder; default the configured one, resolved here).
    `session`: a session or a Core connection (the books, batches and tenants are read through Core).
    `con`: a DuckDB connection to make the check's views in and leave open (the ingest's, for the
    check of the batch it wrote); without one the check opens its own and closes it."""
    from .. import config, store

    home = config.ledger_home() if home is None else home

    books = store.books_from_store(session)
    index = PriceIndex(books) if books else None
    own = con is None
    con = connect(_read_for(facts.committed_batches(session), batch), home, con)
    try:
        return check_facts(con, index=index, tenants=store.dim_names(session, kind="tenant"), start=start, end=end,
                           batch=batch)
    finally:
        if own:
            con.close()
