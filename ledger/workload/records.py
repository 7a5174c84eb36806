"""The workload's records: percentiles, bursts, the workload of a period, and its error."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..errors import LedgerError

#: The statistics of the per-minute series, in the order reports show them.
TPM_STATS = ("p50", "p95", "p99", "max", "mean")
#: Days of the hour-of-week profile, ISO order (Monday first).
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


class WorkloadError(LedgerError, ValueError):
    """A workload that cannot be computed: `problems` holds one line per problem."""


@dataclass(frozen=True)
class Percentiles:
    """A distribution's `p50`, `p95`, `p99` (linear interpolation between the closest ranks, as
    DuckDB's ``quantile_cont`` and numpy's default), `max` and `mean`, in the unit of what was measured."""

    p50: float
    p95: float
    p99: float
    max: float
    mean: float

    def as_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p95": self.p95, "p99": self.p99, "max": self.max, "mean": self.mean}


@dataclass(frozen=True)
class Bursts:
    """Runs of consecutive minutes whose output tokens are above `threshold` (the series' p95)
    [output token/min]: `count` of runs, the `longest` run [minutes], the `minutes` in all runs, the
    output `tokens` served in those minutes and the `excess_tokens` above the threshold in them."""

    threshold: float
    count: int
    longest: int
    minutes: int
    tokens: int
    excess_tokens: float

    def as_dict(self) -> dict:
        return {"threshold": self.threshold, "count": self.count, "longest_minutes": self.longest,
                "minutes": self.minutes, "tokens": self.tokens, "excess_tokens": self.excess_tokens}


@dataclass(frozen=True)
class Workload:
    """The traffic of one period, one pool and one product (None: all of them), from the request facts.

    - `period` (``YYYY-MM``, or for a window that is not a month the ISO 8601 interval
      ``<start>/<end>`` in UTC), `pool`, `product`; the series covers ``[start, end)``, `minutes`
      long (the whole month or window; for one still under way, up to the minute of its last request).
    - `requests` (failed ones included: they loaded the fleet), `failed_requests` (status not ok),
      `input_tokens` (cached included), `cached_input_tokens`, `output_tokens`: totals [token].
    - `tpm`: output tokens per minute over every minute of the series (no request: 0), keys
      ``p50 p95 p99 max mean`` [output token/min]; `rpm`: requests per minute likewise.
    - `peak_to_average` = max / mean of the TPM series (dimensionless; 0 when nothing was served).
    - `bursts`: see :class:`Bursts`.
    - `input_len`, `output_len`: tokens per request; `isl_mean`, `osl_mean` their means [token].
    - `cache_hit` = cached input tokens / input tokens (0..1; 0 when there is no input).
    - `hour_of_week`: 168 entries, Monday 00h first, the mean TPM over the series' minutes in that
      hour of the week (None when the series has no minute in it).
    - `ramp_minutes` and `ramp`: the largest rise of TPM over a window of that many minutes,
      max over t of (TPM(t) - min of TPM over [t - N, t]) [output token/min].
    - `hourly`: per UTC clock hour of the series, (hour start, mean TPM over the series' minutes in
      it, highest minute's TPM).
    """

    period: str
    pool: str | None
    product: str | None
    start: datetime
    end: datetime
    minutes: int
    requests: int
    failed_requests: int
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    tpm: dict[str, float]
    rpm: dict[str, float]
    peak_to_average: float
    bursts: Bursts
    input_len: Percentiles
    output_len: Percentiles
    isl_mean: float
    osl_mean: float
    cache_hit: float
    hour_of_week: list[float | None]
    ramp_minutes: int
    ramp: float
    hourly: tuple[tuple[datetime, float, float], ...] = ()
