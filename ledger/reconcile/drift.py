"""Reported-cost drift: per provider and model, the ledger's price of the requests whose source
reported a cost (``reported_cost``, e.g. LiteLLM's ``spend``) beside the sum of what it reported.

Our side is priced by the allocation engine itself, over those requests alone and in the reported
currency (the run's FX rates when the book is in another one), so it is the very price the ledger
books; a model whose book price is stale shows a difference there and nowhere else. Requests with
a reported cost and no reported currency, or a currency that is not ISO 4217, are left out, and the
notes count them.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, localcontext
from pathlib import Path

from babel.numbers import list_currencies

from .. import facts
from ..allocate import AllocationError, Policy, allocate
from ..money import ZERO, quantize
from ..pricebook import PriceIndex
from ..sqltext import literal
from .billmap import ReconcileError

RATIO_EXP = Decimal("0.0001")


@dataclass(frozen=True)
class Drift:
    """One provider and model in one `currency`: `requests` with a reported cost, `ours` (the
    ledger's price of those requests) and `reported` (Σ reported cost), at 1e-6."""

    provider: str
    model: str
    currency: str
    requests: int
    ours: Decimal
    reported: Decimal

    @property
    def difference(self) -> Decimal:
        """reported − ours: positive when the source charged more than the book says."""
        return self.reported - self.ours

    @property
    def share(self) -> Decimal | None:
        """difference ÷ ours, half-even to 1e-4; None when ours is 0."""
        if not self.ours:
            return None
        with localcontext() as ctx:
            ctx.prec = 60
            return quantize(self.difference / self.ours, RATIO_EXP)


def reported_drift(s, *, start: datetime, end: datetime, prices: PriceIndex,
                   home: Path) -> tuple[tuple[Drift, ...], tuple[str, ...]]:
    """The drift of every provider and model with reported costs in ``[start, end)`` (the facts of the
    ledger home `home`), and notes.
    Raises ReconcileError when those requests cannot be priced (a price missing from the books)."""
    batches = facts.committed_batches(s)
    con = facts.connect(batches, home, period=(start, end))  # rows are read by booked_at: the months of the period
    try:
        base = facts.source_sql("requests", batches.get("requests", []), home, con, period=(start, end))
        lo, hi = start.astimezone(timezone.utc).isoformat(), end.astimezone(timezone.utc).isoformat()
        con.execute(f"CREATE TEMP TABLE _reported AS SELECT * FROM ({base}) WHERE provider IS NOT NULL AND "
                    f"provider <> '' AND reported_cost IS NOT NULL AND booked_at >= TIMESTAMPTZ {literal(lo)} AND "
                    f"booked_at < TIMESTAMPTZ {literal(hi)}")
        for kind in ("fleet", "meters", "charges"):
            con.execute(f"CREATE OR REPLACE VIEW {kind} AS {facts.empty_select(kind)}")
        iso = set(list_currencies())
        found = con.execute("SELECT reported_currency, count(*) FROM _reported GROUP BY ALL "
                            "ORDER BY reported_currency NULLS FIRST").fetchall()
        notes, out = [], []
        for cur, n in found:
            if cur is None or cur not in iso:
                what = "no reported currency" if cur is None else f"reported currency {cur!r}, not an ISO 4217 code"
                notes.append(f"{n} provider request{'s' * (n != 1)} with a reported cost but {what}: left out of "
                             "the drift")
                continue
            out += _drift_in(con, cur, start, end, prices)
        return tuple(sorted(out, key=lambda d: (d.provider, d.model, d.currency))), tuple(notes)
    finally:
        con.close()


def _drift_in(con, currency: str, start: datetime, end: datetime, prices: PriceIndex) -> list[Drift]:
    """The drift of the requests reported in `currency`, priced in it by the engine."""
    con.execute("CREATE OR REPLACE VIEW requests AS SELECT * FROM _reported "
                f"WHERE reported_currency = {literal(currency)}")
    try:
        alloc = allocate(con, start=start, end=end, prices=prices, policy=Policy(currency=currency))
    except AllocationError as e:
        raise ReconcileError([f"reported-cost drift in {currency}: {p}" for p in e.problems]) from None
    ours: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for ln in alloc.lines:
        if ln.category == "provider_tokens":
            ours[(ln.provider, ln.model)] += ln.amount
    rows = con.execute("SELECT provider, model, count(*), sum(reported_cost) FROM requests GROUP BY ALL").fetchall()
    return [Drift(provider=p, model=m, currency=currency, requests=n, ours=ours.get((p, m), ZERO),
                  reported=quantize(reported)) for p, m, n, reported in rows]
