"""Shared charges: each charge priced per day of the period (§4.1), then spread over tenants by its rule (§4.6)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, localcontext

import duckdb

from ..money import quantize, split
from .pricing import _Pricer
from .records import CHARGE_CATEGORY, DAY_US, Line, _at, _seconds, _us

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
                out.append(ChargeDay(charge_id=cid, day=_at(d).date(), seconds=_seconds(pieces[d]),
                                     category=CHARGE_CATEGORY[category], rule=rule, amount=quantize(part * rate)))
    return out


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
            lines.append(Line(day=cd.day, kind="unallocated", tenant=None, product=None, model=None, pool=None,
                              provider=None, category=cd.category, work="succeeded", shared_from=None,
                              quantity=cd.seconds, unit="second", amount=cd.amount))
            continue
        for tenant, part in split(cd.amount, sorted(weights.items())).items():
            if part == 0:
                continue
            lines.append(Line(day=cd.day, kind="tenant", tenant=tenant, product=None, model=None, pool=None,
                              provider=None, category=cd.category, work="succeeded", shared_from=None,
                              quantity=cd.seconds, unit="second", amount=part))
    return lines, [notes[k] for k in sorted(notes)]

