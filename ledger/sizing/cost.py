"""What a sizing costs: monthly cost from the price in force, and the what-if between two curves."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from ledger.money import quantize
from ledger.units import UnitError, factor

from .curve import SizingError
from .engine import SizingResult


@dataclass(frozen=True)
class PricingBasis:
    """The price every monthly cost was computed with: `device`, `region`, `purchase_option`, the
    instant `at` it was in force, `hours_per_month`, the `price` per `per` in `currency` as booked
    (upfront amortized), the exact `price_per_gpu_hour` derived from it, and where it came from
    (`book`, `version`, `source_url`)."""

    device: str
    region: str
    purchase_option: str
    at: datetime
    hours_per_month: Decimal
    price: Decimal
    per: str
    currency: str
    price_per_gpu_hour: Decimal
    book: str
    version: str
    source_url: str


@dataclass(frozen=True)
class ComparisonRow:
    """One SLA of a what-if: GPUs and monthly cost of the base and of the alternative, and the deltas
    (alternative - base; negative = the alternative saves). Costs are None when not priced."""

    sla_tok_s_user: float
    gpus_base: int
    gpus_alt: int
    delta_gpus: int
    monthly_cost_base: Decimal | None
    monthly_cost_alt: Decimal | None
    delta_monthly_cost: Decimal | None


# ------------------------------------------------------------------------------------ money

def price_per_gpu_hour(price: Decimal, per: str) -> Decimal:
    """A price per `per` (a pint expression of GPU-time) as a price per GPU-hour, exactly:
    one GPU-hour is factor("gpu * hour", per) units of `per`. A `per` that is not GPU-time fails."""
    try:
        return price * factor("gpu * hour", per)
    except UnitError as e:
        raise SizingError(f"a GPU price must be per GPU-time: {e}") from None


def monthly_cost(gpus: int, per_gpu_hour: Decimal, hours_per_month: Decimal) -> Decimal:
    """GPUs x hours x price per GPU-hour, rounded once, at the end, to the ledger precision."""
    return quantize(Decimal(gpus) * hours_per_month * per_gpu_hour)


def priced(result: SizingResult, price, *, device: str, region: str, purchase_option: str, at: datetime,
           hours_per_month: Decimal) -> SizingResult:
    """The result with each row's monthly cost from `price` (a price book Price in force at `at`)."""
    if not isinstance(hours_per_month, Decimal) or not hours_per_month.is_finite() or hours_per_month <= 0:
        raise SizingError(f"hours per month must be a positive decimal (got {hours_per_month!r})")
    per_hour = price_per_gpu_hour(price.price, price.per)
    basis = PricingBasis(device=device, region=region, purchase_option=purchase_option, at=at,
                         hours_per_month=hours_per_month, price=price.price, per=price.per, currency=price.currency,
                         price_per_gpu_hour=per_hour, book=price.book, version=price.version,
                         source_url=price.source_url)
    rows = tuple(replace(r, monthly_cost=monthly_cost(r.gpus, per_hour, hours_per_month)) for r in result.rows)
    return replace(result, rows=rows, pricing=basis)


def compare(base: SizingResult, alt: SizingResult) -> tuple[ComparisonRow, ...]:
    """The what-if at each SLA: alternative minus base, in GPUs and (when both are priced) money."""
    if [r.sla_tok_s_user for r in base.rows] != [r.sla_tok_s_user for r in alt.rows]:
        raise SizingError("a what-if compares the same SLAs; the two sizings differ")
    if base.pricing and alt.pricing and base.pricing.currency != alt.pricing.currency:
        raise SizingError(f"cannot compare costs in {base.pricing.currency} and {alt.pricing.currency}")
    out = []
    for b, a in zip(base.rows, alt.rows):
        both = b.monthly_cost is not None and a.monthly_cost is not None
        out.append(ComparisonRow(sla_tok_s_user=b.sla_tok_s_user, gpus_base=b.gpus, gpus_alt=a.gpus,
                                 delta_gpus=a.gpus - b.gpus, monthly_cost_base=b.monthly_cost,
                                 monthly_cost_alt=a.monthly_cost,
                                 delta_monthly_cost=a.monthly_cost - b.monthly_cost if both else None))
    return tuple(out)
