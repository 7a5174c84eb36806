"""A workload as JSON (the ``ledger workload --json`` contract), CSV (one row per figure) and rich tables."""
from __future__ import annotations

from decimal import Decimal

from ..formats import number, percent
from ..instants import iso
from ..outputs import csv_text
from ..tables import FitTable
from .records import DAYS, TPM_STATS, Workload

_PCT = ("p50", "p95", "p99", "max", "mean")


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def workload_as_json(w: Workload) -> dict:
    """The JSON contract: totals, ``tpm`` and ``rpm`` (p50, p95, p99, max, mean per minute),
    ``peak_to_average``, ``bursts``, ``input_tokens`` / ``output_tokens`` per request (p50, p95, p99,
    max, mean), ``cache_hit``, the ``ramp`` and the 168-hour ``hour_of_week`` profile."""
    return {
        "report": "workload", "period": w.period, "pool": w.pool, "product": w.product,
        "from": iso(w.start), "to": iso(w.end), "minutes": w.minutes,
        "totals": {"requests": w.requests, "failed_requests": w.failed_requests, "input_tokens": w.input_tokens,
                   "cached_input_tokens": w.cached_input_tokens, "output_tokens": w.output_tokens},
        "tpm": {k: _r(w.tpm[k]) for k in TPM_STATS},
        "rpm": {k: _r(w.rpm[k]) for k in TPM_STATS},
        "peak_to_average": _r(w.peak_to_average, 4),
        "bursts": {k: _r(v) if isinstance(v, float) else v for k, v in w.bursts.as_dict().items()},
        "input_tokens": {k: _r(v) for k, v in w.input_len.as_dict().items()},
        "output_tokens": {k: _r(v) for k, v in w.output_len.as_dict().items()},
        "cache_hit": _r(w.cache_hit, 6),
        "ramp": {"window_minutes": w.ramp_minutes, "largest_rise_tpm": _r(w.ramp)},
        "hour_of_week": [{"day": DAYS[h // 24], "hour": h % 24, "tpm": _r(v)} for h, v in enumerate(w.hour_of_week)],
    }


def workload_rows(w: Workload) -> list[dict]:
    """One row per figure: ``figure``, ``statistic``, ``value`` and ``unit`` (what the CSV holds)."""
    doc = workload_as_json(w)
    rows: list[tuple[str, str, object, str]] = [
        ("series", "minutes", w.minutes, "minute"),
        *(("totals", k, v, "request" if "requests" in k else "token") for k, v in doc["totals"].items()),
        *(("tpm", k, doc["tpm"][k], "output token/min") for k in TPM_STATS),
        *(("rpm", k, doc["rpm"][k], "request/min") for k in TPM_STATS),
        ("peak_to_average", "max/mean", doc["peak_to_average"], "ratio"),
        ("bursts", "threshold", doc["bursts"]["threshold"], "output token/min"),
        ("bursts", "count", w.bursts.count, "run"),
        ("bursts", "longest", w.bursts.longest, "minute"),
        ("bursts", "minutes", w.bursts.minutes, "minute"),
        ("bursts", "tokens", w.bursts.tokens, "output token"),
        ("bursts", "excess_tokens", doc["bursts"]["excess_tokens"], "output token"),
        *(("input_tokens", k, doc["input_tokens"][k], "token/request") for k in _PCT),
        *(("output_tokens", k, doc["output_tokens"][k], "token/request") for k in _PCT),
        ("cache_hit", "cached/input", doc["cache_hit"], "ratio"),
        ("ramp", f"largest_rise_{w.ramp_minutes}min", doc["ramp"]["largest_rise_tpm"], "output token/min"),
        *(("hour_of_week", f"{h['day']} {h['hour']:02d}h", h["tpm"], "output token/min")
          for h in doc["hour_of_week"]),
    ]
    head = {"period": w.period, "pool": w.pool or "", "product": w.product or ""}
    return [{**head, "figure": f, "statistic": s, "value": "" if v is None else v, "unit": u} for f, s, v, u in rows]


def workload_as_csv(w: Workload) -> str:
    """The figures as CSV: period, pool, product, figure, statistic, value, unit."""
    rows = workload_rows(w)
    return csv_text(list(rows[0]), rows, numeric=("value",))


def _n(x: float | int | None, digits: int = 1) -> str:
    """A measured figure (tokens, requests, minutes) grouped, to `digits` decimals (:func:`ledger.formats.number`)."""
    return number(x, digits)


def workload_as_table(w: Workload) -> list[FitTable]:
    """Four tables: the per-minute series (TPM, RPM), the request lengths, bursts and ramp, and the
    hour-of-week profile (hours down, days across)."""
    who = " · ".join(x for x in (f"pool {w.pool}" if w.pool else "all pools",
                                 f"product {w.product}" if w.product else "all products") if x)
    span = f"{_n(w.minutes, 0)} minutes"
    head = (f"workload {w.period} · {who} · {span} from {iso(w.start)}" if "/" not in w.period
            else f"workload {iso(w.start)} to {iso(w.end)} · {who} · {span}")  # a month, or a window
    series = FitTable(title=f"{head} · per minute (minutes without requests count as 0)", title_justify="left")
    series.add_column("per minute", numeric=False)
    for k in TPM_STATS:
        series.add_column(k)
    series.add_row("output tokens (TPM)", *(_n(w.tpm[k]) for k in TPM_STATS))
    series.add_row("requests (RPM)", *(_n(w.rpm[k], 2) for k in TPM_STATS))

    lengths = FitTable(title=f"per request · {_n(w.requests, 0)} requests ({_n(w.failed_requests, 0)} not ok, "
                          "counted: they loaded the fleet)", title_justify="left")
    lengths.add_column("tokens per request", numeric=False)
    for k in _PCT:
        lengths.add_column(k)
    lengths.add_row("input (ISL)", *(_n(v) for v in w.input_len.as_dict().values()))
    lengths.add_row("output (OSL)", *(_n(v) for v in w.output_len.as_dict().values()))

    shape = FitTable(title="shape", title_justify="left")
    shape.add_column("figure", numeric=False)
    shape.add_column("value")
    shape.add_row("peak to average (max / mean TPM)", _n(w.peak_to_average, 2))
    shape.add_row(f"bursts: runs of minutes above p95 ({_n(w.bursts.threshold)} TPM)", _n(w.bursts.count, 0))
    shape.add_row("longest burst (minutes)", _n(w.bursts.longest, 0))
    shape.add_row("minutes in bursts", _n(w.bursts.minutes, 0))
    shape.add_row("output tokens in bursts (above p95)",
                  f"{_n(w.bursts.tokens, 0)} ({_n(w.bursts.excess_tokens, 0)})")
    shape.add_row(f"largest rise over {w.ramp_minutes} min (TPM)", _n(w.ramp))
    shape.add_row("cache hit (cached / input tokens)", percent(Decimal(repr(w.cache_hit))))
    shape.add_row("output tokens, input tokens (cached)",
                  f"{_n(w.output_tokens, 0)}, {_n(w.input_tokens, 0)} ({_n(w.cached_input_tokens, 0)})")

    week = FitTable(title="hour of week · mean TPM (UTC)", title_justify="left")
    week.add_column("hour")
    for d in DAYS:
        week.add_column(d)
    for h in range(24):
        week.add_row(f"{h:02d}", *(_n(w.hour_of_week[d * 24 + h], 0) for d in range(7)))
    return [series, lengths, shape, week]
