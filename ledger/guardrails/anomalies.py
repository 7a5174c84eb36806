"""Spend anomalies per tenant and model per day against a seasonal baseline: the median and the
median absolute deviation (MAD) of the same weekday over the last weeks. Pure functions over daily
spend (Decimal); the method and its thresholds are in docs/alerts.md.

A day d of a (tenant, model) is anomalous when, with m the median and MAD the median absolute
deviation of its spend on d - 7, d - 14, ... d - 7·weeks (days before the first usage left out, a
day without spend counted 0, at least `min_weeks` of them):

    spend - m > mad_k × 1.4826 × MAD   and   spend >= min_ratio × m   and   spend - m >= min_increase

High side only: a drop in spend is no cost risk. The as-of day is judged on its spend so far
against the whole-day thresholds, so it can only fire once it is already above them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from decimal import Decimal

from ..money import ZERO, quantize
from .records import MAD_SCALE, Anomaly, Rule


def median(values: Sequence[Decimal]) -> Decimal:
    """The median, exact (the mean of the middle two of an even count)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("median of nothing")
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2


def baseline_days(day: date, rule: Rule, data_from: date | None) -> list[date]:
    """The same weekday in each of the `rule.weeks` weeks before `day`, from `data_from` on."""
    days = [day - timedelta(weeks=k) for k in range(1, rule.weeks + 1)]
    return [d for d in days if data_from is not None and d >= data_from]


def judge(spend: Decimal, history: Sequence[Decimal], rule: Rule) -> tuple[Decimal, Decimal, Decimal] | None:
    """(median, MAD, threshold) when `spend` is anomalous against `history`, else None."""
    if len(history) < rule.min_weeks:
        return None
    m = median(history)
    mad = median([abs(x - m) for x in history])
    threshold = m + max(rule.mad_k * MAD_SCALE * mad, rule.min_increase, (rule.min_ratio - 1) * m)
    rises = spend - m
    fires = rises > rule.mad_k * MAD_SCALE * mad and spend >= rule.min_ratio * m and rises >= rule.min_increase
    return (m, mad, quantize(threshold)) if fires else None


def find_anomalies(daily: Mapping[tuple[str, str], Mapping[date, Decimal]], *, days: Sequence[date], partial: date | None,
                   data_from: date | None, rule: Rule, currency: str) -> list[Anomaly]:
    """Every anomalous (tenant, model, day) for the `days` judged; `daily` maps (tenant, model) to
    its spend per day (history included); `partial` is the as-of day when it is not over yet."""
    out = []
    for (tenant, model), series in sorted(daily.items()):
        for d in days:
            spend = series.get(d, ZERO)
            if spend <= 0:
                continue
            history = [series.get(b, ZERO) for b in baseline_days(d, rule, data_from)]
            found = judge(spend, history, rule)
            if found is None:
                continue
            m, mad, threshold = found
            out.append(Anomaly(tenant=tenant, model=model, day=d, spend=spend, baseline=quantize(m), mad=quantize(mad),
                               threshold=threshold, weeks=len(history),
                               ratio=quantize(spend / m, Decimal("0.01")) if m > 0 else None,
                               partial=d == partial, currency=currency))
    return out
