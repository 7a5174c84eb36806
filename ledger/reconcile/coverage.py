"""How much of what the ledger priced the bill covers: per resource, the hours priced, the hours
among them that have a bill row, and their ratio (docs/reconcile.md, "Coverage").

A bill that covers 10 of a pool's 744 hours is a partial bill (an export of a day, the first file
of a month's many): its billed amount is not the month's, and a difference or a true-up computed
from it is wrong by the hours it lacks. ``ledger reconcile`` shows each resource's coverage and warns
under 100%; ``allocate --true-up`` refuses such a bill unless ``--allow-partial-bill``.

- **Hours priced** (UTC hours of the period, an hour counted when any part of it is): a pool's are
  the hours its fleet provisions (every role: the GPU-hours the run prices); a provider's the hours
  its requests count in (``booked_at``); a category's the hours its meters count in and the hours of
  the charges of that category.
- **Hours billed**: the hours of the period covered by the charge period of a ``Usage`` row placed
  on the resource (corrections included). A purchase, tax, credit or adjustment row (a monthly
  fee, a credit) covers no hour of usage, so it cannot make a partial bill look whole.
- **Coverage** = hours priced that are billed ÷ hours priced, rounded down to 1e-4 (so it reads
  1.0000 only when every hour is billed); undefined when nothing is priced.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import ROUND_DOWN, Decimal
from pathlib import Path

from .. import facts
from ..allocate import CHARGE_CATEGORY, meter_category
from ..sqltext import literal
from .bills import HOUR_S, Resource, hours_sql

RATIO_EXP = Decimal("0.0001")


@dataclass(frozen=True)
class Coverage:
    """A resource's coverage: `hours_priced` (UTC hours of the period the run prices it in) and
    `hours_billed` (those of them a Usage bill row placed on it covers)."""

    hours_priced: int
    hours_billed: int

    @property
    def ratio(self) -> Decimal | None:
        """hours billed ÷ hours priced, rounded down to 1e-4; None when nothing is priced."""
        if not self.hours_priced:
            return None
        return (Decimal(self.hours_billed) / Decimal(self.hours_priced)).quantize(RATIO_EXP, rounding=ROUND_DOWN)

    @property
    def partial(self) -> bool:
        """True when some hour priced has no bill row."""
        return self.hours_billed < self.hours_priced

    def shown(self) -> str:
        """``10 of 744 hours (1.34%)``, as warnings and refusals say it."""
        pct = (Decimal(100 * self.hours_billed) / Decimal(self.hours_priced)).quantize(Decimal("0.01"),
                                                                                        rounding=ROUND_DOWN)
        return f"{self.hours_billed} of the {self.hours_priced} hours priced ({pct}%)"


def _bounds(start: datetime, end: datetime) -> tuple[str, str]:
    lo, hi = (literal(t.astimezone(timezone.utc).isoformat()) + "::TIMESTAMPTZ" for t in (start, end))
    return lo, hi


def priced_hours(con, start: datetime, end: datetime) -> dict[Resource, frozenset[int]]:
    """The hours of ``[start, end)`` each resource is priced in, from the fact views of `con`
    (``fleet``, ``requests``, ``meters``, ``charges``: :func:`ledger.facts.connect`)."""
    lo, hi = _bounds(start, end)
    out: dict[Resource, set[int]] = defaultdict(set)
    rows = con.execute(f"""
        SELECT 'pool', pool, h FROM (SELECT pool, {hours_sql('"start"', '"end"', lo, hi)} AS h FROM fleet
          WHERE "start" < {hi} AND "end" > {lo}) GROUP BY ALL
        UNION ALL
        SELECT 'provider', provider, CAST(floor(epoch(booked_at) / {HOUR_S}) AS BIGINT) FROM requests
          WHERE provider IS NOT NULL AND provider <> '' AND booked_at >= {lo} AND booked_at < {hi} GROUP BY ALL
        UNION ALL
        SELECT 'meter', meter, CAST(floor(epoch(booked_at) / {HOUR_S}) AS BIGINT) FROM meters
          WHERE booked_at >= {lo} AND booked_at < {hi} GROUP BY ALL
        UNION ALL
        SELECT 'charge', category, h FROM (SELECT category,
          {hours_sql('period_start', 'period_end', lo, hi)} AS h FROM charges
          WHERE period_start < {hi} AND period_end > {lo}) GROUP BY ALL""").fetchall()
    for kind, name, hour in rows:
        if kind == "meter":
            out[Resource("category", meter_category(name))].add(hour)
        elif kind == "charge":
            out[Resource("category", CHARGE_CATEGORY.get(name, name))].add(hour)
        else:
            out[Resource(kind, name)].add(hour)
    return {k: frozenset(v) for k, v in out.items()}


def priced_hours_of(s, start: datetime, end: datetime, home: Path) -> dict[Resource, frozenset[int]]:
    """:func:`priced_hours` over the committed facts of the ledger home `home` (the months of the period)."""
    con = facts.open_ledger_facts(s, home, period=(start, end))
    try:
        return priced_hours(con, start, end)
    finally:
        con.close()


def coverage(priced: frozenset[int], billed: frozenset[int]) -> Coverage:
    """The coverage of a resource priced in hours `priced` and billed in hours `billed`."""
    return Coverage(hours_priced=len(priced), hours_billed=len(priced & billed))
