"""The budget plan's records (scenarios, pools, token, meter and charge forecasts), its error and calendar months."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

from ..errors import LedgerError
from ..sizing import Curve, Reserves
from ..sizing.disagg import PrefillCurve
from ..sizing.tiers import Tier

SCENARIO_KNOBS = ("traffic", "output_length", "cache_hit_rate", "prices")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class BudgetError(LedgerError, ValueError):
    """A plan that cannot be budgeted: `problems` holds one line per problem."""


@dataclass(frozen=True)
class Scenario:
    """Multipliers (dimensionless decimals > 0) applied to the base plan: `traffic` (TPM and every
    usage volume), `output_length` (output tokens, hence output TPM), `cache_hit_rate` (the cached
    share of provider input tokens), `prices` (every price-book price; not fixed charges)."""

    name: str
    traffic: Decimal = Decimal(1)
    output_length: Decimal = Decimal(1)
    cache_hit_rate: Decimal = Decimal(1)
    prices: Decimal = Decimal(1)


@dataclass(frozen=True)
class PoolPlan:
    """A self-hosted pool to size every month: `device`, `region`, `purchase_option` (the GPU price
    key), `gpus_per_replica` (count), the measured `curve` and where it came from (`curve_ref`),
    the interactivity `sla` [token/s/user] (None when the pool has `tiers`), `tpm` in the first month
    [output token/min], `util` in (0, 1], `reserves` [replicas], monthly `growth` (compounding, a
    decimal: 0.05 = +5 %/month), `interpolate` (DRAFT), `repair`, `ttft_ms` limit, workload
    `isl`/`osl` [token] (None: the curve's); `tiers` (SLA tiers, each its own replicas on the same
    curve); a `prefill_curve` (disaggregated: `curve` is then the decode curve) with where it came
    from (`prefill_curve_ref`) and `prefill_gpus_per_replica` (None: `gpus_per_replica`)."""

    name: str
    device: str
    region: str
    purchase_option: str
    gpus_per_replica: int
    curve: Curve
    curve_ref: str
    sla: float | None
    tpm: Decimal
    util: float
    reserves: Reserves
    growth: Decimal
    interpolate: bool = False
    repair: bool = False
    ttft_ms: float | None = None
    isl: float | None = None
    osl: float | None = None
    tiers: tuple[Tier, ...] = ()
    prefill_curve: PrefillCurve | None = None
    prefill_curve_ref: str = ""
    prefill_gpus_per_replica: int | None = None

    @property
    def in_parts(self) -> bool:
        """True when the pool is sized in parts (tiers, or disaggregated prefill/decode)."""
        return bool(self.tiers) or self.prefill_curve is not None


@dataclass(frozen=True)
class TokenForecast:
    """Provider tokens per month in the first month: `input_tokens` (cached included),
    `cached_share` of them that hit the prefix cache (0..1), `output_tokens` (reasoning included),
    for `model` of `provider` in `region` (``*``: any); `input_tokens_per_request` picks a
    long-context tier (None: the base price); monthly `growth` (compounding)."""

    provider: str
    model: str
    region: str
    input_tokens: Decimal
    cached_share: Decimal
    output_tokens: Decimal
    growth: Decimal
    input_tokens_per_request: int | None = None


@dataclass(frozen=True)
class MeterForecast:
    """A metered usage per month in the first month: `quantity` in `unit` (a pint expression) of
    `meter`/`sku` in `region`; its `category` follows the allocation's (tool_call -> tool, ...)."""

    meter: str
    sku: str
    region: str
    quantity: Decimal
    unit: str
    growth: Decimal
    category: str


@dataclass(frozen=True)
class FixedCharge:
    """A fixed monthly `amount` in `currency`, booked to `category`, in the months
    ``[first, last]`` (None: every month of the plan)."""

    name: str
    category: str
    amount: Decimal
    currency: str
    first: str | None = None
    last: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Plan:
    """A budget plan: `name`, reporting `currency`, the `months` (``YYYY-MM``, calendar months in
    UTC), `hours_per_month` (None: the actual hours of each month; else a fixed decimal such as
    730), `pools`, `tokens`, `meters`, `charges`, `scenarios` (``base`` always among them),
    `pricebooks` (paths the plan names, resolved), the plan `path` and the SHA-256 `digest` of its text."""

    name: str
    currency: str
    months: tuple[str, ...]
    hours_per_month: Decimal | None
    pools: tuple[PoolPlan, ...]
    tokens: tuple[TokenForecast, ...]
    meters: tuple[MeterForecast, ...]
    charges: tuple[FixedCharge, ...]
    scenarios: tuple[Scenario, ...]
    pricebooks: tuple[str, ...] = ()
    path: str = ""
    digest: str = ""
    description: str = ""

    def scenario(self, name: str) -> Scenario:
        for s in self.scenarios:
            if s.name == name:
                return s
        raise BudgetError(f"scenario {name!r} is not in the plan (it has {', '.join(s.name for s in self.scenarios)})")


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``[start, end)`` of a calendar month in UTC (end exclusive); ValueError (one line) for a text
    that is not ``YYYY-MM`` or a month outside 0001-01 .. 9999-11 (:mod:`ledger.store.periods`)."""
    from ..store.periods import FIRST_MONTH, LAST_MONTH

    m = _MONTH.match(month)
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise ValueError(f"{month!r} is not a month written YYYY-MM")
    if not FIRST_MONTH <= month <= LAST_MONTH:
        raise ValueError(f"{month!r} is out of range: a month from {FIRST_MONTH} to {LAST_MONTH} (it ends where the "
                         "next month starts, and no date has the year 10000)")
    y, mo = int(m.group(1)), int(m.group(2))
    start = datetime(y, mo, 1, tzinfo=timezone.utc)
    end = datetime(y + (mo == 12), mo % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def _months_from(first: str, n: int) -> tuple[str, ...]:
    y, m = int(first[:4]), int(first[5:7])
    out = []
    for i in range(n):
        k = m - 1 + i
        out.append(f"{y + k // 12:04d}-{k % 12 + 1:02d}")
    return tuple(out)
