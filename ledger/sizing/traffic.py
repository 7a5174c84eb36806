"""Sizing from the ledger's own traffic: the TPM at a percentile, the mean ISL and OSL, and the largest
rise over the time to ready, taken from a `ledger.workload` Workload (duck-typed: no import of it)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..hints import Hint, Hinted
from .curve import SizingError, fmt_num

#: The library's words for the statistic of the per-minute TPM a sizing takes (`ledger size --percentile`).
PERCENTILE = Hint("percentile", "percentile")

#: The TPM statistics a sizing may take from a workload.
PERCENTILES = ("p50", "p95", "p99", "max", "mean")


@dataclass(frozen=True)
class WorkloadInputs:
    """What a sizing took from measured traffic.

    - `period`, `pool`, `product` (None: all): whose requests.
    - `percentile`: the TPM statistic used (p50, p95, p99, max or mean of the per-minute TPM).
    - `tpm`: output tokens per minute at that statistic [token/min].
    - `tpm_mean`, `peak_to_average`: for the record (averages hide bursts).
    - `isl`, `osl`: mean input and output tokens per request [token].
    - `requests`, `minutes`: how much traffic it rests on (counts).
    - `time_to_ready_min` [min] and `rise_tpm` (the largest rise of TPM over that many minutes
      [token/min]), or None when no time to ready was given.
    """

    period: str
    pool: str | None
    product: str | None
    percentile: str
    tpm: float
    tpm_mean: float
    peak_to_average: float | None
    isl: float
    osl: float
    requests: int
    minutes: int
    time_to_ready_min: int | None = None
    rise_tpm: float | None = None


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def workload_inputs(w, percentile: str = "p99", *, time_to_ready_min: int | None = None) -> WorkloadInputs:
    """The sizing inputs of a Workload: TPM at `percentile`, mean ISL and OSL, and (with a time to
    ready) its largest rise over that many minutes (`w.ramp`, computed with ramp_minutes = it).
    SizingError when the workload holds no traffic to size from."""
    if percentile not in PERCENTILES:
        raise SizingError(Hinted(PERCENTILE, f" {percentile!r}: one of {', '.join(PERCENTILES)}"))
    where = f"workload {w.period}" + (f" pool {w.pool}" if w.pool else "") + (f" product {w.product}" if w.product
                                                                               else "")
    tpm = (w.tpm or {}).get(percentile)
    problems = []
    if not w.requests or not _finite(tpm) or tpm < 0 or not w.output_tokens:
        problems.append(f"{where}: no output tokens to size from ({w.requests or 0} requests, TPM {percentile} "
                        f"{tpm!r})")
    elif tpm == 0:  # traffic, but the chosen minute is one of the empty ones
        top = (w.tpm or {}).get("max")
        highest = f" (max is {fmt_num(top, 0)})" if _finite(top) else ""
        problems.append(Hinted(f"{where}: TPM {percentile} is 0: the {percentile} minute of its {w.minutes:,} minutes "
                               f"served no output tokens ({w.requests:,} requests in all); pick a higher ", PERCENTILE,
                               f"{highest} or a window with traffic throughout (", Hint("busy_window", ""),
                               "over the busy hours)"))
    if not _finite(w.isl_mean) or not _finite(w.osl_mean) or w.osl_mean <= 0:
        problems.append(f"{where}: no mean ISL/OSL (ISL {w.isl_mean!r}, OSL {w.osl_mean!r})")
    rise = None
    if time_to_ready_min is not None:
        if w.ramp_minutes != time_to_ready_min:
            problems.append(f"{where}: the rise was measured over {w.ramp_minutes} min, not the time to ready "
                            f"{time_to_ready_min} min")
        rise = float(w.ramp) if _finite(w.ramp) else None
        if rise is None:
            problems.append(f"{where}: no largest rise over {time_to_ready_min} min ({w.ramp!r})")
    if problems:
        raise SizingError(problems)
    return WorkloadInputs(period=w.period, pool=w.pool, product=w.product, percentile=percentile, tpm=float(tpm),
                          tpm_mean=float(w.tpm.get("mean") or 0.0), peak_to_average=w.peak_to_average,
                          isl=float(w.isl_mean), osl=float(w.osl_mean), requests=int(w.requests),
                          minutes=int(w.minutes), time_to_ready_min=time_to_ready_min, rise_tpm=rise)


def workload_lines(wi: WorkloadInputs) -> list[str]:
    """Where the TPM, ISL and OSL came from, as lines above the table."""
    who = ", ".join(x for x in (f"pool {wi.pool}" if wi.pool else "", f"product {wi.product}" if wi.product else "")
                    if x) or "all pools"
    pta = f", peak/average {wi.peak_to_average:.2f}" if _finite(wi.peak_to_average) else ""
    lines = [f"workload {wi.period}, {who}: {wi.requests:,} requests over {wi.minutes:,} minutes; TPM {wi.percentile} "
             f"{fmt_num(wi.tpm, 0)} (mean {fmt_num(wi.tpm_mean, 0)}{pta}); mean ISL {fmt_num(wi.isl, 1)}, "
             f"OSL {fmt_num(wi.osl, 1)}"]
    if wi.rise_tpm is not None:
        lines.append(f"largest rise over {wi.time_to_ready_min} min (time to ready): {fmt_num(wi.rise_tpm, 0)} TPM")
    return lines
