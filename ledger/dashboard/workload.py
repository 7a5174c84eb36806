"""The workload page's frames: which months, pools and products have requests, and a month's
workload (``ledger workload``) as DataFrames: the figures, TPM by hour, the hour-of-week profile and
the request lengths."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import config, facts
from ..workload import DAYS, Workload, workload
from ..workload.render import workload_rows

CHOICE_COLUMNS = ["period", "pool", "product", "requests"]


def workload_choices(session, home: Path | None = None) -> pd.DataFrame:
    """Requests per month (UTC, by when they occurred), pool and product: period, pool (None:
    provider requests), product, requests; newest month first. A ledger with no committed batch of
    requests answers from its DB alone (no DuckDB connection, so nothing is made in its home)."""
    if not facts.committed_batches(session).get("requests"):
        return pd.DataFrame([], columns=CHOICE_COLUMNS)
    con = facts.open_ledger_facts(session, config.ledger_home() if home is None else home)  # resolved here, once
    try:
        rows = con.execute("""
            SELECT strftime(occurred_at, '%Y-%m') AS period, pool, product, count(*) AS requests
            FROM requests GROUP BY ALL ORDER BY period DESC, pool NULLS LAST, product""").fetchall()
    finally:
        con.close()
    return pd.DataFrame(rows, columns=CHOICE_COLUMNS)


def workload_of_month(session, period: str, *, pool: str | None = None, product: str | None = None,
                      ramp_minutes: int = 10, home: Path | None = None) -> Workload:
    """``ledger workload --period P [--pool X] [--product Y] [--ramp-minutes N]`` (WorkloadError when
    nothing matches)."""
    return workload(session, period, pool=pool, product=product, ramp_minutes=ramp_minutes, home=home)


def figures_frame(w: Workload) -> pd.DataFrame:
    """Every figure, one row each, as ``ledger workload --csv``: figure, statistic, value, unit."""
    return pd.DataFrame([{k: r[k] for k in ("figure", "statistic", "value", "unit")} for r in workload_rows(w)])


def hourly_frame(w: Workload) -> pd.DataFrame:
    """Per UTC hour of the series: hour (start), mean_tpm (over its minutes), max_tpm (its busiest minute)."""
    return pd.DataFrame(list(w.hourly), columns=["hour", "mean_tpm", "max_tpm"])


def hour_of_week_frame(w: Workload) -> pd.DataFrame:
    """168 rows, Monday 00h first: day, hour, tpm (the mean TPM of the series' minutes in that hour
    of the week; None when the series has none)."""
    return pd.DataFrame([{"day": DAYS[h // 24], "hour": h % 24, "tpm": v} for h, v in enumerate(w.hour_of_week)])


def lengths_frame(w: Workload) -> pd.DataFrame:
    """Tokens per request: tokens (input | output), p50, p95, p99, max, mean (at 3 decimals, as the JSON)."""
    return pd.DataFrame([{"tokens": name, **{k: round(v, 3) for k, v in p.as_dict().items()}}
                         for name, p in (("input", w.input_len), ("output", w.output_len))])


#: The percentile of the hour-of-week means at which the heatmap's colour scale stops.
CLIP_PERCENTILE = 99


def color_clip(values) -> float | None:
    """The top of the hour-of-week heatmap's colour scale: the :data:`CLIP_PERCENTILE` th percentile
    of the hours' means (linear interpolation), so that one exceptional hour (a Sunday re-index)
    does not wash out the other 167; None when no hour has traffic or when clipping changes nothing
    (the maximum is the percentile)."""
    import numpy as np

    seen = np.array([float(v) for v in values if v is not None and v == v], dtype=float)
    if not seen.size or seen.max() <= 0:
        return None
    top = float(np.percentile(seen, CLIP_PERCENTILE))
    return top if 0 < top < float(seen.max()) else None
