"""Shared charges: each charge priced per day of the period (§4.1), then spread over tenants by its rule (§4.6)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, localcontext

import duckdb

from ..money import ZERO, quantize, split
from ..vocab import TENANT_RULE, ChargeCategory, ChargeRule, LineKind, rule_choices
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
    each day converted second by second at the FX rate in force: a day whose piece holds a rate change
    is cut there, each part at its own rate, and the day quantized once."""
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
                                                           f"{', '.join(ChargeCategory)}")
                continue
            a, b = max(ps, s_us), min(pe, e_us)
            in_period = quantize(Decimal(amount) * (b - a) / (pe - ps))
            pieces: dict[int, int] = {}
            d = a - a % DAY_US
            while d < b:
                pieces[d] = min(b, d + DAY_US) - max(a, d)
                d += DAY_US
            for d, part in split(in_period, pieces).items():
                fx = pricer.fx_segments(currency, max(a, d), min(b, d + DAY_US))  # cut where the rate changes
                if fx is None:
                    continue
                # the day's part, each second at the rate in force then: part × Σ(seconds × rate) / Σ seconds
                rated = sum((Decimal(y - x) * r for x, y, r in fx), Decimal(0))
                out.append(ChargeDay(charge_id=cid, day=_at(d).date(), seconds=_seconds(pieces[d]),
                                     category=CHARGE_CATEGORY[category], rule=rule,
                                     amount=quantize(part * rated / pieces[d])))
    return out


# ---- 6. shared charges -------------------------------------------------------------------------

def _rule_weights(rule: str, direct: Mapping[str, Decimal], tokens: Mapping[str, int]) -> dict[str, Decimal] | None:
    """The eligible tenants of a rule (a :class:`~ledger.vocab.ChargeRule`, or ``tenant:<name>``) and
    their weights ({} for none or nobody eligible); None for an unknown rule."""
    if rule == ChargeRule.EVEN:
        return {t: Decimal(1) for t, c in direct.items() if c > 0}
    if rule == ChargeRule.BY_COST:
        return {t: c for t, c in direct.items() if c > 0}
    if rule == ChargeRule.BY_TOKENS:
        return {t: Decimal(n) for t, n in tokens.items() if n > 0}
    if rule.startswith(TENANT_RULE) and rule[len(TENANT_RULE):].strip():
        return {rule[len(TENANT_RULE):].strip(): Decimal(1)}
    if rule == ChargeRule.NONE:
        return {}
    return None


def _minus(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> dict[str, Decimal]:
    return {k: a[k] - b.get(k, ZERO) for k in a}


def _place_on_days(cds: Sequence[ChargeDay], shares: Mapping[str, Decimal]) -> list[Line]:
    """Each tenant's period share of one charge laid on the charge's days, so that every day sums to
    the day's amount and every tenant to its share: the running total of the days is split by
    largest remainder in proportion to the shares, and a day's line is the step of that running
    split (a controlled rounding: each line is within 2e-6 of day × share / total)."""
    weights = sorted((t, abs(v)) for t, v in shares.items())
    if not any(w for _, w in weights):
        return []
    lines: list[Line] = []
    running, before = ZERO, dict.fromkeys(shares, ZERO)
    for cd in cds:
        running += cd.amount
        after = split(running, weights)
        for tenant, part in sorted(_minus(after, before).items()):
            if part != 0:
                lines.append(Line(day=cd.day, kind=LineKind.TENANT, tenant=tenant, product=None, model=None, pool=None,
                                  provider=None, category=cd.category, work="succeeded", shared_from=None,
                                  quantity=cd.seconds, unit="second", amount=part))
        before = after
    return lines


@dataclass(frozen=True)
class ChargeShare:
    """A tenant's part of one charge over the period: `charge_id`, its `category` (a line category)
    and allocation `rule`, the `tenant` and the `amount` (Σ of its lines of that charge, exact). The
    run records them (its summary's ``charge_shares``) so that a report can spread a tenant's shared
    charges over its products by the rule each charge was spread over tenants with."""

    charge_id: str
    category: str
    rule: str
    tenant: str
    amount: Decimal


def _charge_lines(days: Sequence[ChargeDay], direct: Mapping[str, Decimal], tokens: Mapping[str, int],
                  problems: dict[tuple, str], shares_out: list[ChargeShare] | None = None
                  ) -> tuple[list[Line], list[str]]:
    """§4.6 Each charge goes to tenants by its rule: even (tenants with direct cost), by_cost,
    by_tokens, tenant:X, or none (unallocated). A rule with no eligible tenant books unallocated.

    The split is made once per charge over the period (largest remainder of the charge's total in
    the period), then laid on its days (:func:`_place_on_days`): a tenant's total of a charge is within
    1e-6 of its exact proportion, and under ``even`` the tenants' totals differ by at most 1e-6.
    Even charges form one running total (one for credits) in charge_id order, so the spare
    micro-units rotate over the tenants from one charge to the next instead of always going to the
    first name. Each tenant's part of each charge is appended to `shares_out` when given."""
    by_charge: dict[str, list[ChargeDay]] = defaultdict(list)
    for cd in days:
        by_charge[cd.charge_id].append(cd)
    lines: list[Line] = []
    notes: dict[str, str] = {}
    even_done: dict[bool, Decimal] = defaultdict(Decimal)  # running total of even charges, by sign
    for cid in sorted(by_charge):
        cds = sorted(by_charge[cid], key=lambda cd: cd.day)
        rule = cds[0].rule.strip()
        weights = _rule_weights(rule, direct, tokens)
        if weights is None:
            problems.setdefault(("rule", cid), f"charge {cid}: allocate {cds[0].rule!r} is not {rule_choices()}")
            continue
        if not weights:
            if rule != ChargeRule.NONE:
                notes[cid] = f"charge {cid} (allocate {rule}): no eligible tenant in the period; booked unallocated"
            lines += [Line(day=cd.day, kind=LineKind.UNALLOCATED, tenant=None, product=None, model=None, pool=None,
                           provider=None, category=cd.category, work="succeeded", shared_from=None,
                           quantity=cd.seconds, unit="second", amount=cd.amount) for cd in cds]
            continue
        total = sum((cd.amount for cd in cds), ZERO)
        if total == 0:
            continue
        ranked = sorted(weights.items())
        if rule == ChargeRule.EVEN:
            done = even_done[total < 0]
            before = split(done, ranked) if done else dict.fromkeys(weights, ZERO)
            even_done[total < 0] = done + total
            shares = _minus(split(done + total, ranked), before)
        else:
            shares = split(total, ranked)
        lines += _place_on_days(cds, shares)
        if shares_out is not None:
            shares_out += [ChargeShare(charge_id=cid, category=cds[0].category, rule=rule, tenant=t, amount=a)
                           for t, a in sorted(shares.items()) if a != 0]
    return lines, [notes[k] for k in sorted(notes)]
