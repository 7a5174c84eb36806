"""A period's bill placed on the ledger's resources: billed amounts per pool, provider and
category, and the rows no rule places, in the run's currency.

A bill row belongs to the period of its ``booked_at`` (its ``ChargePeriodStart``, or with
``ingest bill --as-adjustment`` the start of the open period it was booked into), as a request
does. What is compared is its **effective cost** (FOCUS ``EffectiveCost``: after every discount,
commitments amortized over the usage they cover): a savings plan's fee row has an effective cost
of 0 and the usage it covers carries the discounted cost, so nothing counts twice. ``BilledCost``
and ``ListCost`` are summed beside it. A row in another currency than the run's is converted at the
price books' FX rate in force at its ``booked_at``. Each resource's amount is quantized once, half
to even, to the ledger's 1e-6; so is each group of unmatched rows.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, localcontext
from pathlib import Path

from .. import duck, facts
from ..money import ZERO, quantize
from ..pricebook import NoPriceError, PriceIndex
from ..sqltext import literal
from .billmap import BillMap, ReconcileError

#: The kinds of resource a bill row can be the cost of, in report order.
RESOURCE_KINDS = ("pool", "provider", "category")
#: The columns unmatched rows are grouped by (to write a rule from the list).
UNMATCHED_KEYS = ("provider", "service_name", "service_category", "resource_id", "charge_category")


@dataclass(frozen=True, order=True)
class Resource:
    """A ledger resource a cost is compared on: `kind` (pool | provider | category) and `name`."""

    kind: str
    name: str

    def label(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Billed:
    """What the bill says a resource cost in the period, in the run's currency at 1e-6: `effective`
    (compared), `billed_cost` and `list_cost`, `corrections` (the effective cost of its
    ``ChargeClass = Correction`` rows, part of `effective`), `rows`, the `rules` that placed them, and
    `hours`: the UTC hours of the period (epoch hours) its ``Usage`` rows cover
    (:mod:`ledger.reconcile.coverage`)."""

    effective: Decimal
    billed_cost: Decimal
    list_cost: Decimal
    corrections: Decimal
    rows: int
    rules: tuple[str, ...]
    hours: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Unmatched:
    """Bill rows no rule places, grouped by `key` (:data:`UNMATCHED_KEYS`, in order): `rows`,
    `effective`, `billed_cost` (run currency, 1e-6) and `corrections` among them."""

    key: tuple[str | None, ...]
    rows: int
    effective: Decimal
    billed_cost: Decimal
    corrections: int

    def as_dict(self) -> dict:
        return dict(zip(UNMATCHED_KEYS, self.key))


@dataclass(frozen=True)
class Bill:
    """The bill of ``[start, end)`` placed by a map: `resources` (Resource -> Billed), `unmatched`
    groups (largest effective cost first), the `batches` its rows came from, `rows` in all, the
    `currency` it is stated in, and `notes` (batches that may restate each other)."""

    start: datetime
    end: datetime
    currency: str
    resources: dict[Resource, Billed]
    unmatched: tuple[Unmatched, ...]
    batches: tuple[str, ...]
    rows: int
    notes: tuple[str, ...] = ()

    @property
    def unmatched_total(self) -> Decimal:
        return sum((u.effective for u in self.unmatched), ZERO)

    @property
    def billed_total(self) -> Decimal:
        """Σ effective cost of every row of the period: placed and unmatched."""
        return sum((b.effective for b in self.resources.values()), ZERO) + self.unmatched_total


def read_bill(s, bill_map: BillMap, *, start: datetime, end: datetime, currency: str, prices: PriceIndex | None,
              home: Path) -> Bill:
    """The committed bill rows of ``[start, end)`` placed by `bill_map`, in `currency`, from the facts of
    the ledger home `home` (its folder). Raises ReconcileError when a row's currency has no FX rate in force."""
    files = facts.committed_files(s, "bill", home, period=(start, end))  # the months of the period (booked_at)
    con = duck.connect("reconcile", home=home, ordered=True)
    try:
        body = facts.files_sql("bill", files, filename=True, con=con) if files else \
            f"SELECT *, CAST(NULL AS VARCHAR) AS filename FROM ({facts.empty_select('bill')})"
        lo, hi = start.astimezone(timezone.utc).isoformat(), end.astimezone(timezone.utc).isoformat()
        con.execute(f"CREATE TEMP TABLE b AS SELECT *, {bill_map.rule_sql()} AS _rule FROM ({body}) "
                    f"WHERE booked_at >= TIMESTAMPTZ '{lo}' AND booked_at < TIMESTAMPTZ '{hi}'")
        return _placed(con, bill_map, start, end, currency, prices)
    finally:
        con.close()


def _rate(prices: PriceIndex | None, cur: str, currency: str, at: datetime, problems: dict) -> Decimal:
    if cur == currency:
        return Decimal(1)
    try:
        if prices is None:
            raise NoPriceError(f"no price books are loaded to convert {cur} to {currency}")
        return prices.fx_rate(cur, currency, at)
    except NoPriceError as e:
        problems.setdefault(cur, f"bill rows in {cur}: {e} (load a price book with that [[fx]] rate)")
        return ZERO


def _placed(con, bill_map: BillMap, start: datetime, end: datetime, currency: str,
            prices: PriceIndex | None) -> Bill:
    keys = ", ".join(UNMATCHED_KEYS)
    sums = ("sum(effective_cost), sum(billed_cost), sum(list_cost), "
            "sum(effective_cost) FILTER (WHERE charge_class = 'Correction'), count(*), "
            "count(*) FILTER (WHERE charge_class = 'Correction')")
    # Rows in the run's currency are summed as they are; others per instant, converted at its rate.
    same = f"billing_currency = {literal(currency)}"
    rows = con.execute(f"SELECT _rule, {keys}, billing_currency, NULL, {sums} FROM b WHERE {same} "
                       f"GROUP BY ALL UNION ALL SELECT _rule, {keys}, billing_currency, booked_at, {sums} FROM b "
                       f"WHERE NOT ({same}) GROUP BY ALL").fetchall()
    problems: dict = {}
    placed: dict = defaultdict(lambda: [ZERO, ZERO, ZERO, ZERO, 0, set()])
    loose: dict = defaultdict(lambda: [ZERO, ZERO, 0, 0])
    n = len(UNMATCHED_KEYS)
    with localcontext() as ctx:
        ctx.prec = 80  # exact: a bill amount has 38 digits at most, a rate a few dozen
        _add(rows, n, bill_map, placed, loose, prices, currency, start, problems)
    if problems:
        raise ReconcileError(sorted(problems.values()))
    hours = _usage_hours(con, bill_map, start, end)
    resources = {res: Billed(effective=quantize(a[0]), billed_cost=quantize(a[1]), list_cost=quantize(a[2]),
                             corrections=quantize(a[3]), rows=a[4], rules=tuple(sorted(a[5])),
                             hours=frozenset(hours.get(res, ())))
                 for res, a in sorted(placed.items())}
    unmatched = sorted((Unmatched(key=k, rows=a[2], effective=quantize(a[0]), billed_cost=quantize(a[1]),
                                  corrections=a[3]) for k, a in loose.items()),
                       key=lambda u: (-abs(u.effective), -abs(u.billed_cost), tuple(x or "" for x in u.key)))
    files = [r[0] for r in con.execute("SELECT DISTINCT filename FROM b WHERE filename IS NOT NULL").fetchall()]
    batches = tuple(sorted({facts.batch_of(Path(f)) for f in files}))
    total = con.execute("SELECT count(*) FROM b").fetchone()[0]
    return Bill(start=start, end=end, currency=currency, resources=resources, unmatched=tuple(unmatched),
                batches=batches, rows=total, notes=_restated(con, batches))


HOUR_S = 3600


def hours_sql(first: str, last: str, lo: str, hi: str) -> str:
    """SQL: the epoch hours (whole UTC hours since 1970) ``[first, last)`` touches within ``[lo, hi)``,
    one row each (``unnest``): an hour counts when any part of it is in the span."""
    a, b = f"greatest({first}, {lo})", f"least({last}, {hi})"
    return (f"unnest(range(CAST(floor(epoch({a}) / {HOUR_S}) AS BIGINT), "
            f"CAST(ceil(epoch({b}) / {HOUR_S}) AS BIGINT)))")


def _usage_hours(con, bill_map: BillMap, start: datetime, end: datetime) -> dict[Resource, set[int]]:
    """The epoch hours of ``[start, end)`` the charge periods of each resource's ``Usage`` rows cover
    (the hours the bill bills usage of it in; a fee, tax or credit row covers none)."""
    lo, hi = (literal(t.astimezone(timezone.utc).isoformat()) + "::TIMESTAMPTZ" for t in (start, end))
    rows = con.execute(f"SELECT DISTINCT _rule, h FROM (SELECT _rule, "
                       f"{hours_sql('charge_period_start', 'charge_period_end', lo, hi)} AS h FROM b "
                       f"WHERE _rule IS NOT NULL AND charge_category = 'Usage' AND charge_period_start < {hi} "
                       f"AND charge_period_end > {lo})").fetchall()
    out: dict[Resource, set[int]] = defaultdict(set)
    for rule, hour in rows:
        r = bill_map.rules[rule]
        out[Resource(r.kind, r.target)].add(hour)
    return out


def _add(rows, n: int, bill_map: BillMap, placed: dict, loose: dict, prices: PriceIndex | None, currency: str,
         start: datetime, problems: dict) -> None:
    """Add each grouped row's sums, converted to `currency`, to its resource or unmatched group."""
    for rule, *rest in rows:
        key, (cur, at, eff, billed, listed, corr, count, ncorr) = tuple(rest[:n]), rest[n:]
        rate = _rate(prices, cur, currency, at or start, problems)
        if rule is None:
            acc = loose[key]
            acc[0] += eff * rate
            acc[1] += billed * rate
            acc[2] += count
            acc[3] += ncorr
            continue
        r = bill_map.rules[rule]
        acc = placed[Resource(r.kind, r.target)]
        acc[0] += eff * rate
        acc[1] += billed * rate
        acc[2] += listed * rate
        acc[3] += (corr or ZERO) * rate
        acc[4] += count
        acc[5].add(r.label)


def _restated(con, batches: tuple[str, ...]) -> tuple[str, ...]:
    """A note when the period's rows of one provider come from more than one batch: a cloud restates
    a month's export until it is final, and an export ingested twice in two versions counts twice."""
    if len(batches) < 2:
        return ()
    rows = con.execute("SELECT provider, list(DISTINCT regexp_replace(parse_filename(filename, true), '-[^-]*$', '') "
                       "ORDER BY 1) FROM b GROUP BY provider HAVING count(DISTINCT parse_filename(filename, true)) > 1 "
                       "ORDER BY provider").fetchall()
    return tuple(f"bill rows of {prov} in this period come from batches {', '.join(bs)}: if one is a restated "
                 f"export of the other, undo the older (`ledger batches undo BATCH`), or both count"
                 for prov, bs in rows if len(bs) > 1)
